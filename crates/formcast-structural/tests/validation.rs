//! Every validation rule: the message, the path, the format type and the field.

mod common;
use common::*;
use formcast_structural::{compile_str, ErrorKind, Options};

/// Asserts the error of `format` (wrapped in a request) has this path,
/// type, field and message fragment.
fn check(format: &str, path: &str, ty: &str, field: &str, msg: &str) {
    let e = err(&wrap(format));
    assert_eq!((e.path.as_str(), e.format.as_str(), e.field.as_str()), (path, ty, field), "{e}");
    assert!(e.message.contains(msg), "message {:?} lacks {msg:?}", e.message);
    let shown = e.to_string();
    assert!(shown.contains(path) && shown.contains(msg), "{shown}");
}

const ANY: &str = r#"{"type": "any_text"}"#;
const C: &str = r#"{"type": "const_string", "value": "x"}"#;

#[test]
fn request_wrapper() {
    for (tag, path, msg) in [
        ("[1]", "<root>", "Structural tag must be an object"),
        (r#"{"type": 3}"#, "<root>.type", "Structural tag's type must be a string \"structural_tag\""),
        (r#"{"type": "structural_tag"}"#, "<root>.format", "Structural tag must have a format field"),
        (r#"{"type": "structural_tag", "format": 1}"#, "format", "Format must be an object"),
        (r#"{"type": "structural_tag", "format": {"type": 1}}"#, "format.type", "Format's type must be a string"),
        (r#"{"type": "structural_tag", "format": {"type": "nope"}}"#, "format.type", "Format type not recognized: nope"),
        (r#"{"type": "structural_tag", "format": {"foo": 1}}"#, "format", "Invalid format: {\"foo\":1}"),
        (r#"{"type": "structural_tag", "format": {"type": "any_text"}, "extra": 1}"#, "<root>.extra", "unknown field 'extra'"),
        (r#"{"type": "structural_tag", "structures": [{"begin": "a", "schema": {}, "end": "b"}], "triggers": ["b"]}"#, "structures[0].begin", "does not match any trigger"),
        ("{", "<root>", "not valid JSON"),
    ] {
        let e = err(tag);
        assert_eq!(e.path, path, "{e}");
        assert!(e.message.contains(msg), "{e}");
    }
}

#[test]
fn primitive_formats() {
    check(r#"{"type": "const_string"}"#, "format.value", "const_string", "value", "ConstString format must have a value field with a string");
    check(r#"{"type": "const_string", "value": "a", "valu": 1}"#, "format.valu", "const_string", "valu", "unknown field 'valu'");
    check(r#"{"type": "json_schema", "json_schema": "{}"}"#, "format.json_schema", "json_schema", "json_schema", "must have a json_schema field with a object or boolean value");
    check(r#"{"type": "json_schema", "json_schema": {}, "style": "yaml"}"#, "format.style", "json_schema", "style", "style must be \"json\"");
    check(r#"{"type": "json_schema", "json_schema": {}, "style": 1}"#, "format.style", "json_schema", "style", "style must be");
    check(r#"{"type": "json_schema", "json_schema": {}, "any_order": 1}"#, "format.any_order", "json_schema", "any_order", "any_order must be a boolean");
    check(r#"{"type": "json_schema", "json_schema": {}, "max_whitespace_cnt": "2"}"#, "format.max_whitespace_cnt", "json_schema", "max_whitespace_cnt", "must be an integer or null");
    check(r#"{"type": "json_schema", "json_schema": {}, "max_whitespace_cnt": 0}"#, "format.max_whitespace_cnt", "json_schema", "max_whitespace_cnt", "must be positive");
    check(r#"{"type": "json_schema", "json_schema": {}, "excludes": [""]}"#, "format.excludes[0]", "json_schema", "excludes", "must be an array of non-empty strings");
    check(r#"{"type": "json_schema", "json_schema": {}, "style": "qwen_xml", "excludes": [" x"]}"#, "format.excludes[0]", "json_schema", "excludes", "must not start or end with formatting");
    check(r#"{"type": "json_schema", "json_schema": {}, "style": "cohere_xml", "excludes": ["x"]}"#, "format.excludes", "json_schema", "excludes", "not supported for cohere_xml");
    check(r#"{"type": "json_schema", "json_schema": false}"#, "format.json_schema", "json_schema", "json_schema", "unsatisfiable");
    check(r#"{"type": "json_schema", "json_schema": {"type": "integer", "minimum": 5, "maximum": 1}}"#, "format.json_schema", "json_schema", "json_schema", "unsatisfiable");
    check(r#"{"type": "grammar", "grammar": ""}"#, "format.grammar", "grammar", "grammar", "Grammar format must have a grammar field with a non-empty string");
    check(r#"{"type": "grammar", "grammar": "root ::= ("}"#, "format.grammar", "grammar", "grammar", "EBNF syntax error at line 1");
    check(r#"{"type": "regex"}"#, "format.pattern", "regex", "pattern", "Regex format must have a pattern field with a non-empty string");
    check(r#"{"type": "regex", "pattern": "(a"}"#, "format.pattern", "regex", "pattern", "regex error at position");
    check(r#"{"type": "any_text", "excludes": "x"}"#, "format.excludes", "any_text", "excludes", "must be an array of non-empty strings");
    check(r#"{"type": "any_text", "excludes": [1]}"#, "format.excludes[0]", "any_text", "excludes", "must be an array of non-empty strings");
    check(r#"{"type": "any_text", "excludes": [""]}"#, "format.excludes[0]", "any_text", "excludes", "non-empty strings");
    for bad in ["-1", "1.5", "2147483648", "\"3\""] {
        check(&format!(r#"{{"type": "any_text", "max_chars": {bad}}}"#), "format.max_chars", "any_text", "max_chars", "max_chars in any_text must be a non-negative 32-bit integer or null");
        check(&format!(r#"{{"type": "any_tokens", "max_tokens": {bad}}}"#), "format.max_tokens", "any_tokens", "max_tokens", "max_tokens in any_tokens must be a non-negative 32-bit integer or null");
    }
}

#[test]
fn composition_formats() {
    check(r#"{"type": "sequence"}"#, "format.elements", "sequence", "elements", "Sequence format must have an elements field with an array");
    check(r#"{"type": "or", "elements": []}"#, "format.elements", "or", "elements", "Or format must have at least one element");
    check(r#"{"type": "sequence", "elements": [{"type": "const_string", "value": "a"}, {"type": "tag", "begin": "<a>", "content": {"type": "any_text"}}]}"#, "format.elements[1].end", "tag", "end", "Tag format must have an end field");
    check(r#"{"type": "optional"}"#, "format.content", "optional", "content", "Optional format must have a content field");
    check(r#"{"type": "plus"}"#, "format.content", "plus", "content", "Plus format must have a content field");
    check(r#"{"type": "star"}"#, "format.content", "star", "content", "Star format must have a content field");
    let rep = |min: &str, max: &str| format!(r#"{{"type": "repeat", "min": {min}, "max": {max}, "content": {C}}}"#);
    check(r#"{"type": "repeat", "max": 1, "content": {"type": "any_text"}}"#, "format.min", "repeat", "min", "Repeat format must have a min field (number)");
    check(r#"{"type": "repeat", "min": 1, "content": {"type": "any_text"}}"#, "format.max", "repeat", "max", "Repeat format must have a max field (number)");
    check(&rep("3", "2"), "format.min", "repeat", "min", "Repeat min must be <= max");
    check(&rep("-1", "2"), "format.min", "repeat", "min", "Repeat min must be >= 0");
    check(&rep("1.5", "2"), "format.min", "repeat", "min", "Repeat min must be an integer");
    check(&rep("1", "2.5"), "format.max", "repeat", "max", "Repeat max must be an integer");
    check(&rep("1", "-2"), "format.max", "repeat", "max", "Repeat max must be -1 (unbounded) or >= 0");
    check(&rep("2147483648", "-1"), "format.min", "repeat", "min", "Repeat min is too large, must be <= 2147483647");
    check(r#"{"type": "repeat", "min": 1, "max": 2}"#, "format.content", "repeat", "content", "Repeat format must have a content field");
    let e = err(&wrap(&rep("0", "1000000")));
    assert_eq!((e.kind, e.path.as_str()), (ErrorKind::Limit, "format.max"), "{e}");
    // max beyond int32 is unbounded, with a warning.
    let c = compile_str(&wrap(&rep("1", "9999999999")), None, &Options::default()).unwrap();
    assert!(c.warnings.iter().any(|w| w.contains("format.max") && w.contains("unbounded")), "{:?}", c.warnings);
}

#[test]
fn tags() {
    check(r#"{"type": "tag", "begin": 1, "content": {"type": "any_text"}, "end": "x"}"#, "format.begin", "tag", "begin", "begin field must be a string");
    check(r#"{"type": "tag", "begin": "a", "end": "x"}"#, "format.content", "tag", "content", "Tag format must have a content field");
    check(r#"{"type": "tag", "begin": "a", "content": {"type": "any_text"}, "end": []}"#, "format.end", "tag", "end", "Tag format's end array cannot be empty");
    check(r#"{"type": "tag", "begin": "a", "content": {"type": "any_text"}, "end": ["x", 2]}"#, "format.end[1]", "tag", "end", "Tag format's end array must contain only strings");
    check(r#"{"type": "tag", "begin": "a", "content": {"type": "any_text"}, "end": 3}"#, "format.end", "tag", "end", "end field must be a string, an array of strings or a token format");
    check(r#"{"type": "tag", "begin": "a", "content": {"type": "any_text"}, "end": ""}"#, "format.end", "tag", "end", "When the content is unlimited, at least one end string must be non-empty");
    check(r#"{"type": "tag", "begin": "a", "content": {"type": "sequence", "elements": [{"type": "star", "content": {"type": "const_string", "value": "x"}}]}, "end": ["", ""]}"#, "format.end", "tag", "end", "at least one end string must be non-empty");
    check(r#"{"type": "tag", "begin": "a", "content": {"type": "tags_with_separator", "tags": [{"begin": "b", "content": {"type": "const_string", "value": "x"}, "end": "c"}], "separator": ","}, "end": ""}"#, "format.end", "tag", "end", "at least one end string must be non-empty");
    // Explicit excludes, a token end, or a bounded content are fine.
    for ok in [
        r#"{"type": "tag", "begin": "a", "content": {"type": "any_text", "excludes": ["z"]}, "end": ""}"#,
        r#"{"type": "tag", "begin": "a", "content": {"type": "any_text"}, "end": {"type": "token", "token": 65}}"#,
        r#"{"type": "tag", "begin": "", "content": {"type": "const_string", "value": "x"}, "end": ""}"#,
    ] {
        compile(&wrap(ok)).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}

const TAG_F: &str = r#"{"begin": "<f=a>", "content": {"type": "const_string", "value": "x"}, "end": "</f>"}"#;

#[test]
fn triggered_tags() {
    let tt = |rest: &str| format!(r#"{{"type": "triggered_tags", {rest}}}"#);
    check(&tt(&format!(r#""tags": [{TAG_F}]"#)), "format.triggers", "triggered_tags", "triggers", "Triggered tags format must have a triggers field with an array");
    check(&tt(&format!(r#""triggers": [], "tags": [{TAG_F}]"#)), "format.triggers", "triggered_tags", "triggers", "Triggered tags format's triggers must be non-empty");
    check(&tt(&format!(r#""triggers": [""], "tags": [{TAG_F}]"#)), "format.triggers[0]", "triggered_tags", "triggers", "non-empty strings");
    check(&tt(r#""triggers": ["<f="]"#), "format.tags", "triggered_tags", "tags", "must have a tags field with an array");
    check(&tt(r#""triggers": ["<f="], "tags": []"#), "format.tags", "triggered_tags", "tags", "tags must be non-empty");
    check(&tt(&format!(r#""triggers": ["<f="], "tags": [{TAG_F}], "excludes": [""]"#)), "format.excludes[0]", "triggered_tags", "excludes", "non-empty strings");
    check(&tt(&format!(r#""triggers": ["<f="], "tags": [{TAG_F}], "at_least_one": "yes""#)), "format.at_least_one", "triggered_tags", "at_least_one", "at_least_one must be a boolean");
    check(&tt(&format!(r#""triggers": ["<f="], "tags": [{TAG_F}], "stop_after_first": 0"#)), "format.stop_after_first", "triggered_tags", "stop_after_first", "stop_after_first must be a boolean");
    check(&tt(r#""triggers": ["<f="], "tags": [{"begin": {"type": "token", "token": 65}, "content": {"type": "any_text"}, "end": "x"}]"#), "format.tags[0].begin", "triggered_tags", "tags", "Tags in triggered_tags must have a string begin, not a token format");
    check(&tt(&format!(r#""triggers": ["<g="], "tags": [{TAG_F}]"#)), "format.tags[0].begin", "triggered_tags", "tags", "One tag does not match any trigger");
    check(&tt(&format!(r#""triggers": ["<f", "<f="], "tags": [{TAG_F}]"#)), "format.tags[0].begin", "triggered_tags", "tags", "One tag matches multiple triggers");
    // Checks the reference misses: an exclude inside a trigger, a trigger inside another.
    check(&tt(&format!(r#""triggers": ["<f="], "tags": [{TAG_F}], "excludes": ["<f"]"#)), "format.excludes[0]", "triggered_tags", "excludes", "occurs inside the trigger \"<f=\"");
    check(&tt(&format!(r#""triggers": ["<f=", "f="], "tags": [{TAG_F}]"#)), "format.triggers[0]", "triggered_tags", "triggers", "occurs inside the pattern \"<f=\"");
    check(&tt(r#""triggers": ["<f="], "tags": [{"type": "const_string", "value": "x"}]"#), "format.tags[0].type", "tag", "type", "the elements of tags must be tag formats");
}

#[test]
fn tags_with_separator() {
    check(r#"{"type": "tags_with_separator", "separator": ","}"#, "format.tags", "tags_with_separator", "tags", "Tags with separator format must have a tags field with an array");
    check(r#"{"type": "tags_with_separator", "tags": [], "separator": ","}"#, "format.tags", "tags_with_separator", "tags", "tags must be non-empty");
    check(&format!(r#"{{"type": "tags_with_separator", "tags": [{TAG_F}]}}"#), "format.separator", "tags_with_separator", "separator", "Tags with separator format's separator field must be a string");
    check(&format!(r#"{{"type": "tags_with_separator", "tags": [{TAG_F}], "separator": "", "at_least_one": null}}"#), "format.at_least_one", "tags_with_separator", "at_least_one", "must be a boolean");
}

#[test]
fn dispatch() {
    check(r#"{"type": "dispatch"}"#, "format.rules", "dispatch", "rules", "TagDispatch format must have a rules field with an array");
    check(r#"{"type": "dispatch", "rules": []}"#, "format.rules", "dispatch", "rules", "TagDispatch format rules must be non-empty");
    check(r#"{"type": "dispatch", "rules": [["a"]]}"#, "format.rules[0]", "dispatch", "rules", "TagDispatch pair must be a 2-element array");
    check(&format!(r#"{{"type": "dispatch", "rules": [[1, {C}]]}}"#), "format.rules[0][0]", "dispatch", "rules", "TagDispatch pair first element must be a string");
    check(&format!(r#"{{"type": "dispatch", "rules": [["a", {C}]], "loop": 1}}"#), "format.loop", "dispatch", "loop", "loop must be a boolean");
    check(&format!(r#"{{"type": "dispatch", "rules": [["a", {C}]], "excludes": "b"}}"#), "format.excludes", "dispatch", "excludes", "must be an array");
    check(&format!(r#"{{"type": "dispatch", "rules": [["a", {C}]], "excludes": [""]}}"#), "format.excludes[0]", "dispatch", "excludes", "non-empty strings");
    // Checks the reference misses.
    check(&format!(r#"{{"type": "dispatch", "rules": [["", {C}]]}}"#), "format.rules[0][0]", "dispatch", "rules", "a dispatch pattern must be a non-empty string");
    check(&format!(r#"{{"type": "dispatch", "rules": [["<tool>", {C}]], "excludes": ["<to"]}}"#), "format.excludes[0]", "dispatch", "excludes", "occurs inside the trigger");
    check(&format!(r#"{{"type": "dispatch", "rules": [["<a>", {C}], ["<a>", {C}]]}}"#), "format.rules[1]", "dispatch", "rules", "listed twice");
    check(r#"{"type": "dispatch", "rules": [["<a>", {"type": "regex", "pattern": ")"}]]}"#, "format.rules[0][1].pattern", "regex", "pattern", "regex error");
}

#[test]
fn tokens() {
    check(r#"{"type": "token"}"#, "format.token", "token", "token", "TokenFormat must have a token field");
    check(r#"{"type": "token", "token": 1.5}"#, "format.token", "token", "token", "Token ID must be an integer");
    check(r#"{"type": "token", "token": -1}"#, "format.token", "token", "token", "Token ID must be non-negative");
    check(r#"{"type": "token", "token": ""}"#, "format.token", "token", "token", "Token string must be non-empty");
    check(r#"{"type": "token", "token": [1]}"#, "format.token", "token", "token", "must be a token id (integer) or a token string");
    check(r#"{"type": "token", "token": "<nope>"}"#, "format.token", "token", "token", "Token string \"<nope>\" not found in vocabulary");
    let e = compile_str(&wrap(r#"{"type": "token", "token": "<tk>"}"#), None, &Options::default()).unwrap_err();
    assert_eq!((e.kind, e.path.as_str()), (ErrorKind::Token, "format.token"));
    assert!(e.message.contains("Token string resolution requires tokenizer_info"), "{e}");
    check(r#"{"type": "exclude_token", "exclude_tokens": 3}"#, "format.exclude_tokens", "exclude_token", "exclude_tokens", "exclude_tokens must be an array");
    check(r#"{"type": "exclude_token", "exclude_tokens": [1, 2.5]}"#, "format.exclude_tokens[1]", "exclude_token", "exclude_tokens", "must be an integer, not a float");
    check(r#"{"type": "any_tokens", "exclude_tokens": [-4]}"#, "format.exclude_tokens[0]", "any_tokens", "exclude_tokens", "non-negative");
    check(r#"{"type": "any_tokens", "exclude_tokens": [""]}"#, "format.exclude_tokens[0]", "any_tokens", "exclude_tokens", "non-empty");
    check(r#"{"type": "any_tokens", "exclude_tokens": [null]}"#, "format.exclude_tokens[0]", "any_tokens", "exclude_tokens", "token id (integer) or a token string");
    check(r#"{"type": "tag", "begin": {"type": "token", "token": "<x>"}, "content": {"type": "any_text"}, "end": "a"}"#, "format.begin.token", "token", "token", "not found in vocabulary");
}

#[test]
fn token_triggered_tags_and_token_dispatch() {
    let tag = r#"{"begin": {"type": "token", "token": "<call>"}, "content": {"type": "const_string", "value": "x"}, "end": {"type": "token", "token": "<end>"}}"#;
    let ttt = |rest: &str| format!(r#"{{"type": "token_triggered_tags", {rest}}}"#);
    check(&ttt(&format!(r#""tags": [{tag}]"#)), "format.trigger_tokens", "token_triggered_tags", "trigger_tokens", "TokenTriggeredTagsFormat must have a trigger_tokens field");
    check(&ttt(&format!(r#""trigger_tokens": [], "tags": [{tag}]"#)), "format.trigger_tokens", "token_triggered_tags", "trigger_tokens", "trigger_tokens must be non-empty");
    check(&ttt(r#""trigger_tokens": ["<call>"]"#), "format.tags", "token_triggered_tags", "tags", "TokenTriggeredTagsFormat must have a tags field with an array");
    check(&ttt(r#""trigger_tokens": ["<call>"], "tags": []"#), "format.tags", "token_triggered_tags", "tags", "TokenTriggeredTagsFormat's tags must be non-empty");
    check(&ttt(r#""trigger_tokens": ["<call>"], "tags": [{"begin": "<call>", "content": {"type": "any_text"}, "end": "x"}]"#), "format.tags[0].begin", "token_triggered_tags", "tags", "Tags in token_triggered_tags must have a token format begin, not a string");
    check(&ttt(&format!(r#""trigger_tokens": ["<tk>"], "tags": [{tag}]"#)), "format.tags[0].begin", "token_triggered_tags", "tags", "Tag does not match any trigger");
    check(&ttt(&format!(r#""trigger_tokens": ["<call>", 259], "tags": [{tag}]"#)), "format.trigger_tokens", "token_triggered_tags", "trigger_tokens", "Tag matches multiple triggers");
    check(&ttt(&format!(r#""trigger_tokens": ["<call>"], "tags": [{tag}], "exclude_tokens": [259]"#)), "format.exclude_tokens", "token_triggered_tags", "exclude_tokens", "also excluded");
    check(r#"{"type": "token_dispatch"}"#, "format.rules", "token_dispatch", "rules", "TokenTagDispatch format must have a rules field with an array");
    check(r#"{"type": "token_dispatch", "rules": []}"#, "format.rules", "token_dispatch", "rules", "TokenTagDispatch format rules must be non-empty");
    check(r#"{"type": "token_dispatch", "rules": [[1]]}"#, "format.rules[0]", "token_dispatch", "rules", "TokenTagDispatch pair must be a 2-element array");
    check(&format!(r#"{{"type": "token_dispatch", "rules": [[1.5, {C}]]}}"#), "format.rules[0][0]", "token_dispatch", "rules", "Token ID must be an integer");
    check(&format!(r#"{{"type": "token_dispatch", "rules": [[null, {C}]]}}"#), "format.rules[0][0]", "token_dispatch", "rules", "TokenTagDispatch pair first element must be an integer or string");
    // Checks the reference misses: negative ids, duplicates, dispatch ids that are excluded.
    check(&format!(r#"{{"type": "token_dispatch", "rules": [[-3, {C}]]}}"#), "format.rules[0][0]", "token_dispatch", "rules", "Token ID must be non-negative");
    check(&format!(r#"{{"type": "token_dispatch", "rules": [[5, {C}], [5, {C}]]}}"#), "format.rules[1][0]", "token_dispatch", "rules", "dispatched twice");
    check(&format!(r#"{{"type": "token_dispatch", "rules": [[5, {C}]], "exclude_tokens": [5]}}"#), "format.rules[0][0]", "token_dispatch", "rules", "both a dispatch token and excluded");
}

#[test]
fn hostile_inputs_hit_limits() {
    // Deep nesting.
    let mut f = ANY.to_string();
    for _ in 0..400 {
        f = format!(r#"{{"type": "optional", "content": {f}}}"#);
    }
    let e = err(&wrap(&f));
    assert_eq!(e.kind, ErrorKind::Limit, "{e}");
    assert!(e.message.contains("nested more than"), "{e}");
    // Huge repeat counts.
    let e = err(&wrap(&format!(r#"{{"type": "repeat", "min": 2000000, "max": -1, "content": {C}}}"#)));
    assert_eq!((e.kind, e.path.as_str()), (ErrorKind::Limit, "format.min"), "{e}");
    let e = err(&wrap(&format!(r#"{{"type": "repeat", "min": 0, "max": 1000, "content": {{"type": "repeat", "min": 0, "max": 1000, "content": {C}}}}}"#)));
    assert_eq!((e.kind, e.path.as_str()), (ErrorKind::Limit, "format.content.max"), "{e}");
    assert!(e.message.contains("1000000 copies"), "{e}");
    let e = err(&wrap(r#"{"type": "any_text", "max_chars": 2000000}"#));
    assert_eq!((e.kind, e.path.as_str()), (ErrorKind::Limit, "format.max_chars"), "{e}");
    let e = err(&wrap(r#"{"type": "any_tokens", "max_tokens": 2000000}"#));
    assert_eq!((e.kind, e.path.as_str()), (ErrorKind::Limit, "format.max_tokens"), "{e}");
}

#[test]
fn json_schema_excludes_that_cannot_be_enforced_everywhere() {
    let s = r#""json_schema": {"type": "object"}"#;
    check(&format!(r#"{{"type": "json_schema", {s}, "style": "minimax_m3_xml", "excludes": ["x"]}}"#), "format.excludes", "json_schema", "excludes", "JSONSchemaFormat.excludes is not supported for minimax_m3_xml");
    check(&format!(r#"{{"type": "json_schema", {s}, "style": "qwen_xml", "excludes": ["ok", "x\n"]}}"#), "format.excludes[1]", "json_schema", "excludes", "XML JSONSchemaFormat.excludes must not start or end with formatting whitespace");
    // Removed from strings only, an exclude must not be able to occur
    // elsewhere: across a string's quotes (a key and its value)...
    check(&format!(r#"{{"type": "json_schema", {s}, "excludes": ["a\": \"b"]}}"#), "format.excludes[0]", "json_schema", "excludes", "could span the quotes of a JSON string");
    // ...or in whitespace, punctuation, numbers and literals.
    for x in ["\\n\\n", "true", "1.5e3", "}, "] {
        check(&format!(r#"{{"type": "json_schema", {s}, "excludes": ["{x}"]}}"#), "format.excludes[0]", "json_schema", "excludes", "could occur outside JSON strings");
    }
    // A required property the excludes make impossible.
    let e = err(&wrap(r#"{"type": "json_schema", "json_schema": {"type": "object", "properties": {"bad": {}}, "required": ["bad"]}, "excludes": ["bad"]}"#));
    assert_eq!((e.path.as_str(), e.field.as_str()), ("format.json_schema", "json_schema"), "{e}");
    assert!(e.message.contains("unsatisfiable"), "{e}");
}


#[test]
fn lark_format() {
    let ok = compile_str(&wrap(r#"{"type": "lark", "grammar": "start: \"a\" NUM\nNUM: /[0-9]+/"}"#), None, &Options::default());
    assert!(ok.is_ok(), "{:?}", ok.err());
    check(r#"{"type": "lark", "grammar": "start: x"}"#, "format.grammar", "lark", "grammar", "undefined rule 'x'");
    check(r#"{"type": "lark", "grammar": ""}"#, "format.grammar", "lark", "grammar", "Lark format must have a grammar field");
    check(r#"{"type": "lark", "grammar": "start: \"a\"", "x": 1}"#, "format.x", "lark", "x", "unknown field 'x'");
}
