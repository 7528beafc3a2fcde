//! Regular expressions to [`Expr`] (through `regex-syntax`).

use crate::{Expr, Grammar, GrammarError};

/// Converts a regex pattern into an expression matching exactly the
/// pattern's full matches (the pattern is implicitly anchored at both ends).
pub fn regex_to_expr(pattern: &str) -> Result<Expr, GrammarError> {
    let _ = pattern;
    Err(GrammarError::Invalid("regex front-end not implemented yet".into()))
}

/// A one-rule grammar (`root`) for a regex.
pub fn regex_grammar(pattern: &str) -> Result<Grammar, GrammarError> {
    let body = regex_to_expr(pattern)?;
    Ok(Grammar { rules: vec![crate::Rule { name: "root".into(), body }], root: 0 })
}
