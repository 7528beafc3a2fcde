//! Shapes to grammar rules (JSON style): one rule per subschema node (per
//! nesting depth when indentation depends on it), leaves inlined or shared.

use rustc_hash::FxHashMap as HashMap;

use formcast_grammar::{Expr, RuleId};

use crate::emit::{alt, complement_expr, complement_expr_linked, complement_other_and_any, complement_words, json_any_char, json_canonical_char, lit, re_expr, seq, Emitter, Enc, Layout};
use crate::error::{Result, SchemaError};
use crate::numbers::{json_integer, json_number, NumLang, NumPiece};
use crate::re::Re;
use crate::schema::{Builder, NodeId, Shape, FALSE};
use crate::strings::{Lang, LangKey, Piece};

/// Leaves larger than this get a shared rule instead of being inlined.
const INLINE_LEAF_COST: u64 = 12;

/// Length bounds beyond this are treated as unbounded (no model emits two
/// billion characters in one string).
const MAX_LENGTH_BOUND: u64 = 1 << 31;

pub struct Lowerer<'b, 'a> {
    pub b: &'b mut Builder<'a>,
    pub em: Emitter,
    pub layout: Layout,
    node_rules: HashMap<(NodeId, usize), RuleId>,
    leaf_rules: HashMap<Vec<Piece>, Expr>,
    /// String rules by language, checked before its pieces are built.
    lang_rules: HashMap<LangKey, Expr>,
    num_rules: HashMap<NumPiece, Expr>,
    num_pieces: HashMap<NumLang, Option<NumPiece>>,
    /// Rules reserved but not yet built: bodies are built by [`drain`],
    /// iteratively, so a chain of thousands of nested `$ref`s does not
    /// recurse.
    pending: Vec<(NodeId, usize, RuleId)>,
    /// String rules of single atoms (formats, patterns), by atom identity:
    /// hashing a large expression on every use would cost more than it saves.
    atom_rules: HashMap<String, Expr>,
    depth_warned: bool,
    /// [`crate::SchemaOptions::excludes`] as bytes.
    excludes: Vec<Vec<u8>>,
    /// Nested values of the XML styles that write objects and arrays as
    /// elements (`cohere_xml`, `minimax_m3_xml`): one rule per (node, part),
    /// built later by [`crate::xml_styles`]'s drain, so a recursive schema
    /// is a recursive grammar instead of an endless expansion.
    pub(crate) xml_rules: HashMap<(NodeId, crate::xml_styles::XmlPart), RuleId>,
    pub(crate) xml_pending: Vec<(NodeId, crate::xml_styles::XmlPart, RuleId)>,
    /// Nodes whose values are being enumerated ([`Self::enumerate`]), so a
    /// schema whose items refer back to it is found infinite, not recursed
    /// into without end.
    pub(crate) enumerating: Vec<NodeId>,
    /// The inline rules every key complement ends in, `Σ* "` and
    /// `OTHER Σ* "` (see [`complement_expr_linked`]), once made.
    complement_rests: Option<(Expr, Expr)>,
}

fn limit(pointer: &str, reason: impl Into<String>) -> SchemaError {
    SchemaError::Limit { pointer: pointer.to_string(), reason: reason.into() }
}

/// The keyword an automaton error message is about.
fn keyword_in(msg: &str, default: &str) -> String {
    for k in ["patternProperties", "pattern", "format", "multipleOf", "propertyNames"] {
        if msg.contains(&format!("{k} ")) || msg.contains(&format!("{k} '")) {
            return k.to_string();
        }
    }
    default.to_string()
}

impl<'b, 'a> Lowerer<'b, 'a> {
    pub fn new(b: &'b mut Builder<'a>, layout: Layout) -> Lowerer<'b, 'a> {
        let max_rules = b.opts.max_rules;
        let excludes = b.opts.excludes.iter().map(|x| x.as_bytes().to_vec()).collect();
        Lowerer {
            b,
            em: Emitter::new(max_rules),
            layout,
            node_rules: HashMap::default(),
            leaf_rules: HashMap::default(),
            lang_rules: HashMap::default(),
            num_rules: HashMap::default(),
            num_pieces: HashMap::default(),
            pending: Vec::new(),
            atom_rules: HashMap::default(),
            depth_warned: false,
            excludes,
            complement_rests: None,
            xml_rules: HashMap::default(),
            xml_pending: Vec::new(),
            enumerating: Vec::new(),
        }
    }

    pub fn pointer(&self, node: NodeId) -> String {
        self.b.nodes[node as usize].pointer.to_string()
    }

    /// The grammar expression of a value matching `node` at `depth`.
    pub fn value(&mut self, node: NodeId, depth: usize) -> Result<Expr> {
        if node == FALSE {
            return Ok(Expr::Nothing);
        }
        let d = if self.layout.depth_sensitive() { depth } else { 0 };
        if d > self.b.opts.max_indent_depth {
            // Each level of an indented layout is its own set of rules:
            // values (any JSON under `{"type": "object"}`, or a recursive
            // schema) nest at most this deep. A documented limit, reported.
            if !self.depth_warned {
                self.depth_warned = true;
                let p = self.pointer(node);
                self.b.warn("indent", &p, format!("values nested deeper than {} levels are not generated in an indented layout", self.b.opts.max_indent_depth));
            }
            return Ok(Expr::Nothing);
        }
        if let Some(&r) = self.node_rules.get(&(node, d)) {
            return Ok(Expr::Rule(r));
        }
        let ptr = self.pointer(node);
        self.b.tick(&ptr)?;
        let shape = self.b.shape(node)?;
        // Scalars without alternatives of their own are inlined.
        if shape.arr.is_empty() && shape.obj.is_empty() {
            let e = self.scalar_expr(&shape, &ptr)?;
            if expr_small(&e) {
                return Ok(e);
            }
        }
        let name = if ptr.is_empty() { "root".to_string() } else { ptr.trim_start_matches('/').to_string() };
        let id = self.em.reserve(&name).map_err(|r| limit(&ptr, r))?;
        self.node_rules.insert((node, d), id);
        self.pending.push((node, d, id));
        Ok(Expr::Rule(id))
    }

    /// Builds the bodies of all reserved rules.
    pub fn drain(&mut self) -> Result<()> {
        while let Some((node, d, id)) = self.pending.pop() {
            let ptr = self.pointer(node);
            let shape = self.b.shape(node)?;
            let body = self.shape_expr(&shape, d, &ptr)?;
            self.em.set(id, body);
        }
        Ok(())
    }

    fn shape_expr(&mut self, s: &Shape, depth: usize, ptr: &str) -> Result<Expr> {
        let mut alts = vec![self.scalar_expr(s, ptr)?];
        for a in s.arr.clone() {
            alts.push(self.array_expr(&a, depth)?);
        }
        for o in s.obj.clone() {
            alts.push(self.object_expr(&o, depth)?);
        }
        Ok(alt(alts))
    }

    /// null, booleans, numbers and strings of a shape, as alternatives.
    pub(crate) fn scalar_expr(&mut self, s: &Shape, ptr: &str) -> Result<Expr> {
        let mut alts = Vec::new();
        if s.null {
            alts.push(lit("null"));
        }
        if s.bools[1] {
            alts.push(lit("true"));
        }
        if s.bools[0] {
            alts.push(lit("false"));
        }
        alts.push(self.number_expr(&s.num, ptr)?);
        alts.push(self.string_expr(&s.str, ptr)?);
        Ok(alt(alts))
    }

    pub fn number_expr(&mut self, n: &NumLang, ptr: &str) -> Result<Expr> {
        let piece = match self.num_pieces.get(n) {
            Some(p) => p.clone(),
            None => {
                let p = match n.piece() {
                    Ok(p) => p,
                    Err(reason) => {
                        let kw = keyword_in(&reason, "minimum");
                        self.b.refuse(&kw, ptr, reason)?;
                        Some(NumPiece::Any)
                    }
                };
                self.num_pieces.insert(n.clone(), p.clone());
                p
            }
        };
        let Some(piece) = piece else { return Ok(Expr::Nothing) };
        if let Some(e) = self.num_rules.get(&piece) {
            return Ok(e.clone());
        }
        let e = match &piece {
            NumPiece::Any => re_expr(&json_number(), Enc::Raw),
            NumPiece::AnyInt => re_expr(&json_integer(), Enc::Raw),
            NumPiece::Text(re) => re_expr(re, Enc::Raw),
            NumPiece::Automaton(d) => self.automaton_rules(d, Enc::Raw, "", Expr::Empty)?,
        };
        let e = self.share(e, "number")?;
        self.num_rules.insert(piece, e.clone());
        Ok(e)
    }

    /// The JSON string (quotes included) of a string language.
    pub fn string_expr(&mut self, l: &Lang, ptr: &str) -> Result<Expr> {
        if let Lang::Atom(a) = l {
            // The description ("format 'date'", "pattern '^a+$'") names
            // the language.
            let key = a.what.clone();
            if let Some(e) = self.atom_rules.get(&key) {
                return Ok(e.clone());
            }
            let body = a.json_expr().clone();
            let e = self.avoid(seq(vec![lit("\""), body, lit("\"")]));
            let e = self.share(e, "string")?;
            self.atom_rules.insert(key, e.clone());
            return Ok(e);
        }
        let key = LangKey(l.clone());
        if let Some(e) = self.lang_rules.get(&key) {
            return Ok(e.clone());
        }
        if let Some(excluded) = l.excluded_only() {
            // Printable ASCII words are a trie the engine walks as data;
            // any other spelling nests the expression once per character.
            let as_words = self.excludes.is_empty() && excluded.iter().all(|w| w.chars().all(crate::emit::is_simple));
            if !as_words {
                crate::strings::check_excluded_words(&excluded).map_err(|r| limit(ptr, r))?;
            }
            let quote = lit("\"");
            let e = if self.excludes.is_empty() {
                // A rule of its own whatever its size: the continuations
                // are shared only where they end the rule.
                let (any_then_tail, other_then_tail) = self.complement_rests()?;
                let rest = complement_words(&excluded, &any_then_tail, &other_then_tail, &quote)
                    .unwrap_or_else(|| complement_expr_linked(&excluded, Enc::Json, &any_then_tail, &other_then_tail, &quote));
                let body = seq(vec![quote.clone(), rest]);
                Expr::Rule(self.em.add("string", body).map_err(|r| limit("", r))?)
            } else {
                let e = self.avoid(seq(vec![quote.clone(), complement_expr(&excluded, Enc::Json, quote)]));
                self.share(e, "string")?
            };
            self.lang_rules.insert(key, e.clone());
            return Ok(e);
        }
        let pieces = match l.pieces() {
            Ok(p) => p,
            Err(reason) => {
                // Refused at every place it occurs (each pointer is
                // reported), so not remembered.
                let kw = keyword_in(&reason, "maxLength");
                self.b.refuse(&kw, ptr, reason)?;
                return self.string_pieces(vec![Piece::Any], ptr);
            }
        };
        let e = self.string_pieces(pieces, ptr)?;
        self.lang_rules.insert(key, e.clone());
        Ok(e)
    }

    /// References to the inline rules `Σ* "` and `OTHER Σ* "` that end
    /// every key complement (made on first use).
    fn complement_rests(&mut self) -> Result<(Expr, Expr)> {
        if let Some(r) = &self.complement_rests {
            return Ok(r.clone());
        }
        let (other, any) = complement_other_and_any(Enc::Json);
        let any_then_tail = self.em.add("string_rest", seq(vec![any.clone(), lit("\"")])).map_err(|r| limit("", r))?;
        self.em.set_inline(any_then_tail);
        let other_then_tail = self.em.add("string_rest", seq(vec![other.clone(), Expr::Rule(any_then_tail)])).map_err(|r| limit("", r))?;
        self.em.set_inline(other_then_tail);
        let r = (Expr::Rule(any_then_tail), Expr::Rule(other_then_tail));
        self.complement_rests = Some(r.clone());
        Ok(r)
    }

    /// The rule for a string written as one of `pieces`.
    fn string_pieces(&mut self, pieces: Vec<Piece>, ptr: &str) -> Result<Expr> {
        if pieces.is_empty() {
            return Ok(Expr::Nothing);
        }
        if let Some(e) = self.leaf_rules.get(&pieces) {
            return Ok(e.clone());
        }
        let mut alts = Vec::new();
        for p in &pieces {
            let rest = self.piece_then_quote(p, ptr)?;
            alts.push(seq(vec![lit("\""), rest]));
        }
        let e = self.avoid(alt(alts));
        let e = self.share(e, "string")?;
        self.leaf_rules.insert(pieces, e.clone());
        Ok(e)
    }

    /// The content of a string piece followed by the closing quote.
    pub fn piece_then_quote(&mut self, p: &Piece, ptr: &str) -> Result<Expr> {
        let quote = lit("\"");
        Ok(match p {
            Piece::Any => seq(vec![Expr::star(json_any_char()), quote]),
            Piece::Length(min, max) => {
                let max = max.filter(|&m| m < MAX_LENGTH_BOUND);
                if *min >= MAX_LENGTH_BOUND {
                    return Err(limit(ptr, "minLength is too large"));
                }
                self.em
                    .repeat_then("string_chars", json_canonical_char(), *min as u32, max.map(|m| m as u32), quote)
                    .map_err(|r| limit(ptr, r))?
            }
            Piece::Content(re) => seq(vec![re_expr(re, Enc::Json), quote]),
            Piece::Automaton(d) => self.automaton_rules(d, Enc::Json, ptr, quote)?,
        })
    }

    /// An automaton followed by `tail`, as right-linear rules:
    /// `q ::= c₁ q₁ | c₂ q₂ | tail` (`tail` where `q` accepts). Why the tail
    /// goes inside: a string's automaton accepts after nearly every
    /// character, and a rule that may finish anywhere leaves every token to
    /// the per-request walk; with the closing quote inside, the rule finishes
    /// only at the quote and the per-state vocabulary partitions do the work.
    ///
    /// A move on characters not all written as one ASCII byte (escapes,
    /// multi-byte UTF-8) goes into an inline rule of its own, one per
    /// distinct (characters, target), which every state with that move
    /// calls: the engine builds a tail-called rule once, so the bytes inside
    /// the characters are one set of automaton states instead of a copy per
    /// state. The complement of a bounded key pattern (`{1,255}`) leaves to
    /// "any other string" from each of its 256 states with the same move:
    /// 6,426 automaton states in o9962, where one copy needs about 300.
    pub fn automaton_rules(&mut self, d: &crate::automata::Dfa, enc: Enc, ptr: &str, tail: Expr) -> Result<Expr> {
        let ids: Vec<RuleId> = (0..d.len()).map(|_| self.em.reserve("dfa_state")).collect::<std::result::Result<_, _>>().map_err(|r| limit(ptr, r))?;
        let mut shared_moves: std::collections::HashMap<(Vec<(u32, u32)>, u32), RuleId> = std::collections::HashMap::new();
        for (q, trans) in d.trans.iter().enumerate() {
            let mut by_target: std::collections::BTreeMap<u32, Vec<(u32, u32)>> = std::collections::BTreeMap::new();
            for &(lo, hi, t) in trans {
                by_target.entry(t).or_default().push((lo, hi));
            }
            let mut alts: Vec<Expr> = Vec::with_capacity(by_target.len() + 1);
            for (t, r) in by_target {
                let chars = re_expr(&Re::chars(r.clone()), enc);
                if matches!(&chars, Expr::Chars(cs) if cs.iter().all(|&(_, hi)| hi < 0x80)) {
                    alts.push(seq(vec![chars, Expr::Rule(ids[t as usize])]));
                    continue;
                }
                let id = match shared_moves.entry((r, t)) {
                    std::collections::hash_map::Entry::Occupied(e) => *e.get(),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        let id = self.em.add("dfa_move", seq(vec![chars, Expr::Rule(ids[t as usize])])).map_err(|r| limit(ptr, r))?;
                        self.em.set_inline(id);
                        *e.insert(id)
                    }
                };
                alts.push(Expr::Rule(id));
            }
            if d.accept[q] {
                alts.push(tail.clone());
            }
            self.em.set(ids[q], alt(alts));
            self.em.set_inline(ids[q]);
        }
        Ok(Expr::Rule(ids[0]))
    }

    /// The texts of `e` that contain no exclude (`e` itself without any).
    /// A literal is decided here, so that a property whose name contains an
    /// exclude is known to be impossible while the object is built.
    pub(crate) fn avoid(&self, e: Expr) -> Expr {
        if self.excludes.is_empty() {
            return e;
        }
        match e {
            Expr::Nothing => Expr::Nothing,
            Expr::Empty => Expr::Empty,
            Expr::Bytes(b) => {
                if self.excludes.iter().any(|x| b.windows(x.len()).any(|w| w == x.as_slice())) {
                    Expr::Nothing
                } else {
                    Expr::Bytes(b)
                }
            }
            e => Expr::Avoiding { expr: Box::new(e), excludes: self.excludes.clone(), lazy: false },
        }
    }

    /// Large expressions go into a rule of their own, shared by every use.
    fn share(&mut self, e: Expr, name: &str) -> Result<Expr> {
        if expr_small(&e) {
            return Ok(e);
        }
        let id = self.em.add(name, e).map_err(|r| limit("", r))?;
        Ok(Expr::Rule(id))
    }

    /// A raw character expression as a grammar expression.
    pub fn raw(&self, re: &Re) -> Expr {
        re_expr(re, Enc::Raw)
    }
}

/// Expression size, stopping early once above the inline threshold.
fn expr_small(e: &Expr) -> bool {
    fn cost(e: &Expr, budget: &mut i64) {
        *budget -= 1;
        if *budget < 0 {
            return;
        }
        match e {
            Expr::Seq(v) | Expr::Alt(v) => v.iter().for_each(|x| cost(x, budget)),
            Expr::Repeat { expr, max, min } => {
                let copies = max.unwrap_or(*min).max(1) as i64;
                let mut inner = 0i64;
                let mut b2 = *budget;
                cost(expr, &mut b2);
                inner += *budget - b2;
                *budget -= inner.saturating_mul(copies.min(1000));
            }
            Expr::Chars(r) => *budget -= r.len() as i64 / 4,
            _ => {}
        }
    }
    let mut budget = INLINE_LEAF_COST as i64;
    cost(e, &mut budget);
    budget >= 0
}
