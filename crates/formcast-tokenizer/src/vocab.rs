//! The [`Vocab`] type and its constructors.

use thiserror::Error;

/// How token strings were encoded in the source the vocabulary came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VocabKind {
    /// Token bytes given directly.
    Raw,
    /// GPT-2 style byte-level BPE (`Ġ` = space).
    ByteLevel,
    /// SentencePiece (`▁` = space, `<0xNN>` byte-fallback tokens).
    SentencePiece,
}

/// Errors while loading a vocabulary.
#[derive(Debug, Error)]
pub enum TokenizerError {
    #[error("{0}")]
    Invalid(String),
}

/// A vocabulary: the bytes of every token id plus special/stop information.
#[derive(Debug, Clone)]
pub struct Vocab {
    /// `tokens[id]` = the bytes token `id` decodes to (empty for unused ids).
    pub tokens: Vec<Vec<u8>>,
    /// Ids that are special/control tokens: never produced by matching text.
    pub special: Vec<u32>,
    /// Ids that end generation (EOS/EOT/EOG).
    pub stop: Vec<u32>,
    /// Size of the model's logits vector (>= tokens.len()); ids beyond the
    /// vocabulary are padding and always masked.
    pub logits_size: usize,
    pub kind: VocabKind,
}
