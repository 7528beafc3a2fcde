//! `formcast._engine`: the Python face of the Rust engine.
//!
//! Every entry point runs inside [`guard`], which turns a Rust panic into a
//! `formcast.FormcastError` instead of letting it unwind into Python, and
//! long-running work (compilation, batch masks) releases the GIL.

use pyo3::prelude::*;

mod errors;
mod grammar;
mod matcher;
mod schema;
mod structural;
mod tokenizer;

pub(crate) use errors::{guard, to_py};

/// mimalloc instead of the system allocator: compiling a grammar is mostly
/// small short-lived allocations (NFA states, state sets, IR nodes), where
/// glibc's malloc/free took a third of the instructions.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<tokenizer::TokenizerInfo>()?;
    m.add_class::<grammar::Grammar>()?;
    m.add_class::<matcher::CompiledGrammar>()?;
    m.add_class::<matcher::CancelToken>()?;
    m.add_class::<matcher::GrammarMatcher>()?;
    m.add_function(wrap_pyfunction!(matcher::compile_grammar, m)?)?;
    m.add_function(wrap_pyfunction!(matcher::fill_next_token_bitmask_batch, m)?)?;
    m.add_function(wrap_pyfunction!(schema::grammar_from_json_schema, m)?)?;
    m.add_function(wrap_pyfunction!(structural::grammar_from_structural_tag, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
