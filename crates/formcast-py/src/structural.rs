//! `grammar_from_structural_tag`: structural-tag JSON text to a `Grammar`.

use formcast_structural as fs;
use pyo3::prelude::*;

use crate::errors::{LimitError, StructuralTagError};
use crate::grammar::Grammar;
use crate::guard;
use crate::tokenizer::TokenizerInfo;

/// The error as a Python exception carrying `path`, `format_type` and
/// `field` attributes (`LimitError` for size limits, `StructuralTagError`
/// otherwise).
fn structural_err(py: Python<'_>, e: fs::StructuralError) -> PyErr {
    let err = match e.kind {
        fs::ErrorKind::Limit => LimitError::new_err(e.to_string()),
        _ => StructuralTagError::new_err(e.to_string()),
    };
    let value = err.value(py);
    for (k, v) in [("path", &e.path), ("format_type", &e.format), ("field", &e.field)] {
        if let Err(set) = value.setattr(k, v) {
            return set;
        }
    }
    err
}

/// Compiles a structural tag (JSON text: the `{"type": "structural_tag", ...}`
/// request, its legacy `structures`/`triggers` form, or a bare format) into a
/// grammar; returns the grammar and the warnings. Token strings resolve
/// through `tokenizer` (the first id whose text matches exactly).
#[pyfunction]
#[pyo3(signature = (tag_json, tokenizer=None, *, time_budget_ms=10_000))]
pub fn grammar_from_structural_tag(
    py: Python<'_>,
    tag_json: &str,
    tokenizer: Option<&TokenizerInfo>,
    time_budget_ms: u64,
) -> PyResult<(Grammar, Vec<String>)> {
    guard(|| {
        let vocab = tokenizer.map(|t| t.vocab.clone());
        let text = tag_json.to_string();
        let vocab_size = vocab.as_ref().map(|v| v.tokens.len() as u32);
        let opts = fs::Options { lower: fs::LowerOptions { schema_time_budget_ms: time_budget_ms, vocab_size, ..Default::default() } };
        let out = py.detach(move || {
            let _fg = formcast_engine::foreground::Foreground::begin();
            let lookup = |s: &str| -> Option<u32> {
                let v = vocab.as_ref()?;
                v.tokens.iter().position(|b| b == s.as_bytes()).map(|i| i as u32)
            };
            // Without a tokenizer, token strings are an error (not "unknown").
            let resolve: Option<&dyn Fn(&str) -> Option<u32>> = vocab.as_ref().map(|_| &lookup as &dyn Fn(&str) -> Option<u32>);
            fs::compile_str(&text, resolve, &opts)
        });
        let c = out.map_err(|e| structural_err(py, e))?;
        Ok((Grammar::of(c.grammar), c.warnings))
    })
}
