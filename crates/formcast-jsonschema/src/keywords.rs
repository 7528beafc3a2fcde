//! Reading a schema object's keywords into a [`Shape`].
//!
//! Each type-specific keyword constrains its type only (`minimum` says
//! nothing about strings), so a schema starts as "any value" and every
//! keyword intersects the part it governs. In-place applicators (`allOf`,
//! `$ref`, `anyOf`...) intersect whole shapes, carrying the annotations that
//! `unevaluatedProperties` / `unevaluatedItems` read.

use std::collections::BTreeSet;
use std::rc::Rc;

use crate::decimal::Decimal;
use crate::ecma;
use crate::error::{Result, SchemaError};
use crate::formats;
use crate::json::Json;
use crate::numbers::NumLang;
use crate::options::FormatMode;
use crate::refs::{Draft, LocId, RECURSIVE_ANCHOR};
use crate::schema::{ArrAlt, Builder, Contains, NodeId, ObjAlt, ScopeId, Shape, FALSE, TRUE};
use crate::strings::{Atom, Lang};
use crate::uri;

/// One JSON type's part of a shape.
#[derive(Clone, Copy)]
enum Part {
    Num,
    Str,
    Arr,
    Obj,
}

impl Part {
    fn of(self, s: &Shape) -> Shape {
        let mut p = Shape::none();
        match self {
            Part::Num => p.num = s.num.clone(),
            Part::Str => p.str = s.str.clone(),
            Part::Arr => p.arr = s.arr.clone(),
            Part::Obj => p.obj = s.obj.clone(),
        }
        p
    }
}

/// Largest number of `anyOf` branches expanded into all their combinations
/// (needed when an enclosing `unevaluated*` reads their annotations).
const MAX_ANNOTATED_ANYOF: usize = 6;

fn invalid(keyword: &str, pointer: &str, reason: impl Into<String>) -> SchemaError {
    SchemaError::Invalid { keyword: keyword.into(), pointer: pointer.into(), reason: reason.into() }
}

fn kw_ptr(base: &str, kw: &str) -> String {
    format!("{base}/{}", kw.replace('~', "~0").replace('/', "~1"))
}

/// A non-negative integer keyword value (`2.0` counts as 2).
fn count(j: &Json, keyword: &str, pointer: &str) -> Result<u64> {
    match j {
        Json::Num(d) if !d.neg && d.is_integer() => {
            let s = d.to_plain();
            Ok(s.parse::<u64>().unwrap_or(u64::MAX))
        }
        _ => Err(invalid(keyword, pointer, "must be a non-negative integer")),
    }
}

fn number(j: &Json, keyword: &str, pointer: &str) -> Result<Decimal> {
    match j {
        Json::Num(d) => Ok(d.clone()),
        _ => Err(invalid(keyword, pointer, "must be a number")),
    }
}

/// The oldest draft in which a keyword exists (older drafts ignore it as
/// unknown).
fn since(keyword: &str) -> Draft {
    match keyword {
        "const" | "contains" | "propertyNames" => Draft::D6,
        "if" | "then" | "else" => Draft::D7,
        "dependentRequired" | "dependentSchemas" | "unevaluatedItems" | "unevaluatedProperties" | "minContains" | "maxContains" | "$recursiveRef" => Draft::D2019,
        "prefixItems" | "$dynamicRef" => Draft::D2020,
        _ => Draft::D4,
    }
}

/// A keyword's value if the keyword exists in `draft`.
fn get<'j>(j: &'j Json, draft: Draft, keyword: &str) -> Option<&'j Json> {
    if draft < since(keyword) || (keyword == "$recursiveRef" && draft != Draft::D2019) {
        return None;
    }
    j.get(keyword)
}

impl<'a> Builder<'a> {
    pub(crate) fn raw_shape(&mut self, loc: LocId, scope: ScopeId, ann: bool, value_pos: bool) -> Result<Shape> {
        let l = self.ix.loc(loc).clone();
        let ptr: Rc<str> = Rc::from(l.pointer.as_str());
        let j = l.json;
        match j {
            Json::Bool(true) => return Ok(Shape::any(&ptr)),
            Json::Bool(false) => return Ok(Shape::none()),
            Json::Obj(_) => {}
            _ => return Err(invalid("(schema)", &ptr, format!("a schema must be an object or a boolean, not {}", j.type_name()))),
        }
        if let Some(meta) = &l.unknown_meta {
            self.refuse("$schema", &ptr, format!("unknown meta-schema '{meta}': its vocabularies cannot be known"))?;
        }
        let scope = self.enter_scope(scope, &l.base);
        let draft = l.draft;
        let mut s = if l.draft <= Draft::D7 && get(j, draft, "$ref").is_some() {
            // Before 2019-09, `$ref` replaces the whole schema object.
            let r = get(j, draft, "$ref").unwrap();
            (*self.ref_shape(loc, scope, ann, r, "$ref")?).clone()
        } else {
            self.keywords_shape(loc, scope, ann, &ptr)?
        };
        if value_pos {
            self.apply_strict(&mut s);
        }
        Ok(s)
    }

    fn keywords_shape(&mut self, loc: LocId, scope: ScopeId, ann: bool, ptr: &Rc<str>) -> Result<Shape> {
        let l = self.ix.loc(loc).clone();
        let j = l.json;
        let draft = l.draft;
        let has_uneval = get(j, draft, "unevaluatedProperties").is_some() || get(j, draft, "unevaluatedItems").is_some();
        let inner_ann = ann || has_uneval;
        let mut s = Shape::any(ptr);

        self.type_keyword(j, draft, ptr, &mut s)?;
        if let Some(c) = get(j, draft, "const") {
            let lit = self.literal_shape(c, ptr);
            s = self.shape_and(&s, &lit, ptr)?;
        }
        if let Some(e) = get(j, draft, "enum") {
            let Json::Arr(values) = e else { return Err(invalid("enum", &kw_ptr(ptr, "enum"), "must be an array")) };
            // Scalars are collected in bulk (enums can be long).
            let mut u = Shape::none();
            let mut strs = Vec::new();
            let mut nums = Vec::new();
            for v in values {
                match v {
                    Json::Str(x) => strs.push(x.clone()),
                    Json::Num(d) => nums.push(d.clone()),
                    Json::Null => u.null = true,
                    Json::Bool(b) => u.bools[*b as usize] = true,
                    other => {
                        let lit = self.literal_shape(other, ptr);
                        u = self.shape_or(&u, &lit);
                    }
                }
            }
            u.str = Lang::set(strs);
            u.num = NumLang::set(nums);
            s = self.shape_and(&s, &u, ptr)?;
        }
        self.number_keywords(j, ptr, draft, &mut s)?;
        self.string_keywords(j, draft, ptr, &mut s)?;
        self.array_keywords(loc, scope, j, ptr, draft, &mut s)?;
        self.object_keywords(loc, scope, j, draft, ptr, &mut s)?;

        // In-place applicators.
        if let Some(r) = get(j, draft, "$ref") {
            let sh = self.ref_shape(loc, scope, inner_ann, r, "$ref")?;
            s = self.shape_and(&s, &sh, ptr)?;
        }
        for kw in ["$dynamicRef", "$recursiveRef"] {
            if let Some(r) = get(j, draft, kw) {
                let sh = self.ref_shape(loc, scope, inner_ann, r, kw)?;
                s = self.shape_and(&s, &sh, ptr)?;
            }
        }
        if let Some(v) = get(j, draft, "allOf") {
            for child in self.schema_list(loc, v, "allOf", ptr)? {
                let n = self.raw_node(child, scope, inner_ann, false);
                let sh = self.shape(n)?;
                s = self.shape_and(&s, &sh, ptr)?;
            }
        }
        if let Some(v) = get(j, draft, "anyOf") {
            let children = self.schema_list(loc, v, "anyOf", ptr)?;
            let mut shapes = Vec::new();
            for c in children {
                let n = self.raw_node(c, scope, inner_ann, false);
                shapes.push(self.shape(n)?);
            }
            let u = self.any_of(&shapes, inner_ann, &kw_ptr(ptr, "anyOf"))?;
            s = self.shape_and(&s, &u, ptr)?;
        }
        if let Some(v) = get(j, draft, "oneOf") {
            let children = self.schema_list(loc, v, "oneOf", ptr)?;
            let nodes: Vec<NodeId> = children.into_iter().map(|c| self.raw_node(c, scope, inner_ann, false)).collect();
            let u = self.one_of(&nodes, &kw_ptr(ptr, "oneOf"))?;
            s = self.shape_and(&s, &u, ptr)?;
        }
        if let Some(v) = get(j, draft, "not") {
            let c = self.ix.child(loc, v, &["not"]);
            let n = self.raw_node(c, scope, false, false);
            let sh = self.shape(n)?;
            let neg = self.shape_not(&sh, &Rc::from(kw_ptr(ptr, "not").as_str()))?;
            s = self.shape_and(&s, &neg, ptr)?;
        }
        if let Some(iv) = get(j, draft, "if") {
            let (then_v, else_v) = (get(j, draft, "then"), get(j, draft, "else"));
            if then_v.is_some() || else_v.is_some() || inner_ann {
                let ic = self.ix.child(loc, iv, &["if"]);
                let i_node = self.raw_node(ic, scope, inner_ann, false);
                let branch = |b: &mut Builder<'a>, v: Option<&'a Json>, kw: &str| -> NodeId {
                    match v {
                        Some(x) => {
                            let c = b.ix.child(loc, x, &[kw]);
                            b.raw_node(c, scope, inner_ann, false)
                        }
                        None => TRUE,
                    }
                };
                let t_node = branch(self, then_v, "then");
                let e_node = branch(self, else_v, "else");
                let (si, st, se) = (self.shape(i_node)?, self.shape(t_node)?, self.shape(e_node)?);
                let ip: Rc<str> = Rc::from(kw_ptr(ptr, "if").as_str());
                let then_part = self.shape_and(&si, &st, &ip)?;
                let else_part = if then_v.is_none() && !inner_ann {
                    // if ∪ (¬if ∧ else) = if ∪ else when no annotation matters.
                    (*se).clone()
                } else if then_v.is_none() && else_v.is_none() {
                    // Only the annotations of `if` matter: (if) ∪ (anything,
                    // with no annotations) is exact and needs no complement.
                    let mut any = Shape::any(&ip);
                    for o in &mut any.obj {
                        o.evaluated = Lang::Nothing;
                    }
                    any
                } else {
                    let not_if = self.shape_not(&si, &ip)?;
                    self.shape_and(&not_if, &se, &ip)?
                };
                let u = self.shape_or(&then_part, &else_part);
                s = self.shape_and(&s, &u, ptr)?;
            }
        }
        self.dependencies(loc, scope, inner_ann, j, draft, ptr, &mut s)?;

        // unevaluatedItems / unevaluatedProperties read the annotations.
        if let Some(u) = get(j, draft, "unevaluatedItems") {
            let c = self.ix.child(loc, u, &["unevaluatedItems"]);
            let un = self.raw_node(c, scope, false, true);
            let alts = std::mem::take(&mut s.arr);
            s.arr = alts.into_iter().map(|a| self.close_items(a, un)).collect();
        }
        if let Some(u) = get(j, draft, "unevaluatedProperties") {
            let c = self.ix.child(loc, u, &["unevaluatedProperties"]);
            let un = self.raw_node(c, scope, false, true);
            for o in &mut s.obj {
                let rest = Lang::not(std::mem::replace(&mut o.evaluated, Lang::All));
                if !matches!(rest, Lang::Nothing) {
                    o.rules.push((rest, un));
                }
            }
            s.obj.retain(|o| !self.obj_trivially_empty(o));
        }
        Ok(s)
    }

    /// Items not yet evaluated must match `un` (or a `contains` schema that
    /// evaluated them).
    pub(crate) fn close_items(&mut self, mut a: ArrAlt, un: NodeId) -> ArrAlt {
        if a.eval_all {
            return a;
        }
        let mut cover = un;
        for &c in &a.eval_contains.clone() {
            cover = self.or_node(cover, c);
        }
        for i in a.eval_prefix..a.prefix.len() {
            a.prefix[i] = self.and_node(a.prefix[i], cover);
        }
        a.rest = self.and_node(a.rest, cover);
        a.eval_all = true;
        a
    }

    /// Strict mode: an object alternative that declares properties accepts
    /// no others unless the schema said so; an array with `prefixItems` and
    /// no `items` accepts no further items.
    fn apply_strict(&mut self, s: &mut Shape) {
        for o in &mut s.obj {
            if matches!(o.evaluated, Lang::Nothing | Lang::All) {
                continue;
            }
            let rest = Lang::not(std::mem::replace(&mut o.evaluated, Lang::All));
            o.rules.push((rest, FALSE));
        }
        let alts = std::mem::take(&mut s.arr);
        s.arr = alts.into_iter().map(|a| if a.eval_prefix > 0 && !a.eval_all { self.close_items(a, FALSE) } else { a }).collect();
    }

    fn schema_list(&mut self, loc: LocId, v: &'a Json, kw: &str, ptr: &str) -> Result<Vec<LocId>> {
        let Json::Arr(items) = v else { return Err(invalid(kw, &kw_ptr(ptr, kw), "must be an array of schemas")) };
        if items.is_empty() {
            return Err(invalid(kw, &kw_ptr(ptr, kw), "must not be empty"));
        }
        Ok(items.iter().enumerate().map(|(i, it)| self.ix.child(loc, it, &[kw, &i.to_string()])).collect())
    }

    fn schema_map(&mut self, loc: LocId, v: &'a Json, kw: &str, ptr: &str) -> Result<Vec<(String, LocId)>> {
        let Json::Obj(m) = v else { return Err(invalid(kw, &kw_ptr(ptr, kw), "must be an object")) };
        Ok(m.iter().map(|(k, it)| (k.clone(), self.ix.child(loc, it, &[kw, k]))).collect())
    }

    fn ref_shape(&mut self, loc: LocId, scope: ScopeId, ann: bool, r: &Json, kw: &str) -> Result<Rc<Shape>> {
        let ptr = self.ix.loc(loc).pointer.clone();
        let Some(reference) = r.as_str() else { return Err(invalid(kw, &kw_ptr(&ptr, kw), "must be a string")) };
        let reference = if kw == "$recursiveRef" { "#" } else { reference };
        let mut target = match self.ix.resolve(loc, reference) {
            Ok(t) => t,
            Err(reason) => {
                if self.opts.lenient {
                    self.warn(kw, &ptr, format!("not enforced: unresolvable reference '{reference}': {reason}"));
                    return Ok(Rc::new(Shape::any(&Rc::from(ptr.as_str()))));
                }
                return Err(SchemaError::Reference { reference: reference.to_string(), pointer: ptr, reason });
            }
        };
        if kw == "$dynamicRef" || kw == "$recursiveRef" {
            // Dynamic when the static target is itself a dynamic anchor: the
            // outermost resource in scope defining it wins.
            let abs = uri::resolve(&self.ix.loc(loc).base, reference);
            let (res, frag) = uri::split_fragment(&abs);
            let name = if kw == "$recursiveRef" { Some(RECURSIVE_ANCHOR.to_string()) } else { frag.filter(|f| !f.starts_with('/')).map(|f| f.to_string()) };
            if let Some(name) = name {
                let res = if kw == "$recursiveRef" { self.ix.loc(target).base.clone() } else { res.to_string() };
                if self.ix.dynamic_anchor_in(&res, &name).is_some() {
                    if let Some(bound) = self.scope_lookup(scope, &name) {
                        target = bound;
                    }
                }
            }
        }
        let n = self.raw_node(target, scope, ann, false);
        self.shape(n)
    }

    fn type_keyword(&mut self, j: &Json, draft: Draft, ptr: &str, s: &mut Shape) -> Result<()> {
        let Some(t) = get(j, draft, "type") else { return Ok(()) };
        let names: Vec<&str> = match t {
            Json::Str(x) => vec![x.as_str()],
            Json::Arr(v) => v.iter().map(|x| x.as_str().ok_or_else(|| invalid("type", &kw_ptr(ptr, "type"), "must be a string or an array of strings"))).collect::<Result<_>>()?,
            _ => return Err(invalid("type", &kw_ptr(ptr, "type"), "must be a string or an array of strings")),
        };
        let mut names: BTreeSet<&str> = names.into_iter().collect();
        // OpenAPI: `nullable: true` adds null to the declared type.
        if matches!(get(j, draft, "nullable"), Some(Json::Bool(true))) {
            names.insert("null");
        }
        for n in &names {
            if !["null", "boolean", "integer", "number", "string", "array", "object"].contains(n) {
                if *n == "any" {
                    return Ok(());
                }
                return Err(invalid("type", &kw_ptr(ptr, "type"), format!("unknown type '{n}'")));
            }
        }
        s.null &= names.contains("null");
        if !names.contains("boolean") {
            s.bools = [false, false];
        }
        if !names.contains("number") {
            let keep = if names.contains("integer") { NumLang::Int } else { NumLang::Nothing };
            s.num = NumLang::and(std::mem::replace(&mut s.num, NumLang::Nothing), keep);
        }
        if !names.contains("string") {
            s.str = Lang::Nothing;
        }
        if !names.contains("array") {
            s.arr.clear();
        }
        if !names.contains("object") {
            s.obj.clear();
        }
        Ok(())
    }

    fn number_keywords(&mut self, j: &Json, ptr: &str, draft: Draft, s: &mut Shape) -> Result<()> {
        let mut lo: Option<(Decimal, bool)> = None;
        let mut hi: Option<(Decimal, bool)> = None;
        let mut any = false;
        if let Some(v) = get(j, draft, "minimum") {
            let excl = matches!(get(j, draft, "exclusiveMinimum"), Some(Json::Bool(true)));
            lo = Some((number(v, "minimum", &kw_ptr(ptr, "minimum"))?, !excl));
            any = true;
        }
        if let Some(v) = get(j, draft, "maximum") {
            let excl = matches!(get(j, draft, "exclusiveMaximum"), Some(Json::Bool(true)));
            hi = Some((number(v, "maximum", &kw_ptr(ptr, "maximum"))?, !excl));
            any = true;
        }
        let mut lang = if any { NumLang::range(lo, hi) } else { NumLang::All };
        if let Some(v @ Json::Num(_)) = get(j, draft, "exclusiveMinimum") {
            lang = NumLang::and(lang, NumLang::range(Some((number(v, "exclusiveMinimum", ptr)?, false)), None));
        }
        if let Some(v @ Json::Num(_)) = get(j, draft, "exclusiveMaximum") {
            lang = NumLang::and(lang, NumLang::range(None, Some((number(v, "exclusiveMaximum", ptr)?, false))));
        }
        if let Some(v) = get(j, draft, "multipleOf") {
            let m = number(v, "multipleOf", &kw_ptr(ptr, "multipleOf"))?;
            if m.neg || m.is_zero() {
                return Err(invalid("multipleOf", &kw_ptr(ptr, "multipleOf"), "must be greater than 0"));
            }
            lang = NumLang::and(lang, NumLang::MultipleOf(m));
        }
        if !matches!(lang, NumLang::All) {
            s.num = NumLang::and(std::mem::replace(&mut s.num, NumLang::Nothing), lang);
        }
        Ok(())
    }

    fn string_keywords(&mut self, j: &Json, draft: Draft, ptr: &str, s: &mut Shape) -> Result<()> {
        let mut lang = Lang::All;
        let min = match get(j, draft, "minLength") {
            Some(v) => count(v, "minLength", &kw_ptr(ptr, "minLength"))?,
            None => 0,
        };
        let max = match get(j, draft, "maxLength") {
            Some(v) => Some(count(v, "maxLength", &kw_ptr(ptr, "maxLength"))?),
            None => None,
        };
        if min > 0 || max.is_some() {
            lang = Lang::len(min, max);
        }
        if let Some(p) = get(j, draft, "pattern") {
            let kp = kw_ptr(ptr, "pattern");
            let Some(p) = p.as_str() else { return Err(invalid("pattern", &kp, "must be a string")) };
            match ecma::pattern_language(p) {
                Ok(re) => lang = Lang::and(lang, Lang::Atom(Atom::new(re, format!("pattern '{p}'")))),
                Err(reason) => self.refuse("pattern", &kp, format!("pattern '{p}': {reason}"))?,
            }
        }
        if let Some(f) = get(j, draft, "format") {
            let kp = kw_ptr(ptr, "format");
            if let (Some(name), FormatMode::Assert) = (f.as_str(), self.opts.format) {
                match formats::format_atom(name) {
                    None => self.warn("format", &kp, format!("unknown format '{name}' is not enforced")),
                    Some(Ok(atom)) => lang = Lang::and(lang, Lang::Atom(atom)),
                    Some(Err(reason)) => self.refuse("format", &kp, format!("format '{name}': {reason}"))?,
                }
            }
        }
        if !matches!(lang, Lang::All) {
            s.str = Lang::and(std::mem::replace(&mut s.str, Lang::Nothing), lang);
        }
        Ok(())
    }

    fn array_keywords(&mut self, loc: LocId, scope: ScopeId, j: &'a Json, ptr: &Rc<str>, draft: Draft, s: &mut Shape) -> Result<()> {
        const KWS: &[&str] = &["items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains", "uniqueItems"];
        if !KWS.iter().any(|k| get(j, draft, k).is_some()) {
            return Ok(());
        }
        let mut a = ArrAlt::any(ptr.clone());
        let value = |b: &mut Builder<'a>, v: &'a Json, segs: &[&str]| -> NodeId {
            let c = b.ix.child(loc, v, segs);
            b.raw_node(c, scope, false, true)
        };
        // Tuple form: `prefixItems`, or `items` as an array before 2020-12.
        let tuple: Option<(&'a Json, &str)> = match (get(j, draft, "prefixItems"), get(j, draft, "items")) {
            (Some(p), _) if draft >= Draft::D2020 => Some((p, "prefixItems")),
            (_, Some(i @ Json::Arr(_))) => Some((i, "items")),
            _ => None,
        };
        if let Some((t, kw)) = tuple {
            let Json::Arr(items) = t else { return Err(invalid(kw, &kw_ptr(ptr, kw), "must be an array of schemas")) };
            a.prefix = items.iter().enumerate().map(|(i, it)| value(self, it, &[kw, &i.to_string()])).collect();
            a.eval_prefix = a.prefix.len();
            let rest_kw = if kw == "items" { "additionalItems" } else { "items" };
            if let Some(r) = j.get(rest_kw) {
                a.rest = value(self, r, &[rest_kw]);
                a.eval_all = true;
            }
        } else if let Some(i) = get(j, draft, "items") {
            a.rest = value(self, i, &["items"]);
            a.eval_all = true;
        }
        if let Some(v) = get(j, draft, "minItems") {
            a.min = count(v, "minItems", &kw_ptr(ptr, "minItems"))?;
        }
        if let Some(v) = get(j, draft, "maxItems") {
            a.max = Some(count(v, "maxItems", &kw_ptr(ptr, "maxItems"))?);
        }
        if let Some(c) = get(j, draft, "contains") {
            let node = value(self, c, &["contains"]);
            let (mut min, mut max) = (1u64, None);
            if draft >= Draft::D2019 {
                if let Some(v) = get(j, draft, "minContains") {
                    min = count(v, "minContains", &kw_ptr(ptr, "minContains"))?;
                }
                if let Some(v) = get(j, draft, "maxContains") {
                    max = Some(count(v, "maxContains", &kw_ptr(ptr, "maxContains"))?);
                }
            }
            if max.is_some_and(|m| m < min) {
                s.arr.clear();
                return Ok(());
            }
            if min > 0 || max.is_some() {
                a.contains.push(Contains { node, min, max, from: 0 });
            }
            a.eval_contains.push(node);
        }
        if matches!(get(j, draft, "uniqueItems"), Some(Json::Bool(true))) {
            a.unique = true;
            a.origin = Rc::from(kw_ptr(ptr, "uniqueItems").as_str());
        }
        let alts = std::mem::take(&mut s.arr);
        s.arr = alts.iter().filter_map(|x| self.arr_and(x, &a)).collect();
        Ok(())
    }

    fn object_keywords(&mut self, loc: LocId, scope: ScopeId, j: &'a Json, draft: Draft, ptr: &Rc<str>, s: &mut Shape) -> Result<()> {
        const KWS: &[&str] = &["properties", "patternProperties", "additionalProperties", "required", "propertyNames", "minProperties", "maxProperties", "dependentRequired", "dependencies"];
        if !KWS.iter().any(|k| get(j, draft, k).is_some()) {
            return Ok(());
        }
        let mut o = ObjAlt::any(ptr.clone());
        let mut names: Vec<String> = Vec::new();
        if let Some(p) = get(j, draft, "properties") {
            for (name, c) in self.schema_map(loc, p, "properties", ptr)? {
                let n = self.raw_node(c, scope, false, true);
                names.push(name.clone());
                o.props.push((name, n));
            }
        }
        let mut evaluated = Lang::set(names.iter().cloned());
        let mut covered = evaluated.clone();
        if let Some(pp) = get(j, draft, "patternProperties") {
            for (pat, c) in self.schema_map(loc, pp, "patternProperties", ptr)? {
                let kp = kw_ptr(&kw_ptr(ptr, "patternProperties"), &pat);
                match ecma::pattern_language(&pat) {
                    Ok(re) => {
                        let lang = Lang::Atom(Atom::new(re, format!("patternProperties '{pat}'")));
                        let n = self.raw_node(c, scope, false, true);
                        o.rules.push((lang.clone(), n));
                        evaluated = Lang::or(evaluated, lang.clone());
                        covered = Lang::or(covered, lang);
                    }
                    Err(reason) => {
                        self.refuse("patternProperties", &kp, format!("pattern '{pat}': {reason}"))?;
                        // Lenient: keys matching the pattern are unknown,
                        // so nothing else may claim them exactly either.
                        evaluated = Lang::All;
                        covered = Lang::All;
                    }
                }
            }
        }
        if let Some(ap) = get(j, draft, "additionalProperties") {
            let c = self.ix.child(loc, ap, &["additionalProperties"]);
            let n = self.raw_node(c, scope, false, true);
            let rest = Lang::not(covered);
            if !matches!(rest, Lang::Nothing) && n != TRUE {
                o.rules.push((rest, n));
            }
            evaluated = Lang::All;
        }
        o.evaluated = evaluated;
        if let Some(pn) = get(j, draft, "propertyNames") {
            let c = self.ix.child(loc, pn, &["propertyNames"]);
            let n = self.raw_node(c, scope, false, false);
            let keys = self.shape(n)?.str.clone();
            let bad = Lang::not(keys);
            if !matches!(bad, Lang::Nothing) {
                o.rules.push((bad, FALSE));
            }
        }
        if let Some(r) = get(j, draft, "required") {
            let kp = kw_ptr(ptr, "required");
            let Json::Arr(v) = r else { return Err(invalid("required", &kp, "must be an array of strings")) };
            for x in v {
                let Some(name) = x.as_str() else { return Err(invalid("required", &kp, "must be an array of strings")) };
                o.required.insert(name.to_string());
                if o.prop(name).is_none() {
                    o.props.push((name.to_string(), TRUE));
                }
            }
        }
        if let Some(v) = get(j, draft, "minProperties") {
            o.min = count(v, "minProperties", &kw_ptr(ptr, "minProperties"))?;
        }
        if let Some(v) = get(j, draft, "maxProperties") {
            o.max = Some(count(v, "maxProperties", &kw_ptr(ptr, "maxProperties"))?);
        }
        let alts = std::mem::take(&mut s.obj);
        s.obj = alts.iter().filter_map(|x| self.obj_and(x, &o)).collect();
        Ok(())
    }

    /// `dependentRequired`, `dependentSchemas` and draft-7 `dependencies`:
    /// "if key k is present then ..." as disjoint alternatives (k absent |
    /// k present and ...).
    fn dependencies(&mut self, loc: LocId, scope: ScopeId, ann: bool, j: &'a Json, draft: Draft, ptr: &Rc<str>, s: &mut Shape) -> Result<()> {
        let mut deps: Vec<(String, Option<Vec<String>>, Option<NodeId>)> = Vec::new();
        for kw in ["dependentRequired", "dependentSchemas", "dependencies"] {
            let Some(v) = get(j, draft, kw) else { continue };
            let kp = kw_ptr(ptr, kw);
            let Json::Obj(m) = v else { return Err(invalid(kw, &kp, "must be an object")) };
            for (k, d) in m {
                match d {
                    Json::Arr(names) if kw != "dependentSchemas" => {
                        let names: Vec<String> = names
                            .iter()
                            .map(|x| x.as_str().map(String::from).ok_or_else(|| invalid(kw, &kp, "dependencies must be arrays of strings")))
                            .collect::<Result<_>>()?;
                        deps.push((k.clone(), Some(names), None));
                    }
                    Json::Obj(_) | Json::Bool(_) if kw != "dependentRequired" => {
                        let c = self.ix.child(loc, d, &[kw, k]);
                        let n = self.raw_node(c, scope, ann, false);
                        deps.push((k.clone(), None, Some(n)));
                    }
                    _ => return Err(invalid(kw, &kp, "invalid dependency")),
                }
            }
        }
        for (key, names, node) in deps {
            let absent = ObjAlt { props: vec![(key.clone(), FALSE)], ..ObjAlt::any(ptr.clone()) };
            let mut present = ObjAlt { props: vec![(key.clone(), TRUE)], ..ObjAlt::any(ptr.clone()) };
            present.required.insert(key.clone());
            for n in names.unwrap_or_default() {
                present.required.insert(n.clone());
                if present.prop(&n).is_none() {
                    present.props.push((n, TRUE));
                }
            }
            let mut present_shape = Shape::objects(vec![present]);
            if let Some(n) = node {
                let sh = self.shape(n)?;
                present_shape = self.shape_and(&present_shape, &sh, ptr)?;
            }
            let cond = self.shape_or(&Shape::non_objects(ptr), &Shape::objects(vec![absent]));
            let cond = self.shape_or(&cond, &present_shape);
            *s = self.shape_and(s, &cond, ptr)?;
        }
        Ok(())
    }

    fn any_of(&mut self, shapes: &[Rc<Shape>], ann: bool, ptr: &str) -> Result<Shape> {
        let rp: Rc<str> = Rc::from(ptr);
        if !ann {
            let mut u = Shape::none();
            for sh in shapes {
                u = self.shape_or_raw(&u, sh);
            }
            u.obj = crate::normalize::simplify_objs(std::mem::take(&mut u.obj));
            return Ok(u);
        }
        // Annotations of every valid branch count: take the union, over the
        // non-empty sets S of annotating branches, of "all of S hold" (whose
        // annotations are those of S), plus the plain non-annotating ones.
        let (annot, plain): (Vec<&Rc<Shape>>, Vec<&Rc<Shape>>) = shapes.iter().partition(|s| s.annotates());
        if annot.len() > MAX_ANNOTATED_ANYOF {
            self.refuse("anyOf", ptr, format!("{} branches with annotations under unevaluatedProperties/unevaluatedItems (at most {MAX_ANNOTATED_ANYOF})", annot.len()))?;
        }
        let mut u = Shape::none();
        for sh in plain {
            u = self.shape_or(&u, sh);
        }
        let n = annot.len().min(MAX_ANNOTATED_ANYOF);
        for mask in 1u32..(1 << n) {
            let mut acc: Option<Shape> = None;
            for (i, sh) in annot.iter().enumerate().take(n) {
                if mask & (1 << i) != 0 {
                    acc = Some(match acc {
                        None => (***sh).clone(),
                        Some(a) => self.shape_and(&a, sh, &rp)?,
                    });
                }
            }
            u = self.shape_or(&u, &acc.unwrap());
        }
        Ok(u)
    }

    /// Exactly one branch: each branch minus the others it is not provably
    /// disjoint from.
    fn one_of(&mut self, nodes: &[NodeId], ptr: &str) -> Result<Shape> {
        let rp: Rc<str> = Rc::from(ptr);
        let shapes: Vec<Rc<Shape>> = nodes.iter().map(|&n| self.shape(n)).collect::<Result<_>>()?;
        let n = shapes.len();
        let mut u = Shape::none();
        // JSON types are disjoint: "exactly one branch" is decided type by
        // type, so that branches overlapping on, say, non-objects do not
        // drag complements into their object parts.
        let count = |f: &dyn Fn(&Shape) -> bool| shapes.iter().filter(|s| f(s)).count();
        u.null = count(&|s| s.null) == 1;
        u.bools = [count(&|s| s.bools[0]) == 1, count(&|s| s.bools[1]) == 1];
        for part in [Part::Num, Part::Str, Part::Arr, Part::Obj] {
            let parts: Vec<Shape> = shapes.iter().map(|s| part.of(s)).collect();
            let mut overlap = vec![vec![false; n]; n];
            for i in 0..n {
                for k in i + 1..n {
                    if parts[i].is_trivially_empty() || parts[k].is_trivially_empty() {
                        continue;
                    }
                    let both = self.shape_and(&parts[i], &parts[k], &rp)?;
                    let o = !self.shape_empty(&both, 3)?;
                    overlap[i][k] = o;
                    overlap[k][i] = o;
                }
            }
            for i in 0..n {
                if parts[i].is_trivially_empty() {
                    continue;
                }
                let mut p = parts[i].clone();
                for k in 0..n {
                    if k != i && overlap[i][k] {
                        let neg = self.shape_not(&parts[k], &rp)?;
                        p = self.shape_and(&p, &neg, &rp)?;
                    }
                }
                u = self.shape_or_raw(&u, &p);
            }
        }
        u.obj = crate::normalize::simplify_objs(std::mem::take(&mut u.obj));
        Ok(u)
    }
}
