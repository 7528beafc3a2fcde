//! ECMA-262 patterns (JSON Schema `pattern`, `patternProperties`) to
//! character-level regular expressions.
//!
//! The pattern is first rewritten into the syntax of the `regex-syntax`
//! crate where the two dialects differ in meaning: `\d`, `\w` are ASCII-only
//! and `\s` is ECMA's own whitespace set; `.` excludes all four line
//! terminators; `[` `&` `~` inside a class are literals; a `{` that does not
//! start a quantifier is a literal. Backreferences, lookaround and word
//! boundaries are refused. A JSON Schema pattern is *unanchored*: `"a"`
//! matches any string containing an `a`, so the result is `Σ* P Σ*` with `^`
//! and `$` (start and end of input, no multiline) as real assertions.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

use crate::automata::Dfa;
use crate::re::Re;

/// ECMA `\s`: WhiteSpace and LineTerminator code points.
const ECMA_SPACE: &str = r"\t\n\x{0B}\x{0C}\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
const ECMA_DOT: &str = r"[^\n\r\x{2028}\x{2029}]";

/// Rewrites ECMA syntax into equivalent `regex-syntax` syntax.
fn translate(p: &str) -> Result<String, String> {
    let cs: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 16);
    let mut i = 0;
    let mut in_class = false;
    let mut class_start = false;
    while i < cs.len() {
        let c = cs[i];
        let at_class_start = class_start;
        class_start = false;
        match c {
            '\\' => {
                let n = *cs.get(i + 1).ok_or("pattern ends with a lone backslash")?;
                i += 2;
                match n {
                    'd' => out.push_str(if in_class { "0-9" } else { "[0-9]" }),
                    'D' => out.push_str("[^0-9]"),
                    'w' => out.push_str(if in_class { "0-9A-Za-z_" } else { "[0-9A-Za-z_]" }),
                    'W' => out.push_str("[^0-9A-Za-z_]"),
                    's' => {
                        if in_class {
                            out.push_str(ECMA_SPACE)
                        } else {
                            out.push('[');
                            out.push_str(ECMA_SPACE);
                            out.push(']');
                        }
                    }
                    'S' => {
                        out.push_str("[^");
                        out.push_str(ECMA_SPACE);
                        out.push(']');
                    }
                    'b' if in_class => out.push_str(r"\x{8}"),
                    'b' | 'B' => return Err("word boundaries (\\b, \\B) are not supported".into()),
                    't' => out.push_str(r"\t"),
                    'n' => out.push_str(r"\n"),
                    'r' => out.push_str(r"\r"),
                    'v' => out.push_str(r"\x{B}"),
                    'f' => out.push_str(r"\x{C}"),
                    '0' if !cs.get(i).is_some_and(|d| d.is_ascii_digit()) => out.push_str(r"\x{0}"),
                    '1'..='9' => return Err("backreferences are not supported".into()),
                    'k' if cs.get(i) == Some(&'<') => return Err("backreferences are not supported".into()),
                    'c' => {
                        let l = cs.get(i).filter(|l| l.is_ascii_alphabetic()).ok_or("invalid \\c escape")?;
                        out.push_str(&format!(r"\x{{{:X}}}", (*l as u32) % 32));
                        i += 1;
                    }
                    'x' => {
                        let h: String = cs.get(i..i + 2).ok_or("invalid \\x escape")?.iter().collect();
                        let v = u32::from_str_radix(&h, 16).map_err(|_| "invalid \\x escape")?;
                        out.push_str(&format!(r"\x{{{v:X}}}"));
                        i += 2;
                    }
                    'u' => {
                        let (v, used) = unicode_escape(&cs[i..])?;
                        out.push_str(&format!(r"\x{{{v:X}}}"));
                        i += used;
                    }
                    'p' | 'P' => {
                        // \p{...}: pass through (Unicode property escapes).
                        out.push('\\');
                        out.push(n);
                        if cs.get(i) == Some(&'{') {
                            while i < cs.len() {
                                out.push(cs[i]);
                                i += 1;
                                if cs[i - 1] == '}' {
                                    break;
                                }
                            }
                        } else {
                            return Err("invalid \\p escape".into());
                        }
                    }
                    n if n.is_ascii_alphanumeric() => {
                        return Err(format!("unknown escape \\{n}"));
                    }
                    // Escaped punctuation and other characters mean themselves.
                    n => out.push_str(&format!(r"\x{{{:X}}}", n as u32)),
                }
                continue;
            }
            '[' if !in_class => {
                // ECMA `[^]` is any character and `[]` is nothing.
                if cs.get(i + 1) == Some(&'^') && cs.get(i + 2) == Some(&']') {
                    out.push_str(r"[\x{0}-\x{10FFFF}]");
                    i += 3;
                    continue;
                }
                if cs.get(i + 1) == Some(&']') {
                    out.push_str(r"[^\x{0}-\x{10FFFF}]");
                    i += 2;
                    continue;
                }
                in_class = true;
                class_start = true;
                out.push('[');
                if cs.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
            }
            ']' if in_class && !at_class_start => {
                in_class = false;
                out.push(']');
            }
            '[' | ']' | '&' | '~' if in_class => out.push_str(&format!(r"\x{{{:X}}}", c as u32)),
            '-' if in_class && cs.get(i + 1) == Some(&'-') => out.push_str(r"\x{2D}"),
            ']' | '}' => out.push_str(&format!(r"\x{{{:X}}}", c as u32)),
            '.' if !in_class => out.push_str(ECMA_DOT),
            '{' if !in_class => {
                // A quantifier is `{n}`, `{n,}` or `{n,m}`; anything else is
                // a literal brace in ECMA.
                let mut j = i + 1;
                let mut ok = false;
                let d0 = j;
                while j < cs.len() && cs[j].is_ascii_digit() {
                    j += 1;
                }
                if j > d0 {
                    if cs.get(j) == Some(&'}') {
                        ok = true;
                    } else if cs.get(j) == Some(&',') {
                        j += 1;
                        while j < cs.len() && cs[j].is_ascii_digit() {
                            j += 1;
                        }
                        ok = cs.get(j) == Some(&'}');
                    }
                }
                if ok {
                    out.extend(&cs[i..=j]);
                    i = j + 1;
                    continue;
                }
                out.push_str(r"\x{7B}");
            }
            '(' if !in_class && cs.get(i + 1) == Some(&'?') => {
                match (cs.get(i + 2), cs.get(i + 3)) {
                    (Some(':'), _) => out.push_str("(?:"),
                    (Some('<'), Some(n)) if *n != '=' && *n != '!' => out.push_str("(?P<"),
                    (Some('=') | Some('!'), _) | (Some('<'), _) => return Err("lookaround assertions are not supported".into()),
                    _ => return Err("invalid group syntax".into()),
                }
                i += 3;
                continue;
            }
            '#' | ' ' => out.push_str(&format!(r"\x{{{:X}}}", c as u32)),
            '-' if in_class => out.push('-'),
            c => out.push(c),
        }
        i += 1;
    }
    if in_class {
        return Err("unterminated character class".into());
    }
    Ok(out)
}

/// `\uXXXX` (with a following low surrogate escape combined) or `\u{...}`;
/// `s` starts after the `u`. Returns the code point and characters used.
fn unicode_escape(s: &[char]) -> Result<(u32, usize), String> {
    if s.first() == Some(&'{') {
        let end = s.iter().position(|&c| c == '}').ok_or("invalid \\u{...} escape")?;
        let h: String = s[1..end].iter().collect();
        let v = u32::from_str_radix(&h, 16).map_err(|_| "invalid \\u{...} escape")?;
        return Ok((v, end + 1));
    }
    let h: String = s.get(..4).ok_or("invalid \\u escape")?.iter().collect();
    let v = u32::from_str_radix(&h, 16).map_err(|_| "invalid \\u escape")?;
    if (0xD800..0xDC00).contains(&v) && s.get(4) == Some(&'\\') && s.get(5) == Some(&'u') {
        let h2: String = s.get(6..10).ok_or("invalid \\u escape")?.iter().collect();
        if let Ok(lo) = u32::from_str_radix(&h2, 16) {
            if (0xDC00..0xE000).contains(&lo) {
                return Ok((0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00), 10));
            }
        }
    }
    if (0xD800..0xE000).contains(&v) {
        return Err("lone surrogate escapes are not supported".into());
    }
    Ok((v, 4))
}

fn parse_hir(pattern: &str) -> Result<Hir, String> {
    regex_syntax::ParserBuilder::new()
        .unicode(true)
        .utf8(true)
        .nest_limit(200)
        .build()
        .parse(pattern)
        .map_err(|e| {
            let s = e.to_string();
            // Keep the last line (the explanation), not the ASCII art.
            s.lines().last().unwrap_or("invalid regular expression").trim().to_string()
        })
}

/// Largest repetition count accepted inside a pattern.
const MAX_PATTERN_REPEAT: u32 = 1000;

fn lower(h: &Hir) -> Result<Re, String> {
    Ok(match h.kind() {
        HirKind::Empty => Re::Empty,
        HirKind::Literal(lit) => {
            let s = std::str::from_utf8(&lit.0).map_err(|_| "non-UTF-8 literal")?;
            Re::lit(s)
        }
        HirKind::Class(Class::Unicode(c)) => Re::chars(c.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect()),
        HirKind::Class(Class::Bytes(c)) => {
            if c.ranges().iter().any(|r| r.end() > 0x7F) {
                return Err("byte-oriented classes are not supported".into());
            }
            Re::chars(c.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect())
        }
        HirKind::Look(Look::Start) => Re::Start,
        HirKind::Look(Look::End) => Re::End,
        HirKind::Look(_) => return Err("word boundaries and multi-line anchors are not supported".into()),
        HirKind::Repetition(r) => {
            if r.min > MAX_PATTERN_REPEAT || r.max.is_some_and(|m| m > MAX_PATTERN_REPEAT) {
                return Err(format!("repetition counts above {MAX_PATTERN_REPEAT} are not supported"));
            }
            Re::repeat(lower(&r.sub)?, r.min, r.max)
        }
        HirKind::Capture(c) => lower(&c.sub)?,
        HirKind::Concat(v) => Re::seq(v.iter().map(lower).collect::<Result<_, _>>()?),
        HirKind::Alternation(v) => Re::alt(v.iter().map(lower).collect::<Result<_, _>>()?),
    })
}

/// The strings (decoded) that an ECMA pattern matches *somewhere*, as an
/// assertion-free expression.
pub fn pattern_language(pattern: &str) -> Result<Re, String> {
    let translated = translate(pattern)?;
    let p = lower(&parse_hir(&translated)?)?;
    search(p)
}

/// A `regex-syntax` pattern matched in full (used for formats).
pub fn full_match(pattern: &str) -> Re {
    lower(&parse_hir(pattern).expect("built-in pattern")).expect("built-in pattern")
}

/// `Σ* p Σ*` with assertions resolved.
fn search(p: Re) -> Result<Re, String> {
    if let Re::Alt(branches) = &p {
        // Split only when branches carry anchors: one shared `Σ* (a|b) Σ*`
        // is far smaller than `Σ* a Σ* | Σ* b Σ*` once determinized.
        if p.has_assertions() {
            return Ok(Re::alt(branches.iter().cloned().map(search).collect::<Result<_, _>>()?));
        }
    }
    let mut items = match p {
        Re::Seq(v) => v,
        other => vec![other],
    };
    let anchored_start = items.first() == Some(&Re::Start);
    if anchored_start {
        items.remove(0);
    }
    let anchored_end = items.last() == Some(&Re::End);
    if anchored_end {
        items.pop();
    }
    let mut parts = Vec::with_capacity(items.len() + 2);
    if !anchored_start {
        parts.push(Re::any());
    }
    parts.extend(items);
    if !anchored_end {
        parts.push(Re::any());
    }
    let re = Re::seq(parts);
    if !re.has_assertions() {
        return Ok(re);
    }
    // Assertions in the middle (`(^a|b)c`, `a$|b`): the automaton knows
    // where the string starts and ends.
    let dfa = Dfa::from_re(&re).map_err(|e| e.to_string())?.minimize();
    dfa.to_re().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dfa(p: &str) -> Dfa {
        Dfa::from_re(&pattern_language(p).unwrap()).unwrap().minimize()
    }

    #[test]
    fn ecma_semantics() {
        let d = dfa("^\\d+$");
        assert!(d.matches("123") && !d.matches("١٢") && !d.matches(""));
        let d = dfa("a+");
        assert!(d.matches("xaay") && !d.matches("xy"));
        let d = dfa("^\\s$");
        assert!(d.matches("\u{feff}") && d.matches("\u{a0}") && !d.matches("x"));
        let d = dfa("^.$");
        assert!(d.matches("x") && !d.matches("\n") && !d.matches("\u{2028}"));
        let d = dfa("^[\\w&]{2}$");
        assert!(d.matches("a&") && !d.matches("é1"));
        let d = dfa("^a{$");
        assert!(d.matches("a{"));
        let d = dfa("(^a|b$)x?");
        assert!(d.matches("ab") && d.matches("zzb") && d.matches("azz") && !d.matches("zaz"));
        let d = dfa("^🐲*$");
        assert!(d.matches("🐲🐲") && !d.matches("🐲x"));
        let d = dfa("^\\p{Letter}+$");
        assert!(d.matches("éa") && !d.matches("1"));
        assert!(pattern_language("(a)\\1").is_err());
        assert!(pattern_language("a(?=b)").is_err());
        assert!(pattern_language("\\bword").is_err());
    }
}
