//! Grammar front-ends: every input language (GBNF/EBNF, regular expressions,
//! the built-in JSON grammar, and later JSON Schema and structural tags) is
//! lowered into one intermediate representation, [`Grammar`], which the
//! engine crate compiles against a tokenizer.

pub mod ebnf;
pub mod ecma;
pub mod error;
pub mod ir;
pub mod json;
pub mod regex;
pub mod validate;

pub use error::GrammarError;
pub use ebnf::{parse_ebnf, parse_ebnf_with_tokens};
pub use regex::{regex_grammar, regex_grammar_in, regex_to_expr, regex_to_expr_in, RegexDialect};
pub use validate::{check_depth, validate};
pub use ir::{trie_node, Expr, Grammar, Lexeme, Rule, RuleId, TokenId, TrieNode, WordsExcept};

/// Largest repetition bound (`{n}`, `{m,n}`) the front-ends accept: counted
/// repetitions are expanded or tracked per copy downstream, so absurd bounds
/// would only exhaust memory later with a worse message.
pub const MAX_REPEAT_BOUND: u32 = 100_000;

/// Deepest nesting the front-ends accept, both for parentheses in the source
/// and for the height of the resulting [`Expr`] trees. Everything that walks
/// an `Expr` recursively (these front-ends, the validator, the engine) may
/// rely on it to stay far from a stack overflow.
pub const MAX_NESTING_DEPTH: usize = 1000;
