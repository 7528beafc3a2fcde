//! The [`Vocab`] type, its options, validation and the plain-list constructor.
//!
//! The format-specific constructors live in `hf.rs` (Hugging Face
//! `tokenizer.json`) and `tiktoken.rs` (tiktoken ranks files); they all end
//! in [`Vocab::build`] so every vocabulary is validated the same way.

use thiserror::Error;

/// How token strings were encoded in the source the vocabulary came from.
/// Informational: `tokens` always holds the decoded raw bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VocabKind {
    /// Token bytes given directly (plain lists, tiktoken ranks, GGUF via
    /// llama.cpp, or a tokenizer.json whose tokens are literal text).
    Raw,
    /// GPT-2 style byte-level BPE (`Ġ` = space).
    ByteLevel,
    /// SentencePiece (`▁` = space, `<0xNN>` byte-fallback tokens).
    SentencePiece,
    /// BERT-style WordPiece: `##` marks a continuation; every other token is
    /// given a leading space (so a generated text starts with a space).
    WordPiece,
}

/// Errors while loading a vocabulary.
#[derive(Debug, Error)]
pub enum TokenizerError {
    /// The input is well-formed but inconsistent (duplicate ids, ids out of
    /// range, a logits size that is too small, ...).
    #[error("{0}")]
    Invalid(String),
    /// The input could not be parsed as JSON of the expected shape.
    #[error("{0}")]
    Json(String),
    /// The input uses a feature this crate does not handle (unknown model or
    /// decoder type, regex decoders, ...).
    #[error("{0}")]
    Unsupported(String),
}

pub(crate) fn invalid<T>(msg: impl Into<String>) -> Result<T, TokenizerError> {
    Err(TokenizerError::Invalid(msg.into()))
}

/// Upper bound on vocabulary and logits sizes. Real vocabularies stay below
/// ~300k ids; the bound keeps a corrupt id (say 4e9) from turning into a
/// multi-gigabyte allocation.
pub const MAX_VOCAB_SIZE: usize = 1 << 24;

/// Names of special tokens that end generation in well-known model families.
/// Used to pick stop tokens when none are given explicitly.
pub const WELL_KNOWN_STOP_NAMES: &[&str] = &[
    "<|endoftext|>",
    "<|im_end|>",
    "</s>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|eom_id|>",
    "<end_of_turn>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
];

/// Options shared by the vocabulary constructors.
#[derive(Debug, Clone, Default)]
pub struct VocabOptions {
    /// Size of the model's logits vector. `None` = the vocabulary size.
    /// Larger values add padding ids (always masked); smaller is an error.
    pub logits_size: Option<usize>,
    /// Explicit stop token ids. `None` = detect them (see each constructor).
    pub stop: Option<Vec<u32>>,
    /// Text of the companion `tokenizer_config.json`, used by
    /// [`Vocab::from_hf_tokenizer_json`] to find the `eos_token`.
    pub tokenizer_config: Option<String>,
}

impl VocabOptions {
    pub fn with_logits_size(mut self, logits_size: usize) -> Self {
        self.logits_size = Some(logits_size);
        self
    }

    pub fn with_stop(mut self, stop: Vec<u32>) -> Self {
        self.stop = Some(stop);
        self
    }

    pub fn with_tokenizer_config(mut self, text: impl Into<String>) -> Self {
        self.tokenizer_config = Some(text.into());
        self
    }
}

/// A vocabulary: the bytes of every token id plus special/stop information.
#[derive(Debug, Clone)]
pub struct Vocab {
    /// `tokens[id]` = the bytes token `id` decodes to (empty for unused ids).
    pub tokens: Vec<Vec<u8>>,
    /// Ids that are special/control tokens: never produced by matching text.
    /// Sorted, no duplicates.
    pub special: Vec<u32>,
    /// Ids that end generation (EOS/EOT/EOG). Sorted, no duplicates; each is
    /// a real id (`< tokens.len()`).
    pub stop: Vec<u32>,
    /// Size of the model's logits vector (>= tokens.len()); ids beyond the
    /// vocabulary are padding and always masked.
    pub logits_size: usize,
    pub kind: VocabKind,
}

impl Vocab {
    /// A vocabulary from a plain list of token bytes (e.g. produced by
    /// `formcast.tokenizer_sources.llama_cpp_vocab`). `special` and `stop`
    /// must be ids of `tokens`; `logits_size` defaults to `tokens.len()`.
    ///
    /// ```
    /// use formcast_tokenizer::Vocab;
    /// let tokens = vec![b"a".to_vec(), b" b".to_vec(), b"</s>".to_vec()];
    /// let v = Vocab::from_token_bytes(tokens, vec![2], vec![2], Some(8)).unwrap();
    /// assert_eq!((v.len(), v.logits_size), (3, 8));
    /// assert!(v.is_stop(2) && v.is_special(2));
    /// assert!(Vocab::from_token_bytes(vec![b"a".to_vec()], vec![], vec![], Some(0)).is_err());
    /// ```
    pub fn from_token_bytes(
        tokens: Vec<Vec<u8>>,
        special: Vec<u32>,
        stop: Vec<u32>,
        logits_size: Option<usize>,
    ) -> Result<Vocab, TokenizerError> {
        Vocab::build(tokens, special, stop, logits_size, VocabKind::Raw)
    }

    /// Common validation for all constructors.
    pub(crate) fn build(
        tokens: Vec<Vec<u8>>,
        mut special: Vec<u32>,
        mut stop: Vec<u32>,
        logits_size: Option<usize>,
        kind: VocabKind,
    ) -> Result<Vocab, TokenizerError> {
        let n = tokens.len();
        if n == 0 {
            return invalid("the vocabulary is empty");
        }
        if n > MAX_VOCAB_SIZE {
            return invalid(format!(
                "the vocabulary has {n} ids, more than the supported maximum of {MAX_VOCAB_SIZE}"
            ));
        }
        let logits_size = logits_size.unwrap_or(n);
        if logits_size < n {
            return invalid(format!(
                "logits_size {logits_size} is smaller than the vocabulary ({n} ids); \
                 every token id needs a logit"
            ));
        }
        if logits_size > MAX_VOCAB_SIZE {
            return invalid(format!(
                "logits_size {logits_size} exceeds the supported maximum of {MAX_VOCAB_SIZE}"
            ));
        }
        for (what, ids) in [("special", &special), ("stop", &stop)] {
            if let Some(&id) = ids.iter().find(|&&id| id as usize >= n) {
                return invalid(format!(
                    "{what} token id {id} is out of range: the vocabulary has {n} ids (0..{n})"
                ));
            }
        }
        special.sort_unstable();
        special.dedup();
        stop.sort_unstable();
        stop.dedup();
        Ok(Vocab {
            tokens,
            special,
            stop,
            logits_size,
            kind,
        })
    }

    /// Number of token ids (the vocabulary size, without logits padding).
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Never true for a constructed vocabulary; provided for completeness.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The bytes of token `id`, `None` if `id` is not a vocabulary id.
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.tokens.get(id as usize).map(|t| t.as_slice())
    }

    // Linear scans: the lists are short, and a `Vocab` built as a struct
    // literal need not keep them sorted.
    pub fn is_special(&self, id: u32) -> bool {
        self.special.contains(&id)
    }

    pub fn is_stop(&self, id: u32) -> bool {
        self.stop.contains(&id)
    }

    /// The id of the special token whose text is `content`, if any.
    pub fn special_id(&self, content: &str) -> Option<u32> {
        self.special
            .iter()
            .copied()
            .find(|&id| self.token_bytes(id) == Some(content.as_bytes()))
    }

    /// Concatenated bytes of a token sequence (ids out of range are skipped).
    pub fn decode(&self, ids: &[u32]) -> Vec<u8> {
        ids.iter()
            .filter_map(|&id| self.token_bytes(id))
            .flatten()
            .copied()
            .collect()
    }
}

/// Stop ids: the explicit ones if given, else well-known names found among
/// `special` (given as `(content, id)` pairs), plus `extra` detected ids.
pub(crate) fn resolve_stop<'a>(
    explicit: &Option<Vec<u32>>,
    special: impl Iterator<Item = (&'a str, u32)>,
    extra: &[u32],
) -> Vec<u32> {
    if let Some(stop) = explicit {
        return stop.clone();
    }
    let mut stop: Vec<u32> = extra.to_vec();
    stop.extend(
        special
            .filter(|(content, _)| WELL_KNOWN_STOP_NAMES.contains(content))
            .map(|(_, id)| id),
    );
    stop
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn plain_list() {
        let v =
            Vocab::from_token_bytes(toks(&["a", "b", "</s>", ""]), vec![2, 2], vec![2], Some(8))
                .unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v.logits_size, 8);
        assert_eq!(v.special, vec![2]);
        assert_eq!(v.stop, vec![2]);
        assert_eq!(v.kind, VocabKind::Raw);
        assert!(v.is_special(2) && !v.is_special(0));
        assert!(v.is_stop(2) && !v.is_stop(1));
        assert_eq!(v.special_id("</s>"), Some(2));
        assert_eq!(v.token_bytes(1), Some(&b"b"[..]));
        assert_eq!(v.token_bytes(4), None);
        assert_eq!(v.decode(&[0, 1, 0, 99]), b"aba");
    }

    #[test]
    fn default_logits_size_is_vocab_size() {
        let v = Vocab::from_token_bytes(toks(&["a", "b"]), vec![], vec![], None).unwrap();
        assert_eq!(v.logits_size, 2);
    }

    #[test]
    fn logits_size_too_small() {
        let err = Vocab::from_token_bytes(toks(&["a", "b", "c"]), vec![], vec![], Some(2))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("logits_size 2 is smaller than the vocabulary (3 ids)"),
            "{err}"
        );
    }

    #[test]
    fn ids_out_of_range() {
        let err = Vocab::from_token_bytes(toks(&["a"]), vec![], vec![1], Some(4))
            .unwrap_err()
            .to_string();
        assert!(err.contains("stop token id 1 is out of range"), "{err}");
        let err = Vocab::from_token_bytes(toks(&["a"]), vec![7], vec![], None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("special token id 7 is out of range"), "{err}");
    }

    #[test]
    fn empty_and_huge() {
        assert!(Vocab::from_token_bytes(vec![], vec![], vec![], None).is_err());
        let err = Vocab::from_token_bytes(toks(&["a"]), vec![], vec![], Some(usize::MAX))
            .unwrap_err()
            .to_string();
        assert!(err.contains("exceeds the supported maximum"), "{err}");
    }
}
