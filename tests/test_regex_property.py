"""Property test: a regex grammar accepts exactly Python's ``re.fullmatch``
language (for the syntax both engines share)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

import formcast as fc

BYTES = fc.TokenizerInfo.from_vocab([bytes([i]) for i in range(256)])
COMPILER = fc.GrammarCompiler(BYTES)

atoms = st.sampled_from(["a", "b", "c", "é", ".", r"\d", r"\w", r"\s", r"\D", "[ab]", "[^a]", "[a-c]", r"\.", "x"])


def regexes(leaves=atoms, max_leaves=6):
    """Patterns built from ``leaves`` by concatenation, alternation,
    quantifiers and groups (test_regex_dialects draws ECMA ones with it)."""

    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map(lambda t: t[0] + t[1]),
            st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{0,2}", "{1,}", "*?"])).map(lambda t: f"(?:{t[0]}){t[1]}"),
            inner.map(lambda r: f"({r})"),
        )

    return st.recursive(leaves, extend, max_leaves=max_leaves)


texts = st.text(alphabet=["a", "b", "c", "é", "1", " ", ".", "x", "\n", "_"], max_size=6)


@settings(max_examples=300, deadline=None)
@given(regexes(), st.lists(texts, min_size=1, max_size=6))
def test_regex_language_matches_python_re(pattern, samples):
    compiled = COMPILER.compile(fc.Grammar.from_regex(pattern))
    for text in samples:
        m = fc.GrammarMatcher(compiled)
        ours = m.accept_string(text) and m.can_terminate()
        assert ours == (re.fullmatch(pattern, text) is not None), (pattern, text)
