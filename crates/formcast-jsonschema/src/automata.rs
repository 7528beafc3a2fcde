//! Deterministic automata over Unicode scalar values, for the boolean
//! operations a grammar cannot express directly: a pattern intersected with
//! another pattern or a length bound, the complement of a key set
//! (`additionalProperties`), `not` on strings and numbers, membership tests of
//! `enum` values, emptiness checks for `oneOf` disjointness.
//!
//! Transitions are labelled with character ranges, so Unicode-wide classes
//! cost one edge. Every operation is bounded by [`MAX_DFA_STATES`]: beyond
//! it the caller reports the keyword as too large instead of hanging.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap as HashMap;


use crate::re::{Re, SCALARS};

/// Largest automaton built by any operation.
pub const MAX_DFA_STATES: usize = 40_000;
/// Largest NFA (repetition bounds are unrolled).
pub const MAX_NFA_STATES: usize = 200_000;
/// Largest automaton written out as grammar rules (one per state) when no
/// reasonably small regular expression exists.
pub const MAX_RULE_DFA_STATES: usize = 4096;
/// Largest regular expression produced from an automaton.
pub const MAX_RE_COST: u64 = 200_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutomatonError {
    TooLarge(&'static str),
    /// The deadline set with [`set_deadline`] passed.
    Timeout,
}

impl std::fmt::Display for AutomatonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AutomatonError::TooLarge(what) => write!(f, "the {what} is too large to build exactly"),
            AutomatonError::Timeout => write!(f, "building the automaton ran past the time budget"),
        }
    }
}

thread_local! {
    static DEADLINE: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// Sets the deadline of automaton operations on this thread (the
/// translation's time budget), so that a pathological pattern fails fast.
pub fn set_deadline(at: Option<std::time::Instant>) {
    DEADLINE.with(|d| d.set(at));
}

fn check_deadline() -> AResult<()> {
    DEADLINE.with(|d| match d.get() {
        Some(at) if std::time::Instant::now() > at => Err(AutomatonError::Timeout),
        _ => Ok(()),
    })
}

type AResult<T> = Result<T, AutomatonError>;

// ------------------------------------------------------------------ NFA --

/// Thompson NFA with ε-edges, character-range edges and the two ECMA
/// assertions (`^` usable only before any character, `$` entering a layer
/// where no character may follow).
#[derive(Default)]
struct Nfa {
    eps: Vec<Vec<u32>>,
    chars: Vec<Vec<(u32, u32, u32)>>,
    start_eps: Vec<Vec<u32>>,
    end_eps: Vec<Vec<u32>>,
}

impl Nfa {
    fn state(&mut self) -> AResult<u32> {
        if self.eps.len() >= MAX_NFA_STATES {
            return Err(AutomatonError::TooLarge("regular expression"));
        }
        self.eps.push(Vec::new());
        self.chars.push(Vec::new());
        self.start_eps.push(Vec::new());
        self.end_eps.push(Vec::new());
        Ok(self.eps.len() as u32 - 1)
    }

    fn build(&mut self, re: &Re, from: u32, to: u32) -> AResult<()> {
        match re {
            Re::Nothing => {}
            Re::Empty => self.eps[from as usize].push(to),
            Re::Start => self.start_eps[from as usize].push(to),
            Re::End => self.end_eps[from as usize].push(to),
            Re::Chars(r) => {
                for &(a, b) in r {
                    self.chars[from as usize].push((a, b, to));
                }
            }
            Re::Seq(v) => {
                let mut cur = from;
                for (i, x) in v.iter().enumerate() {
                    let nxt = if i + 1 == v.len() { to } else { self.state()? };
                    self.build(x, cur, nxt)?;
                    cur = nxt;
                }
            }
            Re::Alt(v) => {
                for x in v {
                    // A fresh entry state per branch keeps ε-loops of one
                    // branch from leaking into another.
                    let s = self.state()?;
                    self.eps[from as usize].push(s);
                    self.build(x, s, to)?;
                }
            }
            Re::Repeat(x, min, max) => {
                let mut cur = from;
                for _ in 0..*min {
                    let n = self.state()?;
                    self.build(x, cur, n)?;
                    cur = n;
                }
                match max {
                    None => {
                        let lp = self.state()?;
                        let body_end = self.state()?;
                        self.eps[cur as usize].push(lp);
                        self.build(x, lp, body_end)?;
                        self.eps[body_end as usize].push(lp);
                        self.eps[lp as usize].push(to);
                    }
                    Some(max) => {
                        for _ in *min..*max {
                            let n = self.state()?;
                            self.eps[cur as usize].push(to);
                            self.build(x, cur, n)?;
                            cur = n;
                        }
                        self.eps[cur as usize].push(to);
                    }
                }
            }
        }
        Ok(())
    }
}

const END_LAYER: u32 = 1 << 31;

// ------------------------------------------------------------------ DFA --

/// A partial DFA: start state 0, missing transitions reject.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Dfa {
    /// Sorted, disjoint `(lo, hi, target)` per state.
    pub trans: Vec<Vec<(u32, u32, u32)>>,
    pub accept: Vec<bool>,
}

#[derive(Clone, Copy)]
enum Op {
    And,
    Or,
    Diff,
}

impl Dfa {
    /// The DFA of a regular expression (assertions included).
    pub fn from_re(re: &Re) -> AResult<Dfa> {
        let mut nfa = Nfa::default();
        let s = nfa.state()?;
        let f = nfa.state()?;
        nfa.build(re, s, f)?;
        Self::determinize(&nfa, s, f)
    }

    /// ε-closure of `set` (in place, sorted). `mark` is a scratch array of
    /// two entries per NFA state (normal and end layer) holding `stamp` for
    /// visited states.
    fn closure(nfa: &Nfa, set: &mut Vec<u32>, at_start: bool, mark: &mut [u32], stamp: u32) {
        let slot = |x: u32| -> usize { ((x & !END_LAYER) as usize) * 2 + (x >> 31) as usize };
        let mut stack: Vec<u32> = Vec::with_capacity(set.len() * 2);
        for &x in set.iter() {
            mark[slot(x)] = stamp;
            stack.push(x);
        }
        while let Some(x) = stack.pop() {
            let layer = x & END_LAYER;
            let s = (x & !END_LAYER) as usize;
            let mut visit = |t: u32, set: &mut Vec<u32>, stack: &mut Vec<u32>| {
                if mark[slot(t)] != stamp {
                    mark[slot(t)] = stamp;
                    set.push(t);
                    stack.push(t);
                }
            };
            for &t in &nfa.eps[s] {
                visit(t | layer, set, &mut stack);
            }
            if at_start {
                for &t in &nfa.start_eps[s] {
                    visit(t | layer, set, &mut stack);
                }
            }
            for &t in &nfa.end_eps[s] {
                visit(t | END_LAYER, set, &mut stack);
            }
        }
        set.sort_unstable();
    }

    fn determinize(nfa: &Nfa, start: u32, fin: u32) -> AResult<Dfa> {
        let mut mark = vec![0u32; nfa.eps.len() * 2];
        let mut stamp = 1u32;
        let mut init = vec![start];
        Self::closure(nfa, &mut init, true, &mut mark, stamp);
        let mut index: HashMap<Vec<u32>, u32> = HashMap::default();
        let mut sets = vec![init.clone()];
        index.insert(init, 0);
        let mut dfa = Dfa { trans: Vec::new(), accept: Vec::new() };
        let mut i = 0;
        let mut edges: Vec<(u32, u32, u32)> = Vec::new();
        while i < sets.len() {
            if sets.len() > MAX_DFA_STATES {
                return Err(AutomatonError::TooLarge("automaton"));
            }
            if i % 256 == 0 {
                check_deadline()?;
            }
            dfa.accept.push(sets[i].iter().any(|&x| x & !END_LAYER == fin));
            edges.clear();
            for &x in &sets[i] {
                if x & END_LAYER == 0 {
                    edges.extend_from_slice(&nfa.chars[x as usize]);
                }
            }
            let mut out = Vec::new();
            for (lo, hi, mut tgt) in split_edges(&edges) {
                stamp += 1;
                Self::closure(nfa, &mut tgt, false, &mut mark, stamp);
                let n = sets.len() as u32;
                let id = match index.get(&tgt) {
                    Some(&id) => id,
                    None => {
                        index.insert(tgt.clone(), n);
                        sets.push(tgt);
                        n
                    }
                };
                push_range(&mut out, lo, hi, id);
            }
            dfa.trans.push(out);
            i += 1;
        }
        Ok(dfa.trim())
    }

    /// Accepts nothing.
    pub fn empty() -> Dfa {
        Dfa { trans: vec![vec![]], accept: vec![false] }
    }

    /// Accepts every string.
    pub fn universal() -> Dfa {
        Dfa { trans: vec![SCALARS.iter().map(|&(a, b)| (a, b, 0)).collect()], accept: vec![true] }
    }

    pub fn len(&self) -> usize {
        self.accept.len()
    }

    pub fn is_empty_language(&self) -> bool {
        !self.accept.iter().any(|&a| a)
    }

    pub fn matches(&self, s: &str) -> bool {
        let mut q = 0u32;
        for c in s.chars() {
            let c = c as u32;
            let t = &self.trans[q as usize];
            match t.binary_search_by(|&(lo, hi, _)| {
                if hi < c {
                    std::cmp::Ordering::Less
                } else if lo > c {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            }) {
                Ok(k) => q = t[k].2,
                Err(_) => return false,
            }
        }
        self.accept[q as usize]
    }

    /// Removes states that cannot reach an accepting state (and renumbers
    /// so that the start stays 0).
    fn trim(self) -> Dfa {
        let n = self.len();
        let mut rev: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (s, t) in self.trans.iter().enumerate() {
            for &(_, _, d) in t {
                rev[d as usize].push(s as u32);
            }
        }
        let mut live = vec![false; n];
        let mut stack: Vec<u32> = (0..n as u32).filter(|&s| self.accept[s as usize]).collect();
        for &s in &stack {
            live[s as usize] = true;
        }
        while let Some(s) = stack.pop() {
            for &p in &rev[s as usize] {
                if !live[p as usize] {
                    live[p as usize] = true;
                    stack.push(p);
                }
            }
        }
        if !live[0] {
            return Dfa::empty();
        }
        // Reachable live states, BFS from 0.
        let mut map = vec![u32::MAX; n];
        let mut order = vec![0u32];
        map[0] = 0;
        let mut k = 0;
        while k < order.len() {
            let s = order[k] as usize;
            for &(_, _, d) in &self.trans[s] {
                if live[d as usize] && map[d as usize] == u32::MAX {
                    map[d as usize] = order.len() as u32;
                    order.push(d);
                }
            }
            k += 1;
        }
        let mut out = Dfa { trans: Vec::with_capacity(order.len()), accept: Vec::with_capacity(order.len()) };
        for &s in &order {
            out.accept.push(self.accept[s as usize]);
            let mut t = Vec::new();
            for &(lo, hi, d) in &self.trans[s as usize] {
                if live[d as usize] {
                    push_range(&mut t, lo, hi, map[d as usize]);
                }
            }
            out.trans.push(t);
        }
        out
    }

    /// The minimal equivalent DFA (Hopcroft's partition refinement over
    /// the coarsest alphabet classes; the DFA is completed with a dead state
    /// for the refinement and trimmed again after).
    pub fn minimize(&self) -> Dfa {
        let n = self.len();
        if n <= 1 {
            return self.clone();
        }
        let classes = alphabet_classes(std::iter::once(self));
        let k = classes.len();
        let dead = n; // extra sink state
        let total = n + 1;
        let mut table = vec![dead as u32; total * k];
        for (s, t) in self.trans.iter().enumerate() {
            for &(lo, hi, d) in t {
                let mut c = classes.partition_point(|&(_, chi)| chi < lo);
                while c < k && classes[c].0 <= hi {
                    table[s * k + c] = d;
                    c += 1;
                }
            }
        }
        // Inverse transitions per class.
        let mut inv_start = vec![0u32; k * total + 1];
        for s in 0..total {
            for c in 0..k {
                inv_start[c * total + table[s * k + c] as usize + 1] += 1;
            }
        }
        for i in 1..inv_start.len() {
            inv_start[i] += inv_start[i - 1];
        }
        let mut fill = inv_start.clone();
        let mut inv = vec![0u32; total * k];
        for s in 0..total {
            for c in 0..k {
                let slot = c * total + table[s * k + c] as usize;
                inv[fill[slot] as usize] = s as u32;
                fill[slot] += 1;
            }
        }
        // Initial partition: accepting / rejecting (the dead state rejects).
        let mut block_of = vec![0u32; total];
        let mut blocks: Vec<Vec<u32>> = vec![Vec::new(), Vec::new()];
        for s in 0..total {
            let b = if s < n && self.accept[s] { 0 } else { 1 };
            block_of[s] = b;
            blocks[b as usize].push(s as u32);
        }
        blocks.retain(|b| !b.is_empty());
        for (i, b) in blocks.iter().enumerate() {
            for &s in b {
                block_of[s as usize] = i as u32;
            }
        }
        let mut in_work: Vec<bool> = vec![false; blocks.len() * k];
        let mut work: Vec<(u32, u32)> = Vec::new();
        let smallest = (0..blocks.len()).min_by_key(|&b| blocks[b].len()).unwrap();
        for c in 0..k {
            work.push((smallest as u32, c as u32));
            in_work[smallest * k + c] = true;
        }
        let mut mark = vec![false; total];
        let mut touched: Vec<u32> = Vec::new();
        let mut hits: Vec<Vec<u32>> = vec![Vec::new(); blocks.len()];
        while let Some((a, c)) = work.pop() {
            in_work[a as usize * k + c as usize] = false;
            // X = states going into block `a` on class `c`.
            let mut xs: Vec<u32> = Vec::new();
            for &t in &blocks[a as usize] {
                let slot = c as usize * total + t as usize;
                for &p in &inv[inv_start[slot] as usize..inv_start[slot + 1] as usize] {
                    if !mark[p as usize] {
                        mark[p as usize] = true;
                        xs.push(p);
                    }
                }
            }
            for &p in &xs {
                let b = block_of[p as usize];
                if hits[b as usize].is_empty() {
                    touched.push(b);
                }
                hits[b as usize].push(p);
            }
            for &p in &xs {
                mark[p as usize] = false;
            }
            for b in touched.drain(..) {
                let inside = std::mem::take(&mut hits[b as usize]);
                if inside.len() == blocks[b as usize].len() {
                    continue;
                }
                // Split: `inside` becomes a new block.
                let new_id = blocks.len() as u32;
                for &p in &inside {
                    block_of[p as usize] = new_id;
                }
                let rest: Vec<u32> = blocks[b as usize].iter().copied().filter(|&p| block_of[p as usize] == b).collect();
                blocks[b as usize] = rest;
                blocks.push(inside);
                hits.push(Vec::new());
                in_work.extend(std::iter::repeat(false).take(k));
                for c2 in 0..k {
                    let (bi, ni) = (b as usize * k + c2, new_id as usize * k + c2);
                    if in_work[bi] {
                        in_work[ni] = true;
                        work.push((new_id, c2 as u32));
                    } else {
                        let pick = if blocks[new_id as usize].len() <= blocks[b as usize].len() { new_id } else { b };
                        in_work[pick as usize * k + c2] = true;
                        work.push((pick, c2 as u32));
                    }
                }
            }
        }
        // Build the quotient, dropping the dead block, start block first.
        let dead_block = block_of[dead];
        let mut map = vec![u32::MAX; blocks.len()];
        let mut order: Vec<usize> = Vec::new();
        map[block_of[0] as usize] = 0;
        order.push(0);
        let mut i = 0;
        while i < order.len() {
            let s = order[i];
            for c in 0..k {
                let d = table[s * k + c] as usize;
                let b = block_of[d] as usize;
                if block_of[d] != dead_block && map[b] == u32::MAX {
                    map[b] = order.len() as u32;
                    order.push(d);
                }
            }
            i += 1;
        }
        let mut out = Dfa { trans: Vec::with_capacity(order.len()), accept: Vec::with_capacity(order.len()) };
        for &s in &order {
            out.accept.push(s < n && self.accept[s]);
            let mut t = Vec::new();
            for c in 0..k {
                let d = table[s * k + c] as usize;
                if block_of[d] != dead_block {
                    push_range(&mut t, classes[c].0, classes[c].1, map[block_of[d] as usize]);
                }
            }
            out.trans.push(t);
        }
        if block_of[0] == dead_block {
            return Dfa::empty();
        }
        out
    }

    fn product(&self, other: &Dfa, op: Op) -> AResult<Dfa> {
        const DEAD: u32 = u32::MAX;
        let mut index: HashMap<(u32, u32), u32> = HashMap::default();
        let mut pairs = vec![(0u32, 0u32)];
        index.insert((0, 0), 0);
        let mut out = Dfa { trans: Vec::new(), accept: Vec::new() };
        let mut i = 0;
        while i < pairs.len() {
            if pairs.len() > MAX_DFA_STATES {
                return Err(AutomatonError::TooLarge("automaton"));
            }
            if i % 256 == 0 {
                check_deadline()?;
            }
            let (a, b) = pairs[i];
            let acc_a = a != DEAD && self.accept[a as usize];
            let acc_b = b != DEAD && other.accept[b as usize];
            out.accept.push(match op {
                Op::And => acc_a && acc_b,
                Op::Or => acc_a || acc_b,
                Op::Diff => acc_a && !acc_b,
            });
            let ta: &[(u32, u32, u32)] = if a == DEAD { &[] } else { &self.trans[a as usize] };
            let tb: &[(u32, u32, u32)] = if b == DEAD { &[] } else { &other.trans[b as usize] };
            let mut edges = Vec::new();
            for (lo, hi, da, db) in merge_ranges(ta, tb) {
                let useful = match op {
                    Op::And => da != DEAD && db != DEAD,
                    Op::Or => da != DEAD || db != DEAD,
                    Op::Diff => da != DEAD,
                };
                if !useful {
                    continue;
                }
                let n = pairs.len() as u32;
                let id = *index.entry((da, db)).or_insert_with(|| {
                    pairs.push((da, db));
                    n
                });
                push_range(&mut edges, lo, hi, id);
            }
            out.trans.push(edges);
            i += 1;
        }
        // Minimizing is costly: only worth it once the product is big.
        let t = out.trim();
        Ok(if t.len() > 256 { t.minimize() } else { t })
    }

    pub fn intersect(&self, other: &Dfa) -> AResult<Dfa> {
        self.product(other, Op::And)
    }

    pub fn union(&self, other: &Dfa) -> AResult<Dfa> {
        self.product(other, Op::Or)
    }

    pub fn difference(&self, other: &Dfa) -> AResult<Dfa> {
        self.product(other, Op::Diff)
    }

    pub fn complement(&self) -> AResult<Dfa> {
        Dfa::universal().difference(self)
    }

    /// Whether the two automata accept a common string.
    pub fn intersects(&self, other: &Dfa) -> AResult<bool> {
        Ok(!self.intersect(other)?.is_empty_language())
    }

    /// Language inclusion.
    pub fn subset_of(&self, other: &Dfa) -> AResult<bool> {
        Ok(self.difference(other)?.is_empty_language())
    }

    /// A regular expression for the language, by state elimination (states
    /// with the fewest in × out edges first, which keeps the usual shapes —
    /// chains, tries, digit walkers — linear).
    pub fn to_re(&self) -> AResult<Re> {
        if self.is_empty_language() {
            return Ok(Re::Nothing);
        }
        let min = self.minimize();
        if min.len() < self.len() {
            return min.to_re();
        }
        let n = self.len() as u32;
        let (start, fin) = (n, n + 1);
        // Edge labels with their cost, so growth is tracked without
        // re-walking expressions.
        let mut out: Vec<BTreeMap<u32, (Re, u64)>> = vec![BTreeMap::new(); n as usize + 2];
        let mut inc: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n as usize + 2];
        let mut grouped: BTreeMap<(u32, u32), Vec<(u32, u32)>> = BTreeMap::new();
        for (s, t) in self.trans.iter().enumerate() {
            for &(lo, hi, d) in t {
                grouped.entry((s as u32, d)).or_default().push((lo, hi));
            }
        }
        let add = |out: &mut Vec<BTreeMap<u32, (Re, u64)>>, inc: &mut Vec<BTreeSet<u32>>, p: u32, q: u32, r: Re, c: u64| {
            let merged = match out[p as usize].remove(&q) {
                Some((old, oc)) => (Re::alt(vec![old, r]), oc + c + 1),
                None => (r, c),
            };
            out[p as usize].insert(q, merged);
            inc[q as usize].insert(p);
        };
        for ((p, q), ranges) in grouped {
            add(&mut out, &mut inc, p, q, Re::chars(ranges), 1);
        }
        add(&mut out, &mut inc, start, 0, Re::Empty, 1);
        for s in 0..n {
            if self.accept[s as usize] {
                add(&mut out, &mut inc, s, fin, Re::Empty, 1);
            }
        }
        // States are eliminated cheapest first (fewest paths created, then
        // fewest edges; lowest id on ties): a queue keyed by that cost, whose
        // keys are refreshed for the neighbours of each eliminated state
        // (the only states whose edges change). Scanning every state for the
        // minimum at each step was quadratic.
        let degree_key = |q: u32, inc: &[BTreeSet<u32>], out: &[BTreeMap<u32, (Re, u64)>]| {
            let i = inc[q as usize].iter().filter(|&&p| p != q).count();
            let o = out[q as usize].keys().filter(|&&r| r != q).count();
            (i * o, i + o)
        };
        let mut keys: Vec<(usize, usize)> = (0..n).map(|q| degree_key(q, &inc, &out)).collect();
        let mut queue: BTreeSet<(usize, usize, u32)> = (0..n).map(|q| (keys[q as usize].0, keys[q as usize].1, q)).collect();
        let mut total_cost: u64 = 0;
        while let Some((_, _, q)) = queue.pop_first() {
            check_deadline()?;
            let (self_loop, loop_cost) = match out[q as usize].remove(&q) {
                Some((r, c)) => (Re::star(r), c + 1),
                None => (Re::Empty, 0),
            };
            inc[q as usize].remove(&q);
            let preds: Vec<u32> = inc[q as usize].iter().copied().collect();
            let succs: Vec<(u32, (Re, u64))> = std::mem::take(&mut out[q as usize]).into_iter().collect();
            for &p in &preds {
                let (into, ic) = out[p as usize].remove(&q).expect("edge into q");
                for (r, (from, fc)) in &succs {
                    let c = ic + loop_cost + fc + 1;
                    total_cost = total_cost.saturating_add(c);
                    if total_cost > MAX_RE_COST {
                        return Err(AutomatonError::TooLarge("expression"));
                    }
                    let piece = Re::seq(vec![into.clone(), self_loop.clone(), from.clone()]);
                    add(&mut out, &mut inc, p, *r, piece, c);
                }
            }
            for (r, _) in &succs {
                inc[*r as usize].remove(&q);
            }
            for t in preds.iter().copied().chain(succs.iter().map(|(r, _)| *r)) {
                if t >= n || !queue.contains(&(keys[t as usize].0, keys[t as usize].1, t)) {
                    continue;
                }
                let k = degree_key(t, &inc, &out);
                if k != keys[t as usize] {
                    queue.remove(&(keys[t as usize].0, keys[t as usize].1, t));
                    keys[t as usize] = k;
                    queue.insert((k.0, k.1, t));
                }
            }
        }
        Ok(out[start as usize].remove(&fin).map(|(r, _)| r).unwrap_or(Re::Nothing))
    }

    /// Shortest accepted length, and the longest (`None`: unbounded).
    pub fn len_bounds(&self) -> Option<(u64, Option<u64>)> {
        if self.is_empty_language() {
            return None;
        }
        // The DFA is trimmed: every state reaches acceptance, so any cycle
        // makes the language infinite.
        let n = self.len();
        let mut dist = vec![u64::MAX; n];
        dist[0] = 0;
        let mut queue = std::collections::VecDeque::from([0usize]);
        while let Some(s) = queue.pop_front() {
            for &(_, _, d) in &self.trans[s] {
                if dist[d as usize] == u64::MAX {
                    dist[d as usize] = dist[s] + 1;
                    queue.push_back(d as usize);
                }
            }
        }
        let min = (0..n).filter(|&s| self.accept[s]).map(|s| dist[s]).min().unwrap();
        // Longest path in a DAG (None on a cycle).
        let mut state = vec![0u8; n]; // 0 new, 1 on stack, 2 done
        let mut longest = vec![0i64; n];
        // Depth-first with an explicit stack of (state, next edge): a
        // chain automaton is as deep as its longest string.
        let mut acyclic = || -> bool {
            let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
            state[0] = 1;
            longest[0] = if self.accept[0] { 0 } else { i64::MIN };
            while let Some(&mut (s, ref mut k)) = stack.last_mut() {
                if let Some(&(_, _, t)) = self.trans[s].get(*k) {
                    *k += 1;
                    let t = t as usize;
                    match state[t] {
                        1 => return false,
                        0 => {
                            state[t] = 1;
                            longest[t] = if self.accept[t] { 0 } else { i64::MIN };
                            stack.push((t, 0));
                        }
                        _ => {
                            if longest[t] != i64::MIN {
                                longest[s] = longest[s].max(longest[t] + 1);
                            }
                        }
                    }
                } else {
                    state[s] = 2;
                    stack.pop();
                    if let Some(&(p, _)) = stack.last() {
                        if longest[s] != i64::MIN {
                            longest[p] = longest[p].max(longest[s] + 1);
                        }
                    }
                }
            }
            true
        };
        let max = if n < 50_000 && acyclic() { Some(longest[0] as u64) } else { None };
        Some((min, max))
    }

    /// The finite language as a list of strings (`None` when infinite or
    /// larger than `limit`).
    pub fn enumerate(&self, limit: usize) -> Option<Vec<String>> {
        let (_, max) = self.len_bounds()?;
        max?;
        let mut out = Vec::new();
        let mut stack: Vec<(u32, String)> = vec![(0, String::new())];
        while let Some((s, w)) = stack.pop() {
            if self.accept[s as usize] {
                out.push(w.clone());
                if out.len() > limit {
                    return None;
                }
            }
            for &(lo, hi, d) in self.trans[s as usize].iter().rev() {
                if (hi - lo) as usize > limit {
                    return None;
                }
                for c in (lo..=hi).rev() {
                    let mut w2 = w.clone();
                    w2.push(char::from_u32(c)?);
                    stack.push((d, w2));
                }
                if stack.len() > limit * 4 {
                    return None;
                }
            }
        }
        out.sort();
        Some(out)
    }
}

/// Groups overlapping range edges into disjoint ranges with target sets.
fn split_edges(edges: &[(u32, u32, u32)]) -> Vec<(u32, u32, Vec<u32>)> {
    if edges.is_empty() {
        return Vec::new();
    }
    // Sweep over range boundaries, keeping the multiset of active targets.
    let mut events: Vec<(u32, bool, u32)> = Vec::with_capacity(edges.len() * 2);
    for &(lo, hi, t) in edges {
        events.push((lo, true, t));
        events.push((hi + 1, false, t));
    }
    events.sort_unstable();
    let mut active: BTreeMap<u32, u32> = BTreeMap::new();
    let mut out: Vec<(u32, u32, Vec<u32>)> = Vec::new();
    let mut k = 0;
    while k < events.len() {
        let pos = events[k].0;
        while k < events.len() && events[k].0 == pos {
            let (_, open, t) = events[k];
            if open {
                *active.entry(t).or_insert(0) += 1;
            } else if let Some(c) = active.get_mut(&t) {
                *c -= 1;
                if *c == 0 {
                    active.remove(&t);
                }
            }
            k += 1;
        }
        if active.is_empty() || k == events.len() {
            continue;
        }
        let (lo, hi) = (pos, events[k].0 - 1);
        let tgt: Vec<u32> = active.keys().copied().collect();
        match out.last_mut() {
            Some(last) if last.1 + 1 == lo && last.2 == tgt => last.1 = hi,
            _ => out.push((lo, hi, tgt)),
        }
    }
    out
}

fn push_range(v: &mut Vec<(u32, u32, u32)>, lo: u32, hi: u32, d: u32) {
    match v.last_mut() {
        Some(last) if last.2 == d && last.1 + 1 == lo => last.1 = hi,
        _ => v.push((lo, hi, d)),
    }
}

/// Walks two sorted range lists together: `(lo, hi, target_a, target_b)`
/// with `u32::MAX` where a side has no edge.
fn merge_ranges(a: &[(u32, u32, u32)], b: &[(u32, u32, u32)]) -> Vec<(u32, u32, u32, u32)> {
    let mut bounds: Vec<u32> = Vec::with_capacity((a.len() + b.len()) * 2);
    for &(lo, hi, _) in a.iter().chain(b) {
        bounds.push(lo);
        bounds.push(hi + 1);
    }
    bounds.sort_unstable();
    bounds.dedup();
    let find = |t: &[(u32, u32, u32)], c: u32| -> u32 {
        let i = t.partition_point(|&(_, hi, _)| hi < c);
        if i < t.len() && t[i].0 <= c {
            t[i].2
        } else {
            u32::MAX
        }
    };
    let mut out = Vec::new();
    for w in bounds.windows(2) {
        let (lo, hi) = (w[0], w[1] - 1);
        let (da, db) = (find(a, lo), find(b, lo));
        if da == u32::MAX && db == u32::MAX {
            continue;
        }
        out.push((lo, hi, da, db));
    }
    out
}

/// The coarsest partition of the scalar values that no transition splits.
fn alphabet_classes<'a>(dfas: impl Iterator<Item = &'a Dfa>) -> Vec<(u32, u32)> {
    let mut bounds: BTreeSet<u32> = BTreeSet::new();
    for d in dfas {
        for t in &d.trans {
            for &(lo, hi, _) in t {
                bounds.insert(lo);
                bounds.insert(hi + 1);
            }
        }
    }
    let b: Vec<u32> = bounds.into_iter().collect();
    let mut out = Vec::new();
    for w in b.windows(2) {
        out.push((w[0], w[1] - 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dfa(re: Re) -> Dfa {
        Dfa::from_re(&re).unwrap().minimize()
    }

    #[test]
    fn boolean_operations() {
        let ab = dfa(Re::star(Re::chars(vec![(97, 98)])));
        let a = dfa(Re::star(Re::char('a')));
        assert!(a.subset_of(&ab).unwrap());
        assert!(!ab.subset_of(&a).unwrap());
        let not_a = a.complement().unwrap();
        assert!(not_a.matches("b"));
        assert!(!not_a.matches("aaa"));
        assert!(not_a.matches("é"));
        let both = ab.intersect(&not_a).unwrap();
        assert!(both.matches("ab") && !both.matches("") && !both.matches("c"));
    }

    #[test]
    fn assertions_in_search_semantics() {
        // Σ* (^a | b$) Σ*
        let p = Re::alt(vec![Re::seq(vec![Re::Start, Re::char('a')]), Re::seq(vec![Re::char('b'), Re::End])]);
        let d = dfa(Re::seq(vec![Re::any(), p, Re::any()]));
        assert!(d.matches("axx") && d.matches("xxb") && !d.matches("xax") && !d.matches("bx"));
    }

    #[test]
    fn back_to_regex() {
        let d = dfa(Re::seq(vec![Re::lit("ab"), Re::star(Re::char('c'))]));
        let re = d.to_re().unwrap();
        let d2 = dfa(re);
        assert_eq!(d, d2);
        let (lo, hi) = d.len_bounds().unwrap();
        assert_eq!((lo, hi), (2, None));
        let fin = dfa(Re::alt(vec![Re::lit("x"), Re::lit("yz")]));
        assert_eq!(fin.enumerate(10).unwrap(), vec!["x".to_string(), "yz".to_string()]);
    }
}
