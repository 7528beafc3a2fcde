//! Structural tags: a generated tree of every format type (nested, with
//! embedded JSON schemas in every style, grammars, regexes, token formats,
//! counted repeats and budgets) gives a grammar or an error, never a panic,
//! stack overflow or hang; a grammar compiles (or hits a limit) and a
//! matcher over it behaves (see common).
#![no_main]

mod common;

use common::{exercise, on_small_stack, Gen};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut g = Gen::new(data);
    let format = g.format(0);
    let tag = format!(r#"{{"type":"structural_tag","format":{format}}}"#);
    let probe = g.u.take_rest().to_vec();
    if std::env::var_os("FUZZ_SHOW").is_some() {
        // To read a crash input: FUZZ_SHOW=1 cargo fuzz run structural_tag <artifact>
        eprintln!("tag {tag}");
    }
    on_small_stack(move || {
        // Token strings resolve through the fuzz vocabulary's texts.
        let vocab = common::vocab();
        let resolve = |s: &str| -> Option<u32> { vocab.tokens.iter().position(|t| t == s.as_bytes()).map(|i| i as u32) };
        let opts = formcast_structural::Options::default();
        if let Ok(c) = formcast_structural::compile_str(&tag, Some(&resolve), &opts) {
            exercise(&c.grammar, &probe);
        }
    });
});
