"""Test helper: feeding outputs to a matcher token by token, checking that
the vocabulary mask allows each token when it comes (the output can be
generated, not only recognized)."""

from __future__ import annotations

import functools
from typing import Iterable, Union

import numpy as np

import formcast as fc


@functools.lru_cache(maxsize=4)
def _plain_vocab(tok: fc.TokenizerInfo) -> tuple[dict[bytes, int], int]:
    special = set(tok.special_token_ids)
    index: dict[bytes, int] = {}
    for i, b in enumerate(tok.all_token_bytes()):
        if i not in special and b and b not in index:
            index[b] = i
    return index, max(len(b) for b in index)


def greedy_tokens(tok: fc.TokenizerInfo, text: str) -> list[int]:
    """A tokenization of ``text`` (longest match first) using no special
    token: a token sequence a model could emit for this text."""
    index, longest = _plain_vocab(tok)
    data = text.encode("utf-8")
    out, i = [], 0
    while i < len(data):
        for n in range(min(longest, len(data) - i), 0, -1):
            t = index.get(data[i:i + n])
            if t is not None:
                out.append(t)
                i += n
                break
        else:
            raise AssertionError(f"no token for {data[i:i + 1]!r}")
    return out


def allowed(m: fc.GrammarMatcher, tok: fc.TokenizerInfo) -> np.ndarray:
    """The mask of ``m``'s next token as a bool array."""
    bm = fc.allocate_token_bitmask(1, tok.logits_size)
    m.fill_next_token_bitmask(bm)
    return fc.bitmask_to_bool(bm, tok.logits_size)[0]


def bit(bm: np.ndarray, t: int) -> bool:
    return bool((int(bm[0, t >> 5]) >> (t & 31)) & 1)


def walk(m: fc.GrammarMatcher, tok: fc.TokenizerInfo, ids: Iterable[int], done: str = "") -> str:
    """Accepts ``ids`` one by one, asserting each is allowed by the mask
    first; returns the text read (for messages)."""
    bm = fc.allocate_token_bitmask(1, tok.logits_size)
    for t in ids:
        m.fill_next_token_bitmask(bm)
        assert bit(bm, t), f"token {t} {tok.token_bytes(t)!r} masked after {done!r}"
        assert m.accept_token(t), f"token {t} {tok.token_bytes(t)!r} refused after {done!r}"
        done += tok.token_bytes(t).decode("utf-8", "replace")
    return done


def can_stop(m: fc.GrammarMatcher, tok: fc.TokenizerInfo) -> bool:
    """A stop token is allowed now."""
    return bool(allowed(m, tok)[tok.stop_token_ids].any())


Piece = Union[str, int]


def tokens_of(tok: fc.TokenizerInfo, pieces: Iterable[Piece]) -> list[int]:
    """Token ids of text pieces (greedy tokenization) and literal ids."""
    out: list[int] = []
    for p in pieces:
        out += [p] if isinstance(p, int) else greedy_tokens(tok, p)
    return out
