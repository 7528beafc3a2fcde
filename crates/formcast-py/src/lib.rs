//! `formcast._engine`: the Python face of the Rust engine.
//!
//! Every entry point runs inside [`guard`], which turns a Rust panic into a
//! `formcast.FormcastError` instead of letting it unwind into Python, and
//! long-running work (compilation, batch masks) releases the GIL.

use pyo3::prelude::*;

mod errors;
mod grammar;
mod heap;
mod lark;
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

/// `mi_option_allow_thp` and `mi_option_purge_delay` in mimalloc.h's
/// `mi_option_e` (the Rust bindings predate the first), and mimalloc's own
/// defaults for them: a different value at either index means another
/// mimalloc whose options are numbered otherwise, left alone.
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;
const MIMALLOC_DEFAULT_ALLOW_THP: std::os::raw::c_long = 1;
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const MIMALLOC_DEFAULT_PURGE_DELAY: std::os::raw::c_long = 1000;

/// Sets mimalloc option `option` to `value` unless the environment sets it
/// (`MIMALLOC_<NAME>` wins) or it does not hold mimalloc's default.
fn set_unless_chosen(env: &str, option: libmimalloc_sys::mi_option_t, default: std::os::raw::c_long, value: std::os::raw::c_long) {
    if std::env::var_os(env).is_some() {
        return;
    }
    // SAFETY: reads and sets one integer option; mimalloc reads it when it
    // next maps or frees memory.
    unsafe {
        if libmimalloc_sys::mi_option_get(option) == default {
            libmimalloc_sys::mi_option_set(option, value);
        }
    }
}

/// Two departures from mimalloc's defaults, both for latency.
///
/// No transparent huge pages for the engine's heap. mimalloc asks for them
/// with MADV_HUGEPAGE, and where the kernel honours that only on request
/// (`enabled=madvise`, `defrag=madvise`, Debian's default) the first touch
/// of every 2 MiB region zeroes all of it and may compact memory on the
/// spot, in the middle of a compile. Compiled grammars are kept (the
/// compiler's cache), so a server's heap grows from one new schema to the
/// next and met such faults on almost every compile: over the first 560
/// maskbench schemas, compile plus first mask took 884 ms with them and 379
/// ms without (RSS 446 and 389 MB).
///
/// Freed memory is kept for reuse, not returned to the system a second
/// after it was freed: returning it made the next request, a second or
/// more later, both return it (inside its first allocation) and fault it
/// back in. W3's schema front-end took 1.9–3.1 ms after a 1-second pause
/// instead of 0.8. The process keeps the most it has used.
///
/// `MIMALLOC_ALLOW_THP` and `MIMALLOC_PURGE_DELAY` in the environment win.
fn tune_allocator() {
    set_unless_chosen("MIMALLOC_ALLOW_THP", MI_OPTION_ALLOW_THP, MIMALLOC_DEFAULT_ALLOW_THP, 0);
    set_unless_chosen("MIMALLOC_PURGE_DELAY", MI_OPTION_PURGE_DELAY, MIMALLOC_DEFAULT_PURGE_DELAY, -1);
}

/// rust-numpy sets up the NumPy C API and its borrow checker on first use
/// (about 200 µs): done at import, so that a process's first mask does not
/// pay for it.
fn prepare_numpy(py: Python<'_>) {
    use numpy::PyArrayMethods;
    let a = numpy::PyArray2::<i32>::zeros(py, [1, 1], false);
    let _ = a.readwrite();
}

/// The front-ends and the automaton builder bound their recursion with
/// `stacker`, which finds a thread's stack limit on its first use there:
/// on a process's main thread, glibc reads it from /proc/self/maps (a few
/// hundred lines in a Python process, 0.4 M instructions and the kernel's
/// printing of the file). Done at import, on the importing thread (the one
/// that usually compiles), so that a process's first compile does not
/// pay for it.
fn prepare_stack_limit() {
    let _ = stacker::remaining_stack();
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    tune_allocator();
    prepare_numpy(m.py());
    prepare_stack_limit();
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
    m.add_function(wrap_pyfunction!(lark::grammar_from_lark, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
