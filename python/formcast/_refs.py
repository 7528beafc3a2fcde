"""Local ``$ref`` resolution for the pure-Python schema walkers: schema
accuracy (:mod:`formcast.evaluate.metrics`), the trivial answers
(:mod:`formcast.evaluate.baselines`) and grounded answers
(:mod:`formcast.formatter.grounding`).

A local reference is ``#`` and a JSON pointer (``#/$defs/item``); each
pointer segment is unescaped ``~1`` -> ``/`` first, then ``~0`` -> ``~``.
:func:`ref_target` takes one such step, in one of two modes (each what its
callers have always done):

* ``strict=True`` (schema accuracy): a reference that is not local is a
  ``ValueError``; the segments are those after the first ``/`` (an empty one
  is the key ``""``); a list is indexed by ``int(segment)``; a pointer that
  does not resolve raises what Python's indexing raises there (``KeyError``,
  ``IndexError``, ``ValueError``, ``TypeError``).
* ``strict=False``: a reference that is not local, or a pointer that does
  not resolve, gives :data:`NOT_FOUND`; empty segments are skipped and only
  objects (mappings) are descended, so a list index does not resolve.

:func:`follow_refs` follows a chain of local references (a schema whose
``$ref`` points at another ``$ref``...) in the non-strict mode, at most
``max_hops`` steps, so a cycle ends.

Pure Python (no engine import), like :mod:`formcast._depth`.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["NOT_FOUND", "unescape", "ref_target", "follow_refs"]

#: What :func:`ref_target` gives, when not strict, for a reference it cannot resolve.
NOT_FOUND: Any = object()

_AS_IS: Any = object()


def unescape(segment: str) -> str:
    """A JSON-pointer segment unescaped (``~1`` -> ``/``, then ``~0`` -> ``~``)."""
    return segment.replace("~1", "/").replace("~0", "~")


def ref_target(ref: str, root: Any, *, strict: bool = False, context: str = "") -> Any:
    """The node of ``root`` that the local reference ``ref`` names (see the
    module docs for the two modes).

    Args:
        ref: the ``$ref`` string.
        root: the document it points into (the root schema).
        strict: raise where the reference cannot be resolved, instead of
            returning :data:`NOT_FOUND`.
        context: named in the strict mode's error for a reference that is
            not local (``"schema accuracy"``).
    """
    if not ref.startswith("#"):
        if strict:
            where = f" in {context}" if context else ""
            raise ValueError(f"only local $ref is supported{where}, got {ref!r}")
        return NOT_FOUND
    node: Any = root
    if strict:
        for part in ref[1:].split("/")[1:]:
            part = unescape(part)
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node
    for part in ref[1:].split("/"):
        if not part:
            continue
        part = unescape(part)
        if not (isinstance(node, Mapping) and part in node):
            return NOT_FOUND
        node = node[part]
    return node


def follow_refs(schema: Any, root: Any, *, max_hops: int, unresolved: Any = _AS_IS) -> Any:
    """``schema`` with its chain of local ``$ref`` followed (non-strict steps
    of :func:`ref_target`) until a schema that is not a local reference.

    A schema whose ``$ref`` is not a string, or not local, is returned as it
    is. At most ``max_hops`` references are followed; where the chain goes on
    longer (a cycle) or a pointer does not resolve, the result is
    ``unresolved`` if given, else the schema where the chain stopped (the one
    whose ``$ref`` could not be followed).
    """
    hops = 0
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#"):
        target = NOT_FOUND if hops >= max_hops else ref_target(schema["$ref"], root)
        if target is NOT_FOUND:
            return schema if unresolved is _AS_IS else unresolved
        schema = target
        hops += 1
    return schema
