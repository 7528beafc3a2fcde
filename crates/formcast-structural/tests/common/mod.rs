//! Helpers: a small vocabulary (every single byte, plus special tokens) and
//! a matcher driven by text and token ids.
#![allow(dead_code)]

use std::sync::Arc;

use formcast_engine::{Budget, CompileOptions, CompiledGrammar, Matcher, VocabIndex};
use formcast_structural::{compile_str, Options, StructuralError};
use formcast_tokenizer::{Vocab, VocabKind};

pub const SPECIALS: &[&str] = &["<eos>", "<tk>", "</tk>", "<call>", "<end>", "<think>"];
pub const EOS: u32 = 256;

pub fn vocab() -> Vocab {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    tokens.extend(SPECIALS.iter().map(|s| s.as_bytes().to_vec()));
    let special: Vec<u32> = (256..256 + SPECIALS.len() as u32).collect();
    Vocab { logits_size: tokens.len(), tokens, special, stop: vec![EOS], kind: VocabKind::Raw }
}

pub fn tok(s: &str) -> u32 {
    256 + SPECIALS.iter().position(|t| *t == s).expect("special token") as u32
}

fn resolve(s: &str) -> Option<u32> {
    let v = vocab();
    v.tokens.iter().position(|t| t == s.as_bytes()).map(|i| i as u32)
}

pub fn compile(tag: &str) -> Result<Arc<CompiledGrammar>, StructuralError> {
    let c = compile_str(tag, Some(&resolve), &Options::default())?;
    let index = Arc::new(VocabIndex::new(&vocab()).unwrap());
    Ok(Arc::new(CompiledGrammar::compile(&c.grammar, index, &CompileOptions::default(), &Budget::unlimited()).expect("engine compiles")))
}

pub fn err(tag: &str) -> StructuralError {
    match compile_str(tag, Some(&resolve), &Options::default()) {
        Ok(_) => panic!("expected an error for {tag}"),
        Err(e) => e,
    }
}

/// An output step: text (byte by byte) or one token id.
pub enum Step<'a> {
    T(&'a str),
    K(u32),
}

/// Whether the whole output is accepted and complete.
pub fn accepts_steps(cg: &Arc<CompiledGrammar>, steps: &[Step]) -> bool {
    let mut m = Matcher::new(cg.clone(), false, None).unwrap();
    for s in steps {
        let ok = match s {
            Step::T(t) => m.accept_bytes(t.as_bytes()).unwrap(),
            Step::K(k) => m.accept_token(*k).unwrap(),
        };
        if !ok {
            return false;
        }
    }
    m.can_end()
}

pub fn accepts(cg: &Arc<CompiledGrammar>, text: &str) -> bool {
    accepts_steps(cg, &[Step::T(text)])
}

/// Whether `text` is a viable prefix (accepted so far, maybe incomplete).
pub fn prefix_ok(cg: &Arc<CompiledGrammar>, text: &str) -> bool {
    let mut m = Matcher::new(cg.clone(), false, None).unwrap();
    m.accept_bytes(text.as_bytes()).unwrap()
}

pub fn wrap(format: &str) -> String {
    format!(r#"{{"type": "structural_tag", "format": {format}}}"#)
}
