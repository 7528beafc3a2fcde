"""Structured output from any OpenAI-compatible chat endpoint.

:func:`structured` climbs down the ladder as far as the endpoint forces it to:

* rung 6 — ``response_format={"type": "json_schema", ...}`` (the server enforces the schema);
* rung 4 — ``response_format={"type": "json_object"}`` plus the schema, with its field
  descriptions, in the prompt;
* rung 4 + 5 — schema in the prompt and the assistant turn prefilled with ``{``.

An endpoint that rejects a ``response_format`` (HTTP 400/422 naming it) moves the
call one rung down; that is not counted as a retry, and later calls to the same
endpoint start on the rung that worked. Every reply then goes through
the defensive parsing pipeline; a reply that fails is answered with the error
message verbatim and the model is asked again, at most ``max_retries`` times.

``client`` may be a base URL (``"http://127.0.0.1:8000/v1"``), a :class:`ChatClient`,
or an official ``openai.OpenAI`` client (the ``openai`` package stays optional).
"""

from __future__ import annotations

import copy
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from .._depth import MAX_JSON_DEPTH, check_nesting, text_nesting
from .errors import (
    EndpointError,
    RepairError,
    StructuredOutputError,
    TruncatedError,
    ValidationFailed,
)
from .pipeline import RepairOptions, _validator, parse
from .report import Report

__all__ = ["ChatClient", "Attempt", "StructuredResult", "structured", "schema_prompt"]

T = TypeVar("T")
Rung = Literal["json_schema", "json_object", "prompt"]
_RUNGS: tuple[Rung, ...] = ("json_schema", "json_object", "prompt")


class _HTTPFailure(Exception):
    def __init__(self, status: int | None, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}" if status else body[:300])
        self.status = status
        self.body = body


class ChatClient:
    """A minimal OpenAI-compatible client on the standard library (``urllib``).

    ``base_url`` is the API root, e.g. ``http://127.0.0.1:8000/v1``; requests go
    to ``{base_url}/chat/completions``.
    """

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 60.0, headers: dict[str, str] | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.headers = dict(headers or {})

    def create(self, payload: dict[str, Any]) -> dict[str, Any]:
        """POST a chat completion; return the decoded response body."""
        body = json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json", **self.headers}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            raise _HTTPFailure(e.code, e.read().decode("utf-8", "replace")) from None
        except (urllib.error.URLError, OSError) as e:
            raise _HTTPFailure(None, f"cannot reach {self.base_url}: {getattr(e, 'reason', e)}") from None
        if text_nesting(raw, MAX_JSON_DEPTH) is not None:  # json.loads recurses per level
            raise _HTTPFailure(200, f"response is nested more than {MAX_JSON_DEPTH} levels deep: {raw[:200]!r}")
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise _HTTPFailure(200, f"response is not JSON: {raw[:200]!r}") from None

    def __repr__(self) -> str:
        return f"ChatClient({self.base_url!r})"


@dataclass
class Attempt:
    """One request/reply round trip and what became of it."""

    number: int
    rung: Rung
    prefill: str | None
    messages: list[dict[str, Any]]
    reply: str | None = None
    finish_reason: str | None = None
    status: Literal["ok", "invalid", "unparseable", "truncated", "refused", "unsupported", "endpoint_error"] = "ok"
    error: str | None = None
    report: Report | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "rung": self.rung,
            "prefill": self.prefill,
            "status": self.status,
            "error": self.error,
            "reply": self.reply,
            "finish_reason": self.finish_reason,
            "seconds": round(self.seconds, 4),
            "report": self.report.to_dict() if self.report else None,
        }


@dataclass
class StructuredResult(Generic[T]):
    """The typed value, its plain JSON ``data``, and every attempt that led to it."""

    value: T
    data: Any
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def report(self) -> Report:
        rep = self.attempts[-1].report
        assert rep is not None
        return rep

    @property
    def rung(self) -> Rung:
        return self.attempts[-1].rung

    @property
    def retries(self) -> int:
        """Re-asks that were needed (rung changes are not retries)."""
        return sum(1 for a in self.attempts[:-1] if a.status not in ("unsupported",))


def schema_prompt(schema: dict[str, Any]) -> str:
    """Rung 4 instructions: the schema itself plus its fields' descriptions as bullet points."""
    lines = ["Return a single JSON value matching the JSON Schema below. No markdown fences, no text before or after it."]
    fields = list(_field_lines(schema, schema, "", 0))
    if fields:
        lines.append("Fields:")
        lines.extend(fields)
    lines.append("JSON Schema:")
    lines.append(json.dumps(schema, ensure_ascii=False, separators=(", ", ": ")))
    return "\n".join(lines)


def _field_lines(schema: Any, root: Any, prefix: str, depth: int) -> Any:
    schema = _deref(schema, root)
    if not isinstance(schema, dict) or depth > 2:
        return
    props = schema.get("properties")
    if not isinstance(props, dict):
        items = schema.get("items")
        if isinstance(items, dict) and depth < 2:
            yield from _field_lines(items, root, prefix + "[]", depth + 1)
        return
    required = set(schema.get("required") or [])
    for name, sub in props.items():
        sub_d = _deref(sub, root)
        bits = ["required" if name in required else "optional"]
        if isinstance(sub_d, dict):
            if "enum" in sub_d:
                bits.append("one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in sub_d["enum"]))
            elif "const" in sub_d:
                bits.append("exactly " + json.dumps(sub_d["const"], ensure_ascii=False))
            elif "type" in sub_d:
                bits.append(sub_d["type"] if isinstance(sub_d["type"], str) else " or ".join(sub_d["type"]))
            for key, word in (("minimum", ">="), ("maximum", "<="), ("minLength", "min length"), ("maxLength", "max length")):
                if key in sub_d:
                    bits.append(f"{word} {sub_d[key]}")
        desc = (sub_d.get("description") if isinstance(sub_d, dict) else None) or (sub.get("description") if isinstance(sub, dict) else None)
        yield f"{'  ' * depth}- {prefix}{name} ({'; '.join(bits)})" + (f": {desc}" if desc else "")
        yield from _field_lines(sub_d, root, f"{prefix}{name}.", depth + 1)


def _deref(schema: Any, root: Any) -> Any:
    for _ in range(16):
        if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#/")):
            return schema
        target: Any = root
        for part in schema["$ref"][2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        schema = target
    return schema


def _strict_compatible(schema: Any) -> bool:
    """OpenAI's strict mode needs every object closed and every property required.
    (Recursive: the schema's nesting was bounded when its validator was built.)"""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            props = schema.get("properties") or {}
            if schema.get("additionalProperties") is not False or set(schema.get("required") or []) != set(props):
                return False
        return all(_strict_compatible(v) for v in schema.values())
    if isinstance(schema, list):
        return all(_strict_compatible(v) for v in schema)
    return True


def _with_instructions(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    msgs = copy.deepcopy(messages)
    if msgs and msgs[0].get("role") == "system" and isinstance(msgs[0].get("content"), str):
        msgs[0]["content"] = msgs[0]["content"].rstrip() + "\n\n" + text
    else:
        msgs.insert(0, {"role": "system", "content": text})
    return msgs


def _is_format_rejection(status: int | None, body: str) -> bool:
    if status not in (400, 404, 415, 422, 501):
        return False
    low = body.lower()
    return any(w in low for w in ("response_format", "json_schema", "json_object", "structured output", "not supported", "unsupported"))


# Endpoints that rejected a response_format: key -> index of the first rung to try.
_REJECTED: dict[str, int] = {}


def _endpoint_key(client: Any) -> str:
    if isinstance(client, ChatClient):
        return client.base_url
    return str(getattr(client, "base_url", None) or id(client))


def _preview(value: Any) -> str:
    """The start of ``value`` as JSON, for an error message (never raises)."""
    try:
        return json.dumps(value)[:300]
    except (TypeError, ValueError, RecursionError):
        return repr(type(value))


def _call(client: Any, payload: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(content, finish_reason, refusal) from either our ChatClient or an openai client."""
    if isinstance(client, ChatClient):
        resp = client.create(payload)
        try:
            choice = resp["choices"][0]
            msg = choice.get("message") or {}
        except (KeyError, IndexError, TypeError):
            raise _HTTPFailure(200, f"unexpected response shape: {_preview(resp)}") from None
        content = msg.get("content")
        if content is None and msg.get("tool_calls"):
            content = msg["tool_calls"][0].get("function", {}).get("arguments")
        return content, choice.get("finish_reason"), msg.get("refusal")
    # The official openai client (duck-typed so the package stays optional).
    try:
        resp = client.chat.completions.create(**payload)
    except Exception as e:  # openai raises its own hierarchy; read the status off it
        status = getattr(e, "status_code", None)
        if status is None and type(e).__name__ not in ("APIConnectionError", "APITimeoutError"):
            raise
        body = getattr(e, "body", None)
        raise _HTTPFailure(status, json.dumps(body) if body is not None else str(e)) from None
    choice = resp.choices[0]
    msg = choice.message
    content = msg.content
    if content is None and getattr(msg, "tool_calls", None):
        content = msg.tool_calls[0].function.arguments
    return content, choice.finish_reason, getattr(msg, "refusal", None)


def structured(
    client: Any,
    messages: list[dict[str, Any]],
    schema_or_model: Any,
    *,
    max_retries: int = 2,
    model: str | None = None,
    response_format: Literal["auto", "json_schema", "json_object", "none"] = "auto",
    prefill: bool = True,
    name: str | None = None,
    options: RepairOptions | None = None,
    **params: Any,
) -> StructuredResult[Any]:
    """Ask for a value matching ``schema_or_model`` and return it typed, with the attempt log.

    * ``client``: a base URL, a :class:`ChatClient` or an ``openai.OpenAI`` client.
    * ``schema_or_model``: a JSON Schema dict or a pydantic model/type; a model yields
      an instance as ``result.value``.
    * ``response_format``: ``"auto"`` starts at ``json_schema`` and steps down when the
      endpoint rejects it; ``"none"`` goes straight to the prompt rung.
    * ``prefill``: in the prompt rung, start the assistant turn with ``{``/``[`` (rung 5).
      Endpoints that ignore a prefill still work: the reply is read with and without it.
    * ``options``: pipeline options; by default truncated output is not accepted.
    * extra ``params`` (``temperature``, ``max_tokens``, ...) go into every request.

    Raises :class:`StructuredOutputError` (with ``.attempts``) once ``max_retries``
    re-asks have failed, or at once for a refusal; :class:`EndpointError` when the
    endpoint itself fails.
    """
    if max_retries < 0:
        raise ValueError("max_retries must be >= 0")
    # Messages are copied and serialized for every request (recursive both).
    check_nesting(messages, MAX_JSON_DEPTH, "messages")
    if isinstance(client, str):
        client = ChatClient(client)
    validator = _validator(schema_or_model)
    schema = validator.json_schema
    if name is None:
        name = getattr(schema_or_model, "__name__", None) or str(schema.get("title") or "response")
    name = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in name)[:64] or "response"
    opts = options if options is not None else RepairOptions(allow_truncated=False)
    rungs = list(_RUNGS) if response_format == "auto" else [{"none": "prompt"}.get(response_format, response_format)]
    if rungs[0] not in _RUNGS:
        raise ValueError(f"response_format must be 'auto', 'json_schema', 'json_object' or 'none', not {response_format!r}")
    key = _endpoint_key(client)
    rung_i = _REJECTED.get(key, 0) if response_format == "auto" else 0
    history = list(messages)  # the conversation grows with each failed reply and its error
    attempts: list[Attempt] = []
    failures = 0
    opener = "[" if schema.get("type") == "array" else "{"

    while True:
        rung = rungs[rung_i]
        use_prompt = rung != "json_schema" or failures > 0
        msgs = _with_instructions(history, schema_prompt(schema)) if use_prompt else copy.deepcopy(history)
        use_prefill = prefill and rung == "prompt" and schema.get("type") in ("object", "array", None)
        if use_prefill:
            msgs.append({"role": "assistant", "content": opener})
        payload: dict[str, Any] = {"messages": msgs, **params}
        if model is not None:
            payload["model"] = model
        if rung == "json_schema":
            fmt: dict[str, Any] = {"name": name, "schema": schema}
            if _strict_compatible(schema):
                fmt["strict"] = True
            payload["response_format"] = {"type": "json_schema", "json_schema": fmt}
        elif rung == "json_object":
            payload["response_format"] = {"type": "json_object"}
        att = Attempt(len(attempts) + 1, rung, opener if use_prefill else None, msgs)
        attempts.append(att)
        t0 = time.perf_counter()
        try:
            content, finish, refusal = _call(client, payload)
        except _HTTPFailure as e:
            att.seconds = time.perf_counter() - t0
            if _is_format_rejection(e.status, e.body) and rung_i + 1 < len(rungs) and rung != "prompt":
                att.status, att.error = "unsupported", f"endpoint rejected {rung}: {e.body[:300]}"
                rung_i += 1
                if response_format == "auto":
                    _REJECTED[key] = rung_i  # later calls start on the rung that works
                continue
            att.status, att.error = "endpoint_error", str(e)
            raise EndpointError(f"endpoint error on attempt {att.number}: {e}", attempts, e.status, e.body) from None
        att.seconds = time.perf_counter() - t0
        att.reply, att.finish_reason = content, finish
        if refusal:
            att.status, att.error = "refused", f"the model refused: {refusal}"
            raise StructuredOutputError(att.error, attempts)
        full_reply = content or ""
        try:
            res = _read_reply(full_reply, att.prefill, validator, opts)
        except RepairError as e:
            att.report = e.report
            att.error = str(e)
            att.status = "truncated" if isinstance(e, TruncatedError) else ("invalid" if isinstance(e, ValidationFailed) else "unparseable")
        else:
            att.report = res.report
            att.status = "ok"
            return StructuredResult(res.value, res.data, attempts)
        failures += 1
        if failures > max_retries:
            tries = f"{failures} attempt{'s' if failures > 1 else ''}"
            raise StructuredOutputError(f"no valid reply after {tries} (max_retries={max_retries}); last error: {att.error}", attempts)
        said = (att.prefill or "") + full_reply if att.prefill and not full_reply.lstrip().startswith(att.prefill) else full_reply
        history = history + [
            {"role": "assistant", "content": said},
            {"role": "user", "content": _retry_message(att)},
        ]


def _read_reply(reply: str, prefill: str | None, validator: Any, opts: RepairOptions) -> Any:
    """Parse the reply; with a prefill the endpoint may or may not have continued it."""
    texts = [reply]
    if prefill and not reply.lstrip().startswith(prefill):
        texts = [prefill + reply, reply]
    first_error: RepairError | None = None
    for text in texts:
        try:
            return parse(text, validator, options=opts)
        except RepairError as e:
            if first_error is None:
                first_error = e
    assert first_error is not None
    raise first_error


def _retry_message(att: Attempt) -> str:
    if att.status == "truncated":
        return "Your previous reply was cut off before the JSON value was complete. Reply again with the complete JSON value, shorter if needed."
    return f"Your previous reply could not be used:\n{att.error}\nReply again with only the corrected JSON value."
