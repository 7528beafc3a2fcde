"""Bounding nested Python data before recursive code walks it.

``json.dumps``, ``copy.deepcopy``, ``jsonschema`` and pydantic recurse once
(or several times) per nesting level, so data nested a few hundred levels
deep ends in ``RecursionError`` somewhere inside them, at a depth that also
depends on how deep the caller's own stack is. :func:`check_nesting` walks
the data with an explicit stack first and raises a clear error naming the
limit and the JSON pointer where it was passed.

Pure Python (no engine import): :mod:`formcast.repair` uses it too.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Optional

__all__ = ["MAX_JSON_DEPTH", "MAX_CHECK_DEPTH", "MAX_VALUES", "NestingError", "check_nesting", "json_pointer", "text_nesting", "loads"]

#: The Rust JSON reader's limit (``MAX_JSON_DEPTH`` in
#: crates/formcast-jsonschema/src/json.rs): schemas and structural tags
#: nested deeper are refused there too.
MAX_JSON_DEPTH = 512
#: For data that pure-Python recursive libraries walk (``jsonschema``
#: spends 4 to 12 stack frames per level, so 128 levels stay well inside
#: Python's default limit of 1000 frames).
MAX_CHECK_DEPTH = 128
#: Containers and scalars a structure may expand to once shared
#: sub-objects are counted at every place they occur (what ``json.dumps``
#: would write): a few dicts referencing each other twice per level would
#: otherwise make it write for ever.
MAX_VALUES = 1 << 22


class NestingError(ValueError):
    """Data nests deeper than a limit (``reason`` ``"depth"``), expands past
    :data:`MAX_VALUES` (``"size"``), or contains itself (``"cycle"``).
    ``pointer`` is where (RFC 6901)."""

    def __init__(self, message: str, pointer: str, reason: str = "depth") -> None:
        super().__init__(message)
        self.pointer = pointer
        self.reason = reason


def json_pointer(path: Any) -> str:
    """RFC 6901 pointer for a sequence of keys and indices."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def check_nesting(
    value: Any,
    limit: int,
    what: str = "value",
    *,
    max_values: int = MAX_VALUES,
    error: Optional[Callable[[str, str, str], Exception]] = None,
) -> tuple[int, int]:
    """Raises unless ``value`` (dicts, lists and tuples of anything) nests at
    most ``limit`` containers deep, holds no reference to itself and
    expands to at most ``max_values`` values. Returns the depth and the
    number of values (containers and scalars, shared ones counted at every
    use).

    ``error(message, pointer, reason)`` builds the exception (default
    :class:`NestingError`; ``reason`` is ``"depth"``, ``"size"`` or
    ``"cycle"``). Runs in time linear in the number of distinct
    containers: a container reached again by another path is not walked
    again (its depth and size are remembered).
    """
    make = error or NestingError
    if not isinstance(value, (dict, list, tuple)):
        return 0, 1
    # Post-order walk: per distinct container, its height (levels below and
    # including it) and the number of values it expands to.
    height: dict[int, int] = {}
    size: dict[int, int] = {}
    on_path: set[int] = set()
    # Frames: (container, iterator over (key, child), key it has in its parent).
    stack: list[tuple[Any, Any, Any]] = [(value, _items(value), None)]
    on_path.add(id(value))
    best = [0]  # running height of each open frame
    total = [1]
    while stack:
        node, it, _key = stack[-1]
        child_key = child = None
        for child_key, child in it:
            if not isinstance(child, (dict, list, tuple)):
                total[-1] += 1
                continue
            cid = id(child)
            if cid in on_path:
                where = _where(stack, child_key)
                raise make(f"{what} contains itself at {_short(where)}", where, "cycle")
            if cid in height:
                best[-1] = max(best[-1], height[cid])
                total[-1] += size[cid]
                if total[-1] > max_values:
                    where = _where(stack, child_key)
                    raise make(f"{what} expands to more than {max_values} values (shared sub-objects counted at every use)", where, "size")
                continue
            if len(stack) >= limit:
                where = _where(stack, child_key)
                raise make(f"{what} nests deeper than {limit} levels at {_short(where)}", where, "depth")
            break
        else:
            # Every child seen: close this frame.
            stack.pop()
            on_path.discard(id(node))
            h = best.pop() + 1
            n = total.pop()
            height[id(node)] = h
            size[id(node)] = n
            if total:
                best[-1] = max(best[-1], h)
                total[-1] += n
                if total[-1] > max_values:
                    where = _where(stack, None)
                    raise make(f"{what} expands to more than {max_values} values (shared sub-objects counted at every use)", where, "size")
            continue
        on_path.add(id(child))
        stack.append((child, _items(child), child_key))
        best.append(0)
        total.append(1)
    return height[id(value)], size[id(value)]


def _items(container: Any) -> Any:
    return iter(container.items()) if isinstance(container, dict) else enumerate(container)


def _short(pointer: str) -> str:
    """A pointer for a message: deep ones are cut in the middle."""
    if not pointer:
        return "(root)"
    if len(pointer) <= 120:
        return pointer
    return pointer[:60].rsplit("/", 1)[0] + "/.../" + pointer[-50:].split("/", 1)[-1]


def _where(stack: list[tuple[Any, Any, Any]], last: Any) -> str:
    path = [key for _, _, key in stack[1:]]
    if last is not None:
        path.append(last)
    return json_pointer(path)


def text_nesting(text: str, limit: int) -> Optional[int]:
    """The offset in JSON-like ``text`` where brackets nest deeper than
    ``limit`` (strings in double quotes skipped, escapes honoured), or None.

    Linear and cheap: run it before ``json.loads`` of text whose depth is
    unknown.
    """
    if text.count("[") + text.count("{") <= limit:
        return None
    depth = 0
    for m in _BRACKETS.finditer(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            if depth > limit:
                return m.start()
        elif ch in "]}":
            depth -= 1
    return None


# A bracket, or a whole string (to skip it; an unterminated one runs to the end).
_BRACKETS = re.compile(r'[\[\]{}]|"(?:[^"\\]|\\.)*"?', re.S)


def loads(text: str, limit: int = MAX_JSON_DEPTH, **kw: Any) -> Any:
    """``json.loads`` of text whose nesting is checked first (linear, no
    recursion): deeper than ``limit`` raises :class:`NestingError` instead
    of a ``RecursionError`` from inside the decoder."""
    at = text_nesting(text, limit)
    if at is not None:
        raise NestingError(f"JSON nested more than {limit} levels deep (at character {at})", "", "depth")
    return json.loads(text, **kw)
