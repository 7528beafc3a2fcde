//! Number languages: exact ranges, integrality and `multipleOf`, as regular
//! languages over number text.
//!
//! A constrained number is written in the canonical plain form: no
//! exponent, no `-0`, no trailing zeros in the fraction, no `.0` (`-1.5`,
//! `100`, `0.001`). Every value has exactly one such spelling, so comparing
//! with a bound digit by digit is a regular language of size proportional to
//! the bound's digit count (a bound like 1e300 costs 300 states, not 10^300),
//! and complements (`not`, `exclusive*`) are exact. Unconstrained numbers
//! keep the full JSON syntax (exponents, `1.0`...).

use crate::automata::{AutomatonError, Dfa};
use crate::decimal::Decimal;
use crate::re::Re;

/// A bound: the value and whether it is included.
pub type Bound = Option<(Decimal, bool)>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NumLang {
    All,
    Nothing,
    /// Values with no fractional part.
    Int,
    Range { lo: Bound, hi: Bound },
    MultipleOf(Decimal),
    Set(Vec<Decimal>),
    And(Vec<NumLang>),
    Or(Vec<NumLang>),
    Not(Box<NumLang>),
}

/// How a number is written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NumPiece {
    /// Any JSON number.
    Any,
    /// Any integer (`-?(0|[1-9][0-9]*)`).
    AnyInt,
    /// Text of a regular language over canonical forms.
    Text(Re),
    /// The same as an automaton (one grammar rule per state) when its
    /// regular expression would be too large (`multipleOf 7`...).
    Automaton(std::sync::Arc<Dfa>),
}

/// Largest automaton `multipleOf` may build (divisor × fraction digits).
const MAX_MOD_STATES: u64 = 20_000;

fn digits() -> Re {
    Re::chars(vec![(b'0' as u32, b'9' as u32)])
}

fn digit_range(lo: u8, hi: u8) -> Re {
    if lo > hi {
        Re::Nothing
    } else {
        Re::chars(vec![((b'0' + lo) as u32, (b'0' + hi) as u32)])
    }
}

fn nonzero_tail() -> Re {
    // \d*[1-9]
    Re::seq(vec![Re::star(digits()), digit_range(1, 9)])
}

/// `\.\d*[1-9]`: a canonical non-empty fraction.
fn frac() -> Re {
    Re::seq(vec![Re::char('.'), nonzero_tail()])
}

/// Canonical non-negative magnitudes: `0(\.frac)?` or `[1-9]\d*(\.frac)?`.
fn magnitude() -> Re {
    Re::seq(vec![
        Re::alt(vec![Re::char('0'), Re::seq(vec![digit_range(1, 9), Re::star(digits())])]),
        Re::opt(frac()),
    ])
}

/// All canonical number texts.
pub fn canonical() -> Re {
    Re::alt(vec![
        magnitude(),
        Re::seq(vec![Re::char('-'), Re::alt(vec![
            Re::seq(vec![Re::char('0'), frac()]),
            Re::seq(vec![digit_range(1, 9), Re::star(digits()), Re::opt(frac())]),
        ])]),
    ])
}

/// The full JSON number syntax.
pub fn json_number() -> Re {
    Re::seq(vec![
        Re::opt(Re::char('-')),
        Re::alt(vec![Re::char('0'), Re::seq(vec![digit_range(1, 9), Re::star(digits())])]),
        Re::opt(Re::seq(vec![Re::char('.'), Re::plus(digits())])),
        Re::opt(Re::seq(vec![Re::chars(vec![('e' as u32, 'e' as u32), ('E' as u32, 'E' as u32)]), Re::opt(Re::chars(vec![('+' as u32, '+' as u32), ('-' as u32, '-' as u32)])), Re::plus(digits())])),
    ])
}

pub fn json_integer() -> Re {
    Re::seq(vec![Re::opt(Re::char('-')), Re::alt(vec![Re::char('0'), Re::seq(vec![digit_range(1, 9), Re::star(digits())])])])
}

/// Integer part and fraction digits of a non-negative decimal.
fn split_parts(d: &Decimal) -> (Vec<u8>, Vec<u8>) {
    let s = d.abs().to_plain();
    let (i, f) = s.split_once('.').unwrap_or((&s, ""));
    (i.bytes().map(|b| b - b'0').collect(), f.bytes().map(|b| b - b'0').collect())
}

fn lit_digits(ds: &[u8]) -> Re {
    Re::seq(ds.iter().map(|&d| Re::char((b'0' + d) as char)).collect())
}

/// n-digit canonical integer parts strictly above (`above`) or below `a`.
fn same_len_cmp(a: &[u8], above: bool) -> Re {
    let n = a.len();
    let mut alts = Vec::new();
    for i in 0..n {
        let lead_min = if i == 0 && n > 1 { 1 } else { 0 };
        let r = if above { digit_range(a[i] + 1, 9) } else if a[i] == 0 { Re::Nothing } else { digit_range(lead_min, a[i] - 1) };
        alts.push(Re::seq(vec![lit_digits(&a[..i]), r, Re::repeat(digits(), (n - i - 1) as u32, Some((n - i - 1) as u32))]));
    }
    Re::alt(alts)
}

/// Canonical fraction suffixes (`""` or `.ddd`) whose value compares to
/// `0.f` as requested: `ge` for ≥ / >, else ≤ / <.
fn frac_cmp(f: &[u8], ge: bool, incl: bool) -> Re {
    if f.is_empty() {
        return match (ge, incl) {
            (true, true) => Re::opt(frac()),
            (true, false) => frac(),
            (false, true) => Re::Empty,
            (false, false) => Re::Nothing,
        };
    }
    fn ge_digits(f: &[u8], i: usize, incl: bool) -> Re {
        let bigger = Re::seq(vec![digit_range(f[i] + 1, 9), Re::opt(nonzero_tail())]);
        let equal = if i + 1 == f.len() {
            if incl { Re::opt(nonzero_tail()) } else { nonzero_tail() }
        } else {
            ge_digits(f, i + 1, incl)
        };
        Re::alt(vec![bigger, Re::seq(vec![Re::char((b'0' + f[i]) as char), equal])])
    }
    fn le_digits(f: &[u8], i: usize, incl: bool) -> Re {
        let mut alts = Vec::new();
        if f[i] > 1 {
            alts.push(Re::seq(vec![digit_range(1, f[i] - 1), Re::opt(nonzero_tail())]));
        }
        if f[i] > 0 {
            alts.push(Re::seq(vec![Re::char('0'), nonzero_tail()]));
        }
        let d = Re::char((b'0' + f[i]) as char);
        if i + 1 == f.len() {
            if incl {
                alts.push(d);
            }
        } else {
            let mut rest = vec![le_digits(f, i + 1, incl)];
            if f[i] != 0 {
                rest.push(Re::Empty);
            }
            alts.push(Re::seq(vec![d, Re::alt(rest)]));
        }
        Re::alt(alts)
    }
    if ge {
        Re::seq(vec![Re::char('.'), ge_digits(f, 0, incl)])
    } else {
        Re::alt(vec![Re::Empty, Re::seq(vec![Re::char('.'), le_digits(f, 0, incl)])])
    }
}

/// Canonical magnitudes ≥ a (or > a), a ≥ 0.
fn mag_ge(a: &Decimal, incl: bool) -> Re {
    let (ip, fp) = split_parts(a);
    let n = ip.len();
    let longer = Re::seq(vec![digit_range(1, 9), Re::repeat(digits(), n as u32, None), Re::opt(frac())]);
    let same = Re::seq(vec![same_len_cmp(&ip, true), Re::opt(frac())]);
    let equal = Re::seq(vec![lit_digits(&ip), frac_cmp(&fp, true, incl)]);
    Re::alt(vec![longer, same, equal])
}

/// Canonical magnitudes ≤ b (or < b), b ≥ 0.
fn mag_le(b: &Decimal, incl: bool) -> Re {
    let (ip, fp) = split_parts(b);
    let n = ip.len();
    let shorter = if n >= 2 {
        Re::seq(vec![
            Re::alt(vec![Re::char('0'), Re::seq(vec![digit_range(1, 9), Re::repeat(digits(), 0, Some(n as u32 - 2))])]),
            Re::opt(frac()),
        ])
    } else {
        Re::Nothing
    };
    let same = Re::seq(vec![same_len_cmp(&ip, false), Re::opt(frac())]);
    let equal = Re::seq(vec![lit_digits(&ip), frac_cmp(&fp, false, incl)]);
    Re::alt(vec![shorter, same, equal])
}

fn dfa(re: &Re) -> Result<Dfa, AutomatonError> {
    Ok(Dfa::from_re(re)?.minimize())
}

/// Most digits of a bound written in plain decimal (`1e300` has 301,
/// `1e-5` six): the expression of "at least / at most this bound" nests
/// once per digit and its size grows with the square of the integer
/// digits, so a bound such as `1e-99999` is refused instead of built.
pub const MAX_BOUND_DIGITS: usize = 1000;

/// Magnitudes in `[lo, hi]` (each side optional), all ≥ 0.
fn mag_range(lo: &Bound, hi: &Bound) -> Result<Dfa, AutomatonError> {
    for (b, _) in [lo, hi].into_iter().flatten() {
        let (ip, fp) = split_parts(b);
        if ip.len() + fp.len() > MAX_BOUND_DIGITS {
            return Err(AutomatonError::TooLarge("bound (more than 1000 digits in plain decimal)"));
        }
    }
    let mut d = dfa(&magnitude())?;
    if let Some((a, incl)) = lo {
        d = d.intersect(&dfa(&mag_ge(a, *incl))?)?;
    }
    if let Some((b, incl)) = hi {
        d = d.intersect(&dfa(&mag_le(b, *incl))?)?;
    }
    Ok(d)
}

fn range_dfa(lo: &Bound, hi: &Bound) -> Result<Dfa, AutomatonError> {
    let zero = Decimal::zero();
    // Non-negative values.
    let nonneg = match hi {
        Some((h, incl)) if h.neg || (h.is_zero() && !incl) => Dfa::empty(),
        _ => {
            let lo_nn = match lo {
                Some((l, _)) if l.neg => Some((zero.clone(), true)),
                None => None,
                other => other.clone(),
            };
            mag_range(&lo_nn, hi)?
        }
    };
    // Negative values: -m with m > 0 and -hi ≤ m ≤ -lo.
    let negative = match lo {
        Some((l, _)) if !l.neg => Dfa::empty(),
        _ => {
            let m_lo: Bound = match hi {
                Some((h, incl)) if h.neg => Some((h.neg(), *incl)),
                _ => Some((zero.clone(), false)),
            };
            let m_hi: Bound = lo.as_ref().map(|(l, incl)| (l.neg(), *incl));
            let m = mag_range(&m_lo, &m_hi)?;
            if m.is_empty_language() {
                m
            } else {
                dfa(&Re::seq(vec![Re::char('-'), m.to_re()?]))?
            }
        }
    };
    nonneg.union(&negative)
}

/// Numbers `x` with `x·10^k ≡ 0 (mod d)`, read digit by digit in the loose
/// syntax `-?\d+(\.\d+)?` (intersected with the canonical forms later).
fn multiple_dfa(m: &Decimal) -> Result<Dfa, String> {
    let k = (-m.exp).max(0) as u64;
    let mdig: u128 = std::str::from_utf8(&m.digits).unwrap().parse().map_err(|_| "multipleOf value too large".to_string())?;
    let mut d: u128 = mdig;
    for _ in 0..m.exp.max(0) {
        d = d.checked_mul(10).ok_or("multipleOf value too large")?;
    }
    // Phases: 0 start, 1 after '-', 2 integer digits, 3+j after '.' and j
    // fraction digits (0 ≤ j ≤ k).
    let phases = 4 + k;
    if (d as u64).saturating_mul(phases) > MAX_MOD_STATES || d > MAX_MOD_STATES as u128 {
        return Err(format!("multipleOf {m}: the divisibility automaton would need more than {MAX_MOD_STATES} states"));
    }
    let d = d as u64;
    let id = |phase: u64, r: u64| -> u32 { (if phase < 2 { phase } else { 2 + (phase - 2) * d + r }) as u32 };
    let n = (2 + (phases - 2) * d) as usize;
    let mut trans: Vec<Vec<(u32, u32, u32)>> = vec![Vec::new(); n];
    let mut accept = vec![false; n];
    let digit_edges = |from_r: u64, to_phase: u64| -> Vec<(u32, u32, u32)> {
        (0..10u64).map(|c| {
            let r = (from_r * 10 + c) % d;
            (b'0' as u32 + c as u32, b'0' as u32 + c as u32, id(to_phase, r))
        }).collect()
    };
    let mut start = vec![('-' as u32, '-' as u32, 1u32)];
    start.extend(digit_edges(0, 2));
    trans[0] = start;
    trans[1] = digit_edges(0, 2);
    for r in 0..d {
        // Integer digits.
        let mut t = digit_edges(r, 2);
        if k > 0 {
            t.push(('.' as u32, '.' as u32, id(3, r)));
        }
        trans[id(2, r) as usize] = t;
        // Value·10^k ≡ r·10^k.
        accept[id(2, r) as usize] = (0..k).fold(r, |acc, _| acc * 10 % d) == 0;
        for j in 0..=k {
            let me = id(3 + j, r) as usize;
            if j < k {
                trans[me] = digit_edges(r, 3 + j + 1);
            }
            if j > 0 {
                accept[me] = (0..(k - j)).fold(r, |acc, _| acc * 10 % d) == 0;
            }
        }
    }
    for t in &mut trans {
        t.sort_unstable();
    }
    let raw = Dfa { trans, accept };
    let canon = dfa(&canonical()).map_err(|e| e.to_string())?;
    raw.intersect(&canon).map_err(|e| e.to_string())
}

impl NumLang {
    pub fn and(a: NumLang, b: NumLang) -> NumLang {
        match (a, b) {
            (NumLang::All, x) | (x, NumLang::All) => x,
            (NumLang::Nothing, _) | (_, NumLang::Nothing) => NumLang::Nothing,
            (NumLang::Int, NumLang::Int) => NumLang::Int,
            (NumLang::Range { lo: l1, hi: h1 }, NumLang::Range { lo: l2, hi: h2 }) => {
                NumLang::range(tighter(l1, l2, true), tighter(h1, h2, false))
            }
            (NumLang::Set(s), other) | (other, NumLang::Set(s)) => match s.iter().map(|x| other.contains(x)).collect::<Option<Vec<bool>>>() {
                Some(keep) => NumLang::set(s.into_iter().zip(keep).filter(|(_, k)| *k).map(|(x, _)| x).collect()),
                None => NumLang::And(vec![NumLang::Set(s), other]),
            },
            // Flat: a long `allOf` must not nest one level per member.
            (NumLang::And(mut v), NumLang::And(w)) => {
                v.extend(w);
                NumLang::And(v)
            }
            (NumLang::And(mut v), x) | (x, NumLang::And(mut v)) => {
                v.push(x);
                NumLang::And(v)
            }
            (a, b) => NumLang::And(vec![a, b]),
        }
    }

    pub fn or(a: NumLang, b: NumLang) -> NumLang {
        match (a, b) {
            (NumLang::Nothing, x) | (x, NumLang::Nothing) => x,
            (NumLang::All, _) | (_, NumLang::All) => NumLang::All,
            (NumLang::Set(mut a), NumLang::Set(b)) => {
                a.extend(b);
                NumLang::set(a)
            }
            (NumLang::Or(mut v), NumLang::Or(w)) => {
                v.extend(w);
                NumLang::Or(v)
            }
            (NumLang::Or(mut v), x) | (x, NumLang::Or(mut v)) => {
                v.push(x);
                NumLang::Or(v)
            }
            (a, b) => NumLang::Or(vec![a, b]),
        }
    }

    pub fn not(a: NumLang) -> NumLang {
        match a {
            NumLang::All => NumLang::Nothing,
            NumLang::Nothing => NumLang::All,
            NumLang::Not(x) => *x,
            x => NumLang::Not(Box::new(x)),
        }
    }

    pub fn range(lo: Bound, hi: Bound) -> NumLang {
        if let (Some((l, li)), Some((h, hi_incl))) = (&lo, &hi) {
            if l > h || (l == h && !(*li && *hi_incl)) {
                return NumLang::Nothing;
            }
        }
        if lo.is_none() && hi.is_none() {
            return NumLang::All;
        }
        NumLang::Range { lo, hi }
    }

    pub fn set(mut v: Vec<Decimal>) -> NumLang {
        v.sort();
        v.dedup();
        if v.is_empty() {
            NumLang::Nothing
        } else {
            NumLang::Set(v)
        }
    }

    /// Membership (`None`: a `multipleOf` too large to decide).
    pub fn contains(&self, x: &Decimal) -> Option<bool> {
        Some(match self {
            NumLang::All => true,
            NumLang::Nothing => false,
            NumLang::Int => x.is_integer(),
            NumLang::Range { lo, hi } => {
                lo.as_ref().is_none_or(|(l, incl)| if *incl { x >= l } else { x > l })
                    && hi.as_ref().is_none_or(|(h, incl)| if *incl { x <= h } else { x < h })
            }
            NumLang::MultipleOf(m) => x.is_multiple_of(m)?,
            NumLang::Set(s) => s.contains(x),
            NumLang::And(v) => {
                for l in v {
                    if !l.contains(x)? {
                        return Some(false);
                    }
                }
                true
            }
            NumLang::Or(v) => {
                for l in v {
                    if l.contains(x)? {
                        return Some(true);
                    }
                }
                false
            }
            NumLang::Not(l) => !l.contains(x)?,
        })
    }

    /// The automaton over canonical number texts.
    pub fn dfa(&self) -> Result<Dfa, String> {
        let e = |e: AutomatonError| e.to_string();
        Ok(match self {
            NumLang::All => dfa(&canonical()).map_err(e)?,
            NumLang::Nothing => Dfa::empty(),
            NumLang::Int => dfa(&Re::alt(vec![Re::char('0'), Re::seq(vec![Re::opt(Re::char('-')), digit_range(1, 9), Re::star(digits())])])).map_err(e)?,
            NumLang::Range { lo, hi } => range_dfa(lo, hi).map_err(e)?,
            NumLang::MultipleOf(m) => multiple_dfa(m)?,
            NumLang::Set(s) => dfa(&Re::alt(s.iter().map(|d| Re::lit(&d.to_plain())).collect())).map_err(e)?,
            NumLang::And(v) => {
                let mut acc = dfa(&canonical()).map_err(e)?;
                for x in v {
                    acc = acc.intersect(&x.dfa()?).map_err(e)?;
                    if acc.is_empty_language() {
                        break;
                    }
                }
                acc
            }
            NumLang::Or(v) => {
                let mut acc = Dfa::empty();
                for x in v {
                    acc = acc.union(&x.dfa()?).map_err(e)?;
                }
                acc
            }
            NumLang::Not(x) => dfa(&canonical()).map_err(e)?.difference(&x.dfa()?).map_err(e)?,
        })
    }

    pub fn is_empty(&self) -> Option<bool> {
        match self {
            NumLang::Nothing => Some(true),
            NumLang::All | NumLang::Int | NumLang::Set(_) | NumLang::MultipleOf(_) => Some(false),
            NumLang::Range { .. } => Some(false),
            _ => {
                if let Some((int, lo, hi, mult)) = self.simple_conjunction() {
                    let unbounded = lo.is_none() || hi.is_none();
                    if mult.is_empty() || unbounded {
                        if !int || mult.len() > 0 {
                            return Some(false);
                        }
                        return Some(int_bounds(&lo, &hi).is_none());
                    }
                }
                self.dfa().ok().map(|d| d.is_empty_language())
            }
        }
    }

    /// `And` of integrality, bounds and multiples only: `(integral, lo, hi,
    /// multiples)`.
    fn simple_conjunction(&self) -> Option<(bool, Bound, Bound, Vec<Decimal>)> {
        let mut int = false;
        let mut lo: Bound = None;
        let mut hi: Bound = None;
        let mut mult = Vec::new();
        let items: Vec<&NumLang> = match self {
            NumLang::And(v) => v.iter().collect(),
            x => vec![x],
        };
        for x in items {
            match x {
                NumLang::All => {}
                NumLang::Int => int = true,
                NumLang::Range { lo: l, hi: h } => {
                    lo = tighter(lo, l.clone(), true);
                    hi = tighter(hi, h.clone(), false);
                }
                NumLang::MultipleOf(m) => mult.push(m.clone()),
                _ => return None,
            }
        }
        Some((int, lo, hi, mult))
    }

    /// How numbers of this language are written (`None`: no number).
    pub fn piece(&self) -> Result<Option<NumPiece>, String> {
        match self {
            NumLang::Nothing => return Ok(None),
            NumLang::All => return Ok(Some(NumPiece::Any)),
            NumLang::Int => return Ok(Some(NumPiece::AnyInt)),
            NumLang::Set(s) => return Ok(Some(NumPiece::Text(Re::alt(s.iter().map(|d| Re::lit(&d.to_plain())).collect())))),
            _ => {}
        }
        if let Some((true, lo, hi, mult)) = self.simple_conjunction() {
            if mult.is_empty() {
                return Ok(int_bounds(&lo, &hi).map(|(a, b)| NumPiece::Text(int_range(a.as_ref(), b.as_ref()))));
            }
        }
        let d = self.dfa()?;
        if d.is_empty_language() {
            return Ok(None);
        }
        match d.to_re() {
            Ok(re) => Ok(Some(NumPiece::Text(re))),
            Err(AutomatonError::TooLarge(_)) if d.len() <= crate::automata::MAX_RULE_DFA_STATES => Ok(Some(NumPiece::Automaton(std::sync::Arc::new(d.minimize())))),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The smallest and largest integers within the bounds (`None` inside: no
/// bound on that side); `None` when no integer fits.
fn int_bounds(lo: &Bound, hi: &Bound) -> Option<(Option<Decimal>, Option<Decimal>)> {
    let a = lo.as_ref().map(|(l, incl)| {
        let c = l.ceil();
        if !incl && &c == l {
            c.add_small(1)
        } else {
            c
        }
    });
    let b = hi.as_ref().map(|(h, incl)| {
        let f = h.floor();
        if !incl && &f == h {
            f.add_small(-1)
        } else {
            f
        }
    });
    if let (Some(x), Some(y)) = (&a, &b) {
        if x > y {
            return None;
        }
    }
    Some((a, b))
}

fn digits_of(d: &Decimal) -> Vec<u8> {
    d.abs().to_plain().bytes().map(|b| b - b'0').collect()
}

/// Canonical non-negative integers in `[a, b]` (`b = None`: unbounded), by
/// the classic digit-by-digit construction.
fn nonneg_int_range(a: &[u8], b: Option<&[u8]>) -> Re {
    let any = |n: usize| Re::repeat(digits(), n as u32, Some(n as u32));
    // n-digit canonical integers ≥ x (x has n digits).
    let ge_same = |x: &[u8]| Re::alt(vec![lit_digits(x), same_len_cmp(x, true)]);
    let le_same = |x: &[u8]| Re::alt(vec![lit_digits(x), same_len_cmp(x, false)]);
    let all_len = |n: usize| if n == 1 { digits() } else { Re::seq(vec![digit_range(1, 9), any(n - 1)]) };
    match b {
        None => Re::alt(vec![ge_same(a), Re::seq(vec![digit_range(1, 9), Re::repeat(digits(), a.len() as u32, None)])]),
        Some(b) if a.len() == b.len() => {
            // Common prefix, then split at the first differing digit.
            let k = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            if k == a.len() {
                return lit_digits(a);
            }
            let rest = a.len() - k - 1;
            let mut alts = vec![];
            // a[k] with suffix ≥ a's suffix.
            let lo_tail = &a[k + 1..];
            let hi_tail = &b[k + 1..];
            let ge_tail = if rest == 0 { Re::Empty } else { Re::alt(vec![lit_digits(lo_tail), suffix_cmp(lo_tail, true)]) };
            let le_tail = if rest == 0 { Re::Empty } else { Re::alt(vec![lit_digits(hi_tail), suffix_cmp(hi_tail, false)]) };
            alts.push(Re::seq(vec![Re::char((b'0' + a[k]) as char), ge_tail]));
            if b[k] > a[k] + 1 {
                alts.push(Re::seq(vec![digit_range(a[k] + 1, b[k] - 1), any(rest)]));
            }
            alts.push(Re::seq(vec![Re::char((b'0' + b[k]) as char), le_tail]));
            Re::seq(vec![lit_digits(&a[..k]), Re::alt(alts)])
        }
        Some(b) => {
            let mut alts = vec![ge_same(a)];
            for n in a.len() + 1..b.len() {
                alts.push(all_len(n));
            }
            alts.push(le_same(b));
            Re::alt(alts)
        }
    }
}

/// Fixed-length digit strings (leading zeros allowed) strictly above or
/// below `x`.
fn suffix_cmp(x: &[u8], above: bool) -> Re {
    let n = x.len();
    let mut alts = Vec::new();
    for i in 0..n {
        let r = if above { digit_range(x[i] + 1, 9) } else if x[i] == 0 { Re::Nothing } else { digit_range(0, x[i] - 1) };
        alts.push(Re::seq(vec![lit_digits(&x[..i]), r, Re::repeat(digits(), (n - i - 1) as u32, Some((n - i - 1) as u32))]));
    }
    Re::alt(alts)
}

/// Canonical integers in `[a, b]` (either side optional).
pub fn int_range(a: Option<&Decimal>, b: Option<&Decimal>) -> Re {
    let zero = Decimal::zero();
    let mut alts = Vec::new();
    // Non-negative part.
    let nn_lo = match a {
        Some(x) if !x.neg => Some(x.clone()),
        _ => Some(zero.clone()),
    };
    let nn_hi = b.cloned();
    if nn_hi.as_ref().is_none_or(|h| !h.neg) {
        let lo = nn_lo.unwrap();
        alts.push(nonneg_int_range(&digits_of(&lo), nn_hi.as_ref().map(digits_of).as_deref()));
    }
    // Negative part: -m with m in [max(1, -b), -a].
    if a.is_none_or(|x| x.neg) {
        let m_lo = match b {
            Some(h) if h.neg => h.neg(),
            _ => Decimal::from_i64(1),
        };
        let m_hi = a.map(|x| x.neg());
        if m_hi.as_ref().is_none_or(|h| *h >= m_lo) {
            alts.push(Re::seq(vec![Re::char('-'), nonneg_int_range(&digits_of(&m_lo), m_hi.as_ref().map(digits_of).as_deref())]));
        }
    }
    Re::alt(alts)
}

/// The tighter of two lower (`lower`) or upper bounds.
fn tighter(a: Bound, b: Bound, lower: bool) -> Bound {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some((x, xi)), Some((y, yi))) => {
            let ord = x.cmp(&y);
            let pick_x = match ord {
                std::cmp::Ordering::Equal => return Some((x, xi && yi)),
                std::cmp::Ordering::Greater => lower,
                std::cmp::Ordering::Less => !lower,
            };
            if pick_x {
                Some((x, xi))
            } else {
                Some((y, yi))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    fn check(lang: &NumLang, samples: &[&str]) {
        let dfa = lang.dfa().unwrap();
        let via_re = match dfa.to_re() {
            Ok(re) => Dfa::from_re(&re).unwrap().minimize(),
            Err(_) => dfa.minimize(),
        };
        for s in samples {
            let x = d(s);
            let canon = x.to_plain();
            let want = lang.contains(&x).unwrap();
            assert_eq!(dfa.matches(&canon), want, "{canon} in {lang:?}");
            assert_eq!(via_re.matches(&canon), want, "{canon} (via regex) in {lang:?}");
        }
    }

    const SAMPLES: &[&str] = &[
        "0", "1", "-1", "0.5", "-0.5", "9", "10", "11", "99", "100", "101", "1.5", "1.49", "1.51", "2", "-2", "-10", "-9.99",
        "-10.01", "3.14159", "0.001", "-0.001", "12345678901234567890", "-12345678901234567890", "20", "30", "29.999", "30.0001",
        "0.1", "0.09", "0.11", "5", "7.5", "1e20", "-1e20", "0.0075", "0.00751", "4.5", "35",
    ];

    #[test]
    fn ranges_are_exact() {
        for (lo, hi) in [
            (Some((d("0"), true)), None),
            (Some((d("0"), false)), None),
            (None, Some((d("0"), true))),
            (None, Some((d("0"), false))),
            (Some((d("1.5"), true)), Some((d("100"), false))),
            (Some((d("-10"), false)), Some((d("-2"), true))),
            (Some((d("-9.99"), true)), Some((d("0.1"), true))),
            (Some((d("20"), true)), Some((d("30"), true))),
            (Some((d("0.09"), false)), Some((d("0.11"), false))),
            (None, Some((d("12345678901234567890"), true))),
        ] {
            check(&NumLang::range(lo, hi), SAMPLES);
        }
    }

    #[test]
    fn integer_ranges_direct() {
        for (lo, hi) in [(Some("0"), None), (Some("-5"), Some("17")), (Some("13"), Some("4021")), (None, Some("-3")), (Some("-120"), Some("-7")), (Some("99"), Some("101")), (None, None)] {
            let re = int_range(lo.map(d).as_ref(), hi.map(d).as_ref());
            let dfa = Dfa::from_re(&re).unwrap();
            for x in -200i64..5000 {
                let want = lo.is_none_or(|l| x >= l.parse::<i64>().unwrap()) && hi.is_none_or(|h| x <= h.parse::<i64>().unwrap());
                assert_eq!(dfa.matches(&x.to_string()), want, "{x} in [{lo:?}, {hi:?}]");
            }
            assert!(!dfa.matches("-0") && !dfa.matches("007"));
        }
    }

    #[test]
    fn multiples_and_complements() {
        for m in ["2", "1.5", "0.0001", "0.01", "7", "100", "0.5"] {
            check(&NumLang::MultipleOf(d(m)), SAMPLES);
        }
        check(&NumLang::not(NumLang::Int), SAMPLES);
        check(&NumLang::and(NumLang::Int, NumLang::range(Some((d("-10"), true)), Some((d("10"), false)))), SAMPLES);
        check(&NumLang::not(NumLang::range(Some((d("1.5"), true)), Some((d("20"), true)))), SAMPLES);
    }
}
