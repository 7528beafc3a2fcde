//! Vocabularies: what each token id decodes to, byte for byte, and which ids
//! are special (never matched by text) or stop generation.

pub mod vocab;

pub use vocab::{TokenizerError, Vocab, VocabKind};
