//! Schema resources and references: `$id` (and draft-4 `id`), `$anchor`,
//! `$dynamicAnchor` / `$recursiveAnchor`, JSON pointers, `$defs` /
//! `definitions`. Only the document itself is searched: a reference to
//! anything else (another file, a URL, the meta-schema) is refused.

use rustc_hash::FxHashMap as HashMap;

use crate::json::Json;
use crate::uri;

/// Default base URI of a document without `$id`: hierarchical, so that
/// relative references resolve (and then fail as remote, with a clear
/// message).
pub const DEFAULT_BASE: &str = "https://formcast.invalid/schema.json";

/// Name under which `$recursiveAnchor: true` is registered as a dynamic
/// anchor (2019-09's `$recursiveRef` is a `$dynamicRef` to it).
pub const RECURSIVE_ANCHOR: &str = "\u{0}recursive";

#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash, PartialOrd, Ord)]
pub enum Draft {
    D4,
    D6,
    D7,
    D2019,
    D2020,
}

impl Draft {
    /// The draft named by a `$schema` URI; `None` for an unknown
    /// meta-schema (whose vocabularies we cannot know).
    pub fn from_uri(s: &str) -> Option<Draft> {
        let s = s.trim_end_matches('#');
        Some(match s {
            "http://json-schema.org/draft-04/schema" | "https://json-schema.org/draft-04/schema" => Draft::D4,
            "http://json-schema.org/draft-03/schema" => Draft::D4,
            "http://json-schema.org/draft-06/schema" | "https://json-schema.org/draft-06/schema" => Draft::D6,
            "http://json-schema.org/draft-07/schema" | "https://json-schema.org/draft-07/schema" => Draft::D7,
            "https://json-schema.org/draft/2019-09/schema" | "http://json-schema.org/draft/2019-09/schema" => Draft::D2019,
            "https://json-schema.org/draft/2020-12/schema" | "http://json-schema.org/draft/2020-12/schema" => Draft::D2020,
            "http://json-schema.org/schema" | "https://json-schema.org/schema" => Draft::D2020,
            _ => return None,
        })
    }
}

pub type LocId = u32;

/// A schema location: the JSON, its pointer in the document, the base URI
/// of its resource, the draft in force.
#[derive(Debug, Clone)]
pub struct Loc<'a> {
    pub json: &'a Json,
    pub pointer: String,
    pub base: String,
    pub draft: Draft,
    /// `$schema` named a meta-schema we do not know.
    pub unknown_meta: Option<String>,
}

pub struct Index<'a> {
    locs: Vec<Loc<'a>>,
    by_addr: HashMap<usize, LocId>,
    /// Resource URI (no fragment) → its root location.
    resources: HashMap<String, LocId>,
    anchors: HashMap<(String, String), LocId>,
    dyn_anchors: HashMap<(String, String), LocId>,
    /// Resource URI → dynamic anchor names it defines.
    resource_dyn: HashMap<String, Vec<String>>,
}

fn addr(j: &Json) -> usize {
    j as *const Json as usize
}

/// Keywords whose value is one subschema.
pub const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];
/// Keywords whose value maps names to subschemas.
pub const SCHEMA_MAP_KEYWORDS: &[&str] = &["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];
/// Keywords whose value is a list of subschemas.
pub const SCHEMA_LIST_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

fn escape_pointer_segment(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

impl<'a> Index<'a> {
    pub fn build(root: &'a Json) -> Index<'a> {
        let mut ix = Index {
            locs: Vec::new(),
            by_addr: HashMap::default(),
            resources: HashMap::default(),
            anchors: HashMap::default(),
            dyn_anchors: HashMap::default(),
            resource_dyn: HashMap::default(),
        };
        let (draft, unknown) = match root.get("$schema").and_then(Json::as_str) {
            Some(s) => match Draft::from_uri(s) {
                Some(d) => (d, None),
                None => (Draft::D2020, Some(s.to_string())),
            },
            None => (Draft::D2020, None),
        };
        ix.resources.insert(DEFAULT_BASE.to_string(), 0);
        ix.visit(root, String::new(), DEFAULT_BASE.to_string(), draft, unknown, 0);
        ix
    }

    fn visit(&mut self, j: &'a Json, pointer: String, base: String, draft: Draft, unknown: Option<String>, depth: usize) {
        if depth > 400 || self.by_addr.contains_key(&addr(j)) {
            return;
        }
        let Json::Obj(_) = j else {
            self.add(j, pointer, base, draft, unknown);
            return;
        };
        let (draft, unknown) = match j.get("$schema").and_then(Json::as_str) {
            Some(s) if !pointer.is_empty() => match Draft::from_uri(s) {
                Some(d) => (d, None),
                None => (draft, Some(s.to_string())),
            },
            _ => (draft, unknown),
        };
        let mut base = base;
        let id = match draft {
            Draft::D4 => j.get("id").or_else(|| j.get("$id")),
            _ => j.get("$id"),
        }
        .and_then(Json::as_str);
        // Draft ≤ 7: `$ref` hides its siblings, `$id` included.
        let ref_hides = draft <= Draft::D7 && j.get("$ref").is_some();
        let mut anchor_from_id: Option<String> = None;
        if let (Some(id), false) = (id, ref_hides) {
            let abs = uri::resolve(&base, id);
            let (res, frag) = uri::split_fragment(&abs);
            if !id.starts_with('#') {
                base = res.to_string();
            }
            if let Some(f) = frag {
                if !f.starts_with('/') && draft <= Draft::D7 {
                    anchor_from_id = Some(f.to_string());
                }
            }
        }
        let me = self.add(j, pointer.clone(), base.clone(), draft, unknown.clone());
        if id.is_some() && !ref_hides && !id.unwrap().starts_with('#') {
            self.resources.entry(base.clone()).or_insert(me);
        }
        if let Some(a) = anchor_from_id {
            self.anchors.entry((base.clone(), a)).or_insert(me);
        }
        if draft >= Draft::D2019 {
            if let Some(a) = j.get("$anchor").and_then(Json::as_str) {
                self.anchors.entry((base.clone(), a.to_string())).or_insert(me);
            }
            if let Some(a) = j.get("$dynamicAnchor").and_then(Json::as_str) {
                self.anchors.entry((base.clone(), a.to_string())).or_insert(me);
                self.dyn_anchors.entry((base.clone(), a.to_string())).or_insert(me);
                self.resource_dyn.entry(base.clone()).or_default().push(a.to_string());
            }
            if matches!(j.get("$recursiveAnchor"), Some(Json::Bool(true))) {
                self.dyn_anchors.entry((base.clone(), RECURSIVE_ANCHOR.to_string())).or_insert(me);
                self.resource_dyn.entry(base.clone()).or_default().push(RECURSIVE_ANCHOR.to_string());
            }
        }
        let Json::Obj(members) = j else { unreachable!() };
        for (k, v) in members {
            let kp = format!("{pointer}/{}", escape_pointer_segment(k));
            if SCHEMA_KEYWORDS.contains(&k.as_str()) && !matches!(v, Json::Arr(_)) {
                self.visit(v, kp, base.clone(), draft, unknown.clone(), depth + 1);
            } else if SCHEMA_LIST_KEYWORDS.contains(&k.as_str()) {
                if let Json::Arr(items) = v {
                    for (i, it) in items.iter().enumerate() {
                        self.visit(it, format!("{kp}/{i}"), base.clone(), draft, unknown.clone(), depth + 1);
                    }
                }
            } else if SCHEMA_MAP_KEYWORDS.contains(&k.as_str()) {
                if let Json::Obj(m) = v {
                    for (name, it) in m {
                        if matches!(it, Json::Obj(_) | Json::Bool(_)) {
                            self.visit(it, format!("{kp}/{}", escape_pointer_segment(name)), base.clone(), draft, unknown.clone(), depth + 1);
                        }
                    }
                }
            }
        }
    }

    fn add(&mut self, j: &'a Json, pointer: String, base: String, draft: Draft, unknown: Option<String>) -> LocId {
        let id = self.locs.len() as LocId;
        self.locs.push(Loc { json: j, pointer, base, draft, unknown_meta: unknown });
        self.by_addr.insert(addr(j), id);
        id
    }

    pub fn root(&self) -> LocId {
        0
    }

    pub fn loc(&self, id: LocId) -> &Loc<'a> {
        &self.locs[id as usize]
    }

    /// The location of a subschema reached from `parent` through `segments`
    /// (registered during indexing, or created now for schemas inside
    /// unknown keywords).
    pub fn child(&mut self, parent: LocId, json: &'a Json, segments: &[&str]) -> LocId {
        if let Some(&id) = self.by_addr.get(&addr(json)) {
            return id;
        }
        let p = self.loc(parent).clone();
        let mut pointer = p.pointer.clone();
        for s in segments {
            pointer.push('/');
            pointer.push_str(&escape_pointer_segment(s));
        }
        // Index what lies below, so that nested `$id`s register too.
        self.visit(json, pointer, p.base.clone(), p.draft, p.unknown_meta.clone(), 0);
        self.by_addr[&addr(json)]
    }

    /// Resolves a `$ref` value found at `from`.
    pub fn resolve(&mut self, from: LocId, reference: &str) -> Result<LocId, String> {
        let base = self.loc(from).base.clone();
        let abs = uri::resolve(&base, reference);
        let (res, frag) = uri::split_fragment(&abs);
        let Some(&root) = self.resources.get(res) else {
            return Err(format!("'{res}' is not defined in this document (remote schemas are not fetched)"));
        };
        match frag {
            None => Ok(root),
            Some(f) if f.starts_with('/') => self.walk_pointer(root, &uri::percent_decode(f)),
            Some(name) => {
                let name = uri::percent_decode(name);
                self.anchors
                    .get(&(res.to_string(), name.clone()))
                    .copied()
                    .ok_or_else(|| format!("no anchor '{name}' in '{res}'"))
            }
        }
    }

    fn walk_pointer(&mut self, root: LocId, pointer: &str) -> Result<LocId, String> {
        let mut cur: &'a Json = self.loc(root).json;
        let mut segs: Vec<String> = Vec::new();
        for raw in pointer.split('/').skip(1) {
            let seg = raw.replace("~1", "/").replace("~0", "~");
            cur = match cur {
                Json::Obj(_) => cur.get(&seg).ok_or_else(|| format!("JSON pointer '{pointer}' does not exist"))?,
                Json::Arr(a) => seg
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| a.get(i))
                    .ok_or_else(|| format!("JSON pointer '{pointer}' does not exist"))?,
                _ => return Err(format!("JSON pointer '{pointer}' does not exist")),
            };
            segs.push(seg);
        }
        let refs: Vec<&str> = segs.iter().map(|s| s.as_str()).collect();
        Ok(self.child(root, cur, &refs))
    }

    /// The dynamic anchor `name` defined by the resource of `loc`, if any.
    pub fn dynamic_anchor_in(&self, resource: &str, name: &str) -> Option<LocId> {
        self.dyn_anchors.get(&(resource.to_string(), name.to_string())).copied()
    }

    /// Dynamic anchors `(name, location)` defined by the resource `uri`.
    pub fn resource_dynamic_anchors(&self, uri: &str) -> Vec<(String, LocId)> {
        self.resource_dyn
            .get(uri)
            .map(|names| names.iter().filter_map(|n| self.dynamic_anchor_in(uri, n).map(|l| (n.clone(), l))).collect())
            .unwrap_or_default()
    }

    /// Whether `uri` has any dynamic anchor at all (cheap check).
    pub fn has_dynamic(&self) -> bool {
        !self.resource_dyn.is_empty()
    }
}
