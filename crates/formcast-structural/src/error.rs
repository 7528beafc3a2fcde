//! Errors: every one names the format type, the field and the path of the
//! offending value inside the structural tag (`format.elements[1].end`).

use thiserror::Error;

/// What kind of problem a [`StructuralError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The structural tag is malformed or contradictory.
    Invalid,
    /// A size limit was exceeded (nesting depth, repetition bounds...).
    Limit,
    /// A token string could not be resolved (unknown, or no tokenizer).
    Token,
}

/// Why a structural tag could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}", self.render())]
pub struct StructuralError {
    pub kind: ErrorKind,
    /// Path of the offending value, e.g. `format.elements[1].tags[0].end`.
    pub path: String,
    /// Format type the value belongs to (`tag`, `triggered_tags`...), or
    /// `structural_tag` for the request wrapper.
    pub format: String,
    /// Field of that format (`end`, `triggers`...); empty when the format
    /// object itself is at fault.
    pub field: String,
    pub message: String,
}

impl StructuralError {
    pub(crate) fn new(kind: ErrorKind, path: &str, format: &str, field: &str, message: impl Into<String>) -> Self {
        StructuralError {
            kind,
            path: path.to_string(),
            format: format.to_string(),
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn render(&self) -> String {
        let what = match self.kind {
            ErrorKind::Invalid | ErrorKind::Token => "Invalid structural tag",
            ErrorKind::Limit => "Structural tag limit exceeded",
        };
        let place = if self.field.is_empty() {
            format!("{} format", self.format)
        } else {
            format!("{} format, field '{}'", self.format, self.field)
        };
        format!("{what} at {} ({place}): {}", self.path, self.message)
    }
}

pub type Result<T> = std::result::Result<T, StructuralError>;
