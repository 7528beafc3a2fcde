"""The seven JSON-complexity measures of the SPOT formatter paper (appendix D.3).

Each takes a parsed JSON value (dicts, lists, str, int/float, bool, None):

* :func:`depth` — nesting depth: primitives 0, a container 1 + the deepest
  child (an empty container is 1);
* :func:`num_keys` — keys summed over every object;
* :func:`num_elements` — every value in the structure, containers and
  primitives, the root included;
* :func:`size_bytes` — ``len(json.dumps(value).encode("utf-8"))`` with
  ``json.dumps``'s defaults (so non-ASCII characters count as their ``\\uXXXX``
  escapes, as the formula is written);
* :func:`cyclomatic_complexity` — keys summed over every object plus one per
  non-empty array;
* :func:`schema_complexity` — the recursive *sc* (strings ``1 + min(len, 100)/10``,
  objects ``1 + |keys| + Σ sc(child)``, arrays ``1 + len + sc(first item)`` when
  every item has the same JSON type, else ``1 + len + Σ sc(item)``; an empty
  array is ``1``; anything else ``1``);
* :func:`content_complexity` — the recursive *cc* (objects and arrays sum their
  children; numbers ``min(digits/5, 1)``; strings ``lf + ef + sf + tf``;
  booleans and null 0).

Where the paper is silent: booleans are not numbers; *digits* counts the
decimal digits of the number's JSON text; for the empty string ``ef`` and ``sf``
are 0; a string is *code-like* (``tf = 2``) when it matches
:data:`CODE_PATTERN` (brackets/braces with semicolons or operators, common
keywords followed by code syntax, call syntax, markup tags, backticks, shell
prompts, tracebacks).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterable

from .._depth import MAX_JSON_DEPTH, check_nesting

__all__ = [
    "MEASURES",
    "CODE_PATTERN",
    "depth",
    "num_keys",
    "num_elements",
    "size_bytes",
    "cyclomatic_complexity",
    "schema_complexity",
    "content_complexity",
    "complexity_profile",
    "mean_profile",
]

CODE_PATTERN = re.compile(
    r"```|`[^`\n]+`"  # markdown code
    r"|\b(?:def|class|function|return|import|from|const|let|var|public|private|static|void|lambda)\b[^\n]*[(){}:=;]"
    r"|\b[A-Za-z_][\w.]*\([^()\n]*\)"  # call syntax: f(x), obj.method()
    r"|[{}\[\]][^\n]*;|;\s*$|==|!=|=>|->|&&|\|\|"  # statements and operators
    r"|</?[A-Za-z][\w-]*(?:\s[^<>\n]*)?>"  # markup tags
    r"|^\s*[$>]{1,3} \S"  # shell prompts
    r"|Traceback \(most recent call last\)|\b\w+(?:Error|Exception):",
    re.MULTILINE,
)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if _is_number(v):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    raise TypeError(f"not a JSON value: {type(v).__name__}")


def _children(v: Any) -> list[Any]:
    if isinstance(v, dict):
        return list(v.values())
    if isinstance(v, list):
        return list(v)
    return []


def _walk(v: Any) -> Iterable[Any]:
    _check(v)
    stack = [v]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(_children(x))


def _check(value: Any, limit: int = 1 << 30) -> None:
    """Values are walked with explicit stacks, at any depth; a value that
    contains itself would never end, and one whose shared parts expand
    past ``MAX_VALUES`` would take for ever: both are refused first
    (:class:`~formcast._depth.NestingError`, a ``ValueError``)."""
    check_nesting(value, limit, "the value")


def _fold(value: Any, leaf: Callable[[Any], float], node: Callable[[Any, list[float]], float]) -> float:
    """Post-order evaluation without recursion: ``node(container, results of
    its children in order)``, ``leaf(primitive)``."""
    _check(value)
    results: list[float] = []
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        x, expanded = stack.pop()
        if not isinstance(x, (dict, list)):
            results.append(leaf(x))
        elif not expanded:
            stack.append((x, True))
            stack.extend((c, False) for c in reversed(_children(x)))
        else:
            k = len(x)
            kids = results[len(results) - k :] if k else []
            del results[len(results) - k :]
            results.append(node(x, kids))
    return results[0]


def depth(value: Any) -> int:
    """Maximum nesting level: 0 for a primitive, 1 + max child depth for a container."""
    return int(_fold(value, lambda _: 0, lambda _, kids: 1 + max(kids, default=0)))


def num_keys(value: Any) -> int:
    """Total number of keys over all (nested) objects."""
    return sum(len(x) for x in _walk(value) if isinstance(x, dict))


def num_elements(value: Any) -> int:
    """Number of values in the structure: objects, arrays and primitives, root included."""
    return sum(1 for _ in _walk(value))


def size_bytes(value: Any) -> int:
    """Bytes of ``json.dumps(value)`` encoded as UTF-8 (values nested more
    than 512 levels raise ``ValueError``: ``json.dumps`` recurses)."""
    _check(value, MAX_JSON_DEPTH)
    return len(json.dumps(value).encode("utf-8"))


def cyclomatic_complexity(value: Any) -> int:
    """Keys over all objects plus one for every non-empty array."""
    total = 0
    for x in _walk(value):
        if isinstance(x, dict):
            total += len(x)
        elif isinstance(x, list) and x:
            total += 1
    return total


def schema_complexity(value: Any) -> float:
    """The paper's *sc*: structural complexity weighted by types and nesting."""

    def leaf(v: Any) -> float:
        if isinstance(v, str):
            return 1 + min(len(v), 100) / 10
        _json_type(v)
        return 1.0

    def node(v: Any, kids: list[float]) -> float:
        if isinstance(v, dict):
            return 1 + len(v) + sum(kids)
        if not v:
            return 1.0
        if len({_json_type(x) for x in v}) == 1:
            return 1 + len(v) + kids[0]
        return 1 + len(v) + sum(kids)

    return _fold(value, leaf, node)


def _string_cc(s: str) -> float:
    n = len(s)
    lf = min(n / 20, 5)
    if n == 0:
        return 0.0
    ef = len(set(s)) / n * 3
    special = sum(1 for ch in s if not ch.isalnum() and not ch.isspace())
    sf = min(special / n * 5, 3)
    tf = 2.0 if CODE_PATTERN.search(s) else 0.0
    return lf + ef + sf + tf


def content_complexity(value: Any) -> float:
    """The paper's *cc*: complexity of the data values (length, entropy, special
    characters, code-likeness of strings; digits of numbers)."""

    def leaf(v: Any) -> float:
        if isinstance(v, str):
            return _string_cc(v)
        if _is_number(v):
            digits = sum(ch.isdigit() for ch in json.dumps(v))
            return min(digits / 5, 1.0)
        _json_type(v)
        return 0.0

    return _fold(value, leaf, lambda _, kids: sum(kids))


MEASURES = {
    "depth": depth,
    "keys": num_keys,
    "elements": num_elements,
    "size": size_bytes,
    "cyclomatic": cyclomatic_complexity,
    "schema": schema_complexity,
    "content": content_complexity,
}
"""Measure name -> function, in the paper's order."""


def complexity_profile(value: Any) -> dict[str, float]:
    """All seven measures of one JSON value."""
    return {name: float(fn(value)) for name, fn in MEASURES.items()}


def mean_profile(values: Iterable[Any]) -> dict[str, float]:
    """The seven measures averaged over several JSON values (e.g. a dataset's gold outputs)."""
    totals = {name: 0.0 for name in MEASURES}
    n = 0
    for v in values:
        n += 1
        for name, x in complexity_profile(v).items():
            totals[name] += x
    if n == 0:
        raise ValueError("no values to profile")
    return {name: t / n for name, t in totals.items()}
