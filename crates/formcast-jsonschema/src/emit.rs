//! Grammar output: the rule table, character expressions to grammar
//! expressions (raw, or JSON-escaped), whitespace layout, and bounded
//! repetition that does not unroll large bounds.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use formcast_grammar::{Expr, Rule, RuleId};

use crate::options::Whitespace;
use crate::re::{subtract_ranges, Re, Unique};

/// Repetition bounds up to this are left to the engine as plain `Repeat`
/// (which it unrolls); larger ones are split into blocks of this size held
/// by rules, nested (size logarithmic in the bound).
pub const INLINE_REPEAT: u32 = 32;

pub struct Emitter {
    pub rules: Vec<Rule>,
    names: HashSet<String>,
    next_suffix: HashMap<String, usize>,
    rep_rules: HashMap<(Expr, u32, u32), RuleId>,
    pub max_rules: usize,
}

impl Emitter {
    pub fn new(max_rules: usize) -> Emitter {
        Emitter { rules: Vec::new(), names: HashSet::default(), next_suffix: HashMap::default(), rep_rules: HashMap::default(), max_rules }
    }

    /// A new rule (body to be set later); the name is made unique.
    pub fn reserve(&mut self, name: &str) -> Result<RuleId, String> {
        if self.rules.len() >= self.max_rules {
            return Err(format!("the grammar would need more than {} rules", self.max_rules));
        }
        let mut base: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
        if base.is_empty() {
            base = "r".into();
        }
        if base.len() > 60 {
            base.truncate(60);
        }
        // Unique names: base, base_1, base_2... (the next suffix per base is
        // remembered, so this stays linear).
        let k = self.next_suffix.entry(base.clone()).or_insert(0);
        let mut n = if *k == 0 { base.clone() } else { format!("{base}_{k}") };
        while self.names.contains(&n) {
            *k += 1;
            n = format!("{base}_{k}");
        }
        *k += 1;
        self.names.insert(n.clone());
        self.rules.push(Rule::new(n, Expr::Nothing));
        Ok(self.rules.len() as RuleId - 1)
    }

    pub fn set(&mut self, id: RuleId, body: Expr) {
        self.rules[id as usize].body = body;
    }

    /// Marks a rule as a helper the engine builds in place where it is
    /// referenced last (see [`formcast_grammar::Rule::inline`]).
    pub fn set_inline(&mut self, id: RuleId) {
        self.rules[id as usize].inline = true;
    }

    pub fn add(&mut self, name: &str, body: Expr) -> Result<RuleId, String> {
        let id = self.reserve(name)?;
        self.set(id, body);
        Ok(id)
    }

    /// A rule holding `e{min,max} suffix` (inline expansion), shared by
    /// every use of the same repetition.
    fn rep_rule(&mut self, name: &str, e: &Expr, min: u32, max: u32, suffix: &Expr) -> Result<Expr, String> {
        let key = (seq(vec![e.clone(), suffix.clone()]), min, max);
        if let Some(&id) = self.rep_rules.get(&key) {
            return Ok(Expr::Rule(id));
        }
        let id = self.add(name, seq(vec![rep(e.clone(), min, Some(max)), suffix.clone()]))?;
        self.rep_rules.insert(key, id);
        Ok(Expr::Rule(id))
    }

    /// `e{min,max}` without unrolling large bounds: blocks of exactly
    /// [`INLINE_REPEAT`] copies held by a rule, themselves repeated the
    /// same way (so the size is logarithmic in the bound), plus remainder
    /// rules shorter than a block so that every length has exactly one
    /// parse. Rules are shared across repetitions of the same expression.
    pub fn repeat(&mut self, name: &str, e: Expr, min: u32, max: Option<u32>) -> Result<Expr, String> {
        self.repeat_then(name, e, min, max, Expr::Empty)
    }

    /// `e{min,max} suffix`, like [`Emitter::repeat`], with `suffix` placed
    /// inside the remainder rules. Why: a remainder `e{0,31}` alone may end
    /// after any copy, so every state of its automaton finishes the rule and
    /// the engine must consult the parser for every token; with the suffix
    /// (a string's closing quote) inside, the rule finishes only at the
    /// suffix, and its per-state vocabulary partitions do the work.
    pub fn repeat_then(&mut self, name: &str, e: Expr, min: u32, max: Option<u32>, suffix: Expr) -> Result<Expr, String> {
        let big = max.unwrap_or(min);
        if big <= INLINE_REPEAT {
            return Ok(seq(vec![rep(e, min, max), suffix]));
        }
        let k = INLINE_REPEAT;
        let block = self.rep_rule(&format!("{name}_block"), &e, k, k, &Expr::Empty)?;
        // The mandatory part: min = q·k + r.
        let (q, r) = (min / k, min % k);
        let head = seq(vec![self.repeat(name, block.clone(), q, Some(q))?, rep(e.clone(), r, Some(r))]);
        let tail = match max {
            None => seq(vec![Expr::star(e), suffix]),
            Some(max) => {
                let m = max - min;
                if m <= k {
                    seq(vec![rep(e, 0, Some(m)), suffix])
                } else {
                    let (qm, rm) = (m / k, m % k);
                    let short = self.rep_rule(&format!("{name}_rem"), &e, 0, k - 1, &suffix)?;
                    let last = self.rep_rule(&format!("{name}_last"), &e, 0, rm, &suffix)?;
                    alt(vec![
                        seq(vec![self.repeat(name, block.clone(), 0, Some(qm - 1))?, short]),
                        seq(vec![self.repeat(name, block, qm, Some(qm))?, last]),
                    ])
                }
            }
        };
        Ok(seq(vec![head, tail]))
    }
}

pub fn rep(e: Expr, min: u32, max: Option<u32>) -> Expr {
    match (min, max) {
        (_, Some(0)) => Expr::Empty,
        (1, Some(1)) => e,
        _ if matches!(e, Expr::Empty) => Expr::Empty,
        _ if matches!(e, Expr::Nothing) => {
            if min == 0 {
                Expr::Empty
            } else {
                Expr::Nothing
            }
        }
        _ => Expr::Repeat { expr: Box::new(e), min, max },
    }
}

pub fn opt(e: Expr) -> Expr {
    rep(e, 0, Some(1))
}

/// Concatenation with flattening and literal merging.
pub fn seq(items: Vec<Expr>) -> Expr {
    let mut out: Vec<Expr> = Vec::with_capacity(items.len());
    for it in items {
        match it {
            Expr::Nothing => return Expr::Nothing,
            Expr::Empty => {}
            Expr::Seq(v) => {
                for x in v {
                    push_seq(&mut out, x);
                }
            }
            x => push_seq(&mut out, x),
        }
    }
    match out.len() {
        0 => Expr::Empty,
        1 => out.pop().unwrap(),
        _ => Expr::Seq(out),
    }
}

fn push_seq(out: &mut Vec<Expr>, x: Expr) {
    if let (Some(Expr::Bytes(a)), Expr::Bytes(b)) = (out.last_mut(), &x) {
        a.extend_from_slice(b);
        return;
    }
    out.push(x);
}

pub fn alt(items: Vec<Expr>) -> Expr {
    let mut unique: Unique<Expr> = Unique::with_capacity(items.len());
    for it in items {
        match it {
            Expr::Nothing => {}
            Expr::Alt(v) => v.into_iter().for_each(|x| unique.push(x)),
            x => unique.push(x),
        }
    }
    let mut out = unique.items;
    match out.len() {
        0 => Expr::Nothing,
        1 => out.pop().unwrap(),
        _ => Expr::Alt(out),
    }
}

pub fn lit(s: &str) -> Expr {
    Expr::literal(s)
}

/// How characters of a [`Re`] are written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Enc {
    /// As themselves (numbers, raw XML text).
    Raw,
    /// Inside a JSON string: `"`, `\` and control characters escaped as
    /// `json.dumps` does (both hex cases accepted for `\u00XX`).
    Json,
    /// Inside an XML attribute value: `&`, `<`, `>`, `"` as entities.
    XmlAttr,
}

fn xml_entity(c: u32) -> Option<&'static str> {
    match c {
        0x26 => Some("&amp;"),
        0x3C => Some("&lt;"),
        0x3E => Some("&gt;"),
        0x22 => Some("&quot;"),
        _ => None,
    }
}

fn hex_chars(v: u32) -> Expr {
    let c = char::from_digit(v, 16).unwrap();
    let (lo, up) = (c.to_ascii_lowercase() as u32, c.to_ascii_uppercase() as u32);
    Expr::Chars(if lo == up { vec![(lo, lo)] } else { vec![(up, up), (lo, lo)] })
}

/// The escape of one special character.
fn escape_of(c: u32) -> Expr {
    match c {
        0x22 => lit("\\\""),
        0x5C => lit("\\\\"),
        0x08 => lit("\\b"),
        0x0C => lit("\\f"),
        0x0A => lit("\\n"),
        0x0D => lit("\\r"),
        0x09 => lit("\\t"),
        c => seq(vec![lit("\\u00"), hex_chars(c >> 4), hex_chars(c & 15)]),
    }
}

const JSON_SPECIALS: [(u32, u32); 3] = [(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)];

fn is_json_special(c: u32) -> bool {
    c < 0x20 || c == 0x22 || c == 0x5C
}

fn chars_expr(ranges: &[(u32, u32)], enc: Enc) -> Expr {
    if enc == Enc::Raw {
        return single_or_chars(ranges);
    }
    if enc == Enc::XmlAttr {
        let specials = [(0x22, 0x22), (0x26, 0x26), (0x3C, 0x3C), (0x3E, 0x3E)];
        let plain = subtract_ranges(ranges, &specials);
        let mut alts = vec![if plain.is_empty() { Expr::Nothing } else { single_or_chars(&plain) }];
        for &(lo, hi) in ranges {
            for c in lo..=hi.min(0x3E) {
                if let Some(e) = xml_entity(c) {
                    alts.push(lit(e));
                }
            }
        }
        return alt(alts);
    }
    // Fast path: no special character in the set.
    if ranges.iter().all(|&(lo, hi)| lo >= 0x20 && !(lo <= 0x22 && 0x22 <= hi) && !(lo <= 0x5C && 0x5C <= hi)) {
        return single_or_chars(ranges);
    }
    let plain = subtract_ranges(ranges, &JSON_SPECIALS);
    let mut alts = Vec::new();
    if !plain.is_empty() {
        alts.push(single_or_chars(&plain));
    }
    // Control characters without a short escape, grouped by high nibble:
    // `\u00` + [01] + hex digits (both cases).
    let mut low: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
    for &(lo, hi) in ranges {
        for c in lo..=hi.min(0x5C) {
            match c {
                0x22 | 0x5C | 0x08 | 0x0C | 0x0A | 0x0D | 0x09 => alts.push(escape_of(c)),
                c if c < 0x20 => low[(c >> 4) as usize].push(c & 15),
                _ => {}
            }
        }
    }
    for (h, lows) in low.iter().enumerate() {
        if lows.is_empty() {
            continue;
        }
        let mut set = Vec::new();
        for &v in lows {
            let ch = char::from_digit(v, 16).unwrap();
            set.push((ch.to_ascii_lowercase() as u32, ch.to_ascii_lowercase() as u32));
            set.push((ch.to_ascii_uppercase() as u32, ch.to_ascii_uppercase() as u32));
        }
        let set = crate::re::norm_ranges(set);
        alts.push(seq(vec![lit(&format!("\\u00{h}")), Expr::Chars(set)]));
    }
    alt(alts)
}

fn single_or_chars(ranges: &[(u32, u32)]) -> Expr {
    if ranges.len() == 1 && ranges[0].0 == ranges[0].1 {
        if let Some(c) = char::from_u32(ranges[0].0) {
            return lit(&c.to_string());
        }
    }
    Expr::Chars(ranges.to_vec())
}

/// A character expression as a grammar expression.
pub fn re_expr(re: &Re, enc: Enc) -> Expr {
    match re {
        Re::Nothing => Expr::Nothing,
        Re::Empty | Re::Start | Re::End => Expr::Empty,
        Re::Chars(r) => chars_expr(r, enc),
        Re::Seq(v) => {
            // Runs of single characters become one literal.
            let mut out: Vec<Expr> = Vec::with_capacity(v.len());
            let mut run = String::new();
            for x in v {
                if let Re::Chars(r) = x {
                    let special = match enc {
                        Enc::Json => is_json_special(r[0].0),
                        Enc::XmlAttr => xml_entity(r[0].0).is_some(),
                        Enc::Raw => false,
                    };
                    if r.len() == 1 && r[0].0 == r[0].1 && !special {
                        if let Some(c) = char::from_u32(r[0].0) {
                            run.push(c);
                            continue;
                        }
                    }
                }
                if !run.is_empty() {
                    out.push(lit(&std::mem::take(&mut run)));
                }
                out.push(re_expr(x, enc));
            }
            if !run.is_empty() {
                out.push(lit(&run));
            }
            seq(out)
        }
        Re::Alt(v) => alt(v.iter().map(|x| re_expr(x, enc)).collect()),
        Re::Repeat(x, min, max) => rep(re_expr(x, enc), *min, *max),
    }
}

/// `ranges` (sorted, disjoint) without the sorted code points `points`.
fn without_points(ranges: &[(u32, u32)], points: impl Iterator<Item = u32>) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = ranges.to_vec();
    for p in points {
        if let Some(i) = out.iter().position(|&(lo, hi)| lo <= p && p <= hi) {
            let (lo, hi) = out[i];
            match (lo == p, hi == p) {
                (true, true) => {
                    out.remove(i);
                }
                (true, false) => out[i].0 = p + 1,
                (false, true) => out[i].1 = p - 1,
                (false, false) => {
                    out[i].1 = p - 1;
                    out.insert(i + 1, (p + 1, hi));
                }
            }
        }
    }
    out
}

/// `step` then `rest`, without [`seq`]'s general flattening (the trie's
/// subtrees are alternations or single steps).
fn then(step: Expr, rest: Expr) -> Expr {
    match (step, rest) {
        (_, Expr::Nothing) => Expr::Nothing,
        (step, Expr::Empty) => step,
        (Expr::Bytes(mut a), Expr::Bytes(b)) => {
            a.extend_from_slice(&b);
            Expr::Bytes(a)
        }
        (step, Expr::Seq(v)) => {
            let mut out = Vec::with_capacity(v.len() + 1);
            out.push(step);
            v.into_iter().for_each(|x| push_seq(&mut out, x));
            Expr::Seq(out)
        }
        (step, rest) => Expr::Seq(vec![step, rest]),
    }
}

/// Per encoding, the same for every set: the characters outside
/// [`crate::strings::SIMPLE_CHARS`], as ranges and as an expression, and `Σ*`.
fn complement_parts(enc: Enc) -> &'static (Vec<(u32, u32)>, Expr, Expr) {
    static PARTS: [std::sync::OnceLock<(Vec<(u32, u32)>, Expr, Expr)>; 3] = [const { std::sync::OnceLock::new() }; 3];
    PARTS[enc as usize].get_or_init(|| {
        let other = crate::re::complement_ranges(&crate::strings::SIMPLE_CHARS);
        let e = chars_expr(&other, enc);
        (other, e, re_expr(&Re::any(), enc))
    })
}

/// The trie's branches are distinct by their first character: no need for
/// [`alt`]'s duplicate check, which hashes whole subtrees from 16 branches on.
fn branches(mut v: Vec<Expr>) -> Expr {
    match v.len() {
        0 => Expr::Nothing,
        1 => v.pop().unwrap(),
        _ => Expr::Alt(v),
    }
}

pub(crate) fn is_simple(c: char) -> bool {
    crate::strings::SIMPLE_CHARS.iter().any(|&(lo, hi)| lo <= c as u32 && c as u32 <= hi)
}

/// The step from a trie node to its child on `c`.
fn trie_step(c: char, enc: Enc) -> Expr {
    if is_simple(c) && enc != Enc::XmlAttr {
        Expr::literal(c.encode_utf8(&mut [0; 4]))
    } else {
        chars_expr(&[(c as u32, c as u32)], enc)
    }
}

/// Where a trie node with children `runs` is left for good: the printable
/// ASCII characters (no `"` or `\`) that continue no word, and, when some
/// child starts with another character, the other characters that continue
/// none; and whether every other character leaves (no child starts with
/// one), which the callers spell once for the whole trie.
fn trie_exits(runs: &[(char, &[Vec<char>])], enc: Enc, other: &[(u32, u32)]) -> (Vec<Expr>, bool) {
    let children = || runs.iter().map(|&(c, _)| c as u32);
    let mut exits = Vec::with_capacity(2);
    let leave = without_points(&crate::strings::SIMPLE_CHARS, children());
    if !leave.is_empty() {
        exits.push(single_or_chars(&leave));
    }
    let simple_children = runs.iter().all(|&(c, _)| is_simple(c));
    if !simple_children {
        let leave = without_points(other, children());
        if !leave.is_empty() {
            exits.push(chars_expr(&leave, enc));
        }
    }
    (exits, simple_children)
}

/// Any string except the words of `excluded`, written in `enc`, then
/// `tail`: the language of [`crate::strings::complement_of_set`], built
/// straight from the words' trie. (An object's undeclared keys are this
/// language; going through [`Re`] and [`re_expr`] cost three quarters of the
/// front-end on a Kubernetes schema of 16-name objects.)
///
/// The shape is the one `complement_of_set` explains, `E Σ* | S OTHER Σ* | P`,
/// with the two `Σ*` merged: `(E | S OTHER) Σ* tail | P tail`. Leaving a trie
/// node with a printable ASCII character (no `"` or `\`) is spelled per node;
/// leaving with any other character (multi-byte once encoded, escaped once
/// JSON-written) is one shared branch after the trie of prefixes `S`.
///
/// Three copies of the trie: text that must avoid excluded strings expands
/// every rule reference in place, so it cannot share continuations through
/// rules the way [`complement_expr_linked`] does.
pub fn complement_expr(excluded: &std::collections::BTreeSet<String>, enc: Enc, tail: Expr) -> Expr {
    // (exits, shared prefixes, stops) below a node (see `trie_node`).
    fn go(words: &[Vec<char>], depth: usize, enc: Enc, other: &[(u32, u32)]) -> (Expr, Expr, Expr) {
        let (terminal, runs) = crate::strings::trie_node(words, depth);
        let (mut exits, simple_children) = trie_exits(&runs, enc, other);
        let mut shared = Vec::with_capacity(runs.len() + 1);
        if simple_children {
            shared.push(Expr::Empty);
        }
        let mut stops = Vec::with_capacity(runs.len() + 1);
        if !terminal {
            stops.push(Expr::Empty);
        }
        for (c, sub) in runs {
            let (e, sh, p) = go(sub, depth + 1, enc, other);
            let step = trie_step(c, enc);
            exits.push(then(step.clone(), e));
            shared.push(then(step.clone(), sh));
            stops.push(then(step, p));
        }
        (branches(exits), branches(shared), branches(stops))
    }
    let (other, other_expr, any) = complement_parts(enc);
    let words: Vec<Vec<char>> = excluded.iter().map(|w| w.chars().collect()).collect();
    let (exits, shared, stops) = go(&words, 0, enc, other);
    alt(vec![
        seq(vec![alt(vec![exits, seq(vec![shared, other_expr.clone()])]), any.clone(), tail.clone()]),
        seq(vec![stops, tail]),
    ])
}

/// What [`complement_expr_linked`]'s continuations are made of, in `enc`:
/// the characters outside the printable ASCII ones (`OTHER`), and `Σ*`.
pub fn complement_other_and_any(enc: Enc) -> (&'static Expr, &'static Expr) {
    let (_, other_expr, any) = complement_parts(enc);
    (other_expr, any)
}

/// The language of [`complement_expr`] as one copy of the trie: each node
/// leaves to `any_then_tail` (`Σ* tail`) or `other_then_tail` (`OTHER Σ*
/// tail`), references to inline rules the caller makes from
/// [`complement_other_and_any`], and stops with `tail` where no word ends. At
/// the end of a rule the engine builds each of those rules once, so the
/// automaton is the trie's size. The key complements were three quarters of
/// a Kubernetes grammar's expression, which every later pass walks; one copy
/// made them 27% smaller on kb_996 (per node, the characters that leave the
/// trie are most of the size) and its front-end a third faster.
pub fn complement_expr_linked(excluded: &std::collections::BTreeSet<String>, enc: Enc, any_then_tail: &Expr, other_then_tail: &Expr, tail: &Expr) -> Expr {
    struct Cx<'a> {
        enc: Enc,
        other: &'a [(u32, u32)],
        any_then_tail: &'a Expr,
        other_then_tail: &'a Expr,
        tail: &'a Expr,
    }
    fn go(words: &[Vec<char>], depth: usize, cx: &Cx) -> Expr {
        let (terminal, runs) = crate::strings::trie_node(words, depth);
        let (exits, simple_children) = trie_exits(&runs, cx.enc, cx.other);
        let mut alts: Vec<Expr> = exits.into_iter().map(|e| then(e, cx.any_then_tail.clone())).collect();
        if simple_children {
            alts.push(cx.other_then_tail.clone());
        }
        for (c, sub) in runs {
            alts.push(then(trie_step(c, cx.enc), go(sub, depth + 1, cx)));
        }
        if !terminal {
            alts.push(cx.tail.clone());
        }
        branches(alts)
    }
    let (other, _, _) = complement_parts(enc);
    let words: Vec<Vec<char>> = excluded.iter().map(|w| w.chars().collect()).collect();
    go(&words, 0, &Cx { enc, other, any_then_tail, other_then_tail, tail })
}

/// [`complement_expr_linked`]'s language as the engine's trie of words
/// ([`formcast_grammar::WordsExcept`]) when every word is spelled with
/// printable ASCII characters but `"` and `\` (so each character is one
/// byte, written as itself): the front-end, the passes over the grammar and
/// the rule cache's key then handle the words instead of a trie of
/// expressions, and the engine builds the trie's states directly. `None`
/// for other words.
pub fn complement_words(excluded: &std::collections::BTreeSet<String>, any_then_tail: &Expr, other_then_tail: &Expr, tail: &Expr) -> Option<Expr> {
    if !excluded.iter().all(|w| w.chars().all(is_simple)) {
        return None;
    }
    let leave = crate::strings::SIMPLE_CHARS.iter().map(|&(lo, hi)| (lo as u8, hi as u8)).collect();
    // A `BTreeSet<String>` is in byte order.
    let words = excluded.iter().map(|w| w.as_bytes().to_vec()).collect();
    Some(Expr::WordsExcept(std::sync::Arc::new(formcast_grammar::WordsExcept {
        words,
        leave,
        exit: any_then_tail.clone(),
        other: other_then_tail.clone(),
        stop: tail.clone(),
    })))
}

/// One character of a JSON string in canonical form (as `json.dumps`
/// writes it, `\/` and both hex cases also accepted): the unit of
/// length-bounded strings, about half the automaton of [`json_any_char`].
pub fn json_canonical_char() -> Expr {
    let hex = Expr::Chars(vec![(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)]);
    alt(vec![
        Expr::Chars(vec![(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)]),
        seq(vec![lit("\\"), Expr::Chars(vec![(0x22, 0x22), (0x2F, 0x2F), (0x5C, 0x5C), (0x62, 0x62), (0x66, 0x66), (0x6E, 0x6E), (0x72, 0x72), (0x74, 0x74)])]),
        seq(vec![lit("\\u00"), Expr::Chars(vec![(0x30, 0x31)]), hex]),
    ])
}

/// One character of a JSON string, written any valid way (literal or any
/// escape, a surrogate pair counting as one character).
pub fn json_any_char() -> Expr {
    let hex = Expr::Chars(vec![(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)]);
    let non_surrogate = alt(vec![
        seq(vec![Expr::Chars(vec![(0x30, 0x39), (0x41, 0x43), (0x45, 0x46), (0x61, 0x63), (0x65, 0x66)]), hex.clone(), hex.clone(), hex.clone()]),
        seq(vec![Expr::Chars(vec![(0x44, 0x44), (0x64, 0x64)]), Expr::Chars(vec![(0x30, 0x37)]), hex.clone(), hex.clone()]),
    ]);
    let d = Expr::Chars(vec![(0x44, 0x44), (0x64, 0x64)]);
    let high = seq(vec![lit("\\u"), d.clone(), Expr::Chars(vec![(0x38, 0x39), (0x41, 0x42), (0x61, 0x62)]), hex.clone(), hex.clone()]);
    let low = seq(vec![lit("\\u"), d, Expr::Chars(vec![(0x43, 0x46), (0x63, 0x66)]), hex.clone(), hex]);
    alt(vec![
        Expr::Chars(vec![(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)]),
        seq(vec![lit("\\"), Expr::Chars(vec![(0x22, 0x22), (0x2F, 0x2F), (0x5C, 0x5C), (0x62, 0x62), (0x66, 0x66), (0x6E, 0x6E), (0x72, 0x72), (0x74, 0x74)])]),
        seq(vec![lit("\\u"), non_surrogate]),
        seq(vec![high, low]),
    ])
}

/// The JSON text of a string, as `json.dumps(ensure_ascii=False)` writes it.
pub fn json_string_literal(s: &str) -> Expr {
    let mut out = String::new();
    crate::json::write_string(s, &mut out);
    lit(&out)
}

/// Punctuation and whitespace between JSON tokens.
pub struct Layout {
    pub ws: Whitespace,
    /// The rule every whitespace gap calls (bounded whitespace only): one
    /// shared counter instead of `max_per_gap` automaton states per gap.
    pub gap_rule: Option<RuleId>,
}

impl Layout {
    pub fn new(ws: Whitespace) -> Layout {
        Layout { ws, gap_rule: None }
    }

    /// A whitespace gap's own expression (`Empty` when there is none).
    pub fn gap_body(&self) -> Expr {
        match &self.ws {
            Whitespace::Any { max_per_gap } if *max_per_gap > 0 => {
                rep(Expr::Chars(vec![(0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)]), 0, Some(*max_per_gap))
            }
            _ => Expr::Empty,
        }
    }

    fn gap(&self) -> Expr {
        match self.gap_rule {
            Some(r) => Expr::Rule(r),
            None => self.gap_body(),
        }
    }

    /// Whether layout depends on nesting depth (then rules are per depth).
    pub fn depth_sensitive(&self) -> bool {
        matches!(&self.ws, Whitespace::Indent { indent: Some(_), .. })
    }

    fn newline(&self, depth: usize) -> Option<String> {
        match &self.ws {
            Whitespace::Indent { indent: Some(n), .. } => Some(format!("\n{}", " ".repeat(n * depth))),
            _ => None,
        }
    }

    /// Opening bracket of a non-empty container at `depth`.
    pub fn open(&self, c: char, depth: usize) -> Expr {
        match self.newline(depth + 1) {
            Some(nl) => lit(&format!("{c}{nl}")),
            None => seq(vec![lit(&c.to_string()), self.gap()]),
        }
    }

    pub fn close(&self, c: char, depth: usize) -> Expr {
        match self.newline(depth) {
            Some(nl) => lit(&format!("{nl}{c}")),
            None => seq(vec![self.gap(), lit(&c.to_string())]),
        }
    }

    /// An empty container.
    pub fn empty(&self, open: char, close: char) -> Expr {
        match &self.ws {
            Whitespace::Any { .. } => seq(vec![lit(&open.to_string()), self.gap(), lit(&close.to_string())]),
            _ => lit(&format!("{open}{close}")),
        }
    }

    /// Between two members/items of a container at `depth`. (Whitespace
    /// goes after punctuation only: every common layout — compact,
    /// `json.dumps`, indented — fits, and the automata stay half as big.)
    pub fn item_sep(&self, depth: usize) -> Expr {
        match &self.ws {
            Whitespace::Compact => lit(","),
            Whitespace::Any { .. } => seq(vec![lit(","), self.gap()]),
            Whitespace::Indent { indent, separators } => match indent {
                Some(_) => lit(&format!("{}{}", separators.0, self.newline(depth + 1).unwrap())),
                None => lit(&separators.0),
            },
        }
    }

    /// Between a key and its value.
    pub fn key_sep(&self) -> Expr {
        match &self.ws {
            Whitespace::Compact => lit(":"),
            // After ':' layouts put one space or none.
            Whitespace::Any { max_per_gap } if *max_per_gap > 0 => seq(vec![lit(":"), opt(lit(" "))]),
            Whitespace::Any { .. } => lit(":"),
            Whitespace::Indent { separators, .. } => lit(&separators.1),
        }
    }

    /// Optional whitespace around the whole document.
    pub fn outer(&self) -> Expr {
        self.gap()
    }
}
