"""Constructors for structural-tag format dicts, and the role side table.

Builders produce plain dicts exactly as the structural-tag spec defines
them. What a parser needs beyond the grammar (this tag is a call of
``get_weather``, that one holds reasoning) is recorded next to the dict in
a :class:`Roles` table keyed by the node's path, so the dict itself stays
spec-exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Literal, Sequence, Union

Format = dict[str, Any]
Path = tuple[Union[str, int], ...]


@dataclass(frozen=True)
class CallRole:
    """A ``tag`` that is one tool call: its text is the call, not content."""

    name: str
    # "function": arguments come from a json_schema node; "builtin": the
    # free text inside the tag is the raw arguments (e.g. harmony's code).
    kind: Literal["function", "builtin"] = "function"


@dataclass(frozen=True)
class TextRole:
    """A node whose free text is ``reasoning`` or ``content``."""

    channel: Literal["reasoning", "content"]


Role = Union[CallRole, TextRole]


class Roles:
    """Collects roles while a tag is built, keyed by node identity, then
    resolves them to paths once the tree is complete."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Format, Role]] = {}

    def mark(self, node: Format, role: Role) -> Format:
        self._by_id[id(node)] = (node, role)
        return node

    def resolve(self, root: Format) -> dict[Path, Role]:
        out: dict[Path, Role] = {}
        for path, node in walk(root):
            hit = self._by_id.get(id(node))
            if hit is not None and hit[0] is node:
                out[path] = hit[1]
        return out


def walk(node: Any, path: Path = ()) -> Iterator[tuple[Path, Format]]:
    """Every format dict of a tree with its path (dict keys and list indices)."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            if isinstance(value, (dict, list)):
                yield from walk(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if isinstance(value, (dict, list)):
                yield from walk(value, path + (i,))


# --------------------------------------------------------------- formats --
def const(value: str) -> Format:
    return {"type": "const_string", "value": value}


def any_text(excludes: Sequence[str] = ()) -> Format:
    return {"type": "any_text", "excludes": list(excludes)}


def json_schema(schema: Any, style: str = "json") -> Format:
    return {"type": "json_schema", "json_schema": schema, "style": style}


def regex(pattern: str) -> Format:
    return {"type": "regex", "pattern": pattern}


def tag(begin: str, content: Format, end: str | Sequence[str]) -> Format:
    return {"type": "tag", "begin": begin, "content": content, "end": end if isinstance(end, str) else list(end)}


def sequence(*elements: Format | None) -> Format:
    """A sequence of the given formats; ``None`` entries are skipped and a
    single element is returned as is."""
    items = [e for e in elements if e is not None]
    if len(items) == 1:
        return items[0]
    return {"type": "sequence", "elements": items}


def one_of(*elements: Format) -> Format:
    if len(elements) == 1:
        return elements[0]
    return {"type": "or", "elements": list(elements)}


def optional(content: Format) -> Format:
    return {"type": "optional", "content": content}


def triggered_tags(
    triggers: Sequence[str],
    tags: Sequence[Format],
    excludes: Sequence[str] = (),
    *,
    at_least_one: bool = False,
    stop_after_first: bool = False,
) -> Format:
    return {
        "type": "triggered_tags",
        "triggers": list(triggers),
        "tags": list(tags),
        "excludes": list(excludes),
        "at_least_one": at_least_one,
        "stop_after_first": stop_after_first,
    }


def tags_with_separator(
    tags: Sequence[Format], separator: str, *, at_least_one: bool = False, stop_after_first: bool = False
) -> Format:
    return {
        "type": "tags_with_separator",
        "tags": list(tags),
        "separator": separator,
        "at_least_one": at_least_one,
        "stop_after_first": stop_after_first,
    }


def structural_tag(fmt: Format) -> Format:
    return {"type": "structural_tag", "format": fmt}
