"""Stage 2 — mechanical syntax repair, every change logged.

A tolerant recursive-descent reader walks the candidate text token by token and
writes strict JSON text; the next stage parses that text with ``json`` (never
``eval``). Because it works on tokens, not on the raw string, a quote or an
apostrophe inside a value is never mistaken for syntax, and ``True`` inside a
string stays ``True``.

Changes that are certain (a trailing comma, ``None`` -> ``null``) are logged as
fixes; changes that could have gone another way (closing a string cut off by
``max_tokens``, reading a bare word as a string, ``0x10`` as 16) are logged with
``guess=True``. With ``allow_guesses=False`` the reader stops at the first guess
(:class:`GuessNeeded`) so the caller can first try other candidates.
"""

from __future__ import annotations

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
#: Containers nested in a value being repaired. The reader descends
#: recursively (4 Python frames per level), so the bound is explicit rather
#: than wherever Python's stack happens to end. Valid JSON deeper than this
#: still parses strictly; only its repair is refused.
MAX_REPAIR_DEPTH = 128


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
    def __init__(self, s: str, base: int, nonfinite: Nonfinite, allow_guesses: bool) -> None:
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
        self.truncated = False
        self.nonfinite_kept = False
        self._key_closers: dict[tuple[str, int], int] = {}

    # -- logging ---------------------------------------------------------------

    def note(self, kind: str, at: int, message: str) -> None:
        rec = self.notes.get(kind)
        if rec is None:
            self.notes[kind] = [at, 1, message]
        else:
            rec[1] += 1

    def guess(self, kind: str, at: int, message: str) -> None:
        fix = Fix("repair", kind, message, self.base + at, None, True)
        if not self.allow_guesses:
            raise GuessNeeded(fix)
        self.guesses.append(fix)

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
        out.extend(self.guesses)
        out.sort(key=lambda f: f.offset or 0)
        return out

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
                    self.note("comment", self.i, "comment removed")
                    self.i = n if end < 0 else end
                    continue
                if nxt == "*":
                    end = s.find("*/", self.i + 2)
                    self.note("comment", self.i, "comment removed")
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
                self.note("comment", self.i, "comment removed")
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
            closers = _CLOSERS[c]
            j = k + 1
            limit = min(n, k + _KEY_LOOKAHEAD)
            while j < limit:
                if s[j] == "\\":
                    j += 2
                    continue
                if s[j] in closers:
                    e = self._ahead(j + 1)
                    if e >= n or s[e] == ":":
                        return True
                j += 1
            return j >= n
        m = _KEY_IDENT_RE.match(s, k)
        if m is None:
            return False
        j = self._ahead(m.end())
        return j >= n or s[j] == ":"

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
                return False
        if ctx == "object":
            return self._peek_key_after(k)  # missing comma before the next key
        if ctx == "array":
            return self._value_starts(k)  # missing comma before the next element
        return False

    # -- grammar ---------------------------------------------------------------

    def run(self, stop_at_end: bool) -> None:
        self.skip()
        if self.i >= self.n:
            raise self.fail("no value")
        if not self.value("root"):
            raise self.fail("no value")
        if stop_at_end:
            return
        self.skip()
        if self.i < self.n:
            rest = self.s[self.i :]
            if rest.strip(" \t\r\n}]") == "":
                self.note("extra_closer", self.i, "unmatched closing bracket removed")
            else:
                self.guess("trailing_text", self.i, f"ignored {len(rest)} chars after the value: {rest[:40]!r}")

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
        self._container(
            "{", "}", "]", self._member,
            lambda: self._peek_key_after(self.i) or self.s[self.i] in _QUOTES,
            "members", "object member",
        )

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
                    self.note("mismatched_bracket", self.i, f"missing '{closer}' inserted before '{other}'")
                    break
                self.note("extra_closer", self.i, "unmatched closing bracket removed")
                self.i += 1
                continue
            if c == ",":
                self.note("extra_comma", self.i, "leading or doubled comma removed")
                self.i += 1
                continue
            mark = len(out)
            if count:
                out.append(",")
            if not member(mark):
                break
            count += 1
            self.skip()
            if self.i >= self.n:
                self.hit_eof()
                break
            c = s[self.i]
            if c == ",":
                comma = self.i
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
                self.note("missing_comma", self.i, f"comma inserted between {plural}")
                continue
            raise self.fail(f"unexpected {c!r} after {singular}")
        self.stack.pop()
        out.append(closer)

    def _member(self, mark: int) -> bool:
        """One ``key: value`` pair; False when the input ended inside it."""
        s = self.s
        out = self.out
        member_at = self.i
        if not self.key():
            return self._drop_member(mark, member_at, "dropped a key cut off at end of input")
        self.skip()
        if self.i >= self.n:
            return self._drop_member(mark, member_at, "dropped a key with no value at end of input")
        if s[self.i] == ":":
            self.i += 1
        elif s[self.i] == "=":
            self.note("missing_colon", self.i, "'=' between key and value read as ':'")
            self.i += 1
        elif self._value_starts(self.i):
            self.note("missing_colon", self.i, "colon inserted between key and value")
        else:
            raise self.fail("expected ':' after object key")
        out.append(":")
        self.skip()
        if self.i >= self.n:
            return self._drop_member(mark, member_at, "dropped a key with no value at end of input")
        if s[self.i] in ",}":
            raise self.fail("object member has no value")
        if not self.value("object"):
            del out[mark:]
            self.hit_eof()
            return False
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
        i = start + 1
        while True:
            m = stop.search(s, i)
            if m is None:
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
                buf.append(s[i:j])
            c = s[j]
            if c == "\\":
                if j + 1 >= n:  # a dangling backslash at the cut
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
                i = j + 1
                self.i = i
                break
            else:
                self.note("unescaped_quote", j, "quote inside a string escaped")
                buf.append('\\"' if c == '"' else c)
                i = j + 1
        buf.append('"')
        self.out.append("".join(buf))
        return True

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
            out.append(json.dumps(text, ensure_ascii=False))
            self.i = start + len(text)
            return True
        self.i = end
        return True


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
    (``Repaired.end``) instead of treating later text as part of it. Raises :class:`RepairFailed` when the syntax cannot be repaired
    mechanically and :class:`GuessNeeded` when ``allow_guesses`` is False and a
    judgement call would be needed.
    """
    r = _Reader(text, offset, nonfinite, allow_guesses)
    try:
        r.run(stop_at_end)
    except RecursionError:  # a last guard: the depth is bounded by MAX_REPAIR_DEPTH
        raise RepairFailed("value nested too deeply to repair", offset) from None
    return Repaired("".join(r.out), r.fixes(), r.truncated, r.nonfinite_kept, r.i)
