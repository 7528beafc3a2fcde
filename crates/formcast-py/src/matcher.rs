//! Compilation, matchers and token bitmasks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use formcast_engine as fe;
use numpy::{PyReadwriteArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;

use crate::grammar::Grammar;
use crate::tokenizer::TokenizerInfo;
use crate::{guard, to_py};

/// A flag another thread can set to stop a running compilation.
#[pyclass(frozen, module = "formcast._engine")]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
}

#[pymethods]
impl CancelToken {
    #[new]
    fn new() -> Self {
        CancelToken { flag: Arc::new(AtomicBool::new(false)) }
    }
    /// Requests cancellation.
    fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }
    #[getter]
    fn cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

/// A grammar compiled against a vocabulary; shared by any number of matchers
/// and threads.
#[pyclass(frozen, module = "formcast._engine")]
pub struct CompiledGrammar {
    pub(crate) inner: Arc<fe::CompiledGrammar>,
}

impl Drop for CompiledGrammar {
    /// A grammar a compiler's cache lets go holds its automaton, partitions
    /// and stored masks: the cache evicts from inside a compile, which paid
    /// for freeing them (up to 3.8 ms at once over maskbench with its
    /// documents' masks). A reference goes to the dropping thread first, so
    /// that the last one is usually dropped there (if a matcher still holds
    /// one, it frees the grammar wherever it ends).
    fn drop(&mut self) {
        fe::dropper::drop_elsewhere(self.inner.clone());
    }
}

#[pymethods]
impl CompiledGrammar {
    /// Approximate memory in bytes, lazily built caches included.
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }
    /// Number of automaton states.
    #[getter]
    fn num_states(&self) -> usize {
        self.inner.automaton.n_states()
    }
    /// Width of the logits rows this grammar's masks cover (the vocabulary
    /// it was compiled for, padding included).
    #[getter]
    fn logits_size(&self) -> usize {
        self.inner.vocab.logits_size
    }
    fn __repr__(&self) -> String {
        format!("CompiledGrammar(states={}, rules={})", self.inner.automaton.n_states(), self.inner.automaton.rule_start.len())
    }
}

/// Compiles `grammar` for `tokenizer`, then computes its first mask, the
/// masks inside the triggers its start's free text scans for, and (for the
/// built-in JSON grammar) the masks at an object's first key and values,
/// into its cache (`CompiledGrammar::prepare`). Releases the GIL; the compile stops
/// with CompileTimeoutError after `timeout_s` seconds and with
/// CancelledError when `cancel` is set (those masks are bounded like any
/// mask).
#[pyfunction]
#[pyo3(signature = (grammar, tokenizer, *, timeout_s=None, cancel=None, mask_cache_bytes=None))]
pub fn compile_grammar(
    py: Python<'_>,
    grammar: &Grammar,
    tokenizer: &TokenizerInfo,
    timeout_s: Option<f64>,
    cancel: Option<&CancelToken>,
    mask_cache_bytes: Option<usize>,
) -> PyResult<CompiledGrammar> {
    guard(|| {
        let timeout = match timeout_s {
            Some(t) if !(t > 0.0 && t.is_finite()) => {
                return Err(PyValueError::new_err(format!("timeout_s must be a positive number, got {t}")))
            }
            Some(t) => Some(Duration::from_secs_f64(t)),
            None => None,
        };
        let budget = fe::Budget::new(timeout, cancel.map(|c| c.flag.clone()));
        let mut opts = fe::CompileOptions::default();
        if let Some(b) = mask_cache_bytes {
            opts.mask_cache_bytes = b;
        }
        opts.prepare_texts = grammar.prepare_texts.iter().map(|t| t.as_bytes().to_vec()).collect();
        let g = grammar.inner.clone();
        let index = tokenizer.index.clone();
        let inner = py
            .detach(move || {
                let _fg = fe::foreground::Foreground::begin();
                let cg = Arc::new(fe::CompiledGrammar::compile(&g, index, &opts, &budget)?);
                cg.prepare();
                Ok::<_, fe::EngineError>(cg)
            })
            .map_err(to_py)?;
        Ok(CompiledGrammar { inner })
    })
}

/// Tracks one generated sequence against a compiled grammar.
#[pyclass(module = "formcast._engine")]
pub struct GrammarMatcher {
    inner: fe::Matcher,
}

fn row_words<'a>(bitmask: &'a mut PyReadwriteArray2<'_, i32>) -> PyResult<(usize, usize, &'a mut [u32])> {
    let shape = bitmask.shape().to_vec();
    let slice = bitmask
        .as_slice_mut()
        .map_err(|_| PyValueError::new_err("the bitmask must be a C-contiguous int32 array of shape [batch, words]"))?;
    // SAFETY: i32 and u32 have identical size and alignment.
    let words = unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr() as *mut u32, slice.len()) };
    Ok((shape[0], shape[1], words))
}

#[pymethods]
impl GrammarMatcher {
    #[new]
    #[pyo3(signature = (compiled, *, terminate_without_stop_token=false, max_rollback_tokens=None))]
    fn new(compiled: &Bound<'_, PyAny>, terminate_without_stop_token: bool, max_rollback_tokens: Option<usize>) -> PyResult<Self> {
        guard(|| {
            // Accept the native object or a Python wrapper exposing `_native`.
            let native = match compiled.cast::<CompiledGrammar>() {
                Ok(c) => c.clone(),
                Err(_) => compiled.getattr("_native")?.cast_into::<CompiledGrammar>().map_err(|_| {
                    pyo3::exceptions::PyTypeError::new_err("GrammarMatcher needs a CompiledGrammar")
                })?,
            };
            let inner = fe::Matcher::new(native.get().inner.clone(), terminate_without_stop_token, max_rollback_tokens).map_err(to_py)?;
            Ok(GrammarMatcher { inner })
        })
    }

    /// Accepts one token id; False (and no change) when not allowed.
    fn accept_token(&mut self, token_id: i64) -> PyResult<bool> {
        guard(|| {
            if token_id < 0 || token_id > u32::MAX as i64 {
                return Ok(false);
            }
            self.inner.accept_token(token_id as u32).map_err(to_py)
        })
    }

    /// Accepts text (str or bytes) regardless of token boundaries; False (and
    /// no change) when not allowed.
    fn accept_string(&mut self, text: &Bound<'_, PyAny>) -> PyResult<bool> {
        guard(|| {
            let bytes: Vec<u8> = if let Ok(s) = text.extract::<String>() { s.into_bytes() } else { text.extract::<Vec<u8>>()? };
            self.inner.accept_bytes(&bytes).map_err(to_py)
        })
    }

    /// Writes the allowed-next-token mask into row `index` of `bitmask`
    /// (int32, shape [batch, ceil(vocab/32)]), with the GIL released: engines
    /// that fill rows from a thread pool (vLLM) get real parallelism.
    #[pyo3(signature = (bitmask, index=0))]
    fn fill_next_token_bitmask(&mut self, py: Python<'_>, mut bitmask: PyReadwriteArray2<'_, i32>, index: usize) -> PyResult<()> {
        guard(|| {
            let (rows, width, words) = row_words(&mut bitmask)?;
            if index >= rows {
                return Err(PyIndexError::new_err(format!("row {index} is outside the bitmask ({rows} rows)")));
            }
            let row = &mut words[index * width..(index + 1) * width];
            let inner = &mut self.inner;
            py.detach(|| inner.fill_next_token_bitmask(row)).map_err(to_py)
        })
    }

    /// True after a stop token was accepted (or, with
    /// terminate_without_stop_token, once the grammar can end).
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }

    /// True when the output so far is a complete match (a stop token is allowed).
    fn can_terminate(&self) -> bool {
        self.inner.can_end()
    }

    /// Undoes the last `num_tokens` accepted tokens/strings.
    #[pyo3(signature = (num_tokens=1))]
    fn rollback(&mut self, num_tokens: usize) -> PyResult<()> {
        guard(|| self.inner.rollback(num_tokens).map_err(to_py))
    }

    /// How many steps can currently be rolled back.
    #[getter]
    fn num_rollbackable(&self) -> usize {
        self.inner.num_rollbackable()
    }

    /// Back to the start.
    fn reset(&mut self) -> PyResult<()> {
        guard(|| self.inner.reset().map_err(to_py))
    }

    /// The text every valid continuation starts with ("" when not forced).
    fn find_jump_forward_string(&mut self) -> PyResult<String> {
        guard(|| {
            let b = self.inner.find_jump_forward_bytes().map_err(to_py)?;
            Ok(String::from_utf8(b).expect("cut at a UTF-8 boundary"))
        })
    }

    /// Length in bytes of a shortest text that completes the output so far
    /// to a full match (0 when it already is one; None when no text can).
    /// Cheap; does not change the state.
    fn shortest_completion_length(&mut self) -> Option<usize> {
        self.inner.shortest_completion_len()
    }

    /// A shortest text (bytes, at most `max_bytes`) that completes the output
    /// so far to a full match, or None. Does not change the state; accept it
    /// with accept_string. May start inside a UTF-8 character when the
    /// accepted tokens end inside one.
    #[pyo3(signature = (max_bytes=65536))]
    fn find_shortest_completion<'py>(&mut self, py: Python<'py>, max_bytes: usize) -> PyResult<Option<Bound<'py, pyo3::types::PyBytes>>> {
        guard(|| {
            let b = self.inner.find_shortest_completion(max_bytes).map_err(to_py)?;
            Ok(b.map(|b| pyo3::types::PyBytes::new(py, &b)))
        })
    }
}

/// Fills one bitmask row per matcher, in parallel on all cores with the GIL
/// released. `indices[i]` is the row of `matchers[i]` (default: i).
#[pyfunction]
#[pyo3(signature = (matchers, bitmask, indices=None))]
pub fn fill_next_token_bitmask_batch(
    py: Python<'_>,
    matchers: Vec<PyRefMut<'_, GrammarMatcher>>,
    mut bitmask: PyReadwriteArray2<'_, i32>,
    indices: Option<Vec<usize>>,
) -> PyResult<()> {
    guard(|| {
        let mut matchers = matchers;
        let (rows, width, words) = row_words(&mut bitmask)?;
        let idx: Vec<usize> = indices.unwrap_or_else(|| (0..matchers.len()).collect());
        if idx.len() != matchers.len() {
            return Err(PyValueError::new_err(format!(
                "{} matchers but {} indices",
                matchers.len(),
                idx.len()
            )));
        }
        let mut seen = vec![false; rows];
        for &i in &idx {
            if i >= rows {
                return Err(PyIndexError::new_err(format!("row {i} is outside the bitmask ({rows} rows)")));
            }
            if std::mem::replace(&mut seen[i], true) {
                return Err(PyValueError::new_err(format!("row {i} is used by two matchers")));
            }
        }
        // Pair each matcher with its own disjoint row.
        let mut row_slices: Vec<Option<&mut [u32]>> = words.chunks_mut(width.max(1)).map(Some).collect();
        let mut jobs: Vec<(&mut fe::Matcher, &mut [u32])> = Vec::with_capacity(idx.len());
        for (m, &i) in matchers.iter_mut().zip(&idx) {
            jobs.push((&mut m.inner, row_slices[i].take().expect("rows are distinct")));
        }
        let result: Result<(), fe::EngineError> =
            py.detach(|| jobs.into_par_iter().try_for_each(|(m, row)| m.fill_next_token_bitmask(row)));
        result.map_err(to_py)
    })
}
