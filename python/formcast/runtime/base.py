"""The interface every model runtime implements.

A runtime owns a model and a fixed number of sequence *slots*, each with its
own KV cache. The scheduler (``formcast.server.engine``) drives it one step at
a time: :meth:`ModelRuntime.forward` feeds new tokens to any number of slots
in one call and returns, for each slot fed, the logits after its last token.
Masking and sampling happen outside the runtime, on those logits, so every
backend gets formcast's token mask at every step.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..tokenizer import TokenizerInfo

__all__ = ["ModelRuntime", "SequenceFeed", "ModelRuntimeError"]


class ModelRuntimeError(RuntimeError):
    """The model backend failed (out of context, decode error, ...)."""


@dataclass(frozen=True)
class SequenceFeed:
    """Tokens to append to one slot. ``start`` is the position of the first
    of them (the slot's KV cache from ``start`` on is discarded first)."""

    slot: int
    tokens: Sequence[int]
    start: int


class ModelRuntime(ABC):
    """A loaded model with ``num_slots`` independent sequences.

    Attributes set by implementations:

    * ``model_id``: the name served in ``/v1/models``;
    * ``tokenizer``: the vocabulary as a :class:`~formcast.TokenizerInfo`
      (stop tokens = every end-of-generation token);
    * ``n_ctx``: the context window of one sequence;
    * ``kv_capacity``: KV cells shared by all slots (``n_ctx`` per slot when
      the cache is not shared);
    * ``num_slots``: sequences that can be decoded together;
    * ``max_batch_tokens``: tokens one :meth:`forward` call can take before it
      splits the work into several backend calls.
    """

    model_id: str
    tokenizer: TokenizerInfo
    n_ctx: int
    kv_capacity: int
    num_slots: int
    max_batch_tokens: int

    # ------------------------------------------------------------ text --
    @abstractmethod
    def tokenize(self, text: str, *, add_special: bool = False, parse_special: bool = True) -> list[int]:
        """Token ids of ``text``; ``add_special`` adds BOS (when the model
        wants one), ``parse_special`` turns special-token text such as
        ``<|im_end|>`` into the special ids."""

    def detokenize(self, ids: Sequence[int]) -> bytes:
        """The bytes the ids decode to (special tokens as their text)."""
        tb = self.tokenizer.token_bytes
        return b"".join(tb(int(i)) for i in ids)

    @property
    @abstractmethod
    def chat_template(self) -> Optional[str]:
        """The model's Jinja chat template, if it ships one."""

    @property
    @abstractmethod
    def bos_token(self) -> str:
        """Text of the BOS token ("" when there is none)."""

    @property
    @abstractmethod
    def eos_token(self) -> str:
        """Text of the EOS token ("" when there is none)."""

    @property
    def stop_token_ids(self) -> frozenset[int]:
        """Every end-of-generation id."""
        return frozenset(self.tokenizer.stop_token_ids)

    @property
    def logits_size(self) -> int:
        """Width of a logits row."""
        return self.tokenizer.logits_size

    # ---------------------------------------------------------- decode --
    @abstractmethod
    def forward(self, feeds: Sequence[SequenceFeed]) -> np.ndarray:
        """Appends each feed's tokens to its slot and returns a float32 array
        ``[len(feeds), logits_size]``: row ``i`` is the next-token logits after
        the last token of ``feeds[i]``. Slots may appear at most once."""

    @abstractmethod
    def clear_slot(self, slot: int, keep: int = 0) -> None:
        """Drops the slot's KV cache from position ``keep`` on."""

    def close(self) -> None:
        """Releases the model (idempotent)."""

    def describe(self) -> dict:
        """Facts about the loaded model for ``/v1/models`` and logs."""
        return {
            "id": self.model_id,
            "n_ctx": self.n_ctx,
            "slots": self.num_slots,
            "vocab_size": self.tokenizer.vocab_size,
        }
