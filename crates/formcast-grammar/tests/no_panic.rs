//! Arbitrary input never panics the parsers: it parses or yields an error.

use formcast_grammar::{parse_ebnf, regex_grammar};
use proptest::prelude::*;

/// Fragments that make random EBNF reach deep into the parser.
const EBNF_PIECES: &[&str] = &[
    "root",
    " ::= ",
    "a",
    "b-c",
    "\n",
    " ",
    "|",
    "(",
    ")",
    "\"",
    "\"x\"",
    "[",
    "]",
    "^",
    "-",
    "\\",
    "\\x4",
    "\\u00e9",
    "\\U0010FFFF",
    "\\n",
    "*",
    "+",
    "?",
    "{",
    "}",
    ",",
    "3",
    "100001",
    ".",
    "#c\n",
    "<[5]>",
    "!",
    "<",
    ">",
    "é",
    "::=",
];

const REGEX_PIECES: &[&str] = &[
    "a", "(", ")", "(?:", "(?i)", "(?-u:", "|", "*", "+", "?", "{2,3}", "{", "}", "[", "]", "^", "$", "\\b", "\\d",
    "\\w", "\\S", "\\x{FF}", "\\1", "(?=", "(?P<n>", "\\p{L}", ".", "-", ",", "\\", "é", "\\z",
];

fn pieces(vocab: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vocab), 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn ebnf_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_ebnf(&String::from_utf8_lossy(&bytes), "root");
    }

    #[test]
    fn ebnf_random_fragments(text in pieces(EBNF_PIECES)) {
        let _ = parse_ebnf(&text, "root");
    }

    #[test]
    fn regex_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = regex_grammar(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn regex_random_fragments(text in pieces(REGEX_PIECES)) {
        let _ = regex_grammar(&text);
    }
}

/// The front-ends walk nesting with explicit stacks (frames are large in
/// debug builds), so the deepest accepted inputs fit in a small thread stack.
#[test]
fn deepest_accepted_inputs_fit_in_a_small_stack() {
    let run = |f: fn()| {
        std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap();
    };
    run(|| {
        let n = formcast_grammar::MAX_NESTING_DEPTH - 2;
        let text = format!("root ::= {}\"a\"{}", "\"x\" (".repeat(n), ")".repeat(n));
        parse_ebnf(&text, "root").unwrap();
        let parens = format!("root ::= {}\"a\"{}", "(".repeat(1000), ")*".repeat(1000));
        let _ = parse_ebnf(&parens, "root");
        let stars = format!("root ::= \"a\"{}", "*".repeat(5000));
        let _ = parse_ebnf(&stars, "root");
    });
    run(|| {
        let alts = format!("{}a{}", "(b|".repeat(499), ")".repeat(499));
        regex_grammar(&alts).unwrap();
        let reps = format!("{}a{}", "(?:b".repeat(5000), ")*".repeat(5000));
        let _ = regex_grammar(&reps);
    });
}
