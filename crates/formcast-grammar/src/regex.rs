//! Regular expressions to [`Expr`] (through `regex-syntax`).
//!
//! The syntax is that of Rust's `regex` crate, Unicode mode on. A pattern
//! denotes the set of strings it matches *in full*: it is implicitly anchored
//! at both ends, so greedy and lazy quantifiers are the same thing here.
//!
//! * Literals become [`Expr::Bytes`] (UTF-8), Unicode classes (`[a-z]`, `\d`,
//!   `\w`, `\s`, `\p{Greek}`, their negations, case-insensitive literals)
//!   become [`Expr::Chars`], byte classes (`(?-u:[\x80-\xFF])`) become
//!   [`Expr::ByteSet`].
//! * `.` matches any character except `\n` (as in most regex engines); use
//!   `(?s:.)` or `[\s\S]` for any character at all.
//! * `^`, `$`, `\A`, `\z` are accepted at the very start / very end of the
//!   pattern (or of a top-level alternative), where they mean nothing more
//!   than the implicit anchoring; anywhere else they are an error, and so are
//!   word boundaries (`\b`, `\B`, `\<`, ...).
//! * Backreferences and lookaround are errors (they are not regular).
//!
//! Error positions are byte offsets into the pattern.

use regex_syntax::ast::{self, Ast};
use regex_syntax::hir::{self, Class, Hir, HirKind};

use crate::ir::normalize_ranges;
use crate::{Expr, Grammar, GrammarError, MAX_NESTING_DEPTH, MAX_REPEAT_BOUND};

/// Converts a regex pattern into an expression matching exactly the
/// pattern's full matches (the pattern is implicitly anchored at both ends).
///
/// The expression may denote the empty language (`[^\s\S]`); use
/// [`regex_grammar`] to have that rejected.
pub fn regex_to_expr(pattern: &str) -> Result<Expr, GrammarError> {
    let ast = ast::parse::ParserBuilder::new()
        .nest_limit(MAX_NESTING_DEPTH as u32)
        .build()
        .parse(pattern)
        .map_err(|e| ast_error(pattern, &e))?;
    check_ast(pattern, &ast)?;
    let hir = hir::translate::TranslatorBuilder::new()
        .unicode(true)
        // Byte-oriented patterns (`(?-u:\xFF)`) are allowed: ByteSet exists
        // for them.
        .utf8(false)
        .build()
        .translate(pattern, &ast)
        .map_err(|e| GrammarError::RegexSyntax {
            position: e.span().start.offset,
            message: e.kind().to_string(),
        })?;
    check_hir_depth(&hir)?;
    Ok(lower(&hir))
}

/// Which regex syntax a pattern is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RegexDialect {
    /// Rust's `regex` crate (this module's own syntax); the default.
    #[default]
    Rust,
    /// ECMA-262 with the `u` flag, strict (see [`crate::ecma`]).
    Ecma,
}

impl RegexDialect {
    /// `"rust"` or `"ecma"`.
    pub fn from_name(name: &str) -> Option<RegexDialect> {
        match name {
            "rust" => Some(RegexDialect::Rust),
            "ecma" => Some(RegexDialect::Ecma),
            _ => None,
        }
    }
}

/// [`regex_to_expr`] for a pattern in `dialect`; error positions are byte
/// offsets into `pattern` itself.
pub fn regex_to_expr_in(pattern: &str, dialect: RegexDialect) -> Result<Expr, GrammarError> {
    match dialect {
        RegexDialect::Rust => regex_to_expr(pattern),
        RegexDialect::Ecma => {
            let t = crate::ecma::translate(pattern, crate::ecma::EcmaMode::Unicode)?;
            regex_to_expr(&t.text).map_err(|e| match e {
                GrammarError::RegexSyntax { position, message } => GrammarError::RegexSyntax {
                    position: t.source_offset(position),
                    message,
                },
                other => other,
            })
        }
    }
}

/// A one-rule grammar (`root`) for a regex; rejects patterns that match
/// nothing at all.
pub fn regex_grammar(pattern: &str) -> Result<Grammar, GrammarError> {
    regex_grammar_in(pattern, RegexDialect::Rust)
}

/// [`regex_grammar`] for a pattern in `dialect`.
pub fn regex_grammar_in(pattern: &str, dialect: RegexDialect) -> Result<Grammar, GrammarError> {
    let body = regex_to_expr_in(pattern, dialect)?;
    let grammar = Grammar {
        rules: vec![crate::Rule::new("root", body)],
        root: 0,
    };
    crate::validate::validate(&grammar)?;
    Ok(grammar)
}

/// The same language as a Python `re` pattern (for readers that run
/// Python's regex machinery over what the grammar allows): classes as code
/// point ranges, literals escaped, groups non-capturing, no flags. Byte-level
/// classes and non-UTF-8 literals have no such form.
pub fn python_pattern(expr: &Expr) -> Result<String, GrammarError> {
    let mut out = String::new();
    py_expr(expr, &mut out, 0)?;
    Ok(out)
}

fn py_char(c: u32, out: &mut String) {
    match char::from_u32(c) {
        Some(ch) if ch.is_ascii_alphanumeric() || ch == '_' => out.push(ch),
        _ => out.push_str(&format!("\\U{c:08x}")),
    }
}

/// `prec`: 0 anywhere, 1 inside a sequence (an alternation needs a group),
/// 2 as a repeat's operand (anything but one character or class does).
fn py_expr(e: &Expr, out: &mut String, prec: u8) -> Result<(), GrammarError> {
    let unsupported = |what: &str| GrammarError::Invalid(format!("{what} has no Python regex form"));
    match e {
        Expr::Empty => out.push_str("(?:)"),
        Expr::Nothing => out.push_str("[^\\x00-\\U0010ffff]"),
        Expr::Bytes(b) => {
            let s = std::str::from_utf8(b).map_err(|_| unsupported("a non-UTF-8 literal"))?;
            let wrap = prec == 2 && s.chars().count() != 1;
            if wrap {
                out.push_str("(?:");
            }
            for ch in s.chars() {
                py_char(ch as u32, out);
            }
            if wrap {
                out.push(')');
            }
        }
        Expr::Chars(ranges) => {
            out.push('[');
            for &(lo, hi) in ranges {
                py_char(lo, out);
                if hi > lo {
                    out.push('-');
                    py_char(hi, out);
                }
            }
            out.push(']');
        }
        Expr::Seq(items) => {
            if prec == 2 {
                out.push_str("(?:");
            }
            for item in items {
                py_expr(item, out, 1)?;
            }
            if prec == 2 {
                out.push(')');
            }
        }
        Expr::Alt(items) => {
            if items.is_empty() {
                return py_expr(&Expr::Nothing, out, prec);
            }
            if prec > 0 {
                out.push_str("(?:");
            }
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push('|');
                }
                py_expr(item, out, 0)?;
            }
            if prec > 0 {
                out.push(')');
            }
        }
        Expr::Repeat { expr, min, max } => {
            py_expr(expr, out, 2)?;
            match max {
                Some(m) if m == min => out.push_str(&format!("{{{min}}}")),
                Some(m) => out.push_str(&format!("{{{min},{m}}}")),
                None => out.push_str(&format!("{{{min},}}")),
            }
        }
        Expr::ByteSet(_) => return Err(unsupported("a byte-level class")),
        _ => return Err(unsupported("a non-regex expression")),
    }
    Ok(())
}

fn regex_err(position: usize, message: impl Into<String>) -> GrammarError {
    GrammarError::RegexSyntax {
        position,
        message: message.into(),
    }
}

/// Translates a parse error, rewording the unsupported constructs that
/// regex-syntax reports generically (or that users most often try).
fn ast_error(pattern: &str, e: &ast::Error) -> GrammarError {
    let position = e.span().start.offset;
    let at = pattern.get(position..).unwrap_or("");
    // Group syntax of other dialects fails on its first unknown "flag",
    // right after "(?".
    let group = position
        .checked_sub(2)
        .filter(|&g| pattern.get(g..position) == Some("(?"))
        .map(|g| (g, &pattern[g..]));
    match (e.kind(), group) {
        (ast::ErrorKind::UnsupportedBackreference, _) => regex_err(position, "backreferences are not supported"),
        (ast::ErrorKind::UnsupportedLookAround, _) => regex_err(position, "lookaround is not supported"),
        (ast::ErrorKind::NestLimitExceeded(limit), _) => GrammarError::Limit(format!(
            "regex nested deeper than {limit} levels at position {position}"
        )),
        (_, Some((g, text))) if text.starts_with("(?P=") => regex_err(g, "backreferences are not supported"),
        (_, Some((g, text))) if text.starts_with("(?>") => regex_err(g, "atomic groups are not supported"),
        (_, Some((g, text))) if text.starts_with("(?#") => regex_err(
            g,
            "inline comments '(?#...)' are not supported (use the x flag and '#' comments)",
        ),
        _ if at.starts_with("\\k<") || at.starts_with("\\k{") || at.starts_with("\\g") => {
            regex_err(position, "backreferences are not supported")
        }
        (kind, _) => regex_err(position, kind.to_string()),
    }
}

/// Checks the constructs that the HIR no longer locates: anchor placement
/// and repetition bounds. Each pending node carries `at_start`/`at_end`:
/// whether nothing but zero-width items can precede/follow it in a match.
/// Explicit stack: frames of a recursive walk are large in debug builds.
fn check_ast(pattern: &str, ast: &Ast) -> Result<(), GrammarError> {
    let mut stack = vec![(ast, true, true)];
    while let Some((ast, at_start, at_end)) = stack.pop() {
        match ast {
            Ast::Assertion(a) => check_assertion(pattern, a, at_start, at_end)?,
            Ast::Concat(c) => {
                let n = c.asts.len();
                // prefix_clear[i]: everything before item i is zero-width start
                // material; suffix_clear[i]: everything after it is end material.
                let mut prefix_clear = vec![at_start; n];
                for i in 1..n {
                    prefix_clear[i] = prefix_clear[i - 1] && is_start_material(&c.asts[i - 1]);
                }
                let mut suffix_clear = vec![at_end; n];
                for i in (0..n.saturating_sub(1)).rev() {
                    suffix_clear[i] = suffix_clear[i + 1] && is_end_material(&c.asts[i + 1]);
                }
                // Reversed so that the leftmost problem is reported first.
                for (i, item) in c.asts.iter().enumerate().rev() {
                    stack.push((item, prefix_clear[i], suffix_clear[i]));
                }
            }
            Ast::Alternation(a) => stack.extend(a.asts.iter().rev().map(|b| (b, at_start, at_end))),
            Ast::Group(g) => stack.push((&g.ast, at_start, at_end)),
            Ast::Repetition(r) => {
                let bounds = match &r.op.kind {
                    ast::RepetitionKind::Range(ast::RepetitionRange::Exactly(n))
                    | ast::RepetitionKind::Range(ast::RepetitionRange::AtLeast(n)) => [*n, 0],
                    ast::RepetitionKind::Range(ast::RepetitionRange::Bounded(m, n)) => [*m, *n],
                    _ => [0, 0],
                };
                if let Some(big) = bounds.iter().find(|&&b| b > MAX_REPEAT_BOUND) {
                    return Err(GrammarError::Limit(format!(
                        "repetition bound {big} at position {} exceeds the limit of {MAX_REPEAT_BOUND}",
                        r.op.span.start.offset
                    )));
                }
                // Inside a repetition an anchor would sit between copies.
                stack.push((&r.ast, false, false));
            }
            _ => {}
        }
    }
    Ok(())
}

fn check_assertion(pattern: &str, a: &ast::Assertion, at_start: bool, at_end: bool) -> Result<(), GrammarError> {
    let text = pattern.get(a.span.start.offset..a.span.end.offset).unwrap_or("");
    let position = a.span.start.offset;
    match a.kind {
        ast::AssertionKind::StartLine | ast::AssertionKind::StartText if !at_start => Err(regex_err(
            position,
            format!("the anchor '{text}' is only supported at the start of the pattern"),
        )),
        ast::AssertionKind::EndLine | ast::AssertionKind::EndText if !at_end => Err(regex_err(
            position,
            format!("the anchor '{text}' is only supported at the end of the pattern"),
        )),
        ast::AssertionKind::StartLine
        | ast::AssertionKind::StartText
        | ast::AssertionKind::EndLine
        | ast::AssertionKind::EndText => Ok(()),
        _ => Err(regex_err(
            position,
            format!("word boundaries ('{text}') are not supported"),
        )),
    }
}

fn is_start_material(ast: &Ast) -> bool {
    match ast {
        Ast::Empty(_) | Ast::Flags(_) => true,
        Ast::Assertion(a) => matches!(a.kind, ast::AssertionKind::StartLine | ast::AssertionKind::StartText),
        _ => false,
    }
}

fn is_end_material(ast: &Ast) -> bool {
    match ast {
        Ast::Empty(_) | Ast::Flags(_) => true,
        Ast::Assertion(a) => matches!(a.kind, ast::AssertionKind::EndLine | ast::AssertionKind::EndText),
        _ => false,
    }
}

/// Rejects HIR deeper than [`MAX_NESTING_DEPTH`] before the recursive
/// lowering runs (explicit stack: the depth is not known yet).
fn check_hir_depth(hir: &Hir) -> Result<(), GrammarError> {
    let mut stack = vec![(hir, 1usize)];
    while let Some((h, depth)) = stack.pop() {
        if depth > MAX_NESTING_DEPTH {
            return Err(GrammarError::Limit(format!(
                "regex nested deeper than {MAX_NESTING_DEPTH} levels"
            )));
        }
        match h.kind() {
            HirKind::Repetition(r) => stack.push((&r.sub, depth + 1)),
            HirKind::Capture(c) => stack.push((&c.sub, depth + 1)),
            HirKind::Concat(v) | HirKind::Alternation(v) => stack.extend(v.iter().map(|s| (s, depth + 1))),
            _ => {}
        }
    }
    Ok(())
}

/// HIR to `Expr`, post-order with an explicit stack (no recursion).
fn lower(root: &Hir) -> Expr {
    enum Task<'h> {
        Visit(&'h Hir),
        Build(&'h Hir),
    }
    let mut tasks = vec![Task::Visit(root)];
    let mut out: Vec<Expr> = Vec::new();
    while let Some(task) = tasks.pop() {
        match task {
            Task::Visit(h) => match h.kind() {
                // Anchors reaching here were checked to sit at the very start
                // or end, where full-match semantics already imply them.
                HirKind::Empty | HirKind::Look(_) => out.push(Expr::Empty),
                HirKind::Literal(hir::Literal(bytes)) => out.push(Expr::Bytes(bytes.to_vec())),
                HirKind::Class(Class::Unicode(c)) => {
                    let ranges: Vec<(u32, u32)> =
                        c.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect();
                    out.push(if ranges.is_empty() {
                        Expr::Nothing
                    } else {
                        Expr::Chars(normalize_ranges(ranges))
                    });
                }
                HirKind::Class(Class::Bytes(c)) => {
                    let ranges: Vec<(u8, u8)> = c.ranges().iter().map(|r| (r.start(), r.end())).collect();
                    out.push(if ranges.is_empty() {
                        Expr::Nothing
                    } else {
                        Expr::ByteSet(ranges)
                    });
                }
                HirKind::Capture(c) => tasks.push(Task::Visit(&c.sub)),
                HirKind::Repetition(r) => {
                    tasks.push(Task::Build(h));
                    tasks.push(Task::Visit(&r.sub));
                }
                HirKind::Concat(items) | HirKind::Alternation(items) => {
                    tasks.push(Task::Build(h));
                    tasks.extend(items.iter().rev().map(Task::Visit));
                }
            },
            Task::Build(h) => {
                let built = match h.kind() {
                    HirKind::Repetition(r) => {
                        let sub = out.pop().expect("lowered repetition operand");
                        if r.min == 1 && r.max == Some(1) {
                            sub
                        } else {
                            Expr::Repeat {
                                expr: Box::new(sub),
                                min: r.min,
                                max: r.max,
                            }
                        }
                    }
                    HirKind::Concat(items) => {
                        // Dropped anchors leave `Empty` items behind.
                        let mut parts = out.split_off(out.len() - items.len());
                        parts.retain(|e| *e != Expr::Empty);
                        match parts.len() {
                            0 => Expr::Empty,
                            1 => parts.pop().expect("one part"),
                            _ => Expr::Seq(parts),
                        }
                    }
                    HirKind::Alternation(items) => Expr::Alt(out.split_off(out.len() - items.len())),
                    _ => unreachable!("only composite nodes are built"),
                };
                out.push(built);
            }
        }
    }
    out.pop().expect("one lowered expression")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::MAX_CHAR;

    fn err(pattern: &str) -> (usize, String) {
        match regex_to_expr(pattern) {
            Err(GrammarError::RegexSyntax { position, message }) => (position, message),
            other => panic!("expected a regex error for {pattern:?}, got {other:?}"),
        }
    }

    #[test]
    fn literals_and_classes() {
        assert_eq!(regex_to_expr("abc").unwrap(), Expr::Bytes(b"abc".to_vec()));
        assert_eq!(regex_to_expr("é").unwrap(), Expr::Bytes("é".as_bytes().to_vec()));
        assert_eq!(regex_to_expr("[a-c]").unwrap(), Expr::Chars(vec![(0x61, 0x63)]));
        assert_eq!(regex_to_expr("").unwrap(), Expr::Empty);
        assert_eq!(regex_to_expr(r"\d").unwrap(), regex_to_expr(r"\p{Nd}").unwrap());
        assert_eq!(
            regex_to_expr(r"(?-u:[\x80-\xFF])").unwrap(),
            Expr::ByteSet(vec![(0x80, 0xFF)])
        );
        assert_eq!(regex_to_expr(r"(?-u:\xFF)").unwrap(), Expr::Bytes(vec![0xFF]));
        // `\xFF` in Unicode mode is the character U+00FF.
        assert_eq!(regex_to_expr(r"\xFF").unwrap(), Expr::Bytes("ÿ".as_bytes().to_vec()));
        assert_eq!(regex_to_expr("[^\\s\\S]").unwrap(), Expr::Nothing);
    }

    #[test]
    fn dot_excludes_newline_only() {
        assert_eq!(regex_to_expr(".").unwrap(), Expr::Chars(vec![(0, 9), (11, MAX_CHAR)]));
        assert_eq!(regex_to_expr("(?s).").unwrap(), Expr::Chars(vec![(0, MAX_CHAR)]));
    }

    #[test]
    fn quantifiers() {
        let a = || Box::new(Expr::Bytes(b"a".to_vec()));
        assert_eq!(
            regex_to_expr("a*").unwrap(),
            Expr::Repeat {
                expr: a(),
                min: 0,
                max: None
            }
        );
        assert_eq!(
            regex_to_expr("a+?").unwrap(),
            Expr::Repeat {
                expr: a(),
                min: 1,
                max: None
            }
        );
        assert_eq!(
            regex_to_expr("a??").unwrap(),
            Expr::Repeat {
                expr: a(),
                min: 0,
                max: Some(1)
            }
        );
        assert_eq!(
            regex_to_expr("a{2,5}").unwrap(),
            Expr::Repeat {
                expr: a(),
                min: 2,
                max: Some(5)
            }
        );
        assert_eq!(
            regex_to_expr("a{3,}").unwrap(),
            Expr::Repeat {
                expr: a(),
                min: 3,
                max: None
            }
        );
        assert_eq!(regex_to_expr("(?:a){1}").unwrap(), Expr::Bytes(b"a".to_vec()));
        assert!(matches!(regex_to_expr("a{100001}"), Err(GrammarError::Limit(m)) if m.contains("position 1")));
        assert!(matches!(regex_to_expr("a{1,200000}"), Err(GrammarError::Limit(_))));
        assert!(regex_to_expr("a{100000}").is_ok());
    }

    #[test]
    fn groups_and_alternation() {
        let e = regex_to_expr("(ab|c)(?:d|e)").unwrap();
        match e {
            Expr::Seq(items) => {
                assert_eq!(items.len(), 2);
                assert!(matches!(&items[0], Expr::Alt(a) if a.len() == 2));
            }
            other => panic!("unexpected {other:?}"),
        }
        // Case-insensitive literals become classes.
        assert_eq!(
            regex_to_expr("(?i)k").unwrap(),
            Expr::Chars(vec![(0x4B, 0x4B), (0x6B, 0x6B), (0x212A, 0x212A)])
        );
    }

    #[test]
    fn anchors_at_the_ends_are_dropped() {
        assert_eq!(regex_to_expr("^abc$").unwrap(), regex_to_expr("abc").unwrap());
        assert_eq!(regex_to_expr(r"\Aabc\z").unwrap(), regex_to_expr("abc").unwrap());
        assert!(regex_to_expr("(?i)^a$").is_ok());
        assert!(regex_to_expr("^a|^b$").is_ok());
        assert!(regex_to_expr("(^a)$").is_ok());
        assert!(regex_to_expr("^$").is_ok());
    }

    #[test]
    fn misplaced_anchors_are_errors() {
        assert_eq!(
            err("a^b"),
            (1, "the anchor '^' is only supported at the start of the pattern".into())
        );
        assert_eq!(
            err("a$b"),
            (1, "the anchor '$' is only supported at the end of the pattern".into())
        );
        assert_eq!(err("(^a)*").0, 1);
        assert_eq!(err(r"foo\b"), (3, r"word boundaries ('\b') are not supported".into()));
        assert_eq!(err(r"\Bx").0, 0);
    }

    #[test]
    fn unsupported_constructs_are_named() {
        assert_eq!(err(r"(a)\1"), (3, "backreferences are not supported".into()));
        assert_eq!(err(r"a(?=b)"), (1, "lookaround is not supported".into()));
        assert_eq!(err(r"a(?!b)").1, "lookaround is not supported");
        assert_eq!(err(r"(?<=a)b"), (0, "lookaround is not supported".into()));
        assert_eq!(err(r"(?<!a)b").1, "lookaround is not supported");
        assert_eq!(err(r"(?P<n>a)(?P=n)").1, "backreferences are not supported");
        assert_eq!(err(r"(?<n>a)\k<n>").1, "backreferences are not supported");
        assert_eq!(err(r"(?P<n>a)(?P=n)").0, 8);
        assert_eq!(err(r"(?>a)"), (0, "atomic groups are not supported".into()));
        assert_eq!(err(r"a(?#c)").0, 1);
    }

    #[test]
    fn syntax_errors_have_positions() {
        let (pos, msg) = err("ab(c");
        assert_eq!(pos, 2);
        assert!(msg.contains("unclosed group"), "{msg}");
        let (pos, _) = err("a{3,2}");
        assert_eq!(pos, 1);
        assert!(err("[z-a]").1.contains("invalid"));
    }

    #[test]
    fn deep_nesting_is_a_limit_error_not_a_crash() {
        let deep = format!("{}a{}", "(".repeat(5000), ")".repeat(5000));
        assert!(matches!(regex_to_expr(&deep), Err(GrammarError::Limit(_))));
        let ok = format!("{}a{}", "(?:".repeat(300), ")*".repeat(300));
        assert!(regex_to_expr(&ok).is_ok());
    }

    #[test]
    fn empty_language_is_rejected_by_regex_grammar() {
        assert!(matches!(
            regex_grammar("[^\\s\\S]"),
            Err(GrammarError::EmptyLanguage(_))
        ));
        assert!(regex_grammar("[a-z]+").is_ok());
    }
}
