//! Shortest completions: the fewest bytes that turn the output so far into a
//! complete sentence of the grammar.
//!
//! Used to close an answer whose token budget ran out mid-structure (a JSON
//! object cut inside a string, say): instead of returning an unparseable
//! prefix, the caller appends the shortest text the grammar allows.
//!
//! Two parts:
//! - per automaton state, `dist[s]`: the fewest bytes from `s` to an accepting
//!   state of its rule, where a byte edge costs 1 and a call edge `(r, t)`
//!   costs the shortest sentence of rule `r` (`dist[start of r]`) plus
//!   `dist[t]`. This is a shortest-derivation problem with superior cost
//!   functions, solved exactly by Knuth's generalisation of Dijkstra's
//!   algorithm (computed once per compiled grammar);
//! - per parser state, the cost of an item `(s, cont)` is `dist[s]` plus the
//!   cost of its continuation (the cheapest item waiting in it, recursively;
//!   the root continuation costs 0). The item set's cost is the minimum over
//!   its items, 0 when it can already end.
//!
//! The completion text is then built greedily: at each step the byte whose
//! successor set is cheapest is taken; with exact costs that successor costs
//! exactly one less, so the result is a shortest completion. Token-level
//! grammar edges (special tokens) are not usable for text and are ignored.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use crate::automaton::{flags, Automaton, StateId, DEAD};
use crate::error::EngineError;
use crate::parser::{closure, scan_byte, Arena, ContId, Item, Scratch, ROOT_CONT};

/// "No completion".
pub const INF: u32 = u32::MAX;

/// `dist[s]` for every state (see the module docs); [`INF`] where a rule can
/// only finish through token-level edges.
pub fn state_distances(a: &Automaton) -> Vec<u32> {
    let n = a.n_states();
    // Reverse edges.
    let mut byte_preds: Vec<Vec<StateId>> = vec![Vec::new(); n];
    let mut callers_by_target: Vec<Vec<(StateId, u32)>> = vec![Vec::new(); n];
    let n_rules = a.rule_start.len();
    let mut callers_by_rule: Vec<Vec<(StateId, StateId)>> = vec![Vec::new(); n_rules];
    let mut rules_starting_at: FxHashMap<StateId, Vec<u32>> = FxHashMap::default();
    for (r, &s) in a.rule_start.iter().enumerate() {
        if s != DEAD && (s as usize) < n {
            rules_starting_at.entry(s).or_default().push(r as u32);
        }
    }
    for s in 0..n {
        let mut last = DEAD;
        for t in a.class_rep.iter().map(|&b| a.next(s as StateId, b)) {
            if t != DEAD && t != last {
                // Several classes may lead to the same target: one edge is enough
                // (consecutive duplicates are the common case).
                byte_preds[t as usize].push(s as StateId);
                last = t;
            }
        }
        for &(r, t) in a.calls_of(s as StateId) {
            callers_by_target[t as usize].push((s as StateId, r));
            callers_by_rule[r as usize].push((s as StateId, t));
        }
    }
    let mut dist = vec![INF; n];
    let mut heap: BinaryHeap<Reverse<(u32, StateId)>> = BinaryHeap::new();
    for (s, (d, &f)) in dist.iter_mut().zip(&a.flags).enumerate() {
        if f & flags::ACCEPTING != 0 {
            *d = 0;
            heap.push(Reverse((0, s as StateId)));
        }
    }
    fn relax(dist: &mut [u32], heap: &mut BinaryHeap<Reverse<(u32, StateId)>>, s: StateId, cand: u32) {
        if cand < dist[s as usize] {
            dist[s as usize] = cand;
            heap.push(Reverse((cand, s)));
        }
    }
    while let Some(Reverse((d, x))) = heap.pop() {
        if d > dist[x as usize] {
            continue;
        }
        for &p in &byte_preds[x as usize] {
            relax(&mut dist, &mut heap, p, d.saturating_add(1));
        }
        for &(s, r) in &callers_by_target[x as usize] {
            let m = dist[a.rule_start[r as usize] as usize];
            if m != INF {
                relax(&mut dist, &mut heap, s, m.saturating_add(d));
            }
        }
        if let Some(rules) = rules_starting_at.get(&x) {
            for &r in rules {
                for &(s, t) in &callers_by_rule[r as usize] {
                    let m = dist[t as usize];
                    if m != INF {
                        relax(&mut dist, &mut heap, s, d.saturating_add(m));
                    }
                }
            }
        }
    }
    dist
}

/// The fewest bytes that complete the item set `items` (0 when `can_end`).
pub fn set_cost(dist: &[u32], arena: &Arena, items: &[Item], can_end: bool) -> u32 {
    set_cost_memo(dist, arena, items, can_end, &mut Vec::new())
}

/// Not yet known in a [`set_cost_memo`] memo.
const UNKNOWN: u32 = u32::MAX - 1;

/// [`set_cost`] with `memo[c]`, the cost of continuation `c` once known.
/// A continuation never changes once made and only waits in older ones, so
/// a cost stays true for as long as the continuation is in the arena: a
/// caller that truncates the arena truncates the memo with it. A completion
/// asks this at every byte, over continuations it mostly asked about
/// before; without the memo, every step re-walked and re-relaxed them all.
pub fn set_cost_memo(dist: &[u32], arena: &Arena, items: &[Item], can_end: bool, memo: &mut Vec<u32>) -> u32 {
    if can_end {
        return 0;
    }
    let known = |memo: &Vec<u32>, c: ContId| c == ROOT_CONT || memo.get(c as usize).is_some_and(|&x| x != UNKNOWN);
    // The continuations not known yet, reachable from the items; their costs
    // by relaxation to a fixpoint (the continuation graph may have cycles;
    // costs are non-negative, so a cycle never helps).
    let mut order: Vec<ContId> = Vec::new();
    let mut index: FxHashMap<ContId, usize> = FxHashMap::default();
    let mut stack: Vec<ContId> = items.iter().map(|it| it.cont).collect();
    while let Some(c) = stack.pop() {
        if known(memo, c) || index.contains_key(&c) {
            continue;
        }
        index.insert(c, order.len());
        order.push(c);
        for it in arena.cont_items(c) {
            stack.push(it.cont);
        }
    }
    let mut cost = vec![INF; order.len()];
    let cont_cost = |cost: &[u32], c: ContId| match index.get(&c) {
        Some(&k) => cost[k],
        None if c == ROOT_CONT => 0,
        None => memo[c as usize],
    };
    // A continuation's cost depends on those it waits in (towards the root),
    // which the walk above found after it: relaxing in reverse order of
    // discovery settles a chain in one pass instead of one pass per link.
    loop {
        let mut changed = false;
        for (k, &c) in order.iter().enumerate().rev() {
            let mut best = cost[k];
            for it in arena.cont_items(c) {
                let d = dist[it.state as usize];
                let cc = cont_cost(&cost, it.cont);
                if d != INF && cc != INF {
                    best = best.min(d.saturating_add(cc));
                }
            }
            if best < cost[k] {
                cost[k] = best;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut best = INF;
    for it in items {
        let d = dist[it.state as usize];
        let cc = cont_cost(&cost, it.cont);
        if d != INF && cc != INF {
            best = best.min(d.saturating_add(cc));
        }
    }
    for (k, &c) in order.iter().enumerate() {
        if memo.len() <= c as usize {
            memo.resize(c as usize + 1, UNKNOWN);
        }
        memo[c as usize] = cost[k];
    }
    best
}

/// Most parser items the closures of one completion may visit together.
/// Each step tries a byte of every class some item scans, so a long
/// completion through nested repeats of nullable text (a structural tag of
/// seven nested unbounded repeats) ran 4,096 steps of closures of hundreds
/// of thousands of items: 40 s (0.1 s to the error with this bound). Every
/// completion in the tests (dev-set answers, a document with every JSON
/// value kind) stays under 100,000.
pub const MAX_COMPLETION_ITEMS: usize = 500_000;

/// A shortest byte string that completes `items`, at most `max_len` bytes
/// long; `None` when there is none that short (or none at all); a
/// `Limit` error past [`MAX_COMPLETION_ITEMS`]. The arena is restored
/// before returning.
pub fn shortest_completion(
    a: &Automaton,
    dist: &[u32],
    arena: &mut Arena,
    sc: &mut Scratch,
    items: &[Item],
    can_end: bool,
    max_len: usize,
) -> Result<Option<Vec<u8>>, EngineError> {
    let mut memo: Vec<u32> = Vec::new();
    let start_cost = set_cost_memo(dist, arena, items, can_end, &mut memo);
    if start_cost == INF || start_cost as usize > max_len {
        return Ok(None);
    }
    // One representative byte per byte class (all bytes of a class behave
    // alike in every state); printable ASCII preferred, for readable output
    // where the grammar leaves the choice open (e.g. a minLength string).
    let mut rep: Vec<Option<u8>> = vec![None; a.n_classes];
    for b in (0x20u8..0x7f).chain(0x00..0x20).chain(0x7f..=0xff) {
        let c = a.class_of[b as usize] as usize;
        if rep[c].is_none() {
            rep[c] = Some(b);
        }
    }
    let mark0 = arena.mark();
    let visited0 = sc.visited;
    // A closure that keeps within the completion's budget; on any error the
    // arena is restored first.
    let close = |arena: &mut Arena, sc: &mut Scratch, seeds: &[Item], next: &mut Vec<Item>| -> Result<bool, EngineError> {
        let end = closure(a, arena, seeds, next, sc).and_then(|end| {
            if sc.visited - visited0 > MAX_COMPLETION_ITEMS {
                return Err(EngineError::Limit(format!(
                    "the grammar is too ambiguous here to complete: more than {MAX_COMPLETION_ITEMS} parser items visited"
                )));
            }
            Ok(end)
        });
        if end.is_err() {
            arena.truncate(mark0);
        }
        end
    };
    let mut cur: Vec<Item> = items.to_vec();
    let mut cur_end = can_end;
    let mut cur_cost = start_cost;
    let mut out = Vec::with_capacity(start_cost as usize);
    let mut seeds = Vec::new();
    let mut next = Vec::new();
    let result = loop {
        if cur_end || cur_cost == 0 {
            break Some(out);
        }
        // Candidate bytes: the classes some item can scan.
        let mut bytes = [0u64; 4];
        for it in &cur {
            for (w, x) in bytes.iter_mut().zip(a.byte_set(it.state)) {
                *w |= x;
            }
        }
        let mut classes_seen = vec![false; a.n_classes];
        let mut best: Option<(u32, u8)> = None;
        for b in 0..=255u8 {
            if bytes[b as usize >> 6] >> (b & 63) & 1 == 0 {
                continue;
            }
            let c = a.class_of[b as usize] as usize;
            if std::mem::replace(&mut classes_seen[c], true) {
                continue;
            }
            let b = rep[c].unwrap_or(b);
            let m = arena.mark();
            scan_byte(a, &cur, b, &mut seeds);
            if seeds.is_empty() {
                continue;
            }
            let end = close(arena, sc, &seeds, &mut next)?;
            let cost = set_cost_memo(dist, arena, &next, end, &mut memo);
            arena.truncate(m);
            // Continuations from m on are gone (their ids will be reused).
            memo.truncate(m.conts());
            if cost != INF && best.is_none_or(|(bc, _)| cost < bc) {
                best = Some((cost, b));
                if cost.saturating_add(1) <= cur_cost {
                    break; // cannot do better than one byte less
                }
            }
        }
        let Some((cost, b)) = best else { break None };
        if out.len() >= max_len {
            break None;
        }
        scan_byte(a, &cur, b, &mut seeds);
        cur_end = close(arena, sc, &seeds, &mut next)?;
        std::mem::swap(&mut cur, &mut next);
        cur_cost = cost;
        out.push(b);
    };
    arena.truncate(mark0);
    Ok(result)
}
