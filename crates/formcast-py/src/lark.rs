//! `grammar_from_lark`: Lark text (llguidance's dialect) to a `Grammar`.

use formcast_lark as fl;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::errors::{GrammarError, LimitError};
use crate::grammar::Grammar;
use crate::guard;
use crate::tokenizer::TokenizerInfo;

/// The error as `LimitError` (sizes) or `GrammarError`, with `line` and
/// `column` attributes.
fn lark_err(py: Python<'_>, e: fl::LarkError) -> PyErr {
    let err = match e.kind {
        fl::ErrorKind::Limit => LimitError::new_err(e.to_string()),
        _ => GrammarError::new_err(e.to_string()),
    };
    let value = err.value(py);
    for (k, v) in [("line", e.line), ("column", e.column)] {
        if let Err(set) = value.setattr(k, v) {
            return set;
        }
    }
    err
}

/// Parses Lark text into a grammar whose start rule is `start`; returns the
/// grammar and the warnings of its `%json` schemas. Special tokens
/// (`<|eot_id|>`) resolve through `tokenizer`: the special token with that
/// text, else the first token with exactly that text. `named` lists the
/// grammars `@name` refers to, as `(name, lark_text_or_grammar)` pairs.
/// `lexer` is `"llguidance"` (greedy and lazy lexemes, as llguidance
/// cuts them) or `"context_free"` (any split into lexemes counts).
#[pyfunction]
#[pyo3(signature = (text, tokenizer=None, named=Vec::new(), *, time_budget_ms=10_000, lexer="llguidance"))]
pub fn grammar_from_lark(
    py: Python<'_>,
    text: &str,
    tokenizer: Option<&TokenizerInfo>,
    named: Vec<(String, Bound<'_, PyAny>)>,
    time_budget_ms: u64,
    lexer: &str,
) -> PyResult<(Grammar, Vec<String>)> {
    let lexer = match lexer {
        "llguidance" => fl::Lexer::Llguidance,
        "context_free" => fl::Lexer::ContextFree,
        other => return Err(pyo3::exceptions::PyValueError::new_err(format!("lexer must be \"llguidance\" or \"context_free\", not {other:?}"))),
    };
    let mut grammars = Vec::with_capacity(named.len());
    for (name, value) in named {
        let g = if let Ok(s) = value.extract::<String>() {
            fl::Named::Lark(s)
        } else if let Ok(g) = value.cast::<Grammar>() {
            fl::Named::Grammar((*g.get().inner).clone())
        } else {
            return Err(PyTypeError::new_err(format!("named grammar {name:?} must be Lark text or a Grammar")));
        };
        grammars.push((name, g));
    }
    guard(|| {
        let vocab = tokenizer.map(|t| t.vocab.clone());
        let text = text.to_string();
        let out = py.detach(move || {
            let _fg = formcast_engine::foreground::Foreground::begin();
            let resolve = vocab.as_deref().map(fl::vocab_resolver);
            let tokens = match (&resolve, vocab.as_deref()) {
                (Some(r), Some(v)) => Some(fl::Tokens { resolve: r, vocab_size: v.tokens.len() as u32 }),
                _ => None,
            };
            let opts = fl::LarkOptions { tokens, named: grammars, json_time_budget_ms: time_budget_ms, lexer, ..Default::default() };
            fl::parse_lark(&text, &opts)
        });
        let g = out.map_err(|e| lark_err(py, e))?;
        Ok((Grammar::of(g.grammar), g.warnings))
    })
}
