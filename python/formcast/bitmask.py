"""Token bitmasks: allocation, batch filling and applying them to logits.

A bitmask is an int32 array of shape ``[batch, ceil(vocab_size / 32)]``;
bit ``i % 32`` of word ``i // 32`` is set when token ``i`` is allowed — the
layout frameworks use, so one buffer can be shared with the sampler.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _engine

__all__ = [
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "fill_next_token_bitmask_batch",
    "bitmask_to_bool",
]


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """A C-contiguous int32 bitmask with every token allowed."""
    if batch_size < 1 or vocab_size < 1:
        raise ValueError("batch_size and vocab_size must be positive")
    return np.full((batch_size, (vocab_size + 31) // 32), -1, dtype=np.int32)


def fill_next_token_bitmask_batch(
    matchers: Sequence[_engine.GrammarMatcher],
    bitmask: np.ndarray,
    indices: Sequence[int] | None = None,
) -> None:
    """Fills row ``indices[i]`` (default ``i``) with ``matchers[i]``'s mask, in
    parallel on all cores with the GIL released."""
    _engine.fill_next_token_bitmask_batch(list(matchers), bitmask, None if indices is None else list(indices))


def bitmask_to_bool(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """Unpacks a bitmask into a bool array of shape ``[batch, vocab_size]``."""
    bm = np.ascontiguousarray(bitmask, dtype=np.int32)
    if bm.ndim == 1:
        bm = bm[None, :]
    bits = np.unpackbits(bm.view(np.uint8), axis=1, bitorder="little")
    return bits[:, :vocab_size].astype(bool)


def apply_token_bitmask_inplace(logits: Any, bitmask: Any, indices: Sequence[int] | None = None) -> None:
    """Sets disallowed logits to ``-inf`` in place.

    ``logits`` is a numpy array or a torch tensor of shape ``[batch, vocab]``
    (or ``[vocab]``); ``bitmask`` the matching int32 bitmask. ``indices``
    selects the logits rows to mask (row ``indices[i]`` uses bitmask row
    ``i``). Tokens beyond the bitmask's width are masked too.
    """
    if type(logits).__module__.startswith("torch"):
        _apply_torch(logits, bitmask, indices)
        return
    if not isinstance(logits, np.ndarray):
        raise TypeError(f"logits must be a numpy array or a torch tensor, not {type(logits).__name__}")
    two_d = logits if logits.ndim == 2 else logits[None, :]
    vocab = two_d.shape[1]
    allowed = bitmask_to_bool(np.asarray(bitmask), vocab)
    if allowed.shape[1] < vocab:
        pad = np.zeros((allowed.shape[0], vocab - allowed.shape[1]), dtype=bool)
        allowed = np.concatenate([allowed, pad], axis=1)
    rows = range(two_d.shape[0]) if indices is None else indices
    for i, r in enumerate(rows):
        two_d[r, ~allowed[i if indices is not None else r]] = -np.inf


def _apply_torch(logits: Any, bitmask: Any, indices: Sequence[int] | None) -> None:
    import torch

    two_d = logits if logits.dim() == 2 else logits.unsqueeze(0)
    vocab = two_d.shape[1]
    bm = bitmask if isinstance(bitmask, torch.Tensor) else torch.from_numpy(np.asarray(bitmask))
    bm = bm.to(two_d.device)
    if bm.dim() == 1:
        bm = bm.unsqueeze(0)
    shifts = torch.arange(32, device=bm.device, dtype=torch.int32)
    allowed = ((bm.unsqueeze(-1) >> shifts) & 1).bool().flatten(1)[:, :vocab]
    if allowed.shape[1] < vocab:
        allowed = torch.nn.functional.pad(allowed, (0, vocab - allowed.shape[1]), value=False)
    rows = list(range(two_d.shape[0])) if indices is None else list(indices)
    for i, r in enumerate(rows):
        two_d[r].masked_fill_(~allowed[i if indices is not None else r], float("-inf"))
