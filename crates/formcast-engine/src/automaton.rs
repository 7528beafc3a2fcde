//! Grammar → one byte-level DFA per rule.
//!
//! Every rule body becomes a Thompson NFA over bytes whose edges are byte
//! ranges, calls to other rules, and token-level edges; subset construction
//! then turns it into a DFA in which each state has at most one successor per
//! byte class, per called rule and per token edge. All rules' DFA states
//! share one global numbering, so a parser item is just `(state, continuation)`
//! and the rule is implied by the state.
//!
//! After construction the automaton is trimmed: calls to rules that can never
//! finish are removed and states that cannot reach an accepting state are
//! deleted, so every live parser item can still complete. The mask
//! computation relies on this: a non-empty item set after a byte means the
//! bytes so far are a viable prefix.

use std::sync::{Arc, OnceLock};

use formcast_grammar::{Expr, Grammar, Lexeme, Rule, RuleId, TokenId, WordsExcept};
use regex_syntax::utf8::Utf8Sequences;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::error::EngineError;
use crate::limits::Budget;

/// A DFA state id (global over all rules).
pub type StateId = u32;
/// "No transition".
pub const DEAD: StateId = u32::MAX;

/// Limits applied while building automata.
#[derive(Debug, Clone)]
pub struct AutomatonLimits {
    /// Total NFA states over all rules.
    pub max_nfa_states: usize,
    /// Total DFA states over all rules.
    pub max_dfa_states: usize,
}

impl Default for AutomatonLimits {
    fn default() -> Self {
        AutomatonLimits { max_nfa_states: 2_000_000, max_dfa_states: 1_000_000 }
    }
}

/// State flags used on the hot path.
pub mod flags {
    /// Rule may finish here.
    pub const ACCEPTING: u8 = 1;
    /// Has at least one call edge.
    pub const CALLS: u8 = 2;
    /// Has byte or token edges (the item can consume input).
    pub const SCANS: u8 = 4;
    /// Has token-level edges.
    pub const TOKENS: u8 = 8;
    /// Moves at token boundaries (see [`super::Automaton::tick`]).
    pub const TICKS: u8 = 16;
    /// Has byte edges (see [`super::Automaton::byte_set`]).
    pub const BYTES: u8 = 32;
}

/// Per-state lexeme flags ([`Automaton::lex`]), in grammars with lexemes
/// ([`formcast_grammar::Lexeme`]).
pub mod lex {
    /// A state of a lexeme's automaton.
    pub const IN: u8 = 1;
    /// A lexeme's start state, which no move enters: an item there is a
    /// lexeme that has taken nothing yet.
    pub const FRESH: u8 = 2;
    /// A lazy lexeme's match (it has no moves): the lexemes still going
    /// beside it are dropped.
    pub const LAZY_END: u8 = 4;
    /// A state of a lazy lexeme's automaton.
    pub const LAZY: u8 = 8;
    /// A state of a skipped-text lexeme's automaton.
    pub const SKIP: u8 = 16;
}

/// Transition targets, 16-bit wherever every target fits (nearly every
/// grammar), else 32-bit.
#[derive(Debug, Clone)]
enum Targets {
    Short(Vec<u16>),
    Long(Vec<u32>),
}

/// [`DEAD`] in a [`Targets::Short`] table.
const SHORT_DEAD: u16 = u16::MAX;

#[inline(always)]
fn widen(t: u16) -> StateId {
    if t == SHORT_DEAD {
        DEAD
    } else {
        t as StateId
    }
}

/// Where a row's targets are in a [`Table`]: classes `lo..lo + len` from
/// `start` on; every other class is dead.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: u32,
    lo: u16,
    len: u16,
}

/// A transition table: per state (row), its targets by byte class, kept
/// from its first live class to its last. Most states move on a few
/// neighbouring classes (a key's next letter, a digit, the quote that ends
/// a string): over maskbench's 941 grammars the windows hold 12 million
/// entries where full rows held 81 million (10 million live). A compiled
/// grammar is kept by the compiler's cache, and on a VM every fresh page it
/// keeps costs a fault at compile time (about 3 µs for 4 KiB here), so the
/// table's size is compile time; the lookup costs one more load, of the
/// row's window.
#[derive(Debug, Clone)]
struct Table {
    rows: Vec<Window>,
    targets: Targets,
}

impl Table {
    /// An empty table for targets below `n_targets`, with room for the
    /// rows of `edges` (the byte edges of each state, see
    /// [`Self::push_row`]): sized exactly, since the table is kept.
    fn new<'e>(n_targets: usize, class_of: &[u8; 256], edges: impl Iterator<Item = &'e [(u8, u8, u32)]>) -> Table {
        let (mut rows, mut entries) = (0, 0);
        for es in edges {
            rows += 1;
            entries += Self::window(class_of, es).1;
        }
        let targets = if n_targets < SHORT_DEAD as usize {
            Targets::Short(Vec::with_capacity(entries))
        } else {
            Targets::Long(Vec::with_capacity(entries))
        };
        Table { rows: Vec::with_capacity(rows), targets }
    }

    /// The first class and the number of classes from it to the last one
    /// that `es` moves on.
    fn window(class_of: &[u8; 256], es: &[(u8, u8, u32)]) -> (usize, usize) {
        let lo = es.iter().map(|e| class_of[e.0 as usize] as usize).min().unwrap_or(0);
        let hi = es.iter().map(|e| class_of[e.1 as usize] as usize + 1).max().unwrap_or(0);
        (lo, hi.saturating_sub(lo))
    }

    /// Appends the row of the byte edges `es` (ranges on class boundaries
    /// of `class_of`), `offset` added to each target.
    fn push_row(&mut self, class_of: &[u8; 256], es: &[(u8, u8, u32)], offset: StateId) {
        let (lo, len) = Self::window(class_of, es);
        let start = match &self.targets {
            Targets::Short(v) => v.len(),
            Targets::Long(v) => v.len(),
        };
        self.rows.push(Window { start: start as u32, lo: lo as u16, len: len as u16 });
        let span = |lo_b: u8, hi_b: u8| start + class_of[lo_b as usize] as usize - lo..=start + class_of[hi_b as usize] as usize - lo;
        match &mut self.targets {
            Targets::Short(v) => {
                v.resize(start + len, SHORT_DEAD);
                for &(a, b, t) in es {
                    v[span(a, b)].fill((offset + t) as u16);
                }
            }
            Targets::Long(v) => {
                v.resize(start + len, DEAD);
                for &(a, b, t) in es {
                    v[span(a, b)].fill(offset + t);
                }
            }
        }
    }

    /// The target of row `r` on class `c`.
    #[inline(always)]
    fn get(&self, r: usize, c: usize) -> StateId {
        let w = self.rows[r];
        let i = (c as u32).wrapping_sub(w.lo as u32);
        if i >= w.len as u32 {
            return DEAD;
        }
        let i = w.start as usize + i as usize;
        match &self.targets {
            Targets::Short(t) => widen(t[i]),
            Targets::Long(t) => t[i],
        }
    }

    /// Row `r` of a table with `n` classes.
    fn row(&self, r: usize, n: usize) -> Row<'_> {
        let w = self.rows[r];
        let span = w.start as usize..w.start as usize + w.len as usize;
        let window = match &self.targets {
            Targets::Short(t) => RowTargets::Short(&t[span]),
            Targets::Long(t) => RowTargets::Long(&t[span]),
        };
        Row { n, lo: w.lo as usize, window }
    }

    fn bytes(&self) -> usize {
        self.rows.len() * std::mem::size_of::<Window>()
            + match &self.targets {
                Targets::Short(t) => t.len() * 2,
                Targets::Long(t) => t.len() * 4,
            }
    }
}

/// A row's target made global: a narrow table's targets are rule-local,
/// numbered from `base` ([`DEAD`] stays dead).
#[inline(always)]
pub(crate) fn global(t: StateId, base: StateId) -> StateId {
    if t == DEAD {
        DEAD
    } else {
        t + base
    }
}

/// One state's targets by class of its table ([`Automaton::moves`]).
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    /// Classes of the table.
    n: usize,
    /// The first class of the window.
    lo: usize,
    window: RowTargets<'a>,
}

#[derive(Debug, Clone, Copy)]
enum RowTargets<'a> {
    Short(&'a [u16]),
    Long(&'a [u32]),
}

impl<'a> Row<'a> {
    #[inline(always)]
    pub fn get(self, i: usize) -> StateId {
        // Below the window, the index wraps past its end.
        let k = i.wrapping_sub(self.lo);
        match self.window {
            RowTargets::Short(t) => t.get(k).map_or(DEAD, |&x| widen(x)),
            RowTargets::Long(t) => t.get(k).copied().unwrap_or(DEAD),
        }
    }

    /// The targets, class by class ([`DEAD`] for none).
    pub fn iter(self) -> impl Iterator<Item = StateId> + 'a {
        (0..self.n).map(move |i| self.get(i))
    }

    /// The classes `lo..hi` the row keeps: every class outside is [`DEAD`].
    #[inline]
    pub fn window(self) -> (usize, usize) {
        let len = match self.window {
            RowTargets::Short(t) => t.len(),
            RowTargets::Long(t) => t.len(),
        };
        let lo = self.lo.min(self.n);
        (lo, (lo + len).min(self.n))
    }

    /// Whether `f` holds for the targets of every class on which this row
    /// (targets made global by adding `base`) and `other` (by
    /// `other_base`) move differently, stopping at the first that fails.
    /// Only the union of the two windows is looked at, and a class whose
    /// targets agree costs no call: comparing two states class by class
    /// (`partition::same_future`) met mostly equal targets, a hundred
    /// classes per pair in a schema with many names.
    #[inline]
    pub fn all_differing(self, base: StateId, other: Row<'_>, other_base: StateId, mut f: impl FnMut(StateId, StateId) -> bool) -> bool {
        if let (RowTargets::Short(x), RowTargets::Short(y)) = (self.window, other.window) {
            if base == other_base && self.lo == other.lo && x.len() == y.len() {
                // The common case (one table): equal chunks of eight
                // classes are passed over with one comparison.
                let mut k = 0;
                while k < x.len() {
                    let e = (k + 8).min(x.len());
                    if x[k..e] != y[k..e] {
                        for i in k..e {
                            if x[i] != y[i] && !f(global(widen(x[i]), base), global(widen(y[i]), base)) {
                                return false;
                            }
                        }
                    }
                    k = e;
                }
                return true;
            }
        }
        let ((lx, hx), (ly, hy)) = (self.window(), other.window());
        let (lo, hi) = match (lx < hx, ly < hy) {
            (false, false) => return true,
            (true, false) => (lx, hx),
            (false, true) => (ly, hy),
            (true, true) => (lx.min(ly), hx.max(hy)),
        };
        for i in lo..hi {
            let (tx, ty) = (global(self.get(i), base), global(other.get(i), other_base));
            if tx != ty && !f(tx, ty) {
                return false;
            }
        }
        true
    }
}

/// The byte moves of one state with the classes of its table, found once
/// for many bytes: a walk of the token trie asks one state about each of a
/// node's children.
#[derive(Debug, Clone, Copy)]
pub struct StateMoves<'a> {
    class_of: &'a [u8; 256],
    /// The first byte of every class.
    class_rep: &'a [u8],
    /// The bytes of every class.
    class_bits: &'a [[u64; 4]],
    row: Row<'a>,
    /// Added to a target (not [`DEAD`]) to make it global.
    base: StateId,
}

impl<'a> StateMoves<'a> {
    /// Every byte class's target (global, or [`DEAD`]) with the bytes of
    /// the class: a state's moves in a few dozen steps instead of 256.
    #[inline]
    pub fn by_class(self) -> impl Iterator<Item = (StateId, &'a [u64; 4])> + 'a {
        let base = self.base;
        self.row.iter().map(move |t| global(t, base)).zip(self.class_bits.iter())
    }

    /// [`StateMoves::by_class`] over the classes of the row's window only
    /// (every other class is dead).
    pub fn by_window(self) -> impl Iterator<Item = (StateId, &'a [u64; 4])> + 'a {
        let (base, row) = (self.base, self.row);
        let (lo, hi) = row.window();
        (lo..hi).map(move |c| {
            let t = row.get(c);
            (global(t, base), &self.class_bits[c])
        })
    }

    /// The class of byte `b` in the table.
    #[inline]
    pub fn class(self, b: u8) -> usize {
        self.class_of[b as usize] as usize
    }

    /// The state moved to on byte `b` ([`DEAD`]: none), as
    /// [`Automaton::next`].
    #[inline(always)]
    pub fn next(self, b: u8) -> StateId {
        global(self.row.get(self.class_of[b as usize] as usize), self.base)
    }
}

/// The byte moves of one rule's states in a table of its own, over the
/// rule's own byte classes, with rule-local targets.
#[derive(Debug)]
pub struct NarrowTable {
    class_of: [u8; 256],
    n_classes: usize,
    /// The first byte of every class.
    class_rep: Vec<u8>,
    /// The bytes of every class.
    class_bits: Vec<[u64; 4]>,
    trans: Table,
}

impl NarrowTable {
    /// The table of `d` over its classes (`byte_classes` of `d` alone).
    fn of(d: &RuleDfa, (class_of, n_classes): ([u8; 256], usize)) -> NarrowTable {
        let mut trans = Table::new(d.accepting.len(), &class_of, d.byte_trans.iter().map(|es| &es[..]));
        for es in &d.byte_trans {
            trans.push_row(&class_of, es, 0);
        }
        NarrowTable { class_of, n_classes, class_rep: class_reps(&class_of), class_bits: class_bits(&class_of, n_classes), trans }
    }
}

/// A rule whose byte moves are in a [`NarrowTable`]: its states are
/// `first..first + n`, numbered after every rule in the shared table.
#[derive(Debug, Clone)]
pub struct NarrowRule {
    first: StateId,
    table: Arc<NarrowTable>,
}

/// Rules of at least this many states whose byte classes are at most half
/// the grammar's get a table of their own (see [`Automaton::next`]).
const NARROW_MIN_STATES: usize = 256;

/// The compiled automaton of a whole grammar.
#[derive(Debug, Clone)]
pub struct Automaton {
    /// Byte → byte class (over every rule: bytes of one class move alike
    /// from every state).
    pub class_of: [u8; 256],
    pub n_classes: usize,
    /// The first byte of every class.
    pub class_rep: Vec<u8>,
    /// The bytes of every class.
    class_bits: Vec<[u64; 4]>,
    /// The moves of the states below `n_shared`, by class.
    trans: Table,
    n_shared: usize,
    /// The other states' rules, by first state. A large rule with few byte
    /// classes of its own (a `date-time` string: 23,000 states over 17
    /// classes, in a grammar with 100) would otherwise widen the shared
    /// table to the grammar's classes; its table is built once and shared
    /// by every grammar that uses the rule (see `rule_cache`).
    narrow: Vec<NarrowRule>,
    pub flags: Vec<u8>,
    /// CSR: calls of state `s` are `calls[call_start[s]..call_start[s+1]]`
    /// as `(rule, target)`.
    pub call_start: Vec<u32>,
    pub calls: Vec<(RuleId, StateId)>,
    /// CSR: token edges `(token id, target)`.
    pub tok_start: Vec<u32>,
    pub tok_edges: Vec<(TokenId, StateId)>,
    /// CSR: "any token except set" edges `(set index, target)`.
    pub exc_start: Vec<u32>,
    pub exc_edges: Vec<(u32, StateId)>,
    /// Sorted token-id sets for the except edges.
    pub except_sets: Vec<Vec<TokenId>>,
    /// Start state of every rule.
    pub rule_start: Vec<StateId>,
    /// Rules that derive the empty string.
    pub nullable: Vec<bool>,
    /// `(state, tick)` for the states flagged [`flags::TICKS`], by state
    /// (see [`Self::tick`]; few grammars have any, so not one per state).
    ticks: Vec<(StateId, StateId)>,
    pub rule_names: Vec<String>,
    pub root: RuleId,
    /// [`lex`] flags per state; empty when the grammar has no lexemes
    /// (the parser then reads it as a context-free grammar over bytes).
    pub lex: Vec<u8>,
}

impl Automaton {
    /// The state `s` moves to on byte `b` ([`DEAD`]: none).
    #[inline(always)]
    pub fn next(&self, s: StateId, b: u8) -> StateId {
        if (s as usize) < self.n_shared {
            self.trans.get(s as usize, self.class_of[b as usize] as usize)
        } else {
            self.next_narrow(s, b)
        }
    }

    /// Which table holds the moves of `s`: 0 the shared one, `k + 1` the
    /// `k`-th narrow rule's.
    #[inline]
    pub fn table_of(&self, s: StateId) -> usize {
        if (s as usize) < self.n_shared {
            0
        } else {
            self.narrow.partition_point(|r| r.first <= s)
        }
    }

    /// The moves of `s` by class of its table: one byte per class, the
    /// row of targets, and the offset that makes a target (not [`DEAD`])
    /// global.
    #[inline]
    pub fn moves(&self, s: StateId) -> (&[u8], Row<'_>, StateId) {
        let m = self.state_moves(s);
        (m.class_rep, m.row, m.base)
    }

    /// The bytes `s` has a live move on (a 256-bit set), from its row: a
    /// set kept per state would be 32 bytes of every state of every kept
    /// grammar, for a question asked only when jumping forward, completing
    /// and of mask items that scan (those ask [`flags::BYTES`] first).
    pub fn byte_set(&self, s: StateId) -> [u64; 4] {
        let mut bits = [0u64; 4];
        if !self.flag(s, flags::BYTES) {
            return bits;
        }
        // Over the row's window only: every class outside it is dead, and
        // a grammar of many names has a hundred classes or more (a
        // 100-name enum's first mask spent a quarter of its time here).
        let m = self.state_moves(s);
        let (lo, hi) = m.row.window();
        for c in lo..hi {
            if m.row.get(c) != DEAD {
                for (w, x) in bits.iter_mut().zip(m.class_bits[c]) {
                    *w |= x;
                }
            }
        }
        bits
    }

    /// The bytes that move `s` as `b` does: `b`'s class in the table of
    /// `s`. A set of items whose states all move alike on two bytes
    /// scans them alike.
    #[inline]
    pub fn same_moves(&self, s: StateId, b: u8) -> &[u64; 4] {
        if (s as usize) < self.n_shared {
            &self.class_bits[self.class_of[b as usize] as usize]
        } else {
            let t = &self.narrow[self.table_of(s) - 1].table;
            &t.class_bits[t.class_of[b as usize] as usize]
        }
    }

    /// Where an item in state `s`, flagged [`flags::TICKS`], moves once the
    /// token (or string) being accepted is complete ([`DEAD`]: the item is
    /// dropped). Token budgets of free text count this way; every other
    /// state stays where it is.
    pub fn tick(&self, s: StateId) -> StateId {
        match self.ticks.binary_search_by_key(&s, |&(from, _)| from) {
            Ok(i) => self.ticks[i].1,
            Err(_) => s,
        }
    }

    /// The moves of `s`, for asking about many bytes.
    #[inline]
    pub fn state_moves(&self, s: StateId) -> StateMoves<'_> {
        match self.table_of(s) {
            0 => StateMoves {
                class_of: &self.class_of,
                class_rep: &self.class_rep,
                class_bits: &self.class_bits,
                row: self.trans.row(s as usize, self.n_classes),
                base: 0,
            },
            k => {
                let r = &self.narrow[k - 1];
                let t = &r.table;
                StateMoves {
                    class_of: &t.class_of,
                    class_rep: &t.class_rep,
                    class_bits: &t.class_bits,
                    row: t.trans.row((s - r.first) as usize, t.n_classes),
                    base: r.first,
                }
            }
        }
    }

    fn next_narrow(&self, s: StateId, b: u8) -> StateId {
        let r = &self.narrow[self.table_of(s) - 1];
        let t = &r.table;
        let local = t.trans.get((s - r.first) as usize, t.class_of[b as usize] as usize);
        if local == DEAD {
            DEAD
        } else {
            r.first + local
        }
    }
    #[inline(always)]
    pub fn flag(&self, s: StateId, f: u8) -> bool {
        self.flags[s as usize] & f != 0
    }
    #[inline]
    pub fn calls_of(&self, s: StateId) -> &[(RuleId, StateId)] {
        &self.calls[self.call_start[s as usize] as usize..self.call_start[s as usize + 1] as usize]
    }
    #[inline]
    pub fn tokens_of(&self, s: StateId) -> &[(TokenId, StateId)] {
        &self.tok_edges[self.tok_start[s as usize] as usize..self.tok_start[s as usize + 1] as usize]
    }
    #[inline]
    pub fn excepts_of(&self, s: StateId) -> &[(u32, StateId)] {
        &self.exc_edges[self.exc_start[s as usize] as usize..self.exc_start[s as usize + 1] as usize]
    }
    pub fn n_states(&self) -> usize {
        self.flags.len()
    }
    /// States whose byte moves are in the shared table (the others belong
    /// to rules with a narrow table of their own).
    pub fn shared_states(&self) -> usize {
        self.n_shared
    }
    /// Approximate heap size in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.trans.bytes()
            + self.narrow.iter().map(|r| r.table.trans.bytes()).sum::<usize>()
            + self.flags.len() * (1 + 12)
            + self.ticks.len() * 8
            + self.calls.len() * 8
            + self.tok_edges.len() * 8
            + self.exc_edges.len() * 8
            + self.except_sets.iter().map(|s| s.len() * 4).sum::<usize>()
    }
}

// ---------------------------------------------------------------- NFA ----

/// Most states have one or two moves of each kind, kept inline (allocating
/// them one by one was a tenth of a large compile).
#[derive(Default, Clone)]
struct NState {
    eps: SmallVec<[u32; 2]>,
    bytes: SmallVec<[(u8, u8, u32); 2]>,
    calls: Vec<(RuleId, u32)>,
    tokens: Vec<(TokenId, u32)>,
    excepts: Vec<(u32, u32)>,
    /// Where the state moves at a token boundary (None: it stays).
    tick: Option<u32>,
}

/// A rule being expanded in place inside [`Expr::Avoiding`].
struct Frame {
    rule: RuleId,
    entry: u32,
    out: u32,
    /// Called in tail position of the frame below (its end is that frame's end).
    tail: bool,
}

/// Budgets of a bounded free text.
#[derive(Clone, Copy, Default)]
struct TextBudget {
    max_chars: Option<u32>,
    max_tokens: Option<u32>,
}

struct NfaBuilder<'a> {
    states: Vec<NState>,
    except_sets: &'a mut Vec<Vec<TokenId>>,
    except_index: &'a mut FxHashMap<Vec<TokenId>, u32>,
    budget: &'a Budget,
    max_states: usize,
    /// NFA states of the rules built before this one (for the limit).
    total_before: usize,
    rules: &'a [Rule],
    /// Inside [`Expr::Avoiding`]: rule references are expanded in place
    /// (the excludes must be tracked through them); the rules being expanded.
    inline: Option<Vec<Frame>>,
    /// The accepting state of the rule being built: a reference to an
    /// inline rule ([`Rule::inline`]) that leads straight to it is built in
    /// place, once per rule (`tail_entry`), instead of called.
    tail_to: u32,
    tail_entry: FxHashMap<RuleId, u32>,
    /// Inline rules reached as tail calls whose bodies are still to build
    /// (from their entry state to `tail_to`): built from this worklist, not
    /// recursively, since a chain of them (one rule per automaton state) is
    /// as long as the automaton.
    tail_pending: Vec<(RuleId, u32)>,
}

/// Every this many levels of expression nesting, [`NfaBuilder::build`]
/// makes sure some stack is left (growing it on the heap if not), so deep
/// but bounded grammars build on any thread.
const STACK_CHECK_EVERY: usize = 32;

impl<'a> NfaBuilder<'a> {
    /// Builds `e` between `from` and `to`, then every inline rule body it
    /// reached as a tail call.
    fn build_all(&mut self, e: &Expr, from: u32, to: u32) -> Result<(), EngineError> {
        self.build(e, from, to, 0)?;
        while let Some((r, entry)) = self.tail_pending.pop() {
            let rules = self.rules;
            self.build(&rules[r as usize].body, entry, self.tail_to, 0)?;
        }
        Ok(())
    }

    fn new_state(&mut self) -> Result<u32, EngineError> {
        if self.states.len() + self.total_before >= self.max_states {
            return Err(nfa_limit(self.max_states));
        }
        if self.states.len() % 4096 == 0 {
            self.budget.check()?;
        }
        self.states.push(NState::default());
        Ok(self.states.len() as u32 - 1)
    }

    fn build(&mut self, e: &Expr, from: u32, to: u32, depth: usize) -> Result<(), EngineError> {
        if depth > 10_000 {
            return Err(EngineError::Limit("grammar expression nested too deeply".into()));
        }
        if depth % STACK_CHECK_EVERY == STACK_CHECK_EVERY - 1 {
            return stacker::maybe_grow(128 << 10, 4 << 20, || self.build_node(e, from, to, depth));
        }
        self.build_node(e, from, to, depth)
    }

    fn build_node(&mut self, e: &Expr, from: u32, to: u32, depth: usize) -> Result<(), EngineError> {
        match e {
            Expr::Empty => self.states[from as usize].eps.push(to),
            Expr::Nothing => {}
            Expr::Bytes(bs) => {
                if bs.is_empty() {
                    self.states[from as usize].eps.push(to);
                } else {
                    let mut cur = from;
                    for (i, &b) in bs.iter().enumerate() {
                        let nxt = if i + 1 == bs.len() { to } else { self.new_state()? };
                        self.states[cur as usize].bytes.push((b, b, nxt));
                        cur = nxt;
                    }
                }
            }
            Expr::ByteSet(ranges) => {
                for &(lo, hi) in ranges {
                    if lo <= hi {
                        self.states[from as usize].bytes.push((lo, hi, to));
                    }
                }
            }
            Expr::Chars(ranges) => self.build_chars(ranges, from, to)?,
            Expr::Rule(r) => {
                let rules = self.rules;
                if self.inline.is_some() {
                    self.inline_rule(*r, from, to, depth)?;
                } else if to == self.tail_to && rules.get(*r as usize).is_some_and(|x| x.inline) {
                    let entry = match self.tail_entry.get(r) {
                        Some(&e) => e,
                        None => {
                            let e = self.new_state()?;
                            self.tail_entry.insert(*r, e);
                            self.tail_pending.push((*r, e));
                            e
                        }
                    };
                    self.states[from as usize].eps.push(entry);
                } else {
                    self.states[from as usize].calls.push((*r, to));
                }
            }
            Expr::Seq(items) => self.build_seq(items, from, to, depth)?,
            Expr::Alt(alts) => {
                for a in alts {
                    self.build(a, from, to, depth + 1)?;
                }
            }
            Expr::Repeat { expr, min, max } => {
                let mut cur = from;
                for _ in 0..*min {
                    let nxt = self.new_state()?;
                    self.build(expr, cur, nxt, depth + 1)?;
                    cur = nxt;
                }
                match max {
                    None => {
                        // cur -ε-> loop; loop -expr-> loop; loop -ε-> to
                        let lp = self.new_state()?;
                        self.states[cur as usize].eps.push(lp);
                        self.build(expr, lp, lp, depth + 1)?;
                        self.states[lp as usize].eps.push(to);
                    }
                    Some(max) => {
                        let extra = max.saturating_sub(*min);
                        for _ in 0..extra {
                            let nxt = self.new_state()?;
                            self.states[cur as usize].eps.push(to);
                            self.build(expr, cur, nxt, depth + 1)?;
                            cur = nxt;
                        }
                        self.states[cur as usize].eps.push(to);
                    }
                }
            }
            Expr::Token(t) => self.states[from as usize].tokens.push((*t, to)),
            Expr::AnyTokenExcept(set) => {
                let mut set = set.clone();
                set.sort_unstable();
                set.dedup();
                let n = self.except_sets.len() as u32;
                let idx = *self.except_index.entry(set.clone()).or_insert_with(|| {
                    n
                });
                if idx == n {
                    self.except_sets.push(set);
                }
                self.states[from as usize].excepts.push((idx, to));
            }
            Expr::TextExcluding(patterns) => self.build_text_excluding(patterns, from, to)?,
            Expr::BoundedText { excludes, max_chars, max_tokens } => {
                let ac = AhoCorasick::new(excludes, &[]);
                let budget = TextBudget { max_chars: *max_chars, max_tokens: *max_tokens };
                self.build_text(&ac, &[], false, budget, from, to, depth)?
            }
            Expr::TextDispatch { cases, excludes, repeat } => {
                let triggers: Vec<Vec<u8>> = cases.iter().map(|(t, _)| t.clone()).collect();
                let ac = AhoCorasick::new(excludes, &triggers);
                self.build_text(&ac, cases, *repeat, TextBudget::default(), from, to, depth)?
            }
            Expr::Avoiding { expr, excludes, lazy } => self.build_avoiding(expr, excludes, *lazy, from, to, depth)?,
            Expr::WordsExcept(w) => self.build_words_except(w, from, to, depth)?,
            Expr::TokenDispatch { cases, excludes, repeat } => {
                let lowered = Expr::desugar_token_dispatch(cases, excludes, *repeat);
                self.build(&lowered, from, to, depth + 1)?;
            }
        }
        Ok(())
    }

    fn build_seq(&mut self, items: &[Expr], from: u32, to: u32, depth: usize) -> Result<(), EngineError> {
        if items.is_empty() {
            self.states[from as usize].eps.push(to);
            return Ok(());
        }
        let mut cur = from;
        for (i, item) in items.iter().enumerate() {
            let nxt = if i + 1 == items.len() { to } else { self.new_state()? };
            self.build(item, cur, nxt, depth + 1)?;
            cur = nxt;
        }
        Ok(())
    }

    /// Any valid UTF-8 text containing none of `patterns`: the product of an
    /// Aho–Corasick automaton over the patterns (a completed pattern is a dead
    /// end) with a UTF-8 decoder (accepting only between characters).
    fn build_text_excluding(&mut self, patterns: &[Vec<u8>], from: u32, to: u32) -> Result<(), EngineError> {
        let ac = AhoCorasick::new(patterns, &[]);
        self.build_text(&ac, &[], false, TextBudget::default(), from, to, 0)
    }

    /// `rule` expanded in place between `from` and `to` (inside
    /// [`Expr::Avoiding`]). A recursive reference is exact only as a tail
    /// call — every call since the rule's own frame is the last thing its
    /// caller does — and then it is a jump back to the rule's entry; any
    /// other recursion is not regular and is refused.
    fn inline_rule(&mut self, rule: RuleId, from: u32, to: u32, depth: usize) -> Result<(), EngineError> {
        let rules = self.rules;
        let name = |r: RuleId| rules.get(r as usize).map_or("?", |x| x.name.as_str()).to_string();
        let stack = self.inline.as_ref().expect("inline mode");
        if let Some(i) = stack.iter().position(|f| f.rule == rule) {
            let tail = stack.last().is_some_and(|f| f.out == to) && stack[i + 1..].iter().all(|f| f.tail);
            if !tail {
                return Err(EngineError::Grammar(format!(
                    "rule '{}' is recursive (not only through tail calls) inside text that must avoid excluded strings",
                    name(rule)
                )));
            }
            let entry = stack[i].entry;
            self.states[from as usize].eps.push(entry);
            return Ok(());
        }
        let Some(body) = rules.get(rule as usize).map(|r| &r.body) else {
            return Err(EngineError::Grammar(format!("reference to undefined rule id {rule}")));
        };
        let tail = stack.last().is_some_and(|f| f.out == to);
        let entry = self.new_state()?;
        let out = self.new_state()?;
        self.states[from as usize].eps.push(entry);
        self.inline.as_mut().expect("inline mode").push(Frame { rule, entry, out, tail });
        self.build(body, entry, out, depth + 1)?;
        self.inline.as_mut().expect("inline mode").pop();
        self.states[out as usize].eps.push(to);
        Ok(())
    }

    /// The trie of `w.words`, one state per node: a child's byte moves to
    /// it, a byte of `leave` that continues no word moves into `exit`, and
    /// `other` (and, where no word ends, `stop`) may follow any node. The
    /// three continuations are built once, from one entry state each.
    fn build_words_except(&mut self, w: &WordsExcept, from: u32, to: u32, depth: usize) -> Result<(), EngineError> {
        let entry = |b: &mut Self, e: &Expr| -> Result<u32, EngineError> {
            let s = b.new_state()?;
            b.build(e, s, to, depth + 1)?;
            Ok(s)
        };
        let exit = entry(self, &w.exit)?;
        let other = entry(self, &w.other)?;
        let stop = if w.has_open_node() { Some(entry(self, &w.stop)?) } else { None };
        let mut result = Ok(());
        w.nodes(from, |node, &s| {
            if result.is_err() {
                return vec![s; node.children.len()];
            }
            let st = &mut self.states[s as usize];
            st.eps.push(other);
            if let (false, Some(stop)) = (node.terminal, stop) {
                st.eps.push(stop);
            }
            let mut children = Vec::with_capacity(node.children.len());
            for &(lo, hi) in &w.leave {
                // The bytes of lo..=hi that no child takes.
                let mut b = lo as u32;
                for &(c, _) in node.children.iter().filter(|&&(c, _)| lo <= c && c <= hi) {
                    if (c as u32) > b {
                        self.states[s as usize].bytes.push((b as u8, c - 1, exit));
                    }
                    b = c as u32 + 1;
                }
                if b <= hi as u32 {
                    self.states[s as usize].bytes.push((b as u8, hi, exit));
                }
            }
            for &(c, _) in &node.children {
                match self.new_state() {
                    Ok(t) => {
                        self.states[s as usize].bytes.push((c, c, t));
                        children.push(t);
                    }
                    Err(e) => {
                        result = Err(e);
                        children.push(s);
                    }
                }
            }
            children
        });
        result
    }

    /// The texts of `expr` avoiding `excludes`: `expr` is built on its own
    /// (rules expanded), then its product with an Aho–Corasick automaton
    /// over the excludes is added between `from` and `to`, a completed
    /// exclude being a dead end. Only the reachable pairs are built. With
    /// `lazy`, the product is made deterministic first (see
    /// [`NfaBuilder::build_lazy`]).
    fn build_avoiding(&mut self, expr: &Expr, excludes: &[Vec<u8>], lazy: bool, from: u32, to: u32, depth: usize) -> Result<(), EngineError> {
        let mut sub = NfaBuilder {
            states: Vec::new(),
            except_sets: &mut *self.except_sets,
            except_index: &mut *self.except_index,
            budget: self.budget,
            max_states: self.max_states,
            total_before: self.total_before + self.states.len(),
            rules: self.rules,
            inline: Some(Vec::new()),
            tail_to: u32::MAX,
            tail_entry: FxHashMap::default(),
            tail_pending: Vec::new(),
        };
        let s0 = sub.new_state()?;
        let s1 = sub.new_state()?;
        sub.build(expr, s0, s1, depth + 1)?;
        let nfa = sub.states;
        if nfa.iter().any(|n| !n.tokens.is_empty() || !n.excepts.is_empty()) {
            return Err(EngineError::Grammar("token-level elements cannot be inside text that must avoid excluded strings".into()));
        }
        let ac = AhoCorasick::new(excludes, &[]);
        if lazy {
            return self.build_lazy(&nfa, s0, s1, &ac, from, to);
        }
        let mut ids: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let mut queue = Vec::new();
        let start = self.new_state()?;
        self.states[from as usize].eps.push(start);
        ids.insert((s0, 0), start);
        queue.push((s0, 0u32));
        let mut target = |me: &mut Self, key: (u32, u32), queue: &mut Vec<(u32, u32)>| -> Result<u32, EngineError> {
            if let Some(&t) = ids.get(&key) {
                return Ok(t);
            }
            let t = me.new_state()?;
            ids.insert(key, t);
            queue.push(key);
            Ok(t)
        };
        while let Some((s, q)) = queue.pop() {
            let me = target(self, (s, q), &mut queue)?;
            let n = &nfa[s as usize];
            if s == s1 {
                self.states[me as usize].eps.push(to);
            }
            for &t in &n.eps {
                let tgt = target(self, (t, q), &mut queue)?;
                self.states[me as usize].eps.push(tgt);
            }
            if let Some(t) = n.tick {
                self.states[me as usize].tick = Some(target(self, (t, q), &mut queue)?);
            }
            for &(lo, hi, t) in &n.bytes {
                for (b, e, next) in ac.runs(q, lo, hi) {
                    if next != AhoCorasick::DEAD {
                        let tgt = target(self, (t, next), &mut queue)?;
                        self.states[me as usize].bytes.push((b, e, tgt));
                    }
                }
            }
        }
        Ok(())
    }

    /// The texts from `s0` to `s1` of `nfa` (scanned by `ac`) that end at
    /// their first match, between `from` and `to`. A text ends at its first
    /// match when no path of it passes `s1` earlier, which only a
    /// deterministic automaton can tell: the product is made deterministic
    /// (subsets of `nfa`'s states, closed under empty moves, paired with
    /// `ac`'s state), and a subset holding `s1` may only end the text. The
    /// first subset is kept apart from any later one equal to it, since the
    /// empty prefix does not count: `(ab)*` lazy is `` or `ab`.
    ///
    /// Subsets cost memory beyond the states they make, so their members
    /// are counted against a limit of their own ([`LAZY_MAX_MEMBERS`]).
    fn build_lazy(&mut self, nfa: &[NState], s0: u32, s1: u32, ac: &AhoCorasick, from: u32, to: u32) -> Result<(), EngineError> {
        if nfa.iter().any(|n| n.tick.is_some() || !n.calls.is_empty()) {
            return Err(EngineError::Grammar("a lazy lexeme must be plain text (no token budgets or rule calls inside it)".into()));
        }
        // Subsets hold only the states that matter (input moves, or `s1`),
        // as in rule determinization.
        let mut closer = Closer::new(nfa, s1);
        let mut closed = Vec::new();
        // (members, scanner state, first subset)
        type Key = (Vec<u32>, u32, bool);
        let mut ids: FxHashMap<Key, u32> = FxHashMap::default();
        let mut queue: Vec<(Key, u32)> = Vec::new();
        closer.close([s0], &mut closed);
        let mut members = closed.len();
        let first: Key = (closed.clone(), 0, true);
        let start = self.new_state()?;
        self.states[from as usize].eps.push(start);
        ids.insert(first.clone(), start);
        queue.push((first, start));
        let mut per_byte: Vec<Vec<u32>> = vec![Vec::new(); 256];
        let mut edges: Vec<(u8, u8, u32)> = Vec::new();
        while let Some(((set, q, is_first), me)) = queue.pop() {
            let accepting = set.binary_search(&s1).is_ok();
            if accepting {
                self.states[me as usize].eps.push(to);
                if !is_first {
                    continue;
                }
            }
            for b in per_byte.iter_mut() {
                b.clear();
            }
            for &m in &set {
                for &(lo, hi, t) in &nfa[m as usize].bytes {
                    for b in lo..=hi {
                        per_byte[b as usize].push(t);
                    }
                }
            }
            // Consecutive bytes usually share their moves: the closure is
            // carried over, and the edges merge into ranges.
            let mut prev: Option<Vec<u32>> = None;
            edges.clear();
            for b in 0..=255u8 {
                let raw = &mut per_byte[b as usize];
                let next_q = ac.next(q, b);
                if raw.is_empty() || next_q == AhoCorasick::DEAD {
                    continue;
                }
                raw.sort_unstable();
                raw.dedup();
                if prev.as_ref() != Some(raw) {
                    closer.close(raw.iter().copied(), &mut closed);
                    prev = Some(raw.clone());
                }
                let key: Key = (closed.clone(), next_q, false);
                let tgt = match ids.get(&key) {
                    Some(&t) => t,
                    None => {
                        members += key.0.len();
                        if members > LAZY_MAX_MEMBERS {
                            return Err(EngineError::Limit(format!(
                                "a lazy lexeme's deterministic automaton is too large (more than {LAZY_MAX_MEMBERS} subset members)"
                            )));
                        }
                        let t = self.new_state()?;
                        ids.insert(key.clone(), t);
                        queue.push((key, t));
                        t
                    }
                };
                push_merged(&mut edges, b, b, tgt);
            }
            self.states[me as usize].bytes.extend_from_slice(&edges);
        }
        Ok(())
    }

    /// Free text scanned by `ac` (product with the UTF-8 decoder and, under
    /// budgets, a code-point counter and a token counter). A completed
    /// exclude is a dead end; a completed trigger `i` enters the body of
    /// `cases[i]`, after which the text starts over (`repeat`) or the
    /// expression ends.
    ///
    /// The token counter: a token pays (once) when it starts a character of
    /// the text, which moves the state to its "paid" twin; the token
    /// boundary ([`NState::tick`]) moves it back. With the budget spent, only
    /// the bytes finishing a character split across tokens remain (so the
    /// tick never strands an item) and the text may only end.
    #[allow(clippy::too_many_arguments)]
    fn build_text(
        &mut self,
        ac: &AhoCorasick,
        cases: &[(Vec<u8>, Expr)],
        repeat: bool,
        budget: TextBudget,
        from: u32,
        to: u32,
        depth: usize,
    ) -> Result<(), EngineError> {
        let TextBudget { max_chars, max_tokens } = budget;
        // (pattern node, UTF-8 state, characters, tokens, paid)
        type Key = (u32, u8, u32, u32, bool);
        let mut ids: FxHashMap<Key, u32> = FxHashMap::default();
        let start = self.new_state()?;
        self.states[from as usize].eps.push(start);
        let start_key: Key = (0, UTF8_START, 0, 0, false);
        ids.insert(start_key, start);
        // Each body is built once; every completion of its trigger jumps to it.
        let mut body_in = Vec::with_capacity(cases.len());
        for (_, body) in cases {
            let b_in = self.new_state()?;
            let b_out = self.new_state()?;
            self.build(body, b_in, b_out, depth + 1)?;
            self.states[b_out as usize].eps.push(if repeat { start } else { to });
            body_in.push(b_in);
        }
        let mut queue = vec![start_key];
        while let Some(key) = queue.pop() {
            let (node, u, count, toks, paid) = key;
            let me = ids[&key];
            if u == UTF8_START {
                self.states[me as usize].eps.push(to);
            }
            if paid {
                let k = (node, u, count, toks, false);
                let t = match ids.get(&k) {
                    Some(&t) => t,
                    None => {
                        let t = self.new_state()?;
                        ids.insert(k, t);
                        queue.push(k);
                        t
                    }
                };
                self.states[me as usize].tick = Some(t);
            }
            for &(lo, hi, u2) in utf8_transitions(u) {
                // Characters are only counted under a bound (else one state per length).
                let count2 = if u2 == UTF8_START && max_chars.is_some() { count + 1 } else { count };
                if max_chars.is_some_and(|m| count2 > m) {
                    continue;
                }
                let (toks2, paid2) = match max_tokens {
                    Some(m) if u == UTF8_START && !paid => {
                        if toks >= m {
                            continue;
                        }
                        (toks + 1, true)
                    }
                    _ => (toks, paid),
                };
                for (b, e, next) in ac.runs(node, lo, hi) {
                    if next != AhoCorasick::DEAD {
                        let tgt = if let Some(case) = ac.case_at(next) {
                            body_in[case as usize]
                        } else {
                            let k = (next, u2, count2, toks2, paid2);
                            match ids.get(&k) {
                                Some(&t) => t,
                                None => {
                                    let t = self.new_state()?;
                                    ids.insert(k, t);
                                    queue.push(k);
                                    t
                                }
                            }
                        };
                        self.states[me as usize].bytes.push((b, e, tgt));
                    }
                }
            }
        }
        Ok(())
    }

    fn build_chars(&mut self, ranges: &[(u32, u32)], from: u32, to: u32) -> Result<(), EngineError> {
        // Split out surrogates, then encode each scalar range as UTF-8 byte
        // sequences; identical leading byte ranges share NFA states so large
        // Unicode classes stay small.
        let mut prefix_states: FxHashMap<(u32, u8, u8), u32> = FxHashMap::default();
        for &(lo, hi) in ranges {
            for (a, b) in split_surrogates(lo, hi) {
                let (Some(ca), Some(cb)) = (char::from_u32(a), char::from_u32(b)) else { continue };
                for seq in Utf8Sequences::new(ca, cb) {
                    let rs = seq.as_slice();
                    let mut cur = from;
                    for (i, r) in rs.iter().enumerate() {
                        if i + 1 == rs.len() {
                            self.states[cur as usize].bytes.push((r.start, r.end, to));
                        } else {
                            let key = (cur, r.start, r.end);
                            let nxt = match prefix_states.get(&key) {
                                Some(&s) => s,
                                None => {
                                    let s = self.new_state()?;
                                    self.states[cur as usize].bytes.push((r.start, r.end, s));
                                    prefix_states.insert(key, s);
                                    s
                                }
                            };
                            cur = nxt;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// UTF-8 decoder states: 0 = between characters; others = inside one.
const UTF8_START: u8 = 0;

/// `(lo, hi, next state)` byte transitions of the UTF-8 decoder (RFC 3629:
/// no overlongs, no surrogates, nothing above U+10FFFF).
fn utf8_transitions(u: u8) -> &'static [(u8, u8, u8)] {
    // States: 0 start; 1 one continuation left; 2 two left; 3 three left;
    // 4 after E0 (A0-BF); 5 after ED (80-9F); 6 after F0 (90-BF); 7 after F4 (80-8F).
    const T: [&[(u8, u8, u8)]; 8] = [
        &[(0x00, 0x7F, 0), (0xC2, 0xDF, 1), (0xE0, 0xE0, 4), (0xE1, 0xEC, 2), (0xED, 0xED, 5), (0xEE, 0xEF, 2), (0xF0, 0xF0, 6), (0xF1, 0xF3, 3), (0xF4, 0xF4, 7)],
        &[(0x80, 0xBF, 0)],
        &[(0x80, 0xBF, 1)],
        &[(0x80, 0xBF, 2)],
        &[(0xA0, 0xBF, 1)],
        &[(0x80, 0x9F, 1)],
        &[(0x90, 0xBF, 2)],
        &[(0x80, 0x8F, 2)],
    ];
    T[u as usize]
}

/// A byte-level Aho–Corasick automaton over excludes and triggers. States
/// that complete an exclude are collapsed into [`AhoCorasick::DEAD`]; states
/// that complete a trigger (and no exclude) report it through
/// [`AhoCorasick::case_at`], the longest trigger winning.
struct AhoCorasick {
    /// `delta[node * 256 + byte]`.
    delta: Vec<u32>,
    /// Per node: the trigger completed on entering it, if any.
    case: Vec<Option<u32>>,
}

/// What completes at a trie node: nothing, an exclude, or trigger `i` of
/// length `len`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Out {
    None,
    Exclude,
    Case { i: u32, len: usize },
}

impl Out {
    /// Excludes win; among triggers, the longest.
    fn max(self, other: Out) -> Out {
        match (self, other) {
            (Out::Exclude, _) | (_, Out::Exclude) => Out::Exclude,
            (Out::None, o) | (o, Out::None) => o,
            (Out::Case { len: a, .. }, Out::Case { len: b, .. }) => {
                if a >= b {
                    self
                } else {
                    other
                }
            }
        }
    }
}

impl AhoCorasick {
    const DEAD: u32 = u32::MAX;

    fn new(excludes: &[Vec<u8>], triggers: &[Vec<u8>]) -> Self {
        // Trie.
        let mut goto: Vec<[u32; 256]> = vec![[u32::MAX; 256]];
        let mut out = vec![Out::None];
        let labelled = excludes
            .iter()
            .map(|p| (p, Out::Exclude))
            .chain(triggers.iter().enumerate().map(|(i, p)| (p, Out::Case { i: i as u32, len: p.len() })));
        for (p, label) in labelled.filter(|(p, _)| !p.is_empty()) {
            let mut n = 0usize;
            for &b in p.iter() {
                if goto[n][b as usize] == u32::MAX {
                    goto.push([u32::MAX; 256]);
                    out.push(Out::None);
                    goto[n][b as usize] = goto.len() as u32 - 1;
                }
                n = goto[n][b as usize] as usize;
            }
            out[n] = out[n].max(label);
        }
        // Breadth-first: complete transitions through failure links; a node
        // also completes whatever its failure node completes (a suffix).
        let mut delta = vec![0u32; goto.len() * 256];
        let mut fail = vec![0u32; goto.len()];
        let mut queue = std::collections::VecDeque::new();
        for b in 0..256 {
            let t = goto[0][b];
            if t == u32::MAX {
                delta[b] = 0;
            } else {
                delta[b] = t;
                fail[t as usize] = 0;
                queue.push_back(t);
            }
        }
        while let Some(n) = queue.pop_front() {
            let n = n as usize;
            out[n] = out[n].max(out[fail[n] as usize]);
            for b in 0..256 {
                let t = goto[n][b];
                if t == u32::MAX {
                    delta[n * 256 + b] = delta[fail[n] as usize * 256 + b];
                } else {
                    fail[t as usize] = delta[fail[n] as usize * 256 + b];
                    delta[n * 256 + b] = t;
                    queue.push_back(t);
                }
            }
        }
        for d in delta.iter_mut() {
            if out[*d as usize] == Out::Exclude {
                *d = Self::DEAD;
            }
        }
        let case = out.iter().map(|o| if let Out::Case { i, .. } = o { Some(*i) } else { None }).collect();
        AhoCorasick { delta, case }
    }

    #[inline]
    fn next(&self, node: u32, b: u8) -> u32 {
        self.delta[node as usize * 256 + b as usize]
    }

    #[inline]
    /// `lo..=hi` cut into runs of bytes that move `node` to the same state:
    /// `(first, last, next)`.
    fn runs(&self, node: u32, lo: u8, hi: u8) -> impl Iterator<Item = (u8, u8, u32)> + '_ {
        let mut b = lo as u16;
        std::iter::from_fn(move || {
            if b > hi as u16 {
                return None;
            }
            let next = self.next(node, b as u8);
            let mut e = b;
            while e < hi as u16 && self.next(node, (e + 1) as u8) == next {
                e += 1;
            }
            let run = (b as u8, e as u8, next);
            b = e + 1;
            Some(run)
        })
    }

    fn case_at(&self, node: u32) -> Option<u32> {
        self.case[node as usize]
    }
}

fn split_surrogates(lo: u32, hi: u32) -> Vec<(u32, u32)> {
    let hi = hi.min(formcast_grammar::ir::MAX_CHAR);
    let mut out = Vec::new();
    if lo > hi {
        return out;
    }
    if lo < 0xD800 {
        out.push((lo, hi.min(0xD7FF)));
    }
    if hi > 0xDFFF {
        out.push((lo.max(0xE000), hi));
    }
    out
}

// ------------------------------------------------------ determinization ----

#[derive(Clone)]
struct RuleDfa {
    /// NFA state sets are interned; DFA-local ids.
    byte_trans: Vec<Vec<(u8, u8, u32)>>,
    calls: Vec<Vec<(RuleId, u32)>>,
    tokens: Vec<Vec<(TokenId, u32)>>,
    excepts: Vec<Vec<(u32, u32)>>,
    /// Token-boundary move ([`DEAD`] after trimming: the item is dropped).
    ticks: Vec<Option<u32>>,
    accepting: Vec<bool>,
    /// Already trimmed and without calls (a rule-cache entry): every state
    /// is live whatever the rest of the grammar, so `trim` skips it.
    trimmed: bool,
    /// The byte moves as a [`NarrowTable`], once built (kept with a cached
    /// automaton; reset when `trim` changes the automaton).
    narrow: OnceLock<Arc<NarrowTable>>,
}

/// ε-closures of NFA state sets, with the buffers reused across a whole
/// determinization (it interns thousands of sets; allocating per set was
/// most of its cost).
struct Closer<'n> {
    nfa: &'n [NState],
    /// States that matter for behaviour: those with input edges, and the
    /// accepting state. Sets that differ only in pass-through states are the
    /// same DFA state.
    relevant: Vec<bool>,
    mark: Vec<u32>,
    stamp: u32,
    stack: Vec<u32>,
}

impl RuleDfa {
    /// One non-accepting state without edges: a rule that is never called.
    fn inert() -> RuleDfa {
        RuleDfa { byte_trans: vec![vec![]], calls: vec![vec![]], tokens: vec![vec![]], excepts: vec![vec![]], ticks: vec![None], accepting: vec![false], trimmed: false, narrow: OnceLock::new() }
    }
}

impl<'n> Closer<'n> {
    fn new(nfa: &'n [NState], accept: u32) -> Self {
        let relevant = nfa
            .iter()
            .enumerate()
            .map(|(s, n)| {
                s as u32 == accept || !n.bytes.is_empty() || !n.calls.is_empty() || !n.tokens.is_empty() || !n.excepts.is_empty() || n.tick.is_some()
            })
            .collect();
        Closer { nfa, relevant, mark: vec![0; nfa.len()], stamp: 0, stack: Vec::new() }
    }

    /// The relevant states ε-reachable from `seeds`, sorted, into `out`.
    fn close(&mut self, seeds: impl IntoIterator<Item = u32>, out: &mut Vec<u32>) {
        self.stamp += 1;
        let stamp = self.stamp;
        out.clear();
        for s in seeds {
            if self.mark[s as usize] != stamp {
                self.mark[s as usize] = stamp;
                self.stack.push(s);
            }
        }
        while let Some(s) = self.stack.pop() {
            if self.relevant[s as usize] {
                out.push(s);
            }
            for &t in &self.nfa[s as usize].eps {
                if self.mark[t as usize] != stamp {
                    self.mark[t as usize] = stamp;
                    self.stack.push(t);
                }
            }
        }
        out.sort_unstable();
    }
}

/// The DFA states found so far: NFA state sets, interned. Each set is kept
/// once; the index maps a set's hash to the first id with that hash, and
/// `next` chains the ids that share it.
struct Interner {
    index: FxHashMap<u64, u32>,
    next: Vec<u32>,
    sets: Vec<Vec<u32>>,
}

impl Interner {
    fn new() -> Interner {
        Interner { index: FxHashMap::default(), next: Vec::new(), sets: Vec::new() }
    }

    fn id(&mut self, set: &[u32]) -> u32 {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        set.hash(&mut h);
        let h = h.finish();
        let id = self.sets.len() as u32;
        let first = *self.index.entry(h).or_insert(id);
        let mut k = first;
        while k != id {
            if self.sets[k as usize] == set {
                return k;
            }
            let n = self.next[k as usize];
            if n == u32::MAX {
                self.next[k as usize] = id;
                break;
            }
            k = n;
        }
        self.sets.push(set.to_vec());
        self.next.push(u32::MAX);
        id
    }
}

/// Appends the byte range `lo..=hi` to `id`, merged into the previous range
/// when that one ends just before and goes to the same state.
fn push_merged(trans: &mut Vec<(u8, u8, u32)>, lo: u8, hi: u8, id: u32) {
    match trans.last_mut() {
        Some((_, phi, pid)) if *pid == id && *phi as u16 + 1 == lo as u16 => *phi = hi,
        _ => trans.push((lo, hi, id)),
    }
}

/// Adds `n` DFA states to the grammar's total (shared by the rules
/// determinized at once, and by cached automata); an error past `max`.
fn count_dfa_states(total: &AtomicUsize, n: usize, max: usize) -> Result<(), EngineError> {
    if total.fetch_add(n, Ordering::Relaxed) + n > max {
        return Err(EngineError::Limit(format!("grammar too large: more than {max} DFA states")));
    }
    Ok(())
}

/// Byte edges of a DFA state sorted before they are grouped (see
/// [`determinize`]).
const SORTED_EDGES_MAX: usize = 64;

/// Subset construction of one rule's NFA (`start` to `accept`).
fn determinize(
    nfa: &[NState],
    start: u32,
    accept: u32,
    budget: &Budget,
    total_dfa: &AtomicUsize,
    max_dfa: usize,
) -> Result<RuleDfa, EngineError> {
    let mut closer = Closer::new(nfa, accept);
    let mut states = Interner::new();
    let mut closed = Vec::new();
    closer.close([start], &mut closed);
    states.id(&closed);
    let mut dfa = RuleDfa { byte_trans: vec![], calls: vec![], tokens: vec![], excepts: vec![], ticks: vec![], accepting: vec![], trimmed: false, narrow: OnceLock::new() };
    // Scratch, reused for every DFA state.
    let mut set: Vec<u32> = Vec::new();
    let mut edges: Vec<(u8, u8, u32)> = Vec::new();
    let mut bounds: Vec<u16> = Vec::new();
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    let mut win_start: Vec<u32> = Vec::new();
    let mut win_fill: Vec<u32> = Vec::new();
    let mut win_targets: Vec<u32> = Vec::new();
    let mut done: Vec<(usize, u32)> = Vec::new();
    // The DFA state of closure({t}), per NFA state t: most moves have one target.
    let mut single: Vec<u32> = vec![u32::MAX; nfa.len()];
    let mut single_id = |t: u32, closer: &mut Closer, states: &mut Interner, closed: &mut Vec<u32>| -> u32 {
        if single[t as usize] == u32::MAX {
            closer.close([t], closed);
            single[t as usize] = states.id(closed);
        }
        single[t as usize]
    };
    let mut i = 0;
    // States counted into `total_dfa` (shared by rules determinized at once).
    let mut counted = 0usize;
    while i < states.sets.len() {
        if i % 64 == 0 {
            budget.check()?;
            count_dfa_states(total_dfa, states.sets.len() - counted, max_dfa)?;
            counted = states.sets.len();
        }
        set.clear();
        set.extend_from_slice(&states.sets[i]);
        // Byte edges: the byte ranges of the set, cut at every range
        // boundary; each edge lists its target under every window it covers.
        edges.clear();
        for &s in &set {
            edges.extend_from_slice(&nfa[s as usize].bytes);
        }
        let mut byte_trans: Vec<(u8, u8, u32)> = Vec::new();
        // Sorted, the ranges are usually disjoint or equal: the alternatives
        // of an object's keys all start with `"`, then mostly differ. (Long
        // lists are mostly the many positions of one pattern, which overlap:
        // sorting those is wasted, and the windows sort their bounds anyway.)
        if edges.len() <= SORTED_EDGES_MAX {
            edges.sort_unstable_by_key(|e| (e.0 as u16) << 8 | e.1 as u16);
        }
        if edges.windows(2).all(|w| w[0].1 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 == w[1].1)) {
            // Each range is its own window, its targets those of the equal
            // ranges beside it.
            let mut k = 0;
            while k < edges.len() {
                let (lo, hi, t) = edges[k];
                let mut end = k + 1;
                while end < edges.len() && edges[end].0 == lo && edges[end].1 == hi {
                    end += 1;
                }
                let id = if end == k + 1 {
                    single_id(t, &mut closer, &mut states, &mut closed)
                } else {
                    closer.close(edges[k..end].iter().map(|e| e.2), &mut closed);
                    states.id(&closed)
                };
                push_merged(&mut byte_trans, lo, hi, id);
                k = end;
            }
        } else {
            // Window boundaries marked per byte (no sort), and the index of
            // each boundary among them: an edge `lo..=hi` covers the windows
            // from `lo`'s index to `hi + 1`'s.
            let mut is_bound = [false; 257];
            for &(lo, hi, _) in &edges {
                is_bound[lo as usize] = true;
                is_bound[hi as usize + 1] = true;
            }
            let mut index_of = [0u16; 257];
            bounds.clear();
            for (b, &yes) in is_bound.iter().enumerate() {
                if yes {
                    index_of[b] = bounds.len() as u16;
                    bounds.push(b as u16);
                }
            }
            let windows = |lo: u8, hi: u8| index_of[lo as usize] as usize..index_of[hi as usize + 1] as usize;
            // Targets per window, bucketed by counting (no sort: the closure
            // dedups and orders them).
            win_start.clear();
            win_start.resize(bounds.len() + 1, 0);
            for &(lo, hi, _) in &edges {
                for w in windows(lo, hi) {
                    win_start[w + 1] += 1;
                }
            }
            for w in 0..bounds.len() {
                win_start[w + 1] += win_start[w];
            }
            win_targets.clear();
            win_targets.resize(win_start[bounds.len()] as usize, 0);
            win_fill.clear();
            win_fill.extend_from_slice(&win_start);
            for &(lo, hi, t) in &edges {
                for w in windows(lo, hi) {
                    win_targets[win_fill[w] as usize] = t;
                    win_fill[w] += 1;
                }
            }
            // Windows already resolved in this state, (window, DFA state):
            // the same NFA states often move on several windows (a character
            // class split by the gaps between its ranges), listed in the
            // same order since they come from the same edges.
            done.clear();
            for w in 0..bounds.len().saturating_sub(1) {
                let (a, b) = (win_start[w] as usize, win_start[w + 1] as usize);
                if a == b {
                    continue;
                }
                let seen = done.iter().rev().find(|&&(pw, _)| win_targets[win_start[pw] as usize..win_start[pw + 1] as usize] == win_targets[a..b]);
                let id = match seen {
                    Some(&(_, id)) => id,
                    None if b == a + 1 => single_id(win_targets[a], &mut closer, &mut states, &mut closed),
                    None => {
                        closer.close(win_targets[a..b].iter().copied(), &mut closed);
                        states.id(&closed)
                    }
                };
                if seen.is_none() {
                    done.push((w, id));
                }
                push_merged(&mut byte_trans, bounds[w] as u8, (bounds[w + 1] - 1) as u8, id);
            }
        }
        // Calls, token edges and any-token-except edges: grouped by label.
        let mut group = |pick: fn(&NState) -> &[(u32, u32)], closer: &mut Closer, states: &mut Interner| -> Vec<(u32, u32)> {
            pairs.clear();
            for &s in &set {
                pairs.extend_from_slice(pick(&nfa[s as usize]));
            }
            if pairs.is_empty() {
                return Vec::new();
            }
            pairs.sort_unstable();
            let mut out = Vec::new();
            let mut j = 0;
            while j < pairs.len() {
                let key = pairs[j].0;
                let k = j;
                while j < pairs.len() && pairs[j].0 == key {
                    j += 1;
                }
                let id = if j == k + 1 {
                    single_id(pairs[k].1, closer, states, &mut closed)
                } else {
                    closer.close(pairs[k..j].iter().map(|p| p.1), &mut closed);
                    states.id(&closed)
                };
                out.push((key, id));
            }
            out
        };
        let calls = group(|n| &n.calls, &mut closer, &mut states);
        let tokens = group(|n| &n.tokens, &mut closer, &mut states);
        let excepts = group(|n| &n.excepts, &mut closer, &mut states);
        // At a token boundary every NFA state of the set moves on its own
        // (states without a tick stay), which makes another set.
        let tick = if set.iter().any(|&s| nfa[s as usize].tick.is_some()) {
            closer.close(set.iter().map(|&s| nfa[s as usize].tick.unwrap_or(s)), &mut closed);
            Some(states.id(&closed)).filter(|&t| t as usize != i)
        } else {
            None
        };
        dfa.ticks.push(tick);
        dfa.accepting.push(set.binary_search(&accept).is_ok());
        dfa.byte_trans.push(byte_trans);
        dfa.calls.push(calls);
        dfa.tokens.push(tokens);
        dfa.excepts.push(excepts);
        i += 1;
    }
    count_dfa_states(total_dfa, states.sets.len() - counted, max_dfa)?;
    Ok(dfa)
}

// ------------------------------------------------------------- compile ----

/// One rule's automaton.
enum RuleBuild {
    /// Only ever built in place: no automaton of its own.
    Inert,
    /// From the rule cache.
    Cached(Arc<RuleDfa>),
    Built {
        dfa: RuleDfa,
        /// The rule-cache key, when the body may be cached.
        key: Option<rule_cache::Key>,
        nfa_states: usize,
    },
}

/// A rule's NFA, built and waiting for determinization.
struct PendingRule {
    nfa: Vec<NState>,
    start: u32,
    accept: u32,
    key: Option<rule_cache::Key>,
}

impl PendingRule {
    fn determinize(self, budget: &Budget, total_dfa: &AtomicUsize, max_dfa: usize) -> Result<RuleBuild, EngineError> {
        let dfa = determinize(&self.nfa, self.start, self.accept, budget, total_dfa, max_dfa)?;
        Ok(RuleBuild::Built { dfa, key: self.key, nfa_states: self.nfa.len() })
    }
}

/// Grammar weight (see [`called_rules`]) from which the rules are
/// determinized on rayon's pool while the calling thread goes on building
/// NFAs: below, waking the pool costs more than it saves. W2's schema
/// weighs 1,189 (790 DFA states, half a millisecond), W5's 2,066 (3,500),
/// W3's 6,621.
const PARALLEL_MIN_WEIGHT: usize = 1_500;

/// NFA states handed to the pool and not yet determinized (memory: about
/// 120 bytes a state); past it, the calling thread determinizes itself.
const PENDING_MAX_NFA: usize = 200_000;

/// Most members of all the subsets of one lazy lexeme's deterministic
/// automaton (each is a `u32`: 64 MiB).
const LAZY_MAX_MEMBERS: usize = 1 << 24;

fn nfa_limit(max: usize) -> EngineError {
    EngineError::Limit(format!("grammar too large: more than {max} automaton states (large repetition bounds or character classes?)"))
}

/// The grammar-wide state of the NFA builds: token sets of
/// any-token-except edges (numbered for the whole grammar) and the NFA
/// states so far (for the limit).
#[derive(Default)]
struct NfaTotals {
    except_sets: Vec<Vec<TokenId>>,
    except_index: FxHashMap<Vec<TokenId>, u32>,
    states: usize,
}

/// What the calling thread makes of a rule: its automaton, or its NFA to
/// determinize.
enum Prepared {
    Done(RuleBuild),
    Nfa(PendingRule),
}

/// Rule `i`'s automaton from the rule cache, or its NFA. `total_dfa`
/// counts the grammar's DFA states so far, for the limit.
fn prepare_rule(
    grammar: &Grammar,
    i: usize,
    called: &[bool],
    limits: &AutomatonLimits,
    budget: &Budget,
    totals: &mut NfaTotals,
    total_dfa: &AtomicUsize,
) -> Result<Prepared, EngineError> {
    let rule = &grammar.rules[i];
    if rule.inline && !called[i] {
        return Ok(Prepared::Done(RuleBuild::Inert));
    }
    let cached = rule_cache::lookup(&rule.body, &grammar.rules);
    if let Some(dfa) = cached.dfa {
        count_dfa_states(total_dfa, dfa.accepting.len(), limits.max_dfa_states)?;
        return Ok(Prepared::Done(RuleBuild::Cached(dfa)));
    }
    let mut b = NfaBuilder {
        states: Vec::new(),
        except_sets: &mut totals.except_sets,
        except_index: &mut totals.except_index,
        budget,
        max_states: limits.max_nfa_states,
        total_before: totals.states,
        rules: &grammar.rules,
        inline: None,
        tail_to: u32::MAX,
        tail_entry: FxHashMap::default(),
        tail_pending: Vec::new(),
    };
    let start = b.new_state()?;
    let accept = b.new_state()?;
    b.tail_to = accept;
    b.build_all(&rule.body, start, accept)?;
    let nfa = std::mem::take(&mut b.states);
    totals.states += nfa.len();
    Ok(Prepared::Nfa(PendingRule { nfa, start, accept, key: cached.key }))
}

/// Builds the automaton of a grammar.
///
/// The calling thread looks each rule up in the rule cache and builds the
/// NFAs (the grammar it reads was just written by the front-end on this
/// thread, so it is in this core's caches); a large grammar's rules are
/// determinized on rayon's pool as their NFAs come, the rules being
/// independent by then. (Profilers that follow only the calling thread,
/// such as callgrind with `--toggle-collect`, then miss the
/// determinization.)
pub fn build_automaton(grammar: &Grammar, limits: &AutomatonLimits, budget: &Budget) -> Result<Automaton, EngineError> {
    let n_rules = grammar.rules.len();
    if n_rules == 0 {
        return Err(EngineError::Grammar("grammar has no rules".into()));
    }
    let (called, weight) = called_rules(grammar)?;
    let parallel = weight >= PARALLEL_MIN_WEIGHT;
    let mut totals = NfaTotals::default();
    let total_dfa = AtomicUsize::new(0);
    let in_flight = AtomicUsize::new(0);
    let max_dfa = limits.max_dfa_states;
    // Per rule, once known; after an error the later rules stay unset.
    let built: Vec<OnceLock<Result<RuleBuild, EngineError>>> = (0..n_rules).map(|_| OnceLock::new()).collect();
    rayon::in_place_scope(|scope| {
        for (i, slot) in built.iter().enumerate() {
            let pending = match prepare_rule(grammar, i, &called, limits, budget, &mut totals, &total_dfa) {
                Ok(Prepared::Done(done)) => {
                    let _ = slot.set(Ok(done));
                    continue;
                }
                Ok(Prepared::Nfa(pending)) => pending,
                Err(e) => {
                    let _ = slot.set(Err(e));
                    break;
                }
            };
            let size = pending.nfa.len();
            if parallel && in_flight.load(Ordering::Relaxed) + size <= PENDING_MAX_NFA {
                in_flight.fetch_add(size, Ordering::Relaxed);
                let (in_flight, total_dfa) = (&in_flight, &total_dfa);
                scope.spawn(move |_| {
                    let _ = slot.set(pending.determinize(budget, total_dfa, max_dfa));
                    in_flight.fetch_sub(size, Ordering::Relaxed);
                });
            } else {
                let _ = slot.set(pending.determinize(budget, &total_dfa, max_dfa));
            }
        }
    });
    let mut dfas: Vec<Arc<RuleDfa>> = Vec::with_capacity(n_rules);
    // Rules to put in the rule cache once trimmed: (rule, key, NFA states).
    let mut to_store: Vec<(usize, rule_cache::Key, usize)> = Vec::new();
    for (i, slot) in built.into_iter().enumerate() {
        let dfa = match slot.into_inner().expect("rules after an error are not reached")? {
            RuleBuild::Inert => Arc::new(RuleDfa::inert()),
            RuleBuild::Cached(dfa) => dfa,
            RuleBuild::Built { dfa, key, nfa_states } => {
                let dfa = Arc::new(dfa);
                match key {
                    // Stored once trimmed (see `Key::self_contained`).
                    Some(key) if key.self_contained() => to_store.push((i, key, nfa_states)),
                    Some(key) => rule_cache::store(key, dfa.clone(), nfa_states),
                    None => {}
                }
                dfa
            }
        };
        dfas.push(dfa);
    }
    let (mut dfas, live_rule) = trim(dfas, n_rules);
    for (i, key, nfa_states) in to_store {
        if live_rule[i] {
            Arc::make_mut(&mut dfas[i]).trimmed = true;
            rule_cache::store(key, dfas[i].clone(), nfa_states);
        }
    }
    for (i, rule) in grammar.rules.iter().enumerate() {
        if rule.lexeme.is_some() && live_rule[i] {
            let d = &dfas[i];
            if d.calls.iter().any(|c| !c.is_empty())
                || d.tokens.iter().any(|t| !t.is_empty())
                || d.excepts.iter().any(|t| !t.is_empty())
                || d.ticks.iter().any(|t| t.is_some())
            {
                return Err(EngineError::Grammar(format!("lexeme '{}' is not plain text (it calls rules or takes tokens)", rule.name)));
            }
            if rule.lexeme == Some(Lexeme::Lazy) && !matches!(rule.body, Expr::Avoiding { lazy: true, .. }) {
                return Err(EngineError::Grammar(format!("lazy lexeme '{}' is not a lazy expression", rule.name)));
            }
            split_start(Arc::make_mut(&mut dfas[i]));
        }
    }
    if !live_rule[grammar.root as usize] {
        // The validator cannot see inside Avoiding: name the rules whose
        // texts all contain an excluded string, the usual cause.
        let avoided: Vec<String> = grammar
            .rules
            .iter()
            .zip(&live_rule)
            .filter(|(r, live)| !**live && has_avoiding(&r.body))
            .take(3)
            .map(|(r, _)| format!("'{}'", r.name))
            .collect();
        let why = if avoided.is_empty() { String::new() } else { format!(" (every text of {} contains an excluded string)", avoided.join(", ")) };
        return Err(EngineError::Grammar(format!(
            "the grammar's language is empty: rule '{}' can never finish{why}",
            grammar.rules[grammar.root as usize].name
        )));
    }
    Ok(assemble(grammar, dfas, totals.except_sets))
}

/// Gives the start state of a lexeme's automaton no incoming move: where
/// a move enters it, the state is copied and the moves go to the copy.
fn split_start(d: &mut RuleDfa) {
    if !d.byte_trans.iter().flatten().any(|&(_, _, t)| t == 0) {
        return;
    }
    let copy = d.accepting.len() as u32;
    d.byte_trans.push(d.byte_trans[0].clone());
    d.calls.push(d.calls[0].clone());
    d.tokens.push(d.tokens[0].clone());
    d.excepts.push(d.excepts[0].clone());
    d.ticks.push(d.ticks[0]);
    d.accepting.push(d.accepting[0]);
    for (_, _, t) in d.byte_trans.iter_mut().flatten() {
        if *t == 0 {
            *t = copy;
        }
    }
    d.narrow = OnceLock::new();
}

/// Rules that need an automaton of their own: every rule but the inline
/// ones referenced only as a last step (those are built in place); and the
/// grammar's weight, its expression nodes and literal bytes (what decides
/// whether the rules are built on several threads).
fn called_rules(grammar: &Grammar) -> Result<(Vec<bool>, usize), EngineError> {
    /// Notes the rules `e` calls; an undefined rule id is returned (the same
    /// walk checks the references, which used to take a pass of its own).
    fn note(e: &Expr, tail: bool, rules: &[Rule], out: &mut [bool], weight: &mut usize) -> Result<(), RuleId> {
        *weight += 1;
        match e {
            Expr::Rule(r) => match out.get_mut(*r as usize) {
                Some(x) => *x |= !(tail && rules[*r as usize].inline),
                None => return Err(*r),
            },
            Expr::Bytes(b) => *weight += b.len(),
            Expr::Seq(v) => {
                for (k, x) in v.iter().enumerate() {
                    note(x, tail && k + 1 == v.len(), rules, out, weight)?;
                }
            }
            Expr::Alt(v) => v.iter().try_for_each(|x| note(x, tail, rules, out, weight))?,
            Expr::Repeat { expr, .. } | Expr::Avoiding { expr, .. } => note(expr, false, rules, out, weight)?,
            Expr::TextDispatch { cases, .. } => cases.iter().try_for_each(|(_, x)| note(x, false, rules, out, weight))?,
            Expr::TokenDispatch { cases, .. } => cases.iter().try_for_each(|(_, x)| note(x, false, rules, out, weight))?,
            // Each of the three ends the expression.
            Expr::WordsExcept(w) => {
                *weight += w.words.iter().map(|x| x.len()).sum::<usize>();
                for x in [&w.exit, &w.other, &w.stop] {
                    note(x, tail, rules, out, weight)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
    let mut out: Vec<bool> = grammar.rules.iter().map(|r| !r.inline).collect();
    if let Some(x) = out.get_mut(grammar.root as usize) {
        *x = true;
    }
    let mut weight = 0;
    for r in &grammar.rules {
        note(&r.body, true, &grammar.rules, &mut out, &mut weight)
            .map_err(|id| EngineError::Grammar(format!("rule '{}' references undefined rule id {id}", r.name)))?;
    }
    Ok((out, weight))
}

fn has_avoiding(e: &Expr) -> bool {
    match e {
        Expr::Avoiding { .. } => true,
        Expr::WordsExcept(w) => [&w.exit, &w.other, &w.stop].into_iter().any(has_avoiding),
        Expr::Seq(v) | Expr::Alt(v) => v.iter().any(has_avoiding),
        Expr::Repeat { expr, .. } => has_avoiding(expr),
        Expr::TextDispatch { cases, .. } => cases.iter().any(|(_, e)| has_avoiding(e)),
        Expr::TokenDispatch { cases, .. } => cases.iter().any(|(_, e)| has_avoiding(e)),
        _ => false,
    }
}

/// Removes calls to rules that can never finish and states that cannot reach
/// acceptance. Returns the trimmed DFAs (local state ids remapped; removed
/// transitions dropped) and which rules are productive.
fn trim(mut dfas: Vec<Arc<RuleDfa>>, n_rules: usize) -> (Vec<Arc<RuleDfa>>, Vec<bool>) {
    // Productive states: can reach an accepting state through bytes, tokens
    // or calls to productive rules. One worklist over reversed edges; a call
    // edge into a live state waits until its callee becomes productive
    // (its start state live).
    let mut productive_rule: Vec<bool> = dfas.iter().map(|d| d.trimmed).collect();
    let mut live: Vec<Vec<bool>> = dfas.iter().map(|d| vec![d.trimmed; d.accepting.len()]).collect();
    // Reversed edges in CSR form over global state ids (rule offset + state),
    // built by counting: `srcs[start[g]..start[g + 1]]` are the sources of
    // byte/token edges into g, `call_srcs` the (source, callee) of calls.
    let mut offset = Vec::with_capacity(n_rules + 1);
    let mut total = 0usize;
    for d in &dfas {
        offset.push(total);
        total += d.accepting.len();
    }
    let mut start = vec![0u32; total + 1];
    let mut call_start = vec![0u32; total + 1];
    for (r, d) in dfas.iter().enumerate().filter(|(_, d)| !d.trimmed) {
        let o = offset[r] + 1;
        for s in 0..d.accepting.len() {
            for &(_, _, t) in &d.byte_trans[s] {
                start[o + t as usize] += 1;
            }
            for &(_, t) in d.tokens[s].iter().chain(&d.excepts[s]) {
                start[o + t as usize] += 1;
            }
            for &(_, t) in &d.calls[s] {
                call_start[o + t as usize] += 1;
            }
        }
    }
    for g in 0..total {
        start[g + 1] += start[g];
        call_start[g + 1] += call_start[g];
    }
    let mut srcs = vec![0u32; start[total] as usize];
    let mut call_srcs = vec![(0u32, 0u32); call_start[total] as usize];
    let mut fill = start.clone();
    let mut call_fill = call_start.clone();
    for (r, d) in dfas.iter().enumerate().filter(|(_, d)| !d.trimmed) {
        let o = offset[r];
        for s in 0..d.accepting.len() {
            let targets = d.byte_trans[s].iter().map(|e| e.2).chain(d.tokens[s].iter().chain(&d.excepts[s]).map(|e| e.1));
            for t in targets {
                let g = o + t as usize;
                srcs[fill[g] as usize] = s as u32;
                fill[g] += 1;
            }
            for &(c, t) in &d.calls[s] {
                let g = o + t as usize;
                call_srcs[call_fill[g] as usize] = (s as u32, c);
                call_fill[g] += 1;
            }
        }
    }
    let mut waiting: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n_rules];
    let mut queue: Vec<(u32, u32)> = Vec::new();
    fn mark(live: &mut [Vec<bool>], queue: &mut Vec<(u32, u32)>, r: u32, s: u32) {
        if !live[r as usize][s as usize] {
            live[r as usize][s as usize] = true;
            queue.push((r, s));
        }
    }
    for (r, d) in dfas.iter().enumerate().filter(|(_, d)| !d.trimmed) {
        for (s, &acc) in d.accepting.iter().enumerate() {
            if acc {
                mark(&mut live, &mut queue, r as u32, s as u32);
            }
        }
    }
    while let Some((r, t)) = queue.pop() {
        let ru = r as usize;
        if t == 0 && !productive_rule[ru] {
            productive_rule[ru] = true;
            for (r2, s2) in std::mem::take(&mut waiting[ru]) {
                mark(&mut live, &mut queue, r2, s2);
            }
        }
        let g = offset[ru] + t as usize;
        for k in start[g]..start[g + 1] {
            mark(&mut live, &mut queue, r, srcs[k as usize]);
        }
        for k in call_start[g]..call_start[g + 1] {
            let (s, c) = call_srcs[k as usize];
            if productive_rule[c as usize] {
                mark(&mut live, &mut queue, r, s);
            } else {
                waiting[c as usize].push((r, s));
            }
        }
    }
    // Drop dead transitions and renumber live states (state 0 stays first
    // when the rule is productive). A rule with nothing to drop (a cached
    // one, trimmed when it was stored) is kept as it is, unshared.
    for (r, d) in dfas.iter_mut().enumerate() {
        let l = &live[r];
        let intact = l.iter().all(|&x| x) && d.calls.iter().flatten().all(|&(c, _)| productive_rule[c as usize]);
        if intact {
            continue;
        }
        let d = Arc::make_mut(d);
        d.narrow = OnceLock::new();
        let mut remap = vec![DEAD; l.len()];
        let mut n = 0u32;
        for s in 0..l.len() {
            if l[s] {
                remap[s] = n;
                n += 1;
            }
        }
        let keep = |v: &mut Vec<Vec<(u32, u32)>>| {
            let old = std::mem::take(v);
            *v = old
                .into_iter()
                .enumerate()
                .filter(|(s, _)| l[*s])
                .map(|(_, es)| es.into_iter().filter(|&(_, t)| l[t as usize]).map(|(k, t)| (k, remap[t as usize])).collect())
                .collect();
        };
        keep(&mut d.tokens);
        keep(&mut d.excepts);
        // A tick target is live whenever its source is (the budgeted text
        // construction guarantees it); a dead one would drop the item.
        let ticks = std::mem::take(&mut d.ticks);
        d.ticks = ticks
            .into_iter()
            .enumerate()
            .filter(|(s, _)| l[*s])
            .map(|(_, t)| t.map(|t| if l[t as usize] { remap[t as usize] } else { DEAD }))
            .collect();
        let calls = std::mem::take(&mut d.calls);
        d.calls = calls
            .into_iter()
            .enumerate()
            .filter(|(s, _)| l[*s])
            .map(|(_, es)| {
                es.into_iter()
                    .filter(|&(c, t)| productive_rule[c as usize] && l[t as usize])
                    .map(|(c, t)| (c, remap[t as usize]))
                    .collect()
            })
            .collect();
        let bt = std::mem::take(&mut d.byte_trans);
        d.byte_trans = bt
            .into_iter()
            .enumerate()
            .filter(|(s, _)| l[*s])
            .map(|(_, es)| es.into_iter().filter(|&(_, _, t)| l[t as usize]).map(|(a, b, t)| (a, b, remap[t as usize])).collect())
            .collect();
        let acc = std::mem::take(&mut d.accepting);
        d.accepting = acc.into_iter().enumerate().filter(|(s, _)| l[*s]).map(|(_, a)| a).collect();
        if d.accepting.is_empty() {
            // Unproductive rule: keep one inert state so numbering stays simple.
            d.accepting.push(false);
            d.byte_trans.push(vec![]);
            d.calls.push(vec![]);
            d.tokens.push(vec![]);
            d.excepts.push(vec![]);
            d.ticks.push(None);
        }
    }
    (dfas, productive_rule)
}

/// Byte classes of the byte moves of `dfas`: the boundaries of every range.
/// Returns byte → class and the number of classes.
fn byte_classes<'d>(dfas: impl Iterator<Item = &'d RuleDfa>) -> ([u8; 256], usize) {
    let mut is_boundary = [false; 257];
    is_boundary[0] = true;
    is_boundary[256] = true;
    for d in dfas {
        for es in &d.byte_trans {
            for &(lo, hi, _) in es {
                is_boundary[lo as usize] = true;
                is_boundary[hi as usize + 1] = true;
            }
        }
    }
    let mut class_of = [0u8; 256];
    let mut c: i32 = -1;
    for b in 0..256usize {
        if is_boundary[b] {
            c += 1;
        }
        class_of[b] = c as u8;
    }
    (class_of, c as usize + 1)
}

/// The first byte of every class.
fn class_reps(class_of: &[u8; 256]) -> Vec<u8> {
    (0..=255u8).filter(|&b| b == 0 || class_of[b as usize] != class_of[b as usize - 1]).collect()
}

/// The bytes of every class, as 256-bit sets.
fn class_bits(class_of: &[u8; 256], n_classes: usize) -> Vec<[u64; 4]> {
    let mut bits = vec![[0u64; 4]; n_classes];
    for b in 0..256 {
        bits[class_of[b] as usize][b / 64] |= 1 << (b % 64);
    }
    bits
}

fn assemble(grammar: &Grammar, dfas: Vec<Arc<RuleDfa>>, except_sets: Vec<Vec<TokenId>>) -> Automaton {
    let (class_of, n_classes) = byte_classes(dfas.iter().map(|d| &**d));
    let class_rep = class_reps(&class_of);

    // Large rules with few classes of their own get a narrow table; their
    // states come after the shared table's.
    let narrow: Vec<Option<Arc<NarrowTable>>> = dfas
        .iter()
        .map(|d| {
            if d.accepting.len() < NARROW_MIN_STATES {
                return None;
            }
            if let Some(t) = d.narrow.get() {
                return (t.n_classes * 2 <= n_classes).then(|| t.clone());
            }
            // Classes first: the table is built only for a rule that gets it.
            let classes = byte_classes(std::iter::once(&**d));
            (classes.1 * 2 <= n_classes).then(|| d.narrow.get_or_init(|| Arc::new(NarrowTable::of(d, classes))).clone())
        })
        .collect();
    let mut rule_start = vec![0u32; dfas.len()];
    let mut order: Vec<usize> = (0..dfas.len()).filter(|&r| narrow[r].is_none()).collect();
    let mut offset = 0u32;
    for &r in &order {
        rule_start[r] = offset;
        offset += dfas[r].accepting.len() as u32;
    }
    let n_shared = offset as usize;
    let mut narrow_rules = Vec::new();
    for (r, t) in narrow.iter().enumerate() {
        if let Some(t) = t {
            rule_start[r] = offset;
            narrow_rules.push(NarrowRule { first: offset, table: t.clone() });
            offset += dfas[r].accepting.len() as u32;
            order.push(r);
        }
    }
    let n = offset as usize;
    let mut a = Automaton {
        class_of,
        n_classes,
        class_rep,
        class_bits: class_bits(&class_of, n_classes),
        trans: Table::new(n_shared, &class_of, order.iter().take_while(|&&r| narrow[r].is_none()).flat_map(|&r| dfas[r].byte_trans.iter().map(|es| &es[..]))),
        n_shared,
        narrow: narrow_rules,
        flags: vec![0; n],
        call_start: Vec::with_capacity(n + 1),
        calls: Vec::new(),
        tok_start: Vec::with_capacity(n + 1),
        tok_edges: Vec::new(),
        exc_start: Vec::with_capacity(n + 1),
        exc_edges: Vec::new(),
        except_sets,
        rule_start: rule_start.clone(),
        nullable: vec![false; dfas.len()],
        ticks: Vec::new(),
        rule_names: grammar.rules.iter().map(|r| r.name.clone()).collect(),
        root: grammar.root,
        lex: Vec::new(),
    };
    if grammar.rules.iter().any(|r| r.lexeme.is_some()) {
        a.lex = vec![0; n];
        for (r, rule) in grammar.rules.iter().enumerate() {
            let Some(kind) = rule.lexeme else { continue };
            let d = &dfas[r];
            for s in 0..d.accepting.len() {
                let mut f = lex::IN;
                match kind {
                    Lexeme::Lazy => f |= lex::LAZY,
                    Lexeme::Skip => f |= lex::SKIP,
                    Lexeme::Greedy => {}
                }
                if s == 0 {
                    f |= lex::FRESH;
                } else if kind == Lexeme::Lazy && d.accepting[s] {
                    f |= lex::LAZY_END;
                }
                a.lex[(rule_start[r] + s as u32) as usize] = f;
            }
        }
    }
    // In state order: the edge lists are CSR.
    for &r in &order {
        let d = &dfas[r];
        let base = rule_start[r];
        let shared = narrow[r].is_none();
        for s in 0..d.accepting.len() {
            let g = (base + s as u32) as usize;
            let mut f = 0u8;
            if d.accepting[s] {
                f |= flags::ACCEPTING;
            }
            if shared {
                debug_assert_eq!(a.trans.rows.len(), g, "shared rows come first, in state order");
                a.trans.push_row(&class_of, &d.byte_trans[s], base);
            }
            if !d.byte_trans[s].is_empty() {
                f |= flags::SCANS | flags::BYTES;
            }
            a.call_start.push(a.calls.len() as u32);
            for &(c, t) in &d.calls[s] {
                a.calls.push((c, base + t));
                f |= flags::CALLS;
            }
            a.tok_start.push(a.tok_edges.len() as u32);
            for &(tok, t) in &d.tokens[s] {
                a.tok_edges.push((tok, base + t));
                f |= flags::SCANS | flags::TOKENS;
            }
            a.exc_start.push(a.exc_edges.len() as u32);
            for &(set, t) in &d.excepts[s] {
                a.exc_edges.push((set, base + t));
                f |= flags::SCANS | flags::TOKENS;
            }
            if let Some(t) = d.ticks[s] {
                a.ticks.push((g as StateId, global(t, base)));
                f |= flags::TICKS;
            }
            a.flags[g] = f;
        }
    }
    a.call_start.push(a.calls.len() as u32);
    a.tok_start.push(a.tok_edges.len() as u32);
    a.exc_start.push(a.exc_edges.len() as u32);
    a.nullable = compute_nullable(&a);
    a
}

/// A rule is nullable when its start state reaches an accepting state through
/// calls of nullable rules only.
fn compute_nullable(a: &Automaton) -> Vec<bool> {
    let n_rules = a.rule_start.len();
    let mut nullable = vec![false; n_rules];
    loop {
        let mut changed = false;
        for r in 0..n_rules {
            if nullable[r] {
                continue;
            }
            let mut seen = vec![a.rule_start[r]];
            let mut stack = vec![a.rule_start[r]];
            let mut found = false;
            while let Some(s) = stack.pop() {
                if a.flag(s, flags::ACCEPTING) {
                    found = true;
                    break;
                }
                for &(c, t) in a.calls_of(s) {
                    if nullable[c as usize] && !seen.contains(&t) {
                        seen.push(t);
                        stack.push(t);
                    }
                }
            }
            if found {
                nullable[r] = true;
                changed = true;
            }
        }
        if !changed {
            return nullable;
        }
    }
}

/// Rule automata shared across grammars (see the module).
mod rule_cache;
