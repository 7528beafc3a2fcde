//! Computing the next-token mask of a parser state.
//!
//! mask(state) = token-level edges of its items
//!             ∪ for every item: partition(item.state).accept
//!                               ∪ walk of each frontier subtree with the item's continuation
//!             ∪ stop tokens, when the start rule can finish.
//! Items are independent alternatives, so the union over items is exact.

use crate::automaton::flags;
use crate::bitset::Bitset;
use crate::compiled::CompiledGrammar;
use crate::error::EngineError;
use crate::parser::{closure, scan_byte, Arena, Item, ItemSet, Scratch};

/// A mask kept in a cache: a sorted id list when sparse, dense words when not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredMask {
    Ids(Vec<u32>),
    Dense(Vec<u32>),
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

    /// From a dense bitset.
    pub fn from_bitset(b: &Bitset) -> StoredMask {
        let count = b.count();
        if count < b.words.len() {
            StoredMask::Ids(b.iter_ones().map(|i| i as u32).collect())
        } else {
            StoredMask::Dense(b.words.clone())
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
            StoredMask::Dense(w) => {
                let n = w.len().min(out.len());
                out[..n].copy_from_slice(&w[..n]);
                out[n..].fill(0);
            }
        }
    }

    pub fn heap_bytes(&self) -> usize {
        match self {
            StoredMask::Ids(v) | StoredMask::Dense(v) => v.len() * 4,
        }
    }
}

/// Buffers reused from one mask computation to the next.
#[derive(Default, Debug)]
pub struct MaskWalker {
    frames: Vec<Frame>,
    buf: Vec<Item>,
    seeds: Vec<Item>,
    next: Vec<Item>,
    /// Closures of frontier states for the item being processed.
    memo: Vec<(crate::automaton::StateId, Vec<Item>)>,
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    end: u32,
    start: u32,
    len: u32,
}

impl MaskWalker {
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
        for it in &set.items {
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
            if a.byte_set[it.state as usize] == [0; 4] {
                continue;
            }
            let part = g.partition(it.state);
            part.accept.or_into(&mut bits.words);
            // Many frontier nodes reach the same state (every token with a
            // closing quote, say): close each state once per item.
            let mark = arena.mark();
            self.memo.clear();
            for &(node, t) in &part.frontier {
                for &tok in v.tokens_at(node as usize) {
                    bits.set(tok as usize);
                }
                if v.nodes[node as usize].end <= node + 1 {
                    continue;
                }
                let slot = match self.memo.iter().position(|(s, _)| *s == t) {
                    Some(k) => k,
                    None => {
                        self.seeds.clear();
                        self.seeds.push(Item { state: t, cont: it.cont });
                        let mut items = Vec::new();
                        closure(a, arena, &self.seeds, &mut items, sc)?;
                        self.memo.push((t, items));
                        self.memo.len() - 1
                    }
                };
                let items = std::mem::take(&mut self.memo[slot].1);
                if !items.is_empty() {
                    self.walk_subtree(g, arena, sc, node as usize, &items, bits)?;
                }
                self.memo[slot].1 = items;
            }
            arena.truncate(mark);
        }
        if set.can_end {
            bits.or_with(&v.stop_bits.words);
        }
        Ok(())
    }

    /// Marks every token in the subtree below `root` (exclusive) that the
    /// items `root_items` (the state after `root`'s bytes) accept.
    fn walk_subtree(
        &mut self,
        g: &CompiledGrammar,
        arena: &mut Arena,
        sc: &mut Scratch,
        root: usize,
        root_items: &[Item],
        bits: &mut Bitset,
    ) -> Result<(), EngineError> {
        let a = &g.automaton;
        let v = &*g.vocab;
        let nodes = &v.nodes;
        let end = nodes[root].end;
        self.frames.clear();
        self.buf.clear();
        self.buf.extend_from_slice(root_items);
        self.frames.push(Frame { end, start: 0, len: root_items.len() as u32 });
        let mut marks = vec![arena.mark()];
        let mut i = root + 1;
        while (i as u32) < end {
            while i as u32 >= self.frames.last().unwrap().end {
                let f = self.frames.pop().unwrap();
                self.buf.truncate(f.start as usize);
                arena.truncate(marks.pop().unwrap());
            }
            let f = *self.frames.last().unwrap();
            let node = nodes[i];
            scan_byte(a, &self.buf[f.start as usize..(f.start + f.len) as usize], node.byte, &mut self.seeds);
            if self.seeds.is_empty() {
                i = node.end as usize;
                continue;
            }
            for &tok in v.tokens_at(i) {
                bits.set(tok as usize);
            }
            if node.end as usize > i + 1 {
                let mark = arena.mark();
                closure(a, arena, &self.seeds, &mut self.next, sc)?;
                if self.next.is_empty() {
                    arena.truncate(mark);
                    i = node.end as usize;
                    continue;
                }
                let start = self.buf.len() as u32;
                self.buf.extend_from_slice(&self.next);
                self.frames.push(Frame { end: node.end, start, len: self.next.len() as u32 });
                marks.push(mark);
            }
            i += 1;
        }
        while let Some(m) = marks.pop() {
            if marks.is_empty() {
                arena.truncate(m);
            }
        }
        self.frames.clear();
        self.buf.clear();
        Ok(())
    }
}
