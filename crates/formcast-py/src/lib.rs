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

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_e` (the Rust bindings
/// predate it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long memory freed by one compile stays mapped for the next. By
/// default mimalloc hands freed pages back to the OS after a second, and the
/// next compile touches them afresh: a first compile a second after loading
/// the tokenizer took 300–400 page faults, about 2 ms of W3's 4 on this
/// machine's VM. An idle process still gives the memory back, 10 s later.
/// `MIMALLOC_PURGE_DELAY` in the environment wins.
const PURGE_DELAY_MS: std::os::raw::c_long = 10_000;

/// mimalloc's own default for the option: a different value at that index
/// means another mimalloc whose options are numbered otherwise, left alone.
const MIMALLOC_DEFAULT_PURGE_DELAY_MS: std::os::raw::c_long = 1_000;

fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: reads and sets one integer option; mimalloc reads it when it
    // next schedules a purge.
    unsafe {
        if libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) == MIMALLOC_DEFAULT_PURGE_DELAY_MS {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
        }
    }
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    tune_allocator();
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
