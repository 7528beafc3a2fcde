//! GBNF parser: any input parses or yields an error, never a panic, and an
//! accepted grammar always passes validation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(grammar) = formcast_grammar::parse_ebnf(&text, "root") {
        formcast_grammar::validate(&grammar).expect("parse_ebnf returned an invalid grammar");
    }
    // Textual token references go through the resolver path.
    let mut resolve = |t: &str| (!t.len().is_multiple_of(3)).then_some(t.len() as u32);
    let _ = formcast_grammar::parse_ebnf_with_tokens(&text, "root", &mut resolve);
});
