//! The semantic model: a schema as the set of JSON values it accepts.
//!
//! A [`Shape`] splits that set by JSON type: a flag for null, a subset of the
//! booleans, a [`NumLang`] for numbers, a [`Lang`] for strings, and unions of
//! [`ArrAlt`] / [`ObjAlt`] alternatives for arrays and objects. Subschemas
//! (property values, items) are [`NodeId`]s resolved lazily, which is what
//! lets recursive schemas, intersections of recursive schemas and their
//! complements terminate. Nodes are memoized by what they denote (a schema
//! location in a context, or an and/or/not of other nodes).

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;
use std::time::Instant;

use crate::error::{Result, SchemaError, Warning};
use crate::json::Json;
use crate::numbers::NumLang;
use crate::options::SchemaOptions;
use crate::refs::{Index, LocId, SCHEMA_KEYWORDS, SCHEMA_LIST_KEYWORDS, SCHEMA_MAP_KEYWORDS};
use crate::strings::Lang;

pub type NodeId = u32;
pub type ScopeId = u32;

/// The node accepting every value.
pub const TRUE: NodeId = 0;
/// The node accepting nothing.
pub const FALSE: NodeId = 1;

/// `contains` with its bounds: between `min` and `max` items at index ≥
/// `from` match `node`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Contains {
    pub node: NodeId,
    pub min: u64,
    pub max: Option<u64>,
    pub from: usize,
}

/// One alternative for arrays: a conjunction of array constraints.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ArrAlt {
    /// Item `i < prefix.len()` matches `prefix[i]`.
    pub prefix: Vec<NodeId>,
    /// Items after the prefix.
    pub rest: NodeId,
    pub min: u64,
    pub max: Option<u64>,
    pub contains: Vec<Contains>,
    pub unique: bool,
    /// Annotations for `unevaluatedItems`: items below this index, all
    /// items, or items matching one of these nodes were evaluated.
    pub eval_prefix: usize,
    pub eval_all: bool,
    pub eval_contains: Vec<NodeId>,
    /// Where `uniqueItems` came from (for messages).
    pub origin: Rc<str>,
}

/// One alternative for objects: a conjunction of object constraints.
#[derive(Debug, Clone)]
pub struct ObjAlt {
    /// Declared properties in output order: if present, the value matches.
    pub props: Vec<(String, NodeId)>,
    pub required: BTreeSet<String>,
    /// Every key in the language (declared ones included) has a value
    /// matching the node (`patternProperties`, `additionalProperties`,
    /// `propertyNames`, `unevaluatedProperties`).
    pub rules: Vec<(Lang, NodeId)>,
    /// Some key in the language has a value matching the node (from `not`).
    pub exists: Vec<(Lang, NodeId)>,
    pub min: u64,
    pub max: Option<u64>,
    /// Keys evaluated (for `unevaluatedProperties`, and strict mode).
    pub evaluated: Lang,
    pub origin: Rc<str>,
}

#[derive(Debug, Clone)]
pub struct Shape {
    pub null: bool,
    /// `[false allowed, true allowed]`.
    pub bools: [bool; 2],
    pub num: NumLang,
    pub str: Lang,
    pub arr: Vec<ArrAlt>,
    pub obj: Vec<ObjAlt>,
}

impl ArrAlt {
    pub fn any(origin: Rc<str>) -> ArrAlt {
        ArrAlt {
            prefix: Vec::new(),
            rest: TRUE,
            min: 0,
            max: None,
            contains: Vec::new(),
            unique: false,
            eval_prefix: 0,
            eval_all: false,
            eval_contains: Vec::new(),
            origin,
        }
    }

    pub fn item(&self, i: usize) -> NodeId {
        self.prefix.get(i).copied().unwrap_or(self.rest)
    }

    pub fn is_unconstrained(&self) -> bool {
        self.prefix.iter().all(|&p| p == TRUE) && self.rest == TRUE && self.min == 0 && self.max.is_none() && self.contains.is_empty() && !self.unique
    }
}

impl ObjAlt {
    pub fn any(origin: Rc<str>) -> ObjAlt {
        ObjAlt {
            props: Vec::new(),
            required: BTreeSet::new(),
            rules: Vec::new(),
            exists: Vec::new(),
            min: 0,
            max: None,
            evaluated: Lang::Nothing,
            origin,
        }
    }

    pub fn prop(&self, name: &str) -> Option<NodeId> {
        self.props.iter().find(|(n, _)| n == name).map(|(_, id)| *id)
    }

    pub fn is_unconstrained(&self) -> bool {
        self.props.iter().all(|(_, p)| *p == TRUE) && self.required.is_empty() && self.rules.iter().all(|(_, n)| *n == TRUE) && self.exists.is_empty() && self.min == 0 && self.max.is_none()
    }
}

impl Shape {
    pub fn any(origin: &Rc<str>) -> Shape {
        Shape {
            null: true,
            bools: [true, true],
            num: NumLang::All,
            str: Lang::All,
            arr: vec![ArrAlt::any(origin.clone())],
            obj: vec![ObjAlt::any(origin.clone())],
        }
    }

    pub fn none() -> Shape {
        Shape { null: false, bools: [false, false], num: NumLang::Nothing, str: Lang::Nothing, arr: Vec::new(), obj: Vec::new() }
    }

    /// Only objects, from these alternatives.
    pub fn objects(alts: Vec<ObjAlt>) -> Shape {
        Shape { obj: alts, ..Shape::none() }
    }

    /// Only arrays, from these alternatives.
    pub fn arrays(alts: Vec<ArrAlt>) -> Shape {
        Shape { arr: alts, ..Shape::none() }
    }

    /// Everything except objects.
    pub fn non_objects(origin: &Rc<str>) -> Shape {
        Shape { obj: Vec::new(), ..Shape::any(origin) }
    }

    /// Quick syntactic emptiness (children are not inspected).
    pub fn is_trivially_empty(&self) -> bool {
        !self.null
            && !self.bools[0]
            && !self.bools[1]
            && matches!(self.num, NumLang::Nothing)
            && matches!(self.str, Lang::Nothing)
            && self.arr.is_empty()
            && self.obj.is_empty()
    }

    /// Whether any object or array alternative carries annotations.
    pub fn annotates(&self) -> bool {
        self.obj.iter().any(|o| !matches!(o.evaluated, Lang::Nothing))
            || self.arr.iter().any(|a| a.eval_all || a.eval_prefix > 0 || !a.eval_contains.is_empty())
    }
}

/// What a node denotes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    True,
    False,
    /// A schema location, in a dynamic scope, with or without the
    /// annotations `unevaluated*` needs, at a value position (where strict
    /// mode applies) or in place (`allOf` member, `$ref` target...).
    Raw { loc: LocId, scope: ScopeId, ann: bool, value_pos: bool },
    /// An intersection as `(chain of the smaller operands, largest
    /// operand)`: see [`Builder::and_node`].
    And(NodeId, NodeId),
    Or(NodeId, NodeId),
    Not(NodeId),
    /// A literal value (`const`, `enum` members), by its compact text.
    Literal(String),
}

pub struct Node {
    pub key: Key,
    pub shape: Option<Rc<Shape>>,
    busy: bool,
    /// The schema location this node comes from (for messages).
    pub pointer: Rc<str>,
}

/// Deepest chain of in-place keywords followed while computing one shape
/// (`$ref` to `$ref`..., `allOf` of `allOf`...). Real schemas nest a few
/// dozen; the limit keeps a crafted chain to a bounded amount of stack.
pub const MAX_SHAPE_DEPTH: usize = 1000;
/// Stack left below which a deep computation continues on a new segment,
/// and the size of each new segment (see `stacker::maybe_grow`).
pub(crate) const STACK_RED_ZONE: usize = 128 << 10;
pub(crate) const STACK_GROWTH: usize = 4 << 20;

pub struct Builder<'a> {
    pub ix: Index<'a>,
    pub opts: SchemaOptions,
    pub nodes: Vec<Node>,
    memo: HashMap<Key, NodeId>,
    /// Dynamic scopes: `$dynamicAnchor` name → outermost location binding it.
    scopes: Vec<Vec<(String, LocId)>>,
    scope_ids: HashMap<Vec<(String, LocId)>, ScopeId>,
    pub warnings: Vec<Warning>,
    deadline: Option<Instant>,
    ticks: u32,
    /// Nested [`Self::shape`] computations in progress (see
    /// [`MAX_SHAPE_DEPTH`]).
    shape_depth: usize,
    /// Content hashes of the JSON values met, by address and role (see
    /// [`Self::twin`]).
    content: HashMap<(usize, Role), Content>,
    /// Subschema locations by content hash, the first of each content.
    by_content: HashMap<u64, Vec<LocId>>,
}

/// A JSON value's content hash, and whether it names a resource or an
/// anchor anywhere inside (`$id`, a draft-4 `id`, `$anchor`...).
#[derive(Clone, Copy)]
struct Content {
    hash: u64,
    names: bool,
}

/// What a JSON value is to the schema that holds it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Role {
    /// A subschema: its annotations do not count.
    Schema,
    /// Names mapped to subschemas (`properties`, `$defs`...).
    SchemaMap,
    /// Anything else (`enum` values, `required` names...): every byte counts.
    Data,
}

/// Keys that give a schema location an identity of its own.
const NAMING_KEYS: [&str; 5] = ["$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$schema"];

/// Keywords that only annotate (the front-end never reads them), and
/// extensions (`x-...`), which no vocabulary we know defines: schemas that
/// differ only in these are the same schema. (Kubernetes schemas repeat one
/// type under many descriptions.)
pub(crate) fn ignored_keyword(k: &str) -> bool {
    matches!(k, "title" | "description" | "$comment" | "examples" | "default" | "deprecated" | "readOnly" | "writeOnly") || k.starts_with("x-")
}

/// The role of the value of key `k` in a value of role `role`.
fn role_of(role: Role, k: &str, v: &Json) -> Role {
    match role {
        Role::Data => Role::Data,
        Role::SchemaMap => Role::Schema,
        Role::Schema if SCHEMA_KEYWORDS.contains(&k) && !matches!(v, Json::Arr(_)) => Role::Schema,
        Role::Schema if SCHEMA_LIST_KEYWORDS.contains(&k) && matches!(v, Json::Arr(_)) => Role::Schema,
        Role::Schema if SCHEMA_MAP_KEYWORDS.contains(&k) && matches!(v, Json::Obj(_)) => Role::SchemaMap,
        Role::Schema => Role::Data,
    }
}

/// The members of an object of role `role` that count.
fn counted(role: Role, members: &[(String, Json)]) -> impl Iterator<Item = &(String, Json)> {
    members.iter().filter(move |(k, _)| role != Role::Schema || !ignored_keyword(k))
}

/// Whether two values of role `role` are the same (object keys in order,
/// ignored keywords aside).
fn same_json(a: &Json, b: &Json, role: Role) -> bool {
    match (a, b) {
        (Json::Null, Json::Null) => true,
        (Json::Bool(x), Json::Bool(y)) => x == y,
        (Json::Num(x), Json::Num(y)) => x == y,
        (Json::Str(x), Json::Str(y)) => x == y,
        // The items of a list of subschemas (`allOf`) are subschemas; of data, data.
        (Json::Arr(x), Json::Arr(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y, role)),
        (Json::Obj(x), Json::Obj(y)) => {
            let (mut x, mut y) = (counted(role, x), counted(role, y));
            loop {
                match (x.next(), y.next()) {
                    (None, None) => return true,
                    (Some((kx, vx)), Some((ky, vy))) if kx == ky && same_json(vx, vy, role_of(role, kx, vx)) => {}
                    _ => return false,
                }
            }
        }
        _ => false,
    }
}

impl<'a> Builder<'a> {
    pub fn new(ix: Index<'a>, opts: SchemaOptions) -> Builder<'a> {
        let deadline = if opts.time_budget_ms > 0 { Some(Instant::now() + std::time::Duration::from_millis(opts.time_budget_ms)) } else { None };
        let root: Rc<str> = Rc::from("");
        let mut b = Builder {
            ix,
            opts,
            nodes: Vec::new(),
            memo: HashMap::default(),
            scopes: vec![Vec::new()],
            scope_ids: HashMap::default(),
            warnings: Vec::new(),
            deadline,
            ticks: 0,
            shape_depth: 0,
            content: HashMap::default(),
            by_content: HashMap::default(),
        };
        b.scope_ids.insert(Vec::new(), 0);
        crate::automata::set_deadline(deadline);
        let t = b.push(Key::True, root.clone());
        b.nodes[t as usize].shape = Some(Rc::new(Shape::any(&root)));
        let f = b.push(Key::False, root);
        b.nodes[f as usize].shape = Some(Rc::new(Shape::none()));
        b
    }

    fn push(&mut self, key: Key, pointer: Rc<str>) -> NodeId {
        let id = self.nodes.len() as NodeId;
        self.memo.insert(key.clone(), id);
        self.nodes.push(Node { key, shape: None, busy: false, pointer });
        id
    }

    /// Errors when the time budget is spent or too many nodes exist.
    pub fn tick(&mut self, pointer: &str) -> Result<()> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.nodes.len() > self.opts.max_nodes {
            return Err(SchemaError::Limit {
                pointer: pointer.to_string(),
                reason: format!("more than {} schema nodes after expanding references and combinators", self.opts.max_nodes),
            });
        }
        if self.ticks % 64 == 0 {
            if let Some(d) = self.deadline {
                if Instant::now() > d {
                    return Err(SchemaError::Limit {
                        pointer: pointer.to_string(),
                        reason: format!("the translation took more than {} ms", self.opts.time_budget_ms),
                    });
                }
            }
        }
        Ok(())
    }

    /// Reports a constraint that cannot be enforced: an error, or in
    /// lenient mode a warning (and the caller drops the constraint).
    pub fn refuse(&mut self, keyword: &str, pointer: &str, reason: impl Into<String>) -> Result<()> {
        let reason = reason.into();
        if self.opts.lenient {
            self.warnings.push(Warning { keyword: keyword.to_string(), pointer: pointer.to_string(), message: format!("not enforced: {reason}") });
            Ok(())
        } else {
            Err(SchemaError::Unsupported { keyword: keyword.to_string(), pointer: pointer.to_string(), reason })
        }
    }

    /// Like [`Self::refuse`], for an option (`any_order`, `indent`) that
    /// cannot be honoured exactly here: an error, or in lenient mode a
    /// warning saying what was done instead.
    pub fn refuse_option(&mut self, option: &str, pointer: &str, reason: impl Into<String>, instead: &str) -> Result<()> {
        let reason = reason.into();
        if self.opts.lenient {
            self.warnings.push(Warning { keyword: option.to_string(), pointer: pointer.to_string(), message: format!("option not honoured: {reason}; {instead}") });
            Ok(())
        } else {
            Err(SchemaError::UnsupportedOption { option: option.to_string(), pointer: pointer.to_string(), reason })
        }
    }

    pub fn warn(&mut self, keyword: &str, pointer: &str, message: impl Into<String>) {
        self.warnings.push(Warning { keyword: keyword.to_string(), pointer: pointer.to_string(), message: message.into() });
    }

    // ------------------------------------------------------------ nodes --

    pub fn raw_node(&mut self, loc: LocId, scope: ScopeId, ann: bool, value_pos: bool) -> NodeId {
        // Boolean schemas need no context.
        match self.ix.loc(loc).json {
            Json::Bool(true) => return TRUE,
            Json::Bool(false) => return FALSE,
            _ => {}
        }
        let value_pos = value_pos && self.opts.strict;
        let key = Key::Raw { loc, scope, ann, value_pos };
        if let Some(&id) = self.memo.get(&key) {
            return id;
        }
        if let Some(twin) = self.twin(loc) {
            let id = self.raw_node(twin, scope, ann, value_pos);
            self.memo.insert(key, id);
            return id;
        }
        let pointer: Rc<str> = Rc::from(self.ix.loc(loc).pointer.as_str());
        self.push(key, pointer)
    }

    /// An earlier location with the same subschema, in the same resource
    /// under the same draft: the same schema, so the same node. Real
    /// schemas repeat themselves (a Kubernetes CRD's `allOf`, `anyOf` and
    /// `oneOf` are each an array of the same `$ref`): kb_192 lowered 472
    /// rules of which 333 merged into others afterwards. Not in lenient
    /// mode, whose warnings name every location where something was
    /// dropped; not for subschemas that name a resource or an anchor
    /// (their location is part of what they mean).
    fn twin(&mut self, loc: LocId) -> Option<LocId> {
        if self.opts.lenient {
            return None;
        }
        let json: &'a Json = self.ix.loc(loc).json;
        if !matches!(json, Json::Obj(_)) {
            return None;
        }
        let c = self.content_of(json, Role::Schema);
        if c.names {
            return None;
        }
        let twins = self.by_content.entry(c.hash).or_default();
        let ix = &self.ix;
        let l = ix.loc(loc);
        let found = twins.iter().copied().find(|&t| {
            let o = ix.loc(t);
            o.base == l.base && o.draft == l.draft && o.unknown_meta == l.unknown_meta && same_json(o.json, json, Role::Schema)
        });
        if found.is_none() {
            twins.push(loc);
        }
        found.filter(|&t| t != loc)
    }

    /// The content hash of `j` in role `role` (consistent with
    /// [`same_json`]), each value hashed once (bottom-up, so a deeply
    /// nested schema costs its size, not its size times its depth).
    fn content_of(&mut self, j: &Json, role: Role) -> Content {
        use std::hash::{Hash, Hasher};
        let a = (j as *const Json as usize, role);
        if let Some(&c) = self.content.get(&a) {
            return c;
        }
        let mut h = rustc_hash::FxHasher::default();
        let mut names = false;
        match j {
            Json::Null => 0u8.hash(&mut h),
            Json::Bool(b) => (1u8, *b).hash(&mut h),
            Json::Num(d) => (2u8, d).hash(&mut h),
            Json::Str(s) => (3u8, s).hash(&mut h),
            Json::Arr(items) => {
                (4u8, items.len()).hash(&mut h);
                for it in items {
                    let c = self.content_of(it, role);
                    c.hash.hash(&mut h);
                    names |= c.names;
                }
            }
            Json::Obj(members) => {
                5u8.hash(&mut h);
                for (k, v) in counted(role, members) {
                    let c = self.content_of(v, role_of(role, k, v));
                    (k, c.hash).hash(&mut h);
                    let naming = role == Role::Schema && (NAMING_KEYS.contains(&k.as_str()) || (k == "id" && matches!(v, Json::Str(_))));
                    names |= c.names || naming;
                }
            }
        }
        let c = Content { hash: h.finish(), names };
        self.content.insert(a, c);
        c
    }

    pub fn literal_node(&mut self, v: &Json) -> NodeId {
        let key = Key::Literal(v.to_text());
        if let Some(&id) = self.memo.get(&key) {
            return id;
        }
        let origin: Rc<str> = Rc::from("");
        let shape = self.literal_shape(v, &origin);
        let id = self.push(key, origin);
        self.nodes[id as usize].shape = Some(Rc::new(shape));
        id
    }

    /// The shape accepting exactly `v`.
    pub fn literal_shape(&mut self, v: &Json, origin: &Rc<str>) -> Shape {
        let mut s = Shape::none();
        match v {
            Json::Null => s.null = true,
            Json::Bool(b) => s.bools[*b as usize] = true,
            Json::Num(d) => s.num = NumLang::set(vec![d.clone()]),
            Json::Str(x) => s.str = Lang::set([x.clone()]),
            Json::Arr(items) => {
                let prefix = items.iter().map(|x| self.literal_node(x)).collect();
                let n = items.len() as u64;
                s.arr = vec![ArrAlt { prefix, rest: FALSE, min: n, max: Some(n), ..ArrAlt::any(origin.clone()) }];
            }
            Json::Obj(members) => {
                let mut props: Vec<(String, NodeId)> = Vec::new();
                for (k, x) in members {
                    let id = self.literal_node(x);
                    match props.iter_mut().find(|(n, _)| n == k) {
                        Some(slot) => slot.1 = id,
                        None => props.push((k.clone(), id)),
                    }
                }
                let names: Vec<String> = props.iter().map(|(n, _)| n.clone()).collect();
                let n = names.len() as u64;
                s.obj = vec![ObjAlt {
                    required: names.iter().cloned().collect(),
                    rules: vec![(Lang::not(Lang::set(names)), FALSE)],
                    props,
                    min: n,
                    max: Some(n),
                    ..ObjAlt::any(origin.clone())
                }];
            }
        }
        s
    }

    pub fn and_node(&mut self, a: NodeId, b: NodeId) -> NodeId {
        if a == TRUE || a == b {
            return b;
        }
        if b == TRUE {
            return a;
        }
        if a == FALSE || b == FALSE {
            return FALSE;
        }
        // An intersection is built as the left-deep chain of its distinct
        // operands in id order, so `(x ∧ y) ∧ z` and `x ∧ (z ∧ y)` are one
        // node. Recursive schemas intersect the same few subschemas in every
        // grouping as they descend, and nodes per grouping grow
        // exponentially with the depth.
        let mut members = Vec::new();
        self.and_members(a, &mut members);
        self.and_members(b, &mut members);
        members.sort_unstable();
        members.dedup();
        let p = self.nodes[a as usize].pointer.clone();
        let mut node = members[0];
        for &m in &members[1..] {
            let key = Key::And(node, m);
            node = match self.memo.get(&key) {
                Some(&id) => id,
                None => self.push(key, p.clone()),
            };
        }
        node
    }

    /// The operands of an intersection node (the node itself if it is
    /// none), appended to `out`.
    fn and_members(&self, id: NodeId, out: &mut Vec<NodeId>) {
        let mut n = id;
        while let Key::And(prefix, last) = self.nodes[n as usize].key {
            out.push(last);
            n = prefix;
        }
        out.push(n);
    }

    pub fn or_node(&mut self, a: NodeId, b: NodeId) -> NodeId {
        if a == FALSE || a == b {
            return b;
        }
        if b == FALSE {
            return a;
        }
        if a == TRUE || b == TRUE {
            return TRUE;
        }
        let key = Key::Or(a.min(b), a.max(b));
        if let Some(&id) = self.memo.get(&key) {
            return id;
        }
        let p = self.nodes[a as usize].pointer.clone();
        self.push(key, p)
    }

    pub fn not_node(&mut self, a: NodeId) -> NodeId {
        match a {
            TRUE => return FALSE,
            FALSE => return TRUE,
            _ => {}
        }
        if let Key::Not(x) = self.nodes[a as usize].key {
            return x;
        }
        let key = Key::Not(a);
        if let Some(&id) = self.memo.get(&key) {
            return id;
        }
        let p = self.nodes[a as usize].pointer.clone();
        self.push(key, p)
    }

    /// The shape of a node, computed on first use.
    /// The shape of node `id` (computed once, then shared).
    ///
    /// Two kinds of nesting drive this recursion, and neither may overflow
    /// the stack: chains of in-place keywords (`$ref` → `$ref` → …, each a
    /// new location) count against [`MAX_SHAPE_DEPTH`] and end in a limit
    /// error; chains of combined nodes (`And`/`Or`/`Not`, as deep as a flat
    /// `allOf` is long) are computed from an explicit stack, operands first.
    /// The remaining recursion runs on a stack that grows on the heap when
    /// the thread's runs low (`stacker`), whatever thread calls it.
    pub fn shape(&mut self, id: NodeId) -> Result<Rc<Shape>> {
        if let Some(s) = &self.nodes[id as usize].shape {
            return Ok(s.clone());
        }
        self.combined_operands_first(id)?;
        if self.shape_depth >= MAX_SHAPE_DEPTH {
            let pointer = self.nodes[id as usize].pointer.to_string();
            return Err(SchemaError::Limit {
                reason: format!("references and in-place applicators nested more than {MAX_SHAPE_DEPTH} levels deep"),
                pointer,
            });
        }
        self.shape_depth += 1;
        let r = stacker::maybe_grow(STACK_RED_ZONE, STACK_GROWTH, || self.compute_shape(id));
        self.shape_depth -= 1;
        r
    }

    /// Computes the shapes of the combined nodes below `id` (not `id`
    /// itself), deepest first, so computing `id` recurses at most one level
    /// into them. Combined nodes only refer to older nodes: no cycles.
    fn combined_operands_first(&mut self, id: NodeId) -> Result<()> {
        let mut stack: Vec<(NodeId, bool)> = vec![(id, false)];
        while let Some((n, expanded)) = stack.pop() {
            if self.nodes[n as usize].shape.is_some() {
                continue;
            }
            let operands = match self.nodes[n as usize].key {
                Key::And(a, b) | Key::Or(a, b) => [Some(a), Some(b)],
                Key::Not(a) => [Some(a), None],
                _ => continue,
            };
            if expanded {
                if n != id {
                    self.compute_shape(n)?;
                }
            } else {
                stack.push((n, true));
                stack.extend(operands.into_iter().flatten().map(|o| (o, false)));
            }
        }
        Ok(())
    }

    fn compute_shape(&mut self, id: NodeId) -> Result<Rc<Shape>> {
        if let Some(s) = &self.nodes[id as usize].shape {
            return Ok(s.clone());
        }
        let pointer = self.nodes[id as usize].pointer.clone();
        if self.nodes[id as usize].busy {
            return Err(SchemaError::Invalid {
                keyword: "$ref".into(),
                pointer: pointer.to_string(),
                reason: "the schema refers to itself without descending into a property or an item (infinite recursion)".into(),
            });
        }
        self.tick(&pointer)?;
        self.nodes[id as usize].busy = true;
        let key = self.nodes[id as usize].key.clone();
        let res = match key {
            Key::True | Key::False | Key::Literal(_) => unreachable!("pre-computed"),
            Key::Raw { loc, scope, ann, value_pos } => self.raw_shape(loc, scope, ann, value_pos),
            Key::And(a, b) => {
                let (sa, sb) = (self.shape(a), self.shape(b));
                match (sa, sb) {
                    (Ok(sa), Ok(sb)) => self.shape_and(&sa, &sb, &pointer),
                    (Err(e), _) | (_, Err(e)) => Err(e),
                }
            }
            Key::Or(a, b) => {
                let (sa, sb) = (self.shape(a), self.shape(b));
                match (sa, sb) {
                    (Ok(sa), Ok(sb)) => Ok(self.shape_or(&sa, &sb)),
                    (Err(e), _) | (_, Err(e)) => Err(e),
                }
            }
            Key::Not(a) => match self.shape(a) {
                Ok(sa) => self.shape_not(&sa, &pointer),
                Err(e) => Err(e),
            },
        };
        self.nodes[id as usize].busy = false;
        let shape = Rc::new(res?);
        self.nodes[id as usize].shape = Some(shape.clone());
        Ok(shape)
    }

    pub fn is_busy(&self, id: NodeId) -> bool {
        self.nodes[id as usize].busy
    }

    // ----------------------------------------------------------- scopes --

    pub fn scope_lookup(&self, scope: ScopeId, name: &str) -> Option<LocId> {
        self.scopes[scope as usize].iter().find(|(n, _)| n == name).map(|(_, l)| *l)
    }

    /// The scope after entering the resource `uri`: its dynamic anchors are
    /// bound unless an outer resource bound them first.
    pub fn enter_scope(&mut self, scope: ScopeId, uri: &str) -> ScopeId {
        let anchors = self.ix.resource_dynamic_anchors(uri);
        if anchors.is_empty() {
            return scope;
        }
        let mut bindings = self.scopes[scope as usize].clone();
        let mut changed = false;
        for (name, loc) in anchors {
            if !bindings.iter().any(|(n, _)| *n == name) {
                bindings.push((name, loc));
                changed = true;
            }
        }
        if !changed {
            return scope;
        }
        bindings.sort();
        if let Some(&id) = self.scope_ids.get(&bindings) {
            return id;
        }
        let id = self.scopes.len() as ScopeId;
        self.scopes.push(bindings.clone());
        self.scope_ids.insert(bindings, id);
        id
    }
}
