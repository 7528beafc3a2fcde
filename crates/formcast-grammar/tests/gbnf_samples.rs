//! llama.cpp's sample grammars (tests/data/gbnf, see its README) load
//! unchanged.

use std::path::PathBuf;

use formcast_grammar::{parse_ebnf, Expr, Grammar};

fn samples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/gbnf")
}

fn load(name: &str) -> Grammar {
    let path = samples_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_ebnf(&text, "root").unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_sample_grammar_loads() {
    let mut names: Vec<String> = std::fs::read_dir(samples_dir())
        .expect("tests/data/gbnf exists")
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".gbnf"))
        .collect();
    names.sort();
    for required in [
        "arithmetic",
        "c",
        "chess",
        "english",
        "japanese",
        "json",
        "json_arr",
        "list",
    ] {
        assert!(
            names.contains(&format!("{required}.gbnf")),
            "missing {required}.gbnf in {names:?}"
        );
    }
    for name in &names {
        let g = load(name);
        assert_eq!(g.root_rule().name, "root", "{name}");
    }
}

#[test]
fn samples_have_the_expected_shape() {
    let rule_names = |g: &Grammar| {
        let mut names: Vec<&str> = g.rules.iter().map(|r| r.name.as_str()).collect();
        names.sort();
        names.join(" ")
    };
    assert_eq!(
        rule_names(&load("json.gbnf")),
        "array number object root string value ws"
    );
    assert_eq!(rule_names(&load("arithmetic.gbnf")), "expr ident num root term ws");
    assert_eq!(load("c.gbnf").rules.len(), 21);

    // japanese.gbnf: a class of raw UTF-8 characters.
    let jp = load("japanese.gbnf");
    let hiragana = &jp.rules[jp.rule_id("hiragana").unwrap() as usize].body;
    assert_eq!(*hiragana, Expr::Chars(vec![(0x3041, 0x309F)]));

    // list.gbnf: \x0b, \x85 and \u2028 are code points, not bytes.
    let list = load("list.gbnf");
    let item = &list.rules[list.rule_id("item").unwrap() as usize].body;
    let Expr::Seq(parts) = item else { panic!("{item:?}") };
    let Expr::Repeat {
        expr,
        min: 1,
        max: None,
    } = &parts[1]
    else {
        panic!("{:?}", parts[1])
    };
    let Expr::Chars(ranges) = expr.as_ref() else {
        panic!("{expr:?}")
    };
    for excluded in [0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029] {
        assert!(
            !ranges.iter().any(|&(lo, hi)| lo <= excluded && excluded <= hi),
            "U+{excluded:04X}"
        );
    }
    assert!(ranges.iter().any(|&(lo, hi)| lo <= 0x84 && 0x84 <= hi));

    // json.gbnf: `ws ::= | " " | ...` starts with an empty alternative.
    let json = load("json.gbnf");
    let ws = &json.rules[json.rule_id("ws").unwrap() as usize].body;
    assert!(matches!(ws, Expr::Alt(alts) if alts[0] == Expr::Empty && alts.len() == 3));
}
