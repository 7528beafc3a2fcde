"""Property test: token masks agree with token acceptance and with an
independent Earley recognizer, for random grammars and random walks.

For every generated grammar and every step of a random valid walk:
- a token is set in the mask iff ``accept_token`` accepts it, iff the
  reference recognizer says the text so far plus the token's bytes is a
  viable prefix;
- the stop token is set iff the reference says the text so far is a sentence;
- special tokens never match text.
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import formcast as fc
from oracle import Earley

ALPHABET = ["a", "b", "(", ")", "é"]

# A small vocabulary covering single bytes, multi-byte tokens, a UTF-8
# character split across two tokens, and special tokens.
TEXT_TOKENS = [
    b"a", b"b", b"(", b")", "é".encode(), b"\xc3", b"\xa9",
    b"aa", b"ab", b"ba", b"bb", b"a(", b"()", b"((", b"))", b"(a", b"b)",
    b"aaa", b"aba", b"(()", "aé".encode(), "éb".encode(), b"a)b", b"c",
]
SPECIAL = [b"<s>", b"</s>", b"<tool>"]
VOCAB = TEXT_TOKENS + SPECIAL
EOS = len(TEXT_TOKENS) + 1
SPECIAL_IDS = [len(TEXT_TOKENS), EOS, len(TEXT_TOKENS) + 2]


# ----------------------------------------------------------- generator --
def exprs(n_rules: int, rule_index: int, allow_refs: bool):
    literal = st.text(alphabet=ALPHABET, min_size=1, max_size=3).map(lambda s: ("lit", s))
    klass = st.sets(st.sampled_from(["a", "b", "("]), min_size=1).map(lambda s: ("class", "".join(sorted(s))))
    leaves = [literal, klass]
    if allow_refs:
        leaves.append(st.integers(0, n_rules - 1).map(lambda i: ("ref", i)))
    leaf = st.one_of(*leaves)

    def extend(children):
        return st.one_of(
            st.lists(children, min_size=2, max_size=3).map(lambda xs: ("seq", xs)),
            st.lists(children, min_size=2, max_size=3).map(lambda xs: ("alt", xs)),
            st.tuples(st.sampled_from(["*", "+", "?"]), children).map(lambda t: ("op", t[0], t[1])),
            st.tuples(children, st.integers(0, 2), st.integers(0, 2)).map(
                lambda t: ("rep", t[0], min(t[1], t[2]), max(t[1], t[2]))
            ),
        )

    return st.recursive(leaf, extend, max_leaves=6)


@st.composite
def grammars(draw):
    n = draw(st.integers(1, 3))
    rules = []
    for i in range(n):
        # A base alternative that only refers to earlier rules keeps every
        # rule productive; the second may recurse anywhere (left recursion
        # included).
        base = draw(exprs(max(i, 1), i, allow_refs=i > 0))
        if i == 0:
            base = _strip_refs(base)
        rec = draw(exprs(n, i, allow_refs=True))
        rules.append(("alt", [base, rec]))
    return rules


def _strip_refs(e):
    kind = e[0]
    if kind == "ref":
        return ("lit", "a")
    if kind in ("seq", "alt"):
        return (kind, [_strip_refs(x) for x in e[1]])
    if kind == "op":
        return ("op", e[1], _strip_refs(e[2]))
    if kind == "rep":
        return ("rep", _strip_refs(e[1]), e[2], e[3])
    return e


# --------------------------------------------------- GBNF and BNF forms --
def to_gbnf(rules) -> str:
    def render(e) -> str:
        kind = e[0]
        if kind == "lit":
            return '"' + e[1].replace("\\", "\\\\").replace('"', '\\"') + '"'
        if kind == "class":
            return "[" + e[1] + "]"
        if kind == "ref":
            return f"r{e[1]}"
        if kind == "seq":
            return "(" + " ".join(render(x) for x in e[1]) + ")"
        if kind == "alt":
            return "(" + " | ".join(render(x) for x in e[1]) + ")"
        if kind == "op":
            return "(" + render(e[2]) + ")" + e[1]
        if kind == "rep":
            return "(" + render(e[1]) + ")" + "{" + f"{e[2]},{e[3]}" + "}"
        raise AssertionError(kind)

    lines = [f"root ::= r0"]
    lines += [f"r{i} ::= {render(body)}" for i, body in enumerate(rules)]
    return "\n".join(lines) + "\n"


def to_bnf(rules) -> dict:
    bnf: dict[str, list[list[tuple]]] = {}
    counter = [0]

    def fresh(alts) -> tuple:
        counter[0] += 1
        name = f"_x{counter[0]}"
        bnf[name] = alts
        return ("n", name)

    def seq(e) -> list[tuple]:
        kind = e[0]
        if kind == "lit":
            return [("t", frozenset([b])) for b in e[1].encode()]
        if kind == "class":
            return [("t", frozenset(e[1].encode()))]
        if kind == "ref":
            return [("n", f"r{e[1]}")]
        if kind == "seq":
            return [s for x in e[1] for s in seq(x)]
        if kind == "alt":
            return [fresh([seq(x) for x in e[1]])]
        if kind == "op":
            inner = seq(e[2])
            if e[1] == "?":
                return [fresh([[], inner])]
            counter[0] += 1
            name = f"_x{counter[0]}"
            if e[1] == "*":
                bnf[name] = [[], inner + [("n", name)]]
            else:
                bnf[name] = [inner, inner + [("n", name)]]
            return [("n", name)]
        if kind == "rep":
            inner = seq(e[1])
            out = inner * e[2]
            for _ in range(e[3] - e[2]):
                out = out + [fresh([[], inner])]
            return out
        raise AssertionError(kind)

    for i, body in enumerate(rules):
        bnf[f"r{i}"] = [seq(body)]
    return bnf


# ---------------------------------------------------------------- test --
TOKENIZER = fc.TokenizerInfo.from_vocab(VOCAB, special_token_ids=SPECIAL_IDS, stop_token_ids=[EOS], logits_size=len(VOCAB) + 5)


def mask_ids(matcher) -> set[int]:
    bm = fc.allocate_token_bitmask(1, TOKENIZER.logits_size)
    matcher.fill_next_token_bitmask(bm)
    return set(np.nonzero(fc.bitmask_to_bool(bm, TOKENIZER.logits_size)[0])[0].tolist())


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(), st.integers(0, 2**32 - 1))
def test_mask_matches_acceptance_and_reference(rules, seed):
    gbnf = to_gbnf(rules)
    compiled = fc.GrammarCompiler(TOKENIZER).compile(fc.Grammar.from_ebnf(gbnf))
    matcher = fc.GrammarMatcher(compiled)
    ref = Earley(to_bnf(rules), "r0")
    rng = random.Random(seed)
    for _ in range(12):
        mask = mask_ids(matcher)
        expected = {i for i, t in enumerate(TEXT_TOKENS) if ref.viable(t)}
        if ref.can_end():
            expected.add(EOS)
        assert mask == expected, f"grammar:\n{gbnf}"
        for tok in range(TOKENIZER.logits_size):
            accepted = matcher.accept_token(tok)
            if accepted:
                matcher.rollback(1)
            assert accepted == (tok in expected), f"token {tok} grammar:\n{gbnf}"
        choices = sorted(expected - {EOS})
        if not choices:
            break
        tok = rng.choice(choices)
        assert matcher.accept_token(tok)
        assert ref.feed(VOCAB[tok])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 14)), min_size=2, max_size=6), st.integers(0, 2**32 - 1))
def test_long_counted_chains_share_partitions_exactly(bounds, seed):
    """Counted repetitions longer than the longest token: positions whose
    next few bytes look alike share one cached vocabulary partition (the
    cache is per tokenizer, across grammars), and the masks stay exact at
    every position and for every bound, including the last few."""
    compiler = fc.GrammarCompiler(TOKENIZER)
    rng = random.Random(seed)
    for lo, width in bounds:
        hi = lo + width
        rules = [("seq", [("rep", ("class", "ab"), lo, hi), ("lit", ")")])]
        gbnf = f'root ::= r0\nr0 ::= [ab]{{{lo},{hi}}} ")"\n'
        matcher = fc.GrammarMatcher(compiler.compile(fc.Grammar.from_ebnf(gbnf)))
        ref = Earley(to_bnf(rules), "r0")
        while True:
            expected = {i for i, t in enumerate(TEXT_TOKENS) if ref.viable(t)}
            if ref.can_end():
                expected.add(EOS)
            assert mask_ids(matcher) == expected, gbnf
            choices = sorted(expected - {EOS})
            if not choices:
                break
            tok = rng.choice(choices)
            assert matcher.accept_token(tok) and ref.feed(VOCAB[tok])
