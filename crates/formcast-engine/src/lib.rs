//! The formcast matching engine.
//!
//! Data flow: a [`formcast_grammar::Grammar`] is compiled into an
//! [`automaton::Automaton`] (one byte-level DFA per rule); a
//! [`compiled::CompiledGrammar`] pairs it with a [`vocab_index::VocabIndex`]
//! (the token trie) and lazily built caches; a [`matcher::Matcher`] tracks one
//! sequence as a set of parser items ([`parser`]) and produces token masks
//! ([`mask`]).

pub mod automaton;
pub mod bitset;
pub mod compiled;
pub mod completion;
pub mod dropper;
pub mod error;
pub mod foreground;
pub mod limits;
pub mod mask;
pub mod matcher;
pub mod parser;
pub mod partition;
pub mod vocab_index;

pub use bitset::Bitset;
pub use compiled::{CompileOptions, CompiledGrammar};
pub use error::EngineError;
pub use limits::Budget;
pub use matcher::Matcher;
pub use vocab_index::VocabIndex;
