"""Rung 3 — tag-delimited answers (``<analysis><sentiment>negative</sentiment>…``).

Tags delimit fields without escaping rules, so content is free text: quotes,
code, JSON, even ``<`` and other tag-like text. The reader therefore treats a tag
as structure only when it is closed by its matching ``</name>`` (and, given a
schema, only when its name is a property the schema knows); everything else is
content, and a leaf's value is the exact text between its tags.

:class:`TagStream` reads incrementally: a field is available the moment its
closing tag arrives. :func:`parse_tags` / :meth:`TagStream.finish` decode the
tree into a dict (directed by the schema's types when one is given) and validate
it like any other value, with a report.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import ExtractionError, RepairError, TruncatedError
from .pipeline import ParseResult, RepairOptions, _finish_invalid, _validator, parse
from .report import Fix, Report
from .validate import _NONE, Validator, _convert_scalar, json_pointer

__all__ = ["TagStream", "parse_tags", "TagNode"]

_TAG_RE = re.compile(r"<(/?)([A-Za-z_][\w.\-:]*)(\s[^<>]*?)?\s*(/?)>")
# A '<' that could still grow into a tag once more text arrives.
_TAG_PREFIX_RE = re.compile(r"</?(?:[A-Za-z_][\w.\-:]*(?:\s[^<>]*)?)?\Z")
_MAX_TAG_LEN = 512
#: Elements open at once. A deeper opening tag is content, like a tag that
#: is never closed (its matching closer is content too), and finish()
#: reports it; the tree walks below recurse once per level.
MAX_TAG_DEPTH = 128


@dataclass
class TagNode:
    """An element: ``content_start``/``content_end`` index its raw content in the text."""

    name: str
    open_start: int
    content_start: int
    content_end: int | None = None
    close_end: int | None = None
    children: list[TagNode] = field(default_factory=list)

    @property
    def closed(self) -> bool:
        return self.close_end is not None


class TagStream:
    """Incremental reader for tag-delimited output.

    >>> t = TagStream()
    >>> t.feed("<analysis><sentiment>neg")
    {'analysis': {}}
    >>> t.feed("ative</sentiment><quote>it's \\"broken\\"</quote>")
    {'analysis': {'sentiment': 'negative', 'quote': 'it\\'s "broken"'}}

    ``names`` restricts which tag names count as structure (other tags are content).
    A ``schema`` is used by :meth:`finish`: string fields keep their content verbatim,
    tags and all.
    """

    def __init__(self, schema: Any = None, *, names: set[str] | None = None, strip: bool = True) -> None:
        self._validator: Validator | None = None if schema is None else _validator(schema)
        # Only an explicit ``names`` filters tags; with a schema, its types decide later
        # whether a field's content is structure or verbatim text.
        self.names = set(names) if names is not None else None
        self.strip = strip
        self.text = ""
        self._pos = 0
        self._stack: list[TagNode] = []
        self.roots: list[TagNode] = []
        self.events: list[tuple[str, str]] = []
        self._seen = 0
        # Opening tags read as content because of MAX_TAG_DEPTH, by name
        # (their closers are content too), and where the first one was.
        self._too_deep: dict[str, int] = {}
        self._too_deep_at: int | None = None

    # -- reading ---------------------------------------------------------------

    def feed(self, chunk: str) -> dict[str, Any]:
        """Consume ``chunk``; return what is known so far (closed fields, open parents)."""
        self.text += chunk
        self._scan()
        return self.snapshot()

    def new_events(self) -> list[tuple[str, str]]:
        """``(json_pointer, raw_text)`` for elements closed since the previous call."""
        out = self.events[self._seen :]
        self._seen = len(self.events)
        return out

    @property
    def done(self) -> bool:
        return bool(self.roots) and not self._stack and all(r.closed for r in self.roots)

    def _known(self, name: str) -> bool:
        return self.names is None or name in self.names

    def _scan(self) -> None:
        text = self.text
        n = len(text)
        pos = self._pos
        while True:
            lt = text.find("<", pos)
            if lt < 0:
                pos = n
                break
            m = _TAG_RE.match(text, lt)
            if m is None:
                if n - lt < _MAX_TAG_LEN and _TAG_PREFIX_RE.match(text, lt):
                    pos = lt  # may become a tag with the next chunk
                    break
                pos = lt + 1
                continue
            closing, name, _attrs, selfclose = m.group(1), m.group(2), m.group(3), m.group(4)
            pos = m.end()
            if not self._known(name):
                continue
            if closing:
                if self._too_deep.get(name):
                    self._too_deep[name] -= 1  # closes an opening tag read as content
                    continue
                self._close(name, lt, m.end())
            elif not selfclose and len(self._stack) >= MAX_TAG_DEPTH:
                self._too_deep[name] = self._too_deep.get(name, 0) + 1
                if self._too_deep_at is None:
                    self._too_deep_at = lt
            elif selfclose:
                node = TagNode(name, lt, m.end(), m.end(), m.end())
                self._attach(node)
                self._event(node)
            else:
                node = TagNode(name, lt, m.end())
                self._attach(node)
                self._stack.append(node)
        self._pos = pos

    def _attach(self, node: TagNode) -> None:
        if self._stack:
            self._stack[-1].children.append(node)
        else:
            self.roots.append(node)

    def _close(self, name: str, start: int, end: int) -> None:
        for depth in range(len(self._stack) - 1, -1, -1):
            if self._stack[depth].name == name:
                break
        else:
            return  # a stray closing tag: content
        # Tags opened inside but never closed were content, not structure.
        for inner in self._stack[depth + 1 :]:
            _detach(self._stack, inner, self.roots)
        del self._stack[depth + 1 :]
        node = self._stack.pop()
        node.content_end = start
        node.close_end = end
        self._event(node)

    def _event(self, node: TagNode) -> None:
        path = [n.name for n in self._stack] + [node.name]
        raw = self.text[node.content_start : node.content_end]
        self.events.append((json_pointer(path), raw.strip() if self.strip else raw))

    # -- decoding ----------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Closed elements decoded without a schema; open ones show their closed children."""
        return _to_dict(self.roots, self.text, self.strip, partial=True)

    def finish(self, schema: Any = None, *, root: str | None = None, options: RepairOptions | None = None, **overrides: Any) -> ParseResult:
        """Decode the whole answer into a dict and validate it (schema or the one given at construction)."""
        validator = self._validator if schema is None else _validator(schema)
        opts = replace(options or RepairOptions(), **overrides)
        report = Report(input_chars=len(self.text))
        if not self.roots:
            report.stages["extract"] = "no tags"
            raise ExtractionError(f"no tag-delimited fields found in the text ({len(self.text)} chars): {self.text[:60]!r}", report)
        truncated = _unclosed(self.roots)
        roots = self.roots
        if root is not None:
            picked = [r for r in roots if r.name == root]
            if not picked:
                raise ExtractionError(f"no <{root}> element found; top-level tags: {[r.name for r in roots]}", report)
            roots = picked[0].children
            report.fixes.append(Fix("decode", "tag_root", f"unwrapped <{root}>", picked[0].open_start))
        elif validator is not None:
            roots = _auto_unwrap(roots, validator.json_schema, report)
        schema = validator.json_schema if validator is not None else None
        data = _decode_children(roots, self.text, self.strip, schema, schema, "", report, opts)
        if truncated:
            report.truncated = True
            for node in truncated:
                what = "its closed children were kept" if node.children else "its partial text was kept"
                report.fixes.append(Fix("decode", "truncated", f"<{node.name}> never closed (output cut off); {what}", node.open_start, None, True))
            if not opts.allow_truncated:
                raise TruncatedError("the tag answer is truncated and allow_truncated=False", report)
        if self._too_deep_at is not None:
            report.fixes.append(
                Fix("decode", "tag_text", f"tags nested more than {MAX_TAG_DEPTH} levels deep were read as text", self._too_deep_at, None, True)
            )
        first, last = self.roots[0], self.roots[-1]
        if self.text[: first.open_start].strip():
            report.fixes.append(Fix("extract", "prose", f"ignored {len(self.text[: first.open_start].strip())} chars before the tags", 0))
        tail = self.text[last.close_end :] if last.close_end is not None else ""
        if tail.strip():
            report.fixes.append(Fix("extract", "prose", f"ignored {len(tail.strip())} chars after the tags", last.close_end))
        report.stages.update({"extract": f"{len(self.roots)} top-level tag{'s' if len(self.roots) > 1 else ''}", "decode": "ok"})
        if validator is None:
            report.stages["validate"] = "skipped (no schema)"
            return ParseResult(data, data, report)
        value, issues = validator.validate(data)
        if issues:
            return _finish_invalid(data, issues, validator, opts, report)
        report.stages["validate"] = "ok"
        return ParseResult(value, data, report)


def parse_tags(text: str, schema: Any = None, *, root: str | None = None, names: set[str] | None = None, strip: bool = True, **options: Any) -> ParseResult:
    """Read a tag-delimited answer into a dict and validate it.

    Without a schema, an element whose content is only child elements becomes a
    dict (repeated names become a list) and any other element is its text. With a
    schema, the schema's property names decide what is a tag, its types decide
    how text is decoded (``"0.87"`` for a number, JSON text for an object/array),
    and a single wrapping tag the schema does not name (``<analysis>``) is
    unwrapped. ``root`` names the wrapper explicitly.
    """
    t = TagStream(schema, names=names, strip=strip)
    t.feed(text)
    return t.finish(root=root, **options)


# -- helpers -------------------------------------------------------------------


def _detach(stack: list[TagNode], node: TagNode, roots: list[TagNode]) -> None:
    parent_list = roots
    idx = stack.index(node)
    if idx > 0:
        parent_list = stack[idx - 1].children
    if node in parent_list:
        parent_list.remove(node)


def _unclosed(nodes: list[TagNode]) -> list[TagNode]:
    out: list[TagNode] = []
    for node in nodes:
        if not node.closed:
            out.append(node)
        out.extend(_unclosed(node.children))
    return out


def _outside_text(node: TagNode, text: str) -> str:
    """Content of ``node`` minus its closed children's markup."""
    end = node.content_end if node.content_end is not None else len(text)
    parts, pos = [], node.content_start
    for ch in node.children:
        parts.append(text[pos : ch.open_start])
        pos = ch.close_end if ch.close_end is not None else end
    parts.append(text[pos:end])
    return "".join(parts)


def _raw(node: TagNode, text: str, strip: bool) -> str:
    end = node.content_end if node.content_end is not None else len(text)
    raw = text[node.content_start : end]
    return raw.strip() if strip else raw


def _is_structural(node: TagNode, text: str) -> bool:
    return bool(node.children) and not _outside_text(node, text).strip()


def _to_dict(nodes: list[TagNode], text: str, strip: bool, partial: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    repeated: set[str] = set()
    for node in nodes:
        if not node.closed and (not partial or not node.children):
            continue
        if node.closed and not _is_structural(node, text):
            val: Any = _raw(node, text, strip)
        else:
            val = _to_dict(node.children, text, strip, partial)
        if node.name not in out:
            out[node.name] = val
        elif node.name in repeated:
            out[node.name].append(val)
        else:
            out[node.name] = [out[node.name], val]
            repeated.add(node.name)
    return out


def _resolve(schema: Any, root: Any) -> Any:
    """Follow a local ``$ref`` (pydantic puts models under ``$defs``) and an
    ``anyOf``/``oneOf`` with one non-null alternative (an Optional field),
    at most 32 steps in all (references may form a cycle)."""
    for _ in range(32):
        if not isinstance(schema, dict):
            return schema
        ref = schema.get("$ref")
        if ref is not None:
            if not isinstance(ref, str) or not ref.startswith("#/"):
                return schema
            target: Any = root
            for part in ref[2:].split("/"):
                target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, dict) else None
            schema = target
            continue
        for key in ("anyOf", "oneOf"):
            alts = schema.get(key)
            if isinstance(alts, list):
                non_null = [a for a in alts if not (isinstance(a, dict) and a.get("type") == "null")]
                if len(non_null) == 1:
                    schema = non_null[0]
                    break
        else:
            return schema
    return schema


def _types(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    if "properties" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    return []


def _auto_unwrap(roots: list[TagNode], schema: Any, report: Report) -> list[TagNode]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return roots
    named = [r for r in roots if r.name in props]
    if named:
        return roots
    # Exactly one wrapper whose children the schema names: <analysis>...</analysis>.
    wrappers = [r for r in roots if any(c.name in props for c in r.children)]
    if len(wrappers) == 1:
        report.fixes.append(Fix("decode", "tag_root", f"unwrapped <{wrappers[0].name}> (the schema names its children)", wrappers[0].open_start))
        return wrappers[0].children
    return roots


def _decode_children(
    nodes: list[TagNode], text: str, strip: bool, schema: Any, root_schema: Any, ptr: str, report: Report, opts: RepairOptions
) -> dict[str, Any]:
    schema = _resolve(schema, root_schema)
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    groups: dict[str, list[TagNode]] = {}
    for node in nodes:
        groups.setdefault(node.name, []).append(node)
    out: dict[str, Any] = {}
    for name, group in groups.items():
        sub = _resolve(props.get(name), root_schema) if isinstance(props, dict) else None
        p = f"{ptr}/{json_pointer([name])[1:]}"
        if len(group) == 1:
            out[name] = _decode(group[0], text, strip, sub, root_schema, p, report, opts)
            continue
        # Repeated tags: the items of an array.
        items = sub.get("items") if isinstance(sub, dict) and "array" in _types(sub) else None
        out[name] = [_decode(g, text, strip, items, root_schema, f"{p}/{i}", report, opts) for i, g in enumerate(group)]
    return out


def _decode(node: TagNode, text: str, strip: bool, schema: Any, root_schema: Any, ptr: str, report: Report, opts: RepairOptions) -> Any:
    schema = _resolve(schema, root_schema)
    types = _types(schema)
    raw = _raw(node, text, strip)
    structural = _is_structural(node, text) or (not node.closed and bool(node.children))
    if not types:
        if structural:
            return _decode_children(node.children, text, strip, schema, root_schema, ptr, report, opts)
        return raw
    if "object" in types:
        if structural:
            return _decode_children(node.children, text, strip, schema, root_schema, ptr, report, opts)
        if node.children and isinstance(schema, dict) and any(c.name in (schema.get("properties") or {}) for c in node.children):
            report.fixes.append(Fix("decode", "tag_text", f"ignored free text between the child tags of <{node.name}>", node.content_start, ptr))
            return _decode_children(node.children, text, strip, schema, root_schema, ptr, report, opts)
        return _json_text(raw, node, ptr, report, opts)
    if "array" in types:
        items = schema.get("items") if isinstance(schema, dict) else None
        if structural:
            # <tags><tag>a</tag><tag>b</tag></tags>
            return [_decode(c, text, strip, items, root_schema, f"{ptr}/{i}", report, opts) for i, c in enumerate(node.children)]
        value = _json_text(raw, node, ptr, report, opts)
        if isinstance(value, list):
            return value
        # A single occurrence of a repeated tag: a one-item array.
        report.fixes.append(Fix("decode", "tag_text", f"single <{node.name}> read as a one-item array", node.content_start, ptr))
        return [_decode(node, text, strip, items, root_schema, f"{ptr}/0", report, opts)]
    if "string" in types:
        return raw  # free text, verbatim (child-looking tags included)
    scalar = _convert_scalar(raw, [t for t in types if t in ("integer", "number", "boolean", "null")])
    if scalar is not _NONE:
        report.fixes.append(Fix("decode", "tag_text", f"text {raw[:30]!r} read as {json.dumps(scalar)}", node.content_start, ptr))
        return scalar
    return raw  # left as text: validation will say what is wrong


def _json_text(raw: str, node: TagNode, ptr: str, report: Report, opts: RepairOptions) -> Any:
    """An object/array field written as JSON text inside the tag."""
    try:
        res = parse(raw, options=opts)
    except RepairError:
        return raw
    report.fixes.append(Fix("decode", "tag_text", f"JSON text inside <{node.name}> parsed", node.content_start, ptr))
    report.fixes.extend(Fix(f.stage, f.kind, f.message, None if f.offset is None else node.content_start + f.offset, ptr, f.guess) for f in res.report.fixes)
    return res.data
