//! What each format accepts and rejects, through the engine.

mod common;
use common::*;

fn c(format: &str) -> std::sync::Arc<formcast_engine::CompiledGrammar> {
    compile(&wrap(format)).unwrap_or_else(|e| panic!("{e}"))
}

const THINK: &str = r#"{"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"}"#;

#[test]
fn const_string_and_tag_with_any_text() {
    let g = c(r#"{"type": "const_string", "value": "hi"}"#);
    assert!(accepts(&g, "hi"));
    assert!(!accepts(&g, "h") && !accepts(&g, "hii"));
    let g = c(THINK);
    for ok in ["<think>abc</think>", "<think></think>", "<think>a</thin</think>", "<think>中文</think>"] {
        assert!(accepts(&g, ok), "{ok}");
    }
    for bad in ["<think>a</think>b</think>", "<think>abc", "<think>a</think>b"] {
        assert!(!accepts(&g, bad), "{bad}");
    }
}

#[test]
fn several_end_strings() {
    let g = c(r#"{"type": "tag", "begin": "<r>", "content": {"type": "any_text"}, "end": ["</r>", "</answer>"]}"#);
    assert!(accepts(&g, "<r>x</r>") && accepts(&g, "<r>x</answer>"));
    assert!(!accepts(&g, "<r>x</answer>y</r>") && !accepts(&g, "<r>x</r>y</answer>"));
}

#[test]
fn any_text_top_level_excludes_and_max_chars() {
    let g = c(r#"{"type": "any_text"}"#);
    assert!(accepts(&g, "") && accepts(&g, "anything </think> at all"));
    let g = c(r#"{"type": "any_text", "excludes": ["bad"]}"#);
    assert!(accepts(&g, "ba d") && !accepts(&g, "a bad one"));
    let g = c(r#"{"type": "any_text", "max_chars": 3}"#);
    assert!(accepts(&g, "中文字") && accepts(&g, "ab") && !accepts(&g, "abcd"));
    let g = c(r#"{"type": "tag", "begin": "<a>", "content": {"type": "any_text", "max_chars": 2, "excludes": ["x"]}, "end": "</a>"}"#);
    assert!(accepts(&g, "<a>yy</a>") && !accepts(&g, "<a>yyy</a>") && !accepts(&g, "<a>x</a>"));
}

#[test]
fn sequence_or_optional_plus_star_repeat() {
    let g = c(r#"{"type": "sequence", "elements": [{"type": "const_string", "value": "a"}, {"type": "or", "elements": [{"type": "const_string", "value": "b"}, {"type": "const_string", "value": "c"}]}]}"#);
    assert!(accepts(&g, "ab") && accepts(&g, "ac") && !accepts(&g, "a") && !accepts(&g, "abc"));
    let g = c(r#"{"type": "optional", "content": {"type": "const_string", "value": "x"}}"#);
    assert!(accepts(&g, "") && accepts(&g, "x") && !accepts(&g, "xx"));
    let g = c(r#"{"type": "plus", "content": {"type": "const_string", "value": "x"}}"#);
    assert!(!accepts(&g, "") && accepts(&g, "x") && accepts(&g, "xxx"));
    let g = c(r#"{"type": "star", "content": {"type": "const_string", "value": "x"}}"#);
    assert!(accepts(&g, "") && accepts(&g, "xxxx") && !accepts(&g, "xy"));
    let g = c(r#"{"type": "repeat", "min": 1, "max": 3, "content": {"type": "const_string", "value": "ab"}}"#);
    assert!(!accepts(&g, "") && accepts(&g, "ab") && accepts(&g, "ababab") && !accepts(&g, "abababab"));
    let g = c(r#"{"type": "repeat", "min": 2, "max": -1, "content": {"type": "const_string", "value": "x"}}"#);
    assert!(!accepts(&g, "x") && accepts(&g, "xx") && accepts(&g, "xxxxxxx"));
}

#[test]
fn grammar_regex_and_json_schema_are_embedded() {
    let g = c(r#"{"type": "sequence", "elements": [
        {"type": "grammar", "grammar": "root ::= item (\",\" item)*\nitem ::= [a-z]+"},
        {"type": "const_string", "value": "|"},
        {"type": "regex", "pattern": "[A-Z]{3}-[0-9]{2}"},
        {"type": "const_string", "value": "|"},
        {"type": "json_schema", "json_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}]}"#);
    assert!(accepts(&g, "ab,c|ABC-12|{\"n\": 5}"));
    assert!(!accepts(&g, "ab,|ABC-12|{\"n\": 5}"));
    assert!(!accepts(&g, "ab|AB-12|{\"n\": 5}"));
    assert!(!accepts(&g, "ab|ABC-12|{\"n\": \"5\"}"));
    // Grammar token references resolve through the tokenizer.
    let g = c(r#"{"type": "grammar", "grammar": "root ::= <think> \"x\""}"#);
    assert!(accepts_steps(&g, &[Step::K(tok("<think>")), Step::T("x")]));
    assert!(!accepts(&g, "<think>x"));
}

#[test]
fn json_schema_xml_style_and_any_order() {
    let schema = r#"{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}"#;
    let g = c(&format!(r#"{{"type": "qwen_xml_parameter", "json_schema": {schema}}}"#));
    assert!(accepts(&g, "<parameter=name>Bob</parameter><parameter=age>100</parameter>"));
    assert!(!accepts(&g, "{\"name\": \"Bob\", \"age\": 100}"));
    let g = c(&format!(r#"{{"type": "json_schema", "json_schema": {schema}, "any_order": true}}"#));
    assert!(accepts(&g, r#"{"age": 1, "name": "x"}"#) && accepts(&g, r#"{"name": "x", "age": 1}"#));
    let g = c(&format!(r#"{{"type": "json_schema", "json_schema": {schema}}}"#));
    assert!(!accepts(&g, r#"{"age": 1, "name": "x"}"#));
    let g = c(&format!(r#"{{"type": "json_schema", "json_schema": {schema}, "max_whitespace_cnt": 1}}"#));
    assert!(accepts(&g, "{ \"name\": \"x\", \"age\": 1 }") && !accepts(&g, "{  \"name\": \"x\", \"age\": 1}"));
}

const TT: &str = r#""triggers": ["<function="], "tags": [
    {"begin": "<function=f>", "content": {"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}, "end": "</function>"},
    {"begin": "<function=g>", "content": {"type": "any_text"}, "end": "</function>"}]"#;

#[test]
fn triggered_tags_free_text_and_commitment() {
    let g = c(&format!(r#"{{"type": "triggered_tags", {TT}}}"#));
    for ok in ["", "plain text", "x<function=f>{\"a\": 1}</function>y<function=g>zz</function>", "text <functi", "<function=g></function><function=g>a</function>"] {
        assert!(accepts(&g, ok), "{ok:?}");
    }
    for bad in ["text <function=", "<function=h>{}</function>", "<function=f>{}</function>", "<function=g>a</function"] {
        assert!(!accepts(&g, bad), "{bad:?}");
    }
    // A self-overlapping trigger commits at its first completion.
    let g = c(r#"{"type": "triggered_tags", "triggers": ["aba"], "tags": [{"begin": "aba", "content": {"type": "const_string", "value": "X"}, "end": ";"}]}"#);
    assert!(accepts(&g, "abaX;") && accepts(&g, "zabaX;") && !accepts(&g, "ababaX;"));
}

#[test]
fn triggered_tags_flags() {
    let g = c(&format!(r#"{{"type": "triggered_tags", {TT}, "at_least_one": true}}"#));
    assert!(accepts(&g, "<function=g>a</function> then text <function=g>b</function>"));
    assert!(!accepts(&g, "") && !accepts(&g, "text<function=g>a</function>"));
    let g = c(&format!(r#"{{"type": "triggered_tags", {TT}, "stop_after_first": true}}"#));
    assert!(accepts(&g, "text<function=g>a</function>") && accepts(&g, "just text"));
    assert!(!accepts(&g, "text<function=g>a</function>more") && !accepts(&g, "<function=g>a</function><function=g>a</function>"));
    let g = c(&format!(r#"{{"type": "triggered_tags", {TT}, "at_least_one": true, "stop_after_first": true}}"#));
    assert!(accepts(&g, "<function=g>a</function>"));
    assert!(!accepts(&g, "x<function=g>a</function>") && !accepts(&g, "<function=g>a</function>x") && !accepts(&g, ""));
    let g = c(&format!(r#"{{"type": "triggered_tags", {TT}, "excludes": ["<think>"]}}"#));
    assert!(!accepts(&g, "a <think> b") && accepts(&g, "a <thin b"));
}

#[test]
fn triggered_tags_inside_a_tag_stop_at_its_end() {
    let g = c(&format!(r#"{{"type": "tag", "begin": "<r>", "content": {{"type": "triggered_tags", {TT}}}, "end": "</r>"}}"#));
    assert!(accepts(&g, "<r>hi<function=g>x</function>bye</r>"));
    assert!(!accepts(&g, "<r>a</r>b</r>"));
}

#[test]
fn tags_with_separator() {
    let t = r#""tags": [{"begin": "<a>", "content": {"type": "const_string", "value": "1"}, "end": "</a>"}, {"begin": "<b>", "content": {"type": "const_string", "value": "2"}, "end": "</b>"}], "separator": ",""#;
    let g = c(&format!(r#"{{"type": "tags_with_separator", {t}}}"#));
    for ok in ["", "<a>1</a>", "<a>1</a>,<b>2</b>,<a>1</a>"] {
        assert!(accepts(&g, ok), "{ok}");
    }
    for bad in ["<a>1</a><b>2</b>", "x<a>1</a>", "<a>1</a>,", "<a>1</a> "] {
        assert!(!accepts(&g, bad), "{bad}");
    }
    let g = c(&format!(r#"{{"type": "tags_with_separator", {t}, "at_least_one": true, "stop_after_first": true}}"#));
    assert!(accepts(&g, "<b>2</b>") && !accepts(&g, "") && !accepts(&g, "<a>1</a>,<b>2</b>"));
    let g = c(&format!(r#"{{"type": "tags_with_separator", {t}, "stop_after_first": true}}"#));
    assert!(accepts(&g, "") && accepts(&g, "<a>1</a>") && !accepts(&g, "<a>1</a>,<a>1</a>"));
}

#[test]
fn dispatch_loop_and_no_auto_end() {
    let rules = r#""rules": [["<f>", {"type": "const_string", "value": "X;"}], ["<g>", {"type": "regex", "pattern": "[0-9]+;"}]]"#;
    let g = c(&format!(r#"{{"type": "dispatch", {rules}}}"#));
    assert!(accepts(&g, "a<f>X;b<g>12;c") && accepts(&g, "") && !accepts(&g, "a<f>Y;"));
    let g = c(&format!(r#"{{"type": "dispatch", {rules}, "loop": false}}"#));
    assert!(accepts(&g, "a<f>X;") && !accepts(&g, "a<f>X;b"));
    // No automatic end: the enclosing tag's end may appear in the free text...
    let g = c(&format!(r#"{{"type": "tag", "begin": "<r>", "content": {{"type": "dispatch", {rules}}}, "end": "</r>"}}"#));
    assert!(accepts(&g, "<r>a</r>b</r>"));
    // ...unless excluded.
    let g = c(&format!(r#"{{"type": "tag", "begin": "<r>", "content": {{"type": "dispatch", {rules}, "excludes": ["</r>"]}}, "end": "</r>"}}"#));
    assert!(accepts(&g, "<r>a<f>X;</r>") && !accepts(&g, "<r>a</r>b</r>"));
}

#[test]
fn token_formats() {
    let g = c(r#"{"type": "tag", "begin": {"type": "token", "token": "<tk>"}, "content": {"type": "any_tokens"}, "end": {"type": "token", "token": "</tk>"}}"#);
    let (b, e) = (tok("<tk>"), tok("</tk>"));
    assert!(accepts_steps(&g, &[Step::K(b), Step::K(65), Step::K(tok("<call>")), Step::K(e)]));
    assert!(!accepts_steps(&g, &[Step::K(b), Step::K(e), Step::K(e)]));
    // Token-level boundaries are not matched by their text.
    assert!(!accepts(&g, "<tk>a</tk>"));
    let g = c(r#"{"type": "sequence", "elements": [{"type": "exclude_token", "exclude_tokens": [65, "<call>"]}, {"type": "token", "token": 66}]}"#);
    assert!(accepts_steps(&g, &[Step::K(67), Step::K(66)]) && accepts_steps(&g, &[Step::K(tok("<end>")), Step::K(66)]));
    assert!(!accepts_steps(&g, &[Step::K(65), Step::K(66)]) && !accepts_steps(&g, &[Step::K(tok("<call>")), Step::K(66)]));
    let g = c(r#"{"type": "any_tokens", "max_tokens": 2}"#);
    assert!(accepts_steps(&g, &[Step::K(1), Step::K(2)]) && !accepts_steps(&g, &[Step::K(1), Step::K(2), Step::K(3)]));
    // A token end is excluded automatically from exclude_token inside the tag.
    let g = c(r#"{"type": "tag", "begin": "a", "content": {"type": "exclude_token"}, "end": {"type": "token", "token": "</tk>"}}"#);
    assert!(accepts_steps(&g, &[Step::T("a"), Step::K(70), Step::K(tok("</tk>"))]));
    assert!(!accepts_steps(&g, &[Step::T("a"), Step::K(tok("</tk>")), Step::K(tok("</tk>"))]));
}

#[test]
fn token_triggered_tags_and_token_dispatch() {
    let tags = r#""trigger_tokens": ["<call>"], "tags": [{"begin": {"type": "token", "token": "<call>"}, "content": {"type": "const_string", "value": "f()"}, "end": {"type": "token", "token": "<end>"}}], "exclude_tokens": ["<eos>"]"#;
    let (call, end) = (tok("<call>"), tok("<end>"));
    let g = c(&format!(r#"{{"type": "token_triggered_tags", {tags}}}"#));
    assert!(accepts_steps(&g, &[Step::K(65), Step::K(call), Step::T("f()"), Step::K(end), Step::K(66)]));
    assert!(!accepts_steps(&g, &[Step::K(call), Step::T("g()"), Step::K(end)]));
    assert!(!accepts_steps(&g, &[Step::K(EOS), Step::K(65)]));
    let g = c(&format!(r#"{{"type": "token_triggered_tags", {tags}, "at_least_one": true}}"#));
    assert!(!accepts_steps(&g, &[Step::K(65), Step::K(call), Step::T("f()"), Step::K(end)]));
    assert!(accepts_steps(&g, &[Step::K(call), Step::T("f()"), Step::K(end), Step::K(65)]));
    let g = c(&format!(r#"{{"type": "token_triggered_tags", {tags}, "at_least_one": true, "stop_after_first": true}}"#));
    assert!(!accepts_steps(&g, &[Step::K(call), Step::T("f()"), Step::K(end), Step::K(65)]));
    let g = c(r#"{"type": "token_dispatch", "rules": [["<call>", {"type": "const_string", "value": "x"}], [260, {"type": "const_string", "value": "y"}]], "loop": false}"#);
    assert!(accepts_steps(&g, &[Step::K(65), Step::K(call), Step::T("x")]));
    assert!(accepts_steps(&g, &[Step::K(260), Step::T("y")]));
    assert!(!accepts_steps(&g, &[Step::K(call), Step::T("x"), Step::K(65)]));
}

#[test]
fn legacy_structures_and_triggers() {
    let g = compile(r#"{"type": "structural_tag", "triggers": ["<f="], "structures": [{"begin": "<f=a>", "schema": {"type": "integer"}, "end": "</f>"}]}"#).unwrap();
    assert!(accepts(&g, "hello <f=a>12</f> bye") && !accepts(&g, "<f=a>x</f>") && !accepts(&g, "<f=b>1</f>"));
    assert!(accepts(&g, "no call at all"));
    // SGLang sends at_least_one for tool_choice "required".
    let g = compile(r#"{"type": "structural_tag", "triggers": ["<f="], "structures": [{"begin": "<f=a>", "schema": {"type": "integer"}, "end": "</f>"}], "at_least_one": true}"#).unwrap();
    assert!(accepts(&g, "<f=a>12</f>") && !accepts(&g, "no call at all"));
    let both = r#"{"type": "structural_tag", "format": {"type": "const_string", "value": "x"}, "at_least_one": true}"#;
    assert!(compile(both).is_err());
}

#[test]
fn bare_format_is_accepted() {
    let g = compile(THINK).unwrap();
    assert!(accepts(&g, "<think>a</think>"));
}

#[test]
fn sequence_think_then_tool_calls() {
    let g = c(&format!(r#"{{"type": "sequence", "elements": [{THINK}, {{"type": "triggered_tags", {TT}}}]}}"#));
    assert!(accepts(&g, "<think>hmm</think>ok <function=f>{\"a\": 2}</function>"));
    assert!(!accepts(&g, "ok <function=f>{\"a\": 2}</function>"));
    assert!(prefix_ok(&g, "<think>hmm</think>ok <function=f>{\"a\""));
}

#[test]
fn json_schema_excludes_in_strings_keys_and_every_kind_of_string() {
    let js = |schema: &str, excludes: &str| c(&format!(r#"{{"type": "json_schema", "json_schema": {schema}, "excludes": {excludes}}}"#));
    let g = js(r#"{"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "array", "items": {"type": "object", "additionalProperties": {"type": "integer"}}}}}"#, r#"["bad", "</r>"]"#);
    for ok in [r#"{"a": "a good one"}"#, r#"{"a": "ba d", "n": [{"ok": 1}]}"#, r#"{"a": "<\/r>"}"#] {
        assert!(accepts(&g, ok), "{ok}");
    }
    for bad in [r#"{"a": "a bad one"}"#, r#"{"a": "x</r>"}"#, r#"{"n": [{"xbadx": 1}]}"#, r#"{"a": "ok", "n": [{}, {"bad": 2}]}"#] {
        assert!(!accepts(&g, bad), "{bad}");
    }
    // Matched on the emitted text: an escaped form is a different text.
    let g = js(r#"{"type": "string"}"#, r#"["<"]"#);
    assert!(accepts(&g, r#""\u003c""#) && !accepts(&g, r#""<""#) && !accepts(&g, r#""a<b""#));
    // const/enum alternatives, patterns, formats and length bounds too.
    let g = js(r#"{"enum": ["bad", "good", 1]}"#, r#"["bad"]"#);
    assert!(accepts(&g, r#""good""#) && accepts(&g, "1") && !accepts(&g, r#""bad""#));
    let g = js(r#"{"type": "string", "pattern": "^[a-z]+$"}"#, r#"["bad"]"#);
    assert!(accepts(&g, r#""abd""#) && !accepts(&g, r#""xbadx""#));
    let g = js(r#"{"type": "string", "format": "email"}"#, r#"["bad"]"#);
    assert!(accepts(&g, r#""me@x.org""#) && !accepts(&g, r#""bad@x.org""#));
    let g = js(r#"{"type": "string", "minLength": 2, "maxLength": 70}"#, r#"["bad"]"#);
    assert!(accepts(&g, r#""ba d""#) && !accepts(&g, r#""b""#) && !accepts(&g, r#""a bad one""#));
    let long = "x".repeat(69);
    assert!(accepts(&g, &format!(r#""{long}b""#)) && !accepts(&g, &format!(r#""{long}bad""#)));
    // Everything excluded: no value is left.
    let e = err(&wrap(r#"{"type": "json_schema", "json_schema": {"enum": ["bad"]}, "excludes": ["bad"]}"#));
    assert!(e.message.contains("unsatisfiable"), "{e}");
    // Found only when the automaton is built.
    let c = formcast_structural::compile_str(&wrap(r#"{"type": "json_schema", "json_schema": {"type": "string", "pattern": "^x?bad$"}, "excludes": ["bad"]}"#), None, &Default::default()).unwrap();
    let index = std::sync::Arc::new(formcast_engine::VocabIndex::new(&vocab()).unwrap());
    let e = formcast_engine::CompiledGrammar::compile(&c.grammar, index, &Default::default(), &formcast_engine::Budget::unlimited()).unwrap_err();
    assert!(e.to_string().contains("language is empty") && e.to_string().contains("contains an excluded string"), "{e}");
}

#[test]
fn json_schema_excludes_in_xml_styles() {
    let tag = |style: &str| {
        c(&format!(
            r#"{{"type": "tag", "begin": "<tool_call>", "content": {{"type": "json_schema", "style": "{style}", "json_schema": {{"type": "object", "properties": {{"a": {{"type": "string"}}, "b": {{"type": "object", "properties": {{"c": {{"type": "string"}}}}}}}}}}, "excludes": ["</tool_call>"]}}, "end": "</tool_call>"}}"#
        ))
    };
    let g = tag("qwen_xml");
    assert!(accepts(&g, "<tool_call><parameter=a>fine</parameter></tool_call>"));
    assert!(accepts(&g, "<tool_call><parameter=b>{\"c\": \"</tool_\"}</parameter></tool_call>"));
    assert!(!accepts(&g, "<tool_call><parameter=a>x</tool_call>y</parameter></tool_call>"));
    assert!(!prefix_ok(&g, "<tool_call><parameter=b>{\"c\": \"</tool_call>"));
    let g = tag("deepseek_xml");
    assert!(!prefix_ok(&g, "<tool_call><｜DSML｜parameter name=\"a\" string=\"true\">x</tool_call>"));
}

#[test]
fn any_text_max_tokens_counts_tokens_through_the_mask() {
    let g = c(r#"{"type": "tag", "begin": "<a>", "content": {"type": "any_text", "max_tokens": 2}, "end": "</a>"}"#);
    let mut m = formcast_engine::Matcher::new(g.clone(), false, Some(8)).unwrap();
    assert!(m.accept_bytes(b"<a>").unwrap());
    assert!(m.accept_token(b'x' as u32).unwrap() && m.accept_token(b'y' as u32).unwrap());
    // Spent: only the end can follow.
    let allowed: Vec<usize> = m.next_token_mask().unwrap().iter_ones().collect();
    assert_eq!(allowed, vec![b'<' as usize]);
    assert!(!m.accept_token(b'z' as u32).unwrap());
    m.rollback(1).unwrap();
    assert!(m.accept_token(b'z' as u32).unwrap());
    assert!(m.accept_bytes(b"</a>").unwrap() && m.can_end());
    let g = c(r#"{"type": "tag", "begin": "<a>", "content": {"type": "any_text", "max_tokens": 0}, "end": "</a>"}"#);
    assert!(accepts(&g, "<a></a>") && !accepts(&g, "<a>x</a>"));
    // With max_chars as well, whichever runs out first.
    let g = c(r#"{"type": "any_text", "max_tokens": 3, "max_chars": 2}"#);
    assert!(accepts(&g, "ab") && !accepts(&g, "abc"));
    assert!(!accepts_steps(&g, &[Step::K(b'a' as u32), Step::K(b'b' as u32), Step::K(b'c' as u32)]));
}
