"""Stage 2 — syntax repair, every change logged as mechanical or as a guess.

A tolerant recursive-descent reader walks the candidate text token by token and
writes strict JSON text; the next stage parses that text with ``json`` (never
``eval``). Because it works on tokens, not on the raw string, a quote or an
apostrophe inside a value is never mistaken for syntax, and ``True`` inside a
string stays ``True``.

Changes with only one reading (a trailing comma, ``None`` -> ``null``) are logged
as fixes; changes where another reading was plausible are logged with
``guess=True`` (:data:`~formcast.repair.report.FIX_CLASSES` lists which is which).
With ``allow_guesses=False``, :func:`repair_json` raises :class:`GuessNeeded`
instead of returning a reading that rests on a guess.

Quotes are where readings part. A quote inside a string is content when it
cannot end the string (a letter follows it: ``"He said "hi" to me"``). When a
string's content runs into ``, "key":`` (``"New York, "gender": "male"``) its
closing quote is probably missing: the reader closes it before the comma, as a
guess (``missing_quote``). When closing a string at a quote leaves the rest
unreadable (``["^\\s*['"]", "x"]``), the reader backs up and reads that quote as
content, also as a guess. Backing up is bounded (:data:`MAX_BACKTRACK` re-reads).
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import Literal

from .errors import GuessRejected, UnrepairableError
from .report import Fix

__all__ = ["Repaired", "repair_json", "RepairFailed", "GuessNeeded"]

Nonfinite = Literal["null", "float", "error"]

_WS_RE = re.compile(r"[ \t\n\r\u00a0\ufeff\u2028\u2029]*")
_WS_CHARS = frozenset(" \t\n\r\u00a0\ufeff\u2028\u2029")
_SPACE_RE = re.compile(r"[ \t\n\r]*")
_KEY_IDENT_RE = re.compile(r"[^\W\d][\w$-]*|\$[\w$-]*")
_WORD_RE = re.compile(r"[^\W\d][\w$]*|\$[\w$]*")
_NUMBER_RE = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]*|(?:\d+\.?\d*|\.\d+|\.)(?:[eE][+-]?\d*)?)")
_STRICT_NUMBER_RE = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")
_HEX4_RE = re.compile(r"[0-9a-fA-F]{4}")
_HEX_RE = re.compile(r"[0-9a-fA-F]*\Z")
_HIGH_SURROGATE_RE = re.compile(r"(?<!\\)(?:\\\\)*\\u[dD][89abAB][0-9a-fA-F]{2}\Z")

# Opening quote -> the characters that may close it.
_CLOSERS = {
    '"': '"',
    "'": "'",
    "\u201c": "\u201d\u201c",  # “ ... ” (some models use “ on both sides)
    "\u201d": "\u201d",
    "\u2018": "\u2019\u2018",  # ‘ ... ’
    "`": "`",
}
_QUOTES = frozenset(_CLOSERS)
# A quote right after a value means the value probably ended at the wrong quote
# (a backtick there is more likely a fence).
_TAIL_QUOTES = _QUOTES - {"`"}
# Inside a string: stop at a backslash, a control char, a possible closer, or a '"'
# that must be escaped once the delimiter changes to '"'.
_STOP_RE = {q: re.compile("[\\\\\x00-\x1f" + re.escape(c + ('"' if q != '"' else "")) + "]") for q, c in _CLOSERS.items()}
_SIMPLE_ESCAPES = frozenset('"\\/bfnrt')
_CONTROL_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}

_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_NONFINITE = {"nan": "NaN", "infinity": "Infinity", "inf": "Infinity"}
_LITERALS = ("true", "false", "null")
_VALUE_WORDS = ("true", "false", "null", "none", "nan", "infinity", "inf", "undefined")
# How far to look for the end of a key when deciding whether a quote ends a string.
_KEY_LOOKAHEAD = 4096
_KEY_CLOSER_RE: dict[str, re.Pattern[str]] = {}
# In a string's content: structure that a missing closing quote let it swallow.
_STRUCT_RUN_RE = re.compile(r"[}\]][ \t\r\n]*,|,[ \t\r\n]*[\[{]")
# A closer with more than closers after it.
_CLOSER_MORE_RE = {c: re.compile(re.escape(c) + r"[ \t\r\n]*[^ \t\r\n\]}]") for c in "}]"}
# After a bare key: the rest of a key that lost its opening quote ('a:b": 1').
# No brackets or commas in it: 'A: {":": 1}' is the bare key A and an object
# whose key is ":".
_LOST_OPENER_RE = re.compile("([^\\n\"'\u201c\u201d\u2018\u2019{}\\[\\],]{0,64})[\"'\u201d\u2019][ \\t]*:")
# Structure that a string re-read past a quote must not take in: an opener before
# a quote, a quoted key, '}, ' or ', ['.
_SWALLOWED_RE = re.compile(r"[\[{][ \t\r\n]*[\"']|[\"'][ \t]*:[ \t]*[\"'\[{\d]|[}\]][ \t\r\n]*,|,[ \t\r\n]*[\[{]")
# In a key: a colon followed by the start of a value.
_KEY_VALUE_RE = re.compile(r":[ \t]*(?:[\[{\"'\u201c\u2018\d-]|(?:true|false|null|True|False|None)\b)")
# A key written as a bare number ('{0 1}' reads as '{"0": 1}').
_BARE_NUMBER_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_KEY_OPENER_RE = re.compile(r":[ \t]*[\[{][ \t]*\Z")
# A backslash escape, or a quote that may close a string of that kind.
_ESCAPE_OR_QUOTE_RE = {c: re.compile("\\\\.|[" + re.escape(c) + "]", re.S) for c in set(_CLOSERS.values())}
# Longest key content checked for a missing closing quote.
_RUN_LOOKBACK = 256
# Repairs that bend the structure: a reading that needs fewer of them after a
# quote choice is the better one. (A missing comma bends it only when nothing
# separates the two values, as in '["a"]"b"': with a space or a newline between
# them it is the common slip.)
_STRUCTURAL = frozenset({"missing_colon", "unescaped_quote", "missing_quote", "mismatched_bracket", "extra_closer", "extra_comma", "bare_string"})
#: Re-reads with other quote choices when a reading fails or leaves a quote
#: right after the value. Each is one linear pass, so the bound keeps repair linear.
MAX_BACKTRACK = 8
#: Containers nested in a value being repaired. The reader descends
#: recursively (4 Python frames per level), so the bound is explicit rather
#: than wherever Python's stack happens to end. Valid JSON deeper than this
#: still parses strictly; only its repair is refused.
MAX_REPAIR_DEPTH = 128


def quote_tail(s: str, k: int, bound: int) -> bool:
    """Does the text after a value (which ends at ``k``) suggest the value ended at
    the wrong quote? A quote on the rest of its line, unless that text starts with
    a comma (``, "b": 2}``: a continuation, which the pipeline merges). Text on
    later lines is prose or another value, never part of this one's last string."""
    while k < bound and s[k] in " \t":
        k += 1
    if k >= bound or s[k] == ",":
        return False
    eol = s.find("\n", k, bound)
    line = s[k : bound if eol < 0 else eol]
    return any(q in line for q in _TAIL_QUOTES)


class RepairFailed(UnrepairableError):
    """The syntax is broken beyond mechanical repair at ``offset``."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message, None, offset)


class GuessNeeded(GuessRejected):
    """Repair would need a judgement call and ``allow_guesses`` is False."""

    def __init__(self, fix: Fix) -> None:
        super().__init__(f"repair needs a judgement call: {fix.message}", None, [fix])
        self.fix = fix


@dataclass(slots=True)
class Repaired:
    """Strict JSON text produced from ``source``, with the fixes that got it there."""

    text: str
    fixes: list[Fix] = field(default_factory=list)
    truncated: bool = False
    nonfinite_kept: bool = False  # text holds NaN/Infinity (nonfinite="float")
    end: int = 0  # where the value ended in the source (with stop_at_end, text after it is not read)


def _context(s: str, i: int, width: int = 24) -> str:
    lo = max(0, i - width)
    return s[lo : i + width].replace("\n", "\\n")


class _Reader:
    def __init__(self, s: str, base: int, nonfinite: Nonfinite, allow_guesses: bool, flips: frozenset[int] = frozenset()) -> None:
        self.s = s
        self.n = len(s)
        self.i = 0
        self.base = base
        self.nonfinite = nonfinite
        self.allow_guesses = allow_guesses
        self.out: list[str] = []
        self.stack: list[str] = []  # expected closers of the open containers
        self.notes: dict[str, list] = {}  # kind -> [first offset, count, message]
        self.guesses: list[Fix] = []
        self.guess_counts: dict[tuple[str, str], list[int]] = {}  # (kind, message) -> [index in guesses, count]
        self.truncated = False
        self.nonfinite_kept = False
        self._key_closers: dict[tuple[str, int], int] = {}
        # Quote choices: positions where another reading of a quote was possible
        # (closing vs content, missing closer vs content); ``flips`` are the ones
        # to read the other way on this pass.
        self.flips = flips
        self.choices: list[int] = []
        self._last_quote: dict[str, int] = {}
        self.keysets: list[dict[str, str]] = []  # keys seen in each open object, with their value's text
        self.bad_end: int | None = None  # where the reading ended badly (see repair_json)
        self.doubled = False  # closes_string saw '""' and chose the second quote
        self.swallowed = False  # a quote re-read as content made a string take in structure
        self.last_closed: tuple[str, bool] | None = None  # the container read last: its closer, and could it have closed earlier
        self._closer_scan: dict[str, tuple[bool, int]] = {}
        self._key_end_cache: dict[str, list[int]] = {}
        self.last_mismatch = -1
        self.inserted: set[str] = set()  # closers inserted (mismatched) and removed (extra) so far
        self.removed: set[str] = set()
        self.bends = 0  # structural repairs (see _STRUCTURAL), and where the first one was
        self.first_bend: int | None = None

    # -- logging ---------------------------------------------------------------

    def bend(self, kind: str, at: int) -> None:
        if kind in _STRUCTURAL or kind == "missing_comma":
            self.bends += 1
            if self.first_bend is None or at < self.first_bend:
                self.first_bend = at

    def note(self, kind: str, at: int, message: str) -> None:
        if kind in _STRUCTURAL:
            self.bend(kind, at)
        rec = self.notes.get(kind)
        if rec is None:
            self.notes[kind] = [at, 1, message]
        else:
            rec[1] += 1

    def guess(self, kind: str, at: int, message: str) -> None:
        if kind in _STRUCTURAL:
            self.bend(kind, at)
        fix = Fix("repair", kind, message, self.base + at, None, True)
        if not self.allow_guesses:
            raise GuessNeeded(fix)
        same = self.guess_counts.get((kind, message))
        if same is None:  # the same guess again is counted, like a note
            self.guess_counts[(kind, message)] = [len(self.guesses), 1]
            self.guesses.append(fix)
        else:
            same[1] += 1

    def fail(self, message: str, at: int | None = None) -> RepairFailed:
        at = self.i if at is None else at
        near = _context(self.s, at)
        return RepairFailed(f"{message} at offset {self.base + at} (near {near!r})", self.base + at)

    def hit_eof(self) -> None:
        """Record (once) that input ended inside ``len(stack)`` open containers."""
        if not self.truncated:
            self.truncated = True
            depth = len(self.stack)
            self.notes["truncated"] = [self.n, 1, f"input ended inside {depth} open container{'s' if depth != 1 else ''}; closed"]

    def fixes(self) -> list[Fix]:
        out = [Fix("repair", kind, msg if count == 1 else f"{msg} ({count}x)", self.base + at, None, False) for kind, (at, count, msg) in self.notes.items()]
        for (kind, msg), (x, count) in self.guess_counts.items():
            g = self.guesses[x]
            out.append(g if count == 1 else Fix(g.stage, kind, f"{msg} ({count}x)", g.offset, g.pointer, True))
        out.sort(key=lambda f: f.offset or 0)
        return out

    def comment(self, at: int, end: int) -> None:
        if '"' in self.s[at:end]:
            self.guess("comment", at, "text holding a double quote read as a comment (it may be a string that lost its opening quote)")
        else:
            self.note("comment", at, "comment removed")

    # -- lexing helpers --------------------------------------------------------

    def skip(self) -> None:
        """Skip whitespace and comments (//, /* */, #), logging each comment."""
        s, n = self.s, self.n
        while True:
            if self.i >= n:
                return
            c = s[self.i]
            if c in _WS_CHARS:
                self.i = _WS_RE.match(s, self.i).end()
                continue
            if c == "/":
                nxt = s[self.i + 1] if self.i + 1 < n else ""
                if nxt == "/":
                    end = s.find("\n", self.i)
                    self.comment(self.i, n if end < 0 else end)
                    self.i = n if end < 0 else end
                    continue
                if nxt == "*":
                    end = s.find("*/", self.i + 2)
                    self.comment(self.i, n if end < 0 else end)
                    if end < 0:
                        self.i = n
                        self.hit_eof()
                        return
                    self.i = end + 2
                    continue
                if nxt == "":
                    self.i = n
                    self.hit_eof()
                    return
                return
            if c == "#":
                end = s.find("\n", self.i)
                self.comment(self.i, n if end < 0 else end)
                self.i = n if end < 0 else end
                continue
            return

    def _ahead(self, k: int) -> int:
        """Index of the next significant char at or after ``k`` (skips comments, logs nothing)."""
        s, n = self.s, self.n
        while True:
            k = _SPACE_RE.match(s, k).end()
            if k + 1 < n and s[k] == "/" and s[k + 1] in "/*":
                end = s.find("\n" if s[k + 1] == "/" else "*/", k + 2)
                k = n if end < 0 else end + (0 if s[k + 1] == "/" else 2)
            elif k < n and s[k] == "#":
                end = s.find("\n", k)
                k = n if end < 0 else end
            else:
                return k

    def _peek_key_after(self, k: int) -> bool:
        """Does a key (quoted or bare) followed by ':' start at ``k``?

        A key cut off by the end of input counts (truncated output).
        """
        s, n = self.s, self.n
        if k >= n:
            return False
        c = s[k]
        if c in _QUOTES:
            # Any closer on this line followed by ':' ends the key (the key itself
            # may hold an unescaped quote: "0"A": 1).
            limit = min(n, k + _KEY_LOOKAHEAD)
            ends = self._key_ends(_CLOSERS[c])
            x = bisect.bisect_right(ends, k)
            return (x < len(ends) and ends[x] < limit) or limit >= n
        m = _KEY_IDENT_RE.match(s, k)
        if m is None:
            return False
        j = self._ahead(m.end())
        return j >= n or s[j] == ":"

    def _key_ends(self, closers: str) -> list[int]:
        """Positions of the closers in ``closers`` that are followed by ':' (or by
        the end of input), outside backslash escapes: where a key can end. Found
        once per reader, so asking at every quote stays linear."""
        ends = self._key_end_cache.get(closers)
        if ends is None:
            s, n = self.s, self.n
            ends = []
            for m in _ESCAPE_OR_QUOTE_RE[closers].finditer(s):
                if m.group()[0] != "\\":
                    e = self._ahead(m.end())
                    if e >= n or s[e] == ":":
                        ends.append(m.start())
            self._key_end_cache[closers] = ends
        return ends

    def _last_key_closer(self, j: int, closers: str) -> int:
        """Where the last closer followed by ':' starts on the line of ``j``
        (-1 if none). Found once per line and remembered: scanning the rest
        of the line at every quote was quadratic on a line full of quotes."""
        s = self.s
        eol = s.find("\n", j + 1)
        eol = self.n if eol < 0 else eol
        key = (closers, eol)
        last = self._key_closers.get(key)
        if last is None:
            sol = s.rfind("\n", 0, j + 1) + 1
            pattern = _KEY_CLOSER_RE.get(closers)
            if pattern is None:
                pattern = _KEY_CLOSER_RE[closers] = re.compile("[" + re.escape(closers) + "][ \t\n\r]*:")
            last = -1
            for m in pattern.finditer(s, sol):
                if m.start() >= eol:
                    break
                last = m.start()
            self._key_closers[key] = last
        return last

    def _value_starts(self, k: int) -> bool:
        s = self.s
        if k >= self.n:
            return False
        c = s[k]
        if c in _QUOTES or c in "{[-+.0123456789":
            return True
        m = _WORD_RE.match(s, k)
        if m is None:
            return False
        w = m.group().lower()
        if m.end() >= self.n:  # a literal cut off by the end of input: "n", "tr"
            return any(lit.startswith(w) for lit in _VALUE_WORDS)
        return w in _VALUE_WORDS

    def closes_string(self, j: int, key: bool, ctx: str, closers: str) -> bool:
        """Decide whether the quote at ``j`` ends the string or belongs to its content.

        A quote ends a string when what follows fits JSON there: ``:`` after a key;
        ``,`` followed by the next key (in an object) or value (in an array); a
        closing bracket; the end of input; or the next key/value (a missing comma).
        Anything else (``He said "hello" to me``, ``It's``) is content.
        """
        s, n = self.s, self.n
        k = _SPACE_RE.match(s, j + 1).end()
        if k >= n:
            return True
        c = s[k]
        if key:
            if c == ":":
                return True
            # Another closer on this line followed by ':' means this one is content.
            return self._last_key_closer(j, closers) <= j
        if c in "}]":
            return True
        if c == ",":
            k2 = self._ahead(k + 1)
            if k2 >= n:
                return True
            if ctx == "object":
                return s[k2] == "}" or self._peek_key_after(k2)
            return s[k2] == "]" or self._value_starts(k2)
        if (c == "/" and k + 1 < n and s[k + 1] in "/*") or c == "#":
            k = self._ahead(k)
            if k >= n or s[k] in "}]":
                return True
            if ctx == "object":
                return s[k] == "," or self._peek_key_after(k)
            return s[k] == "," or self._value_starts(k)
        if c in closers and k == j + 1:
            # '""': the first quote is content if the second one closes the string.
            k3 = _SPACE_RE.match(s, k + 1).end()
            if k3 >= n or s[k3] in ",}]:":
                self.doubled = True
                return False
        if ctx == "object":
            return self._peek_key_after(k)  # missing comma before the next key
        if ctx == "array":
            return self._value_starts(k)  # missing comma before the next element
        return False

    # -- grammar ---------------------------------------------------------------

    def run(self, stop_at_end: bool) -> None:
        """Read one value. ``bad_end`` is set where the reading ends badly: text
        other than closers after the value (whole-text mode), or a quote right
        after it (``stop_at_end``: the value probably ended at the wrong quote)."""
        self.skip()
        if self.i >= self.n:
            raise self.fail("no value")
        if not self.value("root"):
            raise self.fail("no value")
        if stop_at_end:
            if quote_tail(self.s, self.i, self.n):
                self.bad_end = self.i
            return
        self.skip()
        if self.i < self.n:
            rest = self.s[self.i :]
            if rest.strip(" \t\r\n}]") == "":
                self.note("extra_closer", self.i, "unmatched closing bracket removed")
            else:
                self.bad_end = self.i

    def value(self, ctx: str) -> bool:
        """Emit one value; False if input ended before a value started."""
        self.skip()
        if self.i >= self.n:
            self.hit_eof()
            return False
        c = self.s[self.i]
        if c == "{":
            self.obj()
            return True
        if c == "[":
            self.arr()
            return True
        if c in _QUOTES:
            return self.string(c, False, ctx)
        if c in "-+.0123456789":
            return self.number(ctx)
        if _WORD_RE.match(self.s, self.i):
            return self.word(ctx)
        raise self.fail(f"unexpected {c!r} where a value should start")

    def obj(self) -> None:
        self.keysets.append({})
        self._container(
            "{", "}", "]", self._member,
            lambda: self._peek_key_after(self.i) or self.s[self.i] in _QUOTES,
            "members", "object member",
        )
        self.keysets.pop()

    def arr(self) -> None:
        self._container("[", "]", "}", self._element, lambda: self._value_starts(self.i), "elements", "array element")

    def _container(self, opener, closer, other, member, next_starts, plural, singular) -> None:
        """The loop shared by objects and arrays: brackets, commas and the
        recoveries around them; ``member(mark)`` emits one member (False when
        the input ended inside it, after cleaning up)."""
        s = self.s
        out = self.out
        if len(self.stack) >= MAX_REPAIR_DEPTH:
            raise self.fail(f"value nested more than {MAX_REPAIR_DEPTH} levels deep (the limit for repair)")
        self.i += 1
        out.append(opener)
        self.stack.append(closer)
        count = 0
        commas = 0  # where a missing closer could also go
        loose_child = False  # a child of our kind that could have closed earlier (its closer may be ours)
        while True:
            self.skip()
            if self.i >= self.n:
                self.hit_eof()
                break
            c = s[self.i]
            if c == closer:
                self.i += 1
                break
            if c == other:
                if other in self.stack:
                    self.inserted.add(closer)
                    cascade = self.i == self.last_mismatch  # one closer closing several containers
                    self.last_mismatch = self.i
                    if cascade or (count and len(self.stack) > 1 and self.stack[-2] == closer) or loose_child or closer in self.removed:
                        # '[{"x": {"a": 1, "b": 2]': the '}' may belong after 1 as well as after 2
                        # (the parent is an object too); '{"": [[[1, 2]]}': an inner '[' with
                        # elements to spare may be the one that lost its ']'.
                        self.guess("mismatched_bracket", self.i, f"missing '{closer}' inserted before '{other}' (it could also close earlier, at a comma)")
                    else:
                        self.note("mismatched_bracket", self.i, f"missing '{closer}' inserted before '{other}'")
                    break
                self.removed.add(other)
                if other in self.inserted:
                    self.guess("extra_closer", self.i, f"unmatched {other!r} removed after a missing {other!r} was inserted (one misplaced {other!r} would explain both)")
                elif self._closer_then_more(other):
                    self.guess("extra_closer", self.i, f"unmatched {other!r} removed (an earlier {other!r} with more after it could be the extra one)")
                else:
                    self.note("extra_closer", self.i, "unmatched closing bracket removed")
                self.i += 1
                continue
            if c == ",":
                if count:
                    self.note("extra_comma", self.i, "doubled comma removed")
                else:  # '[, 1]': a value, or the '[' 's own closer ('[], 1'), may be missing
                    self.guess("extra_comma", self.i, f"comma right after {opener!r} removed (the {opener!r} may have lost its closer)")
                self.i += 1
                commas += 1
                continue
            mark = len(out)
            if count:
                out.append(",")
            self.last_closed = None
            if not member(mark):
                break
            if self.last_closed is not None and self.last_closed[0] == closer and self.last_closed[1]:
                loose_child = True  # a child of our kind that could have closed earlier
            count += 1
            self.skip()
            if self.i >= self.n:
                self.hit_eof()
                break
            c = s[self.i]
            if c == ",":
                comma = self.i
                commas += 1
                self.i += 1
                self.skip()
                if self.i >= self.n:
                    self.hit_eof()
                    break
                if s[self.i] in "}]":
                    self.note("trailing_comma", comma, "trailing comma removed")
                continue
            if c in "}]":
                continue
            if next_starts():
                if s[self.i - 1] in _WS_CHARS:
                    self.note("missing_comma", self.i, f"comma inserted between {plural}")
                else:  # '"a""b"', '["x"]"y"': touching tokens are more likely a misread quote
                    self.bend("missing_comma", self.i)
                    self.guess("missing_comma", self.i, f"comma inserted between {plural} that touch (a quote may have been misread)")
                continue
            raise self.fail(f"unexpected {c!r} after {singular}")
        self.stack.pop()
        out.append(closer)
        self.last_closed = (closer, commas > 0 or count >= 2 or loose_child)

    def _member(self, mark: int) -> bool:
        """One ``key: value`` pair; False when the input ended inside it."""
        s = self.s
        out = self.out
        member_at = self.i
        if not self.key():
            return self._drop_member(mark, member_at, "dropped a key cut off at end of input")
        name = json.loads(out[-1])
        self.skip()
        if self.i >= self.n:
            return self._drop_member(mark, member_at, "dropped a key with no value at end of input")
        if s[self.i] == ":":
            self.i += 1
        elif s[self.i] == "=":
            self.note("missing_colon", self.i, "'=' between key and value read as ':'")
            self.i += 1
        elif self._value_starts(self.i):
            if s[member_at] not in _QUOTES and (name in ("null", "true", "false", "None", "True", "False") or _BARE_NUMBER_RE.fullmatch(name)):
                # '{"a": 1, null\n null]', '{"": [], 0\n null]': two values whose object lost its closer.
                self.guess("missing_colon", self.i, f"bare {name!r} read as a key before a value (they may be two values after a lost closing bracket)")
            elif s[self.i - 1] in _WS_CHARS:
                self.note("missing_colon", self.i, "colon inserted between key and value")
            else:
                self.guess("missing_colon", self.i, "colon inserted between a key and a value that touch (a quote may have been misread)")
        else:
            raise self.fail("expected ':' after object key")
        out.append(":")
        self.skip()
        if self.i >= self.n:
            return self._drop_member(mark, member_at, "dropped a key with no value at end of input")
        if s[self.i] in ",}":
            raise self.fail("object member has no value")
        at = len(out)
        if not self.value("object"):
            del out[mark:]
            self.hit_eof()
            return False
        text = "".join(out[at:])
        seen = self.keysets[-1]
        if name not in seen:
            seen[name] = text
        elif seen[name] == text:
            self.note("duplicate_key", member_at, "a key repeated with the same value")
        else:
            seen[name] = text
            self.guess("duplicate_key", member_at, f"key {name!r} appears again in the same object with another value; the last value is kept")
        return True

    def _drop_member(self, mark: int, at: int, why: str) -> bool:
        """Removes a member the input ended inside of, as a logged guess."""
        del self.out[mark:]
        self.guess("truncated", at, why)
        self.hit_eof()
        return False

    def _element(self, mark: int) -> bool:
        """One array element; False when the input ended inside it."""
        if not self.value("array"):
            del self.out[mark:]
            self.hit_eof()
            return False
        return True

    def key(self) -> bool:
        """Emit an object key; False if input ended inside it."""
        s = self.s
        c = s[self.i]
        if c in _QUOTES:
            return self.string(c, True, "object")
        m = _KEY_IDENT_RE.match(s, self.i)
        if m is not None:
            if m.end() >= self.n:
                self.i = self.n
                return False
            lost = _LOST_OPENER_RE.match(s, m.end())
            if lost is not None:
                # 'name": 1', 'a:b": 1': the key lost its opening quote; the closing one is not a value.
                name = m.group() + lost.group(1)
                self.guess("missing_quote", m.start(), f"key {name!r} had a closing quote but no opening one")
                self.out.append(json.dumps(name, ensure_ascii=False))
                self.i = lost.end(1) + 1
                return True
            self.note("unquoted_key", self.i, "bare key quoted")
            self.out.append(json.dumps(m.group(), ensure_ascii=False))
            self.i = m.end()
            return True
        m = _NUMBER_RE.match(s, self.i)
        if m is not None and m.group() and any(ch.isdigit() for ch in m.group()):
            if m.end() >= self.n:
                self.i = self.n
                return False
            self.note("numeric_key", self.i, "numeric key quoted")
            self.out.append(json.dumps(m.group()))
            self.i = m.end()
            return True
        raise self.fail(f"unexpected {c!r} where an object key should start")

    def string(self, q: str, key: bool, ctx: str) -> bool:
        """Emit a string opened by quote ``q``; False only if a key was cut off."""
        s, n = self.s, self.n
        start = self.i
        closers = _CLOSERS[q]
        if q == "'":
            self.note("single_quotes", start, "single-quoted string re-quoted")
        elif q == "`":
            self.note("single_quotes", start, "backtick-quoted string re-quoted")
        elif q != '"':
            self.note("smart_quotes", start, "typographic quotes used as delimiters replaced")
        stop = _STOP_RE[q]
        buf = ['"']
        marks = [start]  # where in the source each piece of ``buf`` starts
        i = start + 1
        first_run: int | None = None  # first "}," or ", [" in the content (swallowed structure?)
        flipped_at: int | None = None  # first quote re-read as content (see repair_json)
        scan_from = i
        while True:
            m = stop.search(s, i)
            if m is None:
                marks.append(i)
                buf.append(s[i:n])
                self.i = n
                if key:
                    return False
                # A surrogate pair cut in half leaves a lone high surrogate: drop it.
                body = "".join(buf[1:])
                if _HIGH_SURROGATE_RE.search(body):
                    buf[1:] = [body[:-6]]
                self.guess("truncated", start, "closed a string cut off at end of input (its content may be incomplete)")
                self.hit_eof()
                break
            j = m.start()
            if j > i:
                marks.append(i)
                buf.append(s[i:j])
            c = s[j]
            marks.append(j)
            cut: int | None = None
            if c == "\\":
                if j + 1 >= n:  # a dangling backslash at the cut
                    marks.pop()
                    i = n
                    continue
                e = s[j + 1]
                if e in _SIMPLE_ESCAPES:
                    buf.append("\\" + e)
                    i = j + 2
                elif e == "u":
                    if _HEX4_RE.match(s, j + 2):
                        buf.append(s[j : j + 6])
                        i = j + 6
                    elif n - (j + 2) < 4 and _HEX_RE.match(s, j + 2):
                        marks.pop()
                        i = n  # \u escape cut off at the end
                    else:
                        self.note("invalid_escape", j, "invalid escape kept as a literal backslash")
                        buf.append("\\\\")
                        i = j + 1
                elif e == "'":
                    self.note("python_escape", j, "Python escape converted")
                    buf.append("'")
                    i = j + 2
                elif e == "x" and re.match(r"[0-9a-fA-F]{2}", s[j + 2 : j + 4]) and j + 4 <= n:
                    self.note("python_escape", j, "Python escape converted")
                    buf.append("\\u00" + s[j + 2 : j + 4])
                    i = j + 4
                elif e == "U" and re.fullmatch(r"[0-9a-fA-F]{8}", s[j + 2 : j + 10] or "") and int(s[j + 2 : j + 10], 16) <= 0x10FFFF:
                    self.note("python_escape", j, "Python escape converted")
                    buf.append(json.dumps(chr(int(s[j + 2 : j + 10], 16)))[1:-1])
                    i = j + 10
                elif e == "\n":
                    self.note("invalid_escape", j, "backslash-newline read as \\n")
                    buf.append("\\n")
                    i = j + 2
                else:
                    self.note("invalid_escape", j, "invalid escape kept as a literal backslash")
                    buf.append("\\\\")
                    i = j + 1
            elif c < " ":
                self.note("control_char", j, "raw control character in a string escaped")
                buf.append(_CONTROL_ESCAPES.get(c) or f"\\u{ord(c):04x}")
                i = j + 1
            elif c == '"' and q != '"':
                buf.append('\\"')
                i = j + 1
            elif self.closes_string(j, key, ctx, closers):
                if not key and j in self.flips:
                    self.guess("unescaped_quote", j, "a quote that could end the string read as content (ending the string there left the rest unreadable)")
                    buf.append('\\"' if c == '"' else c)
                    i = j + 1
                    flipped_at = j if flipped_at is None else flipped_at
                    continue
                cut = None
                if key:
                    # A key holding ': value' (``"a: {"b": 1}``) probably lost its closing quote.
                    if j in self.flips:
                        self.guess("ambiguous_key", start, "a key holding ': <value>' kept whole (it may have lost its closing quote)")
                    else:
                        cut = self._key_cut(start, j, closing=True)
                else:
                    if self._quote_after(j, closers):
                        self.choices.append(j)  # content is the other reading
                    if first_run is not None:  # it read a quote as content after that structure
                        self.guess("unescaped_quote", start, "string holds ', [' or '},': it may have swallowed structure (a closing quote missing before it)")
                if cut is None:
                    marks.pop()
                    i = j + 1
                    self.i = i
                    if flipped_at is not None and _SWALLOWED_RE.search(s, flipped_at, j):
                        self.swallowed = True  # the re-read string took in '{"k": ': not a reading
                    break
            else:
                if first_run is None and not key and s[start + 1] == ":":
                    first_run = start + 1  # '"": ": "1"': the opening quote ended a key
                if first_run is None and not key and scan_from < j:
                    r = _STRUCT_RUN_RE.search(s, scan_from, j)
                    scan_from = j  # (a run holds no quote, so none spans j)
                    if r is not None:
                        first_run = r.start()
                cut = None if j in self.flips else self._missing_closer(start, j, key, ctx, first_run)
                if cut is None:
                    if self.doubled:
                        self.doubled = False
                        self.guess("unescaped_quote", j, "of a doubled quote before the end, the first read as content (it may be a stray quote instead)")
                    elif j in self.flips:
                        self.guess("unescaped_quote", j, "a quote that could start the next member read as content (closing the string before it did not fit)")
                    elif self._starts_line(start, j):
                        self.guess("unescaped_quote", j, "a quote that starts a line inside a string read as content (the string may have lost its closing quote)")
                    elif (key and (not s[j + 1 : j + 2].isalnum() or self._comma_before(start, j))) or (
                        not key and s[_SPACE_RE.match(s, j + 1).end() : _SPACE_RE.match(s, j + 1).end() + 1] in (",", ":")
                    ):
                        self.guess("unescaped_quote", j, f"a quote before {s[j + 1 : j + 2]!r} read as content (it may have ended the string)")
                    else:
                        self.note("unescaped_quote", j, "quote inside a string escaped")
                    buf.append('\\"' if c == '"' else c)
                    i = j + 1
                    continue
            if cut is None:
                continue
            # The string's closing quote is missing: it ends at ``cut``.
            self.choices.append(j)
            if key:
                self.guess("missing_quote", cut, "key ran into ': <value>': closed it before the ':' (its closing quote was missing)")
            else:
                self.guess("missing_quote", cut, "string ran into ', \"...' that starts the next member: closed it there (its closing quote was missing)")
            # Keep the pieces before ``cut`` (the run after it is plain text).
            k = len(marks) - 1
            while marks[k] > cut:
                k -= 1
            if marks[k] < cut:
                buf[k] = buf[k][: cut - marks[k]]
                k += 1
            del buf[k:]
            self.i = cut
            break
        buf.append('"')
        self.out.append("".join(buf))
        return True

    def _closer_then_more(self, c: str) -> bool:
        """Before the current position, is there a ``c`` followed by more than
        closers (``[[1], 2]]``: the first ``]`` may be the extra one)? Scanned
        incrementally, so repeated calls stay linear."""
        found, pos = self._closer_scan.get(c, (False, 0))
        if not found and pos < self.i:
            found = _CLOSER_MORE_RE[c].search(self.s, pos, self.i) is not None
            self._closer_scan[c] = (found, max(pos, self.i - 1))
        return found

    def _starts_line(self, start: int, j: int) -> bool:
        """Is the quote at ``j`` the first thing on a line inside the string?
        (pretty-printed JSON puts its tokens there; prose and code rarely do)"""
        p = j - 1
        while p > start and self.s[p] in " \t":
            p -= 1
        return p > start and self.s[p] in "\r\n"

    def _comma_before(self, start: int, j: int) -> bool:
        """Is the last non-space character between ``start`` and ``j`` a comma?"""
        p = j - 1
        while p > start and self.s[p] in " \t\r\n":
            p -= 1
        return p > start and self.s[p] == ","

    def _quote_after(self, j: int, closers: str) -> bool:
        """Is there another possible closer after ``j``? (content is only a reading if the string can end later)"""
        last = self._last_quote.get(closers)
        if last is None:
            last = self._last_quote[closers] = max(self.s.rfind(c) for c in closers)
        return last > j

    def _token_end(self, j: int) -> int:
        """Index of the quote that ends the quoted token opened at ``j`` on its line (-1 if none)."""
        s = self.s
        closers = _CLOSERS.get(s[j], s[j])
        k = j + 1
        limit = min(self.n, j + _KEY_LOOKAHEAD)
        while k < limit:
            c = s[k]
            if c == "\\":
                k += 2
                continue
            if c == "\n":
                return -1
            if c in closers:
                return k
            k += 1
        return -1

    def _key_cut(self, start: int, j: int, closing: bool = False) -> int | None:
        """Where a key opened at ``start`` should have ended if its content up to
        ``j`` holds ``: <value>`` (a colon, then the start of a value): before that
        colon. None when it does not (``"http://x"`` keeps its colon)."""
        if j - start > _RUN_LOOKBACK:
            return None
        if closing:  # a key that closed well: only if it ends in ': {' (its quote then opens a key inside)
            if self.s[_SPACE_RE.match(self.s, j + 1).end() : _SPACE_RE.match(self.s, j + 1).end() + 1] == ":":
                return None  # '":{": null': the quote closes the key it ends, before its ':'
            m = _KEY_OPENER_RE.search(self.s, start + 1, j)
        else:  # (the content quote at j may start the value)
            m = _KEY_VALUE_RE.search(self.s, start + 1, j + 1)
        if m is None:
            return None
        return start + 1 + len(self.s[start + 1 : m.start()].rstrip())

    def _missing_closer(self, start: int, j: int, key: bool, ctx: str, first_run: int | None = None) -> int | None:
        """Where the string opened at ``start`` should have ended, if the quote at ``j``
        (read as content so far) starts the next member; None when it does not.

        The content must end in ``, `` (after closers of enclosing containers,
        before openers of new ones: ``"x}, "y"``, ``"x], ["y"``) and the quote must
        open a key followed by ``:`` (in an object) or an element followed by ``,``,
        ``]`` or ``}`` (in an array). In a key, the
        content must hold ``: ... ,`` (``"a: 1, "b": 2``): the key ends at the ``:``.
        """
        s = self.s
        e = self._token_end(j)
        if e < 0:
            return None
        k = _SPACE_RE.match(s, e + 1).end()
        nxt = s[k] if k < self.n else ""
        if key:
            return self._key_cut(start, j) if nxt == ":" else None
        if ctx not in ("object", "array"):
            return None
        if first_run is not None:
            # The content swallowed structure ("x}, [1, "): the string ends before it.
            p = first_run
            closed = []
            while s[p] in " \t\r\n}]":
                if s[p] in "}]":
                    closed.append(s[p])
                p += 1
            depth = len(self.stack)
            if len(closed) <= depth and all(self.stack[depth - 1 - x] == c for x, c in enumerate(closed)):
                return first_run - (len(s[start + 1 : first_run]) - len(s[start + 1 : first_run].rstrip()))
        if nxt not in ("", ":", ",", "]", "}"):
            return None
        # Back from the quote: openers and spaces, one comma, then closers and spaces.
        p = j - 1
        opened: list[str] = []
        while p > start and s[p] in " \t\r\n[{":
            if s[p] in "[{":
                opened.append(s[p])
            p -= 1
        if p <= start or s[p] != ",":
            return None
        p -= 1
        closed: list[str] = []
        while p > start and s[p] in " \t\r\n}]":
            if s[p] in "}]":
                closed.append(s[p])
            p -= 1
        closed.reverse()  # text order: the first closes the innermost container
        depth = len(self.stack)
        if len(closed) >= depth or any(self.stack[depth - 1 - x] != c for x, c in enumerate(closed)):
            return None
        inner = "}" if opened and opened[0] == "{" else "]" if opened else self.stack[depth - 1 - len(closed)]
        if (inner == "}") != (nxt == ":"):
            return None
        return p + 1

    def number(self, ctx: str) -> bool:
        s = self.s
        start = self.i
        m = _NUMBER_RE.match(s, start)
        tok = m.group() if m else ""
        if not tok and s[start] in "+-":
            tok = s[start]
        if tok in ("", "+", "-", ".", "+.", "-."):
            if tok in ("+", "-") and _WORD_RE.match(s, start + 1):
                return self.word(ctx, sign=tok)
            if start + len(tok) >= self.n and self.stack:
                self.i = self.n
                self.guess("truncated", start, f"dropped a number cut off at end of input: {tok!r}")
                self.hit_eof()
                return False
            raise self.fail("malformed number")
        end = start + len(tok)
        at_eof = end >= self.n
        if not at_eof and (s[end].isalnum() or s[end] == "_"):
            raise self.fail("unexpected text after a number", end)
        sign, body = ("", tok)
        if tok[0] in "+-":
            sign, body = tok[0], tok[1:]
            if sign == "+":
                self.note("json5_number", start, "JSON5 number normalized")
                sign = ""
        if body[:2] in ("0x", "0X"):
            digits = body[2:]
            if not digits:
                if at_eof and self.stack:
                    self.i = self.n
                    self.guess("truncated", start, "dropped a number cut off at end of input")
                    self.hit_eof()
                    return False
                raise self.fail("malformed hexadecimal number")
            text = sign + str(int(digits, 16))
            self.guess("hex_number", start, f"hexadecimal {tok} read as {text}")
        else:
            mant, e, exp = body.partition("e") if "e" in body else body.partition("E")
            if e and exp.lstrip("+-") == "":
                if not at_eof:
                    raise self.fail("malformed exponent")
                mant, e, exp = mant, "", ""
                self.guess("truncated", start, "dropped an exponent cut off at end of input")
            whole, dot, frac = mant.partition(".")
            if not whole:
                whole = "0"
                self.note("json5_number", start, "JSON5 number normalized")
            if dot and not frac:
                frac = "0"
                if not at_eof:
                    self.note("json5_number", start, "JSON5 number normalized")
            if len(whole) > 1 and whole[0] == "0":
                stripped = whole.lstrip("0") or "0"
                self.guess("leading_zeros", start, f"{whole} read as decimal {stripped}")
                whole = stripped
            text = sign + whole + ("." + frac if dot else "") + (e + exp if e else "")
            if not _STRICT_NUMBER_RE.match(text):
                raise self.fail(f"malformed number {tok!r}")
        if at_eof and self.stack:
            self.guess("truncated", start, f"number {tok!r} at end of input may be incomplete")
            self.hit_eof()
        self.out.append(text)
        self.i = end
        return True

    def word(self, ctx: str, sign: str = "") -> bool:
        s = self.s
        start = self.i
        m = _WORD_RE.match(s, start + len(sign))
        w = m.group()
        end = m.end()
        low = w.lower()
        out = self.out
        if not sign and w in _LITERALS:
            out.append(w)
        elif not sign and w in _PY_LITERALS:
            self.note("python_literal", start, "Python literal replaced")
            out.append(_PY_LITERALS[w])
        elif not sign and low in ("true", "false", "null", "none"):
            self.note("literal_case", start, "literal case normalized")
            out.append("null" if low == "none" else low)
        elif low in _NONFINITE:
            spelled = ("-" if sign == "-" else "") + _NONFINITE[low]
            if self.nonfinite == "error":
                raise self.fail(f"{sign}{w} is not valid JSON (nonfinite='error')", start)
            if self.nonfinite == "float":
                self.note("nonfinite_number", start, "NaN/Infinity kept as a float (nonfinite='float')")
                self.nonfinite_kept = True
                out.append(spelled)
            else:
                self.note("nonfinite_number", start, "NaN/Infinity replaced by null (nonfinite='null')")
                out.append("null")
        elif not sign and w == "undefined":
            self.note("js_literal", start, "undefined replaced by null")
            out.append("null")
        elif not sign and end >= self.n and self.stack and any(lit.startswith(w) for lit in _LITERALS):
            lit = next(lit for lit in _LITERALS if lit.startswith(w))
            self.guess("truncated", start, f"completed {w!r} cut off at end of input as {lit}")
            self.hit_eof()
            out.append(lit)
        else:
            # A bare word as a value: read up to the next delimiter of this context.
            stops = {"object": ",}\n", "array": ",]\n"}.get(ctx, "\n")
            j = start
            while j < self.n and s[j] not in stops:
                j += 1
            text = s[start:j].rstrip(" \t\r")
            self.guess("bare_string", start, f"bare text {text[:40]!r} read as a string")
            self.i = start + len(text)
            if len(text) > 1 and text[-1] in _QUOTES and not any(q in text[:-1] for q in _QUOTES):
                text = text[:-1]  # 'x": ...': the string lost its opening quote
            out.append(json.dumps(text, ensure_ascii=False))
            return True
        self.i = end
        return True


def _read(r: _Reader, stop_at_end: bool) -> RepairFailed | None:
    """Run ``r``; the failure, if it failed (the reader keeps its choices either way)."""
    try:
        r.run(stop_at_end)
    except RepairFailed as e:
        return e
    except RecursionError:  # a last guard: the depth is bounded by MAX_REPAIR_DEPTH
        return RepairFailed("value nested too deeply to repair", r.base)
    return None


def _backtrack(text: str, offset: int, nonfinite: Nonfinite, stop_at_end: bool, choices: list[int], bad: int, truncated_ok: bool) -> _Reader | None:
    """Re-read with the latest quote choice before ``bad`` taken the other way,
    then the next, up to :data:`MAX_BACKTRACK` times; the first reading that ends
    well (no failure, nothing bad after the value, no new truncation) wins."""
    flips: set[int] = set()
    for _ in range(MAX_BACKTRACK):
        pick = max((p for p in choices if p < bad and p not in flips), default=None)
        if pick is None:
            return None
        flips.add(pick)
        r = _Reader(text, offset, nonfinite, True, frozenset(flips))
        err = _read(r, stop_at_end)
        choices = r.choices
        if err is not None:
            bad = (err.offset if err.offset is not None else offset) - offset
        elif r.bad_end is not None:
            bad = r.bad_end
        elif not r.swallowed and (not r.truncated or truncated_ok):
            return r
    return None


def repair_json(
    text: str,
    *,
    nonfinite: Nonfinite = "null",
    allow_guesses: bool = True,
    offset: int = 0,
    stop_at_end: bool = False,
) -> Repaired:
    """Rewrite near-JSON ``text`` into strict JSON text, logging every change.

    ``offset`` is added to the positions in the log (the candidate's place in the
    original reply). With ``stop_at_end`` reading stops where the value ends
    (``Repaired.end``) instead of treating later text as part of it. When a
    reading fails, or leaves text after the value (a quote, with ``stop_at_end``),
    quotes that could be read either way are re-read the other way (a guess).
    Raises :class:`RepairFailed` when the syntax cannot be repaired and
    :class:`GuessNeeded` when ``allow_guesses`` is False and a judgement call
    would be needed.
    """
    if not allow_guesses:
        # Read with guesses allowed: a reading that backs out of its guesses (a
        # missing closing quote that did not fit) is mechanical after all.
        out = repair_json(text, nonfinite=nonfinite, offset=offset, stop_at_end=stop_at_end)
        first = next((f for f in out.fixes if f.guess), None)
        if first is not None:
            raise GuessNeeded(first)
        return out
    base = _Reader(text, offset, nonfinite, True)
    err = _read(base, stop_at_end)
    bad = base.bad_end if err is None else (err.offset if err.offset is not None else offset) - offset
    alt = None
    if bad is not None and base.choices:
        alt = _backtrack(text, offset, nonfinite, stop_at_end, base.choices, bad, truncated_ok=err is None and base.truncated)
    elif base.first_bend is not None:
        # It read, but bent the structure after a quote choice: read that quote
        # the other way; if that needs fewer bends, it is the better reading.
        pick = max((p for p in base.choices if p < base.first_bend), default=None)
        if pick is not None:
            r = _Reader(text, offset, nonfinite, True, frozenset([pick]))
            if _read(r, stop_at_end) is None and r.bad_end is None and not r.swallowed and (not r.truncated or base.truncated) and r.bends < base.bends:
                alt = r
    if alt is not None:
        return _repaired(alt)
    if err is not None:
        raise err
    if base.bad_end is not None and not stop_at_end:
        rest = text[base.bad_end :]
        base.guess("trailing_text", base.bad_end, f"ignored {len(rest)} chars after the value: {rest[:40]!r}")
    return _repaired(base)


def _repaired(r: _Reader) -> Repaired:
    return Repaired("".join(r.out), r.fixes(), r.truncated, r.nonfinite_kept, r.i)
