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
    """The torch path: one kernel launch on CUDA when Triton is there, else
    a vectorized gather through a 256 × 8 table of bits (a bool per logit,
    no per-row Python loop, no int32 per bit). This runs at every decode
    step, at batch 64 × 128k vocabulary."""
    import torch

    two_d = logits if logits.dim() == 2 else logits.unsqueeze(0)
    vocab = two_d.shape[1]
    bm = bitmask if isinstance(bitmask, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(bitmask, dtype=np.int32))
    if bm.dim() == 1:
        bm = bm.unsqueeze(0)
    bm = bm.to(two_d.device, non_blocking=True)
    n_rows = two_d.shape[0] if indices is None else len(indices)
    if bm.shape[0] < n_rows:
        raise ValueError(f"the bitmask has {bm.shape[0]} rows for {n_rows} logits rows")
    triton_apply = _triton_apply() if two_d.is_cuda and two_d.stride(1) == 1 else None
    if triton_apply is not None:
        rows = None if indices is None else torch.as_tensor(list(indices), device=two_d.device, dtype=torch.int32)
        triton_apply(two_d, bm.contiguous(), rows, n_rows)
        return
    allowed = _TORCH_BITS.table(two_d.device)[bm.contiguous().view(torch.uint8).to(torch.int32)].flatten(1)
    if allowed.shape[1] >= vocab:
        allowed = allowed[:, :vocab]
    else:
        allowed = torch.nn.functional.pad(allowed, (0, vocab - allowed.shape[1]), value=False)
    if indices is None:
        two_d.masked_fill_(~allowed[: two_d.shape[0]], float("-inf"))
    else:
        rows_t = torch.as_tensor(list(indices), device=two_d.device, dtype=torch.long)
        two_d[rows_t] = two_d[rows_t].masked_fill(~allowed[: len(indices)], float("-inf"))


class _BitTable:
    """``table[b, k]`` is bit ``k`` of byte ``b`` (little-endian bit order,
    the bitmask's layout), one copy per device."""

    def __init__(self) -> None:
        self._by_device: dict[Any, Any] = {}

    def table(self, device: Any) -> Any:
        t = self._by_device.get(device)
        if t is None:
            import torch

            bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(bool)
            t = torch.from_numpy(bits).to(device)
            self._by_device[device] = t
        return t


_TORCH_BITS = _BitTable()


_TRITON: list[Any] = []


def _triton_apply() -> Any:
    """The Triton kernel that applies a bitmask in place, or None without
    Triton (CPU-only installs). Loaded on first use on a GPU: importing
    Triton takes most of a second."""
    if not _TRITON:
        _TRITON.append(_load_triton_apply())
    return _TRITON[0]


def _load_triton_apply() -> Any:
    try:
        import triton
        import triton.language as tl
    except Exception:  # noqa: BLE001 - no Triton, or no GPU toolchain: the torch path
        return None

    @triton.jit
    def kernel(logits_ptr, bitmask_ptr, rows_ptr, vocab, logits_stride, bitmask_stride, HAS_ROWS: tl.constexpr, BLOCK: tl.constexpr):
        i = tl.program_id(0)
        block = tl.program_id(1)
        row = tl.load(rows_ptr + i) if HAS_ROWS else i
        offs = block * BLOCK + tl.arange(0, BLOCK)
        inside = offs < vocab
        words = tl.load(bitmask_ptr + i * bitmask_stride + offs // 32, mask=inside & (offs // 32 < bitmask_stride), other=0)
        allowed = ((words >> (offs % 32)) & 1) != 0
        tl.store(logits_ptr + row * logits_stride + offs, float("-inf"), mask=inside & ~allowed)

    def apply(logits: Any, bitmask: Any, rows: Any, n_rows: int) -> None:
        vocab = logits.shape[1]
        block = 4096
        grid = (n_rows, triton.cdiv(vocab, block))
        kernel[grid](logits, bitmask, rows if rows is not None else bitmask, vocab, logits.stride(0), bitmask.shape[1],
                     HAS_ROWS=rows is not None, BLOCK=block)

    return apply
