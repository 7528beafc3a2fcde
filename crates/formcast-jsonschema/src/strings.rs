//! String languages: what the *decoded* content of a JSON string may be.
//!
//! A [`Lang`] is a boolean combination of atoms (finite sets from `enum` /
//! `const`, regular atoms from `pattern` and `format`, length bounds). It is
//! kept symbolic until lowering, where it becomes a union of [`Piece`]s:
//! unconstrained and length-only strings keep a cheap dedicated form (length
//! bounds never expand into an automaton), everything else becomes one
//! regular expression, built through automata only when atoms must really be
//! intersected or complemented.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use formcast_grammar::Expr;

use crate::automata::{AutomatonError, Dfa};
use crate::emit::{re_expr, Enc};
use crate::re::Re;

/// A regular atom with a description for error messages.
#[derive(Debug)]
pub struct Atom {
    pub re: Re,
    /// E.g. `pattern '^a+$'` or `format 'date'`.
    pub what: String,
    dfa: OnceLock<Result<Arc<Dfa>, AutomatonError>>,
    json: OnceLock<Expr>,
    /// Small enough to match strings against the expression itself
    /// ([`Re::matches`]) rather than build its automaton.
    small: bool,
}

/// Largest expression (in [`Re::cost`] units) matched without an automaton.
const SMALL_RE: u64 = 2048;

impl Atom {
    pub fn new(re: Re, what: String) -> Arc<Atom> {
        let small = re.cost() <= SMALL_RE;
        Arc::new(Atom { re, what, dfa: OnceLock::new(), json: OnceLock::new(), small })
    }

    /// The language as the content of a JSON string (canonical escapes),
    /// built on first use.
    pub fn json_expr(&self) -> &Expr {
        self.json.get_or_init(|| re_expr(&self.re, Enc::Json))
    }

    /// Whether `s` is in the language: through the automaton when it is
    /// built or the expression is large, else on the expression.
    pub fn matches(&self, s: &str) -> Result<bool, AutomatonError> {
        match self.dfa.get() {
            Some(Ok(d)) => Ok(d.matches(s)),
            _ if self.small => Ok(self.re.matches(s)),
            _ => Ok(self.dfa()?.matches(s)),
        }
    }

    pub fn dfa(&self) -> Result<Arc<Dfa>, AutomatonError> {
        self.dfa.get_or_init(|| Dfa::from_re(&self.re).map(|d| Arc::new(d.minimize()))).clone()
    }
}

#[derive(Debug, Clone)]
pub enum Lang {
    All,
    Nothing,
    Set(Arc<BTreeSet<String>>),
    Atom(Arc<Atom>),
    /// Length in characters (code points), inclusive bounds.
    Len(u64, Option<u64>),
    And(Vec<Lang>),
    Or(Vec<Lang>),
    Not(Box<Lang>),
}

/// Adds `x` to the operands of a flattened `And`/`Or` unless an equal one
/// is there: both are idempotent, and without this a language met on both
/// sides of every level of a recursive intersection doubles per level.
fn push_new(v: &mut Vec<Lang>, x: Lang) {
    if !v.iter().any(|y| y.same(&x)) {
        v.push(x);
    }
}

/// A string language as a map key: equal by [`Lang::same`]. (An object's
/// undeclared keys are "any string but these names", met again at every
/// object with the same properties; its pieces are costly to build.)
pub struct LangKey(pub Lang);

impl PartialEq for LangKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.same(&other.0)
    }
}

impl Eq for LangKey {}

impl std::hash::Hash for LangKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        fn go<H: std::hash::Hasher>(l: &Lang, h: &mut H) {
            std::mem::discriminant(l).hash(h);
            match l {
                Lang::All | Lang::Nothing => {}
                Lang::Set(s) => s.hash(h),
                // Atoms are equal when their expressions are: hashing the
                // expression would cost as much as comparing it, so only
                // the kind is hashed.
                Lang::Atom(_) => {}
                Lang::Len(a, b) => (a, b).hash(h),
                Lang::And(v) | Lang::Or(v) => {
                    v.len().hash(h);
                    v.iter().for_each(|x| go(x, h));
                }
                Lang::Not(x) => go(x, h),
            }
        }
        go(&self.0, h)
    }
}

/// One way of writing a string's content.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Piece {
    /// Any string (any JSON escape allowed).
    Any,
    /// Any string of `min..=max` characters (any JSON escape allowed; an
    /// escape counts as one character).
    Length(u64, Option<u64>),
    /// Strings of a regular language, each character in its canonical JSON
    /// form (`json.dumps(ensure_ascii=False)`).
    Content(Re),
    /// The same, as an automaton whose regular expression would be too
    /// large (written as one grammar rule per state).
    Automaton(Arc<Dfa>),
}

/// Automata with more states than this become grammar rules, not expressions.
const AUTOMATON_PIECE_MIN_STATES: usize = 8;

/// Largest number of conjunctive terms a string language is expanded into.
const MAX_TERMS: usize = 64;

impl Lang {
    pub fn set<I: IntoIterator<Item = String>>(items: I) -> Lang {
        let s: BTreeSet<String> = items.into_iter().collect();
        if s.is_empty() {
            Lang::Nothing
        } else {
            Lang::Set(Arc::new(s))
        }
    }

    pub fn len(min: u64, max: Option<u64>) -> Lang {
        match max {
            Some(m) if m < min => Lang::Nothing,
            _ if min == 0 && max.is_none() => Lang::All,
            _ => Lang::Len(min, max),
        }
    }

    /// Cheap structural equality (atoms by identity).
    pub fn same(&self, other: &Lang) -> bool {
        match (self, other) {
            (Lang::All, Lang::All) | (Lang::Nothing, Lang::Nothing) => true,
            (Lang::Set(a), Lang::Set(b)) => Arc::ptr_eq(a, b) || a == b,
            (Lang::Atom(a), Lang::Atom(b)) => Arc::ptr_eq(a, b) || a.re == b.re,
            (Lang::Len(a, b), Lang::Len(c, d)) => a == c && b == d,
            (Lang::Not(a), Lang::Not(b)) => a.same(b),
            (Lang::And(a), Lang::And(b)) | (Lang::Or(a), Lang::Or(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y)),
            _ => false,
        }
    }

    fn complementary(a: &Lang, b: &Lang) -> bool {
        matches!(a, Lang::Not(x) if x.same(b)) || matches!(b, Lang::Not(y) if y.same(a))
    }

    pub fn and(a: Lang, b: Lang) -> Lang {
        if a.same(&b) {
            return a;
        }
        if Lang::complementary(&a, &b) {
            return Lang::Nothing;
        }
        // x ∧ (… ∧ x ∧ …) and x ∧ (… ∧ ¬x ∧ …).
        if let Lang::And(v) = &a {
            if v.iter().any(|x| x.same(&b)) {
                return a;
            }
            if v.iter().any(|x| Lang::complementary(x, &b)) {
                return Lang::Nothing;
            }
        }
        if let Lang::And(v) = &b {
            if v.iter().any(|x| x.same(&a)) {
                return b;
            }
            if v.iter().any(|x| Lang::complementary(x, &a)) {
                return Lang::Nothing;
            }
        }
        match (a, b) {
            (Lang::All, x) | (x, Lang::All) => x,
            (Lang::Nothing, _) | (_, Lang::Nothing) => Lang::Nothing,
            (Lang::Len(a1, b1), Lang::Len(a2, b2)) => {
                let hi = match (b1, b2) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, None) => x,
                    (None, y) => y,
                };
                Lang::len(a1.max(a2), hi)
            }
            (Lang::Set(s), other) | (other, Lang::Set(s)) if other.is_cheap() => {
                // Filter right away when membership needs no automaton.
                match s.iter().map(|x| other.contains(x).map(|ok| (x, ok))).collect::<Result<Vec<_>, _>>() {
                    Ok(v) => Lang::set(v.into_iter().filter(|(_, ok)| *ok).map(|(x, _)| x.clone())),
                    Err(_) => Lang::And(vec![Lang::Set(s), other]),
                }
            }
            (Lang::And(mut v), Lang::And(w)) => {
                w.into_iter().for_each(|x| push_new(&mut v, x));
                Lang::And(v)
            }
            (Lang::And(mut v), x) | (x, Lang::And(mut v)) => {
                push_new(&mut v, x);
                Lang::And(v)
            }
            (a, b) => Lang::And(vec![a, b]),
        }
    }

    pub fn or(a: Lang, b: Lang) -> Lang {
        if a.same(&b) {
            return a;
        }
        if Lang::complementary(&a, &b) {
            return Lang::All;
        }
        match (a, b) {
            (Lang::Nothing, x) | (x, Lang::Nothing) => x,
            (Lang::All, _) | (_, Lang::All) => Lang::All,
            (Lang::Set(a), Lang::Set(b)) => Lang::set(a.iter().chain(b.iter()).cloned()),
            (Lang::Or(mut v), Lang::Or(w)) => {
                w.into_iter().for_each(|x| push_new(&mut v, x));
                Lang::Or(v)
            }
            (Lang::Or(mut v), x) | (x, Lang::Or(mut v)) => {
                push_new(&mut v, x);
                Lang::Or(v)
            }
            (a, b) => Lang::Or(vec![a, b]),
        }
    }

    pub fn not(a: Lang) -> Lang {
        match a {
            Lang::All => Lang::Nothing,
            Lang::Nothing => Lang::All,
            Lang::Not(x) => *x,
            Lang::Len(min, max) => {
                let below = if min > 0 { Lang::len(0, Some(min - 1)) } else { Lang::Nothing };
                let above = match max {
                    Some(m) => Lang::len(m + 1, None),
                    None => Lang::Nothing,
                };
                Lang::or(below, above)
            }
            x => Lang::Not(Box::new(x)),
        }
    }

    /// The names excluded when the language is "any string but these"
    /// (an object's undeclared keys): `¬S` or a conjunction of such.
    pub fn excluded_only(&self) -> Option<BTreeSet<String>> {
        match self {
            Lang::Not(x) => match &**x {
                Lang::Set(s) => Some((**s).clone()),
                _ => None,
            },
            Lang::And(v) => v.iter().try_fold(BTreeSet::new(), |mut acc, x| {
                acc.extend(x.excluded_only()?);
                Some(acc)
            }),
            _ => None,
        }
    }

    fn is_cheap(&self) -> bool {
        match self {
            Lang::All | Lang::Nothing | Lang::Set(_) | Lang::Len(..) => true,
            Lang::And(v) | Lang::Or(v) => v.iter().all(Lang::is_cheap),
            Lang::Not(x) => x.is_cheap(),
            Lang::Atom(_) => false,
        }
    }

    /// Whether `s` belongs to the language.
    pub fn contains(&self, s: &str) -> Result<bool, AutomatonError> {
        Ok(match self {
            Lang::All => true,
            Lang::Nothing => false,
            Lang::Set(set) => set.contains(s),
            Lang::Atom(a) => a.matches(s)?,
            Lang::Len(min, max) => {
                let n = s.chars().count() as u64;
                n >= *min && max.is_none_or(|m| n <= m)
            }
            Lang::And(v) => {
                for x in v {
                    if !x.contains(s)? {
                        return Ok(false);
                    }
                }
                true
            }
            Lang::Or(v) => {
                for x in v {
                    if x.contains(s)? {
                        return Ok(true);
                    }
                }
                false
            }
            Lang::Not(x) => !x.contains(s)?,
        })
    }

    /// The language as an automaton (length bounds are unrolled, so this is
    /// only used where a product is unavoidable).
    pub fn dfa(&self) -> Result<Dfa, AutomatonError> {
        Ok(match self {
            Lang::All => Dfa::universal(),
            Lang::Nothing => Dfa::empty(),
            Lang::Set(s) => Dfa::from_re(&set_re(s))?.minimize(),
            Lang::Atom(a) => (*a.dfa()?).clone(),
            Lang::Len(min, max) => {
                if max.unwrap_or(*min) > 4096 {
                    return Err(AutomatonError::TooLarge("length bound"));
                }
                Dfa::from_re(&Re::repeat(Re::any_char(), *min as u32, max.map(|m| m as u32)))?.minimize()
            }
            Lang::And(v) => {
                let mut acc = Dfa::universal();
                for x in v {
                    acc = acc.intersect(&x.dfa()?)?;
                    if acc.is_empty_language() {
                        break;
                    }
                }
                acc
            }
            Lang::Or(v) => {
                let mut acc = Dfa::empty();
                for x in v {
                    acc = acc.union(&x.dfa()?)?;
                }
                acc
            }
            Lang::Not(x) => x.dfa()?.complement()?,
        })
    }

    /// `Some(true)` when provably empty, `Some(false)` when provably not,
    /// `None` when too large to decide.
    pub fn is_empty(&self) -> Option<bool> {
        match self {
            Lang::Nothing => Some(true),
            Lang::All | Lang::Len(..) | Lang::Set(_) => Some(false),
            // Constructors simplify ∅ away: any other expression matches
            // something.
            Lang::Atom(a) => Some(a.re == Re::Nothing),
            _ if self.is_cofinite() => Some(false),
            Lang::Or(v) => {
                let mut all_empty = true;
                for x in v {
                    match x.is_empty() {
                        Some(false) => return Some(false),
                        Some(true) => {}
                        None => all_empty = false,
                    }
                }
                if all_empty {
                    Some(true)
                } else {
                    self.dfa().ok().map(|d| d.is_empty_language())
                }
            }
            // A finite set under constraints: test its members.
            Lang::And(v) if v.iter().any(|x| matches!(x, Lang::Set(_))) => {
                let Some(Lang::Set(set)) = v.iter().find(|x| matches!(x, Lang::Set(_))) else { unreachable!() };
                let mut undecided = false;
                for m in set.iter() {
                    match self.contains(m) {
                        Ok(true) => return Some(false),
                        Ok(false) => {}
                        Err(_) => undecided = true,
                    }
                }
                if undecided {
                    None
                } else {
                    Some(true)
                }
            }
            _ => self.empty_without_automaton().or_else(|| self.dfa().ok().map(|d| d.is_empty_language())),
        }
    }

    /// Cheap answers before any product automaton: two required atoms whose
    /// strings start with different literal text (`^name_…` and `^title_…`,
    /// the usual `patternProperties`) cannot meet; and a short string that
    /// the language provably contains (an example of one of its atoms, or a
    /// few plain ones) shows it is not empty.
    fn empty_without_automaton(&self) -> Option<bool> {
        let atoms: Vec<&Arc<Atom>> = match self {
            Lang::And(v) => v.iter().filter_map(|x| if let Lang::Atom(a) = x { Some(a) } else { None }).collect(),
            Lang::Atom(a) => vec![a],
            _ => vec![],
        };
        let prefixes: Vec<String> = atoms.iter().map(|a| a.re.literal_prefix()).collect();
        for (i, p) in prefixes.iter().enumerate() {
            if prefixes[..i].iter().any(|q| !p.starts_with(q.as_str()) && !q.starts_with(p.as_str())) {
                return Some(true);
            }
        }
        let examples = atoms.iter().filter_map(|a| a.re.example());
        let plain = ["", "a", "x_", "0", "~", "\u{1}"].into_iter().map(String::from);
        for s in examples.chain(plain) {
            if self.contains(&s) == Ok(true) {
                return Some(false);
            }
        }
        None
    }

    /// All strings but finitely many (cheap syntactic check).
    fn is_cofinite(&self) -> bool {
        match self {
            Lang::All => true,
            Lang::Not(x) => matches!(**x, Lang::Set(_) | Lang::Nothing),
            Lang::Len(_, None) => true,
            Lang::And(v) => v.iter().all(|x| x.is_cofinite()),
            Lang::Or(v) => v.iter().any(|x| x.is_cofinite()),
            _ => false,
        }
    }

    /// Negation normal form: `Not` only directly above sets and atoms.
    fn nnf(self, negate: bool) -> Lang {
        match (self, negate) {
            (Lang::Not(x), n) => x.nnf(!n),
            (Lang::And(v), false) => v.into_iter().map(|x| x.nnf(false)).fold(Lang::All, Lang::and),
            (Lang::And(v), true) => v.into_iter().map(|x| x.nnf(true)).fold(Lang::Nothing, Lang::or),
            (Lang::Or(v), false) => v.into_iter().map(|x| x.nnf(false)).fold(Lang::Nothing, Lang::or),
            (Lang::Or(v), true) => v.into_iter().map(|x| x.nnf(true)).fold(Lang::All, Lang::and),
            (x @ (Lang::Len(..) | Lang::All | Lang::Nothing), true) => Lang::not(x),
            (x, true) => Lang::Not(Box::new(x)),
            (x, false) => x,
        }
    }

    /// Disjunctive normal form: a list of conjunctions of literals.
    fn dnf(self) -> Option<Vec<Vec<Lang>>> {
        Some(match self {
            Lang::Nothing => vec![],
            Lang::All => vec![vec![]],
            Lang::Or(v) => {
                let mut out = Vec::new();
                for x in v {
                    out.extend(x.dnf()?);
                    if out.len() > MAX_TERMS {
                        return None;
                    }
                }
                out
            }
            Lang::And(v) => {
                let mut acc: Vec<Vec<Lang>> = vec![vec![]];
                for x in v {
                    let terms = x.dnf()?;
                    let mut next = Vec::new();
                    for a in &acc {
                        for t in &terms {
                            let mut c = a.clone();
                            c.extend(t.iter().cloned());
                            next.push(c);
                        }
                    }
                    if next.len() > MAX_TERMS {
                        return None;
                    }
                    acc = next;
                }
                acc
            }
            lit => vec![vec![lit]],
        })
    }

    /// Lowers the language into pieces. Errors name what was too large.
    pub fn pieces(&self) -> Result<Vec<Piece>, String> {
        let terms = self.clone().nnf(false).dnf().ok_or_else(|| "too many alternatives in the string constraints".to_string())?;
        let mut out: Vec<Piece> = Vec::new();
        for term in terms {
            if let Some(p) = lower_term(term)? {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        if out.contains(&Piece::Any) {
            return Ok(vec![Piece::Any]);
        }
        Ok(out)
    }
}

pub fn set_re(s: &BTreeSet<String>) -> Re {
    Re::alt(s.iter().map(|x| Re::lit(x)).collect())
}

/// Printable ASCII but `"` and `\`: the characters a set complement spells
/// at every trie node (see [`complement_of_set`]).
pub(crate) const SIMPLE_CHARS: [(u32, u32); 3] = [(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)];

pub(crate) use formcast_grammar::trie_node;

/// Longest word, in characters, that "any string but these words" may
/// exclude: the expression of the complement nests once per character of a
/// word (its trie), and grammars nest at most
/// [`formcast_grammar::MAX_NESTING_DEPTH`] levels.
pub const MAX_EXCLUDED_WORD_CHARS: usize = 400;

/// Refuses excluded words longer than [`MAX_EXCLUDED_WORD_CHARS`].
pub fn check_excluded_words(excluded: &BTreeSet<String>) -> Result<(), String> {
    match excluded.iter().find(|w| w.chars().count() > MAX_EXCLUDED_WORD_CHARS) {
        Some(w) => Err(format!(
            "excluding a string of {} characters (a property name or a `not`/`const` value) from the other strings: at most {MAX_EXCLUDED_WORD_CHARS} characters",
            w.chars().count()
        )),
        None => Ok(()),
    }
}

/// All strings except those of `excluded`: leave the trie of the words at
/// some node (then anything), or stop at a node that is not a word.
///
/// Written so that the big character classes appear once: leaving a node
/// with a printable ASCII character is spelled per node, but leaving with
/// any *other* character (non-ASCII, controls, `"` and `\`, which cost many
/// automaton states once UTF-8-encoded and JSON-escaped) is one shared
/// branch after the set of trie prefixes: `E Σ* | Prefixes OTHER Σ* | P`.
pub fn complement_of_set(excluded: &BTreeSet<String>) -> Re {
    const SIMPLE: [(u32, u32); 3] = SIMPLE_CHARS;
    // Returns (exits, prefixes that may leave with any OTHER char, stops).
    fn go(words: &[Vec<char>], depth: usize, other: &[(u32, u32)]) -> (Re, Re, Re) {
        let (terminal, runs) = trie_node(words, depth);
        let used: Vec<(u32, u32)> = runs.iter().map(|&(c, _)| (c as u32, c as u32)).collect();
        let simple_children = runs.iter().all(|&(c, _)| SIMPLE.iter().any(|&(lo, hi)| lo <= c as u32 && c as u32 <= hi));
        let mut exits = vec![Re::chars(crate::re::subtract_ranges(&SIMPLE, &used))];
        let mut shared = Vec::new();
        if simple_children {
            shared.push(Re::Empty);
        } else {
            exits.push(Re::chars(crate::re::subtract_ranges(other, &used)));
        }
        let mut stops = if terminal { vec![] } else { vec![Re::Empty] };
        for (c, sub) in runs {
            let (e, sh, p) = go(sub, depth + 1, other);
            exits.push(Re::seq(vec![Re::char(c), e]));
            shared.push(Re::seq(vec![Re::char(c), sh]));
            stops.push(Re::seq(vec![Re::char(c), p]));
        }
        (Re::alt(exits), Re::alt(shared), Re::alt(stops))
    }
    let words: Vec<Vec<char>> = excluded.iter().map(|w| w.chars().collect()).collect();
    let other = crate::re::complement_ranges(&SIMPLE);
    let (e, shared, p) = go(&words, 0, &other);
    Re::alt(vec![Re::seq(vec![e, Re::any()]), Re::seq(vec![shared, Re::chars(other), Re::any()]), p])
}

fn lower_term(term: Vec<Lang>) -> Result<Option<Piece>, String> {
    let mut min = 0u64;
    let mut max: Option<u64> = None;
    let mut pos_set: Option<BTreeSet<String>> = None;
    let mut excluded: BTreeSet<String> = BTreeSet::new();
    let mut pos_atoms: Vec<Arc<Atom>> = Vec::new();
    let mut neg_atoms: Vec<Arc<Atom>> = Vec::new();
    for lit in &term {
        match lit {
            Lang::All => {}
            Lang::Nothing => return Ok(None),
            Lang::Len(a, b) => {
                min = min.max(*a);
                max = match (max, b) {
                    (Some(x), Some(y)) => Some(x.min(*y)),
                    (x, None) => x,
                    (None, y) => *y,
                };
            }
            Lang::Set(s) => {
                pos_set = Some(match pos_set {
                    None => (**s).clone(),
                    Some(p) => p.intersection(s).cloned().collect(),
                })
            }
            Lang::Atom(a) => pos_atoms.push(a.clone()),
            Lang::Not(x) => match &**x {
                Lang::Set(s) => excluded.extend(s.iter().cloned()),
                Lang::Atom(a) => neg_atoms.push(a.clone()),
                other => unreachable!("not in negation normal form: {other:?}"),
            },
            other => unreachable!("not a literal: {other:?}"),
        }
    }
    if max.is_some_and(|m| m < min) {
        return Ok(None);
    }
    let describe = |e: AutomatonError, atoms: &[Arc<Atom>]| -> String {
        let names: Vec<&str> = atoms.iter().map(|a| a.what.as_str()).collect();
        format!("{e} ({})", if names.is_empty() { "length bounds and excluded values".to_string() } else { names.join(", ") })
    };
    if let Some(set) = pos_set {
        // A finite set: keep the members that satisfy everything else.
        let all = Lang::And(term.iter().filter(|l| !matches!(l, Lang::Set(_))).cloned().collect());
        let mut keep = BTreeSet::new();
        for s in set {
            if all.contains(&s).map_err(|e| describe(e, &pos_atoms))? {
                keep.insert(s);
            }
        }
        return Ok(if keep.is_empty() { None } else { Some(Piece::Content(set_re(&keep))) });
    }
    if pos_atoms.is_empty() && neg_atoms.is_empty() {
        if excluded.is_empty() {
            return Ok(Some(if min == 0 && max.is_none() { Piece::Any } else { Piece::Length(min, max) }));
        }
        if min == 0 && max.is_none() {
            check_excluded_words(&excluded)?;
            return Ok(Some(Piece::Content(complement_of_set(&excluded))));
        }
    }
    if pos_atoms.len() == 1 && neg_atoms.is_empty() && excluded.is_empty() {
        let re = &pos_atoms[0].re;
        match re.len_bounds() {
            None => return Ok(None),
            Some((lo, hi)) => {
                let fits = lo >= min && max.is_none_or(|m| hi.is_some_and(|h| h <= m));
                if fits {
                    return Ok(Some(Piece::Content(re.clone())));
                }
            }
        }
    }
    // General case: intersect automata.
    let mut parts: Vec<Lang> = Vec::new();
    if min > 0 || max.is_some() {
        parts.push(Lang::Len(min, max));
    }
    parts.extend(pos_atoms.iter().cloned().map(Lang::Atom));
    let mut acc = Dfa::universal();
    for p in &parts {
        acc = acc.intersect(&p.dfa().map_err(|e| describe(e, &pos_atoms))?).map_err(|e| describe(e, &pos_atoms))?;
    }
    for a in &neg_atoms {
        acc = acc.difference(&*a.dfa().map_err(|e| describe(e, &neg_atoms))?).map_err(|e| describe(e, &neg_atoms))?;
    }
    if !excluded.is_empty() {
        let ex = Dfa::from_re(&set_re(&excluded)).map_err(|e| describe(e, &[]))?;
        acc = acc.difference(&ex).map_err(|e| describe(e, &[]))?;
    }
    if acc.is_empty_language() {
        return Ok(None);
    }
    let mut all_atoms = pos_atoms.clone();
    all_atoms.extend(neg_atoms.iter().cloned());
    // An automaton of more than a few states goes to the grammar as it is
    // (right-linear rules that the engine builds in place): written as an
    // expression by state elimination it grows to a hundred times its
    // states (the names left over by a `patternProperties` language tag, a
    // 91-state automaton, became 10,000 nodes, then 13,000 DFA states).
    if acc.len() > AUTOMATON_PIECE_MIN_STATES && acc.len() <= crate::automata::MAX_RULE_DFA_STATES {
        let min = acc.minimize();
        if min.len() > AUTOMATON_PIECE_MIN_STATES {
            return Ok(Some(Piece::Automaton(Arc::new(min))));
        }
    }
    match acc.to_re() {
        Ok(re) => Ok(Some(Piece::Content(re))),
        Err(AutomatonError::TooLarge(_)) if acc.len() <= crate::automata::MAX_RULE_DFA_STATES => Ok(Some(Piece::Automaton(Arc::new(acc)))),
        Err(e) => Err(describe(e, &all_atoms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_complement_is_exact() {
        let ex: BTreeSet<String> = ["foo", "fo", "bar"].iter().map(|s| s.to_string()).collect();
        let d = Dfa::from_re(&complement_of_set(&ex)).unwrap();
        for (s, ok) in [("foo", false), ("fo", false), ("bar", false), ("f", true), ("", true), ("fooo", true), ("baz", true), ("x", true)] {
            assert_eq!(d.matches(s), ok, "{s}");
        }
    }

    #[test]
    fn pieces_of_common_shapes() {
        assert_eq!(Lang::All.pieces().unwrap(), vec![Piece::Any]);
        assert_eq!(Lang::len(0, Some(3)).pieces().unwrap(), vec![Piece::Length(0, Some(3))]);
        let a = Lang::Atom(Atom::new(Re::lit("ab"), "pattern".into()));
        // The length bound is implied by the pattern: no automaton needed.
        assert_eq!(Lang::and(a.clone(), Lang::len(1, Some(5))).pieces().unwrap(), vec![Piece::Content(Re::lit("ab"))]);
        assert!(Lang::and(a.clone(), Lang::len(3, None)).pieces().unwrap().is_empty());
        let s = Lang::set(["ab".to_string(), "abc".to_string()]);
        assert_eq!(Lang::and(s, Lang::not(a)).pieces().unwrap(), vec![Piece::Content(Re::lit("abc"))]);
    }
}
