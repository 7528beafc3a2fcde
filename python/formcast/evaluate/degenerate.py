"""Degenerate answers: output that is schema-valid but reads nothing real.

A constrained formatter always returns valid JSON, so its failures hide in
the values. :func:`degeneracy` flags, per parsed answer:

``loop``
    a string value in which a unit of 1-40 characters repeats at least three
    times in a row over at least 12 characters (``"john_john_john_"``),
    unless that repeated text occurs in the input;
``copied``
    one non-empty string value in three or more fields;
``type_name``
    a string value that is a JSON type name (``"string"``, ``"integer"``...);
``empty``
    every leaf empty (``""``, 0, false, [], null) -- the trivial answer.

An answer with any of these is *degenerate*. Separately it counts the string
values with no support in the input: fewer than half of their words (runs
of letters and digits, case-folded) occur in the input text. Gold answers
have such values too (a date rewritten as ``1964-10-13``, a category that
the text never names), so the rate is reported beside the gold's own.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

from .metrics import flatten

__all__ = ["Degeneracy", "DegeneracySummary", "degeneracy", "summarize", "find_loop", "TYPE_NAMES"]

TYPE_NAMES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
MAX_UNIT = 40
MIN_LOOP_CHARS = 12
MIN_REPEATS = 3
COPY_FIELDS = 3
_WORD = re.compile(r"\w+")


def find_loop(text: str, max_unit: int = MAX_UNIT) -> tuple[int, int] | None:
    """The first span ``(start, end)`` of ``text`` whose characters repeat a
    unit of at most ``max_unit`` characters at least three times over at
    least 12 characters, or None. Linear in ``len(text) * max_unit``."""
    n = len(text)
    best: tuple[int, int] | None = None
    for p in range(1, min(max_unit, n // MIN_REPEATS) + 1):
        run = 0  # consecutive i with text[i] == text[i + p]
        for i in range(n - p):
            if text[i] == text[i + p]:
                run += 1
                continue
            if run:
                span = (i - run, i + p)
                if _is_loop(span, p) and (best is None or span[0] < best[0]):
                    best = span
            run = 0
        if run:
            span = (n - p - run, n)
            if _is_loop(span, p) and (best is None or span[0] < best[0]):
                best = span
    return best


def _is_loop(span: tuple[int, int], unit: int) -> bool:
    length = span[1] - span[0]
    return length >= MIN_LOOP_CHARS and length >= MIN_REPEATS * unit


def _is_empty_leaf(v: Any) -> bool:
    return v is None or v is False or v == "" or v == [] or v == {} or (isinstance(v, (int, float)) and v == 0)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def supported(value: str, input_words: set[str]) -> bool:
    """Whether at least half of ``value``'s words occur among ``input_words``
    (a value without words is supported)."""
    words = _words(value)
    if not words:
        return True
    return 2 * sum(1 for w in words if w in input_words) >= len(words)


@dataclass(frozen=True)
class Degeneracy:
    """What :func:`degeneracy` found in one answer (see the module docs)."""

    loop: bool = False
    copied: bool = False
    type_name: bool = False
    empty: bool = False
    values: int = 0
    unsupported: int = 0

    @property
    def degenerate(self) -> bool:
        """Any of loop, copied, type_name or empty."""
        return self.loop or self.copied or self.type_name or self.empty


def degeneracy(value: Any, input_text: str) -> Degeneracy:
    """Degenerate features of one parsed answer to ``input_text``."""
    leaves = list(flatten(value).values())
    strings = [v for v in leaves if isinstance(v, str) and v.strip()]
    folded = input_text.casefold()
    loop = False
    for s in strings:
        span = find_loop(s)
        if span is not None and s[span[0]:span[1]].casefold() not in folded:
            loop = True
            break
    counts = Counter(s.strip().casefold() for s in strings)
    input_words = set(_words(input_text))
    return Degeneracy(
        loop=loop,
        copied=any(c >= COPY_FIELDS for c in counts.values()),
        type_name=any(s.strip().lower() in TYPE_NAMES for s in strings),
        empty=bool(leaves) and all(_is_empty_leaf(v) for v in leaves),
        values=len(strings),
        unsupported=sum(1 for s in strings if not supported(s, input_words)),
    )


@dataclass(frozen=True)
class DegeneracySummary:
    """Rates over a dataset's parseable answers (each in [0, 1])."""

    n: int
    degenerate: float
    loop: float
    copied: float
    type_name: float
    empty: float
    unsupported_values: float

    def as_dict(self) -> dict[str, float | int]:
        return dict(self.__dict__)


def summarize(found: Iterable[Degeneracy]) -> DegeneracySummary:
    """Rates of each feature over answers, and unsupported string values over all string values."""
    items = list(found)
    n = len(items)

    def rate(attr: str) -> float:
        return sum(1 for d in items if getattr(d, attr)) / n if n else 0.0

    values = sum(d.values for d in items)
    return DegeneracySummary(
        n=n,
        degenerate=rate("degenerate"),
        loop=rate("loop"),
        copied=rate("copied"),
        type_name=rate("type_name"),
        empty=rate("empty"),
        unsupported_values=sum(d.unsupported for d in items) / values if values else 0.0,
    )
