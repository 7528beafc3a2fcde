//! Objects to grammar: declared properties in schema order (each at most
//! once, required ones mandatory), then the other keys, split into regions
//! of the key space that share one value schema (`patternProperties`,
//! `additionalProperties`, `propertyNames`, `unevaluatedProperties`), in any
//! order. `minProperties` / `maxProperties` are counted exactly.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use formcast_grammar::Expr;

use crate::emit::{alt, json_string_literal, opt, seq};
use crate::error::{Result, SchemaError};
use crate::lower::Lowerer;
use crate::options::Style;
use crate::schema::{NodeId, ObjAlt, FALSE, TRUE};
use crate::strings::Lang;

/// Most regions the key space is split into.
const MAX_REGIONS: usize = 256;
/// Most counting states for `minProperties` / `maxProperties`.
const MAX_COUNT_STATES: usize = 20_000;
/// Most alternatives from expanding "some key has ..." constraints.
const MAX_EXISTS_VARIANTS: usize = 64;
/// Beyond this (declared properties × possible first properties), the
/// property sequence is built from chained rules instead of flat ones.
const FLAT_SEQUENCE_BUDGET: usize = 16;

/// Most declared properties in any-order mode (one rule per subset of the
/// properties already written).
const MAX_ANY_ORDER: usize = 10;
/// Most rules of one object in any-order mode with property counts
/// (subsets × counts).
const MAX_ANY_ORDER_STATES: usize = 16_384;

/// A region of the key space: the keys and their value schema.
#[derive(Clone)]
pub struct Region {
    pub keys: Lang,
    pub node: NodeId,
}

struct Member {
    expr: Expr,
    required: bool,
}

impl<'b, 'a> Lowerer<'b, 'a> {
    pub fn object_expr(&mut self, o: &ObjAlt, depth: usize) -> Result<Expr> {
        let mut alts = Vec::new();
        for (non_empty, empty_ok) in self.object_members(o, depth, None)? {
            if empty_ok {
                alts.push(self.layout.empty('{', '}'));
            }
            if !matches!(non_empty, Expr::Nothing) {
                alts.push(seq(vec![self.layout.open('{', depth), non_empty, self.layout.close('}', depth)]));
            }
        }
        Ok(alt(alts))
    }

    /// The members of an object alternative, written as JSON (`xml: None`)
    /// or as parameters of an XML style: `(non-empty member list, whether
    /// no member at all is allowed)` per alternative.
    pub(crate) fn object_members(&mut self, o: &ObjAlt, depth: usize, xml: Option<Style>) -> Result<Vec<(Expr, bool)>> {
        let mut out = Vec::new();
        for (v, extra) in self.exists_variants(o)? {
            out.push(self.object_variant(&v, extra, depth, xml)?);
        }
        Ok(out)
    }

    /// Splits "some key in L has a value in S" constraints into: one of
    /// the declared properties does (it becomes required), or one of the
    /// other keys does (at most one such constraint is supported).
    fn exists_variants(&mut self, o: &ObjAlt) -> Result<Vec<(ObjAlt, Option<(Lang, NodeId)>)>> {
        let mut variants: Vec<(ObjAlt, Option<(Lang, NodeId)>)> = vec![(ObjAlt { exists: Vec::new(), ..o.clone() }, None)];
        let ptr = o.origin.to_string();
        // "Some key in L₂ has S" implies "some key in L₁ has S" when L₂ ⊆ L₁:
        // keep only the strongest of such constraints.
        let mut exists = o.exists.clone();
        let mut i = 0;
        while i < exists.len() {
            let implied = (0..exists.len()).any(|j| {
                j != i && exists[j].1 == exists[i].1 && {
                    let (li, lj) = (&exists[i].0, &exists[j].0);
                    if li.same(lj) {
                        j < i
                    } else {
                        matches!(li, Lang::All) || matches!((lj.dfa(), li.dfa()), (Ok(a), Ok(b)) if a.subset_of(&b).unwrap_or(false))
                    }
                }
            });
            if implied {
                exists.remove(i);
            } else {
                i += 1;
            }
        }
        for (lang, node) in &exists {
            let mut next = Vec::new();
            for (v, extra) in &variants {
                for (name, _) in &v.props {
                    let inside = lang.contains(name).map_err(|e| SchemaError::Limit { pointer: ptr.clone(), reason: e.to_string() })?;
                    if inside {
                        let mut w = v.clone();
                        w.required.insert(name.clone());
                        let slot = w.props.iter_mut().find(|(n, _)| n == name).unwrap();
                        slot.1 = self.b.and_node(slot.1, *node);
                        next.push((w, extra.clone()));
                    }
                }
                // Or one of the undeclared keys.
                if let Lang::Set(names) = lang {
                    if names.iter().all(|n| v.prop(n).is_some()) {
                        continue;
                    }
                }
                if extra.is_some() {
                    self.b.refuse("not", &ptr, "several negated property constraints that may concern undeclared keys")?;
                    continue;
                }
                next.push((v.clone(), Some((lang.clone(), *node))));
            }
            if next.len() > MAX_EXISTS_VARIANTS {
                return Err(SchemaError::Limit { pointer: ptr, reason: "too many alternatives from negated property constraints".into() });
            }
            variants = next;
        }
        Ok(variants)
    }

    fn object_variant(&mut self, o: &ObjAlt, extra: Option<(Lang, NodeId)>, depth: usize, xml: Option<Style>) -> Result<(Expr, bool)> {
        let ptr = o.origin.to_string();
        let mut members: Vec<Member> = Vec::new();
        let mut declared: BTreeSet<String> = BTreeSet::new();
        for (name, _) in &o.props {
            declared.insert(name.clone());
        }
        for (name, _) in o.props.clone() {
            let node = self.b.key_node(o, &name, true)?;
            let required = o.required.contains(&name);
            if node == FALSE || self.b.node_empty(node, 2)? {
                if required {
                    return Ok((Expr::Nothing, false));
                }
                continue;
            }
            let expr = match xml {
                None => {
                    let v = self.value(node, depth + 1)?;
                    seq(vec![self.avoid(json_string_literal(&name)), self.layout.key_sep(), v])
                }
                Some(style) => self.xml_member(style, &name, node, depth)?,
            };
            if matches!(expr, Expr::Nothing) {
                if required {
                    return Ok((Expr::Nothing, false));
                }
                continue;
            }
            members.push(Member { expr, required });
        }
        let regions = self.regions(o, &declared)?;
        let mut add_alts = Vec::new();
        let mut y_alts = Vec::new();
        for r in &regions {
            add_alts.push(self.region_pair(&r.keys, r.node, depth, &ptr, xml)?);
            if let Some((lang, node)) = &extra {
                let keys = Lang::and(r.keys.clone(), lang.clone());
                let n = self.b.and_node(r.node, *node);
                if n != FALSE && keys.is_empty() != Some(true) {
                    y_alts.push(self.region_pair(&keys, n, depth, &ptr, xml)?);
                }
            }
        }
        let add = alt(add_alts);
        let y = if extra.is_some() { Some(alt(y_alts)) } else { None };
        if matches!(y, Some(Expr::Nothing)) {
            return Ok((Expr::Nothing, false));
        }
        let sep = match xml {
            None => self.layout.item_sep(depth),
            Some(_) => self.xml_gap(),
        };
        if self.b.opts.any_order && members.len() > 1 {
            if let Some(r) = self.members_any_order(&members, &add, y.is_some(), o.min, o.max, &sep, &ptr)? {
                return Ok(r);
            }
        }
        if o.min == 0 && o.max.is_none() {
            self.members_free(&members, add, y, sep, &ptr)
        } else {
            self.members_counted(&members, add, y, o.min, o.max, sep, &ptr)
        }
    }

    fn region_pair(&mut self, keys: &Lang, node: NodeId, depth: usize, ptr: &str, xml: Option<Style>) -> Result<Expr> {
        if let Some(style) = xml {
            return self.xml_region_member(style, keys, node, depth, ptr);
        }
        let k = self.string_expr(keys, ptr)?;
        let v = self.value(node, depth + 1)?;
        Ok(seq(vec![k, self.layout.key_sep(), v]))
    }

    /// The undeclared keys, split into regions with one value schema each
    /// (regions whose values can never exist are dropped: those keys are
    /// forbidden).
    pub(crate) fn regions(&mut self, o: &ObjAlt, declared: &BTreeSet<String>) -> Result<Vec<Region>> {
        let ptr = o.origin.to_string();
        let others = Lang::not(Lang::set(declared.iter().cloned()));
        let mut out: Vec<Region> = Vec::new();
        let finite_or_cofinite = o.rules.iter().all(|(l, _)| match l {
            Lang::Set(_) | Lang::All | Lang::Nothing => true,
            Lang::Not(x) => matches!(**x, Lang::Set(_)),
            _ => false,
        });
        if finite_or_cofinite {
            // Keys named by some rule get their own region; all the others
            // share one.
            let mut special: BTreeSet<String> = BTreeSet::new();
            for (l, _) in &o.rules {
                match l {
                    Lang::Set(s) => special.extend(s.iter().cloned()),
                    Lang::Not(x) => {
                        if let Lang::Set(s) = &**x {
                            special.extend(s.iter().cloned())
                        }
                    }
                    _ => {}
                }
            }
            let special: Vec<String> = special.difference(declared).cloned().collect();
            for name in &special {
                let mut node = TRUE;
                for (l, n) in &o.rules {
                    if l.contains(name).unwrap_or(true) {
                        node = self.b.and_node(node, *n);
                    }
                }
                out.push(Region { keys: Lang::set([name.clone()]), node });
            }
            let mut node = TRUE;
            for (l, n) in &o.rules {
                let covers_rest = matches!(l, Lang::All | Lang::Not(_));
                if covers_rest {
                    node = self.b.and_node(node, *n);
                }
            }
            let rest_keys = Lang::and(others, Lang::not(Lang::set(special)));
            out.push(Region { keys: rest_keys, node });
        } else {
            // General case: split by membership in each rule's language,
            // pruning empty intersections.
            let mut stack: Vec<(usize, Lang, NodeId)> = vec![(0, others, TRUE)];
            while let Some((i, keys, node)) = stack.pop() {
                self.b.tick(&ptr)?;
                if node == FALSE {
                    continue;
                }
                if i == o.rules.len() {
                    out.push(Region { keys, node });
                    if out.len() > MAX_REGIONS {
                        return Err(SchemaError::Limit { pointer: ptr, reason: "the property names split into too many regions".into() });
                    }
                    continue;
                }
                let (l, n) = &o.rules[i];
                if *n == TRUE {
                    stack.push((i + 1, keys, node));
                    continue;
                }
                let inside = Lang::and(keys.clone(), l.clone());
                let outside = Lang::and(keys, Lang::not(l.clone()));
                if inside.is_empty() != Some(true) {
                    let nn = self.b.and_node(node, *n);
                    stack.push((i + 1, inside, nn));
                }
                if outside.is_empty() != Some(true) {
                    stack.push((i + 1, outside, node));
                }
            }
            out.reverse();
        }
        let mut kept = Vec::new();
        for r in out {
            if r.node == FALSE || self.b.node_empty(r.node, 2)? {
                continue;
            }
            if r.keys.is_empty() == Some(true) {
                continue;
            }
            kept.push(r);
        }
        Ok(kept)
    }

    /// Members without count bounds. Returns the non-empty member list and
    /// whether the empty object is allowed.
    fn members_free(&mut self, m: &[Member], add: Expr, y: Option<Expr>, sep: Expr, ptr: &str) -> Result<(Expr, bool)> {
        let more_add = Expr::star(seq(vec![sep.clone(), add.clone()]));
        let add_started = match &y {
            Some(y) => seq(vec![more_add.clone(), sep.clone(), y.clone(), more_add.clone()]),
            None => more_add.clone(),
        };
        let add_first = match &y {
            Some(y) => alt(vec![
                seq(vec![y.clone(), more_add.clone()]),
                seq(vec![add.clone(), more_add.clone(), sep.clone(), y.clone(), more_add.clone()]),
            ]),
            None => seq(vec![add.clone(), more_add.clone()]),
        };
        let n = m.len();
        let first_req = m.iter().position(|x| x.required).unwrap_or(n);
        let seg = |x: &Member| -> Expr {
            let s = seq(vec![sep.clone(), x.expr.clone()]);
            if x.required {
                s
            } else {
                opt(s)
            }
        };
        let last_first = first_req.min(n.saturating_sub(1));
        let flat = (last_first + 1) * n <= FLAT_SEQUENCE_BUDGET;
        // suffix(j): members j.. each preceded by a separator, then the
        // undeclared keys.
        let mut chain: HashMap<usize, Expr> = HashMap::default();
        if !flat {
            let mut next = add_started.clone();
            for j in (0..n).rev() {
                let body = seq(vec![seg(&m[j]), next]);
                let id = self.em.add(&format!("{}_members", ptr.trim_start_matches('/')), body).map_err(|r| SchemaError::Limit { pointer: ptr.into(), reason: r })?;
                next = Expr::Rule(id);
                chain.insert(j, next.clone());
            }
        }
        let suffix = |j: usize| -> Expr {
            if j >= n {
                return add_started.clone();
            }
            if flat {
                let mut v: Vec<Expr> = m[j..].iter().map(seg).collect();
                v.push(add_started.clone());
                seq(v)
            } else {
                chain[&j].clone()
            }
        };
        let mut alts = Vec::new();
        for j in 0..n {
            if j > first_req {
                break;
            }
            alts.push(seq(vec![m[j].expr.clone(), suffix(j + 1)]));
        }
        if first_req == n {
            alts.push(add_first);
        }
        Ok((alt(alts), first_req == n && y.is_none()))
    }

    /// Members in any order: one rule per (set of declared properties
    /// already written, count of members so far), every member after the
    /// first preceded by a separator; undeclared keys may come anywhere;
    /// the object may end once every required property is there and the
    /// count is within `minProperties`/`maxProperties` (counted only when
    /// they are given, capped where it no longer matters). `None` (schema
    /// order, in lenient mode only) when any order cannot be honoured
    /// exactly: too many declared properties (the written set needs 2ⁿ
    /// rules), too many counting states, or a negated property constraint
    /// on the undeclared keys.
    #[allow(clippy::too_many_arguments)]
    fn members_any_order(&mut self, m: &[Member], add: &Expr, negated: bool, min: u64, max: Option<u64>, sep: &Expr, ptr: &str) -> Result<Option<(Expr, bool)>> {
        let n = m.len();
        let instead = "properties are kept in schema order";
        if negated {
            self.b.refuse_option("any_order", ptr, "a negated property constraint (`not` with `required`) on the undeclared keys cannot be tracked in any order", instead)?;
            return Ok(None);
        }
        if n > MAX_ANY_ORDER {
            self.b.refuse_option("any_order", ptr, format!("at most {MAX_ANY_ORDER} declared properties per object can be tracked in any order (one rule per subset already written), this object declares {n}"), instead)?;
            return Ok(None);
        }
        // Counts: none without bounds; else 0..=max, or 0..=min where any
        // count from min on is the same. Without undeclared keys, a
        // maximum of at least n bounds nothing.
        let max = if matches!(add, Expr::Nothing) { max.filter(|&mx| mx < n as u64) } else { max };
        let cap = match (min, max) {
            (0, None) => 0,
            (_, Some(mx)) => mx,
            (mn, None) => mn,
        };
        let states = (1u64 << n).saturating_mul(cap + 1);
        if states > MAX_ANY_ORDER_STATES as u64 {
            self.b.refuse_option("any_order", ptr, format!("{n} properties in any order with minProperties/maxProperties need {states} counting states (at most {MAX_ANY_ORDER_STATES})"), instead)?;
            return Ok(None);
        }
        let required: u32 = m.iter().enumerate().filter(|(_, x)| x.required).map(|(i, _)| 1u32 << i).sum();
        let next_count = |k: u64| -> Option<u64> {
            match max {
                Some(mx) if k + 1 > mx => None,
                Some(_) => Some(k + 1),
                None => Some((k + 1).min(cap)),
            }
        };
        let counted = |k: u64| k >= min.min(cap) && max.is_none_or(|mx| k <= mx);
        let name = format!("{}_any_order", ptr.trim_start_matches('/'));
        let mut ids: HashMap<(u32, u64), formcast_grammar::RuleId> = HashMap::default();
        let mut todo: Vec<((u32, u64), formcast_grammar::RuleId)> = Vec::new();
        let mut rule = |me: &mut Self, todo: &mut Vec<((u32, u64), formcast_grammar::RuleId)>, st: (u32, u64)| -> Result<Expr> {
            if let Some(&id) = ids.get(&st) {
                return Ok(Expr::Rule(id));
            }
            let id = me.em.reserve(&name).map_err(|r| SchemaError::Limit { pointer: ptr.into(), reason: r })?;
            ids.insert(st, id);
            todo.push((st, id));
            Ok(Expr::Rule(id))
        };
        // The first member, then the rules of the states after it.
        let mut first = Vec::new();
        if let Some(k) = next_count(0) {
            for (i, x) in m.iter().enumerate() {
                first.push(seq(vec![x.expr.clone(), rule(self, &mut todo, (1 << i, k))?]));
            }
            if !matches!(add, Expr::Nothing) {
                first.push(seq(vec![add.clone(), rule(self, &mut todo, (0, k))?]));
            }
        }
        while let Some(((mask, k), id)) = todo.pop() {
            let mut alts = Vec::new();
            if mask & required == required && counted(k) {
                alts.push(Expr::Empty);
            }
            if let Some(k2) = next_count(k) {
                for (i, x) in m.iter().enumerate() {
                    if mask & (1 << i) == 0 {
                        alts.push(seq(vec![sep.clone(), x.expr.clone(), rule(self, &mut todo, (mask | (1 << i), k2))?]));
                    }
                }
                if !matches!(add, Expr::Nothing) {
                    alts.push(seq(vec![sep.clone(), add.clone(), rule(self, &mut todo, (mask, k2))?]));
                }
            }
            self.em.set(id, alt(alts));
        }
        Ok(Some((alt(first), required == 0 && counted(0))))
    }

    /// Members with `minProperties` / `maxProperties`: one rule per
    /// (position, count so far, something emitted yet).
    #[allow(clippy::too_many_arguments)]
    fn members_counted(&mut self, m: &[Member], add: Expr, y: Option<Expr>, min: u64, max: Option<u64>, sep: Expr, ptr: &str) -> Result<(Expr, bool)> {
        let n = m.len();
        let cap = match max {
            Some(mx) => mx + 1,
            None => min,
        };
        if (n + 1).saturating_mul(cap as usize + 1).saturating_mul(2) > MAX_COUNT_STATES {
            return Err(SchemaError::Limit { pointer: ptr.into(), reason: "minProperties/maxProperties need too many counting states".into() });
        }
        let mut memo: HashMap<(usize, u64, bool), Expr> = HashMap::default();
        // Build from the last position backwards so every reference exists.
        for i in (0..=n).rev() {
            for c in 0..=cap {
                for started in [false, true] {
                    let e = if i == n {
                        let lo = min.saturating_sub(c);
                        let hi = max.map(|mx| mx.saturating_sub(c));
                        if max.is_some_and(|mx| c > mx) {
                            Expr::Nothing
                        } else if let Some(y) = &y {
                            if lo > 1 || hi.is_some() {
                                self.b.refuse("not", ptr, "a negated property constraint combined with minProperties/maxProperties")?;
                            }
                            let more = Expr::star(seq(vec![sep.clone(), add.clone()]));
                            if started {
                                seq(vec![more.clone(), sep.clone(), y.clone(), more])
                            } else {
                                alt(vec![seq(vec![y.clone(), more.clone()]), seq(vec![add.clone(), more.clone(), sep.clone(), y.clone(), more])])
                            }
                        } else if started {
                            let lo32 = u32::try_from(lo).unwrap_or(u32::MAX);
                            self.em
                                .repeat("members", seq(vec![sep.clone(), add.clone()]), lo32, hi.map(|h| u32::try_from(h).unwrap_or(u32::MAX)))
                                .map_err(|r| SchemaError::Limit { pointer: ptr.into(), reason: r })?
                        } else if hi == Some(0) {
                            Expr::Nothing
                        } else {
                            let lo1 = u32::try_from(lo.saturating_sub(1)).unwrap_or(u32::MAX);
                            let more = self
                                .em
                                .repeat("members", seq(vec![sep.clone(), add.clone()]), lo1, hi.map(|h| u32::try_from(h - 1).unwrap_or(u32::MAX)))
                                .map_err(|r| SchemaError::Limit { pointer: ptr.into(), reason: r })?;
                            seq(vec![add.clone(), more])
                        }
                    } else {
                        let nc = (c + 1).min(cap);
                        let take = if max.is_some_and(|mx| c + 1 > mx) {
                            Expr::Nothing
                        } else {
                            let next = memo[&(i + 1, nc, true)].clone();
                            let head = if started { seq(vec![sep.clone(), m[i].expr.clone()]) } else { m[i].expr.clone() };
                            seq(vec![head, next])
                        };
                        let skip = if m[i].required { Expr::Nothing } else { memo[&(i + 1, c, started)].clone() };
                        alt(vec![take, skip])
                    };
                    // Share anything non-trivial through a rule.
                    let e = match e {
                        Expr::Nothing | Expr::Empty | Expr::Rule(_) => e,
                        body => Expr::Rule(self.em.add(&format!("{}_count", ptr.trim_start_matches('/')), body).map_err(|r| SchemaError::Limit { pointer: ptr.into(), reason: r })?),
                    };
                    memo.insert((i, c, started), e);
                }
            }
        }
        let empty_ok = min == 0 && y.is_none() && m.iter().all(|x| !x.required);
        Ok((memo[&(0, 0, false)].clone(), empty_ok))
    }
}
