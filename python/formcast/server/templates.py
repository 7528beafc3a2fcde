"""Chat templates: the model's own Jinja template, a built-in one by name, or
Jinja text from the request; rendered in a sandbox with ``tools`` and any
``chat_template_kwargs`` passed through."""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from typing import Any, Mapping, Optional, Sequence

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .errors import APIError

__all__ = ["BUILTIN_TEMPLATES", "resolve_template", "render_chat", "normalize_messages"]

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


def _raise(message: str) -> None:
    raise jinja2.TemplateError(message)


def _tojson(value: Any, indent: Optional[int] = None, ensure_ascii: bool = False, sort_keys: bool = False) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys)


@lru_cache(maxsize=64)
def _compile(source: str) -> jinja2.Template:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(source)


def resolve_template(requested: Optional[str], model_template: Optional[str], *, param: str = "template") -> str:
    """The Jinja source to use: ``requested`` as a built-in name or Jinja
    text, else the model's template, else ChatML. An unknown name is a 400."""
    if requested is None or requested == "":
        return model_template or BUILTIN_TEMPLATES["chatml"]
    if not isinstance(requested, str):
        raise APIError(400, f"'{param}' must be a template name or Jinja text", param=param)
    if "{{" in requested or "{%" in requested:
        try:
            _compile(requested)
        except jinja2.TemplateError as e:
            raise APIError(400, f"'{param}' is not a valid Jinja template: {e}", param=param) from None
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
            for call in calls:
                call = dict(call)
                fn = dict(call.get("function") or {})
                args = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        fn["arguments"] = json.loads(args) if args.strip() else {}
                    except json.JSONDecodeError:
                        raise APIError(
                            400, f"messages[{i}]: tool call arguments are not valid JSON", param=f"messages[{i}].tool_calls"
                        ) from None
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
) -> str:
    """Renders ``messages`` with the Jinja template ``source``. A template
    error (including ``raise_exception`` from the template) is a 400."""
    extra = dict(kwargs or {})
    try:
        return _compile(source).render(
            **extra,
            messages=list(messages),
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            bos_token=bos_token,
            eos_token=eos_token,
        )
    except APIError:
        raise
    except jinja2.TemplateError as e:
        raise APIError(400, f"the chat template failed: {e}", param="messages") from None
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise APIError(400, f"the chat template failed on these messages: {e}", param="messages") from None
