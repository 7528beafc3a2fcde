//! The typed tree → grammar IR.
//!
//! Formats become expressions; repeated or dispatched contents become rules
//! (so the automaton builds them once); sub-grammars from `json_schema`,
//! `grammar` and `regex` are appended with their rules renamed and
//! renumbered. Automatic end detection is a context passed down the tree:
//! a `tag` sets it from its `end`, every other format inherits it, and the
//! unlimited formats of the matching level (string ends for text formats,
//! token ends for token formats) add it to their excludes.

use formcast_grammar::{Expr, Grammar, Rule, RuleId, TokenId, MAX_REPEAT_BOUND};
use formcast_jsonschema::{compile_json, SchemaError, SchemaOptions, Whitespace, DEFAULT_MAX_WHITESPACE};

use crate::error::{ErrorKind, Result, StructuralError};
use crate::format::{Begin, End, Format, Node, Tag};
use crate::parse::Resolver;

/// Options of the lowering.
#[derive(Debug, Clone)]
pub struct LowerOptions {
    /// Time budget handed to each JSON-schema translation (milliseconds).
    pub schema_time_budget_ms: u64,
    /// Largest number of grammar rules, sub-grammars included.
    pub max_rules: usize,
    /// Number of token ids of the vocabulary the token references resolve
    /// through: with it, a `lark` format's special tokens (`<|name|>`,
    /// `<[id]>`) are read, as `Grammar.from_lark` reads them; without it
    /// (or without a resolver) they are an error.
    pub vocab_size: Option<u32>,
}

impl Default for LowerOptions {
    fn default() -> Self {
        LowerOptions { schema_time_budget_ms: 10_000, max_rules: 500_000, vocab_size: None }
    }
}

/// The end of the nearest enclosing tag.
#[derive(Clone, Default)]
struct EndCtx {
    /// Its non-empty end strings (string-level end).
    strs: Vec<Vec<u8>>,
    /// Its end token (token-level end).
    token: Option<TokenId>,
}

pub struct Lowerer<'a> {
    rules: Vec<Rule>,
    resolve: Option<Resolver<'a>>,
    opts: LowerOptions,
    /// Product of the repetition bounds enclosing the format being lowered:
    /// nested counted repetitions multiply (in automaton states and in
    /// parser items for nullable contents), so the product is what is bounded.
    weight: u64,
    pub warnings: Vec<String>,
    /// Bodies of embedded rules already in `rules` (references resolved):
    /// tools share schemas and sub-schemas (strings, bounded lengths,
    /// numbers), and each duplicate rule would otherwise be determinized and
    /// laid out again — 100 tools with four schema shapes made 114k states.
    embedded: std::collections::HashMap<Expr, RuleId>,
}

fn err(kind: ErrorKind, path: &str, ty: &str, field: &str, msg: impl Into<String>) -> StructuralError {
    StructuralError::new(kind, path, ty, field, msg)
}

fn sorted(mut ids: Vec<TokenId>) -> Vec<TokenId> {
    ids.sort_unstable();
    ids.dedup();
    ids
}

fn bytes_of(v: &[String]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

impl<'a> Lowerer<'a> {
    pub fn new(resolve: Option<Resolver<'a>>, opts: LowerOptions) -> Self {
        Lowerer { rules: Vec::new(), resolve, opts, weight: 1, warnings: Vec::new(), embedded: Default::default() }
    }

    /// Lowers the whole tree into a grammar whose root rule is `root`.
    pub fn grammar(mut self, root: &Node) -> Result<(Grammar, Vec<String>)> {
        self.rules.push(Rule::new("root", Expr::Empty));
        let body = self.lower(root, &EndCtx::default())?;
        self.rules[0].body = body;
        Ok((Grammar { rules: self.rules, root: 0 }, self.warnings))
    }

    fn add_rule(&mut self, path: &str, name: String, body: Expr) -> Result<Expr> {
        if self.rules.len() >= self.opts.max_rules {
            return Err(err(ErrorKind::Limit, path, "structural_tag", "", format!("the grammar needs more than {} rules", self.opts.max_rules)));
        }
        self.rules.push(Rule::new(name, body));
        Ok(Expr::Rule(self.rules.len() as RuleId - 1))
    }

    /// `e` as a rule reference unless it is a trivial leaf (avoids copying
    /// big expressions into every repetition of the automaton).
    fn shared(&mut self, path: &str, e: Expr) -> Result<Expr> {
        match e {
            Expr::Empty | Expr::Bytes(_) | Expr::Rule(_) | Expr::Token(_) | Expr::AnyTokenExcept(_) => Ok(e),
            e => {
                let name = format!("{path}#{}", self.rules.len());
                self.add_rule(path, name, e)
            }
        }
    }

    /// Appends `g`'s rules (renamed `<path>/<name>`) and returns a reference
    /// to its root.
    fn embed(&mut self, path: &str, g: Grammar) -> Result<Expr> {
        if self.rules.len() + g.rules.len() > self.opts.max_rules {
            return Err(err(ErrorKind::Limit, path, "structural_tag", "", format!("the grammar needs more than {} rules", self.opts.max_rules)));
        }
        // Rules are resolved leaves first: a rule whose references all
        // resolved is looked up by body and reuses an identical earlier rule.
        // Rules on reference cycles (recursive schemas) that never resolve
        // this way are appended as they are.
        let n = g.rules.len();
        const UNRESOLVED: RuleId = RuleId::MAX;
        let mut map = vec![UNRESOLVED; n];
        let deps: Vec<Vec<RuleId>> = g
            .rules
            .iter()
            .map(|r| {
                let mut v = Vec::new();
                r.body.rule_refs(&mut v);
                v
            })
            .collect();
        let mut bodies: Vec<Option<Rule>> = g.rules.into_iter().map(Some).collect();
        loop {
            let mut progress = false;
            for i in 0..n {
                if map[i] != UNRESOLVED || deps[i].iter().any(|&d| map[d as usize] == UNRESOLVED) {
                    continue;
                }
                let r = bodies[i].take().expect("resolved once");
                let mut body = r.body;
                body.remap_rules(&map);
                map[i] = match self.embedded.get(&body) {
                    Some(&id) => id,
                    None => {
                        let id = self.rules.len() as RuleId;
                        self.embedded.insert(body.clone(), id);
                        self.rules.push(Rule::new(format!("{path}/{}", r.name), body));
                        id
                    }
                };
                progress = true;
            }
            if !progress {
                break;
            }
        }
        // The rest (cycles): fresh ids first, then bodies through the map.
        let rest: Vec<usize> = (0..n).filter(|&i| map[i] == UNRESOLVED).collect();
        for (k, &i) in rest.iter().enumerate() {
            map[i] = (self.rules.len() + k) as RuleId;
        }
        for &i in &rest {
            let r = bodies[i].take().expect("unresolved rule");
            let mut body = r.body;
            body.remap_rules(&map);
            self.rules.push(Rule::new(format!("{path}/{}", r.name), body));
        }
        Ok(Expr::Rule(map[g.root as usize]))
    }

    /// The repetition weight inside a count `bound` at `path.field`.
    fn weigh(&self, path: &str, ty: &str, field: &str, bound: u32) -> Result<u64> {
        let w = self.weight.saturating_mul(u64::from(bound.max(1)));
        if w > u64::from(MAX_REPEAT_BOUND) {
            let msg = if self.weight == 1 {
                format!("the bound {bound} is larger than the limit of {MAX_REPEAT_BOUND}")
            } else {
                format!("the bound {bound} inside repetitions of {} copies makes {w} copies, more than the limit of {MAX_REPEAT_BOUND}", self.weight)
            };
            return Err(err(ErrorKind::Limit, &format!("{path}.{field}"), ty, field, msg));
        }
        Ok(w)
    }

    fn lower(&mut self, n: &Node, ctx: &EndCtx) -> Result<Expr> {
        let path = n.path.as_str();
        let ty = n.format.type_name();
        Ok(match &n.format {
            Format::ConstString { value } => Expr::literal(value),
            Format::JsonSchema { schema, style, any_order, max_whitespace_cnt, excludes } => {
                // Inside structural tags the reference always allows any
                // whitespace; it is bounded per gap here (a model must not
                // be able to loop on whitespace), 8 by default.
                let opts = SchemaOptions {
                    whitespace: Whitespace::Any { max_per_gap: max_whitespace_cnt.unwrap_or(DEFAULT_MAX_WHITESPACE) },
                    strict: true,
                    any_order: *any_order,
                    style: *style,
                    time_budget_ms: self.opts.schema_time_budget_ms,
                    excludes: excludes.clone(),
                    ..Default::default()
                };
                let (g, warnings) = compile_json(schema, &opts).map_err(|e| {
                    let kind = if matches!(e, SchemaError::Limit { .. }) { ErrorKind::Limit } else { ErrorKind::Invalid };
                    err(kind, &format!("{path}.json_schema"), ty, "json_schema", e.to_string())
                })?;
                self.warnings.extend(warnings.iter().map(|w| format!("{path}.json_schema: {w}")));
                self.embed(path, g)?
            }
            Format::Grammar { ebnf } => {
                let parsed = match self.resolve {
                    // Token references such as <think> resolve through the tokenizer.
                    Some(r) => formcast_grammar::parse_ebnf_with_tokens(ebnf, "root", &mut |s: &str| r(s)),
                    None => formcast_grammar::parse_ebnf(ebnf, "root"),
                };
                let g = parsed
                    .and_then(|g| formcast_grammar::validate(&g).map(|_| g))
                    .map_err(|e| {
                        let kind = if matches!(e, formcast_grammar::GrammarError::Limit(_)) { ErrorKind::Limit } else { ErrorKind::Invalid };
                        err(kind, &format!("{path}.grammar"), ty, "grammar", e.to_string())
                    })?;
                self.embed(path, g)?
            }
            Format::Lark { text } => {
                let tokens = match (self.resolve, self.opts.vocab_size) {
                    (Some(resolve), Some(vocab_size)) => Some(formcast_lark::Tokens { resolve, vocab_size }),
                    _ => None,
                };
                let lark_opts = formcast_lark::LarkOptions { tokens, ..Default::default() };
                let g = formcast_lark::parse_lark(text, &lark_opts).map_err(|e| {
                    let kind = if e.kind == formcast_lark::ErrorKind::Limit { ErrorKind::Limit } else { ErrorKind::Invalid };
                    err(kind, &format!("{path}.grammar"), ty, "grammar", e.to_string())
                })?;
                self.warnings.extend(g.warnings.iter().map(|w| format!("{path}.grammar: {w}")));
                let g = g.grammar;
                formcast_grammar::validate(&g).map_err(|e| {
                    let kind = if matches!(e, formcast_grammar::GrammarError::Limit(_)) { ErrorKind::Limit } else { ErrorKind::Invalid };
                    err(kind, &format!("{path}.grammar"), ty, "grammar", e.to_string())
                })?;
                self.embed(path, g)?
            }
            Format::Regex { pattern } => {
                let g = formcast_grammar::regex_grammar(pattern).map_err(|e| {
                    let kind = if matches!(e, formcast_grammar::GrammarError::Limit(_)) { ErrorKind::Limit } else { ErrorKind::Invalid };
                    err(kind, &format!("{path}.pattern"), ty, "pattern", e.to_string())
                })?;
                self.embed(path, g)?
            }
            Format::AnyText { excludes, max_tokens, max_chars } => {
                let mut all = bytes_of(excludes);
                all.extend(ctx.strs.iter().cloned());
                all.sort();
                all.dedup();
                // The automaton has a state per count (per pair of counts
                // with both budgets): bounded like repeats.
                if let Some(m) = max_chars {
                    self.weigh(path, ty, "max_chars", *m)?;
                }
                if let Some(t) = max_tokens {
                    let saved = self.weight;
                    if let Some(m) = max_chars {
                        self.weight = saved.saturating_mul(u64::from((*m).max(1)));
                    }
                    let w = self.weigh(path, ty, "max_tokens", *t);
                    self.weight = saved;
                    w?;
                }
                if max_chars.is_none() && max_tokens.is_none() {
                    Expr::TextExcluding(all)
                } else {
                    Expr::BoundedText { excludes: all, max_chars: *max_chars, max_tokens: *max_tokens }
                }
            }
            Format::Sequence { elements } => {
                let items = elements.iter().map(|e| self.lower(e, ctx)).collect::<Result<Vec<_>>>()?;
                Expr::Seq(items)
            }
            Format::Or { elements } => {
                let items = elements.iter().map(|e| self.lower(e, ctx)).collect::<Result<Vec<_>>>()?;
                Expr::Alt(items)
            }
            Format::Optional { content } => Expr::optional(self.lower(content, ctx)?),
            Format::Plus { content } => {
                let c = self.lower(content, ctx)?;
                Expr::plus(self.shared(path, c)?)
            }
            Format::Star { content } => {
                let c = self.lower(content, ctx)?;
                Expr::star(self.shared(path, c)?)
            }
            Format::Repeat { min, max, content } => {
                let w = match max {
                    Some(mx) => self.weigh(path, ty, "max", *mx)?,
                    None => self.weigh(path, ty, "min", *min)?,
                };
                let saved = std::mem::replace(&mut self.weight, w);
                let c = self.lower(content, ctx);
                self.weight = saved;
                let c = self.shared(path, c?)?;
                Expr::Repeat { expr: Box::new(c), min: *min, max: *max }
            }
            Format::Tag(t) => self.tag(t)?,
            Format::TriggeredTags { triggers, tags, excludes, at_least_one, stop_after_first } => {
                let full = self.tag_choice(path, tags)?;
                if *at_least_one && *stop_after_first {
                    full
                } else {
                    let mut cases = Vec::new();
                    for trig in triggers {
                        let mut bodies = Vec::new();
                        for t in tags {
                            let Begin::Str(b) = &t.begin else { unreachable!("checked by the parser") };
                            if let Some(rest) = b.strip_prefix(trig.as_str()) {
                                let (content, end) = self.tag_parts(t)?;
                                bodies.push(Expr::Seq(vec![Expr::literal(rest), content, end]));
                            }
                        }
                        let body = self.shared(path, Expr::Alt(bodies))?;
                        cases.push((trig.as_bytes().to_vec(), body));
                    }
                    let mut ex = bytes_of(excludes);
                    ex.extend(ctx.strs.iter().cloned());
                    ex.sort();
                    ex.dedup();
                    let dispatch = Expr::TextDispatch { cases, excludes: ex, repeat: !*stop_after_first };
                    if *at_least_one {
                        Expr::Seq(vec![full, dispatch])
                    } else {
                        dispatch
                    }
                }
            }
            Format::TagsWithSeparator { tags, separator, at_least_one, stop_after_first } => {
                let one = self.tag_choice(path, tags)?;
                let many = if *stop_after_first {
                    one
                } else {
                    Expr::Seq(vec![one.clone(), Expr::star(Expr::Seq(vec![Expr::literal(separator), one]))])
                };
                if *at_least_one {
                    many
                } else {
                    Expr::optional(many)
                }
            }
            Format::Dispatch { rules, repeat, excludes } => {
                // No automatic end: the reference does not add one either,
                // and the user states the stop strings in `excludes`.
                let mut cases = Vec::new();
                for (pattern, content) in rules {
                    let c = self.lower(content, ctx)?;
                    cases.push((pattern.as_bytes().to_vec(), self.shared(&content.path, c)?));
                }
                Expr::TextDispatch { cases, excludes: bytes_of(excludes), repeat: *repeat }
            }
            Format::Token { id } => Expr::Token(*id),
            Format::ExcludeToken { excludes } => Expr::AnyTokenExcept(sorted(excludes.iter().copied().chain(ctx.token).collect())),
            Format::AnyTokens { excludes, max_tokens } => {
                let one = Expr::AnyTokenExcept(sorted(excludes.iter().copied().chain(ctx.token).collect()));
                match max_tokens {
                    None => Expr::star(one),
                    Some(m) => {
                        self.weigh(path, ty, "max_tokens", *m)?;
                        Expr::Repeat { expr: Box::new(one), min: 0, max: Some(*m) }
                    }
                }
            }
            Format::TokenTriggeredTags { triggers, tags, excludes, at_least_one, stop_after_first } => {
                let full = self.tag_choice(path, tags)?;
                if *at_least_one && *stop_after_first {
                    full
                } else {
                    let mut cases = Vec::new();
                    for &trig in triggers {
                        let mut bodies = Vec::new();
                        for t in tags.iter().filter(|t| matches!(t.begin, Begin::Token(b) if b == trig)) {
                            let (content, end) = self.tag_parts(t)?;
                            bodies.push(Expr::Seq(vec![content, end]));
                        }
                        if !bodies.is_empty() {
                            let body = self.shared(path, Expr::Alt(bodies))?;
                            cases.push((trig, body));
                        }
                    }
                    // A trigger without tags is plain free output, as in the
                    // reference (it is not excluded).
                    let ex = sorted(excludes.iter().copied().chain(ctx.token).collect());
                    let dispatch = Expr::TokenDispatch { cases, excludes: ex, repeat: !*stop_after_first };
                    if *at_least_one {
                        Expr::Seq(vec![full, dispatch])
                    } else {
                        dispatch
                    }
                }
            }
            Format::TokenDispatch { rules, repeat, excludes } => {
                let mut cases = Vec::new();
                for (id, content) in rules {
                    let c = self.lower(content, ctx)?;
                    cases.push((*id, self.shared(&content.path, c)?));
                }
                Expr::TokenDispatch { cases, excludes: sorted(excludes.clone()), repeat: *repeat }
            }
        })
    }

    /// A choice of complete tags, as one rule.
    fn tag_choice(&mut self, path: &str, tags: &[Tag]) -> Result<Expr> {
        let alts = tags.iter().map(|t| self.tag(t)).collect::<Result<Vec<_>>>()?;
        self.shared(path, Expr::Alt(alts))
    }

    fn tag(&mut self, t: &Tag) -> Result<Expr> {
        let begin = match &t.begin {
            Begin::Str(s) => Expr::literal(s),
            Begin::Token(id) => Expr::Token(*id),
        };
        let (content, end) = self.tag_parts(t)?;
        Ok(Expr::Seq(vec![begin, content, end]))
    }

    /// Content (with the tag's end as its end context) and end of a tag.
    fn tag_parts(&mut self, t: &Tag) -> Result<(Expr, Expr)> {
        let (ctx, end) = match &t.end {
            End::Strs(ends) => {
                let strs: Vec<Vec<u8>> = ends.iter().filter(|e| !e.is_empty()).map(|e| e.as_bytes().to_vec()).collect();
                if strs.is_empty() && t.content.format.is_unlimited() && !t.content.format.is_excluded() {
                    return Err(err(
                        ErrorKind::Invalid,
                        &format!("{}.end", t.path),
                        "tag",
                        "end",
                        format!("When the content is unlimited, at least one end string must be non-empty (the {} content could never stop)", t.content.format.type_name()),
                    ));
                }
                let end = if ends.len() == 1 {
                    Expr::literal(&ends[0])
                } else {
                    Expr::Alt(ends.iter().map(|e| Expr::literal(e)).collect())
                };
                (EndCtx { strs, token: None }, end)
            }
            End::Token(id) => (EndCtx { strs: Vec::new(), token: Some(*id) }, Expr::Token(*id)),
        };
        let content = self.lower(&t.content, &ctx)?;
        Ok((content, end))
    }
}
