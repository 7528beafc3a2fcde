//! Hugging Face `tokenizer.json` loading.
//!
//! A `tokenizer.json` stores tokens as strings in the model's own encoding;
//! the `decoder` section says how to turn them back into text. We interpret
//! the decoder one token at a time to get the bytes each token contributes
//! in the middle of a text. Steps that only act on a whole sequence (`Fuse`,
//! `Strip` of the first leading space) are ignored: a constrained decoder
//! needs what a token adds once it follows other tokens.

use std::collections::HashMap;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

use crate::byte_level;
use crate::vocab::{
    invalid, resolve_stop, TokenizerError, Vocab, VocabKind, VocabOptions, MAX_VOCAB_SIZE,
};

#[derive(Deserialize)]
struct HfFile {
    #[serde(default)]
    added_tokens: Vec<HfAddedToken>,
    #[serde(default)]
    pre_tokenizer: Option<Value>,
    #[serde(default)]
    decoder: Option<Value>,
    model: HfModel,
}

#[derive(Deserialize)]
struct HfAddedToken {
    id: u64,
    content: String,
    #[serde(default)]
    special: bool,
}

#[derive(Deserialize)]
struct HfModel {
    #[serde(rename = "type", default)]
    model_type: Option<String>,
    #[serde(default)]
    vocab: Option<Value>,
    #[serde(default)]
    byte_fallback: Option<bool>,
    #[serde(default)]
    continuing_subword_prefix: Option<String>,
    #[serde(default)]
    max_input_chars_per_word: Option<IgnoredAny>,
    // Merges can be large (hundreds of thousands of pairs); skip them without
    // building values, only their presence matters (to infer a missing type).
    #[serde(default)]
    merges: Option<IgnoredAny>,
}

/// The model families of `tokenizer.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ModelType {
    Bpe,
    Unigram,
    WordPiece,
    WordLevel,
}

impl HfModel {
    fn model_type(&self) -> Result<ModelType, TokenizerError> {
        match self.model_type.as_deref() {
            Some("BPE") => Ok(ModelType::Bpe),
            Some("Unigram") => Ok(ModelType::Unigram),
            Some("WordPiece") => Ok(ModelType::WordPiece),
            Some("WordLevel") => Ok(ModelType::WordLevel),
            Some(other) => Err(TokenizerError::Unsupported(format!(
                "unknown tokenizer.json model type {other:?} \
                 (expected BPE, Unigram, WordPiece or WordLevel)"
            ))),
            // Old files have no "type"; the tokenizers library infers it
            // from the fields, so do we.
            None => match &self.vocab {
                Some(Value::Array(_)) => Ok(ModelType::Unigram),
                _ if self.merges.is_some() => Ok(ModelType::Bpe),
                _ if self.max_input_chars_per_word.is_some() => Ok(ModelType::WordPiece),
                Some(Value::Object(_)) => Ok(ModelType::WordLevel),
                _ => Err(TokenizerError::Unsupported(
                    "tokenizer.json model has no \"type\" and its kind cannot be inferred".into(),
                )),
            },
        }
    }
}

/// One per-token decoding step.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// GPT-2 byte-level alphabet back to bytes (whole token, or unchanged if
    /// a character is outside the alphabet, as the tokenizers library does).
    ByteLevel,
    /// Literal replacement (`Replace` with a string pattern, `Metaspace`).
    Replace { from: Vec<u8>, to: Vec<u8> },
    /// WordPiece: strip the continuation prefix, or else prepend a space.
    WordPiece { prefix: Vec<u8> },
    /// `BPEDecoder`: the end-of-word suffix becomes a space.
    Suffix { suffix: Vec<u8> },
}

/// How to turn a model token string into bytes.
#[derive(Debug, Default)]
struct Decoding {
    steps: Vec<Step>,
    /// `<0xNN>` tokens are the single byte 0xNN.
    byte_fallback: bool,
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

impl Decoding {
    fn from_decoder(decoder: &Value, out: &mut Decoding) -> Result<(), TokenizerError> {
        let ty = str_field(decoder, "type").ok_or_else(|| {
            TokenizerError::Json("tokenizer.json decoder has no \"type\" field".into())
        })?;
        match ty {
            "Sequence" => {
                let list = decoder
                    .get("decoders")
                    .and_then(Value::as_array)
                    .ok_or_else(|| {
                        TokenizerError::Json("Sequence decoder without a \"decoders\" list".into())
                    })?;
                for d in list {
                    Decoding::from_decoder(d, out)?;
                }
            }
            "ByteLevel" => out.steps.push(Step::ByteLevel),
            "ByteFallback" => out.byte_fallback = true,
            "Replace" => {
                let pattern = decoder.get("pattern");
                let from = match pattern
                    .and_then(|p| p.get("String"))
                    .and_then(Value::as_str)
                {
                    Some(s) => s,
                    None if pattern.and_then(|p| p.get("Regex")).is_some() => {
                        return Err(TokenizerError::Unsupported(
                            "Replace decoders with a regex pattern are not supported".into(),
                        ))
                    }
                    None => {
                        return Err(TokenizerError::Json(
                            "Replace decoder without a {\"String\": ...} pattern".into(),
                        ))
                    }
                };
                let to = str_field(decoder, "content").ok_or_else(|| {
                    TokenizerError::Json("Replace decoder without a \"content\" string".into())
                })?;
                if from.is_empty() {
                    return Err(TokenizerError::Json(
                        "Replace decoder with an empty pattern".into(),
                    ));
                }
                out.steps.push(Step::Replace {
                    from: from.into(),
                    to: to.into(),
                });
            }
            "Metaspace" => {
                // The leading-space removal of Metaspace (prepend_scheme) only
                // affects the first token of a text; per token it is a replace.
                let repl = str_field(decoder, "replacement").unwrap_or("\u{2581}");
                if repl.is_empty() {
                    return Err(TokenizerError::Json(
                        "Metaspace decoder with an empty replacement".into(),
                    ));
                }
                out.steps.push(Step::Replace {
                    from: repl.into(),
                    to: b" ".to_vec(),
                });
            }
            "WordPiece" => {
                let prefix = str_field(decoder, "prefix").unwrap_or("##");
                out.steps.push(Step::WordPiece {
                    prefix: prefix.into(),
                });
            }
            "BPEDecoder" => {
                let suffix = str_field(decoder, "suffix").unwrap_or("</w>");
                if !suffix.is_empty() {
                    out.steps.push(Step::Suffix {
                        suffix: suffix.into(),
                    });
                }
            }
            // Sequence-level only (see the module comment).
            "Fuse" | "Strip" => {}
            other => {
                return Err(TokenizerError::Unsupported(format!(
                    "unsupported tokenizer.json decoder type {other:?}"
                )))
            }
        }
        Ok(())
    }

    /// The decoding of a file: its decoder, or (without one) what its
    /// pre-tokenizer and model imply.
    fn of_file(file: &HfFile, model_type: ModelType) -> Result<Decoding, TokenizerError> {
        let mut d = Decoding::default();
        match &file.decoder {
            Some(dec) if !dec.is_null() => Decoding::from_decoder(dec, &mut d)?,
            _ => {
                let pre = file.pre_tokenizer.as_ref();
                if pre.is_some_and(|p| contains_type(p, "ByteLevel")) {
                    d.steps.push(Step::ByteLevel);
                } else if let Some(m) = pre.and_then(|p| find_type(p, "Metaspace")) {
                    let repl = str_field(m, "replacement").unwrap_or("\u{2581}");
                    if !repl.is_empty() {
                        d.steps.push(Step::Replace {
                            from: repl.into(),
                            to: b" ".to_vec(),
                        });
                    }
                } else if model_type == ModelType::WordPiece {
                    let prefix = file
                        .model
                        .continuing_subword_prefix
                        .as_deref()
                        .unwrap_or("##");
                    d.steps.push(Step::WordPiece {
                        prefix: prefix.into(),
                    });
                }
            }
        }
        if file.model.byte_fallback == Some(true) {
            d.byte_fallback = true;
        }
        Ok(d)
    }

    fn kind(&self) -> VocabKind {
        let space_marker =
            |s: &Step| matches!(s, Step::Replace { from, .. } if from == "\u{2581}".as_bytes());
        if self.steps.contains(&Step::ByteLevel) {
            VocabKind::ByteLevel
        } else if self.byte_fallback || self.steps.iter().any(space_marker) {
            VocabKind::SentencePiece
        } else if self
            .steps
            .iter()
            .any(|s| matches!(s, Step::WordPiece { .. }))
        {
            VocabKind::WordPiece
        } else {
            VocabKind::Raw
        }
    }

    fn decode(&self, token: &str) -> Vec<u8> {
        if self.byte_fallback {
            if let Some(b) = parse_byte_token(token) {
                return vec![b];
            }
        }
        let mut bytes = token.as_bytes().to_vec();
        for step in &self.steps {
            bytes = match step {
                Step::ByteLevel => match std::str::from_utf8(&bytes)
                    .ok()
                    .and_then(byte_level::decode)
                {
                    Some(raw) => raw,
                    None => bytes,
                },
                Step::Replace { from, to } => replace_all(&bytes, from, to),
                Step::WordPiece { prefix } => match bytes.strip_prefix(prefix.as_slice()) {
                    Some(rest) => rest.to_vec(),
                    None => {
                        let mut spaced = Vec::with_capacity(bytes.len() + 1);
                        spaced.push(b' ');
                        spaced.extend_from_slice(&bytes);
                        spaced
                    }
                },
                Step::Suffix { suffix } => replace_all(&bytes, suffix, b" "),
            };
        }
        bytes
    }
}

/// Whether a (pre-tokenizer) config is, or is a `Sequence` containing, `ty`.
fn contains_type(v: &Value, ty: &str) -> bool {
    find_type(v, ty).is_some()
}

fn find_type<'a>(v: &'a Value, ty: &str) -> Option<&'a Value> {
    match str_field(v, "type") {
        Some(t) if t == ty => Some(v),
        Some("Sequence") => v
            .get("pretokenizers")
            .or_else(|| v.get("decoders"))
            .and_then(Value::as_array)?
            .iter()
            .find_map(|x| find_type(x, ty)),
        _ => None,
    }
}

/// `<0xNN>` (exactly two hex digits) -> the byte 0xNN.
fn parse_byte_token(token: &str) -> Option<u8> {
    let hex = token.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

fn replace_all(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

fn check_id(id: u64, what: &dyn Fn() -> String) -> Result<u32, TokenizerError> {
    if id >= MAX_VOCAB_SIZE as u64 {
        return invalid(format!(
            "{} has id {id}, beyond the supported maximum vocabulary size {MAX_VOCAB_SIZE}",
            what()
        ));
    }
    Ok(id as u32)
}

/// The model vocabulary as (token string, id) pairs.
fn model_vocab(model: &HfModel, ty: ModelType) -> Result<Vec<(String, u32)>, TokenizerError> {
    let vocab = match &model.vocab {
        Some(v) if !v.is_null() => v,
        _ => return invalid("tokenizer.json model has no \"vocab\""),
    };
    let mut out = Vec::new();
    match (ty, vocab) {
        (ModelType::Unigram, Value::Array(list)) => {
            out.reserve(list.len());
            for (i, entry) in list.iter().enumerate() {
                let piece = entry.get(0).and_then(Value::as_str).ok_or_else(|| {
                    TokenizerError::Json(format!(
                        "Unigram vocab entry {i} is not a [piece, score] pair: {entry}"
                    ))
                })?;
                out.push((
                    piece.to_string(),
                    check_id(i as u64, &|| format!("Unigram piece {piece:?}"))?,
                ));
            }
        }
        (ModelType::Unigram, _) => {
            return Err(TokenizerError::Json(
                "Unigram model vocab is not a list".into(),
            ))
        }
        (_, Value::Object(map)) => {
            out.reserve(map.len());
            for (token, id) in map {
                let id = id.as_u64().ok_or_else(|| {
                    TokenizerError::Json(format!(
                        "model.vocab entry {token:?} has id {id}, not a non-negative integer"
                    ))
                })?;
                out.push((
                    token.clone(),
                    check_id(id, &|| format!("model.vocab entry {token:?}"))?,
                ));
            }
        }
        (_, _) => {
            return Err(TokenizerError::Json(
                "model.vocab is not an object mapping tokens to ids".into(),
            ))
        }
    }
    Ok(out)
}

/// The `eos_token` named by a `tokenizer_config.json` (a string, or an
/// object with a `content` field), if any.
fn config_eos_token(config_text: &str) -> Result<Option<String>, TokenizerError> {
    let config: Value = serde_json::from_str(config_text).map_err(|e| {
        TokenizerError::Json(format!("tokenizer_config.json is not valid JSON: {e}"))
    })?;
    Ok(match config.get("eos_token") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(obj @ Value::Object(_)) => str_field(obj, "content").map(str::to_string),
        _ => None,
    })
}

impl Vocab {
    /// A vocabulary from the text of a Hugging Face `tokenizer.json`.
    ///
    /// * Token bytes follow the file's decoder: byte-level BPE tokens go
    ///   through the inverse GPT-2 byte table; SentencePiece tokens get `▁`
    ///   replaced by a space, and `<0xNN>` byte-fallback tokens become the
    ///   byte 0xNN; WordPiece `##` continuations lose their prefix while other
    ///   tokens get a leading space.
    /// * `added_tokens` with `special: true` are special: their bytes are
    ///   their content. Non-special added tokens are text tokens whose bytes
    ///   are their literal content (unless they merely repeat a model vocab
    ///   entry with the same id, which then decodes as that entry).
    /// * The size is max id + 1 over the model vocab and the added tokens;
    ///   ids without a token have empty bytes.
    /// * Stop ids: `opts.stop` if given; otherwise the `eos_token` of
    ///   `opts.tokenizer_config` (if given) plus every special token with a
    ///   well-known end-of-text name ([`crate::WELL_KNOWN_STOP_NAMES`]).
    pub fn from_hf_tokenizer_json(
        json_text: &str,
        opts: &VocabOptions,
    ) -> Result<Vocab, TokenizerError> {
        let file: HfFile = serde_json::from_str(json_text)
            .map_err(|e| TokenizerError::Json(format!("tokenizer.json is not valid: {e}")))?;
        let ty = file.model.model_type()?;
        let decoding = Decoding::of_file(&file, ty)?;
        let model_tokens = model_vocab(&file.model, ty)?;

        let mut size = 0usize;
        for (_, id) in &model_tokens {
            size = size.max(*id as usize + 1);
        }
        let mut added_ids = Vec::with_capacity(file.added_tokens.len());
        for t in &file.added_tokens {
            let id = check_id(t.id, &|| format!("added token {:?}", t.content))?;
            size = size.max(id as usize + 1);
            added_ids.push(id);
        }

        // Model vocab first; ids must be unique.
        let mut tokens: Vec<Vec<u8>> = vec![Vec::new(); size];
        let mut model_string: Vec<Option<&str>> = vec![None; size];
        for (token, id) in &model_tokens {
            let slot = &mut model_string[*id as usize];
            if let Some(prev) = slot {
                return invalid(format!(
                    "duplicate id {id} in model.vocab: {prev:?} and {token:?}"
                ));
            }
            *slot = Some(token);
            tokens[*id as usize] = decoding.decode(token);
        }

        // Added tokens override the model entry with the same id.
        let mut special = Vec::new();
        let mut seen_added: HashMap<u32, &str> = HashMap::new();
        for (t, &id) in file.added_tokens.iter().zip(&added_ids) {
            if let Some(prev) = seen_added.insert(id, &t.content) {
                return invalid(format!(
                    "duplicate id {id} in added_tokens: {prev:?} and {:?}",
                    t.content
                ));
            }
            if t.special {
                special.push(id);
                tokens[id as usize] = t.content.as_bytes().to_vec();
            } else if model_string[id as usize] != Some(t.content.as_str()) {
                tokens[id as usize] = t.content.as_bytes().to_vec();
            }
        }

        let mut detected = Vec::new();
        if opts.stop.is_none() {
            if let Some(config) = &opts.tokenizer_config {
                if let Some(eos) = config_eos_token(config)? {
                    let id = file
                        .added_tokens
                        .iter()
                        .zip(&added_ids)
                        .find(|(t, _)| t.content == eos)
                        .map(|(_, &id)| id)
                        .or_else(|| {
                            model_tokens
                                .iter()
                                .find(|(s, _)| *s == eos)
                                .map(|(_, id)| *id)
                        });
                    match id {
                        Some(id) => detected.push(id),
                        None => {
                            return invalid(format!(
                                "tokenizer_config.json names eos_token {eos:?}, \
                                 which is not a token of tokenizer.json"
                            ))
                        }
                    }
                }
            }
        }
        let specials = file
            .added_tokens
            .iter()
            .zip(&added_ids)
            .filter(|(t, _)| t.special)
            .map(|(t, &id)| (t.content.as_str(), id));
        let stop = resolve_stop(&opts.stop, specials, &detected);

        Vocab::build(tokens, special, stop, opts.logits_size, decoding.kind())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(v: Value) -> Result<Vocab, TokenizerError> {
        Vocab::from_hf_tokenizer_json(&v.to_string(), &VocabOptions::default())
    }

    fn byte_level_file() -> Value {
        json!({
            "version": "1.0",
            "added_tokens": [
                {"id": 0, "content": "<|endoftext|>", "special": true},
                {"id": 1, "content": "<|im_end|>", "special": true},
                {"id": 7, "content": "  ", "special": false},
                {"id": 8, "content": "é", "special": false},
            ],
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},
            "decoder": {"type": "ByteLevel", "add_prefix_space": true},
            "model": {
                "type": "BPE",
                "vocab": {"ĠHello": 2, "Ċ": 3, "Ã©": 4, "a": 5, "Ġ": 6},
                "merges": ["Ġ H"]
            }
        })
    }

    #[test]
    fn byte_level_bpe() {
        let v = load(byte_level_file()).unwrap();
        assert_eq!(v.kind, VocabKind::ByteLevel);
        assert_eq!(v.len(), 9);
        assert_eq!(v.tokens[0], b"<|endoftext|>");
        assert_eq!(v.tokens[2], b" Hello");
        assert_eq!(v.tokens[3], b"\n");
        assert_eq!(v.tokens[4], "é".as_bytes());
        assert_eq!(v.tokens[6], b" ");
        // Non-special added tokens are literal text, not byte-level.
        assert_eq!(v.tokens[7], b"  ");
        assert_eq!(v.tokens[8], "é".as_bytes());
        assert_eq!(v.special, vec![0, 1]);
        assert_eq!(v.stop, vec![0, 1]);
        assert_eq!(v.logits_size, 9);
    }

    #[test]
    fn byte_level_token_outside_alphabet_is_literal() {
        // As in the tokenizers library: a token with a character outside the
        // byte alphabet is taken as its UTF-8 text, whole.
        let mut f = byte_level_file();
        f["model"]["vocab"]["a b€"] = json!(9);
        let v = load(f).unwrap();
        assert_eq!(v.tokens[9], "a b€".as_bytes());
    }

    #[test]
    fn gaps_are_empty_and_logits_padding() {
        let mut f = byte_level_file();
        f["added_tokens"]
            .as_array_mut()
            .unwrap()
            .push(json!({"id": 12, "content": "<pad>", "special": true}));
        let opts = VocabOptions::default().with_logits_size(16);
        let v = Vocab::from_hf_tokenizer_json(&f.to_string(), &opts).unwrap();
        assert_eq!(v.len(), 13);
        assert_eq!(v.logits_size, 16);
        assert!(v.tokens[9..12].iter().all(|t| t.is_empty()));
        let opts = VocabOptions::default().with_logits_size(12);
        let err = Vocab::from_hf_tokenizer_json(&f.to_string(), &opts).unwrap_err();
        assert!(
            err.to_string()
                .contains("smaller than the vocabulary (13 ids)"),
            "{err}"
        );
    }

    #[test]
    fn added_token_repeating_model_entry_decodes_as_model_token() {
        let mut f = byte_level_file();
        f["added_tokens"]
            .as_array_mut()
            .unwrap()
            .push(json!({"id": 2, "content": "ĠHello", "special": false}));
        let v = load(f).unwrap();
        assert_eq!(v.tokens[2], b" Hello");
    }

    #[test]
    fn stop_from_config_and_explicit() {
        let f = byte_level_file().to_string();
        let cfg = r#"{"eos_token": {"content": "<|im_end|>", "lstrip": false}}"#;
        let v =
            Vocab::from_hf_tokenizer_json(&f, &VocabOptions::default().with_tokenizer_config(cfg))
                .unwrap();
        assert_eq!(v.stop, vec![0, 1]);
        // eos_token may be a plain model token.
        let cfg = r#"{"eos_token": "a"}"#;
        let v =
            Vocab::from_hf_tokenizer_json(&f, &VocabOptions::default().with_tokenizer_config(cfg))
                .unwrap();
        assert_eq!(v.stop, vec![0, 1, 5]);
        let cfg = r#"{"eos_token": "<nope>"}"#;
        let err =
            Vocab::from_hf_tokenizer_json(&f, &VocabOptions::default().with_tokenizer_config(cfg))
                .unwrap_err();
        assert!(err.to_string().contains("eos_token \"<nope>\""), "{err}");
        let err =
            Vocab::from_hf_tokenizer_json(&f, &VocabOptions::default().with_tokenizer_config("{"))
                .unwrap_err();
        assert!(
            err.to_string()
                .contains("tokenizer_config.json is not valid JSON"),
            "{err}"
        );
        // Explicit ids win, and are validated.
        let v =
            Vocab::from_hf_tokenizer_json(&f, &VocabOptions::default().with_stop(vec![5, 1, 5]))
                .unwrap();
        assert_eq!(v.stop, vec![1, 5]);
        let err = Vocab::from_hf_tokenizer_json(&f, &VocabOptions::default().with_stop(vec![9]))
            .unwrap_err();
        assert!(
            err.to_string().contains("stop token id 9 is out of range"),
            "{err}"
        );
    }

    fn sentencepiece_file() -> Value {
        // Llama-2 / Mistral style: BPE with byte fallback and a
        // Replace + ByteFallback + Fuse + Strip decoder.
        let mut vocab = serde_json::Map::new();
        vocab.insert("<unk>".into(), json!(0));
        vocab.insert("<s>".into(), json!(1));
        vocab.insert("</s>".into(), json!(2));
        for b in 0..=255u32 {
            vocab.insert(format!("<0x{b:02X}>"), json!(3 + b));
        }
        vocab.insert("▁".into(), json!(259));
        vocab.insert("▁Hello".into(), json!(260));
        vocab.insert("lo▁▁".into(), json!(261));
        vocab.insert("é".into(), json!(262));
        vocab.insert("<0x1>".into(), json!(263));
        json!({
            "added_tokens": [
                {"id": 0, "content": "<unk>", "special": true},
                {"id": 1, "content": "<s>", "special": true},
                {"id": 2, "content": "</s>", "special": true},
                {"id": 264, "content": "[INST]", "special": false},
            ],
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Prepend", "prepend": "▁"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
            "pre_tokenizer": null,
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
            "model": {"type": "BPE", "vocab": vocab, "merges": [], "byte_fallback": true,
                      "unk_token": "<unk>", "fuse_unk": true}
        })
    }

    #[test]
    fn sentencepiece_bpe() {
        let v = load(sentencepiece_file()).unwrap();
        assert_eq!(v.kind, VocabKind::SentencePiece);
        assert_eq!(v.len(), 265);
        assert_eq!(v.tokens[3], vec![0x00]);
        assert_eq!(v.tokens[3 + 0x20], vec![0x20]);
        assert_eq!(v.tokens[3 + 0xE9], vec![0xE9]);
        assert_eq!(v.tokens[258], vec![0xFF]);
        assert_eq!(v.tokens[259], b" ");
        assert_eq!(v.tokens[260], b" Hello");
        assert_eq!(v.tokens[261], b"lo  ");
        assert_eq!(v.tokens[262], "é".as_bytes());
        // Not exactly two hex digits: ordinary text.
        assert_eq!(v.tokens[263], b"<0x1>");
        assert_eq!(v.tokens[264], b"[INST]");
        assert_eq!(v.tokens[1], b"<s>");
        assert_eq!(v.special, vec![0, 1, 2]);
        assert_eq!(v.stop, vec![2]);
    }

    #[test]
    fn byte_fallback_from_decoder_only() {
        let mut f = sentencepiece_file();
        f["model"]["byte_fallback"] = json!(false);
        let v = load(f.clone()).unwrap();
        assert_eq!(v.tokens[3 + 0x41], b"A");
        // Without either flag, <0xNN> is literal text.
        f["decoder"] = json!({"type": "Replace", "pattern": {"String": "▁"}, "content": " "});
        let v = load(f).unwrap();
        assert_eq!(v.tokens[3 + 0x41], b"<0x41>");
        assert_eq!(v.kind, VocabKind::SentencePiece);
    }

    #[test]
    fn unigram_metaspace() {
        let f = json!({
            "added_tokens": [
                {"id": 0, "content": "<pad>", "special": true},
                {"id": 1, "content": "</s>", "special": true},
                {"id": 2, "content": "<unk>", "special": true}],
            "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"},
            "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
            "model": {"type": "Unigram", "unk_id": 2, "vocab": [
                ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0], ["▁", -2.0], ["▁the", -3.0], ["s", -4.0]]}
        });
        let v = load(f.clone()).unwrap();
        assert_eq!(v.kind, VocabKind::SentencePiece);
        assert_eq!(v.tokens[3], b" ");
        assert_eq!(v.tokens[4], b" the");
        assert_eq!(v.tokens[5], b"s");
        assert_eq!(v.stop, vec![1]);
        // No decoder: the Metaspace pre-tokenizer decides; type inferred.
        let mut g = f;
        g["decoder"] = Value::Null;
        g["model"].as_object_mut().unwrap().remove("type");
        let v = load(g).unwrap();
        assert_eq!(v.tokens[4], b" the");
    }

    #[test]
    fn wordpiece() {
        let f = json!({
            "added_tokens": [
                {"id": 0, "content": "[PAD]", "special": true},
                {"id": 1, "content": "[SEP]", "special": true}],
            "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100,
                      "vocab": {"[PAD]": 0, "[SEP]": 1, "hello": 2, "##ing": 3, "#": 4}}
        });
        let v = load(f).unwrap();
        assert_eq!(v.kind, VocabKind::WordPiece);
        assert_eq!(v.tokens[2], b" hello");
        assert_eq!(v.tokens[3], b"ing");
        assert_eq!(v.tokens[4], b" #");
        assert_eq!(v.tokens[1], b"[SEP]");
        assert!(v.stop.is_empty());
    }

    #[test]
    fn bpe_decoder_suffix_and_raw() {
        let f = json!({
            "decoder": {"type": "BPEDecoder", "suffix": "</w>"},
            "model": {"type": "BPE", "vocab": {"hi</w>": 0, "h": 1}, "merges": []}
        });
        let v = load(f).unwrap();
        assert_eq!(v.tokens[0], b"hi ");
        assert_eq!(v.tokens[1], b"h");
        assert_eq!(v.kind, VocabKind::Raw);
        let f = json!({"model": {"type": "WordLevel", "vocab": {"x y": 0}, "unk_token": "x y"}});
        let v = load(f).unwrap();
        assert_eq!(v.tokens[0], b"x y");
        assert_eq!(v.kind, VocabKind::Raw);
    }

    #[test]
    fn errors() {
        let e = |v: Value| load(v).unwrap_err().to_string();
        assert!(
            Vocab::from_hf_tokenizer_json("{not json", &VocabOptions::default())
                .unwrap_err()
                .to_string()
                .contains("tokenizer.json is not valid")
        );
        assert!(Vocab::from_hf_tokenizer_json("[]", &VocabOptions::default()).is_err());
        assert!(e(json!({})).contains("model"));
        assert!(e(json!({"model": {"type": "Magic", "vocab": {}}}))
            .contains("unknown tokenizer.json model type \"Magic\""));
        assert!(e(json!({"model": {"type": "BPE"}})).contains("no \"vocab\""));
        assert!(e(json!({"model": {"type": "BPE", "vocab": {}}})).contains("vocabulary is empty"));
        assert!(
            e(json!({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}}}))
                .contains("duplicate id 0 in model.vocab")
        );
        assert!(e(json!({"model": {"type": "BPE", "vocab": {"a": -1}}}))
            .contains("not a non-negative integer"));
        assert!(e(json!({"model": {"type": "BPE", "vocab": {"a": 1.5}}}))
            .contains("not a non-negative integer"));
        assert!(
            e(json!({"model": {"type": "BPE", "vocab": {"a": 4000000000u64}}}))
                .contains("supported maximum")
        );
        assert!(e(json!({"model": {"type": "BPE", "vocab": ["a"]}})).contains("not an object"));
        assert!(
            e(json!({"model": {"type": "Unigram", "vocab": [["a", 0.0], 5]}}))
                .contains("Unigram vocab entry 1")
        );
        assert!(e(json!({"model": {"type": "Unigram", "vocab": {"a": 0}}})).contains("not a list"));
        assert!(e(
            json!({"added_tokens": [{"id": 0, "content": "x", "special": true},
                                          {"id": 0, "content": "y", "special": true}],
                         "model": {"type": "BPE", "vocab": {"a": 0}}})
        )
        .contains("duplicate id 0 in added_tokens"));
        assert!(e(json!({"added_tokens": [{"id": -3, "content": "x"}], "model": {"type": "BPE", "vocab": {"a": 0}}}))
            .contains("tokenizer.json is not valid"));
        assert!(e(
            json!({"decoder": {"type": "CTC"}, "model": {"type": "BPE", "vocab": {"a": 0}}})
        )
        .contains("unsupported tokenizer.json decoder type \"CTC\""));
        assert!(e(
            json!({"decoder": {"type": "Replace", "pattern": {"Regex": "x+"}, "content": ""},
                         "model": {"type": "BPE", "vocab": {"a": 0}}})
        )
        .contains("regex"));
        assert!(e(
            json!({"decoder": {"type": "Sequence"}, "model": {"type": "BPE", "vocab": {"a": 0}}})
        )
        .contains("decoders"));
    }
}
