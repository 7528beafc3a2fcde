"""formcast as SGLang's grammar backend: ``--grammar-backend formcast``.

Installing formcast is enough: its ``sglang.srt.plugins`` entry point makes
SGLang call :func:`register` in every process, which adds ``formcast`` to the
``--grammar-backend`` choices and to SGLang's registry of grammar backends::

    python -m sglang.launch_server --model-path ... --grammar-backend formcast

Every kind of constrained request SGLang dispatches (``json_schema``,
``regex``, ``ebnf``, ``structural_tag``, tool calls through structural tags)
is compiled by formcast, exactly: a JSON-Schema keyword formcast cannot
honour fails that request with a message naming it, never a looser grammar.
Compilation has a time budget (``FORMCAST_COMPILE_TIMEOUT_S``, 10 s) and
formcast's cache; masks are int32 bitmasks in the layout SGLang's samplers
use, filled for the whole batch in one call with the GIL released.

With ``--reasoning-parser``, the grammar is wrapped in SGLang's own reasoning
wrapper (free text until the think-end token), as SGLang does for its
built-in backends.

Only the SGLang versions in :data:`TESTED_VERSIONS` are accepted: on any
other, selecting the backend fails at start-up with a message saying so.
"""

from __future__ import annotations

import json
import logging
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import torch

from .. import FormcastError, GrammarMatcher, apply_token_bitmask_inplace, fill_next_token_bitmask_batch
from ..compiler import CompiledGrammar
from ._engines import RequestCompiler, tokenizer_info_from_hf

__all__ = ["register", "FormcastGrammarBackend", "FormcastGrammar", "TESTED_VERSIONS", "BACKEND_NAME"]

logger = logging.getLogger(__name__)

#: SGLang releases this integration was tested against (CI runs the tests on them).
TESTED_VERSIONS = ("0.5.23",)
BACKEND_NAME = "formcast"
#: How many tokens a grammar can roll back (speculative decoding's deepest draft).
MAX_ROLLBACK_TOKENS = 200

try:  # SGLang's own classes; the module is only imported by SGLang's plugin loader or by users of SGLang.
    import sglang
    from sglang.srt.constrained.base_grammar_backend import (
        BaseGrammarBackend,
        BaseGrammarObject,
        GrammarRow,
        GrammarStats,
        InvalidGrammarObject,
    )
except ImportError as e:  # pragma: no cover - exercised only without SGLang
    raise ImportError("formcast.integrations.sglang needs SGLang installed (pip install sglang)") from e


def _version_problem() -> Optional[str]:
    version = getattr(sglang, "__version__", "unknown")
    if version in TESTED_VERSIONS:
        return None
    return (
        f"formcast's SGLang backend was tested with SGLang {', '.join(TESTED_VERSIONS)}, not {version}: "
        f"install one of those (pip install 'sglang=={TESTED_VERSIONS[-1]}') or use another --grammar-backend"
    )


def register() -> None:
    """The plugin entry point SGLang calls in every process (idempotent).

    Adds ``formcast`` to ``--grammar-backend``'s choices and registers its
    factory. On an SGLang version formcast was not tested with, the choice is
    still added, so that selecting it fails with a message naming the tested
    versions instead of an unknown-choice error.
    """
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    from sglang.srt.constrained.base_grammar_backend import register_grammar_backend

    if BACKEND_NAME not in GRAMMAR_BACKEND_CHOICES:
        GRAMMAR_BACKEND_CHOICES.append(BACKEND_NAME)
    register_grammar_backend(BACKEND_NAME, create_backend)
    problem = _version_problem()
    if problem:
        logger.warning(problem)


def create_backend(server_args: Any, tokenizer: Any, vocab_size: int, eos_token_ids: Optional[Sequence[int]] = None) -> BaseGrammarBackend:
    """SGLang's grammar-backend factory for ``--grammar-backend formcast``."""
    problem = _version_problem()
    if problem:
        raise RuntimeError(problem)
    from sglang.srt.runtime_context import get_serving

    serving = get_serving()
    if getattr(serving, "constrained_json_whitespace_pattern", None):
        # A whitespace regex cannot be honoured exactly; refusing beats a
        # silently different layout.
        raise ValueError(
            "--constrained-json-whitespace-pattern is not supported by the formcast grammar backend: "
            "use --constrained-json-disable-any-whitespace or --constrained-json-max-whitespace-cnt"
        )
    backend: BaseGrammarBackend = FormcastGrammarBackend(
        tokenizer,
        vocab_size=vocab_size,
        eos_token_ids=eos_token_ids,
        any_whitespace=not getattr(serving, "constrained_json_disable_any_whitespace", False),
        max_whitespace=getattr(serving, "constrained_json_max_whitespace_cnt", None),
    )
    if getattr(serving, "reasoning_parser", None):
        # SGLang wraps only its built-in backends in the reasoning wrapper; a
        # registered backend is returned as is, so wrap ours the same way.
        from sglang.srt.constrained.reasoner_grammar_backend import ReasonerGrammarBackend
        from sglang.srt.parser.reasoning_parser import ReasoningParser

        parser = ReasoningParser(model_type=serving.reasoning_parser, stream_reasoning=False, tokenizer=tokenizer)
        backend = ReasonerGrammarBackend(backend, parser, tokenizer, enable_strict_thinking=bool(getattr(serving, "enable_strict_thinking", False)))
    return backend


def _allocate(vocab_size: int, batch_size: int, device: Any = None) -> torch.Tensor:
    # Page-locked where CUDA is there, so the host-to-device copy can be
    # non-blocking; every token allowed until a row is filled.
    return torch.full((batch_size, (vocab_size + 31) // 32), -1, dtype=torch.int32, pin_memory=torch.cuda.is_available())


def _move(vocab_mask: torch.Tensor, device: Any) -> torch.Tensor:
    return vocab_mask.to(device, non_blocking=True)


def _apply(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
    apply_token_bitmask_inplace(logits, vocab_mask)


class FormcastGrammar(BaseGrammarObject):
    """One request's grammar state: a formcast matcher behind SGLang's
    grammar-object contract (accept, rollback, masks, copy, termination,
    jump-forward)."""

    def __init__(self, compiled: CompiledGrammar, vocab_size: int, key_string: str, grammar_stats: Optional[GrammarStats] = None) -> None:
        super().__init__()
        self.compiled = compiled
        self.vocab_size = vocab_size
        self.key_string = key_string
        self.grammar_stats = grammar_stats
        self.matcher = GrammarMatcher(compiled, max_rollback_tokens=MAX_ROLLBACK_TOKENS)
        # A mask that could not be computed (a formcast limit) ends this
        # request alone: the error is raised at its next accept_token, which
        # SGLang turns into an abort of that request.
        self.error: Optional[str] = None

    # -- tokens ---------------------------------------------------------
    def accept_token(self, token: int) -> None:
        if self.error is not None:
            raise ValueError(self.error)
        if self.matcher.is_terminated():
            return
        self.current_token = token
        if not self.matcher.accept_token(int(token)):
            raise ValueError(f"token {token} is not allowed by the {self._kind()} grammar here")

    def rollback(self, k: int) -> None:
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    # -- masks ----------------------------------------------------------
    allocate_vocab_mask = staticmethod(_allocate)
    move_vocab_mask = staticmethod(_move)
    apply_vocab_mask = staticmethod(_apply)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        _fill_rows([GrammarRow(row=idx, grammar=self)], vocab_mask)

    @staticmethod
    def fill_vocab_mask_batched(entries: List[GrammarRow], vocab_mask: torch.Tensor) -> None:
        _fill_rows(entries, vocab_mask)

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        vocab_mask.fill_(-1)

    # -- state ----------------------------------------------------------
    def copy(self) -> "FormcastGrammar":
        """A fresh state for another request with the same grammar (SGLang's
        cache hands out copies of the first one)."""
        stats = self.grammar_stats
        if stats is not None:
            import dataclasses

            stats = dataclasses.replace(stats, is_cache_hit=True, tree_traversal_time=[])
        return FormcastGrammar(self.compiled, self.vocab_size, self.key_string, stats)

    # -- jump-forward ---------------------------------------------------
    def try_jump_forward(self, tokenizer: Any) -> Optional[Tuple[List[int], str]]:
        """The text every continuation must start with, if any (formcast's
        jump-forward string: whole characters the grammar forces)."""
        if self.error is not None or self.matcher.is_terminated():
            return None
        forced = self.matcher.find_jump_forward_string()
        return ([], forced) if forced else None

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids: List[int], new_output_ids: List[int], next_state: int) -> None:
        """After SGLang appended the forced text and retokenized the output:
        roll back to the common prefix and accept the new tokens."""
        common = 0
        for old, new in zip(old_output_ids, new_output_ids):
            if old != new:
                break
            common += 1
        if common < len(old_output_ids):
            self.matcher.rollback(len(old_output_ids) - common)
        for i in range(common, len(new_output_ids)):
            if not self.matcher.accept_token(int(new_output_ids[i])):
                raise ValueError(f"retokenized token {new_output_ids[i]} at {i} is not allowed by the {self._kind()} grammar")

    def _kind(self) -> str:
        stats = self.grammar_stats
        return (stats.dispatch_type if stats is not None and stats.dispatch_type else "request")

    def __repr__(self) -> str:
        return f"FormcastGrammar(kind={self._kind()!r}, terminated={self.matcher.is_terminated()})"


def _fill_rows(entries: Sequence[Any], vocab_mask: torch.Tensor) -> None:
    """Fills every listed row in one parallel call; a row whose mask fails
    (a formcast limit) is left all-allowed and its grammar remembers the
    error, so that request ends alone and its batch-mates go on."""
    if not entries:
        return
    if vocab_mask.device.type != "cpu" or vocab_mask.dtype != torch.int32:
        raise ValueError("formcast fills int32 vocab masks on the CPU (allocate_vocab_mask), then move_vocab_mask")
    grammars = [e.grammar for e in entries]
    rows = [int(e.row) for e in entries]
    mask = vocab_mask.numpy()
    live = [(g, r) for g, r in zip(grammars, rows) if g.error is None]
    try:
        fill_next_token_bitmask_batch([g.matcher for g, _ in live], mask, [r for _, r in live])
        return
    except FormcastError:
        pass
    for g, r in live:  # find the failing rows; the others get their masks
        try:
            g.matcher.fill_next_token_bitmask(mask, r)
        except FormcastError as e:
            g.error = f"formcast could not compute this request's token mask: {type(e).__name__}: {e}"
            logger.error("%s (grammar %r)", g.error, g)
            mask[r] = -1


class FormcastGrammarBackend(BaseGrammarBackend):
    """SGLang's grammar backend over formcast's compiler.

    ``tokenizer`` is SGLang's Hugging Face tokenizer (a fast one),
    ``vocab_size`` the model's logits width and ``eos_token_ids`` the
    model's end-of-generation ids (the only tokens allowed where a grammar
    can end, and only there).
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        vocab_size: int,
        eos_token_ids: Optional[Sequence[int]] = None,
        any_whitespace: bool = True,
        max_whitespace: Optional[int] = None,
        timeout_s: Optional[float] = None,
    ) -> None:
        super().__init__()
        info = tokenizer_info_from_hf(tokenizer, logits_size=vocab_size, stop_token_ids=eos_token_ids)
        self.requests = RequestCompiler(info, timeout_s=timeout_s, any_whitespace=any_whitespace, max_whitespace=max_whitespace)
        self.vocab_size = vocab_size

    # The reasoning wrapper asks the backend for these.
    allocate_vocab_mask = staticmethod(_allocate)
    move_vocab_mask = staticmethod(_move)
    apply_vocab_mask = staticmethod(_apply)

    @property
    def is_support_token_filter(self) -> bool:
        return True

    @staticmethod
    def set_token_filter(vocab_mask: torch.Tensor, token_ids: List[int], batch_idx: int, is_allowed: bool = True, reset_vocab_mask: bool = True) -> None:
        """Strict thinking's token filter, on the same int32 bitmask layout as
        SGLang's own (SGLang's filter ops are used as they are)."""
        if vocab_mask.device.type == "cuda":
            from sglang.kernels.ops.grammar.token_filter_ops import set_token_filter_triton as op
        else:
            from sglang.srt.constrained.torch_ops.token_filter_torch_ops import set_token_filter_torch as op
        op(vocab_mask, token_ids, batch_idx, is_allowed=is_allowed, reset_vocab_mask=reset_vocab_mask)

    def _dispatch(self, kind: str, key_string: str, compile_one: Any) -> BaseGrammarObject:
        try:
            compiled = compile_one(key_string)
        except (FormcastError, ValueError, TypeError) as e:  # JSON errors are ValueErrors
            logger.warning("formcast refused a %s grammar: %s", kind, e)
            return InvalidGrammarObject(f"{type(e).__name__}: {e}")
        return FormcastGrammar(compiled, self.vocab_size, key_string, GrammarStats(dispatch_type=kind))

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        return self._dispatch("json", key_string, self.requests.json_schema)

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._dispatch("regex", key_string, self.requests.regex)

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        return self._dispatch("ebnf", key_string, self.requests.ebnf)

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        return self._dispatch("structural_tag", key_string, self.requests.structural_tag)

    def reset(self) -> None:
        super().reset()
        self.requests.clear()
