"""Built-in tool-calling styles of model families, as structural tags.

::

    from formcast.styles import structural_tag_for

    tag = structural_tag_for("qwen_3", tools, tool_choice="auto")

``tag`` is a plain structural-tag dict (compile it like any other); the
output parser in :mod:`formcast.toolcalls` reads the same dict back to split
a generation into reasoning, content and tool calls. Add a family with
:func:`register_style`.
"""

from .families import HarmonyStyle, KimiK3Style, SectionStyle, Thinking, TriggeredStyle, register_builtin_styles
from .formats import CallRole, Roles, TextRole
from .registry import Style, StyleTag, answer_or_calls, available_styles, get_style, register_style, structural_tag_for
from .tools import FunctionTool, StyleError, ToolRequest, normalize_request

register_builtin_styles()

__all__ = [
    "structural_tag_for",
    "answer_or_calls",
    "register_style",
    "get_style",
    "available_styles",
    "Style",
    "StyleTag",
    "StyleError",
    "ToolRequest",
    "FunctionTool",
    "normalize_request",
    "Roles",
    "CallRole",
    "TextRole",
    "Thinking",
    "TriggeredStyle",
    "SectionStyle",
    "HarmonyStyle",
    "KimiK3Style",
]
