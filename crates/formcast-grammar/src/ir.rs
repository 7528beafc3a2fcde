//! The grammar intermediate representation shared by every front-end.
//!
//! A [`Grammar`] is a list of named rules; each rule's body is an [`Expr`]
//! tree over bytes, Unicode character sets, references to other rules and
//! token-level elements. Text-level elements are matched byte by byte against
//! a token's decoded bytes; token-level elements match whole vocabulary
//! tokens by id (structural tags need them: a `<think>` special token, "any
//! token but EOS", dispatch on a trigger token).

/// Index of a rule in [`Grammar::rules`].
pub type RuleId = u32;
/// A vocabulary token id.
pub type TokenId = u32;

/// Upper bound on Unicode scalar values.
pub const MAX_CHAR: u32 = 0x10FFFF;

/// A grammar expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    /// The empty string.
    Empty,
    /// No string at all (an empty character class, an alternation with no
    /// branch). Front-ends may produce it; the validator rejects grammars
    /// whose root language ends up empty.
    Nothing,
    /// A literal byte string (UTF-8 for text; any bytes are allowed).
    Bytes(Vec<u8>),
    /// One Unicode scalar value from a set of inclusive ranges, matched as its
    /// UTF-8 encoding. Ranges are sorted and non-overlapping (see
    /// [`normalize_ranges`]); negation is resolved by the front-end with
    /// [`complement_ranges`]. Surrogates (U+D800..U+DFFF) never match.
    Chars(Vec<(u32, u32)>),
    /// One raw byte from a set of inclusive byte ranges (byte-level regexes,
    /// `\xHH` escapes inside character classes that denote raw bytes).
    ByteSet(Vec<(u8, u8)>),
    /// A reference to another rule.
    Rule(RuleId),
    /// Concatenation.
    Seq(Vec<Expr>),
    /// Alternation.
    Alt(Vec<Expr>),
    /// Bounded or unbounded repetition: `min..=max` copies (`max: None` means
    /// unbounded).
    Repeat { expr: Box<Expr>, min: u32, max: Option<u32> },
    /// Token-level: exactly this vocabulary token.
    Token(TokenId),
    /// Token-level: exactly one vocabulary token, special tokens included,
    /// that is not in the (sorted, deduplicated) list.
    AnyTokenExcept(Vec<TokenId>),
    /// Any UTF-8 text (possibly empty) that contains none of the given byte
    /// strings as a substring (free text that must stop before an end tag,
    /// XML parameter values...). Compiled directly into an automaton
    /// (Aho–Corasick states × UTF-8 decoding states).
    TextExcluding(Vec<Vec<u8>>),
    /// Token-level dispatch: free tokens (anything but the triggers and the
    /// excluded ids) until a trigger token is generated, which commits to the
    /// body paired with it. With `repeat`, free tokens may follow the body and
    /// further triggers fire again; without it the output ends after the first
    /// body. Lowered by [`Expr::desugar_token_dispatch`].
    TokenDispatch { cases: Vec<(TokenId, Expr)>, excludes: Vec<TokenId>, repeat: bool },
    /// Text-level dispatch: free UTF-8 text scanned by one Aho–Corasick
    /// automaton over the triggers (the byte strings of `cases`) and the
    /// `excludes`. Completing an exclude is a dead end; completing a trigger
    /// commits to the body paired with it (the free text cannot "back out"),
    /// after which free text resumes (`repeat`) or the expression ends. Every
    /// other position between characters may end the expression, including
    /// inside a partial trigger. When one position completes several
    /// patterns, an exclude wins over a trigger and a longer trigger over a
    /// shorter one. Structural tags' `triggered_tags` and `dispatch`.
    TextDispatch { cases: Vec<(Vec<u8>, Expr)>, excludes: Vec<Vec<u8>>, repeat: bool },
    /// [`Expr::TextExcluding`] limited to at most `max_chars` Unicode code
    /// points and/or at most `max_tokens` tokens (structural tags'
    /// `any_text.max_chars` / `max_tokens`). A token counts once if it starts
    /// at least one character of the text: once the budget is spent, the
    /// next token may only finish a character split across tokens or leave
    /// the text. The count advances at token boundaries, which the matcher
    /// signals after every accepted token or string.
    BoundedText { excludes: Vec<Vec<u8>>, max_chars: Option<u32>, max_tokens: Option<u32> },
    /// The texts of `expr` that contain none of `excludes` as a substring of
    /// their bytes (JSON-schema `excludes`). `expr` and every rule it
    /// references must be text-level; rules are expanded in place, so they
    /// may recurse only through tail calls (regular languages written as
    /// right-linear rules).
    ///
    /// With `lazy`, only the texts that end at their first match are kept:
    /// those with no proper, non-empty prefix that is also a text of the
    /// (avoiding) language. A lazy lexeme of llguidance's Lark (`x[lazy]:
    /// /[0-9]+/` is one digit; `x[lazy]: /.*<end>/` stops at the first
    /// `<end>`). The empty prefix does not count, as in llguidance: a lazy
    /// `/.*/` is the empty text or one character.
    Avoiding { expr: Box<Expr>, excludes: Vec<Vec<u8>>, lazy: bool },
    /// Any text that is not one of a set of words, given as their trie (see
    /// [`WordsExcept`]): an open object's undeclared keys.
    WordsExcept(std::sync::Arc<WordsExcept>),
}

/// The texts that leave the trie of `words`. From every node of the trie
/// (every prefix of a word, the empty one included) the text goes on with
/// a byte of `leave` that continues no word there and then `exit`, or with
/// `other`, or, where no word ends, with `stop`; or it steps to a child.
/// A key that may be any string but the declared names is `"` then
/// `leave` = the printable ASCII characters a name is spelled with,
/// `exit` = `Σ* "`, `other` = any other character then `Σ* "`, `stop` =
/// `"`. Kept as words rather than spelled as the trie's expression: a
/// Kubernetes schema's key complements were three quarters of its
/// expression, which every pass walked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WordsExcept {
    /// Sorted, without duplicates.
    pub words: Vec<Vec<u8>>,
    /// Sorted, disjoint byte ranges.
    pub leave: Vec<(u8, u8)>,
    pub exit: Expr,
    pub other: Expr,
    pub stop: Expr,
}

/// A node of a [`WordsExcept`] trie, as [`WordsExcept::nodes`] visits it.
pub struct TrieNode<'w> {
    /// The node's depth (its prefix's length).
    pub depth: usize,
    /// A word ends here.
    pub terminal: bool,
    /// Per child, its byte and the words below it (a run of `words`).
    pub children: TrieChildren<'w, u8>,
}

/// The children of a trie node: each child's symbol with the words below it.
pub type TrieChildren<'w, T> = Vec<(T, &'w [Vec<T>])>;

/// A node of the trie of `words` (sorted, all sharing their first `depth`
/// symbols): whether a word ends there, and each child's symbol with the
/// words below it (a contiguous run, the words being sorted).
pub fn trie_node<T: Copy + PartialEq>(words: &[Vec<T>], depth: usize) -> (bool, TrieChildren<'_, T>) {
    let terminal = words.first().is_some_and(|w| w.len() == depth);
    let below = if terminal { &words[1..] } else { words };
    let mut runs: TrieChildren<'_, T> = Vec::new();
    let mut k = 0;
    while k < below.len() {
        let c = below[k][depth];
        let end = k + below[k..].partition_point(|w| w[depth] == c);
        runs.push((c, &below[k..end]));
        k = end;
    }
    (terminal, runs)
}

impl WordsExcept {
    /// Calls `f` for every node, depth first (a node before its children),
    /// with an explicit stack: a word may be long. `f` returns what the
    /// node's children get from it (a parent state, say).
    pub fn nodes<T: Clone>(&self, root: T, mut f: impl FnMut(&TrieNode<'_>, &T) -> Vec<T>) {
        let mut stack: Vec<(&[Vec<u8>], usize, T)> = vec![(&self.words[..], 0, root)];
        while let Some((words, depth, from)) = stack.pop() {
            let (terminal, children) = trie_node(words, depth);
            let node = TrieNode { depth, terminal, children };
            let given = f(&node, &from);
            for ((_, sub), t) in node.children.iter().zip(given).rev() {
                stack.push((sub, depth + 1, t));
            }
        }
    }

    /// Whether some node is not a word (where `stop` may follow).
    pub fn has_open_node(&self) -> bool {
        if self.words.first().is_none_or(|w| !w.is_empty()) {
            return true; // the root
        }
        let mut open = false;
        self.nodes((), |n, _| {
            open |= !n.terminal;
            vec![(); n.children.len()]
        });
        open
    }

    /// Whether some node can be left with a byte of `leave`.
    pub fn has_exit(&self) -> bool {
        let mut exit = false;
        self.nodes((), |n, _| {
            exit |= self.leave.iter().any(|&(lo, hi)| (lo..=hi).any(|b| !n.children.iter().any(|&(c, _)| c == b)));
            vec![(); n.children.len()]
        });
        exit
    }
}

/// A named rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub name: String,
    pub body: Expr,
    /// A helper of a right-linear group (one rule per state of an
    /// automaton, `q ::= a q1 | b q2 | ε`): where another rule references it
    /// as its last step, the engine builds its body in place, once per
    /// automaton, instead of calling it — so the group becomes one automaton
    /// of about its own size rather than a call per character.
    pub inline: bool,
    /// A lexeme of a lexed grammar (Lark read as llguidance reads it):
    /// the parser then follows llguidance's lexer (see [`Lexeme`]). Its
    /// body must be text without rule calls that are not expanded in place
    /// (wrap it in [`Expr::Avoiding`] if it has them).
    pub lexeme: Option<Lexeme>,
}

/// How the engine cuts a lexeme (see [`Rule::lexeme`]). In a grammar with
/// lexemes, every lexeme starting at one position competes with the
/// others there:
/// * a lexeme is *greedy* — while one of them can take the next byte, none
///   that matched so far ends (the lexeme is as long as it can be);
/// * a *lazy* lexeme ends at its first match, and ends the others: when
///   one matches, the lexemes still going (lazy or not) are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lexeme {
    Greedy,
    /// The body must be an [`Expr::lazy`] expression.
    Lazy,
    /// Skipped text (Lark's `%ignore`), greedy: where the text could end
    /// and another lexeme could follow, it may also end after skipped
    /// lexemes (as llguidance takes trailing skipped text there).
    Skip,
}

impl Rule {
    pub fn new(name: impl Into<String>, body: Expr) -> Rule {
        Rule { name: name.into(), body, inline: false, lexeme: None }
    }
}

/// A complete grammar: rules plus the id of the start rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grammar {
    pub rules: Vec<Rule>,
    pub root: RuleId,
}

impl Expr {
    /// The texts of `e` that end at their first match (see
    /// [`Expr::Avoiding`]'s `lazy`).
    pub fn lazy(e: Expr) -> Expr {
        Expr::Avoiding { expr: Box::new(e), excludes: Vec::new(), lazy: true }
    }

    /// `lit` as a byte-string expression.
    pub fn literal(lit: &str) -> Expr {
        if lit.is_empty() {
            Expr::Empty
        } else {
            Expr::Bytes(lit.as_bytes().to_vec())
        }
    }

    /// Zero or more repetitions.
    pub fn star(e: Expr) -> Expr {
        Expr::Repeat { expr: Box::new(e), min: 0, max: None }
    }

    /// One or more repetitions.
    pub fn plus(e: Expr) -> Expr {
        Expr::Repeat { expr: Box::new(e), min: 1, max: None }
    }

    /// Zero or one occurrence.
    pub fn optional(e: Expr) -> Expr {
        Expr::Repeat { expr: Box::new(e), min: 0, max: Some(1) }
    }

    /// The primitive form of a [`Expr::TokenDispatch`]:
    /// with `repeat`: `(free | t1 e1 | t2 e2 ...)*`;
    /// without: `free* (t1 e1 | t2 e2 ...)?`,
    /// where `free` is any token except the triggers and the excludes.
    pub fn desugar_token_dispatch(cases: &[(TokenId, Expr)], excludes: &[TokenId], repeat: bool) -> Expr {
        let mut blocked: Vec<TokenId> = cases.iter().map(|(t, _)| *t).chain(excludes.iter().copied()).collect();
        blocked.sort_unstable();
        blocked.dedup();
        let free = Expr::AnyTokenExcept(blocked);
        let bodies: Vec<Expr> = cases
            .iter()
            .map(|(t, e)| Expr::Seq(vec![Expr::Token(*t), e.clone()]))
            .collect();
        if repeat {
            let mut alts = vec![free];
            alts.extend(bodies);
            Expr::star(Expr::Alt(alts))
        } else {
            Expr::Seq(vec![Expr::star(free), Expr::optional(Expr::Alt(bodies))])
        }
    }
}

impl Expr {
    /// Rewrites every rule reference `r` to `map[r]`.
    pub fn remap_rules(&mut self, map: &[RuleId]) {
        match self {
            Expr::Rule(r) => *r = map[*r as usize],
            Expr::Seq(v) | Expr::Alt(v) => v.iter_mut().for_each(|x| x.remap_rules(map)),
            Expr::Repeat { expr, .. } | Expr::Avoiding { expr, .. } => expr.remap_rules(map),
            Expr::TokenDispatch { cases, .. } => cases.iter_mut().for_each(|(_, x)| x.remap_rules(map)),
            Expr::TextDispatch { cases, .. } => cases.iter_mut().for_each(|(_, x)| x.remap_rules(map)),
            Expr::WordsExcept(w) => {
                let w = std::sync::Arc::make_mut(w);
                for x in [&mut w.exit, &mut w.other, &mut w.stop] {
                    x.remap_rules(map);
                }
            }
            _ => {}
        }
    }

    /// Hashes `self` into `h` (consistently with `==`: equal expressions
    /// hash alike) and appends the rules it references to `refs`, in one
    /// walk: [`Grammar::merge_duplicate_rules`] needs both of every body.
    fn hash_and_refs<H: std::hash::Hasher>(&self, h: &mut H, refs: &mut Vec<RuleId>) {
        use std::hash::Hash;
        std::mem::discriminant(self).hash(h);
        match self {
            Expr::Rule(r) => {
                r.hash(h);
                refs.push(*r);
            }
            Expr::Seq(v) | Expr::Alt(v) => {
                v.len().hash(h);
                v.iter().for_each(|x| x.hash_and_refs(h, refs));
            }
            Expr::Repeat { expr, min, max } => {
                (min, max).hash(h);
                expr.hash_and_refs(h, refs);
            }
            Expr::Avoiding { expr, excludes, lazy } => {
                (excludes, lazy).hash(h);
                expr.hash_and_refs(h, refs);
            }
            Expr::TokenDispatch { cases, excludes, repeat } => {
                (excludes, repeat, cases.len()).hash(h);
                for (t, x) in cases {
                    t.hash(h);
                    x.hash_and_refs(h, refs);
                }
            }
            Expr::TextDispatch { cases, excludes, repeat } => {
                (excludes, repeat, cases.len()).hash(h);
                for (t, x) in cases {
                    t.hash(h);
                    x.hash_and_refs(h, refs);
                }
            }
            Expr::WordsExcept(w) => {
                (&w.words, &w.leave).hash(h);
                for x in [&w.exit, &w.other, &w.stop] {
                    x.hash_and_refs(h, refs);
                }
            }
            // Leaves: no references.
            leaf => leaf.hash(h),
        }
    }

    /// The triggers of the [`Expr::TextDispatch`]es in `self`, in order
    /// (with repeats; rules referenced are not followed).
    pub fn text_triggers<'e>(&'e self, out: &mut Vec<&'e [u8]>) {
        match self {
            Expr::TextDispatch { cases, .. } => {
                for (trigger, body) in cases {
                    out.push(trigger);
                    body.text_triggers(out);
                }
            }
            Expr::Seq(v) | Expr::Alt(v) => v.iter().for_each(|x| x.text_triggers(out)),
            Expr::Repeat { expr, .. } | Expr::Avoiding { expr, .. } => expr.text_triggers(out),
            Expr::TokenDispatch { cases, .. } => cases.iter().for_each(|(_, x)| x.text_triggers(out)),
            Expr::WordsExcept(w) => [&w.exit, &w.other, &w.stop].into_iter().for_each(|x| x.text_triggers(out)),
            _ => {}
        }
    }

    /// The rules `self` references, in order (with repeats).
    pub fn rule_refs(&self, out: &mut Vec<RuleId>) {
        match self {
            Expr::Rule(r) => out.push(*r),
            Expr::Seq(v) | Expr::Alt(v) => v.iter().for_each(|x| x.rule_refs(out)),
            Expr::Repeat { expr, .. } | Expr::Avoiding { expr, .. } => expr.rule_refs(out),
            Expr::TokenDispatch { cases, .. } => cases.iter().for_each(|(_, x)| x.rule_refs(out)),
            Expr::TextDispatch { cases, .. } => cases.iter().for_each(|(_, x)| x.rule_refs(out)),
            Expr::WordsExcept(w) => [&w.exit, &w.other, &w.stop].into_iter().for_each(|x| x.rule_refs(out)),
            _ => {}
        }
    }
}

impl Grammar {
    /// Merges rules with equal bodies (and, as merged references make more
    /// bodies equal, their referrers in turn): a JSON Schema that defines
    /// the same object under several names, or reaches one definition
    /// through several `$ref` paths, compiles each automaton once. Merged
    /// rules are left unreferenced with an empty body. Each body is hashed
    /// once, and again only when a rule it references is merged. The walks
    /// recurse over bodies: check the grammar with
    /// [`check_depth`](crate::check_depth) (or [`validate`](crate::validate)) first.
    pub fn merge_duplicate_rules(&mut self) {
        use std::hash::{Hash, Hasher};
        let n = self.rules.len();
        // A rule's hash and references, in one walk of its body.
        let digest = |r: &Rule, refs: &mut Vec<RuleId>| {
            let mut h = rustc_hash::FxHasher::default();
            r.body.hash_and_refs(&mut h, refs);
            r.inline.hash(&mut h);
            r.lexeme.hash(&mut h);
            h.finish()
        };
        // The hash of each rule's current body, until a merge rewrites it.
        let mut body_hash: Vec<Option<u64>> = Vec::with_capacity(n);
        let mut referrers: Vec<Vec<RuleId>> = vec![Vec::new(); n];
        let mut refs = Vec::new();
        for (q, rule) in self.rules.iter().enumerate() {
            refs.clear();
            body_hash.push(Some(digest(rule, &mut refs)));
            refs.sort_unstable();
            refs.dedup();
            for &r in &refs {
                if let Some(v) = referrers.get_mut(r as usize) {
                    v.push(q as RuleId);
                }
            }
        }
        let mut rep: Vec<RuleId> = (0..n as RuleId).collect();
        // Live rules by body hash; `hashed[r]`: r is in its bucket.
        let mut buckets: rustc_hash::FxHashMap<u64, Vec<RuleId>> = Default::default();
        let mut hashed: Vec<Option<u64>> = vec![None; n];
        let mut todo: std::collections::VecDeque<RuleId> = (0..n as RuleId).collect();
        while let Some(r) = todo.pop_front() {
            let ru = r as usize;
            if rep[ru] != r || hashed[ru].is_some() {
                continue;
            }
            let h = match body_hash[ru] {
                Some(h) => h,
                None => {
                    refs.clear();
                    let h = digest(&self.rules[ru], &mut refs);
                    body_hash[ru] = Some(h);
                    h
                }
            };
            let bucket = buckets.entry(h).or_default();
            let twin = bucket.iter().copied().find(|&o| self.rules[o as usize].body == self.rules[ru].body && self.rules[o as usize].inline == self.rules[ru].inline && self.rules[o as usize].lexeme == self.rules[ru].lexeme);
            let Some(to) = twin else {
                bucket.push(r);
                hashed[ru] = Some(h);
                continue;
            };
            rep[ru] = to;
            for q in std::mem::take(&mut referrers[ru]) {
                let qu = q as usize;
                if rep[qu] != q {
                    continue;
                }
                if let Some(old) = hashed[qu].take() {
                    if let Some(b) = buckets.get_mut(&old) {
                        b.retain(|&x| x != q);
                    }
                }
                self.rules[qu].body.remap_rules(&rep);
                body_hash[qu] = None;
                referrers[to as usize].push(q);
                todo.push_back(q);
            }
        }
        for (r, rule) in self.rules.iter_mut().enumerate() {
            if rep[r] != r as RuleId {
                rule.body = Expr::Nothing;
                rule.inline = false;
            }
        }
        let mut root = self.root;
        while rep[root as usize] != root {
            root = rep[root as usize];
        }
        self.root = root;
    }

    /// Looks a rule up by name.
    pub fn rule_id(&self, name: &str) -> Option<RuleId> {
        self.rules.iter().position(|r| r.name == name).map(|i| i as RuleId)
    }

    /// The start rule.
    pub fn root_rule(&self) -> &Rule {
        &self.rules[self.root as usize]
    }
}

/// Sorts and merges inclusive ranges (adjacent ranges are merged too).
pub fn normalize_ranges(mut ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    ranges.retain(|(lo, hi)| lo <= hi);
    ranges.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// The complement of a set of code-point ranges within `0..=MAX_CHAR`.
pub fn complement_ranges(ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let norm = normalize_ranges(ranges.to_vec());
    let mut out = Vec::new();
    let mut next = 0u32;
    for (lo, hi) in norm {
        if lo > next {
            out.push((next, lo - 1));
        }
        next = hi.saturating_add(1);
    }
    if next <= MAX_CHAR {
        out.push((next, MAX_CHAR));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_complement() {
        assert_eq!(normalize_ranges(vec![(5, 9), (1, 3), (4, 4), (20, 10)]), vec![(1, 9)]);
        assert_eq!(complement_ranges(&[(0, 9), (11, MAX_CHAR)]), vec![(10, 10)]);
        assert_eq!(complement_ranges(&[]), vec![(0, MAX_CHAR)]);
    }

    #[test]
    fn token_dispatch_desugars_to_primitives() {
        let e = Expr::desugar_token_dispatch(&[(7, Expr::literal("x"))], &[2], true);
        match e {
            Expr::Repeat { expr, min: 0, max: None } => match *expr {
                Expr::Alt(alts) => assert_eq!(alts[0], Expr::AnyTokenExcept(vec![2, 7])),
                other => panic!("unexpected {other:?}"),
            },
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[cfg(test)]
mod merge_tests {
    use super::*;

    #[test]
    fn equal_rules_merge_and_so_do_their_referrers() {
        let lit = Expr::literal;
        let mut g = Grammar {
            rules: vec![
                Rule::new("root", Expr::Seq(vec![Expr::Rule(1), Expr::Rule(2)])),
                Rule::new("a1", Expr::Seq(vec![lit("a"), Expr::Rule(3)])),
                Rule::new("a2", Expr::Seq(vec![lit("a"), Expr::Rule(4)])),
                Rule::new("x1", lit("x")),
                Rule::new("x2", lit("x")),
                Rule::new("y", lit("y")),
            ],
            root: 0,
        };
        g.rules[5].inline = true;
        g.merge_duplicate_rules();
        assert_eq!(g.rules[0].body, Expr::Seq(vec![Expr::Rule(1), Expr::Rule(1)]));
        assert_eq!(g.rules[1].body, Expr::Seq(vec![lit("a"), Expr::Rule(3)]));
        assert_eq!((&g.rules[2].body, &g.rules[4].body), (&Expr::Nothing, &Expr::Nothing));
        assert_eq!(g.rules[5].body, lit("y"));
        assert_eq!(g.root, 0);
    }

    fn words_except(words: &[&str], exit: Expr) -> Expr {
        Expr::WordsExcept(std::sync::Arc::new(WordsExcept {
            words: words.iter().map(|w| w.as_bytes().to_vec()).collect(),
            leave: vec![(b'a', b'z')],
            exit,
            other: Expr::Nothing,
            stop: Expr::literal("\""),
        }))
    }

    #[test]
    fn merging_reaches_the_references_inside_a_trie_of_words() {
        // k1 and k2 differ only by which of two equal rules they leave to:
        // once x2 merges into x1, they are equal too.
        let mut g = Grammar {
            rules: vec![
                Rule::new("root", Expr::Alt(vec![Expr::Rule(1), Expr::Rule(2)])),
                Rule::new("k1", words_except(&["ab", "b"], Expr::Rule(3))),
                Rule::new("k2", words_except(&["ab", "b"], Expr::Rule(4))),
                Rule::new("x1", Expr::literal("x")),
                Rule::new("x2", Expr::literal("x")),
            ],
            root: 0,
        };
        g.merge_duplicate_rules();
        assert_eq!(g.rules[0].body, Expr::Alt(vec![Expr::Rule(1), Expr::Rule(1)]));
        assert_eq!(g.rules[1].body, words_except(&["ab", "b"], Expr::Rule(3)));
        assert_eq!((&g.rules[2].body, &g.rules[4].body), (&Expr::Nothing, &Expr::Nothing));
        let mut refs = Vec::new();
        g.rules[1].body.rule_refs(&mut refs);
        assert_eq!(refs, vec![3]);
    }

    #[test]
    fn a_trie_of_words_knows_where_it_may_stop_and_leave() {
        let w = |words: &[&str], leave: Vec<(u8, u8)>| WordsExcept {
            words: words.iter().map(|w| w.as_bytes().to_vec()).collect(),
            leave,
            exit: Expr::Empty,
            other: Expr::Nothing,
            stop: Expr::Empty,
        };
        // Every node of {"", "a"} is a word; of {"ab"}, none is.
        assert!(!w(&["", "a"], vec![]).has_open_node());
        assert!(w(&["", "ab"], vec![]).has_open_node());
        assert!(w(&[], vec![]).has_open_node());
        // Left by a byte of `leave` that no child takes there: a leaf takes
        // none, so only an empty `leave` or a trie of no leaf (none exists)
        // cannot be left.
        assert!(!w(&["a"], vec![]).has_exit());
        assert!(w(&["", "a"], vec![(b'a', b'a')]).has_exit(), "the node \"a\" has no child");
        assert!(w(&[], vec![(b'a', b'a')]).has_exit());
    }
}
