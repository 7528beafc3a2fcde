//! Arrays to grammar: `prefixItems` then `items`, length bounds, `contains`
//! counts (a small counting automaton over the items), and `uniqueItems`
//! when the items come from a finite set (an automaton over the set of
//! values used so far).

use rustc_hash::FxHashMap as HashMap;

use formcast_grammar::Expr;

use crate::emit::{alt, opt, seq};
use crate::error::{Result, SchemaError};
use crate::json::Json;
use crate::lower::Lowerer;
use crate::schema::{ArrAlt, NodeId, FALSE};

/// Most states of the `contains` counting automaton.
const MAX_CONTAINS_STATES: usize = 20_000;
/// Most states (sets of used values) for `uniqueItems`.
const MAX_UNIQUE_STATES: usize = 4096;
/// Largest finite item space enumerated for `uniqueItems`.
const MAX_ITEM_VALUES: usize = 64;

fn limit(ptr: &str, reason: impl Into<String>) -> SchemaError {
    SchemaError::Limit { pointer: ptr.to_string(), reason: reason.into() }
}

impl<'b, 'a> Lowerer<'b, 'a> {
    pub fn array_expr(&mut self, a: &ArrAlt, depth: usize) -> Result<Expr> {
        let (ne, empty_ok) = if a.unique {
            match self.unique_items(a, depth)? {
                Some(x) => x,
                None => {
                    // Lenient: uniqueness dropped.
                    let b = ArrAlt { unique: false, ..a.clone() };
                    return self.array_expr(&b, depth);
                }
            }
        } else if a.contains.is_empty() {
            self.plain_items(a, depth)?
        } else {
            self.counted_items(a, depth)?
        };
        let mut alts = Vec::new();
        if empty_ok {
            alts.push(self.layout.empty('[', ']'));
        }
        if !matches!(ne, Expr::Nothing) {
            alts.push(seq(vec![self.layout.open('[', depth), ne, self.layout.close(']', depth)]));
        }
        Ok(alt(alts))
    }

    /// Items without `contains`: the prefix items in order, then the rest.
    fn plain_items(&mut self, a: &ArrAlt, depth: usize) -> Result<(Expr, bool)> {
        let ptr = a.origin.to_string();
        let p = a.prefix.len() as u64;
        let max = if a.rest == FALSE { Some(a.max.map_or(p, |m| m.min(p))) } else { a.max };
        if max.is_some_and(|m| m < a.min) {
            return Ok((Expr::Nothing, false));
        }
        let sep = self.layout.item_sep(depth);
        let rest = if max.is_none_or(|m| m > p) { self.value(a.rest, depth + 1)? } else { Expr::Nothing };
        let lo = a.min.saturating_sub(p);
        let hi = max.map(|m| m.saturating_sub(p));
        let to32 = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
        // Items after the prefix, each preceded by a separator.
        let rest_items = if matches!(rest, Expr::Nothing) {
            if lo > 0 {
                Expr::Nothing
            } else {
                Expr::Empty
            }
        } else {
            self.em.repeat("items", seq(vec![sep.clone(), rest.clone()]), to32(lo), hi.map(to32)).map_err(|r| limit(&ptr, r))?
        };
        if p == 0 {
            if hi == Some(0) || matches!(rest, Expr::Nothing) {
                return Ok((Expr::Nothing, a.min == 0));
            }
            let more = self
                .em
                .repeat("items", seq(vec![sep, rest.clone()]), to32(lo.saturating_sub(1)), hi.map(|h| to32(h - 1)))
                .map_err(|r| limit(&ptr, r))?;
            return Ok((seq(vec![rest, more]), a.min == 0));
        }
        let items: Vec<Expr> = a.prefix.clone().into_iter().map(|n| self.value(n, depth + 1)).collect::<Result<_>>()?;
        // Built from the end: item i (≥ 1) is optional once the minimum is
        // reached.
        let mut tail = rest_items;
        for i in (1..items.len()).rev() {
            let body = seq(vec![sep.clone(), items[i].clone(), tail]);
            tail = if (i as u64) < a.min { body } else { opt(body) };
            if i % 100 == 0 {
                let id = self.em.add("items_tail", tail).map_err(|r| limit(&ptr, r))?;
                tail = Expr::Rule(id);
            }
        }
        Ok((seq(vec![items[0].clone(), tail]), a.min == 0))
    }

    /// Items with `contains` bounds: states (position, counts), one rule
    /// each. Upper bounds need the complement of the `contains` schema;
    /// lower bounds alone do not (an item may be counted or not).
    fn counted_items(&mut self, a: &ArrAlt, depth: usize) -> Result<(Expr, bool)> {
        let ptr = a.origin.to_string();
        let k = a.contains.len();
        if k > 4 {
            return Err(limit(&ptr, "more than 4 contains constraints on one array"));
        }
        let p = a.prefix.len() as u64;
        let exact = a.contains.iter().any(|c| c.max.is_some());
        let max = if a.rest == FALSE { Some(a.max.map_or(p, |m| m.min(p))) } else { a.max };
        // Positions are tracked up to `top` (beyond it they are all alike).
        let max_from = a.contains.iter().map(|c| c.from as u64).max().unwrap_or(0);
        let top = match max {
            Some(m) => m,
            None => p.max(a.min).max(max_from).max(1),
        };
        let caps: Vec<u64> = a.contains.iter().map(|c| c.max.map_or(c.min, |m| m + 1)).collect();
        let combos: u64 = caps.iter().map(|c| c + 1).product();
        if (top + 1).saturating_mul(combos) > MAX_CONTAINS_STATES as u64 {
            return Err(limit(&ptr, "contains/minContains/maxContains with these bounds need too many counting states"));
        }
        let sep = self.layout.item_sep(depth);
        // Item classes per position kind: (node, which constraints it counts for).
        let mut class_cache: HashMap<(NodeId, u64), Vec<(Expr, Vec<bool>)>> = HashMap::default();
        let mut classes = |me: &mut Lowerer<'b, 'a>, item: NodeId, pos: u64| -> Result<Vec<(Expr, Vec<bool>)>> {
            let active: Vec<bool> = a.contains.iter().map(|c| c.from as u64 <= pos).collect();
            let key_mask: u64 = active.iter().enumerate().filter(|(_, x)| **x).map(|(i, _)| 1u64 << i).sum();
            if let Some(v) = class_cache.get(&(item, key_mask)) {
                return Ok(v.clone());
            }
            let mut out = Vec::new();
            for m in 0u32..(1 << k) {
                if (0..k).any(|j| m & (1 << j) != 0 && !active[j]) {
                    continue;
                }
                let mut node = item;
                for (j, c) in a.contains.iter().enumerate() {
                    if !active[j] {
                        continue;
                    }
                    if m & (1 << j) != 0 {
                        node = me.b.and_node(node, c.node);
                    } else if exact {
                        let neg = me.b.not_node(c.node);
                        node = me.b.and_node(node, neg);
                    }
                }
                if node == FALSE || me.b.node_empty(node, 2)? {
                    continue;
                }
                let e = me.value(node, depth + 1)?;
                if matches!(e, Expr::Nothing) {
                    continue;
                }
                out.push((e, (0..k).map(|j| m & (1 << j) != 0).collect()));
            }
            class_cache.insert((item, key_mask), out.clone());
            Ok(out)
        };
        let end_ok = |pos: u64, counts: &[u64]| -> bool {
            pos >= a.min && max.is_none_or(|m| pos <= m) && a.contains.iter().zip(counts).all(|(c, &n)| n >= c.min && c.max.is_none_or(|m| n <= m))
        };
        // Enumerate states from the far end so references exist.
        let mut memo: HashMap<(u64, Vec<u64>), Expr> = HashMap::default();
        let all_counts: Vec<Vec<u64>> = {
            let mut v = vec![vec![]];
            for &cap in &caps {
                let mut next = Vec::new();
                for x in &v {
                    for c in 0..=cap {
                        let mut y = x.clone();
                        y.push(c);
                        next.push(y);
                    }
                }
                v = next;
            }
            v
        };
        let mut first = Expr::Nothing;
        for pos in (0..=top).rev() {
            let item = a.item(pos as usize);
            let cls = classes(self, item, pos)?;
            // Descending counts: a transition never lowers a count, so its
            // target is already built (or is this very state).
            for counts in all_counts.iter().rev() {
                self.b.tick(&ptr)?;
                let id = self.em.reserve(&format!("{}_contains", ptr.trim_start_matches('/'))).map_err(|r| limit(&ptr, r))?;
                memo.insert((pos, counts.clone()), Expr::Rule(id));
                let mut alts = Vec::new();
                if pos > 0 && end_ok(pos, counts) {
                    alts.push(Expr::Empty);
                }
                if max.is_none_or(|m| pos < m) {
                    let next_pos = if max.is_none() && pos == top { top } else { pos + 1 };
                    for (e, hits) in &cls {
                        let mut nc = counts.clone();
                        let mut dead = false;
                        for j in 0..k {
                            if hits[j] {
                                nc[j] = (nc[j] + 1).min(caps[j]);
                                if a.contains[j].max.is_some_and(|m| counts[j] + 1 > m) {
                                    dead = true;
                                }
                            }
                        }
                        if dead {
                            continue;
                        }
                        let next = memo.get(&(next_pos, nc)).cloned().expect("counting states are built in order");
                        let head = if pos > 0 { seq(vec![sep.clone(), e.clone()]) } else { e.clone() };
                        alts.push(seq(vec![head, next]));
                    }
                }
                self.em.set(id, alt(alts));
                if pos == 0 && counts.iter().all(|&c| c == 0) {
                    first = Expr::Rule(id);
                }
            }
        }
        let empty_ok = a.min == 0 && end_ok(0, &vec![0; k]);
        Ok((first, empty_ok))
    }

    /// `uniqueItems` over finite item spaces. `None` (lenient only) when
    /// the constraint was dropped.
    fn unique_items(&mut self, a: &ArrAlt, depth: usize) -> Result<Option<(Expr, bool)>> {
        let ptr = a.origin.to_string();
        let p = a.prefix.len();
        let max_len = if a.rest == FALSE { a.max.map_or(p as u64, |m| m.min(p as u64)) } else { a.max.unwrap_or(u64::MAX) };
        // Item spaces per position kind.
        let mut spaces: Vec<Vec<Json>> = Vec::new();
        let mut fail: Option<String> = None;
        let positions = if max_len as usize > p { p + 1 } else { p.min(max_len as usize) };
        for i in 0..positions {
            let node = a.item(i);
            match self.enumerate(node, MAX_ITEM_VALUES)? {
                Some(v) => spaces.push(v),
                None => {
                    fail = Some("the item space is not finite (or too large)".into());
                    break;
                }
            }
        }
        if let Some(reason) = fail {
            self.b.refuse("uniqueItems", &ptr, reason)?;
            return Ok(None);
        }
        if a.contains.iter().any(|c| c.from > 0) {
            self.b.refuse("uniqueItems", &ptr, "combined with a negated items constraint")?;
            return Ok(None);
        }
        // Distinct values across all spaces.
        let mut values: Vec<Json> = Vec::new();
        let mut ids: Vec<Vec<usize>> = Vec::new();
        for sp in &spaces {
            let mut row = Vec::new();
            for v in sp {
                let id = match values.iter().position(|x| x.schema_eq(v)) {
                    Some(i) => i,
                    None => {
                        values.push(v.clone());
                        values.len() - 1
                    }
                };
                row.push(id);
            }
            ids.push(row);
        }
        let nv = values.len();
        if nv > 12 || (1usize << nv) > MAX_UNIQUE_STATES {
            self.b.refuse("uniqueItems", &ptr, format!("{nv} possible distinct items are too many to track"))?;
            return Ok(None);
        }
        // Which contains constraints each value satisfies.
        let mut hits: Vec<Vec<bool>> = Vec::new();
        for v in &values {
            let mut h = Vec::new();
            for c in &a.contains {
                h.push(self.member(c.node, v)?);
            }
            hits.push(h);
        }
        let end_ok = |used: usize| -> bool {
            let n = used.count_ones() as u64;
            if n < a.min || n > max_len {
                return false;
            }
            a.contains.iter().enumerate().all(|(j, c)| {
                let cnt = (0..nv).filter(|&v| used & (1 << v) != 0 && hits[v][j]).count() as u64;
                cnt >= c.min && c.max.is_none_or(|m| cnt <= m)
            })
        };
        let sep = self.layout.item_sep(depth);
        let value_exprs: Vec<Expr> = values.iter().map(|v| {
            let n = self.b.literal_node(v);
            self.value(n, depth + 1)
        }).collect::<Result<_>>()?;
        let mut memo: HashMap<usize, Expr> = HashMap::default();
        // Larger sets first (they are referenced by smaller ones).
        let mut order: Vec<usize> = (0..(1usize << nv)).collect();
        order.sort_by_key(|u| std::cmp::Reverse(u.count_ones()));
        let mut first = Expr::Nothing;
        for used in order {
            let pos = used.count_ones() as usize;
            let mut alts = Vec::new();
            if pos > 0 && end_ok(used) {
                alts.push(Expr::Empty);
            }
            if (pos as u64) < max_len {
                let row = &ids[pos.min(ids.len() - 1)];
                for &v in row {
                    if used & (1 << v) != 0 {
                        continue;
                    }
                    let next = memo.get(&(used | (1 << v))).cloned().unwrap_or(Expr::Nothing);
                    let head = if pos > 0 { seq(vec![sep.clone(), value_exprs[v].clone()]) } else { value_exprs[v].clone() };
                    alts.push(seq(vec![head, next]));
                }
            }
            let body = alt(alts);
            let e = match body {
                Expr::Nothing | Expr::Empty => body,
                b => Expr::Rule(self.em.add(&format!("{}_unique", ptr.trim_start_matches('/')), b).map_err(|r| limit(&ptr, r))?),
            };
            if used == 0 {
                first = e.clone();
            }
            memo.insert(used, e);
        }
        Ok(Some((first, a.min == 0 && end_ok(0))))
    }
}
