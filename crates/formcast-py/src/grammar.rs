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
}

#[pymethods]
impl Grammar {
    /// Parses GBNF/EBNF text (llama.cpp's dialect); `root` names the start rule.
    #[staticmethod]
    #[pyo3(signature = (text, root="root"))]
    fn from_ebnf(text: &str, root: &str) -> PyResult<Self> {
        guard(|| Ok(Grammar { inner: Arc::new(fg::parse_ebnf(text, root).map_err(grammar_err)?) }))
    }

    /// A grammar matching exactly the full matches of a regular expression.
    #[staticmethod]
    fn from_regex(pattern: &str) -> PyResult<Self> {
        guard(|| Ok(Grammar { inner: Arc::new(fg::regex::regex_grammar(pattern).map_err(grammar_err)?) }))
    }

    /// The built-in grammar for any JSON value.
    #[staticmethod]
    fn builtin_json() -> PyResult<Self> {
        guard(|| Ok(Grammar { inner: Arc::new(fg::json::builtin_json_grammar()) }))
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
