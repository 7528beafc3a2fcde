//! Statements to grammar IR.
//!
//! * A terminal (upper-case name) becomes one regular expression: its
//!   strings, regexes, ranges and the terminals it names, inlined (a
//!   circular terminal is an error). A lexeme is a string, a regex, a
//!   range or a terminal name used in a rule; a special token counts as a
//!   lexeme too.
//! * A rule (lower-case name) becomes an IR rule. With `%ignore`, every
//!   lexeme of a rule is preceded by `skip = (IGNORE_1 | IGNORE_2 | ...)*`
//!   (`?` instead of `*` with `"skip_repetition": "once"`): the ignored
//!   text may come between any two lexemes, across rule boundaries,
//!   and nowhere else. `%json` and `@grammar` bodies are not lexemes of
//!   this grammar: nothing is skipped inside them or next to them.
//! * The text may not start with skipped text (unless `allow_initial_skip`):
//!   the start rule is copied with the skip of its first lexeme removed
//!   ("stripped"), which copies the rules a first lexeme can come from.
//!   No skip follows the last lexeme, so the text may not end with
//!   skipped text either.

use std::collections::{HashMap, HashSet};

use formcast_grammar::{Expr, Grammar, GrammarError, Lexeme, Rule, RuleId, TokenId, MAX_NESTING_DEPTH};
use formcast_jsonschema::{compile_json, Json, SchemaError, SchemaOptions, Whitespace, DEFAULT_MAX_WHITESPACE};

use crate::error::{ErrorKind, LarkError};
use crate::syntax::{is_terminal_name, Alts, Atom, Item, Op, Param, Stmt, TokenSpec};
use crate::{common, LarkOptions, Lexer, Named, MAX_GRAMMAR_NESTING, MAX_TOKEN_IDS};

type Result<T> = std::result::Result<T, LarkError>;

/// A terminal's definition.
#[derive(Clone, Copy)]
enum TermDef<'s> {
    Body(&'s Alts),
    Common(&'static str),
}

/// How a rule's text is cut (its `[...]` options).
#[derive(Clone, Copy)]
enum Cut<'t> {
    /// A rule like any other.
    Plain,
    /// One lazy lexeme: the body, then the suffix if any, ending at its
    /// first match.
    Lazy { suffix: Option<&'t Item> },
}

/// Terminals whose expression has more nodes than this are referenced as
/// a rule of their own rather than copied into every use.
const INLINE_NODES: usize = 256;

pub(crate) struct Lowerer<'t, 'o> {
    text: &'t str,
    opts: &'o LarkOptions<'o>,
    /// Named grammars being embedded around this one (cycle check).
    stack: &'o [String],
    rules: Vec<Rule>,
    /// `rules[i]` is a rule of this text (not an embedded grammar's).
    own: Vec<bool>,
    rule_ids: HashMap<String, RuleId>,
    rule_at: HashMap<String, usize>,
    terms: HashMap<String, (TermDef<'t>, usize)>,
    term_exprs: HashMap<String, Expr>,
    term_rules: HashMap<String, RuleId>,
    visiting: Vec<String>,
    /// The marker rule put before every lexeme when something is ignored.
    skip: Option<RuleId>,
    named_done: HashMap<String, RuleId>,
    /// The lexeme rules made so far, by expression (see `lexeme_rule`).
    lexeme_rules: HashMap<(Expr, Lexeme), RuleId>,
    pub warnings: Vec<String>,
}

fn nodes(e: &Expr) -> usize {
    let mut n = 0;
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        n += 1;
        match e {
            Expr::Seq(v) | Expr::Alt(v) => stack.extend(v),
            Expr::Repeat { expr, .. } | Expr::Avoiding { expr, .. } => stack.push(expr),
            _ => {}
        }
    }
    n
}

fn height(e: &Expr) -> usize {
    let mut h = 0;
    let mut stack = vec![(e, 1usize)];
    while let Some((e, d)) = stack.pop() {
        h = h.max(d);
        match e {
            Expr::Seq(v) | Expr::Alt(v) => stack.extend(v.iter().map(|x| (x, d + 1))),
            Expr::Repeat { expr, .. } | Expr::Avoiding { expr, .. } => stack.push((expr, d + 1)),
            Expr::TokenDispatch { cases, .. } => stack.extend(cases.iter().map(|(_, x)| (x, d + 2))),
            Expr::TextDispatch { cases, .. } => stack.extend(cases.iter().map(|(_, x)| (x, d + 2))),
            _ => {}
        }
    }
    h
}

fn wrap(mut parts: Vec<Expr>, make: fn(Vec<Expr>) -> Expr) -> Expr {
    match parts.len() {
        0 => Expr::Empty,
        1 => parts.pop().expect("one part"),
        _ => make(parts),
    }
}

fn json_str(j: &Json) -> String {
    match j {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Str(s) => format!("{s:?}"),
        Json::Num(_) => "a number".into(),
        Json::Arr(_) => "an array".into(),
        Json::Obj(_) => "an object".into(),
    }
}

impl<'t, 'o> Lowerer<'t, 'o> {
    pub fn new(text: &'t str, opts: &'o LarkOptions<'o>, stack: &'o [String]) -> Self {
        Lowerer {
            text,
            opts,
            stack,
            rules: Vec::new(),
            own: Vec::new(),
            rule_ids: HashMap::new(),
            rule_at: HashMap::new(),
            terms: HashMap::new(),
            term_exprs: HashMap::new(),
            term_rules: HashMap::new(),
            visiting: Vec::new(),
            skip: None,
            named_done: HashMap::new(),
            lexeme_rules: HashMap::new(),
            warnings: Vec::new(),
        }
    }

    fn err(&self, at: usize, kind: ErrorKind, msg: impl Into<String>) -> LarkError {
        LarkError::at(self.text, at, kind, msg)
    }

    fn push_rule(&mut self, name: String, body: Expr, own: bool, at: usize) -> Result<RuleId> {
        if self.rules.len() >= self.opts.max_rules {
            return Err(self.err(at, ErrorKind::Limit, format!("the grammar needs more than {} rules", self.opts.max_rules)));
        }
        self.rules.push(Rule::new(name, body));
        self.own.push(own);
        Ok(self.rules.len() as RuleId - 1)
    }

    pub fn run(mut self, stmts: &'t [Stmt]) -> Result<(Grammar, Vec<String>)> {
        // Definitions, imports and options first: names may be used before
        // they are defined.
        let mut options: Vec<(&str, &Json, usize)> = Vec::new();
        let mut ignores: Vec<(&Alts, usize)> = Vec::new();
        let mut rule_defs: Vec<(&str, &Alts, usize, Cut<'t>)> = Vec::new();
        for s in stmts {
            match s {
                Stmt::Def { name, at, terminal, params, body } => {
                    let cut = self.check_params(name, *terminal, params)?;
                    let taken = self.rule_at.contains_key(name.as_str()) || self.terms.contains_key(name.as_str());
                    if taken {
                        let what = if *terminal { "terminal" } else { "rule" };
                        return Err(self.err(*at, ErrorKind::Invalid, format!("{what} '{name}' is defined twice")));
                    }
                    if *terminal {
                        self.terms.insert(name.clone(), (TermDef::Body(body), *at));
                    } else {
                        self.rule_at.insert(name.clone(), *at);
                        rule_defs.push((name, body, *at, cut));
                    }
                }
                Stmt::Import { name, alias, at } => {
                    let Some(rx) = common::lookup(name) else {
                        return Err(self.err(*at, ErrorKind::Undefined, format!(
                            "'common.{name}' is not a common terminal; available: {}",
                            common::names()
                        )));
                    };
                    if !is_terminal_name(alias) {
                        return Err(self.err(*at, ErrorKind::Unsupported, format!("'{alias}': a common terminal must be imported under an upper-case name")));
                    }
                    if self.terms.contains_key(alias.as_str()) || self.rule_at.contains_key(alias.as_str()) {
                        // Importing the same name twice is harmless.
                        if matches!(self.terms.get(alias.as_str()), Some((TermDef::Common(r), _)) if *r == rx) {
                            continue;
                        }
                        return Err(self.err(*at, ErrorKind::Invalid, format!("terminal '{alias}' is defined twice")));
                    }
                    self.terms.insert(alias.clone(), (TermDef::Common(rx), *at));
                }
                Stmt::Options { json, at } => {
                    let Json::Obj(kv) = json else { unreachable!("parsed as an object") };
                    for (k, v) in kv {
                        options.push((k, v, *at));
                    }
                }
                Stmt::Ignore { body, at } => ignores.push((body, *at)),
            }
        }
        let mut initial_skip = false;
        let mut skip_once = false;
        for (k, v, at) in options {
            match (k, v) {
                ("no_forcing", Json::Bool(_)) => {} // forced tokens are no part of the language
                ("allow_initial_skip", Json::Bool(b)) => initial_skip = *b,
                ("allow_invalid_utf8", Json::Bool(false)) => {}
                ("allow_invalid_utf8", Json::Bool(true)) => {
                    return Err(self.err(at, ErrorKind::Unsupported, "%llguidance option \"allow_invalid_utf8\": true is not supported (formcast's text is UTF-8)"))
                }
                ("skip_repetition", Json::Str(s)) if s == "once" || s == "many" => skip_once = s == "once",
                _ => {
                    return Err(self.err(at, ErrorKind::Unsupported, format!(
                        "%llguidance option \"{k}\": {} is not supported (supported: no_forcing, allow_initial_skip, allow_invalid_utf8: false, skip_repetition: \"once\"/\"many\")",
                        json_str(v)
                    )))
                }
            }
        }
        // Rule ids in definition order.
        for (name, _, at, _) in &rule_defs {
            let id = self.push_rule(name.to_string(), Expr::Empty, true, *at)?;
            self.rule_ids.insert(name.to_string(), id);
        }
        let Some(&start) = self.rule_ids.get("start") else {
            let at = self.terms.get("START").map_or(0, |(_, at)| *at);
            return Err(self.err(at, ErrorKind::Invalid, "the grammar has no `start` rule (the start rule must be named `start`, in lower case)"));
        };
        // The skip expression.
        let skip_expr = if ignores.is_empty() {
            None
        } else {
            let mut alts = Vec::new();
            for (body, at) in &ignores {
                let e = self.term_alts(body, "%ignore")?;
                if Self::nullable_text(&e) {
                    return Err(self.err(*at, ErrorKind::Invalid, "an %ignore pattern must not match the empty string"));
                }
                alts.push(e);
            }
            let mut alt = wrap(alts, Expr::Alt);
            if self.opts.lexer == Lexer::Llguidance {
                // Skipped text is a lexeme too, cut like the others.
                alt = Expr::Rule(self.lexeme_rule(alt, Lexeme::Skip, ignores[0].1)?);
            }
            let body = Expr::Repeat { expr: Box::new(alt), min: 0, max: if skip_once { Some(1) } else { None } };
            let id = self.push_rule("%ignore".into(), body.clone(), false, ignores[0].1)?;
            self.skip = Some(id);
            Some(body)
        };
        // Every terminal, used or not, is checked.
        let mut names: Vec<String> = self.terms.keys().cloned().collect();
        names.sort_by_key(|n| self.terms[n].1);
        for n in &names {
            self.terminal(n, self.terms[n].1)?;
        }
        for (name, body, at, cut) in &rule_defs {
            let e = match cut {
                Cut::Plain => self.rule_alts(body)?,
                Cut::Lazy { suffix } => self.lazy_rule(name, body, *suffix, *at)?,
            };
            if height(&e) > MAX_NESTING_DEPTH {
                return Err(self.err(*at, ErrorKind::Limit, format!("rule '{name}' is nested deeper than {MAX_NESTING_DEPTH} levels")));
            }
            let id = self.rule_ids[*name];
            self.rules[id as usize].body = e;
        }
        let start_at = self.rule_at["start"];
        let root = match skip_expr {
            Some(_) => self.strip_pass(start, !initial_skip, start_at)?,
            None => start,
        };
        if let Some(body) = &skip_expr {
            let skip = self.skip.expect("set with the expression");
            for (r, own) in self.rules.iter_mut().zip(&self.own) {
                if *own {
                    substitute(&mut r.body, skip, body);
                }
            }
        }
        let grammar = Grammar { rules: self.rules, root };
        formcast_grammar::validate(&grammar).map_err(|e| {
            let kind = if matches!(e, GrammarError::Limit(_)) { ErrorKind::Limit } else { ErrorKind::Invalid };
            LarkError::at(self.text, start_at, kind, e.to_string())
        })?;
        Ok((grammar, self.warnings))
    }

    /// A definition's `[...]` options: captures are allowed (they name a
    /// part of the output, the language is the same); `lazy` and a
    /// non-empty `suffix` make a rule of terminals one lazy lexeme; the
    /// options that change sampling or hide text from the output are
    /// errors.
    fn check_params(&self, name: &str, terminal: bool, params: &'t [Param]) -> Result<Cut<'t>> {
        let mut lazy = false;
        let mut suffix = None;
        for p in params {
            if terminal {
                return Err(self.err(p.at, ErrorKind::Unsupported, format!(
                    "options ('{}') go on lower-case rules, not on the terminal '{name}' (as in llguidance): write `{}[{}]: {name}`",
                    p.key,
                    name.to_lowercase(),
                    p.key
                )));
            }
            match p.key.as_str() {
                "capture" | "stop_capture" => {}
                "lazy" => lazy = true,
                "suffix" => match &p.value {
                    // An empty suffix changes nothing (llguidance's rule).
                    Some(Item { atom: Atom::Lit { value, .. }, .. }) if value.is_empty() => {}
                    Some(v) => suffix = Some(v),
                    None => return Err(self.err(p.at, ErrorKind::Invalid, format!("'suffix' on '{name}' needs a value: a string, a /regex/ or a terminal name"))),
                },
                "stop" => {
                    return Err(self.err(p.at, ErrorKind::Unsupported, format!(
                        "'stop' on '{name}' is not supported: llguidance hides the stop text from the output by taking its tokens back, which formcast does not do; use suffix=... (the same lexeme, with the text kept in the output) or lazy"
                    )))
                }
                "max_tokens" | "temperature" => {
                    return Err(self.err(p.at, ErrorKind::Unsupported, format!(
                        "'{}' on '{name}' is not supported: it changes how tokens are sampled, which a grammar does not express",
                        p.key
                    )))
                }
                other => return Err(self.err(p.at, ErrorKind::Unsupported, format!("unknown parameter '{other}' on '{name}'"))),
            }
        }
        Ok(if lazy || suffix.is_some() { Cut::Lazy { suffix } } else { Cut::Plain })
    }

    /// `name[lazy]: ...` / `name[suffix=S]: ...`: the body (terminals only)
    /// followed by the suffix is one lexeme that ends at its first match.
    fn lazy_rule(&mut self, name: &str, body: &Alts, suffix: Option<&Item>, at: usize) -> Result<Expr> {
        if self.opts.lexer == Lexer::ContextFree {
            return Err(self.err(at, ErrorKind::Unsupported, format!(
                "the lazy rule '{name}' needs llguidance's lexer (a lazy lexeme ends the lexemes going on beside it): compile with lexer=\"llguidance\""
            )));
        }
        let owner = format!("the lazy rule '{name}'");
        let mut e = self.term_alts(body, &owner)?;
        if let Some(s) = suffix {
            let tail = self.term_atom(s, &owner)?;
            e = Expr::Seq(vec![e, tail]);
        }
        self.lexeme(Expr::lazy(e), Lexeme::Lazy, at)
    }

    // ---- terminals ----

    /// The expression of terminal `name`, lowered once.
    fn terminal(&mut self, name: &str, at: usize) -> Result<Expr> {
        if let Some(e) = self.term_exprs.get(name) {
            return Ok(e.clone());
        }
        let Some(&(def, def_at)) = self.terms.get(name) else {
            return Err(self.err(at, ErrorKind::Undefined, format!("undefined terminal '{name}'")));
        };
        if self.visiting.iter().any(|v| v == name) {
            return Err(self.err(at, ErrorKind::Invalid, format!(
                "terminal '{name}' refers to itself ({} -> {name}); terminals are regular, use a lower-case rule for recursion",
                self.visiting.join(" -> ")
            )));
        }
        if self.visiting.len() >= MAX_NESTING_DEPTH {
            return Err(self.err(at, ErrorKind::Limit, format!("terminals refer to each other more than {MAX_NESTING_DEPTH} levels deep")));
        }
        self.visiting.push(name.to_string());
        let e = match def {
            TermDef::Body(alts) => stacker::maybe_grow(64 << 10, 1 << 20, || self.term_alts(alts, name)),
            TermDef::Common(rx) => formcast_grammar::regex_to_expr(rx)
                .map_err(|e| self.err(def_at, ErrorKind::Invalid, format!("common.{name}: {e}"))),
        };
        self.visiting.pop();
        let e = e?;
        if height(&e) > MAX_NESTING_DEPTH {
            return Err(self.err(def_at, ErrorKind::Limit, format!("terminal '{name}' is nested deeper than {MAX_NESTING_DEPTH} levels")));
        }
        let e = if nodes(&e) > INLINE_NODES {
            let id = self.push_rule(name.to_string(), e, false, def_at)?;
            self.term_rules.insert(name.to_string(), id);
            Expr::Rule(id)
        } else {
            e
        };
        self.term_exprs.insert(name.to_string(), e.clone());
        Ok(e)
    }

    fn term_alts(&mut self, alts: &Alts, owner: &str) -> Result<Expr> {
        stacker::maybe_grow(64 << 10, 1 << 20, || {
            let mut out = Vec::with_capacity(alts.alts.len());
            for seq in &alts.alts {
                let mut items = Vec::with_capacity(seq.len());
                for item in seq {
                    let e = self.term_atom(item, owner)?;
                    items.push(self.ops(e, item));
                }
                out.push(wrap(items, Expr::Seq));
            }
            Ok(wrap(out, Expr::Alt))
        })
    }

    fn term_atom(&mut self, item: &Item, owner: &str) -> Result<Expr> {
        let at = item.at;
        Ok(match &item.atom {
            Atom::Lit { value, ci: false } => Expr::literal(value),
            Atom::Lit { value, ci: true } => {
                let rx = format!("(?i:{})", regex_syntax::escape(value));
                formcast_grammar::regex_to_expr(&rx).map_err(|e| self.err(at, ErrorKind::Invalid, format!("case-insensitive string: {e}")))?
            }
            Atom::Range { lo, hi } => {
                let (lo, hi) = (*lo as u32, *hi as u32);
                let mut set = Vec::new();
                if lo < 0xD800 {
                    set.push((lo, hi.min(0xD7FF)));
                }
                if hi > 0xDFFF {
                    set.push((lo.max(0xE000), hi));
                }
                Expr::Chars(set)
            }
            Atom::Regex { pattern, flags, body_at } => self.regex(pattern, flags, *body_at, at)?,
            Atom::Name(n) if is_terminal_name(n) => stacker::maybe_grow(64 << 10, 1 << 20, || self.terminal(n, at))?,
            Atom::Name(n) => {
                let what = if self.rule_at.contains_key(n.as_str()) { "the rule" } else { "the undefined rule" };
                return Err(self.err(at, ErrorKind::Invalid, format!(
                    "{owner} uses {what} '{n}': terminals (and %ignore) may only use strings, regexes and other terminals"
                )));
            }
            Atom::Group(a) => self.term_alts(a, owner)?,
            Atom::Opt(a) => Expr::optional(self.term_alts(a, owner)?),
            Atom::Tokens(_) => return Err(self.err(at, ErrorKind::Invalid, format!("special tokens cannot be used in terminals ({owner}); use them in a lower-case rule"))),
            Atom::Json(_) => return Err(self.err(at, ErrorKind::Invalid, format!("%json cannot be used in terminals ({owner}); use it in a lower-case rule"))),
            Atom::GrammarRef(g) => return Err(self.err(at, ErrorKind::Invalid, format!("@{g} cannot be used in terminals ({owner}); use it in a lower-case rule"))),
            Atom::RegexExt(j) => self.regex_ext(j, at)?,
        })
    }

    /// `/pattern/flags`, through formcast's regex front-end (Rust `regex`
    /// syntax, as llguidance): flags `i`, `s`, `m`, `x` become an inline
    /// flag group, `u` (Unicode) is already the default.
    fn regex(&self, pattern: &str, flags: &str, body_at: usize, at: usize) -> Result<Expr> {
        let mut inline = String::new();
        for f in flags.chars() {
            match f {
                'i' | 's' | 'm' | 'x' => {
                    if !inline.contains(f) {
                        inline.push(f)
                    }
                }
                'u' => {}
                'l' => return Err(self.err(at, ErrorKind::Unsupported, "the regex flag 'l' is not supported")),
                other => return Err(self.err(at, ErrorKind::Syntax, format!("unknown regex flag '{other}' (flags: i, m, s, u, x)"))),
            }
        }
        let prefix = if inline.is_empty() { String::new() } else { format!("(?{inline})") };
        let full = format!("{prefix}{pattern}");
        formcast_grammar::regex_to_expr(&full).map_err(|e| match e {
            GrammarError::RegexSyntax { position, message } => {
                // Back to the place in the Lark text (a '\/' counts as one
                // byte less; near enough for the caret).
                let off = body_at + position.saturating_sub(prefix.len()).min(pattern.len());
                self.err(off, ErrorKind::Invalid, format!("regex /{pattern}/: {message}"))
            }
            GrammarError::Limit(m) => self.err(at, ErrorKind::Limit, format!("regex /{pattern}/: {m}")),
            other => self.err(at, ErrorKind::Invalid, format!("regex /{pattern}/: {other}")),
        })
    }

    /// `%regex { "substring_chunks": [...] }` / `"substring_chars": "..."`:
    /// the concatenations of consecutive chunks (the empty one included).
    fn regex_ext(&mut self, j: &Json, at: usize) -> Result<Expr> {
        let Json::Obj(kv) = j else { unreachable!("parsed as an object") };
        if kv.len() != 1 {
            return Err(self.err(at, ErrorKind::Unsupported, "%regex takes exactly one of \"substring_chunks\" or \"substring_chars\""));
        }
        let (k, v) = &kv[0];
        let chunks: Vec<String> = match (k.as_str(), v) {
            ("substring_chunks", Json::Arr(items)) => {
                let mut out = Vec::new();
                for x in items {
                    let Json::Str(s) = x else {
                        return Err(self.err(at, ErrorKind::Invalid, "\"substring_chunks\" must be a list of strings"));
                    };
                    out.push(s.clone());
                }
                out
            }
            ("substring_chars", Json::Str(s)) => s.chars().map(String::from).collect(),
            _ => {
                return Err(self.err(at, ErrorKind::Unsupported, format!(
                    "%regex {{\"{k}\": ...}} is not supported (supported: \"substring_chunks\": [strings], \"substring_chars\": string)"
                )))
            }
        };
        if chunks.len() > crate::MAX_SUBSTRING_CHUNKS {
            return Err(self.err(at, ErrorKind::Limit, format!("%regex has {} chunks, more than the limit of {}", chunks.len(), crate::MAX_SUBSTRING_CHUNKS)));
        }
        // After chunk i: stop, or go on with chunk i+1 (a right-linear chain
        // of rules); any chunk may start it.
        let n = chunks.len();
        let base = self.rules.len() as RuleId;
        for (i, c) in chunks.iter().enumerate() {
            let next = if i + 1 < n { Expr::optional(Expr::Rule(base + i as RuleId + 1)) } else { Expr::Empty };
            let body = wrap(vec![Expr::literal(c), next], Expr::Seq);
            let id = self.push_rule(format!("%regex@{at}#{i}"), body, false, at)?;
            self.rules[id as usize].inline = true;
        }
        let mut alts = vec![Expr::Empty];
        alts.extend((0..n).map(|i| Expr::Rule(base + i as RuleId)));
        Ok(Expr::Alt(alts))
    }

    fn ops(&self, mut e: Expr, item: &Item) -> Expr {
        for (op, _) in &item.ops {
            e = match *op {
                Op::Opt => Expr::optional(e),
                Op::Star => Expr::star(e),
                Op::Plus => Expr::plus(e),
                Op::Count(min, max) => Expr::Repeat { expr: Box::new(e), min, max },
            };
        }
        e
    }

    fn nullable_text(e: &Expr) -> bool {
        match e {
            Expr::Empty => true,
            Expr::Bytes(b) => b.is_empty(),
            Expr::Seq(v) => v.iter().all(Self::nullable_text),
            Expr::Alt(v) => v.iter().any(Self::nullable_text),
            Expr::Repeat { expr, min, .. } => *min == 0 || Self::nullable_text(expr),
            _ => false,
        }
    }

    // ---- rules ----

    /// A lexeme of text, after the skip: in place (read as context-free
    /// text), or under [`Lexer::Llguidance`] as a lexeme rule of its own
    /// (one per distinct lexeme), which the engine cuts as llguidance's
    /// lexer does.
    fn lexeme(&mut self, e: Expr, kind: Lexeme, at: usize) -> Result<Expr> {
        let e = match self.opts.lexer {
            Lexer::ContextFree => e,
            Lexer::Llguidance => Expr::Rule(self.lexeme_rule(e, kind, at)?),
        };
        Ok(self.after_skip(e))
    }

    /// `e` (a lexeme) after the skip, when something is ignored.
    fn after_skip(&self, e: Expr) -> Expr {
        match self.skip {
            Some(s) => Expr::Seq(vec![Expr::Rule(s), e]),
            None => e,
        }
    }

    /// The lexeme rule of `e`, made once. A lexeme is plain text in one
    /// automaton: rules it refers to (a large terminal, a `%regex`) are
    /// expanded in place.
    fn lexeme_rule(&mut self, e: Expr, kind: Lexeme, at: usize) -> Result<RuleId> {
        if let Some(&id) = self.lexeme_rules.get(&(e.clone(), kind)) {
            return Ok(id);
        }
        let mut refs = Vec::new();
        e.rule_refs(&mut refs);
        let body = if refs.is_empty() || matches!(e, Expr::Avoiding { .. }) {
            e.clone()
        } else {
            Expr::Avoiding { expr: Box::new(e.clone()), excludes: Vec::new(), lazy: false }
        };
        let id = self.push_rule(format!("%lexeme#{}", self.lexeme_rules.len()), body, false, at)?;
        self.rules[id as usize].lexeme = Some(kind);
        self.lexeme_rules.insert((e, kind), id);
        Ok(id)
    }

    fn rule_alts(&mut self, alts: &Alts) -> Result<Expr> {
        stacker::maybe_grow(64 << 10, 1 << 20, || {
            let mut out = Vec::with_capacity(alts.alts.len());
            for seq in &alts.alts {
                let mut items = Vec::with_capacity(seq.len());
                for item in seq {
                    let e = self.rule_atom(item)?;
                    items.push(self.ops(e, item));
                }
                out.push(wrap(items, Expr::Seq));
            }
            Ok(wrap(out, Expr::Alt))
        })
    }

    fn rule_atom(&mut self, item: &Item) -> Result<Expr> {
        let at = item.at;
        Ok(match &item.atom {
            Atom::Name(n) if !is_terminal_name(n) => match self.rule_ids.get(n.as_str()) {
                Some(&id) => Expr::Rule(id),
                None => return Err(self.err(at, ErrorKind::Undefined, format!("undefined rule '{n}'"))),
            },
            Atom::Group(a) => self.rule_alts(a)?,
            Atom::Opt(a) => Expr::optional(self.rule_alts(a)?),
            Atom::Tokens(spec) => {
                let e = self.tokens(spec, at)?;
                self.after_skip(e)
            }
            Atom::Json(schema) => self.json(schema, at)?,
            Atom::GrammarRef(name) => self.grammar_ref(name, at)?,
            _ => {
                let e = self.term_atom(item, "a rule")?;
                self.lexeme(e, Lexeme::Greedy, at)?
            }
        })
    }

    fn tokens(&self, spec: &TokenSpec, at: usize) -> Result<Expr> {
        let tokens = self.opts.tokens.as_ref();
        match spec {
            TokenSpec::Named(text) => {
                let Some(t) = tokens else {
                    return Err(self.err(at, ErrorKind::Undefined, format!("the special token {text} needs a tokenizer to resolve it (pass tokenizer=...)")));
                };
                match (t.resolve)(text) {
                    Some(id) => Ok(Expr::Token(id)),
                    None => Err(self.err(at, ErrorKind::Undefined, format!("{text} is not a token of the vocabulary"))),
                }
            }
            TokenSpec::Ids { wildcard: true, .. } => Ok(Expr::AnyTokenExcept(Vec::new())),
            TokenSpec::Ids { negated, ranges, .. } => {
                let total: u64 = ranges.iter().map(|&(lo, hi)| u64::from(hi - lo) + 1).sum();
                if total > MAX_TOKEN_IDS as u64 {
                    return Err(self.err(at, ErrorKind::Limit, format!("the token reference lists {total} ids, more than the limit of {MAX_TOKEN_IDS}")));
                }
                if let Some(t) = tokens {
                    if let Some(&(_, hi)) = ranges.iter().find(|&&(_, hi)| hi >= t.vocab_size) {
                        return Err(self.err(at, ErrorKind::Undefined, format!("token id {hi} is outside the vocabulary ({} ids)", t.vocab_size)));
                    }
                }
                let mut ids: Vec<TokenId> = ranges.iter().flat_map(|&(lo, hi)| lo..=hi).collect();
                ids.sort_unstable();
                ids.dedup();
                if *negated {
                    return Ok(Expr::AnyTokenExcept(ids));
                }
                if ids.len() == 1 {
                    return Ok(Expr::Token(ids[0]));
                }
                if let Some(t) = tokens {
                    if ids.len() as u64 > u64::from(t.vocab_size) / 2 {
                        let set: HashSet<TokenId> = ids.iter().copied().collect();
                        let rest: Vec<TokenId> = (0..t.vocab_size).filter(|i| !set.contains(i)).collect();
                        return Ok(Expr::AnyTokenExcept(rest));
                    }
                }
                Ok(Expr::Alt(ids.into_iter().map(Expr::Token).collect()))
            }
        }
    }

    /// `%json {...}`: formcast's JSON Schema translation, with JSON
    /// Schema's own defaults (`additionalProperties` absent means `true`)
    /// and any whitespace between tokens (at most `DEFAULT_MAX_WHITESPACE`
    /// characters per gap, one space after ':'). An `x-guidance` object may
    /// set `whitespace_flexible: false` with `item_separator` /
    /// `key_separator` (exact separators) and `lenient`.
    fn json(&mut self, schema: &Json, at: usize) -> Result<Expr> {
        let mut schema = schema.clone();
        let mut opts = SchemaOptions {
            whitespace: Whitespace::Any { max_per_gap: DEFAULT_MAX_WHITESPACE },
            strict: false,
            time_budget_ms: self.opts.json_time_budget_ms,
            ..Default::default()
        };
        if let Json::Obj(kv) = &mut schema {
            if let Some(i) = kv.iter().position(|(k, _)| k == "x-guidance") {
                let (_, xg) = kv.remove(i);
                let Json::Obj(xkv) = xg else {
                    return Err(self.err(at, ErrorKind::Invalid, "\"x-guidance\" must be an object"));
                };
                let (mut flexible, mut item, mut key) = (true, ",".to_string(), ":".to_string());
                for (k, v) in &xkv {
                    match (k.as_str(), v) {
                        ("whitespace_flexible", Json::Bool(b)) => flexible = *b,
                        ("item_separator", Json::Str(s)) => item = s.clone(),
                        ("key_separator", Json::Str(s)) => key = s.clone(),
                        ("lenient", Json::Bool(b)) => opts.lenient = *b,
                        ("coerce_one_of", Json::Bool(false)) => {}
                        _ => {
                            return Err(self.err(at, ErrorKind::Unsupported, format!(
                                "\"x-guidance\" option \"{k}\": {} is not supported (supported: whitespace_flexible, item_separator, key_separator, lenient)",
                                json_str(v)
                            )))
                        }
                    }
                }
                if !flexible {
                    opts.whitespace = Whitespace::Indent { indent: None, separators: (item, key) };
                }
            }
        }
        let (g, warnings) = compile_json(&schema, &opts).map_err(|e| {
            let kind = if matches!(e, SchemaError::Limit { .. }) { ErrorKind::Limit } else { ErrorKind::Invalid };
            self.err(at, kind, format!("%json: {e}"))
        })?;
        let (line, col) = crate::error::line_col(self.text, at);
        self.warnings.extend(warnings.iter().map(|w| format!("%json at line {line}, column {col}: {w}")));
        self.embed(g, &format!("%json@{line}:{col}"), at)
    }

    fn grammar_ref(&mut self, name: &str, at: usize) -> Result<Expr> {
        if let Some(&id) = self.named_done.get(name) {
            return Ok(Expr::Rule(id));
        }
        let Some((_, named)) = self.opts.named.iter().find(|(n, _)| n == name) else {
            return Err(self.err(at, ErrorKind::Undefined, format!(
                "unknown grammar @{name} (named grammars are passed with named_grammars=)"
            )));
        };
        let g = match named {
            Named::Grammar(g) => g.clone(),
            Named::Lark(text) => {
                if self.stack.iter().any(|n| n == name) {
                    return Err(self.err(at, ErrorKind::Invalid, format!("grammar @{name} refers to itself ({} -> @{name})", self.stack.join(" -> "))));
                }
                if self.stack.len() >= MAX_GRAMMAR_NESTING {
                    return Err(self.err(at, ErrorKind::Limit, format!("named grammars nested more than {MAX_GRAMMAR_NESTING} levels deep")));
                }
                let mut stack = self.stack.to_vec();
                stack.push(name.to_string());
                let (g, w) = crate::lower_text(text, self.opts, &stack).map_err(|e| {
                    let mut out = self.err(at, e.kind, format!("in grammar @{name}: {e}"));
                    out.kind = e.kind;
                    out
                })?;
                self.warnings.extend(w.into_iter().map(|w| format!("@{name}: {w}")));
                g
            }
        };
        let r = self.embed(g, &format!("@{name}"), at)?;
        if let Expr::Rule(id) = r {
            self.named_done.insert(name.to_string(), id);
        }
        Ok(r)
    }

    /// Appends `g`'s rules (renamed `prefix/name`) and refers to its root.
    fn embed(&mut self, g: Grammar, prefix: &str, at: usize) -> Result<Expr> {
        if self.rules.len() + g.rules.len() > self.opts.max_rules {
            return Err(self.err(at, ErrorKind::Limit, format!("the grammar needs more than {} rules", self.opts.max_rules)));
        }
        let base = self.rules.len() as RuleId;
        let map: Vec<RuleId> = (0..g.rules.len() as RuleId).map(|i| base + i).collect();
        for r in g.rules {
            let mut body = r.body;
            body.remap_rules(&map);
            let mut rule = Rule::new(format!("{prefix}/{}", r.name), body);
            rule.inline = r.inline;
            rule.lexeme = r.lexeme;
            self.rules.push(rule);
            self.own.push(false);
        }
        Ok(Expr::Rule(base + g.root))
    }

    // ---- no skipped text before the first lexeme ----

    /// Whether `e` can match the empty string without any lexeme.
    fn eps(&self, e: &Expr, known: &[bool]) -> bool {
        match e {
            Expr::Empty | Expr::TextExcluding(_) | Expr::BoundedText { .. } => true,
            Expr::Bytes(b) => b.is_empty(),
            Expr::Rule(r) => Some(*r) != self.skip && known[*r as usize],
            Expr::Seq(v) => v.iter().all(|x| self.eps(x, known)),
            Expr::Alt(v) => v.iter().any(|x| self.eps(x, known)),
            Expr::Repeat { expr, min, max } => *min == 0 || *max == Some(0) || self.eps(expr, known),
            Expr::Avoiding { expr, .. } => self.eps(expr, known),
            _ => false,
        }
    }

    fn eps_rules(&self) -> Vec<bool> {
        let mut known = vec![false; self.rules.len()];
        loop {
            let mut changed = false;
            for i in 0..self.rules.len() {
                if !known[i] && Some(i as RuleId) != self.skip && self.eps(&self.rules[i].body, &known) {
                    known[i] = true;
                    changed = true;
                }
            }
            if !changed {
                return known;
            }
        }
    }

    /// Removes the skips that may not occur: before the first lexeme (a
    /// copy of `start`, when `strip_root`) and right after an embedded
    /// grammar (`%json`, `@name`) in a sequence, or after a reference to a
    /// rule whose every derivation ends with one. The copies of the rules
    /// a first lexeme comes from are made on demand.
    fn strip_pass(&mut self, start: RuleId, strip_root: bool, at: usize) -> Result<RuleId> {
        let known = self.eps_rules();
        let ends = self.end_kinds(&known);
        let mut stripped: HashMap<RuleId, RuleId> = HashMap::new();
        let mut work: Vec<(RuleId, RuleId)> = Vec::new();
        let own_rules: Vec<RuleId> = (0..self.rules.len() as RuleId).filter(|&r| self.own[r as usize]).collect();
        for r in own_rules {
            let body = std::mem::replace(&mut self.rules[r as usize].body, Expr::Empty);
            let mut wanted = Vec::new();
            let mut new = self.after_embedded(body, &known, &ends, &mut wanted);
            let mut map: HashMap<RuleId, RuleId> = HashMap::new();
            for w in wanted {
                let id = self.stripped_copy(w, &mut stripped, &mut work);
                map.insert(w, id);
            }
            retarget(&mut new, &map);
            self.rules[r as usize].body = new;
        }
        let root = if strip_root {
            let first = self.stripped_copy(start, &mut stripped, &mut work);
            let body = if known[start as usize] { alt(vec![Expr::Rule(first), Expr::Empty]) } else { Expr::Rule(first) };
            self.push_rule("start^root".into(), body, false, at)?
        } else {
            start
        };
        let mut done = 0;
        while done < work.len() {
            let (r, copy) = work[done];
            done += 1;
            let body = self.rules[r as usize].body.clone();
            let mut wanted: Vec<RuleId> = Vec::new();
            let mut new = self.strip_lexeme(&body, &known, &mut wanted);
            let mut map: HashMap<RuleId, RuleId> = HashMap::new();
            for w in wanted {
                let id = self.stripped_copy(w, &mut stripped, &mut work);
                map.insert(w, id);
            }
            retarget(&mut new, &map);
            if self.rules.len() > self.opts.max_rules || nodes(&new) > crate::MAX_STRIPPED_NODES {
                return Err(self.err(at, ErrorKind::Limit, "the copy of the grammar without skipped text before the first lexeme is too large"));
            }
            self.rules[copy as usize].body = new;
        }
        Ok(root)
    }

    /// Per rule, how its derivations may end: (with a lexeme, with an
    /// embedded grammar, empty).
    fn end_kinds(&self, known: &[bool]) -> Vec<(bool, bool, bool)> {
        let mut ends = vec![(false, false, false); self.rules.len()];
        loop {
            let mut changed = false;
            for i in 0..self.rules.len() {
                if !self.own[i] {
                    continue;
                }
                let e = self.end_of(&self.rules[i].body, &ends, known);
                if e != ends[i] {
                    ends[i] = e;
                    changed = true;
                }
            }
            if !changed {
                return ends;
            }
        }
    }

    fn end_of(&self, e: &Expr, ends: &[(bool, bool, bool)], known: &[bool]) -> (bool, bool, bool) {
        match e {
            Expr::Seq(v) if v.len() == 2 && matches!(v[0], Expr::Rule(s) if Some(s) == self.skip) => (true, false, false),
            Expr::Rule(r) if self.own[*r as usize] => {
                let (l, m, _) = ends[*r as usize];
                (l, m, known[*r as usize])
            }
            Expr::Rule(r) => (false, true, known[*r as usize]),
            Expr::Seq(v) => {
                let mut acc = (false, false, true);
                for x in v.iter().rev() {
                    let (l, m, n) = self.end_of(x, ends, known);
                    acc = (acc.0 || l, acc.1 || m, n);
                    if !n {
                        break;
                    }
                }
                acc
            }
            Expr::Alt(v) => v.iter().fold((false, false, false), |a, x| {
                let (l, m, n) = self.end_of(x, ends, known);
                (a.0 || l, a.1 || m, a.2 || n)
            }),
            Expr::Repeat { expr, min, max } => {
                let (l, m, n) = self.end_of(expr, ends, known);
                (l, m, n || *min == 0 || *max == Some(0))
            }
            Expr::Empty => (false, false, true),
            // Bare token and text leaves do not occur outside lexemes.
            _ => (true, false, false),
        }
    }

    /// In every sequence of `e`, the rest after an item that always ends
    /// with an embedded grammar is stripped.
    fn after_embedded(&self, e: Expr, known: &[bool], ends: &[(bool, bool, bool)], wanted: &mut Vec<RuleId>) -> Expr {
        stacker::maybe_grow(64 << 10, 1 << 20, || match e {
            Expr::Seq(v) if v.len() == 2 && matches!(v[0], Expr::Rule(s) if Some(s) == self.skip) => Expr::Seq(v),
            Expr::Seq(v) => {
                let mut out: Vec<Expr> = Vec::with_capacity(v.len());
                let mut it = v.into_iter();
                while let Some(x) = it.next() {
                    let x = self.after_embedded(x, known, ends, wanted);
                    let (l, m, n) = self.end_of(&x, ends, known);
                    out.push(x);
                    if m && !l && !n {
                        let rest: Vec<Expr> = it.collect();
                        if !rest.is_empty() {
                            let rest = self.after_embedded(wrap(rest, Expr::Seq), known, ends, wanted);
                            out.push(self.strip(&rest, known, wanted));
                        }
                        break;
                    }
                }
                wrap(out, Expr::Seq)
            }
            Expr::Alt(v) => Expr::Alt(v.into_iter().map(|x| self.after_embedded(x, known, ends, wanted)).collect()),
            Expr::Repeat { expr, min, max } => Expr::Repeat { expr: Box::new(self.after_embedded(*expr, known, ends, wanted)), min, max },
            other => other,
        })
    }

    fn stripped_copy(&mut self, r: RuleId, stripped: &mut HashMap<RuleId, RuleId>, work: &mut Vec<(RuleId, RuleId)>) -> RuleId {
        if let Some(&id) = stripped.get(&r) {
            return id;
        }
        let name = format!("{}^first", self.rules[r as usize].name);
        self.rules.push(Rule::new(name, Expr::Empty));
        self.own.push(true);
        let id = self.rules.len() as RuleId - 1;
        stripped.insert(r, id);
        work.push((r, id));
        id
    }

    /// `e` with the skip of its first lexeme removed. References to rules
    /// of this text whose stripped copy is needed are returned in `wanted`
    /// and written as `Rule(STRIP_BIT | r)` until [`retarget`] maps them.
    fn strip(&self, e: &Expr, known: &[bool], wanted: &mut Vec<RuleId>) -> Expr {
        let first = self.strip_lexeme(e, known, wanted);
        if self.eps(e, known) {
            alt(vec![first, Expr::Empty])
        } else {
            first
        }
    }

    /// The derivations of `e` that hold a lexeme (or an embedded grammar),
    /// with the skip of the first lexeme removed; its derivations without
    /// any are left out (`Nothing` when there are no others).
    fn strip_lexeme(&self, e: &Expr, known: &[bool], wanted: &mut Vec<RuleId>) -> Expr {
        stacker::maybe_grow(64 << 10, 1 << 20, || match e {
            Expr::Seq(v) if v.len() == 2 && matches!(v[0], Expr::Rule(s) if Some(s) == self.skip) => v[1].clone(),
            Expr::Seq(v) => {
                let mut alts = Vec::new();
                for i in 0..v.len() {
                    let first = self.strip_lexeme(&v[i], known, wanted);
                    if first != Expr::Nothing {
                        let mut s = vec![first];
                        s.extend(v[i + 1..].iter().cloned());
                        alts.push(wrap(s, Expr::Seq));
                    }
                    if !self.eps(&v[i], known) {
                        break;
                    }
                }
                alt(alts)
            }
            Expr::Alt(v) => alt(v.iter().map(|x| self.strip_lexeme(x, known, wanted)).collect()),
            Expr::Repeat { expr, min, max } => {
                if *max == Some(0) {
                    return Expr::Nothing;
                }
                let first = self.strip_lexeme(expr, known, wanted);
                if first == Expr::Nothing {
                    return Expr::Nothing;
                }
                let rest = Expr::Repeat { expr: expr.clone(), min: min.saturating_sub(1), max: max.map(|m| m - 1) };
                Expr::Seq(vec![first, rest])
            }
            Expr::Rule(r) if self.own[*r as usize] => {
                wanted.push(*r);
                Expr::Rule(STRIP_BIT | *r)
            }
            Expr::Empty => Expr::Nothing,
            other => other.clone(),
        })
    }
}

/// An alternation without its `Nothing` branches.
fn alt(v: Vec<Expr>) -> Expr {
    let v: Vec<Expr> = v.into_iter().filter(|x| *x != Expr::Nothing).collect();
    if v.is_empty() {
        Expr::Nothing
    } else {
        wrap(v, Expr::Alt)
    }
}

/// Marks a reference to a stripped copy not made yet (rule ids stay far
/// below: `max_rules` is much smaller).
const STRIP_BIT: RuleId = 1 << 31;

fn retarget(e: &mut Expr, map: &HashMap<RuleId, RuleId>) {
    stacker::maybe_grow(64 << 10, 1 << 20, || match e {
        Expr::Rule(r) if *r & STRIP_BIT != 0 => *r = map[&(*r & !STRIP_BIT)],
        Expr::Seq(v) | Expr::Alt(v) => v.iter_mut().for_each(|x| retarget(x, map)),
        Expr::Repeat { expr, .. } => retarget(expr, map),
        _ => {}
    })
}


/// Replaces the skip marker by the skip expression.
fn substitute(e: &mut Expr, skip: RuleId, body: &Expr) {
    stacker::maybe_grow(64 << 10, 1 << 20, || match e {
        Expr::Rule(r) if *r == skip => *e = body.clone(),
        Expr::Seq(v) | Expr::Alt(v) => v.iter_mut().for_each(|x| substitute(x, skip, body)),
        Expr::Repeat { expr, .. } => substitute(expr, skip, body),
        _ => {}
    })
}

#[cfg(test)]
mod tests {
    use crate::{parse_lark, LarkOptions, Lexer};
    use formcast_grammar::{Expr, Lexeme, Rule};

    /// The rules of the context-free reading, where lexemes are in place.
    fn rules(text: &str) -> Vec<(String, Expr)> {
        let g = parse_lark(text, &cf()).unwrap_or_else(|e| panic!("{e}")).grammar;
        g.rules.into_iter().map(|r| (r.name, r.body)).collect()
    }

    fn cf() -> LarkOptions<'static> {
        LarkOptions { lexer: Lexer::ContextFree, ..Default::default() }
    }

    #[test]
    fn lexemes_are_rules_of_their_own_made_once() {
        let g = parse_lark("start: \"a\" A \"a\"\nA: /b+/\n%ignore \" \"", &LarkOptions::default()).unwrap().grammar;
        let lexemes: Vec<&Rule> = g.rules.iter().filter(|r| r.lexeme.is_some()).collect();
        // "a" (twice, one rule), A, and the ignored text.
        assert_eq!(lexemes.len(), 3);
        assert_eq!(lexemes.iter().filter(|r| r.lexeme == Some(Lexeme::Greedy)).count(), 2);
        assert_eq!(lexemes.iter().filter(|r| r.lexeme == Some(Lexeme::Skip)).count(), 1);
        let lazy = parse_lark("start: x\nx[lazy]: /[0-9]+/", &LarkOptions::default()).unwrap().grammar;
        let r = lazy.rules.iter().find(|r| r.lexeme.is_some()).expect("a lexeme");
        assert_eq!(r.lexeme, Some(Lexeme::Lazy));
        assert!(matches!(r.body, Expr::Avoiding { lazy: true, .. }));
    }

    fn body(text: &str, name: &str) -> Expr {
        rules(text).into_iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no rule {name}")).1
    }

    #[test]
    fn terminals_are_inlined_and_rules_referenced() {
        let b = body("start: A b\nA: \"x\" B\nB: \"y\"\nb: \"z\"", "start");
        assert_eq!(b, Expr::Seq(vec![Expr::Seq(vec![Expr::literal("x"), Expr::literal("y")]), Expr::Rule(1)]));
    }

    #[test]
    fn skip_precedes_every_lexeme_but_the_first() {
        let skip = Expr::star(Expr::literal(" "));
        let b = body("start: \"a\" \"b\"\n%ignore \" \"", "start");
        assert_eq!(b, Expr::Seq(vec![Expr::Seq(vec![skip.clone(), Expr::literal("a")]), Expr::Seq(vec![skip.clone(), Expr::literal("b")])]));
        // The root is the copy without the first skip.
        let first = body("start: \"a\" \"b\"\n%ignore \" \"", "start^first");
        assert_eq!(first, Expr::Seq(vec![Expr::literal("a"), Expr::Seq(vec![skip, Expr::literal("b")])]));
        let g = parse_lark("start: \"a\" \"b\"\n%ignore \" \"", &cf()).unwrap().grammar;
        assert_eq!(g.rules[g.root as usize].name, "start^root");
    }

    #[test]
    fn once_skips_are_optional() {
        let b = body("%llguidance {\"skip_repetition\": \"once\"}\nstart: \"a\" \"b\"\n%ignore \" \"", "start");
        let Expr::Seq(v) = b else { panic!() };
        assert_eq!(v[0], Expr::Seq(vec![Expr::optional(Expr::literal(" ")), Expr::literal("a")]));
    }

    #[test]
    fn large_terminals_become_rules() {
        let alts: Vec<String> = (0..300).map(|i| format!("\"w{i}\"")).collect();
        let text = format!("start: W W\nW: {}", alts.join(" | "));
        let rs = rules(&text);
        let w = rs.iter().position(|(n, _)| n == "W").expect("a rule for W");
        assert_eq!(rs[0].1, Expr::Seq(vec![Expr::Rule(w as u32), Expr::Rule(w as u32)]));
    }

    #[test]
    fn token_sets() {
        use crate::Tokens;
        let resolve = |_: &str| None;
        let o = LarkOptions { tokens: Some(Tokens { resolve: &resolve, vocab_size: 10 }), ..Default::default() };
        let b = parse_lark("start: <[0-7]>", &o).unwrap().grammar;
        // More than half the vocabulary: written as its complement.
        assert_eq!(b.rules[0].body, Expr::AnyTokenExcept(vec![8, 9]));
        let b = parse_lark("start: <[2,4]>", &o).unwrap().grammar;
        assert_eq!(b.rules[0].body, Expr::Alt(vec![Expr::Token(2), Expr::Token(4)]));
    }
}
