//! Character-level regular expressions: the decoded content of JSON strings
//! (patterns, formats, key languages) and the text of numbers, before JSON
//! escaping turns them into grammar expressions.
//!
//! Constructors simplify as they build (flattening, merging character
//! classes, dropping ε and ∅) so that languages assembled from many pieces
//! stay small.

/// Unicode scalar values (surrogates excluded everywhere: JSON text cannot
/// carry them decoded).
pub const SCALARS: [(u32, u32); 2] = [(0, 0xD7FF), (0xE000, 0x10FFFF)];

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Re {
    /// No string.
    Nothing,
    /// The empty string.
    Empty,
    /// One character from a normalized, non-empty set of inclusive ranges.
    Chars(Vec<(u32, u32)>),
    /// Concatenation of at least two non-trivial parts.
    Seq(Vec<Re>),
    /// Alternation of at least two distinct parts (at most one `Chars`).
    Alt(Vec<Re>),
    /// `min..=max` copies (`None`: unbounded).
    Repeat(Box<Re>, u32, Option<u32>),
    /// Zero-width assertion: start of the string (ECMA `^`).
    Start,
    /// Zero-width assertion: end of the string (ECMA `$`).
    End,
}

/// A list without repeats. Short lists compare directly (unequal items
/// usually differ at their first node); from [`Unique::HASHED_FROM`] items on,
/// by hash: an alternation of thousands of `enum` members would otherwise
/// compare every pair.
pub(crate) struct Unique<T> {
    pub items: Vec<T>,
    index: rustc_hash::FxHashMap<u64, Vec<u32>>,
}

impl<T: std::hash::Hash + Eq> Unique<T> {
    const HASHED_FROM: usize = 16;

    pub fn with_capacity(n: usize) -> Unique<T> {
        Unique { items: Vec::with_capacity(n), index: Default::default() }
    }

    fn hash(x: &T) -> u64 {
        use std::hash::Hasher;
        let mut h = rustc_hash::FxHasher::default();
        x.hash(&mut h);
        h.finish()
    }

    /// Appends `x` unless an equal item is already there.
    pub fn push(&mut self, x: T) {
        if self.items.len() < Self::HASHED_FROM {
            if !self.items.contains(&x) {
                self.items.push(x);
            }
            return;
        }
        if self.index.is_empty() {
            for (i, y) in self.items.iter().enumerate() {
                self.index.entry(Self::hash(y)).or_default().push(i as u32);
            }
        }
        let bucket = self.index.entry(Self::hash(&x)).or_default();
        if bucket.iter().any(|&i| self.items[i as usize] == x) {
            return;
        }
        bucket.push(self.items.len() as u32);
        self.items.push(x);
    }
}

/// Sorts and merges ranges, and removes surrogates.
pub fn norm_ranges(mut r: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    r.retain(|(a, b)| a <= b);
    r.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(r.len());
    for (a, b) in r {
        match out.last_mut() {
            Some(l) if a <= l.1.saturating_add(1) => l.1 = l.1.max(b),
            _ => out.push((a, b)),
        }
    }
    // Cut the surrogate block out.
    let mut res = Vec::with_capacity(out.len() + 1);
    for (a, b) in out {
        let b = b.min(0x10FFFF);
        if a > b {
            continue;
        }
        if b < 0xD800 || a > 0xDFFF {
            res.push((a, b));
        } else {
            if a < 0xD800 {
                res.push((a, 0xD7FF));
            }
            if b > 0xDFFF {
                res.push((0xE000, b));
            }
        }
    }
    res
}

/// Complement within the scalar values.
pub fn complement_ranges(r: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let r = norm_ranges(r.to_vec());
    let mut out = Vec::new();
    let mut next = 0u32;
    for (a, b) in r {
        if a > next {
            out.push((next, a - 1));
        }
        next = b + 1;
    }
    if next <= 0x10FFFF {
        out.push((next, 0x10FFFF));
    }
    norm_ranges(out)
}

pub fn intersect_ranges(a: &[(u32, u32)], b: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if lo <= hi {
            out.push((lo, hi));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

pub fn subtract_ranges(a: &[(u32, u32)], b: &[(u32, u32)]) -> Vec<(u32, u32)> {
    intersect_ranges(a, &complement_ranges(b))
}

impl Re {
    pub fn chars(r: Vec<(u32, u32)>) -> Re {
        let r = norm_ranges(r);
        if r.is_empty() {
            Re::Nothing
        } else {
            Re::Chars(r)
        }
    }

    pub fn char(c: char) -> Re {
        Re::Chars(vec![(c as u32, c as u32)])
    }

    pub fn any_char() -> Re {
        Re::Chars(SCALARS.to_vec())
    }

    /// Any string.
    pub fn any() -> Re {
        Re::star(Re::any_char())
    }

    pub fn lit(s: &str) -> Re {
        Re::seq(s.chars().map(Re::char).collect())
    }

    pub fn seq(items: Vec<Re>) -> Re {
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            match it {
                Re::Nothing => return Re::Nothing,
                Re::Empty => {}
                Re::Seq(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        match out.len() {
            0 => Re::Empty,
            1 => out.pop().unwrap(),
            _ => Re::Seq(out),
        }
    }

    pub fn alt(items: Vec<Re>) -> Re {
        let mut out: Unique<Re> = Unique::with_capacity(items.len());
        let mut chars: Vec<(u32, u32)> = Vec::new();
        let mut stack: Vec<Re> = items;
        stack.reverse();
        while let Some(it) = stack.pop() {
            match it {
                Re::Nothing => {}
                Re::Chars(r) => chars.extend(r),
                Re::Alt(inner) => {
                    for x in inner.into_iter().rev() {
                        stack.push(x);
                    }
                }
                other => {
                    out.push(other);
                }
            }
        }
        let mut out = out.items;
        if !chars.is_empty() {
            out.insert(0, Re::Chars(norm_ranges(chars)));
        }
        // ε | x+  =  x*
        if out.len() == 2 && out.contains(&Re::Empty) {
            // Moved, not cloned: along a chain of such nodes a clone would
            // copy the whole subtree at every level.
            let i = out.iter().position(|x| *x != Re::Empty).unwrap();
            return Re::opt(out.swap_remove(i));
        }
        match out.len() {
            0 => Re::Nothing,
            1 => out.pop().unwrap(),
            _ => Re::Alt(out),
        }
    }

    pub fn repeat(r: Re, min: u32, max: Option<u32>) -> Re {
        if let Some(m) = max {
            if m < min {
                return Re::Nothing;
            }
            if m == 0 {
                return Re::Empty;
            }
        }
        match r {
            Re::Nothing => {
                if min == 0 {
                    Re::Empty
                } else {
                    Re::Nothing
                }
            }
            Re::Empty => Re::Empty,
            _ if min == 1 && max == Some(1) => r,
            // (x*)* = x*, (x*)? = x*, (x+)* = x*, (x?)* = x*
            Re::Repeat(inner, imin, None) if min <= 1 && imin <= 1 && (max.is_none() || imin == 0) => {
                Re::Repeat(inner, if min == 1 && imin == 1 { 1 } else { 0 }, None)
            }
            Re::Repeat(inner, 0, Some(1)) if min == 0 && max.is_none() => Re::Repeat(inner, 0, None),
            r => Re::Repeat(Box::new(r), min, max),
        }
    }

    pub fn star(r: Re) -> Re {
        Re::repeat(r, 0, None)
    }

    pub fn plus(r: Re) -> Re {
        Re::repeat(r, 1, None)
    }

    pub fn opt(r: Re) -> Re {
        match r {
            Re::Repeat(inner, 1, None) => Re::Repeat(inner, 0, None),
            r @ Re::Repeat(_, 0, _) => r,
            Re::Empty => Re::Empty,
            r => Re::repeat(r, 0, Some(1)),
        }
    }

    /// Number of nodes, counting repetition bodies once per copy the engine
    /// would expand (bounded repeats are unrolled downstream).
    pub fn cost(&self) -> u64 {
        match self {
            Re::Nothing | Re::Empty | Re::Start | Re::End => 1,
            Re::Chars(r) => 1 + r.len() as u64 / 8,
            Re::Seq(v) | Re::Alt(v) => 1 + v.iter().map(|x| x.cost()).sum::<u64>(),
            Re::Repeat(x, min, max) => {
                let copies = max.unwrap_or(*min).max(*min).max(1) as u64;
                1 + x.cost().saturating_mul(copies)
            }
        }
    }

    /// Whether the language contains the empty string (assertions count as
    /// satisfied).
    pub fn nullable(&self) -> bool {
        match self {
            Re::Nothing | Re::Chars(_) => false,
            Re::Empty | Re::Start | Re::End => true,
            Re::Seq(v) => v.iter().all(|x| x.nullable()),
            Re::Alt(v) => v.iter().any(|x| x.nullable()),
            Re::Repeat(x, min, _) => *min == 0 || x.nullable(),
        }
    }

    pub fn has_assertions(&self) -> bool {
        match self {
            Re::Start | Re::End => true,
            Re::Seq(v) | Re::Alt(v) => v.iter().any(|x| x.has_assertions()),
            Re::Repeat(x, _, _) => x.has_assertions(),
            _ => false,
        }
    }

    /// Whether the whole of `s` is in the language. Simulates the
    /// expression over the set of positions it can reach, with no
    /// automaton: cheap for short strings such as property names, where
    /// building a DFA of a large pattern costs milliseconds.
    pub fn matches(&self, s: &str) -> bool {
        let text: Vec<u32> = s.chars().map(|c| c as u32).collect();
        let mut from = vec![false; text.len() + 1];
        from[0] = true;
        self.reach(&text, &from)[text.len()]
    }

    /// The positions reachable by matching `self` from any of `from`.
    fn reach(&self, text: &[u32], from: &[bool]) -> Vec<bool> {
        let n = text.len();
        match self {
            Re::Nothing => vec![false; n + 1],
            Re::Empty => from.to_vec(),
            Re::Start | Re::End => {
                let at = if matches!(self, Re::Start) { 0 } else { n };
                let mut out = vec![false; n + 1];
                out[at] = from[at];
                out
            }
            Re::Chars(r) => {
                let mut out = vec![false; n + 1];
                for p in 0..n {
                    out[p + 1] = from[p] && r.iter().any(|&(a, b)| a <= text[p] && text[p] <= b);
                }
                out
            }
            Re::Seq(v) => v.iter().fold(from.to_vec(), |cur, x| if cur.iter().any(|&b| b) { x.reach(text, &cur) } else { cur }),
            Re::Alt(v) => {
                let mut out = vec![false; n + 1];
                for x in v {
                    for (o, r) in out.iter_mut().zip(x.reach(text, from)) {
                        *o |= r;
                    }
                }
                out
            }
            Re::Repeat(x, min, max) => {
                // Stops at a fixpoint or when nothing is left: a body that
                // consumes empties the set within n + 1 steps, so large
                // bounds cost no more than the text is long.
                let mut cur = from.to_vec();
                for _ in 0..*min {
                    if !cur.iter().any(|&b| b) {
                        break;
                    }
                    let next = x.reach(text, &cur);
                    if next == cur {
                        break;
                    }
                    cur = next;
                }
                let mut acc = cur.clone();
                let mut extra = max.map(|m| m - min);
                while extra != Some(0) && cur.iter().any(|&b| b) {
                    cur = x.reach(text, &cur);
                    let mut grew = false;
                    for (a, &c) in acc.iter_mut().zip(&cur) {
                        grew |= c && !*a;
                        *a |= c;
                    }
                    if !grew {
                        break;
                    }
                    extra = extra.map(|e| e - 1);
                }
                acc
            }
        }
    }

    /// A short string of the language when one is easy to build (first
    /// alternatives, fewest repetitions, assertions ignored: callers check
    /// it with [`Re::matches`]).
    pub fn example(&self) -> Option<String> {
        Some(match self {
            Re::Nothing => return None,
            Re::Empty | Re::Start | Re::End => String::new(),
            Re::Chars(r) => {
                // A lowercase letter when the set has one: keys read better.
                let c = r.iter().find(|&&(a, b)| a <= 0x7a && b >= 0x61).map_or(r[0].0, |&(a, _)| a.max(0x61));
                char::from_u32(c)?.to_string()
            }
            Re::Seq(v) => v.iter().map(Re::example).collect::<Option<String>>()?,
            Re::Alt(v) => return v.iter().find_map(Re::example),
            Re::Repeat(x, min, _) => {
                if *min > 64 {
                    return None;
                }
                x.example()?.repeat(*min as usize)
            }
        })
    }

    /// The characters every string of the language starts with.
    pub fn literal_prefix(&self) -> String {
        let mut out = String::new();
        let items: &[Re] = match self {
            Re::Seq(v) => v,
            other => std::slice::from_ref(other),
        };
        for x in items {
            match x {
                Re::Start => {}
                Re::Chars(r) if r.len() == 1 && r[0].0 == r[0].1 => match char::from_u32(r[0].0) {
                    Some(c) => out.push(c),
                    None => break,
                },
                Re::Seq(_) => {
                    let inner = x.literal_prefix();
                    let n = inner.chars().count() as u64;
                    let whole = x.len_bounds() == Some((n, Some(n)));
                    out.push_str(&inner);
                    if !whole {
                        break;
                    }
                }
                _ => break,
            }
        }
        out
    }

    /// Shortest and longest string lengths in characters (`None`: unbounded);
    /// `None` overall for the empty language.
    pub fn len_bounds(&self) -> Option<(u64, Option<u64>)> {
        match self {
            Re::Nothing => None,
            Re::Empty | Re::Start | Re::End => Some((0, Some(0))),
            Re::Chars(_) => Some((1, Some(1))),
            Re::Seq(v) => {
                let mut lo = 0u64;
                let mut hi = Some(0u64);
                for x in v {
                    let (a, b) = x.len_bounds()?;
                    lo = lo.saturating_add(a);
                    hi = match (hi, b) {
                        (Some(h), Some(b)) => Some(h.saturating_add(b)),
                        _ => None,
                    };
                }
                Some((lo, hi))
            }
            Re::Alt(v) => {
                let mut res: Option<(u64, Option<u64>)> = None;
                for x in v {
                    if let Some((a, b)) = x.len_bounds() {
                        res = Some(match res {
                            None => (a, b),
                            Some((lo, hi)) => (lo.min(a), match (hi, b) {
                                (Some(h), Some(b)) => Some(h.max(b)),
                                _ => None,
                            }),
                        });
                    }
                }
                res
            }
            Re::Repeat(x, min, max) => match x.len_bounds() {
                None => {
                    if *min == 0 {
                        Some((0, Some(0)))
                    } else {
                        None
                    }
                }
                Some((a, b)) => {
                    let lo = a.saturating_mul(*min as u64);
                    let hi = match (b, max) {
                        (Some(0), _) => Some(0),
                        (Some(b), Some(m)) => Some(b.saturating_mul(*m as u64)),
                        _ => None,
                    };
                    Some((lo, hi))
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_simplify() {
        assert_eq!(Re::alt(vec![Re::char('a'), Re::char('b'), Re::Nothing]), Re::Chars(vec![(97, 98)]));
        assert_eq!(Re::seq(vec![Re::Empty, Re::char('a')]), Re::char('a'));
        assert_eq!(Re::seq(vec![Re::Nothing, Re::char('a')]), Re::Nothing);
        assert_eq!(Re::star(Re::star(Re::char('a'))), Re::star(Re::char('a')));
        assert_eq!(Re::alt(vec![Re::Empty, Re::lit("ab")]), Re::opt(Re::lit("ab")));
        assert_eq!(norm_ranges(vec![(0xD000, 0xE100)]), vec![(0xD000, 0xD7FF), (0xE000, 0xE100)]);
        assert_eq!(complement_ranges(&SCALARS), vec![]);
        assert_eq!(Re::lit("abc").len_bounds(), Some((3, Some(3))));
    }

    #[test]
    fn matching_without_an_automaton() {
        let digits = Re::repeat(Re::chars(vec![(0x30, 0x39)]), 2, Some(4));
        let r = Re::seq(vec![Re::Start, Re::lit("id_"), digits, Re::End]);
        assert!(r.matches("id_12") && r.matches("id_1234") && !r.matches("id_1") && !r.matches("id_12345") && !r.matches("xid_12"));
        assert!(Re::repeat(Re::opt(Re::char('a')), 10000, None).matches("aaa"));
        assert!(!Re::repeat(Re::char('a'), 10000, None).matches("aaa"));
        assert!(Re::seq(vec![Re::any(), Re::End, Re::any()]).matches("abc"));
        assert!(!Re::seq(vec![Re::char('a'), Re::Start]).matches("a"));
        assert_eq!(r.example().as_deref(), Some("id_00"));
        assert_eq!(r.literal_prefix(), "id_");
        assert_eq!(Re::seq(vec![Re::any(), Re::lit("x")]).literal_prefix(), "");
    }
}

#[cfg(test)]
mod matching_agrees_with_automata {
    use proptest::prelude::*;

    use super::Re;
    use crate::automata::Dfa;

    /// Small expressions over `a`, `b`, `c` with assertions and bounded
    /// and unbounded repeats.
    fn re() -> impl Strategy<Value = Re> {
        let leaf = prop_oneof![
            Just(Re::char('a')),
            Just(Re::char('b')),
            Just(Re::chars(vec![(0x61, 0x63)])),
            Just(Re::Empty),
            Just(Re::Start),
            Just(Re::End),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 2..4).prop_map(Re::seq),
                prop::collection::vec(inner.clone(), 2..4).prop_map(Re::alt),
                (inner, 0u32..3, prop::option::of(0u32..3)).prop_map(|(x, lo, hi)| Re::repeat(x, lo, hi.map(|h| lo + h))),
            ]
        })
    }

    proptest! {
        #[test]
        fn matches_is_the_automaton_language(r in re(), s in "[abc]{0,6}") {
            let d = Dfa::from_re(&r).unwrap();
            prop_assert_eq!(r.matches(&s), d.matches(&s), "{:?} on {:?}", r, s);
            if let Some(e) = r.example() {
                prop_assert_eq!(r.matches(&e), d.matches(&e));
            }
            let p = r.literal_prefix();
            prop_assert!(!d.matches(&s) || s.starts_with(&p), "{:?} has prefix {:?} but accepts {:?}", r, p, s);
        }
    }
}
