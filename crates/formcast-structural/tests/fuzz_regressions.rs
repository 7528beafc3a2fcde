//! Inputs the structural_tag fuzz target found slow, kept as tests.

mod common;

use formcast_engine::Matcher;

#[test]
fn shortest_completion_of_nested_counted_repeats() {
    // Six nested repeats of at least 3: the shortest completion is 729
    // copies of "<a>". Every step of the search re-walked and re-relaxed
    // the whole continuation graph, one pass per nesting level (17 s; the
    // fuzz target's limit is 10). Costs are now memoized per continuation.
    let tag = r#"{"type":"structural_tag","format":{"type":"repeat","min":3,"max":4294967296,"content":{"type":"repeat","min":3,"max":5,"content":{"type":"repeat","min":3,"max":4294967296,"content":{"type":"repeat","min":3,"max":4294967296,"content":{"type":"repeat","min":3,"max":4294967296,"content":{"type":"repeat","min":3,"max":3,"content":{"type":"sequence","elements":[{"type":"const_string","value":"<a>"}]}}}}}}}}"#;
    let g = common::compile(tag).unwrap();
    let mut m = Matcher::new(g.clone(), false, None).unwrap();
    let done = m.find_shortest_completion(4096).unwrap().expect("a completion");
    assert_eq!(done, b"<a>".repeat(729));
    let mut check = Matcher::new(g, false, None).unwrap();
    assert!(check.accept_bytes(&done).unwrap() && check.can_end());
}


#[test]
fn masks_of_a_pathologically_ambiguous_grammar_are_bounded() {
    // Repeats of repeats of length-bounded text: every split of the text
    // among the levels is a parse, and the items waiting for a rule
    // multiply with the input. Masks visited ever more items (over 10 s for
    // one fuzz input); each closure and each mask now has a budget of items
    // visited, past which the step is a limit error.
    let tag = r#"{"type":"structural_tag","format":{"type":"repeat","min":1,"max":-1,"content":{"type":"repeat","min":1,"max":-1,"content":{"type":"repeat","min":1,"max":-1,"content":{"type":"repeat","min":1,"max":-1,"content":{"type":"repeat","min":1,"max":100,"content":{"type":"any_text","excludes":["</think>"],"max_chars":1000}}}}}}}"#;
    let g = common::compile(tag).unwrap();
    let mut m = Matcher::new(g.clone(), false, None).unwrap();
    let mut mask = vec![0u32; g.vocab.mask_words()];
    for (i, b) in b"abcdefghijklmnopqrstuvwxyzabcdef".iter().enumerate() {
        assert!(m.accept_bytes(&[*b]).unwrap());
        if i % 8 == 7 {
            match m.fill_next_token_bitmask(&mut mask) {
                Ok(()) => assert!(mask.iter().any(|&w| w != 0)),
                Err(e) => assert!(matches!(e, formcast_engine::EngineError::Limit(_)), "{e}"),
            }
        }
    }
}
