//! tiktoken ranks files (`<base64 token bytes> <rank>` per line) and the
//! Llama-3 special tokens that go with Meta's `tokenizer.model`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use crate::vocab::{
    invalid, resolve_stop, TokenizerError, Vocab, VocabKind, VocabOptions, MAX_VOCAB_SIZE,
};

/// Number of regular (BPE) tokens in Llama-3's `tokenizer.model`.
pub const LLAMA3_NUM_BASE_TOKENS: u32 = 128_000;
/// Number of special tokens Llama-3 reserves after the BPE ranks.
pub const LLAMA3_NUM_SPECIAL_TOKENS: u32 = 256;
/// Llama-3 stop ids: `<|end_of_text|>`, `<|eom_id|>`, `<|eot_id|>`.
pub const LLAMA3_STOP_IDS: [u32; 3] = [128_001, 128_008, 128_009];

/// The 256 Llama-3 special tokens (ids 128000..=128255) as named by Meta's
/// `tokenizer.py` for Llama 3.1 and later (3.0 used reserved names at
/// 128004, 128005, 128008 and 128010; the BPE ranks are the same).
pub fn llama3_special_tokens() -> Vec<(String, u32)> {
    let named = [
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|reserved_special_token_0|>",
        "<|reserved_special_token_1|>",
        "<|finetune_right_pad_id|>",
        "<|step_id|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eom_id|>",
        "<|eot_id|>",
        "<|python_tag|>",
    ];
    let mut out: Vec<(String, u32)> = named
        .iter()
        .enumerate()
        .map(|(i, name)| (name.to_string(), LLAMA3_NUM_BASE_TOKENS + i as u32))
        .collect();
    // The rest are reserved, numbered on from 2.
    let reserved = LLAMA3_NUM_SPECIAL_TOKENS as usize - named.len();
    for i in 0..reserved {
        let id = LLAMA3_NUM_BASE_TOKENS + (named.len() + i) as u32;
        out.push((format!("<|reserved_special_token_{}|>", i + 2), id));
    }
    out
}

/// Parses a ranks file into (bytes, rank) pairs.
fn parse_ranks(text: &str) -> Result<Vec<(Vec<u8>, u32)>, TokenizerError> {
    let mut out = Vec::new();
    for (lineno, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split_whitespace();
        let (b64, rank) = match (parts.next(), parts.next(), parts.next()) {
            (Some(b), Some(r), None) => (b, r),
            _ => {
                return invalid(format!(
                    "tiktoken ranks line {}: expected \"<base64> <rank>\", got {:?}",
                    lineno + 1,
                    truncate(line)
                ))
            }
        };
        let bytes = STANDARD.decode(b64).map_err(|e| {
            TokenizerError::Invalid(format!(
                "tiktoken ranks line {}: bad base64 {:?}: {e}",
                lineno + 1,
                truncate(b64)
            ))
        })?;
        let rank: u32 = match rank.parse() {
            Ok(r) if (r as usize) < MAX_VOCAB_SIZE => r,
            _ => {
                return invalid(format!(
                    "tiktoken ranks line {}: rank {:?} is not an integer below {MAX_VOCAB_SIZE}",
                    lineno + 1,
                    truncate(rank)
                ))
            }
        };
        out.push((bytes, rank));
    }
    Ok(out)
}

fn truncate(s: &str) -> String {
    s.chars().take(60).collect()
}

impl Vocab {
    /// A vocabulary from a tiktoken ranks file (the rank is the token id) plus
    /// its special tokens. Stop ids: `opts.stop` if given, otherwise the
    /// special tokens with well-known end-of-text names (for Llama-3 with
    /// [`llama3_special_tokens`] that is exactly [`LLAMA3_STOP_IDS`]).
    /// `opts.tokenizer_config` is not used.
    pub fn from_tiktoken(
        ranks_text: &str,
        special_tokens: &[(String, u32)],
        opts: &VocabOptions,
    ) -> Result<Vocab, TokenizerError> {
        let ranks = parse_ranks(ranks_text)?;
        let mut size = 0usize;
        for (_, r) in &ranks {
            size = size.max(*r as usize + 1);
        }
        for (name, id) in special_tokens {
            if *id as usize >= MAX_VOCAB_SIZE {
                return invalid(format!(
                    "special token {name:?} has id {id}, beyond the supported maximum {MAX_VOCAB_SIZE}"
                ));
            }
            size = size.max(*id as usize + 1);
        }
        // Who owns each id, to report duplicates by name.
        let mut tokens: Vec<Option<Vec<u8>>> = vec![None; size];
        for (bytes, rank) in ranks {
            let slot = &mut tokens[rank as usize];
            if slot.is_some() {
                return invalid(format!("duplicate rank {rank} in the tiktoken ranks file"));
            }
            *slot = Some(bytes);
        }
        let mut special = Vec::with_capacity(special_tokens.len());
        for (name, id) in special_tokens {
            let slot = &mut tokens[*id as usize];
            if let Some(prev) = slot {
                return invalid(format!(
                    "special token {name:?} has id {id}, which is already taken by {:?}",
                    String::from_utf8_lossy(prev)
                ));
            }
            *slot = Some(name.as_bytes().to_vec());
            special.push(*id);
        }
        let tokens: Vec<Vec<u8>> = tokens.into_iter().map(Option::unwrap_or_default).collect();
        let stop = resolve_stop(
            &opts.stop,
            special_tokens.iter().map(|(n, id)| (n.as_str(), *id)),
            &[],
        );
        Vocab::build(tokens, special, stop, opts.logits_size, VocabKind::Raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(bytes: &[u8], rank: u32) -> String {
        format!("{} {rank}\n", STANDARD.encode(bytes))
    }

    #[test]
    fn small_ranks_file() {
        let text = [line(b"a", 0), line(b" b", 1), line(&[0xff, 0x00], 3)].concat();
        let special = vec![("<|end|>".to_string(), 5), ("<|start|>".to_string(), 4)];
        let v = Vocab::from_tiktoken(&text, &special, &VocabOptions::default()).unwrap();
        assert_eq!(v.len(), 6);
        assert_eq!(v.tokens[0], b"a");
        assert_eq!(v.tokens[1], b" b");
        assert!(v.tokens[2].is_empty());
        assert_eq!(v.tokens[3], vec![0xff, 0x00]);
        assert_eq!(v.tokens[5], b"<|end|>");
        assert_eq!(v.special, vec![4, 5]);
        assert_eq!(v.stop, vec![5]);
        assert_eq!(v.kind, VocabKind::Raw);
        let v = Vocab::from_tiktoken(
            &text,
            &special,
            &VocabOptions::default()
                .with_stop(vec![0])
                .with_logits_size(10),
        )
        .unwrap();
        assert_eq!(v.stop, vec![0]);
        assert_eq!(v.logits_size, 10);
    }

    #[test]
    fn errors() {
        let e = |text: &str, special: &[(String, u32)]| {
            Vocab::from_tiktoken(text, special, &VocabOptions::default())
                .unwrap_err()
                .to_string()
        };
        assert!(e("YQ== 0\nYg== 0\n", &[]).contains("duplicate rank 0"));
        assert!(e("YQ== 0\n!!!! 1\n", &[]).contains("line 2: bad base64"));
        assert!(e("YQ== x\n", &[]).contains("rank \"x\" is not an integer"));
        assert!(e("YQ== -1\n", &[]).contains("is not an integer"));
        assert!(e("YQ== 99999999999\n", &[]).contains("is not an integer below"));
        assert!(e("YQ==\n", &[]).contains("expected \"<base64> <rank>\""));
        assert!(e("YQ== 0 7\n", &[]).contains("expected"));
        assert!(e("YQ== 0\n", &[("<s>".into(), 0)]).contains("already taken by \"a\""));
        assert!(e("YQ== 0\n", &[("<s>".into(), 1), ("<t>".into(), 1)])
            .contains("already taken by \"<s>\""));
        assert!(e("YQ== 0\n", &[("<s>".into(), u32::MAX)]).contains("supported maximum"));
        assert!(e("", &[]).contains("empty"));
        let err =
            Vocab::from_tiktoken("YQ== 0\n", &[], &VocabOptions::default().with_stop(vec![3]))
                .unwrap_err();
        assert!(err.to_string().contains("stop token id 3 is out of range"));
    }

    #[test]
    fn llama3_special_names() {
        let s = llama3_special_tokens();
        assert_eq!(s.len(), 256);
        let id = |name: &str| s.iter().find(|(n, _)| n == name).map(|(_, id)| *id);
        assert_eq!(id("<|begin_of_text|>"), Some(128000));
        assert_eq!(id("<|end_of_text|>"), Some(128001));
        assert_eq!(id("<|reserved_special_token_0|>"), Some(128002));
        assert_eq!(id("<|reserved_special_token_1|>"), Some(128003));
        assert_eq!(id("<|start_header_id|>"), Some(128006));
        assert_eq!(id("<|end_header_id|>"), Some(128007));
        assert_eq!(id("<|eom_id|>"), Some(128008));
        assert_eq!(id("<|eot_id|>"), Some(128009));
        assert_eq!(id("<|python_tag|>"), Some(128010));
        assert_eq!(id("<|reserved_special_token_2|>"), Some(128011));
        assert_eq!(id("<|reserved_special_token_246|>"), Some(128255));
        let mut ids: Vec<u32> = s.iter().map(|(_, id)| *id).collect();
        ids.dedup();
        assert_eq!(ids, (128000..128256).collect::<Vec<u32>>());
    }
}
