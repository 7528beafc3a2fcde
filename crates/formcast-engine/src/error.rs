//! Engine errors.

use thiserror::Error;

/// Everything the engine can report.
#[derive(Debug, Clone, Error)]
pub enum EngineError {
    /// The grammar itself is invalid (bad references, empty language...).
    #[error("{0}")]
    Grammar(String),
    /// A front-end error passed through.
    #[error(transparent)]
    Front(#[from] formcast_grammar::GrammarError),
    /// A size limit was hit.
    #[error("limit exceeded: {0}")]
    Limit(String),
    /// Compilation ran past its time budget.
    #[error("compilation exceeded its time budget of {0:.3} s")]
    Timeout(f64),
    /// Compilation was cancelled by the caller.
    #[error("compilation was cancelled")]
    Cancelled,
    /// A caller error (bad token id, bad bitmask shape...).
    #[error("{0}")]
    Usage(String),
}
