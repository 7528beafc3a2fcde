//! `format` values as regular languages, written from the RFC grammars
//! (RFC 3339 dates and times with leap years and leap seconds, RFC 3986
//! URIs, RFC 3987 IRIs, RFC 5321 mailboxes, RFC 6570 URI templates,
//! RFC 6901 JSON pointers, RFC 4122 UUIDs).
//!
//! Formats whose validity is not a syntax a grammar can check exactly
//! (internationalized host names need Punycode and IDNA tables; `regex` is
//! not regular) are reported as unsupported rather than approximated.

use std::sync::Arc;

use crate::ecma::full_match;
use crate::re::Re;
use crate::strings::Atom;

const DIGIT: &str = "[0-9]";
const HEX: &str = "[0-9A-Fa-f]";

/// `None`: unknown format (an annotation). `Some(Err)`: known, not
/// enforceable exactly.
pub fn format_re(name: &str) -> Option<Result<Re, String>> {
    format_atom(name).map(|r| r.map(|a| a.re.clone()))
}

/// The format as a shared string atom (`format 'name'`), built once per
/// process: date-time alone is thousands of alternatives, and the atom also
/// memoizes its automaton and its JSON-string expression, so every later
/// schema that uses the format copies rather than rebuilds them.
pub fn format_atom(name: &str) -> Option<Result<Arc<Atom>, String>> {
    type Cache = std::sync::Mutex<std::collections::HashMap<String, Option<Result<Arc<Atom>, String>>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(name).cloned()) {
        return hit;
    }
    let r = build_format(name).map(|r| r.map(|re| Atom::new(re, format!("format '{name}'"))));
    if let Ok(mut c) = cache.lock() {
        c.insert(name.to_string(), r.clone());
    }
    r
}

fn build_format(name: &str) -> Option<Result<Re, String>> {
    Some(Ok(match name {
        "date" => full_match(&date()),
        "time" => time(),
        "date-time" => Re::seq(vec![full_match(&date()), full_match("[Tt]"), time()]),
        "duration" => full_match(&duration()),
        "email" => full_match(&email()),
        "ipv4" => full_match(&ipv4()),
        "ipv6" => full_match(&ipv6()),
        "uuid" => full_match(&format!("{HEX}{{8}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{12}}")),
        "uri" => full_match(&uri(false)),
        "uri-reference" => full_match(&format!("(?:{})|(?:{})", uri(false), relative_ref(false))),
        "iri" => full_match(&uri(true)),
        "iri-reference" => full_match(&format!("(?:{})|(?:{})", uri(true), relative_ref(true))),
        "uri-template" => full_match(&uri_template()),
        "json-pointer" => full_match(&json_pointer()),
        "relative-json-pointer" => full_match(&format!("(?:0|[1-9][0-9]*)(?:#|{})", json_pointer())),
        "hostname" | "idn-hostname" | "idn-email" => {
            return Some(Err("validity depends on Punycode/IDNA rules that a grammar cannot check exactly".into()))
        }
        "regex" => return Some(Err("the language of valid regular expressions is not regular".into())),
        _ => return None,
    }))
}

fn date() -> String {
    let y = format!("{DIGIT}{{4}}");
    // Leap years: divisible by 4 but not by 100, or by 400.
    let leap = "(?:[0-9]{2}(?:[02468][48]|[13579][26]|[2468]0)|(?:[02468][048]|[13579][26])00)";
    format!(
        "{y}-(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|{y}-(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|{y}-02-(?:0[1-9]|1[0-9]|2[0-8])|{leap}-02-29"
    )
}

/// RFC 3339 full-time. Second 60 is a leap second, only valid when the
/// time is 23:59 UTC once the offset is applied.
fn time() -> Re {
    let frac = "(?:\\.[0-9]+)?";
    let hour = "(?:[01][0-9]|2[0-3])";
    let minute = "[0-5][0-9]";
    let normal = full_match(&format!("{hour}:{minute}:[0-5][0-9]{frac}(?:[Zz]|[+-]{hour}:{minute})"));
    // Leap seconds: local time − offset ≡ 23:59 (mod 24h). Offsets per
    // local time (at most one per sign), as a trie over the local time.
    let mut by_local: std::collections::BTreeMap<(u32, u32), Vec<String>> = std::collections::BTreeMap::new();
    by_local.entry((23, 59)).or_default().push("Z".into());
    by_local.entry((23, 59)).or_default().push("z".into());
    for sign in ['+', '-'] {
        for oh in 0..24u32 {
            for om in 0..60u32 {
                let o = (oh * 60 + om) as i32 * if sign == '+' { 1 } else { -1 };
                let local = (1439 + o).rem_euclid(1440) as u32;
                by_local.entry((local / 60, local % 60)).or_default().push(format!("{sign}{oh:02}:{om:02}"));
            }
        }
    }
    let frac_re = full_match(frac);
    let mut hours: std::collections::BTreeMap<u32, Vec<Re>> = std::collections::BTreeMap::new();
    for ((h, m), offsets) in by_local {
        let offs = Re::alt(offsets.iter().map(|o| Re::lit(o)).collect());
        hours.entry(h).or_default().push(Re::seq(vec![Re::lit(&format!("{m:02}:60")), frac_re.clone(), offs]));
    }
    let leap = Re::alt(hours.into_iter().map(|(h, ms)| Re::seq(vec![Re::lit(&format!("{h:02}:")), Re::alt(ms)])).collect());
    Re::alt(vec![normal, leap])
}

fn duration() -> String {
    let n = "[0-9]+";
    let second = format!("{n}S");
    let minute = format!("{n}M(?:{second})?");
    let hour = format!("{n}H(?:{minute})?");
    let time = format!("T(?:{hour}|{minute}|{second})");
    let day = format!("{n}D");
    let week = format!("{n}W");
    let month = format!("{n}M(?:{day})?");
    let year = format!("{n}Y(?:{month})?");
    let date = format!("(?:{day}|{month}|{year})(?:{time})?");
    format!("P(?:{date}|{time}|{week})")
}

fn dec_octet() -> &'static str {
    "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])"
}

fn ipv4() -> String {
    let o = dec_octet();
    format!("{o}\\.{o}\\.{o}\\.{o}")
}

/// RFC 3986 IPv6address.
fn ipv6() -> String {
    let h16 = format!("{HEX}{{1,4}}");
    let ls32 = format!("(?:{h16}:{h16}|{})", ipv4());
    let rep = |n: usize| -> String { format!("(?:{h16}:){{{n}}}") };
    let upto = |n: usize| -> String {
        if n == 0 {
            String::new()
        } else {
            format!("(?:(?:{h16}:){{0,{}}}{h16})?", n - 1)
        }
    };
    let alts = [
        format!("{}{ls32}", rep(6)),
        format!("::{}{ls32}", rep(5)),
        format!("(?:{h16})?::{}{ls32}", rep(4)),
        format!("{}::{}{ls32}", upto(2), rep(3)),
        format!("{}::{}{ls32}", upto(3), rep(2)),
        format!("{}::{h16}:{ls32}", upto(4)),
        format!("{}::{ls32}", upto(5)),
        format!("{}::{h16}", upto(6)),
        format!("{}::", upto(7)),
    ];
    alts.iter().map(|a| format!("(?:{a})")).collect::<Vec<_>>().join("|")
}

/// RFC 5321 Mailbox (with IPv4 and IPv6 address literals).
fn email() -> String {
    let atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
    let dot_string = format!("{atext}+(?:\\.{atext}+)*");
    let quoted = "\"(?:[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]|\\\\[\\x20-\\x7E])*\"";
    let let_dig = "[A-Za-z0-9]";
    let sub_domain = format!("{let_dig}(?:[A-Za-z0-9-]*{let_dig})?");
    let domain = format!("{sub_domain}(?:\\.{sub_domain})*");
    let literal = format!("\\[(?:{}|IPv6:(?:{}))\\]", ipv4(), ipv6());
    format!("(?:{dot_string}|{quoted})@(?:{domain}|{literal})")
}

/// RFC 3986 `URI` (or RFC 3987 `IRI` when `iri`).
fn uri(iri: bool) -> String {
    let p = Parts::new(iri);
    format!(
        "{scheme}:{hier}(?:\\?{query})?(?:#{frag})?",
        scheme = "[A-Za-z][A-Za-z0-9+.-]*",
        hier = p.hier_part(),
        query = p.query(),
        frag = p.fragment()
    )
}

fn relative_ref(iri: bool) -> String {
    let p = Parts::new(iri);
    format!("{}(?:\\?{})?(?:#{})?", p.relative_part(), p.query(), p.fragment())
}

struct Parts {
    unreserved: String,
    iri: bool,
}

const SUB_DELIMS: &str = "!$&'()*+,;=";
const UCSCHAR: &str = "\\x{A0}-\\x{D7FF}\\x{F900}-\\x{FDCF}\\x{FDF0}-\\x{FFEF}\\x{10000}-\\x{1FFFD}\\x{20000}-\\x{2FFFD}\\x{30000}-\\x{3FFFD}\\x{40000}-\\x{4FFFD}\\x{50000}-\\x{5FFFD}\\x{60000}-\\x{6FFFD}\\x{70000}-\\x{7FFFD}\\x{80000}-\\x{8FFFD}\\x{90000}-\\x{9FFFD}\\x{A0000}-\\x{AFFFD}\\x{B0000}-\\x{BFFFD}\\x{C0000}-\\x{CFFFD}\\x{D0000}-\\x{DFFFD}\\x{E1000}-\\x{EFFFD}";
const IPRIVATE: &str = "\\x{E000}-\\x{F8FF}\\x{F0000}-\\x{FFFFD}\\x{100000}-\\x{10FFFD}";

impl Parts {
    fn new(iri: bool) -> Parts {
        let mut u = String::from("A-Za-z0-9._~\\-");
        if iri {
            u.push_str(UCSCHAR);
        }
        Parts { unreserved: u, iri }
    }
    fn pct(&self) -> String {
        format!("%{HEX}{HEX}")
    }
    /// One character class plus percent-encoding: `[unreserved sub-delims
    /// extra] | %HH`.
    fn chars(&self, extra: &str) -> String {
        format!("(?:[{}{}{}]|{})", self.unreserved, regex_class_escape(SUB_DELIMS), regex_class_escape(extra), self.pct())
    }
    fn pchar(&self) -> String {
        self.chars(":@")
    }
    fn segment(&self) -> String {
        format!("{}*", self.pchar())
    }
    fn segment_nz(&self) -> String {
        format!("{}+", self.pchar())
    }
    fn authority(&self) -> String {
        let userinfo = format!("{}*", self.chars(":"));
        let ip_future = format!("[vV]{HEX}+\\.(?:[{}{}:])+", self.ascii_unreserved(), regex_class_escape(SUB_DELIMS));
        let ip_literal = format!("\\[(?:{}|{ip_future})\\]", ipv6());
        let reg_name = format!("{}*", self.chars(""));
        format!("(?:{userinfo}@)?(?:{ip_literal}|{}|{reg_name})(?::[0-9]*)?", ipv4())
    }
    fn ascii_unreserved(&self) -> &'static str {
        "A-Za-z0-9._~\\-"
    }
    fn path_abempty(&self) -> String {
        format!("(?:/{})*", self.segment())
    }
    fn path_absolute(&self) -> String {
        format!("/(?:{}(?:/{})*)?", self.segment_nz(), self.segment())
    }
    fn hier_part(&self) -> String {
        let rootless = format!("{}(?:/{})*", self.segment_nz(), self.segment());
        format!("(?://{}{}|{}|{rootless}|)", self.authority(), self.path_abempty(), self.path_absolute())
    }
    fn relative_part(&self) -> String {
        let nz_nc = format!("{}+", self.chars("@"));
        let noscheme = format!("{nz_nc}(?:/{})*", self.segment());
        format!("(?://{}{}|{}|{noscheme}|)", self.authority(), self.path_abempty(), self.path_absolute())
    }
    fn query(&self) -> String {
        let extra = if self.iri { format!("|[{IPRIVATE}]") } else { String::new() };
        format!("(?:{}|[/?]{extra})*", self.pchar())
    }
    fn fragment(&self) -> String {
        format!("(?:{}|[/?])*", self.pchar())
    }
}

fn regex_class_escape(s: &str) -> String {
    s.chars().map(|c| format!("\\x{{{:X}}}", c as u32)).collect()
}

/// RFC 6570 level-4 URI templates.
fn uri_template() -> String {
    let pct = format!("%{HEX}{HEX}");
    // RFC 6570 literals with verified erratum 6937 (`%x26-3B`: the
    // apostrophe is a literal, as the RFC's own `'{var}'` example needs and
    // the JSON-Schema-Test-Suite checks).
    let literal = format!("(?:[\\x21\\x23\\x24\\x26-\\x3B\\x3D\\x3F-\\x5B\\x5D\\x5F\\x61-\\x7A\\x7E{UCSCHAR}{IPRIVATE}]|{pct})");
    let varchar = format!("(?:[A-Za-z0-9_]|{pct})");
    let varname = format!("{varchar}(?:\\.?{varchar})*");
    let modifier = "(?::[1-9][0-9]{0,3}|\\*)?";
    let varspec = format!("{varname}{modifier}");
    let expression = format!("\\{{[+#./;?&=,!@|]?{varspec}(?:,{varspec})*\\}}");
    format!("(?:{literal}|{expression})*")
}

/// RFC 6901: `/`-separated tokens, `~` only as `~0` or `~1`.
fn json_pointer() -> String {
    "(?:/(?:[^/~]|~[01])*)*".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automata::Dfa;

    fn dfa(name: &str) -> Dfa {
        Dfa::from_re(&format_re(name).unwrap().unwrap()).unwrap().minimize()
    }

    #[test]
    fn dates_and_times() {
        let d = dfa("date");
        assert!(d.matches("2020-02-29") && d.matches("0400-02-29") && !d.matches("2100-02-29") && !d.matches("2021-02-29"));
        assert!(!d.matches("2020-04-31") && d.matches("2020-12-31") && !d.matches("2020-1-01"));
        let t = dfa("time");
        assert!(t.matches("23:59:60Z") && t.matches("01:29:60+01:30") && t.matches("00:29:60-23:30") && t.matches("15:59:60-08:00"));
        assert!(!t.matches("22:59:60Z") && !t.matches("23:59:60+01:00") && !t.matches("12:00:00") && t.matches("08:30:06.283185z"));
        let dt = dfa("date-time");
        assert!(dt.matches("1963-06-19t08:30:06.283185z") && !dt.matches("1990-12-31T15:59:59-24:00"));
    }

    #[test]
    fn addresses() {
        let v6 = dfa("ipv6");
        for ok in ["::1", "::", "1:d6::42", "1::d6:192.168.0.1", "1:2:3:4:5:6:7:8", "::ffff:192.168.0.1"] {
            assert!(v6.matches(ok), "{ok}");
        }
        for bad in ["12345::", ":2:3:4:5:6:7:8", "1::d6::42", "1:2:3:4:5:6:7", "::ffff:192.168.0.01"] {
            assert!(!v6.matches(bad), "{bad}");
        }
        let e = dfa("email");
        assert!(e.matches("joe.bloggs@[IPv6:::1]") && e.matches("\"joe bloggs\"@example.com") && !e.matches("te..st@example.com"));
        let u = dfa("uri");
        assert!(u.matches("http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com") && !u.matches("http://example.com:abc/path"));
        assert!(u.matches("urn:oasis:names:specification:docbook:dtd:xml:4.1.2") && !u.matches("abc"));
        let r = dfa("uri-reference");
        assert!(r.matches("./this:that") && !r.matches("1:b") && r.matches(""));
        let t = dfa("uri-template");
        assert!(t.matches("http://example.com/dictionary/{term:1}/{term}") && !t.matches("{a..b}") && !t.matches("{v:01}"));
        assert!(t.matches("a&b(c)") && t.matches("a'b") && !t.matches("a b"), "RFC 6570 literals, erratum 6937 applied");
        let d = dfa("duration");
        assert!(d.matches("P4DT12H30M5S") && !d.matches("P1Y2D") && !d.matches("PT1H2S") && d.matches("P2W"));
    }
}

#[cfg(test)]
mod size_probe {
    use super::*;
    use crate::automata::Dfa;
    #[test]
    #[ignore]
    fn probe_sizes() {
        for f in ["date", "time", "date-time", "email", "uri", "ipv6", "uri-reference", "iri"] {
            let t = std::time::Instant::now();
            let re = format_re(f).unwrap().unwrap();
            let d = Dfa::from_re(&re);
            match d {
                Ok(d) => {
                    let m = d.minimize();
                    println!("{f}: dfa {} min {} in {:?}", d.len(), m.len(), t.elapsed());
                }
                Err(e) => println!("{f}: {e} in {:?}", t.elapsed()),
            }
        }
    }
}
