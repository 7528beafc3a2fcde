//! The algebra of shapes: intersection (`allOf`, `$ref` siblings),
//! union (`anyOf`, `enum`), complement (`not`, `oneOf`, `else`), and
//! emptiness (to prove `oneOf` branches disjoint and prune dead
//! alternatives).
//!
//! Intersections and complements of subschemas are new lazy nodes, so the
//! algebra never has to unfold a recursive schema.

use std::rc::Rc;

use crate::error::{Result, SchemaError};
use crate::numbers::NumLang;
use crate::schema::{ArrAlt, Builder, Contains, NodeId, ObjAlt, Shape, FALSE, TRUE};
use crate::strings::Lang;

/// Most alternatives one type of a shape may hold (intersections multiply
/// them).
const MAX_ALTS: usize = 1024;

impl<'a> Builder<'a> {
    fn too_many(&self, ptr: &str) -> SchemaError {
        SchemaError::Limit {
            pointer: ptr.to_string(),
            reason: format!("combining the subschemas gives more than {MAX_ALTS} alternatives"),
        }
    }

    pub fn shape_and(&mut self, a: &Shape, b: &Shape, ptr: &Rc<str>) -> Result<Shape> {
        self.tick(ptr)?;
        let mut s = Shape::none();
        s.null = a.null && b.null;
        s.bools = [a.bools[0] && b.bools[0], a.bools[1] && b.bools[1]];
        s.num = NumLang::and(a.num.clone(), b.num.clone());
        s.str = Lang::and(a.str.clone(), b.str.clone());
        s.arr = self.arr_products(&a.arr, &b.arr, ptr)?;
        for x in &a.obj {
            for y in &b.obj {
                self.tick(ptr)?;
                if let Some(z) = self.obj_and(x, y) {
                    s.obj.push(z);
                    self.cap_objs(&mut s.obj, ptr)?;
                }
            }
        }
        s.obj = simplify_objs(std::mem::take(&mut s.obj));
        Ok(s)
    }

    pub fn shape_or(&mut self, a: &Shape, b: &Shape) -> Shape {
        let mut s = self.shape_or_raw(a, b);
        s.obj = simplify_objs(std::mem::take(&mut s.obj));
        s
    }

    /// Union without pruning redundant object alternatives (for loops that
    /// prune once at the end).
    pub fn shape_or_raw(&mut self, a: &Shape, b: &Shape) -> Shape {
        let mut s = a.clone();
        s.null |= b.null;
        s.bools = [a.bools[0] || b.bools[0], a.bools[1] || b.bools[1]];
        s.num = NumLang::or(a.num.clone(), b.num.clone());
        s.str = Lang::or(a.str.clone(), b.str.clone());
        for y in &b.arr {
            if !s.arr.contains(y) {
                s.arr.push(y.clone());
            }
        }
        s.obj.extend(b.obj.iter().cloned());
        s
    }

    pub fn shape_not(&mut self, a: &Shape, ptr: &Rc<str>) -> Result<Shape> {
        self.tick(ptr)?;
        let mut s = Shape::none();
        s.null = !a.null;
        s.bools = [!a.bools[0], !a.bools[1]];
        s.num = NumLang::not(a.num.clone());
        s.str = Lang::not(a.str.clone());
        let mut arr = vec![ArrAlt::any(ptr.clone())];
        for alt in &a.arr {
            let neg = self.arr_not(alt, ptr)?;
            arr = self.arr_products(&arr, &neg, ptr)?;
            if arr.is_empty() {
                break;
            }
        }
        s.arr = arr;
        let mut obj = vec![ObjAlt::any(ptr.clone())];
        for alt in &a.obj {
            let neg = self.obj_not(alt, ptr)?;
            let mut next = Vec::new();
            for x in &obj {
                for y in &neg {
                    self.tick(ptr)?;
                    if let Some(z) = self.obj_and(x, y) {
                        next.push(z);
                        self.cap_objs(&mut next, ptr)?;
                    }
                }
            }
            let next = simplify_objs(next);
            if next.len() > MAX_ALTS {
                return Err(self.too_many(ptr));
            }
            obj = next;
            if obj.is_empty() {
                break;
            }
        }
        s.obj = obj;
        Ok(s)
    }

    /// The distinct non-empty `x ∧ y` over `xs × ys`. The product is
    /// checked as it grows, not once built: a chain of nested `not` / `if`
    /// multiplies alternatives at every level, and the time budget is
    /// checked at every pair.
    fn arr_products(&mut self, xs: &[ArrAlt], ys: &[ArrAlt], ptr: &Rc<str>) -> Result<Vec<ArrAlt>> {
        let mut out: Vec<ArrAlt> = Vec::new();
        let mut seen: rustc_hash::FxHashSet<ArrAlt> = Default::default();
        for x in xs {
            for y in ys {
                self.tick(ptr)?;
                if let Some(z) = self.arr_and(x, y) {
                    if seen.insert(z.clone()) {
                        out.push(z);
                        if out.len() > MAX_ALTS {
                            return Err(self.too_many(ptr));
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// Keeps a growing list of object alternatives within [`MAX_ALTS`]:
    /// past twice the limit it is pruned, and still past it is an error.
    fn cap_objs(&mut self, objs: &mut Vec<ObjAlt>, ptr: &Rc<str>) -> Result<()> {
        if objs.len() > 2 * MAX_ALTS {
            *objs = simplify_objs(std::mem::take(objs));
            if objs.len() > MAX_ALTS {
                return Err(self.too_many(ptr));
            }
        }
        Ok(())
    }

    pub fn arr_and(&mut self, x: &ArrAlt, y: &ArrAlt) -> Option<ArrAlt> {
        let p = x.prefix.len().max(y.prefix.len());
        let prefix: Vec<NodeId> = (0..p).map(|i| self.and_node(x.item(i), y.item(i))).collect();
        let rest = self.and_node(x.rest, y.rest);
        let min = x.min.max(y.min);
        let max = match (x.max, y.max) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, None) => a,
            (None, b) => b,
        };
        let mut contains = x.contains.clone();
        for c in &y.contains {
            if !contains.contains(c) {
                contains.push(c.clone());
            }
        }
        let mut eval_contains = x.eval_contains.clone();
        for c in &y.eval_contains {
            if !eval_contains.contains(c) {
                eval_contains.push(*c);
            }
        }
        let z = ArrAlt {
            prefix,
            rest,
            min,
            max,
            contains,
            unique: x.unique || y.unique,
            eval_prefix: x.eval_prefix.max(y.eval_prefix),
            eval_all: x.eval_all || y.eval_all,
            eval_contains,
            origin: if y.unique { y.origin.clone() } else { x.origin.clone() },
        };
        if arr_trivially_empty(&z) {
            None
        } else {
            Some(z)
        }
    }

    pub fn obj_and(&mut self, x: &ObjAlt, y: &ObjAlt) -> Option<ObjAlt> {
        let mut props = x.props.clone();
        for (n, id) in &y.props {
            match props.iter_mut().find(|(m, _)| m == n) {
                Some(slot) => slot.1 = self.and_node(slot.1, *id),
                None => props.push((n.clone(), *id)),
            }
        }
        // Rules met on both sides are kept once: a recursive schema
        // intersects an alternative with itself at every level, and
        // concatenating would double the list each time.
        let mut rules = x.rules.clone();
        add_new_rules(&mut rules, &y.rules);
        let mut exists = x.exists.clone();
        add_new_rules(&mut exists, &y.exists);
        let z = ObjAlt {
            props,
            required: x.required.union(&y.required).cloned().collect(),
            rules,
            exists,
            min: x.min.max(y.min),
            max: match (x.max, y.max) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, None) => a,
                (None, b) => b,
            },
            evaluated: Lang::or(x.evaluated.clone(), y.evaluated.clone()),
            origin: x.origin.clone(),
        };
        if self.obj_trivially_empty(&z) {
            None
        } else {
            Some(z)
        }
    }

    pub(crate) fn obj_trivially_empty(&self, o: &ObjAlt) -> bool {
        if o.max.is_some_and(|m| m < o.min || (o.required.len() as u64) > m) {
            return true;
        }
        o.required.iter().any(|r| o.prop(r) == Some(FALSE))
    }

    fn arr_not(&mut self, x: &ArrAlt, ptr: &Rc<str>) -> Result<Vec<ArrAlt>> {
        if x.unique {
            let origin = x.origin.to_string();
            self.refuse("uniqueItems", &origin, "cannot be negated (it is under not, oneOf or if/else)")?;
        }
        let any = || ArrAlt::any(ptr.clone());
        let mut out = Vec::new();
        if x.min > 0 {
            out.push(ArrAlt { max: Some(x.min - 1), ..any() });
        }
        if let Some(m) = x.max {
            out.push(ArrAlt { min: m + 1, ..any() });
        }
        for (i, &p) in x.prefix.iter().enumerate() {
            if p != TRUE {
                let mut prefix = vec![TRUE; i];
                prefix.push(self.not_node(p));
                out.push(ArrAlt { prefix, min: i as u64 + 1, ..any() });
            }
        }
        if x.rest != TRUE {
            let node = self.not_node(x.rest);
            out.push(ArrAlt { contains: vec![Contains { node, min: 1, max: None, from: x.prefix.len() }], ..any() });
        }
        for c in &x.contains {
            if c.min > 0 {
                out.push(ArrAlt { contains: vec![Contains { max: Some(c.min - 1), min: 0, ..c.clone() }], ..any() });
            }
            if let Some(m) = c.max {
                out.push(ArrAlt { contains: vec![Contains { min: m + 1, max: None, ..c.clone() }], ..any() });
            }
        }
        Ok(out)
    }

    fn obj_not(&mut self, x: &ObjAlt, ptr: &Rc<str>) -> Result<Vec<ObjAlt>> {
        let any = || ObjAlt::any(ptr.clone());
        let mut out = Vec::new();
        for (n, p) in &x.props {
            if *p != TRUE {
                let mut o = ObjAlt { props: vec![(n.clone(), self.not_node(*p))], ..any() };
                o.required.insert(n.clone());
                out.push(o);
            }
        }
        for (lang, p) in &x.rules {
            if *p == TRUE {
                continue;
            }
            let neg = self.not_node(*p);
            match lang {
                Lang::Set(names) => {
                    for n in names.iter() {
                        let mut o = ObjAlt { props: vec![(n.clone(), neg)], ..any() };
                        o.required.insert(n.clone());
                        out.push(o);
                    }
                }
                _ => out.push(ObjAlt { exists: vec![(lang.clone(), neg)], ..any() }),
            }
        }
        for r in &x.required {
            out.push(ObjAlt { props: vec![(r.clone(), FALSE)], ..any() });
        }
        for (lang, p) in &x.exists {
            let neg = self.not_node(*p);
            out.push(ObjAlt { rules: vec![(lang.clone(), neg)], ..any() });
        }
        if x.min > 0 {
            out.push(ObjAlt { max: Some(x.min - 1), ..any() });
        }
        if let Some(m) = x.max {
            out.push(ObjAlt { min: m + 1, ..any() });
        }
        Ok(out)
    }

    /// The value schema a present key `name` must satisfy in `o`: its
    /// declared schema and every rule whose language holds the name. Rules
    /// whose membership cannot be decided are left out (callers only use
    /// this to prove emptiness, where fewer constraints is the safe side) —
    /// except in `exact` mode, where undecidable membership is an error.
    pub(crate) fn key_node(&mut self, o: &ObjAlt, name: &str, exact: bool) -> Result<NodeId> {
        let mut n = o.prop(name).unwrap_or(TRUE);
        for (lang, node) in &o.rules {
            match lang.contains(name) {
                Ok(true) => n = self.and_node(n, *node),
                Ok(false) => {}
                Err(e) if exact => {
                    return Err(SchemaError::Limit { pointer: o.origin.to_string(), reason: format!("property name '{name}': {e}") })
                }
                Err(_) => {}
            }
        }
        Ok(n)
    }

    /// Whether a node provably accepts nothing (looking `depth` levels into
    /// subschemas; anything undecided counts as non-empty).
    pub fn node_empty(&mut self, id: NodeId, depth: u32) -> Result<bool> {
        if id == FALSE {
            return Ok(true);
        }
        if id == TRUE || depth == 0 {
            return Ok(false);
        }
        if self.nodes[id as usize].shape.is_none() && self.is_busy(id) {
            return Ok(false);
        }
        let s = match self.shape(id) {
            Ok(s) => s,
            Err(SchemaError::Unsupported { .. }) | Err(SchemaError::Limit { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        self.shape_empty(&s, depth - 1)
    }

    pub fn shape_empty(&mut self, s: &Shape, depth: u32) -> Result<bool> {
        if s.null || s.bools[0] || s.bools[1] {
            return Ok(false);
        }
        if s.num.is_empty() != Some(true) || s.str.is_empty() != Some(true) {
            return Ok(false);
        }
        for a in &s.arr {
            if !self.arr_empty(a, depth)? {
                return Ok(false);
            }
        }
        for o in &s.obj {
            if !self.obj_empty(o, depth)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn arr_empty(&mut self, a: &ArrAlt, depth: u32) -> Result<bool> {
        if arr_trivially_empty(a) {
            return Ok(true);
        }
        let must = (a.min as usize).min(a.prefix.len() + 1);
        for i in 0..must {
            if self.node_empty(a.item(i), depth)? {
                return Ok(true);
            }
        }
        for c in &a.contains {
            if c.min > 0 && self.node_empty(c.node, depth)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn obj_empty(&mut self, o: &ObjAlt, depth: u32) -> Result<bool> {
        if self.obj_trivially_empty(o) {
            return Ok(true);
        }
        for r in o.required.clone() {
            let n = self.key_node(o, &r, false)?;
            if self.node_empty(n, depth)? {
                return Ok(true);
            }
        }
        for (_, n) in o.exists.clone() {
            if self.node_empty(n, depth)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

fn arr_trivially_empty(a: &ArrAlt) -> bool {
    if a.max.is_some_and(|m| m < a.min) {
        return true;
    }
    // A forbidden item before the minimum length.
    let p = a.prefix.len() as u64;
    if a.prefix.iter().take(a.min.min(p) as usize).any(|&n| n == FALSE) {
        return true;
    }
    if a.rest == FALSE && a.min > p && !a.prefix.is_empty() {
        return true;
    }
    if a.rest == FALSE && a.prefix.is_empty() && a.min > 0 {
        return true;
    }
    a.contains.iter().any(|c| a.max.is_some_and(|m| c.min > m))
}

/// Whether `a` accepts a subset of what `b` accepts, judged syntactically:
/// `b`'s constraints all appear in `a` (same annotations).
fn obj_within(a: &ObjAlt, b: &ObjAlt) -> bool {
    if !a.evaluated.same(&b.evaluated) {
        return false;
    }
    if a.min < b.min || b.max.is_some_and(|bm| a.max.is_none_or(|am| am > bm)) {
        return false;
    }
    if !b.required.is_subset(&a.required) {
        return false;
    }
    // A declared TRUE property constrains nothing.
    let props_ok = b.props.iter().all(|(n, node)| *node == TRUE || a.props.iter().any(|(m, x)| m == n && x == node));
    let rules_ok = b.rules.iter().all(|(l, n)| *n == TRUE || a.rules.iter().any(|(l2, n2)| n2 == n && l2.same(l)));
    let exists_ok = b.exists.iter().all(|(l, n)| a.exists.iter().any(|(l2, n2)| n2 == n && l2.same(l)));
    props_ok && rules_ok && exists_ok
}

/// Drops object alternatives contained in another one (duplicates
/// included): unions and complements otherwise multiply them. Quadratic, so
/// skipped for very long lists (they only cost grammar size).
pub(crate) fn simplify_objs(alts: Vec<ObjAlt>) -> Vec<ObjAlt> {
    if alts.len() < 2 || alts.len() > 400 {
        return alts;
    }
    let mut keep: Vec<ObjAlt> = Vec::with_capacity(alts.len());
    'next: for a in alts {
        for k in &keep {
            if obj_within(&a, k) {
                continue 'next;
            }
        }
        keep.retain(|k| !obj_within(k, &a));
        keep.push(a);
    }
    keep
}

/// Appends the `(language, schema)` pairs of `from` that `to` lacks.
fn add_new_rules(to: &mut Vec<(Lang, NodeId)>, from: &[(Lang, NodeId)]) {
    for (lang, id) in from {
        if !to.iter().any(|(l, i)| i == id && l.same(lang)) {
            to.push((lang.clone(), *id));
        }
    }
}
