//! One matcher per generated sequence.

use std::sync::Arc;

use crate::automaton::flags;
use crate::bitset::Bitset;
use crate::compiled::CompiledGrammar;
use crate::error::EngineError;
use crate::mask::{MaskWalker, StoredMask};
use crate::parser::{canonicalize, closure, cross_token_boundary, Arena, ArenaMark, Item, ItemSet, Scratch};

#[derive(Debug, Clone)]
struct Step {
    set: ItemSet,
    /// Arena size before this step was taken (restored by rollback).
    mark: ArenaMark,
    terminated: bool,
}

/// Tracks one sequence's position in a grammar.
///
/// Thread-compatible: a matcher is used by one thread at a time; the
/// compiled grammar it points to is shared and thread-safe.
#[derive(Debug)]
pub struct Matcher {
    g: Arc<CompiledGrammar>,
    arena: Arena,
    history: Vec<Step>,
    sc: Scratch,
    walker: MaskWalker,
    /// Without a stop token, the matcher counts as terminated as soon as the
    /// grammar can end.
    terminate_without_stop_token: bool,
    /// How many accepted tokens can be rolled back (None: unlimited).
    max_rollback: Option<usize>,
}

impl Matcher {
    pub fn new(g: Arc<CompiledGrammar>, terminate_without_stop_token: bool, max_rollback: Option<usize>) -> Result<Matcher, EngineError> {
        let mut arena = Arena::default();
        let mut sc = Scratch::default();
        let set = ItemSet::initial(&g.automaton, &mut arena, &mut sc)?;
        let mark = arena.mark();
        Ok(Matcher {
            g,
            arena,
            history: vec![Step { set, mark, terminated: false }],
            sc,
            walker: MaskWalker::default(),
            terminate_without_stop_token,
            max_rollback,
        })
    }

    pub fn grammar(&self) -> &Arc<CompiledGrammar> {
        &self.g
    }

    fn cur(&self) -> &Step {
        self.history.last().expect("history is never empty")
    }

    /// True once a stop token was accepted (or, with
    /// `terminate_without_stop_token`, as soon as the grammar can end).
    pub fn is_terminated(&self) -> bool {
        let c = self.cur();
        c.terminated || (self.terminate_without_stop_token && c.set.can_end)
    }

    /// True when the output so far is a complete sentence of the grammar.
    pub fn can_end(&self) -> bool {
        self.cur().set.can_end
    }

    /// Number of tokens that can currently be rolled back.
    pub fn num_rollbackable(&self) -> usize {
        self.history.len() - 1
    }

    fn push(&mut self, set: ItemSet, mark: ArenaMark, terminated: bool) {
        self.history.push(Step { set, mark, terminated });
        if let Some(max) = self.max_rollback {
            // Keep max+1 states; older ones can no longer be restored.
            if self.history.len() > max + 1 {
                let excess = self.history.len() - (max + 1);
                self.history.drain(..excess);
            }
        }
    }

    /// Accepts one token. Returns false (state unchanged) when the grammar
    /// does not allow it here.
    pub fn accept_token(&mut self, token: u32) -> Result<bool, EngineError> {
        let v = self.g.vocab.clone();
        if self.cur().terminated || token as usize >= v.vocab_len {
            return Ok(false);
        }
        let mark = self.arena.mark();
        let cur = self.cur().set.clone();
        if v.is_stop(token) && cur.can_end {
            self.push(cur, mark, true);
            return Ok(true);
        }
        let a = &self.g.automaton;
        // Token-level path: edges that match this id.
        let mut tok_seeds: Vec<Item> = Vec::new();
        for it in &cur.items {
            if a.flags[it.state as usize] & flags::TOKENS == 0 {
                continue;
            }
            for &(t, tgt) in a.tokens_of(it.state) {
                if t == token {
                    tok_seeds.push(Item { state: tgt, cont: it.cont });
                }
            }
            for &(set, tgt) in a.excepts_of(it.state) {
                if a.except_sets[set as usize].binary_search(&token).is_err() {
                    tok_seeds.push(Item { state: tgt, cont: it.cont });
                }
            }
        }
        let mut items = Vec::new();
        let mut can_end = false;
        let mut ok = false;
        if !tok_seeds.is_empty() {
            can_end = closure(a, &mut self.arena, &tok_seeds, &mut items, &mut self.sc)?;
            ok = true;
        }
        // Text path: the token's bytes (special tokens never match text).
        if !v.is_special[token as usize] && !v.tokens[token as usize].is_empty() {
            if let Some((more, end)) = cur.advance_bytes(a, &mut self.arena, &mut self.sc, &v.tokens[token as usize])? {
                items.extend(more);
                can_end |= end;
                ok = true;
            }
        }
        if !ok {
            self.arena.truncate(mark);
            return Ok(false);
        }
        cross_token_boundary(&self.g.automaton, &mut items);
        let key = canonicalize(&self.arena, &mut items, can_end);
        self.push(ItemSet { items, can_end, key }, mark, false);
        Ok(true)
    }

    /// Accepts a string (no token alignment; token-level elements cannot
    /// match). Returns false (state unchanged) when not allowed. For token
    /// budgets the string counts as one token (never fewer tokens than the
    /// model could have used).
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> Result<bool, EngineError> {
        if self.cur().terminated {
            return Ok(false);
        }
        let mark = self.arena.mark();
        let cur = self.cur().set.clone();
        match cur.advance_bytes(&self.g.automaton, &mut self.arena, &mut self.sc, bytes)? {
            Some((mut items, can_end)) => {
                cross_token_boundary(&self.g.automaton, &mut items);
                let key = canonicalize(&self.arena, &mut items, can_end);
                self.push(ItemSet { items, can_end, key }, mark, false);
                Ok(true)
            }
            None => {
                self.arena.truncate(mark);
                Ok(false)
            }
        }
    }

    /// Undoes the last `n` accepted tokens (or strings).
    pub fn rollback(&mut self, n: usize) -> Result<(), EngineError> {
        if n > self.num_rollbackable() {
            return Err(EngineError::Usage(format!(
                "cannot roll back {n} steps: only {} can be rolled back",
                self.num_rollbackable()
            )));
        }
        for _ in 0..n {
            let s = self.history.pop().unwrap();
            self.arena.truncate(s.mark);
        }
        Ok(())
    }

    /// Back to the state before any input.
    pub fn reset(&mut self) -> Result<(), EngineError> {
        let g = self.g.clone();
        *self = Matcher::new(g, self.terminate_without_stop_token, self.max_rollback)?;
        Ok(())
    }

    /// Writes the mask of allowed next tokens into `out` (one bitmask row of
    /// at least `ceil(logits_size / 32)` words; extra words are zeroed).
    pub fn fill_next_token_bitmask(&mut self, out: &mut [u32]) -> Result<(), EngineError> {
        let v = self.g.vocab.clone();
        let words = v.mask_words();
        if out.len() < v.vocab_len.div_ceil(32) {
            return Err(EngineError::Usage(format!(
                "bitmask row has {} words but the vocabulary needs {}",
                out.len(),
                v.vocab_len.div_ceil(32)
            )));
        }
        if self.cur().terminated {
            // After the stop token only stop tokens stay allowed, so a batch
            // that keeps decoding a finished row stays well-defined.
            out.fill(0);
            for &s in &v.stop {
                out[s as usize >> 5] |= 1 << (s & 31);
            }
            return Ok(());
        }
        let key = self.cur().set.key;
        if let Some(m) = self.g.cached_mask(key) {
            m.write_into(out);
            return Ok(());
        }
        // Background work (the heap reserve's refill, the warm-up) waits
        // while masks are computed, not only compiles.
        let _fg = crate::foreground::MaskWork::begin();
        let mut bits = Bitset::new(words * 32);
        let set = self.cur().set.clone();
        self.walker.compute(&self.g, &mut self.arena, &mut self.sc, &set, &mut bits)?;
        // The row is the walk's words (no copy of a stored form first).
        crate::mask::write_words(&bits.words, out);
        self.g.store_mask(key, std::sync::Arc::new(StoredMask::from_bitset(bits)));
        Ok(())
    }

    /// The allowed next tokens as a bitset (convenience for tests).
    pub fn next_token_mask(&mut self) -> Result<Bitset, EngineError> {
        let mut words = vec![0u32; self.g.vocab.mask_words()];
        self.fill_next_token_bitmask(&mut words)?;
        Ok(Bitset { words, len: self.g.vocab.logits_size })
    }

    /// The bytes every continuation must start with (the longest forced
    /// prefix), cut at the last complete UTF-8 character. Does not change the
    /// state.
    pub fn find_jump_forward_bytes(&mut self) -> Result<Vec<u8>, EngineError> {
        const MAX_FORCED: usize = 1 << 16;
        let a = &self.g.automaton;
        let mark = self.arena.mark();
        let mut set = self.cur().set.clone();
        let mut out = Vec::new();
        if self.cur().terminated {
            return Ok(out);
        }
        let mut seeds = Vec::new();
        let mut next = Vec::new();
        while out.len() < MAX_FORCED && !set.can_end {
            let mut bytes = [0u64; 4];
            let mut token_edges = false;
            for it in &set.items {
                token_edges |= a.flags[it.state as usize] & flags::TOKENS != 0;
                for (w, x) in bytes.iter_mut().zip(a.byte_set(it.state)) {
                    *w |= x;
                }
            }
            let count: u32 = bytes.iter().map(|w| w.count_ones()).sum();
            if token_edges || count != 1 {
                break;
            }
            let b = bytes.iter().enumerate().find(|(_, w)| **w != 0).map(|(i, w)| i * 64 + w.trailing_zeros() as usize).unwrap() as u8;
            crate::parser::scan_byte(a, &set.items, b, &mut seeds);
            if seeds.is_empty() {
                // A lexeme cut the only byte's items (see `scan_byte`).
                break;
            }
            let can_end = closure(a, &mut self.arena, &seeds, &mut next, &mut self.sc)?;
            set.items.clear();
            set.items.extend_from_slice(&next);
            set.can_end = can_end;
            out.push(b);
        }
        self.arena.truncate(mark);
        // Do not return a partial UTF-8 character.
        let valid = match std::str::from_utf8(&out) {
            Ok(_) => out.len(),
            Err(e) => e.valid_up_to(),
        };
        out.truncate(valid);
        Ok(out)
    }

    /// The length in bytes of a shortest text that makes the output so far a
    /// complete sentence of the grammar (0 when it already is one; `None`
    /// when no text can, e.g. only a special token could). Does not change
    /// the state.
    pub fn shortest_completion_len(&mut self) -> Option<usize> {
        let c = self.cur();
        if c.terminated {
            return Some(0);
        }
        let dist = self.g.completion_dist();
        let n = crate::completion::set_cost(dist, &self.arena, &c.set.items, c.set.can_end);
        (n != crate::completion::INF).then_some(n as usize)
    }

    /// A shortest text (at most `max_len` bytes) that makes the output so far
    /// a complete sentence of the grammar, e.g. the closing quotes, values of
    /// the remaining required keys and brackets of a JSON answer cut off by a
    /// token limit. `None` when there is none within `max_len`. Does not
    /// change the state: accept the returned bytes to use them. The bytes may
    /// start inside a UTF-8 character when the output so far ends inside one.
    pub fn find_shortest_completion(&mut self, max_len: usize) -> Result<Option<Vec<u8>>, EngineError> {
        if self.cur().terminated {
            return Ok(Some(Vec::new()));
        }
        let g = self.g.clone();
        let dist = g.completion_dist();
        let set = self.cur().set.clone();
        crate::completion::shortest_completion(&g.automaton, dist, &mut self.arena, &mut self.sc, &set.items, set.can_end, max_len)
    }
}
