"""OpenAI ``tools`` / ``tool_choice`` / reasoning options, validated and
normalized into one :class:`ToolRequest` that style builders consume.

Every error is a :class:`StyleError` naming the offending field the way the
request spells it, e.g. ``tools[2].function.parameters``.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Optional, Sequence, Union

import jsonschema
import pydantic

from .._depth import MAX_CHECK_DEPTH, NestingError, check_nesting

__all__ = ["StyleError", "FunctionTool", "CustomTool", "ToolRequest", "normalize_request", "ReasoningMode", "ANY_ARGUMENTS"]

ReasoningMode = Literal["enabled", "auto", "disabled"]
Mode = Literal["none", "auto", "required", "forced"]

# What a call's arguments must be when the tool's schema is not enforced.
ANY_ARGUMENTS: dict[str, Any] = {"type": "object"}

# Names are spliced into wire formats (`<function=NAME>`, `name="NAME"`):
# only characters that cannot close or break any of them.
_NAME_PATTERN = r"^[A-Za-z0-9_.\-]{1,64}$"


class StyleError(ValueError):
    """A bad style request: the message names the field at fault."""


class _FunctionDef(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", strict=True)

    name: str = pydantic.Field(pattern=_NAME_PATTERN)
    description: Optional[str] = None
    parameters: Optional[dict[str, Any]] = None
    strict: Optional[bool] = None


@dataclass(frozen=True)
class FunctionTool:
    """One function tool as a style builder sees it."""

    name: str
    #: The schema the call's arguments are constrained to: the declared
    #: ``parameters`` unless ``strict`` is false or they are missing, in
    #: which case any JSON object.
    schema: Any
    #: The declared ``parameters`` (or None), kept as a typing hint for
    #: converting XML-style arguments back to JSON.
    parameters: Optional[dict[str, Any]] = None


@dataclass(frozen=True)
class CustomTool:
    """One OpenAI custom tool: the call's input is raw text, free
    (``{"type": "text"}``) or following a grammar (``syntax`` ``"regex"``,
    Rust regex syntax, or ``"lark"``)."""

    name: str
    #: ``"text"``, ``"regex"`` or ``"lark"``.
    syntax: str = "text"
    definition: str = ""

    def content(self) -> dict[str, Any]:
        """The structural-tag format of the call's input."""
        if self.syntax == "regex":
            return {"type": "regex", "pattern": self.definition}
        if self.syntax == "lark":
            return {"type": "lark", "grammar": self.definition}
        return {"type": "any_text"}


@dataclass(frozen=True)
class ToolRequest:
    """A normalized request: which calls may appear, and how many."""

    #: The tools calls may name (already narrowed by ``allowed_tools``; one
    #: tool when ``mode == "forced"``): function and custom tools.
    functions: tuple[Union[FunctionTool, CustomTool], ...]
    mode: Mode
    parallel: bool
    reasoning: ReasoningMode
    builtin_tools: tuple[str, ...] = ()
    exclude_special_tokens: bool = True

    @property
    def calls_allowed(self) -> bool:
        return self.mode != "none" and bool(self.functions or self.builtin_tools)


def _field_path(prefix: str, loc: Sequence[Union[str, int]]) -> str:
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _as_dict(value: Any) -> Any:
    # openai / pydantic objects are accepted as well as plain dicts.
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True)
    return value


def _parse_custom(where: str, raw: Mapping[str, Any]) -> CustomTool:
    body = _as_dict(raw.get("custom", {k: v for k, v in raw.items() if k != "type"}))
    if "custom" in raw:
        where += ".custom"
    if not isinstance(body, Mapping):
        raise StyleError(f"{where} must be an object, not {type(body).__name__}")
    name = body.get("name")
    if not isinstance(name, str) or not re.fullmatch(_NAME_PATTERN[1:-1], name):
        raise StyleError(f"{where}.name: must be 1 to 64 of A-Z a-z 0-9 _ . - (got {name!r})")
    fmt = _as_dict(body.get("format", {"type": "text"}))
    if not isinstance(fmt, Mapping) or fmt.get("type") not in ("text", "grammar"):
        raise StyleError(f"{where}.format must be {{\"type\": \"text\"}} or {{\"type\": \"grammar\", \"grammar\": {{...}}}}")
    if fmt["type"] == "text":
        return CustomTool(name)
    grammar = _as_dict(fmt.get("grammar"))
    if not isinstance(grammar, Mapping) or grammar.get("syntax") not in ("regex", "lark") or not isinstance(grammar.get("definition"), str) or not grammar["definition"]:
        raise StyleError(f"{where}.format.grammar must be {{\"syntax\": \"regex\" or \"lark\", \"definition\": a non-empty string}}")
    return CustomTool(name, grammar["syntax"], grammar["definition"])


def _parse_tool(i: int, raw: Any) -> Union[FunctionTool, CustomTool]:
    where = f"tools[{i}]"
    raw = _as_dict(raw)
    if not isinstance(raw, Mapping):
        raise StyleError(f"{where} must be an object, not {type(raw).__name__}")
    if raw.get("type") == "custom":
        return _parse_custom(where, raw)
    if raw.get("type", "function") != "function":
        raise StyleError(f"{where}.type must be \"function\" or \"custom\" (got {raw.get('type')!r}); pass built-in tools as builtin_tools")
    if "function" in raw:
        body, where = raw["function"], where + ".function"
        body = _as_dict(body)
        if not isinstance(body, Mapping):
            raise StyleError(f"{where} must be an object, not {type(body).__name__}")
    else:  # the Responses API's flat shape
        body = {k: v for k, v in raw.items() if k != "type"}
    try:
        fn = _FunctionDef.model_validate(dict(body))
    except pydantic.ValidationError as e:
        err = e.errors()[0]
        raise StyleError(f"{_field_path(where, err['loc'])}: {err['msg']}") from None
    if fn.parameters is not None:
        # The schema is walked recursively below (jsonschema, json.dumps):
        # bound it first, iteratively.
        try:
            check_nesting(fn.parameters, MAX_CHECK_DEPTH, f"{where}.parameters")
        except NestingError as e:
            raise StyleError(str(e)) from None
        problem = _schema_problem(fn.parameters)
        if problem is not None:
            raise StyleError(f"{where}.parameters{problem[0]}: not a valid JSON Schema: {problem[1]}")
        if fn.parameters.get("type", "object") != "object":
            raise StyleError(f"{where}.parameters must describe an object (its properties are the arguments)")
    enforced = fn.parameters is not None and fn.strict is not False
    return FunctionTool(name=fn.name, schema=fn.parameters if enforced else dict(ANY_ARGUMENTS), parameters=fn.parameters)


def _check_schema(schema: Any) -> Optional[tuple[str, str]]:
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as e:
        at = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
        return at, e.message
    except RecursionError:
        # The nesting is bounded before this; what is left is a `pattern`
        # whose groups nest deeply (checked with `re.compile`, which recurses).
        return "", "too deeply nested to check (a `pattern` with deeply nested groups?)"
    return None


@functools.lru_cache(maxsize=1024)
def _check_schema_text(text: str) -> Optional[tuple[str, str]]:
    return _check_schema(json.loads(text))


def _schema_problem(schema: Any) -> Optional[tuple[str, str]]:
    """Where and why ``schema`` is not a valid JSON Schema, or None.

    Checking a schema against its metaschema takes ~10 ms; a server sees the
    same tools on every request, so results are cached by the schema's text."""
    try:
        text = json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return _check_schema(schema)
    return _check_schema_text(text)


def _choice_name(where: str, raw: Any) -> str:
    raw = _as_dict(raw)
    if isinstance(raw, Mapping) and raw.get("type") == "custom":
        body = _as_dict(raw.get("custom", raw))
        name = body.get("name") if isinstance(body, Mapping) else None
        if not isinstance(name, str):
            raise StyleError(f"{where}{'.custom' if 'custom' in raw else ''}.name must be a string")
        return name
    if not isinstance(raw, Mapping) or raw.get("type", "function") != "function":
        raise StyleError(f"{where} must be {{\"type\": \"function\", \"function\": {{\"name\": ...}}}} or {{\"type\": \"custom\", \"custom\": {{\"name\": ...}}}}")
    if "function" in raw:
        fn = _as_dict(raw["function"])
        name, at = (fn.get("name") if isinstance(fn, Mapping) else None), where + ".function.name"
    else:
        name, at = raw.get("name"), where + ".name"
    if not isinstance(name, str):
        raise StyleError(f"{at} must be a string")
    return name


def _known(name: str, where: str, tools: Mapping[str, Union[FunctionTool, CustomTool]]) -> Union[FunctionTool, CustomTool]:
    if name not in tools:
        known = ", ".join(sorted(tools)) or "none"
        raise StyleError(f"{where} names unknown function {name!r} (tools: {known})")
    return tools[name]


def _reasoning(value: Union[str, bool, None], default: ReasoningMode) -> ReasoningMode:
    if value is None:
        return default
    if value is True:
        return "enabled"
    if value is False:
        return "disabled"
    if value in ("enabled", "auto", "disabled"):
        return value  # type: ignore[return-value]
    raise StyleError(f"reasoning must be \"enabled\", \"auto\", \"disabled\" or a bool, not {value!r}")


def normalize_request(
    tools: Optional[Sequence[Any]],
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    reasoning: Union[str, bool, None] = None,
    *,
    default_reasoning: ReasoningMode = "enabled",
    builtin_tools: Sequence[str] = (),
    exclude_special_tokens: bool = True,
) -> ToolRequest:
    """Validates OpenAI-style options into a :class:`ToolRequest`.

    ``tool_choice`` is ``"auto"``, ``"none"``, ``"required"``, a named
    function (``{"type": "function", "function": {"name": ...}}``) or
    ``{"type": "allowed_tools", "allowed_tools": {"mode": "auto"|"required",
    "tools": [...]}}``; the Responses API's flat shapes are accepted too.
    """
    if tools is None:
        tools = []
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
        raise StyleError("tools must be a list of tool objects")
    parsed: dict[str, Union[FunctionTool, CustomTool]] = {}
    for i, raw in enumerate(tools):
        fn = _parse_tool(i, raw)
        if fn.name in parsed:
            field = "custom" if isinstance(fn, CustomTool) else "function"
            raise StyleError(f"tools[{i}].{field}.name: duplicate tool name {fn.name!r}")
        parsed[fn.name] = fn
    builtins = []
    for i, b in enumerate(builtin_tools):
        if not isinstance(b, str) or not b or any(c in b for c in "<>\"| \n"):
            raise StyleError(f"builtin_tools[{i}] must be a plain tool name, not {b!r}")
        builtins.append(b)
    if not isinstance(parallel_tool_calls, bool):
        raise StyleError("parallel_tool_calls must be a bool")
    mode: Mode
    functions = tuple(parsed.values())
    tool_choice = _as_dict(tool_choice)
    if tool_choice is None or tool_choice == "auto":
        mode = "auto"
    elif tool_choice == "none":
        mode = "none"
    elif tool_choice == "required":
        mode = "required"
        if not functions and not builtins:
            raise StyleError("tool_choice is \"required\" but tools is empty")
    elif isinstance(tool_choice, Mapping) and tool_choice.get("type") == "allowed_tools":
        spec = tool_choice.get("allowed_tools", tool_choice)
        where = "tool_choice.allowed_tools" if "allowed_tools" in tool_choice else "tool_choice"
        spec = _as_dict(spec)
        if not isinstance(spec, Mapping):
            raise StyleError(f"{where} must be an object")
        m = spec.get("mode", "auto")
        if m not in ("auto", "required"):
            raise StyleError(f"{where}.mode must be \"auto\" or \"required\", not {m!r}")
        allowed = spec.get("tools")
        if not isinstance(allowed, Sequence) or isinstance(allowed, (str, bytes)) or not allowed:
            raise StyleError(f"{where}.tools must be a non-empty list")
        names = []
        for i, t in enumerate(allowed):
            names.append(_known(_choice_name(f"{where}.tools[{i}]", t), f"{where}.tools[{i}]", parsed).name)
        functions = tuple(f for f in functions if f.name in names)
        mode = m
    elif isinstance(tool_choice, Mapping):
        name = _choice_name("tool_choice", tool_choice)
        functions = (_known(name, "tool_choice", parsed),)
        mode = "forced"
    else:
        raise StyleError(f"tool_choice must be \"auto\", \"none\", \"required\" or an object, not {tool_choice!r}")
    return ToolRequest(
        functions=functions,
        mode=mode,
        parallel=parallel_tool_calls,
        reasoning=_reasoning(reasoning, default_reasoning),
        builtin_tools=tuple(builtins) if mode in ("auto", "required") else (),
        exclude_special_tokens=exclude_special_tokens,
    )
