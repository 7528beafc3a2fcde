"""Tools in a request: validation of ``tools`` / ``tool_choice`` /
``parallel_tool_calls``, and the seam where a tool-call constraint is built
(the model family's tool-call style as a structural tag) and where output is
parsed back into OpenAI ``tool_calls``.

Enforcing and parsing tool calls needs ``formcast.styles.structural_tag_for``,
``formcast.Grammar.from_structural_tag`` and ``formcast.toolcalls``; until
this build has them, a request that lets the model call tools (``tool_choice``
other than ``"none"``) is answered 501 (with ``x-should-retry: false``),
never with unconstrained output that merely looks like a tool call.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from .errors import APIError

__all__ = ["ToolPlan", "plan_tools", "tool_calling_available"]


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
        """The tools as chat templates expect them (the OpenAI definitions)."""
        return self.tools or None


def tool_calling_available() -> bool:
    """Whether the model-style and structural-tag pieces are in this build."""
    from .. import Grammar

    return (
        hasattr(Grammar, "from_structural_tag")
        and importlib.util.find_spec("formcast.styles") is not None
        and importlib.util.find_spec("formcast.toolcalls") is not None
    )


def _names(tools: list[dict]) -> list[str]:
    return [t["function"]["name"] for t in tools]


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
        fn = t.get("function") if isinstance(t, Mapping) else None
        if not isinstance(t, Mapping) or t.get("type", "function") != "function" or not isinstance(fn, Mapping):
            raise APIError(400, f"tools[{i}] must be {{'type': 'function', 'function': {{...}}}}", param=f"tools[{i}]")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise APIError(400, f"tools[{i}].function.name must be a non-empty string", param=f"tools[{i}].function.name")
        params = fn.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, (Mapping, bool)):
            raise APIError(400, f"tools[{i}].function.parameters must be a JSON Schema object", param=f"tools[{i}].function.parameters")
        clean.append({"type": "function", "function": dict(fn, parameters=params)})
    names = _names(clean)
    if len(set(names)) != len(names):
        raise APIError(400, "tool names must be unique", param="tools")
    mode, allowed, forced = "auto", list(names), None
    if choice is None or choice == "auto":
        pass
    elif choice in ("none", "required"):
        mode = choice
    elif isinstance(choice, Mapping) and choice.get("type") == "function":
        fname = (choice.get("function") or {}).get("name") if isinstance(choice.get("function"), Mapping) else choice.get("name")
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
            n = (t.get("function") or {}).get("name") if isinstance(t, Mapping) and isinstance(t.get("function"), Mapping) else (t.get("name") if isinstance(t, Mapping) else None)
            if n not in names:
                raise APIError(400, f"allowed_tools lists {n!r}, which is not in 'tools'", param="tool_choice")
            picked.append(n)
        if not picked:
            raise APIError(400, "allowed_tools needs at least one tool", param="tool_choice")
        mode, allowed = sub_mode, picked
    else:
        raise APIError(
            400,
            "'tool_choice' must be 'auto', 'none', 'required', {'type': 'function', 'function': {'name': ...}} "
            "or {'type': 'allowed_tools', ...}",
            param="tool_choice",
        )
    plan = ToolPlan(clean, mode, allowed, forced, True if parallel is None else parallel)
    if plan.active and not tool_calling_available():
        raise APIError(
            501,
            "tool calling is not available in this build yet: it needs formcast.styles (model tool-call styles) "
            "and Grammar.from_structural_tag, which are pending; use tool_choice 'none' or no tools",
            param="tools",
            code="tool_calling_unavailable",
            headers={"x-should-retry": "false"},
        )
    return plan
