"""formcast masks in Hugging Face transformers' ``generate()``.

::

    from formcast.integrations.transformers import FormcastLogitsProcessor

    tok = fc.TokenizerInfo.from_huggingface("tokenizer.json", logits_size=model.config.vocab_size)
    compiler = fc.GrammarCompiler(tok)
    schemas = [person_schema, order_schema]            # one grammar per batch row
    processor = FormcastLogitsProcessor([compiler.compile_json_schema(s) for s in schemas])
    out = model.generate(**batch, logits_processor=[processor], max_new_tokens=256)

At every step the processor advances one formcast matcher per batch row with
the token the row just generated, fills every row's mask in one parallel
call (GIL released) and sets the disallowed logits to ``-inf`` in place (one
Triton kernel on CUDA, a vectorized gather elsewhere). End-of-sequence
tokens are allowed only where a row's grammar may end; the tokenizer info's
stop tokens must include the model's EOS ids (``stop_token_ids=`` when
building it). A row that has ended is left unmasked: ``generate`` pads it.

Greedy search and sampling are supported. Beam search (``num_beams > 1``)
and anything else that reorders rows between steps is not: the processor
checks that every row continues the tokens it saw, and raises
:class:`RowsReorderedError` otherwise. A processor serves one ``generate``
call; make a new one (or :meth:`~FormcastLogitsProcessor.reset`) for the next.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np
import torch
from transformers import LogitsProcessor

from .. import FormcastError, GrammarMatcher, allocate_token_bitmask, apply_token_bitmask_inplace, fill_next_token_bitmask_batch
from ..compiler import CompiledGrammar

__all__ = ["FormcastLogitsProcessor", "RowsReorderedError"]


class RowsReorderedError(FormcastError):
    """The batch's rows do not continue the tokens the processor saw (beam
    search, or a processor reused across ``generate`` calls)."""


class FormcastLogitsProcessor(LogitsProcessor):
    """Masks each batch row with its own compiled grammar.

    ``grammars``: one :class:`~formcast.CompiledGrammar` for every row, or
    a single one for all rows (with ``num_return_sequences``, rows are
    ``batch × num_return_sequences`` and the list repeats each grammar).
    ``terminate_without_stop_token``: a row whose grammar has ended may stop
    without an EOS token being allowed (by default the mask then allows only
    the stop tokens).
    """

    def __init__(self, grammars: Union[CompiledGrammar, Sequence[CompiledGrammar]], *, terminate_without_stop_token: bool = False) -> None:
        compiled = [grammars] if isinstance(grammars, CompiledGrammar) else list(grammars)
        if not compiled:
            raise ValueError("grammars must not be empty")
        if not all(isinstance(g, CompiledGrammar) for g in compiled):
            raise TypeError("grammars must be CompiledGrammar objects (GrammarCompiler.compile / compile_json_schema)")
        sizes = {g.logits_size for g in compiled}
        if len(sizes) != 1:
            raise ValueError("every grammar must be compiled for the same vocabulary")
        self._compiled = compiled
        self._terminate = terminate_without_stop_token
        self.logits_size = sizes.pop()
        self.reset()

    def reset(self) -> None:
        """Forgets the batch, for another ``generate`` call."""
        self._matchers: Optional[list[GrammarMatcher]] = None
        self._prompt_len = 0
        self._seen: Optional[torch.Tensor] = None  # the generated tokens seen so far, per row
        self._bitmask: Optional[np.ndarray] = None
        self._pinned: Optional[torch.Tensor] = None

    def _start(self, input_ids: torch.LongTensor) -> None:
        rows = input_ids.shape[0]
        if len(self._compiled) == 1:
            compiled = self._compiled * rows
        elif len(self._compiled) == rows:
            compiled = self._compiled
        else:
            raise ValueError(
                f"{len(self._compiled)} grammars for {rows} batch rows: give one grammar, or one per row "
                "(batch × num_return_sequences rows; beam search is not supported)"
            )
        self._matchers = [GrammarMatcher(g, terminate_without_stop_token=self._terminate) for g in compiled]
        self._prompt_len = input_ids.shape[1]
        bitmask = allocate_token_bitmask(rows, self.logits_size)
        if input_ids.is_cuda:
            # Page-locked, so the host-to-device copy does not stall; the
            # masks are filled straight into it (pin_memory() copies).
            self._pinned = torch.from_numpy(bitmask).pin_memory()
            bitmask = self._pinned.numpy()
        self._bitmask = bitmask

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self._matchers is None:
            self._start(input_ids)
        else:
            self._advance(input_ids)
        assert self._matchers is not None and self._bitmask is not None
        if scores.shape[1] < self.logits_size - 31 or scores.shape[1] > self.logits_size:
            raise ValueError(
                f"the logits have {scores.shape[1]} columns, the grammars' vocabulary {self.logits_size}: "
                "build the TokenizerInfo with logits_size=model.config.vocab_size"
            )
        active = [i for i, m in enumerate(self._matchers) if not m.is_terminated()]
        ended = [i for i, m in enumerate(self._matchers) if m.is_terminated()]
        if ended:
            self._bitmask[ended] = -1  # generate pads ended rows; keep their softmax finite
        if active:
            fill_next_token_bitmask_batch([self._matchers[i] for i in active], self._bitmask, active)
        bitmask: Any = self._bitmask
        if self._pinned is not None:
            bitmask = self._pinned.to(scores.device, non_blocking=True)
        apply_token_bitmask_inplace(scores, bitmask)
        return scores

    def _advance(self, input_ids: torch.LongTensor) -> None:
        assert self._matchers is not None
        if input_ids.shape[0] != len(self._matchers):
            raise RowsReorderedError(
                f"the batch has {input_ids.shape[0]} rows, the processor started with {len(self._matchers)} "
                "(beam search is not supported; use one processor per generate call)"
            )
        generated = input_ids[:, self._prompt_len :]
        if self._seen is not None and not torch.equal(generated[:, :-1], self._seen):
            raise RowsReorderedError(
                "the batch's rows do not continue the tokens this processor saw: beam search (num_beams > 1) "
                "reorders rows and is not supported, and a processor serves one generate call"
            )
        self._seen = generated
        for i, (m, t) in enumerate(zip(self._matchers, generated[:, -1].tolist())):
            if m.is_terminated():
                continue
            if not m.accept_token(t):
                raise FormcastError(f"row {i}: token {t} is not allowed by its grammar (was the mask applied last?)")
