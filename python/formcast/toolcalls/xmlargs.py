"""XML parameter styles: recognizing a parameter list as it streams, and
turning each parameter back into JSON typed by the parameters' schema.

The wire forms are those of ``Grammar.from_json_schema(style=...)``: a
parameter whose schema only admits strings is raw text, any other value is
JSON text; styles with a type attribute (deepseek, kimi_k3, cohere) say which
one was written. Styles that write the name in an attribute (cohere,
kimi_k3) escape it (``&amp;``, ``&lt;``, ``&gt;``, ``&quot;``); it is read
back unescaped.

Conversion works on text: a JSON-valued parameter is checked with the
non-recursive :mod:`.jsonscan` and copied as written, never decoded and
re-encoded, so arbitrarily nested JSON values cost no recursion. Values
that nest as elements (cohere ``dict``/``list``, minimax_m3) recurse once per
element level, which the scanner bounds by :data:`MAX_XML_NESTING`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional
from xml.sax.saxutils import unescape

from . import jsonscan

M3 = "]<]minimax[>["

#: Elements nested inside one parameter value (cohere ``dict``/``list``,
#: minimax_m3 objects and arrays). A value nested deeper ends the call: the
#: parser reads the text as not following the tag.
MAX_XML_NESTING = 64
#: ``anyOf``/``oneOf``/``allOf``/``$ref`` levels followed when deciding
#: whether a parameter's schema admits only strings.
MAX_SCHEMA_HOPS = 32


@dataclass(frozen=True)
class XmlStyle:
    name: str
    #: Literal text every parameter opens with.
    open_prefix: str
    #: Full match of an opening tag; groups ``name`` and optionally ``kind``.
    open_re: re.Pattern[str]
    #: The closing tag of a parameter called ``name``.
    close: Callable[[str], str]
    #: Values may hold nested elements (objects and arrays as XML).
    nested: bool = False
    #: The name is an XML attribute value, escaped.
    escaped_name: bool = False


def _style(name: str, prefix: str, pattern: str, close: Callable[[str], str], nested: bool = False, escaped_name: bool = False) -> XmlStyle:
    return XmlStyle(name, prefix, re.compile(pattern, re.S), close, nested, escaped_name)


STYLES: dict[str, XmlStyle] = {
    s.name: s
    for s in (
        _style("qwen_xml", "<parameter=", r"<parameter=(?P<name>[^>]*)>", lambda n: "</parameter>"),
        _style("minimax_xml", '<parameter name="', r'<parameter name="(?P<name>[^"]*)">', lambda n: "</parameter>"),
        _style("glm_xml", "<arg_key>", r"<arg_key>(?P<name>.*?)</arg_key>[ \t\r\n]*<arg_value>", lambda n: "</arg_value>"),
        _style(
            "deepseek_xml",
            '<｜DSML｜parameter name="',
            r'<｜DSML｜parameter name="(?P<name>[^"]*)" string="(?P<kind>true|false)">',
            lambda n: "</｜DSML｜parameter>",
        ),
        _style(
            "deepseek_v4_1_xml",
            '<｜DSML｜ parameter name="',
            r'<｜DSML｜ parameter name="(?P<name>[^"]*)" string="(?P<kind>true|false)">',
            lambda n: "</｜DSML｜ parameter>",
        ),
        _style(
            "kimi_k3_xml",
            '<|open|>argument key="',
            r'<\|open\|>argument key="(?P<name>[^"]*)" type="(?P<kind>[a-z]+)"<\|sep\|>',
            lambda n: "<|close|>argument<|sep|>",
            escaped_name=True,
        ),
        _style(
            "cohere_xml",
            '<cofl:value name="',
            r'<cofl:value name="(?P<name>[^"]*)" type="(?P<kind>raw|json|dict|list)">',
            lambda n: "</cofl:value>",
            nested=True,
            escaped_name=True,
        ),
        _style("minimax_m3_xml", M3 + "<", re.escape(M3) + r"<(?P<name>[^<>/]+)>", lambda n: f"{M3}</{n}>", nested=True),
    )
}

_WS = " \t\r\n"
_MAX_OPEN = 1024  # an opening tag longer than this is not one
_COHERE_OPEN = "<cofl:value "
_COHERE_CLOSE = "</cofl:value>"

# Scanner state: (phase, start, close, depth, elem, open_start).
# phase "gap" (between parameters), "open" (inside an opening tag that began
# at `start`) or "value" (the value began at `start`; `close` ends it at
# nesting `depth`). `elem` tracks a minimax_m3 element after a namespace
# marker: 0 none, 1 marker just read, 2 inside `<name>`, 3 inside `</name>`.
# `open_start` is where the parameter's opening tag began. Positions are
# absolute: `text` given to `step` may be a window starting at `base`.
ScanState = tuple[str, int, str, int, int, int]
GAP: ScanState = ("gap", 0, "", 0, 0, -1)


def step(style: XmlStyle, s: ScanState, text: str, pos: int, base: int = 0) -> Optional[ScanState]:
    """The state after the character at absolute position ``pos``;
    ``text[0]`` is at position ``base`` and holds at least the last
    :func:`lookback` characters before ``pos``."""
    phase, start, close, depth, elem, open_start = s
    i = pos - base
    ch = text[i]
    if phase == "gap":
        if ch in _WS:
            return s
        return ("open", pos, "", 0, 0, pos) if ch == style.open_prefix[0] else None
    if phase == "open":
        n = pos + 1 - start
        if n <= len(style.open_prefix):
            return s if ch == style.open_prefix[n - 1] else None
        if n > _MAX_OPEN:
            return None
        if ch == ">":
            m = style.open_re.fullmatch(text, start - base, i + 1)
            if m is not None:
                return ("value", pos + 1, style.close(m.group("name")), 0, 0, start)
        return s
    # value
    k = len(close)
    if depth == 0 and pos + 1 - k >= start and text.endswith(close, i + 1 - k, i + 1):
        return GAP
    if not style.nested:
        return s
    if style.name == "cohere_xml":
        if pos + 1 - len(_COHERE_CLOSE) >= start and text.endswith(_COHERE_CLOSE, i + 1 - len(_COHERE_CLOSE), i + 1):
            return (phase, start, close, depth - 1, 0, open_start)
        if pos + 1 - len(_COHERE_OPEN) >= start and text.endswith(_COHERE_OPEN, i + 1 - len(_COHERE_OPEN), i + 1):
            return None if depth >= MAX_XML_NESTING else (phase, start, close, depth + 1, 0, open_start)
        return s
    # minimax_m3: elements are `marker<name>` / `marker</name>`
    if pos + 1 - len(M3) >= start and text.endswith(M3, i + 1 - len(M3), i + 1):
        return (phase, start, close, depth, 1, open_start)
    if elem == 1:
        return (phase, start, close, depth, 2 if ch == "<" else 0, open_start)
    if elem == 2 and ch == "/" and text[i - 1] == "<":
        return (phase, start, close, depth, 3, open_start)
    if elem >= 2:
        if ch == ">":
            if elem == 3:
                return (phase, start, close, depth - 1, 0, open_start)
            return None if depth >= MAX_XML_NESTING else (phase, start, close, depth + 1, 0, open_start)
        if ch == "<":
            return (phase, start, close, depth, 0, open_start)
    return s


def lookback(s: ScanState, pos: int) -> int:
    """The earliest position :func:`step` may read when given ``pos`` next."""
    phase, start, close, _depth, _elem, _open = s
    if phase == "open":
        return start
    if phase == "value":
        return max(start, pos - max(len(close), len(_COHERE_CLOSE), len(M3)))
    return pos


def can_end(s: ScanState) -> bool:
    return s[0] == "gap"


# ------------------------------------------------------------ conversion --
def split(style: XmlStyle, text: str) -> tuple[list[tuple[str, Optional[str], str]], bool]:
    """The complete parameters ``(name, kind, raw value)`` of ``text`` (names
    as written, still escaped), and whether ``text`` ends between
    parameters."""
    params: list[tuple[str, Optional[str], str]] = []
    s: Optional[ScanState] = GAP
    for pos in range(len(text)):
        prev = s
        s = step(style, s, text, pos)  # type: ignore[arg-type]
        if s is None:
            return params, False
        if prev[0] == "value" and s[0] == "gap":  # type: ignore[index]
            name, kind = open_tag(style, text[prev[5] : prev[1]])  # type: ignore[index]
            params.append((name, kind, text[prev[1] : pos + 1 - len(prev[2])]))  # type: ignore[index]
    return params, s is not None and can_end(s)


def open_tag(style: XmlStyle, tag: str) -> tuple[str, Optional[str]]:
    """Name (as written) and kind attribute of a complete opening tag."""
    m = style.open_re.fullmatch(tag)
    assert m is not None, tag
    return m.group("name"), m.groupdict().get("kind")


def param_name(style: XmlStyle, written: str) -> str:
    """The property name a parameter's written name stands for."""
    return unescape(written, {"&quot;": '"'}) if style.escaped_name else written


def _resolve(schema: Any, root: Any) -> Any:
    for _ in range(MAX_SCHEMA_HOPS):  # local $ref chains only
        if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str) or not schema["$ref"].startswith("#"):
            return schema
        node: Any = root
        for part in schema["$ref"][1:].split("/")[1:] if schema["$ref"] != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, dict) else (node[int(part)] if isinstance(node, list) and part.isdigit() and int(part) < len(node) else None)
        schema = node if node is not None else True
    return schema


def only_strings(schema: Any, root: Any, _hops: int = 0, _path: frozenset[int] = frozenset()) -> bool:
    """The schema admits strings and nothing else (so the value is raw text).

    Follows ``$ref`` and the combinators at most :data:`MAX_SCHEMA_HOPS`
    deep; a reference back to a schema being examined adds nothing (a
    cycle), and past the bound the answer is False (the value is then read
    as JSON when it is JSON, else as text).
    """
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or _hops >= MAX_SCHEMA_HOPS:
        return False
    path = _path | {id(schema)}
    for key in ("enum",):
        if isinstance(schema.get(key), list) and schema[key]:
            return all(isinstance(v, str) for v in schema[key])
    if "const" in schema:
        return isinstance(schema["const"], str)
    t = schema.get("type")
    if t == "string" or t == ["string"]:
        return True
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key)
        if isinstance(alts, list) and alts:
            subs = [_resolve(s, root) for s in alts]
            subs = [s for s in subs if not (isinstance(s, dict) and id(s) in path)]
            return bool(subs) and all(only_strings(s, root, _hops + 1, path) for s in subs)
    if isinstance(schema.get("allOf"), list):
        subs = [_resolve(s, root) for s in schema["allOf"]]
        return any(only_strings(s, root, _hops + 1, path) for s in subs if not (isinstance(s, dict) and id(s) in path))
    return False


def property_schema(schema: Any, name: str, root: Any) -> Any:
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return True
    props = schema.get("properties")
    if isinstance(props, dict) and name in props:
        return props[name]
    for pattern, sub in (schema.get("patternProperties") or {}).items():
        try:
            if re.search(pattern, name):
                return sub
        except (re.error, TypeError, RecursionError):
            continue
    extra = schema.get("additionalProperties", True)
    return extra


def _is_array(schema: Any, root: Any) -> bool:
    schema = _resolve(schema, root)
    return isinstance(schema, dict) and (schema.get("type") == "array" or "items" in schema or "prefixItems" in schema)


def _is_object(schema: Any, root: Any) -> bool:
    schema = _resolve(schema, root)
    return isinstance(schema, dict) and (schema.get("type") == "object" or "properties" in schema)


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def json_or_text(raw: str) -> str:
    """JSON text for a value written as JSON: ``raw`` itself (stripped) if
    it is one JSON value, else ``raw`` as a JSON string."""
    stripped = raw.strip(_WS)
    return stripped if jsonscan.is_json(stripped) else _string(raw)


def _raw(style: XmlStyle, raw: str) -> str:
    if style.name == "qwen_xml":
        # Qwen3-Coder puts the value on its own line; the newlines are layout.
        if raw.startswith("\n"):
            raw = raw[1:]
        if raw.endswith("\n"):
            raw = raw[:-1]
    return raw


def _cohere_items(text: str, schema: Any, root: Any, level: int) -> str:
    s = _resolve(schema, root)
    item_schema = s.get("items", True) if isinstance(s, dict) else True
    items = []
    pos, depth, start, kind = 0, 0, 0, ""
    opener = re.compile(r'<cofl:value type="(raw|json|dict|list)">')
    while pos < len(text):
        if depth == 0:
            m = opener.match(text, pos)
            if m is None:
                pos += 1
                continue
            kind, start, depth, pos = m.group(1), m.end(), 1, m.end()
            continue
        if text.startswith(_COHERE_CLOSE, pos):
            depth -= 1
            if depth == 0:
                items.append(_typed(STYLES["cohere_xml"], kind, text[start:pos], item_schema, root, level + 1))
            pos += len(_COHERE_CLOSE)
            continue
        if text.startswith(_COHERE_OPEN, pos):
            depth += 1
        pos += 1
    return "[" + ", ".join(items) + "]"


def _m3_items(text: str, schema: Any, root: Any, level: int) -> str:
    style = STYLES["minimax_m3_xml"]
    s = _resolve(schema, root)
    item_schema = s.get("items", True) if isinstance(s, dict) else True
    return "[" + ", ".join(_typed(style, None, raw, item_schema, root, level + 1) for _, _, raw in split(style, text)[0]) + "]"


def _typed(style: XmlStyle, kind: Optional[str], raw: str, schema: Any, root: Any, level: int = 0) -> str:
    """The JSON text of one parameter's value; ``level`` counts the
    element levels above it (bounded by the scanner's nesting limit; past
    it the value is kept as text)."""
    if style.name in ("deepseek_xml", "deepseek_v4_1_xml"):
        return _string(raw) if kind == "true" else json_or_text(raw)
    if style.name == "kimi_k3_xml":
        return _string(raw) if kind == "string" else json_or_text(raw)
    if style.name == "cohere_xml":
        if kind == "raw" or level > MAX_XML_NESTING:
            return _string(raw)
        if kind == "dict":
            return _object_text(style, raw, schema, root, level + 1)
        if kind == "list":
            return _cohere_items(raw, schema, root, level)
        return json_or_text(raw)
    if style.name == "minimax_m3_xml":
        if only_strings(schema, root) or level > MAX_XML_NESTING:
            return _string(raw)
        inner = raw.strip(_WS)
        # Nested elements, or none at all: an empty array or object.
        if inner.startswith(M3) or (not inner and (_is_array(schema, root) or _is_object(schema, root))):
            if _is_array(schema, root):
                return _m3_items(raw, schema, root, level)
            return _object_text(style, raw, schema, root, level + 1)
        return json_or_text(raw)
    return _string(_raw(style, raw)) if only_strings(schema, root) else json_or_text(raw)


def member(style: XmlStyle, written_name: str, kind: Optional[str], raw: str, schema: Any, root: Any, level: int = 0) -> str:
    """One ``"name": value`` member of the arguments object, as JSON text."""
    name = param_name(style, written_name)
    return f"{_string(name)}: {_typed(style, kind, raw, property_schema(schema, name, root), root, level)}"


def _object_text(style: XmlStyle, text: str, schema: Any, root: Any, level: int) -> str:
    params, _ = split(style, text)
    return "{" + ", ".join(member(style, n, k, raw, schema, root, level) for n, k, raw in params) + "}"


def arguments_json(style_name: str, text: str, schema: Any, closed: bool) -> str:
    """The arguments of ``text`` as JSON object text: all of it once the call
    is ``closed``, else a prefix of it holding the complete parameters (so
    successive results only ever grow)."""
    style = STYLES[style_name]
    params, _ = split(style, text)
    members = [member(style, n, k, raw, schema, schema) for n, k, raw in params]
    return "{" + ", ".join(members) + ("}" if closed else "")
