//! Errors raised while reading or checking a grammar.

use thiserror::Error;

/// Everything that can be wrong with a grammar, with enough location
/// information for a user to find the offending text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GrammarError {
    /// A syntax error in EBNF text (1-based line and column).
    #[error("EBNF syntax error at line {line}, column {column}: {message}")]
    EbnfSyntax { line: usize, column: usize, message: String },

    /// A syntax error or unsupported construct in a regular expression
    /// (0-based byte offset into the pattern).
    #[error("regex error at position {position}: {message}")]
    RegexSyntax { position: usize, message: String },

    /// A rule referenced but never defined.
    #[error("undefined rule '{name}' referenced at line {line}, column {column}")]
    UndefinedRule { name: String, line: usize, column: usize },

    /// A rule defined twice.
    #[error("rule '{name}' defined twice (second definition at line {line}, column {column})")]
    DuplicateRule { name: String, line: usize, column: usize },

    /// The requested root rule does not exist.
    #[error("root rule '{0}' is not defined")]
    MissingRoot(String),

    /// The grammar matches no string at all (or the named rule cannot derive
    /// any finite string).
    #[error("the grammar's language is empty: {0}")]
    EmptyLanguage(String),

    /// A structural limit was exceeded (nesting depth, repetition bounds,
    /// grammar size...).
    #[error("limit exceeded: {0}")]
    Limit(String),

    /// Anything else that makes the grammar invalid.
    #[error("invalid grammar: {0}")]
    Invalid(String),
}
