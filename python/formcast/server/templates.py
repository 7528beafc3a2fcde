"""Chat templates: the model's own Jinja template, a built-in one by name, or
Jinja text from the request; rendered in a sandbox with ``tools`` and any
``chat_template_kwargs`` passed through.

Trusted templates (the model's, the built-in ones, ``--template``) are
compiled and rendered in the server process. Jinja text from a request is
untrusted code: it is compiled and rendered in a worker process
(:mod:`.jinja_sandbox`) with a memory limit, a time limit and a cap on the
rendered text, so a template that loops, recurses or builds huge strings is
a 400 naming the field and the server itself does not grow.
"""

from __future__ import annotations

import atexit
import threading
from typing import Any, Mapping, Optional, Sequence

import jinja2
from jinja2.sandbox import SecurityError

from .body import loads_bounded
from .errors import APIError
from .jinja_sandbox import MAX_OUTPUT_BYTES, RENDER_MEMORY_BYTES, TemplateFailure, WorkerPool, compile_template

__all__ = [
    "BUILTIN_TEMPLATES",
    "TEMPLATE_TIME_LIMIT_S",
    "TEMPLATE_MEMORY_BYTES",
    "TEMPLATE_MAX_OUTPUT_BYTES",
    "is_jinja",
    "resolve_template",
    "render_chat",
    "normalize_messages",
]

#: Rendering budget (seconds) of a template given in a request.
TEMPLATE_TIME_LIMIT_S = 5.0
#: Memory a request template may use to compile and render (in its worker).
TEMPLATE_MEMORY_BYTES = RENDER_MEMORY_BYTES
#: The longest prompt (UTF-8 bytes) a request template may render.
TEMPLATE_MAX_OUTPUT_BYTES = MAX_OUTPUT_BYTES

# Built-in templates, written for this project (the common public formats).
BUILTIN_TEMPLATES: dict[str, str] = {
    "chatml": (
        "{% for message in messages %}"
        "{{ '<|im_start|>' + message['role'] + '\n' + (message['content'] or '') + '<|im_end|>\n' }}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
    ),
    "llama3": (
        "{{ bos_token }}"
        "{% for message in messages %}"
        "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + (message['content'] or '') | trim + '<|eot_id|>' }}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
    ),
    "mistral": (
        "{{ bos_token }}"
        "{% for message in messages %}"
        "{% if message['role'] == 'user' %}{{ '[INST] ' + (message['content'] or '') + ' [/INST]' }}"
        "{% elif message['role'] == 'system' %}{{ '[INST] ' + (message['content'] or '') + ' [/INST]' }}"
        "{% else %}{{ (message['content'] or '') + eos_token }}{% endif %}"
        "{% endfor %}"
    ),
    "gemma": (
        "{{ bos_token }}"
        "{% for message in messages %}"
        "{% set role = 'model' if message['role'] == 'assistant' else 'user' %}"
        "{{ '<start_of_turn>' + role + '\n' + (message['content'] or '') | trim + '<end_of_turn>\n' }}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}"
    ),
}


def is_jinja(text: Optional[str]) -> bool:
    """Whether ``text`` is Jinja source rather than a template name."""
    return isinstance(text, str) and ("{{" in text or "{%" in text)


_default_pool: Optional[WorkerPool] = None
_default_lock = threading.Lock()


def _shared_pool() -> WorkerPool:
    """The process-wide worker pool for callers that bring none (closed at exit)."""
    global _default_pool
    with _default_lock:
        if _default_pool is None:
            _default_pool = WorkerPool()
            atexit.register(_default_pool.close)
        return _default_pool


def resolve_template(
    requested: Optional[str], model_template: Optional[str], *, param: str = "template", trusted: bool = True
) -> str:
    """The Jinja source to use: ``requested`` as a built-in name or Jinja
    text, else the model's template, else ChatML. An unknown name is a 400.
    Trusted Jinja text is compiled here (a syntax error is a 400); untrusted
    text (``trusted=False``, from a request) is compiled only in its worker,
    by :func:`render_chat`."""
    if requested is None or requested == "":
        return model_template or BUILTIN_TEMPLATES["chatml"]
    if not isinstance(requested, str):
        raise APIError(400, f"'{param}' must be a template name or Jinja text", param=param)
    if is_jinja(requested):
        if not trusted:
            return requested
        try:
            compile_template(requested)
        except jinja2.TemplateError as e:
            raise APIError(400, f"'{param}' is not a valid Jinja template: {e}", param=param) from None
        except (RecursionError, MemoryError):
            raise APIError(400, f"'{param}' is nested too deeply to compile", param=param) from None
        return requested
    name = requested.strip().lower()
    if name in BUILTIN_TEMPLATES:
        return BUILTIN_TEMPLATES[name]
    raise APIError(
        400,
        f"unknown chat template {requested!r}; built-in templates: {', '.join(sorted(BUILTIN_TEMPLATES))} "
        "(or pass Jinja text)",
        param=param,
    )


def _text_of(content: Any) -> Any:
    """Message content parts (``[{"type": "text", "text": ...}]``) joined as text."""
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") in ("text", "input_text", "output_text"):
                parts.append(str(part.get("text", "")))
            elif isinstance(part, str):
                parts.append(part)
            else:
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise APIError(400, f"unsupported message content part of type {kind!r} (text only)", param="messages")
        return "".join(parts)
    return content


def normalize_messages(messages: Any) -> list[dict]:
    """Messages as plain dicts for templating: text content, and tool-call
    ``arguments`` parsed from JSON strings into objects."""
    if not isinstance(messages, list) or not messages:
        raise APIError(400, "'messages' must be a non-empty array", param="messages")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise APIError(400, f"messages[{i}] must be an object with a 'role'", param=f"messages[{i}]")
        msg = dict(m)
        msg["content"] = _text_of(msg.get("content"))
        if msg["content"] is None:
            msg["content"] = ""
        if not isinstance(msg["content"], str):
            raise APIError(400, f"messages[{i}].content must be text", param=f"messages[{i}].content")
        calls = msg.get("tool_calls")
        if calls:
            fixed = []
            for k, call in enumerate(calls):
                call = dict(call)
                if call.get("type") == "custom":
                    # Templates know function calls: a custom call's input
                    # is shown as its arguments, as the tool style writes it.
                    custom = call.get("custom") or {}
                    fixed.append({"id": call.get("id"), "type": "function",
                                  "function": {"name": custom.get("name", ""), "arguments": custom.get("input", "")}})
                    continue
                fn = dict(call.get("function") or {})
                args = fn.get("arguments")
                if isinstance(args, str):
                    # JSON text from the client: parsed with the body's depth and Unicode rules.
                    where = f"messages[{i}].tool_calls[{k}].function.arguments"
                    fn["arguments"] = loads_bounded(args, param=where) if args.strip() else {}
                call["function"] = fn
                fixed.append(call)
            msg["tool_calls"] = fixed
        out.append(msg)
    return out


def render_chat(
    source: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    add_generation_prompt: bool = True,
    tools: Optional[list] = None,
    bos_token: str = "",
    eos_token: str = "",
    kwargs: Optional[Mapping[str, Any]] = None,
    time_limit_s: Optional[float] = None,
    template_param: str = "chat_template",
    pool: Optional[WorkerPool] = None,
) -> str:
    """Renders ``messages`` with the Jinja template ``source``.

    ``time_limit_s`` None: a trusted template, rendered in this process.
    Otherwise ``source`` is untrusted (from a request): it is compiled and
    rendered in a worker of ``pool`` (None: a process-wide pool) within
    ``time_limit_s`` seconds, :data:`TEMPLATE_MEMORY_BYTES` of memory and
    :data:`TEMPLATE_MAX_OUTPUT_BYTES` of output.

    A template error (including ``raise_exception`` from the template) or a
    Python error on the messages is a 400 naming ``messages``; a template
    that does not compile, breaks a sandbox rule, takes too long, recurses
    too deeply, runs out of memory or renders too much is a 400 naming
    ``template_param``."""
    context: dict[str, Any] = dict(messages=list(messages), tools=tools, add_generation_prompt=add_generation_prompt,
                                   bos_token=bos_token, eos_token=eos_token)
    clash = next((k for k in kwargs or {} if k in context), None)
    if clash is not None:
        raise APIError(400, f"'chat_template_kwargs.{clash}' would replace a variable the server sets", param=f"chat_template_kwargs.{clash}")
    context.update(kwargs or {})
    if time_limit_s is not None:
        return _render_untrusted(source, context, time_limit_s, template_param, pool or _shared_pool())
    try:
        return compile_template(source).render(**context)
    except (RecursionError, MemoryError, OverflowError) as e:
        raise APIError(400, f"the chat template failed: {type(e).__name__}", param=template_param) from None
    except SecurityError as e:
        raise APIError(400, f"the chat template is not allowed to do this: {e}", param=template_param) from None
    except jinja2.TemplateError as e:
        raise APIError(400, f"the chat template failed: {e}", param="messages") from None
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
        raise APIError(400, f"the chat template failed on these messages: {e}", param="messages") from None


def _render_untrusted(source: str, context: dict, time_limit_s: float, param: str, pool: WorkerPool) -> str:
    try:
        return pool.render(source, context, time_limit_s=time_limit_s, max_output_bytes=TEMPLATE_MAX_OUTPUT_BYTES)
    except TemplateFailure as f:
        kind, message = f.kind, f.message
    if kind == "unavailable":
        raise APIError(503, f"the chat template could not be rendered: {message}", param=param, code="template_worker_unavailable",
                       headers={"Retry-After": "1"})
    if kind == "syntax":
        raise APIError(400, f"'{param}' is not a valid Jinja template: {message}", param=param)
    if kind == "timeout":
        raise APIError(400, f"the chat template took longer than {time_limit_s:g} s to render", param=param)
    if kind == "template":
        raise APIError(400, f"the chat template failed: {message}", param="messages")
    if kind == "data":
        raise APIError(400, f"the chat template failed on these messages: {message}", param="messages")
    raise APIError(400, message, param=param)
