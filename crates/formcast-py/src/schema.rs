//! `grammar_from_json_schema`: JSON Schema text to a `Grammar`.

use formcast_jsonschema as fj;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::{GrammarError, LimitError};
use crate::grammar::Grammar;
use crate::guard;

fn schema_err(e: fj::SchemaError) -> PyErr {
    match e {
        fj::SchemaError::Limit { .. } => LimitError::new_err(e.to_string()),
        _ => GrammarError::new_err(e.to_string()),
    }
}

/// Compiles JSON Schema text into a grammar; returns the grammar and the
/// warnings (constraints dropped in lenient mode, unknown formats).
///
/// `whitespace` is "any" (at most `max_whitespace` characters per gap) or
/// "compact"; `indent` / `separators` select the exact layout of Python's
/// `json.dumps` instead. `style` is "json" or an XML parameter style
/// ("qwen_xml", ...). `formats` is "assert" or "annotate".
#[pyfunction]
#[pyo3(signature = (schema_json, *, whitespace="any", max_whitespace=fj::DEFAULT_MAX_WHITESPACE, indent=None, separators=None, strict=true, any_order=false, lenient=false, style="json", formats="assert", time_budget_ms=10_000))]
#[allow(clippy::too_many_arguments)]
pub fn grammar_from_json_schema(
    py: Python<'_>,
    schema_json: &str,
    whitespace: &str,
    max_whitespace: u32,
    indent: Option<usize>,
    separators: Option<(String, String)>,
    strict: bool,
    any_order: bool,
    lenient: bool,
    style: &str,
    formats: &str,
    time_budget_ms: u64,
) -> PyResult<(Grammar, Vec<String>)> {
    guard(|| {
        let ws = if indent.is_some() || separators.is_some() {
            let default = fj::Whitespace::dumps(indent);
            let fj::Whitespace::Indent { separators: default_seps, .. } = default else { unreachable!() };
            fj::Whitespace::Indent { indent, separators: separators.unwrap_or(default_seps) }
        } else {
            match whitespace {
                "any" => fj::Whitespace::Any { max_per_gap: max_whitespace },
                "compact" => fj::Whitespace::Compact,
                other => return Err(PyValueError::new_err(format!("whitespace must be 'any' or 'compact', got {other:?}"))),
            }
        };
        let style = fj::Style::parse(style).ok_or_else(|| PyValueError::new_err(format!("unknown style {style:?}")))?;
        let format = match formats {
            "assert" => fj::FormatMode::Assert,
            "annotate" => fj::FormatMode::Annotate,
            other => return Err(PyValueError::new_err(format!("formats must be 'assert' or 'annotate', got {other:?}"))),
        };
        let opts = fj::SchemaOptions { whitespace: ws, strict, any_order, lenient, style, format, time_budget_ms, ..Default::default() };
        let text = schema_json.to_string();
        let (g, warnings, prepare_texts) = py
            .detach(move || {
                let _fg = formcast_engine::foreground::Foreground::begin();
                let schema = fj::parse_schema_str(&text, &opts)?;
                let (g, warnings) = fj::compile_json(&schema, &opts)?;
                Ok::<_, fj::SchemaError>((g, warnings, fj::prepared_texts(&schema, &opts)))
            })
            .map_err(schema_err)?;
        Ok((Grammar { prepare_texts, ..Grammar::of(g) }, warnings.iter().map(|w| w.to_string()).collect()))
    })
}
