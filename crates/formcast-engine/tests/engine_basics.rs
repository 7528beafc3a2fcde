//! Engine behaviour on hand-built grammars over small vocabularies.

use std::sync::Arc;

use formcast_engine::{Budget, CompileOptions, CompiledGrammar, Matcher, VocabIndex};
use formcast_grammar::{Expr, Grammar, Rule};
use formcast_tokenizer::{Vocab, VocabKind};

fn vocab(tokens: &[&str], special: &[u32], stop: &[u32]) -> Arc<VocabIndex> {
    let v = Vocab {
        tokens: tokens.iter().map(|t| t.as_bytes().to_vec()).collect(),
        special: special.to_vec(),
        stop: stop.to_vec(),
        logits_size: tokens.len() + 3,
        kind: VocabKind::Raw,
    };
    Arc::new(VocabIndex::new(&v).unwrap())
}

fn compile(g: &Grammar, v: &Arc<VocabIndex>) -> Arc<CompiledGrammar> {
    Arc::new(CompiledGrammar::compile(g, v.clone(), &CompileOptions::default(), &Budget::unlimited()).unwrap())
}

fn rules(rs: Vec<(&str, Expr)>) -> Grammar {
    Grammar { rules: rs.into_iter().map(|(n, b)| Rule::new(n, b)).collect(), root: 0 }
}

fn allowed(m: &mut Matcher) -> Vec<u32> {
    m.next_token_mask().unwrap().iter_ones().map(|i| i as u32).collect()
}

const TOKS: &[&str] = &["<eos>", "a", "b", "ab", "(", ")", "()", "((", "x", "ba", "aa"];

/// `prepare` leaves the start's mask in the grammar's cache: the first
/// mask of every matcher is then a lookup (the grammar holds no more
/// afterwards) and the same as a grammar that computes it on demand.
#[test]
fn prepared_grammars_hold_their_first_mask() {
    let v = vocab(TOKS, &[0], &[0]);
    let g = rules(vec![("root", Expr::Seq(vec![Expr::literal("("), Expr::star(Expr::literal("ab")), Expr::literal(")")]))]);
    let (lazy, prepared) = (compile(&g, &v), compile(&g, &v));
    prepared.prepare();
    let held = prepared.memory_bytes();
    assert!(held > lazy.memory_bytes());
    let first = allowed(&mut Matcher::new(prepared.clone(), false, None).unwrap());
    assert_eq!(prepared.memory_bytes(), held);
    assert_eq!(first, allowed(&mut Matcher::new(lazy, false, None).unwrap()));
    assert_eq!(first, vec![4, 6]);
}

/// `prepare` also leaves in the cache the masks inside a text dispatch's
/// triggers, from the start: after any text, a matcher inside a trigger
/// finds its mask there (the grammar holds no more afterwards), the same
/// as a grammar that computes it on demand; a state outside the triggers
/// is computed and kept as before.
#[test]
fn prepared_grammars_hold_the_masks_inside_their_triggers() {
    let toks = &["<eos>", "a", "b", "<", "<c", "c", "al", "l", "call", "x", "<ca", "{", "}", "ll{", "{}", "ab<"];
    let v = vocab(toks, &[0], &[0]);
    let body = Expr::Seq(vec![Expr::literal("{"), Expr::star(Expr::literal("a")), Expr::literal("}")]);
    let g = rules(vec![(
        "root",
        Expr::TextDispatch { cases: vec![(b"<call".to_vec(), body)], excludes: vec![], repeat: true },
    )]);
    let (lazy, prepared) = (compile(&g, &v), compile(&g, &v));
    prepared.prepare();
    let held = prepared.memory_bytes();
    let mut texts_in: Vec<&str> = Vec::new();
    for text in ["ab<", "b<c", "a<ca", "<cal", "ab<call", "x<call{a"] {
        let (mut m, mut l) = (Matcher::new(prepared.clone(), false, None).unwrap(), Matcher::new(lazy.clone(), false, None).unwrap());
        assert!(m.accept_bytes(text.as_bytes()).unwrap() && l.accept_bytes(text.as_bytes()).unwrap(), "{text}");
        assert_eq!(allowed(&mut m), allowed(&mut l), "{text}");
        if prepared.memory_bytes() == held {
            texts_in.push(text);
        }
    }
    // The last text is inside the tag's body, past the trigger.
    assert_eq!(texts_in, ["ab<", "b<c", "a<ca", "<cal", "ab<call"]);
    // After "<" the mask allows the trigger's next bytes and free text alike.
    let mut m = Matcher::new(prepared.clone(), false, None).unwrap();
    assert!(m.accept_bytes(b"ab<").unwrap());
    assert!(allowed(&mut m).contains(&8) && allowed(&mut m).contains(&1));
}

/// The built-in JSON grammar's prepared texts: a compile holds the masks
/// at an object's first key, its first value and a value after a comma,
/// whatever the key and the value before; each equals the mask computed on
/// demand. A text the start does not take is passed over.
#[test]
fn prepared_texts_hold_their_masks_for_any_key_and_value() {
    let toks = &["<eos>", "{", "{\"", "\"", "a", "b", "key", "\":", "1", "12", ",", ",\"", "}", "[", "]", "true", " ", "\":{\""];
    let v = vocab(toks, &[0], &[0]);
    let g = formcast_grammar::json::builtin_json_grammar();
    let lazy = compile(&g, &v);
    let mut opts = CompileOptions::default();
    opts.prepare_texts = formcast_grammar::json::BUILTIN_JSON_PREPARED.iter().map(|t| t.as_bytes().to_vec()).collect();
    opts.prepare_texts.push(b"]".to_vec());
    let prepared = Arc::new(CompiledGrammar::compile(&g, v.clone(), &opts, &Budget::unlimited()).unwrap());
    prepared.prepare();
    let held = prepared.memory_bytes();
    for text in ["{\"", "{\"key\":", "{\"b\":true,\"a\":", "{\"a\":[1],\"key\":", "{\"a\":12,\"b\":1,\"b\":"] {
        let (mut m, mut l) = (Matcher::new(prepared.clone(), false, None).unwrap(), Matcher::new(lazy.clone(), false, None).unwrap());
        assert!(m.accept_bytes(text.as_bytes()).unwrap() && l.accept_bytes(text.as_bytes()).unwrap(), "{text}");
        assert_eq!(allowed(&mut m), allowed(&mut l), "{text}");
        assert_eq!(prepared.memory_bytes(), held, "{text}: not prepared");
    }
    // Inside a nested object the parser's state differs: not prepared.
    let mut m = Matcher::new(prepared.clone(), false, None).unwrap();
    assert!(m.accept_bytes(b"{\"a\":{\"b\":").unwrap());
    allowed(&mut m);
    assert!(prepared.memory_bytes() > held);
}

/// Names after their first letters move on few of a trie node's many
/// children: a walk that picks those from the index's child table (see
/// `partition::live_children`) must take every token that a matcher
/// takes, and no other. Checked token by token after each prefix.
#[test]
fn masks_among_many_siblings_equal_token_acceptance() {
    let names = ["Berlin", "Biesdorf", "Blankenburg", "Britz", "Buch", "Buckow", "Adlershof", "Altglienicke"];
    let mut toks: Vec<String> = vec!["<eos>".into(), "\"".into(), "\"B".into(), "\",".into()];
    for first in ["", "B", "Be", "Bu", "Bl", "A", "Al"] {
        for c in ('a'..='z').chain('A'..='Z').chain(['"', ',', ' ']) {
            toks.push(format!("{first}{c}"));
            toks.push(format!("{first}{c}\""));
        }
    }
    toks.extend(["erlin", "rlin\"", "uckow\",", "ckow", "Buch\"", "ieS", "iesdorf", "Brit", "itz", "Adler", "shof"].map(String::from));
    toks.sort();
    toks.dedup();
    let refs: Vec<&str> = toks.iter().map(|t| t.as_str()).collect();
    let eos = refs.iter().position(|t| *t == "<eos>").unwrap() as u32;
    let v = vocab(&refs, &[eos], &[eos]);
    let g = rules(vec![(
        "root",
        Expr::Seq(vec![Expr::literal("\""), Expr::Alt(names.iter().map(|n| Expr::literal(n)).collect()), Expr::literal("\",")]),
    )]);
    let cg = compile(&g, &v);
    for prefix in ["", "\"", "\"B", "\"Bu", "\"Buc", "\"Bl", "\"A", "\"Al", "\"Berli"] {
        let mut m = Matcher::new(cg.clone(), false, None).unwrap();
        assert!(m.accept_bytes(prefix.as_bytes()).unwrap(), "{prefix}");
        let mask = allowed(&mut m);
        for t in 0..refs.len() as u32 {
            if t == eos {
                continue;
            }
            let mut n = Matcher::new(cg.clone(), false, None).unwrap();
            n.accept_bytes(prefix.as_bytes()).unwrap();
            assert_eq!(mask.contains(&t), n.accept_token(t).unwrap(), "after {prefix:?}, token {:?}", refs[t as usize]);
        }
    }
}

#[test]
fn literal_alternatives_and_stop() {
    let v = vocab(TOKS, &[0], &[0]);
    let g = rules(vec![("root", Expr::Alt(vec![Expr::literal("ab"), Expr::literal("ba")]))]);
    let cg = compile(&g, &v);
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert_eq!(allowed(&mut m), vec![1, 2, 3, 9]);
    assert!(m.accept_token(1).unwrap());
    assert_eq!(allowed(&mut m), vec![2]);
    assert!(!m.accept_token(1).unwrap());
    assert!(m.accept_token(2).unwrap());
    assert_eq!(allowed(&mut m), vec![0]);
    assert!(m.can_end());
    assert!(!m.is_terminated());
    assert!(m.accept_token(0).unwrap());
    assert!(m.is_terminated());
}

/// root ::= ("(" root ")")*, over TOKS.
fn balanced_parentheses() -> Arc<CompiledGrammar> {
    let v = vocab(TOKS, &[0], &[0]);
    let g = rules(vec![(
        "root",
        Expr::star(Expr::Seq(vec![Expr::literal("("), Expr::Rule(0), Expr::literal(")")])),
    )]);
    compile(&g, &v)
}

#[test]
fn balanced_parentheses_right_recursion() {
    let cg = balanced_parentheses();
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert_eq!(allowed(&mut m), vec![0, 4, 6, 7]);
    assert!(m.accept_token(7).unwrap()); // ((
    assert_eq!(allowed(&mut m), vec![4, 5, 6, 7]);
    assert!(m.accept_token(5).unwrap());
    assert!(!m.can_end());
    assert!(m.accept_token(5).unwrap());
    assert!(m.can_end());
    assert!(!m.accept_token(5).unwrap());
}

#[test]
fn left_recursion() {
    // root ::= root "a" | "b"   (b a*)
    let v = vocab(TOKS, &[0], &[0]);
    let g = rules(vec![(
        "root",
        Expr::Alt(vec![Expr::Seq(vec![Expr::Rule(0), Expr::literal("a")]), Expr::literal("b")]),
    )]);
    let cg = compile(&g, &v);
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert_eq!(allowed(&mut m), vec![2, 9]);
    assert!(m.accept_token(9).unwrap()); // "ba"
    assert_eq!(allowed(&mut m), vec![0, 1, 10]);
    assert!(m.accept_token(10).unwrap());
    assert!(m.can_end());
}

#[test]
fn rollback_restores_masks() {
    let v = vocab(TOKS, &[0], &[0]);
    let g = rules(vec![("root", Expr::plus(Expr::Alt(vec![Expr::literal("ab"), Expr::literal("x")])))]);
    let cg = compile(&g, &v);
    let mut m = Matcher::new(cg, false, None).unwrap();
    let start = allowed(&mut m);
    assert!(m.accept_token(1).unwrap());
    let after_a = allowed(&mut m);
    assert!(m.accept_token(2).unwrap());
    assert!(m.accept_token(8).unwrap());
    m.rollback(2).unwrap();
    assert_eq!(allowed(&mut m), after_a);
    m.rollback(1).unwrap();
    assert_eq!(allowed(&mut m), start);
    assert!(m.rollback(1).is_err());
}

#[test]
fn token_level_elements() {
    // root ::= <tok 8> any-token-but-{0,1} "a"
    let v = vocab(TOKS, &[0, 8], &[0]);
    let g = rules(vec![(
        "root",
        Expr::Seq(vec![Expr::Token(8), Expr::AnyTokenExcept(vec![0, 1]), Expr::literal("a")]),
    )]);
    let cg = compile(&g, &v);
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert_eq!(allowed(&mut m), vec![8]);
    assert!(!m.accept_bytes(b"x").unwrap());
    assert!(m.accept_token(8).unwrap());
    assert_eq!(allowed(&mut m), (2..TOKS.len() as u32).collect::<Vec<_>>());
    assert!(m.accept_token(6).unwrap());
    assert_eq!(allowed(&mut m), vec![1]);
}

#[test]
fn token_sets_of_separate_rules_keep_their_own_tokens() {
    // root ::= first second ; first ::= <tok 8> any-token-but-{0,1} ;
    // second ::= any-token-but-{0,2} any-token-but-{0,1}. The rules'
    // automata are built apart and share one table of token sets: `second`'s
    // {0,2} must not be read as `first`'s {0,1}, and its {1,0} is that set.
    let v = vocab(TOKS, &[0, 8], &[0]);
    let g = rules(vec![
        ("root", Expr::Seq(vec![Expr::Rule(1), Expr::Rule(2)])),
        ("first", Expr::Seq(vec![Expr::Token(8), Expr::AnyTokenExcept(vec![0, 1])])),
        ("second", Expr::Seq(vec![Expr::AnyTokenExcept(vec![0, 2]), Expr::AnyTokenExcept(vec![1, 0])])),
    ]);
    let cg = compile(&g, &v);
    assert_eq!(cg.automaton.except_sets.len(), 2, "{{0,1}} is one set grammar-wide");
    let all_but = |x: &[u32]| (0..TOKS.len() as u32).filter(|t| !x.contains(t)).collect::<Vec<_>>();
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert!(m.accept_token(8).unwrap());
    assert_eq!(allowed(&mut m), all_but(&[0, 1]));
    assert!(m.accept_token(6).unwrap());
    assert_eq!(allowed(&mut m), all_but(&[0, 2]));
    assert!(m.accept_token(1).unwrap());
    assert_eq!(allowed(&mut m), all_but(&[0, 1]));
}

#[test]
fn jump_forward_is_forced_text() {
    let v = vocab(TOKS, &[0], &[0]);
    let g = rules(vec![(
        "root",
        Expr::Seq(vec![Expr::literal("{\"name\": "), Expr::Alt(vec![Expr::literal("\"x\""), Expr::literal("\"y\"")])]),
    )]);
    let cg = compile(&g, &v);
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert_eq!(m.find_jump_forward_bytes().unwrap(), b"{\"name\": \"");
    assert!(m.accept_bytes(b"{\"name\": \"y").unwrap());
    assert_eq!(m.find_jump_forward_bytes().unwrap(), b"\"");
}

#[test]
fn nullable_rules_and_empty_root() {
    // root ::= e "a" e ;  e ::= "x"?
    let v = vocab(TOKS, &[0], &[0]);
    let g = rules(vec![
        ("root", Expr::Seq(vec![Expr::Rule(1), Expr::literal("a"), Expr::Rule(1)])),
        ("e", Expr::optional(Expr::literal("x"))),
    ]);
    let cg = compile(&g, &v);
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert_eq!(allowed(&mut m), vec![1, 8]);
    assert!(m.accept_token(1).unwrap());
    assert_eq!(allowed(&mut m), vec![0, 8]);
}

#[test]
fn text_excluding_stops_before_end_tags() {
    // root ::= "<t>" TextExcluding(["</t>", "</x>"]) "</t>"
    let v = vocab(&["<eos>", "a", "</", "t>", "</t>", "x", "é"], &[0], &[0]);
    let g = rules(vec![(
        "root",
        Expr::Seq(vec![
            Expr::literal("<t>"),
            Expr::TextExcluding(vec![b"</t>".to_vec(), b"</x>".to_vec()]),
            Expr::literal("</t>"),
        ]),
    )]);
    let cg = compile(&g, &v);
    let mut m = Matcher::new(cg.clone(), false, None).unwrap();
    assert!(m.accept_bytes(b"<t>a</ta</").unwrap());
    assert!(!m.accept_bytes(b"x>").unwrap()); // would contain "</x>"
    assert!(m.accept_bytes("é</t".as_bytes()).unwrap());
    assert!(!m.can_end());
    assert!(m.accept_bytes(b">").unwrap());
    assert!(m.can_end());
    assert!(!m.accept_bytes(b"a").unwrap()); // the first "</t>" ends the text
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert!(m.accept_bytes(b"<t>").unwrap());
    assert!(!m.accept_bytes(b"\xff").unwrap()); // invalid UTF-8
    assert!(!m.accept_bytes(b"\xc3</t>").unwrap()); // cut character
}

#[test]
fn text_dispatch_commits_on_triggers_and_stops_on_excludes() {
    // root ::= TextDispatch(["<f" => "X;"], excludes ["!!"], repeat)
    let v = vocab(&["<eos>", "a", "<", "f", "X", ";", "!"], &[0], &[0]);
    let g = rules(vec![(
        "root",
        Expr::TextDispatch { cases: vec![(b"<f".to_vec(), Expr::literal("X;"))], excludes: vec![b"!!".to_vec()], repeat: true },
    )]);
    let cg = compile(&g, &v);
    let ok = |s: &str| {
        let mut m = Matcher::new(cg.clone(), false, None).unwrap();
        m.accept_bytes(s.as_bytes()).unwrap() && m.can_end()
    };
    assert!(ok("") && ok("a<") && ok("a<fX;a<fX;!a"));
    assert!(!ok("a<f") && !ok("<fY;") && !ok("a!!"));
    // Without repeat the expression ends after the first body.
    let g = rules(vec![(
        "root",
        Expr::TextDispatch { cases: vec![(b"<f".to_vec(), Expr::literal("X;"))], excludes: vec![], repeat: false },
    )]);
    let cg = compile(&g, &v);
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert!(m.accept_bytes(b"a<fX;").unwrap() && m.can_end());
    assert!(!m.accept_bytes(b"a").unwrap());
}

#[test]
fn bounded_text_counts_code_points() {
    let v = vocab(&["<eos>", "a", "é"], &[0], &[0]);
    let g = rules(vec![("root", Expr::BoundedText { excludes: vec![b"b".to_vec()], max_chars: Some(2), max_tokens: None })]);
    let cg = compile(&g, &v);
    let ok = |s: &str| {
        let mut m = Matcher::new(cg.clone(), false, None).unwrap();
        m.accept_bytes(s.as_bytes()).unwrap() && m.can_end()
    };
    assert!(ok("") && ok("éé") && ok("aé"));
    assert!(!ok("aaa") && !ok("b"));
}

#[test]
fn bounded_text_token_budget_through_the_mask() {
    // root ::= "<t>" BoundedText(excludes ["</t>"], max_tokens 2) "</t>"
    let toks = ["<eos>", "<t>", "</t>", "ab", "c", "a</t>", "<t>x", "\u{e9}", "?", "?", "</", "t>"];
    let mut v = Vocab {
        tokens: toks.iter().map(|t| t.as_bytes().to_vec()).collect(),
        special: vec![0],
        stop: vec![0],
        logits_size: toks.len(),
        kind: VocabKind::Raw,
    };
    // Split UTF-8 halves of "é" (not valid strings on their own).
    v.tokens[8] = vec![0xC3];
    v.tokens[9] = vec![0xA9];
    let v = Arc::new(VocabIndex::new(&v).unwrap());
    let g = rules(vec![(
        "root",
        Expr::Seq(vec![
            Expr::literal("<t>"),
            Expr::BoundedText { excludes: vec![b"</t>".to_vec()], max_chars: None, max_tokens: Some(2) },
            Expr::literal("</t>"),
        ]),
    )]);
    let cg = compile(&g, &v);
    let mut m = Matcher::new(cg.clone(), false, Some(16)).unwrap();
    assert!(m.accept_token(1).unwrap()); // "<t>": no text yet, nothing paid
    assert!(allowed(&mut m).contains(&3));
    assert!(m.accept_token(3).unwrap()); // "ab": 1
    assert!(m.accept_token(4).unwrap()); // "c": 2, spent
    // Only leaving the text is allowed now: "</t>" whole or started.
    assert_eq!(allowed(&mut m), vec![2, 10]);
    assert!(!m.accept_token(4).unwrap());
    assert!(!m.accept_token(5).unwrap());
    // Rollback gives the budget back.
    m.rollback(1).unwrap();
    assert!(allowed(&mut m).contains(&4));
    assert!(m.accept_token(5).unwrap()); // "a</t>": the last paid token also leaves
    assert!(m.can_end());

    // The opening token carries text: it pays.
    let mut m = Matcher::new(cg.clone(), false, None).unwrap();
    assert!(m.accept_token(6).unwrap()); // "<t>x": 1
    assert!(m.accept_token(3).unwrap()); // 2
    assert_eq!(allowed(&mut m), vec![2, 10]);

    // A character split across tokens: its second half is free, so a spent
    // budget can still finish it (and then must leave).
    let mut m = Matcher::new(cg.clone(), false, None).unwrap();
    assert!(m.accept_token(1).unwrap());
    assert!(m.accept_token(3).unwrap()); // 1
    assert!(m.accept_token(8).unwrap()); // starts "é": 2
    assert_eq!(allowed(&mut m), vec![9]);
    assert!(m.accept_token(9).unwrap());
    assert_eq!(allowed(&mut m), vec![2, 10]);

    // A string counts as one token.
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert!(m.accept_bytes(b"<t>abcabc").unwrap()); // 1
    assert!(m.accept_token(4).unwrap()); // 2
    assert!(!m.accept_bytes(b"c").unwrap());
    assert!(m.accept_bytes(b"</t>").unwrap() && m.can_end());
}

#[test]
fn bounded_text_jump_forward_after_the_budget() {
    let v = vocab(&["<eos>", "a", "</t>"], &[0], &[0]);
    let g = rules(vec![(
        "root",
        Expr::Seq(vec![
            Expr::BoundedText { excludes: vec![b"</t>".to_vec()], max_chars: None, max_tokens: Some(1) },
            Expr::literal("</t>"),
        ]),
    )]);
    let cg = compile(&g, &v);
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert_eq!(m.find_jump_forward_bytes().unwrap(), b"");
    assert!(m.accept_token(1).unwrap());
    assert_eq!(m.find_jump_forward_bytes().unwrap(), b"</t>");
}

#[test]
fn avoiding_removes_texts_with_excludes_through_rules() {
    // root ::= "[" Avoiding(item ("," item)*, ["bad"]) "]"; item ::= [a-z]+ | "x" item
    let item = Expr::Alt(vec![
        Expr::plus(Expr::Chars(vec![(b'a' as u32, b'z' as u32)])),
        Expr::Seq(vec![Expr::literal("x"), Expr::Rule(1)]),
    ]);
    let list = Expr::Seq(vec![Expr::Rule(1), Expr::star(Expr::Seq(vec![Expr::literal(","), Expr::Rule(1)]))]);
    let g = rules(vec![
        ("root", Expr::Seq(vec![Expr::literal("["), Expr::Avoiding { expr: Box::new(list), excludes: vec![b"bad".to_vec(), b"a,b".to_vec()], lazy: false }, Expr::literal("]")])),
        ("item", item),
    ]);
    let v = vocab(&["<eos>", "b", "ad", "a", ",", "[", "]"], &[0], &[0]);
    let cg = compile(&g, &v);
    let ok = |s: &str| {
        let mut m = Matcher::new(cg.clone(), false, None).unwrap();
        m.accept_bytes(s.as_bytes()).unwrap() && m.can_end()
    };
    assert!(ok("[ba,d]") && ok("[xbx]") && ok("[ab,ba]"));
    assert!(!ok("[bad]") && !ok("[xbad]") && !ok("[ok,bad]") && !ok("[a,b]"));
    // Across tokens: "b" then "ad" is refused at the second token.
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert!(m.accept_token(5).unwrap() && m.accept_token(1).unwrap());
    assert!(!allowed(&mut m).contains(&2));
    assert!(!m.accept_token(2).unwrap());
}

#[test]
fn avoiding_refuses_non_tail_recursion() {
    // item ::= "(" item ")" | "x" is not regular.
    let g = rules(vec![
        ("root", Expr::Avoiding { expr: Box::new(Expr::Rule(1)), excludes: vec![b"((".to_vec()], lazy: false }),
        ("item", Expr::Alt(vec![Expr::Seq(vec![Expr::literal("("), Expr::Rule(1), Expr::literal(")")]), Expr::literal("x")])),
    ]);
    let v = vocab(TOKS, &[0], &[0]);
    let e = CompiledGrammar::compile(&g, v, &CompileOptions::default(), &Budget::unlimited()).unwrap_err();
    assert!(e.to_string().contains("recursive"), "{e}");
}

#[test]
fn shortest_completion_closes_nested_rules() {
    // After "(((" the shortest completion is ")))".
    let cg = balanced_parentheses();
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert_eq!(m.shortest_completion_len(), Some(0));
    assert_eq!(m.find_shortest_completion(100).unwrap().unwrap(), b"");
    assert!(m.accept_bytes(b"((()(").unwrap());
    assert_eq!(m.shortest_completion_len(), Some(3));
    let c = m.find_shortest_completion(100).unwrap().unwrap();
    assert_eq!(c, b")))");
    // Too short a limit: none.
    assert_eq!(m.find_shortest_completion(2).unwrap(), None);
    // The state is unchanged, and the completion is accepted.
    assert!(!m.can_end());
    assert!(m.accept_bytes(&c).unwrap());
    assert!(m.can_end());
}

#[test]
fn shortest_completion_through_calls_and_left_recursion() {
    // root ::= "<" item ("," item)* ">"; item ::= "long-word" | "x" x
    // x ::= x "y" | "z"   (left-recursive; shortest "z")
    let v = vocab(TOKS, &[0], &[0]);
    let g = rules(vec![
        (
            "root",
            Expr::Seq(vec![
                Expr::literal("<"),
                Expr::Rule(1),
                Expr::star(Expr::Seq(vec![Expr::literal(","), Expr::Rule(1)])),
                Expr::literal(">"),
            ]),
        ),
        ("item", Expr::Alt(vec![Expr::literal("long-word"), Expr::Seq(vec![Expr::literal("x"), Expr::Rule(2)])])),
        ("x", Expr::Alt(vec![Expr::Seq(vec![Expr::Rule(2), Expr::literal("y")]), Expr::literal("z")])),
    ]);
    let cg = compile(&g, &v);
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert_eq!(m.shortest_completion_len(), Some(4)); // <xz>
    assert_eq!(m.find_shortest_completion(100).unwrap().unwrap(), b"<xz>");
    assert!(m.accept_bytes(b"<long-word,lo").unwrap());
    assert_eq!(m.find_shortest_completion(100).unwrap().unwrap(), b"ng-word>");
    assert!(m.accept_bytes(b"ng-word,xzyy").unwrap());
    assert_eq!(m.find_shortest_completion(100).unwrap().unwrap(), b">");
}

#[test]
fn shortest_completion_ignores_token_level_edges() {
    // root ::= "a" <tok 8>: no text completes it.
    let v = vocab(TOKS, &[0, 8], &[0]);
    let g = rules(vec![("root", Expr::Seq(vec![Expr::literal("a"), Expr::Token(8)]))]);
    let cg = compile(&g, &v);
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert!(m.accept_bytes(b"a").unwrap());
    assert_eq!(m.shortest_completion_len(), None);
    assert_eq!(m.find_shortest_completion(100).unwrap(), None);
}

/// Masks inside JSON-string-like bodies (unbounded, length-bounded — some
/// bounds past the longest token —, with a narrower character set) equal
/// token-by-token acceptance over a vocabulary of multi-byte UTF-8 text
/// mixed with quotes, backslashes, control bytes, and partial or ill-formed
/// sequences: exercises the subtree skips of the partition walk (a subtree
/// of text is accepted whole only when every path in it is).
#[test]
fn string_body_masks_match_token_acceptance() {
    let mut toks: Vec<Vec<u8>> = vec![b"<eos>".to_vec()];
    let valid: [&[u8]; 11] = [
        b"a", b"b", b" ", b"\x7f", "é".as_bytes(), "€".as_bytes(), "𝄞".as_bytes(), "\u{d7ff}".as_bytes(),
        "\u{10ffff}".as_bytes(), "ü".as_bytes(), "\u{ffff}".as_bytes(),
    ];
    let other: [&[u8]; 14] = [
        b"\"", b"\\", b"\x1f", b"\xc3", b"\xe2\x82", b"\xf0\x9d", b"\x84\x9e", b"\xa9", b"\xed\xa0\x80", b"\xc0\x80",
        b"\xf4\x90\x80\x80", b"\xe0\x80\x80", b"\xf5", b"\xf0\x9d\x84",
    ];
    // Every concatenation of up to three valid pieces and "a" after three
    // (deep subtrees of text), and of one or two valid pieces with one
    // other piece.
    for x in &valid {
        toks.push(x.to_vec());
        for y in &valid {
            toks.push([*x, *y].concat());
            for z in &valid {
                toks.push([*x, *y, *z].concat());
                toks.push([*x, *y, *z, b"a"].concat());
            }
        }
        for o in &other {
            toks.push([*x, *o].concat());
            toks.push([*o, *x].concat());
            toks.push([*x, *x, *o].concat());
            toks.push([*x, *o, *x].concat());
        }
    }
    for o in &other {
        toks.push(o.to_vec());
    }
    let n = toks.len();
    let vi = Arc::new(
        VocabIndex::new(&Vocab { tokens: toks, special: vec![0], stop: vec![0], logits_size: n, kind: VocabKind::Raw }).unwrap(),
    );
    let body = |set: Vec<(u32, u32)>, min: u32, max: Option<u32>| {
        Expr::Seq(vec![
            Expr::literal("\""),
            Expr::Repeat { expr: Box::new(Expr::Chars(set)), min, max },
            Expr::literal("\""),
        ])
    };
    let text = vec![(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)];
    let narrow = vec![(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E), (0xA0, 0xFFFF)];
    let with_controls = vec![(0x01, 0x21), (0x23, 0x10FFFF)];
    let long: String = "é".repeat(30);
    for (root, prefixes) in [
        (body(text.clone(), 0, None), vec!["\"".to_string(), "\"é".into(), "\"\u{1d11e}".into()]),
        (body(text.clone(), 2, Some(5)), vec!["\"".into(), "\"a".into(), "\"ab".into(), "\"abc".into(), "\"abcd".into(), "\"abcdé".into()]),
        (body(text.clone(), 0, Some(1)), vec!["\"".into()]),
        (body(text.clone(), 0, Some(40)), vec!["\"".into(), format!("\"{long}"), format!("\"{long}abcdefg")]),
        (body(narrow, 0, None), vec!["\"".into(), "\"ü".into()]),
        (body(with_controls, 0, Some(3)), vec!["\"".into(), "\"\\".into()]),
    ] {
        let g = rules(vec![("root", root)]);
        let cg = compile(&g, &vi);
        for p in prefixes {
            let fresh = || {
                let mut m = Matcher::new(cg.clone(), false, None).unwrap();
                assert!(m.accept_bytes(p.as_bytes()).unwrap());
                m
            };
            let got = allowed(&mut fresh());
            let want: Vec<u32> = (0..n as u32).filter(|&t| fresh().accept_token(t).unwrap()).collect();
            assert_eq!(got, want, "prefix {p:?}");
        }
    }
}

/// root ::= "(" A ")" with inline right-linear helpers A ::= "a" B | ε,
/// B ::= "b" A: the language `((ab)*)`, built as one automaton.
#[test]
fn inline_right_linear_rules_are_built_in_place() {
    let v = vocab(TOKS, &[0], &[0]);
    let mut g = rules(vec![
        ("root", Expr::Seq(vec![Expr::literal("("), Expr::Rule(1), Expr::literal(")")])),
        ("a", Expr::Alt(vec![Expr::Seq(vec![Expr::literal("a"), Expr::Rule(2)]), Expr::Empty])),
        ("b", Expr::Seq(vec![Expr::literal("b"), Expr::Rule(1)])),
    ]);
    let plain = compile(&g, &v);
    g.rules[1].inline = true;
    g.rules[2].inline = true;
    let inlined = compile(&g, &v);
    // `b` is only ever a last step: it gets no automaton of its own, and
    // `a` (called from root) holds the whole group without calls.
    let a = &inlined.automaton;
    assert_eq!(a.rule_start[2] + 1, a.n_states() as u32);
    assert!((a.rule_start[1]..a.rule_start[2]).all(|s| a.calls_of(s).is_empty()));
    for text in ["()", "(ab)", "(abab)", "(a)", "(aba)", "(b)", "(abb)", "(ab", "ab)"] {
        let accepts = |cg: &Arc<CompiledGrammar>| {
            let mut m = Matcher::new(cg.clone(), false, None).unwrap();
            m.accept_bytes(text.as_bytes()).unwrap() && m.can_end()
        };
        assert_eq!(accepts(&inlined), accepts(&plain), "{text}");
    }
    let mut m = Matcher::new(inlined, false, None).unwrap();
    assert!(m.accept_bytes(b"(ab").unwrap());
    assert_eq!(allowed(&mut m), vec![1, 3, 5]);
}

#[test]
fn undefined_rule_ids_are_errors_naming_the_rule() {
    let v = vocab(&["a"], &[], &[]);
    let g = rules(vec![("root", Expr::Seq(vec![Expr::Bytes(b"a".to_vec()), Expr::Rule(7)]))]);
    let err = CompiledGrammar::compile(&g, v, &CompileOptions::default(), &Budget::unlimited()).unwrap_err().to_string();
    assert!(err.contains("rule 'root' references undefined rule id 7"), "{err}");
}

/// Enough rules for determinization to run on several threads: the result
/// accepts what the sequential build accepts, and the DFA-state limit holds
/// over all rules together (one shared counter), not per rule.
#[test]
fn rules_determinized_together_share_the_state_limit() {
    let v = vocab(&["a"], &[], &[]);
    let word = |r: usize, k: usize| format!("r{r}w{k:03}xyz");
    let mut rs: Vec<(String, Expr)> = Vec::new();
    for r in 0..24 {
        let words = (0..40).map(|k| Expr::Bytes(word(r, k).into_bytes())).collect();
        rs.push((format!("r{r}"), Expr::Alt(words)));
    }
    let root = Expr::Seq((0..24).map(|r| Expr::Rule(r as u32 + 1)).collect());
    let mut all = vec![("root".to_string(), root)];
    all.extend(rs);
    let g = Grammar { rules: all.into_iter().map(|(n, e)| Rule::new(&n, e)).collect(), root: 0 };
    let cg = Arc::new(CompiledGrammar::compile(&g, v.clone(), &CompileOptions::default(), &Budget::unlimited()).unwrap());
    let states = cg.automaton.n_states();
    let text: String = (0..24).map(|r| word(r, (r * 7) % 40)).collect();
    let mut m = Matcher::new(cg.clone(), false, None).unwrap();
    assert!(m.accept_bytes(text.as_bytes()).unwrap() && m.can_end());
    let mut m = Matcher::new(cg, false, None).unwrap();
    assert!(!m.accept_bytes(format!("{}r0w040xyz", word(0, 0)).as_bytes()).unwrap_or(false));
    // Each rule alone is far below the limit; together they are above it.
    let mut opts = CompileOptions::default();
    opts.automaton.max_dfa_states = states / 2;
    let err = CompiledGrammar::compile(&g, v, &opts, &Budget::unlimited()).err().expect("over the limit").to_string();
    assert!(err.contains("DFA states"), "{err}");
}

/// A long rule over few byte classes (a run of digits) in a grammar with
/// many (words over the alphabet) gets a table of its own: its states move
/// exactly as their edges say, and the grammar accepts what it should.
#[test]
fn narrow_rules_move_like_the_shared_table() {
    let v = vocab(&["a", "1", "12", "!", "x"], &[], &[]);
    let words = Expr::Alt(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu"].iter().map(|w| Expr::literal(w)).collect());
    let digits = Expr::Seq(vec![Expr::Repeat { expr: Box::new(Expr::ByteSet(vec![(b'0', b'9')])), min: 300, max: Some(300) }, Expr::literal("!")]);
    let g = rules(vec![("root", Expr::Seq(vec![Expr::Rule(1), Expr::literal(":"), Expr::Rule(2)])), ("words", words), ("digits", digits)]);
    let cg = compile(&g, &v);
    let a = &cg.automaton;
    assert!(a.shared_states() + 300 <= a.n_states(), "the digits rule has no table of its own");
    for s in 0..a.n_states() as u32 {
        for b in 0..=255u8 {
            let t = a.next(s, b);
            let has_edge = a.byte_set(s)[b as usize / 64] >> (b % 64) & 1 == 1;
            assert_eq!(t != formcast_engine::automaton::DEAD, has_edge, "state {s} byte {b}");
            assert!(t == formcast_engine::automaton::DEAD || (t as usize) < a.n_states());
        }
    }
    let ok = format!("kilo:{}!", "7".repeat(300));
    let mut m = Matcher::new(cg.clone(), false, None).unwrap();
    assert!(m.accept_bytes(ok.as_bytes()).unwrap() && m.can_end());
    for bad in [format!("kilo:{}!", "7".repeat(299)), format!("kilo:{}x{}!", "7".repeat(150), "7".repeat(149)), format!("kil:{}!", "7".repeat(300))] {
        let mut m = Matcher::new(cg.clone(), false, None).unwrap();
        assert!(!(m.accept_bytes(bad.as_bytes()).unwrap_or(false) && m.can_end()), "{bad}");
    }
    // Inside the digits: the digit tokens only ("1", "12").
    let mut m = Matcher::new(cg.clone(), false, None).unwrap();
    assert!(m.accept_bytes(b"kilo:123").unwrap());
    assert_eq!(allowed(&mut m), vec![1, 2]);
}

/// A table holds 16-bit targets while every state fits, 32-bit beyond: a
/// grammar just past 65,535 states in the shared table moves, accepts and
/// masks like one below it.
#[test]
fn tables_past_sixteen_bit_state_ids_move_alike() {
    let v = vocab(&["a", "b", "ab", "ba", "!"], &[], &[]);
    for n in [1_000u32, 70_000] {
        // "a"/"b" strings of exactly n bytes, then "!": n + 2 states in one rule.
        let body = Expr::Seq(vec![Expr::Repeat { expr: Box::new(Expr::ByteSet(vec![(b'a', b'b')])), min: n, max: Some(n) }, Expr::literal("!")]);
        let cg = compile(&rules(vec![("root", body)]), &v);
        let a = &cg.automaton;
        assert!(a.shared_states() > n as usize, "{n}: the rule is in the shared table");
        for s in (0..a.n_states() as u32).step_by(97).chain([a.n_states() as u32 - 1]) {
            for b in 0..=255u8 {
                let t = a.next(s, b);
                let has_edge = a.byte_set(s)[b as usize / 64] >> (b % 64) & 1 == 1;
                assert_eq!(t != formcast_engine::automaton::DEAD, has_edge, "{n}: state {s} byte {b}");
                assert!(t == formcast_engine::automaton::DEAD || (t as usize) < a.n_states());
            }
        }
        let text = "ab".repeat(n as usize / 2);
        let mut m = Matcher::new(cg.clone(), false, None).unwrap();
        assert!(m.accept_bytes(&text.as_bytes()[..n as usize - 1]).unwrap());
        assert_eq!(allowed(&mut m), vec![0, 1], "{n}: one byte left: 'a' or 'b'");
        assert!(m.accept_bytes(b"b!").unwrap() && m.can_end(), "{n}");
        let mut m = Matcher::new(cg.clone(), false, None).unwrap();
        assert!(!m.accept_bytes(format!("{text}a").as_bytes()).unwrap_or(false), "{n}: one byte too many");
    }
}

/// The rule cache keeps automata that call other rules, under keys that
/// name rules by the order they are referenced in: a grammar whose rules
/// are numbered differently gets the cached automaton with its calls
/// renamed, and a body whose in-place (inline) callee differs gets its own.
#[test]
fn cached_rule_automata_are_renamed_and_keyed_by_what_they_build_in_place() {
    let v = vocab(&["a"], &[], &[]);
    let open = "((((((((((((((((((((((((((((((((((((((((";
    let root = |word: u32, num: u32| Expr::Seq(vec![Expr::literal(open), Expr::Rule(word), Expr::literal(","), Expr::Rule(num), Expr::literal(")")]);
    let word = Expr::plus(Expr::ByteSet(vec![(b'a', b'z')]));
    let num = Expr::plus(Expr::ByteSet(vec![(b'0', b'9')]));
    let g1 = rules(vec![("root", root(1, 2)), ("word", word.clone()), ("num", num.clone())]);
    let g2 = rules(vec![("root", root(2, 1)), ("num", num), ("word", word)]);
    for g in [&g1, &g2, &g1] {
        let cg = compile(g, &v);
        let mut m = Matcher::new(cg.clone(), false, None).unwrap();
        assert!(m.accept_bytes(format!("{open}abc,12)").as_bytes()).unwrap() && m.can_end());
        let mut m = Matcher::new(cg, false, None).unwrap();
        assert!(!m.accept_bytes(format!("{open}12,abc)").as_bytes()).unwrap_or(false));
    }
    // root ::= open tail, with the inline tail built in place.
    let inline = |tail: &str| Grammar {
        rules: vec![Rule::new("root", Expr::Seq(vec![Expr::literal(open), Expr::Rule(1)])), Rule { name: "tail".into(), body: Expr::literal(tail), inline: true, lexeme: None }],
        root: 0,
    };
    for (tail, other) in [("a)", "b)"), ("b)", "a)")] {
        let cg = compile(&inline(tail), &v);
        let mut m = Matcher::new(cg.clone(), false, None).unwrap();
        assert!(m.accept_bytes(format!("{open}{tail}").as_bytes()).unwrap() && m.can_end(), "{tail}");
        let mut m = Matcher::new(cg, false, None).unwrap();
        assert!(!m.accept_bytes(format!("{open}{other}").as_bytes()).unwrap_or(false), "{tail} accepts {other}");
    }
}

/// `([a-c] | [x-z] "!" | "(" [0-9]+ ")")*`, recognized by hand.
fn items_reference(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'a'..=b'c' => i += 1,
            b'x'..=b'z' if s.get(i + 1) == Some(&b'!') => i += 2,
            b'(' => {
                let digits = s[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                if digits == 0 || s.get(i + 1 + digits) != Some(&b')') {
                    return false;
                }
                i += digits + 2;
            }
            _ => return false,
        }
    }
    true
}

/// States move on a window of their byte classes (first live class to
/// last, gaps dead): the start state on `(`, `a-c` and `x-z` with dead
/// classes between, a digit state on `)` and `0-9` with `*+,-./` between.
/// Every text of up to four bytes from either side of each class boundary
/// is accepted exactly when a hand-written recognizer accepts it.
#[test]
fn windowed_rows_accept_exactly_the_language() {
    let item = Expr::Alt(vec![
        Expr::ByteSet(vec![(b'a', b'c')]),
        Expr::Seq(vec![Expr::ByteSet(vec![(b'x', b'z')]), Expr::literal("!")]),
        Expr::Seq(vec![Expr::literal("("), Expr::plus(Expr::ByteSet(vec![(b'0', b'9')])), Expr::literal(")")]),
    ]);
    let g = rules(vec![("root", Expr::Repeat { expr: Box::new(item), min: 0, max: None })]);
    let cg = compile(&g, &vocab(&["a"], &[], &[]));
    let alphabet = b"!\x20()*/09:`acdwxz{";
    let mut texts: Vec<Vec<u8>> = vec![vec![]];
    let mut checked = 0;
    for _ in 0..4 {
        texts = texts.iter().flat_map(|t| alphabet.iter().map(move |&b| [&t[..], &[b]].concat())).collect();
        for text in &texts {
            let mut m = Matcher::new(cg.clone(), false, None).unwrap();
            let accepted = m.accept_bytes(text).unwrap_or(false) && m.can_end();
            assert_eq!(accepted, items_reference(text), "{:?}", String::from_utf8_lossy(text));
            checked += 1;
        }
    }
    assert_eq!(checked, [1, 2, 3, 4].iter().map(|&k| alphabet.len().pow(k)).sum::<usize>());
}
