//! Exception types and the panic guard.

use std::panic::{catch_unwind, AssertUnwindSafe};

use formcast_engine::EngineError;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

create_exception!(_engine, FormcastError, PyException, "Base class of formcast's errors.");
create_exception!(_engine, GrammarError, FormcastError, "A grammar, regex or schema is invalid.");
create_exception!(_engine, StructuralTagError, GrammarError, "A structural tag is invalid; `path`, `format_type` and `field` say where.");
create_exception!(_engine, TokenizerError, FormcastError, "A vocabulary could not be loaded.");
create_exception!(_engine, LimitError, FormcastError, "A size or ambiguity limit was exceeded.");
create_exception!(_engine, CompileTimeoutError, LimitError, "Compilation ran past its time budget.");
create_exception!(_engine, CancelledError, FormcastError, "Compilation was cancelled.");

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("FormcastError", py.get_type::<FormcastError>())?;
    m.add("GrammarError", py.get_type::<GrammarError>())?;
    m.add("TokenizerError", py.get_type::<TokenizerError>())?;
    m.add("StructuralTagError", py.get_type::<StructuralTagError>())?;
    m.add("LimitError", py.get_type::<LimitError>())?;
    m.add("CompileTimeoutError", py.get_type::<CompileTimeoutError>())?;
    m.add("CancelledError", py.get_type::<CancelledError>())?;
    Ok(())
}

/// Maps an engine error to the matching Python exception.
pub(crate) fn to_py(e: EngineError) -> PyErr {
    let msg = e.to_string();
    match e {
        EngineError::Grammar(_) | EngineError::Front(_) => GrammarError::new_err(msg),
        EngineError::Limit(_) => LimitError::new_err(msg),
        EngineError::Timeout(_) => CompileTimeoutError::new_err(msg),
        EngineError::Cancelled => CancelledError::new_err(msg),
        EngineError::Usage(_) => PyValueError::new_err(msg),
    }
}

pub(crate) fn grammar_err(e: formcast_grammar::GrammarError) -> PyErr {
    match e {
        formcast_grammar::GrammarError::Limit(_) => LimitError::new_err(e.to_string()),
        _ => GrammarError::new_err(e.to_string()),
    }
}

pub(crate) fn tokenizer_err(e: formcast_tokenizer::TokenizerError) -> PyErr {
    TokenizerError::new_err(e.to_string())
}

/// Runs `f`, converting a panic into `FormcastError` ("internal error").
pub(crate) fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(FormcastError::new_err(format!("internal error in the formcast engine: {what}")))
        }
    }
}
