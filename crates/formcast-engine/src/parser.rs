//! The parser state: items over the rule DFAs with shared continuations.
//!
//! This is Earley parsing reorganised for token masks. An item is
//! `(state, cont)`: a position inside one rule's DFA plus a *continuation*,
//! the set of items to resume when the rule finishes (Earley's back-pointer
//! to an origin set, restricted to the items that were waiting for this rule).
//! Continuations live in an [`Arena`] and form a graph-structured stack; a
//! left-recursive rule simply produces a continuation that contains itself.
//!
//! Every continuation carries a 128-bit hash that identifies its structure:
//! the root has a fixed hash and a continuation created while predicting rule
//! `R` from a seed set `S` hashes `(hash(S), R)` — the closure is a pure
//! function of its seeds, so equal hashes mean equal parser futures. The hash
//! of a whole item set is therefore a canonical key for "what can come next",
//! shared across positions, matchers and requests; masks are cached under it.

use formcast_grammar::RuleId;
use rustc_hash::FxHashSet;

use crate::automaton::{flags, lex, Automaton, StateId, DEAD};
use crate::error::EngineError;

/// Index of a continuation node in the arena.
pub type ContId = u32;
/// The continuation of the start rule: finishing it means the output may end.
pub const ROOT_CONT: ContId = 0;
/// Marks a not-yet-allocated continuation of a rule predicted in the current
/// closure (the low bits index the closure's predicted rules).
const PRED_BIT: u32 = 1 << 31;

const ROOT_HASH: u128 = 0x5f3c_a1d2_7e49_b806_0c1b_93f7_2ad4_6e15;

/// A parser item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Item {
    pub state: StateId,
    pub cont: ContId,
}

#[derive(Clone, Copy, Debug)]
struct ContNode {
    start: u32,
    len: u32,
    hash: u128,
    /// A skipped-text lexeme's continuation, predicted where the text
    /// could end: the text may end in it too (see
    /// [`formcast_grammar::Lexeme::Skip`]).
    end_ok: bool,
}

/// Storage for continuation nodes. Append-only except for [`Arena::truncate`],
/// which the mask walk uses to drop nodes created while exploring a token.
#[derive(Debug, Clone)]
pub struct Arena {
    nodes: Vec<ContNode>,
    items: Vec<Item>,
}

/// A restore point of the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArenaMark(u32, u32);

impl ArenaMark {
    /// How many continuations the arena held (ids below this survive a
    /// truncation to the mark).
    pub fn conts(self) -> usize {
        self.0 as usize
    }
}

impl Default for Arena {
    fn default() -> Self {
        Arena { nodes: vec![ContNode { start: 0, len: 0, hash: ROOT_HASH, end_ok: false }], items: Vec::new() }
    }
}

impl Arena {
    #[inline]
    pub fn hash(&self, c: ContId) -> u128 {
        self.nodes[c as usize].hash
    }
    #[inline]
    fn items(&self, c: ContId) -> &[Item] {
        let n = self.nodes[c as usize];
        &self.items[n.start as usize..(n.start + n.len) as usize]
    }
    /// The items waiting in continuation `c` (empty for the root).
    #[inline]
    pub fn cont_items(&self, c: ContId) -> &[Item] {
        self.items(c)
    }
    #[inline]
    pub fn mark(&self) -> ArenaMark {
        ArenaMark(self.nodes.len() as u32, self.items.len() as u32)
    }
    #[inline]
    pub fn truncate(&mut self, m: ArenaMark) {
        debug_assert!(m.0 as usize <= self.nodes.len());
        self.nodes.truncate(m.0 as usize);
        self.items.truncate(m.1 as usize);
    }
    pub fn len(&self) -> usize {
        self.nodes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }
}

#[inline(always)]
fn fmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Folds a 64-bit value into a 128-bit hash (two cross-coupled lanes).
#[inline(always)]
pub fn mix(h: u128, x: u64) -> u128 {
    let a = fmix((h as u64) ^ x);
    let b = fmix(((h >> 64) as u64).wrapping_add(x).wrapping_add(0x9e37_79b9_7f4a_7c15) ^ a.rotate_left(23));
    ((b as u128) << 64) | a as u128
}

#[inline(always)]
fn mix_item(h: u128, state: StateId, cont_hash: u128) -> u128 {
    mix(mix(mix(h, state as u64), cont_hash as u64), (cont_hash >> 64) as u64)
}

/// A key of the set of `items` that does not depend on their order: equal
/// keys mean equal futures (as for [`canonicalize`]; a set holding an item
/// twice has another key, which only misses a memo).
pub(crate) fn unordered_key(arena: &Arena, items: &[Item]) -> u128 {
    let seed: u128 = 0x243f_6a88_85a3_08d3_1319_8a2e_0370_7344;
    items.iter().fold(items.len() as u128, |h, it| h.wrapping_add(mix_item(seed, it.state, arena.hash(it.cont))))
}

/// Sorts items canonically (by state, then continuation hash), drops
/// duplicates that denote the same future, and returns the set's hash.
pub fn canonicalize(arena: &Arena, items: &mut Vec<Item>, can_end: bool) -> u128 {
    items.sort_unstable_by(|x, y| x.state.cmp(&y.state).then_with(|| arena.hash(x.cont).cmp(&arena.hash(y.cont))));
    items.dedup_by(|x, y| x.state == y.state && arena.hash(x.cont) == arena.hash(y.cont));
    let mut h: u128 = 0x243f_6a88_85a3_08d3_1319_8a2e_0370_7344;
    for it in items.iter() {
        h = mix_item(h, it.state, arena.hash(it.cont));
    }
    mix(h, can_end as u64 + 1)
}

/// Reusable buffers for [`closure`].
#[derive(Default, Debug)]
pub struct Scratch {
    work: Vec<(StateId, u32)>,
    seen: FxHashSet<(StateId, u32)>,
    pred_rules: Vec<RuleId>,
    waiters: Vec<Vec<(StateId, u32)>>,
    result: Vec<(StateId, u32)>,
    /// Items visited by the closures run with this scratch, in all (a mask
    /// bounds the work of its closures together with it).
    pub visited: usize,
}

/// Largest item set a single closure may produce; beyond it the grammar is
/// too ambiguous to track and the step fails with an error.
pub const MAX_ITEMS: usize = 200_000;

/// Most items one closure may visit (scanning or not). Completing a rule
/// resumes every item waiting for it, and in a pathologically ambiguous
/// grammar (nested repeats of nullable text) the waiters multiply with the
/// input: the work is bounded here, not only its result.
pub const MAX_VISITED: usize = 4 * MAX_ITEMS;

/// Extends `seeds` (items that just consumed input) with completions and
/// predictions. Writes the resulting scannable items to `out` and returns
/// whether the start rule can finish here.
pub fn closure(
    a: &Automaton,
    arena: &mut Arena,
    seeds: &[Item],
    out: &mut Vec<Item>,
    sc: &mut Scratch,
) -> Result<bool, EngineError> {
    out.clear();
    // Fast path: nothing finishes and nothing is called — the common case
    // inside literals, strings and numbers.
    if seeds.iter().all(|it| a.flags[it.state as usize] & (flags::ACCEPTING | flags::CALLS) == 0) {
        out.extend_from_slice(seeds);
        if out.len() > 1 {
            out.sort_unstable();
            out.dedup();
        }
        return Ok(false);
    }
    sc.work.clear();
    sc.seen.clear();
    sc.pred_rules.clear();
    for w in sc.waiters.iter_mut() {
        w.clear();
    }
    sc.result.clear();
    for it in seeds {
        if sc.seen.insert((it.state, it.cont)) {
            sc.work.push((it.state, it.cont));
        }
    }
    let mut can_end = false;
    while let Some((s, cref)) = sc.work.pop() {
        if sc.seen.len() > MAX_VISITED {
            sc.visited += sc.seen.len();
            return Err(EngineError::Limit(format!(
                "the grammar is too ambiguous here: more than {MAX_VISITED} parser items visited at one position"
            )));
        }
        let f = a.flags[s as usize];
        if f & flags::ACCEPTING != 0 && cref & PRED_BIT == 0 {
            // The rule consumed input and may finish: resume its waiters.
            if cref == ROOT_CONT {
                can_end = true;
            } else {
                if arena.nodes[cref as usize].end_ok {
                    can_end = true;
                }
                for k in 0..arena.nodes[cref as usize].len {
                    let it = arena.items(cref)[k as usize];
                    if sc.seen.insert((it.state, it.cont)) {
                        sc.work.push((it.state, it.cont));
                    }
                }
            }
        }
        if f & flags::CALLS != 0 {
            for &(r, tgt) in a.calls_of(s) {
                let idx = match sc.pred_rules.iter().position(|&x| x == r) {
                    Some(i) => i,
                    None => {
                        sc.pred_rules.push(r);
                        let i = sc.pred_rules.len() - 1;
                        if sc.waiters.len() <= i {
                            sc.waiters.push(Vec::new());
                        }
                        let start = (a.rule_start[r as usize], PRED_BIT | i as u32);
                        if sc.seen.insert(start) {
                            sc.work.push(start);
                        }
                        i
                    }
                };
                sc.waiters[idx].push((tgt, cref));
                if a.nullable[r as usize] && sc.seen.insert((tgt, cref)) {
                    // Aycock–Horspool: step over a rule that can be empty.
                    sc.work.push((tgt, cref));
                }
            }
        }
        if f & flags::SCANS != 0 {
            sc.result.push((s, cref));
            if sc.result.len() > MAX_ITEMS {
                return Err(EngineError::Limit(format!(
                    "the grammar is too ambiguous here: more than {MAX_ITEMS} parser items at one position"
                )));
            }
        }
    }
    sc.visited += sc.seen.len();
    // Allocate the continuations of the predicted rules.
    if !sc.pred_rules.is_empty() {
        // Order-independent, so no sorting: equal seed sets hash equally.
        // (Duplicates of one future under two ids only cost a cache miss.)
        let mut seed_hash: u128 = 0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834;
        for it in seeds {
            seed_hash = seed_hash.wrapping_add(mix_item(0x1234_5678, it.state, arena.hash(it.cont)));
        }
        let base = arena.nodes.len() as u32;
        let resolve = |c: u32| if c & PRED_BIT != 0 { base + (c & !PRED_BIT) } else { c };
        for ws in sc.waiters[..sc.pred_rules.len()].iter_mut() {
            if ws.len() > 1 {
                ws.sort_unstable();
                ws.dedup();
            }
        }
        let hashes = (!a.lex.is_empty()).then(|| waiter_hashes(arena, &sc.pred_rules, &sc.waiters));
        for (i, &r) in sc.pred_rules.iter().enumerate() {
            let start = arena.items.len() as u32;
            let ws = &sc.waiters[i];
            arena.items.extend(ws.iter().map(|&(s, c)| Item { state: s, cont: resolve(c) }));
            let mut hash = match &hashes {
                Some(h) => h[i],
                None => mix(mix(seed_hash, r as u64), 0x7072_6564),
            };
            let end_ok = can_end && a.lex.get(a.rule_start[r as usize] as usize).is_some_and(|&f| f & lex::SKIP != 0);
            if end_ok {
                hash = mix(hash, 0x656e_645f_6f6b);
            }
            arena.nodes.push(ContNode { start, len: ws.len() as u32, hash, end_ok });
        }
        out.extend(sc.result.iter().map(|&(s, c)| Item { state: s, cont: resolve(c) }));
    } else {
        out.extend(sc.result.iter().map(|&(s, c)| Item { state: s, cont: c }));
    }
    Ok(can_end)
}

/// The hashes of the continuations of the rules `preds` predicted in one
/// closure, by their waiters (`waiters[i]`, sorted; a waiter's
/// continuation may be one of these).
///
/// In a grammar with lexemes every lexeme is a called rule, and hashing a
/// continuation by the closure's seeds would make it depend on the lexemes
/// before it, each hashed by the ones before that: no two positions would
/// share a mask. By its waiters, a continuation is known by what it
/// resumes, as in a grammar whose lexemes are in place.
///
/// Continuations that wait on one another in a cycle (left recursion) are
/// hashed together: each member's waiters, with the members written as
/// their rules (a rule is predicted once per closure), make the cycle's
/// hash, and each member is the cycle's hash and its rule. Equal cycles
/// have equal futures. Strongly connected components come from Tarjan's
/// algorithm, run with an explicit stack.
fn waiter_hashes(arena: &Arena, preds: &[RuleId], waiters: &[Vec<(StateId, u32)>]) -> Vec<u128> {
    const UNSEEN: u32 = u32::MAX;
    let n = preds.len();
    let pred_of = |c: u32| (c & PRED_BIT != 0).then_some((c & !PRED_BIT) as usize);
    let mut h = vec![0u128; n];
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut members: Vec<usize> = Vec::new();
    let mut next_index = 0u32;
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        let mut calls: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        members.push(root);
        on_stack[root] = true;
        while let Some(&mut (i, ref mut k)) = calls.last_mut() {
            if let Some(&(_, c)) = waiters[i].get(*k) {
                *k += 1;
                if let Some(j) = pred_of(c) {
                    if index[j] == UNSEEN {
                        index[j] = next_index;
                        low[j] = next_index;
                        next_index += 1;
                        members.push(j);
                        on_stack[j] = true;
                        calls.push((j, 0));
                    } else if on_stack[j] {
                        low[i] = low[i].min(index[j]);
                    }
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[i]);
            }
            if low[i] != index[i] {
                continue;
            }
            // `i` roots a component: its members are on top of the stack,
            // and every continuation they wait on outside it is hashed.
            let from = members.iter().rposition(|&m| m == i).expect("the root is on the stack");
            let component: Vec<usize> = members.drain(from..).collect();
            for &m in &component {
                on_stack[m] = false;
            }
            let inside = |j: usize| component.contains(&j);
            let digest = |m: usize| -> u128 {
                let mut x: u128 = 0x6c65_7865_6d65_0000 ^ preds[m] as u128;
                for &(s, c) in &waiters[m] {
                    let ch = match pred_of(c) {
                        Some(j) if inside(j) => mix(0x6379_636c_6500, preds[j] as u64),
                        Some(j) => h[j],
                        None => arena.hash(c),
                    };
                    x = x.wrapping_add(mix_item(0x1234_5678, s, ch));
                }
                mix(x, 0x7761_6974)
            };
            let cyclic = component.len() > 1 || waiters[i].iter().any(|&(_, c)| pred_of(c) == Some(i));
            if !cyclic {
                h[i] = digest(i);
                continue;
            }
            let whole = component.iter().fold(0x6379_636c_6500_0000u128, |acc, &m| acc.wrapping_add(digest(m)));
            for &m in &component {
                h[m] = mix(whole, preds[m] as u64);
            }
        }
    }
    h
}

/// Items reached from `items` by consuming byte `b` (before closure).
#[inline]
pub fn scan_byte(a: &Automaton, items: &[Item], b: u8, seeds: &mut Vec<Item>) {
    seeds.clear();
    if !a.lex.is_empty() {
        return scan_byte_lexed(a, items, b, seeds);
    }
    for it in items {
        let t = a.next(it.state, b);
        if t != DEAD {
            seeds.push(Item { state: t, cont: it.cont });
        }
    }
}

/// [`scan_byte`] in a grammar with lexemes, as llguidance's lexer cuts
/// them (see [`formcast_grammar::Lexeme`]). All the lexemes under way
/// started at the same position (the cuts below keep it so), and a fresh
/// lexeme item is one predicted here, after a lexeme ended:
/// * greedy: if a lexeme under way takes `b`, no lexeme ends here, so the
///   fresh lexemes that the ones ending here made possible are dropped;
/// * lazy: if `b` completes a lazy lexeme, every other lexeme still going
///   is dropped (the lazy ones completing with it stay).
///
/// Items outside lexemes (an embedded JSON schema's text, token edges)
/// are not cut.
fn scan_byte_lexed(a: &Automaton, items: &[Item], b: u8, seeds: &mut Vec<Item>) {
    let lx = &a.lex;
    let going_on = items.iter().any(|it| lx[it.state as usize] & (lex::IN | lex::FRESH) == lex::IN && a.next(it.state, b) != DEAD);
    let mut lazy_done = false;
    for it in items {
        if going_on && lx[it.state as usize] & lex::FRESH != 0 {
            continue;
        }
        let t = a.next(it.state, b);
        if t != DEAD {
            lazy_done |= lx[t as usize] & lex::LAZY_END != 0;
            seeds.push(Item { state: t, cont: it.cont });
        }
    }
    if lazy_done {
        seeds.retain(|s| {
            let f = lx[s.state as usize];
            f & lex::IN == 0 || f & lex::LAZY_END != 0
        });
    }
}

/// Moves `items` across a token boundary: items in states flagged
/// [`flags::TICKS`] (token-budgeted text that the token just paid for) take
/// their tick; the others stay. Call after every accepted token or string.
pub fn cross_token_boundary(a: &Automaton, items: &mut Vec<Item>) {
    if items.iter().all(|it| a.flags[it.state as usize] & flags::TICKS == 0) {
        return;
    }
    items.retain_mut(|it| {
        if a.flags[it.state as usize] & flags::TICKS == 0 {
            return true;
        }
        it.state = a.tick(it.state);
        it.state != DEAD
    });
}

/// Item sets tracked at a token boundary.
#[derive(Debug, Clone)]
pub struct ItemSet {
    pub items: Vec<Item>,
    pub can_end: bool,
    pub key: u128,
}

impl ItemSet {
    /// The parser state before any input.
    pub fn initial(a: &Automaton, arena: &mut Arena, sc: &mut Scratch) -> Result<ItemSet, EngineError> {
        let seeds = [Item { state: a.rule_start[a.root as usize], cont: ROOT_CONT }];
        let mut items = Vec::new();
        let can_end = closure(a, arena, &seeds, &mut items, sc)?;
        let key = canonicalize(arena, &mut items, can_end);
        Ok(ItemSet { items, can_end, key })
    }

    /// Consumes `bytes`; `None` when they are not a viable continuation.
    pub fn advance_bytes(
        &self,
        a: &Automaton,
        arena: &mut Arena,
        sc: &mut Scratch,
        bytes: &[u8],
    ) -> Result<Option<(Vec<Item>, bool)>, EngineError> {
        let mut cur = self.items.clone();
        let mut can_end = self.can_end;
        let mut seeds = Vec::new();
        let mut next = Vec::new();
        for &b in bytes {
            scan_byte(a, &cur, b, &mut seeds);
            if seeds.is_empty() {
                return Ok(None);
            }
            can_end = closure(a, arena, &seeds, &mut next, sc)?;
            std::mem::swap(&mut cur, &mut next);
        }
        Ok(Some((cur, can_end)))
    }
}
