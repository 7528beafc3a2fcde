//! Writes a vocabulary as text, one token per line: `id<TAB>flags<TAB>hex`,
//! where flags is `s` (special), `e` (stop), both, or `-`. Used to compare
//! this crate's decoding with other implementations (llama.cpp, tiktoken).
//!
//!   cargo run --example dump_vocab -- hf tokenizer.json [tokenizer_config.json] > out.tsv
//!   cargo run --example dump_vocab -- llama3 tokenizer.model > out.tsv

use std::io::Write;

use formcast_tokenizer::{llama3_special_tokens, Vocab, VocabOptions};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let vocab = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["hf", json, rest @ ..] if rest.len() <= 1 => {
            let mut opts = VocabOptions::default();
            if let Some(cfg) = rest.first() {
                opts = opts.with_tokenizer_config(std::fs::read_to_string(cfg)?);
            }
            Vocab::from_hf_tokenizer_json(&std::fs::read_to_string(json)?, &opts)?
        }
        ["llama3", model] => Vocab::from_tiktoken(
            &std::fs::read_to_string(model)?,
            &llama3_special_tokens(),
            &VocabOptions::default(),
        )?,
        _ => {
            return Err(
                "usage: dump_vocab hf TOKENIZER_JSON [CONFIG_JSON] | llama3 TOKENIZER_MODEL".into(),
            )
        }
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (id, bytes) in vocab.tokens.iter().enumerate() {
        let id = id as u32;
        let flags = match (vocab.is_special(id), vocab.is_stop(id)) {
            (true, true) => "se",
            (true, false) => "s",
            (false, true) => "e",
            (false, false) => "-",
        };
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(out, "{id}\t{flags}\t{hex}")?;
    }
    out.flush()?;
    Ok(())
}
