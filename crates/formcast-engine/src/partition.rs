//! Per-DFA-state partitions of the vocabulary, shared across grammars.
//!
//! A state's partition (see [`Partition`]) depends only on the part of its
//! rule's DFA reachable from it without passing a state that finishes the
//! rule or calls another (its *local automaton*), and on the vocabulary.
//! Different grammars reach the same local automata all the time — every
//! JSON string body, the same length-bounded blocks, the same literals — so
//! partitions are kept in a cache owned by the [`VocabIndex`], keyed by a
//! canonical encoding of the local automaton. The first grammar that meets
//! a JSON string walks the 128k-token trie once; every later grammar using
//! the same tokenizer gets the result for the cost of encoding a few states.

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use crate::automaton::{flags, Automaton, StateId, StateMoves, DEAD};
use crate::bitset::{has_byte, Bitset};
use crate::mask::StoredMask;
use crate::vocab_index::{text_next, utf8_next, SkeletonExits, SkeletonNode, VocabIndex, TEXT_DEAD};

/// The vocabulary as seen from one DFA state, ignoring the parser stack.
///
/// Walking the trie from the state through transitions that stay inside the
/// rule and pass only states that neither finish the rule nor call another,
/// every token that ends on such a path is accepted in any context (`accept`).
/// The walk stops at the first state that may finish or call (`frontier`):
/// those subtrees depend on the stack and are walked per request. Tokens
/// rejected before any frontier are rejected in every context.
#[derive(Debug)]
pub struct Partition {
    pub accept: Arc<StoredMask>,
    /// `(trie node, state reached at that node)`.
    pub frontier: Vec<(u32, StateId)>,
    /// What long frontier runs resolve to, per skip set of their exit (shared
    /// with every grammar that reaches the same local automaton).
    pub takes: Arc<TakeMemo>,
}

/// A partition in canonical terms: frontier states are indices into the
/// local automaton's list of exit states.
#[derive(Debug)]
struct SharedPartition {
    signature: Vec<u32>,
    accept: Arc<StoredMask>,
    frontier: Vec<(u32, u32)>,
    takes: Arc<TakeMemo>,
}

/// A frontier run resolved for one context: the tokens it accepts without a
/// walk (tokens ending on a frontier node, and the subtrees that some skip
/// of the run's exit set takes whole), and the trie nodes whose subtrees
/// must still be walked.
///
/// Why: a length-bounded string is held in blocks of 32 characters, and
/// near a block's end every trie node of one depth is frontier, tens of
/// thousands of them, each tested against the next block's skips. Which of
/// them the next block takes depends on the skips only — not on the block
/// count nor on the grammar — so each (run, skips) is resolved once.
///
/// A frontier node that the skips do not take whole is resolved one level
/// down: its children that a skip takes (byte included) are accepted too,
/// and only the others are left (children of frontier nodes). Why: the
/// nodes left are big subtrees (a space, a period) that hold a few tokens
/// with a quote, and walking all of them again on every mask was most of the
/// cost of a step inside a bounded string.
#[derive(Debug)]
pub struct Take {
    pub accept: StoredMask,
    pub rest: Vec<u32>,
}

/// Takes memoized per (first frontier index of the run, sorted skips of the
/// run's exit set); a few per partition.
#[derive(Debug, Default)]
pub struct TakeMemo(Mutex<Vec<(u32, Vec<Skip>, Arc<Take>)>>);

/// Frontier runs shorter than this are resolved node by node.
pub const TAKE_MIN_RUN: usize = 16;
const TAKES_PER_PARTITION: usize = 8;

impl TakeMemo {
    pub fn get(&self, run: u32, skips: &[Skip]) -> Option<Arc<Take>> {
        let m = self.0.lock().ok()?;
        m.iter().find(|(r, s, _)| *r == run && s == skips).map(|(_, _, t)| t.clone())
    }

    /// Keeps `t` (unless the memo is full) and returns it.
    pub fn put(&self, v: &VocabIndex, run: u32, skips: Vec<Skip>, t: Take) -> Arc<Take> {
        let t = Arc::new(t);
        if let Ok(mut m) = self.0.lock() {
            if m.len() < TAKES_PER_PARTITION {
                v.partitions.charge(t.accept.heap_bytes() + t.rest.len() * 4 + skips.len() * 48 + 64);
                m.push((run, skips, t.clone()));
            }
        }
        t
    }
}

/// The cache of shared partitions, bounded in bytes (cleared when full:
/// simple, and refilled by the next few grammars; what it held is freed on
/// the dropping thread, see [`crate::dropper`]).
#[derive(Debug)]
pub struct PartitionCache {
    map: Mutex<(FxHashMap<u128, Arc<SharedPartition>>, usize)>,
    limit: usize,
}

impl PartitionCache {
    pub fn new(limit_bytes: usize) -> PartitionCache {
        PartitionCache { map: Mutex::new((FxHashMap::default(), 0)), limit: limit_bytes }
    }

    /// Counts bytes held on behalf of a cached partition (its takes).
    fn charge(&self, bytes: usize) {
        if let Ok(mut m) = self.map.lock() {
            m.1 += bytes;
            if m.1 > self.limit {
                crate::dropper::drop_elsewhere(std::mem::take(&mut m.0));
                m.1 = 0;
            }
        }
    }

    fn get(&self, key: u128, signature: &[u32]) -> Option<Arc<SharedPartition>> {
        let m = self.map.lock().ok()?;
        m.0.get(&key).filter(|p| p.signature == signature).cloned()
    }

    fn put(&self, key: u128, p: Arc<SharedPartition>) {
        let size = p.signature.len() * 4 + p.accept.heap_bytes() + p.frontier.len() * 8 + 96;
        if size > self.limit {
            return;
        }
        if let Ok(mut m) = self.map.lock() {
            if m.1 + size > self.limit {
                crate::dropper::drop_elsewhere(std::mem::take(&mut m.0));
                m.1 = 0;
            }
            if m.0.insert(key, p).is_none() {
                m.1 += size;
            }
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.map.lock().map(|m| m.1).unwrap_or(0)
    }
}

/// Most trie nodes a walk may meet for its partition to be walked at once,
/// without looking for it in the shared cache ([`small_walk`]).
const SMALL_WALK_NODES: usize = 2048;

/// Most first bytes of a state whose walk is small ([`small_walk`]).
const SMALL_WALK_FIRST_BYTES: u32 = 16;

/// Local automata of at most this many states are always encoded and
/// shared; past them, one that is mostly a tree, or whose walk is small
/// ([`small_walk`]), is walked at once (see [`partition_of`]).
const ALWAYS_SHARED_STATES: usize = 64;

/// Whether the walk from `s` can meet at most [`SMALL_WALK_NODES`] trie
/// nodes: the subtrees below the first two bytes on which `s` moves. Such a
/// walk costs less than a large local automaton's encoding, which follows
/// the automaton as deep as the longest token: a structural tag's state
/// before `{"name": "` encodes the trie of a hundred tools' names (100 µs,
/// for a walk of a few hundred nodes), so its partition is shared only when
/// its local automaton is small ([`ALWAYS_SHARED_STATES`]; the
/// tokenizer's warm-up computes such partitions, a string's closing quote,
/// for every grammar). Counting stops once the bound or as many children
/// are passed.
#[inline(never)]
fn small_walk(a: &Automaton, v: &VocabIndex, s: StateId) -> bool {
    let mut first = [0u64; 4];
    let mut count = 0;
    for (t, bits) in a.state_moves(s).by_window() {
        if t != DEAD {
            count += byte_count(bits);
            if count > SMALL_WALK_FIRST_BYTES {
                return false;
            }
            or_into(&mut first, bits);
        }
    }
    let mut nodes = 0usize;
    let mut looked = 0usize;
    for b in (0..=255u8).filter(|&b| has_byte(&first, b)) {
        let Some(c) = v.root_child[b as usize] else { continue };
        let c = c as usize;
        let end = v.nodes[c].end as usize;
        if end - c <= 64 {
            nodes += end - c;
            continue;
        }
        nodes += 1;
        let moves = a.state_moves(a.next(s, b));
        let mut d = c + 1;
        while d < end {
            looked += 1;
            let e = v.nodes[d].end as usize;
            if moves.next(v.nodes[d].byte) != DEAD {
                nodes += e - d;
            }
            if nodes > SMALL_WALK_NODES || looked > SMALL_WALK_NODES {
                return false;
            }
            d = e;
        }
    }
    true
}

/// Local automata larger than this are not shared (encoding them would cost
/// about as much as the walk they save).
const MAX_SHARED_STATES: usize = 4096;

/// The canonical encoding of the local automaton of a state: states
/// numbered in breadth-first order over bytes 0..=255, each state's targets
/// written (run-length encoded over bytes) as dead, interior index, or exit
/// index (exits — states that finish or call — are leaves), with the exit
/// states in index order. [`Signature::encode`] goes on until the
/// automaton is encoded or holds more states than asked, so that a small
/// automaton is encoded before anything else is asked and a large one goes
/// on from where it stopped.
///
/// Only the first `horizon` bytes (the longest token) are encoded: no token
/// sees further, and cutting there makes the positions of a long counted
/// repetition ("up to 4000 more characters", "up to 3999 more", …) one
/// automaton, walked once, instead of one walk per position.
struct Signature {
    interior: FxHashMap<StateId, u32>,
    exits: FxHashMap<StateId, u32>,
    order: Vec<StateId>,
    /// BFS distance from the state, per entry of `order` (non-decreasing).
    depth: Vec<u32>,
    exit_order: Vec<StateId>,
    sig: Vec<u32>,
    /// The states of `order` encoded so far.
    done: usize,
    /// Moves met into an interior state already numbered: none while the
    /// automaton is a tree (an enum's names).
    joins: usize,
}

impl Signature {
    fn new(s: StateId) -> Signature {
        let mut interior = FxHashMap::default();
        interior.insert(s, 0);
        Signature { interior, exits: FxHashMap::default(), order: vec![s], depth: vec![0], exit_order: Vec::new(), sig: Vec::with_capacity(64), done: 0, joins: 0 }
    }

    /// Encodes on; whether the whole local automaton is encoded (`false`
    /// once it has more than `most` states).
    #[inline(never)]
    fn encode(&mut self, a: &Automaton, horizon: usize, most: usize) -> bool {
        const EXIT: u32 = 1 << 31;
        while self.done < self.order.len() {
            if self.order.len() > most {
                return false;
            }
            let (st, d) = (self.order[self.done], self.depth[self.done]);
            self.done += 1;
            if d as usize >= horizon {
                // Every token has ended by here: the state's moves are unseen.
                self.sig.push(257);
                continue;
            }
            // Run-length encoded: (first byte of a run, target code). Bytes
            // are visited by runs of one byte class of the state's table
            // (they move alike), and a target is coded once per change (a
            // hash lookup per byte was most of the cost).
            let mut last = u32::MAX - 1;
            let mut last_t = DEAD - 1;
            let (reps, row, base) = a.moves(st);
            // The classes outside the row's window are dead: one class on
            // each side stands for its run (a grammar of a hundred tools has
            // a hundred classes, and a name's state lives on one).
            let (lo, hi) = row.window();
            let n = reps.len();
            let classes = (lo > 0).then_some(0).into_iter().chain(lo..hi).chain((hi < n).then_some(hi));
            for c in classes {
                let (b, t) = (reps[c], row.get(c));
                let t = crate::automaton::global(t, base);
                if t == last_t {
                    continue;
                }
                last_t = t;
                let code = if t == DEAD {
                    u32::MAX
                } else if a.flags[t as usize] & (flags::ACCEPTING | flags::CALLS) != 0 {
                    let n = self.exits.len() as u32;
                    let exit_order = &mut self.exit_order;
                    *self.exits.entry(t).or_insert_with(|| {
                        exit_order.push(t);
                        n
                    }) | EXIT
                } else {
                    let n = self.interior.len() as u32;
                    let (order, depth) = (&mut self.order, &mut self.depth);
                    let code = *self.interior.entry(t).or_insert_with(|| {
                        order.push(t);
                        depth.push(d + 1);
                        n
                    });
                    self.joins += (code != n) as usize;
                    code
                };
                if code != last {
                    self.sig.push(b as u32);
                    self.sig.push(code);
                    last = code;
                }
            }
            self.sig.push(256);
        }
        true
    }
}

/// The cache's key of a signature. A fast hash is enough: the cache
/// compares the whole signature too, so equal keys of different
/// signatures only miss. (Two rounds of `mix` per pair of words were
/// 15–20 µs of a bounded string's 7,000-word signatures.)
fn signature_key(sig: &[u32]) -> u128 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    sig.hash(&mut h);
    h.finish() as u128
}

/// The skips of one automaton's states, kept across its walks: every walk
/// of a grammar meets mostly the same states (string bodies, key tails);
/// and, apart, [`same_future`]'s answers (see [`Futures`]).
#[derive(Debug, Default)]
pub struct SkipMemo(Mutex<Skips>, Mutex<FxHashMap<(StateId, StateId), (u8, u8)>>);

/// Per state: its [`Skip`], and its text run with whether the character
/// after it dies (see [`text_run`]), each computed on first need.
#[derive(Debug, Default)]
struct Skips {
    skips: FxHashMap<StateId, Skip>,
    /// Per state: its [`closed_bytes`].
    closed: FxHashMap<StateId, Option<[u64; 4]>>,
    texts: FxHashMap<StateId, (u32, bool)>,
    /// Per table of the automaton: its [`text_reps`].
    text_reps: FxHashMap<usize, Vec<u8>>,
    /// States that [`text_closed`] followed to no avail.
    not_closed: rustc_hash::FxHashSet<StateId>,
    /// States from which [`text_closed`] found text leading out (not a
    /// set too large): [`text_bounded_run`] is asked of these only.
    leaks: rustc_hash::FxHashSet<StateId>,
    /// States of a set that [`text_bounded_run`] followed past its bound.
    not_bounded: rustc_hash::FxHashSet<StateId>,
    /// Per state: its free text's bytes, if any (see [`utf8_loop`]).
    utf8: FxHashMap<StateId, Option<[u64; 4]>>,
    /// The same, however few its ASCII bytes (see [`utf8_chars_loop`]).
    utf8_chars: FxHashMap<StateId, Option<[u64; 4]>>,
    /// Per state: how many characters its text chain runs and the state
    /// it ends in ([`text_end`]; `u32::MAX`: a loop, it never ends).
    chain_ends: FxHashMap<StateId, (u32, StateId)>,
    /// Per chain end: whether every character dies there, else the state
    /// every character leads to, if one ([`text_exit_of`]).
    end_moves: FxHashMap<StateId, (bool, Option<StateId>)>,
    /// Per state whose skip was not asked: the bytes it moves on, and
    /// (where asked) its skip's bytes ([`first_skip_bytes`]).
    live: FxHashMap<StateId, [u64; 4]>,
    first: FxHashMap<StateId, [u64; 4]>,
}

/// What a state does with text, as [`SkipMemo::text_ends`] tells it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TextEnd {
    /// Characters of any text it takes through interior states, along the
    /// chain of states that take every character alike ([`text_end`]); at
    /// least this many when it is the cap, `u32::MAX` for a loop.
    pub run: u32,
    /// Whether every character after them dies.
    pub dead: bool,
    /// Else, the state every next character leads to, when there is one
    /// ([`text_exit_of`]).
    pub exit: Option<StateId>,
}

impl SkipMemo {
    /// What a walk may skip from each of `states` that is interior (neither
    /// finishing nor calling): `(bytes, run, text run)` per state, as a
    /// partition walk uses them (see [`Skip`], [`text_run`]).
    pub(crate) fn skips_of(&self, a: &Automaton, v: &VocabIndex, states: impl Iterator<Item = StateId>) -> Vec<Skip> {
        let mut m = self.take();
        let mut out = Vec::new();
        for t in states {
            if !interior(a, t) {
                continue;
            }
            let mut sk = skip_of(a, t, &mut m);
            text_of(a, t, &mut sk, v.max_token_len as u32, &mut m);
            if sk.run > 0 || sk.text > 0 {
                out.push(sk);
            }
        }
        self.give_back(m);
        out
    }

    /// Per state of `states`: its [`TextEnd`] (runs cut at `v.max_token_len`
    /// characters: no token holds more).
    pub(crate) fn text_ends(&self, a: &Automaton, v: &VocabIndex, states: impl Iterator<Item = StateId>) -> Vec<TextEnd> {
        let mut m = self.take();
        let cap = v.max_token_len as u32;
        let out = states.map(|t| text_end(a, t, cap, &mut m)).collect();
        self.give_back(m);
        out
    }

    /// Takes the memo out (a concurrent walk starts empty instead of waiting).
    fn take(&self) -> Skips {
        self.0.lock().map(|mut m| std::mem::take(&mut *m)).unwrap_or_default()
    }

    fn give_back(&self, skips: Skips) {
        if let Ok(mut m) = self.0.lock() {
            let size = |m: &Skips| m.skips.len() + m.texts.len() + m.utf8.len() + m.live.len();
            if size(&m) < size(&skips) {
                *m = skips;
            }
        }
    }
}

/// The partition of state `s` of `a` for vocabulary `v`, from the shared
/// cache when another grammar already met the same local automaton.
pub fn partition_of(a: &Automaton, v: &VocabIndex, s: StateId, memo: &SkipMemo) -> Partition {
    // A small local automaton is encoded at once; a large one only when
    // its walk is not small, and a large tree (an enum's names) not at all:
    // its walk meets each of its states once at most, about what encoding
    // it costs (W4's enum of 100 names: 370 K instructions to encode, 390 K
    // to walk).
    let mut enc = Signature::new(s);
    let h = v.max_token_len;
    let encoded = enc.encode(a, h, ALWAYS_SHARED_STATES)
        || (enc.joins * 4 >= enc.order.len() && !small_walk(a, v, s) && enc.encode(a, h, MAX_SHARED_STATES));
    let signature = encoded.then_some((enc.sig, enc.exit_order));
    let Some((sig, exits)) = signature else {
        let (accept, frontier) = walk(a, v, s, |t| t, memo);
        return Partition { accept: Arc::new(accept), frontier, takes: Arc::default() };
    };
    let key = signature_key(&sig);
    let shared = match v.partitions.get(key, &sig) {
        Some(p) => p,
        None => {
            let index: FxHashMap<StateId, u32> = exits.iter().enumerate().map(|(i, &t)| (t, i as u32)).collect();
            let (accept, frontier) = walk(a, v, s, |t| index[&t], memo);
            let p = Arc::new(SharedPartition { signature: sig, accept: Arc::new(accept), frontier, takes: Arc::default() });
            v.partitions.put(key, p.clone());
            p
        }
    };
    Partition {
        accept: shared.accept.clone(),
        frontier: shared.frontier.iter().map(|&(node, e)| (node, exits[e as usize])).collect(),
        takes: shared.takes.clone(),
    }
}

/// Fewest differing first bytes for which [`derive_partition`] asks
/// whether a state takes a large subtree whole before comparing it.
const DERIVE_WIDE_DIFF: u32 = 16;

/// The state `s` moves to on most bytes, when that state moves to itself on
/// most bytes too and `s` moves like it on all but a few bytes (`diff`): a
/// key that may be any string but a few names, just past a name's prefix.
/// Such a state's partition is that of the reference state with the
/// subtrees of the `diff` bytes walked anew ([`derive_partition`]): a few
/// hundred trie nodes instead of every subtree holding a quote.
pub fn reference_state(a: &Automaton, s: StateId, memo: &SkipMemo) -> Option<(StateId, [u64; 4])> {
    let majority = |u: StateId| -> StateId {
        moves_by_target(a, u).into_iter().max_by_key(|&(t, n, _)| (n, std::cmp::Reverse(t))).map(|(t, _, _)| t).unwrap_or(DEAD)
    };
    let r = majority(s);
    if r == DEAD || r == s || !interior(a, r) || majority(r) != r {
        return None;
    }
    let mut futures = Futures::from_memo(4096, memo);
    let diff = differing_bytes(a, s, r, &mut futures);
    futures.give_back(memo);
    diff.map(|d| (r, d))
}

/// The first bytes on which `s` and `r` do not walk alike, when there are
/// at most 64 (see [`reference_state`]).
fn differing_bytes(a: &Automaton, s: StateId, r: StateId, futures: &mut Futures) -> Option<[u64; 4]> {
    const MAX_DIFF: u32 = 64;
    let mut diff = [0u64; 4];
    let mut n = 0;
    let (moves_s, moves_r) = (a.state_moves(s), a.state_moves(r));
    if a.table_of(s) == a.table_of(r) {
        // One row each over the same classes: compared class by class.
        for ((ts, bits), (tr, _)) in moves_s.by_class().zip(moves_r.by_class()) {
            if !same_future(a, ts, tr, 3, futures) {
                or_into(&mut diff, bits);
                n += byte_count(bits);
                if n > MAX_DIFF {
                    return None;
                }
            }
        }
    } else {
        for b in 0..=255u8 {
            if !same_future(a, moves_s.next(b), moves_r.next(b), 3, futures) {
                diff[b as usize / 64] |= 1 << (b % 64);
                n += 1;
                if n > MAX_DIFF {
                    return None;
                }
            }
        }
    }
    Some(diff)
}

/// [`same_future`]'s budget, and what it found per pair of states: the
/// most bytes within which they were found to walk alike, and the fewest
/// within which they were found to part (kept in the grammar's memo from
/// one partition to the next). Why: a derived partition compares the same
/// pair of states at every child of a node whose bytes share a class, and
/// each comparison looked at every class three bytes deep — a key position
/// among 40 property names spent most of its 500 µs there; and the
/// partitions of one key position's names compare the same states.
pub(crate) struct Futures {
    budget: u32,
    known: FxHashMap<(StateId, StateId), (u8, u8)>,
}

/// Most answers of [`same_future`] a grammar's memo keeps (about 1.5 MB).
const FUTURES_KEPT: usize = 1 << 16;

impl Futures {
    /// A comparison with its own budget, from the answers the grammar's
    /// memo holds (they depend on the automaton alone).
    fn from_memo(budget: u32, memo: &SkipMemo) -> Futures {
        let known = memo.1.lock().map(|mut m| std::mem::take(&mut *m)).unwrap_or_default();
        Futures { budget, known }
    }

    /// Its answers back into the memo, unless a concurrent comparison kept
    /// more (or they are too many to keep: the memo lives as long as its
    /// grammar).
    fn give_back(self, memo: &SkipMemo) {
        if self.known.len() > FUTURES_KEPT {
            return;
        }
        if let Ok(mut m) = memo.1.lock() {
            if m.len() < self.known.len() {
                *m = self.known;
            }
        }
    }
}

/// Whether `x` and `y` walk alike: equal, or interior states with the same
/// flags whose moves on every byte class walk alike within `depth` bytes.
/// Why: the engine's per-rule DFAs are not minimized, and the states inside
/// a UTF-8 character differ by where they came from although they all lead
/// back to the same state; the budget of `f` bounds the comparison (a pair
/// it has answered costs none).
fn same_future(a: &Automaton, x: StateId, y: StateId, depth: u32, f: &mut Futures) -> bool {
    if x == y {
        return true;
    }
    if depth == 0 || !interior(a, x) || !interior(a, y) {
        return false;
    }
    let (fx, fy) = (a.flags[x as usize], a.flags[y as usize]);
    if fx != fy || fx & flags::TICKS != 0 {
        return false;
    }
    let key = (x.min(y), x.max(y));
    if let Some(&(alike, apart)) = f.known.get(&key) {
        if alike as u32 >= depth {
            return true;
        }
        if apart as u32 <= depth {
            return false;
        }
    }
    if f.budget == 0 {
        return false;
    }
    f.budget -= 1;
    let same = if a.table_of(x) == a.table_of(y) {
        let ((_, rx, bx), (_, ry, by)) = (a.moves(x), a.moves(y));
        rx.all_differing(bx, ry, by, |tx, ty| same_future(a, tx, ty, depth - 1, f))
    } else {
        a.class_rep.iter().all(|&b| same_future(a, a.next(x, b), a.next(y, b), depth - 1, f))
    };
    // A "no" from a spent budget proves nothing, and is not kept.
    if same || f.budget > 0 {
        let e = f.known.entry(key).or_insert((0, u8::MAX));
        if same {
            e.0 = e.0.max(depth as u8);
        } else {
            e.1 = e.1.min(depth as u8);
        }
    }
    same
}

/// The partition of `s` from `reference`, the partition of the state `r`
/// that moves like `s` on every first byte outside `diff` (see
/// [`reference_state`]): its tokens and frontier outside those subtrees are
/// the same. Inside them the two are compared node by node: where both
/// states are interior, the tokens of the node are the same and so is every
/// child subtree whose states walk alike ([`same_future`]); only the other
/// children are looked at again, the same way, or walked anew from `s`'s
/// state where the two part for good. A key that may be any string but a
/// few names then costs the names' prefixes, not the subtrees of their
/// first letters (W3's `metadata` key position: 220 µs, most of it walking
/// the `m` and `s` subtrees).
pub fn derive_partition(a: &Automaton, v: &VocabIndex, s: StateId, r: StateId, reference: &Partition, diff: &[u64; 4], memo: &SkipMemo) -> Partition {
    let mut accept = Bitset::new(v.logits_size);
    reference.accept.or_into(&mut accept.words);
    // Subtrees whose reference tokens and frontier are replaced, in trie
    // order, and what replaces them.
    let mut cut: Vec<(u32, u32)> = Vec::new();
    let mut fresh: Vec<(u32, StateId)> = Vec::new();
    let mut futures = Futures::from_memo(4096, memo);
    // (node, state of `s`, state of `r`) of interior nodes whose children
    // are compared; the first level by `diff`.
    let mut work: Vec<(usize, StateId, StateId)> = Vec::new();
    let mut m = memo.take();
    let wide = byte_count(diff) >= DERIVE_WIDE_DIFF;
    // Whether state `t` takes the subtree below node `c` whole, by its
    // skip or by the bytes of a closed set of states.
    let takes_whole = |t: StateId, c: usize, m: &mut Skips| {
        let sk = skip_of(a, t, m);
        sk.takes_bytes(v, c) || closed_bytes(a, t, &sk, &mut m.closed).is_some_and(|b| v.below_within(c, &b))
    };
    let mut compare = |c: usize, sp: StateId, rp: StateId, work: &mut Vec<(usize, StateId, StateId)>, accept: &mut Bitset, cut: &mut Vec<(u32, u32)>, fresh: &mut Vec<(u32, StateId)>, m: &mut Skips| {
        let byte = v.nodes[c].byte;
        let (sc, rc) = (a.next(sp, byte), a.next(rp, byte));
        if same_future(a, sc, rc, 3, &mut futures) {
            return;
        }
        // A large subtree that `s`'s state takes whole (every path below
        // on interior states) holds only tokens of `s`; the reference's
        // too when its state takes it whole. Without this, two states that
        // stay apart (a host name's and a path's, inside one pattern) were
        // compared node by node over the whole subtree. Only where the
        // two differ on many first bytes: a key inside a name's prefix
        // differs on a few, and asking its states cost more than it saved.
        if wide && v.nodes[c].end as usize - c >= CLOSED_MIN_NODES && interior(a, sc) && takes_whole(sc, c, m) {
            if !(interior(a, rc) && takes_whole(rc, c, m)) {
                set_all(accept, v.subtree_tokens(c));
                cut.push((c as u32, v.nodes[c].end));
            }
            return;
        }
        if interior(a, sc) && interior(a, rc) && a.flags[sc as usize] == a.flags[rc as usize] {
            work.push((c, sc, rc));
            return;
        }
        clear_all(accept, v.subtree_tokens(c));
        cut.push((c as u32, v.nodes[c].end));
        fresh.extend(walk_into(a, v, sp, |t| t, m, Some(c), (0, false), None, accept));
    };
    let mut i = 1usize;
    while i < v.nodes.len() {
        let node = v.nodes[i];
        if has_byte(diff, node.byte) {
            compare(i, s, r, &mut work, &mut accept, &mut cut, &mut fresh, &mut m);
        }
        i = node.end as usize;
    }
    while let Some((n, sn, rn)) = work.pop() {
        let mut c = n + 1;
        while c < v.nodes[n].end as usize {
            compare(c, sn, rn, &mut work, &mut accept, &mut cut, &mut fresh, &mut m);
            c = v.nodes[c].end as usize;
        }
    }
    memo.give_back(m);
    futures.give_back(memo);
    cut.sort_unstable();
    let inside_cut = |n: u32| {
        let k = cut.partition_point(|&(lo, _)| lo <= n);
        k > 0 && n < cut[k - 1].1
    };
    let mut frontier: Vec<(u32, StateId)> = reference.frontier.iter().copied().filter(|&(n, _)| !inside_cut(n)).collect();
    frontier.extend(fresh);
    frontier.sort_unstable_by_key(|&(n, _)| n);
    Partition { accept: Arc::new(StoredMask::from_bitset(accept)), frontier, takes: Arc::default() }
}

/// What a walk may skip from one state: `(bytes, run)` such that every path
/// of at most `run` bytes, all from `bytes`, leads through states that
/// neither die, finish nor call — so a subtree whose bytes are all in
/// `bytes` and whose height is at most `run` is accepted whole. A self-loop
/// has an unbounded run (inside a JSON string); a counted repetition a run
/// of the characters it has left ("up to 17 more").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Skip {
    bytes: [u64; 4],
    run: u32,
    /// The state's text run ([`text_run`]) once a walk needed it
    /// (`TEXT_UNKNOWN` before).
    text: u32,
    /// Whether, past its text run, every character of text dies: then the
    /// tokens of a text subtree are exactly those that start at most
    /// `text` characters ([`accept_text_up_to`]).
    text_dead: bool,
}

const TEXT_UNKNOWN: u32 = u32::MAX - 1;

impl Skip {
    /// Whether every path below trie node `i` stays on this skip's bytes
    /// for at most its run.
    fn takes_bytes(&self, v: &VocabIndex, i: usize) -> bool {
        self.run >= v.height[i] as u32 && v.below_within(i, &self.bytes)
    }

    /// Whether the state takes the whole subtree below trie node `i`, by
    /// bytes or as text (its text run known, see [`text_of`]).
    /// Whether the skip takes trie node `c` itself (its byte) and the whole
    /// subtree below it, bytes only.
    pub(crate) fn takes_node(&self, v: &VocabIndex, c: usize) -> bool {
        self.run > 0 && has_byte(&self.bytes, v.nodes[c].byte) && Skip { run: self.run - 1, ..*self }.takes_bytes(v, c)
    }

    /// The skip's text run when every character past it dies (the state's
    /// string runs out there): then a text subtree's tokens are those that
    /// start at most that many characters ([`accept_text_up_to`]).
    pub(crate) fn counted(&self) -> Option<u32> {
        (self.text_dead && self.text != TEXT_UNKNOWN).then_some(self.text)
    }

    pub(crate) fn takes(&self, v: &VocabIndex, i: usize) -> bool {
        let chars = v.text_chars[i];
        self.takes_bytes(v, i) || (chars != u16::MAX && self.text >= chars as u32)
    }
}

/// Fewest ASCII bytes leading a state (or, in a mask walk, a parser set)
/// back to itself for it to be checked as free text ([`utf8_loop_by`]).
pub(crate) const UTF8_LOOP_MIN: u32 = 64;

/// Most lead bytes (of the 51, C2–F4) whose characters may fail to lead a
/// free-text state back to itself ([`utf8_loop_by`]).
const UTF8_LEADS_MISSING_MAX: u32 = 8;

/// The lead bytes of well-formed UTF-8 (C2–F4).
const UTF8_LEADS: [u64; 4] = [0, 0, 0, 0x001F_FFFF_FFFF_FFFC];

/// The continuation bytes (80–BF).
const UTF8_CONTINUATIONS: [u64; 4] = [0, 0, !0, 0];

/// How the UTF-8 followers ([`utf8_loop_by`], [`utf8_leads_to`]) move:
/// by automaton state in a partition walk, by parser set in a mask walk.
pub(crate) trait CharMoves {
    type S: Copy + Eq + std::hash::Hash;
    type E;
    /// The point that byte `b` leads `u` to.
    fn step(&mut self, u: Self::S, b: u8) -> Result<Self::S, Self::E>;
    /// Whether a point met inside a character goes on.
    fn goes_on(&self, u: Self::S) -> bool;
    /// Into `out`, one byte of each set of continuation bytes (80–BF)
    /// that move `u` alike and that UTF-8 decoding reads alike (see
    /// [`cont_reps_of`]).
    fn cont_reps(&mut self, u: Self::S, out: &mut Vec<u8>);
}

/// The continuation bytes as bits of a word (bit i: byte 0x80 + i), by
/// the three ranges that UTF-8 decoding tells apart after a lead (80–8F,
/// 90–9F, A0–BF).
const CONT_RANGES: [u64; 3] = [0xFFFF, 0xFFFF << 16, !0u64 << 32];

/// Into `out`, one byte of each set of continuation bytes that every state
/// of `states` moves alike (by the byte classes of their tables) and that
/// decoding reads alike: a character's points are then followed on a few
/// bytes instead of 64 (a free-text set's characters went over 64 bytes
/// per point, 140 K instructions of the first mask inside a trigger).
pub(crate) fn cont_reps_of(a: &Automaton, states: impl Iterator<Item = StateId>, out: &mut Vec<u8>) {
    let mut blocks: Vec<u64> = CONT_RANGES.to_vec();
    let mut tables: Vec<usize> = Vec::new();
    for st in states {
        let table = a.table_of(st);
        if tables.contains(&table) {
            continue;
        }
        tables.push(table);
        for (_, bits) in a.state_moves(st).by_class() {
            let class = bits[2];
            if class == 0 {
                continue;
            }
            for i in 0..blocks.len() {
                let (inside, outside) = (blocks[i] & class, blocks[i] & !class);
                if inside != 0 && outside != 0 {
                    blocks[i] = inside;
                    blocks.push(outside);
                }
            }
        }
        if blocks.len() == 64 {
            break;
        }
    }
    out.clear();
    out.extend(blocks.iter().map(|&b| 0x80 + b.trailing_zeros() as u8));
}

/// [`CharMoves`] by automaton state, through interior states.
pub(crate) struct StateChars<'a>(pub &'a Automaton);

impl CharMoves for StateChars<'_> {
    type S = StateId;
    type E = std::convert::Infallible;
    fn step(&mut self, u: StateId, b: u8) -> Result<StateId, Self::E> {
        Ok(self.0.next(u, b))
    }
    fn goes_on(&self, u: StateId) -> bool {
        interior(self.0, u)
    }
    /// Every continuation byte: a state's move is one lookup, cheaper
    /// than telling its classes apart.
    fn cont_reps(&mut self, _: StateId, out: &mut Vec<u8>) {
        if out.len() != 64 {
            out.clear();
            out.extend(0x80..=0xBFu8);
        }
    }
}

/// The bytes of free text from `start`, when there are enough: the ASCII
/// bytes that `step` leads `start` back to itself on (at least
/// [`UTF8_LOOP_MIN`]), the lead bytes all of whose characters lead it back
/// with every point met inside a character one that goes on (all but at
/// most [`UTF8_LEADS_MISSING_MAX`]), and the continuation bytes. That is
/// the shape of free text that avoids a few ASCII bytes (text before
/// `</think>`) or a few characters (ECMA-262's `.`, which refuses U+2028
/// and U+2029, lead E2). A subtree of well-formed UTF-8 all of whose bytes
/// are among them then leads back to `start` character by character
/// ([`VocabIndex::utf8_below`]). Shared by the partition walk (automaton
/// states) and the mask walk (parser sets).
pub(crate) fn utf8_loop_by<M: CharMoves>(start: M::S, m: &mut M) -> Result<Option<[u64; 4]>, M::E> {
    utf8_loop_from(start, m, UTF8_LOOP_MIN)
}

/// [`utf8_loop_by`] with at least `ascii_min` ASCII bytes.
fn utf8_loop_from<M: CharMoves>(start: M::S, m: &mut M, ascii_min: u32) -> Result<Option<[u64; 4]>, M::E> {
    let mut bytes = [0u64; 4];
    for b in 0..0x80u8 {
        if m.step(start, b)? == start {
            bytes[b as usize / 64] |= 1 << (b % 64);
        }
    }
    if bytes[0].count_ones() + bytes[1].count_ones() < ascii_min {
        return Ok(None);
    }
    let leads = utf8_leads_to(start, start, m)?;
    if byte_count(&UTF8_LEADS) - byte_count(&leads) > UTF8_LEADS_MISSING_MAX {
        return Ok(None);
    }
    or_into(&mut bytes, &leads);
    or_into(&mut bytes, &UTF8_CONTINUATIONS);
    Ok(Some(bytes))
}

/// The bytes of free text that are not among `loop_bytes` (see
/// [`utf8_loop_by`]): ASCII bytes and lead bytes, those a cover of free
/// text excludes ([`VocabIndex::free_text_cover`]).
pub(crate) fn free_text_excluded(loop_bytes: &[u64; 4]) -> [u64; 4] {
    [!loop_bytes[0], !loop_bytes[1], 0, UTF8_LEADS[3] & !loop_bytes[3]]
}

/// The lead bytes all of whose characters lead `from` to `to`, with every
/// point met inside a character one that goes on. All of them are
/// followed together first (characters share most of their points); only
/// when that fails is each lead followed alone.
pub(crate) fn utf8_leads_to<M: CharMoves>(from: M::S, to: M::S, m: &mut M) -> Result<[u64; 4], M::E> {
    let mut seen: rustc_hash::FxHashSet<(u8, M::S)> = Default::default();
    let mut todo: Vec<(u8, M::S)> = Vec::new();
    let mut reps = Vec::new();
    if chars_lead_to(from, to, 0xC2..=0xF4, m, &mut seen, &mut todo, &mut reps)? {
        return Ok(UTF8_LEADS);
    }
    let mut leads = [0u64; 4];
    for b in 0xC2..=0xF4u8 {
        seen.clear();
        todo.clear();
        if chars_lead_to(from, to, b..=b, m, &mut seen, &mut todo, &mut reps)? {
            leads[b as usize / 64] |= 1 << (b % 64);
        }
    }
    Ok(leads)
}

/// Whether every character whose lead byte is in `leads` leads `from` to
/// `to` (see [`utf8_leads_to`]); `seen`, `todo` and `reps` are scratch.
fn chars_lead_to<M: CharMoves>(
    from: M::S,
    to: M::S,
    leads: std::ops::RangeInclusive<u8>,
    m: &mut M,
    seen: &mut rustc_hash::FxHashSet<(u8, M::S)>,
    todo: &mut Vec<(u8, M::S)>,
    reps: &mut Vec<u8>,
) -> Result<bool, M::E> {
    // The characters, by (decoder state, point) pairs.
    for b in leads {
        let u = m.step(from, b)?;
        if !m.goes_on(u) {
            return Ok(false);
        }
        todo.push((utf8_next(0, b), u));
    }
    while let Some((r, u)) = todo.pop() {
        if !seen.insert((r, u)) {
            continue;
        }
        m.cont_reps(u, reps);
        for &b in reps.iter() {
            let r2 = utf8_next(r, b);
            if r2 == TEXT_DEAD {
                continue;
            }
            let u2 = m.step(u, b)?;
            if r2 == 0 {
                if u2 != to {
                    return Ok(false);
                }
            } else if !m.goes_on(u2) {
                return Ok(false);
            } else {
                todo.push((r2, u2));
            }
        }
    }
    Ok(true)
}

/// [`utf8_loop_by`] of state `t` through interior states (neither finishing
/// nor calling), memoized in `m`.
fn utf8_loop(a: &Automaton, t: StateId, m: &mut Skips) -> Option<[u64; 4]> {
    if let Some(&known) = m.utf8.get(&t) {
        return known;
    }
    let Ok(found) = utf8_loop_by(t, &mut StateChars(a));
    m.utf8.insert(t, found);
    found
}

/// [`utf8_loop`] however few ASCII bytes lead `t` back to itself: text
/// that refuses most ASCII bytes but takes every character of two to four
/// bytes (a key that must not match an unanchored `[a-zA-Z.-_0-9]`, beside
/// the keys that do), whose walk went down every multi-byte token of the
/// vocabulary node by node (1.5 ms of one mask of maskbench's inventory).
/// Memoized in `m`.
fn utf8_chars_loop(a: &Automaton, t: StateId, m: &mut Skips) -> Option<[u64; 4]> {
    if let Some(&known) = m.utf8_chars.get(&t) {
        return known;
    }
    // Most states fail here, cheaply: they take no character of é or 中.
    if !interior(a, a.next(t, 0xC3)) || !interior(a, a.next(t, 0xE4)) {
        m.utf8_chars.insert(t, None);
        return None;
    }
    let Ok(found) = utf8_loop_from(t, &mut StateChars(a), 0);
    m.utf8_chars.insert(t, found);
    found
}

/// Fills in `sk.text`, `t`'s text run ([`text_run`]), on first need, and
/// keeps it in the memo.
fn text_of(a: &Automaton, t: StateId, sk: &mut Skip, cap: u32, m: &mut Skips) -> u32 {
    if sk.text == TEXT_UNKNOWN {
        // A state taking every character of text moves on all its ASCII
        // characters alike, so they are among its skip's bytes (checked
        // first: most states fail here, cheaply).
        let ascii = (0..4).all(|k| ASCII_TEXT[k] & !sk.bytes[k] == 0);
        (sk.text, sk.text_dead) = if ascii {
            text_run(a, t, cap, m)
        } else if let Some(&known) = m.texts.get(&t) {
            known
        } else {
            // Or text moves it among several states that all take every
            // character (see [`text_closed`]); most states fail at once.
            let moves = a.state_moves(t);
            let closed = (0x20..0x80u8).all(|b| !has_byte(&ASCII_TEXT, b) || interior(a, moves.next(b))) && text_closed(a, t, m);
            // Memoized as `text_run` would have it: a chain that reaches
            // this state reads it from there.
            let run = if closed {
                (u32::MAX, false)
            } else if let Some(run) = (m.leaks.contains(&t) && search_like(a, t, m)).then(|| text_bounded_run(a, t, m)).flatten() {
                run
            } else {
                let reps = text_reps(a, t, m).to_vec();
                (0, text_dead(a, t, &reps))
            };
            m.texts.insert(t, run);
            run
        };
        if let Some(k) = m.skips.get_mut(&t) {
            k.text = sk.text;
            k.text_dead = sk.text_dead;
        }
    }
    sk.text
}

/// The lead bytes of characters of two to four bytes (C2–F4), in the
/// last word of a byte set.
const TEXT_LEADS: u64 = (!0u64 << (0xC2 - 0xC0)) & (!0u64 >> (63 - (0xF4 - 0xC0)));

/// The ASCII characters of text ([`text_next`]): 20–7F but `"` and `\`.
const ASCII_TEXT: [u64; 4] = [!0u64 << 32 & !(1 << 0x22), !0u64 & !(1 << (0x5C - 64)), 0, 0];

/// Subtrees at least this large that a state's skip does not take whole
/// are checked against the bytes of a closed set of states
/// ([`closed_bytes`]): following the set costs more than most subtrees.
const CLOSED_MIN_NODES: usize = 64;

/// Most states [`closed_bytes`] follows.
const CLOSED_MAX: usize = 128;

/// Fewest bytes that [`closed_bytes`] must add to a state's skip.
const CLOSED_MIN_GAIN: u32 = 8;

/// Bytes that lead every state of a small set holding `t` (at most
/// [`CLOSED_MAX`]) into the set, all of whose states are interior: any
/// path of them from `t` stays interior, however long. Only bytes that
/// are at least [`CLOSED_MIN_GAIN`] more than `chain`'s (`t`'s
/// [`skip_of`]) are of use: a key inside a declared name's prefix takes a
/// few letters more than its chain's, and following the set of every
/// name's prefixes for them cost its masks 50 µs.
///
/// Why: a pattern whose parts overlap (`^([a-z.-]+)\.([a-z.]{2,6})([/\w
/// .-]*)$`: a host name, its last label counted, a path) moves among tens
/// of states on the bytes of a word, none looping on them all; each of its
/// states had a skip of one label's letters, and the walks of its first
/// masks went down every subtree holding a digit or a period (1–2 ms).
///
/// The set is grown breadth-first while the bytes shrink (a state reached
/// on a byte dropped later stays in, which can only drop more: the result
/// is sound). Every state of the set that takes exactly those bytes gets
/// them too (no set can give it more), so a family of states is followed
/// once. Once the bytes are of no use, or the set is too large, none of
/// its states is tried again (a bounded string's chain would be followed
/// from each of its states). Memoized in `known` (`None`: none of use).
fn closed_bytes(a: &Automaton, t: StateId, chain: &Skip, known: &mut FxHashMap<StateId, Option<[u64; 4]>>) -> Option<[u64; 4]> {
    if let Some(&k) = known.get(&t) {
        return k;
    }
    let of_use = |bytes: &[u64; 4]| byte_count(bytes) >= byte_count(&chain.bytes) + CLOSED_MIN_GAIN;
    let takes_of = |w: StateId| {
        let mut takes = [0u64; 4];
        for (u, bits) in a.state_moves(w).by_window() {
            if interior(a, u) {
                or_into(&mut takes, bits);
            }
        }
        takes
    };
    // Most states fail here: they take no more than their chain.
    if !of_use(&takes_of(t)) {
        known.insert(t, None);
        return None;
    }
    // The states of the set, with the bytes leading each to interior states.
    let mut set: Vec<(StateId, [u64; 4])> = vec![(t, [0; 4])];
    let mut members: rustc_hash::FxHashSet<StateId> = Default::default();
    members.insert(t);
    let mut bytes = [u64::MAX; 4];
    let mut k = 0;
    while k < set.len() {
        let w = set[k].0;
        let takes = takes_of(w);
        set[k].1 = takes;
        for j in 0..4 {
            bytes[j] &= takes[j];
        }
        k += 1;
        let mut give_up = !of_use(&bytes);
        if !give_up {
            for (u, bits) in a.state_moves(w).by_window() {
                if interior(a, u) && (0..4).any(|j| bits[j] & bytes[j] != 0) && members.insert(u) {
                    set.push((u, [0; 4]));
                }
            }
            give_up = set.len() > CLOSED_MAX;
        }
        if give_up {
            for &(w, _) in &set {
                known.insert(w, None);
            }
            return None;
        }
    }
    for &(w, takes) in &set {
        if takes == bytes {
            known.insert(w, Some(bytes));
        }
    }
    known.insert(t, Some(bytes));
    Some(bytes)
}

/// The skip of state `t` (memoized in `m`): its bytes are those leading
/// to its most common interior successor (itself when it loops), its run
/// one more than the successor's when the successor's bytes include them.
fn skip_of(a: &Automaton, t: StateId, m: &mut Skips) -> Skip {
    let memo = &mut m.skips;
    if let Some(&k) = memo.get(&t) {
        return k;
    }
    // The chain of successors, followed iteratively (chains can be long).
    let mut chain: Vec<(StateId, [u64; 4], StateId)> = Vec::new();
    let mut on_chain: rustc_hash::FxHashSet<StateId> = Default::default();
    let mut cur = t;
    let tail_run;
    loop {
        if let Some(&k) = memo.get(&cur) {
            tail_run = k.run;
            break;
        }
        let (loop_bytes, best) = skip_step(a, cur);
        let loops = byte_count(&loop_bytes);
        match best {
            Some((u, n, bytes)) if n > loops && chain.len() < 1 << 16 => {
                chain.push((cur, bytes, u));
                on_chain.insert(cur);
                if on_chain.contains(&u) {
                    // A cycle through several states: stop counting here.
                    tail_run = 0;
                    break;
                }
                cur = u;
            }
            _ => {
                let k = Skip { bytes: loop_bytes, run: if loops > 0 { u32::MAX } else { 0 }, text: TEXT_UNKNOWN, text_dead: false };
                memo.insert(cur, k);
                tail_run = k.run;
                break;
            }
        }
    }
    // Unwind: each state's run extends its successor's when the successor
    // moves on (at least) the same bytes.
    let mut next_bytes: Option<[u64; 4]> = memo.get(&cur).map(|k| k.bytes);
    let mut run_after = tail_run;
    for &(s, bytes, _) in chain.iter().rev() {
        let extends = next_bytes.is_some_and(|nb| (0..4).all(|k| bytes[k] & !nb[k] == 0));
        let run = if extends { run_after.saturating_add(1) } else { 1 };
        memo.insert(s, Skip { bytes, run, text: TEXT_UNKNOWN, text_dead: false });
        next_bytes = Some(bytes);
        run_after = run;
    }
    memo[&t]
}

/// A state's target with how many of its bytes lead there, and which
/// ([`moves_by_target`]).
type Successor = (StateId, u32, [u64; 4]);

/// One step of [`skip_of`]'s chain from `t`: the bytes that loop on `t`,
/// and the interior successor most bytes lead to (with how many, and
/// which).
fn skip_step(a: &Automaton, t: StateId) -> ([u64; 4], Option<Successor>) {
    let targets = moves_by_target(a, t);
    let loop_bytes = targets.iter().find(|&&(u, _, _)| u == t).map_or([0; 4], |&(_, _, bytes)| bytes);
    let best = targets.into_iter().filter(|&(u, _, _)| u != t && interior(a, u)).max_by_key(|&(u, n, _)| (n, std::cmp::Reverse(u)));
    (loop_bytes, best)
}

/// The bytes of `t`'s skip ([`skip_of`]), which its first step decides
/// alone (the chain after it only counts the run): the bytes to the
/// interior successor most bytes lead to, when they outnumber the bytes
/// that loop, else those.
fn first_skip_bytes(a: &Automaton, t: StateId) -> [u64; 4] {
    match skip_step(a, t) {
        (loop_bytes, Some((_, n, bytes))) if n > byte_count(&loop_bytes) => bytes,
        (loop_bytes, _) => loop_bytes,
    }
}

fn interior(a: &Automaton, u: StateId) -> bool {
    u != DEAD && a.flags[u as usize] & (flags::ACCEPTING | flags::CALLS) == 0
}

/// The byte ranges that [`text_next`] reads alike from every decoder state.
const TEXT_GROUPS: [(u8, u8); 19] = [
    (0x00, 0x1F),
    (0x20, 0x21),
    (0x22, 0x22),
    (0x23, 0x5B),
    (0x5C, 0x5C),
    (0x5D, 0x7F),
    (0x80, 0x8F),
    (0x90, 0x9F),
    (0xA0, 0xBF),
    (0xC0, 0xC1),
    (0xC2, 0xDF),
    (0xE0, 0xE0),
    (0xE1, 0xEC),
    (0xED, 0xED),
    (0xEE, 0xEF),
    (0xF0, 0xF0),
    (0xF1, 0xF3),
    (0xF4, 0xF4),
    (0xF5, 0xFF),
];

/// One byte of every set of bytes that both the table of `u` (its byte
/// classes) and the text decoder (see [`TEXT_GROUPS`]) read alike, in byte
/// order: asking a state of that table, at any decoder state, about these
/// bytes is asking about all 256. Memoized per table in `memo`.
fn text_reps<'m>(a: &Automaton, u: StateId, memo: &'m mut Skips) -> &'m [u8] {
    memo.text_reps.entry(a.table_of(u)).or_insert_with(|| {
        // The first byte of each (class, group) pair met, in one pass over
        // the bytes: each class against each group's bits cost a table of
        // 80 classes 26,000 instructions (byte by byte, 20,000 byte tests),
        // in the first mask that needs it (inside a tool call's trigger);
        // one pass, 4,500.
        let moves = a.state_moves(u);
        let mut met = [0u32; 256];
        let mut group = 0;
        let mut reps = Vec::new();
        for b in 0..=255u8 {
            if b > TEXT_GROUPS[group].1 {
                group += 1;
            }
            let c = moves.class(b);
            if met[c] & 1 << group == 0 {
                met[c] |= 1 << group;
                reps.push(b);
            }
        }
        reps
    })
}

/// The state every character of text ([`text_next`]) leads `u` to, when
/// there is one and every byte of the way is an interior state (neither
/// dead, finishing nor calling); `None` otherwise. `reps` are the bytes of
/// `u`'s table's [`text_reps`]: one byte stands for every byte it shares
/// both a byte class and a text group with (a string's chain of 32 states
/// was 256 bytes and 64 per state inside a character each, 800 µs of a
/// first mask).
fn text_successor(a: &Automaton, u: StateId, reps: &[u8]) -> Option<StateId> {
    let mut out = Vec::new();
    (text_successors(a, u, reps, &mut out) && out.len() == 1).then(|| out[0])
}

/// Every state that a character of text leads `u` to, into `out` (each
/// once), when every byte of the way is an interior state; `false`
/// otherwise (`reps` as in [`text_successor`]).
fn text_successors(a: &Automaton, u: StateId, reps: &[u8], out: &mut Vec<StateId>) -> bool {
    text_successors_ending(a, u, reps, out, true, &mut 0)
}

/// [`text_successors`], where the state a character ends on must be
/// interior only when `end_interior` (else only live: it may finish or
/// call, see [`text_exit_of`]); bytes inside a character always pass
/// interior states. Adds the bytes it steps to `work`.
fn text_successors_ending(a: &Automaton, u: StateId, reps: &[u8], out: &mut Vec<StateId>, end_interior: bool, work: &mut usize) -> bool {
    // (state, decoder state) pairs inside a character.
    let mut inside: Vec<(StateId, u8)> = Vec::new();
    // Where the byte before led (a live state, or the walk would have
    // stopped): the bytes of `u`'s table (a key's: a hundred classes)
    // mostly lead to one or two states, asked once each (W4's `"url":"`
    // value mask followed 16 key states on 85 bytes each).
    let mut last: Option<(StateId, u8)> = None;
    let mut step = |moves: &StateMoves, r: u8, b: u8, out: &mut Vec<StateId>, inside: &mut Vec<(StateId, u8)>| -> bool {
        *work += 1;
        let r2 = text_next(r, b);
        if r2 == TEXT_DEAD {
            return true;
        }
        let w2 = moves.next(b);
        if last == Some((w2, r2)) {
            return true;
        }
        last = Some((w2, r2));
        let live = if r2 == 0 && !end_interior { w2 != DEAD } else { interior(a, w2) };
        if !live {
            return false;
        }
        if r2 == 0 {
            if !out.contains(&w2) {
                out.push(w2);
            }
            out.len() <= 64
        } else {
            if !inside.contains(&(w2, r2)) {
                inside.push((w2, r2));
            }
            inside.len() <= 64
        }
    };
    let moves = a.state_moves(u);
    for &b in reps {
        if !step(&moves, 0, b, out, &mut inside) {
            return false;
        }
    }
    let continuation = reps.iter().copied().filter(|b| (0x80..=0xBF).contains(b));
    let mut k = 0;
    while k < inside.len() {
        let (w, r) = inside[k];
        k += 1;
        let moves = a.state_moves(w);
        for b in continuation.clone() {
            if !step(&moves, r, b, out, &mut inside) {
                return false;
            }
        }
    }
    true
}

/// Most states [`text_closed`] follows: the automata it is for have a few
/// (a key before and after its pattern's first match), and a key of many
/// names' prefixes would make every walk of its states follow all of them.
const TEXT_CLOSED_MAX: usize = 16;

/// Most states [`text_closed`] follows from a state of a search
/// ([`search_like`]): a value that must contain one of many words (an
/// unanchored `a|b|…` pattern) is hundreds of states searching for them,
/// and without the closed set every walk from them went over the whole
/// trie (maskbench's config_schema: 5.6 ms → 1.5 ms, o40228's document
/// 150 ms → 14 ms).
const TEXT_CLOSED_SEARCH_MAX: usize = 1024;

/// Whether a set of [`TEXT_CLOSED_SEARCH_MAX`] states is worth following
/// from `u`: none of the states that a character leads `u` to takes every
/// character into itself. A key inside a declared name's prefix falls back
/// to the state of any other key, which does, and the other names'
/// prefixes are many states whose walks are cheap without the set (a
/// large set cost such keys' masks up to 0.6 ms). A search for words or
/// for a run of characters (an unanchored `a|b|…` or `[a-z]{162}`) falls
/// back to states that do not.
fn search_like(a: &Automaton, u: StateId, memo: &mut Skips) -> bool {
    let reps = text_reps(a, u, memo).to_vec();
    let mut out = Vec::new();
    if !text_successors(a, u, &reps, &mut out) {
        return false;
    }
    out.iter().all(|&x| {
        let reps = text_reps(a, x, memo).to_vec();
        text_successor(a, x, &reps) != Some(x)
    })
}

/// Whether every text of any length leads `u` through interior states
/// only, although its characters lead to several states: the states that
/// text leads `u` to (at most [`TEXT_CLOSED_MAX`], or
/// [`TEXT_CLOSED_SEARCH_MAX`] for a search) each take every character
/// into one of them. A key that must match an unanchored
/// pattern (`[a-z]`: before the first letter and after it) is such a set;
/// its first key mask walked the whole trie (1–2.5 ms).
fn text_closed(a: &Automaton, u: StateId, memo: &mut Skips) -> bool {
    if memo.not_closed.contains(&u) {
        return false;
    }
    // A search is followed further, found out only where the set grows
    // past the usual bound (most sets close or fail well within it).
    let mut closed_max = TEXT_CLOSED_MAX;
    let mut set = vec![u];
    // Per member, the index of the member it was found from.
    let mut found_from = vec![0usize];
    let mut members: rustc_hash::FxHashSet<StateId> = Default::default();
    members.insert(u);
    let (mut out, mut reps) = (Vec::new(), Vec::new());
    // The members are followed on their ASCII characters first, then on
    // the others (a member found then, on all): text that leaves on a
    // word (a think block's, up to `</think>`) leaves at the word's end,
    // found without reading every character of the word's states (280 K
    // instructions of a think block's first mask).
    let mut ascii_phase = true;
    // Per member, whether its ASCII characters were followed.
    let mut ascii_done: Vec<bool> = vec![false];
    let mut k = 0;
    let closed = 'follow: loop {
        if k == set.len() {
            if !ascii_phase {
                break true;
            }
            ascii_phase = false;
            k = 0;
            continue;
        }
        let w = set[k];
        k += 1;
        let chars = match (ascii_phase, ascii_done[k - 1]) {
            (true, _) => TextChars::Ascii,
            (false, true) => TextChars::Others,
            (false, false) => TextChars::All,
        };
        ascii_done[k - 1] = true;
        reps.clear();
        reps.extend(text_reps(a, w, memo).iter().copied().filter(|&b| chars.reads(b)));
        out.clear();
        // A member that text leads out of leads the others out too (a
        // state inside `</think` met again from another one).
        let leads_out = !text_successors(a, w, &reps, &mut out) || out.is_empty() || out.iter().any(|x| memo.not_closed.contains(x));
        if leads_out {
            // Text leads `w` out, and so every member that text leads to
            // `w`: the members it was found from, back to `u`, are not
            // closed either (each was followed anew, most of a think
            // block's first mask: the states inside `</think` each found
            // the same way out).
            memo.leaks.insert(u);
            let mut j = k - 1;
            loop {
                memo.not_closed.insert(set[j]);
                if j == 0 {
                    break;
                }
                j = found_from[j];
            }
            break false;
        }
        for &x in &out {
            if members.insert(x) {
                if set.len() == TEXT_CLOSED_MAX && closed_max == TEXT_CLOSED_MAX && search_like(a, u, memo) {
                    closed_max = TEXT_CLOSED_SEARCH_MAX;
                }
                if set.len() == closed_max {
                    break 'follow false;
                }
                set.push(x);
                found_from.push(k - 1);
                ascii_done.push(false);
            }
        }
    };
    // Every state of a closed set is closed. When a large set is not, none
    // of its states is followed that far again (each would follow most of
    // the same states).
    for &w in &set {
        if closed {
            memo.texts.entry(w).or_insert((u32::MAX, false));
        } else if closed_max > TEXT_CLOSED_MAX {
            memo.not_closed.insert(w);
        }
    }
    closed
}

/// Most states [`text_bounded_run`] follows.
const TEXT_BOUNDED_MAX: usize = 256;

/// Most bytes [`text_bounded_run`] steps its members on: a set whose
/// characters go through many states inside a character (a pattern of
/// `\s` and `\S`, whose Unicode classes split the continuation bytes)
/// steps each member on thousands, and following it cost more than it
/// saved (maskbench's o27348: 68,000 bytes, 14 M instructions).
const TEXT_BOUNDED_WORK: usize = 24_000;

/// How many characters of any text lead `t` through interior states, where
/// its characters lead to several states and some text leads out (a value
/// that must match exactly one of several unanchored patterns dies on a
/// second match; a word search's set is not closed then): the distance, in
/// characters, from `t` to the nearest state of the set that some
/// character leads out of. The set that text leads `t` to (at most
/// [`TEXT_BOUNDED_MAX`] states) is followed once, and every member's run
/// is memoized with it: a member that text leads out of has none, any
/// other one more than the least of its successors' (shortest paths back
/// from the members that lead out; a state whose run is known already
/// counts as it is, a member past the bound as none, and a member from
/// which no text leads out is closed). `None` where `t` itself leads out.
///
/// Why: such a string's first partition walked every node of the trie
/// (maskbench's o65510, oneOf five unanchored words: 52 M instructions,
/// 7 ms), while a second match needs ten characters, more than most
/// tokens hold.
fn text_bounded_run(a: &Automaton, t: StateId, m: &mut Skips) -> Option<(u32, bool)> {
    if m.not_bounded.contains(&t) {
        return None;
    }
    let mut states = vec![t];
    let mut index: FxHashMap<StateId, u32> = FxHashMap::default();
    index.insert(t, 0);
    // Per member: its successors (indexes), and its run where known.
    let mut succ: Vec<Vec<u32>> = Vec::new();
    let mut run: Vec<u32> = Vec::new();
    let mut dead: Vec<bool> = Vec::new();
    let mut out = Vec::new();
    let mut overflow = false;
    let mut work = 0usize;
    let mut k = 0;
    while k < states.len() {
        let w = states[k];
        k += 1;
        succ.push(Vec::new());
        dead.push(false);
        if let Some(&(r, d)) = m.texts.get(&w) {
            run.push(r);
            dead[k - 1] = d;
            continue;
        }
        if work > TEXT_BOUNDED_WORK {
            // A set whose characters go through many states (Unicode
            // classes): none of its members is followed again.
            m.not_bounded.extend(states.iter().copied());
            return None;
        }
        let reps = text_reps(a, w, m).to_vec();
        out.clear();
        if !text_successors_ending(a, w, &reps, &mut out, true, &mut work) || out.is_empty() {
            if k == 1 {
                return None;
            }
            run.push(0);
            dead[k - 1] = text_dead(a, w, &reps);
            continue;
        }
        let mut within = true;
        let mut next = Vec::with_capacity(out.len());
        for &x in &out {
            let j = match index.get(&x) {
                Some(&j) => j,
                None if states.len() < TEXT_BOUNDED_MAX => {
                    index.insert(x, states.len() as u32);
                    states.push(x);
                    states.len() as u32 - 1
                }
                None => {
                    within = false;
                    break;
                }
            };
            next.push(j);
        }
        // A member with a successor past the bound counts as having no run.
        overflow |= !within;
        run.push(if within { u32::MAX } else { 0 });
        if within {
            succ[k - 1] = next;
        }
    }
    // Shortest paths back from the members whose runs are known.
    let n = states.len();
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (i, next) in succ.iter().enumerate() {
        for &j in next {
            preds[j as usize].push(i as u32);
        }
    }
    let mut fixed = vec![false; n];
    let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<(u32, u32)>> =
        (0..n).filter(|&i| run[i] != u32::MAX).map(|i| std::cmp::Reverse((run[i], i as u32))).collect();
    while let Some(std::cmp::Reverse((r, i))) = heap.pop() {
        if std::mem::replace(&mut fixed[i as usize], true) {
            continue;
        }
        let up = (r + 1).min(TEXT_UNKNOWN - 1);
        for &p in &preds[i as usize] {
            let p = p as usize;
            if !fixed[p] && !succ[p].is_empty() && up < run[p] {
                run[p] = up;
                heap.push(std::cmp::Reverse((up, p as u32)));
            }
        }
    }
    // Whether every character past a member's run dies, as [`text_run`]
    // has it for a chain (the tokens of a text subtree are then counted):
    // where it leads out, whether every character dies; else whether
    // every successor's run is one less and dies past it.
    let mut order: Vec<usize> = (0..n).filter(|&i| !succ[i].is_empty() && run[i] != u32::MAX).collect();
    order.sort_unstable_by_key(|&i| run[i]);
    for i in order {
        dead[i] = succ[i].iter().all(|&j| run[j as usize].checked_add(1) == Some(run[i]) && dead[j as usize]);
    }
    // Past the bound, the members' runs are lower bounds: only `t`'s is
    // kept, and the others are not followed again (each would follow
    // most of the same set).
    for (i, &w) in states.iter().enumerate() {
        if i == 0 || !overflow {
            m.texts.entry(w).or_insert((run[i], dead[i]));
        } else {
            m.not_bounded.insert(w);
        }
    }
    Some((run[0], dead[0]))
}

/// Which characters of text [`text_closed`] follows from a member.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TextChars {
    Ascii,
    Others,
    All,
}

impl TextChars {
    /// Whether a representative byte (see [`text_reps`]) starts one of them.
    fn reads(self, b: u8) -> bool {
        match self {
            TextChars::Ascii => b < 0x80,
            TextChars::Others => b >= 0x80,
            TextChars::All => true,
        }
    }
}

/// Whether no character of text has a way out of `u`: every byte that
/// starts one leads to the dead state (`reps` as in [`text_successor`]).
fn text_dead(a: &Automaton, u: StateId, reps: &[u8]) -> bool {
    let moves = a.state_moves(u);
    reps.iter().all(|&b| text_next(0, b) == TEXT_DEAD || moves.next(b) == DEAD)
}

/// How many characters of text ([`text_next`]) `t` takes for sure, at
/// least up to `cap`: every text of at most that many characters (the last
/// possibly incomplete) leads from `t` through interior states only
/// (`u32::MAX`: any number, a string body's loop). Follows the chain of
/// states that take every character alike to the same successor (a
/// length-bounded string counts characters down along it); a state that
/// does not is given 0. A chain longer than `cap` is cut there (its states
/// get lower bounds: `cap` for the first, one less for each next). With
/// the run, whether the chain ends in a state where every character dies
/// (the string's maximum length). Memoized in `memo`.
fn text_run(a: &Automaton, t: StateId, cap: u32, memo: &mut Skips) -> (u32, bool) {
    if let Some(&n) = memo.texts.get(&t) {
        return n;
    }
    let mut chain: Vec<StateId> = Vec::new();
    let mut on_chain: rustc_hash::FxHashSet<StateId> = Default::default();
    let mut cur = t;
    let tail = loop {
        if let Some(&n) = memo.texts.get(&cur) {
            break n;
        }
        if chain.len() as u32 >= cap.max(1) {
            break (0, false);
        }
        // The chain stays in one rule, so in one table.
        let reps = text_reps(a, cur, memo).to_vec();
        match text_successor(a, cur, &reps) {
            None => {
                let end = if text_closed(a, cur, memo) { (u32::MAX, false) } else { (0, text_dead(a, cur, &reps)) };
                memo.texts.insert(cur, end);
                break end;
            }
            Some(u) if u == cur || on_chain.contains(&u) => {
                // A cycle taking every character: never leaves the interior.
                chain.push(cur);
                break (u32::MAX, false);
            }
            Some(u) => {
                chain.push(cur);
                on_chain.insert(cur);
                cur = u;
            }
        }
    };
    let (mut run, dead) = tail;
    for &s in chain.iter().rev() {
        if run != u32::MAX {
            run = (run + 1).min(TEXT_UNKNOWN - 1);
        }
        memo.texts.insert(s, (run, dead));
    }
    memo.texts[&t]
}

/// What `t` does with text: follows the chain of states that take every
/// character alike to one interior successor ([`text_successor`], as
/// [`text_run`] does) to its end, at most `cap` characters, and asks the
/// end whether every character dies there or all lead to one state (the
/// end of a length-bounded string's 32-character block, which returns to
/// the string's rule). Memoized per state of the chain.
fn text_end(a: &Automaton, t: StateId, cap: u32, m: &mut Skips) -> TextEnd {
    const NOT_ALIKE: TextEnd = TextEnd { run: 0, dead: false, exit: None };
    if let std::collections::hash_map::Entry::Vacant(slot) = m.chain_ends.entry(t) {
        // Most states that are not a string's take ASCII characters apart
        // (free text before a trigger: `<`); asking them costs less than
        // their table's text bytes (`text_reps`, per table: a grammar of
        // tools has tables of hundreds of classes).
        let moves = a.state_moves(t);
        let first = moves.next(b' ');
        if (0x21..0x80u8).any(|b| has_byte(&ASCII_TEXT, b) && moves.next(b) != first) {
            slot.insert((0, t));
            m.end_moves.insert(t, (false, None));
            return NOT_ALIKE;
        }
    }
    let mut chain: Vec<StateId> = Vec::new();
    let mut cur = t;
    let (tail, end) = loop {
        if let Some(&known) = m.chain_ends.get(&cur) {
            break known;
        }
        if chain.len() as u32 >= cap {
            // At least `cap` characters: as many as any token holds.
            return TextEnd { run: cap, dead: false, exit: None };
        }
        let reps = text_reps(a, cur, m).to_vec();
        match text_successor(a, cur, &reps) {
            Some(u) if u == cur || chain.contains(&u) => {
                chain.push(cur);
                break (u32::MAX, DEAD);
            }
            Some(u) => {
                chain.push(cur);
                cur = u;
            }
            None => {
                m.chain_ends.insert(cur, (0, cur));
                break (0, cur);
            }
        }
    };
    let n = chain.len() as u32;
    let run_at = |i: u32| if tail == u32::MAX { u32::MAX } else { tail + (n - i) };
    for (i, &s) in chain.iter().enumerate() {
        m.chain_ends.insert(s, (run_at(i as u32), end));
    }
    // `t` is the chain's first state, or, with no chain, the one known.
    let run = run_at(0);
    if run == u32::MAX {
        return TextEnd { run, dead: false, exit: None };
    }
    let (dead, exit) = match m.end_moves.get(&end) {
        Some(&known) => known,
        None => {
            let reps = text_reps(a, end, m).to_vec();
            let known = if text_dead(a, end, &reps) { (true, None) } else { (false, text_exit_of(a, end, &reps)) };
            m.end_moves.insert(end, known);
            known
        }
    };
    TextEnd { run: run.min(cap), dead, exit: if run >= cap { None } else { exit } }
}

/// The one state every character of text leads `u` to (through interior
/// states inside a character; the state a character ends on may finish or
/// call), if every character leads somewhere and all to the same state.
fn text_exit_of(a: &Automaton, u: StateId, reps: &[u8]) -> Option<StateId> {
    let mut out = Vec::new();
    (text_successors_ending(a, u, reps, &mut out, false, &mut 0) && out.len() == 1).then(|| out[0])
}

/// Accepts the tokens below trie node `i` that start at most `run`
/// characters after it, when every path below `i` is text (see
/// [`VocabIndex::text_chars`]) and, from the state at `i`, text of that
/// many characters is taken and the next character dies: a trie walk with
/// no automaton, cut where the characters run out. `stack` is scratch.
///
/// The paths below `i` are read from a character boundary, so each child
/// of `i` starts a character, and so does each child of an ASCII node:
/// with no characters left, nothing below such a node is taken, and its
/// children are not read one by one. A state that takes only `"` after a
/// short pattern's letters has a run of none: W4's `^[a-z]{2}$` read the
/// children of each of its 500 two-letter nodes, 105 K instructions of its
/// 480 K partition.
pub(crate) fn accept_text_up_to(v: &VocabIndex, i: usize, run: u32, accept: &mut impl Sink, stack: &mut Vec<(u32, u32)>) {
    if run == 0 {
        return;
    }
    let end = v.nodes[i].end;
    stack.clear();
    stack.push((end, 0));
    let mut j = i + 1;
    while (j as u32) < end {
        while j as u32 >= stack.last().unwrap().0 {
            stack.pop();
        }
        let node = v.nodes[j];
        let chars = stack.last().unwrap().1 + u32::from(!(0x80..0xC0).contains(&node.byte));
        if chars > run {
            j = node.end as usize;
            continue;
        }
        let below = v.text_chars[j];
        if below != u16::MAX && chars + below as u32 <= run {
            accept.add(v.subtree_tokens(j));
            j = node.end as usize;
            continue;
        }
        accept.add(v.tokens_at(j));
        if node.end as usize > j + 1 && (chars < run || node.byte >= 0x80) {
            stack.push((node.end, chars));
            j += 1;
        } else {
            j = node.end as usize;
        }
    }
}

/// The live moves of `u` by target: the target, how many bytes lead there,
/// and which (read by byte class over the row's window: a grammar of many
/// names has a hundred classes or more, most of them dead in most rows).
fn moves_by_target(a: &Automaton, u: StateId) -> Vec<Successor> {
    let mut out: Vec<(StateId, u32, [u64; 4])> = Vec::new();
    for (t, bits) in a.state_moves(u).by_window() {
        if t == DEAD {
            continue;
        }
        match out.iter_mut().find(|c| c.0 == t) {
            Some(c) => {
                c.1 += byte_count(bits);
                or_into(&mut c.2, bits);
            }
            None => out.push((t, byte_count(bits), *bits)),
        }
    }
    out
}

/// How many bytes a 256-bit set holds.
#[inline]
fn byte_count(set: &[u64; 4]) -> u32 {
    crate::bitset::count_bytes(set)
}

/// `set |= bits` over 256-bit sets.
#[inline]
fn or_into(set: &mut [u64; 4], bits: &[u64; 4]) {
    for (w, x) in set.iter_mut().zip(bits) {
        *w |= x;
    }
}

/// First bytes up to which a walk looks its subtrees up by byte.
const FEW_FIRST_BYTES: u32 = 16;

/// Sets the bits of `ids`.
#[inline]
pub(crate) fn set_all(bits: &mut Bitset, ids: &[u32]) {
    for &t in ids {
        bits.set(t as usize);
    }
}

/// Clears the bits of `ids`.
pub(crate) fn clear_all(bits: &mut Bitset, ids: &[u32]) {
    for &t in ids {
        bits.words[t as usize >> 5] &= !(1 << (t & 31));
    }
}

/// Where a partition walk puts the tokens it accepts.
pub(crate) trait Sink {
    fn add(&mut self, ids: &[u32]);
}

impl Sink for Bitset {
    #[inline]
    fn add(&mut self, ids: &[u32]) {
        set_all(self, ids);
    }
}

impl Sink for Vec<u32> {
    #[inline]
    fn add(&mut self, ids: &[u32]) {
        self.extend_from_slice(ids);
    }
}

/// The tokens a walk accepts: a list while they are fewer than the words
/// of a bitset, then a bitset. Most partitions accept a handful of tokens
/// (a key's prefixes), and a bitset of the vocabulary costs its zeroing and
/// a scan of every word to list them; a string state accepts most of the
/// vocabulary, where a list would cost its growth and its pages.
struct Accepted {
    ids: Vec<u32>,
    bits: Option<Bitset>,
    len: usize,
}

impl Accepted {
    fn new(len: usize) -> Accepted {
        Accepted { ids: Vec::new(), bits: None, len }
    }

    fn into_stored(self) -> StoredMask {
        match self.bits {
            Some(b) => StoredMask::from_bitset(b),
            None => {
                let mut ids = self.ids;
                ids.sort_unstable();
                ids.dedup();
                StoredMask::Ids(ids)
            }
        }
    }
}

impl Sink for Accepted {
    #[inline]
    fn add(&mut self, ids: &[u32]) {
        match &mut self.bits {
            Some(b) => set_all(b, ids),
            None => {
                self.ids.extend_from_slice(ids);
                if self.ids.len() >= self.len.div_ceil(32) {
                    let mut b = Bitset::new(self.len);
                    set_all(&mut b, &self.ids);
                    self.bits = Some(b);
                    self.ids = Vec::new();
                }
            }
        }
    }
}

/// How a walk from a state starts: from a set of tokens the state takes
/// whole, if any (see [`walk`]).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Start {
    /// Every text token of at most `run` characters ([`VocabIndex::text_up_to`]);
    /// `dead`: every character past the run dies.
    Text { run: u32, dead: bool },
    /// Free text that avoids these bytes ([`VocabIndex::free_text_cover`]).
    Free([u64; 4]),
    /// Any string of these ASCII bytes ([`VocabIndex::class_cover`]).
    Class([u64; 2]),
    Plain,
}

/// Fewest ASCII bytes of a loop for which a walk takes its class cover
/// ([`VocabIndex::class_cover`]): a digit loop's walk is short already.
const CLASS_COVER_MIN_BYTES: u32 = 16;

/// Most ASCII bytes of such a loop: a wider class is nearly text, whose
/// walks have other shortcuts, and its cover would be found by a pass over
/// most of the trie.
const CLASS_COVER_MAX_BYTES: u32 = 72;

/// How a walk from the interior state `s` starts.
///
/// - A state that takes `n` characters of any text (a string body, a
///   bounded string with room left) accepts every text token of at most
///   `n` characters: the vocabulary's set of them is copied in, and the walk
///   skips what it covers instead of adding token after token (a string
///   body's partition is most of the vocabulary).
/// - Free text (a state that every character but a few bytes leads back to
///   through interior states: text inside a tag, before its end) accepts
///   every well-formed UTF-8 token without those bytes, copied in likewise
///   (a think block's text: 790 µs of adding tokens one by one), and only
///   the cover's skeleton is followed: every subtree off it is made of the
///   cover's tokens (330–530 µs of walking the subtrees of multi-byte
///   characters, now the skeleton's few hundred nodes). Text that refuses
///   a character of JSON text (`<`), whose cover is built with a skeleton
///   (the tokenizer's warm-up builds `<`'s), is not asked for a text run
///   first (30–40 µs of a think block's first mask); a string body (it
///   refuses only `"`, `\` and control bytes) takes its text run, its
///   partitions shared with the warm-up.
/// - A loop on a class of ASCII bytes (a pattern's `[a-z0-9-]+`, whose
///   strings of the class all stay on interior states for longer than any
///   token): every token of the class is taken, and only the paths to the
///   others are walked. The walk went down every subtree holding a byte
///   outside the class, 7,000 nodes for that one on Llama-3.
///
/// Every start gives the same partition; only the walk's cost differs.
fn start_of(a: &Automaton, v: &VocabIndex, s: StateId, m: &mut Skips) -> Start {
    if !interior(a, s) {
        return Start::Plain;
    }
    let free = utf8_loop(a, s, m).map(|l| free_text_excluded(&l));
    // (Only with a cover built already, with its skeleton: a key that must
    // match an unanchored pattern refuses a character too, but its set of
    // states takes every character, and its text run is faster.)
    if free.is_none() {
        // A text run needs every ASCII character of text to move the
        // state to an interior one, and a class loop at least 16 ASCII
        // bytes; a state that moves on fewer (inside an enum's names) is
        // not asked for its skip, which followed its chain to the name's
        // end for each of a 100-name enum's partitions.
        let live = a.byte_set(s);
        let all_text = (0..2).all(|k| ASCII_TEXT[k] & !live[k] == 0);
        if !all_text && byte_count(&[live[0], live[1], 0, 0]) < CLASS_COVER_MIN_BYTES {
            return Start::Plain;
        }
    }
    let refuses_text = free.is_some_and(|ex| {
        (0..4).any(|k| ex[k] & ASCII_TEXT[k] != 0) && v.built_free_text_cover(ex).is_some_and(|c| c.skeleton.is_some())
    });
    let mut sk = skip_of(a, s, m);
    if !refuses_text {
        let run = text_of(a, s, &mut sk, v.max_token_len as u32, m);
        // Only where the walk would keep a bitset anyway: fewer tokens are
        // cheaper as a list (the last characters of a bounded string).
        // Free text whose run is bounded (a search that dies on a second
        // match, see [`text_bounded_run`]) starts from its own cover,
        // which takes what the run does not.
        if run > 0 && v.text_up_to_len(run) >= v.logits_size.div_ceil(32) && (free.is_none() || run == u32::MAX) {
            return Start::Text { run, dead: sk.text_dead };
        }
    }
    if let Some(excluded) = free {
        return Start::Free(excluded);
    }
    let class = [sk.bytes[0], sk.bytes[1]];
    if sk.run as usize >= v.max_token_len && (CLASS_COVER_MIN_BYTES..=CLASS_COVER_MAX_BYTES).contains(&byte_count(&[class[0], class[1], 0, 0])) {
        return Start::Class(class);
    }
    Start::Plain
}

/// The trie walk itself; `exit_id` names a frontier state in the output.
fn walk(a: &Automaton, v: &VocabIndex, s: StateId, exit_id: impl Fn(StateId) -> u32, memo: &SkipMemo) -> (StoredMask, Vec<(u32, u32)>) {
    let mut accept = Accepted::new(v.logits_size);
    let mut m = memo.take();
    let start = start_of(a, v, s, &mut m);
    let cover = match start {
        Start::Free(excluded) => Some(v.free_text_cover(excluded)),
        Start::Class(class) => v.class_cover(class),
        Start::Text { .. } | Start::Plain => None,
    };
    if let Some(cover) = &cover {
        accept.bits = Some(cover.tokens.clone());
        if let Some(skeleton) = &cover.skeleton {
            let leaves = match start {
                Start::Class(class) if !cover.exits.is_empty() => class_leaves(a, s, class).map(|y| (&cover.exits[..], y)),
                _ => None,
            };
            let frontier = walk_cover(a, v, s, &exit_id, &mut m, skeleton, leaves, &mut accept);
            memo.give_back(m);
            return (accept.into_stored(), frontier);
        }
    }
    // Without a skeleton, free text (that avoids common letters) skips the
    // subtrees made only of its cover's tokens instead.
    let (covered, free) = match start {
        Start::Text { run, dead } => {
            accept.bits = Some(v.text_up_to(run).clone());
            ((run, dead), None)
        }
        Start::Free(excluded) => ((0, false), Some(excluded)),
        Start::Class(_) | Start::Plain => ((0, false), None),
    };
    let frontier = walk_into(a, v, s, exit_id, &mut m, None, covered, free, &mut accept);
    memo.give_back(m);
    (accept.into_stored(), frontier)
}

/// Builds the vocabulary's class covers ([`VocabIndex::class_cover`]) of
/// the loops of `a` that a walk starts from ([`start_of`]), so that the
/// first mask inside such a pattern does not build one (170 µs of a 270 µs
/// mask for `[a-z0-9-]+` on Llama-3); each class is built once per
/// vocabulary. It runs beside the masks, after the compile (see
/// `CompiledGrammar::build_class_covers_in_background`: inside the
/// compile it was 0.3–0.5 ms of W2's and W4's first compiles), and is kept
/// short, since it shares the machine with them: a grammar of at most
/// [`CLASS_PREBUILD_MAX_STATES`] states (looking at each state's row costs
/// about 15–30 ns, 0.4 ms for a 26,000-state schema), classes of at most
/// [`CLASS_PREBUILD_MAX_BYTES`] bytes (an identifier's; a class of 65 bytes
/// took up to 0.8 ms), and at most [`CLASS_PREBUILD_MAX`] of them. Any other
/// class is built by the first walk that needs it. Its skips are its own
/// (the shared memo, taken out, would leave the masks' walks without it).
pub(crate) fn build_class_covers(a: &Automaton, v: &VocabIndex) {
    if a.n_states() > CLASS_PREBUILD_MAX_STATES {
        return;
    }
    let mut m = Skips::default();
    let mut seen: Vec<[u64; 2]> = Vec::new();
    for s in 0..a.n_states() as StateId {
        if seen.len() >= CLASS_PREBUILD_MAX {
            break;
        }
        if !a.flag(s, flags::BYTES) || !interior(a, s) {
            continue;
        }
        let mut loops = [0u64; 4];
        for (t, bits) in a.state_moves(s).by_window() {
            if t == s {
                or_into(&mut loops, bits);
            }
        }
        if !(CLASS_COVER_MIN_BYTES..=CLASS_PREBUILD_MAX_BYTES).contains(&byte_count(&[loops[0], loops[1], 0, 0])) {
            continue;
        }
        if let Start::Class(class) = start_of(a, v, s, &mut m) {
            if !seen.contains(&class) && byte_count(&[class[0], class[1], 0, 0]) <= CLASS_PREBUILD_MAX_BYTES {
                seen.push(class);
                v.class_cover(class);
            }
        }
    }
}

/// See [`build_class_covers`].
const CLASS_PREBUILD_MAX_STATES: usize = 4096;
const CLASS_PREBUILD_MAX_BYTES: u32 = 40;
const CLASS_PREBUILD_MAX: usize = 2;

/// Most states a class's paths from a state may lead to for
/// [`class_leaves`] to follow them all (a counted repetition of the class,
/// `{1,63}`, has one per count).
const CLASS_LEAVES_MAX_STATES: usize = 64;

/// The bytes outside `class` by which the strings of the class from `s`
/// can go on without dying: those of every state that such a string
/// leads to (None past [`CLASS_LEAVES_MAX_STATES`] of them). A class
/// cover's skeleton subtree whose tokens leave the class by none of them
/// holds nothing for `s` (see [`SkeletonExits`]).
fn class_leaves(a: &Automaton, s: StateId, class: [u64; 2]) -> Option<[u64; 4]> {
    let class = [class[0], class[1], 0, 0];
    let mut leaves = [0u64; 4];
    let mut seen: smallvec::SmallVec<[StateId; 8]> = smallvec::smallvec![s];
    let mut k = 0;
    while k < seen.len() {
        let q = seen[k];
        k += 1;
        for (t, bits) in a.state_moves(q).by_window() {
            if t == DEAD {
                continue;
            }
            for w in 0..4 {
                leaves[w] |= bits[w] & !class[w];
            }
            if (0..4).any(|w| bits[w] & class[w] != 0) && !seen.contains(&t) {
                if seen.len() == CLASS_LEAVES_MAX_STATES {
                    return None;
                }
                seen.push(t);
            }
        }
    }
    Some(leaves)
}

/// The walk from a state `s` that takes each token of a cover through
/// interior states (free text, see [`utf8_loop`]; a loop on a class of
/// bytes, see [`VocabIndex::class_cover`]), the cover's tokens in
/// `accept`: no subtree off the cover's `skeleton` holds a token or a
/// frontier node left to find. The skeleton's nodes are followed; one that
/// holds no token of the cover is walked whole ([`walk_into`]). With
/// `leaves` (a class cover's exits and [`class_leaves`] of `s`), a node
/// whose paths leave the class by none of the bytes `s`'s do is jumped.
#[allow(clippy::too_many_arguments)]
fn walk_cover(
    a: &Automaton,
    v: &VocabIndex,
    s: StateId,
    exit_id: &impl Fn(StateId) -> u32,
    memo_now: &mut Skips,
    skeleton: &[SkeletonNode],
    leaves: Option<(&[SkeletonExits], [u64; 4])>,
    accept: &mut Accepted,
) -> Vec<(u32, u32)> {
    let mut frontier = Vec::new();
    // (subtree end, state) per depth.
    let mut stack: Vec<(u32, StateId)> = vec![(u32::MAX, s)];
    let mut k = 0;
    // The exits entry of the next node that is not whole.
    let mut e = 0;
    while k < skeleton.len() {
        if let Some((exits, bytes)) = leaves {
            let sn = &skeleton[k];
            if sn.whole {
                if !has_byte(&bytes, sn.node.byte) {
                    k += 1;
                    continue;
                }
            } else {
                let x = &exits[e];
                if (0..4).all(|w| x.bytes[w] & bytes[w] == 0) {
                    (k, e) = (x.end as usize, x.end_exit as usize);
                    continue;
                }
                e += 1;
            }
        }
        let SkeletonNode { id: n, node, whole } = skeleton[k];
        k += 1;
        while n >= stack.last().unwrap().0 {
            stack.pop();
        }
        let st = stack.last().unwrap().1;
        let i = n as usize;
        let t = a.next(st, node.byte);
        if whole {
            // (Broken UTF-8 dies at once: 77 of the 207 whole nodes of `<`
            // on Llama-3.)
            if t != DEAD {
                frontier.extend(walk_into(a, v, st, exit_id, memo_now, Some(i), (0, false), None, accept));
            }
            continue;
        }
        if !interior(a, t) {
            if t != DEAD {
                frontier.push((n, exit_id(t)));
            }
            match leaves {
                // Past the subtree, and past its exits entries too.
                Some((exits, _)) => (k, e) = (exits[e - 1].end as usize, exits[e - 1].end_exit as usize),
                None => {
                    while k < skeleton.len() && skeleton[k].id < node.end {
                        k += 1;
                    }
                }
            }
            continue;
        }
        accept.add(v.tokens_of(&node));
        stack.push((node.end, t));
    }
    frontier
}

/// The walk proper, into `accept`; with `subtree` set, only that node's
/// subtree is walked, from `s` as the state of its parent. `accept` already holds
/// [`VocabIndex::text_up_to`]`(covered)` when `covered` > 0 (`s`'s text
/// run): tokens of text of at most that many characters from the root are
/// not added again, and subtrees of nothing else are not visited. With
/// `cover_dead` (every character past the run dies), nothing below a text
/// path within the cover is left to walk either.
#[allow(clippy::too_many_arguments)]
fn walk_into(
    a: &Automaton,
    v: &VocabIndex,
    s: StateId,
    exit_id: impl Fn(StateId) -> u32,
    memo_now: &mut Skips,
    subtree: Option<usize>,
    (covered, cover_dead): (u32, bool),
    free: Option<[u64; 4]>,
    accept: &mut impl Sink,
) -> Vec<(u32, u32)> {
    let nodes = &v.nodes;
    let mut frontier = Vec::new();
    // Text runs past the longest token are never needed.
    let cap = v.max_token_len as u32;
    // The last state's skip: consecutive nodes often share their state.
    let mut last: Option<(StateId, Skip)> = None;
    let mut last_closed: Option<(StateId, Option<[u64; 4]>)> = None;
    // The last state asked whether it takes any character of text.
    let mut last_no_text: Option<(StateId, bool)> = None;
    // (subtree end, state, text decoder state and characters started from
    // the root: what `covered` is about) per depth.
    // Without a cover, every path counts as not text: no decoding at all.
    let root_text = if covered > 0 { 0 } else { TEXT_DEAD };
    let top = subtree.map_or(nodes[0].end, |c| nodes[c].end);
    // With `free`, per depth too: the UTF-8 decoder state of the path from
    // the root while it holds no excluded byte (its tokens are in `accept`).
    let excluded = free.unwrap_or([0; 4]);
    // Per depth also the next and the end of the children left to walk in
    // `picked` (`NO_SELECTION`: every child, in turn). In a walk with no
    // cover and no free text, a node with many children, from a state that
    // moves on few of them (an enum's names after their first letters, a
    // short pattern's last letter), has its live children picked from the
    // index's child table: its dead children did nothing but cost a read
    // of their node each (a cache miss, siblings lying a subtree apart),
    // 1,400 of the 1,500 nodes of the first partition in W4's 100-name enum.
    let plain = covered == 0 && free.is_none();
    let mut picked: Vec<u32> = Vec::new();
    let mut stack: Vec<(u32, StateId, u8, u32, u8, u32, u32)> =
        vec![(top, s, root_text, 0, if free.is_some() { 0 } else { TEXT_DEAD }, NO_SELECTION, NO_SELECTION)];
    let mut scratch = Vec::new();
    let total = nodes.len();
    // The moves of the state last asked (siblings share their parent's).
    let mut moves = (s, a.state_moves(s));
    // A state with few first bytes (a key's opening quote, a digit) walks
    // only their subtrees, found by the root's child table, instead of
    // asking about all 256 first-level nodes.
    let ranges: smallvec::SmallVec<[(usize, usize); 1]> = match subtree {
        Some(c) => smallvec::smallvec![(c, top as usize)],
        None => {
            let firsts = a.byte_set(s);
            if byte_count(&firsts) <= FEW_FIRST_BYTES {
                (0..=255u8)
                    .filter(|&b| has_byte(&firsts, b))
                    .filter_map(|b| v.root_child[b as usize].map(|c| (c as usize, nodes[c as usize].end as usize)))
                    .collect()
            } else {
                smallvec::smallvec![(1, total)]
            }
        }
    };
    for (lo, hi) in ranges {
    let mut i = lo;
    while i < hi {
        while i as u32 >= stack.last().unwrap().0 {
            stack.pop();
        }
        let frame = stack.last_mut().unwrap();
        if frame.5 != NO_SELECTION {
            if frame.5 == frame.6 {
                i = frame.0 as usize;
                continue;
            }
            i = picked[frame.5 as usize] as usize;
            frame.5 += 1;
        }
        let &(_, st, text_at, chars_at, free_at, _, _) = stack.last().unwrap();
        if text_at == 0 && v.sibling_text[i] != u16::MAX && chars_at + v.text_run_chars[i] as u32 <= covered {
            // A run of siblings that are all text within the cover.
            i = v.text_run_end[i] as usize;
            continue;
        }
        let node = nodes[i];
        let free_here = if free_at == TEXT_DEAD || has_byte(&excluded, node.byte) {
            TEXT_DEAD
        } else {
            utf8_next(free_at, node.byte)
        };
        if free_here != TEXT_DEAD {
            if free_here == 0 && v.free_text_below(i, &excluded) {
                // The whole subtree is free text of the cover.
                i = node.end as usize;
                continue;
            }
            // The path is free text of the cover (its tokens are in
            // `accept`, its states interior): only the paths below that
            // leave it are left to walk.
            if moves.0 != st {
                moves = (st, a.state_moves(st));
            }
            let t = moves.1.next(node.byte);
            if interior(a, t) {
                if node.end as usize > i + 1 {
                    stack.push((node.end, t, TEXT_DEAD, 0, free_here, NO_SELECTION, NO_SELECTION));
                }
                i += 1;
                continue;
            }
        }
        // Whether the path to this node is text from the root, and within
        // the covered characters: its tokens are in `accept` already.
        let text_here = if text_at == TEXT_DEAD { TEXT_DEAD } else { text_next(text_at, node.byte) };
        let chars_here = chars_at + u32::from(!(0x80..0xC0).contains(&node.byte));
        let in_cover = text_here != TEXT_DEAD && chars_here <= covered;
        if in_cover && text_here == 0 && v.text_chars[i] != u16::MAX && chars_here + v.text_chars[i] as u32 <= covered {
            // The whole subtree is text within the cover.
            i = node.end as usize;
            continue;
        }
        if moves.0 != st {
            moves = (st, a.state_moves(st));
        }
        let t = moves.1.next(node.byte);
        if t == DEAD {
            i = node.end as usize;
            continue;
        }
        if a.flags[t as usize] & (flags::ACCEPTING | flags::CALLS) != 0 {
            frontier.push((i as u32, exit_id(t)));
            i = node.end as usize;
            continue;
        }
        if node.end as usize == i + 1 {
            // A leaf: its tokens end on an interior state.
            if !in_cover {
                accept.add(v.tokens_at(i));
            }
            i += 1;
            continue;
        }
        if in_cover && text_here == 0 && v.text_chars[i] != u16::MAX {
            // Text below that reaches past the cover, whose tokens within
            // it are in `accept`: the rest dies, or only the paths past the
            // cover are left to walk (a bounded string's block end).
            if cover_dead {
                i = node.end as usize;
            } else {
                stack.push((node.end, t, text_here, chars_here, free_here, NO_SELECTION, NO_SELECTION));
                i += 1;
            }
            continue;
        }
        if v.text_chars[i] != u16::MAX {
            // No character of text goes on from it (a name's closing
            // quote is all it takes): of a text subtree, only the node's
            // own tokens are taken, as its skip's dead text run would say.
            // (Asked before its skip: siblings share the state, and a
            // pattern's last letter, say, has hundreds of them.)
            let no_text = match last_no_text {
                Some((u, no)) if u == t => no,
                _ => {
                    let live = *memo_now.live.entry(t).or_insert_with(|| a.byte_set(t));
                    let no = live[0] & ASCII_TEXT[0] == 0 && live[1] & ASCII_TEXT[1] == 0 && live[3] & TEXT_LEADS == 0;
                    last_no_text = Some((t, no));
                    no
                }
            };
            if no_text {
                if !in_cover {
                    accept.add(v.tokens_at(i));
                }
                i = node.end as usize;
                continue;
            }
        }
        // A state that moves on some ASCII characters of text but not all
        // (inside an enum's names, a key's next letters) takes no text
        // subtree whole, and text does not die in it; with fewer than 64
        // ASCII moves it is no free text either. Its skip's bytes are
        // those of its first step, and a closed set's are among its moves
        // (asked of large subtrees only). A subtree holding a byte outside
        // them is walked into with no skip asked, where the skip is not
        // known yet: it followed the state's chain to the end of a name,
        // and a 100-name enum's first mask spent half its time there.
        let known = match last {
            Some((u, sk)) if u == t => Some(sk),
            _ => memo_now.skips.get(&t).copied(),
        };
        if known.is_none() {
            let live = *memo_now.live.entry(t).or_insert_with(|| a.byte_set(t));
            let text_moves = [live[0] & ASCII_TEXT[0], live[1] & ASCII_TEXT[1]];
            let partial_text = text_moves != [0, 0] && text_moves != [ASCII_TEXT[0], ASCII_TEXT[1]];
            let outside = partial_text
                && (!v.below_within(i, &live)
                    || byte_count(&[live[0], live[1], 0, 0]) < UTF8_LOOP_MIN
                        && node.end as usize - i < CLOSED_MIN_NODES
                        && !v.below_within(i, memo_now.first.entry(t).or_insert_with(|| first_skip_bytes(a, t))));
            if outside {
                if !in_cover {
                    accept.add(v.tokens_at(i));
                }
                let (next, end) = if plain { live_children(a, v, t, i, &mut picked) } else { (NO_SELECTION, NO_SELECTION) };
                stack.push((node.end, t, text_here, chars_here, free_here, next, end));
                i += 1;
                continue;
            }
        }
        // Every path below stays on a run of interior states (a loop inside
        // a string, a length-bounded string with room left): the whole
        // subtree is accepted without visiting it.
        let mut sk = match known {
            Some(sk) => sk,
            None => skip_of(a, t, memo_now),
        };
        let mut whole = sk.takes_bytes(v, i);
        // Or the subtree is JSON string text (multi-byte characters), and
        // the state takes as many characters of any text as it holds.
        let chars = v.text_chars[i];
        if !whole && chars != u16::MAX {
            whole = text_of(a, t, &mut sk, cap, memo_now) >= chars as u32;
        }
        last = Some((t, sk));
        if !whole && sk.run == u32::MAX && v.utf8_below[i] && sk.bytes[0].count_ones() + sk.bytes[1].count_ones() >= UTF8_LOOP_MIN {
            // Or free text: a state looping on most ASCII bytes, to which
            // every character leads back, and a subtree whose ASCII bytes
            // are among those that do.
            whole = utf8_loop(a, t, memo_now).is_some_and(|l| v.below_within(i, &l));
        }
        if !whole && v.utf8_below[i] && node.end as usize - i >= CLOSED_MIN_NODES && v.below[i][2] != 0 {
            whole = utf8_chars_loop(a, t, memo_now).is_some_and(|l| v.below_within(i, &l));
        }
        if !whole && node.end as usize - i >= CLOSED_MIN_NODES {
            // The last state's closed bytes, as its skip.
            let bytes = match last_closed {
                Some((u, b)) if u == t => b,
                _ => closed_bytes(a, t, &sk, &mut memo_now.closed),
            };
            last_closed = Some((t, bytes));
            whole = bytes.is_some_and(|b| v.below_within(i, &b));
        }
        if whole {
            accept.add(v.subtree_tokens(i));
            i = node.end as usize;
            continue;
        }
        if !in_cover {
            accept.add(v.tokens_at(i));
        }
        if chars != u16::MAX && sk.text_dead {
            // Text below, and a string whose length runs out first: which
            // tokens fit is a matter of counting characters (all of them
            // covered already when the path is text from the root).
            if !(in_cover && text_here == 0 && chars_here.saturating_add(sk.text) <= covered) {
                accept_text_up_to(v, i, sk.text, accept, &mut scratch);
            }
            i = node.end as usize;
            continue;
        }
        let (next, end) = if plain { live_children(a, v, t, i, &mut picked) } else { (NO_SELECTION, NO_SELECTION) };
        stack.push((node.end, t, text_here, chars_here, free_here, next, end));
        i += 1;
    }
    }
    frontier
}

/// No selection of a walk frame's children: each is walked in turn.
const NO_SELECTION: u32 = u32::MAX;

/// Fewest children of a node for [`live_children`] to pick its live ones.
const SELECT_MIN_CHILDREN: u32 = 8;

/// The children of trie node `i` that state `t` moves on, appended to
/// `live`: their range there, or [`NO_SELECTION`] for a node with fewer
/// than [`SELECT_MIN_CHILDREN`] children (see [`walk_into`]).
fn live_children(a: &Automaton, v: &VocabIndex, t: StateId, i: usize, live: &mut Vec<u32>) -> (u32, u32) {
    let (lo, hi) = (v.child_start[i] as usize, v.child_start[i + 1] as usize);
    if hi - lo < SELECT_MIN_CHILDREN as usize {
        return (NO_SELECTION, NO_SELECTION);
    }
    let moves = a.state_moves(t);
    let start = live.len() as u32;
    for (&c, &b) in v.child_node[lo..hi].iter().zip(&v.child_byte[lo..hi]) {
        if moves.next(b) != DEAD {
            live.push(c);
        }
    }
    (start, live.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every state's closed bytes ([`closed_bytes`]) keep every path of
    /// them, as long as the set is large, on interior states; and the
    /// patterns they are for get more bytes than their chain skips. Checked
    /// by following every path of those bytes through the states it
    /// reaches. Patterns: a host name whose last label is counted, then a
    /// path (the bytes of a word move it among tens of states); a scheme
    /// prefix a host may also start with (`http` takes `:`, after which
    /// only `/` goes on); a counted run that dies.
    #[test]
    fn closed_bytes_keep_every_path_interior() {
        let patterns = [
            r"(https?://)?([0-9a-z.-]+)\.([a-z.]{2,6})([/\w .-]*)*/?",
            r"(http://)?[a-z]+(:[0-9]+)?",
            r"[a-z]{3,9}x",
        ];
        let mut wider = 0;
        for p in patterns {
            let a = pattern_then_quote(p);
            let mut m = Skips::default();
            for t in 0..a.n_states() as StateId {
                if !interior(&a, t) {
                    continue;
                }
                let chain = skip_of(&a, t, &mut m);
                let Some(bytes) = closed_bytes(&a, t, &chain, &mut m.closed) else { continue };
                wider += usize::from(byte_count(&bytes) > byte_count(&chain.bytes));
                let mut seen = vec![t];
                let mut k = 0;
                while k < seen.len() {
                    let w = seen[k];
                    k += 1;
                    for b in (0..=255u8).filter(|&b| has_byte(&bytes, b)) {
                        let u = a.next(w, b);
                        assert!(interior(&a, u), "{p}: byte {b:#x} leads state {w}, reached from {t} on its closed bytes, to {u}, not interior");
                        if !seen.contains(&u) {
                            seen.push(u);
                        }
                    }
                }
            }
        }
        assert!(wider >= 2, "closed bytes wider than the chain's for only {wider} states");
    }

    /// [`text_closed`] says a state is closed exactly when every text of
    /// any length leads it through interior states only, written plainly
    /// (following every character from every state reached, with no bound
    /// on their number); and a search for one of many words or for a run
    /// of characters is found closed although it holds more states than
    /// [`TEXT_CLOSED_MAX`]. A search that dies further on (an `x` within
    /// the first four characters) must not be.
    #[test]
    fn text_closed_is_every_text_staying_interior() {
        let patterns = [
            (".*(integer|continuous|alpha|beta|gamma|delta|epsilon).*", true),
            (".*[a-z0-9_-]{40}.*", true),
            (".{0,3}x[^q].*", false),
        ];
        for (p, searches) in patterns {
            let a = pattern_then_quote(p);
            let mut large = 0;
            for u in 0..a.n_states() as StateId {
                if !interior(&a, u) {
                    continue;
                }
                let mut m = Skips::default();
                let said = text_closed(&a, u, &mut m);
                // Plainly: every state that text reaches takes every
                // character into an interior state.
                let mut seen = vec![u];
                let mut k = 0;
                let mut closed = true;
                while k < seen.len() && closed {
                    let w = seen[k];
                    k += 1;
                    let reps = text_reps(&a, w, &mut m).to_vec();
                    let mut out = Vec::new();
                    closed = text_successors(&a, w, &reps, &mut out) && !out.is_empty();
                    for x in out {
                        if !seen.contains(&x) {
                            seen.push(x);
                        }
                    }
                }
                assert!(!said || closed, "{p}: state {u} said closed, but some text leaves the interior");
                if said && seen.len() > TEXT_CLOSED_MAX {
                    large += 1;
                }
            }
            assert_eq!(large > 0, searches, "{p}: closed sets larger than {TEXT_CLOSED_MAX} found: {large}");
        }
    }

    /// The automaton of a grammar whose one rule is `body`.
    fn automaton_of(body: formcast_grammar::Expr) -> Automaton {
        use formcast_grammar::{Grammar, Rule};
        let g = Grammar { rules: vec![Rule::new("root", body)], root: 0 };
        crate::automaton::build_automaton(&g, &Default::default(), &crate::Budget::unlimited()).unwrap()
    }

    /// The automaton of a string matching the pattern `p`, then `"`.
    fn pattern_then_quote(p: &str) -> Automaton {
        use formcast_grammar::{regex::regex_to_expr, Expr};
        automaton_of(Expr::Seq(vec![regex_to_expr(p).unwrap(), Expr::literal("\"")]))
    }

    /// The automaton of any string of characters in `ranges`, then `"`.
    fn chars_then_quote(ranges: &[(u32, u32)]) -> Automaton {
        use formcast_grammar::Expr;
        automaton_of(Expr::Seq(vec![Expr::Repeat { expr: Box::new(Expr::Chars(ranges.to_vec())), min: 0, max: None }, Expr::literal("\"")]))
    }

    /// The lead bytes that [`utf8_leads_to`] finds are those all of whose
    /// characters lead a state back to itself, written plainly: text that
    /// refuses é (lead C3, whose other characters go on) or one emoji
    /// (lead F0), or everything past U+07FF (every lead but C2–DF).
    #[test]
    fn utf8_leads_are_those_whose_characters_all_lead_back() {
        let bodies = [
            vec![(0x20, 0x21), (0x23, 0xE8), (0xEA, 0x10FFFF)],
            vec![(0x20, 0x21), (0x23, 0x1F5FF), (0x1F601, 0x10FFFF)],
            vec![(0x20, 0x21), (0x23, 0x7FF)],
        ];
        for ranges in bodies {
            let a = chars_then_quote(&ranges);
            let s = a.rule_start[0];
            let Ok(leads) = utf8_leads_to(s, s, &mut StateChars(&a));
            for lead in 0xC2..=0xF4u8 {
                // Every character of this lead, by its scalar values.
                let all_back = (0x80..=0x10FFFFu32).filter_map(char::from_u32).filter(|c| c.len_utf8() > 1).filter(|c| {
                    let mut buf = [0u8; 4];
                    c.encode_utf8(&mut buf)[..].as_bytes()[0] == lead
                }).all(|c| {
                    let mut buf = [0u8; 4];
                    c.encode_utf8(&mut buf).as_bytes().iter().try_fold(s, |u, &b| {
                        let v = a.next(u, b);
                        (v != DEAD).then_some(v)
                    }) == Some(s)
                });
                assert_eq!(has_byte(&leads, lead), all_back, "{ranges:x?}: lead {lead:#x}");
            }
        }
    }

    /// Every continuation byte moves every state of a set as the
    /// representative of its block does, and is decoded alike: following
    /// a character on the representatives alone is following it on all.
    #[test]
    fn continuation_representatives_stand_for_their_bytes() {
        let bodies = [
            vec![(0x20, 0x21), (0x23, 0xE8), (0xEA, 0x10FFFF)],
            vec![(0x20, 0x21), (0x23, 0x1F5FF), (0x1F601, 0x10FFFF)],
            vec![(0x20, 0x7E), (0x4E00, 0x9FFF)],
        ];
        for ranges in bodies {
            let a = chars_then_quote(&ranges);
            // The states inside characters: every point a lead byte and then
            // continuation bytes reach.
            let mut states = vec![a.rule_start[0]];
            let mut k = 0;
            while k < states.len() && states.len() < 64 {
                let u = states[k];
                k += 1;
                for b in 0x80..=0xF4u8 {
                    let t = a.next(u, b);
                    if t != DEAD && !states.contains(&t) {
                        states.push(t);
                    }
                }
            }
            for n in 1..=states.len().min(4) {
                let set = &states[states.len() - n..];
                let mut reps = Vec::new();
                cont_reps_of(&a, set.iter().copied(), &mut reps);
                for b in 0x80..=0xBFu8 {
                    let range = CONT_RANGES.iter().position(|r| r >> (b - 0x80) & 1 != 0).unwrap();
                    let stands = reps.iter().any(|&r| CONT_RANGES[range] >> (r - 0x80) & 1 != 0 && set.iter().all(|&u| a.next(u, r) == a.next(u, b)));
                    assert!(stands, "{ranges:x?}: byte {b:#x} has no representative in {reps:x?}");
                }
            }
        }
    }

    /// The text runs read through [`text_reps`] are those of every byte:
    /// string bodies whose classes split UTF-8 lead and continuation bytes
    /// in every way (a character range ending inside a 3-byte block, one
    /// starting in a 4-byte block, an excluded quote, a length bound) and
    /// raw bytes, whose one class the decoder reads in many ways.
    #[test]
    fn text_runs_through_class_representatives_are_those_of_every_byte() {
        use formcast_grammar::Expr;
        let text = |ranges: Vec<(u32, u32)>| Expr::Chars(ranges);
        let quoted = |e: Expr| Expr::Seq(vec![e, Expr::literal("\"")]);
        let bodies = [
            quoted(Expr::Repeat { expr: Box::new(text(vec![(0x20, 0x21), (0x23, 0x10FFFF)])), min: 0, max: Some(40) }),
            quoted(Expr::Repeat { expr: Box::new(text(vec![(0x20, 0x7E), (0xE9, 0x7FF), (0x1000, 0x2FFF), (0x10000, 0x10FFF)])), min: 0, max: None }),
            quoted(Expr::Repeat { expr: Box::new(text(vec![(0x20, 0x21), (0x23, 0xD7FF), (0xE000, 0x10FFFF)])), min: 3, max: Some(9) }),
            quoted(Expr::Repeat { expr: Box::new(Expr::Alt(vec![text(vec![(0x41, 0x5A), (0x800, 0xFFFF)]), Expr::literal("é")])), min: 1, max: Some(70) }),
            // Every character but one, whose last byte is in A0–BF ('é') or
            // whose second is in 90–BF (an emoji): no text run, found only
            // by asking about that byte.
            quoted(Expr::Repeat { expr: Box::new(text(vec![(0x20, 0x21), (0x23, 0xE8), (0xEA, 0x10FFFF)])), min: 0, max: Some(20) }),
            quoted(Expr::Repeat { expr: Box::new(text(vec![(0x20, 0x21), (0x23, 0x1F5FF), (0x1F601, 0x10FFFF)])), min: 0, max: None }),
            // Raw bytes: one class for all the bytes the decoder reads apart.
            quoted(Expr::Repeat { expr: Box::new(Expr::ByteSet(vec![(0x20, 0x21), (0x23, 0xFF)])), min: 0, max: Some(12) }),
            quoted(Expr::Repeat { expr: Box::new(Expr::ByteSet(vec![(0x00, 0x21), (0x23, 0xFF)])), min: 0, max: None }),
        ];
        let mut runs = 0;
        // The reading of every byte, written plainly.
        fn successor_by_bytes(a: &Automaton, u: StateId) -> Option<StateId> {
            let mut next = None;
            let mut inside: Vec<(StateId, u8)> = Vec::new();
            let mut todo = vec![(u, 0u8)];
            while let Some((w, r)) = todo.pop() {
                for b in 0..=255u8 {
                    let r2 = text_next(r, b);
                    if r2 == TEXT_DEAD {
                        continue;
                    }
                    let w2 = a.next(w, b);
                    if !interior(a, w2) || (r2 == 0 && *next.get_or_insert(w2) != w2) {
                        return None;
                    }
                    if r2 != 0 && !inside.contains(&(w2, r2)) {
                        inside.push((w2, r2));
                        todo.push((w2, r2));
                        if inside.len() > 64 {
                            return None;
                        }
                    }
                }
            }
            next
        }
        let dead_by_bytes = |a: &Automaton, u: StateId| (0..=255u8).all(|b| text_next(0, b) == TEXT_DEAD || a.next(u, b) == DEAD);
        for body in bodies {
            let a = automaton_of(body.clone());
            let mut memo = Skips::default();
            for u in 0..a.n_states() as StateId {
                let reps = text_reps(&a, u, &mut memo).to_vec();
                let by_bytes = successor_by_bytes(&a, u);
                runs += usize::from(by_bytes.is_some());
                assert_eq!(text_successor(&a, u, &reps), by_bytes, "{body:?} state {u}");
                assert_eq!(text_dead(&a, u, &reps), dead_by_bytes(&a, u), "{body:?} state {u}");
            }
        }
        assert!(runs >= 40, "only {runs} states take every character");
    }

    #[test]
    fn ascii_text_bytes_are_the_decoders_single_byte_characters() {
        for b in 0..=255u8 {
            let set = has_byte(&ASCII_TEXT, b);
            assert_eq!(set, b < 0x80 && text_next(0, b) == 0, "byte {b:#x}");
        }
    }

    fn automata() -> Vec<Automaton> {
        let patterns = [r"(https?://)?([0-9a-z.-]+)\.([a-z.]{2,6})([/\w .-]*)*/?", r"[a-zé]{2,5}(ab|ac|b)*", r"(get_weather|get_time|read_file|search)"];
        patterns
            .iter()
            .map(|p| pattern_then_quote(p))
            .collect()
    }

    /// The plain definition [`same_future`] computes faster: equal ids, or
    /// interior states with equal flags (no ticks) whose moves on every
    /// class agree within `depth - 1` bytes.
    fn same_future_by_class(a: &Automaton, x: StateId, y: StateId, depth: u32) -> bool {
        if x == y {
            return true;
        }
        if depth == 0 || !interior(a, x) || !interior(a, y) || a.flags[x as usize] != a.flags[y as usize] || a.flags[x as usize] & flags::TICKS != 0 {
            return false;
        }
        (0..=255u8).all(|b| same_future_by_class(a, a.next(x, b), a.next(y, b), depth - 1))
    }

    /// Comparing two rows only where their targets differ
    /// ([`Row::all_differing`]) answers as comparing every byte does.
    #[test]
    fn same_future_is_the_bytewise_comparison() {
        let mut yes = 0;
        for a in automata() {
            let n = a.n_states().min(60) as StateId;
            for x in 0..n {
                for y in 0..n {
                    let mut f = Futures { budget: u32::MAX, known: FxHashMap::default() };
                    let fast = same_future(&a, x, y, 3, &mut f);
                    assert_eq!(fast, same_future_by_class(&a, x, y, 3), "states {x} and {y}");
                    yes += (fast && x != y) as usize;
                }
            }
        }
        assert!(yes > 0, "no two distinct states compared alike: the test compares nothing");
    }

    /// A signature encoded in steps ([`Signature::encode`] stopped at a few
    /// states, then resumed) is the signature encoded at once.
    #[test]
    fn signature_resumed_is_the_signature_at_once() {
        let mut resumed = 0;
        for a in automata() {
            for s in 0..a.n_states() as StateId {
                let mut whole = Signature::new(s);
                assert!(whole.encode(&a, 64, MAX_SHARED_STATES));
                let mut steps = Signature::new(s);
                if !steps.encode(&a, 64, 4) {
                    resumed += 1;
                    assert!(steps.encode(&a, 64, MAX_SHARED_STATES));
                }
                assert_eq!((&whole.sig, &whole.exit_order), (&steps.sig, &steps.exit_order), "state {s}");
            }
        }
        assert!(resumed > 0);
    }
}
