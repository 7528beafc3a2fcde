//! XML parameter styles of tool-calling model families: the root object's
//! properties are written as tagged parameters instead of JSON members.
//!
//! Common rules (see the model-styles spec): properties in schema order
//! (required ones mandatory, each at most once), bounded whitespace before,
//! between and after parameters; a parameter whose schema only admits
//! strings is raw text (no JSON escaping, no trimming) that cannot contain
//! the closing tag; every other value is JSON, optionally surrounded by
//! whitespace. Styles with a type attribute (`deepseek*`, `kimi_k3`,
//! `cohere`) tie it to the JSON type of the value. `minimax_m3` and
//! `cohere` nest objects (and arrays) as elements. Undeclared keys are
//! written as XML names (`[a-zA-Z_][a-zA-Z0-9_]*`, cohere: escaped
//! attribute text).

use std::collections::HashMap;

use formcast_grammar::{Expr, Grammar};

use crate::ecma;
use crate::emit::{alt, lit, opt, re_expr, rep, seq, Enc, Layout};
use crate::error::{Result, SchemaError};
use crate::lower::Lowerer;
use crate::numbers::NumLang;
use crate::options::{Style, Whitespace, DEFAULT_MAX_WHITESPACE};
use crate::re::Re;
use crate::schema::{ArrAlt, Builder, NodeId, Shape, FALSE, TRUE};
use crate::strings::{Atom, Lang, Piece};

const MINIMAX_NS: &str = "]<]minimax[>[";
const XML_NAME: &str = "[a-zA-Z_][a-zA-Z0-9_]*";

fn limit(ptr: &str, reason: impl Into<String>) -> SchemaError {
    SchemaError::Limit { pointer: ptr.to_string(), reason: reason.into() }
}

/// A nested value of `cohere_xml` / `minimax_m3_xml` held by a rule of its
/// own (see [`Lowerer::xml_part_rule`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum XmlPart {
    /// cohere: the `dict` body of an object value (its members as elements).
    CohereDict,
    /// cohere: one `list` item, `<cofl:value type="…">…</cofl:value>`.
    CohereItem,
    /// minimax_m3: the members of an object value as elements.
    M3Object,
    /// minimax_m3: one array item, `<item>…</item>`.
    M3Item,
}

/// The JSON type tags of a value, for styles that write them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Num,
    Bool,
    Null,
    Obj,
    Arr,
}

/// The part of a shape holding one kind of value.
fn part(s: &Shape, k: Kind) -> Option<Shape> {
    let mut p = Shape::none();
    match k {
        Kind::Str => p.str = s.str.clone(),
        Kind::Num => p.num = s.num.clone(),
        Kind::Bool => p.bools = s.bools,
        Kind::Null => p.null = s.null,
        Kind::Obj => p.obj = s.obj.clone(),
        Kind::Arr => p.arr = s.arr.clone(),
    }
    if p.is_trivially_empty() {
        None
    } else {
        Some(p)
    }
}

fn only_strings(s: &Shape) -> bool {
    !s.null && !s.bools[0] && !s.bools[1] && matches!(s.num, NumLang::Nothing) && s.arr.is_empty() && s.obj.is_empty() && !matches!(s.str, Lang::Nothing)
}

fn xml_attr_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Builds the grammar of `root` in an XML parameter style.
pub fn lower(b: &mut Builder<'_>, root: NodeId, style: Style) -> Result<Grammar> {
    let ws = match &b.opts.whitespace {
        Whitespace::Any { .. } | Whitespace::Compact => b.opts.whitespace.clone(),
        Whitespace::Indent { .. } => Whitespace::Any { max_per_gap: DEFAULT_MAX_WHITESPACE },
    };
    let mut lw = Lowerer::new(b, Layout::new(ws));
    let root_rule = lw.em.reserve("root").map_err(|r| limit("", r))?;
    let shape = lw.b.shape(root)?;
    if shape.obj.is_empty() {
        return Err(SchemaError::Unsupported {
            keyword: "type".into(),
            pointer: String::new(),
            reason: format!("the {} style needs an object at the root (its properties become the parameters)", style.name()),
        });
    }
    let mut non_objects = (*shape).clone();
    non_objects.obj.clear();
    if !non_objects.is_trivially_empty() {
        // The style's parameters are an object by definition (documented);
        // the schema's other root values are reported, not generated.
        lw.b.warn("type", "", format!("only objects can be written in the {} style; the schema's other root values are not generated", style.name()));
    }
    let mut alts = Vec::new();
    for o in shape.obj.clone() {
        for (ne, empty_ok) in lw.object_members(&o, 0, Some(style))? {
            let gap = lw.xml_gap();
            if empty_ok {
                alts.push(gap.clone());
            }
            alts.push(seq(vec![gap.clone(), ne, gap]));
        }
    }
    lw.drain_xml(style)?;
    lw.em.set(root_rule, alt(alts));
    Ok(Grammar { rules: std::mem::take(&mut lw.em.rules), root: root_rule })
}

impl<'b, 'a> Lowerer<'b, 'a> {
    /// Whitespace allowed around parameters (bounded like JSON gaps).
    pub(crate) fn xml_gap(&self) -> Expr {
        match &self.layout.ws {
            Whitespace::Any { max_per_gap } if *max_per_gap > 0 => rep(Expr::Chars(vec![(0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)]), 0, Some(*max_per_gap)),
            _ => Expr::Empty,
        }
    }

    /// The closing tag of a parameter (what raw text must not contain).
    fn close_tag(style: Style, name: &str) -> String {
        match style {
            Style::QwenXml | Style::MinimaxXml => "</parameter>".into(),
            Style::MinimaxM3Xml => format!("{MINIMAX_NS}</{name}>"),
            Style::DeepseekXml => "</｜DSML｜parameter>".into(),
            Style::DeepseekV41Xml => "</｜DSML｜ parameter>".into(),
            Style::GlmXml => "</arg_value>".into(),
            Style::CohereXml => "</cofl:value>".into(),
            Style::KimiK3Xml => "<|close|>argument<|sep|>".into(),
            Style::Json => unreachable!(),
        }
    }

    /// Text raw strings may never contain.
    fn forbidden(style: Style, name: &str) -> String {
        match style {
            // Any namespace marker would start an element.
            Style::MinimaxM3Xml => MINIMAX_NS.into(),
            _ => Self::close_tag(style, name),
        }
    }

    /// A raw-text string value: the string language minus any text
    /// containing the forbidden marker or an exclude.
    fn raw_string(&mut self, lang: &Lang, forbidden: &str, ptr: &str) -> Result<Expr> {
        let e = self.raw_string_unexcluded(lang, forbidden, ptr)?;
        Ok(self.avoid(e))
    }

    fn raw_string_unexcluded(&mut self, lang: &Lang, forbidden: &str, ptr: &str) -> Result<Expr> {
        if matches!(lang, Lang::All) {
            return Ok(Expr::TextExcluding(vec![forbidden.as_bytes().to_vec()]));
        }
        let contains = Lang::Atom(Atom::new(Re::seq(vec![Re::any(), Re::lit(forbidden), Re::any()]), format!("raw text without '{forbidden}'")));
        let l = Lang::and(lang.clone(), Lang::not(contains));
        let pieces = match l.pieces() {
            Ok(p) => p,
            Err(reason) => {
                self.b.refuse("maxLength", ptr, format!("raw XML text: {reason}"))?;
                return Ok(Expr::TextExcluding(vec![forbidden.as_bytes().to_vec()]));
            }
        };
        let mut alts = Vec::new();
        for p in pieces {
            alts.push(match p {
                Piece::Any => Expr::TextExcluding(vec![forbidden.as_bytes().to_vec()]),
                Piece::Length(min, max) => {
                    // Shorter than the marker: it cannot occur.
                    if max.is_some_and(|m| (m as usize) < forbidden.chars().count()) {
                        self.em.repeat("raw_chars", re_expr(&Re::any_char(), Enc::Raw), min as u32, max.map(|m| m as u32)).map_err(|r| limit(ptr, r))?
                    } else {
                        self.b.refuse("maxLength", ptr, "length bounds on raw XML text that may contain the closing tag")?;
                        Expr::TextExcluding(vec![forbidden.as_bytes().to_vec()])
                    }
                }
                Piece::Content(re) => re_expr(&re, Enc::Raw),
                Piece::Automaton(d) => self.automaton_rules(&d, Enc::Raw, ptr, Expr::Empty)?,
            });
        }
        Ok(alt(alts))
    }

    /// A JSON value (the whole node, or one part of its shape) with
    /// optional whitespace around it.
    fn json_part(&mut self, part: Option<&Shape>, node: NodeId, depth: usize) -> Result<Expr> {
        let v = match part {
            None => self.value(node, depth + 1)?,
            Some(s) => self.shape_value(s, node, depth)?,
        };
        let g = self.xml_gap();
        Ok(seq(vec![g.clone(), v, g]))
    }

    /// The JSON grammar of a part of `node`'s shape.
    fn shape_value(&mut self, s: &Shape, node: NodeId, depth: usize) -> Result<Expr> {
        let ptr = self.pointer(node);
        let mut alts = vec![self.scalar_expr(s, &ptr)?];
        for a in s.arr.clone() {
            alts.push(self.array_expr(&a, depth + 1)?);
        }
        for o in s.obj.clone() {
            alts.push(self.object_expr(&o, depth + 1)?);
        }
        Ok(alt(alts))
    }

    /// One declared parameter.
    pub(crate) fn xml_member(&mut self, style: Style, name: &str, node: NodeId, depth: usize) -> Result<Expr> {
        let shape = self.b.shape(node)?;
        let ptr = self.pointer(node);
        // Styles that write the name inside an attribute escape it.
        let name_lit = match style {
            Style::CohereXml | Style::KimiK3Xml => lit(&xml_attr_escape(name)),
            _ => lit(name),
        };
        let name_lit = self.avoid(name_lit);
        if matches!(name_lit, Expr::Nothing) {
            return Ok(Expr::Nothing);
        }
        self.param(style, name_lit, Some(name), &shape, node, depth, &ptr)
    }

    /// A parameter with an undeclared name from `keys`.
    pub(crate) fn xml_region_member(&mut self, style: Style, keys: &Lang, node: NodeId, depth: usize, ptr: &str) -> Result<Expr> {
        let shape = self.b.shape(node)?;
        let name_expr = if style == Style::CohereXml {
            let pieces = keys.pieces().map_err(|r| limit(ptr, r))?;
            let mut alts = Vec::new();
            for p in pieces {
                alts.push(match p {
                    Piece::Any => Expr::star(re_expr(&Re::any_char(), Enc::XmlAttr)),
                    Piece::Length(a, b) => rep(re_expr(&Re::any_char(), Enc::XmlAttr), a as u32, b.map(|x| x as u32)),
                    Piece::Content(re) => re_expr(&re, Enc::XmlAttr),
                    Piece::Automaton(d) => self.automaton_rules(&d, Enc::XmlAttr, ptr, Expr::Empty)?,
                });
            }
            alt(alts)
        } else {
            let names = Lang::Atom(Atom::new(ecma::full_match(XML_NAME), "XML name".into()));
            let l = Lang::and(keys.clone(), names);
            let pieces = l.pieces().map_err(|r| limit(ptr, r))?;
            let mut alts = Vec::new();
            for p in pieces {
                alts.push(match p {
                    Piece::Content(re) => re_expr(&re, Enc::Raw),
                    Piece::Automaton(d) => self.automaton_rules(&d, Enc::Raw, ptr, Expr::Empty)?,
                    Piece::Any | Piece::Length(..) => re_expr(&ecma::full_match(XML_NAME), Enc::Raw),
                });
            }
            alt(alts)
        };
        let name_expr = self.avoid(name_expr);
        if matches!(name_expr, Expr::Nothing) {
            return Ok(Expr::Nothing);
        }
        if style == Style::MinimaxM3Xml {
            // Element names must be repeated in the closing tag: only a
            // finite set of names can be tracked.
            return match keys {
                Lang::Set(names) => {
                    let mut alts = Vec::new();
                    for n in names.iter() {
                        alts.push(self.param(style, lit(n), Some(n), &shape, node, depth, ptr)?);
                    }
                    Ok(alt(alts))
                }
                _ => {
                    self.b.refuse("additionalProperties", ptr, "minimax_m3_xml writes keys as element names, which needs a finite set of names")?;
                    Ok(Expr::Nothing)
                }
            };
        }
        self.param(style, name_expr, None, &shape, node, depth, ptr)
    }

    /// `open(name) value close` for one parameter, per style.
    #[allow(clippy::too_many_arguments)]
    fn param(&mut self, style: Style, name: Expr, literal_name: Option<&str>, shape: &Shape, node: NodeId, depth: usize, ptr: &str) -> Result<Expr> {
        let close = Self::close_tag(style, literal_name.unwrap_or(""));
        let forbidden = Self::forbidden(style, literal_name.unwrap_or(""));
        match style {
            Style::QwenXml | Style::MinimaxXml | Style::GlmXml => {
                let value = if only_strings(shape) { self.raw_string(&shape.str, &forbidden, ptr)? } else { self.json_part(None, node, depth)? };
                let open = match style {
                    Style::QwenXml => seq(vec![lit("<parameter="), name, lit(">")]),
                    Style::MinimaxXml => seq(vec![lit("<parameter name=\""), name, lit("\">")]),
                    _ => seq(vec![lit("<arg_key>"), name, lit("</arg_key>"), self.xml_gap(), lit("<arg_value>")]),
                };
                Ok(seq(vec![open, value, lit(&close)]))
            }
            Style::DeepseekXml | Style::DeepseekV41Xml => {
                let head = if style == Style::DeepseekXml { "<｜DSML｜parameter name=\"" } else { "<｜DSML｜ parameter name=\"" };
                let mut alts = Vec::new();
                if let Some(sp) = part(shape, Kind::Str) {
                    let v = self.raw_string(&sp.str, &forbidden, ptr)?;
                    alts.push(seq(vec![lit(head), name.clone(), lit("\" string=\"true\">"), v, lit(&close)]));
                }
                let mut rest = shape.clone();
                rest.str = Lang::Nothing;
                if !rest.is_trivially_empty() {
                    let whole = matches!(shape.str, Lang::Nothing);
                    let v = self.json_part(if whole { None } else { Some(&rest) }, node, depth)?;
                    alts.push(seq(vec![lit(head), name, lit("\" string=\"false\">"), v, lit(&close)]));
                }
                Ok(alt(alts))
            }
            Style::KimiK3Xml => {
                let mut alts = Vec::new();
                let typed = |tag: &str, v: Expr| seq(vec![lit("<|open|>argument key=\""), name.clone(), lit(&format!("\" type=\"{tag}\"<|sep|>")), v, lit(&close)]);
                for (k, tag) in [(Kind::Str, "string"), (Kind::Num, "number"), (Kind::Bool, "boolean"), (Kind::Obj, "object"), (Kind::Arr, "array"), (Kind::Null, "null")] {
                    let Some(p) = part(shape, k) else { continue };
                    let v = if k == Kind::Str { self.raw_string(&p.str, &forbidden, ptr)? } else { self.json_part(Some(&p), node, depth)? };
                    alts.push(typed(tag, v));
                    // A declared property's type attribute is fixed
                    // (integers render as "number"); a free-form key's may
                    // be any type name, "integer" for integral values.
                    if k == Kind::Num && literal_name.is_none() {
                        let mut ints = p.clone();
                        ints.num = NumLang::and(p.num.clone(), NumLang::Int);
                        if ints.num.is_empty() != Some(true) {
                            let v = self.json_part(Some(&ints), node, depth)?;
                            alts.push(typed("integer", v));
                        }
                    }
                }
                Ok(alt(alts))
            }
            Style::CohereXml => {
                let open = |t: &str| seq(vec![lit("<cofl:value name=\""), name.clone(), lit(&format!("\" type=\"{t}\">"))]);
                let body = self.cohere_value(shape, node, depth, ptr)?;
                let mut alts = Vec::new();
                for (t, v) in body {
                    alts.push(seq(vec![open(t), v, lit(&close)]));
                }
                Ok(alt(alts))
            }
            Style::MinimaxM3Xml => {
                let n = literal_name.expect("minimax_m3 names are literal");
                let v = self.m3_value(shape, node, depth, ptr)?;
                Ok(seq(vec![lit(&format!("{MINIMAX_NS}<{n}>")), v, lit(&close)]))
            }
            Style::Json => unreachable!(),
        }
    }

    /// The rule holding `part` of `node`'s value, reserved on first use and
    /// built by [`Self::drain_xml`]. Objects and array items of the styles
    /// that nest them as elements go through these rules, so a schema that
    /// refers to itself (`{"properties": {"child": {"$ref": "#"}}}`) lowers
    /// to a recursive rule, each node once, and the lowering never recurses
    /// deeper than one value.
    fn xml_part_rule(&mut self, node: NodeId, part: XmlPart) -> Result<Expr> {
        if let Some(&r) = self.xml_rules.get(&(node, part)) {
            return Ok(Expr::Rule(r));
        }
        let ptr = self.pointer(node);
        self.b.tick(&ptr)?;
        let base = if ptr.is_empty() { "root".to_string() } else { ptr.trim_start_matches('/').to_string() };
        let suffix = match part {
            XmlPart::CohereDict | XmlPart::M3Object => "elements",
            XmlPart::CohereItem | XmlPart::M3Item => "item",
        };
        let id = self.em.reserve(&format!("{base}_{suffix}")).map_err(|r| limit(&ptr, r))?;
        self.xml_rules.insert((node, part), id);
        self.xml_pending.push((node, part, id));
        Ok(Expr::Rule(id))
    }

    /// Builds every reserved rule, JSON values and XML parts alike (each
    /// may reserve more of either kind).
    fn drain_xml(&mut self, style: Style) -> Result<()> {
        loop {
            self.drain()?;
            let Some((node, part, id)) = self.xml_pending.pop() else { return Ok(()) };
            let shape = self.b.shape(node)?;
            let ptr = self.pointer(node);
            let body = match part {
                XmlPart::CohereDict | XmlPart::M3Object => {
                    let mut alts = Vec::new();
                    for o in shape.obj.clone() {
                        for (ne, empty_ok) in self.object_members(&o, 0, Some(style))? {
                            let g = self.xml_gap();
                            alts.push(seq(vec![g.clone(), ne, g.clone()]));
                            if empty_ok {
                                alts.push(g);
                            }
                        }
                    }
                    alt(alts)
                }
                XmlPart::CohereItem => {
                    let mut alts = Vec::new();
                    for (t, v) in self.cohere_value(&shape, node, 0, &ptr)? {
                        alts.push(seq(vec![lit(&format!("<cofl:value type=\"{t}\">")), v, lit("</cofl:value>")]));
                    }
                    alt(alts)
                }
                XmlPart::M3Item => {
                    let v = self.m3_value(&shape, node, 0, &ptr)?;
                    seq(vec![lit(&format!("{MINIMAX_NS}<item>")), v, lit(&format!("{MINIMAX_NS}</item>"))])
                }
            };
            self.em.set(id, body);
        }
    }

    /// Cohere bodies by type attribute: `raw` strings, `json` scalars,
    /// `dict` nested values, `list` items.
    fn cohere_value(&mut self, shape: &Shape, node: NodeId, depth: usize, ptr: &str) -> Result<Vec<(&'static str, Expr)>> {
        let mut out = Vec::new();
        if node == TRUE {
            self.b.refuse("type", ptr, "cohere_xml needs a declared type for every value")?;
        }
        if let Some(p) = part(shape, Kind::Str) {
            out.push(("raw", self.raw_string(&p.str, "</cofl:value>", ptr)?));
        }
        let mut scalars = Shape::none();
        scalars.null = shape.null;
        scalars.bools = shape.bools;
        scalars.num = shape.num.clone();
        if !scalars.is_trivially_empty() {
            out.push(("json", self.json_part(Some(&scalars), node, depth)?));
        }
        if !shape.obj.is_empty() {
            out.push(("dict", self.xml_part_rule(node, XmlPart::CohereDict)?));
        }
        for a in shape.arr.clone() {
            let item = |me: &mut Lowerer<'b, 'a>, n: NodeId| me.xml_part_rule(n, XmlPart::CohereItem);
            out.push(("list", self.xml_array(&a, item, ptr)?));
        }
        Ok(out)
    }

    /// minimax_m3: strings raw, objects as nested elements, arrays as
    /// `<item>` elements, other scalars as JSON text.
    fn m3_value(&mut self, shape: &Shape, node: NodeId, depth: usize, ptr: &str) -> Result<Expr> {
        if node == TRUE {
            self.b.refuse("type", ptr, "minimax_m3_xml cannot write an unconstrained value")?;
        }
        let mut alts = Vec::new();
        if let Some(p) = part(shape, Kind::Str) {
            alts.push(self.raw_string(&p.str, MINIMAX_NS, ptr)?);
        }
        let mut scalars = Shape::none();
        scalars.null = shape.null;
        scalars.bools = shape.bools;
        scalars.num = shape.num.clone();
        if !scalars.is_trivially_empty() {
            alts.push(self.json_part(Some(&scalars), node, depth)?);
        }
        if !shape.obj.is_empty() {
            alts.push(self.xml_part_rule(node, XmlPart::M3Object)?);
        }
        for a in shape.arr.clone() {
            let item = |me: &mut Lowerer<'b, 'a>, n: NodeId| me.xml_part_rule(n, XmlPart::M3Item);
            alts.push(self.xml_array(&a, item, ptr)?);
        }
        Ok(alt(alts))
    }

    /// Array items as a sequence of elements separated by whitespace
    /// (prefix items, rest, length bounds; `contains`/`uniqueItems` are not
    /// supported in element form).
    fn xml_array(&mut self, a: &ArrAlt, mut item: impl FnMut(&mut Lowerer<'b, 'a>, NodeId) -> Result<Expr>, ptr: &str) -> Result<Expr> {
        if a.unique || !a.contains.is_empty() {
            self.b.refuse(if a.unique { "uniqueItems" } else { "contains" }, ptr, "not supported for arrays written as XML elements")?;
        }
        let p = a.prefix.len() as u64;
        let max = if a.rest == FALSE { Some(a.max.map_or(p, |m| m.min(p))) } else { a.max };
        let g = self.xml_gap();
        let mut cache: HashMap<NodeId, Expr> = HashMap::new();
        let mut enc = |me: &mut Lowerer<'b, 'a>, n: NodeId| -> Result<Expr> {
            if let Some(e) = cache.get(&n) {
                return Ok(e.clone());
            }
            let e = seq(vec![item(me, n)?, g.clone()]);
            cache.insert(n, e.clone());
            Ok(e)
        };
        let mut tail = if max.is_none_or(|m| m > p) {
            let r = enc(self, a.rest)?;
            let lo = a.min.saturating_sub(p);
            let hi = max.map(|m| m - p);
            self.em.repeat("items", r, lo as u32, hi.map(|h| h as u32)).map_err(|e| limit(ptr, e))?
        } else {
            Expr::Empty
        };
        for i in (0..a.prefix.len()).rev() {
            let body = seq(vec![enc(self, a.prefix[i])?, tail]);
            tail = if (i as u64) < a.min { body } else { opt(body) };
            // Each item nests the rest once more: a rule every 100 items
            // keeps expressions shallow however many prefix items there are.
            if i % 100 == 0 && i > 0 {
                let id = self.em.add("items_tail", tail).map_err(|r| limit(ptr, r))?;
                tail = Expr::Rule(id);
            }
        }
        Ok(seq(vec![self.xml_gap(), tail]))
    }
}
