//! Vocabularies: what each token id decodes to, byte for byte, and which ids
//! are special (never matched by text) or stop generation.
//!
//! Sources: Hugging Face `tokenizer.json` ([`Vocab::from_hf_tokenizer_json`]),
//! tiktoken ranks files ([`Vocab::from_tiktoken`], with
//! [`llama3_special_tokens`] for Llama-3) and plain byte lists
//! ([`Vocab::from_token_bytes`], e.g. read from a GGUF by llama.cpp).

pub mod byte_level;
mod hf;
mod tiktoken;
pub mod vocab;

pub use tiktoken::{
    llama3_special_tokens, LLAMA3_NUM_BASE_TOKENS, LLAMA3_NUM_SPECIAL_TOKENS, LLAMA3_STOP_IDS,
};
pub use vocab::{
    TokenizerError, Vocab, VocabKind, VocabOptions, MAX_VOCAB_SIZE, WELL_KNOWN_STOP_NAMES,
};
