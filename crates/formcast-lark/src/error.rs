//! Errors: every one carries the line, the column and the offending line.

use std::fmt;

/// What kind of problem an error reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is not Lark.
    Syntax,
    /// A Lark construct formcast does not honour (named in the message).
    Unsupported,
    /// A name, special token or grammar that does not resolve.
    Undefined,
    /// A grammar that is well-formed text but invalid (an empty language, a
    /// circular terminal, a JSON schema formcast refuses...).
    Invalid,
    /// A size limit (nesting, repetition bounds, token ranges, rules).
    Limit,
}

/// An error in a Lark grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LarkError {
    pub kind: ErrorKind,
    /// 1-based line and column (columns count characters).
    pub line: usize,
    pub column: usize,
    pub message: String,
    /// The text of the offending line.
    pub source_line: String,
}

/// 1-based (line, column) of a byte offset; columns count characters.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

impl LarkError {
    /// An error at byte `offset` of `text`.
    pub fn at(text: &str, offset: usize, kind: ErrorKind, message: impl Into<String>) -> Self {
        let (line, column) = line_col(text, offset);
        let source_line = text.lines().nth(line - 1).unwrap_or("").trim_end_matches('\r').to_string();
        LarkError { kind, line, column, message: message.into(), source_line }
    }
}

impl fmt::Display for LarkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ErrorKind::Limit => "limit exceeded",
            ErrorKind::Unsupported => "unsupported Lark construct",
            _ => "Lark error",
        };
        write!(f, "{what} at line {}, column {}: {}", self.line, self.column, self.message)?;
        // The offending line with a caret under the column (long lines are
        // cut around it).
        let chars: Vec<char> = self.source_line.chars().collect();
        let col = self.column.saturating_sub(1).min(chars.len());
        let from = col.saturating_sub(60);
        let to = (col + 60).min(chars.len());
        let shown: String = chars[from..to].iter().map(|&c| if c == '\t' { ' ' } else { c }).collect();
        let lead = if from > 0 { "..." } else { "" };
        write!(f, "\n  {lead}{shown}\n  {}{}^", " ".repeat(lead.len()), " ".repeat(col - from))
    }
}

impl std::error::Error for LarkError {}
