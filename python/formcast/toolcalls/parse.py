"""Splitting model output into reasoning, content and tool calls, whole or
as a stream, by reading it against the request's structural tag."""

from __future__ import annotations

import bisect
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from ..styles.formats import MAX_FORMAT_DEPTH, CallRole, Path, Role, TextRole, walk
from ..styles.registry import Style, StyleTag, available_styles, get_style, structural_tag_for
from . import xmlargs
from .machine import JSON, XML, Compiler, Machine, ParserConfigError, _token_text, events_of

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
    with free-text input, and for a custom tool, whose ``type`` is
    ``"custom"``, that text as written: its ``input``)."""

    id: str
    name: str
    arguments: str = ""
    #: False when the output ended inside the call (e.g. at max_tokens).
    complete: bool = False
    #: ``"function"``, or ``"custom"`` for an OpenAI custom tool.
    type: str = "function"

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
    #: ``"custom"`` on the first delta of a custom tool's call (None: a function).
    type: Optional[str] = None


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


def _header(node: Any, depth: int = 0) -> tuple[str, bool]:
    """Literal text of a tag's content before its arguments, and whether
    arguments (a json_schema) were found."""
    if not isinstance(node, Mapping) or depth > MAX_FORMAT_DEPTH:
        return "", False
    t = node.get("type")
    if t in ("json_schema", "qwen_xml_parameter"):
        return "", True
    if t == "const_string":
        return str(node.get("value", "")), False
    if t == "sequence":
        out = ""
        for e in node.get("elements", []):
            h, found = _header(e, depth + 1)
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
        # Begin and ends as text (strings, or tokens given by their text).
        begin = _token_text(node.get("begin"))
        end = node.get("end")
        ends = [_token_text(e) for e in (end if isinstance(end, list) else [end])]
        if begin in markers or any(e in markers for e in ends if e is not None):
            roles[path] = TextRole("reasoning")
            continue
        head, found = _header(node.get("content"))
        if not found:
            continue
        head = (begin or "") + head
        for name in names:
            if re.search(rf"(?<![A-Za-z0-9_.\-]){re.escape(name)}(?![A-Za-z0-9_\-])", head):
                roles[path] = CallRole(name)
                break
        else:
            # With tools given, a JSON-holding tag that names none of them is
            # an answer, not a call; without any, the caller forgot them.
            if not names:
                raise ParserConfigError(f"{'/'.join(map(str, path))}: a tag holding JSON arguments but no tools to name (pass tools=)")
    return roles


def _random_id(index: int) -> str:
    return "call_" + uuid.uuid4().hex[:24]


_JSON_WS = " \t\n\r"


class _TextStore:
    """The text read so far, as the chunks it arrived in: appending is O(1)
    and a slice costs its length (a growing ``str`` would copy everything
    on every delta). Chunks wholly before :meth:`forget`'s position are
    dropped."""

    __slots__ = ("_chunks", "_starts", "_first", "end")

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._starts: list[int] = []
        self._first = 0  # index of the first chunk still kept
        self.end = 0  # characters appended in all

    def append(self, s: str) -> None:
        if s:
            self._starts.append(self.end)
            self._chunks.append(s)
            self.end += len(s)

    def slice(self, a: int, b: int) -> str:
        if a >= b:
            return ""
        i = bisect.bisect_right(self._starts, a, self._first) - 1
        parts = []
        while a < b:
            chunk, s0 = self._chunks[i], self._starts[i]
            parts.append(chunk[a - s0 : b - s0])
            a = s0 + len(chunk)
            i += 1
        return "".join(parts)

    def forget(self, upto: int) -> None:
        """Positions before ``upto`` will not be sliced again."""
        i = self._first
        while i + 1 < len(self._starts) and self._starts[i + 1] <= upto:
            i += 1
        self._first = i
        if i > 64 and i * 2 > len(self._chunks):  # compact now and then
            del self._chunks[:i], self._starts[:i]
            self._first = 0


class _Call:
    __slots__ = ("index", "node", "pieces", "members", "closed", "lead", "ws")

    def __init__(self, index: int, node: Any) -> None:
        self.index, self.node = index, node
        self.pieces: list[str] = []  # the arguments sent so far
        self.members = 0  # XML parameters sent
        self.closed = False
        self.lead = True  # JSON arguments: nothing but whitespace seen yet
        self.ws: list[str] = []  # JSON arguments: whitespace held back (it may be trailing)


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

    Work is linear in the text, however it is cut into deltas: each
    character is read once by each live interpretation (their number is
    bounded by the tag, see :mod:`.machine`), and each released character
    is copied once.

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
        else:
            # These build a tag from a style; with a tag given they would be
            # silently ignored (the tag already says what they would).
            given = [name for name, value, default in (
                ("tool_choice", tool_choice, "auto"), ("parallel_tool_calls", parallel_tool_calls, True),
                ("reasoning", reasoning, None), ("builtin_tools", tuple(builtin_tools), ())) if value != default]
            if given:
                raise TypeError(f"{', '.join(given)} only apply with a style name; the structural tag given already fixes them")
        roles = source.roles if isinstance(source, StyleTag) else infer_roles(source, tools)
        self._machine = Machine(Compiler(roles).compile(source))
        self._call_id = call_id or _random_id
        self._text = _TextStore()
        # The last event released: its index in the event list and its
        # (kind, payload, start, end-released-so-far). Events before it are
        # released whole; it may still grow.
        self._sent_idx = -1
        self._sent: Optional[tuple[str, Any, int, int]] = None
        # Set once the text left the tag: (position from which all is
        # content, index of that content event).
        self._fallback: Optional[tuple[int, int]] = None
        self._calls: list[_Call] = []
        self._ids: list[ToolCall] = []  # id and name of each call
        self._reasoning: list[str] = []
        self._content: list[str] = []
        self._well_formed = True
        self._finished = False

    # ----------------------------------------------------------- input --
    def feed(self, delta: str) -> list[OutputDelta]:
        """Reads ``delta``; returns what became certain."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        if not delta:
            return []
        self._text.append(delta)
        out: list[OutputDelta] = []
        if self._fallback is None:
            if self._machine.feed(delta) < len(delta):
                self._leave_tag(out)
            else:
                self._release(self._common(), out)
        self._release_fallback(out)
        return out

    def finish(self) -> list[OutputDelta]:
        """Ends the stream: releases what was held back (a partial tag at the
        end is text if the tag allows text there)."""
        if self._finished:
            return []
        self._finished = True
        out: list[OutputDelta] = []
        if self._fallback is None:
            m = self._machine
            th = m.accepted()
            if th is None:
                self._well_formed = False
                if not m.threads:
                    self._leave_tag(out)
                else:
                    th = m.threads[0]
            if th is not None:
                self._release(events_of(th[3], self._sent_idx - 1), out)
        self._release_fallback(out)
        return out

    def result(self) -> ParsedOutput:
        """Everything released so far (all of it after :meth:`finish`)."""
        calls = [
            ToolCall(id=c.id, name=c.name, arguments="".join(k.pieces), complete=k.closed, type=c.type)
            for c, k in zip(self._ids, self._calls)
        ]
        return ParsedOutput("".join(self._reasoning), "".join(self._content), calls, self._well_formed)

    # -------------------------------------------------------- internals --
    def _common(self) -> list[tuple[str, Any, int, int]]:
        """The events every live interpretation agrees on, from the last one
        released on; the last may be a span they share the start of
        (cut at the shortest). Costs the events since the last release."""
        cells = [th[3] for th in self._machine.threads]
        if not cells:
            return []
        below: list[Any] = [None] * len(cells)
        while True:
            first = cells[0]
            if all(c is first for c in cells):
                break
            top = max(c[5] for c in cells if c is not None)
            for j, c in enumerate(cells):
                if c is not None and c[5] == top:
                    below[j] = c
                    cells[j] = c[0]
        lca = cells[0]
        tail: list[tuple[str, Any, int, int]] = []
        if below and all(b is not None for b in below):
            a = below[0]
            if a[1] in ("text", "args") and all(b[1] == a[1] and b[3] == a[3] and (b[2] is a[2] or b[2] == a[2]) for b in below):
                tail.append((a[1], a[2], a[3], min(b[4] for b in below)))
        return events_of(lca, self._sent_idx - 1) + tail

    def _leave_tag(self, out: list[OutputDelta]) -> None:
        """The text no longer follows the tag: keep what was complete, the
        rest is content."""
        m = self._machine
        th = m.accepted() or (m.threads[0] if m.threads else None)
        events = events_of(th[3]) if th is not None else []
        closed = [i for i, e in enumerate(events) if e[0] in ("text", "end")]
        keep = events[: max((closed[-1] + 1) if closed else 0, self._sent_idx + 1)]
        boundary = max((e[3] for e in keep), default=0)
        self._release(keep[max(self._sent_idx, 0) :], out, max(self._sent_idx, 0))
        self._fallback = (boundary, len(keep))
        self._well_formed = False

    def _release_fallback(self, out: list[OutputDelta]) -> None:
        if self._fallback is not None:
            start, idx = self._fallback
            self._release([("text", "content", start, self._text.end)], out, idx)

    def _release(self, events: list[tuple[str, Any, int, int]], out: list[OutputDelta], first_idx: Optional[int] = None) -> None:
        """Releases ``events``, the first of which has index ``first_idx`` in
        the event list (default: the last released event's, or 0). An event
        with the last released one's index is that event grown: only its new
        part is released."""
        idx = max(self._sent_idx, 0) if first_idx is None else first_idx
        text = self._text
        for e in events:
            kind, payload, start, end = e
            grown = idx == self._sent_idx and self._sent is not None
            if kind in ("text", "args"):
                a = self._sent[3] if grown else start  # type: ignore[index]
                piece = text.slice(a, end) if end > a else ""
                if not piece:
                    pass
                elif kind == "args":
                    if self._calls:
                        self._arguments(self._calls[-1], kind, payload, piece, out)
                elif payload == "reasoning":
                    self._reasoning.append(piece)
                    out.append(ReasoningDelta(piece))
                else:
                    self._content.append(piece)
                    out.append(ContentDelta(piece))
            elif grown:
                pass  # a call start/end or a parameter is released once
            elif kind == "call":
                call = _Call(len(self._calls), payload)
                self._calls.append(call)
                tc = ToolCall(id=self._call_id(call.index), name=payload.name, type="custom" if payload.call_kind == "custom" else "function")
                self._ids.append(tc)
                out.append(ToolCallDelta(call.index, "", tc.id, tc.name, "custom" if tc.type == "custom" else None))
                if payload.args is not None and payload.args.kind == XML:
                    self._send(call, "{", out)
            elif self._calls:
                self._arguments(self._calls[-1], kind, payload, "", out)
            self._sent_idx, self._sent = idx, e
            idx += 1
        if self._sent is not None:
            # Nothing before the released part of the last event is read again.
            upto = self._sent[3]
            self._text.forget(upto if self._fallback is None else min(upto, self._fallback[0]))

    def _send(self, call: _Call, piece: str, out: list[OutputDelta]) -> None:
        if piece:
            call.pieces.append(piece)
            out.append(ToolCallDelta(call.index, piece))

    def _arguments(self, call: _Call, kind: str, payload: Any, piece: str, out: list[OutputDelta]) -> None:
        """One arguments event of ``call``: a stretch of JSON / free text, one
        XML parameter, or the call's end."""
        args = call.node.args
        if kind == "param":
            node, open_start, value_start, value_end = payload
            style = node.style
            written, attr = xmlargs.open_tag(style, self._text.slice(open_start, value_start))
            member = xmlargs.member(style, written, attr, self._text.slice(value_start, value_end), node.schema, node.schema)
            self._send(call, (", " if call.members else "") + member, out)
            call.members += 1
        elif kind == "args":
            if args is not None and args.kind == JSON:
                # As written, minus the whitespace around the value.
                if call.lead:
                    piece = piece.lstrip(_JSON_WS)
                    call.lead = not piece
                body = piece.rstrip(_JSON_WS)
                if body:
                    self._send(call, "".join(call.ws) + body, out)
                    call.ws = [piece[len(body) :]]
                else:
                    call.ws.append(piece)
            else:  # free text of a built-in tool, as written
                self._send(call, piece, out)
        elif kind == "end":
            call.closed = True
            if args is None:
                self._send(call, "{}", out)
            elif args.kind == XML:
                self._send(call, "}", out)


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
