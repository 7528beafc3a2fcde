//! Lark grammars compiled through the engine over a byte vocabulary plus a
//! few special tokens; what they accept and reject, read as llguidance's
//! lexer cuts lexemes (the default). The expectations were checked against
//! llguidance (1.7.6, and 1.9.1 for the lexer's cuts); see the README's
//! Lark section for where the two differ.

use std::sync::Arc;

use formcast_engine::{Budget, CompileOptions, CompiledGrammar, Matcher, VocabIndex};
use formcast_lark::{parse_lark, ErrorKind, LarkError, LarkOptions, Lexer, Named, Tokens};
use formcast_tokenizer::{Vocab, VocabKind};

const SPECIALS: &[&str] = &["<|eos|>", "<|python_tag|>", "<|eom_id|>", "<think>", "</think>"];

fn vocab() -> Vocab {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    tokens.extend(SPECIALS.iter().map(|s| s.as_bytes().to_vec()));
    let special: Vec<u32> = (256..256 + SPECIALS.len() as u32).collect();
    Vocab { logits_size: tokens.len(), tokens, special, stop: vec![256], kind: VocabKind::Raw }
}

fn tok(s: &str) -> u32 {
    256 + SPECIALS.iter().position(|t| *t == s).expect("special") as u32
}

fn resolve(s: &str) -> Option<u32> {
    SPECIALS.iter().position(|t| *t == s).map(|i| 256 + i as u32)
}

fn opts() -> LarkOptions<'static> {
    LarkOptions { tokens: Some(Tokens { resolve: &resolve, vocab_size: 256 + SPECIALS.len() as u32 }), ..Default::default() }
}

fn context_free() -> LarkOptions<'static> {
    LarkOptions { lexer: Lexer::ContextFree, ..opts() }
}

fn compile_with(text: &str, o: &LarkOptions<'_>) -> Result<Arc<CompiledGrammar>, LarkError> {
    let g = parse_lark(text, o)?;
    let index = Arc::new(VocabIndex::new(&vocab()).unwrap());
    Ok(Arc::new(CompiledGrammar::compile(&g.grammar, index, &CompileOptions::default(), &Budget::unlimited()).expect("engine compiles")))
}

fn compile(text: &str) -> Arc<CompiledGrammar> {
    compile_with(text, &opts()).unwrap_or_else(|e| panic!("{text}\n{e}"))
}

fn err(text: &str) -> LarkError {
    match parse_lark(text, &opts()) {
        Ok(_) => panic!("expected an error for {text}"),
        Err(e) => e,
    }
}

/// Text, with `\u{0}N;` standing for token id N.
fn accepts(cg: &Arc<CompiledGrammar>, s: &str) -> bool {
    let mut m = Matcher::new(cg.clone(), false, None).unwrap();
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('\u{0}') {
            let end = r.find(';').unwrap();
            if !m.accept_token(r[..end].parse().unwrap()).unwrap() {
                return false;
            }
            rest = &r[end + 1..];
        } else {
            let n = rest.find('\u{0}').unwrap_or(rest.len());
            if !m.accept_bytes(&rest.as_bytes()[..n]).unwrap() {
                return false;
            }
            rest = &rest[n..];
        }
    }
    m.can_end()
}

fn check(text: &str, yes: &[&str], no: &[&str]) {
    let cg = compile(text);
    for s in yes {
        assert!(accepts(&cg, s), "{text:?} should accept {s:?}");
    }
    for s in no {
        assert!(!accepts(&cg, s), "{text:?} should reject {s:?}");
    }
}

#[test]
fn rules_terminals_and_operators() {
    check("start: x\nx: \"a\" | \"b\"", &["a", "b"], &["", "ab", "c"]);
    check("start: \"a\" | ", &["a", ""], &["b"]);
    check("start: [\"a\"] \"b\"", &["b", "ab"], &["a", "aab"]);
    check("start: (\"a\" | \"b\")~3", &["aba", "bbb"], &["ab", "abab"]);
    check("start: \"a\" ~ 2..3", &["aa", "aaa"], &["a", "aaaa"]);
    check("start: \"a\"{2,3}", &["aa", "aaa"], &["a", "aaaa"]);
    check("start: \"a\"{,3}", &["", "aaa"], &["aaaa"]);
    check("start: \"a\"{2,}", &["aa", "aaaaa"], &["a"]);
    check("start: \"a\"{2}", &["aa"], &["a", "aaa"]);
    check("start: \"a\"? \"b\"* \"c\"+", &["c", "abbcc"], &["", "ab", "aac"]);
    check("start: A\nA: \"x\" [\"y\" [\"z\"]]", &["x", "xy", "xyz"], &["xz"]);
    check("start: INT\nINT: \"-\"? UINT\nUINT: DIGIT+\nDIGIT: /[0-9]/", &["-12", "7"], &["-", "1-"]);
    check("?start: my-rule\nmy-rule: _x -> alias // c\n_x: \"a\" # c2", &["a"], &["b"]);
    check("start: \"a\"\n  | \"b\"\n\n  | \"c\" // after a blank line", &["a", "b", "c"], &["d"]);
    check("start: x\nx[capture]: /a+/\ny[capture=\"v\"]: \"q\"", &["aaa"], &[""]);
    // Left and right recursion.
    check(
        "start: expr\nexpr: expr \"+\" term | term\nterm: term \"*\" factor | factor\nfactor: \"(\" expr \")\" | NUMBER\nNUMBER: /[0-9]+/",
        &["1+2*3", "(1+2)*3", "((4))"],
        &["1+", "(1", "1++2"],
    );
    check("start: list\nlist: \"x\" list | \"x\"", &["x", "xxx"], &[""]);
}

#[test]
fn strings_and_regexes() {
    check(r#"start: "\t\n\\\"\'\x41\u00e9\/""#, &["\t\n\\\"'Aé/"], &[]);
    check("start: \"ab\"i", &["ab", "aB", "AB"], &["a"]);
    check("start: \"é\"i", &["é", "É"], &["e"]);
    check("start: A\nA: \"a\"i \"b\"", &["Ab", "ab"], &["AB"]);
    check("start: \"a\"..\"c\"", &["a", "b", "c"], &["d", ""]);
    check("start: /ab/i", &["AB", "aB"], &["abc"]);
    check("start: /a.b/s", &["a\nb", "axb"], &[]);
    check("start: /a.b/", &["axb"], &["a\nb"]);
    check("start: /a b/x", &["ab"], &["a b"]);
    check("start: /a/u /b/m", &["ab"], &[]);
    check("start: /a\\/b/", &["a/b"], &["a\\/b"]);
    check("start: /^a$/", &["a"], &[]);
    check("start: /\\d+/", &["12", "\u{663}"], &["a"]);
    check("start: /[^a]/", &["\n", "b"], &["a"]);
}

#[test]
fn common_imports() {
    check("start: NUMBER\n%import common.NUMBER", &["1.5e3", "12", ".5", "1."], &["-1", "e3", ""]);
    check("start: SIGNED_NUMBER\n%import common.SIGNED_NUMBER", &["-1.5", "+2"], &["--1"]);
    check("start: ESCAPED_STRING\n%import common.ESCAPED_STRING", &["\"a\\\"b\"", "\"a\nb\"", "\"\""], &["\"a\\\nb\"", "\"a\\\"", "\"\\\""]);
    check("start: CNAME\n%import common.CNAME", &["_a1", "Z"], &["1a", ""]);
    check("start: WS\n%import common.WS", &[" \n\t\r\x0C"], &["", "x"]);
    check("start: NUMBER WS\n%import common (NUMBER, WS)", &["1 "], &["1"]);
    check("start: SP\n%import common.WS -> SP", &["  "], &["x"]);
    check("start: C_COMMENT\n%import common.C_COMMENT", &["/**/", "/* a * b */", "/***/"], &["/* */ */", "/*/"]);
    check("start: NEWLINE\n%import common.NEWLINE", &["\n\r\n\n"], &["\r"]);
    // The shell comment runs to the end of the line, as llguidance's
    // greedy lexer cuts it; read as a context-free grammar it may end
    // before the SQL comment.
    let both = "start: SH_COMMENT SQL_COMMENT\n%import common.SH_COMMENT\n%import common.SQL_COMMENT";
    check(both, &[], &["# x--y"]);
    check("start: SH_COMMENT NEWLINE SQL_COMMENT\n%import common (SH_COMMENT, SQL_COMMENT, NEWLINE)", &["# x\n--y"], &[]);
    assert!(accepts(&compile_with(both, &context_free()).unwrap(), "# x--y"));
}

#[test]
fn ignore_between_lexemes_only() {
    let g = "start: \"a\" \"b\"\n%ignore \" \"";
    check(g, &["ab", "a b", "a  b"], &[" a b", "a b ", " ab"]);
    // Across rule boundaries, not inside terminals.
    check("start: ab\nab: \"a\" \"b\"\n%ignore \" \"", &["a b"], &[]);
    check("start: AB\nAB: \"a\" \"b\"\n%ignore \" \"", &["ab"], &["a b"]);
    check("start: x \"c\"\nx: \"a\" \"b\"?\n%ignore \" \"", &["a c", "a b c", "abc"], &[" a c", "a c "]);
    check("start: \"a\"+\n%ignore \" \"", &["a a  a", "aa"], &[" a"]);
    // Several %ignore statements; common terminals.
    check(
        "start: \"a\" \"b\"\n%ignore WS\n%ignore COMMENT\nCOMMENT: /#[^\\n]*/\n%import common.WS",
        &["a #c\n b", "a\n\t b"],
        &["a #c\n b "],
    );
    // The comment runs to the end of the line (llguidance rejects this
    // too); read as a context-free grammar it may end before "b".
    let comment = "start: \"a\" \"b\"\n%ignore /#[^\\n]*/\n%ignore /[ \\n]/";
    check(comment, &["a #c\nb"], &["a #c b"]);
    assert!(accepts(&compile_with(comment, &context_free()).unwrap(), "a #c b"));
    // An empty lexeme first: the skip before the next lexeme stays.
    check("start: /b*/ \"c\"\n%ignore \" \"", &[" c", "b c", "c"], &["  b c"]);
    // Special tokens are lexemes; %json is not.
    check("start: \"a\" <[1]> \"a\"\n%ignore \" \"", &["a \u{0}1; a"], &[]);
    check("start: \"a\" %json{\"type\":\"integer\"} \"b\"\n%ignore \" \"", &["a1b"], &["a 1 b", "a1 b"]);
    check("start: j \"b\" \"c\"\nj: %json{\"type\":\"integer\"}\n%ignore \" \"", &["1b c"], &["1 b c"]);
    check("start: %json{\"type\":\"integer\"} x? \"c\"\nx: \"b\"\n%ignore \" \"", &["1b c", "1c"], &["1 c", "1 b c"]);
    // Options.
    check("%llguidance {\"allow_initial_skip\": true}\nstart: \"a\" \"b\"\n%ignore \" \"", &[" a b", "ab"], &["a b "]);
    check("%llguidance {\"skip_repetition\": \"once\"}\n%ignore /[ \\t]{1,2}/\nstart: \"A\" \"!\"", &["A!", "A  !"], &["A   !", "A \t !"]);
    check("%llguidance {}\n%llguidance {\"no_forcing\": true}\nstart: \"a\"", &["a"], &[]);
    // Left recursion with a skip everywhere, and a nullable first item.
    // Skipped text may end the text where another lexeme ("+") could
    // follow, as llguidance takes it; read as a context-free grammar it
    // may not.
    let sum = "start: sum\nsum: sum \"+\" NUMBER | NUMBER\n%import common.NUMBER\n%ignore \" \"";
    check(sum, &["1 + 2+3", "4", "1+2 "], &[" 1+2", "1+"]);
    assert!(!accepts(&compile_with(sum, &context_free()).unwrap(), "1+2 "));
    check("start: pre? \"x\"\npre: \"p\"*\n%ignore \" \"", &["p p x", "x", "px"], &[" x", " p x"]);
}

#[test]
fn special_tokens() {
    let t = |s: &str| format!("\u{0}{};", tok(s));
    check("start: <|python_tag|> \"a\"", &[&format!("{}a", t("<|python_tag|>"))], &["<|python_tag|>a"]);
    check("start: <[0-5]> \"a\"", &["\u{0}3;a"], &["\u{0}6;a"]);
    check("start: <[1,3-4]>", &["\u{0}1;", "\u{0}4;"], &["\u{0}2;"]);
    check("start: <[^1]> \"a\"", &["\u{0}3;a"], &["\u{0}1;a"]);
    check("start: <[*]> \"a\"", &["\u{0}260;a", "\u{0}97;a"], &["a"]);
    check("start: <think> /(.|\\n)*/ </think> \"x\"", &[&format!("{}hm\n{}x", t("<think>"), t("</think>"))], &[]);
    // Without a tokenizer, named tokens are an error; numeric ones work.
    let e = parse_lark("start: <|eos|>", &LarkOptions::default()).unwrap_err();
    assert_eq!((e.kind, e.line, e.column), (ErrorKind::Undefined, 1, 8));
    assert!(e.message.contains("needs a tokenizer"), "{e}");
    assert!(parse_lark("start: <[5]>", &LarkOptions::default()).is_ok());
    assert!(err("start: <|nope|>").message.contains("is not a token of the vocabulary"));
    assert!(err("start: <[9999]>").message.contains("outside the vocabulary"));
    assert!(err("start: A\nA: \"a\" <[1]>").message.contains("special tokens cannot be used in terminals"));
    assert_eq!(err("start: <[^*]>").kind, ErrorKind::Syntax);
    assert_eq!(err("start: <[5-3]>").kind, ErrorKind::Syntax);
    assert_eq!(parse_lark("start: <[0-2000000]>", &LarkOptions::default()).unwrap_err().kind, ErrorKind::Limit);
}

#[test]
fn json_and_named_grammars() {
    let g = r#"start: TEXT | fun_call
TEXT: /[^{](.|\n)*/
fun_call: %json {
  "type": "object",
  "properties": {
    "name": { "const": "get_weather" },
    "parameters": {
      "type": "object",
      "properties": { "city": { "type": "string" } },
      "required": ["city"]
    }
  },
  "required": ["name", "parameters"]
}"#;
    check(
        g,
        &["There is no function I can call", r#"{"name":"get_weather", "parameters": {"city":"Seattle"}}"#],
        &[r#"{"name":"get_time"}"#, "{"],
    );
    // Properties not declared are allowed (JSON Schema's default).
    check("start: %json{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}", &["{\"a\":1,\"b\":2}"], &[]);
    check(
        "start: %json{\"type\":\"array\", \"x-guidance\": {\"whitespace_flexible\": false, \"item_separator\": \", \"}}",
        &["[1, 2]"],
        &["[1,2]"],
    );
    let e = err("start: %json{\"x-guidance\": {\"whitespace_pattern\": \" \"}}");
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(err("start: %json{\"type\": 5}").message.starts_with("%json"));
    // @name refers to named grammars (xgrammar's named_grammars).
    let mut o = opts();
    o.named = vec![
        ("num".into(), Named::Lark("start: /[0-9]+/".into())),
        ("ab".into(), Named::Grammar(formcast_grammar::parse_ebnf("root ::= \"a\" \"b\"?", "root").unwrap())),
    ];
    let cg = compile_with("start: \"<\" @num \">\" @ab @num", &o).unwrap();
    assert!(accepts(&cg, "<12>ab3") && accepts(&cg, "<1>a2"));
    assert!(!accepts(&cg, "<>a1"));
    let e = parse_lark("start: @nope", &opts()).unwrap_err();
    assert!(e.message.contains("unknown grammar @nope"), "{e}");
    o.named = vec![("a".into(), Named::Lark("start: @b".into())), ("b".into(), Named::Lark("start: \"x\" @a".into()))];
    let e = parse_lark("start: @a", &o).unwrap_err();
    assert!(e.message.contains("refers to itself"), "{e}");
}

#[test]
fn substring_regex() {
    check(
        "start: A\nA: %regex {\"substring_chunks\": [\"abc\", \"de\", \"fg\"]}",
        &["", "abc", "de", "abcde", "defg", "abcdefg"],
        &["ab", "cde", "abcfg"],
    );
    check("start: %regex {\"substring_chars\": \"ab c\"}", &["b c", "ab"], &["ac"]);
    assert_eq!(err("start: %regex {\"substring_words\": \"a b\"}").kind, ErrorKind::Unsupported);
}

#[test]
fn errors_name_the_construct_with_line_and_column() {
    let cases: &[(&str, ErrorKind, usize, usize, &str)] = &[
        ("start: X\nX.2: \"a\"", ErrorKind::Unsupported, 2, 2, "priorities"),
        ("start: \"a\"\n%declare FOO", ErrorKind::Unsupported, 2, 1, "%declare"),
        ("start: \"a\"\n%override x: \"b\"", ErrorKind::Unsupported, 2, 1, "%override"),
        ("start: X\nX[lazy]: /a+/", ErrorKind::Unsupported, 2, 3, "go on lower-case rules"),
        ("start: x\nx[lazy]: y\ny: \"a\"", ErrorKind::Invalid, 2, 10, "the lazy rule 'x' uses the rule 'y'"),
        ("start: x\nx[max_tokens=3]: /a+/", ErrorKind::Unsupported, 2, 3, "'max_tokens'"),
        ("start: x\nx[stop=\"\"]: /a+/", ErrorKind::Unsupported, 2, 3, "'stop'"),
        ("start: x\nx[suffix]: /a+/", ErrorKind::Invalid, 2, 3, "'suffix' on 'x' needs a value"),
        ("start: x\nx[temperature=0.5]: /a+/", ErrorKind::Unsupported, 2, 3, "'temperature'"),
        ("start: A\nA: /[a-z]+/ & ~/ab/", ErrorKind::Unsupported, 2, 13, "'&'"),
        ("start: /a/l", ErrorKind::Unsupported, 1, 8, "flag 'l'"),
        ("start: /a/q", ErrorKind::Syntax, 1, 8, "unknown regex flag 'q'"),
        ("%import foo.BAR\nstart: \"a\"", ErrorKind::Unsupported, 1, 9, "only the built-in `common`"),
        ("%import common.NOPE\nstart: \"a\"", ErrorKind::Undefined, 1, 16, "not a common terminal"),
        ("start: x\nx: \"a\"\nx: \"b\"", ErrorKind::Invalid, 3, 1, "defined twice"),
        ("start: A\nA: \"a\"\nA: \"b\"", ErrorKind::Invalid, 3, 1, "defined twice"),
        ("x: \"a\"", ErrorKind::Invalid, 1, 1, "no `start` rule"),
        ("start: A\nA: \"x\" A?", ErrorKind::Invalid, 2, 8, "refers to itself"),
        ("start: A\nA: b\nb: \"x\"", ErrorKind::Invalid, 2, 4, "uses the rule 'b'"),
        ("start: y", ErrorKind::Undefined, 1, 8, "undefined rule 'y'"),
        ("start: Y", ErrorKind::Undefined, 1, 8, "undefined terminal 'Y'"),
        ("start: \"a\"\n    \"b\"", ErrorKind::Syntax, 2, 5, "expected a rule or terminal definition"),
        ("start: \"abc", ErrorKind::Syntax, 1, 8, "unterminated string"),
        ("start: \"\\q\"", ErrorKind::Syntax, 1, 9, "unknown escape"),
        ("start: /ab", ErrorKind::Syntax, 1, 8, "unterminated regex"),
        ("start: /a(/", ErrorKind::Invalid, 1, 10, "regex /a(/"),
        ("start: (\"a\"", ErrorKind::Syntax, 1, 12, "expected ')'"),
        ("start: * \"a\"", ErrorKind::Syntax, 1, 8, "must follow an item"),
        ("start: \"a\"{3,2}", ErrorKind::Syntax, 1, 11, "minimum 3 is greater"),
        ("start: \"a\"~100001", ErrorKind::Limit, 1, 12, "exceeds the limit"),
        ("start: x\n%ignore x\nx: \"a\"", ErrorKind::Invalid, 2, 9, "uses the rule 'x'"),
        ("start: \"a\"\n%ignore /a*/", ErrorKind::Invalid, 2, 1, "must not match the empty string"),
        ("start: \"a\"\n%llguidance {\"nope\": 1}", ErrorKind::Unsupported, 2, 1, "\"nope\""),
        ("start: \"a\"\n%llguidance {\"allow_invalid_utf8\": true}", ErrorKind::Unsupported, 2, 1, "allow_invalid_utf8"),
        ("start: \"a\"\n%llguidance {", ErrorKind::Syntax, 2, 13, "unterminated JSON"),
        ("start: \"a\"\n%frobnicate", ErrorKind::Unsupported, 2, 1, "unknown directive '%frobnicate'"),
        ("start: x{a}\nx: \"a\"", ErrorKind::Unsupported, 1, 9, "templates"),
        ("start: %lark { x }", ErrorKind::Unsupported, 1, 8, "%lark"),
        ("start: \"b\"..\"a\"", ErrorKind::Syntax, 1, 8, "invalid range"),
        ("start: x\nx: x \"a\"", ErrorKind::Invalid, 1, 1, "empty"),
    ];
    for &(text, kind, line, column, needle) in cases {
        let e = err(text);
        assert_eq!((e.kind, e.line, e.column), (kind, line, column), "{text:?}: {e}");
        assert!(e.message.contains(needle), "{text:?}: {e}");
        // The message shows the offending line.
        let shown = e.to_string();
        assert!(shown.contains(&format!("line {line}, column {column}")), "{shown}");
        assert!(shown.contains(e.source_line.trim()), "{shown}");
    }
}

#[test]
fn hostile_sizes_are_limit_errors() {
    let deep = format!("start: {}\"a\"{}", "(".repeat(5000), ")".repeat(5000));
    assert_eq!(err(&deep).kind, ErrorKind::Limit);
    let deep_opt = format!("start: {}\"a\"{}", "[".repeat(1200), "]".repeat(1200));
    assert_eq!(err(&deep_opt).kind, ErrorKind::Limit);
    let stars = format!("start: \"a\"{}", "*".repeat(5000));
    assert_eq!(err(&stars).kind, ErrorKind::Limit);
    let chain: String = (0..3000).map(|i| format!("T{i}: T{}\n", i + 1)).collect::<String>() + "T3000: \"x\"\nstart: T0";
    assert_eq!(err(&chain).kind, ErrorKind::Limit);
    // A long chain of rules is fine (rules are referenced, not nested).
    let rules: String = (0..3000).map(|i| format!("r{i}: r{} \"a\"\n", i + 1)).collect::<String>() + "r3000: \"x\"\nstart: r0\n%ignore \" \"";
    assert!(parse_lark(&rules, &opts()).is_ok());
    // Deep nesting on a 2 MiB thread (the project's promise), in rules and
    // terminals, with a skip (the strip pass recurses too).
    for text in [
        format!("start: {}\"a\"{}\n%ignore \" \"", "\"x\" (".repeat(990), ")".repeat(990)),
        format!("start: A\nA: {}\"a\"{}", "\"x\" [".repeat(990), "]".repeat(990)),
        format!("start: {}\"a\"{}\n%ignore \" \"", "(\"x\" | ".repeat(400), ")".repeat(400)),
    ] {
        let r = std::thread::Builder::new().stack_size(2 << 20).spawn(move || parse_lark(&text, &LarkOptions::default()).map(|_| ()).map_err(|e| e.kind)).unwrap().join().unwrap();
        assert!(matches!(r, Ok(()) | Err(ErrorKind::Limit)), "{r:?}");
    }
}
