"""Streaming: read a JSON document while it is still arriving.

:class:`JsonStream` consumes chunks as they come (each character is looked at
once; an unfinished string resumes where it stopped) and keeps a live partial
value: containers appear as soon as they open, scalars once they are complete
(a number is complete only when a delimiter follows it). Every completed value
is also recorded as an event ``(json_pointer, value)``, for agents that act on a
field as soon as it is ready. :meth:`JsonStream.finish` then runs the full
pipeline on the whole text, which is the authoritative result.

The live view tolerates what models commonly emit while streaming (prose and a
fence before the value, trailing commas, comments, ``True/False/None``,
single-quoted strings); anything stranger freezes the view (``error``) and is left
to ``finish()``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from .._depth import MAX_JSON_DEPTH
from .pipeline import ParseResult, RepairOptions, parse
from .validate import json_pointer

#: Containers open at once in the live view (the engine's JSON limit).
MAX_STREAM_DEPTH = MAX_JSON_DEPTH

__all__ = ["JsonStream", "iter_partial", "parse_partial"]

_WS = frozenset(" \t\r\n\ufeff\u00a0")
_SCALAR_RE = re.compile(r"[^\s,:\]\}\[\{\"'/]+")
_NUMBER_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_IDENT_RE = re.compile(r"[^\W\d][\w$-]*|\$[\w$-]*")
_WORDS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_ESC = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "'": "'"}
_DQ_STOP = re.compile(r'[\\"]')
_SQ_STOP = re.compile(r"[\\']")
_UNSET: Any = object()


class _Frame:
    __slots__ = ("container", "is_obj", "key", "partial")

    def __init__(self, container: Any, is_obj: bool) -> None:
        self.container = container
        self.is_obj = is_obj
        self.key: str | None = None
        self.partial = False  # last list element is a string still being written


class _Str:
    """A string being read: decoded parts so far, resumable across chunks."""

    __slots__ = ("quote", "parts", "is_key")

    def __init__(self, quote: str, is_key: bool) -> None:
        self.quote = quote
        self.parts: list[str] = []
        self.is_key = is_key


class JsonStream:
    """Incremental parser with a live partial value.

    >>> s = JsonStream()
    >>> s.feed('Sure: {"name": "Al')
    {}
    >>> s.feed('ice", "tags": ["a", ')
    {'name': 'Alice', 'tags': ['a']}

    ``partial_strings=True`` also shows a string value while it is being written
    (useful for UIs that render text as it streams). The object returned by
    :meth:`feed` is live: it keeps changing with later chunks; copy it to keep a
    snapshot.
    """

    def __init__(self, *, partial_strings: bool = False, root: str = "any") -> None:
        if root not in ("any", "object", "array"):
            raise ValueError("root must be 'any', 'object' or 'array'")
        self.partial_strings = partial_strings
        self._root_chars = {"any": "{[", "object": "{", "array": "["}[root]
        self._chunks: list[str] = []
        self._pending = ""
        self._stack: list[_Frame] = []
        self._expect = "root"  # root | value | key | colon | after | done
        self._str: _Str | None = None
        self._root: Any = _UNSET
        self.events: list[tuple[str, Any]] = []
        self._seen_events = 0
        self.error: str | None = None

    # -- public ----------------------------------------------------------------

    @property
    def value(self) -> Any:
        """The partial value so far (None before the root value has started)."""
        return None if self._root is _UNSET else self._root

    @property
    def done(self) -> bool:
        """True once the root value has closed."""
        return self._expect == "done"

    @property
    def text(self) -> str:
        return "".join(self._chunks)

    def feed(self, chunk: str) -> Any:
        """Consume ``chunk``; return the live partial value."""
        self._chunks.append(chunk)
        if self.error is None and self._expect != "done":
            self._pending += chunk
            try:
                self._run()
            except _StreamError as e:
                self.error = str(e)
                self._pending = ""
        return self.value

    def new_events(self) -> list[tuple[str, Any]]:
        """Events ``(json_pointer, value)`` completed since the previous call."""
        out = self.events[self._seen_events :]
        self._seen_events = len(self.events)
        return out

    def finish(self, schema: Any = None, *, options: RepairOptions | None = None, **overrides: Any) -> ParseResult:
        """Run the full pipeline (extract, repair, parse, validate) on everything fed."""
        return parse(self.text, schema, options=options, **overrides)

    # -- machinery -------------------------------------------------------------

    def _pointer(self) -> str:
        """Pointer of the value about to be placed in the innermost container."""
        path: list[Any] = [f.key if f.is_obj else len(f.container) - 1 for f in self._stack[:-1]]
        top = self._stack[-1]
        path.append(top.key if top.is_obj else len(top.container))
        return json_pointer(path)

    def _complete(self, value: Any) -> None:
        """A value finished: place it in its parent (or as root) and record the event."""
        if not self._stack:
            self._root = value
            self.events.append(("", value))
            self._expect = "done"
            return
        top = self._stack[-1]
        ptr = self._pointer()
        if top.is_obj:
            top.container[top.key] = value
        else:
            top.container.append(value)
        self.events.append((ptr, value))
        self._expect = "after"

    def _open(self, is_obj: bool) -> None:
        if len(self._stack) >= MAX_STREAM_DEPTH:
            # Each event's pointer is as long as the nesting: unbounded depth
            # would make the live view quadratic. finish() has the last word.
            raise _StreamError(f"value nested more than {MAX_STREAM_DEPTH} levels deep; the live view stops here")
        c: Any = {} if is_obj else []
        if not self._stack:
            self._root = c
        else:
            top = self._stack[-1]
            if top.is_obj:
                top.container[top.key] = c
            else:
                top.container.append(c)
        self._stack.append(_Frame(c, is_obj))
        self._expect = "key" if is_obj else "value"

    def _close(self) -> None:
        frame = self._stack.pop()
        c = frame.container
        if not self._stack:
            self.events.append(("", c))
            self._expect = "done"
            return
        # The container is already in its parent; only the event is new.
        path = [f.key if f.is_obj else len(f.container) - 1 for f in self._stack]
        self.events.append((json_pointer(path), c))
        self._expect = "after"

    def _show_partial(self) -> None:
        st = self._str
        if st is None or st.is_key or not self._stack:
            return
        top = self._stack[-1]
        text = "".join(st.parts)
        if top.is_obj:
            top.container[top.key] = text
        elif top.partial:
            top.container[-1] = text
        else:
            top.container.append(text)
            top.partial = True

    def _end_partial(self) -> None:
        if self._stack and self._stack[-1].partial:
            self._stack[-1].container.pop()
            self._stack[-1].partial = False

    def _string(self, s: str, i: int) -> int:
        """Continue the open string; return the new index (== len(s) if unfinished)."""
        st = self._str
        assert st is not None
        n = len(s)
        stop = _DQ_STOP if st.quote == '"' else _SQ_STOP
        while i < n:
            m = stop.search(s, i)
            if m is None:
                st.parts.append(s[i:])
                i = n
                break
            j = m.start()
            if j > i:
                st.parts.append(s[i:j])
            if s[j] == "\\":
                if j + 1 >= n:
                    return j  # wait for the escaped char
                e = s[j + 1]
                if e == "u":
                    if j + 6 > n:
                        return j
                    try:
                        st.parts.append(chr(int(s[j + 2 : j + 6], 16)))
                    except ValueError:
                        st.parts.append(s[j : j + 6])
                    i = j + 6
                else:
                    st.parts.append(_ESC.get(e, "\\" + e))
                    i = j + 2
                continue
            # A quote. For '"' it ends the string; for "'" only where a token can end.
            if st.quote == "'":
                k = j + 1
                while k < n and s[k] in _WS:
                    k += 1
                if k >= n:
                    return j  # need to see what follows
                if s[k] not in ",:}]":
                    st.parts.append("'")
                    i = j + 1
                    continue
            self._str = None
            text = "".join(st.parts)
            if st.is_key:
                self._stack[-1].key = _join_surrogates(text)
                self._expect = "colon"
            else:
                self._end_partial()
                self._complete(_join_surrogates(text))
            return j + 1
        if self.partial_strings:
            self._show_partial()
        return i

    def _scalar(self, tok: str) -> Any:
        if tok in _WORDS:
            return _WORDS[tok]
        if _NUMBER_RE.match(tok):
            v = float(tok) if any(c in tok for c in ".eE") else int(tok)
            return v
        if tok in ("NaN", "Infinity", "-Infinity"):
            return None
        raise _StreamError(f"unexpected {tok!r}")

    def _run(self) -> None:
        s = self._pending
        n = len(s)
        i = 0
        while i < n:
            if self._str is not None:
                i = self._string(s, i)
                if self._str is not None:
                    break  # unfinished: wait for more
                continue
            st = self._expect
            if st == "done":
                i = n
                break
            c = s[i]
            if c in _WS:
                i += 1
                continue
            if st == "root":
                nxt = _find_any(s, self._root_chars, i)
                if nxt < 0:
                    i = n
                    break
                self._open(s[nxt] == "{")
                i = nxt + 1
                continue
            if c == "/":
                if i + 1 >= n:
                    break
                if s[i + 1] in "/*":
                    end = s.find("\n" if s[i + 1] == "/" else "*/", i + 2)
                    if end < 0:
                        break
                    i = end + (1 if s[i + 1] == "/" else 2)
                    continue
                raise _StreamError("unexpected '/'")
            top = self._stack[-1] if self._stack else None
            if c in "}]":
                if top is None or top.is_obj != (c == "}"):
                    raise _StreamError(f"unexpected {c!r}")
                self._close()  # also accepts a trailing comma before it
                i += 1
                continue
            if c == ",":
                if st not in ("after", "value", "key"):
                    raise _StreamError("unexpected ','")
                self._expect = "key" if top is not None and top.is_obj else "value"
                i += 1
                continue
            if st == "key":
                if c in "\"'":
                    self._str = _Str(c, True)
                    i += 1
                    continue
                m = _IDENT_RE.match(s, i)
                if m is None:
                    raise _StreamError(f"unexpected {c!r} where a key should start")
                if m.end() >= n:
                    break  # the bare key may continue
                assert top is not None
                top.key = m.group()
                self._expect = "colon"
                i = m.end()
                continue
            if st == "colon":
                if c != ":":
                    raise _StreamError("expected ':'")
                self._expect = "value"
                i += 1
                continue
            if st == "after":
                raise _StreamError(f"expected ',' or a closing bracket, got {c!r}")
            # st == "value"
            if c in "{[":
                self._open(c == "{")
                i += 1
                continue
            if c in "\"'":
                self._str = _Str(c, False)
                i += 1
                continue
            m = _SCALAR_RE.match(s, i)
            if m is None:
                raise _StreamError(f"unexpected {c!r}")
            if m.end() >= n:
                break  # the token may continue in the next chunk
            self._complete(self._scalar(m.group()))
            i = m.end()
        self._pending = s[i:]


class _StreamError(Exception):
    pass


def _find_any(s: str, chars: str, start: int) -> int:
    best = -1
    for ch in chars:
        k = s.find(ch, start)
        if k >= 0 and (best < 0 or k < best):
            best = k
    return best


def _join_surrogates(text: str) -> str:
    # \ud83d\ude00 decoded one escape at a time: recombine the pair.
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        try:
            return text.encode("utf-16", "surrogatepass").decode("utf-16")
        except UnicodeDecodeError:
            return text
    return text


def iter_partial(chunks: Iterable[str], *, partial_strings: bool = False) -> Iterator[Any]:
    """Yield the live partial value after each chunk (the same object, updated)."""
    s = JsonStream(partial_strings=partial_strings)
    for chunk in chunks:
        yield s.feed(chunk)


def parse_partial(text: str, *, partial_strings: bool = False) -> Any:
    """The partial value of a document cut off at the end of ``text``."""
    s = JsonStream(partial_strings=partial_strings)
    return s.feed(text)
