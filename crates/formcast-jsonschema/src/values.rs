//! Concrete values against nodes: membership (which `contains` schemas a
//! value satisfies) and enumeration of finite value sets (`uniqueItems`).

use std::collections::BTreeSet;

use crate::error::{Result, SchemaError};
use crate::json::Json;
use crate::lower::Lowerer;
use crate::numbers::NumLang;
use crate::schema::{ArrAlt, NodeId, ObjAlt};
use crate::strings::Lang;

/// Deepest nesting of values enumerated for `uniqueItems`.
const MAX_ENUM_DEPTH: usize = 32;

fn undecidable(ptr: &str, what: &str) -> SchemaError {
    SchemaError::Limit { pointer: ptr.to_string(), reason: format!("cannot decide {what}") }
}

impl<'b, 'a> Lowerer<'b, 'a> {
    /// Whether `v` matches `node`.
    pub fn member(&mut self, node: NodeId, v: &Json) -> Result<bool> {
        let s = self.b.shape(node)?;
        let ptr = self.pointer(node);
        Ok(match v {
            Json::Null => s.null,
            Json::Bool(b) => s.bools[*b as usize],
            Json::Num(d) => s.num.contains(d).ok_or_else(|| undecidable(&ptr, "multipleOf"))?,
            Json::Str(x) => s.str.contains(x).map_err(|e| undecidable(&ptr, &e.to_string()))?,
            Json::Arr(items) => {
                for a in s.arr.clone() {
                    if self.arr_member(&a, items)? {
                        return Ok(true);
                    }
                }
                false
            }
            Json::Obj(m) => {
                for o in s.obj.clone() {
                    if self.obj_member(&o, m)? {
                        return Ok(true);
                    }
                }
                false
            }
        })
    }

    fn arr_member(&mut self, a: &ArrAlt, items: &[Json]) -> Result<bool> {
        let n = items.len() as u64;
        if n < a.min || a.max.is_some_and(|m| n > m) {
            return Ok(false);
        }
        for (i, it) in items.iter().enumerate() {
            if !self.member(a.item(i), it)? {
                return Ok(false);
            }
        }
        for c in &a.contains {
            let mut cnt = 0u64;
            for it in items.iter().skip(c.from) {
                if self.member(c.node, it)? {
                    cnt += 1;
                }
            }
            if cnt < c.min || c.max.is_some_and(|m| cnt > m) {
                return Ok(false);
            }
        }
        if a.unique {
            for i in 0..items.len() {
                for k in i + 1..items.len() {
                    if items[i].schema_eq(&items[k]) {
                        return Ok(false);
                    }
                }
            }
        }
        Ok(true)
    }

    fn obj_member(&mut self, o: &ObjAlt, m: &[(String, Json)]) -> Result<bool> {
        let n = m.len() as u64;
        if n < o.min || o.max.is_some_and(|x| n > x) {
            return Ok(false);
        }
        if !o.required.iter().all(|r| m.iter().any(|(k, _)| k == r)) {
            return Ok(false);
        }
        for (k, v) in m {
            let node = self.b.key_node(o, k, true)?;
            if !self.member(node, v)? {
                return Ok(false);
            }
        }
        for (lang, node) in &o.exists {
            let mut found = false;
            for (k, v) in m {
                if lang.contains(k).map_err(|e| undecidable(&o.origin, &e.to_string()))? && self.member(*node, v)? {
                    found = true;
                    break;
                }
            }
            if !found {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// All values of `node` when there are at most `limit` of them (`None`
    /// when there are more, or the set is not known to be finite).
    ///
    /// A node met again inside its own enumeration (items that refer back
    /// to their array) has values nested without bound: not finite. The
    /// nesting of enumerated values is capped at [`MAX_ENUM_DEPTH`].
    pub fn enumerate(&mut self, node: NodeId, limit: usize) -> Result<Option<Vec<Json>>> {
        if self.enumerating.contains(&node) || self.enumerating.len() >= MAX_ENUM_DEPTH {
            return Ok(None);
        }
        self.enumerating.push(node);
        let r = self.enumerate_node(node, limit);
        self.enumerating.pop();
        r
    }

    fn enumerate_node(&mut self, node: NodeId, limit: usize) -> Result<Option<Vec<Json>>> {
        let s = self.b.shape(node)?;
        let mut out: Vec<Json> = Vec::new();
        if s.null {
            out.push(Json::Null);
        }
        for b in [false, true] {
            if s.bools[b as usize] {
                out.push(Json::Bool(b));
            }
        }
        match &s.num {
            NumLang::Nothing => {}
            NumLang::Set(v) => out.extend(v.iter().cloned().map(Json::Num)),
            _ => match s.num.dfa().ok().and_then(|d| d.enumerate(limit)) {
                Some(texts) => {
                    for t in texts {
                        match crate::decimal::Decimal::parse(&t) {
                            Some(d) => out.push(Json::Num(d)),
                            None => return Ok(None),
                        }
                    }
                }
                None => return Ok(None),
            },
        }
        match &s.str {
            Lang::Nothing => {}
            Lang::Set(v) => out.extend(v.iter().cloned().map(Json::Str)),
            other => match other.dfa().ok().and_then(|d| d.enumerate(limit)) {
                Some(v) => out.extend(v.into_iter().map(Json::Str)),
                None => return Ok(None),
            },
        }
        for a in s.arr.clone() {
            match self.enumerate_array(&a, limit)? {
                Some(v) => out.extend(v),
                None => return Ok(None),
            }
            if out.len() > limit {
                return Ok(None);
            }
        }
        for o in s.obj.clone() {
            match self.enumerate_object(&o, limit)? {
                Some(v) => out.extend(v),
                None => return Ok(None),
            }
            if out.len() > limit {
                return Ok(None);
            }
        }
        let mut dedup: Vec<Json> = Vec::new();
        for v in out {
            if !dedup.iter().any(|x| x.schema_eq(&v)) {
                dedup.push(v);
            }
        }
        Ok(if dedup.len() > limit { None } else { Some(dedup) })
    }

    fn enumerate_array(&mut self, a: &ArrAlt, limit: usize) -> Result<Option<Vec<Json>>> {
        let p = a.prefix.len() as u64;
        let max = if a.rest == crate::schema::FALSE { a.max.map_or(p, |m| m.min(p)) } else { match a.max { Some(m) => m, None => return Ok(None) } };
        if max > 16 {
            return Ok(None);
        }
        let mut spaces = Vec::new();
        for i in 0..max as usize {
            match self.enumerate(a.item(i), limit)? {
                Some(v) => spaces.push(v),
                None => return Ok(None),
            }
        }
        let mut out = Vec::new();
        let mut partial: Vec<Vec<Json>> = vec![vec![]];
        for len in 0..=max {
            if len >= a.min {
                for arr in &partial {
                    if self.arr_member(a, arr)? {
                        out.push(Json::Arr(arr.clone()));
                    }
                }
            }
            if len == max {
                break;
            }
            let mut next = Vec::new();
            for arr in &partial {
                for v in &spaces[len as usize] {
                    let mut x = arr.clone();
                    x.push(v.clone());
                    next.push(x);
                }
            }
            if next.len() > limit * 4 {
                return Ok(None);
            }
            partial = next;
        }
        Ok(Some(out))
    }

    fn enumerate_object(&mut self, o: &ObjAlt, limit: usize) -> Result<Option<Vec<Json>>> {
        let declared: BTreeSet<String> = o.props.iter().map(|(n, _)| n.clone()).collect();
        if !self.regions(o, &declared)?.is_empty() || !o.exists.is_empty() || o.props.len() > 8 {
            return Ok(None);
        }
        let mut spaces = Vec::new();
        for (name, _) in o.props.clone() {
            let node = self.b.key_node(o, &name, true)?;
            match self.enumerate(node, limit)? {
                Some(v) => spaces.push((name, v)),
                None => return Ok(None),
            }
        }
        let mut partial: Vec<Vec<(String, Json)>> = vec![vec![]];
        for (name, vals) in &spaces {
            let mut next = Vec::new();
            for obj in &partial {
                if !o.required.contains(name) {
                    next.push(obj.clone());
                }
                for v in vals {
                    let mut x = obj.clone();
                    x.push((name.clone(), v.clone()));
                    next.push(x);
                }
            }
            if next.len() > limit * 4 {
                return Ok(None);
            }
            partial = next;
        }
        let mut out = Vec::new();
        for m in partial {
            if self.obj_member(o, &m)? {
                out.push(Json::Obj(m));
            }
        }
        Ok(Some(out))
    }
}
