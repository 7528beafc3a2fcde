"""Splitting model output into reasoning, content and tool calls, whole or
as a stream, by reading it against the request's structural tag."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from ..styles.formats import CallRole, Path, Role, TextRole, walk
from ..styles.registry import Style, StyleTag, available_styles, get_style, structural_tag_for
from . import xmlargs
from .machine import JSON, TEXT, XML, Compiler, Machine, ParserConfigError, events_of

__all__ = [
    "ToolCall",
    "ParsedOutput",
    "ContentDelta",
    "ReasoningDelta",
    "ToolCallDelta",
    "OutputDelta",
    "OutputStreamParser",
    "parse_output",
    "infer_roles",
    "ParserConfigError",
]


@dataclass
class ToolCall:
    """One tool call: ``arguments`` is JSON object text (for a built-in tool
    with free-text input, that text as written)."""

    id: str
    name: str
    arguments: str = ""
    #: False when the output ended inside the call (e.g. at max_tokens).
    complete: bool = False

    @property
    def arguments_json(self) -> str:
        return self.arguments


@dataclass
class ParsedOutput:
    """A generation split by role."""

    reasoning: str = ""
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    #: False if the text did not follow the structural tag; what could not
    #: be read is then in ``content``.
    well_formed: bool = True


@dataclass(frozen=True)
class ContentDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of tool call ``index``: the first one carries ``id`` and
    ``name``, later ones only a fragment of ``arguments`` (as OpenAI's
    streaming ``tool_calls`` deltas)."""

    index: int
    arguments: str = ""
    id: Optional[str] = None
    name: Optional[str] = None


OutputDelta = Union[ContentDelta, ReasoningDelta, ToolCallDelta]


def _reasoning_markers() -> set[str]:
    markers: set[str] = set()
    for name in available_styles():
        style = get_style(name)
        th = getattr(style, "thinking", None)
        if th is not None:
            markers.update((th.begin, th.end))
        markers.update(getattr(style, "reasoning_markers", ()))
    markers.discard("")
    return markers


def _header(node: Any) -> tuple[str, bool]:
    """Literal text of a tag's content before its arguments, and whether
    arguments (a json_schema) were found."""
    if not isinstance(node, Mapping):
        return "", False
    t = node.get("type")
    if t in ("json_schema", "qwen_xml_parameter"):
        return "", True
    if t == "const_string":
        return str(node.get("value", "")), False
    if t == "sequence":
        out = ""
        for e in node.get("elements", []):
            h, found = _header(e)
            out += h
            if found:
                return out, True
        return out, False
    return "", False


def infer_roles(tag: Mapping[str, Any], tools: Optional[Sequence[Any]] = None) -> dict[Path, Role]:
    """Roles for a structural tag that did not come from
    :func:`~formcast.styles.structural_tag_for` (e.g. after a JSON round
    trip): a tag opened or closed by a known reasoning marker holds
    reasoning; a tag whose content holds a ``json_schema`` is a call of the
    function (from ``tools``) whose name appears in its opening text."""
    names: list[str] = []
    for t in tools or ():
        t = t.model_dump() if hasattr(t, "model_dump") else t
        if isinstance(t, Mapping):
            fn = t.get("function", t)
            if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
                names.append(fn["name"])
    names.sort(key=len, reverse=True)
    markers = _reasoning_markers()
    roles: dict[Path, Role] = {}
    for path, node in walk(tag):
        if node.get("type") != "tag":
            continue
        begin, end = node.get("begin"), node.get("end")
        ends = [end] if isinstance(end, str) else (end if isinstance(end, list) else [])
        if begin in markers or any(e in markers for e in ends):
            roles[path] = TextRole("reasoning")
            continue
        head, found = _header(node.get("content"))
        if not found:
            continue
        head = (begin if isinstance(begin, str) else "") + head
        for name in names:
            if re.search(rf"(?<![A-Za-z0-9_.\-]){re.escape(name)}(?![A-Za-z0-9_\-])", head):
                roles[path] = CallRole(name)
                break
        else:
            raise ParserConfigError(f"{'/'.join(map(str, path))}: a call tag naming none of the given tools (pass tools=)")
    return roles


def _random_id(index: int) -> str:
    return "call_" + uuid.uuid4().hex[:24]


class _Call:
    __slots__ = ("index", "node", "spans", "closed", "sent")

    def __init__(self, index: int, node: Any) -> None:
        self.index, self.node, self.spans, self.closed, self.sent = index, node, [], False, ""


class OutputStreamParser:
    """Splits a stream of text deltas into reasoning, content and tool-call
    deltas as soon as they are certain.

    Free text is released once it cannot be the start of a tag (``"<tool"``
    waits for the next characters); a call is announced (id and name) once
    its name is certain; JSON arguments stream as written, XML-style ones
    one complete parameter at a time, converted to JSON typed by the
    parameters' schema. If the text stops following the tag, the rest is
    content and :attr:`ParsedOutput.well_formed` is False; parsing never
    raises on model text.

    ``source`` is a structural tag from
    :func:`~formcast.styles.structural_tag_for`, a style name (the tag is
    then built from the remaining arguments, as for ``structural_tag_for``),
    or any structural-tag dict (then ``tools`` names the calls).
    ``call_id(index)`` makes call ids (default: random ``call_...``).
    """

    def __init__(
        self,
        source: Union[str, Style, Mapping[str, Any]],
        *,
        tools: Optional[Sequence[Any]] = None,
        tool_choice: Any = "auto",
        parallel_tool_calls: bool = True,
        reasoning: Union[str, bool, None] = None,
        builtin_tools: Sequence[str] = (),
        call_id: Optional[Callable[[int], str]] = None,
    ) -> None:
        if isinstance(source, (str, Style)):
            source = structural_tag_for(source, tools, tool_choice, parallel_tool_calls, reasoning, builtin_tools=builtin_tools)
        roles = source.roles if isinstance(source, StyleTag) else infer_roles(source, tools)
        self._machine = Machine(Compiler(roles).compile(source))
        self._call_id = call_id or _random_id
        self._sent: list[tuple] = []  # events released so far (the last may have grown)
        self._fallback: Optional[list[tuple]] = None  # set once the text left the tag
        self._calls: list[_Call] = []
        self._out = ParsedOutput()
        self._finished = False

    # ----------------------------------------------------------- input --
    def feed(self, delta: str) -> list[OutputDelta]:
        """Reads ``delta``; returns what became certain."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        m = self._machine
        for ch in delta:
            if self._fallback is not None:
                m.text += ch
            elif not m.feed_char(ch):
                self._leave_tag()
        return self._release(self._current())

    def finish(self) -> list[OutputDelta]:
        """Ends the stream: releases what was held back (a partial tag at the
        end is text if the tag allows text there)."""
        if self._finished:
            return []
        self._finished = True
        if self._fallback is not None:
            return self._release(self._current())
        m = self._machine
        th = m.accepted()
        if th is None:
            self._out.well_formed = False
            if not m.threads:
                self._leave_tag()
                return self._release(self._current())
            th = m.threads[0]
        return self._release(events_of(th[3]))

    def result(self) -> ParsedOutput:
        """Everything released so far (all of it after :meth:`finish`)."""
        return self._out

    # -------------------------------------------------------- internals --
    def _leave_tag(self) -> None:
        """The text no longer follows the tag: keep what was complete, the
        rest is content."""
        m = self._machine
        th = m.accepted() or (m.threads[0] if m.threads else None)
        events = events_of(th[3]) if th is not None else []
        closed = [i for i, e in enumerate(events) if e[0] in ("text", "end")]
        keep = events[: max((closed[-1] + 1) if closed else 0, len(self._sent))]
        boundary = max((e[3] for e in keep), default=0)
        self._fallback = keep + [("text", "content", boundary, -1)]
        self._out.well_formed = False

    def _current(self) -> list[tuple]:
        if self._fallback is not None:
            n = len(self._machine.text)
            return [e if e[3] != -1 else (e[0], e[1], e[2], n) for e in self._fallback]
        lists = [events_of(th[3]) for th in self._machine.threads]
        common = lists[0]
        for other in lists[1:]:
            n = 0
            limit = min(len(common), len(other))
            while n < limit and common[n] == other[n]:
                n += 1
            if n < limit:
                a, b = common[n], other[n]
                if a[0] == b[0] and a[0] in ("text", "args") and a[1] is b[1] or (a[0] == b[0] == "text" and a[1] == b[1]):
                    if a[2] == b[2]:
                        common = common[:n] + [(a[0], a[1], a[2], min(a[3], b[3]))]
                        continue
            common = common[:n]
        return common

    def _release(self, events: list[tuple]) -> list[OutputDelta]:
        out: list[OutputDelta] = []
        text = self._machine.text
        sent = self._sent
        for i, e in enumerate(events):
            if i < len(sent) - 1:
                continue
            prev = sent[i] if i < len(sent) else None
            if prev == e:
                continue
            kind, payload, start, end = e
            if kind == "text":
                piece = text[start if prev is None else prev[3]:end]
                if piece:
                    if payload == "reasoning":
                        self._out.reasoning += piece
                        out.append(ReasoningDelta(piece))
                    else:
                        self._out.content += piece
                        out.append(ContentDelta(piece))
            elif kind == "call":
                call = _Call(len(self._calls), payload)
                self._calls.append(call)
                tc = ToolCall(id=self._call_id(call.index), name=payload.name)
                self._out.tool_calls.append(tc)
                out.append(ToolCallDelta(call.index, "", tc.id, tc.name))
            elif self._calls:
                call = self._calls[-1]
                if kind == "args":
                    if prev is None:
                        call.spans.append([start, end])
                    else:
                        call.spans[-1][1] = end
                else:
                    call.closed = True
                    self._out.tool_calls[call.index].complete = True
                self._send_arguments(call, text, out)
        self._sent = list(events)
        return out

    def _send_arguments(self, call: _Call, text: str, out: list[OutputDelta]) -> None:
        raw = "".join(text[s:e] for s, e in call.spans)
        args = call.node.args
        if args is None:
            rendered = "{}" if call.closed else ""
        elif args.kind == XML:
            rendered = xmlargs.arguments_json(args.style.name, raw, args.schema, call.closed)
        elif args.kind == JSON:
            rendered = raw.strip()
        else:  # free text of a built-in tool, as written
            rendered = raw
        if len(rendered) > len(call.sent) and rendered.startswith(call.sent):
            piece = rendered[len(call.sent):]
            call.sent = rendered
            self._out.tool_calls[call.index].arguments = rendered
            out.append(ToolCallDelta(call.index, piece))


def parse_output(
    source: Union[str, Style, Mapping[str, Any]],
    text: str,
    *,
    tools: Optional[Sequence[Any]] = None,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    reasoning: Union[str, bool, None] = None,
    builtin_tools: Sequence[str] = (),
    call_id: Optional[Callable[[int], str]] = None,
) -> ParsedOutput:
    """Splits a whole generation into reasoning, content and tool calls.

    ``source`` is as for :class:`OutputStreamParser` (a tag from
    ``structural_tag_for``, a style name with the request's options, or a
    structural-tag dict with ``tools``). Never raises on model text.
    """
    p = OutputStreamParser(
        source,
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel_tool_calls,
        reasoning=reasoning,
        builtin_tools=builtin_tools,
        call_id=call_id,
    )
    p.feed(text)
    p.finish()
    return p.result()
