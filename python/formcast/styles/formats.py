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
    # free text inside the tag is the raw arguments (e.g. harmony's code);
    # "custom": an OpenAI custom tool, whose input is the InputRole node.
    kind: Literal["function", "builtin", "custom"] = "function"


@dataclass(frozen=True)
class TextRole:
    """A node whose free text is ``reasoning`` or ``content``.

    ``verbatim``: all of the node's text is that channel's, its literal
    strings included (an answer in a caller's own format, where a tag's
    begin and end are part of the answer, not call syntax)."""

    channel: Literal["reasoning", "content"]
    verbatim: bool = False


@dataclass(frozen=True)
class InputRole:
    """The raw input of a custom tool's call (its text, as written, is the
    call's ``input``), inside a ``CallRole(kind="custom")`` tag."""


Role = Union[CallRole, TextRole, InputRole]


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


#: Deepest nesting of format objects read (the engine's MAX_FORMAT_DEPTH in
#: crates/formcast-structural/src/parse.rs refuses deeper tags as well).
MAX_FORMAT_DEPTH = 48

# Fields of a format that hold formats: ("content", one), ("elements" /
# "tags", a list) and "rules" (a list of [pattern, format] pairs).
_ONE, _MANY = ("content", "format"), ("elements", "tags")


def walk(node: Any, path: Path = ()) -> Iterator[tuple[Path, Format]]:
    """Every format dict of a tree with its path (the keys and indices the
    output parser uses: ``("format", "elements", 1, "content")``), parents
    before children. Only fields that hold formats are followed (a
    ``json_schema``'s schema is not a format). Iterative; formats nested
    deeper than :data:`MAX_FORMAT_DEPTH` are not visited (the compilers
    refuse such tags with that limit named)."""
    stack: list[tuple[Path, Any, int]] = [(path, node, 0)]
    while stack:
        p, n, depth = stack.pop()
        if not isinstance(n, dict) or depth > MAX_FORMAT_DEPTH:
            continue
        yield p, n
        children: list[tuple[Path, Any, int]] = []
        for key in _ONE:
            if key in n:
                children.append((p + (key,), n[key], depth + 1))
        for key in _MANY:
            if isinstance(n.get(key), list):
                children.extend((p + (key, i), x, depth + 1) for i, x in enumerate(n[key]))
        if isinstance(n.get("rules"), list):
            children.extend(
                (p + ("rules", i, 1), r[1], depth + 1) for i, r in enumerate(n["rules"]) if isinstance(r, (list, tuple)) and len(r) == 2
            )
        stack.extend(reversed(children))


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
