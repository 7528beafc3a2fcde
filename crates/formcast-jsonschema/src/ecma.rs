//! ECMA-262 patterns (JSON Schema `pattern`, `patternProperties`) to
//! character-level regular expressions.
//!
//! The pattern is first rewritten into the syntax of the `regex-syntax`
//! crate (by `formcast_grammar::ecma`, in its lenient mode) where the two
//! dialects differ in meaning: `\d`, `\w` are ASCII-only
//! and `\s` is ECMA's own whitespace set; `.` excludes all four line
//! terminators; `[` `&` `~` inside a class are literals; a `{` that does not
//! start a quantifier is a literal. Backreferences, lookaround and word
//! boundaries are refused. A JSON Schema pattern is *unanchored*: `"a"`
//! matches any string containing an `a`, so the result is `Σ* P Σ*` with `^`
//! and `$` (start and end of input, no multiline) as real assertions.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

use crate::automata::Dfa;
use crate::re::Re;

/// Rewrites ECMA syntax into equivalent `regex-syntax` syntax: the lenient
/// reading (`u`-flag meaning, Annex B's forgiving syntax) shared with the
/// regex front-end's strict `"ecma"` dialect.
fn translate(p: &str) -> Result<String, String> {
    formcast_grammar::ecma::translate(p, formcast_grammar::ecma::EcmaMode::Lenient)
        .map(|t| t.text)
        .map_err(|e| match e {
            formcast_grammar::GrammarError::RegexSyntax { message, .. } => message,
            other => other.to_string(),
        })
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
