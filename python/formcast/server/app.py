"""The HTTP application (FastAPI on uvicorn): OpenAI-compatible endpoints on
top of the engine.

A request goes: body bytes (size-limited) → JSON (``body``: nesting depth,
UTF-8 and lone surrogates checked before anything recurses into it) → the
endpoint's pydantic model (``validation``: unknown fields and wrong types are
400s naming the field) → constraint (``constraints``) and tools (``tools``) →
chat template → prompt tokens → grammar compiled in a worker thread (cached,
time-bounded) → one matcher per choice (an assistant prefill is fed to it
first) → jobs queued on the engine → engine events → response or SSE stream
(``output``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Mapping, Optional, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from .. import GrammarCompiler, GrammarMatcher
from ..runtime import ModelRuntime, load_runtime
from .body import MAX_BODY_BYTES, parse_body
from .constraints import Constraint, compile_constraint, constraint_from_request
from .engine import Engine, ErrorEvent, FinishEvent, Job, LogitBias, QueueFullError, SamplingParams, TokenEvent
from .errors import APIError, error_body
from .metrics import Metrics
from .output import ChoiceState, chat_logprobs, completion_logprobs, new_id, now, sse, usage
from .jinja_sandbox import WorkerPool
from .templates import TEMPLATE_TIME_LIMIT_S, is_jinja, normalize_messages, render_chat, resolve_template
from .reader import PlainReader, StyleReader
from .tools import ToolPlan, detect_style, plan_tools, tool_constraint, tool_system_prompt
from .validation import (
    ChatCompletionRequest,
    CompletionRequest,
    DetokenizeRequest,
    ResponsesRequest,
    TokenizeRequest,
    validate_request,
)

log = logging.getLogger("formcast.server")

__all__ = ["ServerConfig", "create_app"]


@dataclass
class ServerConfig:
    """Settings of ``formcast serve``.

    ``model``: a GGUF path (None: the embedded SmolLM2-135M-Instruct);
    ``ctx_size``: context of one sequence; ``parallel``: sequences decoded
    together; ``queue_size``: requests that may wait for a slot before new
    ones get 503; ``api_key``: required bearer token (None: open);
    ``compile_timeout_s``: grammar compile budget per request;
    ``tool_style``: the built-in tool-call style (None: detected from the
    chat template, Hermes/Qwen ``<tool_call>`` JSON by default);
    ``reasoning``: ``enabled``/``auto``/``disabled`` (None: the detected default);
    ``max_body_bytes``: larger request bodies get 413.
    """

    model: Optional[str] = None
    backend: str = "auto"
    host: str = "127.0.0.1"
    port: int = 8080
    threads: int = 1
    ctx_size: int = 4096
    parallel: int = 4
    queue_size: int = 16
    api_key: Optional[str] = None
    served_model_name: Optional[str] = None
    compile_timeout_s: float = 10.0
    template: Optional[str] = None
    retry_after_s: int = 1
    tool_style: Optional[str] = None
    reasoning: Optional[str] = None
    max_body_bytes: int = MAX_BODY_BYTES


class _State:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.runtime: Optional[ModelRuntime] = None
        self.engine: Optional[Engine] = None
        self.compiler: Optional[GrammarCompiler] = None
        self.load_error: Optional[str] = None
        self.ready = threading.Event()
        self.compile_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="formcast-compile")
        # Worker processes for chat templates sent in requests (started when first needed).
        self.template_pool = WorkerPool(max_workers=2)
        self.created = now()
        self.style: str = "qwen_3"
        self.reasoning: Optional[str] = None

    def load(self, runtime: Optional[ModelRuntime]) -> None:
        try:
            rt = runtime or load_runtime(
                self.config.model,
                backend=self.config.backend,
                n_ctx=self.config.ctx_size,
                num_slots=self.config.parallel,
                threads=self.config.threads,
                model_id=self.config.served_model_name,
            )
            self.runtime = rt
            self.compiler = GrammarCompiler(rt.tokenizer)
            style, reasoning = detect_style(rt.chat_template)
            self.style = self.config.tool_style or style
            self.reasoning = self.config.reasoning or reasoning
            self.engine = Engine(rt, max_queue=self.config.queue_size, metrics=self.metrics)
            self.engine.start()
            self.ready.set()
            log.info("model %s loaded (%s)", rt.model_id, rt.describe())
        except Exception as e:  # reported by /health
            log.exception("loading the model failed")
            self.load_error = f"{type(e).__name__}: {e}"

    def model_names(self) -> set[str]:
        assert self.runtime is not None
        names = {self.runtime.model_id}
        if self.config.served_model_name:
            names.add(self.config.served_model_name)
        return names


async def _wait_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message.get("type") == "http.disconnect":
            return


class _AuthAndCount:
    """ASGI middleware: the optional API key (``Authorization: Bearer`` or
    ``x-api-key``) and the per-endpoint request counter. Pure ASGI, so the
    endpoints see the client's disconnect."""

    def __init__(self, app: Any, *, api_key: Optional[str], open_paths: set[str], metrics: Metrics) -> None:
        self.app = app
        self.api_key = api_key
        self.open_paths = open_paths
        self.metrics = metrics

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if self.api_key and path not in self.open_paths:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            auth = headers.get("authorization", "")
            token = auth[7:].strip() if auth.lower().startswith("bearer ") else headers.get("x-api-key", "")
            if token != self.api_key:
                self.metrics.requests.labels(endpoint=path, status="401").inc()
                resp = JSONResponse(error_body("invalid or missing API key", "authentication_error", None, "invalid_api_key"), status_code=401)
                await resp(scope, receive, send)
                return
        status = {"code": 500}

        async def send_wrapper(message: dict) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.requests.labels(endpoint=path, status=str(status["code"])).inc()


def _error_response(e: APIError) -> JSONResponse:
    return JSONResponse(e.body(), status_code=e.status, headers=e.headers)


_JSON_TYPES = ("application/json",)


def _check_content_type(value: Optional[str]) -> None:
    """JSON bodies only: no ``content-type``, ``application/json`` or a
    ``+json`` type, in UTF-8. Anything else is a 415."""
    if not value:
        return  # curl without -H, and other minimal clients: the body must still be JSON
    media, _, params = value.partition(";")
    media = media.strip().lower()
    if media not in _JSON_TYPES and not media.endswith("+json"):
        raise APIError(
            415,
            f"unsupported content-type {value[:80]!r}: the body must be JSON (content-type: application/json)",
            param="content-type",
            code="unsupported_media_type",
        )
    for p in params.split(";"):
        key, _, val = p.partition("=")
        if key.strip().lower() == "charset" and val.strip().strip('"').lower() not in ("utf-8", "utf8"):
            raise APIError(415, f"unsupported charset {val.strip()[:40]!r}: the body must be UTF-8", param="content-type",
                           code="unsupported_media_type")


async def _read_limited(request: Request, limit: int) -> bytes:
    """The body bytes, refusing (413) more than ``limit``: by the declared
    ``content-length`` before reading, or as soon as a chunked body grows past
    it."""
    def too_large(size: str) -> APIError:
        return APIError(413, f"the request body {size}; the limit is {limit} bytes", code="request_too_large")

    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(f"is {int(declared)} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large(f"has more than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


Body = TypeVar("Body", ChatCompletionRequest, CompletionRequest, ResponsesRequest, TokenizeRequest, DetokenizeRequest)


async def _request_body(request: Request, model: type[Body], limit: int) -> tuple[Body, dict]:
    """The body checked against the endpoint's model: the validated model
    and the plain JSON object (what the constraint and tools code read)."""
    _check_content_type(request.headers.get("content-type"))
    raw = await _read_limited(request, limit)
    body = parse_body(raw)
    return validate_request(model, body), body


# ------------------------------------------------------------- parameters --
def _sampling(
    body: Any,
    rt: ModelRuntime,
    prompt_len: int,
    *,
    prompt_param: str,
    max_tokens: Optional[int],
    default_max: Optional[int],
    logprobs: bool = False,
    top_logprobs: int = 0,
) -> SamplingParams:
    """Sampling settings from a validated request model (fields a model does
    not have take their defaults). ``default_max`` None: all the room left
    in the context window."""
    room = rt.n_ctx - prompt_len
    if room < 1:
        raise APIError(
            400,
            f"the prompt has {prompt_len} tokens; the context window is {rt.n_ctx} tokens",
            param=prompt_param,
            code="context_length_exceeded",
        )

    def get(name: str, default: Any) -> Any:
        v = getattr(body, name, None)
        return default if v is None else v

    stop = get("stop", ())
    stops = tuple(s for s in ((stop,) if isinstance(stop, str) else stop) if s)
    top_k = get("top_k", 0)
    seed = get("seed", None)
    want = max_tokens if max_tokens is not None else (default_max if default_max is not None else room)
    return SamplingParams(
        max_tokens=min(want, room),
        temperature=get("temperature", 1.0),
        top_p=get("top_p", 1.0),
        top_k=0 if top_k == -1 else top_k,
        seed=None if seed is None else seed & 0xFFFFFFFF,
        stop=stops,
        logprobs=logprobs,
        top_logprobs=top_logprobs,
        min_p=get("min_p", 0.0),
        frequency_penalty=get("frequency_penalty", 0.0),
        presence_penalty=get("presence_penalty", 0.0),
        repeat_penalty=get("repeat_penalty", 1.0),
        repeat_last_n=get("repeat_last_n", 64),
        logit_bias=_logit_bias(get("logit_bias", None), rt),
    )


def _logit_bias(bias: Optional[Mapping[str, float]], rt: ModelRuntime) -> Optional[LogitBias]:
    """``logit_bias`` with its token ids checked against the vocabulary."""
    if not bias:
        return None
    vocab = rt.tokenizer.vocab_size
    ids: dict[int, float] = {}
    for key, value in bias.items():
        tid = int(key)  # canonical decimal: checked by the request model
        if tid >= vocab:
            raise APIError(400, f"'logit_bias.{key}': token id {tid} is not in the vocabulary (ids 0 to {vocab - 1})",
                           param=f"logit_bias.{key}", code="invalid_value")
        ids[tid] = value
    return LogitBias.from_mapping(ids)


# --------------------------------------------------------------- the app --
def create_app(config: Optional[ServerConfig] = None, *, runtime: Optional[ModelRuntime] = None) -> FastAPI:
    """The FastAPI application. The model loads in a background thread when
    the app starts (``/health`` answers 503 until it is ready); pass
    ``runtime`` to serve an already loaded one."""
    cfg = config or ServerConfig()
    state = _State(cfg)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loader = threading.Thread(target=state.load, args=(runtime,), name="formcast-load", daemon=True)
        loader.start()
        yield
        if state.engine is not None:
            state.engine.stop()
        state.compile_pool.shutdown(wait=False, cancel_futures=True)
        state.template_pool.close()
        if state.runtime is not None and runtime is None:
            state.runtime.close()

    app = FastAPI(title="formcast", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.formcast = state

    app.add_middleware(_AuthAndCount, api_key=cfg.api_key, open_paths={"/health", "/metrics"}, metrics=state.metrics)

    @app.exception_handler(APIError)
    async def _api_error(request: Request, e: APIError) -> JSONResponse:
        return _error_response(e)

    @app.exception_handler(Exception)
    async def _any_error(request: Request, e: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return JSONResponse(error_body(f"internal server error: {type(e).__name__}", "server_error"), status_code=500)

    def ready() -> tuple[ModelRuntime, Engine, GrammarCompiler]:
        if not state.ready.is_set():
            msg = f"the model failed to load: {state.load_error}" if state.load_error else "the model is loading"
            raise APIError(503, msg, headers={"Retry-After": str(cfg.retry_after_s)}, code="model_loading")
        assert state.runtime and state.engine and state.compiler
        return state.runtime, state.engine, state.compiler

    def check_model(name: Optional[str]) -> str:
        rt, _, _ = ready()
        if name is not None and name not in state.model_names():
            raise APIError(
                404,
                f"the model {name!r} does not exist; this server serves {sorted(state.model_names())}",
                param="model",
                code="model_not_found",
            )
        return rt.model_id

    # ----------------------------------------------------- plain endpoints --
    @app.get("/health")
    async def health() -> JSONResponse:
        if state.ready.is_set():
            eng = state.engine
            return JSONResponse({"status": "ok", "queue_depth": eng.queue_depth, "active": eng.active_count})
        status = "error" if state.load_error else "loading"
        return JSONResponse({"status": status, "error": state.load_error}, status_code=503, headers={"Retry-After": "1"})

    @app.get("/metrics")
    async def metrics() -> Response:
        if state.engine is not None:
            state.metrics.queue_depth.set(state.engine.queue_depth)
            state.metrics.active_sequences.set(state.engine.active_count)
        return Response(state.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/v1/models")
    async def models() -> JSONResponse:
        rt, _, _ = ready()
        data = [
            {"id": n, "object": "model", "created": state.created, "owned_by": "formcast", "meta": rt.describe()}
            for n in sorted(state.model_names())
        ]
        return JSONResponse({"object": "list", "data": data})

    @app.get("/v1/models/{model_id}")
    async def model(model_id: str) -> JSONResponse:
        rt, _, _ = ready()
        check_model(model_id)
        return JSONResponse({"id": model_id, "object": "model", "created": state.created, "owned_by": "formcast"})

    @app.get("/props")
    async def props() -> JSONResponse:
        rt, eng, _ = ready()
        return JSONResponse(
            {
                "model": rt.model_id,
                "n_ctx": rt.n_ctx,
                "total_slots": rt.num_slots,
                "queue_size": cfg.queue_size,
                "chat_template": rt.chat_template,
                "bos_token": rt.bos_token,
                "eos_token": rt.eos_token,
            }
        )

    @app.post("/tokenize")
    async def tokenize(request: Request) -> JSONResponse:
        body, _ = await _request_body(request, TokenizeRequest, cfg.max_body_bytes)
        check_model(body.model)
        rt, _, _ = ready()
        ids = rt.tokenize(
            body.the_text,
            add_special=bool(body.add_special),
            parse_special=body.parse_special is not False,  # llama.cpp's default: special-token text is parsed
        )
        out: dict[str, Any] = {"tokens": ids, "count": len(ids)}
        if body.with_pieces:
            out["pieces"] = [rt.tokenizer.token_bytes(i).decode("utf-8", "replace") for i in ids]
        return JSONResponse(out)

    @app.post("/detokenize")
    async def detokenize(request: Request) -> JSONResponse:
        body, _ = await _request_body(request, DetokenizeRequest, cfg.max_body_bytes)
        check_model(body.model)
        rt, _, _ = ready()
        vocab = rt.tokenizer.vocab_size
        bad = next((k for k, i in enumerate(body.tokens) if i >= vocab), None)
        if bad is not None:
            raise APIError(400, f"'tokens[{bad}]' is {body.tokens[bad]}, not a token id of this vocabulary (0 to {vocab - 1})",
                           param=f"tokens[{bad}]", code="invalid_value")
        return JSONResponse({"content": rt.detokenize(body.tokens).decode("utf-8", "replace")})

    # ------------------------------------------------------- generation --
    def check_capacity(n: int, param: str) -> None:
        """A request whose choices could never all be queued is a 400, not a
        503 that a client would retry forever."""
        rt, _, _ = ready()
        most = rt.num_slots + cfg.queue_size
        if n > most:
            raise APIError(
                400,
                f"this request needs {n} sequences; this server can hold at most {most} "
                f"({rt.num_slots} decoding + {cfg.queue_size} waiting)",
                param=param,
                code="invalid_value",
            )

    async def prepare(
        params: SamplingParams, prefill: str, constraint: Optional[Constraint], n: int
    ) -> list[Optional[GrammarMatcher]]:
        rt, eng, compiler = ready()
        if not eng.has_room(n):
            state.metrics.rejected.inc()
            raise APIError(503, "the server is busy: the request queue is full", headers={"Retry-After": str(cfg.retry_after_s)}, code="queue_full")
        matchers: list[Optional[GrammarMatcher]] = [None] * n
        if constraint is not None:
            loop = asyncio.get_running_loop()
            compiled, secs = await loop.run_in_executor(
                state.compile_pool, lambda: compile_constraint(compiler, constraint, timeout_s=cfg.compile_timeout_s)
            )
            state.metrics.compile_seconds.observe(secs)
            matchers = [GrammarMatcher(compiled) for _ in range(n)]
            if prefill:
                for m in matchers:
                    if not m.accept_string(prefill):
                        raise APIError(
                            400,
                            f"the assistant prefill {prefill[:60]!r} does not match the constraint in '{constraint.param}'",
                            param="messages",
                        )
        return matchers

    async def run_jobs(
        request: Request, prompts: list[list[int]], params: SamplingParams, matchers: list[Optional[GrammarMatcher]], n: int
    ) -> tuple[asyncio.Queue, list[Job]]:
        _, eng, _ = ready()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        def emit(ev: Any) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, ev)

        jobs = []
        for p_i, prompt in enumerate(prompts):
            for k in range(n):
                idx = p_i * n + k
                jobs.append(Job(index=idx, prompt=prompt, params=params, emit=emit, matcher=matchers[idx] if idx < len(matchers) else None))
        try:
            eng.submit(jobs)
        except QueueFullError as e:
            state.metrics.rejected.inc()
            raise APIError(503, f"the server is busy: {e}", headers={"Retry-After": str(cfg.retry_after_s)}, code="queue_full") from None
        return queue, jobs

    async def collect(request: Request, queue: asyncio.Queue, jobs: list[Job]) -> Optional[list[ChoiceState]]:
        """Waits for every job; None when the client went away (jobs cancelled)."""
        states = [ChoiceState(j.index) for j in jobs]
        pending = len(jobs)
        # The body has been read: the next ASGI message is the disconnect.
        watcher = asyncio.ensure_future(_wait_disconnect(request))
        try:
            while pending:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getter, watcher}, return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    getter.cancel()
                    for j in jobs:
                        j.cancelled.set()
                    return None
                ev = getter.result()
                if isinstance(ev, TokenEvent):
                    states[ev.index].add(ev)
                elif isinstance(ev, FinishEvent):
                    states[ev.index].finish = ev
                    pending -= 1
                elif isinstance(ev, ErrorEvent):
                    for j in jobs:
                        j.cancelled.set()
                    raise APIError(500, ev.message, type="server_error")
        except asyncio.CancelledError:
            for j in jobs:
                j.cancelled.set()
            raise
        finally:
            watcher.cancel()
        return states

    def chat_prompt(req: Mapping[str, Any], rt: ModelRuntime, plan: Optional[ToolPlan]) -> tuple[list[int], str]:
        """Prompt token ids and the assistant prefill (``req``: a validated body)."""
        messages = normalize_messages(req.get("messages"))
        prefill = ""
        if messages[-1]["role"] == "assistant" and not messages[-1].get("tool_calls"):
            prefill = messages[-1]["content"]
            messages = messages[:-1]
        requested = req.get("chat_template") if req.get("chat_template") is not None else req.get("template")
        param = "chat_template" if req.get("chat_template") is not None else "template"
        if requested is not None:
            source = resolve_template(requested, rt.chat_template, param=param, trusted=False)
        else:
            source = resolve_template(cfg.template, rt.chat_template, param=param)
        # Jinja text from the request is untrusted code: it renders in a
        # worker process with time, memory and output limits.
        untrusted = is_jinja(requested)
        kwargs = req.get("chat_template_kwargs") or {}
        if plan is not None and plan.active and state.style == "qwen_3" and "tools" not in source:
            # The template cannot show the tools: describe them in the system turn.
            section = tool_system_prompt(plan)
            if messages and messages[0]["role"] == "system":
                messages = [dict(messages[0], content=messages[0]["content"] + "\n\n" + section)] + messages[1:]
            else:
                messages = [{"role": "system", "content": section}] + messages
        text = render_chat(
            source,
            messages,
            add_generation_prompt=True,
            tools=plan.template_tools() if plan else None,
            bos_token=rt.bos_token,
            eos_token=rt.eos_token,
            kwargs=kwargs,
            time_limit_s=TEMPLATE_TIME_LIMIT_S if untrusted else None,
            template_param=param,
            pool=state.template_pool,
        )
        ids = rt.tokenize(text, add_special=True, parse_special=True)
        if prefill:
            ids += rt.tokenize(prefill, add_special=False, parse_special=False)
        return ids, prefill

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        body, req = await _request_body(request, ChatCompletionRequest, cfg.max_body_bytes)
        model_id = check_model(body.model)
        rt, _, _ = ready()
        plan = plan_tools(req)
        reasoning = state.reasoning
        kw = req.get("chat_template_kwargs")
        if isinstance(kw, Mapping) and isinstance(kw.get("enable_thinking"), bool):
            reasoning = "enabled" if kw["enable_thinking"] else "disabled"

        def build() -> tuple[Optional[Constraint], Any]:
            # Grammar construction (schema translation included) runs here,
            # in the compile pool, not on the event loop.
            c = constraint_from_request(req, rt.tokenizer)
            if c is not None and plan is not None and plan.mode in ("required", "named"):
                raise APIError(
                    400,
                    f"'{c.param}' cannot be combined with tool_choice '{plan.mode}' (the turn must be a tool call)",
                    param="tool_choice",
                )
            if plan is not None and plan.active:
                return tool_constraint(plan, c, style=state.style, reasoning=reasoning, tokenizer=rt.tokenizer)
            return c, None

        n = body.n or 1
        check_capacity(n, "n")
        constraint, style_tag = await asyncio.get_running_loop().run_in_executor(state.compile_pool, build)
        prompt_ids, prefill = await asyncio.get_running_loop().run_in_executor(state.compile_pool, chat_prompt, req, rt, plan)
        max_tokens = body.max_completion_tokens if body.max_completion_tokens is not None else body.max_tokens
        params = _sampling(body, rt, len(prompt_ids), prompt_param="messages", max_tokens=max_tokens, default_max=None,
                           logprobs=bool(body.logprobs), top_logprobs=body.top_logprobs or 0)
        matchers = await prepare(params, prefill, constraint, n)
        queue, jobs = await run_jobs(request, [prompt_ids], params, matchers, n)

        def make_reader() -> Any:
            return StyleReader(style_tag, plan.tools if plan else None) if style_tag is not None else PlainReader()

        def final_reason(reason: str, reader: Any) -> str:
            if reason == "stop" and reader.tool_calls and plan is not None and plan.mode in ("auto", "required"):
                return "tool_calls"
            return reason

        cid = new_id("chatcmpl")
        created = now()
        if body.stream:
            include_usage = bool(body.stream_options and body.stream_options.include_usage)
            return StreamingResponse(
                _chat_stream(queue, jobs, cid, created, model_id, include_usage, params, rt, make_reader, final_reason),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        states = await collect(request, queue, jobs)
        if states is None:
            return Response(status_code=499)
        choices = []
        for s in states:
            fin = s.finish
            assert fin is not None
            reader = make_reader()
            reader.feed(s.text)
            reader.finish()
            message: dict[str, Any] = {"role": "assistant", "refusal": None}
            message.update(reader.message())
            choice: dict[str, Any] = {
                "index": s.index,
                "message": message,
                "logprobs": chat_logprobs(s.logprobs, rt.tokenizer.token_bytes) if params.logprobs else None,
                "finish_reason": final_reason(fin.reason, reader),
            }
            if fin.note:
                choice["finish_detail"] = fin.note
            choices.append(choice)
        p_tok = len(prompt_ids)
        c_tok = sum(s.finish.completion_tokens for s in states if s.finish)
        return JSONResponse(
            {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model_id,
                "system_fingerprint": None,
                "choices": choices,
                "usage": usage(p_tok, c_tok),
            }
        )

    async def _chat_stream(
        queue: asyncio.Queue, jobs: list[Job], cid: str, created: int, model_id: str, include_usage: bool, params: SamplingParams, rt: ModelRuntime,
        make_reader: Any, final_reason: Any,
    ) -> AsyncIterator[bytes]:
        def chunk(choices: list[dict], **extra: Any) -> bytes:
            body: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model_id, "system_fingerprint": None, "choices": choices}
            if include_usage:
                body["usage"] = None
            body.update(extra)
            return sse(body)

        pending = len(jobs)
        completion_tokens = 0
        readers = {j.index: make_reader() for j in jobs}
        try:
            for j in jobs:
                yield chunk([{"index": j.index, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}])
            while pending:
                ev = await queue.get()
                if isinstance(ev, TokenEvent):
                    deltas = readers[ev.index].feed(ev.text)
                    lp = chat_logprobs(ev.logprobs, rt.tokenizer.token_bytes) if params.logprobs and ev.logprobs else None
                    if lp is not None and not deltas:
                        deltas = [{"content": ""}]
                    for k, d in enumerate(deltas):
                        yield chunk([{"index": ev.index, "delta": d, "logprobs": lp if k == 0 else None, "finish_reason": None}])
                elif isinstance(ev, FinishEvent):
                    pending -= 1
                    completion_tokens += ev.completion_tokens
                    reader = readers[ev.index]
                    for d in reader.finish():
                        yield chunk([{"index": ev.index, "delta": d, "logprobs": None, "finish_reason": None}])
                    choice: dict[str, Any] = {"index": ev.index, "delta": {}, "logprobs": None, "finish_reason": final_reason(ev.reason, reader)}
                    if ev.note:
                        choice["finish_detail"] = ev.note
                    yield chunk([choice])
                elif isinstance(ev, ErrorEvent):
                    for j in jobs:
                        j.cancelled.set()
                    yield sse(error_body(ev.message, "server_error"))
                    break
            else:
                if include_usage:
                    yield sse({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model_id,
                               "system_fingerprint": None, "choices": [], "usage": usage(len(jobs[0].prompt), completion_tokens)})
            yield sse("[DONE]")
        finally:
            # Client gone (or stream finished): stop whatever still runs.
            for j in jobs:
                j.cancelled.set()

    # ------------------------------------------------------ completions --
    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        body, req = await _request_body(request, CompletionRequest, cfg.max_body_bytes)
        model_id = check_model(body.model)
        rt, _, _ = ready()
        raw = body.prompt
        n = body.n or 1
        if isinstance(raw, str):
            prompt_texts: list[Optional[str]] = [raw]
        elif isinstance(raw[0], str):
            prompt_texts = list(raw)
        else:  # token ids (the request model makes it one kind or the other)
            prompt_texts = [None]
        check_capacity(n * len(prompt_texts), "n" if len(prompt_texts) == 1 else "prompt")
        if prompt_texts[0] is None:
            vocab = rt.tokenizer.vocab_size
            bad = next((k for k, t in enumerate(raw) if t >= vocab), None)
            if bad is not None:
                raise APIError(400, f"'prompt[{bad}]' is {raw[bad]}, not a token id of this vocabulary (0 to {vocab - 1})",
                               param=f"prompt[{bad}]", code="invalid_value")
            prompts = [list(raw)]
        else:
            prompts = [rt.tokenize(p or "", add_special=True, parse_special=True) for p in prompt_texts]
        empty = next((k for k, p in enumerate(prompts) if not p), None)
        if empty is not None:
            raise APIError(400, "'prompt' must not be empty", param="prompt" if isinstance(raw, str) else f"prompt[{empty}]")
        constraint = await asyncio.get_running_loop().run_in_executor(state.compile_pool, constraint_from_request, req, rt.tokenizer)
        longest = max(prompts, key=len)
        want_lp = body.logprobs is not None
        params = _sampling(body, rt, len(longest), prompt_param="prompt", max_tokens=body.max_tokens,
                           default_max=16,  # OpenAI's default for /v1/completions
                           logprobs=want_lp, top_logprobs=body.logprobs or 0)
        matchers = await prepare(params, "", constraint, n * len(prompts))
        queue, jobs = await run_jobs(request, prompts, params, matchers, n)
        cid = new_id("cmpl")
        created = now()
        echo = bool(body.echo)
        if body.stream:
            include_usage = bool(body.stream_options and body.stream_options.include_usage)
            return StreamingResponse(
                _completion_stream(queue, jobs, cid, created, model_id, include_usage, params, rt, sum(len(p) for p in prompts)),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache"},
            )
        states = await collect(request, queue, jobs)
        if states is None:
            return Response(status_code=499)
        choices = []
        for s in states:
            assert s.finish is not None
            prefix = ""
            if echo:
                ptext = prompt_texts[s.index // n]
                prefix = ptext if ptext is not None else rt.detokenize(prompts[s.index // n]).decode("utf-8", "replace")
            choice: dict[str, Any] = {
                "index": s.index,
                "text": prefix + s.text,
                "logprobs": completion_logprobs(s.logprobs, rt.tokenizer.token_bytes, len(prefix)) if params.logprobs else None,
                "finish_reason": s.finish.reason,
            }
            if s.finish.note:
                choice["finish_detail"] = s.finish.note
            choices.append(choice)
        p_tok = sum(len(p) for p in prompts)
        c_tok = sum(s.finish.completion_tokens for s in states if s.finish)
        return JSONResponse(
            {"id": cid, "object": "text_completion", "created": created, "model": model_id, "system_fingerprint": None, "choices": choices, "usage": usage(p_tok, c_tok)}
        )

    async def _completion_stream(
        queue: asyncio.Queue, jobs: list[Job], cid: str, created: int, model_id: str, include_usage: bool, params: SamplingParams, rt: ModelRuntime, p_tok: int
    ) -> AsyncIterator[bytes]:
        def chunk(choices: list[dict]) -> bytes:
            body: dict[str, Any] = {"id": cid, "object": "text_completion", "created": created, "model": model_id, "choices": choices}
            if include_usage:
                body["usage"] = None
            return sse(body)

        pending = len(jobs)
        completion_tokens = 0
        try:
            while pending:
                ev = await queue.get()
                if isinstance(ev, TokenEvent):
                    if not ev.text and not ev.logprobs:
                        continue
                    lp = completion_logprobs(ev.logprobs, rt.tokenizer.token_bytes) if params.logprobs else None
                    yield chunk([{"index": ev.index, "text": ev.text, "logprobs": lp, "finish_reason": None}])
                elif isinstance(ev, FinishEvent):
                    pending -= 1
                    completion_tokens += ev.completion_tokens
                    yield chunk([{"index": ev.index, "text": "", "logprobs": None, "finish_reason": ev.reason}])
                elif isinstance(ev, ErrorEvent):
                    yield sse(error_body(ev.message, "server_error"))
                    break
            else:
                if include_usage:
                    yield sse({"id": cid, "object": "text_completion", "created": created, "model": model_id, "choices": [], "usage": usage(p_tok, completion_tokens)})
            yield sse("[DONE]")
        finally:
            for j in jobs:
                j.cancelled.set()

    # -------------------------------------------------------- responses --
    @app.post("/v1/responses")
    async def responses(request: Request) -> Response:
        body, req = await _request_body(request, ResponsesRequest, cfg.max_body_bytes)
        model_id = check_model(body.model)
        rt, _, _ = ready()
        messages: list[dict] = []
        if body.instructions is not None:
            messages.append({"role": "system", "content": body.instructions})
        if isinstance(req["input"], str):
            messages.append({"role": "user", "content": req["input"]})
        else:
            for item in req["input"]:
                role = "system" if item["role"] == "developer" else item["role"]
                messages.append({"role": role, "content": item["content"]})
        chat_req: dict[str, Any] = {"messages": messages}
        fmt = req["text"].get("format") if req.get("text") else None
        if fmt is not None:
            if fmt["type"] == "json_schema":
                chat_req["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": fmt.get("name"), "schema": fmt.get("schema"), "strict": fmt.get("strict")},
                }
                if fmt.get("schema") is None:
                    raise APIError(400, "'text.format.schema' is required", param="text.format.schema")
            else:
                chat_req["response_format"] = dict(fmt)
        try:
            constraint = await asyncio.get_running_loop().run_in_executor(state.compile_pool, constraint_from_request, chat_req, rt.tokenizer)
        except APIError as e:
            if e.param and e.param.startswith("response_format"):
                e.param = "text.format"
            raise
        prompt_ids, prefill = await asyncio.get_running_loop().run_in_executor(state.compile_pool, chat_prompt, chat_req, rt, None)
        params = _sampling(body, rt, len(prompt_ids), prompt_param="input", max_tokens=body.max_output_tokens, default_max=None)
        matchers = await prepare(params, prefill, constraint, 1)
        queue, jobs = await run_jobs(request, [prompt_ids], params, matchers, 1)
        rid, mid, created = new_id("resp"), new_id("msg"), now()

        def response_body(text: str, fin: Optional[FinishEvent]) -> dict:
            status = "in_progress" if fin is None else ("completed" if fin.reason == "stop" else "incomplete")
            out_tok = fin.completion_tokens if fin is not None else 0
            return {
                "id": rid,
                "object": "response",
                "created_at": created,
                "status": status,
                "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
                "model": model_id,
                "output": [] if fin is None else [
                    {
                        "type": "message",
                        "id": mid,
                        "status": "completed" if status == "completed" else "incomplete",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                ],
                "parallel_tool_calls": False,
                "tool_choice": "none",
                "tools": [],
                "text": {"format": fmt or {"type": "text"}},
                "error": None,
                "usage": None if fin is None else {
                    "input_tokens": len(prompt_ids),
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": out_tok,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": len(prompt_ids) + out_tok,
                },
            }

        if body.stream:
            return StreamingResponse(
                _responses_stream(queue, jobs, response_body, mid), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
            )
        states = await collect(request, queue, jobs)
        if states is None:
            return Response(status_code=499)
        return JSONResponse(response_body(states[0].text, states[0].finish))

    async def _responses_stream(queue: asyncio.Queue, jobs: list[Job], response_body: Any, mid: str) -> AsyncIterator[bytes]:
        seq = 0

        def event(kind: str, **fields: Any) -> bytes:
            nonlocal seq
            seq += 1
            data = json.dumps(dict(type=kind, sequence_number=seq - 1, **fields), ensure_ascii=False, separators=(",", ":"))
            return f"event: {kind}\ndata: {data}\n\n".encode("utf-8")

        text = ""
        item = {"type": "message", "id": mid, "status": "in_progress", "role": "assistant", "content": []}
        part = {"type": "output_text", "text": "", "annotations": []}
        try:
            yield event("response.created", response=response_body("", None))
            yield event("response.in_progress", response=response_body("", None))
            yield event("response.output_item.added", output_index=0, item=item)
            yield event("response.content_part.added", item_id=mid, output_index=0, content_index=0, part=part)
            while True:
                ev = await queue.get()
                if isinstance(ev, TokenEvent):
                    if ev.text:
                        text += ev.text
                        yield event("response.output_text.delta", item_id=mid, output_index=0, content_index=0, delta=ev.text, logprobs=[])
                elif isinstance(ev, FinishEvent):
                    done_part = dict(part, text=text)
                    final = response_body(text, ev)
                    yield event("response.output_text.done", item_id=mid, output_index=0, content_index=0, text=text, logprobs=[])
                    yield event("response.content_part.done", item_id=mid, output_index=0, content_index=0, part=done_part)
                    yield event("response.output_item.done", output_index=0, item=final["output"][0])
                    kind = "response.completed" if final["status"] == "completed" else "response.incomplete"
                    yield event(kind, response=final)
                    break
                elif isinstance(ev, ErrorEvent):
                    yield event("error", code="server_error", message=ev.message, param=None)
                    break
        finally:
            for j in jobs:
                j.cancelled.set()

    return app
