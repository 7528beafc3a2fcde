//! A fixed-size bitset in 32-bit words, the layout of a token bitmask row.

/// Whether byte `b` is in the byte set `set` (bit `b % 64` of word
/// `b / 64`; a set of two words holds ASCII bytes only).
#[inline]
pub fn has_byte(set: &[u64], b: u8) -> bool {
    set.get(b as usize / 64).is_some_and(|w| w >> (b % 64) & 1 == 1)
}

/// How many bits of `words` are set.
///
/// Why not `count_ones` alone: the crate is built for baseline x86-64,
/// which has no `popcnt` instruction, and the portable count costs about
/// a dozen instructions a word — a cold mask's 4,008 words (Llama-3) took
/// 10 µs to count, three times over when it was stored. Every x86-64 CPU
/// since 2008 has the instruction; it is used where the CPU says so.
#[inline]
pub fn count_bits(words: &[u32]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has `popcnt`, checked just above.
        return unsafe { count_bits_popcnt(words) };
    }
    count_bits_portable(words)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn count_bits_popcnt(words: &[u32]) -> usize {
    count_bits_portable(words)
}

/// How many bytes a 256-bit byte set holds ([`count_bits`]'s `popcnt`,
/// for the byte sets of automaton states: a partition walk counts the
/// bytes of every class of every state it meets).
#[inline]
pub fn count_bytes(set: &[u64; 4]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has `popcnt`, checked just above.
        return unsafe { count_bytes_popcnt(set) };
    }
    set.iter().map(|w| w.count_ones()).sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn count_bytes_popcnt(set: &[u64; 4]) -> u32 {
    set.iter().map(|w| w.count_ones()).sum()
}

#[inline(always)]
fn count_bits_portable(words: &[u32]) -> usize {
    let pairs = words.chunks_exact(2);
    let rest: usize = pairs.remainder().iter().map(|w| w.count_ones() as usize).sum();
    rest + pairs.map(|p| ((p[0] as u64) | (p[1] as u64) << 32).count_ones() as usize).sum::<usize>()
}

/// Bits `0..len`, stored little-endian in `u32` words (bit `i` is bit
/// `i % 32` of word `i / 32`), exactly like one row of the int32 bitmask.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bitset {
    pub words: Vec<u32>,
    pub len: usize,
}

impl Bitset {
    pub fn new(len: usize) -> Self {
        Bitset { words: vec![0; len.div_ceil(32)], len }
    }
    #[inline(always)]
    pub fn set(&mut self, i: usize) {
        self.words[i >> 5] |= 1 << (i & 31);
    }
    #[inline(always)]
    pub fn get(&self, i: usize) -> bool {
        self.words[i >> 5] >> (i & 31) & 1 != 0
    }
    /// `self |= other` (other may be shorter).
    #[inline]
    pub fn or_with(&mut self, other: &[u32]) {
        for (a, b) in self.words.iter_mut().zip(other) {
            *a |= *b;
        }
    }
    pub fn count(&self) -> usize {
        count_bits(&self.words)
    }
    /// The number of set bits when it is below `n`; else some number of at
    /// least `n`, counting 64 words at a time and stopping once there are
    /// (a dense mask is told after a few chunks, and a sparse one's count
    /// serves [`Bitset::ones_counted`]).
    pub fn count_until(&self, n: usize) -> usize {
        let mut seen = 0;
        for chunk in self.words.chunks(64) {
            seen += count_bits(chunk);
            if seen >= n {
                return seen;
            }
        }
        seen
    }
    pub fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }
    /// Sets every bit in `0..n`.
    pub fn set_prefix(&mut self, n: usize) {
        let full = n / 32;
        for w in &mut self.words[..full] {
            *w = u32::MAX;
        }
        if n % 32 != 0 {
            self.words[full] |= (1u32 << (n % 32)) - 1;
        }
    }
    /// Indices of set bits as a list, allocated once at its exact size
    /// (collecting [`Bitset::iter_ones`] grew the list a dozen times; a
    /// cold mask of 3,000 tokens spent a sixth of its time there).
    pub fn ones(&self) -> Vec<u32> {
        self.ones_counted(self.count())
    }
    /// [`Bitset::ones`] of a bitset known to hold `count` bits (a pass
    /// over the words fewer: a sparse mask is counted to be told sparse).
    pub fn ones_counted(&self, count: usize) -> Vec<u32> {
        fn push_ones(out: &mut Vec<u32>, words: &[u32], base: usize) {
            for (k, w) in words.iter().enumerate() {
                let mut w = *w;
                while w != 0 {
                    out.push((base + k * 32) as u32 + w.trailing_zeros());
                    w &= w - 1;
                }
            }
        }
        let mut out = Vec::with_capacity(count);
        // A sparse mask is mostly zero words: 16 are skipped with one test,
        // and the others are read 64 bits at a time.
        let chunks = self.words.chunks_exact(16);
        let rest = chunks.remainder();
        for (ci, chunk) in chunks.enumerate() {
            if chunk.iter().fold(0, |a, w| a | w) == 0 {
                continue;
            }
            for (pi, pair) in chunk.chunks_exact(2).enumerate() {
                let mut w = pair[0] as u64 | (pair[1] as u64) << 32;
                while w != 0 {
                    out.push((ci * 512 + pi * 64) as u32 + w.trailing_zeros());
                    w &= w - 1;
                }
            }
        }
        push_ones(&mut out, rest, (self.words.len() - rest.len()) * 32);
        out
    }
    /// Indices of set bits.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    None
                } else {
                    let b = w.trailing_zeros() as usize;
                    w &= w - 1;
                    Some(wi * 32 + b)
                }
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_until_agrees_with_count() {
        let mut b = Bitset::new(10_000);
        for i in (0..10_000).step_by(7) {
            b.set(i);
        }
        let n = b.count();
        assert_eq!(n, 1_429);
        assert!(b.count_until(n) >= n);
        assert_eq!(b.count_until(n + 1), n);
        assert!(b.count_until(100) >= 100);
    }

    #[test]
    fn ones_lists_every_set_bit_in_order() {
        let mut b = Bitset::new(1_000);
        for i in [0, 31, 32, 63, 500, 511, 512, 543, 999] {
            b.set(i);
        }
        assert_eq!(b.ones(), vec![0, 31, 32, 63, 500, 511, 512, 543, 999]);
        assert_eq!(b.ones().capacity(), 9);
        assert_eq!(b.ones(), b.iter_ones().map(|i| i as u32).collect::<Vec<_>>());
    }

    #[test]
    fn count_bits_agrees_with_the_portable_count() {
        let words: Vec<u32> = (0..1_001u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let expected: usize = words.iter().map(|w| w.count_ones() as usize).sum();
        assert_eq!(count_bits(&words), expected);
        assert_eq!(count_bits_portable(&words), expected);
        assert_eq!(count_bits(&words[..1]), words[0].count_ones() as usize);
        assert_eq!(count_bits(&[]), 0);
        let set = [u64::MAX, 1, 0, 1 << 63];
        assert_eq!(count_bytes(&set), 66);
    }
}
