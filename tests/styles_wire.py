"""Test helper: writes reasoning, content and tool calls the way each built-in
family does (independently of formcast.styles), for round-trip tests."""

from __future__ import annotations

import json

M3 = "]<]minimax[>["
DSML = "｜DSML｜"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "exact": {"type": "boolean"}},
            "required": ["query"],
        },
    },
}
TOOLS = [WEATHER, SEARCH]

# (style, reasoning-end text written by the model, text between it and the content)
THINK_END = {
    "llama": None,
    "kimi": "</think>",
    "deepseek_r1": "</think>",
    "deepseek_v3_1": "</think>",
    "deepseek_v3_2": "</think>",
    "deepseek_v4": "</think>",
    "deepseek_v4_1": "</think>",
    "qwen_3": "</think>\n\n",
    "qwen_3_5": "</think>\n\n",
    "qwen_3_coder": "</think>\n\n",
    "exaone": "</think>\n\n",
    "minimax": "</think>\n\n",
    "minimax_m3": "</mm:think>",
    "glm_4_7": "</think>",
    "cohere": "<|END_THINKING|>",
    "mimo": "</think>",
}
ALL_STYLES = sorted([*THINK_END, "harmony", "kimi_k3"])


def _raw(v) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def _kimi_type(v) -> str:
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    return "null" if v is None else "number"


def _m3_value(v) -> str:
    """minimax_m3_xml is recursive: objects and arrays are nested elements."""
    if isinstance(v, dict):
        return "".join(f"{M3}<{k}>{_m3_value(x)}{M3}</{k}>" for k, x in v.items())
    if isinstance(v, list):
        return "".join(f"{M3}<item>{_m3_value(x)}{M3}</item>" for x in v)
    return _raw(v)


def _cohere_value(name, v) -> str:
    """cohere_xml: raw strings, JSON scalars, nested dict and list elements."""
    attr = f' name="{name}"' if name is not None else ""
    if isinstance(v, dict):
        return f'<cofl:value{attr} type="dict">' + "".join(_cohere_value(k, x) for k, x in v.items()) + "</cofl:value>"
    if isinstance(v, list):
        return f'<cofl:value{attr} type="list">' + "".join(_cohere_value(None, x) for x in v) + "</cofl:value>"
    return f'<cofl:value{attr} type="{"raw" if isinstance(v, str) else "json"}">{_raw(v)}</cofl:value>'


def xml_params(style: str, args: dict, exact: frozenset = frozenset()) -> str:
    """The arguments in an XML parameter style (as the grammar accepts them).
    Non-string values are JSON, except in the recursive styles (minimax_m3,
    cohere) where objects and arrays are nested elements. Qwen3-Coder puts
    each value on its own line; raw text keeps those newlines, so the
    parameters named in ``exact`` (constrained strings: enum, const,
    pattern...) are written without them."""
    out = ""
    for k, v in args.items():
        s = isinstance(v, str)
        if style == "qwen_xml":
            nl = "" if s and k in exact else "\n"
            out += f"<parameter={k}>{nl}{_raw(v)}{nl}</parameter>\n"
        elif style == "minimax_xml":
            out += f'<parameter name="{k}">{_raw(v)}</parameter>\n'
        elif style == "glm_xml":
            out += f"<arg_key>{k}</arg_key><arg_value>{_raw(v)}</arg_value>"
        elif style in ("deepseek_xml", "deepseek_v4_1_xml"):
            d = DSML if style == "deepseek_xml" else DSML + " "
            out += f'<{d}parameter name="{k}" string="{"true" if s else "false"}">{_raw(v)}</{d}parameter>\n'
        elif style == "minimax_m3_xml":
            out += f"{M3}<{k}>{_m3_value(v)}{M3}</{k}>"
        elif style == "cohere_xml":
            out += _cohere_value(k, v)
        elif style == "kimi_k3_xml":
            out += f'<|open|>argument key="{k}" type="{_kimi_type(v)}"<|sep|>{_raw(v)}<|close|>argument<|sep|>'
    return out


# Text before the call section when a call is required or forced.
REQUIRED_PREFIX = {"deepseek_v3_2": "\n\n", "deepseek_v4": "\n\n", "deepseek_v4_1": "\n\n", "minimax": "\n"}
# What a family's template writes between consecutive calls, which is all a
# required turn may hold between them (in an "auto" turn that text is content).
CALL_SEPARATOR = {"llama": "; ", "qwen_3": "\n", "qwen_3_5": "\n", "qwen_3_coder": "\n", "exaone": "\n"}
# What a family writes instead of reasoning when reasoning is disabled.
DISABLED_PREFIX = {"minimax": "\n</think>\n\n\n\n"}
# Families whose calls sit in a section (required/forced: only the section).
SECTION_STYLES = {"kimi", "deepseek_r1", "deepseek_v3_1", "deepseek_v3_2", "deepseek_v4", "deepseek_v4_1", "minimax", "minimax_m3", "cohere"}


def render(
    style: str, reasoning: str, content: str, calls: list[tuple[str, dict]], *, choice: str = "auto", think: bool = True, exact: frozenset = frozenset()
) -> str:
    """A whole output. ``choice`` is the tool_choice mode ("auto", "none",
    "required", "forced"): there, required/forced calls may carry a prefix
    (pass ``content=""`` for a valid output, except for Kimi-K3's response
    block), and Harmony writes ``content`` (its final channel) only with
    "auto" and "none". ``think`` is whether
    reasoning is enabled ("disabled" otherwise). ``exact``: see
    :func:`xml_params`."""
    j = lambda a: json.dumps(a, ensure_ascii=False)  # noqa: E731
    if style == "harmony":
        parts = [f"<|channel|>analysis<|message|>{reasoning}<|end|>"] if think else []
        if content and choice in ("auto", "none"):
            parts.append(f"<|channel|>final<|message|>{content}<|end|>")
        parts += [f"<|channel|>commentary to=functions.{n}<|constrain|>json<|message|>{j(a)}<|call|>" for n, a in calls]
        return "<|start|>assistant".join(parts)
    if style == "kimi_k3":
        out = f"{reasoning}<|close|>think<|sep|><|open|>response<|sep|>" if think else ""
        out += f"{content}<|close|>response<|sep|>"
        if calls:
            out += "<|open|>tools<|sep|>"
            for i, (n, a) in enumerate(calls):
                out += f'<|open|>call tool="{n}" index="{i}"<|sep|>{xml_params("kimi_k3_xml", a)}<|close|>call<|sep|>'
            out += "<|close|>tools<|sep|>"
        return out + "<|close|>message<|sep|>"
    head = ""
    if THINK_END[style] is not None:
        if think:
            head = ("<think>" if style == "mimo" else "") + reasoning + THINK_END[style]
        else:
            head = DISABLED_PREFIX.get(style, "")
    if choice in ("required", "forced") and calls:
        content += REQUIRED_PREFIX.get(style, "")
    out = head + content
    if not calls:
        return out
    sep = CALL_SEPARATOR.get(style, "") if choice == "required" else ""
    if style == "llama":
        return out + sep.join(f'{{"name": "{n}", "parameters": {j(a)}}}' for n, a in calls)
    if style == "qwen_3":
        return out + sep.join(f'<tool_call>\n{{"name": "{n}", "arguments": {j(a)}}}\n</tool_call>' for n, a in calls)
    if style == "exaone":
        return out + sep.join(f'<tool_call>{{"name": "{n}", "arguments": {j(a)}}}</tool_call>' for n, a in calls)
    if style in ("qwen_3_5", "qwen_3_coder"):
        return out + sep.join(f"<tool_call>\n<function={n}>\n{xml_params('qwen_xml', a, exact)}</function>\n</tool_call>" for n, a in calls)
    if style == "mimo":
        return out + sep.join(f"<tool_call><function={n}>{xml_params('qwen_xml', a, exact)}</function></tool_call>" for n, a in calls)
    if style == "glm_4_7":
        return out + sep.join(f"<tool_call>{n}{xml_params('glm_xml', a)}</tool_call>" for n, a in calls)
    if style == "kimi":
        body = "".join(
            f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{j(a)}<|tool_call_end|>" for i, (n, a) in enumerate(calls)
        )
        return out + f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>"
    if style == "deepseek_r1":
        body = "\n".join(f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{j(a)}\n```<｜tool▁call▁end｜>" for n, a in calls)
        return out + f"<｜tool▁calls▁begin｜>{body}<｜tool▁calls▁end｜>"
    if style == "deepseek_v3_1":
        body = "".join(f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{j(a)}<｜tool▁call▁end｜>" for n, a in calls)
        return out + f"<｜tool▁calls▁begin｜>{body}<｜tool▁calls▁end｜>"
    if style in ("deepseek_v3_2", "deepseek_v4", "deepseek_v4_1"):
        d = DSML + (" " if style == "deepseek_v4_1" else "")
        block = {"deepseek_v3_2": "function_calls", "deepseek_v4": "tool_calls", "deepseek_v4_1": "calls"}[style]
        xs = "deepseek_v4_1_xml" if style == "deepseek_v4_1" else "deepseek_xml"
        body = "".join(f'<{d}invoke name="{n}">\n{xml_params(xs, a)}</{d}invoke>\n' for n, a in calls)
        return out + f"<{d}{block}>\n{body}</{d}{block}>"
    if style == "minimax":
        body = "".join(f'<invoke name="{n}">\n{xml_params("minimax_xml", a)}</invoke>\n' for n, a in calls)
        return out + f"<minimax:tool_call>\n{body}</minimax:tool_call>"
    if style == "minimax_m3":
        body = "".join(f'{M3}<invoke name="{n}">{xml_params("minimax_m3_xml", a)}{M3}</invoke>\n' for n, a in calls)
        return out + f"{M3}<tool_call>\n{body}{M3}</tool_call>"
    if style == "cohere":
        body = "".join(f'<cofl:tool_call id="{i}" name="{n}">{xml_params("cohere_xml", a)}</cofl:tool_call>' for i, (n, a) in enumerate(calls))
        return out + f"<cofl:tool_calls>{body}</cofl:tool_calls>"
    raise KeyError(style)
