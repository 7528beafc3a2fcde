//! GBNF/EBNF text to [`Grammar`]. (Owned by the grammar front-end work; see
//! the crate docs.)

use crate::{Grammar, GrammarError};

/// Parses GBNF (llama.cpp's EBNF dialect, with its usual extensions) into a
/// grammar whose start rule is `root`.
pub fn parse_ebnf(text: &str, root: &str) -> Result<Grammar, GrammarError> {
    let _ = (text, root);
    Err(GrammarError::Invalid("EBNF parser not implemented yet".into()))
}
