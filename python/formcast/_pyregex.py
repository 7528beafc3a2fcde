"""The ``"python"`` regex dialect: Python ``re`` patterns (``str`` patterns),
read by the running interpreter's own ``re`` and handed to the engine in
its Rust syntax.

Exact by construction, for the interpreter it runs in:

* the syntax is what ``re.compile`` accepts (a pattern it refuses is a
  :class:`~formcast.GrammarError` carrying ``re``'s message and position),
  and the tree walked is ``re``'s own parse (``re._parser``);
* every one-character item (a literal under ``(?i)``, a class, ``\\d``,
  ``\\w``, ``\\s``, ``.``, under any of the ``i``, ``s``, ``a``, ``u`` flags)
  is turned into code-point ranges by running ``re`` itself over every
  Unicode scalar value, so Unicode ``\\d`` / ``\\w`` / ``\\s``, case folding
  (``ſ`` ~ ``s``, ``K`` ~ ``K``) and the Unicode version are exactly
  this interpreter's.

A pattern denotes the strings ``re.fullmatch`` accepts. ``^``, ``\\A`` at the
very start and ``$``, ``\\Z`` at the very end mean nothing more than that
(so ``(?m)`` changes nothing there); elsewhere they are refused. Refused by
name, since a grammar cannot express them exactly: backreferences
(``\\1``, ``(?P=name)``), lookaround (``(?=``, ``(?!``, ``(?<=``, ``(?<!``),
conditionals (``(?(1)a|b)``), word boundaries (``\\b``, ``\\B``),
possessive quantifiers (``a*+``, ``a++``, ``a?+``, ``a{m,n}+``) and atomic
groups (``(?>...)``): the last two (Python 3.11+) change which strings match
(``a*+a`` matches nothing) and are not modelled.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

from . import _engine

try:  # Python 3.11+
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

__all__ = ["to_rust"]

_MAX_REPEAT_BOUND = 100_000  # formcast_grammar::MAX_REPEAT_BOUND
_CHAR_FLAGS = re.IGNORECASE | re.DOTALL | re.ASCII
_SURROGATES = (0xD800, 0xDFFF)

_ATOMIC = getattr(_c, "ATOMIC_GROUP", None)
_POSSESSIVE = getattr(_c, "POSSESSIVE_REPEAT", None)

_CATEGORY_TEXT = {
    _c.CATEGORY_DIGIT: r"\d",
    _c.CATEGORY_NOT_DIGIT: r"\D",
    _c.CATEGORY_SPACE: r"\s",
    _c.CATEGORY_NOT_SPACE: r"\S",
    _c.CATEGORY_WORD: r"\w",
    _c.CATEGORY_NOT_WORD: r"\W",
}

_ANCHOR_TEXT = {
    _c.AT_BEGINNING: "^",
    _c.AT_BEGINNING_STRING: r"\A",
    _c.AT_END: "$",
    _c.AT_END_STRING: r"\Z",
}


def _error(message: str, position: int | None = None) -> Exception:
    where = f" at position {position}" if position is not None else ""
    return _engine.GrammarError(f"regex error{where}: {message}")


# ------------------------------------------------- one-character items --
_ALL_LOCK = threading.Lock()
_ALL: list[str] = []


def _all_chars() -> str:
    """Every Unicode scalar value, in order (surrogates left out: text is
    UTF-8). Position ``i`` holds ``i`` below the surrogates and
    ``i + 0x800`` above them."""
    with _ALL_LOCK:
        if not _ALL:
            _ALL.append("".join(map(chr, range(_SURROGATES[0]))) + "".join(map(chr, range(_SURROGATES[1] + 1, 0x110000))))
        return _ALL[0]


def _cp(pos: int) -> int:
    return pos if pos < _SURROGATES[0] else pos + 0x800


def _u(c: int) -> str:
    return f"\\U{c:08x}"


def _item_text(op: Any, av: Any) -> str:
    """A one-character item as Python pattern text (flags applied apart)."""
    if op is _c.LITERAL:
        return _u(av)
    if op is _c.NOT_LITERAL:
        return f"[^{_u(av)}]"
    if op is _c.ANY:
        return "."
    if op is _c.IN:
        parts = []
        for iop, iav in av:
            if iop is _c.NEGATE:
                parts.append("^")
            elif iop is _c.LITERAL:
                parts.append(_u(iav))
            elif iop is _c.RANGE:
                parts.append(f"{_u(iav[0])}-{_u(iav[1])}")
            elif iop is _c.CATEGORY:
                text = _CATEGORY_TEXT.get(iav)
                if text is None:  # the parser only writes the plain categories
                    raise _error(f"unsupported class item {iav}")
                parts.append(text)
            else:
                raise _error(f"unsupported class item {iop}")
        return "[" + "".join(parts) + "]" if parts else "[^\\x00-\\U0010ffff]"
    raise AssertionError(op)


@functools.lru_cache(maxsize=4096)
def _scan(text: str, flags: int) -> tuple[tuple[int, int], ...]:
    """The code points ``text`` (one character) matches under ``flags``, by
    running ``re`` over all of them: runs of matches are ranges."""
    rx = re.compile(f"(?:{text})+", flags)
    out = []
    for m in rx.finditer(_all_chars()):
        out.append((_cp(m.start()), _cp(m.end() - 1)))
    return tuple(out)


def _charset(op: Any, av: Any, flags: int) -> tuple[tuple[int, int], ...]:
    simple = not flags & re.IGNORECASE
    if simple and op is _c.LITERAL:
        return ((av, av),)
    if simple and op is _c.IN and all(iop in (_c.LITERAL, _c.RANGE) for iop, _ in av):
        ranges = sorted((iav, iav) if iop is _c.LITERAL else tuple(iav) for iop, iav in av)
        return tuple(ranges)
    return _scan(_item_text(op, av), flags & _CHAR_FLAGS)


def _without_surrogates(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    out = []
    for lo, hi in ranges:
        if lo < _SURROGATES[0]:
            out.append((lo, min(hi, _SURROGATES[0] - 1)))
        if hi > _SURROGATES[1]:
            out.append((max(lo, _SURROGATES[1] + 1), hi))
    return tuple(out)


def _rust_class(ranges: tuple[tuple[int, int], ...]) -> str:
    ranges = _without_surrogates(ranges)
    if not ranges:
        return r"[^\x{0}-\x{10FFFF}]"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return f"\\x{{{ranges[0][0]:X}}}"
    return "[" + "".join(f"\\x{{{lo:X}}}" if lo == hi else f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in ranges) + "]"


# ------------------------------------------------------------ the tree --
def _zero_width_start(item: tuple[Any, Any]) -> bool:
    return item[0] is _c.AT and item[1] in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING)


def _zero_width_end(item: tuple[Any, Any]) -> bool:
    return item[0] is _c.AT and item[1] in (_c.AT_END, _c.AT_END_STRING)


class _Writer:
    def __init__(self) -> None:
        self.out: list[str] = []

    def seq(self, items: list[tuple[Any, Any]], flags: int, at_start: bool, at_end: bool) -> None:
        n = len(items)
        starts = [at_start] * n
        for k in range(1, n):
            starts[k] = starts[k - 1] and _zero_width_start(items[k - 1])
        ends = [at_end] * n
        for k in range(n - 2, -1, -1):
            ends[k] = ends[k + 1] and _zero_width_end(items[k + 1])
        self.out.append("(?:")
        for k, (op, av) in enumerate(items):
            self.item(op, av, flags, starts[k], ends[k])
        self.out.append(")")

    def item(self, op: Any, av: Any, flags: int, at_start: bool, at_end: bool) -> None:
        if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN):
            if op is _c.ANY:
                self.out.append(r"[\x{0}-\x{10FFFF}]" if flags & re.DOTALL else r"[^\n]")
            else:
                self.out.append(_rust_class(_charset(op, av, flags)))
        elif op is _c.SUBPATTERN:
            _group, add, delete, sub = av
            self.seq(list(sub), (flags | add) & ~delete, at_start, at_end)
        elif op is _c.BRANCH:
            self.out.append("(?:")
            for k, alt in enumerate(av[1]):
                if k:
                    self.out.append("|")
                self.seq(list(alt), flags, at_start, at_end)
            self.out.append(")")
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            lo, hi, sub = av
            for bound in (lo, hi):
                if bound != _c.MAXREPEAT and bound > _MAX_REPEAT_BOUND:
                    raise _engine.LimitError(f"limit exceeded: repetition bound {bound} exceeds the limit of {_MAX_REPEAT_BOUND}")
            self.seq(list(sub), flags, False, False)
            self.out.append(f"{{{lo},}}" if hi == _c.MAXREPEAT else f"{{{lo},{hi}}}")
        elif op is _c.AT:
            text = _ANCHOR_TEXT.get(av)
            if text is None:
                raise _error(r"word boundaries ('\b', '\B') are not supported")
            if av in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING) and not at_start:
                raise _error(f"the anchor '{text}' is only supported at the start of the pattern")
            if av in (_c.AT_END, _c.AT_END_STRING) and not at_end:
                raise _error(f"the anchor '{text}' is only supported at the end of the pattern")
        elif op in (_c.GROUPREF, getattr(_c, "GROUPREF_IGNORE", None)):
            raise _error("backreferences are not supported")
        elif op is _c.GROUPREF_EXISTS:
            raise _error("conditionals ('(?(1)a|b)') are not supported")
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            raise _error("lookaround is not supported")
        elif _POSSESSIVE is not None and op is _POSSESSIVE:
            raise _error("possessive quantifiers ('a*+', 'a++', 'a?+', 'a{m,n}+') are not supported: they change which strings match")
        elif _ATOMIC is not None and op is _ATOMIC:
            raise _error("atomic groups ('(?>...)') are not supported: they change which strings match")
        else:
            raise _error(f"unsupported construct {op}")


@functools.lru_cache(maxsize=1024)
def to_rust(pattern: str) -> str:
    """``pattern`` (Python ``re`` syntax, a ``str`` pattern) as an
    equivalent pattern of the engine's Rust syntax; raises
    :class:`~formcast.GrammarError` (``re``'s own message for what ``re``
    refuses, a named construct for what cannot be honoured) or
    :class:`~formcast.LimitError`."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
    try:
        re.compile(pattern)
        parsed = _p.parse(pattern, 0)
    except re.error as e:
        raise _error(e.msg, e.pos) from None
    except RecursionError:
        raise _engine.LimitError("limit exceeded: the pattern's groups nest too deeply for Python's re") from None
    flags = parsed.state.flags
    w = _Writer()
    try:
        w.seq(list(parsed), flags, True, True)
    except RecursionError:
        raise _engine.LimitError("limit exceeded: the pattern's groups nest too deeply") from None
    return "".join(w.out)
