//! Errors and warnings, each naming the keyword and the JSON pointer of the
//! schema location it comes from.

use thiserror::Error;

/// Formats a JSON pointer for messages ("" is the document root).
pub(crate) fn show_pointer(p: &str) -> String {
    if p.is_empty() {
        "the root".to_string()
    } else {
        p.to_string()
    }
}

/// Why a schema could not be turned into a grammar.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SchemaError {
    /// The schema text is not JSON.
    #[error("the schema is not valid JSON: {0}")]
    Json(String),
    /// The schema is malformed (a keyword has a value of the wrong kind...).
    #[error("invalid schema: keyword '{keyword}' at {}: {reason}", show_pointer(pointer))]
    Invalid { keyword: String, pointer: String, reason: String },
    /// A keyword (or combination) whose constraint the grammar cannot enforce
    /// exactly. In lenient mode it becomes a [`Warning`] instead.
    #[error("unsupported keyword '{keyword}' at {}: {reason}", show_pointer(pointer))]
    Unsupported { keyword: String, pointer: String, reason: String },
    /// An option of [`crate::SchemaOptions`] (`any_order`, `indent`...) that
    /// cannot be honoured exactly for this schema. In lenient mode it
    /// becomes a [`Warning`] instead, like an unsupported keyword.
    #[error("option '{option}' cannot be honoured at {}: {reason}", show_pointer(pointer))]
    UnsupportedOption { option: String, pointer: String, reason: String },
    /// A `$ref` that points outside the document (remote schemas are never
    /// fetched) or to nothing.
    #[error("unresolvable reference '{reference}' at {}: {reason}", show_pointer(pointer))]
    Reference { reference: String, pointer: String, reason: String },
    /// The schema matches no JSON value at all (`false`, contradictory
    /// keywords...): no grammar can describe it.
    #[error("the schema is unsatisfiable: it matches no JSON value")]
    Unsatisfiable,
    /// A size or time limit of [`crate::SchemaOptions`] was exceeded.
    #[error("limit exceeded at {}: {reason}", show_pointer(pointer))]
    Limit { pointer: String, reason: String },
    /// The generated grammar was rejected by the grammar validator (a bug).
    #[error("internal error: the generated grammar is invalid: {0}")]
    Grammar(String),
}

impl SchemaError {
    /// The keyword at fault, when there is one.
    pub fn keyword(&self) -> Option<&str> {
        match self {
            SchemaError::Invalid { keyword, .. } | SchemaError::Unsupported { keyword, .. } => Some(keyword),
            SchemaError::Reference { .. } => Some("$ref"),
            _ => None,
        }
    }

    /// The JSON pointer of the schema location at fault, when there is one.
    pub fn pointer(&self) -> Option<&str> {
        match self {
            SchemaError::Invalid { pointer, .. }
            | SchemaError::Unsupported { pointer, .. }
            | SchemaError::UnsupportedOption { pointer, .. }
            | SchemaError::Reference { pointer, .. }
            | SchemaError::Limit { pointer, .. } => Some(pointer),
            _ => None,
        }
    }
}

/// A constraint that was not enforced (lenient mode), or a note about a
/// keyword that carries no constraint (an unknown `format`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub keyword: String,
    pub pointer: String,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "'{}' at {}: {}", self.keyword, show_pointer(&self.pointer), self.message)
    }
}

pub type Result<T, E = SchemaError> = std::result::Result<T, E>;
