//! JSON Schema → grammar → engine, driven byte by byte.

use std::sync::Arc;

use formcast_engine::{Budget, CompileOptions, CompiledGrammar, Matcher, VocabIndex};
use formcast_jsonschema::{json_schema_str_to_grammar, SchemaError, SchemaOptions, Style, Whitespace};
use formcast_tokenizer::{Vocab, VocabKind};

fn vocab() -> Arc<VocabIndex> {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    tokens.push(b"<eos>".to_vec());
    let v = Vocab { tokens, special: vec![256], stop: vec![256], logits_size: 257, kind: VocabKind::Raw };
    Arc::new(VocabIndex::new(&v).unwrap())
}

struct G {
    cg: Arc<CompiledGrammar>,
}

impl G {
    fn new(schema: &str, opts: &SchemaOptions) -> G {
        let (g, _) = json_schema_str_to_grammar(schema, opts).unwrap_or_else(|e| panic!("{schema}: {e}"));
        let cg = CompiledGrammar::compile(&g, vocab(), &CompileOptions::default(), &Budget::unlimited()).unwrap();
        G { cg: Arc::new(cg) }
    }

    fn compact(schema: &str) -> G {
        G::new(schema, &compact(true))
    }

    fn accepts(&self, text: &str) -> bool {
        let mut m = Matcher::new(self.cg.clone(), false, None).unwrap();
        m.accept_bytes(text.as_bytes()).unwrap() && m.can_end()
    }

    fn check(&self, yes: &[&str], no: &[&str]) {
        for t in yes {
            assert!(self.accepts(t), "should accept {t}");
        }
        for t in no {
            assert!(!self.accepts(t), "should reject {t}");
        }
    }
}

fn compact(strict: bool) -> SchemaOptions {
    SchemaOptions { whitespace: Whitespace::Compact, strict, ..Default::default() }
}

fn err(schema: &str, opts: &SchemaOptions) -> SchemaError {
    json_schema_str_to_grammar(schema, opts).err().unwrap_or_else(|| panic!("{schema} should be refused"))
}

#[test]
fn integer_ranges_are_exact() {
    let g = G::compact(r##"{"type": "integer", "minimum": -15, "exclusiveMaximum": 1024}"##);
    g.check(&["-15", "0", "7", "1023", "999"], &["-16", "1024", "1025", "-0", "007", "1.5", "1e2"]);
    let g = G::compact(r##"{"type": "integer", "minimum": 12345678901234567890123}"##);
    g.check(&["12345678901234567890123", "99999999999999999999999", "123456789012345678901234"], &["12345678901234567890122", "1"]);
}

#[test]
fn number_ranges_with_fractions_are_exact() {
    let g = G::compact(r##"{"type": "number", "exclusiveMinimum": 0, "maximum": 1.5}"##);
    g.check(&["0.001", "1", "1.5", "1.499", "0.5"], &["0", "-0.1", "1.5001", "2", "1.50"]);
    let g = G::compact(r##"{"type": "number", "multipleOf": 0.01, "minimum": -1}"##);
    g.check(&["19.99", "-1", "-0.99", "3"], &["19.999", "-1.01", "0.001"]);
    // Unconstrained numbers keep the full JSON syntax.
    G::compact(r##"{"type": "number"}"##).check(&["1.0", "-0", "1e-7", "2.5E+3"], &["01", ".5", "1."]);
}

#[test]
fn large_bounds_do_not_grow_the_automaton() {
    // Compile cost follows automaton size; speed itself is measured by the
    // benchmarks (benchmarks/engine_bench.py), not asserted here.
    let states = |n: u32| G::compact(&format!(r##"{{"type": "string", "maxLength": {n}}}"##)).cg.automaton.n_states();
    let (n3, n5) = (states(1000), states(100_000));
    // Counted repetition grows with the number of digits, not the bound.
    assert!(n5 <= 2 * n3, "maxLength 1000 -> {n3} states, 100000 -> {n5}");
    let g = G::compact(r##"{"type": "string", "maxLength": 10000}"##);
    let mut s = String::from("\"");
    s.push_str(&"ab\\n".repeat(3333));
    s.push_str("x\"");
    assert!(g.accepts(&s), "10000 characters, escapes counted once");
    assert!(!g.accepts(&format!("\"{}\"", "a".repeat(10001))));
    let g2 = G::compact(r##"{"type": "integer", "minimum": -1e300, "maximum": 1e300}"##);
    assert!(g2.accepts(&"9".repeat(300)) && !g2.accepts(&format!("1{}", "0".repeat(301))));
    // Exact ranges need states per digit (300 here), never per value.
    let n_wide = g2.cg.automaton.n_states();
    assert!(n_wide <= 10 * 300, "range ±1e300 -> {n_wide} states");
}

#[test]
fn lengths_count_characters() {
    let g = G::compact(r##"{"type": "string", "minLength": 2, "maxLength": 3}"##);
    g.check(&[r##""ab""##, r##""a\n""##, r##""💩💩""##, r##""é\"x""##], &[r##""a""##, r##""💩""##, r##""abcd""##]);
}

#[test]
fn patterns_are_unanchored_and_ecma() {
    let g = G::compact(r##"{"type": "string", "pattern": "a[0-9]"}"##);
    g.check(&[r##""xa1y""##, r##""a9""##], &[r##""ab""##, r##""""##]);
    let g = G::compact(r##"{"type": "string", "pattern": "^\\d+$"}"##);
    g.check(&[r##""123""##], &[r##""١٢""##, r##""12a""##]);
}

#[test]
fn formats_are_enforced() {
    let g = G::compact(r##"{"type": "string", "format": "date"}"##);
    g.check(&[r##""2020-02-29""##], &[r##""2021-02-29""##, r##""2020-13-01""##]);
    let g = G::compact(r##"{"type": "string", "format": "date-time"}"##);
    g.check(&[r##""1998-12-31T23:59:60Z""##, r##""1998-12-31T15:59:60.123-08:00""##], &[r##""1998-12-31T23:58:60Z""##]);
    let g = G::compact(r##"{"type": "string", "format": "ipv4"}"##);
    g.check(&[r##""192.168.0.1""##], &[r##""256.1.1.1""##, r##""01.1.1.1""##]);
}

#[test]
fn objects_properties_and_additional() {
    let s = r##"{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"], "additionalProperties": {"type": "boolean"}}"##;
    let g = G::new(s, &compact(false));
    g.check(&[r##"{"a":1}"##, r##"{"a":1,"b":"x"}"##, r##"{"a":1,"zz":true}"##, r##"{"a":1,"b":"x","c":false,"d":true}"##], &[r##"{}"##, r##"{"b":"x"}"##, r##"{"a":1,"zz":1}"##, r##"{"a":1,"a":2}"##, r##"{"a":1,"b":1}"##]);
    // Strict mode: undeclared properties are out unless allowed.
    let g = G::compact(r##"{"type": "object", "properties": {"a": {"type": "integer"}}}"##);
    g.check(&[r##"{}"##, r##"{"a":1}"##], &[r##"{"b":1}"##]);
    // Pattern properties and property names.
    let g = G::new(r##"{"patternProperties": {"^x_": {"type": "integer"}}, "propertyNames": {"maxLength": 3}, "additionalProperties": false}"##, &compact(false));
    g.check(&[r##"{"x_a":1}"##, r##"{}"##], &[r##"{"x_ab":1}"##, r##"{"y":1}"##, r##"{"x_a":"s"}"##]);
}

#[test]
fn dependencies_and_counts() {
    let g = G::new(r##"{"dependentRequired": {"a": ["b"]}, "maxProperties": 2}"##, &compact(false));
    g.check(&[r##"{"b":1}"##, r##"{"a":1,"b":2}"##, r##"{"x":1,"y":2}"##], &[r##"{"a":1}"##, r##"{"a":1,"b":2,"c":3}"##]);
    let g = G::new(r##"{"dependentSchemas": {"a": {"required": ["c"]}}}"##, &compact(false));
    g.check(&[r##"{"a":1,"c":2}"##, r##"{"c":2}"##], &[r##"{"a":1}"##]);
}

#[test]
fn combinators_are_exact() {
    // oneOf with overlapping branches: exactly one must hold.
    let g = G::compact(r##"{"oneOf": [{"type": "integer"}, {"minimum": 2}]}"##);
    g.check(&["1", "2.5", "-3"], &["2", "3", "1.5"]);
    let g = G::compact(r##"{"not": {"type": ["string", "null"]}}"##);
    g.check(&["1", "true", "[]"], &["\"a\"", "null"]);
    let g = G::compact(r##"{"if": {"minimum": 10}, "then": {"multipleOf": 5}, "else": {"maximum": 3}}"##);
    g.check(&["10", "15", "3", "\"s\""], &["11", "4"]);
    let g = G::compact(r##"{"allOf": [{"properties": {"a": {"minimum": 0}}}, {"properties": {"a": {"maximum": 9}}, "required": ["a"]}]}"##);
    g.check(&[r##"{"a":5}"##], &[r##"{"a":10}"##, r##"{}"##]);
}

#[test]
fn recursive_refs() {
    let s = r##"{"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}}, "required": ["v"]}}, "$ref": "#/$defs/node"}"##;
    let g = G::compact(s);
    g.check(&[r##"{"v":1}"##, r##"{"v":1,"next":{"v":2,"next":{"v":3}}}"##], &[r##"{"v":1,"next":{}}"##]);
    let e = err(r##"{"$ref": "#"}"##, &compact(true));
    assert!(e.to_string().contains("infinite recursion"), "{e}");
}

#[test]
fn unique_items_finite_or_refused() {
    let g = G::compact(r##"{"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": true}"##);
    g.check(&[r##"[]"##, r##"["a","c"]"##, r##"["c","b","a"]"##], &[r##"["a","a"]"##, r##"["a","b","a"]"##]);
    let e = err(r##"{"properties": {"tags": {"type": "array", "uniqueItems": true}}}"##, &compact(true));
    let msg = e.to_string();
    assert!(msg.contains("'uniqueItems'") && msg.contains("/properties/tags") && msg.contains("not finite"), "{msg}");
}

#[test]
fn lenient_mode_reports_what_it_drops() {
    let opts = SchemaOptions { lenient: true, ..compact(true) };
    let (_, warnings) = json_schema_str_to_grammar(r##"{"properties": {"tags": {"type": "array", "uniqueItems": true}}}"##, &opts).unwrap();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].keyword, "uniqueItems");
    assert_eq!(warnings[0].pointer, "/properties/tags/uniqueItems");
}

#[test]
fn remote_refs_are_refused() {
    let e = err(r##"{"$ref": "http://example.com/other.json"}"##, &compact(true));
    assert!(matches!(e, SchemaError::Reference { .. }), "{e}");
}

#[test]
fn unsatisfiable_schemas() {
    assert_eq!(err("false", &compact(true)), SchemaError::Unsatisfiable);
    assert_eq!(err(r##"{"type": "integer", "minimum": 5, "maximum": 4}"##, &compact(true)), SchemaError::Unsatisfiable);
}

#[test]
fn whitespace_is_bounded_and_dumps_layout_is_exact() {
    let g = G::new(r##"{"type": "array", "items": {"type": "integer"}}"##, &SchemaOptions { whitespace: Whitespace::Any { max_per_gap: 3 }, ..Default::default() });
    g.check(&["[1, 2]", "[\n 1,\n 2\n]", "[1,2]"], &["[1,    2]"]);
    let s = r##"{"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}, "b": {"type": "object"}}, "required": ["a", "b"]}"##;
    let g = G::new(s, &SchemaOptions { whitespace: Whitespace::dumps(Some(2)), ..Default::default() });
    g.check(&["{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}", "{\n  \"a\": [],\n  \"b\": {}\n}"], &["{\"a\": [1, 2], \"b\": {}}"]);
    let g = G::new(s, &SchemaOptions { whitespace: Whitespace::dumps(None), ..Default::default() });
    g.check(&["{\"a\": [1, 2], \"b\": {}}"], &["{\"a\":[1,2],\"b\":{}}"]);
}

#[test]
fn any_order_tracks_required() {
    let s = r##"{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["a", "c"]}"##;
    let g = G::new(s, &SchemaOptions { any_order: true, ..compact(true) });
    g.check(&[r##"{"c":1,"a":2}"##, r##"{"b":0,"c":1,"a":2}"##, r##"{"a":1,"c":2}"##], &[r##"{"b":1,"a":2}"##, r##"{"a":1,"c":2,"a":3}"##]);
}

#[test]
fn any_order_counts_properties_or_is_refused() {
    let any = |lenient: bool| SchemaOptions { any_order: true, lenient, ..compact(true) };
    // minProperties/maxProperties are counted in any order, undeclared
    // keys included.
    let s = r##"{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["c"], "minProperties": 2, "maxProperties": 3, "additionalProperties": {"type": "boolean"}}"##;
    let g = G::new(s, &any(false));
    g.check(
        &[r##"{"c":1,"a":2}"##, r##"{"b":0,"c":1}"##, r##"{"x":true,"c":1}"##, r##"{"b":0,"x":true,"c":1}"##],
        &[r##"{"c":1}"##, r##"{"a":1,"b":2,"c":3,"x":true}"##, r##"{"a":1,"b":2}"##, r##"{"c":1,"c":2}"##],
    );
    // Without undeclared keys, a maximum of at least n bounds nothing.
    let s = r##"{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "minProperties": 1, "maxProperties": 5}"##;
    G::new(s, &any(false)).check(&[r##"{"b":1}"##, r##"{"b":1,"a":2}"##], &["{}"]);
    // What cannot be tracked is an error naming the option, or in lenient
    // mode a warning that says what was done instead.
    let props: Vec<String> = (0..12).map(|i| format!(r##""p{i}": {{"type": "integer"}}"##)).collect();
    let wide = format!(r##"{{"type": "object", "properties": {{{}}}}}"##, props.join(","));
    let e = err(&wide, &any(false));
    assert!(matches!(&e, SchemaError::UnsupportedOption { option, .. } if option == "any_order"), "{e}");
    assert!(e.to_string().contains("declares 12"), "{e}");
    let (_, warnings) = json_schema_str_to_grammar(&wide, &any(true)).unwrap();
    assert!(warnings.iter().any(|w| w.keyword == "any_order" && w.message.contains("schema order")), "{warnings:?}");
    let many = r##"{"type": "object", "properties": {"a": {}, "b": {}, "c": {}, "d": {}, "e": {}, "f": {}, "g": {}, "h": {}, "i": {}, "j": {}}, "additionalProperties": {"type": "integer"}, "maxProperties": 900}"##;
    assert!(matches!(err(many, &any(false)), SchemaError::UnsupportedOption { .. }));
}

fn style(s: Style) -> SchemaOptions {
    SchemaOptions { style: s, ..Default::default() }
}

#[test]
fn xml_styles_match_the_reference_examples() {
    let weather = r##"{"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}"##;
    let cases: &[(Style, &[&str], &[&str])] = &[
        (Style::QwenXml, &["<parameter=city>\nParis\n</parameter>", "<parameter=city>Paris</parameter>\n<parameter=days> 3 </parameter>"], &["<parameter=days>3</parameter>", "<parameter=city>a</parameter>b</parameter>"]),
        (Style::MinimaxXml, &["<parameter name=\"city\">Paris</parameter>"], &["<parameter=city>Paris</parameter>"]),
        (Style::MinimaxM3Xml, &["]<]minimax[>[<city>Paris]<]minimax[>[</city>"], &["<city>Paris</city>"]),
        (Style::DeepseekXml, &["<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>"], &["<｜DSML｜parameter name=\"city\" string=\"false\">Paris</｜DSML｜parameter>"]),
        (Style::DeepseekV41Xml, &["<｜DSML｜ parameter name=\"city\" string=\"true\">Paris</｜DSML｜ parameter>"], &[]),
        (Style::GlmXml, &["<arg_key>city</arg_key><arg_value>Paris</arg_value>", "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>2</arg_value>"], &[]),
        (Style::CohereXml, &["<cofl:value name=\"city\" type=\"raw\">Paris</cofl:value>", "<cofl:value name=\"city\" type=\"raw\">P</cofl:value><cofl:value name=\"days\" type=\"json\">2</cofl:value>"], &["<cofl:value name=\"city\" type=\"json\">Paris</cofl:value>"]),
        (Style::KimiK3Xml, &["<|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|>", "<|open|>argument key=\"city\" type=\"string\"<|sep|>P<|close|>argument<|sep|><|open|>argument key=\"days\" type=\"number\"<|sep|>2<|close|>argument<|sep|>"], &["<|open|>argument key=\"city\" type=\"number\"<|sep|>2<|close|>argument<|sep|>"]),
    ];
    for (st, yes, no) in cases {
        let g = G::new(weather, &style(*st));
        for t in *yes {
            assert!(g.accepts(t), "{st:?} should accept {t:?}");
        }
        for t in *no {
            assert!(!g.accepts(t), "{st:?} should reject {t:?}");
        }
    }
}

#[test]
fn xml_nested_values() {
    let s = r##"{"type": "object", "properties": {"p": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}, "l": {"type": "array", "items": {"type": "string"}}}, "required": ["p"]}"##;
    let g = G::new(s, &style(Style::QwenXml));
    g.check(&["<parameter=p>{\"x\": 1}</parameter>"], &["<parameter=p>{}</parameter>"]);
    let g = G::new(s, &style(Style::MinimaxM3Xml));
    g.check(&["]<]minimax[>[<p>]<]minimax[>[<x>1]<]minimax[>[</x>]<]minimax[>[</p>]<]minimax[>[<l>]<]minimax[>[<item>a]<]minimax[>[</item>]<]minimax[>[</l>"], &[]);
    let g = G::new(s, &style(Style::CohereXml));
    g.check(&["<cofl:value name=\"p\" type=\"dict\"><cofl:value name=\"x\" type=\"json\">1</cofl:value></cofl:value><cofl:value name=\"l\" type=\"list\"><cofl:value type=\"raw\">a</cofl:value></cofl:value>"], &[]);
    assert!(json_schema_str_to_grammar(r##"{"type": "integer"}"##, &style(Style::QwenXml)).is_err());
}

#[test]
fn xml_styles_lower_recursive_schemas_to_recursive_rules() {
    // A schema that refers to itself once recursed without end in the
    // styles that write objects and arrays as elements (a stack overflow).
    let tree = r##"{"type": "object", "properties": {"name": {"type": "string"}, "child": {"$ref": "#"}, "kids": {"type": "array", "items": {"$ref": "#"}}}}"##;
    let g = G::new(tree, &style(Style::CohereXml));
    let leaf = "<cofl:value name=\"name\" type=\"raw\">a</cofl:value>";
    let nested = format!("<cofl:value name=\"child\" type=\"dict\"><cofl:value name=\"child\" type=\"dict\">{leaf}</cofl:value></cofl:value>");
    let listed = format!("<cofl:value name=\"kids\" type=\"list\"><cofl:value type=\"dict\">{leaf}</cofl:value><cofl:value type=\"dict\"></cofl:value></cofl:value>");
    g.check(&[leaf, &nested, &listed, ""], &["<cofl:value name=\"child\" type=\"raw\">a</cofl:value>"]);
    let g = G::new(tree, &style(Style::MinimaxM3Xml));
    let ns = "]<]minimax[>[";
    let deep = format!("{ns}<child>{ns}<child>{ns}<name>x{ns}</name>{ns}</child>{ns}</child>{ns}<kids>{ns}<item>{ns}<name>y{ns}</name>{ns}</item>{ns}</kids>");
    g.check(&[&deep], &[&format!("{ns}<child>{ns}<name>x{ns}</child>")]);
    // Every other style writes nested values as JSON, already by rule.
    for st in [Style::QwenXml, Style::MinimaxXml, Style::DeepseekXml, Style::DeepseekV41Xml, Style::GlmXml, Style::KimiK3Xml] {
        json_schema_str_to_grammar(tree, &style(st)).unwrap_or_else(|e| panic!("{st:?}: {e}"));
    }
}

#[test]
fn kimi_k3_escapes_key_attributes_and_types_free_form_keys() {
    let g = G::new(r##"{"type": "object", "properties": {"we\"ird&key": {"type": "string"}}, "required": ["we\"ird&key"]}"##, &style(Style::KimiK3Xml));
    let arg = |key: &str, ty: &str, v: &str| format!("<|open|>argument key=\"{key}\" type=\"{ty}\"<|sep|>{v}<|close|>argument<|sep|>");
    g.check(&[&arg("we&quot;ird&amp;key", "string", "x")], &[&arg("we\"ird&key", "string", "x")]);
    // Free-form keys take any type name, "integer" for integral values.
    let g = G::new(r##"{"type": "object"}"##, &style(Style::KimiK3Xml));
    g.check(
        &[&arg("a", "integer", "1"), &arg("a", "number", "1.5"), &arg("a", "string", "s"), &arg("a", "null", "null")],
        &[&arg("a", "integer", "1.5"), &arg("a", "float", "1")],
    );
    // A declared number's attribute stays "number".
    let g = G::new(r##"{"type": "object", "properties": {"n": {"type": "integer"}}}"##, &style(Style::KimiK3Xml));
    g.check(&[&arg("n", "number", "3")], &[&arg("n", "integer", "3")]);
}

#[test]
fn giant_schemas_compile_or_fail_cleanly() {
    // 3000 definitions chained by $ref.
    let mut defs = Vec::new();
    for i in 0..3000 {
        defs.push(format!(r##""d{i}": {{"type": "object", "properties": {{"v": {{"type": "integer"}}, "n": {{"$ref": "#/$defs/d{}"}}}}}}"##, (i + 1) % 3000));
    }
    let s = format!(r##"{{"$defs": {{{}}}, "$ref": "#/$defs/d0"}}"##, defs.join(","));
    let (g, _) = json_schema_str_to_grammar(&s, &compact(true)).unwrap();
    assert!(g.rules.len() >= 3000);
    // A budget too small fails with a limit error, not a hang.
    let tight = SchemaOptions { max_nodes: 100, ..compact(true) };
    assert!(matches!(json_schema_str_to_grammar(&s, &tight), Err(SchemaError::Limit { .. })));
}

mod undeclared_keys {
    use super::*;
    use proptest::prelude::*;

    /// Names over a small alphabet that shares prefixes, with the
    /// characters a key complement treats apart: `"`, `\`, a control
    /// character and a multi-byte one.
    fn name() -> impl Strategy<Value = String> {
        proptest::collection::vec(prop_oneof![Just('a'), Just('b'), Just('"'), Just('\\'), Just('\n'), Just('é'), Just('~')], 0..4).prop_map(|v| v.into_iter().collect())
    }

    fn json_string(s: &str) -> String {
        let mut out = String::new();
        formcast_jsonschema::json::write_string(s, &mut out);
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// A declared key takes its declared value and every other key the
        /// additional one: the complement of the declared names is exact
        /// (prefixes, extensions, escapes and multi-byte characters).
        /// Checked in both of its forms: one trie whose continuations are
        /// inline rules, and, in text that must avoid excluded strings
        /// (rules expanded in place there), three copies of the trie.
        #[test]
        fn only_undeclared_keys_take_the_additional_schema(declared in proptest::collection::btree_set(name(), 1..6), probes in proptest::collection::vec(name(), 1..8)) {
            let props: Vec<String> = declared.iter().map(|n| format!("{}: {{\"const\": 0}}", json_string(n))).collect();
            let schema = format!("{{\"type\": \"object\", \"properties\": {{{}}}, \"additionalProperties\": {{\"const\": 1}}, \"maxProperties\": 1}}", props.join(", "));
            let avoiding = SchemaOptions { excludes: vec!["<|end|>".into()], ..compact(true) };
            for g in [G::compact(&schema), G::new(&schema, &avoiding)] {
                for key in declared.iter().chain(&probes) {
                    let (right, wrong) = if declared.contains(key) { (0, 1) } else { (1, 0) };
                    let k = json_string(key);
                    prop_assert!(g.accepts(&format!("{{{k}:{right}}}")), "{} should take {} in {}", k, right, schema);
                    prop_assert!(!g.accepts(&format!("{{{k}:{wrong}}}")), "{} should not take {} in {}", k, wrong, schema);
                }
            }
        }
    }
}

/// A key outside a bounded pattern leaves the pattern's automaton to "any
/// other string" from every one of its states, on the same characters
/// (escapes, multi-byte UTF-8): those moves are built once, not once per
/// state (o9962's `^[0-9a-zA-Z_-]{1,255}$` took 6,426 automaton states), and
/// keys on either side of the pattern still go where they belong.
#[test]
fn leaving_a_bounded_key_pattern_is_built_once() {
    let schema = r##"{"type": "object", "patternProperties": {"^[a-z]{1,64}$": {"type": "integer"}}, "additionalProperties": {"type": "boolean"}}"##;
    let g = G::new(schema, &compact(false));
    let states = g.cg.automaton.n_states();
    assert!(states < 600, "{states} states for a 64-character key pattern (1,818 when built per state)");
    let long = "a".repeat(64);
    g.check(
        &[r#"{"abc":1}"#, &format!(r#"{{"{long}":2}}"#), &format!(r#"{{"{long}b":true}}"#), r#"{"a\n":false}"#, r#"{"é":true}"#, r#"{"ab\u001f":true}"#, r#"{"":true}"#, r#"{"x1":false,"y":3}"#],
        &[r#"{"abc":true}"#, &format!(r#"{{"{long}b":2}}"#), r#"{"a\n":1}"#, r#"{"é":1}"#, r#"{"":1}"#],
    );
}

/// Equal subschemas in one resource are one schema (built once), whatever
/// their annotations; equal subschemas in different resources are not,
/// since their `$ref`s resolve against different bases. Only a schema's own
/// annotation keywords are set aside: a property named `description`, or
/// an `x-` key inside an `enum` value, is not an annotation.
#[test]
fn equal_subschemas_are_one_schema_only_within_a_resource() {
    let schema = r##"{
        "$defs": {
            "A": {"$id": "https://example.com/a.json", "$defs": {"v": {"type": "integer"}}, "properties": {"p": {"$ref": "#/$defs/v"}}},
            "B": {"$id": "https://example.com/b.json", "$defs": {"v": {"type": "string"}}, "properties": {"p": {"$ref": "#/$defs/v"}}}
        },
        "properties": {
            "a": {"$ref": "https://example.com/a.json"}, "b": {"$ref": "https://example.com/b.json"},
            "c": {"type": "array", "items": {"properties": {"q": {"enum": [1, 2]}}}},
            "d": {"type": "array", "description": "the same as c", "x-note": 1, "items": {"title": "q", "properties": {"q": {"enum": [1, 2]}}}},
            "e": {"properties": {"description": {"type": "integer"}}},
            "f": {"properties": {"description": {"type": "string"}}},
            "g": {"enum": [{"x-k": 1}]},
            "h": {"enum": [{"x-k": 2}]}
        }
    }"##;
    let g = G::compact(schema);
    g.check(
        &[r#"{"a":{"p":1},"b":{"p":"x"}}"#, r#"{"c":[{"q":1}],"d":[{"q":2}]}"#, r#"{"e":{"description":1},"f":{"description":"x"}}"#, r#"{"g":{"x-k":1},"h":{"x-k":2}}"#],
        &[r#"{"a":{"p":"x"}}"#, r#"{"b":{"p":1}}"#, r#"{"d":[{"q":3}]}"#, r#"{"f":{"description":1}}"#, r#"{"e":{"description":"x"}}"#, r#"{"h":{"x-k":1}}"#],
    );
}

/// Lenient mode names every location it drops something at, equal
/// subschemas included.
#[test]
fn lenient_mode_reports_each_equal_subschema() {
    let opts = SchemaOptions { lenient: true, ..compact(true) };
    let tags = r#"{"type": "array", "uniqueItems": true}"#;
    let (_, warnings) = json_schema_str_to_grammar(&format!(r#"{{"properties": {{"tags": {tags}, "labels": {tags}}}}}"#), &opts).unwrap();
    let mut at: Vec<&str> = warnings.iter().map(|w| w.pointer.as_str()).collect();
    at.sort();
    assert_eq!(at, ["/properties/labels/uniqueItems", "/properties/tags/uniqueItems"]);
}

/// JSON text of a key (the strings below need no escapes but `"`, `\` and a newline).
fn key_text(k: &str) -> String {
    let mut out = String::from("\"");
    for c in k.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// Declared names spelled with printable ASCII only (the engine's trie
    /// of words; the test above mostly meets names spelled as an
    /// expression): a declared name takes its own schema's value, any other
    /// key the additional one's. The characters sit at the edges of the
    /// ranges a trie node is left by (space, `!`, `#`, `[`, `]`, `~`).
    #[test]
    fn undeclared_keys_around_printable_names(
        names in proptest::collection::btree_set("[ab!#\\[\\] ~]{0,3}", 0..6),
        keys in proptest::collection::vec("[ab!#\\[\\] ~]{0,4}|a\"|a\\\\|é|\n|[ab]{1,2}é", 1..12),
    ) {
        let props: Vec<String> = names.iter().map(|n| format!("{}: {{\"type\": \"integer\"}}", key_text(n))).collect();
        let schema = format!("{{\"type\": \"object\", \"properties\": {{{}}}, \"additionalProperties\": {{\"type\": \"boolean\"}}}}", props.join(", "));
        let g = G::new(&schema, &compact(false));
        for k in keys.iter().chain(names.iter()) {
            let declared = names.contains(k);
            let as_int = format!("{{{}:1}}", key_text(k));
            let as_bool = format!("{{{}:true}}", key_text(k));
            proptest::prop_assert_eq!(g.accepts(&as_int), declared, "{} in {:?}", as_int, names);
            proptest::prop_assert_eq!(g.accepts(&as_bool), !declared, "{} in {:?}", as_bool, names);
        }
    }
}

/// Only an object that takes any keys and values gets the built-in JSON
/// grammar's prepared texts; what it gets must be valid JSON of its
/// grammar (a text the grammar refuses would prepare nothing).
#[test]
fn prepared_texts_are_for_any_object_only() {
    use formcast_jsonschema::{parse_schema_str, prepared_texts};
    let texts = |schema: &str, opts: &SchemaOptions| prepared_texts(&parse_schema_str(schema, opts).unwrap(), opts);
    let any = SchemaOptions::default();
    for schema in [r#"{"type": "object"}"#, r#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "title": "T", "description": "d", "x-note": 1}"#] {
        assert_eq!(texts(schema, &any), &formcast_grammar::json::BUILTIN_JSON_PREPARED, "{schema}");
        assert_eq!(texts(schema, &compact(true)), &formcast_grammar::json::BUILTIN_JSON_PREPARED, "{schema}");
        for opts in [any.clone(), compact(true)] {
            let g = G::new(schema, &opts);
            for t in texts(schema, &opts) {
                let mut m = Matcher::new(g.cg.clone(), false, None).unwrap();
                assert!(m.accept_bytes(t.as_bytes()).unwrap(), "{schema}: {t}");
            }
        }
    }
    for schema in [
        r#"{"type": "object", "properties": {"a": {"type": "string"}}}"#,
        r#"{"type": "object", "maxProperties": 2}"#,
        r#"{"type": "object", "additionalProperties": {"type": "integer"}}"#,
        r#"{"type": ["object", "array"]}"#,
        r#"{"type": "string"}"#,
        r#"{}"#,
        r#"true"#,
    ] {
        assert!(texts(schema, &any).is_empty(), "{schema}");
    }
    let indented = SchemaOptions { whitespace: Whitespace::dumps(Some(2)), ..Default::default() };
    assert!(texts(r#"{"type": "object"}"#, &indented).is_empty());
    let xml = SchemaOptions { style: Style::parse("qwen_xml").unwrap(), ..Default::default() };
    assert!(texts(r#"{"type": "object"}"#, &xml).is_empty());
}
