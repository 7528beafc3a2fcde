//! GBNF (llama.cpp's EBNF dialect) to [`Grammar`].
//!
//! Every grammar llama.cpp accepts loads unchanged, with the same meaning:
//!
//! * rules `name ::= body`; names are `[a-zA-Z0-9_-]+`; rules may appear in
//!   any order (forward references), may be left- or right-recursive, and may
//!   span several lines: a rule ends where the next `name ::=` begins (the
//!   name and `::=` must be on one line). llama.cpp only allows line breaks
//!   inside parentheses and after `|`; we allow them anywhere, a superset.
//! * `#` comments up to the end of the line;
//! * string literals `"..."` (lowered to [`Expr::Bytes`] in UTF-8);
//! * character classes `[a-z_]`, negated `[^...]` (lowered to
//!   [`Expr::Chars`]); `[^]` and `.` match any character, newline included;
//! * escapes in literals and classes: `\n \t \r \\ \" \' \[ \] \-`, and
//!   `\xHH \uHHHH \UHHHHHHHH` denoting the *code point* U+HH.. (llama.cpp's
//!   meaning, not a raw byte);
//! * groups `( )`, alternation `|` (empty alternatives allowed), postfix
//!   `? * +`, bounded repetition `{n} {m,} {m,n} {,n}`;
//! * token references `<[123]>` (token id 123) and `!<[123]>` (any single
//!   token but 123); textual references such as `<think>` need a tokenizer
//!   and are resolved through [`parse_ebnf_with_tokens`].
//!
//! Errors carry 1-based line and column numbers (columns count characters).

use std::collections::HashMap;

use crate::ir::{complement_ranges, normalize_ranges, MAX_CHAR};
use crate::{Expr, Grammar, GrammarError, Rule, RuleId, TokenId, MAX_NESTING_DEPTH, MAX_REPEAT_BOUND};

/// Parses GBNF (llama.cpp's EBNF dialect, with its usual extensions) into a
/// grammar whose start rule is `root`.
///
/// Textual token references such as `<think>` are rejected (use
/// [`parse_ebnf_with_tokens`] to resolve them); numeric ones (`<[42]>`) work.
pub fn parse_ebnf(text: &str, root: &str) -> Result<Grammar, GrammarError> {
    Parser::new(text, None).run(root)
}

/// Like [`parse_ebnf`], resolving textual token references (`<think>`,
/// `!<eos>`) with `resolve`, which receives the reference with its angle
/// brackets (`"<think>"`) and returns the id of the single vocabulary token it
/// denotes, or `None` if there is no such token.
pub fn parse_ebnf_with_tokens(
    text: &str,
    root: &str,
    resolve: &mut dyn FnMut(&str) -> Option<TokenId>,
) -> Result<Grammar, GrammarError> {
    Parser::new(text, Some(resolve)).run(root)
}

/// 1-based (line, column) of a byte offset; columns count characters.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// A character as it should appear in a message.
fn describe(c: char) -> String {
    match c {
        '\n' => "a line break".into(),
        '\'' => "a single quote (string literals use double quotes)".into(),
        c if c.is_control() || c.is_whitespace() => format!("character U+{:04X}", c as u32),
        c => format!("'{c}'"),
    }
}

fn describe_cp(cp: u32) -> String {
    match char::from_u32(cp) {
        Some(c) if !c.is_control() && !c.is_whitespace() => c.to_string(),
        _ => format!("U+{cp:04X}"),
    }
}

/// An expression plus the height of its tree, tracked so that no input can
/// build an `Expr` deeper than [`MAX_NESTING_DEPTH`].
type Node = (Expr, usize);

/// Maps a textual token reference (`<think>`) to a token id.
type TokenResolver<'r> = &'r mut dyn FnMut(&str) -> Option<TokenId>;

/// An open group (or the rule body itself) while its contents are parsed.
struct Frame {
    /// Offset of the '(' (for "unclosed" errors).
    open: usize,
    /// Finished alternatives.
    alts: Vec<Node>,
    /// Items of the alternative being parsed.
    items: Vec<Node>,
}

impl Frame {
    fn finish(mut self, parser: &Parser) -> Result<Node, GrammarError> {
        let seq = parser.wrap(self.items, Expr::Seq)?;
        self.alts.push(seq);
        parser.wrap(self.alts, Expr::Alt)
    }
}

struct Parser<'a, 'r> {
    src: &'a str,
    pos: usize,
    ids: HashMap<&'a str, RuleId>,
    names: Vec<&'a str>,
    bodies: Vec<Option<Expr>>,
    /// Byte offset of the first reference to each rule (for "undefined" errors).
    first_ref: Vec<Option<usize>>,
    resolve: Option<TokenResolver<'r>>,
}

impl<'a, 'r> Parser<'a, 'r> {
    fn new(src: &'a str, resolve: Option<TokenResolver<'r>>) -> Self {
        Parser {
            src,
            pos: 0,
            ids: HashMap::new(),
            names: Vec::new(),
            bodies: Vec::new(),
            first_ref: Vec::new(),
            resolve,
        }
    }

    // ---- low-level helpers ----

    #[cold]
    #[inline(never)]
    fn err(&self, offset: usize, message: impl Into<String>) -> GrammarError {
        let (line, column) = line_col(self.src, offset);
        GrammarError::EbnfSyntax {
            line,
            column,
            message: message.into(),
        }
    }

    #[cold]
    #[inline(never)]
    fn limit(&self, offset: usize, what: String) -> GrammarError {
        let (line, column) = line_col(self.src, offset);
        GrammarError::Limit(format!("{what} at line {line}, column {column}"))
    }

    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek_byte(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    fn next_char(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Skips blanks, line breaks and `#` comments.
    fn skip_ws(&mut self) {
        let bytes = self.src.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            match b {
                b' ' | b'\t' | b'\r' | b'\n' => self.pos += 1,
                b'#' => {
                    while self.pos < bytes.len() && bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn name_end(&self, start: usize) -> usize {
        let bytes = self.src.as_bytes();
        let mut end = start;
        while end < bytes.len() && is_name_byte(bytes[end]) {
            end += 1;
        }
        end
    }

    /// Whether `name ::=` starts at `start` (which is where a rule body ends).
    fn at_rule_start(&self, start: usize) -> bool {
        let end = self.name_end(start);
        if end == start {
            return false;
        }
        let after = self.src[end..].trim_start_matches([' ', '\t']);
        after.starts_with("::=")
    }

    fn intern(&mut self, name: &'a str) -> RuleId {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as RuleId;
        self.ids.insert(name, id);
        self.names.push(name);
        self.bodies.push(None);
        self.first_ref.push(None);
        id
    }

    // ---- grammar structure ----

    fn run(mut self, root: &str) -> Result<Grammar, GrammarError> {
        self.skip_ws();
        while self.pos < self.src.len() {
            self.parse_rule()?;
            self.skip_ws();
        }
        // Report the undefined rule referenced first in the text.
        let undefined = (0..self.names.len())
            .filter(|&i| self.bodies[i].is_none())
            .filter_map(|i| self.first_ref[i].map(|off| (off, i)))
            .min();
        if let Some((offset, i)) = undefined {
            let (line, column) = line_col(self.src, offset);
            return Err(GrammarError::UndefinedRule {
                name: self.names[i].to_string(),
                line,
                column,
            });
        }
        let root_id = match self.ids.get(root) {
            Some(&id) if self.bodies[id as usize].is_some() => id,
            _ => return Err(GrammarError::MissingRoot(root.to_string())),
        };
        let rules = self
            .names
            .iter()
            .zip(self.bodies)
            .map(|(name, body)| Rule::new(name.to_string(), body.unwrap_or(Expr::Nothing)))
            .collect();
        let grammar = Grammar { rules, root: root_id };
        crate::validate::validate(&grammar)?;
        Ok(grammar)
    }

    fn parse_rule(&mut self) -> Result<(), GrammarError> {
        let start = self.pos;
        let end = self.name_end(start);
        if end == start {
            if self.rest().starts_with("::=") {
                return Err(self.err(start, "expected a rule name before '::='"));
            }
            if self.peek() == Some(')') {
                return Err(self.err(start, "unmatched ')'"));
            }
            let found = self.peek().map_or_else(|| "end of input".into(), describe);
            return Err(self.err(
                start,
                format!("expected a rule name (as in `name ::= ...`), found {found}"),
            ));
        }
        let name = &self.src[start..end];
        self.pos = end;
        while matches!(self.peek_byte(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
        if !self.rest().starts_with("::=") {
            return Err(self.err(self.pos, format!("expected '::=' after rule name '{name}'")));
        }
        self.pos += 3;
        let body = self.parse_body()?;
        // A body stops at the end of input, at the next `name ::=`, or at a
        // stray ')'.
        if self.peek_byte() == Some(b')') {
            return Err(self.err(self.pos, "unmatched ')'"));
        }
        let id = self.intern(name) as usize;
        if self.bodies[id].is_some() {
            let (line, column) = line_col(self.src, start);
            return Err(GrammarError::DuplicateRule {
                name: name.to_string(),
                line,
                column,
            });
        }
        self.bodies[id] = Some(body);
        Ok(())
    }

    /// Parses a rule body: alternatives of sequences of postfixed items, with
    /// nested groups. Iterative (one frame per open parenthesis on an
    /// explicit stack), so nesting depth costs no call stack.
    fn parse_body(&mut self) -> Result<Expr, GrammarError> {
        // The innermost frame is last; the first one is the body itself.
        let mut frames = vec![Frame {
            open: self.pos,
            alts: Vec::new(),
            items: Vec::new(),
        }];
        loop {
            self.skip_ws();
            let atom = match self.peek_byte() {
                Some(b'(') => {
                    if frames.len() > MAX_NESTING_DEPTH {
                        return Err(self.too_deep(self.pos, "parentheses"));
                    }
                    frames.push(Frame {
                        open: self.pos,
                        alts: Vec::new(),
                        items: Vec::new(),
                    });
                    self.pos += 1;
                    continue;
                }
                Some(b'|') => {
                    self.pos += 1;
                    let frame = frames.last_mut().expect("the body frame");
                    let seq = self.wrap(std::mem::take(&mut frame.items), Expr::Seq)?;
                    frame.alts.push(seq);
                    continue;
                }
                Some(b')') if frames.len() > 1 => {
                    self.pos += 1;
                    let frame = frames.pop().expect("a group frame");
                    frame.finish(self)?
                }
                // A body ends at the end of input, at the next `name ::=`,
                // or at a stray ')' (reported by the caller).
                None | Some(b')') => break,
                Some(b) if is_name_byte(b) => match self.parse_reference() {
                    Some(node) => node,
                    None => break,
                },
                Some(b'"') => self.parse_literal()?,
                Some(b'[') => self.parse_class()?,
                Some(b'.') => {
                    self.pos += 1;
                    (Expr::Chars(any_char()), 1)
                }
                Some(b'<' | b'!') => self.parse_token()?,
                Some(_) => return Err(self.unexpected_in_body()),
            };
            let item = self.parse_postfix(atom)?;
            frames.last_mut().expect("the body frame").items.push(item);
        }
        if frames.len() > 1 {
            let open = frames.last().expect("a group frame").open;
            return Err(self.unclosed_group(open));
        }
        let frame = frames.pop().expect("the body frame");
        Ok(frame.finish(self)?.0)
    }

    /// Builds `Seq`/`Alt` from parts, without a wrapper for a single part.
    fn wrap(&self, mut parts: Vec<Node>, make: fn(Vec<Expr>) -> Expr) -> Result<Node, GrammarError> {
        Ok(match parts.len() {
            0 => (Expr::Empty, 1),
            1 => parts.pop().expect("one part"),
            _ => {
                let height = 1 + parts.iter().map(|p| p.1).max().unwrap_or(0);
                if height > MAX_NESTING_DEPTH {
                    return Err(self.too_deep(self.pos, "expression"));
                }
                (make(parts.into_iter().map(|p| p.0).collect()), height)
            }
        })
    }

    /// A rule reference, or `None` if the name starts the next rule.
    fn parse_reference(&mut self) -> Option<Node> {
        let start = self.pos;
        if self.at_rule_start(start) {
            return None;
        }
        let end = self.name_end(start);
        let id = self.intern(&self.src[start..end]);
        self.first_ref[id as usize].get_or_insert(start);
        self.pos = end;
        Some((Expr::Rule(id), 1))
    }

    #[cold]
    #[inline(never)]
    fn unexpected_in_body(&self) -> GrammarError {
        let start = self.pos;
        match self.peek() {
            Some(c @ ('*' | '+' | '?' | '{')) => self.err(start, format!("'{c}' must follow an item to repeat")),
            Some(':') if self.rest().starts_with("::=") => self.err(
                start,
                "unexpected '::=': a rule definition needs the rule name before '::=' on the same line",
            ),
            Some(c) => self.err(
                start,
                format!(
                    "expected a string literal, a character class, '.', '(', a rule name or a token reference, found {}",
                    describe(c)
                ),
            ),
            None => self.err(start, "unexpected end of input"),
        }
    }

    /// Applies any postfix operators (`* + ? {m,n}`, possibly stacked) that
    /// follow an item.
    fn parse_postfix(&mut self, (mut expr, mut height): Node) -> Result<Node, GrammarError> {
        loop {
            self.skip_ws();
            let start = self.pos;
            let (min, max) = match self.peek_byte() {
                Some(b'*') => (0, None),
                Some(b'+') => (1, None),
                Some(b'?') => (0, Some(1)),
                Some(b'{') => self.parse_bounds()?,
                _ => break,
            };
            if self.src.as_bytes()[start] != b'{' {
                self.pos += 1;
            }
            height += 1;
            if height > MAX_NESTING_DEPTH {
                return Err(self.too_deep(start, "expression"));
            }
            expr = Expr::Repeat {
                expr: Box::new(expr),
                min,
                max,
            };
        }
        Ok((expr, height))
    }

    /// Parses `{n}`, `{m,}`, `{m,n}` or `{,n}`, consuming the closing brace.
    fn parse_bounds(&mut self) -> Result<(u32, Option<u32>), GrammarError> {
        let open = self.pos;
        self.pos += 1;
        self.skip_ws();
        let min = self.parse_bound()?;
        self.skip_ws();
        let (min, max) = match self.peek_byte() {
            Some(b'}') => match min {
                Some(n) => (n, Some(n)),
                None => return Err(self.err(self.pos, "expected a number after '{'")),
            },
            Some(b',') => {
                self.pos += 1;
                self.skip_ws();
                let max = self.parse_bound()?;
                self.skip_ws();
                if self.peek_byte() != Some(b'}') {
                    return Err(self.err(self.pos, "expected '}' to close the repetition bounds"));
                }
                if min.is_none() && max.is_none() {
                    return Err(self.err(open, "repetition bounds '{,}' need at least one number"));
                }
                (min.unwrap_or(0), max)
            }
            _ if min.is_none() => return Err(self.err(self.pos, "expected a number or ',' after '{'")),
            _ => return Err(self.err(self.pos, "expected ',' or '}' in repetition bounds")),
        };
        self.pos += 1; // the closing brace
        if let Some(max) = max {
            if min > max {
                return Err(self.err(open, format!("repetition minimum {min} is greater than maximum {max}")));
            }
        }
        Ok((min, max))
    }

    /// An optional decimal number, checked against [`MAX_REPEAT_BOUND`].
    fn parse_bound(&mut self) -> Result<Option<u32>, GrammarError> {
        let start = self.pos;
        let bytes = self.src.as_bytes();
        let mut value: u64 = 0;
        while let Some(&b) = bytes.get(self.pos).filter(|b| b.is_ascii_digit()) {
            value = value.saturating_mul(10).saturating_add(u64::from(b - b'0'));
            self.pos += 1;
        }
        if self.pos == start {
            return Ok(None);
        }
        if value > u64::from(MAX_REPEAT_BOUND) {
            let digits = &self.src[start..self.pos];
            let shown = if digits.len() > 24 {
                format!("{}...", &digits[..24])
            } else {
                digits.to_string()
            };
            return Err(self.limit(
                start,
                format!("repetition bound {shown} exceeds the limit of {MAX_REPEAT_BOUND}"),
            ));
        }
        Ok(Some(value as u32))
    }

    #[cold]
    #[inline(never)]
    fn unclosed_group(&self, open: usize) -> GrammarError {
        let (line, column) = line_col(self.src, open);
        self.err(
            self.pos,
            format!("expected ')' to close the '(' at line {line}, column {column}"),
        )
    }

    #[cold]
    #[inline(never)]
    fn too_deep(&self, offset: usize, what: &str) -> GrammarError {
        self.limit(offset, format!("{what} nested deeper than {MAX_NESTING_DEPTH} levels"))
    }

    /// Parses one escape sequence starting at the backslash; returns a code
    /// point (possibly a surrogate: callers decide whether that is allowed).
    fn parse_escape(&mut self) -> Result<u32, GrammarError> {
        let start = self.pos;
        self.pos += 1;
        let Some(c) = self.next_char() else {
            return Err(self.err(start, "incomplete escape sequence at end of input"));
        };
        let digits = match c {
            'n' => return Ok('\n' as u32),
            't' => return Ok('\t' as u32),
            'r' => return Ok('\r' as u32),
            '\\' | '"' | '\'' | '[' | ']' | '-' => return Ok(c as u32),
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => return Err(self.err(start, format!("unknown escape sequence '\\{c}'"))),
        };
        let hex = self
            .rest()
            .bytes()
            .take(digits)
            .take_while(u8::is_ascii_hexdigit)
            .count();
        if hex < digits {
            return Err(self.err(start, format!("expected {digits} hex digits after '\\{c}'")));
        }
        let value = u32::from_str_radix(&self.rest()[..digits], 16).expect("checked hex digits");
        self.pos += digits;
        if value > MAX_CHAR {
            return Err(self.err(
                start,
                format!("code point U+{value:X} is out of range (the largest is U+10FFFF)"),
            ));
        }
        Ok(value)
    }

    fn parse_literal(&mut self) -> Result<Node, GrammarError> {
        let open = self.pos;
        self.pos += 1;
        let mut text = String::new();
        loop {
            match self.peek() {
                None => return Err(self.err(open, "unterminated string literal")),
                Some('"') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => {
                    let at = self.pos;
                    let cp = self.parse_escape()?;
                    let Some(c) = char::from_u32(cp) else {
                        return Err(self.err(
                            at,
                            format!("surrogate code point U+{cp:04X} cannot appear in a string literal"),
                        ));
                    };
                    text.push(c);
                }
                Some(c) => {
                    self.pos += c.len_utf8();
                    text.push(c);
                }
            }
        }
        Ok((Expr::literal(&text), 1))
    }

    fn parse_class(&mut self) -> Result<Node, GrammarError> {
        let open = self.pos;
        self.pos += 1;
        let negated = self.peek_byte() == Some(b'^');
        if negated {
            self.pos += 1;
        }
        let mut ranges = Vec::new();
        loop {
            let item = self.pos;
            let lo = match self.peek() {
                None => return Err(self.err(open, "unterminated character class")),
                Some(']') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => self.class_char()?,
            };
            // `-` forms a range unless it is last (`[a-]` holds 'a' and '-').
            let is_range =
                self.peek_byte() == Some(b'-') && !matches!(self.src.as_bytes().get(self.pos + 1), None | Some(b']'));
            if !is_range {
                ranges.push((lo, lo));
                continue;
            }
            self.pos += 1;
            let hi = self.class_char()?;
            if hi < lo {
                return Err(self.err(
                    item,
                    format!(
                        "invalid range '{}-{}' in character class: the start is greater than the end",
                        describe_cp(lo),
                        describe_cp(hi)
                    ),
                ));
            }
            ranges.push((lo, hi));
        }
        let mut set = normalize_ranges(ranges);
        if negated {
            set = complement_ranges(&set);
        }
        let set = remove_surrogates(set);
        Ok((
            if set.is_empty() {
                Expr::Nothing
            } else {
                Expr::Chars(set)
            },
            1,
        ))
    }

    fn class_char(&mut self) -> Result<u32, GrammarError> {
        if self.peek_byte() == Some(b'\\') {
            self.parse_escape()
        } else {
            // The caller checked that a character follows.
            Ok(self.next_char().map_or(0, |c| c as u32))
        }
    }

    /// `<[id]>`, `!<[id]>`, `<text>`, `!<text>`.
    fn parse_token(&mut self) -> Result<Node, GrammarError> {
        let negated = self.peek_byte() == Some(b'!');
        if negated {
            self.pos += 1;
            if self.peek_byte() != Some(b'<') {
                return Err(self.err(
                    self.pos,
                    "expected '<' after '!' (a negated token reference looks like !<[id]>)",
                ));
            }
        }
        let open = self.pos;
        self.pos += 1;
        let id = if self.peek_byte() == Some(b'[') {
            self.pos += 1;
            let digits = self.rest().bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(self.err(self.pos, "expected a token id after '<['"));
            }
            let text = &self.rest()[..digits];
            let Ok(id) = text.parse::<TokenId>() else {
                return Err(self.err(self.pos, format!("token id {text} is too large")));
            };
            self.pos += digits;
            if !self.rest().starts_with("]>") {
                return Err(self.err(self.pos, "expected ']>' to close the token reference"));
            }
            self.pos += 2;
            id
        } else {
            let Some(len) = self
                .rest()
                .find(['>', '\n'])
                .filter(|&i| self.rest().as_bytes()[i] == b'>')
            else {
                return Err(self.err(open, "unterminated token reference (missing '>')"));
            };
            let text = &self.src[open..self.pos + len + 1];
            self.pos += len + 1;
            let Some(resolve) = self.resolve.as_mut() else {
                return Err(self.err(
                    open,
                    format!("token reference '{text}' needs a tokenizer; use the numeric form <[id]> here"),
                ));
            };
            match resolve(text) {
                Some(id) => id,
                None => return Err(self.err(open, format!("'{text}' is not a single token of the vocabulary"))),
            }
        };
        Ok((
            if negated {
                Expr::AnyTokenExcept(vec![id])
            } else {
                Expr::Token(id)
            },
            1,
        ))
    }
}

/// Every Unicode scalar value (`.` and `[^]`).
fn any_char() -> Vec<(u32, u32)> {
    vec![(0, 0xD7FF), (0xE000, MAX_CHAR)]
}

/// Surrogates never match (they have no UTF-8 encoding), so classes keep
/// only scalar values.
fn remove_surrogates(ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    let mut out = Vec::with_capacity(ranges.len() + 1);
    for (lo, hi) in ranges {
        if hi < 0xD800 || lo > 0xDFFF {
            out.push((lo, hi));
            continue;
        }
        if lo < 0xD800 {
            out.push((lo, 0xD7FF));
        }
        if hi > 0xDFFF {
            out.push((0xE000, hi));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_body(text: &str) -> Expr {
        let g = parse_ebnf(text, "root").unwrap_or_else(|e| panic!("{text:?}: {e}"));
        g.root_rule().body.clone()
    }

    fn syntax_err(text: &str) -> (usize, usize, String) {
        match parse_ebnf(text, "root") {
            Err(GrammarError::EbnfSyntax { line, column, message }) => (line, column, message),
            other => panic!("expected a syntax error for {text:?}, got {other:?}"),
        }
    }

    fn lit(s: &str) -> Expr {
        Expr::literal(s)
    }

    #[test]
    fn literals_and_escapes() {
        assert_eq!(root_body(r#"root ::= "abc""#), lit("abc"));
        assert_eq!(root_body(r#"root ::= """#), Expr::Empty);
        assert_eq!(root_body(r#"root ::= "\n\t\r\\\"\'\[\]\-""#), lit("\n\t\r\\\"'[]-"));
        // \xHH is the code point U+00HH, encoded in UTF-8.
        assert_eq!(root_body(r#"root ::= "\xE9""#), lit("é"));
        assert_eq!(root_body(r#"root ::= "\u00e9\U0001F600""#), lit("é😀"));
        assert_eq!(root_body("root ::= \"日本\""), lit("日本"));
        assert_eq!(root_body("root ::= \"a\nb\""), lit("a\nb"));
    }

    #[test]
    fn classes() {
        assert_eq!(
            root_body("root ::= [a-cx]"),
            Expr::Chars(vec![(0x61, 0x63), (0x78, 0x78)])
        );
        assert_eq!(
            root_body("root ::= [a-]"),
            Expr::Chars(vec![(0x2D, 0x2D), (0x61, 0x61)])
        );
        assert_eq!(
            root_body("root ::= [-a]"),
            Expr::Chars(vec![(0x2D, 0x2D), (0x61, 0x61)])
        );
        assert_eq!(
            root_body(r"root ::= [\]\\\-]"),
            Expr::Chars(vec![(0x2D, 0x2D), (0x5C, 0x5D)])
        );
        assert_eq!(root_body(r"root ::= [\x00-\x1F]"), Expr::Chars(vec![(0, 0x1F)]));
        assert_eq!(root_body("root ::= [ぁ-ゟ]"), Expr::Chars(vec![(0x3041, 0x309F)]));
        assert_eq!(
            root_body("root ::= [^a]"),
            Expr::Chars(vec![(0, 0x60), (0x62, 0xD7FF), (0xE000, MAX_CHAR)])
        );
        assert_eq!(root_body("root ::= [^]"), Expr::Chars(any_char()));
        assert_eq!(root_body("root ::= ."), Expr::Chars(any_char()));
        // `[` needs no escape inside a class.
        assert_eq!(root_body("root ::= [[]"), Expr::Chars(vec![(0x5B, 0x5B)]));
    }

    #[test]
    fn empty_class_matches_nothing() {
        let g = parse_ebnf("root ::= \"a\" | x\nx ::= []", "root").unwrap();
        assert_eq!(g.rules[g.rule_id("x").unwrap() as usize].body, Expr::Nothing);
        assert!(matches!(
            parse_ebnf("root ::= []", "root"),
            Err(GrammarError::EmptyLanguage(_))
        ));
    }

    #[test]
    fn structure() {
        let g = parse_ebnf("root ::= a (b | \"c\")* \"d\"?\na ::= \"a\"\nb ::= \"b\"", "root").unwrap();
        let (a, b) = (g.rule_id("a").unwrap(), g.rule_id("b").unwrap());
        assert_eq!(
            g.root_rule().body,
            Expr::Seq(vec![
                Expr::Rule(a),
                Expr::star(Expr::Alt(vec![Expr::Rule(b), lit("c")])),
                Expr::optional(lit("d")),
            ])
        );
        // An empty alternative, as in llama.cpp's json.gbnf `ws ::= | " "`.
        assert_eq!(root_body("root ::= | \" \""), Expr::Alt(vec![Expr::Empty, lit(" ")]));
        assert_eq!(root_body("root ::="), Expr::Empty);
        // Name directly followed by a group (c.gbnf: `factor((...)`).
        assert!(parse_ebnf("root ::= x(\"a\")\nx ::= \"x\"", "root").is_ok());
    }

    #[test]
    fn repetition_bounds() {
        let rep = |min, max| Expr::Repeat {
            expr: Box::new(lit("a")),
            min,
            max,
        };
        assert_eq!(root_body("root ::= \"a\"{3}"), rep(3, Some(3)));
        assert_eq!(root_body("root ::= \"a\"{2,}"), rep(2, None));
        assert_eq!(root_body("root ::= \"a\"{ 2 , 4 }"), rep(2, Some(4)));
        assert_eq!(root_body("root ::= \"a\"{,4}"), rep(0, Some(4)));
        assert_eq!(root_body("root ::= \"a\"+"), rep(1, None));
        // Postfix operators stack, like llama.cpp.
        assert_eq!(root_body("root ::= \"a\"*?"), Expr::optional(Expr::star(lit("a"))));
        assert_eq!(root_body("root ::= \"a\"{100000}"), rep(100_000, Some(100_000)));
    }

    #[test]
    fn multi_line_rules_comments_and_recursion() {
        let text = "# leading comment\nroot ::= # after ::=\n  expr\n  | \"x\" # trailing\n\nexpr ::= expr \"+\" term | term\nterm ::= \"1\" | \"(\" expr \")\"\n";
        let g = parse_ebnf(text, "root").unwrap();
        assert_eq!(g.rules.len(), 3);
        assert!(matches!(&g.root_rule().body, Expr::Alt(a) if a.len() == 2));
        // Windows line endings.
        assert!(parse_ebnf("root ::= a\r\na ::= \"a\"\r\n", "root").is_ok());
        // A non-default root.
        let g = parse_ebnf("a ::= b\nb ::= \"b\"", "b").unwrap();
        assert_eq!(g.root_rule().name, "b");
    }

    #[test]
    fn token_references() {
        assert_eq!(
            root_body("root ::= <[1000]> !<[1001]>"),
            Expr::Seq(vec![Expr::Token(1000), Expr::AnyTokenExcept(vec![1001])])
        );
        let (_, _, m) = syntax_err("root ::= <think>");
        assert!(m.contains("needs a tokenizer"), "{m}");
        let mut resolve = |t: &str| (t == "<think>").then_some(7);
        let g = parse_ebnf_with_tokens("root ::= <think> \"x\" !<think>", "root", &mut resolve).unwrap();
        assert_eq!(
            g.root_rule().body,
            Expr::Seq(vec![Expr::Token(7), lit("x"), Expr::AnyTokenExcept(vec![7])])
        );
        let err = parse_ebnf_with_tokens("root ::= <nope>", "root", &mut resolve).unwrap_err();
        assert!(err.to_string().contains("'<nope>' is not a single token"), "{err}");
        assert!(syntax_err("root ::= <[99999999999]>").2.contains("too large"));
    }

    #[test]
    fn syntax_errors_have_positions() {
        assert_eq!(
            syntax_err("root \"a\""),
            (1, 6, "expected '::=' after rule name 'root'".into())
        );
        assert_eq!(
            syntax_err("root ::= \"abc"),
            (1, 10, "unterminated string literal".into())
        );
        assert_eq!(
            syntax_err("root ::= \"a\"\nx ::= [abc"),
            (2, 7, "unterminated character class".into())
        );
        assert_eq!(
            syntax_err("root ::= \"\\q\""),
            (1, 11, "unknown escape sequence '\\q'".into())
        );
        assert_eq!(
            syntax_err("root ::= \"\\x4\""),
            (1, 11, "expected 2 hex digits after '\\x'".into())
        );
        assert_eq!(
            syntax_err("root ::= [z-a]").2,
            "invalid range 'z-a' in character class: the start is greater than the end"
        );
        assert_eq!(
            syntax_err("root ::= (\"a\""),
            (1, 14, "expected ')' to close the '(' at line 1, column 10".into())
        );
        assert_eq!(syntax_err("root ::= \"a\" )"), (1, 14, "unmatched ')'".into()));
        assert_eq!(
            syntax_err("root ::= * \"a\""),
            (1, 10, "'*' must follow an item to repeat".into())
        );
        assert_eq!(
            syntax_err("root ::= \"a\"{3,2}"),
            (1, 13, "repetition minimum 3 is greater than maximum 2".into())
        );
        assert_eq!(syntax_err("root ::= \"a\"{x}").2, "expected a number or ',' after '{'");
        assert_eq!(
            syntax_err("root ::= \"a\"{,}").2,
            "repetition bounds '{,}' need at least one number"
        );
        assert_eq!(
            syntax_err("root ::= \"\\uD800\"").2,
            "surrogate code point U+D800 cannot appear in a string literal"
        );
        assert_eq!(
            syntax_err("root ::= [\\U00110000]").2,
            "code point U+110000 is out of range (the largest is U+10FFFF)"
        );
        assert_eq!(
            syntax_err("::= \"a\""),
            (1, 1, "expected a rule name before '::='".into())
        );
        assert_eq!(
            syntax_err("root ::= \"a\" @").2,
            "expected a string literal, a character class, '.', '(', a rule name or a token reference, found '@'"
        );
        // Columns count characters, not bytes.
        assert_eq!(syntax_err("root ::= \"é\" @").1, 14);
    }

    #[test]
    fn rule_level_errors() {
        assert_eq!(
            parse_ebnf("root ::= a\nb ::= \"b\"\nc ::= foo", "root"),
            Err(GrammarError::UndefinedRule {
                name: "a".into(),
                line: 1,
                column: 10
            })
        );
        assert_eq!(
            parse_ebnf("root ::= \"a\"\n  root ::= \"b\"", "root"),
            Err(GrammarError::DuplicateRule {
                name: "root".into(),
                line: 2,
                column: 3
            })
        );
        assert_eq!(
            parse_ebnf("rot ::= \"a\"", "root"),
            Err(GrammarError::MissingRoot("root".into()))
        );
        assert_eq!(
            parse_ebnf("root ::= a\na ::= \"x\" a", "root"),
            Err(GrammarError::EmptyLanguage(
                "rule 'a' can never finish (every alternative needs 'a' again); rule 'root' cannot match without it"
                    .into()
            ))
        );
    }

    #[test]
    fn limits() {
        let err = parse_ebnf("root ::= \"a\"{100001}", "root").unwrap_err();
        assert_eq!(
            err,
            GrammarError::Limit("repetition bound 100001 exceeds the limit of 100000 at line 1, column 14".into())
        );
        let huge = format!("root ::= \"a\"{{1,{}}}", "9".repeat(60));
        assert!(matches!(parse_ebnf(&huge, "root"), Err(GrammarError::Limit(_))));
        let deep = format!("root ::= {}\"a\"{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(matches!(parse_ebnf(&deep, "root"), Err(GrammarError::Limit(m)) if m.contains("parentheses")));
        let stars = format!("root ::= \"a\"{}", "*".repeat(100_000));
        assert!(matches!(parse_ebnf(&stars, "root"), Err(GrammarError::Limit(_))));
        let nested_seq = format!("root ::= {}\"a\"{}", "\"x\" (".repeat(2000), ")".repeat(2000));
        assert!(matches!(parse_ebnf(&nested_seq, "root"), Err(GrammarError::Limit(_))));
    }

    #[test]
    fn deepest_accepted_nesting_is_fine() {
        let n = MAX_NESTING_DEPTH - 2;
        let text = format!("root ::= {}\"a\"{}", "\"x\" (".repeat(n), ")".repeat(n));
        let g = parse_ebnf(&text, "root").unwrap();
        let copy = g.clone();
        assert_eq!(g, copy);
    }

    #[test]
    fn builtin_json_grammar_parses() {
        let g = crate::json::builtin_json_grammar();
        assert_eq!(g.root_rule().name, "root");
    }
}
