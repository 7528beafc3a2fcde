//! Rule automata shared across grammars.
//!
//! Formats (`date-time`, `email`, `uri`...), patterns, key-space complements
//! and whole object rules recur from one schema to the next (a family of
//! schemas shares its definitions) and some take milliseconds to
//! determinize. A rule whose determinization was costly is kept here, keyed
//! by a 128-bit hash of everything its automaton depends on: its body, and
//! the bodies of the rules built in place (inline rules, and every rule
//! inside an `Avoiding`). Rule ids mean something else in every grammar, so
//! the key names a rule by the order of its first reference and the entry
//! keeps the ids it was stored with: a hit renames its calls.
//!
//! Bodies with token-level elements are not kept: their automata refer to
//! per-grammar tables.

use std::sync::{Arc, Mutex, OnceLock};

use formcast_grammar::{Expr, Rule, RuleId};
use rustc_hash::FxHashMap;

use xxhash_rust::xxh3::xxh3_128_with_seed;

use super::RuleDfa;

/// Automata are kept when their construction cost more than a copy, by a
/// measure of the work (NFA states + 4 × DFA states): even an object's
/// 100-state key automaton is worth keeping when its family of schemas
/// comes back. (Deterministic, unlike a time threshold, so a background
/// prewarm fills the cache the same way on every machine.)
const MIN_WORK: usize = 64;
/// Byte budget (approximate, about twice what the entries hold). When full,
/// the least recently used entries go until a quarter is free: one giant
/// schema must not flush the formats every other schema uses. 64 MB
/// overflowed over maskbench's 941 schemas once the tokenizer's warm-up had
/// added its formats, and evicted rules later schemas needed (kb_1043's
/// compile: 3.8 ms instead of 0.7); 128 MB kept them, for 42 MB more
/// resident at the end of the run.
const LIMIT_BYTES: usize = 128 << 20;
/// Expression nesting beyond which a body is not keyed (the NFA builder
/// refuses it anyway).
const MAX_DEPTH: usize = 10_000;

/// What a rule's automaton depends on.
pub(super) struct Key {
    hash: u128,
    /// The rules the body refers to, directly or through the bodies built
    /// in place, in order of first reference.
    callees: Vec<RuleId>,
}

impl Key {
    /// Without calls, a rule's trim depends on nothing else: such an
    /// automaton is stored trimmed, and a hit is used as it is.
    pub(super) fn self_contained(&self) -> bool {
        self.callees.is_empty()
    }
}

pub(super) struct Lookup {
    pub dfa: Option<Arc<RuleDfa>>,
    /// The key to store under, when the body may be cached.
    pub key: Option<Key>,
}

struct Entry {
    dfa: Arc<RuleDfa>,
    /// The ids `dfa`'s calls use, in the key's order.
    callees: Vec<RuleId>,
    bytes: usize,
    last_used: u64,
}

struct Cache {
    map: FxHashMap<u128, Entry>,
    bytes: usize,
    clock: u64,
}

fn cache() -> &'static Mutex<Cache> {
    static C: OnceLock<Mutex<Cache>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(Cache { map: FxHashMap::default(), bytes: 0, clock: 0 }))
}

/// A serialization of a body, hashed once written: rules are written as
/// their position among the body's references, and the bodies the NFA
/// builder expands in place are written after it (a worklist, not
/// recursion: right-linear groups chain thousands of rules).
struct Canon<'r> {
    rules: &'r [Rule],
    out: Vec<u8>,
    /// Per referenced rule: its position, and whether its body was queued
    /// as built plainly / inside an `Avoiding` (where every reference is
    /// expanded).
    seen: FxHashMap<RuleId, (u32, [bool; 2])>,
    callees: Vec<RuleId>,
    queue: Vec<(RuleId, bool)>,
}

impl Canon<'_> {
    fn word(&mut self, x: u64) {
        self.out.extend_from_slice(&x.to_le_bytes());
    }

    fn bytes(&mut self, b: &[u8]) {
        self.word(b.len() as u64);
        self.out.extend_from_slice(b);
    }

    fn strings(&mut self, v: &[Vec<u8>]) {
        self.word(v.len() as u64);
        for b in v {
            self.bytes(b);
        }
    }

    fn ranges(&mut self, tag: u64, r: impl ExactSizeIterator<Item = (u32, u32)>) {
        self.word(tag | (r.len() as u64) << 8);
        for (lo, hi) in r {
            self.word((lo as u64) << 32 | hi as u64);
        }
    }

    /// False when the body cannot be keyed (token-level, too deep, a
    /// dangling reference).
    fn walk(&mut self, e: &Expr, avoiding: bool, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        match e {
            Expr::Empty => self.word(1),
            Expr::Nothing => self.word(2),
            Expr::Bytes(b) => {
                self.word(3);
                self.bytes(b);
            }
            Expr::Chars(r) => self.ranges(4, r.iter().copied()),
            Expr::ByteSet(r) => self.ranges(5, r.iter().map(|&(lo, hi)| (lo as u32, hi as u32))),
            Expr::Rule(r) => {
                let Some(rule) = self.rules.get(*r as usize) else { return false };
                let next = self.callees.len() as u32;
                let (pos, queued) = self.seen.entry(*r).or_insert((next, [false; 2]));
                let pos = *pos;
                let expand = rule.inline || avoiding;
                let newly = expand && !std::mem::replace(&mut queued[avoiding as usize], true);
                if pos == next {
                    self.callees.push(*r);
                }
                self.word(6 | (pos as u64) << 10 | (rule.inline as u64) << 9 | (avoiding as u64) << 8);
                if newly {
                    self.queue.push((*r, avoiding));
                }
            }
            Expr::Seq(v) | Expr::Alt(v) => {
                self.word(if matches!(e, Expr::Seq(_)) { 7 } else { 8 } | (v.len() as u64) << 8);
                for x in v {
                    if !self.walk(x, avoiding, depth + 1) {
                        return false;
                    }
                }
            }
            Expr::Repeat { expr, min, max } => {
                self.word(9 | (*min as u64) << 8);
                self.word(max.map_or(u64::MAX, |m| m as u64));
                return self.walk(expr, avoiding, depth + 1);
            }
            Expr::Avoiding { expr, excludes, lazy } => {
                self.word(10 | (*lazy as u64) << 8);
                self.strings(excludes);
                return self.walk(expr, true, depth + 1);
            }
            Expr::TextExcluding(x) => {
                self.word(11);
                self.strings(x);
            }
            Expr::BoundedText { excludes, max_chars, max_tokens } => {
                self.word(12);
                self.strings(excludes);
                self.word(max_chars.map_or(u64::MAX, |m| m as u64));
                self.word(max_tokens.map_or(u64::MAX, |m| m as u64));
            }
            Expr::TextDispatch { cases, excludes, repeat } => {
                self.word(13 | (*repeat as u64) << 8 | (cases.len() as u64) << 9);
                self.strings(excludes);
                for (trigger, body) in cases {
                    self.bytes(trigger);
                    if !self.walk(body, avoiding, depth + 1) {
                        return false;
                    }
                }
            }
            Expr::WordsExcept(w) => {
                self.word(15);
                self.strings(&w.words);
                self.ranges(16, w.leave.iter().map(|&(lo, hi)| (lo as u32, hi as u32)));
                for x in [&w.exit, &w.other, &w.stop] {
                    if !self.walk(x, avoiding, depth + 1) {
                        return false;
                    }
                }
            }
            Expr::Token(_) | Expr::AnyTokenExcept(_) | Expr::TokenDispatch { .. } => return false,
        }
        true
    }
}

/// The hash's seed, drawn once per process: keys are built from request
/// data, and a seed no one knows keeps anyone from crafting two bodies
/// with one key.
fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x5eed);
        h.finish()
    })
}

/// The key of `body` in a grammar with these `rules`, or `None` when it
/// cannot be cached.
/// Capacity past which the serialization buffer is not kept for the next key.
const KEEP_BUFFER: usize = 1 << 20;

thread_local! {
    /// The serialization buffer, kept between keys: a compile keys every
    /// rule, and a buffer grown afresh for each met new pages (a tenth of
    /// the lookups' time in maskbench's slowest compiles).
    static BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

fn key_of(body: &Expr, rules: &[Rule]) -> Option<Key> {
    let mut out = BUFFER.with(|b| b.take());
    out.clear();
    let mut c = Canon { rules, out, seen: FxHashMap::default(), callees: Vec::new(), queue: Vec::new() };
    let written = c.walk(body, false, 0) && {
        let mut ok = true;
        while let Some((r, avoiding)) = c.queue.pop() {
            let pos = c.seen[&r].0;
            c.word(14 | (pos as u64) << 9 | (avoiding as u64) << 8);
            if !c.walk(&rules[r as usize].body, avoiding, 0) {
                ok = false;
                break;
            }
        }
        ok
    };
    let key = written.then(|| Key { hash: xxh3_128_with_seed(&c.out, seed()), callees: std::mem::take(&mut c.callees) });
    if c.out.capacity() <= KEEP_BUFFER {
        BUFFER.with(|b| b.set(std::mem::take(&mut c.out)));
    }
    key
}

/// `dfa` with its calls renamed from `stored` to `ours` (position for position).
fn renamed(dfa: &RuleDfa, stored: &[RuleId], ours: &[RuleId]) -> RuleDfa {
    let map: FxHashMap<RuleId, RuleId> = stored.iter().copied().zip(ours.iter().copied()).collect();
    let mut d = dfa.clone();
    for calls in &mut d.calls {
        for (callee, _) in calls.iter_mut() {
            *callee = map[callee];
        }
    }
    d
}

/// The cached automaton of `body` (its calls renamed to this grammar's
/// rules), or the key to store it under when it may be cached.
pub(super) fn lookup(body: &Expr, rules: &[Rule]) -> Lookup {
    let Some(key) = key_of(body, rules) else { return Lookup { dfa: None, key: None } };
    let hit = cache().lock().ok().and_then(|mut c| {
        c.clock += 1;
        let now = c.clock;
        let e = c.map.get_mut(&key.hash).filter(|e| e.callees.len() == key.callees.len())?;
        e.last_used = now;
        Some((e.dfa.clone(), e.callees.clone()))
    });
    let dfa = hit.map(|(dfa, stored)| if stored == key.callees { dfa } else { Arc::new(renamed(&dfa, &stored, &key.callees)) });
    Lookup { dfa, key: Some(key) }
}

fn size_of(d: &RuleDfa) -> usize {
    let edges: usize = d.byte_trans.iter().map(Vec::len).sum::<usize>() + d.calls.iter().map(Vec::len).sum::<usize>();
    edges * 12 + d.accepting.len() * 80
}

/// Keeps `dfa` (built from `nfa_states` NFA states) under `key` if it was
/// costly enough to build. An automaton with calls must be stored as
/// determinized, before the grammar-wide trim.
pub(super) fn store(key: Key, dfa: Arc<RuleDfa>, nfa_states: usize) {
    if nfa_states + 4 * dfa.accepting.len() < MIN_WORK {
        return;
    }
    // Twice the edges: allocation overhead, and the narrow table a large
    // automaton gets when first assembled.
    let size = size_of(&dfa) * 2;
    if size > LIMIT_BYTES {
        return;
    }
    let mut evicted: Vec<Entry> = Vec::new();
    if let Ok(mut c) = cache().lock() {
        if c.bytes + size > LIMIT_BYTES {
            let mut by_age: Vec<(u64, u128)> = c.map.iter().map(|(k, e)| (e.last_used, *k)).collect();
            by_age.sort_unstable();
            for (_, k) in by_age {
                if c.bytes + size <= LIMIT_BYTES / 4 * 3 {
                    break;
                }
                if let Some(e) = c.map.remove(&k) {
                    c.bytes -= e.bytes;
                    evicted.push(e);
                }
            }
        }
        c.clock += 1;
        let last_used = c.clock;
        if let Some(old) = c.map.insert(key.hash, Entry { dfa, callees: key.callees, bytes: size, last_used }) {
            c.bytes -= old.bytes;
        }
        c.bytes += size;
    }
    // Thousands of automata when the cache was full: freeing them took 5 ms
    // of the compile that filled it (wp_74 over maskbench, a 0.7 ms compile).
    crate::dropper::drop_elsewhere(evicted);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Expr {
        Expr::Bytes(s.as_bytes().to_vec())
    }

    fn rule(name: &str, body: Expr, inline: bool) -> Rule {
        Rule { name: name.into(), body, inline, lexeme: None }
    }

    #[test]
    fn keys_depend_on_the_body_and_what_is_built_in_place_not_on_rule_ids() {
        // 0: a, 1: b (called), 2: c (inline, built in place).
        let rules = vec![rule("a", lit("a"), false), rule("b", lit("b"), false), rule("c", lit("c"), true)];
        let calls = |x: RuleId, y: RuleId| Expr::Seq(vec![lit("{"), Expr::Rule(x), Expr::Rule(y)]);
        let key = |body: &Expr, rules: &[Rule]| key_of(body, rules).unwrap();

        // The same body keyed twice (the buffer is reused) gives one key.
        let first = key(&calls(0, 2), &rules);
        assert_eq!(first.hash, key(&calls(0, 2), &rules).hash);
        assert_eq!(first.callees, vec![0, 2]);
        // A called rule is named by its position: calling b instead of a is
        // the same automaton with other calls.
        assert_eq!(first.hash, key(&calls(1, 2), &rules).hash);
        // Calling the same rule twice is not calling two.
        assert_ne!(first.hash, key(&calls(2, 2), &rules).hash);
        // An inline rule's body is part of the key; a called rule's is not.
        let mut other = rules.clone();
        other[2].body = lit("C");
        assert_ne!(first.hash, key(&calls(0, 2), &other).hash);
        let mut other = rules.clone();
        other[0].body = lit("A");
        assert_eq!(first.hash, key(&calls(0, 2), &other).hash);
        // A different literal is a different key.
        assert_ne!(first.hash, key(&Expr::Seq(vec![lit("["), Expr::Rule(0), Expr::Rule(2)]), &rules).hash);

        // A trie of words: its words and what it leaves to are the key.
        let trie = |words: &[&str], exit: RuleId| {
            Expr::WordsExcept(Arc::new(formcast_grammar::WordsExcept {
                words: words.iter().map(|w| w.as_bytes().to_vec()).collect(),
                leave: vec![(b'a', b'z')],
                exit: Expr::Rule(exit),
                other: Expr::Rule(2),
                stop: lit("\""),
            }))
        };
        let t = key(&trie(&["ab", "c"], 0), &rules);
        assert_eq!(t.callees, vec![0, 2]);
        assert_eq!(t.hash, key(&trie(&["ab", "c"], 1), &rules).hash);
        assert_ne!(t.hash, key(&trie(&["ab", "d"], 0), &rules).hash);
        assert_ne!(t.hash, key(&trie(&["ab", "c"], 2), &rules).hash);
        let mut changed = rules.clone();
        changed[2].body = lit("C");
        assert_ne!(t.hash, key(&trie(&["ab", "c"], 0), &changed).hash, "the inline rule's body counts");
    }
}
