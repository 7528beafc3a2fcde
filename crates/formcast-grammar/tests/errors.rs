//! Error messages and positions, as users see them (`Display`).

use formcast_grammar::{parse_ebnf, regex_grammar, regex_to_expr, GrammarError};

fn ebnf_err(text: &str) -> String {
    parse_ebnf(text, "root").expect_err(text).to_string()
}

fn regex_err(pattern: &str) -> String {
    regex_to_expr(pattern).expect_err(pattern).to_string()
}

#[test]
fn ebnf_syntax_errors() {
    let cases = [
        ("root \"a\"", "EBNF syntax error at line 1, column 6: expected '::=' after rule name 'root'"),
        ("root ::= \"a\"\nitem ::= \"unclosed", "EBNF syntax error at line 2, column 10: unterminated string literal"),
        ("root ::= [a-z", "EBNF syntax error at line 1, column 10: unterminated character class"),
        ("root ::= (\"a\" | \"b\"\nnext ::= \"c\"", "EBNF syntax error at line 2, column 1: expected ')' to close the '(' at line 1, column 10"),
        ("root ::= \"a\")", "EBNF syntax error at line 1, column 13: unmatched ')'"),
        ("root ::= \"a\" | +", "EBNF syntax error at line 1, column 16: '+' must follow an item to repeat"),
        ("root ::= \"a\"{5,2}", "EBNF syntax error at line 1, column 13: repetition minimum 5 is greater than maximum 2"),
        ("root ::= \"a\"{2", "EBNF syntax error at line 1, column 15: expected ',' or '}' in repetition bounds"),
        ("root ::= \"\\z\"", "EBNF syntax error at line 1, column 11: unknown escape sequence '\\z'"),
        ("root ::= [\\u12]", "EBNF syntax error at line 1, column 11: expected 4 hex digits after '\\u'"),
        ("root ::= [b-a]", "EBNF syntax error at line 1, column 11: invalid range 'b-a' in character class: the start is greater than the end"),
        ("  \"a\"", "EBNF syntax error at line 1, column 3: expected a rule name (as in `name ::= ...`), found '\"'"),
        ("root ::= \"a\" ; x", "EBNF syntax error at line 1, column 14: expected a string literal, a character class, '.', '(', a rule name or a token reference, found ';'"),
        ("root ::= <eos>", "EBNF syntax error at line 1, column 10: token reference '<eos>' needs a tokenizer; use the numeric form <[id]> here"),
        ("root ::= 'a'", "EBNF syntax error at line 1, column 10: expected a string literal, a character class, '.', '(', a rule name or a token reference, found a single quote (string literals use double quotes)"),
    ];
    for (text, expected) in cases {
        assert_eq!(ebnf_err(text), expected, "{text:?}");
    }
}

#[test]
fn ebnf_rule_errors() {
    assert_eq!(
        ebnf_err("root ::= expr\nexpr ::= term (\"+\" term)*\nterm ::= numero\nnumber ::= [0-9]+"),
        "undefined rule 'numero' referenced at line 3, column 10"
    );
    assert_eq!(
        ebnf_err("root ::= \"a\"\nroot ::= \"b\""),
        "rule 'root' defined twice (second definition at line 2, column 1)"
    );
    assert_eq!(ebnf_err("rot ::= \"a\""), "root rule 'root' is not defined");
    assert_eq!(
        parse_ebnf("root ::= \"a\"", "start").unwrap_err(),
        GrammarError::MissingRoot("start".into())
    );
    assert_eq!(
        ebnf_err("root ::= a  a ::= \"x\" a"),
        "the grammar's language is empty: rule 'a' can never finish (every alternative needs 'a' again); rule 'root' cannot match without it"
    );
    assert_eq!(
        ebnf_err("root ::= \"x\" root"),
        "the grammar's language is empty: rule 'root' can never finish (every alternative needs 'root' again)"
    );
    assert_eq!(
        ebnf_err("root ::= \"<\" x\nx ::= [^\\x00-\\U0010FFFF]"),
        "the grammar's language is empty: rule 'x' can never match anything (it requires an empty character class or an empty alternation); rule 'root' cannot match without it"
    );
}

#[test]
fn ebnf_limit_errors() {
    assert_eq!(
        ebnf_err("root ::= [a-z]{1,1000000}"),
        "limit exceeded: repetition bound 1000000 exceeds the limit of 100000 at line 1, column 18"
    );
    let deep = format!("root ::= {}\"a\"{}", "(".repeat(1001), ")".repeat(1001));
    assert_eq!(
        ebnf_err(&deep),
        "limit exceeded: parentheses nested deeper than 1000 levels at line 1, column 1010"
    );
    let ok = format!("root ::= {}\"a\"{}", "(".repeat(1000), ")".repeat(1000));
    assert!(parse_ebnf(&ok, "root").is_ok());
}

#[test]
fn left_recursion_and_forward_references_are_fine() {
    let g = parse_ebnf("root ::= expr\nexpr ::= expr \"+\" num | num\nnum ::= [0-9]+", "root").unwrap();
    assert_eq!(g.rules.len(), 3);
}

#[test]
fn regex_errors() {
    let cases = [
        (
            r"(\w+) \1",
            "regex error at position 6: backreferences are not supported",
        ),
        (r"foo(?=bar)", "regex error at position 3: lookaround is not supported"),
        (r"(?<!x)y", "regex error at position 0: lookaround is not supported"),
        (
            r"a^",
            "regex error at position 1: the anchor '^' is only supported at the start of the pattern",
        ),
        (
            r"a\zb",
            r"regex error at position 1: the anchor '\z' is only supported at the end of the pattern",
        ),
        (
            r"\bword\b",
            r"regex error at position 0: word boundaries ('\b') are not supported",
        ),
        (r"[a-", "regex error at position 0: unclosed character class"),
        (
            r"x{3,1}",
            "regex error at position 1: invalid repetition count range, the start must be <= the end",
        ),
    ];
    for (pattern, expected) in cases {
        assert_eq!(regex_err(pattern), expected, "{pattern:?}");
    }
    assert_eq!(
        regex_err("a{0,123456}"),
        "limit exceeded: repetition bound 123456 at position 1 exceeds the limit of 100000"
    );
    assert!(matches!(
        regex_grammar(r"[^\x00-\x{10FFFF}]"),
        Err(GrammarError::EmptyLanguage(m)) if m.starts_with("rule 'root' can never match anything")
    ));
}
