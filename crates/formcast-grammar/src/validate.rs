//! Whole-grammar checks run after a front-end built a [`Grammar`]: every
//! reference resolves, the root exists, expressions are well formed and not
//! too deep, and the root's language is non-empty.
//!
//! Unreachable rules are not checked for productivity: a grammar may carry
//! helper rules it does not use.

use crate::ir::MAX_CHAR;
use crate::{Expr, Grammar, GrammarError, MAX_NESTING_DEPTH};

/// Checks a grammar; front-ends call it before returning.
///
/// Errors: [`GrammarError::MissingRoot`] if the root id is out of range,
/// [`GrammarError::Invalid`] for dangling rule ids or malformed expressions
/// (unsorted or out-of-range character ranges, `min > max` repetitions,
/// unsorted token lists), [`GrammarError::Limit`] for expressions nested
/// deeper than [`MAX_NESTING_DEPTH`], and [`GrammarError::EmptyLanguage`] if
/// the root cannot derive any finite string.
pub fn validate(grammar: &Grammar) -> Result<(), GrammarError> {
    let n = grammar.rules.len();
    if grammar.root as usize >= n {
        return Err(GrammarError::MissingRoot(format!("#{}", grammar.root)));
    }
    // Each rule's references, collected by the structural walk (a large
    // grammar's expression is walked once less).
    let mut refs: Vec<Vec<usize>> = Vec::with_capacity(n);
    for rule in &grammar.rules {
        let mut r = Vec::new();
        check_structure(&rule.name, &rule.body, n, &mut r)?;
        r.sort_unstable();
        r.dedup();
        refs.push(r);
    }
    let productive = productive_rules(grammar, &refs);
    if !productive[grammar.root as usize] {
        return Err(GrammarError::EmptyLanguage(explain_empty(grammar, &productive, &refs)));
    }
    Ok(())
}

/// Checks only that no rule is nested deeper than [`MAX_NESTING_DEPTH`]
/// (an explicit-stack walk): the passes that recurse over expressions
/// ([`Grammar::merge_duplicate_rules`](crate::Grammar::merge_duplicate_rules),
/// hashing, equality) may run after it, before the full [`validate`].
pub fn check_depth(grammar: &Grammar) -> Result<(), GrammarError> {
    let mut stack: Vec<(&Expr, usize)> = Vec::new();
    for rule in &grammar.rules {
        stack.push((&rule.body, 1));
        while let Some((e, depth)) = stack.pop() {
            if depth > MAX_NESTING_DEPTH {
                return Err(GrammarError::Limit(format!("rule '{}' is nested deeper than {MAX_NESTING_DEPTH} levels", rule.name)));
            }
            match e {
                Expr::Seq(items) | Expr::Alt(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
                Expr::Repeat { expr, .. } | Expr::Avoiding { expr, .. } => stack.push((expr, depth + 1)),
                Expr::WordsExcept(w) => stack.extend([(&w.exit, depth + 1), (&w.other, depth + 1), (&w.stop, depth + 1)]),
                Expr::TokenDispatch { cases, .. } => stack.extend(cases.iter().map(|(_, e)| (e, depth + 2))),
                Expr::TextDispatch { cases, .. } => stack.extend(cases.iter().map(|(_, e)| (e, depth + 2))),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Structural checks, done with an explicit stack because the depth is not
/// known to be bounded yet; the rule ids referenced go to `refs`.
fn check_structure(name: &str, body: &Expr, n_rules: usize, refs: &mut Vec<usize>) -> Result<(), GrammarError> {
    let invalid = |what: String| GrammarError::Invalid(format!("rule '{name}' {what}"));
    let mut stack = vec![(body, 1usize)];
    while let Some((e, depth)) = stack.pop() {
        if depth > MAX_NESTING_DEPTH {
            return Err(GrammarError::Limit(format!(
                "rule '{name}' is nested deeper than {MAX_NESTING_DEPTH} levels"
            )));
        }
        match e {
            Expr::Empty
            | Expr::Nothing
            | Expr::Bytes(_)
            | Expr::Token(_)
            | Expr::TextExcluding(_)
            | Expr::BoundedText { .. } => {}
            Expr::TextDispatch { cases, .. } => stack.extend(cases.iter().map(|(_, e)| (e, depth + 2))),
            Expr::WordsExcept(w) => {
                if !w.words.windows(2).all(|p| p[0] < p[1]) {
                    return Err(invalid("lists its trie's words unsorted or twice".into()));
                }
                if !w.leave.windows(2).all(|p| p[0].1 < p[1].0) || w.leave.iter().any(|&(lo, hi)| lo > hi) {
                    return Err(invalid("has byte ranges out of order".into()));
                }
                stack.extend([(&w.exit, depth + 1), (&w.other, depth + 1), (&w.stop, depth + 1)]);
            }
            Expr::Avoiding { expr, excludes, .. } => {
                if excludes.iter().any(|x| x.is_empty()) {
                    return Err(invalid("excludes the empty string (no text would be left)".into()));
                }
                stack.push((expr, depth + 1));
            }
            Expr::Rule(id) => {
                if *id as usize >= n_rules {
                    return Err(invalid(format!(
                        "references rule #{id}, but the grammar has only {n_rules} rules"
                    )));
                }
                refs.push(*id as usize);
            }
            Expr::Chars(ranges) => {
                let mut prev: Option<u32> = None;
                for &(lo, hi) in ranges {
                    if lo > hi || hi > MAX_CHAR || prev.is_some_and(|p| lo <= p) {
                        return Err(invalid(format!(
                            "has character ranges that are not sorted, disjoint and within U+0000..U+10FFFF: {ranges:X?}"
                        )));
                    }
                    prev = Some(hi);
                }
            }
            Expr::ByteSet(ranges) => {
                if let Some((lo, hi)) = ranges.iter().find(|(lo, hi)| lo > hi) {
                    return Err(invalid(format!("has an invalid byte range {lo:#04X}-{hi:#04X}")));
                }
            }
            Expr::AnyTokenExcept(ids) => {
                if ids.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(invalid(
                        "has a token exclusion list that is not sorted and deduplicated".into(),
                    ));
                }
            }
            Expr::Seq(items) | Expr::Alt(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
            Expr::Repeat { expr, min, max } => {
                if let Some(max) = max {
                    if min > max {
                        return Err(invalid(format!(
                            "has a repetition whose minimum {min} is greater than its maximum {max}"
                        )));
                    }
                }
                stack.push((expr, depth + 1));
            }
            Expr::TokenDispatch { cases, excludes, .. } => {
                if excludes.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(invalid(
                        "has a token exclusion list that is not sorted and deduplicated".into(),
                    ));
                }
                stack.extend(cases.iter().map(|(_, e)| (e, depth + 2)));
            }
        }
    }
    Ok(())
}

/// Whether `e` derives at least one finite string, given which rules do.
/// Recursion depth is bounded by [`check_structure`].
fn derives(e: &Expr, rule_ok: &dyn Fn(usize) -> bool) -> bool {
    match e {
        // TextExcluding always derives the empty text.
        Expr::Empty | Expr::Bytes(_) | Expr::Token(_) | Expr::TextExcluding(_) | Expr::BoundedText { .. } => true,
        // Free text may stop before any trigger.
        Expr::TextDispatch { .. } => true,
        // Whether a token exists outside the list depends on the vocabulary;
        // dispatch always accepts the empty run of free tokens.
        Expr::AnyTokenExcept(_) | Expr::TokenDispatch { .. } => true,
        Expr::Nothing => false,
        Expr::Chars(ranges) => ranges.iter().any(|&(lo, hi)| lo < 0xD800 || hi > 0xDFFF),
        Expr::ByteSet(ranges) => !ranges.is_empty(),
        Expr::Rule(id) => rule_ok(*id as usize),
        // Plain loops: iterator adapters cost several frames per level in
        // debug builds.
        Expr::Seq(items) => {
            for item in items {
                if !derives(item, rule_ok) {
                    return false;
                }
            }
            true
        }
        Expr::Alt(items) => {
            for item in items {
                if derives(item, rule_ok) {
                    return true;
                }
            }
            false
        }
        Expr::Repeat { expr, min, .. } => *min == 0 || derives(expr, rule_ok),
        // An over-approximation: whether some text of `expr` avoids the
        // excludes is only known once the automaton is built, and the engine
        // reports an empty language then.
        Expr::Avoiding { expr, .. } => derives(expr, rule_ok),
        // `other` may follow the root; `stop` a node that is not a word;
        // `exit` a byte of `leave` that continues no word.
        Expr::WordsExcept(w) => {
            derives(&w.other, rule_ok) || (derives(&w.stop, rule_ok) && w.has_open_node()) || (derives(&w.exit, rule_ok) && w.has_exit())
        }
    }
}

/// The rules that derive at least one finite string (least fixpoint, with a
/// worklist so that long chains of rules stay linear), given each rule's
/// references.
fn productive_rules(grammar: &Grammar, refs: &[Vec<usize>]) -> Vec<bool> {
    let n = grammar.rules.len();
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, rs) in refs.iter().enumerate() {
        for &r in rs {
            users[r].push(i);
        }
    }
    let mut productive = vec![false; n];
    let mut work: Vec<usize> = (0..n).rev().collect();
    while let Some(r) = work.pop() {
        if productive[r] {
            continue;
        }
        let ok = derives(&grammar.rules[r].body, &|id| productive[id]);
        if ok {
            productive[r] = true;
            work.extend(users[r].iter().copied().filter(|&u| !productive[u]));
        }
    }
    productive
}

fn quote_list(names: &[&str]) -> String {
    const SHOWN: usize = 8;
    let mut s = names
        .iter()
        .take(SHOWN)
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

/// Explains why the root derives nothing: either some rule it needs requires
/// an empty set (a dead end), or rules it needs only ever recurse (a cycle).
/// `refs`: each rule's references, sorted.
fn explain_empty(grammar: &Grammar, productive: &[bool], refs: &[Vec<usize>]) -> String {
    let root = grammar.root as usize;
    let n = grammar.rules.len();
    // Unproductive rules reachable from the root through unproductive rules,
    // with the edges between them.
    let mut in_set = vec![false; n];
    let mut order = vec![root];
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    in_set[root] = true;
    let mut i = 0;
    while i < order.len() {
        let r = order[i];
        i += 1;
        for &t in refs[r].iter().filter(|&&t| !productive[t]) {
            edges[r].push(t);
            if !in_set[t] {
                in_set[t] = true;
                order.push(t);
            }
        }
    }
    let name = |r: usize| grammar.rules[r].name.as_str();
    let root_note = |culprits: &[usize], pronoun: &str| {
        if culprits.contains(&root) {
            String::new()
        } else {
            format!("; rule '{}' cannot match without {pronoun}", name(root))
        }
    };

    let dead: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&r| !derives(&grammar.rules[r].body, &|_| true))
        .collect();
    if !dead.is_empty() {
        let names: Vec<&str> = dead.iter().map(|&r| name(r)).collect();
        return if dead.len() == 1 {
            format!(
                "rule '{}' can never match anything (it requires an empty character class or an empty alternation){}",
                names[0],
                root_note(&dead, "it")
            )
        } else {
            format!(
                "rules {} can never match anything (each requires an empty character class or an empty alternation){}",
                quote_list(&names),
                root_note(&dead, "them")
            )
        };
    }

    // No dead end, so every rule in the set needs another one of the set:
    // strip the rules that no cycle leads back to (in-degree zero) to keep
    // the ones that actually loop.
    let mut indegree = vec![0usize; n];
    for &r in &order {
        for &t in &edges[r] {
            indegree[t] += 1;
        }
    }
    let mut alive = in_set.clone();
    let mut queue: Vec<usize> = order.iter().copied().filter(|&r| indegree[r] == 0).collect();
    while let Some(r) = queue.pop() {
        alive[r] = false;
        for &t in &edges[r] {
            indegree[t] -= 1;
            if indegree[t] == 0 {
                queue.push(t);
            }
        }
    }
    let cycle: Vec<usize> = order.iter().copied().filter(|&r| alive[r]).collect();
    match cycle.len() {
        0 => format!("rule '{}' cannot derive any finite string", name(root)),
        1 => format!(
            "rule '{0}' can never finish (every alternative needs '{0}' again){1}",
            name(cycle[0]),
            root_note(&cycle, "it")
        ),
        _ => {
            let names: Vec<&str> = cycle.iter().map(|&r| name(r)).collect();
            format!(
                "rules {} can never finish (every alternative of each needs one of them again){}",
                quote_list(&names),
                root_note(&cycle, "them")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rule;

    fn grammar(rules: Vec<(&str, Expr)>) -> Grammar {
        Grammar {
            rules: rules
                .into_iter()
                .map(|(n, body)| Rule::new(n, body))
                .collect(),
            root: 0,
        }
    }

    fn empty_msg(g: &Grammar) -> String {
        match validate(g) {
            Err(GrammarError::EmptyLanguage(m)) => m,
            other => panic!("expected EmptyLanguage, got {other:?}"),
        }
    }

    #[test]
    fn accepts_productive_recursion() {
        // a ::= "x" a | "y"
        let g = grammar(vec![
            ("root", Expr::Rule(1)),
            (
                "a",
                Expr::Alt(vec![
                    Expr::Seq(vec![Expr::literal("x"), Expr::Rule(1)]),
                    Expr::literal("y"),
                ]),
            ),
        ]);
        assert_eq!(validate(&g), Ok(()));
    }

    #[test]
    fn self_loop_is_named() {
        let g = grammar(vec![
            ("root", Expr::Rule(1)),
            ("a", Expr::Seq(vec![Expr::literal("x"), Expr::Rule(1)])),
        ]);
        assert_eq!(
            empty_msg(&g),
            "rule 'a' can never finish (every alternative needs 'a' again); rule 'root' cannot match without it"
        );
    }

    #[test]
    fn longer_cycle_is_named() {
        let g = grammar(vec![
            ("root", Expr::Seq(vec![Expr::literal("<"), Expr::Rule(1)])),
            ("a", Expr::Rule(2)),
            (
                "b",
                Expr::Alt(vec![Expr::Rule(1), Expr::Seq(vec![Expr::literal("b"), Expr::Rule(2)])]),
            ),
            ("unused", Expr::Nothing),
        ]);
        let msg = empty_msg(&g);
        assert!(msg.starts_with("rules 'a', 'b' can never finish"), "{msg}");
    }

    #[test]
    fn dead_end_is_named() {
        let g = grammar(vec![("root", Expr::Seq(vec![Expr::literal("x"), Expr::Chars(vec![])]))]);
        assert_eq!(
            empty_msg(&g),
            "rule 'root' can never match anything (it requires an empty character class or an empty alternation)"
        );
        let g = grammar(vec![("root", Expr::Alt(vec![]))]);
        assert!(empty_msg(&g).starts_with("rule 'root' can never match anything"));
        // Surrogates alone match nothing.
        let g = grammar(vec![("root", Expr::Chars(vec![(0xD800, 0xDFFF)]))]);
        assert!(empty_msg(&g).starts_with("rule 'root' can never match anything"));
    }

    #[test]
    fn unreachable_unproductive_rules_are_ignored() {
        let g = grammar(vec![("root", Expr::literal("ok")), ("dead", Expr::Nothing)]);
        assert_eq!(validate(&g), Ok(()));
        // Reachable but optional is fine too.
        let g = grammar(vec![("root", Expr::optional(Expr::Rule(1))), ("dead", Expr::Rule(1))]);
        assert_eq!(validate(&g), Ok(()));
    }

    #[test]
    fn long_chain_is_linear() {
        // rule i ::= rule i+1, last ::= "x": the worklist handles 100k rules.
        let n = 100_000u32;
        let mut rules: Vec<(String, Expr)> = (0..n - 1).map(|i| (format!("r{i}"), Expr::Rule(i + 1))).collect();
        rules.push(("last".into(), Expr::literal("x")));
        let g = Grammar {
            rules: rules.into_iter().map(|(name, body)| Rule::new(name, body)).collect(),
            root: 0,
        };
        assert_eq!(validate(&g), Ok(()));
    }

    #[test]
    fn structural_errors() {
        let g = grammar(vec![("root", Expr::Rule(7))]);
        assert!(matches!(validate(&g), Err(GrammarError::Invalid(m)) if m.contains("references rule #7")));
        let g = Grammar { rules: vec![], root: 0 };
        assert_eq!(validate(&g), Err(GrammarError::MissingRoot("#0".into())));
        let g = grammar(vec![(
            "root",
            Expr::Repeat {
                expr: Box::new(Expr::literal("a")),
                min: 3,
                max: Some(2),
            },
        )]);
        assert!(matches!(validate(&g), Err(GrammarError::Invalid(m)) if m.contains("minimum 3")));
        let g = grammar(vec![("root", Expr::Chars(vec![(5, 9), (1, 2)]))]);
        assert!(matches!(validate(&g), Err(GrammarError::Invalid(_))));
        let g = grammar(vec![("root", Expr::AnyTokenExcept(vec![3, 3]))]);
        assert!(matches!(validate(&g), Err(GrammarError::Invalid(_))));
    }

    #[test]
    fn too_deep_is_a_limit_error() {
        let mut e = Expr::literal("x");
        for _ in 0..MAX_NESTING_DEPTH + 5 {
            e = Expr::Seq(vec![Expr::literal("a"), e]);
        }
        let g = grammar(vec![("root", e)]);
        assert!(matches!(validate(&g), Err(GrammarError::Limit(_))));
    }

    #[test]
    fn a_trie_of_words_is_checked_and_may_be_empty() {
        let trie = |words: &[&str], stop: Expr| {
            Expr::WordsExcept(std::sync::Arc::new(crate::WordsExcept {
                words: words.iter().map(|w| w.as_bytes().to_vec()).collect(),
                leave: vec![],
                exit: Expr::Nothing,
                other: Expr::Nothing,
                stop,
            }))
        };
        assert!(validate(&grammar(vec![("root", trie(&["a", "b"], Expr::Empty))])).is_ok());
        let unsorted = validate(&grammar(vec![("root", trie(&["b", "a"], Expr::Empty))]));
        assert!(matches!(unsorted, Err(GrammarError::Invalid(ref m)) if m.contains("unsorted")), "{unsorted:?}");
        // Every node is a word and nothing else may follow: no text at all.
        let empty = validate(&grammar(vec![("root", trie(&["", "a"], Expr::Empty))]));
        assert!(matches!(empty, Err(GrammarError::EmptyLanguage(_))), "{empty:?}");
        // A reference inside must exist.
        let dangling = validate(&grammar(vec![("root", trie(&["a"], Expr::Rule(7)))]));
        assert!(matches!(dangling, Err(GrammarError::Invalid(_))), "{dangling:?}");
    }
}
