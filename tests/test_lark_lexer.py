"""Lark read as llguidance reads it (``lexer="llguidance"``, the default):
greedy lexemes, lazy lexemes (``[lazy]``, ``[suffix=...]``) and skipped
text, checked three ways:

* accept/reject pairs whose answers were measured with llguidance 1.9.1
  (`LLMatcher` over Llama-3 tokens) — its documentation's examples among
  them — and 3,200 more on seeded random grammars
  (tests/data/lark_llguidance_answers.json);
* a property test against a reference written here: an Earley parser over
  lexemes fed by a greedy lexer, as llguidance's documentation describes
  its lexer;
* masks against token-by-token acceptance, on a vocabulary of multi-byte
  tokens (random grammars) and on SmolLM2's (the documentation's tool-call
  grammar): lexemes cut one another, so the mask walk follows whole item
  sets there.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import accepted_by_parser, mask_row_bits
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import Earley
from test_lark import ALPHABET, BYTE_COMPILER, accepts, grammars, sample, to_lark

import formcast as fc

DATA = Path(__file__).parent / "data"

# (grammar, text, accepted by llguidance 1.9.1)
PEER_PAIRS = [
    # greedy: a lexeme is as long as it can be
    ('start: A "ab"\nA: /a+/', "aab", False),
    ('start: A "ab"\nA: /a+/', "ab", False),
    ('start: X Y\nX: /[0-9]+/\nY: /[0-9]/', "123", False),
    ('start: A B\nA: /a+/\nB: /b+/', "aabb", True),
    ('start: ("a" | "aa") "ab"', "aab", False),
    ('start: ("a" | "aa") "ab"', "aaab", True),
    ('start: "a"+ "ab"', "aab", True),
    ('start: "a" "b"\n%ignore " "', "a b", True),
    ('start: "a" "b"\n%ignore " "', "a  b", True),
    ('start: "a" "b"\n%ignore " "', "a b ", False),
    # skipped text may end the text where another lexeme could follow
    ('start: "a"+\n%ignore " "', "a a ", True),
    ('start: "a"+\n%ignore " "', "a a  ", True),
    ('start: "a"+\n%ignore " "', " a", False),
    ('start: "a"*\n%ignore " "', " ", False),
    ('start: "a"*\n%ignore " "', "", True),
    ('start: "a"+ "b"?\n%ignore " "', "a b ", False),
    ('start: "a"+ "b"?\n%ignore " "', "a ", True),
    ('start: "a"+\n%ignore /#[^\\n]*/\n%ignore " "', "a #x", True),
    ('start: "a"+\n%ignore /\\/\\*[^*]*\\*\\//', "a/* x", False),
    ('start: "a"+\n%ignore /\\/\\*[^*]*\\*\\//', "a/* x */", True),
    ('start: x\nx: "a" | "a" "b"\n%ignore " "', "a ", True),
    # lazy: ends at the first match
    ("start: x\nx[lazy]: /[0-9]+/", "1", True),
    ("start: x\nx[lazy]: /[0-9]+/", "12", False),
    ('start: x "a"\nx[lazy]: /[0-9]+/', "1a", True),
    ("start: x\nx[lazy]: /.*<end>/", "foo<end>", True),
    ("start: x\nx[lazy]: /.*<end>/", "foo<end>bar<end>", False),
    ('start: x "bar<end>"\nx[lazy]: /.*<end>/', "foo<end>bar<end>", True),
    ('start: x\nx[lazy]: "a" | "ab"', "ab", False),
    ('start: x "b"\nx[lazy]: "a" | "ab"', "ab", True),
    ("start: x x\nx[lazy]: /a+/", "aa", True),
    ("start: x\nx[lazy]: /a|abc/", "abc", False),
    # the empty prefix does not count
    ("start: x\nx[lazy]: /.*/", "", True),
    ("start: x\nx[lazy]: /.*/", "a", True),
    ("start: x\nx[lazy]: /.*/", "ab", False),
    ("start: x\nx[lazy]: /(ab)*/", "ab", True),
    ("start: x\nx[lazy]: /(ab)*/", "abab", False),
    ('start: x "c"\nx[lazy]: /(ab)*/', "c", True),
    ('start: x "a"\nx[lazy]: /[0-9]*/', "1a", True),
    # terminals inside a lazy rule are one lexeme
    ('start: x\nx[lazy]: A B\nA: /a+/\nB: /b+/', "aab", True),
    ('start: x\nx[lazy]: A B\nA: /a+/\nB: /b+/', "aabb", False),
    ('start: x\nx[lazy]: ("a" "b")+', "ab", True),
    ('start: x\nx[lazy]: "ab"i', "aB", True),
    # suffix: the body then the suffix, lazy; an empty suffix changes nothing
    ('start: x\nx[suffix="<end>"]: /.*/', "foo<end>", True),
    ('start: x\nx[suffix="<end>"]: /.*/', "foo<end>bar<end>", False),
    ('start: x\nx[suffix="<end>"]: /.*/', "foo", False),
    ('start: x "b"\nx[suffix="<end>"]: /.*/', "foo<end>b", True),
    ('start: x\nx[suffix="b"]: /[ab]+/', "abb", False),
    ('start: x\nx[suffix="b"]: /[ab]+/', "ab", True),
    ('start: x\nx[suffix="b"]: /[ab]*/', "b", True),
    ("start: x\nx[suffix=/<e+>/]: /.*/", "foo<eee>", True),
    ('start: x\nx[suffix=END]: /.*/\nEND: "<end>"', "foo<end>", True),
    ('start: x\nx[suffix="<end>", stop_capture="s"]: /.*/', "foo<end>", True),
    ('start: x\nx[suffix=""]: /a+/', "aa", True),
    # a lazy lexeme that matches ends the lexemes going on beside it
    ("start: a | b\na[lazy]: /.*x/\nb: /.*y/", "axy", False),
    ('start: a "1" | t "2"\na[lazy]: /[a-z]*x/\nt: /[a-z]*x/', "ax1", True),
    ('start: a "1" | t "2"\na[lazy]: /[a-z]*x/\nt: /[a-z]*x/', "ax2", False),
    ('start: f "=" | t\nf[lazy]: TEXT "<f"\nt: TEXT\nTEXT: /(.|\\n)*/', "a<fz", False),
    ('start: f "=" | t\nf[lazy]: TEXT "<f"\nt: TEXT\nTEXT: /(.|\\n)*/', "a<f=", True),
    ('start: f "=" | t\nf[lazy]: TEXT "<f"\nt: TEXT\nTEXT: /(.|\\n)*/', "a<", True),
    ("start: x\n%ignore \" \"\nx[lazy]: /[0-9]+/", "1", True),
    ('start: x y\n%ignore " "\nx[lazy]: /[0-9]+/\ny: "a"', "1 a", True),
]

# llguidance's documentation: free text with tool calls after "<function".
TOOL_CALLS = """start: ( f_foo | f_bar )* f_end
f_end: TEXT
TEXT: /(.|\\n)*/

f_foo_hd[lazy]: TEXT "<function"
f_foo: f_foo_hd "=foo>" %json { "type": "object" } "</function>"

f_bar_hd[lazy]: TEXT "<function"
f_bar: f_bar_hd "=bar>" /[0-9]+/ "</function>"
"""

TOOL_CALL_TEXTS = [
    ("hello", True),
    ("a <function=foo>{}</function> bye", True),
    ("a <function=bar>12</function>", True),
    ("a <functio", True),
    # after "<function" the call is forced: the text cannot take it
    ("a <function=zzz", False),
    ("<function", False),
    ("a <function=bar>x</function>", False),
    ("x <function=foo>{} </function><function=bar>1</function>", False),
]


@pytest.mark.parametrize("text,s,want", PEER_PAIRS)
def test_accepts_what_llguidance_accepts(text, s, want):
    assert accepts(BYTE_COMPILER.compile(fc.Grammar.from_lark(text)), s) is want


@pytest.mark.parametrize("s,want", TOOL_CALL_TEXTS)
def test_documented_tool_calls(s, want):
    assert accepts(BYTE_COMPILER.compile(fc.Grammar.from_lark(TOOL_CALLS)), s) is want


def test_context_free_reading_takes_any_split():
    g = 'start: A "ab"\nA: /a+/'
    assert accepts(BYTE_COMPILER.compile(fc.Grammar.from_lark(g, lexer="context_free")), "aab")
    assert not accepts(BYTE_COMPILER.compile(fc.Grammar.from_lark(g)), "aab")


@pytest.mark.parametrize(
    "text,needle",
    [
        ("start: x\nx[lazy]: /a+/", "needs llguidance's lexer"),
        ('start: x\nx[suffix="b"]: /a+/', "needs llguidance's lexer"),
    ],
)
def test_lazy_needs_the_lexer(text, needle):
    with pytest.raises(fc.GrammarError, match=needle) as e:
        fc.Grammar.from_lark(text, lexer="context_free")
    assert (e.value.line, e.value.column) == (2, 1)


def test_unknown_lexer_is_refused():
    with pytest.raises(ValueError, match="lexer must be"):
        fc.Grammar.from_lark('start: "a"', lexer="greedy")


def test_random_grammars_answer_as_llguidance():
    """400 seeded random grammars (regex and string terminals, repetition,
    %ignore, lazy rules) and 3,200 texts, answered by llguidance 1.9.1
    (scripts/lark_peer_answers.py). A grammar whose language is empty is an
    error here; llguidance compiles it and refuses every text."""
    data = json.loads((DATA / "lark_llguidance_answers.json").read_text(encoding="utf-8"))
    assert len(data["grammars"]) == 400
    wrong = []
    for g in data["grammars"]:
        try:
            compiled = BYTE_COMPILER.compile(fc.Grammar.from_lark(g["lark"]))
        except fc.GrammarError as e:
            assert "language is empty" in str(e), (g["lark"], e)
            assert not any(ok for _, ok in g["texts"]), g["lark"]
            continue
        wrong += [(g["lark"], s, ok) for s, ok in g["texts"] if accepts(compiled, s) is not ok]
    assert not wrong, wrong[:3]


# ---- a reference: an Earley parser over lexemes, fed by a greedy lexer ----


def _leaf_strings(e) -> frozenset[str]:
    if e[0] == "lit":
        return frozenset([e[1]])
    if e[0] == "cls":
        return frozenset(e[1])
    return frozenset(chr(c) for c in range(ord(e[1]), ord(e[2]) + 1))


def _productions(rules):
    """The grammar over lexemes for the oracle's Earley parser: rule name ->
    alternatives (lists of symbols, ("n", name) or ("t", the lexeme's
    strings))."""
    prods: dict[str, list[list]] = {}
    fresh = iter(range(1_000_000))

    def sym(e):
        kind = e[0]
        if kind in ("lit", "cls", "range"):
            return ("t", _leaf_strings(e))
        if kind == "ref":
            return ("n", f"r{e[1]}")
        n = f"_{next(fresh)}"
        if kind == "seq":
            prods[n] = [[sym(x) for x in e[1]]]
        elif kind == "alt":
            prods[n] = [[sym(x)] for x in e[1]]
        else:
            op = e[2]
            lo, hi = {"?": (0, 1), "*": (0, None), "+": (1, None)}[op] if isinstance(op, str) else op
            x = sym(e[1])
            if hi is None:
                star = f"_{next(fresh)}"
                prods[star] = [[x, ("n", star)], []]
                prods[n] = [[x] * lo + [("n", star)]]
            else:
                prods[n] = [[x] * k for k in range(lo, hi + 1)]
        return ("n", n)

    for i, e in enumerate(rules):
        prods[f"r{i}"] = [[sym(e)]]
    return prods


def llguidance_accepts(rules, text: str) -> bool:
    """llguidance's reading: at each lexeme boundary the lexemes the parser
    allows are matched together; the lexeme ends where none of them can
    take the next character, and every allowed lexeme matching exactly
    that text is passed to the parser (no backtracking). The parser is the
    oracle's Earley recognizer, shifted by lexemes instead of bytes."""
    parser = Earley(_productions(rules), "r0")
    p = 0
    while p < len(text):
        allowed = parser.next_terminals()
        n = 0
        while p + n < len(text) and any(w.startswith(text[p : p + n + 1]) for t in allowed for w in t[1]):
            n += 1
        piece = text[p : p + n]
        emitted = {t for t in allowed if piece in t[1]}
        if n == 0 or not parser.shift(emitted):
            return False
        p += n
    return parser.can_end()


def test_reference_reads_the_peer_pairs_alike():
    """The reference on grammars of its kind whose answers were measured
    with llguidance: `("a" | "aa") "ab"` and `"a"+ "ab"`."""
    a_or_aa = [("seq", [("alt", [("lit", "a"), ("lit", "aa")]), ("lit", "ab")])]
    assert not llguidance_accepts(a_or_aa, "aab")
    assert llguidance_accepts(a_or_aa, "aaab")
    assert llguidance_accepts([("seq", [("rep", ("lit", "a"), "+"), ("lit", "ab")])], "aab")


@settings(max_examples=200, deadline=None)
@given(grammars(), st.lists(st.text(alphabet=ALPHABET, max_size=6), max_size=8), st.randoms(use_true_random=False))
def test_lexed_lark_matches_the_reference(rules, randoms, rng):
    lark = "start: r0\n" + "".join(f"r{i}: {to_lark(e)}\n" for i, e in enumerate(rules))
    try:
        g = fc.Grammar.from_lark(lark)
    except fc.GrammarError:
        return
    try:
        compiled = BYTE_COMPILER.compile(g)
    except fc.GrammarError:
        return
    samples = [sample(rules[0], rules, rng) for _ in range(6)]
    for s in [x for x in samples if x is not None] + randoms:
        assert accepts(compiled, s) == llguidance_accepts(rules, s), (lark, s)


# ---- masks ----

# Every string over the alphabet up to three characters, a few longer, and
# every printable ASCII character (the punctuation of the grammars below).
_WORDS = [""]
for _ in range(3):
    _WORDS = _WORDS + [w + c for w in _WORDS for c in ALPHABET]
_PRINTABLE = {bytes([b]) for b in range(0x20, 0x7F)} | {b"\n", b"+(", b")+", b" c", b"a+", b'")', b'"+'}
MULTI = fc.TokenizerInfo.from_vocab(sorted({w.encode() for w in _WORDS if w} | {b"abcab", b"cc"} | _PRINTABLE))
MULTI_COMPILER = fc.GrammarCompiler(MULTI)


def _check_masks_along(compiled, text, n_tokens):
    m = fc.GrammarMatcher(compiled)
    mask = fc.allocate_token_bitmask(1, n_tokens)
    steps = 0
    for ch in text:
        m.fill_next_token_bitmask(mask)
        got = mask_row_bits(mask, n_tokens)
        want = accepted_by_parser(m, n_tokens)
        assert np.array_equal(got, want), (text, steps, np.flatnonzero(got != want)[:5])
        if not m.accept_string(ch):
            return
        steps += 1


# Grammars whose lexemes cut one another, and texts to follow.
CUTTING = [
    ('start: ("a" | "aa") "ab"', "aaab"),
    ('start: A "ab" | "b"\nA: /a+/', "aaab"),
    ('start: X Y\nX: /[abc]+/\nY: /c/', "abcc"),
    ('start: (x | "ab")+\nx[lazy]: /[ab]*c/', "abcabc"),
    ('start: x+ "b"\nx[lazy]: /a+/', "aab"),
    ('start: w (" " w)*\nw: /[abc]+/ | "ab" "c"', "abc ab"),
    ('start: "a" "b"\n%ignore /[ c]+/', "a cc b"),
    ('start: "a"+\n%ignore /[ c]+/', "a a cc "),
    # left recursion: continuations waiting on one another, hashed together
    ('start: e\ne: e "+" t | t\nt: t "*" A | A\nA: /[abc]+/\n%ignore " "', "ab + c * a+b*c"),
    ('start: e\ne: e "+" t | t\nt: "(" e ")" | A\nA: /[ab]+/', "a+(a)+(b+(ab))"),
    # inside a string the sets at top level and in parentheses look alike;
    # a token closing the string tells them apart
    ('start: e\ne: e "+" t | t\nt: "(" e ")" | S\nS: /"[ab]*"/', '"ab"+("ab")+(("a"))'),
]


@pytest.mark.parametrize("text,follow", CUTTING)
def test_cutting_masks_match_acceptance(text, follow):
    compiled = MULTI_COMPILER.compile(fc.Grammar.from_lark(text))
    _check_masks_along(compiled, follow, MULTI.vocab_size)


@settings(max_examples=150, deadline=None)
@given(grammars(), st.randoms(use_true_random=False))
def test_lexed_masks_match_acceptance(rules, rng):
    lark = "start: r0\n" + "".join(f"r{i}: {to_lark(e)}\n" for i, e in enumerate(rules))
    try:
        compiled = MULTI_COMPILER.compile(fc.Grammar.from_lark(lark))
    except fc.GrammarError:
        return
    n = MULTI.vocab_size
    for _ in range(2):
        s = sample(rules[0], rules, rng)
        if s is not None:
            _check_masks_along(compiled, s + rng.choice(["", "a", "b"]), n)


def test_tool_call_masks_on_smollm2(smollm2):
    """Through a text with two tool calls, character by character, the mask
    checked against acceptance at every ninth position."""
    compiled = fc.GrammarCompiler(smollm2).compile_lark(TOOL_CALLS)
    n = smollm2.vocab_size
    m = fc.GrammarMatcher(compiled)
    mask = fc.allocate_token_bitmask(1, n)
    text = "Hi <function=bar>12</function> ok <function=foo>{}</function>"
    for i, ch in enumerate(text):
        if i % 9 == 0:
            m.fill_next_token_bitmask(mask)
            assert np.array_equal(mask_row_bits(mask, n), accepted_by_parser(m, n)), text[:i]
        assert m.accept_string(ch), text[: i + 1]
    assert m.can_terminate()
