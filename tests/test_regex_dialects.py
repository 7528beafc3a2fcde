"""``Grammar.from_regex(pattern, dialect=...)``: each dialect read exactly,
checked against the real engines — Python's ``re.fullmatch`` for
``"python"`` (pairs per construct and a hypothesis property test), a
JavaScript engine (``node``, when installed) for ``"ecma"`` as
``new RegExp("^(?:" + p + ")$", "u")``, next to hand-written expectations
from ECMA-262 that run everywhere."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_regex_property import regexes

import formcast as fc

BYTES = fc.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)])
COMPILER = fc.GrammarCompiler(BYTES)


def accepts(grammar: fc.Grammar, text: str) -> bool:
    m = fc.GrammarMatcher(COMPILER.compile(grammar))
    return m.accept_string(text) and m.can_terminate()


def ours(pattern: str, dialect: str, text: str) -> bool:
    return accepts(fc.Grammar.from_regex(pattern, dialect), text)


# ------------------------------------------------------------ dialects --
def test_default_dialect_is_rust_and_unknown_ones_are_refused():
    assert fc.Grammar.from_regex("a+")._key == fc.Grammar.from_regex("a+", "rust")._key
    assert fc.Grammar.from_regex("a+", "ecma")._key != fc.Grammar.from_regex("a+", "python")._key
    with pytest.raises(ValueError, match="unknown regex dialect"):
        fc.Grammar.from_regex("a", "perl")
    assert COMPILER.compile_regex(r"\cJ", dialect="ecma") is not None


# The constructs where the dialects part ways: (pattern, text, rust, ecma, python);
# None: the dialect refuses the pattern.
DIFFERENCES = [
    (r"[@[\].]", "[", None, True, True),  # a nested class in Rust, literals elsewhere
    (r"[@[\].]", "]", None, True, True),
    (r"\0", "\0", None, True, True),
    (r"\cJ", "\n", None, True, None),  # Python: bad escape \c
    (".", "\r", True, False, True),  # ECMA's dot excludes all four line terminators
    (".", "\u2028", True, False, True),
    (".", "\n", False, False, False),
    (r"\d", "٣", True, False, True),  # ECMA: ASCII digits only
    (r"\w", "é", True, False, True),
    (r"\w", "\u0301", True, False, False),  # a mark: word in Rust, not for str.isalnum
    (r"\s", "\ufeff", False, True, False),
    ("(?i)k", "\u212a", True, None, True),
    (r"\p{L}", "é", True, True, None),
    ("a++", "aa", True, None, None),  # Rust: (a+)+; ECMA: syntax; Python: possessive
    (r"\x41", "A", True, True, True),
    (r"\u00e9", "é", True, True, True),
    (r"\u{e9}", "é", True, True, None),
    (r"\U000000e9", "é", True, None, True),
    (r"[^]", "x", None, True, None),
    (r"\Aa\Z", "a", None, None, True),  # \Z: Rust refuses it, ECMA has no \A
    (r"a\z", "a", True, None, None),
    (r"(?P<n>a)", "a", True, None, True),
    (r"(?<n>a)", "a", True, True, None),
    (r"\-", "-", True, None, True),
    (r"a{", "a{", None, None, True),
]


@pytest.mark.parametrize("pattern,text,rust,ecma,python", DIFFERENCES)
def test_dialects_read_their_own_syntax(pattern, text, rust, ecma, python):
    for dialect, want in (("rust", rust), ("ecma", ecma), ("python", python)):
        if want is None:
            with pytest.raises(fc.GrammarError):
                fc.Grammar.from_regex(pattern, dialect)
        else:
            assert ours(pattern, dialect, text) is want, (dialect, pattern, text)
    if python is not None:
        assert (re.fullmatch(pattern, text) is not None) is python


# ----------------------------------------------------------------- ecma --
# What ECMA-262 with the u flag refuses as a syntax error, and what formcast
# refuses because a grammar cannot honour it (valid JavaScript).
ECMA_SYNTAX_ERRORS = [
    "(?i)a", "(?i:a)", "a++", "a**", "a{2}{3}", "^*", r"\-", r"\@", "a{", "a}", "]", r"[\d-z]", r"\p{Greek}",
    r"\p{Letter_Foo}", r"\c1", r"\x4", r"\u12", r"\u{110000}", r"\00", "(?<1a>x)", "(?<n>a)(?<n>b)", "(", "[a", "a{3,2}",
    "[z-a]", r"\k",
]
ECMA_UNSUPPORTED = {
    r"(a)\1": "backreferences",
    r"(?<n>a)\k<n>": "backreferences",
    "(?=a)a": "lookaround",
    "(?!b)a": "lookaround",
    "(?<=a)b": "lookaround",
    "(?<!a)b": "lookaround",
    r"\bx": "word boundaries",
    r"x\B": "word boundaries",
    "a^b": "anchor",
    "a$b": "anchor",
    r"\uD800": "surrogate",
}


@pytest.mark.parametrize("pattern", ECMA_SYNTAX_ERRORS)
def test_ecma_refuses_what_the_u_flag_refuses(pattern):
    with pytest.raises(fc.GrammarError):
        fc.Grammar.from_regex(pattern, "ecma")


@pytest.mark.parametrize("pattern,name", sorted(ECMA_UNSUPPORTED.items()))
def test_ecma_names_what_it_cannot_honour(pattern, name):
    with pytest.raises(fc.GrammarError, match=name):
        fc.Grammar.from_regex(pattern, "ecma")


def test_ecma_error_positions_point_into_the_pattern():
    with pytest.raises(fc.GrammarError, match="position 8: the anchor"):
        fc.Grammar.from_regex(r"\d\u0041^", "ecma")
    with pytest.raises(fc.GrammarError, match="position 3: backreferences"):
        fc.Grammar.from_regex(r"(a)\1", "ecma")


# Patterns formcast reads as ECMA, with texts; the expectations are ECMA-262's
# (and checked against node below where it is installed).
ECMA_CASES = [
    (r"[@[\].]+", ["@[", "].", "a", ""]),
    (r"\0\cJ\cj", ["\0\n\n", "\0\n"]),
    (".", ["a", "\n", "\r", "\u2028", "\u2029", "\u0085", "😀"]),
    (r"[^]", ["\n", "x"]),
    (r"[]|a", ["a", ""]),
    (r"\d+", ["123", "١٢"]),
    (r"\w+", ["a_Z9", "é"]),
    (r"\W", ["é", "a"]),
    (r"\s", ["\ufeff", "\u00a0", "\u0085", "\u3000", "x"]),
    (r"[\s\S]", ["\n", "x"]),
    (r"\S", ["\u0085", " "]),
    (r"\u{1F600}\uD83D\uDE00", ["😀😀", "😀"]),
    (r"\p{L}+", ["éa", "1"]),
    (r"\p{Script=Greek}", ["α", "a"]),
    (r"\p{sc=Grek}", ["α"]),
    (r"\P{Lu}", ["a", "A"]),
    (r"\p{gc=Nd}", ["٣", "a"]),
    (r"[\p{Lu}\d]", ["A", "5", "a"]),
    (r"(?<year>\d{4})-(?:\d\d)", ["2024-01", "2024-1"]),
    (r"a{2,3}?b", ["aab", "aaaab"]),
    (r"[\b]", ["\b", "b"]),
    (r"\/[\-]\$", ["/-$"]),
    (r"[a-c-e]", ["-", "d", "e"]),
    (r"^a|b$", ["a", "b"]),
    (r"\x41\u0042", ["AB"]),
    (r"[^\d\s]", ["a", "1", " "]),
    (r"\t\n\v\f\r", ["\t\n\v\f\r"]),
]

# The expectations of ECMA_CASES, by hand.
ECMA_EXPECTED = {
    r"[@[\].]+": [True, True, False, False],
    r"\0\cJ\cj": [True, False],
    ".": [True, False, False, False, False, True, True],
    r"[^]": [True, True],
    r"[]|a": [True, False],
    r"\d+": [True, False],
    r"\w+": [True, False],
    r"\W": [True, False],
    r"\s": [True, True, False, True, False],
    r"[\s\S]": [True, True],
    r"\S": [True, False],
    r"\u{1F600}\uD83D\uDE00": [True, False],
    r"\p{L}+": [True, False],
    r"\p{Script=Greek}": [True, False],
    r"\p{sc=Grek}": [True],
    r"\P{Lu}": [True, False],
    r"\p{gc=Nd}": [True, False],
    r"[\p{Lu}\d]": [True, True, False],
    r"(?<year>\d{4})-(?:\d\d)": [True, False],
    r"a{2,3}?b": [True, False],
    r"[\b]": [True, False],
    r"\/[\-]\$": [True],
    r"[a-c-e]": [True, False, True],
    r"^a|b$": [True, True],
    r"\x41\u0042": [True],
    r"[^\d\s]": [True, False, False],
    r"\t\n\v\f\r": [True],
}


@pytest.mark.parametrize("pattern,texts", ECMA_CASES)
def test_ecma_cases_by_the_spec(pattern, texts):
    assert [ours(pattern, "ecma", t) for t in texts] == ECMA_EXPECTED[pattern]


_NODE_SCRIPT = r"""
const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = cases.map(([p, texts]) => {
  let re;
  try { re = new RegExp('^(?:' + p + ')$', 'u'); } catch (e) { return null; }
  return texts.map(t => re.test(t));
});
process.stdout.write(JSON.stringify(out));
"""


def _node(cases: list) -> list:
    node = shutil.which("node")
    if node is None:
        pytest.skip("no JavaScript engine (node) installed: the hand-written ECMA expectations still run")
    run = subprocess.run([node, "-e", _NODE_SCRIPT], input=json.dumps(cases), capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_ecma_agrees_with_a_javascript_engine():
    cases = [(p, t) for p, t in ECMA_CASES]
    # Patterns JavaScript refuses: formcast refuses them as well (above).
    cases += [(p, []) for p in ECMA_SYNTAX_ERRORS]
    results = _node(cases)
    for (pattern, texts), js in zip(cases, results):
        if pattern in ECMA_SYNTAX_ERRORS:
            assert js is None, f"node accepts {pattern!r}"
            continue
        assert js == [ours(pattern, "ecma", t) for t in texts], pattern
    # What formcast cannot honour is valid JavaScript (refused, not misread).
    assert all(r is not None for r in _node([(p, []) for p in ECMA_UNSUPPORTED]))


ECMA_ATOMS = ["a", "b", "é", ".", r"\d", r"\w", r"\s", r"\W", r"\S", "[ab]", "[^a]", "[a-c]", r"\.", r"[\s\S]", r"\u{e9}", r"[@[\]]", r"\0", r"\cJ", "[^]"]


def ecma_patterns():
    return regexes(st.sampled_from(ECMA_ATOMS), max_leaves=5)


ECMA_TEXTS = st.text(alphabet=["a", "b", "c", "é", "1", " ", ".", "\n", "\r", "\u2028", "_", "[", "]", "@", "\0", "\ufeff"], max_size=5)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(ecma_patterns(), st.lists(ECMA_TEXTS, min_size=1, max_size=5)), min_size=1, max_size=5))
def test_ecma_agrees_with_javascript_on_generated_patterns(cases):
    if shutil.which("node") is None:
        pytest.skip("no JavaScript engine (node) installed")
    for (pattern, texts), js in zip(cases, _node(cases)):
        assert js is not None, pattern
        assert js == [ours(pattern, "ecma", t) for t in texts], pattern


# --------------------------------------------------------------- python --
PYTHON_CASES = [
    (r"\a\f\n\r\t\v", ["\a\f\n\r\t\v"]),
    (r"\x41\u00e9\U0001F600\N{BULLET}", ["Aé😀•"]),
    (r"\0\101\07", ["\0A\a"]),
    (r"\@\-\#\ ", ["@-# "]),
    (r"(?P<year>\d{4})-(?:\d\d)", ["2024-01", "٢٠٢٤-٠١", "2024-1"]),
    (r"(?i)straße", ["STRASSE", "STRAßE", "ſtraße", "Straße"]),
    (r"(?i)k", ["K", "k", "\u212a", "x"]),
    (r"(?s).", ["\n", "x"]),
    (".", ["\n", "\r", "\u2028"]),
    (r"(?a)\w+", ["abc_1", "é"]),
    (r"(?a)\d", ["١", "1"]),
    (r"\d", ["١", "²", "1"]),  # Unicode decimal digits, not other digits
    (r"\w", ["é", "_", "\u0301", "²", "一", "-"]),
    (r"\s", ["\x1c", "\x85", "\u00a0", "\ufeff", "\u200b"]),
    (r"\W\S\D", ["-x-", "a x"]),
    (r"(?x) a  b  # comment", ["ab", "a b"]),
    (r"(?m)^a$", ["a"]),
    (r"\Aab\Z", ["ab", "ab\n"]),
    (r"a$", ["a", "a\n"]),
    (r"(?i:a)b", ["Ab", "AB"]),
    (r"a(?-i:b)", ["ab"]),
    (r"(?i)a(?-i:b)", ["Ab", "AB"]),
    (r"[^\W\d]+", ["abc", "a1"]),
    (r"[\w&&x]", ["&", "a"]),
    (r"[[]]", ["[]"]),
    (r"a{,2}b{2,}?", ["bb", "aabbb", "aaab"]),
    (r"x{}", ["x{}"]),
    (r"(?#note)ab", ["ab"]),
    (r"[\b]", ["\b"]),
    (r"[^a]", ["\ud7ff", "a"]),
]


@pytest.mark.parametrize("pattern,texts", PYTHON_CASES)
def test_python_dialect_is_re_fullmatch(pattern, texts):
    g = fc.Grammar.from_regex(pattern, "python")
    for text in texts:
        assert accepts(g, text) == (re.fullmatch(pattern, text) is not None), (pattern, text)


PYTHON_UNSUPPORTED = {
    r"(a)\1": "backreferences",
    r"(?P<n>a)(?P=n)": "backreferences",
    r"(?=a)a": "lookaround",
    r"(?!b)a": "lookaround",
    r"(?<=a)b": "lookaround",
    r"(?<!a)b": "lookaround",
    r"(a)?(?(1)b|c)": "conditionals",
    r"\bx": "word boundaries",
    r"x\B": "word boundaries",
    "a^b": "anchor",
    "a$b": "anchor",
    r"(?:\Aa)*": "anchor",
    "a*+": "possessive",
    "a++": "possessive",
    "a?+": "possessive",
    "a{1,2}+": "possessive",
    "(?>ab|a)b": "atomic",
}


@pytest.mark.parametrize("pattern,name", sorted(PYTHON_UNSUPPORTED.items()))
def test_python_names_what_it_cannot_honour(pattern, name):
    re.compile(pattern)  # valid Python
    with pytest.raises(fc.GrammarError, match=name):
        fc.Grammar.from_regex(pattern, "python")


@pytest.mark.parametrize("pattern", [r"\cJ", r"\p{L}", "(?<n>a)", "[", "a{2,1}", "(?i", r"\z", "(?L)a", r"a(?i)b", r"\k<n>"])
def test_python_refuses_what_re_refuses_with_its_message(pattern):
    with pytest.raises(re.error) as ref:
        re.compile(pattern)
    with pytest.raises(fc.GrammarError) as got:
        fc.Grammar.from_regex(pattern, "python")
    assert ref.value.msg in str(got.value)
    assert f"position {ref.value.pos}" in str(got.value)


def test_python_limits():
    with pytest.raises(fc.LimitError):
        fc.Grammar.from_regex("a{100001}", "python")
    with pytest.raises(TypeError):
        fc.Grammar.from_regex(b"a", "python")  # type: ignore[arg-type]


PY_ATOMS = ["a", "b", "k", "s", "é", ".", r"\d", r"\w", r"\s", r"\W", r"\D", "[ab]", "[^a]", "[a-c]", "[K-S]", r"\.", "ſ", r"[^\W\d]", r"\x7f"]
PY_FLAGS = ["", "(?i)", "(?s)", "(?a)", "(?is)", "(?ai)", "(?u)", "(?x)"]


def python_patterns():
    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map(lambda t: t[0] + t[1]),
            st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{0,2}", "{1,}", "*?", "??"])).map(lambda t: f"(?:{t[0]}){t[1]}"),
            st.tuples(st.sampled_from(["i", "s", "a", "-i", "i-s"]), inner).map(lambda t: f"(?{t[0]}:{t[1]})"),
            inner.map(lambda r: f"({r})"),
            inner.map(lambda r: f"(?P<g>{r})"),
        )

    body = st.recursive(st.sampled_from(PY_ATOMS), extend, max_leaves=6)
    return st.tuples(st.sampled_from(PY_FLAGS), body).map(lambda t: t[0] + t[1])


PY_TEXTS = st.text(
    alphabet=["a", "b", "k", "K", "\u212a", "s", "S", "ſ", "é", "É", "1", "١", "²", " ", "\u00a0", "\n", "_", "\u0301", "."],
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(python_patterns(), st.lists(PY_TEXTS, min_size=1, max_size=6))
def test_python_dialect_agrees_with_re_on_generated_patterns(pattern, texts):
    try:
        re.compile(pattern)
    except re.error:
        # The generator can write invalid Python ("(?a)" with "(?u:"), refused alike.
        with pytest.raises(fc.GrammarError):
            fc.Grammar.from_regex(pattern, "python")
        return
    g = fc.Grammar.from_regex(pattern, "python")
    for text in texts:
        assert accepts(g, text) == (re.fullmatch(pattern, text) is not None), (pattern, text)


# ------------------------------------------------------- the tool reader --
def test_tool_call_reader_reads_regex_leaves_as_the_engine_does():
    """A structural tag's regex (the default, Rust dialect) is read by the
    output parser exactly as the mask allows it, not by Python's re."""
    from formcast.toolcalls import parse_output

    # Rust reads [[:digit:]] as a POSIX class; Python re as "[" or ":" ... then "]".
    tag = {"type": "structural_tag", "format": {"type": "regex", "pattern": r"[[:digit:]]+x"}}
    g = fc.Grammar.from_structural_tag(tag)
    for text, ok in (("12x", True), (":]x", False)):
        assert accepts(g, text) is ok
        assert parse_output(tag, text).well_formed is ok
    tag = {"type": "structural_tag", "format": {"type": "regex", "pattern": r"(?i)k\d"}}
    assert accepts(fc.Grammar.from_structural_tag(tag), "\u212a٣")
    assert parse_output(tag, "\u212a٣").well_formed
