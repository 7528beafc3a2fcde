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
