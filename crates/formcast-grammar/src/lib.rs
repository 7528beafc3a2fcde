//! Grammar front-ends: every input language (GBNF/EBNF, regular expressions,
//! the built-in JSON grammar, and later JSON Schema and structural tags) is
//! lowered into one intermediate representation, [`Grammar`], which the
//! engine crate compiles against a tokenizer.

pub mod ebnf;
pub mod error;
pub mod ir;
pub mod json;
pub mod regex;
pub mod validate;

pub use error::GrammarError;
pub use ir::{Expr, Grammar, Rule, RuleId, TokenId};
