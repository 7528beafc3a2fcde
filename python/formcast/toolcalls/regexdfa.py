"""Regex leaves read one character at a time, in constant time per character.

Re-running ``re.fullmatch`` over a growing span costs the span's length at
every character (quadratic on a long ``\\d+`` call index), and threads that
entered the leaf at different positions could never be merged. Here a
pattern is parsed with Python's own regex parser (``re._parser``), turned
into a Thompson NFA, and run as a lazily built DFA: a thread's state is one
small integer, so equal states merge. The patterns it gets from
:mod:`.machine` are the engine's reading of a structural tag's regex,
written back as flag-free Python syntax (``Grammar.regex_as_python``), so
the reader and the mask agree on one dialect.

Patterns outside the supported subset (backreferences, lookaround,
possessive or atomic groups, anchors inside the pattern, case-insensitive or
locale flags) return None from :func:`compile_dfa`; the caller then falls
back to re-matching over a bounded span.
"""

from __future__ import annotations

import bisect
import re
from typing import Any, Callable, Optional

try:  # Python 3.11+
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

__all__ = ["LazyDFA", "compile_dfa", "DEAD"]

DEAD: frozenset[int] = frozenset()
_MAX_NFA = 20_000  # NFA states (counted repeats are expanded)
_MAX_MOVES = 65_536  # cached transitions before the cache starts over


class _Unsupported(Exception):
    pass


Pred = Callable[[str], bool]


def _category(cat: Any) -> Pred:
    if cat in (_c.CATEGORY_DIGIT, _c.CATEGORY_UNI_DIGIT):
        return str.isdecimal
    if cat in (_c.CATEGORY_NOT_DIGIT, _c.CATEGORY_UNI_NOT_DIGIT):
        return lambda ch: not ch.isdecimal()
    if cat in (_c.CATEGORY_SPACE, _c.CATEGORY_UNI_SPACE):
        return str.isspace
    if cat in (_c.CATEGORY_NOT_SPACE, _c.CATEGORY_UNI_NOT_SPACE):
        return lambda ch: not ch.isspace()
    if cat in (_c.CATEGORY_WORD, _c.CATEGORY_UNI_WORD):
        return lambda ch: ch.isalnum() or ch == "_"
    if cat in (_c.CATEGORY_NOT_WORD, _c.CATEGORY_UNI_NOT_WORD):
        return lambda ch: not (ch.isalnum() or ch == "_")
    raise _Unsupported(f"category {cat}")


def _char_class(items: list[tuple[Any, Any]]) -> Pred:
    negate = False
    preds: list[Pred] = []
    ranges: list[tuple[int, int]] = []
    for op, av in items:
        if op is _c.NEGATE:
            negate = True
        elif op is _c.LITERAL:
            ranges.append((av, av))
        elif op is _c.RANGE:
            ranges.append((av[0], av[1]))
        elif op is _c.CATEGORY:
            preds.append(_category(av))
        else:
            raise _Unsupported(f"class item {op}")
    # Classes from the engine hold hundreds of ranges (a Unicode \w):
    # merged, and found by bisection.
    ranges.sort()
    merged: list[list[int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    starts = [lo for lo, _ in merged]
    ends = [hi for _, hi in merged]

    def inside(ch: str) -> bool:
        c = ord(ch)
        k = bisect.bisect_right(starts, c) - 1
        return (k >= 0 and c <= ends[k]) or any(p(ch) for p in preds)

    return (lambda ch: not inside(ch)) if negate else inside


class _NFA:
    def __init__(self, dotall: bool) -> None:
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[Pred, int]]] = []
        self.dotall = dotall

    def new(self) -> int:
        if len(self.eps) >= _MAX_NFA:
            raise _Unsupported("pattern too large")
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def build(self, seq: Any, first: bool, last: bool) -> tuple[int, int]:
        """Fragment for a parsed sequence; ``first`` / ``last``: nothing of
        the pattern comes before / after it."""
        start = cur = self.new()
        items = list(seq)
        for k, (op, av) in enumerate(items):
            cur = self.atom(op, av, cur, first and k == 0, last and k == len(items) - 1)
        return start, cur

    def atom(self, op: Any, av: Any, cur: int, first: bool, at_end: bool) -> int:
        if op is _c.LITERAL:
            return self._edge(cur, lambda ch, c=chr(av): ch == c)
        if op is _c.NOT_LITERAL:
            return self._edge(cur, lambda ch, c=chr(av): ch != c)
        if op is _c.ANY:
            return self._edge(cur, (lambda ch: True) if self.dotall else (lambda ch: ch != "\n"))
        if op is _c.IN:
            return self._edge(cur, _char_class(av))
        if op is _c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            if add_flags or del_flags:
                raise _Unsupported("inline flags")
            s, e = self.build(sub, first, at_end)
            self.eps[cur].append(s)
            return e
        if op is _c.BRANCH:
            out = self.new()
            for alt in av[1]:
                s, e = self.build(alt, first, at_end)
                self.eps[cur].append(s)
                self.eps[e].append(out)
            return out
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            lo, hi, sub = av
            for _ in range(lo):
                s, e = self.build(sub, False, False)
                self.eps[cur].append(s)
                cur = e
            if hi == _c.MAXREPEAT:
                s, e = self.build(sub, False, False)
                loop = self.new()
                self.eps[cur].append(loop)
                self.eps[loop].append(s)
                self.eps[e].append(loop)
                return loop
            out = self.new()
            for _ in range(hi - lo):
                self.eps[cur].append(out)
                s, e = self.build(sub, False, False)
                self.eps[cur].append(s)
                cur = e
            self.eps[cur].append(out)
            return out
        if op is _c.AT:
            # A full match: ^ / \A at the very start and $ / \Z at the very
            # end constrain nothing; anywhere else they would.
            if (av in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING) and first) or (av in (_c.AT_END, _c.AT_END_STRING) and at_end):
                return cur
            raise _Unsupported("anchor inside the pattern")
        raise _Unsupported(f"{op}")

    def _edge(self, cur: int, pred: Pred) -> int:
        nxt = self.new()
        self.edges[cur].append((pred, nxt))
        return nxt


class LazyDFA:
    """The DFA of a pattern, built as characters arrive. A state is the
    frozen set of NFA states it stands for (hashable, so equal states of
    different threads merge); :data:`DEAD` is the empty set."""

    def __init__(self, nfa: _NFA, start: int, accept: int) -> None:
        self._nfa = nfa
        self._accept = accept
        self.start: frozenset[int] = self._closure({start})
        self._moves: dict[tuple[frozenset[int], str], frozenset[int]] = {}

    def _closure(self, states: set[int]) -> frozenset[int]:
        todo = list(states)
        seen = set(states)
        while todo:
            s = todo.pop()
            for t in self._nfa.eps[s]:
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return frozenset(seen)

    def accepting(self, state: frozenset[int]) -> bool:
        return self._accept in state

    def step(self, state: frozenset[int], ch: str) -> frozenset[int]:
        """The state after ``ch`` (:data:`DEAD` if no match can continue)."""
        key = (state, ch)
        nxt = self._moves.get(key)
        if nxt is None:
            edges = self._nfa.edges
            targets = {t for s in state for pred, t in edges[s] if pred(ch)}
            nxt = self._closure(targets) if targets else DEAD
            if len(self._moves) >= _MAX_MOVES:  # bounded memory: start the cache over
                self._moves.clear()
            self._moves[key] = nxt
        return nxt


def compile_dfa(pattern: str) -> Optional[LazyDFA]:
    """The lazy DFA of ``pattern`` (full-match semantics), or None when the
    pattern uses something this module does not model."""
    try:
        parsed = _p.parse(pattern)
    except (re.error, TypeError, RecursionError):
        return None
    flags = parsed.state.flags
    if flags & (re.IGNORECASE | re.LOCALE | re.ASCII | re.MULTILINE):
        return None
    nfa = _NFA(bool(flags & re.DOTALL))
    try:
        start, end = nfa.build(parsed, True, True)
    except (_Unsupported, RecursionError):
        return None
    return LazyDFA(nfa, start, end)
