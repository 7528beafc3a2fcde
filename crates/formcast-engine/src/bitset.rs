//! A fixed-size bitset in 32-bit words, the layout of a token bitmask row.

/// Whether byte `b` is in the byte set `set` (bit `b % 64` of word
/// `b / 64`; a set of two words holds ASCII bytes only).
#[inline]
pub fn has_byte(set: &[u64], b: u8) -> bool {
    set.get(b as usize / 64).is_some_and(|w| w >> (b % 64) & 1 == 1)
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
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
    /// Whether at least `n` bits are set, counting 64 words at a time and
    /// stopping once there are (a dense mask is told after a few chunks).
    pub fn count_reaches(&self, n: usize) -> bool {
        let mut seen = 0;
        for chunk in self.words.chunks(64) {
            seen += chunk.iter().map(|w| w.count_ones() as usize).sum::<usize>();
            if seen >= n {
                return true;
            }
        }
        false
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
    fn count_reaches_agrees_with_count() {
        let mut b = Bitset::new(10_000);
        for i in (0..10_000).step_by(7) {
            b.set(i);
        }
        let n = b.count();
        assert_eq!(n, 1_429);
        assert!(b.count_reaches(n));
        assert!(!b.count_reaches(n + 1));
        assert!(b.count_reaches(0));
    }
}
