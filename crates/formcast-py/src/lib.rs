//! `formcast._engine`: the Python face of the Rust engine.
//!
//! Every entry point runs inside [`guard`], which turns a Rust panic into a
//! `formcast.FormcastError` instead of letting it unwind into Python, and
//! long-running work (compilation, batch masks) releases the GIL.

use pyo3::prelude::*;

mod errors;
mod grammar;
mod heap;
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

/// `mi_option_allow_thp` in mimalloc.h's `mi_option_e` (the Rust bindings
/// predate it), and mimalloc's own default for it: a different value at
/// that index means another mimalloc whose options are numbered otherwise,
/// left alone.
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;
const MIMALLOC_DEFAULT_ALLOW_THP: std::os::raw::c_long = 1;

/// No transparent huge pages for the engine's heap. mimalloc asks for them
/// with MADV_HUGEPAGE, and where the kernel honours that only on request
/// (`enabled=madvise`, `defrag=madvise`, Debian's default) the first touch
/// of every 2 MiB region zeroes all of it and may compact memory on the
/// spot, in the middle of a compile. Compiled grammars are kept (the
/// compiler's cache), so a server's heap grows from one new schema to the
/// next and met such faults on almost every compile: over the first 560
/// maskbench schemas, compile plus first mask took 884 ms with them and 379
/// ms without (RSS 446 and 389 MB). `MIMALLOC_ALLOW_THP` in the environment
/// wins.
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    // SAFETY: reads and sets one integer option; mimalloc reads it when it
    // next maps memory.
    unsafe {
        if libmimalloc_sys::mi_option_get(MI_OPTION_ALLOW_THP) == MIMALLOC_DEFAULT_ALLOW_THP {
            libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0);
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
