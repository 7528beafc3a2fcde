"""Output → message: splitting generated text into content, reasoning and
tool calls, whole or as streaming deltas in OpenAI's ``delta`` shape (a
custom tool's call as ``{"type": "custom", "custom": {"name", "input"}}``).

:class:`PlainReader` passes text through as content. :class:`StyleReader`
reads the text with the structural tag that constrained it
(``formcast.toolcalls.OutputStreamParser``), so exactly what the constraint
allowed is understood: reasoning goes to ``reasoning_content``, calls to
``tool_calls`` (the first delta of a call carries ``index``, ``id``,
``type`` and ``function.name``; later ones only ``index`` and a fragment of
``function.arguments``).
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["PlainReader", "StyleReader", "Reader"]


class PlainReader:
    """Free text: everything is content."""

    def __init__(self) -> None:
        self._content: list[str] = []

    @property
    def content(self) -> str:
        return "".join(self._content)

    def feed(self, text: str) -> list[dict]:
        """Deltas for ``text`` (OpenAI ``delta`` dicts)."""
        if not text:
            return []
        self._content.append(text)
        return [{"content": text}]

    def finish(self) -> list[dict]:
        """Deltas still held back at the end."""
        return []

    @property
    def reasoning(self) -> str:
        return ""

    @property
    def tool_calls(self) -> list[dict]:
        return []

    def message(self) -> dict:
        """The assistant message fields."""
        return {"content": self.content, "tool_calls": None}


class StyleReader:
    """Text read with a structural tag (tool calls, reasoning)."""

    def __init__(self, tag: Any, tools: Optional[list] = None) -> None:
        from ..toolcalls import OutputStreamParser

        self._parser = OutputStreamParser(tag, tools=tools)
        # Pieces, joined when asked: appending to a str copies it whole, which
        # made a long streamed answer quadratic.
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[dict] = []
        self._arguments: list[list[str]] = []

    @property
    def content(self) -> str:
        return "".join(self._content)

    @property
    def reasoning(self) -> str:
        return "".join(self._reasoning)

    def _convert(self, deltas: list) -> list[dict]:
        from ..toolcalls import ContentDelta, ReasoningDelta, ToolCallDelta

        out: list[dict] = []
        for d in deltas:
            if isinstance(d, ContentDelta):
                if d.text:
                    self._content.append(d.text)
                    out.append({"content": d.text})
            elif isinstance(d, ReasoningDelta):
                if d.text:
                    self._reasoning.append(d.text)
                    out.append({"reasoning_content": d.text})
            elif isinstance(d, ToolCallDelta):
                while len(self._calls) <= d.index:
                    self._calls.append({"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                    self._arguments.append([])
                call = self._calls[d.index]
                if d.type == "custom":
                    # An OpenAI custom tool: {"custom": {"name", "input"}}.
                    call["type"] = "custom"
                    call.pop("function", None)
                    call["custom"] = {"name": "", "input": ""}
                kind, text = ("custom", "input") if call["type"] == "custom" else ("function", "arguments")
                item: dict[str, Any] = {"index": d.index}
                if d.id is not None:
                    call["id"] = d.id
                    item["id"] = d.id
                    item["type"] = kind
                fn: dict[str, Any] = {}
                if d.name is not None:
                    call[kind]["name"] = d.name
                    fn["name"] = d.name
                if d.arguments:
                    self._arguments[d.index].append(d.arguments)
                    fn[text] = d.arguments
                elif d.name is not None:
                    fn[text] = ""
                if fn:
                    item[kind] = fn
                out.append({"tool_calls": [item]})
        return out

    def feed(self, text: str) -> list[dict]:
        """Deltas that became certain with ``text``."""
        return self._convert(self._parser.feed(text)) if text else []

    def finish(self) -> list[dict]:
        """The rest, at the end of the generation."""
        return self._convert(self._parser.finish())

    @property
    def tool_calls(self) -> list[dict]:
        """Complete OpenAI ``tool_calls`` (arguments as JSON text)."""
        for call, parts in zip(self._calls, self._arguments):
            if len(parts) > 1:
                parts[:] = ["".join(parts)]
            if call["type"] == "custom":
                call["custom"]["input"] = parts[0] if parts else ""
            else:
                call["function"]["arguments"] = parts[0] if parts else ""
        return [c for c in self._calls if c["id"] is not None]

    def message(self) -> dict:
        """The assistant message fields."""
        calls = self.tool_calls
        msg: dict[str, Any] = {"content": self.content if (self.content or not calls) else None, "tool_calls": calls or None}
        if self.reasoning:
            msg["reasoning_content"] = self.reasoning
        return msg


Reader = Any  # PlainReader | StyleReader
