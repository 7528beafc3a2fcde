//! A grammar compiled against a vocabulary, with its lazily built caches.
//!
//! [`CompiledGrammar::compile`] only builds the automaton (cost proportional
//! to the grammar, independent of the vocabulary); [`CompiledGrammar::prepare`]
//! then computes the start's mask. Everything that depends on the
//! vocabulary is computed on first use and shared by all matchers:
//! - a per-DFA-state *partition* of the vocabulary: tokens a state accepts
//!   on its own bytes whatever the stack holds, plus the trie nodes where the
//!   answer depends on the stack (see [`Partition`]; shared with every other
//!   grammar compiled for the same vocabulary through [`crate::partition`]);
//! - a cache of whole masks keyed by the canonical hash of a parser state
//!   (the start's mask put there by [`CompiledGrammar::prepare`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use formcast_grammar::Grammar;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::automaton::{build_automaton, Automaton, AutomatonLimits, StateId};
use crate::error::EngineError;
use crate::limits::Budget;
use crate::mask::StoredMask;
use crate::partition::{build_class_covers, derive_partition, partition_of, reference_state, Partition, SkipMemo};
use crate::vocab_index::VocabIndex;

/// Options for compilation.
#[derive(Debug, Clone)]
pub struct CompileOptions {
    pub automaton: AutomatonLimits,
    /// Byte budget of the per-grammar mask cache.
    pub mask_cache_bytes: usize,
    /// Texts from the grammar's start after which [`CompiledGrammar::prepare`]
    /// computes the mask, each a place that nearly every document of the
    /// grammar passes (the built-in JSON grammar's first key and values,
    /// see `formcast_grammar::json::BUILTIN_JSON_PREPARED`). A text the
    /// start does not take is passed over.
    pub prepare_texts: Vec<Vec<u8>>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions { automaton: AutomatonLimits::default(), mask_cache_bytes: 64 << 20, prepare_texts: Vec::new() }
    }
}

pub(crate) struct MaskCache {
    map: FxHashMap<u128, Arc<StoredMask>>,
    bytes: usize,
    limit: usize,
}

/// States per chunk of partition slots.
const PARTITION_CHUNK: usize = 256;

/// The partition slots of [`PARTITION_CHUNK`] consecutive states.
type PartitionChunk = Box<[OnceLock<Arc<Partition>>]>;

/// A grammar ready for matching against one vocabulary.
pub struct CompiledGrammar {
    pub automaton: Automaton,
    pub vocab: Arc<VocabIndex>,
    /// Partition slots by state, in chunks of [`PARTITION_CHUNK`] made on
    /// first use: masks visit few of a grammar's states, and a slot for
    /// every state was 16 bytes a state of every grammar a compiler keeps
    /// (fresh memory, a page fault per 4 KiB, at compile time).
    partitions: Vec<OnceLock<PartitionChunk>>,
    /// Bytes of the partitions (and slot chunks) filled so far, kept as
    /// they are filled so that [`Self::memory_bytes`] is O(1): a compiler
    /// cache asks it of every grammar it holds.
    partition_bytes: AtomicUsize,
    skips: SkipMemo,
    /// Per state, the fewest bytes to finish its rule ([`crate::completion`]).
    completion_dist: OnceLock<Vec<u32>>,
    pub(crate) mask_cache: Mutex<MaskCache>,
    /// Free-text bytes of parser sets found by mask walks, for the next
    /// (see [`crate::mask::KnownLoops`]).
    pub(crate) known_loops: crate::mask::KnownLoops,
    /// What walks down free-text covers' skeletons took, for the next
    /// (see [`crate::mask::KnownSkeletons`]).
    pub(crate) known_skeletons: Mutex<crate::mask::KnownSkeletons>,
    /// The triggers of the grammar's text dispatches (structural tags'
    /// `triggered_tags`), whose prefixes' masks [`Self::prepare`] computes.
    trigger_texts: Vec<Vec<u8>>,
    /// [`CompileOptions::prepare_texts`], whose masks [`Self::prepare`] computes.
    prepare_texts: Vec<Vec<u8>>,
}

/// Most masks inside triggers that [`CompiledGrammar::prepare`] computes
/// (about 60 µs each, less as the grammar's caches fill: `<tool_call>`'s
/// eleven took 0.65 ms on Llama-3).
const TRIGGER_PREFIX_MASKS_MAX: usize = 16;

impl std::fmt::Debug for CompiledGrammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGrammar")
            .field("states", &self.automaton.n_states())
            .field("rules", &self.automaton.rule_start.len())
            .finish()
    }
}

/// Fills `row` with `m`'s mask after `text`, taken from `m`'s state as one
/// string, into the grammar's mask cache, then takes the text back:
/// `Some(false)` where `m` does not take the text (its state unchanged),
/// `None` where `m` can go no further (a fill or the rollback failed).
fn mask_after(m: &mut crate::matcher::Matcher, text: &[u8], row: &mut [u32]) -> Option<bool> {
    if !matches!(m.accept_bytes(text), Ok(true)) {
        return Some(false);
    }
    let filled = m.fill_next_token_bitmask(row);
    (m.rollback(1).is_ok() && filled.is_ok()).then_some(true)
}

impl CompiledGrammar {
    /// Compiles `grammar` for `vocab`, within `timeout` when given.
    ///
    /// The front-ends validate what they build; a grammar built by hand is
    /// at least checked for depth here, since the passes below recurse
    /// over expressions.
    pub fn compile(
        grammar: &Grammar,
        vocab: Arc<VocabIndex>,
        opts: &CompileOptions,
        budget: &Budget,
    ) -> Result<CompiledGrammar, EngineError> {
        formcast_grammar::check_depth(grammar).map_err(|e| match e {
            formcast_grammar::GrammarError::Limit(m) => EngineError::Limit(m),
            other => EngineError::Front(other),
        })?;
        let automaton = build_automaton(grammar, &opts.automaton, budget)?;
        for set in &automaton.except_sets {
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
        let mut triggers: Vec<&[u8]> = Vec::new();
        for rule in &grammar.rules {
            rule.body.text_triggers(&mut triggers);
        }
        // A style with one trigger per tool repeats it per tool: keep the
        // first of each, in order (prepare computes the first few).
        let mut seen: FxHashSet<&[u8]> = FxHashSet::default();
        let trigger_texts: Vec<Vec<u8>> =
            triggers.into_iter().filter(|t| !t.is_empty() && seen.insert(t)).map(<[u8]>::to_vec).collect();
        let n = automaton.n_states();
        let skips = SkipMemo::default();
        Ok(CompiledGrammar {
            automaton,
            vocab,
            partitions: (0..n.div_ceil(PARTITION_CHUNK)).map(|_| OnceLock::new()).collect(),
            partition_bytes: AtomicUsize::new(0),
            skips,
            completion_dist: OnceLock::new(),
            mask_cache: Mutex::new(MaskCache { map: FxHashMap::default(), bytes: 0, limit: opts.mask_cache_bytes }),
            known_loops: Default::default(),
            known_skeletons: Default::default(),
            trigger_texts,
            prepare_texts: opts.prepare_texts.clone(),
        })
    }

    /// Convenience: compile with a plain timeout.
    pub fn compile_with_timeout(grammar: &Grammar, vocab: Arc<VocabIndex>, timeout: Option<Duration>) -> Result<Self, EngineError> {
        Self::compile(grammar, vocab, &CompileOptions::default(), &Budget::new(timeout, None))
    }

    /// Builds, on rayon's pool, the vocabulary's covers of the byte classes
    /// this grammar's patterns loop on (see
    /// [`crate::partition::build_class_covers`]), beside the first masks
    /// rather than inside the compile. A walk that needs a cover being
    /// built waits for it, which is never longer than building it itself.
    pub fn build_class_covers_in_background(self: &Arc<Self>) {
        let g = self.clone();
        rayon::spawn(move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| build_class_covers(&g.automaton, &g.vocab)));
        });
    }

    /// What a compile does once the grammar is shared, before it is handed
    /// out: starts the class covers on rayon's pool
    /// ([`Self::build_class_covers_in_background`]) and computes into the
    /// mask cache the mask at the grammar's start and, where the start is
    /// free text that triggers a tag, the masks inside each trigger's
    /// bytes (after `<`, `<t`, ... `<tool_call>`; at most
    /// [`TRIGGER_PREFIX_MASKS_MAX`]).
    ///
    /// Every matcher's first mask is then a cache lookup. The first mask is
    /// usually a document's slowest (every token that can open it, walked
    /// cold); a server compiles off its decoding step (SGLang and vLLM in
    /// a thread pool) but fills masks on it, where one slow row stalls the
    /// whole batch. The time to the first mask is unchanged: its walk moves
    /// from the first fill to the compile. A start the matcher cannot take
    /// (an error) is left for `Matcher::new` or the first fill to report,
    /// as they would without this.
    ///
    /// Inside a trigger, the parser state is the same whatever text came
    /// before it (the free text's state, the trigger's prefix, the same
    /// stack), so a mask computed here is the one every call of a tool
    /// meets; those were a tool-calling document's slowest masks after the
    /// first (60–130 µs each on Llama-3: free text, and the trigger's
    /// walk into the tag's body).
    ///
    /// Last, the masks after each of [`CompileOptions::prepare_texts`].
    pub fn prepare(self: &Arc<Self>) {
        self.build_class_covers_in_background();
        let mut row = vec![0u32; self.vocab.mask_words()];
        if let Ok(mut m) = crate::matcher::Matcher::new(self.clone(), false, Some(0)) {
            let _ = m.fill_next_token_bitmask(&mut row);
        }
        if !self.trigger_texts.is_empty() || !self.prepare_texts.is_empty() {
            self.prepare_masks_after_texts(&mut row);
        }
    }

    /// The masks inside the start's triggers, then after each of
    /// [`CompileOptions::prepare_texts`], from one matcher whose token
    /// budget counts each text once, as a model's token would. None where
    /// the matcher can go no further.
    fn prepare_masks_after_texts(self: &Arc<Self>, row: &mut [u32]) -> Option<()> {
        let mut m = crate::matcher::Matcher::new(self.clone(), false, Some(1)).ok()?;
        self.prepare_trigger_masks(&mut m, row)?;
        for text in &self.prepare_texts {
            mask_after(&mut m, text, row)?;
        }
        Some(())
    }

    /// The masks after each prefix of each trigger, taken from the start
    /// as one string, as far as the start takes them: a trigger reached
    /// only later in the grammar gets none. None where `m` can go no
    /// further.
    fn prepare_trigger_masks(&self, m: &mut crate::matcher::Matcher, row: &mut [u32]) -> Option<()> {
        let mut done: Vec<&[u8]> = Vec::new();
        for t in &self.trigger_texts {
            for k in 1..=t.len() {
                let prefix = &t[..k];
                if done.contains(&prefix) {
                    continue;
                }
                if done.len() == TRIGGER_PREFIX_MASKS_MAX || !mask_after(m, prefix, row)? {
                    break;
                }
                done.push(prefix);
            }
        }
        Some(())
    }

    /// Computes the partitions of the states met between whole ASCII
    /// characters (those a token boundary usually falls on), not every
    /// UTF-8 middle; `before` runs before each (a warm-up waits there for
    /// foreground work).
    pub fn partitions_between_ascii(&self, before: impl Fn()) {
        let a = &self.automaton;
        let mut seen = vec![false; a.n_states()];
        let mut todo: Vec<StateId> = a.rule_start.clone();
        while let Some(s) = todo.pop() {
            if s == crate::automaton::DEAD || std::mem::replace(&mut seen[s as usize], true) {
                continue;
            }
            before();
            self.partition(s);
            todo.extend((0x20u8..0x7f).map(|b| a.next(s, b)));
        }
    }

    /// The partition of state `s`, computed on first use.
    pub fn partition(&self, s: StateId) -> Arc<Partition> {
        let chunk = self.partitions[s as usize / PARTITION_CHUNK].get_or_init(|| {
            self.partition_bytes.fetch_add(PARTITION_CHUNK * std::mem::size_of::<OnceLock<Arc<Partition>>>(), Ordering::Relaxed);
            (0..PARTITION_CHUNK).map(|_| OnceLock::new()).collect()
        });
        chunk[s as usize % PARTITION_CHUNK]
            .get_or_init(|| {
                let p = match reference_state(&self.automaton, s, &self.skips) {
                    Some((r, diff)) => derive_partition(&self.automaton, &self.vocab, s, r, &self.partition(r), &diff, &self.skips),
                    None => partition_of(&self.automaton, &self.vocab, s, &self.skips),
                };
                self.partition_bytes.fetch_add(p.accept.heap_bytes() + p.frontier.len() * 8, Ordering::Relaxed);
                Arc::new(p)
            })
            .clone()
    }

    /// Per state, the fewest bytes that finish its rule (computed on first
    /// use; see [`crate::completion`]).
    pub fn completion_dist(&self) -> &[u32] {
        self.completion_dist.get_or_init(|| crate::completion::state_distances(&self.automaton))
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
                // Simple and predictable: start over when the budget is full
                // (the masks freed on the dropping thread, see `dropper`).
                crate::dropper::drop_elsewhere(std::mem::take(&mut c.map));
                c.bytes = 0;
            }
            if c.map.insert(key, mask).is_none() {
                c.bytes += size;
            }
        }
    }

    /// What mask walks may skip from DFA states (shared with the partition walks).
    pub(crate) fn skips(&self) -> &SkipMemo {
        &self.skips
    }

    /// Approximate memory held by the compiled grammar and its caches (O(1)).
    pub fn memory_bytes(&self) -> usize {
        let parts = self.partition_bytes.load(Ordering::Relaxed);
        let cache = self.mask_cache.lock().map(|c| c.bytes).unwrap_or(0);
        let dist = self.completion_dist.get().map_or(0, |d| d.len() * 4);
        let skeletons = self.known_skeletons.lock().map(|k| k.heap_bytes()).unwrap_or(0);
        self.automaton.memory_bytes() + parts + cache + dist + skeletons + self.partitions.len() * 16
    }
}
