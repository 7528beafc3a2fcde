//! Lark: any input parses (both readings, `Lexer::Llguidance` and
//! `Lexer::ContextFree`) or yields an error, never a panic, stack overflow
//! or hang; a grammar compiles (or hits a limit), a matcher over it behaves
//! (see common), and in llguidance's reading — where lexemes cut one
//! another and masks walk item groups as whole sets — every mask agrees
//! with token-by-token acceptance.
#![no_main]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{exercise, on_small_stack, vocab};
use formcast_engine::{Budget, CompileOptions, CompiledGrammar, Matcher};
use formcast_lark::{parse_lark, LarkOptions, Lexer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The grammar, then (after a NUL) the bytes to walk.
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let text = String::from_utf8_lossy(&data[..split]).into_owned();
    let probe = data.get(split + 1..).unwrap_or(&[]).to_vec();
    on_small_stack(move || {
        for lexer in [Lexer::Llguidance, Lexer::ContextFree] {
            let opts = LarkOptions { lexer, json_time_budget_ms: 200, ..Default::default() };
            let Ok(g) = parse_lark(&text, &opts) else { continue };
            exercise(&g.grammar, &probe);
            if lexer == Lexer::Llguidance {
                masks_agree(&g.grammar, &probe);
            }
        }
    });
});

/// Along the probe bytes, each mask bit is whether the token is accepted.
fn masks_agree(g: &formcast_grammar::Grammar, probe: &[u8]) {
    let budget = Budget::new(Some(Duration::from_millis(500)), None);
    let Ok(cg) = CompiledGrammar::compile(g, vocab(), &CompileOptions::default(), &budget) else { return };
    let cg = Arc::new(cg);
    let Ok(mut m) = Matcher::new(cg.clone(), false, None) else { return };
    let mut mask = vec![0u32; cg.vocab.mask_words()];
    for step in 0..=probe.len().min(6) {
        if m.fill_next_token_bitmask(&mut mask).is_err() {
            return;
        }
        for t in 0..cg.vocab.vocab_len as u32 {
            let allowed = mask[t as usize / 32] >> (t % 32) & 1 != 0;
            let Ok(accepted) = m.accept_token(t) else { return };
            if accepted {
                m.rollback(1).expect("rollback");
            }
            assert_eq!(allowed, accepted, "token {t} ({:?}) at step {step}: mask {allowed}, accept {accepted}", String::from_utf8_lossy(&cg.vocab.tokens[t as usize]));
        }
        let Some(&b) = probe.get(step) else { return };
        if !matches!(m.accept_bytes(&[b]), Ok(true)) {
            return;
        }
    }
}
