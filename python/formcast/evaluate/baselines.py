"""Trivial answers that read nothing from the input, scored like a formatter.

A content-similarity score means little on its own: the metric gives partial
credit to any text at the right key, so an answer that reads nothing from the
input still scores well above zero. ``formcast eval`` therefore scores two
such answers with the same metric and shows them beside every run:

* :func:`empty_answer` -- every field at its emptiest value (``""``, ``0``,
  ``false``, ``[]``, ``null``);
* :func:`input_everywhere` -- the whole input text in every string field
  (other fields as in the empty answer).

Both follow the schema's keys and value types, so they also score 100%
schema accuracy: a formatter has to beat them on content to show it read
the text.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from .._refs import follow_refs

__all__ = ["BASELINES", "empty_answer", "input_everywhere", "schema_skeleton"]

# Schemas are walked to this depth; deeper (or recursive) parts become null.
_MAX_DEPTH = 64


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    # Local references only (#/$defs/x, #/definitions/x); anything else is left as is.
    # A chain longer than _MAX_DEPTH (a cycle) or a pointer that does not resolve: {}.
    return follow_refs(schema, root, max_hops=_MAX_DEPTH, unresolved={})


def schema_skeleton(schema: Any, string_value: Callable[[], str] = str, *, root: Any = None, depth: int = 0) -> Any:
    """A value with the schema's keys and value types and no content.

    Objects get every key of ``properties`` (required or not: schema accuracy
    counts exactly those keys); strings get ``string_value()``; numbers 0;
    booleans false; arrays []; ``null`` null; ``enum``/``const`` their first
    member; ``anyOf``/``oneOf`` their first branch; ``allOf`` its first
    member with ``properties``. Unknown or deeper than 64 levels: null.
    """
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if depth > _MAX_DEPTH or not isinstance(schema, Mapping):
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema_skeleton(schema[key][0], string_value, root=root, depth=depth + 1)
    if isinstance(schema.get("allOf"), list):
        for part in schema["allOf"]:
            part = _resolve(part, root)
            if isinstance(part, Mapping) and "properties" in part:
                return schema_skeleton(part, string_value, root=root, depth=depth + 1)
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t is None and "properties" in schema:
        t = "object"
    if t == "object":
        props = schema.get("properties")
        if not isinstance(props, Mapping):
            return {}
        return {k: schema_skeleton(v, string_value, root=root, depth=depth + 1) for k, v in props.items()}
    return {"string": lambda: string_value(), "integer": lambda: 0, "number": lambda: 0, "boolean": lambda: False,
            "array": lambda: [], "null": lambda: None}.get(t, lambda: None)()


def empty_answer(schema: Any, input_text: str = "") -> Any:
    """Every field at its emptiest value: ``""``, 0, false, [], null."""
    return schema_skeleton(schema, str)


def input_everywhere(schema: Any, input_text: str) -> Any:
    """The whole input text in every string field (others as :func:`empty_answer`)."""
    return schema_skeleton(schema, lambda: input_text)


#: The trivial answers ``formcast eval`` scores beside every run: name -> (title, answer(schema, input_text)).
BASELINES: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "empty": ("all fields empty strings / zeros", empty_answer),
    "input": ("the input text in every field", input_everywhere),
}
