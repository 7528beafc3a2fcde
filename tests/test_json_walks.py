"""Random decodes of the built-in JSON grammar over the real Llama-3
vocabulary, checked against the independent Earley recognizer.

At every step a random allowed token is taken (biased towards short tokens so
documents close), the reference must agree that the text stays a viable JSON
prefix, and a sample of masked-out tokens must be non-viable for it. Finished
documents must parse with ``json.loads``.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import formcast as fc
from oracle import Earley


def _r(lo: int, hi: int) -> tuple:
    return ("t", frozenset(range(lo, hi + 1)))


def _b(s: bytes) -> list[tuple]:
    return [("t", frozenset([c])) for c in s]


# RFC 8259 JSON over bytes, with strict UTF-8 inside strings.
NT = lambda name: ("n", name)  # noqa: E731
JSON_BNF = {
    "value": [[NT("object")], [NT("array")], [NT("string")], [NT("number")], _b(b"true"), _b(b"false"), _b(b"null")],
    "ws": [[], [("t", frozenset(b" \t\n\r")), NT("ws")]],
    "object": [_b(b"{") + [NT("ws")] + _b(b"}"), _b(b"{") + [NT("ws"), NT("members")] + _b(b"}")],
    "members": [[NT("member")], [NT("member")] + _b(b",") + [NT("ws"), NT("members")]],
    "member": [[NT("string"), NT("ws")] + _b(b":") + [NT("ws"), NT("value"), NT("ws")]],
    "array": [_b(b"[") + [NT("ws")] + _b(b"]"), _b(b"[") + [NT("ws"), NT("elements")] + _b(b"]")],
    "elements": [[NT("value"), NT("ws")], [NT("value"), NT("ws")] + _b(b",") + [NT("ws"), NT("elements")]],
    "string": [_b(b'"') + [NT("chars")] + _b(b'"')],
    "chars": [[], [NT("char"), NT("chars")]],
    "char": [
        [("t", frozenset(set(range(0x20, 0x80)) - {0x22, 0x5C}))],
        _b(b"\\") + [("t", frozenset(b'"\\/bfnrt'))],
        _b(b"\\u") + [NT("hex")] * 4,
        [_r(0xC2, 0xDF), _r(0x80, 0xBF)],
        [_r(0xE0, 0xE0), _r(0xA0, 0xBF), _r(0x80, 0xBF)],
        [_r(0xE1, 0xEC), _r(0x80, 0xBF), _r(0x80, 0xBF)],
        [_r(0xED, 0xED), _r(0x80, 0x9F), _r(0x80, 0xBF)],
        [_r(0xEE, 0xEF), _r(0x80, 0xBF), _r(0x80, 0xBF)],
        [_r(0xF0, 0xF0), _r(0x90, 0xBF), _r(0x80, 0xBF), _r(0x80, 0xBF)],
        [_r(0xF1, 0xF3), _r(0x80, 0xBF), _r(0x80, 0xBF), _r(0x80, 0xBF)],
        [_r(0xF4, 0xF4), _r(0x80, 0x8F), _r(0x80, 0xBF), _r(0x80, 0xBF)],
    ],
    "hex": [[("t", frozenset(b"0123456789abcdefABCDEF"))]],
    "number": [[NT("sign"), NT("int"), NT("frac"), NT("exp")]],
    "sign": [[], _b(b"-")],
    "int": [_b(b"0"), [_r(0x31, 0x39), NT("digits")]],
    "digits": [[], [_r(0x30, 0x39), NT("digits")]],
    "digits1": [[_r(0x30, 0x39), NT("digits")]],
    "frac": [[], _b(b".") + [NT("digits1")]],
    "exp": [[], [("t", frozenset(b"eE")), NT("expsign"), NT("digits1")]],
    "expsign": [[], [("t", frozenset(b"+-"))]],
}


@pytest.fixture(scope="module")
def json_matcher_parts(llama3):
    compiled = fc.GrammarCompiler(llama3).compile(fc.Grammar.builtin_json())
    all_bytes = llama3.all_token_bytes()
    special = set(llama3.special_token_ids)
    short = np.array([len(b) <= 2 and i not in special for i, b in enumerate(all_bytes)])
    return llama3, compiled, all_bytes, short


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_random_json_decodes_agree_with_reference(json_matcher_parts, seed):
    tok, compiled, all_bytes, short = json_matcher_parts
    rng = random.Random(seed)
    matcher = fc.GrammarMatcher(compiled)
    ref = Earley(JSON_BNF, "value")
    bitmask = fc.allocate_token_bitmask(1, tok.logits_size)
    text = b""
    for step in range(90):
        matcher.fill_next_token_bitmask(bitmask)
        allowed = fc.bitmask_to_bool(bitmask, tok.logits_size)[0]
        stop_ok = bool(allowed[tok.stop_token_ids].any())
        assert stop_ok == ref.can_end(), text
        ids = np.nonzero(allowed)[0]
        ids = ids[~np.isin(ids, tok.stop_token_ids)]
        if stop_ok and (step > 60 or rng.random() < 0.15 or len(ids) == 0):
            assert matcher.accept_token(tok.stop_token_ids[0])
            json.loads(text)
            return
        assert len(ids) > 0
        # Masked-out tokens must be non-viable for the reference.
        for t in rng.sample(range(len(all_bytes)), 40):
            if not allowed[t] and t not in tok.special_token_ids:
                assert not ref.viable(all_bytes[t]), (text, all_bytes[t])
        # Prefer short tokens late in the walk, so documents can close.
        pool = ids[short[ids]] if step > 20 and short[ids].any() else ids
        t = int(rng.choice(list(pool)))
        assert ref.viable(all_bytes[t]), (text, all_bytes[t])
        assert matcher.accept_token(t)
        assert ref.feed(all_bytes[t])
        text += all_bytes[t]
