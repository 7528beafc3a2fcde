//! Computing the next-token mask of a parser state.
//!
//! mask(state) = token-level edges of its items
//!             ∪ for every item: partition(item.state).accept
//!                               ∪ walk of each frontier subtree with the item's continuation
//!             ∪ stop tokens, when the start rule can finish.
//! Items are independent alternatives, so the union over items is exact —
//! except in a grammar with lexemes, where items whose first bytes meet
//! may cut one another: those are walked together (see
//! [`MaskWalker::compute`]).

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use crate::automaton::{flags, lex, Automaton};
use crate::bitset::{has_byte, Bitset};
use crate::compiled::CompiledGrammar;
use crate::error::EngineError;
use crate::parser::{closure, scan_byte, Arena, Item, ItemSet, Scratch};
use crate::parser::mix;
use crate::partition::{accept_text_up_to, clear_all, cont_reps_of, free_text_excluded, set_all, utf8_leads_to, utf8_loop_by, CharMoves, Partition, Sink, Skip, Take, TAKE_MIN_RUN, UTF8_LOOP_MIN};
use crate::vocab_index::{SkeletonNode, VocabIndex};

/// A mask kept in a cache: a sorted id list when sparse, dense words when not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredMask {
    Ids(Vec<u32>),
    Dense(Vec<u32>),
}

/// `out = words` (words past them are zeroed).
#[inline]
pub(crate) fn write_words(words: &[u32], out: &mut [u32]) {
    let n = words.len().min(out.len());
    out[..n].copy_from_slice(&words[..n]);
    out[n..].fill(0);
}

impl StoredMask {
    /// From a list of allowed ids.
    pub fn from_ids(mut ids: Vec<u32>, logits_size: usize) -> StoredMask {
        let words = logits_size.div_ceil(32);
        if ids.len() < words {
            ids.sort_unstable();
            ids.dedup();
            ids.shrink_to_fit();
            StoredMask::Ids(ids)
        } else {
            let mut b = Bitset::new(logits_size);
            for id in ids {
                b.set(id as usize);
            }
            StoredMask::Dense(b.words)
        }
    }

    /// From a dense bitset: its words kept as they are, or, when fewer bits
    /// are set than a quarter of its words, the list of their ids. Why a
    /// quarter: listing costs the mask that stores it a few nanoseconds
    /// per id (a branch missed per id), and a cold mask of 2,000 ids
    /// spent 10–20 µs listing them; a list of at least a quarter as many
    /// ids as words would save at most three quarters of the dense words.
    pub fn from_bitset(b: Bitset) -> StoredMask {
        let dense = b.words.len() / 4;
        let count = b.count_until(dense);
        if count >= dense {
            StoredMask::Dense(b.words)
        } else {
            StoredMask::Ids(b.ones_counted(count))
        }
    }

    /// `out |= self`.
    #[inline]
    pub fn or_into(&self, out: &mut [u32]) {
        match self {
            StoredMask::Ids(ids) => {
                for &i in ids {
                    out[i as usize >> 5] |= 1 << (i & 31);
                }
            }
            StoredMask::Dense(w) => {
                for (o, x) in out.iter_mut().zip(w) {
                    *o |= *x;
                }
            }
        }
    }

    /// `out = self` (words past the mask are zeroed).
    #[inline]
    pub fn write_into(&self, out: &mut [u32]) {
        match self {
            StoredMask::Ids(_) => {
                out.fill(0);
                self.or_into(out);
            }
            StoredMask::Dense(w) => write_words(w, out),
        }
    }

    pub fn heap_bytes(&self) -> usize {
        match self {
            StoredMask::Ids(v) | StoredMask::Dense(v) => v.len() * 4,
        }
    }
}

/// Most sets whose free text a grammar remembers across masks.
const KNOWN_LOOPS_MAX: usize = 1024;

/// Free text's bytes of parser sets by canonical key
/// ([`crate::parser::unordered_key`]), shared by a grammar's matchers:
/// see [`MaskWalker::utf8_loop`].
pub(crate) type KnownLoops = Arc<Mutex<FxHashMap<u128, Option<[u64; 4]>>>>;

/// Most token ids a grammar's [`KnownSkeletons`] hold (4 MiB).
const KNOWN_SKELETON_IDS_MAX: usize = 1 << 20;

/// The tokens that walks down a free-text cover's skeleton took (see
/// [`MaskWalker::skeleton_below`]), by the set after the first byte, the
/// first byte's trie node and the cover, shared by a grammar's matchers.
/// Cleared when it would hold more than [`KNOWN_SKELETON_IDS_MAX`] ids.
#[derive(Debug, Default)]
pub(crate) struct KnownSkeletons {
    map: FxHashMap<u128, Arc<[u32]>>,
    ids: usize,
}

impl KnownSkeletons {
    fn insert(&mut self, key: u128, ids: &[u32]) {
        if ids.len() > KNOWN_SKELETON_IDS_MAX {
            return;
        }
        if self.ids + ids.len() > KNOWN_SKELETON_IDS_MAX {
            self.map.clear();
            self.ids = 0;
        }
        if self.map.insert(key, Arc::from(ids)).is_none() {
            self.ids += ids.len();
        }
    }

    /// Approximate heap size in bytes.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.ids * 4 + self.map.len() * 48
    }
}

/// Buffers reused from one mask computation to the next.
///
/// During one computation, the parser states met while walking the trie are
/// interned and their byte transitions memoized: a lazily built DFA whose
/// states are item sets. Walking a trie node is then one table lookup, and
/// the full closure runs once per distinct (set, byte) — the same idea as a
/// lexer DFA, built on demand for exactly the contexts in use.
#[derive(Default, Debug)]
pub struct MaskWalker {
    /// Interned sets: `(start, len)` into `set_items`.
    sets: Vec<(u32, u32)>,
    set_items: Vec<Item>,
    /// `trans[set * 256 + byte]`: target set, [`UNKNOWN`] or [`DEAD`].
    trans: Vec<u32>,
    /// Sorted seed items → the set their closure produced.
    by_seeds: FxHashMap<Vec<Item>, u32>,
    /// Per set: which bytes were checked for leading back to the same set,
    /// and which do.
    loops: Vec<([u64; 4], [u64; 4])>,
    /// Per set, once needed: the skips of its items' states (text runs
    /// known). One item that takes a whole
    /// subtree without finishing or calling makes all its tokens valid:
    /// past the end of a 32-character block of a length-bounded string, say,
    /// where the next block's item takes any text up to its length.
    set_skips: Vec<Option<Vec<Skip>>>,
    /// Per set, once needed: how many characters of text it takes, when
    /// every text of at most that many is taken and none longer (see
    /// [`MaskWalker::text_count`]).
    text_counts: Vec<Option<Option<u32>>>,
    /// Per set, once needed: its free text's bytes (the ASCII bytes that
    /// lead it back to itself, and the lead bytes whose characters do,
    /// through sets that go on to a character's end), else none (see
    /// [`MaskWalker::utf8_loop`]).
    utf8_loops: Vec<Option<Option<[u64; 4]>>>,
    /// The same across masks, by the set's canonical key: the grammar's
    /// map, taken at the start of each computation. The text before a
    /// trigger, and inside a trigger's first bytes, is the same set in
    /// every mask of every matcher, and finding its free text's bytes
    /// steps it on every ASCII byte and follows every lead byte's
    /// characters (a quarter of a mask inside a trigger; the start's mask,
    /// computed at compile by another matcher, finds them first). Cleared
    /// when it holds [`KNOWN_LOOPS_MAX`].
    known_loops: KnownLoops,
    /// Per set, once needed: its canonical key.
    keys: Vec<Option<u128>>,
    /// Scratch of [`MaskWalker::skeleton_below`].
    skeleton_ids: Vec<u32>,
    /// Per set: whether all its items' states are in the automaton's
    /// shared table (whose byte classes they then all read).
    shared: Vec<bool>,
    /// (subtree end, set) per depth of [`MaskWalker::walk_subtree`].
    frames: Vec<(u32, u32)>,
    /// The same, of [`MaskWalker::walk_skeleton`].
    skeleton_frames: Vec<(u32, u32)>,
    /// Scratch of [`accept_text_up_to`].
    count_stack: Vec<(u32, u32)>,
    seeds: Vec<Item>,
    closed: Vec<Item>,
    /// `Scratch::visited` when this mask computation began.
    visited_at_start: usize,
    /// The grammar has lexemes: items are not independent (a lexeme under
    /// way cuts the others, see [`crate::parser::scan_byte`]). See
    /// [`MaskWalker::compute`].
    lexed: bool,
}

/// An item from whose set free text runs: every character starting with a
/// byte of `firsts` leads to a set that free text loops in (all ASCII
/// bytes but `excluded`, and every character whose lead byte is not
/// excluded, lead back to it). Every
/// token that starts with a byte of `firsts`, is well-formed UTF-8 and
/// holds no excluded byte is then taken
/// ([`VocabIndex::free_text_cover`]); the walk goes only down the paths to
/// the other tokens ([`MaskWalker::free_text_mask`]).
#[derive(Clone, Copy, Debug)]
struct FreeText {
    /// The item's own set (interned).
    own: u32,
    firsts: [u64; 4],
    excluded: [u64; 4],
}

/// Subtrees at least this large are counted by [`MaskWalker::text_count`]
/// (asking a set costs about as much as walking a few nodes).
const TEXT_COUNT_MIN_NODES: usize = 16;

/// Most sets [`MaskWalker::text_count`] follows one from another (a
/// string's blocks: one per 32 characters).
const MAX_TEXT_COUNT_DEPTH: u32 = 16;

/// Subtrees at least this large are checked for being entirely inside a
/// self-loop of their set (then all their tokens are accepted at once).
const LOOP_CHECK_MIN_NODES: usize = 4;

/// Most parser items the closures of one mask computation may visit
/// together. Each closure visits at most [`crate::parser::MAX_VISITED`]; a
/// pathologically ambiguous grammar (nested repeats of nullable text) comes
/// near that at every trie node walked, and a mask took seconds. The tests'
/// masks (JSON schemas, structural tags, real vocabularies) all stay under
/// 20,000.
pub const MAX_MASK_ITEMS: usize = 2_000_000;

/// Entries of [`MaskWalker::trans`] (256 per set) reserved at once: a
/// mask inside a trigger's first bytes interns a few hundred sets, and
/// growing the table by doubling copied it (a quarter of such a mask in a
/// fresh matcher). Untouched until used.
const TRANS_RESERVED: usize = 256 * 256;

/// Entries of [`MaskWalker::by_seeds`] reserved at once.
const BY_SEEDS_RESERVED: usize = 512;

const UNKNOWN: u32 = u32::MAX - 1;
const DEAD: u32 = u32::MAX;
/// The interned empty set: the bytes so far are valid but nothing can follow.
const EMPTY: u32 = 0;

impl MaskWalker {
    fn reset(&mut self) {
        self.sets.clear();
        self.set_items.clear();
        self.trans.clear();
        // (Once: the capacity is kept from mask to mask.)
        self.trans.reserve(TRANS_RESERVED);
        self.by_seeds.clear();
        // (Once, as `trans`: a fresh matcher's first masks rehashed it.)
        self.by_seeds.reserve(BY_SEEDS_RESERVED);
        self.loops.clear();
        self.loops.push(([u64::MAX; 4], [0; 4]));
        self.set_skips.clear();
        self.set_skips.push(Some(Vec::new()));
        self.utf8_loops.clear();
        self.utf8_loops.push(Some(None));
        self.text_counts.clear();
        self.text_counts.push(Some(Some(0)));
        self.shared.clear();
        self.shared.push(true);
        self.keys.clear();
        self.keys.push(None);
        self.sets.push((0, 0));
        self.trans.resize(256, DEAD);
    }

    /// The set reached by closing `self.seeds` (sorted, deduplicated first).
    fn intern_closure(&mut self, a: &Automaton, arena: &mut Arena, sc: &mut Scratch) -> Result<u32, EngineError> {
        if self.seeds.len() > 1 {
            self.seeds.sort_unstable();
            self.seeds.dedup();
        }
        if let Some(&id) = self.by_seeds.get(&self.seeds) {
            return Ok(id);
        }
        closure(a, arena, &self.seeds, &mut self.closed, sc)?;
        if sc.visited - self.visited_at_start > MAX_MASK_ITEMS {
            return Err(EngineError::Limit(format!(
                "the grammar is too ambiguous here: one mask visits more than {MAX_MASK_ITEMS} parser items"
            )));
        }
        let closed = std::mem::take(&mut self.closed);
        let id = self.intern_closed(a, &closed);
        self.closed = closed;
        self.by_seeds.insert(self.seeds.clone(), id);
        Ok(id)
    }

    /// The set `set` steps to on byte `b` ([`DEAD`]: none), from the
    /// table when known (the walk's usual case, kept small to inline).
    #[inline(always)]
    fn step(&mut self, a: &Automaton, arena: &mut Arena, sc: &mut Scratch, set: u32, b: u8) -> Result<u32, EngineError> {
        let t = self.trans[set as usize * 256 + b as usize];
        if t != UNKNOWN {
            return Ok(t);
        }
        self.step_new(a, arena, sc, set, b)
    }

    /// [`MaskWalker::step`] of a (set, byte) not stepped before.
    #[inline(never)]
    fn step_new(&mut self, a: &Automaton, arena: &mut Arena, sc: &mut Scratch, set: u32, b: u8) -> Result<u32, EngineError> {
        let (start, len) = self.sets[set as usize];
        let items = &self.set_items[start as usize..(start + len) as usize];
        // The bytes every item's state moves on as on `b` step the set to
        // the same set (a scan reads only the items' moves and the flags
        // of their targets): the first of them stands for them all, and
        // a byte whose representative was stepped needs no scan, sort or
        // lookup.
        let mut alike = [u64::MAX; 4];
        match items.first() {
            // (States of the shared table all read its classes.)
            Some(it) if self.shared[set as usize] => alike = *a.same_moves(it.state, b),
            _ => {
                for it in items {
                    for (w, x) in alike.iter_mut().zip(a.same_moves(it.state, b)) {
                        *w &= x;
                    }
                }
            }
        }
        let rep = alike.iter().position(|&w| w != 0).map_or(b, |k| (k * 64) as u8 + alike[k].trailing_zeros() as u8);
        let row = set as usize * 256;
        let known = self.trans[row + rep as usize];
        if known != UNKNOWN {
            self.trans[row + b as usize] = known;
            return Ok(known);
        }
        scan_byte(a, items, b, &mut self.seeds);
        let t = if self.seeds.is_empty() { DEAD } else { self.intern_closure(a, arena, sc)? };
        self.trans[row + b as usize] = t;
        self.trans[row + rep as usize] = t;
        // ASCII bytes are filled in at once: free text asks a set about
        // each of them (its loop, its first bytes).
        if b < 0x80 {
            for (w, mut x) in alike[..2].iter().copied().enumerate() {
                while x != 0 {
                    self.trans[row + w * 64 + x.trailing_zeros() as usize] = t;
                    x &= x - 1;
                }
            }
        }
        Ok(t)
    }

    /// Whether every byte of `bytes` steps `set` back to `set` (results
    /// are remembered per set and byte, and the check stops at the first
    /// byte that leaves).
    fn loops_on(&mut self, a: &Automaton, arena: &mut Arena, sc: &mut Scratch, set: u32, bytes: [u64; 4]) -> Result<bool, EngineError> {
        for k in 0..4 {
            let (known, yes) = self.loops[set as usize];
            if bytes[k] & known[k] & !yes[k] != 0 {
                return Ok(false);
            }
            let mut todo = bytes[k] & !known[k];
            while todo != 0 {
                let bit = todo.trailing_zeros();
                todo &= todo - 1;
                let b = (k as u32 * 64 + bit) as u8;
                let same = self.step(a, arena, sc, set, b)? == set;
                let entry = &mut self.loops[set as usize];
                entry.0[k] |= 1 << bit;
                if same {
                    entry.1[k] |= 1 << bit;
                } else {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Whether every path of the subtree below trie node `i` leads `set`
    /// back to itself character by character (through sets that go on
    /// within a character): the subtree is well-formed UTF-8 whose ASCII
    /// bytes are among the set's loop (free text before a trigger, say).
    fn utf8_takes(&mut self, a: &Automaton, arena: &mut Arena, sc: &mut Scratch, v: &VocabIndex, set: u32, i: usize) -> Result<bool, EngineError> {
        if !v.utf8_below[i] {
            return Ok(false);
        }
        let Some(bytes) = self.utf8_loop(a, arena, sc, set)? else { return Ok(false) };
        Ok(v.below_within(i, &bytes))
    }

    /// The set's [`utf8_loop_by`] through sets that are neither dead nor
    /// empty, memoized per set; only for a set holding an item that may
    /// finish and loops on many ASCII bytes (the skips of interior states,
    /// see `skips_subtree`, already take their subtrees, and most sets are
    /// not free text).
    fn utf8_loop(&mut self, a: &Automaton, arena: &mut Arena, sc: &mut Scratch, set: u32) -> Result<Option<[u64; 4]>, EngineError> {
        if let Some(known) = self.utf8_loops[set as usize] {
            return Ok(known);
        }
        self.utf8_loops[set as usize] = Some(None);
        let (start, len) = self.sets[set as usize];
        let items = &self.set_items[start as usize..(start + len) as usize];
        // A few common bytes first, then all of them.
        let loops = |st: u32| {
            a.flags[st as usize] & flags::ACCEPTING != 0
                && [b' ', b'e', b'0', b'.'].iter().all(|&b| a.next(st, b) == st)
                && (0..0x80u8).filter(|&b| a.next(st, b) == st).count() >= UTF8_LOOP_MIN as usize
        };
        if !items.iter().any(|it| loops(it.state)) {
            return Ok(None);
        }
        let key = crate::parser::unordered_key(arena, items);
        // A poisoned lock (a panic elsewhere while it was held: the map is
        // only ever read or inserted into) still holds sound entries.
        let known = self.known_loops.lock().unwrap_or_else(|e| e.into_inner()).get(&key).copied();
        if let Some(known) = known {
            self.utf8_loops[set as usize] = Some(known);
            return Ok(known);
        }
        let found = utf8_loop_by(set, &mut SetChars { w: self, a, arena, sc })?;
        self.utf8_loops[set as usize] = Some(found);
        let mut known = self.known_loops.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() >= KNOWN_LOOPS_MAX {
            known.clear();
        }
        known.insert(key, found);
        Ok(found)
    }

    /// Whether some item of `set` takes every path of the subtree below trie
    /// node `i` through interior states of its rule (by bytes and height, or
    /// as text by characters).
    fn skips_subtree(&mut self, g: &CompiledGrammar, set: u32, i: usize) -> bool {
        let v = &*g.vocab;
        self.skips_of_set(g, set).iter().any(|s| s.takes(v, i))
    }

    /// The text run of the set's one item, when it is the only item and its
    /// string runs out after that many characters (see [`Skip::counted`]):
    /// the tokens of a text subtree are then counted, not walked.
    fn counted(&mut self, g: &CompiledGrammar, set: u32) -> Option<u32> {
        if self.sets[set as usize].1 != 1 {
            return None;
        }
        match self.skips_of_set(g, set) {
            [sk] => sk.counted(),
            _ => None,
        }
    }

    /// How many characters of text `set` takes, when every text of at most
    /// that many is taken and none longer; `None` when some item does
    /// otherwise. A token below a trie node whose paths are all text is
    /// then taken by its count of characters ([`accept_text_up_to`]), with
    /// no walk. Each item runs down its chain of states that take every
    /// character alike (`partition::text_end`) and there dies, or, where
    /// every next character leads to one state outside its chain (a
    /// length-bounded string's 32-character block ends, and the string's
    /// rule goes on with another block or its remainder), goes on in the
    /// set that state and the item's continuation close to. Each item's
    /// text is then "any text up to n characters", and so is the set's,
    /// the largest n. At most `max_token_len` (no token holds more
    /// characters); memoized per set. Without it, the tokens of spaces and
    /// dashes that cross a block's end were walked a set per character:
    /// 60–130 µs of each mask inside W5's strings.
    fn text_count(&mut self, g: &CompiledGrammar, arena: &mut Arena, sc: &mut Scratch, set: u32, depth: u32) -> Result<Option<u32>, EngineError> {
        if let Some(known) = self.text_counts[set as usize] {
            return Ok(known);
        }
        if self.lexed || depth > MAX_TEXT_COUNT_DEPTH {
            return Ok(None);
        }
        // Met again while it is worked out (a cycle): not counted.
        self.text_counts[set as usize] = Some(None);
        let a = &g.automaton;
        let cap = g.vocab.max_token_len as u32;
        let (start, len) = self.sets[set as usize];
        let items: Vec<Item> = self.set_items[start as usize..(start + len) as usize].to_vec();
        let ends = g.skips().text_ends(a, &g.vocab, items.iter().map(|it| it.state));
        let mut most = 0u32;
        for (it, end) in items.iter().zip(ends) {
            let took = if end.run >= cap || end.dead {
                end.run
            } else if let Some(x) = end.exit {
                self.seeds.clear();
                self.seeds.push(Item { state: x, cont: it.cont });
                let next = self.intern_closure(a, arena, sc)?;
                match self.text_count(g, arena, sc, next, depth + 1)? {
                    Some(n) => end.run.saturating_add(1).saturating_add(n),
                    None => return Ok(None),
                }
            } else {
                return Ok(None);
            };
            most = most.max(took.min(cap));
        }
        self.text_counts[set as usize] = Some(Some(most));
        Ok(Some(most))
    }

    /// The interned set's skips (computed on first need), sorted and distinct.
    fn skips_of_set(&mut self, g: &CompiledGrammar, set: u32) -> &[Skip] {
        if self.set_skips[set as usize].is_none() {
            let (start, len) = self.sets[set as usize];
            let items = &self.set_items[start as usize..(start + len) as usize];
            // An item that takes a subtree stands for the set while no item
            // is cut: a greedy cut keeps the lexemes going on, but a lazy
            // lexeme's match drops them.
            if self.lexed && items.iter().any(|it| g.automaton.lex[it.state as usize] & lex::LAZY != 0) {
                self.set_skips[set as usize] = Some(Vec::new());
                return &[];
            }
            let mut sk = g.skips().skips_of(&g.automaton, &g.vocab, items.iter().map(|it| it.state));
            sk.sort_unstable();
            sk.dedup();
            self.set_skips[set as usize] = Some(sk);
        }
        self.set_skips[set as usize].as_deref().unwrap_or(&[])
    }

    /// The item's [`FreeText`], when its set or the set one ordinary
    /// character leads it to is free text and at least half the ASCII bytes
    /// lead there (the text before a trigger, and the states inside the
    /// trigger's first bytes, from which most bytes fall back to it).
    fn free_text_entry(&mut self, a: &Automaton, arena: &mut Arena, sc: &mut Scratch, item: Item) -> Result<Option<FreeText>, EngineError> {
        self.seeds.clear();
        self.seeds.push(item);
        let own = self.intern_closure(a, arena, sc)?;
        if own == EMPTY {
            return Ok(None);
        }
        let (target, loop_bytes) = match self.utf8_loop(a, arena, sc, own)? {
            Some(l) => (own, l),
            None => {
                let mut found = None;
                for b in [b'e', b' '] {
                    let t = self.step(a, arena, sc, own, b)?;
                    if t != DEAD && t != EMPTY {
                        if let Some(l) = self.utf8_loop(a, arena, sc, t)? {
                            found = Some((t, l));
                            break;
                        }
                    }
                }
                match found {
                    Some(f) => f,
                    None => return Ok(None),
                }
            }
        };
        let mut firsts = [0u64; 4];
        for b in 0..0x80u8 {
            let k = b as usize / 64;
            if has_byte(&loop_bytes, b) && self.step(a, arena, sc, own, b)? == target {
                firsts[k] |= 1 << (b % 64);
            }
        }
        if firsts[0].count_ones() + firsts[1].count_ones() < 64 {
            return Ok(None);
        }
        // Multi-byte characters lead the free text's set back to itself
        // (those of its lead bytes); from a state inside a trigger's first
        // bytes, most fall back too.
        let leads = if own == target {
            loop_bytes
        } else {
            utf8_leads_to(own, target, &mut SetChars { w: self, a, arena, sc })?
        };
        let excluded = free_text_excluded(&loop_bytes);
        firsts[3] |= leads[3] & !excluded[3];
        Ok(Some(FreeText { own, firsts, excluded }))
    }

    /// The tokens the item of `ft` takes, into `bits`, when its cover has a
    /// skeleton (else false, and nothing is written): the cover's tokens
    /// whose first byte leads to the free text, then from the root, not
    /// from a frontier (free text has one at every character), a first
    /// byte of the free text only down the cover's skeleton to the tokens
    /// outside it, and any other first byte walked whole.
    fn free_text_mask(&mut self, g: &CompiledGrammar, arena: &mut Arena, sc: &mut Scratch, ft: &FreeText, bits: &mut Bitset) -> Result<bool, EngineError> {
        let v = &*g.vocab;
        let cover = v.free_text_cover(ft.excluded);
        let Some(skeleton) = &cover.skeleton else { return Ok(false) };
        let mut tokens = cover.tokens.clone();
        // None of the cover starts with an excluded byte or one that no
        // character starts with.
        for b in 0..=255u8 {
            let never = has_byte(&ft.excluded, b) || (b >= 0x80 && !(0xC2..=0xF4).contains(&b));
            if !has_byte(&ft.firsts, b) && !never {
                if let Some(c) = v.root_child[b as usize] {
                    clear_all(&mut tokens, v.subtree_tokens(c as usize));
                }
            }
        }
        bits.or_with(&tokens.words);
        for b in 0..=255u8 {
            let Some(c) = v.root_child[b as usize] else { continue };
            let c = c as usize;
            if has_byte(&ft.firsts, b) {
                if !has_byte(&cover.whole, b) {
                    self.skeleton_below(g, arena, sc, skeleton, c, ft, bits)?;
                }
                continue;
            }
            self.walk_node(g, arena, sc, c, ft.own, bits)?;
        }
        Ok(true)
    }

    /// Frontier run `f[a0..b0]` of `part` resolved for the set `start` its
    /// exit state reaches in this context, memoized by the set's skips.
    fn take_of(&mut self, g: &CompiledGrammar, part: &Partition, a0: usize, b0: usize, start: u32) -> Arc<Take> {
        let v = &*g.vocab;
        let single = self.sets[start as usize].1 == 1;
        let skips = self.skips_of_set(g, start);
        if let Some(t) = part.takes.get(a0 as u32, skips) {
            return t;
        }
        let counted = match skips {
            [sk] if single => sk.counted(),
            _ => None,
        };
        let mut accept = Bitset::new(v.logits_size);
        let mut rest = Vec::new();
        let mut scratch = Vec::new();
        for &(node, _) in &part.frontier[a0..b0] {
            let i = node as usize;
            if v.nodes[i].end as usize <= i + 1 {
                set_all(&mut accept, v.tokens_at(i));
            } else if skips.iter().any(|s| s.takes(v, i)) {
                set_all(&mut accept, v.subtree_tokens(i));
            } else if let Some(run) = counted.filter(|_| v.text_chars[i] != u16::MAX) {
                set_all(&mut accept, v.tokens_at(i));
                accept_text_up_to(v, i, run, &mut accept, &mut scratch);
            } else {
                set_all(&mut accept, v.tokens_at(i));
                let mut c = i + 1;
                while c < v.nodes[i].end as usize {
                    if skips.iter().any(|s| s.takes_node(v, c)) {
                        set_all(&mut accept, v.subtree_tokens(c));
                    } else {
                        rest.push(c as u32);
                    }
                    c = v.nodes[c].end as usize;
                }
            }
        }
        let skips = skips.to_vec();
        part.takes.put(v, a0 as u32, skips, Take { accept: StoredMask::from_bitset(accept), rest })
    }

    /// Computes the mask of `set` into `bits` (which must be cleared).
    pub fn compute(
        &mut self,
        g: &CompiledGrammar,
        arena: &mut Arena,
        sc: &mut Scratch,
        set: &ItemSet,
        bits: &mut Bitset,
    ) -> Result<(), EngineError> {
        let a = &g.automaton;
        let v = &*g.vocab;
        let mark = arena.mark();
        self.reset();
        if !Arc::ptr_eq(&self.known_loops, &g.known_loops) {
            self.known_loops = g.known_loops.clone();
        }
        self.visited_at_start = sc.visited;
        self.lexed = !a.lex.is_empty();
        // With lexemes, items whose first bytes meet may cut one another;
        // items are grouped by meeting first bytes, a group of one is
        // walked as below (an item alone is never cut, and the sets after
        // it completes are walked whole), a larger group whole from the
        // root, on its first bytes only: a token's first byte is in one
        // group at most, so the union is exact.
        let groups = if self.lexed { byte_groups(a, &set.items) } else { Vec::new() };
        for (k, it) in set.items.iter().enumerate() {
            let f = a.flags[it.state as usize];
            if f & flags::TOKENS != 0 {
                for &(t, _) in a.tokens_of(it.state) {
                    bits.set(t as usize);
                }
                for &(set_idx, _) in a.excepts_of(it.state) {
                    let excluded = &a.except_sets[set_idx as usize];
                    let mut all = Bitset::new(bits.len);
                    all.set_prefix(v.vocab_len);
                    for &t in excluded {
                        all.words[t as usize >> 5] &= !(1 << (t & 31));
                    }
                    bits.or_with(&all.words);
                }
            }
            if !a.flag(it.state, flags::BYTES) || groups.get(k).is_some_and(|&(grp, alone)| grp != u32::MAX && !alone) {
                continue;
            }
            // Free text is walked from the root through its cover, with no
            // partition (it would stop at every character: its accepting
            // state loops).
            let ascii = a.byte_set(it.state);
            if ascii[0].count_ones() + ascii[1].count_ones() >= 64 {
                if let Some(ft) = self.free_text_entry(a, arena, sc, *it)? {
                    if self.free_text_mask(g, arena, sc, &ft, bits)? {
                        continue;
                    }
                }
            }
            let part = g.partition(it.state);
            part.accept.or_into(&mut bits.words);
            // Frontier nodes come in runs with the same exit state (a
            // bounded string near the end of a block exits at every node of
            // one depth): their start set is interned once per run, a long
            // run is resolved through the partition's takes, and a subtree
            // that one item of the set takes whole costs one test.
            let f = &part.frontier;
            let mut a0 = 0;
            while a0 < f.len() {
                let t = f[a0].1;
                let mut b0 = a0 + 1;
                while b0 < f.len() && f[b0].1 == t {
                    b0 += 1;
                }
                self.seeds.clear();
                self.seeds.push(Item { state: t, cont: it.cont });
                let start = self.intern_closure(a, arena, sc)?;
                // A run into free text is resolved node by node: its takes
                // are memoized by the set's skips, which say nothing of it.
                let free_text = start != EMPTY && self.utf8_loop(a, arena, sc, start)?.is_some();
                if start != EMPTY && b0 - a0 >= TAKE_MIN_RUN && !free_text {
                    let take = self.take_of(g, &part, a0, b0, start);
                    take.accept.or_into(&mut bits.words);
                    for &c in &take.rest {
                        self.walk_node(g, arena, sc, c as usize, start, bits)?;
                    }
                } else {
                    for &(node, _) in &f[a0..b0] {
                        let node = node as usize;
                        set_all(bits, v.tokens_at(node));
                        if start == EMPTY || v.nodes[node].end as usize <= node + 1 {
                            continue;
                        }
                        if self.skips_subtree(g, start, node) || (free_text && self.utf8_takes(a, arena, sc, v, start, node)?) {
                            set_all(bits, v.subtree_tokens(node));
                            continue;
                        }
                        self.walk_subtree(g, arena, sc, node, start, bits)?;
                    }
                }
                a0 = b0;
            }
        }
        let mut done_groups: Vec<u32> = Vec::new();
        for &(grp, alone) in &groups {
            if grp == u32::MAX || alone || done_groups.contains(&grp) {
                continue;
            }
            done_groups.push(grp);
            let members: Vec<Item> = set.items.iter().zip(&groups).filter(|(_, &(g2, _))| g2 == grp).map(|(it, _)| *it).collect();
            let mut firsts = [0u64; 4];
            for it in &members {
                for (w, x) in firsts.iter_mut().zip(a.byte_set(it.state)) {
                    *w |= x;
                }
            }
            let whole = self.intern_closed(a, &members);
            for b in 0..=255u8 {
                let Some(c) = v.root_child[b as usize].filter(|_| has_byte(&firsts, b)) else { continue };
                self.walk_node(g, arena, sc, c as usize, whole, bits)?;
            }
        }
        arena.truncate(mark);
        if set.can_end {
            bits.or_with(&v.stop_bits.words);
        }
        Ok(())
    }

    /// Interns `items`, a set closed already (a parser state).
    fn intern_closed(&mut self, a: &Automaton, items: &[Item]) -> u32 {
        if items.is_empty() {
            return EMPTY;
        }
        let id = self.sets.len() as u32;
        self.sets.push((self.set_items.len() as u32, items.len() as u32));
        self.set_items.extend_from_slice(items);
        self.trans.resize(self.trans.len() + 256, UNKNOWN);
        self.loops.push(([0; 4], [0; 4]));
        self.set_skips.push(None);
        self.utf8_loops.push(None);
        self.text_counts.push(None);
        self.keys.push(None);
        self.shared.push(items.iter().all(|it| (it.state as usize) < a.shared_states()));
        id
    }

    /// Marks every token in the subtree below `root` (exclusive) accepted
    /// from the interned set `root_set` (the state after `root`'s bytes).
    fn walk_subtree(
        &mut self,
        g: &CompiledGrammar,
        arena: &mut Arena,
        sc: &mut Scratch,
        root: usize,
        root_set: u32,
        bits: &mut impl Sink,
    ) -> Result<(), EngineError> {
        let a = &g.automaton;
        let v = &*g.vocab;
        let nodes = &v.nodes;
        let end = nodes[root].end;
        self.frames.clear();
        self.frames.push((end, root_set));
        let mut i = root + 1;
        while (i as u32) < end {
            while i as u32 >= self.frames.last().unwrap().0 {
                self.frames.pop();
            }
            let (_, parent) = *self.frames.last().unwrap();
            let node = nodes[i];
            let t = self.step(a, arena, sc, parent, node.byte)?;
            if t == DEAD {
                i = node.end as usize;
                continue;
            }
            if t != EMPTY && node.end as usize - i >= LOOP_CHECK_MIN_NODES {
                if self.skips_subtree(g, t, i) || self.loops_on(a, arena, sc, t, v.below[i])? || self.utf8_takes(a, arena, sc, v, t, i)? {
                    bits.add(v.subtree_tokens(i));
                    i = node.end as usize;
                    continue;
                }
                if v.text_chars[i] != u16::MAX {
                    let run = match self.counted(g, t) {
                        Some(run) => Some(run),
                        None if node.end as usize - i >= TEXT_COUNT_MIN_NODES => self.text_count(g, arena, sc, t, 0)?,
                        None => None,
                    };
                    if let Some(run) = run {
                        bits.add(v.tokens_at(i));
                        accept_text_up_to(v, i, run, bits, &mut self.count_stack);
                        i = node.end as usize;
                        continue;
                    }
                }
            }
            bits.add(v.tokens_at(i));
            if t == EMPTY {
                i = node.end as usize;
                continue;
            }
            if node.end as usize > i + 1 {
                self.frames.push((node.end, t));
            }
            i += 1;
        }
        Ok(())
    }

    /// [`MaskWalker::walk_skeleton`] below the first-level node `first`, a
    /// first byte of `ft`'s free text, from the grammar's memo when the
    /// set that byte leads to was walked there before (by any matcher):
    /// what the walk takes depends on that set and the cover only. The
    /// free text before a trigger and every state inside the trigger's
    /// first bytes lead there on most bytes, and the start's mask, at
    /// compile, walks it first; without the memo, each mask inside a
    /// trigger's first bytes walked the same 300 skeleton nodes again (a
    /// third of its nodes).
    #[allow(clippy::too_many_arguments)]
    fn skeleton_below(
        &mut self,
        g: &CompiledGrammar,
        arena: &mut Arena,
        sc: &mut Scratch,
        skeleton: &[SkeletonNode],
        first: usize,
        ft: &FreeText,
        bits: &mut Bitset,
    ) -> Result<(), EngineError> {
        let after = self.step(&g.automaton, arena, sc, ft.own, g.vocab.nodes[first].byte)?;
        if after == DEAD {
            return Ok(());
        }
        let key = ft.excluded.iter().fold(mix(self.set_key(arena, after), first as u64), |h, &w| mix(h, w));
        let known = g.known_skeletons.lock().unwrap_or_else(|e| e.into_inner()).map.get(&key).cloned();
        if let Some(ids) = known {
            set_all(bits, &ids);
            return Ok(());
        }
        // (A buffer kept across calls; an error drops it.)
        let mut ids = std::mem::take(&mut self.skeleton_ids);
        ids.clear();
        self.walk_skeleton(g, arena, sc, skeleton, first, ft.own, &mut ids)?;
        set_all(bits, &ids);
        g.known_skeletons.lock().unwrap_or_else(|e| e.into_inner()).insert(key, &ids);
        self.skeleton_ids = ids;
        Ok(())
    }

    /// The canonical key of an interned set ([`crate::parser::unordered_key`]),
    /// computed once per set.
    fn set_key(&mut self, arena: &Arena, set: u32) -> u128 {
        if let Some(k) = self.keys[set as usize] {
            return k;
        }
        let (start, len) = self.sets[set as usize];
        let k = crate::parser::unordered_key(arena, &self.set_items[start as usize..(start + len) as usize]);
        self.keys[set as usize] = Some(k);
        k
    }

    /// Below the first-level node `first`, a first byte of an item's free
    /// text whose cover (see [`FreeText`]) is in `bits` already: walks
    /// from `own`, the item's set, only the nodes of the cover's
    /// `skeleton` (the paths to the tokens outside it), and whole the
    /// subtrees that hold no token of the cover. Every subtree off the
    /// skeleton is made of the cover's tokens, which all start with a
    /// first byte of the free text and are taken, so the union is exact.
    #[allow(clippy::too_many_arguments)]
    fn walk_skeleton(
        &mut self,
        g: &CompiledGrammar,
        arena: &mut Arena,
        sc: &mut Scratch,
        skeleton: &[SkeletonNode],
        first: usize,
        own: u32,
        bits: &mut impl Sink,
    ) -> Result<(), EngineError> {
        let a = &g.automaton;
        let v = &*g.vocab;
        let end = v.nodes[first].end;
        let lo = skeleton.partition_point(|s| (s.id as usize) < first);
        let hi = lo + skeleton[lo..].partition_point(|s| s.id < end);
        // (A buffer kept across calls; an error drops it.)
        let mut frames = std::mem::take(&mut self.skeleton_frames);
        frames.clear();
        frames.push((u32::MAX, own));
        let mut k = lo;
        while k < hi {
            let SkeletonNode { id: n, node, whole } = skeleton[k];
            k += 1;
            while n >= frames.last().unwrap().0 {
                frames.pop();
            }
            let parent = frames.last().unwrap().1;
            let i = n as usize;
            if whole {
                // Nothing below it is listed.
                self.walk_node(g, arena, sc, i, parent, bits)?;
                continue;
            }
            let t = self.step(a, arena, sc, parent, node.byte)?;
            if t != DEAD {
                bits.add(v.tokens_of(&node));
            }
            if t == DEAD || t == EMPTY {
                // Nothing below is taken.
                while k < hi && skeleton[k].id < node.end {
                    k += 1;
                }
            } else {
                frames.push((node.end, t));
            }
        }
        self.skeleton_frames = frames;
        Ok(())
    }

    /// Marks every token in the subtree of trie node `node` (itself
    /// included) accepted from the interned set `parent_set` (the state
    /// before its byte).
    fn walk_node(&mut self, g: &CompiledGrammar, arena: &mut Arena, sc: &mut Scratch, node: usize, parent_set: u32, bits: &mut impl Sink) -> Result<(), EngineError> {
        let v = &*g.vocab;
        let t = self.step(&g.automaton, arena, sc, parent_set, v.nodes[node].byte)?;
        if t == DEAD {
            return Ok(());
        }
        bits.add(v.tokens_at(node));
        if t != EMPTY && v.nodes[node].end as usize > node + 1 {
            self.walk_subtree(g, arena, sc, node, t, bits)?;
        }
        Ok(())
    }
}

/// [`CharMoves`] by interned parser set in a mask walk: a point goes on
/// while its set is neither dead nor empty.
struct SetChars<'w> {
    w: &'w mut MaskWalker,
    a: &'w Automaton,
    arena: &'w mut Arena,
    sc: &'w mut Scratch,
}

impl CharMoves for SetChars<'_> {
    type S = u32;
    type E = EngineError;
    fn step(&mut self, u: u32, b: u8) -> Result<u32, EngineError> {
        self.w.step(self.a, self.arena, self.sc, u, b)
    }
    fn goes_on(&self, u: u32) -> bool {
        u != DEAD && u != EMPTY
    }
    fn cont_reps(&mut self, u: u32, out: &mut Vec<u8>) {
        let (start, len) = self.w.sets[u as usize];
        let items = &self.w.set_items[start as usize..(start + len) as usize];
        cont_reps_of(self.a, items.iter().map(|it| it.state), out);
    }
}

/// Per item: its group of items whose first bytes meet, through others
/// (`u32::MAX` for an item without byte moves), and whether it is alone
/// in it (see [`MaskWalker::compute`]).
fn byte_groups(a: &Automaton, items: &[Item]) -> Vec<(u32, bool)> {
    let firsts: Vec<[u64; 4]> = items.iter().map(|it| a.byte_set(it.state)).collect();
    let mut group: Vec<u32> = (0..items.len() as u32).collect();
    fn root(group: &mut [u32], mut i: u32) -> u32 {
        while group[i as usize] != i {
            group[i as usize] = group[group[i as usize] as usize];
            i = group[i as usize];
        }
        i
    }
    // Items by first byte: each byte joins the items that move on it.
    for b in 0..=255u8 {
        let mut first: Option<u32> = None;
        for (i, f) in firsts.iter().enumerate() {
            if has_byte(f, b) {
                match first {
                    None => first = Some(i as u32),
                    Some(j) => {
                        let (ri, rj) = (root(&mut group, i as u32), root(&mut group, j));
                        group[ri as usize] = rj;
                    }
                }
            }
        }
    }
    let roots: Vec<u32> = (0..items.len() as u32).map(|i| root(&mut group, i)).collect();
    let mut size = vec![0u32; items.len()];
    for &r in &roots {
        size[r as usize] += 1;
    }
    roots
        .iter()
        .zip(&firsts)
        .map(|(&r, f)| if f.iter().all(|&w| w == 0) { (u32::MAX, true) } else { (r, size[r as usize] == 1) })
        .collect()
}


