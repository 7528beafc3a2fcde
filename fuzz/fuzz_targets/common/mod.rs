//! Shared by the structure-aware fuzz targets: a generator of JSON Schemas
//! and structural tags driven by the fuzzer's bytes (every keyword and
//! format type, `$ref` cycles, deep nesting, huge bounds), and the checks
//! every generated input must pass: the front-end returns a grammar or an
//! error, a grammar validates, compiles or hits a limit, and a matcher over
//! it fills a mask and finds a shortest completion that it then accepts.
//! A panic, a stack overflow or a hang (libFuzzer's -timeout) is a crash.
#![allow(dead_code)]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use formcast_engine::{Budget, CompileOptions, CompiledGrammar, Matcher, VocabIndex};
use formcast_grammar::Grammar;
use formcast_tokenizer::{Vocab, VocabKind};
use libfuzzer_sys::arbitrary::Unstructured;

/// The work of one input runs on a thread with this stack: what a Rust
/// thread (and rayon's pool) gets by default, smaller than the 8 MiB of a
/// main or Python thread, so recursion that would only just fit there is
/// caught here.
pub const STACK: usize = 2 << 20;

/// Runs `f` on a thread with a [`STACK`]-byte stack; a panic there is
/// re-raised here so libFuzzer records the input.
pub fn on_small_stack(f: impl FnOnce() + Send) {
    std::thread::scope(|s| {
        let h = std::thread::Builder::new().stack_size(STACK).spawn_scoped(s, f).expect("spawn");
        if let Err(p) = h.join() {
            std::panic::resume_unwind(p);
        }
    });
}

/// Byte tokens, a few multi-byte ones and an end-of-sequence token.
pub fn vocab() -> Arc<VocabIndex> {
    static V: OnceLock<Arc<VocabIndex>> = OnceLock::new();
    V.get_or_init(|| {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        for t in ["<tool_call>", "</tool_call>", "\":", "{\"", "true", "null", "<|sep|>", "é", "ab", "abc", "  "] {
            tokens.push(t.as_bytes().to_vec());
        }
        let eos = tokens.len() as u32;
        tokens.push(b"<eos>".to_vec());
        let v = Vocab { tokens, special: vec![eos], stop: vec![eos], logits_size: eos as usize + 1, kind: VocabKind::Raw };
        Arc::new(VocabIndex::new(&v).expect("vocab"))
    })
    .clone()
}

/// Compiles `g` within a short budget and drives a matcher over it.
pub fn exercise(g: &Grammar, probe: &[u8]) {
    formcast_grammar::validate(g).expect("a front-end returned an invalid grammar");
    let budget = Budget::new(Some(Duration::from_millis(500)), None);
    let Ok(cg) = CompiledGrammar::compile(g, vocab(), &CompileOptions::default(), &budget) else { return };
    let cg = Arc::new(cg);
    let Ok(mut m) = Matcher::new(cg.clone(), false, None) else { return };
    let words = cg.vocab.mask_words();
    let mut mask = vec![0u32; words];
    if m.fill_next_token_bitmask(&mut mask).is_err() {
        return;
    }
    // The shortest completion of the empty output is a sentence.
    if let Ok(Some(done)) = m.find_shortest_completion(4096) {
        let mut m2 = Matcher::new(cg.clone(), false, None).expect("matcher");
        if let Ok(ok) = m2.accept_bytes(&done) {
            assert!(ok && m2.can_end(), "the shortest completion {:?} is not accepted", String::from_utf8_lossy(&done));
        }
    }
    // Walk a few probe bytes, filling masks on the way. A mask that hits a
    // limit (a pathologically ambiguous grammar) ends the walk, as it ends
    // a request.
    for &b in probe.iter().take(16) {
        match m.accept_bytes(&[b]) {
            Ok(true) => {
                if m.fill_next_token_bitmask(&mut mask).is_err() {
                    return;
                }
            }
            _ => break,
        }
    }
    let _ = m.find_shortest_completion(4096);
}

/// A JSON string literal.
pub fn q(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

const KEYS: &[&str] = &["a", "b", "name", "id", "we\"ird&key", "<x>", "a b", "é", "", "child", "items", "$ref", "ab", "abc"];
const PATTERNS: &[&str] = &["^a+$", "[a-z]{2,5}", "(a|b)*c", "^\\d{3}$", ".*", "^$", "x{0,1000}", "^(?:[a-z]+_)*[a-z]+$", "\\p{L}", "[^\"]", "(a*)*b", "^.{40,}$", "\\u00e9"];
const FORMATS: &[&str] = &["date-time", "date", "time", "email", "uri", "uri-reference", "uri-template", "uuid", "ipv4", "ipv6", "hostname", "duration", "json-pointer", "relative-json-pointer", "regex", "unknown-format", "iri"];
const NUMBERS: &[&str] = &["0", "1", "-1", "2", "7", "0.1", "0.01", "1.5", "-2.5", "100", "1e3", "1e308", "1e-30", "12345678901234567890", "9007199254740993", "4294967295", "4294967296", "1099511627776", "-1e100"];
const COUNTS: &[&str] = &["0", "1", "2", "3", "5", "31", "32", "33", "64", "1000", "100000", "4294967295", "1099511627776", "1e9"];
const GRAMMARS: &[&str] = &["root ::= \"a\" | \"b\"", "root ::= x*\nx ::= \"(\" root \")\" | [a-z]", "root ::= [0-9]{1,5}", "root ::= r\nr ::= r \"a\" | \"b\"", "root ::= \"\""];
const TEXTS: &[&str] = &["<a>", "</a>", "<tool_call>", "</tool_call>", "\n", "abc", "ab", "a", "<|sep|>", "</think>", "é", "{", "}", "x"];
const STYLES: &[&str] = &["json", "qwen_xml", "minimax_xml", "minimax_m3_xml", "deepseek_xml", "deepseek_v4_1_xml", "glm_xml", "cohere_xml", "kimi_k3_xml"];

/// Generates documents from the fuzzer's bytes. Every choice reads from
/// `u`; when it runs dry, the smallest choices are taken, so every input
/// yields a document.
pub struct Gen<'a> {
    pub u: Unstructured<'a>,
    /// Nodes still to generate (keeps documents small enough to run fast).
    budget: u32,
}

impl<'a> Gen<'a> {
    pub fn new(data: &'a [u8]) -> Gen<'a> {
        Gen { u: Unstructured::new(data), budget: 48 }
    }

    pub fn byte(&mut self) -> u8 {
        self.u.arbitrary::<u8>().unwrap_or(0)
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            0
        } else {
            self.u.choose_index(n).unwrap_or(0)
        }
    }

    pub fn flip(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    pub fn pick<'s>(&mut self, xs: &[&'s str]) -> &'s str {
        xs[self.below(xs.len())]
    }

    /// A JSON value of any kind (for `enum`, `const`, defaults).
    pub fn value(&mut self, depth: u32) -> String {
        match if depth > 3 { self.below(5) } else { self.below(7) } {
            0 => "null".into(),
            1 => if self.flip() { "true" } else { "false" }.into(),
            2 => self.pick(NUMBERS).into(),
            3 | 4 => q(self.pick(KEYS)),
            5 => {
                let n = self.below(3);
                let items: Vec<String> = (0..n).map(|_| self.value(depth + 1)).collect();
                format!("[{}]", items.join(","))
            }
            _ => {
                let n = self.below(3);
                let items: Vec<String> = (0..n).map(|_| format!("{}:{}", q(self.pick(KEYS)), self.value(depth + 1))).collect();
                format!("{{{}}}", items.join(","))
            }
        }
    }

    fn reference(&mut self) -> String {
        q(self.pick(&["#", "#/$defs/a", "#/$defs/b", "#/properties/a", "#anchor", "#/$defs/missing", "other.json", "#/items"]))
    }

    /// A JSON Schema (a subschema at `depth`).
    pub fn schema(&mut self, depth: u32) -> String {
        if self.budget == 0 || depth > 10 {
            return match self.below(4) {
                0 => "true".into(),
                1 => r#"{"type":"string"}"#.into(),
                2 => format!(r#"{{"$ref":{}}}"#, self.reference()),
                _ => r#"{"type":"integer"}"#.into(),
            };
        }
        self.budget -= 1;
        if self.below(16) == 0 {
            return if self.flip() { "true" } else { "false" }.into();
        }
        let mut kw: Vec<String> = Vec::new();
        let n = 1 + self.below(4);
        for _ in 0..n {
            let k = self.below(40);
            let s = match k {
                0..=4 => {
                    let t = ["\"object\"", "\"array\"", "\"string\"", "\"integer\"", "\"number\"", "\"boolean\"", "\"null\"", "[\"object\",\"null\"]", "[\"string\",\"integer\"]"];
                    format!("\"type\":{}", t[self.below(t.len())])
                }
                5..=7 => {
                    let m = 1 + self.below(3);
                    let props: Vec<String> = (0..m).map(|_| format!("{}:{}", q(self.pick(KEYS)), self.schema(depth + 1))).collect();
                    format!("\"properties\":{{{}}}", props.join(","))
                }
                8 => {
                    let m = self.below(3);
                    let r: Vec<String> = (0..m).map(|_| q(self.pick(KEYS))).collect();
                    format!("\"required\":[{}]", r.join(","))
                }
                9 => format!("\"additionalProperties\":{}", self.schema(depth + 1)),
                10 => format!("\"patternProperties\":{{{}:{}}}", q(self.pick(PATTERNS)), self.schema(depth + 1)),
                11 => format!("\"propertyNames\":{}", self.schema(depth + 1)),
                12 => format!("\"{}\":{}", self.pick(&["minProperties", "maxProperties"]), self.pick(COUNTS)),
                13 => format!("\"dependentRequired\":{{{}:[{}]}}", q(self.pick(KEYS)), q(self.pick(KEYS))),
                14 => format!("\"dependentSchemas\":{{{}:{}}}", q(self.pick(KEYS)), self.schema(depth + 1)),
                15 => format!("\"{}\":{}", self.pick(&["unevaluatedProperties", "unevaluatedItems"]), self.schema(depth + 1)),
                16 | 17 => format!("\"items\":{}", self.schema(depth + 1)),
                18 => {
                    let m = 1 + self.below(3);
                    let items: Vec<String> = (0..m).map(|_| self.schema(depth + 1)).collect();
                    format!("\"prefixItems\":[{}]", items.join(","))
                }
                19 => format!("\"contains\":{}", self.schema(depth + 1)),
                20 => format!("\"{}\":{}", self.pick(&["minItems", "maxItems", "minContains", "maxContains", "minLength", "maxLength"]), self.pick(COUNTS)),
                21 => format!("\"uniqueItems\":{}", self.flip()),
                22 => {
                    let m = 1 + self.below(4);
                    let vals: Vec<String> = (0..m).map(|_| self.value(0)).collect();
                    format!("\"enum\":[{}]", vals.join(","))
                }
                23 => format!("\"const\":{}", self.value(0)),
                24 => format!("\"pattern\":{}", q(self.pick(PATTERNS))),
                25 => format!("\"format\":{}", q(self.pick(FORMATS))),
                26 => format!("\"{}\":{}", self.pick(&["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]), self.pick(NUMBERS)),
                27..=29 => {
                    let m = 1 + self.below(3);
                    let items: Vec<String> = (0..m).map(|_| self.schema(depth + 1)).collect();
                    format!("\"{}\":[{}]", self.pick(&["allOf", "anyOf", "oneOf"]), items.join(","))
                }
                30 => format!("\"not\":{}", self.schema(depth + 1)),
                31 => format!("\"if\":{},\"then\":{},\"else\":{}", self.schema(depth + 1), self.schema(depth + 1), self.schema(depth + 1)),
                32 | 33 => format!("\"$ref\":{}", self.reference()),
                34 => format!("\"$defs\":{{\"a\":{},\"b\":{}}}", self.schema(depth + 1), self.schema(depth + 1)),
                35 => "\"$anchor\":\"anchor\"".into(),
                36 => "\"$dynamicRef\":\"#node\",\"$dynamicAnchor\":\"node\"".into(),
                37 => format!("\"contentMediaType\":\"application/json\",\"default\":{}", self.value(0)),
                38 => format!("\"$schema\":{}", q(self.pick(&["https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-04/schema#", "urn:unknown"]))),
                _ => format!("\"x-extension\":{}", self.value(0)),
            };
            kw.push(s);
        }
        format!("{{{}}}", kw.join(","))
    }

    /// A whole schema document: sometimes wrapped in a long chain of
    /// nested objects or arrays (deep nesting), sometimes with `$defs`
    /// that refer to each other.
    pub fn schema_document(&mut self) -> String {
        let mut s = self.schema(0);
        if self.below(4) == 0 {
            s = format!(r#"{{"$defs":{{"a":{},"b":{}}},"allOf":[{s}]}}"#, self.schema(1), self.schema(1));
        }
        if self.below(8) == 0 {
            let levels = (self.byte() as usize) * 4 + self.below(8);
            let (open, close) = if self.flip() { (r#"{"type":"object","properties":{"a":"#, "}}") } else { (r#"{"type":"array","items":"#, "}") };
            s = format!("{}{s}{}", open.repeat(levels), close.repeat(levels));
        }
        s
    }

    /// A string for `begin`, `end`, triggers and excludes.
    fn text(&mut self) -> String {
        q(self.pick(TEXTS))
    }

    fn token(&mut self) -> String {
        if self.flip() {
            (self.byte() as u32 + if self.flip() { 256 } else { 0 }).to_string()
        } else {
            q(self.pick(&["<tool_call>", "</tool_call>", "<|sep|>", "<eos>", "a", "missing token"]))
        }
    }

    fn tag(&mut self, depth: u32) -> String {
        let begin = if self.below(6) == 0 { format!(r#"{{"type":"token","token":{}}}"#, self.token()) } else { self.text() };
        let end = match self.below(6) {
            0 => format!(r#"{{"type":"token","token":{}}}"#, self.token()),
            1 => format!("[{},{}]", self.text(), self.text()),
            _ => self.text(),
        };
        format!(r#"{{"type":"tag","begin":{begin},"content":{},"end":{end}}}"#, self.format(depth + 1))
    }

    fn tags(&mut self, depth: u32) -> String {
        let n = 1 + self.below(3);
        let t: Vec<String> = (0..n).map(|_| self.tag(depth)).collect();
        format!("[{}]", t.join(","))
    }

    /// A structural-tag format at `depth`.
    pub fn format(&mut self, depth: u32) -> String {
        if self.budget == 0 || depth > 12 {
            return format!(r#"{{"type":"const_string","value":{}}}"#, self.text());
        }
        self.budget -= 1;
        match self.below(22) {
            0 => format!(r#"{{"type":"const_string","value":{}}}"#, self.text()),
            1 | 2 => {
                let mut f = format!(r#"{{"type":"json_schema","json_schema":{}"#, self.schema(2));
                if self.flip() {
                    f += &format!(r#","style":{}"#, q(self.pick(STYLES)));
                }
                if self.flip() {
                    f += &format!(r#","any_order":{}"#, self.flip());
                }
                if self.below(4) == 0 {
                    f += &format!(r#","max_whitespace_cnt":{}"#, self.pick(COUNTS));
                }
                if self.below(4) == 0 {
                    f += &format!(r#","excludes":[{}]"#, self.text());
                }
                f + "}"
            }
            3 => format!(r#"{{"type":"grammar","grammar":{}}}"#, q(self.pick(GRAMMARS))),
            4 => format!(r#"{{"type":"regex","pattern":{}}}"#, q(self.pick(PATTERNS))),
            5 => {
                let mut f = String::from(r#"{"type":"any_text""#);
                if self.flip() {
                    f += &format!(r#","excludes":[{}]"#, self.text());
                }
                match self.below(3) {
                    0 => f += &format!(r#","max_chars":{}"#, self.pick(COUNTS)),
                    1 => f += &format!(r#","max_tokens":{}"#, self.pick(COUNTS)),
                    _ => {}
                }
                f + "}"
            }
            6 | 7 => {
                let n = 1 + self.below(3);
                let e: Vec<String> = (0..n).map(|_| self.format(depth + 1)).collect();
                format!(r#"{{"type":{},"elements":[{}]}}"#, q(self.pick(&["sequence", "or"])), e.join(","))
            }
            8 => format!(r#"{{"type":{},"content":{}}}"#, q(self.pick(&["optional", "plus", "star"])), self.format(depth + 1)),
            9 => format!(r#"{{"type":"repeat","min":{},"max":{},"content":{}}}"#, self.pick(&["0", "1", "2", "3"]), self.pick(&["-1", "3", "5", "100", "4294967296"]), self.format(depth + 1)),
            10 | 11 => self.tag(depth),
            12 => format!(
                r#"{{"type":"triggered_tags","triggers":[{}],"tags":{},"excludes":[{}],"at_least_one":{},"stop_after_first":{}}}"#,
                self.text(),
                self.tags(depth),
                self.text(),
                self.flip(),
                self.flip()
            ),
            13 => format!(r#"{{"type":"tags_with_separator","tags":{},"separator":{},"at_least_one":{},"stop_after_first":{}}}"#, self.tags(depth), self.text(), self.flip(), self.flip()),
            14 => format!(r#"{{"type":"dispatch","rules":[[{},{}]],"loop":{},"excludes":[{}]}}"#, self.text(), self.format(depth + 1), self.flip(), self.text()),
            15 => format!(r#"{{"type":"token","token":{}}}"#, self.token()),
            16 => format!(r#"{{"type":"exclude_token","exclude_tokens":[{}]}}"#, self.token()),
            17 => format!(r#"{{"type":"any_tokens","exclude_tokens":[{}],"max_tokens":{}}}"#, self.token(), self.pick(COUNTS)),
            18 => {
                let t = self.token();
                format!(
                    r#"{{"type":"token_triggered_tags","trigger_tokens":[{t}],"tags":[{{"begin":{{"type":"token","token":{t}}},"content":{},"end":{{"type":"token","token":{}}}}}],"at_least_one":{}}}"#,
                    self.format(depth + 1),
                    self.token(),
                    self.flip()
                )
            }
            19 => format!(r#"{{"type":"token_dispatch","rules":[[{},{}]],"loop":{}}}"#, self.token(), self.format(depth + 1), self.flip()),
            20 => format!(r#"{{"type":"qwen_xml_parameter","json_schema":{}}}"#, self.schema(2)),
            _ => {
                // Deeply nested formats (past the 48-level limit at times).
                let levels = self.byte() as usize / 3;
                let inner = self.format(depth + 1);
                format!("{}{inner}{}", r#"{"type":"optional","content":"#.repeat(levels), "}".repeat(levels))
            }
        }
    }
}
