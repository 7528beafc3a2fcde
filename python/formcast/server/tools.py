"""Tools in a request: validation of ``tools`` / ``tool_choice`` /
``parallel_tool_calls``, and the tool-call constraint: the model family's
built-in tool-call style (``formcast.styles.structural_tag_for``) as a
structural tag, compiled with ``Grammar.from_structural_tag``; the output is
read back with the same tag (:mod:`formcast.server.reader`).

With ``response_format`` (``tool_choice`` auto), the constraint is the union
``or(answer format, tool calls)``: either the structured answer or calls,
and a call ends the turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from .constraints import check_schema_depth
from .errors import APIError

__all__ = ["ToolPlan", "plan_tools", "detect_style", "tool_constraint", "tool_system_prompt"]


@dataclass
class ToolPlan:
    """The validated tool part of a request.

    ``mode``: ``auto``, ``none``, ``required`` or ``named``; ``allowed``:
    names the model may call (``allowed_tools`` narrows the list);
    ``forced``: the name for a named choice; ``parallel``: more than one
    call per turn allowed.
    """

    tools: list[dict]
    mode: str
    allowed: list[str]
    forced: Optional[str]
    parallel: bool

    @property
    def active(self) -> bool:
        """Whether the model may call a tool in this turn."""
        return self.mode != "none" and bool(self.allowed)

    def template_tools(self) -> Optional[list[dict]]:
        """The tools as chat templates expect them (the OpenAI definitions;
        a custom tool as a function whose description says how its input
        is written, since templates know only functions)."""
        return [_as_function(t) for t in self.tools] or None


def _name(tool: dict) -> str:
    return tool["custom"]["name"] if tool.get("type") == "custom" else tool["function"]["name"]


def _names(tools: list[dict]) -> list[str]:
    return [_name(t) for t in tools]


def _as_function(tool: dict) -> dict:
    """A custom tool shown to a chat template (or the tool prompt) as a function."""
    if tool.get("type") != "custom":
        return tool
    c = tool["custom"]
    fmt = c.get("format") or {"type": "text"}
    how = "Write its input as plain text in place of the arguments object"
    if fmt.get("type") == "grammar":
        g = fmt["grammar"]
        how += f"; the input must match this {g['syntax']} grammar:\n{g['definition']}"
    desc = (c.get("description") or "").strip()
    return {"type": "function", "function": {"name": c["name"], "description": (desc + "\n" if desc else "") + how + "."}}


def _check_custom(i: int, custom: Mapping[str, Any]) -> None:
    """A custom tool's grammar compiles (the same reading the constraint
    uses: ``regex`` in the Rust syntax, ``lark`` through ``Grammar.from_lark``)."""
    from .. import FormcastError, Grammar

    fmt = custom.get("format") or {"type": "text"}
    if fmt.get("type") != "grammar":
        return
    g = fmt["grammar"]
    where = f"tools[{i}].custom.format.grammar.definition"
    try:
        if g["syntax"] == "regex":
            Grammar.from_regex(g["definition"])
        elif not hasattr(Grammar, "from_lark"):
            raise APIError(400, "lark grammars are not available in this build", param=where)
        else:
            Grammar.from_lark(g["definition"])
    except (FormcastError, ValueError) as e:
        raise APIError(400, f"{where}: the {g['syntax']} grammar is invalid: {e}", param=where) from None


def plan_tools(req: Mapping[str, Any]) -> Optional[ToolPlan]:
    """Validates the tool fields of ``req``; None when it has no tools.
    Malformed tools, an unknown named tool or ``tool_choice`` without tools
    are 400s."""
    tools = req.get("tools")
    choice = req.get("tool_choice")
    parallel = req.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise APIError(400, "'parallel_tool_calls' must be a boolean", param="parallel_tool_calls")
    if not tools:
        if choice not in (None, "none", "auto"):
            raise APIError(400, "'tool_choice' needs 'tools'", param="tool_choice")
        return None
    if not isinstance(tools, list):
        raise APIError(400, "'tools' must be an array", param="tools")
    clean: list[dict] = []
    for i, t in enumerate(tools):
        if isinstance(t, Mapping) and t.get("type") == "custom":
            custom = t.get("custom")
            if not isinstance(custom, Mapping) or not isinstance(custom.get("name"), str) or not custom["name"]:
                raise APIError(400, f"tools[{i}].custom.name must be a non-empty string", param=f"tools[{i}].custom.name")
            _check_custom(i, custom)
            clean.append({"type": "custom", "custom": dict(custom)})
            continue
        fn = t.get("function") if isinstance(t, Mapping) else None
        if not isinstance(t, Mapping) or t.get("type", "function") != "function" or not isinstance(fn, Mapping):
            raise APIError(400, f"tools[{i}] must be {{'type': 'function', 'function': {{...}}}}", param=f"tools[{i}]")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise APIError(400, f"tools[{i}].function.name must be a non-empty string", param=f"tools[{i}].function.name")
        params = fn.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, (Mapping, bool)):
            raise APIError(400, f"tools[{i}].function.parameters must be a JSON Schema object", param=f"tools[{i}].function.parameters")
        # The tool-style code checks it against the metaschema, which recurses per level.
        check_schema_depth(params, f"tools[{i}].function.parameters")
        clean.append({"type": "function", "function": dict(fn, parameters=params)})
    names = _names(clean)
    if len(set(names)) != len(names):
        raise APIError(400, "tool names must be unique", param="tools")
    mode, allowed, forced = "auto", list(names), None
    if choice is None or choice == "auto":
        pass
    elif choice in ("none", "required"):
        mode = choice
    elif isinstance(choice, Mapping) and choice.get("type") in ("function", "custom"):
        kind = choice["type"]
        fname = (choice.get(kind) or {}).get("name") if isinstance(choice.get(kind), Mapping) else choice.get("name")
        if fname not in names:
            raise APIError(400, f"tool_choice names {fname!r}, which is not in 'tools'", param="tool_choice")
        mode, allowed, forced = "named", [fname], fname
    elif isinstance(choice, Mapping) and choice.get("type") == "allowed_tools":
        spec = choice.get("allowed_tools") if isinstance(choice.get("allowed_tools"), Mapping) else choice
        sub_mode = spec.get("mode", "auto")
        if sub_mode not in ("auto", "required"):
            raise APIError(400, "allowed_tools.mode must be 'auto' or 'required'", param="tool_choice")
        listed = spec.get("tools") or []
        picked = []
        for t in listed:
            body = t.get("custom" if t.get("type") == "custom" else "function") if isinstance(t, Mapping) else None
            n = body.get("name") if isinstance(body, Mapping) else (t.get("name") if isinstance(t, Mapping) else None)
            if n not in names:
                raise APIError(400, f"allowed_tools lists {n!r}, which is not in 'tools'", param="tool_choice")
            picked.append(n)
        if not picked:
            raise APIError(400, "allowed_tools needs at least one tool", param="tool_choice")
        mode, allowed = sub_mode, picked
    else:
        raise APIError(
            400,
            "'tool_choice' must be 'auto', 'none', 'required', {'type': 'function', 'function': {'name': ...}}, "
            "{'type': 'custom', 'custom': {'name': ...}} or {'type': 'allowed_tools', ...}",
            param="tool_choice",
        )
    return ToolPlan(clean, mode, allowed, forced, True if parallel is None else parallel)


# ------------------------------------------------------------ tool calls --
# Chat templates that show a model its tools mention them; a template that
# does not (SmolLM2's) gets this Hermes-style system section instead, so the
# model knows the tools and the <tool_call> format the grammar enforces.
_HERMES_SYSTEM = (
    "You can call functions. The available functions, as JSON signatures, are in <tools></tools>:\n"
    "<tools>\n{tools}\n</tools>\n"
    "To call a function, answer with a JSON object holding its name and arguments inside "
    "<tool_call></tool_call> tags:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call>"
)


def detect_style(template: Optional[str]) -> tuple[str, Optional[str]]:
    """The built-in tool-call style for a model's chat template, and the
    reasoning default to use with it (None: the style's own). Models whose
    template has no tool format (SmolLM2) use the Hermes/Qwen ``<tool_call>``
    JSON style without reasoning."""
    t = template or ""
    if "<tool_call>" in t:
        return "qwen_3", (None if "<think>" in t else "disabled")
    if "<|python_tag|>" in t or ("<|start_header_id|>" in t and "tools" in t):
        return "llama", None
    return "qwen_3", "disabled"


def tool_system_prompt(plan: ToolPlan) -> str:
    """The tool section for templates that do not render ``tools``."""
    import json

    sigs = "\n".join(json.dumps(_as_function(t)["function"], ensure_ascii=False) for t in plan.tools if _name(t) in plan.allowed)
    return _HERMES_SYSTEM.format(tools=sigs)


def _constraint_format(c: Any) -> dict:
    """A constraint as a structural-tag format element (for unions)."""
    import re as _re

    if c.kind in ("json_schema", "json_object"):
        return {"type": "json_schema", "json_schema": c.schema}
    if c.kind == "grammar":
        return {"type": "grammar", "grammar": c.spec}
    if c.kind == "regex":
        return {"type": "regex", "pattern": c.spec}
    if c.kind == "choice":
        return {"type": "regex", "pattern": "|".join(_re.escape(s) for s in c.spec)}
    if c.kind == "structural_tag":
        spec = c.spec
        if "format" in spec:
            return dict(spec["format"])
    raise APIError(400, f"'{c.param}' cannot be combined with tools", param=c.param)


def _choice_for_calls(plan: ToolPlan) -> Any:
    """tool_choice that makes the turn one or more calls among the allowed tools."""
    if plan.forced:
        return {"type": "function", "function": {"name": plan.forced}}
    return {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
        {"type": "function", "function": {"name": n}} for n in plan.allowed]}}


def tool_constraint(plan: ToolPlan, other: Any, *, style: str, reasoning: Optional[str], tokenizer: Any) -> tuple[Any, Any]:
    """The constraint for a turn that may call tools, and the structural tag
    its output is read with.

    Without another constraint, the tag is the style's for the request's
    ``tool_choice`` and ``parallel_tool_calls``. With one (``response_format``
    and friends, only with ``auto``), it is the union: either that answer or
    the tool calls (a call ends the turn).
    """
    from ..styles import StyleError, answer_or_calls, structural_tag_for
    from .constraints import Constraint

    try:
        if other is None:
            choice: Any = "auto" if plan.mode == "auto" else ("required" if plan.mode == "required" else _choice_for_calls(plan))
            if plan.mode in ("auto", "required") and len(plan.allowed) < len(plan.tools):
                choice = {"type": "allowed_tools", "allowed_tools": {"mode": plan.mode, "tools": [
                    {"type": "function", "function": {"name": n}} for n in plan.allowed]}}
            tag = structural_tag_for(style, plan.tools, choice, plan.parallel, reasoning)
        else:
            calls = structural_tag_for(style, plan.tools, _choice_for_calls(plan), plan.parallel, "disabled")
            # With the roles the reader needs: the answer's text is content.
            tag = answer_or_calls(_constraint_format(other), calls)
    except StyleError as e:
        raise APIError(400, f"invalid tools request: {e}", param="tools") from None
    from .. import FormcastError, Grammar

    try:
        grammar = Grammar.from_structural_tag(tag, tokenizer)
    except (FormcastError, ValueError, TypeError) as e:
        raise APIError(400, f"the tools cannot be turned into a constraint: {e}", param="tools") from None
    return Constraint("tools", "tools", tag, grammar=grammar), tag
