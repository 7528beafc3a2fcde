//! Exact decimal numbers.
//!
//! Schema bounds and instance numbers are compared as decimals, never as
//! floats: `maximum: 0.1` means exactly one tenth, and a 50-digit integer is
//! kept digit for digit.

use std::cmp::Ordering;

/// `(-1)^neg × digits × 10^exp`, with `digits` free of leading and trailing
/// zeros (zero is the empty digit string, never negative).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decimal {
    pub neg: bool,
    /// ASCII digits, most significant first.
    pub digits: Vec<u8>,
    pub exp: i64,
}

/// Exponents beyond this are refused when parsing: the number grammars are
/// built digit by digit, so 1e1000000 would be a million-state automaton.
pub const MAX_EXPONENT: i64 = 100_000;

impl Decimal {
    pub fn zero() -> Decimal {
        Decimal { neg: false, digits: Vec::new(), exp: 0 }
    }

    pub fn from_i64(v: i64) -> Decimal {
        let mut d = Decimal::parse(&v.to_string()).expect("integer text");
        d.normalize();
        d
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    fn normalize(&mut self) {
        let lead = self.digits.iter().take_while(|&&d| d == b'0').count();
        self.digits.drain(..lead);
        while self.digits.last() == Some(&b'0') {
            self.digits.pop();
            self.exp += 1;
        }
        if self.digits.is_empty() {
            self.neg = false;
            self.exp = 0;
        }
    }

    /// Parses JSON number syntax (and the looser forms Rust's float
    /// formatting produces). `None` when it is not a number or its exponent is
    /// absurd.
    pub fn parse(s: &str) -> Option<Decimal> {
        let b = s.as_bytes();
        let mut i = 0;
        let neg = b.first() == Some(&b'-');
        if neg || b.first() == Some(&b'+') {
            i += 1;
        }
        let mut digits = Vec::new();
        let mut exp: i64 = 0;
        let mut seen = false;
        while i < b.len() && b[i].is_ascii_digit() {
            digits.push(b[i]);
            seen = true;
            i += 1;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                digits.push(b[i]);
                exp -= 1;
                seen = true;
                i += 1;
            }
        }
        if !seen {
            return None;
        }
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            i += 1;
            let eneg = b.get(i) == Some(&b'-');
            if eneg || b.get(i) == Some(&b'+') {
                i += 1;
            }
            let start = i;
            let mut e: i64 = 0;
            while i < b.len() && b[i].is_ascii_digit() {
                e = e.checked_mul(10)?.checked_add((b[i] - b'0') as i64)?;
                if e > 10 * MAX_EXPONENT {
                    return None;
                }
                i += 1;
            }
            if i == start {
                return None;
            }
            exp += if eneg { -e } else { e };
        }
        if i != b.len() {
            return None;
        }
        let mut d = Decimal { neg, digits, exp };
        d.normalize();
        if !d.is_zero() && (d.exp.abs() > MAX_EXPONENT || d.magnitude() > MAX_EXPONENT) {
            return None;
        }
        Some(d)
    }

    /// Position of the most significant digit plus one (number of integer
    /// digits when positive): 123.4 → 3, 0.05 → -1.
    pub fn magnitude(&self) -> i64 {
        self.digits.len() as i64 + self.exp
    }

    pub fn is_integer(&self) -> bool {
        self.exp >= 0
    }

    pub fn neg(&self) -> Decimal {
        let mut d = self.clone();
        if !d.is_zero() {
            d.neg = !d.neg;
        }
        d
    }

    pub fn abs(&self) -> Decimal {
        Decimal { neg: false, ..self.clone() }
    }

    /// Digit at decimal position `p` (10^p), zero outside the stored digits.
    pub fn digit_at(&self, p: i64) -> u8 {
        let idx = self.magnitude() - 1 - p;
        if idx < 0 || idx >= self.digits.len() as i64 {
            0
        } else {
            self.digits[idx as usize] - b'0'
        }
    }

    /// Plain decimal text without exponent: the canonical form the grammars
    /// accept for constrained numbers (`-1.5`, `100`, `0.001`).
    pub fn to_plain(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let mut s = String::new();
        if self.neg {
            s.push('-');
        }
        let digits = std::str::from_utf8(&self.digits).unwrap();
        if self.exp >= 0 {
            s.push_str(digits);
            s.extend(std::iter::repeat('0').take(self.exp as usize));
        } else {
            let int_len = self.magnitude();
            if int_len <= 0 {
                s.push_str("0.");
                s.extend(std::iter::repeat('0').take((-int_len) as usize));
                s.push_str(digits);
            } else {
                s.push_str(&digits[..int_len as usize]);
                s.push('.');
                s.push_str(&digits[int_len as usize..]);
            }
        }
        s
    }

    /// Integer part (truncated toward zero) and whether a fraction was cut.
    pub fn trunc(&self) -> (Decimal, bool) {
        if self.exp >= 0 {
            return (self.clone(), false);
        }
        let keep = self.magnitude().max(0) as usize;
        let mut d = Decimal { neg: self.neg, digits: self.digits[..keep.min(self.digits.len())].to_vec(), exp: 0 };
        let cut = keep < self.digits.len();
        d.exp = self.exp + (self.digits.len() - d.digits.len()) as i64;
        d.normalize();
        (d, cut)
    }

    /// Smallest integer ≥ self.
    pub fn ceil(&self) -> Decimal {
        let (t, cut) = self.trunc();
        if cut && !self.neg {
            t.add_small(1)
        } else {
            t
        }
    }

    /// Largest integer ≤ self.
    pub fn floor(&self) -> Decimal {
        let (t, cut) = self.trunc();
        if cut && self.neg {
            t.add_small(-1)
        } else {
            t
        }
    }

    /// Integer + small integer (only used on integers).
    pub fn add_small(&self, k: i64) -> Decimal {
        debug_assert!(self.is_integer());
        // Work on the plain digit string with schoolbook arithmetic.
        let a = self.to_plain();
        let (an, ad) = match a.strip_prefix('-') {
            Some(r) => (true, r.to_string()),
            None => (false, a),
        };
        let (bn, bd) = (k < 0, k.unsigned_abs().to_string());
        let res = if an == bn {
            let s = add_digits(&ad, &bd);
            if an { format!("-{s}") } else { s }
        } else {
            match cmp_digits(&ad, &bd) {
                Ordering::Equal => "0".into(),
                Ordering::Greater => {
                    let s = sub_digits(&ad, &bd);
                    if an { format!("-{s}") } else { s }
                }
                Ordering::Less => {
                    let s = sub_digits(&bd, &ad);
                    if bn { format!("-{s}") } else { s }
                }
            }
        };
        Decimal::parse(&res).expect("integer arithmetic result")
    }

    /// `self` is an integer multiple of `m` (m > 0). `None` when the numbers
    /// are too large to decide with 128-bit arithmetic.
    pub fn is_multiple_of(&self, m: &Decimal) -> Option<bool> {
        if self.is_zero() {
            return Some(true);
        }
        // self / m = (D_s / D_m) · 10^(e_s − e_m), D = digit strings.
        let shift = self.exp - m.exp;
        let mdig = std::str::from_utf8(&m.digits).ok()?;
        let mut divisor: u128 = mdig.parse().ok()?;
        if shift < 0 {
            // D_m · 10^(−shift) must divide D_s.
            for _ in 0..(-shift) {
                divisor = divisor.checked_mul(10)?;
            }
            return Some(mod_digits(&self.digits, 0, divisor) == 0);
        }
        Some(mod_digits(&self.digits, shift as u64, divisor) == 0)
    }

    pub fn from_f64(f: f64) -> Option<Decimal> {
        if !f.is_finite() {
            return None;
        }
        // Rust prints the shortest text that round-trips, without exponent.
        Decimal::parse(&format!("{f}"))
    }
}

/// (digits · 10^zeros) mod m.
fn mod_digits(digits: &[u8], zeros: u64, m: u128) -> u128 {
    let mut r: u128 = 0;
    for &d in digits {
        r = (r * 10 + (d - b'0') as u128) % m;
    }
    // Many zeros: the remainder sequence is eventually periodic, but
    // multiplying step by step is fine for the exponents we accept.
    for _ in 0..zeros.min(4 * MAX_EXPONENT as u64) {
        r = (r * 10) % m;
        if r == 0 {
            break;
        }
    }
    r
}

fn cmp_digits(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn add_digits(a: &str, b: &str) -> String {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut out = Vec::new();
    let mut carry = 0u8;
    for i in 0..a.len().max(b.len()) {
        let x = if i < a.len() { a[a.len() - 1 - i] - b'0' } else { 0 };
        let y = if i < b.len() { b[b.len() - 1 - i] - b'0' } else { 0 };
        let s = x + y + carry;
        out.push(b'0' + s % 10);
        carry = s / 10;
    }
    if carry > 0 {
        out.push(b'0' + carry);
    }
    out.reverse();
    String::from_utf8(out).unwrap()
}

/// a − b for a ≥ b.
fn sub_digits(a: &str, b: &str) -> String {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut out = Vec::new();
    let mut borrow = 0i8;
    for i in 0..a.len() {
        let x = (a[a.len() - 1 - i] - b'0') as i8;
        let y = if i < b.len() { (b[b.len() - 1 - i] - b'0') as i8 } else { 0 };
        let mut s = x - y - borrow;
        borrow = 0;
        if s < 0 {
            s += 10;
            borrow = 1;
        }
        out.push(b'0' + s as u8);
    }
    while out.len() > 1 && out.last() == Some(&b'0') {
        out.pop();
    }
    out.reverse();
    String::from_utf8(out).unwrap()
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.neg, other.neg) {
            (false, true) => return Ordering::Greater,
            (true, false) => return Ordering::Less,
            _ => {}
        }
        let mag = match (self.is_zero(), other.is_zero()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => self.magnitude().cmp(&other.magnitude()).then_with(|| {
                // Same magnitude: compare digit strings, shorter padded with 0s.
                let n = self.digits.len().max(other.digits.len());
                for i in 0..n {
                    let a = self.digits.get(i).copied().unwrap_or(b'0');
                    let b = other.digits.get(i).copied().unwrap_or(b'0');
                    if a != b {
                        return a.cmp(&b);
                    }
                }
                Ordering::Equal
            }),
        };
        if self.neg {
            mag.reverse()
        } else {
            mag
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for Decimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_plain())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    #[test]
    fn parse_and_print() {
        assert_eq!(d("1.50").to_plain(), "1.5");
        assert_eq!(d("-0.0").to_plain(), "0");
        assert_eq!(d("1e3").to_plain(), "1000");
        assert_eq!(d("12.5e-3").to_plain(), "0.0125");
        assert_eq!(d("100").digits, b"1");
        assert!(Decimal::parse("1.").is_none() || d("1.").to_plain() == "1");
        assert!(Decimal::parse("abc").is_none());
    }

    #[test]
    fn ordering_and_rounding() {
        assert!(d("0.1") < d("0.10001"));
        assert!(d("-2") < d("-1.5"));
        assert!(d("972783798187987123879878123.188781371") > d("972783798187987123879878123.18878137"));
        assert_eq!(d("1.5").ceil(), d("2"));
        assert_eq!(d("-1.5").ceil(), d("-1"));
        assert_eq!(d("-1.5").floor(), d("-2"));
        assert_eq!(d("7").add_small(-10), d("-3"));
    }

    #[test]
    fn multiples() {
        assert_eq!(d("0.0075").is_multiple_of(&d("0.0001")), Some(true));
        assert_eq!(d("0.00751").is_multiple_of(&d("0.0001")), Some(false));
        assert_eq!(d("1e308").is_multiple_of(&d("0.5")), Some(true));
        assert_eq!(d("4.5").is_multiple_of(&d("1.5")), Some(true));
        assert_eq!(d("35").is_multiple_of(&d("1.5")), Some(false));
        assert_eq!(d("19.99").is_multiple_of(&d("0.01")), Some(true));
    }
}
