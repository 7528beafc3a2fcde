"""formcast as a vLLM (v1 engine) structured-output backend.

Installing formcast registers a ``vllm.general_plugins`` entry point, so
vLLM calls :func:`register` in each of its processes and then accepts::

    vllm serve MODEL --structured-outputs-config '{"backend": "formcast"}'

    # offline: register first, the LLM constructor validates its config
    # before vLLM loads plugins
    from formcast.integrations.vllm import register
    register()
    llm = LLM(MODEL, structured_outputs_config={"backend": "formcast"})

Every request kind vLLM has is served: ``json`` (JSON Schema, compiled
exactly: a keyword formcast cannot enforce is refused, never dropped),
``json_object``, ``regex``, ``grammar`` (GBNF; Lark is not read),
``choice`` and ``structural_tag``. A request formcast refuses is rejected
when it arrives (HTTP 400), with formcast's message. End-of-sequence is
allowed only where the grammar can end; the stop ids are the request's
(the model's EOS ids plus its ``stop_token_ids``). Speculative decoding and
reasoning parsers (``--reasoning-parser``) work as with vLLM's own backends:
vLLM keeps the reasoning outside the grammar.

vLLM's backends are a closed list, so :func:`register` patches three places,
each by wrapping, never by replacing vLLM's logic:

- ``StructuredOutputsConfig.backend``'s ``Literal`` gains ``"formcast"``;
- ``SamplingParams._validate_structured_outputs`` validates formcast
  requests (vLLM's own checks otherwise send the request to xgrammar);
- ``StructuredOutputManager.grammar_init`` builds :class:`FormcastBackend`
  the first time a formcast request arrives.

Only the vLLM versions in :data:`TESTED_VLLM_VERSIONS` are accepted: on any
other, :func:`register` patches nothing (it logs an error naming the tested
versions, and ``backend="formcast"`` stays an unknown backend to vLLM), and
:class:`FormcastBackend` refuses to be built, rather than run against code
it was not tested with.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

import numpy as np
import torch
import vllm
from vllm.v1.structured_output.backend_types import (
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)

from .. import CompiledGrammar, FormcastError, GrammarError, GrammarMatcher, TokenizerInfo, allocate_token_bitmask
from ._engines import RequestCompiler, tokenizer_info_from_hf

if TYPE_CHECKING:
    from vllm.config import ModelConfig, StructuredOutputsConfig
    from vllm.sampling_params import SamplingParams

__all__ = ["register", "FormcastBackend", "FormcastGrammar", "TESTED_VLLM_VERSIONS", "BACKEND_NAME"]

logger = logging.getLogger(__name__)

#: The value of ``structured_outputs_config.backend`` that selects formcast.
BACKEND_NAME = "formcast"

#: vLLM release series (major.minor) this integration was tested against.
TESTED_VLLM_VERSIONS = ("0.33",)

# vLLM's json_object means a JSON object, as its other backends compile it.
_JSON_OBJECT_SCHEMA = '{"type": "object"}'

# Distinct stop-id sets get their own vocabulary (stop ids are part of a
# formcast TokenizerInfo); almost every request has the model's set.
_MAX_STOP_SETS = 4

# States a matcher keeps for rollback at the least.
_MIN_ROLLBACK = 16

# Marks our wrappers so that register() never wraps twice.
_WRAPPED = "__formcast_wrapped__"

_register_lock = threading.Lock()


def _check_vllm_version(version: Optional[str] = None) -> None:
    """Raises ``RuntimeError`` unless ``version`` (default: the installed
    vLLM's) is in a tested release series."""
    version = vllm.__version__ if version is None else version
    m = re.match(r"\s*(\d+)\.(\d+)", str(version))
    if m is None or f"{m[1]}.{m[2]}" not in TESTED_VLLM_VERSIONS:
        tested = ", ".join(f"{v}.x" for v in TESTED_VLLM_VERSIONS)
        raise RuntimeError(
            f"formcast's vLLM backend was tested with vLLM {tested} only, and vLLM {version} is installed: "
            "it patches vLLM internals that change between releases, so it refuses to run on another version. "
            "Install a tested vLLM to use backend 'formcast'."
        )


# ---------------------------------------------------------------- compiling --


def _compile(rc: RequestCompiler, kind: StructuredOutputOptions, spec: str) -> CompiledGrammar:
    """One request's grammar, by vLLM request kind."""
    if kind is StructuredOutputOptions.JSON:
        return rc.json_schema(spec)
    if kind is StructuredOutputOptions.JSON_OBJECT:
        return rc.json_schema(_JSON_OBJECT_SCHEMA)
    if kind is StructuredOutputOptions.REGEX:
        return rc.regex(spec)
    if kind is StructuredOutputOptions.GRAMMAR:
        try:
            return rc.ebnf(spec)
        except GrammarError as e:
            if "::=" not in spec:  # vLLM's other backends also take Lark (`rule: ...`)
                raise GrammarError(f"{e} (formcast reads GBNF grammars, `rule ::= ...`; Lark grammars are not supported)") from e
            raise
    if kind is StructuredOutputOptions.CHOICE:
        choices = json.loads(spec)
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            raise ValueError("choice must be a list of strings")
        return rc.choice(choices)
    if kind is StructuredOutputOptions.STRUCTURAL_TAG:
        return rc.structural_tag(spec)
    raise ValueError(f"formcast does not support the structured output kind {kind}")


def _int_ids(value: Any) -> set[int]:
    if value is None:
        return set()
    if isinstance(value, int):
        return {value}
    return {int(v) for v in value}


def _model_stop_ids(tokenizer: Any, model_config: Optional["ModelConfig"]) -> frozenset[int]:
    """The model's end-of-generation ids: the tokenizer's EOS and the
    generation config's ``eos_token_id`` (what vLLM stops on by default)."""
    stops = _int_ids(getattr(tokenizer, "eos_token_id", None))
    if model_config is not None:
        try:
            gen = model_config.try_get_generation_config() or {}
        except Exception:  # a model without generation_config.json
            gen = {}
        stops |= _int_ids(gen.get("eos_token_id"))
    return frozenset(stops)


class _Vocabularies:
    """RequestCompilers for one tokenizer, one per stop-id set (LRU)."""

    def __init__(self, tokenizer: Any, logits_size: int, default_stops: frozenset[int]) -> None:
        self.tokenizer = tokenizer
        self.logits_size = logits_size
        self.default_stops = default_stops
        self._lock = threading.Lock()
        self._by_stops: OrderedDict[frozenset[int], tuple[RequestCompiler, tuple[int, ...]]] = OrderedDict()

    def get(self, stop_token_ids: Optional[Iterable[int]] = None) -> RequestCompiler:
        return self.get_with_text_stops(stop_token_ids)[0]

    def get_with_text_stops(self, stop_token_ids: Optional[Iterable[int]] = None) -> tuple[RequestCompiler, tuple[int, ...]]:
        """The compiler for these stop ids, and those of them that are plain
        text tokens (a user's ``stop_token_ids`` may be, EOS ids are special)."""
        stops = frozenset(int(t) for t in stop_token_ids) if stop_token_ids else self.default_stops
        with self._lock:
            hit = self._by_stops.get(stops)
            if hit is not None:
                self._by_stops.move_to_end(stops)
                return hit
            info = tokenizer_info_from_hf(self.tokenizer, logits_size=self.logits_size, stop_token_ids=stops or None)
            special = set(info.special_token_ids)
            text_stops = tuple(sorted(t for t in info.stop_token_ids if t not in special))
            hit = self._by_stops[stops] = (RequestCompiler(info), text_stops)
            while len(self._by_stops) > _MAX_STOP_SETS:
                self._by_stops.popitem(last=False)
            return hit

    def clear(self) -> None:
        with self._lock:
            for rc, _ in self._by_stops.values():
                rc.clear()
            self._by_stops.clear()


# ------------------------------------------------------------------ backend --


@dataclass
class FormcastGrammar(StructuredOutputGrammar):
    """One request's grammar state: a formcast :class:`~formcast.GrammarMatcher`.

    ``num_processed_tokens`` counts the tokens the grammar has accepted
    (rolled-back ones excluded). The matcher keeps ``max_rollback_tokens``
    states: enough for vLLM's speculative steps, which validate or accept at
    most ``num_speculative_tokens`` drafts and then roll them back.
    """

    matcher: GrammarMatcher
    compiled: CompiledGrammar
    max_rollback_tokens: int
    #: Stop ids that are also text tokens. formcast would let them through
    #: as text mid-grammar, but vLLM stops the request on them, so they are
    #: allowed only where the grammar can end (then they end it).
    text_stops: tuple[int, ...] = ()
    num_processed_tokens: int = 0
    #: Set when a mask could not be computed (a formcast limit): the request
    #: then fails at its next accept, alone, instead of the engine step.
    error: Optional[str] = None

    def _accept(self, token: int) -> bool:
        if self.error is not None:
            return False
        if self.text_stops and token in self.text_stops and not self.matcher.can_terminate():
            return False
        return self.matcher.accept_token(token)

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        """Advances over ``tokens``; False at the first one the grammar
        rejects (vLLM then ends the request with an error). Tokens after the
        grammar has terminated are ignored: vLLM stops the request there."""
        for token in tokens:
            if self.matcher.is_terminated():
                break
            if not self._accept(token):
                logger.error("formcast: request %s: token %s is not allowed by its grammar", request_id, token)
                return False
            self.num_processed_tokens += 1
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        """The longest prefix of ``tokens`` the grammar accepts, without
        advancing (each accepted token is rolled back). Stops after a stop
        token; checks at most ``max_rollback_tokens`` tokens (vLLM never
        passes more than its speculative-token count)."""
        if self.matcher.is_terminated():
            return []
        n = 0
        for token in tokens[: self.max_rollback_tokens]:
            if token < 0 or not self._accept(token):
                break
            n += 1
            if self.matcher.is_terminated():
                break
        if n:
            self.matcher.rollback(n)
        return list(tokens[:n])

    def rollback(self, num_tokens: int) -> None:
        """Undoes the last ``num_tokens`` accepted tokens (a stop token
        included: the grammar is then no longer terminated)."""
        if num_tokens <= 0:
            return
        self.matcher.rollback(num_tokens)
        self.num_processed_tokens -= num_tokens

    def fill_bitmask(self, bitmask: torch.Tensor, batch_index: int) -> None:
        """Writes the allowed next tokens into row ``batch_index`` of
        ``bitmask`` (the CPU int32 tensor from
        :meth:`FormcastBackend.allocate_token_bitmask`), in place."""
        # .numpy() shares the tensor's memory: the engine fills it directly.
        rows = bitmask.numpy()
        if self.error is None:
            try:
                self.matcher.fill_next_token_bitmask(rows, batch_index)
            except FormcastError as e:
                self.error = f"{type(e).__name__}: {e}"
                logger.error("formcast could not compute a request's token mask, so the request fails: %s", self.error)
        if self.error is not None:
            rows[batch_index] = -1  # the next accept fails the request
            return
        if self.text_stops and not self.matcher.can_terminate():
            row = rows[batch_index].view(np.uint32)
            for t in self.text_stops:
                row[t >> 5] &= np.uint32(~(1 << (t & 31)) & 0xFFFFFFFF)

    def is_terminated(self) -> bool:
        """True once a stop token was accepted where the grammar can end."""
        return self.matcher.is_terminated()

    def reset(self) -> None:
        """Back to the start of the grammar."""
        self.matcher.reset()
        self.num_processed_tokens = 0


@dataclass
class FormcastBackend(StructuredOutputBackend):
    """The engine-level formcast backend: compiles requests' grammars for the
    model's vocabulary (``vocab_size`` is the logits width; ids past the
    tokenizer's vocabulary are always masked) and allocates the bitmask.

    Built by vLLM's ``StructuredOutputManager`` for
    ``structured_outputs_config.backend == "formcast"`` (see
    :func:`register`). Compiled grammars are cached per stop-id set;
    ``FORMCAST_COMPILE_TIMEOUT_S`` bounds a compilation (10 s by default).
    """

    def __post_init__(self) -> None:
        _check_vllm_version()
        model_config = getattr(self.vllm_config, "model_config", None)
        self._vocabularies = _Vocabularies(self.tokenizer, self.vocab_size, _model_stop_ids(self.tokenizer, model_config))
        # Built now: an unusable tokenizer fails at startup, not per request.
        self._vocabularies.get()
        num_spec = getattr(self.vllm_config, "num_speculative_tokens", 0) or 0
        # vLLM rolls back at most its speculative-token count; validate_tokens
        # needs states even without speculative decoding (vLLM checks single
        # reasoning-end tokens with it). Bounded: each state costs memory for
        # the rest of the request.
        self._max_rollback = max(_MIN_ROLLBACK, int(num_spec))

    def tokenizer_info(self, stop_token_ids: Optional[Iterable[int]] = None) -> TokenizerInfo:
        """The formcast vocabulary grammars are compiled for (by default
        with the model's stop ids)."""
        return self._vocabularies.get(stop_token_ids).info

    def compile_grammar(
        self,
        request_type: StructuredOutputOptions,
        grammar_spec: str,
        stop_token_ids: Optional[set[int]] = None,
    ) -> StructuredOutputGrammar:
        """Compiles one request's grammar; ``stop_token_ids`` (the request's
        EOS and stop ids) are allowed only where the grammar can end. Raises
        formcast's error on a grammar it refuses (vLLM fails that request)."""
        rc, text_stops = self._vocabularies.get_with_text_stops(stop_token_ids)
        compiled = _compile(rc, request_type, grammar_spec)
        matcher = GrammarMatcher(compiled, max_rollback_tokens=self._max_rollback)
        return FormcastGrammar(matcher=matcher, compiled=compiled, max_rollback_tokens=self._max_rollback, text_stops=text_stops)

    def allocate_token_bitmask(self, max_num_seqs: int) -> torch.Tensor:
        """An all-allowed int32 bitmask ``[max_num_seqs, ceil(vocab_size / 32)]``
        on the CPU: bit ``i % 32`` of word ``i // 32`` is token ``i``, the
        layout vLLM's apply step reads."""
        return torch.from_numpy(allocate_token_bitmask(max_num_seqs, self.vocab_size))

    def destroy(self) -> None:
        """Drops the compiled grammars."""
        self._vocabularies.clear()


# --------------------------------------------------------------- validation --

# Frontend side: one vocabulary per (tokenizer, logits width), so that a
# request formcast refuses is answered 400 before it reaches the engine.
_validation_lock = threading.Lock()
_validation_vocabs: "OrderedDict[tuple[int, int], tuple[Any, _Vocabularies]]" = OrderedDict()


def _validation_compiler(tokenizer: Any, model_config: "ModelConfig") -> RequestCompiler:
    logits_size = int(model_config.get_vocab_size())
    key = (id(tokenizer), logits_size)
    with _validation_lock:
        hit = _validation_vocabs.get(key)
        if hit is None or hit[0] is not tokenizer:
            vocabs = _Vocabularies(tokenizer, logits_size, _model_stop_ids(tokenizer, model_config))
            # The tokenizer is held so that its id cannot be reused.
            _validation_vocabs[key] = hit = (tokenizer, vocabs)
            while len(_validation_vocabs) > 2:
                _validation_vocabs.popitem(last=False)
    return hit[1].get()


def _validate_formcast_request(
    params: "SamplingParams",
    model_config: "ModelConfig",
    tokenizer: Any,
) -> None:
    """vLLM's request validation for the formcast backend: raises
    ``VLLMValidationError`` (HTTP 400) with formcast's reason when the
    request's grammar cannot be compiled."""
    from vllm.exceptions import VLLMValidationError
    from vllm.sampling_params import check_json_nesting
    from vllm.v1.structured_output.request import get_structured_output_key

    so = params.structured_outputs
    assert so is not None
    if model_config.is_diffusion:
        raise VLLMValidationError("Structured outputs are not supported for diffusion language models.")
    if tokenizer is None:
        raise VLLMValidationError("Structured outputs need a tokenizer, so they cannot be used with skip_tokenizer_init.")
    if so._backend and so._backend != BACKEND_NAME:
        raise VLLMValidationError(
            f"Request-level structured output backend selection is not supported: the request names "
            f"'{so._backend}', and vLLM runs the '{BACKEND_NAME}' backend."
        )
    if so.json_object is False:
        raise VLLMValidationError("structured_outputs.json_object must be true if set")
    # vLLM's own guard against deeply nested specs, before anything walks them.
    check_json_nesting(so.json)
    check_json_nesting(so.structural_tag, structural_tag=True)
    # Runs the mutual-exclusion checks (one constraint kind per request).
    so.__post_init__()
    kind, spec = get_structured_output_key(so)
    try:
        rc = _validation_compiler(tokenizer, model_config)
        _compile(rc, kind, spec)
    except (FormcastError, ValueError, TypeError) as e:
        raise VLLMValidationError(f"formcast cannot compile this {kind.name.lower()} request: {e}") from e
    so._backend = BACKEND_NAME


# ---------------------------------------------------------------- patching --


def _wrap(owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    original = getattr(owner, name)
    if getattr(original, _WRAPPED, False):
        return
    wrapper = make(original)
    setattr(wrapper, _WRAPPED, True)
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    wrapper.__name__ = name
    wrapper.__qualname__ = f"{owner.__name__}.{name}"
    wrapper.__doc__ = original.__doc__
    setattr(owner, name, wrapper)


def _accept_backend_name() -> None:
    """Adds "formcast" to ``StructuredOutputsConfig.backend``'s Literal and
    rebuilds the pydantic validators that embed it."""
    from typing import Literal, get_args

    from pydantic.dataclasses import rebuild_dataclass
    from vllm.config import StructuredOutputsConfig, VllmConfig
    from vllm.config import structured_outputs as so_module

    field = StructuredOutputsConfig.__dataclass_fields__["backend"]
    choices = get_args(field.type)
    if not choices or not all(isinstance(c, str) for c in choices):
        raise RuntimeError(f"vLLM's StructuredOutputsConfig.backend is not a Literal of names ({field.type!r})")
    if BACKEND_NAME in choices:
        return
    widened = Literal[(*choices, BACKEND_NAME)]  # type: ignore[valid-type]
    field.type = widened
    StructuredOutputsConfig.__annotations__["backend"] = widened
    so_module.StructuredOutputsBackend = widened  # the alias vLLM's docs/help read
    rebuild_dataclass(StructuredOutputsConfig, force=True)
    # VllmConfig's validator holds a copy of the old field schema (a dict
    # given for structured_outputs_config is validated through it).
    rebuild_dataclass(VllmConfig, force=True)


def _patch_request_validation() -> None:
    from vllm.sampling_params import SamplingParams

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def _validate_structured_outputs(
            self: "SamplingParams",
            model_config: "ModelConfig",
            structured_outputs_config: "Optional[StructuredOutputsConfig]",
            tokenizer: Any,
        ) -> None:
            if (
                structured_outputs_config is None
                or self.structured_outputs is None
                or structured_outputs_config.backend != BACKEND_NAME
            ):
                return original(self, model_config, structured_outputs_config, tokenizer)
            _validate_formcast_request(self, model_config, tokenizer)

        return _validate_structured_outputs

    _wrap(SamplingParams, "_validate_structured_outputs", make)


def _patch_manager() -> None:
    from vllm.v1.structured_output import StructuredOutputManager

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def grammar_init(self: Any, request: Any) -> None:
            # vLLM builds its backend on the first structured request; build
            # ours in its place, and let vLLM's code do the rest.
            if self.backend is None and request.structured_output_request is not None:
                so = request.sampling_params.structured_outputs if request.sampling_params is not None else None
                if so is not None and so._backend == BACKEND_NAME:
                    self.backend = FormcastBackend(
                        self.vllm_config,
                        tokenizer=self.tokenizer,
                        vocab_size=self.vllm_config.model_config.get_vocab_size(),
                    )
                    self.backend_name = BACKEND_NAME
            return original(self, request)

        return grammar_init

    _wrap(StructuredOutputManager, "grammar_init", make)


def register() -> None:
    """vLLM's general-plugin entry point: makes ``backend="formcast"`` a
    structured-output backend in this process. Safe to call any number of
    times.

    On a vLLM version formcast was not tested with it patches nothing and
    logs an error naming the tested versions: vLLM calls every installed
    plugin, so refusing to start would break vLLM for people who never
    select formcast; selecting it then fails in vLLM's own config check, and
    :class:`FormcastBackend` refuses to be built."""
    try:
        _check_vllm_version()
    except RuntimeError as e:
        logger.error("formcast's vLLM backend is not registered: %s", e)
        return
    with _register_lock:
        _accept_backend_name()
        _patch_request_validation()
        _patch_manager()
