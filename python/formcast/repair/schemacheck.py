"""What a JSON Schema must satisfy before ``jsonschema`` may walk it.

``jsonschema`` validates recursively and memoizes nothing, so three kinds of
schema make it fail or hang instead of answering:

* nesting deeper than Python's stack (``check_schema`` spends up to 12
  frames per level): refused past :data:`~formcast._depth.MAX_CHECK_DEPTH`
  levels;
* a ``$ref`` chain that comes back to where it started without entering
  the value (``{"$ref": "#"}``, ``a -> allOf -> b -> $ref a``): it recurses
  for ever on the same value; refused, naming the cycle;
* ``$ref``/``anyOf`` structures whose evaluation doubles per level: bounded
  at validation time by :class:`EvaluationBudget` (a count of subschema
  applications).

Everything here is iterative. Only local references (``#...`` pointers,
``$anchor`` / ``$dynamicAnchor`` names and ``$id``-relative URIs inside the
schema) are followed: nothing is fetched.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator, Optional
from urllib.parse import urldefrag, urljoin

from .._depth import MAX_CHECK_DEPTH, NestingError, check_nesting, json_pointer
from .errors import InvalidSchema

__all__ = ["check_schema_structure", "EvaluationBudget", "BudgetExceeded", "budgeted_validator_class"]

# Keywords whose value is a schema applied to the same value (in place)...
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MANY = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas",)
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
# ... or to a part of it (an item, a property value, a key).
_INTO_ONE = ("additionalProperties", "additionalItems", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "items")
_INTO_MANY = ("prefixItems", "items")
_INTO_MAP = ("properties", "patternProperties")
# Schemas kept for reference only.
_DEFS_MAP = ("$defs", "definitions")


def _subschemas(node: dict) -> Iterator[tuple[str, Any, Any, bool]]:
    """(keyword, key or index or None, subschema, applies in place)."""
    for kw in _IN_PLACE_ONE:
        if kw in node:
            yield kw, None, node[kw], True
    for kw in _IN_PLACE_MANY:
        if isinstance(node.get(kw), list):
            for i, s in enumerate(node[kw]):
                yield kw, i, s, True
    for kw in _IN_PLACE_MAP:
        if isinstance(node.get(kw), dict):
            for k, s in node[kw].items():
                yield kw, k, s, True
    if isinstance(node.get("dependencies"), dict):  # draft 7: schema-valued entries apply in place
        for k, s in node["dependencies"].items():
            if isinstance(s, (dict, bool)):
                yield "dependencies", k, s, True
    for kw in _INTO_ONE:
        if kw in node and not isinstance(node[kw], list):
            yield kw, None, node[kw], False
    for kw in _INTO_MANY:
        if isinstance(node.get(kw), list):
            for i, s in enumerate(node[kw]):
                yield kw, i, s, False
    for kw in _INTO_MAP + _DEFS_MAP:
        if isinstance(node.get(kw), dict):
            for k, s in node[kw].items():
                yield kw, k, s, False


class _Index:
    """Every subschema with its location, base URI and resource, and the
    anchors and ``$id`` resources of the document."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.where: dict[int, str] = {}  # id(schema) -> JSON pointer
        self.base: dict[int, str] = {}  # id(schema) -> base URI
        self.resources: dict[str, Any] = {"": root}
        self.anchors: dict[tuple[str, str], Any] = {}
        self.nodes: list[dict] = []
        stack: list[tuple[Any, str, str]] = [(root, "", "")]
        while stack:
            node, ptr, base = stack.pop()
            if not isinstance(node, dict) or id(node) in self.where:
                continue
            if isinstance(node.get("$id"), str):
                uri, frag = urldefrag(urljoin(base, node["$id"]))
                if uri:
                    base = uri
                    self.resources.setdefault(uri, node)
                if frag and not frag.startswith("/"):  # draft 7 "$id": "#name"
                    self.anchors.setdefault((base, frag), node)
            for kw in ("$anchor", "$dynamicAnchor"):
                if isinstance(node.get(kw), str):
                    self.anchors.setdefault((base, node[kw]), node)
            self.where[id(node)] = ptr
            self.base[id(node)] = base
            self.nodes.append(node)
            for kw, key, sub, _ in _subschemas(node):
                path = [kw] if key is None else [kw, key]
                stack.append((sub, ptr + json_pointer(path), base))

    def resolve(self, node: dict, kw: str) -> Optional[Any]:
        """The schema ``node[kw]`` refers to; None when it is not local
        (a remote URI: never fetched, left to jsonschema to report)."""
        ref = node[kw]
        if kw == "$recursiveRef":
            return self.root
        uri, frag = urldefrag(urljoin(self.base.get(id(node), ""), ref))
        if uri not in self.resources:
            return None
        doc = self.resources[uri]
        where = f"{self.where.get(id(node), '') or '(root)'}/{kw}"
        if not frag:
            return doc
        if not frag.startswith("/"):
            target = self.anchors.get((uri, frag))
            if target is None:
                raise InvalidSchema(f"invalid JSON Schema at {where}: {ref!r} names no anchor of the schema")
            return target
        target = doc
        for token in frag[1:].split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and token in target:
                target = target[token]
            elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target = target[int(token)]
            else:
                raise InvalidSchema(f"invalid JSON Schema at {where}: {ref!r} points to nothing in the schema")
        return target


def check_schema_structure(schema: Any) -> None:
    """Raises :class:`InvalidSchema` for a schema ``jsonschema`` cannot
    walk: nested deeper than ``MAX_CHECK_DEPTH`` levels, containing itself,
    a local ``$ref`` that resolves to nothing, or a ``$ref`` cycle that
    applies to the same value for ever."""
    try:
        check_nesting(schema, MAX_CHECK_DEPTH, "the schema")
    except NestingError as e:
        raise InvalidSchema(f"invalid JSON Schema: {e}") from None
    if not isinstance(schema, dict):
        return
    index = _Index(schema)
    # In-place edges: what a schema applies to the very value it checks.
    edges: dict[int, list[tuple[str, Any]]] = {}
    by_id: dict[int, Any] = {}
    for node in index.nodes:
        by_id[id(node)] = node
        out: list[tuple[str, Any]] = []
        for kw, key, sub, in_place in _subschemas(node):
            if in_place and isinstance(sub, dict):
                out.append((kw if key is None else f"{kw}/{key}", sub))
        for kw in _REFS:
            if isinstance(node.get(kw), str):
                target = index.resolve(node, kw)
                if isinstance(target, dict):
                    out.append((kw, target))
        edges[id(node)] = out
    # Depth-first search with colours, iterative; a grey node met again is a
    # cycle of in-place applications.
    state: dict[int, int] = {}  # 1 on the current path, 2 done
    for start in index.nodes:
        if state.get(id(start)):
            continue
        path: list[tuple[Any, Iterator[tuple[str, Any]], str]] = [(start, iter(edges.get(id(start), ())), "")]
        state[id(start)] = 1
        while path:
            node, it, _via = path[-1]
            for via, nxt in it:
                s = state.get(id(nxt))
                if s == 1:
                    cycle = [index.where.get(id(n), "?") or "(root)" for n, _, _ in path]
                    cycle = cycle[[id(n) for n, _, _ in path].index(id(nxt)) :] + [index.where.get(id(nxt), "?") or "(root)"]
                    raise InvalidSchema(
                        f"invalid JSON Schema: circular reference {' -> '.join(cycle)} applies to the same value "
                        f"for ever (a recursive schema must reach into the value, through properties or items, before it refers back)"
                    )
                if s is None:
                    state[id(nxt)] = 1
                    path.append((nxt, iter(edges.get(id(nxt), ())), via))
                    break
            else:
                state[id(node)] = 2
                path.pop()


class BudgetExceeded(Exception):
    """Validation used up its :class:`EvaluationBudget`."""


class _Local(threading.local):
    # The current budget as [keyword checks left] (a list: the hot path
    # only decrements it), or None outside a budget.
    left: Optional[list[int]] = None


_LOCAL = _Local()


class EvaluationBudget:
    """A count of keyword evaluations for one validation (per thread), so a
    schema whose evaluation multiplies per level (``anyOf`` of two
    references to the level below, nested) stops with a clear issue instead
    of running for hours."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def __enter__(self) -> "EvaluationBudget":
        self._outer = _LOCAL.left
        _LOCAL.left = [self.limit]
        return self

    def __exit__(self, *exc: Any) -> None:
        _LOCAL.left = self._outer


def budgeted_validator_class(cls: Any) -> Any:
    """``cls`` with its applicator keywords charging the current
    :class:`EvaluationBudget`."""
    from jsonschema import validators

    def wrap(fn: Any) -> Any:
        def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
            left = _LOCAL.left
            if left is not None:
                left[0] -= 1
                if left[0] < 0:
                    raise BudgetExceeded("validation stopped: keyword checks budget used up")
            return fn(validator, value, instance, schema)

        return keyword

    # Only keywords that apply subschemas are charged: the others cost O(1)
    # each and run once per subschema applied, so they are bounded anyway.
    return validators.extend(cls, {kw: wrap(fn) for kw, fn in cls.VALIDATORS.items() if kw in _APPLICATORS})


_APPLICATORS = frozenset(
    ("$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies",
     "items", "prefixItems", "additionalItems", "contains", "properties", "patternProperties", "additionalProperties", "propertyNames",
     "unevaluatedItems", "unevaluatedProperties")
)
