"""Reading model output back: reasoning, content and tool calls.

The parser interprets the same structural tag that constrained the
generation (see :mod:`formcast.styles`), so what the constraint allows is
exactly what the parser understands::

    from formcast.styles import structural_tag_for
    from formcast.toolcalls import parse_output

    tag = structural_tag_for("qwen_3", tools)
    out = parse_output(tag, generated_text)
    out.reasoning, out.content, out.tool_calls
"""

from .machine import ParserConfigError
from .parse import (
    ContentDelta,
    OutputDelta,
    OutputStreamParser,
    ParsedOutput,
    ReasoningDelta,
    ToolCall,
    ToolCallDelta,
    infer_roles,
    parse_output,
)

__all__ = [
    "parse_output",
    "OutputStreamParser",
    "ParsedOutput",
    "ToolCall",
    "ContentDelta",
    "ReasoningDelta",
    "ToolCallDelta",
    "OutputDelta",
    "infer_roles",
    "ParserConfigError",
]
