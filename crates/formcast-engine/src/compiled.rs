//! A grammar compiled against a vocabulary, with its lazily built caches.
//!
//! Compilation itself only builds the automaton (cost proportional to the
//! grammar, independent of the vocabulary). Everything that depends on the
//! vocabulary is computed on first use and shared by all matchers:
//! - a per-DFA-state *partition* of the vocabulary: tokens a state accepts
//!   on its own bytes whatever the stack holds, plus the trie nodes where the
//!   answer depends on the stack (see [`Partition`]);
//! - a cache of whole masks keyed by the canonical hash of a parser state.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use formcast_grammar::Grammar;
use rustc_hash::FxHashMap;

use crate::automaton::{build_automaton, flags, Automaton, AutomatonLimits, StateId, DEAD};
use crate::error::EngineError;
use crate::limits::Budget;
use crate::mask::StoredMask;
use crate::vocab_index::VocabIndex;

/// Options for compilation.
#[derive(Debug, Clone)]
pub struct CompileOptions {
    pub automaton: AutomatonLimits,
    /// Byte budget of the per-grammar mask cache.
    pub mask_cache_bytes: usize,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions { automaton: AutomatonLimits::default(), mask_cache_bytes: 64 << 20 }
    }
}

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
    pub accept: StoredMask,
    pub frontier: Vec<(u32, StateId)>,
}

/// The bytes on which state `s` stays in `s`.
fn self_loop_bytes(a: &Automaton, s: StateId) -> [u64; 4] {
    let mut out = [0u64; 4];
    for b in 0..256usize {
        if a.next(s, b as u8) == s {
            out[b / 64] |= 1 << (b % 64);
        }
    }
    out
}

pub(crate) struct MaskCache {
    map: FxHashMap<u128, Arc<StoredMask>>,
    bytes: usize,
    limit: usize,
}

/// A grammar ready for matching against one vocabulary.
pub struct CompiledGrammar {
    pub automaton: Automaton,
    pub vocab: Arc<VocabIndex>,
    partitions: Vec<OnceLock<Arc<Partition>>>,
    pub(crate) mask_cache: Mutex<MaskCache>,
}

impl std::fmt::Debug for CompiledGrammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGrammar")
            .field("states", &self.automaton.n_states())
            .field("rules", &self.automaton.rule_start.len())
            .finish()
    }
}

impl CompiledGrammar {
    /// Compiles `grammar` for `vocab`, within `timeout` when given.
    pub fn compile(
        grammar: &Grammar,
        vocab: Arc<VocabIndex>,
        opts: &CompileOptions,
        budget: &Budget,
    ) -> Result<CompiledGrammar, EngineError> {
        let automaton = build_automaton(grammar, &opts.automaton, budget)?;
        for (set_idx, set) in automaton.except_sets.iter().enumerate() {
            let _ = set_idx;
            if let Some(&bad) = set.iter().find(|&&t| t as usize >= vocab.vocab_len) {
                return Err(EngineError::Grammar(format!(
                    "token id {bad} in an excluded-token set is outside the vocabulary (size {})",
                    vocab.vocab_len
                )));
            }
        }
        if let Some(&(bad, _)) = automaton.tok_edges.iter().find(|(t, _)| *t as usize >= vocab.vocab_len) {
            return Err(EngineError::Grammar(format!(
                "token id {bad} is outside the vocabulary (size {})",
                vocab.vocab_len
            )));
        }
        let n = automaton.n_states();
        Ok(CompiledGrammar {
            automaton,
            vocab,
            partitions: (0..n).map(|_| OnceLock::new()).collect(),
            mask_cache: Mutex::new(MaskCache { map: FxHashMap::default(), bytes: 0, limit: opts.mask_cache_bytes }),
        })
    }

    /// Convenience: compile with a plain timeout.
    pub fn compile_with_timeout(grammar: &Grammar, vocab: Arc<VocabIndex>, timeout: Option<Duration>) -> Result<Self, EngineError> {
        Self::compile(grammar, vocab, &CompileOptions::default(), &Budget::new(timeout, None))
    }

    /// The partition of state `s`, computed on first use.
    pub fn partition(&self, s: StateId) -> Arc<Partition> {
        self.partitions[s as usize].get_or_init(|| Arc::new(self.compute_partition(s))).clone()
    }

    fn compute_partition(&self, s: StateId) -> Partition {
        let a = &self.automaton;
        let v = &*self.vocab;
        let nodes = &v.nodes;
        let mut accept: Vec<u32> = Vec::new();
        let mut frontier = Vec::new();
        let mut loops: FxHashMap<StateId, [u64; 4]> = FxHashMap::default();
        // (subtree end, state) per depth.
        let mut stack: Vec<(u32, StateId)> = vec![(nodes[0].end, s)];
        let mut i = 1usize;
        let total = nodes.len();
        while i < total {
            while i as u32 >= stack.last().unwrap().0 {
                stack.pop();
            }
            let st = stack.last().unwrap().1;
            let node = nodes[i];
            let t = a.next(st, node.byte);
            if t == DEAD {
                i = node.end as usize;
                continue;
            }
            if a.flags[t as usize] & (flags::ACCEPTING | flags::CALLS) != 0 {
                frontier.push((i as u32, t));
                i = node.end as usize;
                continue;
            }
            // Every byte below loops on `t` (inside a string, say): the whole
            // subtree is accepted without visiting it.
            let lp = *loops.entry(t).or_insert_with(|| self_loop_bytes(a, t));
            let below = v.below[i];
            if (0..4).all(|k| below[k] & !lp[k] == 0) {
                accept.extend_from_slice(v.subtree_tokens(i));
                i = node.end as usize;
                continue;
            }
            accept.extend_from_slice(v.tokens_at(i));
            if node.end as usize > i + 1 {
                stack.push((node.end, t));
            }
            i += 1;
        }
        Partition { accept: StoredMask::from_ids(accept, v.logits_size), frontier }
    }

    pub(crate) fn cached_mask(&self, key: u128) -> Option<Arc<StoredMask>> {
        self.mask_cache.lock().ok()?.map.get(&key).cloned()
    }

    pub(crate) fn store_mask(&self, key: u128, mask: Arc<StoredMask>) {
        if let Ok(mut c) = self.mask_cache.lock() {
            let size = mask.heap_bytes() + 64;
            if size > c.limit {
                return;
            }
            if c.bytes + size > c.limit {
                // Simple and predictable: start over when the budget is full.
                c.map.clear();
                c.bytes = 0;
            }
            if c.map.insert(key, mask).is_none() {
                c.bytes += size;
            }
        }
    }

    /// Approximate memory held by the compiled grammar and its caches.
    pub fn memory_bytes(&self) -> usize {
        let parts: usize = self
            .partitions
            .iter()
            .filter_map(|p| p.get())
            .map(|p| p.accept.heap_bytes() + p.frontier.len() * 8)
            .sum();
        let cache = self.mask_cache.lock().map(|c| c.bytes).unwrap_or(0);
        self.automaton.memory_bytes() + parts + cache + self.partitions.len() * 8
    }
}
