//! Loads the real tokenizer files from the project's `shared/tokenizers`
//! directory (beside the repository, or `$FORMCAST_TOKENIZERS_DIR`). Each test
//! is skipped, with a note on stderr, when its file is absent.

use std::path::PathBuf;

use formcast_tokenizer::{
    byte_level, llama3_special_tokens, Vocab, VocabKind, VocabOptions, LLAMA3_STOP_IDS,
};

fn tokenizer_file(name: &str) -> Option<String> {
    let dir = std::env::var_os("FORMCAST_TOKENIZERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/tokenizers")
        });
    let path = dir.join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) => {
            eprintln!("skipping: cannot read {}: {e}", path.display());
            None
        }
    }
}

#[test]
fn smollm2_tokenizer_json() {
    let (Some(json), Some(config)) = (
        tokenizer_file("smollm2-tokenizer.json"),
        tokenizer_file("smollm2-tokenizer_config.json"),
    ) else {
        return;
    };
    let opts = VocabOptions::default().with_tokenizer_config(config);
    let v = Vocab::from_hf_tokenizer_json(&json, &opts).unwrap();
    assert_eq!(v.kind, VocabKind::ByteLevel);
    assert_eq!(v.len(), 49152);
    assert_eq!(v.logits_size, 49152);
    assert_eq!(v.special, (0..17).collect::<Vec<u32>>());
    // eos_token <|im_end|> from the config, <|endoftext|> by name.
    assert_eq!(v.stop, vec![0, 2]);
    assert_eq!(v.tokens[0], b"<|endoftext|>");
    assert_eq!(v.tokens[2], b"<|im_end|>");
    // The byte alphabet comes first: single bytes, no two alike, all of
    // printable ASCII among them (SmolLM2 leaves out some bytes, e.g. 0xC0
    // which never occurs in UTF-8).
    let first_merge = (17..v.len()).find(|&i| v.tokens[i].len() > 1).unwrap();
    let mut singles: Vec<u8> = v.tokens[17..first_merge].iter().map(|t| t[0]).collect();
    singles.sort_unstable();
    singles.dedup();
    assert_eq!(singles.len(), first_merge - 17);
    assert!((b' '..=b'~').all(|b| singles.contains(&b)));
    assert!(singles.contains(&b'\n'));
    assert!(v.tokens.iter().all(|t| !t.is_empty()));
    // Re-encoding every regular token gives back the file's token string.
    let file: serde_json::Value = serde_json::from_str(&json).unwrap();
    let vocab = file["model"]["vocab"].as_object().unwrap();
    for (s, id) in vocab {
        let id = id.as_u64().unwrap() as usize;
        if !v.is_special(id as u32) {
            assert_eq!(&byte_level::encode(&v.tokens[id]), s, "id {id}");
        }
    }
    let space_the = vocab["Ġthe"].as_u64().unwrap() as u32;
    assert_eq!(v.token_bytes(space_the), Some(&b" the"[..]));

    // Without the config, only the well-known names are stops.
    let v = Vocab::from_hf_tokenizer_json(&json, &VocabOptions::default()).unwrap();
    assert_eq!(v.stop, vec![0, 2]);
    let v = Vocab::from_hf_tokenizer_json(&json, &VocabOptions::default().with_logits_size(49216))
        .unwrap();
    assert_eq!(v.logits_size, 49216);
}

#[test]
fn llama3_tiktoken() {
    let Some(ranks) = tokenizer_file("llama3-tokenizer.model") else {
        return;
    };
    let v =
        Vocab::from_tiktoken(&ranks, &llama3_special_tokens(), &VocabOptions::default()).unwrap();
    assert_eq!(v.len(), 128256);
    assert_eq!(v.kind, VocabKind::Raw);
    assert_eq!(v.special, (128000..128256).collect::<Vec<u32>>());
    assert_eq!(v.stop, LLAMA3_STOP_IDS.to_vec());
    assert!(v.tokens.iter().all(|t| !t.is_empty()));
    assert_eq!(v.tokens[0], b"!");
    assert_eq!(v.tokens[128009], b"<|eot_id|>");
    assert_eq!(v.special_id("<|start_header_id|>"), Some(128006));
    // Every byte is a token of its own.
    for b in 0..=255u8 {
        assert!(
            v.tokens[..128000].iter().any(|t| t.as_slice() == [b]),
            "byte {b:#04x}"
        );
    }
}
