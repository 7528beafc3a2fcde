//! `Grammar`: a parsed grammar, not yet tied to a vocabulary.

use std::sync::Arc;

use formcast_grammar as fg;
use pyo3::prelude::*;

use crate::errors::grammar_err;
use crate::guard;

/// A grammar in formcast's intermediate representation.
#[pyclass(frozen, module = "formcast._engine")]
pub struct Grammar {
    pub(crate) inner: Arc<fg::Grammar>,
    /// Texts after which a compile computes the mask ahead (the engine's
    /// `CompileOptions::prepare_texts`): the built-in JSON grammar's, and
    /// an any-object schema's (`formcast_jsonschema::prepared_texts`).
    pub(crate) prepare_texts: &'static [&'static str],
}

impl Grammar {
    /// `inner`, with no masks computed ahead but those every compile does.
    pub(crate) fn of(inner: fg::Grammar) -> Self {
        Grammar { inner: Arc::new(inner), prepare_texts: &[] }
    }
}

#[pymethods]
impl Grammar {
    /// Parses GBNF/EBNF text (llama.cpp's dialect); `root` names the start rule.
    #[staticmethod]
    #[pyo3(signature = (text, root="root"))]
    fn from_ebnf(text: &str, root: &str) -> PyResult<Self> {
        guard(|| Ok(Grammar::of(fg::parse_ebnf(text, root).map_err(grammar_err)?)))
    }

    /// A grammar matching exactly the full matches of a regular expression
    /// in `dialect` (`"rust"` or `"ecma"`; `"python"` is read by the Python
    /// package and handed over as `"rust"`).
    #[staticmethod]
    #[pyo3(signature = (pattern, dialect="rust"))]
    fn from_regex(pattern: &str, dialect: &str) -> PyResult<Self> {
        let d = regex_dialect(dialect)?;
        guard(|| Ok(Grammar::of(fg::regex::regex_grammar_in(pattern, d).map_err(grammar_err)?)))
    }

    /// The language of `pattern` (in `dialect`) as a flag-free Python `re`
    /// pattern: what the tool-call reader runs, so it reads exactly what the
    /// mask allows.
    #[staticmethod]
    #[pyo3(signature = (pattern, dialect="rust"))]
    fn regex_as_python(pattern: &str, dialect: &str) -> PyResult<String> {
        let d = regex_dialect(dialect)?;
        guard(|| {
            let expr = fg::regex::regex_to_expr_in(pattern, d).map_err(grammar_err)?;
            fg::regex::python_pattern(&expr).map_err(grammar_err)
        })
    }

    /// The built-in grammar for any JSON value.
    #[staticmethod]
    fn builtin_json() -> PyResult<Self> {
        guard(|| Ok(Grammar { inner: Arc::new(fg::json::builtin_json_grammar()), prepare_texts: &fg::json::BUILTIN_JSON_PREPARED }))
    }

    /// Names of the rules, the start rule first.
    #[getter]
    fn rule_names(&self) -> Vec<String> {
        let g = &self.inner;
        let mut names = vec![g.rules[g.root as usize].name.clone()];
        names.extend(g.rules.iter().enumerate().filter(|(i, _)| *i != g.root as usize).map(|(_, r)| r.name.clone()));
        names
    }

    fn __repr__(&self) -> String {
        format!("Grammar(rules={}, root={:?})", self.inner.rules.len(), self.inner.root_rule().name)
    }
}

fn regex_dialect(name: &str) -> PyResult<fg::RegexDialect> {
    fg::RegexDialect::from_name(name)
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("unknown regex dialect {name:?}; expected 'rust' or 'ecma'")))
}
