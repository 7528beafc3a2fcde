//! Lark text to a list of statements (the syntax tree), with byte offsets
//! kept on every node for error messages.
//!
//! A hand-written recursive descent over characters. Nesting of groups is
//! bounded by [`MAX_NESTING_DEPTH`] and runs on a stack that `stacker`
//! grows on the heap when the calling thread's runs low.

use formcast_grammar::{MAX_NESTING_DEPTH, MAX_REPEAT_BOUND};
use formcast_jsonschema::Json;

use crate::error::{ErrorKind, LarkError};

/// Which tokens a `<...>` reference denotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSpec {
    /// `<|name|>`, `<think>`: the token whose text is the whole reference.
    Named(String),
    /// `<[1,5-7]>`, `<[^3]>`, `<[*]>`: inclusive id ranges, possibly negated.
    Ids { negated: bool, ranges: Vec<(u32, u32)>, wildcard: bool },
}

#[derive(Debug, Clone)]
pub enum Atom {
    /// `"..."`, `"..."i`.
    Lit { value: String, ci: bool },
    /// `"a".."z"`.
    Range { lo: char, hi: char },
    /// `/.../flags`; `body_at` is the offset of the pattern in the text.
    Regex { pattern: String, flags: String, body_at: usize },
    /// A rule (lower case) or terminal (upper case) name.
    Name(String),
    /// `( ... )`.
    Group(Alts),
    /// `[ ... ]`.
    Opt(Alts),
    /// `<...>`.
    Tokens(TokenSpec),
    /// `%json { ... }`.
    Json(Json),
    /// `%regex { ... }`.
    RegexExt(Json),
    /// `@name`.
    GrammarRef(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Opt,
    Star,
    Plus,
    Count(u32, Option<u32>),
}

#[derive(Debug, Clone)]
pub struct Item {
    pub atom: Atom,
    pub at: usize,
    pub ops: Vec<(Op, usize)>,
}

#[derive(Debug, Clone)]
pub struct Alts {
    pub alts: Vec<Vec<Item>>,
    pub at: usize,
}

/// `name[...]` parameters.
#[derive(Debug, Clone)]
pub struct Param {
    pub key: String,
    pub at: usize,
    /// A string, regex or name after `=` (`suffix="<end>"`); other values
    /// (`max_tokens=3`) are skipped.
    pub value: Option<Item>,
}

#[derive(Debug, Clone)]
pub enum Stmt {
    Def { name: String, at: usize, terminal: bool, params: Vec<Param>, body: Alts },
    Ignore { body: Alts, at: usize },
    /// `%import common.NAME [-> ALIAS]`, one per imported name.
    Import { name: String, alias: String, at: usize },
    /// `%llguidance { ... }`.
    Options { json: Json, at: usize },
}

pub struct Parser<'a> {
    pub text: &'a str,
    pos: usize,
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether a name is a terminal's: its first letter is upper case.
pub fn is_terminal_name(name: &str) -> bool {
    name.chars().find(|c| c.is_ascii_alphabetic()).is_some_and(|c| c.is_ascii_uppercase())
}

impl<'a> Parser<'a> {
    pub fn new(text: &'a str) -> Self {
        Parser { text, pos: 0 }
    }

    fn err(&self, at: usize, kind: ErrorKind, msg: impl Into<String>) -> LarkError {
        LarkError::at(self.text, at, kind, msg)
    }

    fn syntax(&self, at: usize, msg: impl Into<String>) -> LarkError {
        self.err(at, ErrorKind::Syntax, msg)
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek2(&self) -> Option<char> {
        self.rest().chars().nth(1)
    }

    fn found(&self) -> String {
        match self.peek() {
            None => "the end of the text".into(),
            Some('\n') => "the end of the line".into(),
            Some(c) => format!("'{c}'"),
        }
    }

    /// Skips spaces, tabs, carriage returns and `//` / `#` comments; with
    /// `newlines`, line breaks too.
    fn skip(&mut self, newlines: bool) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\r') => self.pos += 1,
                Some('\n') if newlines => self.pos += 1,
                Some('#') => self.skip_comment(),
                Some('/') if self.peek2() == Some('/') => self.skip_comment(),
                _ => return,
            }
        }
    }

    fn skip_comment(&mut self) {
        let n = self.rest().find('\n').unwrap_or(self.rest().len());
        self.pos += n;
    }

    fn name(&mut self) -> Option<&'a str> {
        let start = self.pos;
        let mut chars = self.rest().char_indices();
        match chars.next() {
            Some((_, c)) if is_name_start(c) => {}
            _ => return None,
        }
        let mut end = self.text.len();
        for (i, c) in chars {
            // `x->y`: the arrow is not part of the name.
            if !is_name_char(c) || (c == '-' && self.rest()[i..].starts_with("->")) {
                end = start + i;
                break;
            }
        }
        self.pos = end;
        Some(&self.text[start..end])
    }

    fn number(&mut self) -> Result<u32, LarkError> {
        let at = self.pos;
        let digits = self.rest().bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(self.syntax(at, format!("expected a number, found {}", self.found())));
        }
        let text = &self.rest()[..digits];
        self.pos += digits;
        match text.parse::<u64>() {
            Ok(n) if n <= u64::from(MAX_REPEAT_BOUND) => Ok(n as u32),
            _ => Err(self.err(at, ErrorKind::Limit, format!("repetition bound {text} exceeds the limit of {MAX_REPEAT_BOUND}"))),
        }
    }

    // ---- statements ----

    pub fn statements(mut self) -> Result<Vec<Stmt>, LarkError> {
        let mut out = Vec::new();
        loop {
            self.skip(true);
            let Some(c) = self.peek() else { break };
            let at = self.pos;
            if c == '%' {
                self.directive(&mut out)?;
            } else {
                out.push(self.definition()?);
            }
            self.skip(false);
            match self.peek() {
                None | Some('\n') => {}
                _ => {
                    return Err(self.syntax(self.pos, format!(
                        "expected the end of the line after the statement that starts at {}, found {}",
                        {
                            let (l, c) = crate::error::line_col(self.text, at);
                            format!("line {l}, column {c}")
                        },
                        self.found()
                    )))
                }
            }
        }
        Ok(out)
    }

    fn directive(&mut self, out: &mut Vec<Stmt>) -> Result<(), LarkError> {
        let at = self.pos;
        self.pos += 1;
        let word = self.name().unwrap_or("");
        match word {
            "ignore" => {
                self.skip(false);
                let body = self.alternatives(0)?;
                out.push(Stmt::Ignore { body, at });
            }
            "import" => self.import(at, out)?,
            "llguidance" => {
                self.skip(false);
                let json = self.json_object("%llguidance")?;
                out.push(Stmt::Options { json, at });
            }
            "declare" | "override" | "extend" => {
                return Err(self.err(at, ErrorKind::Unsupported, format!("'%{word}' is not supported (llguidance's Lark has no '%{word}' either)")))
            }
            "json" | "regex" => {
                return Err(self.syntax(at, format!("'%{word}' must be used inside a rule, as in `name: %{word} {{ ... }}`")))
            }
            "" => return Err(self.syntax(at, "expected a directive name after '%'")),
            other => {
                return Err(self.err(at, ErrorKind::Unsupported, format!(
                    "unknown directive '%{other}' (supported: %ignore, %import common, %llguidance)"
                )))
            }
        }
        Ok(())
    }

    fn import(&mut self, at: usize, out: &mut Vec<Stmt>) -> Result<(), LarkError> {
        self.skip(false);
        let path_at = self.pos;
        let module = self.name().ok_or_else(|| self.syntax(path_at, "expected a module after '%import' (only `common` is available)"))?;
        if module != "common" {
            return Err(self.err(path_at, ErrorKind::Unsupported, format!(
                "'%import {module}': only the built-in `common` module can be imported"
            )));
        }
        self.skip(false);
        match self.peek() {
            Some('.') => {
                self.pos += 1;
                let name_at = self.pos;
                let name = self.name().ok_or_else(|| self.syntax(name_at, "expected a name after 'common.'"))?.to_string();
                self.skip(false);
                let mut alias = name.clone();
                if self.rest().starts_with("->") {
                    self.pos += 2;
                    self.skip(false);
                    let a = self.pos;
                    alias = self.name().ok_or_else(|| self.syntax(a, "expected a name after '->'"))?.to_string();
                }
                out.push(Stmt::Import { name, alias, at: name_at });
            }
            Some('(') => {
                self.pos += 1;
                loop {
                    self.skip(true);
                    let name_at = self.pos;
                    let name = self.name().ok_or_else(|| self.syntax(name_at, format!("expected a name to import, found {}", self.found())))?;
                    out.push(Stmt::Import { name: name.to_string(), alias: name.to_string(), at: name_at });
                    self.skip(true);
                    match self.peek() {
                        Some(',') => self.pos += 1,
                        Some(')') => {
                            self.pos += 1;
                            break;
                        }
                        _ => return Err(self.syntax(self.pos, format!("expected ',' or ')' in the import list, found {}", self.found()))),
                    }
                }
            }
            _ => return Err(self.syntax(at, "expected `%import common.NAME` or `%import common (NAME, ...)`")),
        }
        Ok(())
    }

    fn definition(&mut self) -> Result<Stmt, LarkError> {
        // `?rule` (inlined in the tree) and `!rule` (keeps all tokens) only
        // shape Lark's parse tree: the language is the same.
        if matches!(self.peek(), Some('?' | '!')) {
            self.pos += 1;
        }
        let at = self.pos;
        let Some(name) = self.name() else {
            return Err(self.syntax(at, format!(
                "expected a rule or terminal definition (`name: ...`) or a %directive, found {}",
                self.found()
            )));
        };
        let name = name.to_string();
        let terminal = is_terminal_name(&name);
        self.skip(false);
        let mut params = Vec::new();
        if self.peek() == Some('[') {
            params = self.params()?;
            self.skip(false);
        }
        match self.peek() {
            Some('.') => {
                return Err(self.err(self.pos, ErrorKind::Unsupported, format!(
                    "priorities ('{name}.N') are not supported (llguidance refuses them too)"
                )))
            }
            Some('{') => {
                return Err(self.err(self.pos, ErrorKind::Unsupported, format!("templates ('{name}{{...}}') are not supported")))
            }
            Some(':') if !self.rest().starts_with("::") => self.pos += 1,
            _ => return Err(self.syntax(self.pos, format!("expected ':' after the name '{name}', found {}", self.found()))),
        }
        self.skip(false);
        let body = self.alternatives(0)?;
        Ok(Stmt::Def { name, at, terminal, params, body })
    }

    /// `[lazy, max_tokens=3, capture="x", suffix=/.../]`: the keys, and the
    /// values that are strings, regexes or names.
    fn params(&mut self) -> Result<Vec<Param>, LarkError> {
        let open = self.pos;
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            self.skip(false);
            if self.peek() == Some(']') {
                self.pos += 1;
                return Ok(out);
            }
            let at = self.pos;
            let key = self.name().ok_or_else(|| self.syntax(at, format!("expected a parameter name, found {}", self.found())))?;
            let key = key.to_string();
            let mut value = None;
            self.skip(false);
            if self.peek() == Some('=') {
                self.pos += 1;
                self.skip(false);
                match self.peek() {
                    Some(c) if c == '"' || c == '/' || is_name_start(c) => {
                        let v_at = self.pos;
                        let atom = self.atom(MAX_NESTING_DEPTH)?;
                        value = Some(Item { atom, at: v_at, ops: Vec::new() });
                    }
                    _ => {
                        let n = self.rest().find([',', ']', '\n']).unwrap_or(self.rest().len());
                        self.pos += n;
                    }
                }
                self.skip(false);
            }
            out.push(Param { key, at, value });
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(']') => {}
                _ => return Err(self.syntax(open, "unterminated parameter list '[' (expected ',' or ']')")),
            }
        }
    }

    // ---- expressions ----

    /// Alternatives up to the end of the statement (`depth` 0: a line
    /// break not followed by `|`), or up to the closing bracket.
    fn alternatives(&mut self, depth: usize) -> Result<Alts, LarkError> {
        stacker::maybe_grow(64 << 10, 1 << 20, || self.alternatives_inner(depth))
    }

    fn alternatives_inner(&mut self, depth: usize) -> Result<Alts, LarkError> {
        let at = self.pos;
        let mut alts = vec![self.sequence(depth)?];
        loop {
            self.skip(depth > 0);
            if self.peek() == Some('|') {
                self.pos += 1;
                alts.push(self.sequence(depth)?);
                continue;
            }
            if depth == 0 && self.peek() == Some('\n') {
                // A line break continues the alternatives only before '|'.
                let save = self.pos;
                self.skip(true);
                if self.peek() == Some('|') {
                    continue;
                }
                self.pos = save;
            }
            return Ok(Alts { alts, at });
        }
    }

    fn sequence(&mut self, depth: usize) -> Result<Vec<Item>, LarkError> {
        let mut items = Vec::new();
        loop {
            self.skip(depth > 0);
            match self.peek() {
                None | Some('\n' | '|' | ')' | ']') => break,
                Some('-') if self.rest().starts_with("->") => {
                    // An alias only names the tree node.
                    self.pos += 2;
                    self.skip(false);
                    let a = self.pos;
                    self.name().ok_or_else(|| self.syntax(a, "expected a name after '->'"))?;
                    break;
                }
                _ => {}
            }
            let at = self.pos;
            let atom = self.atom(depth)?;
            let ops = self.postfix()?;
            items.push(Item { atom, at, ops });
        }
        Ok(items)
    }

    fn postfix(&mut self) -> Result<Vec<(Op, usize)>, LarkError> {
        let mut ops = Vec::new();
        loop {
            let save = self.pos;
            self.skip(false);
            let at = self.pos;
            let op = match self.peek() {
                Some('?') => {
                    self.pos += 1;
                    Op::Opt
                }
                Some('*') => {
                    self.pos += 1;
                    Op::Star
                }
                Some('+') => {
                    self.pos += 1;
                    Op::Plus
                }
                Some('~') => {
                    self.pos += 1;
                    self.skip(false);
                    let lo = self.number()?;
                    self.skip(false);
                    let hi = if self.rest().starts_with("..") {
                        self.pos += 2;
                        self.skip(false);
                        self.number()?
                    } else {
                        lo
                    };
                    self.count(at, lo, Some(hi))?
                }
                Some('{') => {
                    self.pos += 1;
                    self.skip(false);
                    let lo = if self.peek().is_some_and(|c| c.is_ascii_digit()) { Some(self.number()?) } else { None };
                    self.skip(false);
                    let (lo, hi) = if self.peek() == Some(',') {
                        self.pos += 1;
                        self.skip(false);
                        let hi = if self.peek().is_some_and(|c| c.is_ascii_digit()) { Some(self.number()?) } else { None };
                        if lo.is_none() && hi.is_none() {
                            return Err(self.syntax(at, "repetition bounds '{,}' need at least one number"));
                        }
                        (lo.unwrap_or(0), hi)
                    } else {
                        let Some(n) = lo else {
                            return Err(self.syntax(at, format!("expected a number or ',' after '{{', found {}", self.found())));
                        };
                        (n, Some(n))
                    };
                    self.skip(false);
                    if self.peek() != Some('}') {
                        return Err(self.syntax(self.pos, format!("expected '}}' to close the repetition bounds, found {}", self.found())));
                    }
                    self.pos += 1;
                    self.count(at, lo, hi)?
                }
                _ => {
                    self.pos = save;
                    return Ok(ops);
                }
            };
            if ops.len() >= MAX_NESTING_DEPTH {
                return Err(self.err(at, ErrorKind::Limit, format!("more than {MAX_NESTING_DEPTH} repetition operators on one item")));
            }
            ops.push((op, at));
        }
    }

    fn count(&self, at: usize, lo: u32, hi: Option<u32>) -> Result<Op, LarkError> {
        if let Some(h) = hi {
            if lo > h {
                return Err(self.syntax(at, format!("repetition minimum {lo} is greater than maximum {h}")));
            }
        }
        Ok(Op::Count(lo, hi))
    }

    fn atom(&mut self, depth: usize) -> Result<Atom, LarkError> {
        let at = self.pos;
        let c = self.peek().expect("the caller checked");
        match c {
            '(' | '[' => {
                if depth >= MAX_NESTING_DEPTH {
                    return Err(self.err(at, ErrorKind::Limit, format!("groups nested deeper than {MAX_NESTING_DEPTH} levels")));
                }
                self.pos += 1;
                let inner = self.alternatives(depth + 1)?;
                self.skip(true);
                let close = if c == '(' { ')' } else { ']' };
                if self.peek() != Some(close) {
                    let (l, col) = crate::error::line_col(self.text, at);
                    return Err(self.syntax(self.pos, format!("expected '{close}' to close the '{c}' at line {l}, column {col}, found {}", self.found())));
                }
                self.pos += 1;
                Ok(if c == '(' { Atom::Group(inner) } else { Atom::Opt(inner) })
            }
            '"' => {
                let value = self.string()?;
                let ci = self.peek() == Some('i') && !self.peek2().is_some_and(is_name_char);
                if ci {
                    self.pos += 1;
                }
                let save = self.pos;
                self.skip(false);
                if self.rest().starts_with("..") {
                    self.pos += 2;
                    self.skip(false);
                    if self.peek() != Some('"') {
                        return Err(self.syntax(self.pos, format!("expected a string after '..' (as in \"a\"..\"z\"), found {}", self.found())));
                    }
                    let hi_at = self.pos;
                    let hi = self.string()?;
                    let single = |s: &str| {
                        let mut it = s.chars();
                        match (it.next(), it.next()) {
                            (Some(c), None) => Some(c),
                            _ => None,
                        }
                    };
                    let Some(lo) = single(&value) else {
                        return Err(self.syntax(at, "the start of a range \"a\"..\"z\" must be a single character"));
                    };
                    let Some(hi) = single(&hi) else {
                        return Err(self.syntax(hi_at, "the end of a range \"a\"..\"z\" must be a single character"));
                    };
                    if ci {
                        return Err(self.err(at, ErrorKind::Unsupported, "a range cannot take the 'i' flag"));
                    }
                    if lo > hi {
                        return Err(self.syntax(at, format!("invalid range {value:?}..{hi:?}: the start is greater than the end")));
                    }
                    return Ok(Atom::Range { lo, hi });
                }
                self.pos = save;
                Ok(Atom::Lit { value, ci })
            }
            '/' => {
                let (pattern, flags, body_at) = self.regex()?;
                Ok(Atom::Regex { pattern, flags, body_at })
            }
            '<' => Ok(Atom::Tokens(self.special_token()?)),
            '@' => {
                self.pos += 1;
                let a = self.pos;
                let name = self.rest().chars().take_while(|&c| is_name_char(c)).map(char::len_utf8).sum::<usize>();
                if name == 0 {
                    return Err(self.syntax(a, "expected a grammar name after '@'"));
                }
                self.pos += name;
                Ok(Atom::GrammarRef(self.text[a..a + name].to_string()))
            }
            '%' => {
                self.pos += 1;
                let word = self.name().unwrap_or("");
                match word {
                    "json" => {
                        self.skip(false);
                        Ok(Atom::Json(self.json_object("%json")?))
                    }
                    "regex" => {
                        self.skip(false);
                        Ok(Atom::RegexExt(self.json_object("%regex")?))
                    }
                    "lark" => Err(self.err(at, ErrorKind::Unsupported, "nested '%lark { ... }' grammars are not supported")),
                    _ => Err(self.syntax(at, format!("unexpected '%{word}' inside a rule (only %json {{...}} and %regex {{...}} may appear there)"))),
                }
            }
            c if is_name_start(c) => {
                let name = self.name().expect("a name starts here").to_string();
                if self.rest().starts_with("::") {
                    return Err(self.err(self.pos, ErrorKind::Unsupported, "parametric rules ('name::param') are not supported"));
                }
                if self.peek() == Some('{') {
                    // `name{a, b}` is a template use; `name{2,3}` a repetition.
                    let after = self.rest()[1..].trim_start();
                    if after.starts_with(|c: char| is_name_start(c)) {
                        return Err(self.err(self.pos, ErrorKind::Unsupported, format!("templates ('{name}{{...}}') are not supported")));
                    }
                }
                Ok(Atom::Name(name))
            }
            '&' => Err(self.err(at, ErrorKind::Unsupported, "the regex intersection operator '&' is not supported")),
            '~' => Err(self.err(at, ErrorKind::Unsupported, "the regex negation operator '~' (before an item) is not supported")),
            ':' => Err(self.syntax(at, "unexpected ':' (a definition must start on its own line)")),
            c @ ('?' | '*' | '+' | '{') => Err(self.syntax(at, format!("'{c}' must follow an item to repeat"))),
            '\'' => Err(self.syntax(at, "string literals use double quotes")),
            c => Err(self.syntax(at, format!(
                "expected a string, a /regex/, a name, '(', '[', a special token <...>, %json or @grammar, found '{c}'"
            ))),
        }
    }

    /// A double-quoted string with Python-style escapes.
    fn string(&mut self) -> Result<String, LarkError> {
        let open = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let at = self.pos;
            match self.peek() {
                None | Some('\n') => return Err(self.syntax(open, "unterminated string literal")),
                Some('"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some('\\') => {
                    self.pos += 1;
                    let Some(e) = self.peek() else { return Err(self.syntax(open, "unterminated string literal")) };
                    self.pos += e.len_utf8();
                    let simple = match e {
                        'n' => Some('\n'),
                        't' => Some('\t'),
                        'r' => Some('\r'),
                        'f' => Some('\x0C'),
                        'v' => Some('\x0B'),
                        'b' => Some('\x08'),
                        'a' => Some('\x07'),
                        '0' => Some('\0'),
                        '\\' | '"' | '\'' | '/' => Some(e),
                        _ => None,
                    };
                    if let Some(c) = simple {
                        out.push(c);
                        continue;
                    }
                    let digits = match e {
                        'x' => 2,
                        'u' => 4,
                        'U' => 8,
                        _ => return Err(self.syntax(at, format!("unknown escape sequence '\\{e}' in a string literal"))),
                    };
                    let hex = self.rest().get(..digits).filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
                    let Some(hex) = hex else {
                        return Err(self.syntax(at, format!("expected {digits} hex digits after '\\{e}'")));
                    };
                    self.pos += digits;
                    let cp = u32::from_str_radix(hex, 16).expect("hex digits");
                    match char::from_u32(cp) {
                        Some(c) => out.push(c),
                        None => return Err(self.syntax(at, format!("'\\{e}{hex}' is not a Unicode scalar value"))),
                    }
                }
                Some(c) => {
                    self.pos += c.len_utf8();
                    out.push(c);
                }
            }
        }
    }

    /// `/pattern/flags`: `\/` stands for '/', every other escape is kept
    /// for the regex reader.
    fn regex(&mut self) -> Result<(String, String, usize), LarkError> {
        let open = self.pos;
        self.pos += 1;
        let body_at = self.pos;
        let mut out = String::new();
        loop {
            match self.peek() {
                None | Some('\n') => return Err(self.syntax(open, "unterminated regex literal (missing the closing '/')")),
                Some('/') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some('/') => {
                            self.pos += 1;
                            out.push('/');
                        }
                        Some('\n') | None => return Err(self.syntax(open, "unterminated regex literal (missing the closing '/')")),
                        Some(c) => {
                            self.pos += c.len_utf8();
                            out.push('\\');
                            out.push(c);
                        }
                    }
                }
                Some(c) => {
                    self.pos += c.len_utf8();
                    out.push(c);
                }
            }
        }
        let n = self.rest().bytes().take_while(u8::is_ascii_alphabetic).count();
        let flags = self.rest()[..n].to_string();
        self.pos += n;
        Ok((out, flags, body_at))
    }

    fn special_token(&mut self) -> Result<TokenSpec, LarkError> {
        let open = self.pos;
        if self.rest().starts_with("<[") {
            self.pos += 2;
            let mut negated = false;
            if self.peek() == Some('^') {
                negated = true;
                self.pos += 1;
            }
            let mut ranges = Vec::new();
            let mut wildcard = false;
            loop {
                self.skip(false);
                let at = self.pos;
                if self.peek() == Some('*') {
                    self.pos += 1;
                    wildcard = true;
                } else {
                    let lo = self.token_id()?;
                    self.skip(false);
                    let hi = if self.peek() == Some('-') {
                        self.pos += 1;
                        self.skip(false);
                        self.token_id()?
                    } else {
                        lo
                    };
                    if hi < lo {
                        return Err(self.syntax(at, format!("empty token range {lo}-{hi}")));
                    }
                    ranges.push((lo, hi));
                }
                self.skip(false);
                match self.peek() {
                    Some(',') => self.pos += 1,
                    Some(']') if self.rest().starts_with("]>") => {
                        self.pos += 2;
                        break;
                    }
                    _ => return Err(self.syntax(self.pos, format!("expected ',' or ']>' in the token reference, found {}", self.found()))),
                }
            }
            if wildcard && (negated || !ranges.is_empty()) {
                return Err(self.syntax(open, "the wildcard token range <[*]> cannot be negated or combined with other ids"));
            }
            return Ok(TokenSpec::Ids { negated, ranges, wildcard });
        }
        let len = self.rest().find(['>', '\n']).filter(|&i| self.rest().as_bytes()[i] == b'>');
        let Some(len) = len else {
            return Err(self.syntax(open, "unterminated special token (missing '>')"));
        };
        if len == 1 {
            return Err(self.syntax(open, "empty special token '<>'"));
        }
        let text = self.rest()[..=len].to_string();
        self.pos += len + 1;
        Ok(TokenSpec::Named(text))
    }

    fn token_id(&mut self) -> Result<u32, LarkError> {
        let at = self.pos;
        let digits = self.rest().bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(self.syntax(at, format!("expected a token id, found {}", self.found())));
        }
        let text = &self.rest()[..digits];
        self.pos += digits;
        text.parse::<u32>().map_err(|_| self.syntax(at, format!("token id {text} is too large")))
    }

    /// A JSON object starting at the cursor, read up to its matching brace
    /// (no recursion: brackets are counted) and then parsed.
    fn json_object(&mut self, what: &str) -> Result<Json, LarkError> {
        let open = self.pos;
        if self.peek() != Some('{') {
            return Err(self.syntax(open, format!("expected a JSON object '{{' after {what}, found {}", self.found())));
        }
        let bytes = self.text.as_bytes();
        let mut i = self.pos;
        let mut depth = 0usize;
        let mut in_str = false;
        let end = loop {
            let Some(&b) = bytes.get(i) else {
                return Err(self.syntax(open, format!("unterminated JSON object after {what}")));
            };
            if in_str {
                match b {
                    b'\\' => i += 1,
                    b'"' => in_str = false,
                    _ => {}
                }
            } else {
                match b {
                    b'"' => in_str = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            break i + 1;
                        }
                    }
                    _ => {}
                }
            }
            i += 1;
        };
        let slice = &self.text[open..end];
        let json = formcast_jsonschema::json::parse(slice).map_err(|e| {
            let kind = if e.too_deep { ErrorKind::Limit } else { ErrorKind::Syntax };
            self.err(open, kind, format!("invalid JSON after {what}: {e}"))
        })?;
        self.pos = end;
        Ok(json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<Stmt> {
        Parser::new(text).statements().unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn body(text: &str) -> Alts {
        match parse(text).into_iter().next() {
            Some(Stmt::Def { body, .. }) => body,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn definitions_and_directives() {
        let s = parse("?start: a\n!a: \"x\"\nB: /y/i\n%ignore B\n%import common.WS -> SP\n%import common (INT, WORD)\n%llguidance {\"no_forcing\": true}");
        assert_eq!(s.len(), 8);
        assert!(matches!(&s[0], Stmt::Def { name, terminal: false, .. } if name == "start"));
        assert!(matches!(&s[2], Stmt::Def { name, terminal: true, .. } if name == "B"));
        assert!(matches!(&s[3], Stmt::Ignore { .. }));
        assert!(matches!(&s[4], Stmt::Import { name, alias, .. } if name == "WS" && alias == "SP"));
        assert!(matches!(&s[6], Stmt::Import { name, .. } if name == "WORD"));
        assert!(matches!(&s[7], Stmt::Options { .. }));
        assert!(is_terminal_name("_FOO") && !is_terminal_name("_foo") && is_terminal_name("A-B"));
    }

    #[test]
    fn continuation_lines_only_before_a_bar() {
        assert_eq!(body("start: \"a\"\n  // comment\n\n  | \"b\" # c\n  | \"c\"").alts.len(), 3);
        assert!(Parser::new("start: \"a\"\n  \"b\"").statements().is_err());
        // Inside brackets line breaks are free.
        assert_eq!(body("start: (\"a\"\n \"b\")").alts.len(), 1);
    }

    #[test]
    fn atoms_and_operators() {
        let b = body(r#"start: "a\n"i "a".."z" /x\/y/si <[^1, 3-5]> <|eot|> @g %json {"a": "}"} x~2..3 y{,4} z+ -> alias"#);
        let items = &b.alts[0];
        assert!(matches!(&items[0].atom, Atom::Lit { value, ci: true } if value == "a\n"));
        assert!(matches!(&items[1].atom, Atom::Range { lo: 'a', hi: 'z' }));
        assert!(matches!(&items[2].atom, Atom::Regex { pattern, flags, .. } if pattern == "x/y" && flags == "si"));
        assert!(matches!(&items[3].atom, Atom::Tokens(TokenSpec::Ids { negated: true, ranges, wildcard: false }) if ranges == &[(1, 1), (3, 5)]));
        assert!(matches!(&items[4].atom, Atom::Tokens(TokenSpec::Named(t)) if t == "<|eot|>"));
        assert!(matches!(&items[5].atom, Atom::GrammarRef(g) if g == "g"));
        assert!(matches!(&items[6].atom, Atom::Json(Json::Obj(kv)) if kv[0].0 == "a"));
        assert_eq!(items[7].ops.iter().map(|o| o.0).collect::<Vec<_>>(), vec![Op::Count(2, Some(3))]);
        assert_eq!(items[8].ops[0].0, Op::Count(0, Some(4)));
        assert_eq!(items[9].ops[0].0, Op::Plus);
        assert_eq!(items.len(), 10, "the alias ends the alternative");
    }

    #[test]
    fn string_escapes() {
        let b = body(r#"start: "\t\r\f\v\b\a\0\\\"\'\/\x41\u00e9\U0001F600""#);
        assert!(matches!(&b.alts[0][0].atom, Atom::Lit { value, .. } if value == "\t\r\x0C\x0B\x08\x07\0\\\"'/Aé😀"));
        let e = Parser::new(r#"start: "\ud800""#).statements().unwrap_err();
        assert!(e.message.contains("not a Unicode scalar value"), "{e}");
    }

    #[test]
    fn errors_point_at_the_place() {
        let e = Parser::new("start: \"a\"\n  | ( \"b\"").statements().unwrap_err();
        assert_eq!((e.line, e.column), (2, 10));
        assert!(e.message.contains("to close the '(' at line 2, column 5"), "{e}");
        assert_eq!(e.source_line, "  | ( \"b\"");
        let e = Parser::new("start: <abc").statements().unwrap_err();
        assert_eq!((e.kind, e.column), (ErrorKind::Syntax, 8));
        let shown = e.to_string();
        assert!(shown.ends_with("  start: <abc\n         ^"), "{shown}");
    }
}
