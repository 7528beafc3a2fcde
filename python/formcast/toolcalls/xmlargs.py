"""XML parameter styles: recognizing a parameter list as it streams, and
turning it back into a JSON object typed by the parameters' schema.

The wire forms are those of ``Grammar.from_json_schema(style=...)``: a
parameter whose schema only admits strings is raw text, any other value is
JSON text; styles with a type attribute (deepseek, kimi_k3, cohere) say which
one was written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional
from xml.sax.saxutils import unescape

M3 = "]<]minimax[>["


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


def _style(name: str, prefix: str, pattern: str, close: Callable[[str], str], nested: bool = False) -> XmlStyle:
    return XmlStyle(name, prefix, re.compile(pattern, re.S), close, nested)


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
        ),
        _style(
            "cohere_xml",
            '<cofl:value name="',
            r'<cofl:value name="(?P<name>[^"]*)" type="(?P<kind>raw|json|dict|list)">',
            lambda n: "</cofl:value>",
            nested=True,
        ),
        _style("minimax_m3_xml", M3 + "<", re.escape(M3) + r"<(?P<name>[^<>/]+)>", lambda n: f"{M3}</{n}>", nested=True),
    )
}

_WS = " \t\r\n"
_MAX_OPEN = 1024  # an opening tag longer than this is not one

# Scanner state: (phase, start, close, depth, mark) — phase "gap" (between
# parameters), "open" (inside an opening tag that began at `start`) or
# "value" (value began at `start`; `close` ends it at nesting `depth`;
# `mark` is where the last minimax namespace marker began).
ScanState = tuple[str, int, str, int, int]
GAP: ScanState = ("gap", 0, "", 0, -1)


def step(style: XmlStyle, s: ScanState, text: str, pos: int) -> Optional[ScanState]:
    """The state after ``text[pos]`` (``text`` holds everything read so far)."""
    phase, start, close, depth, mark = s
    ch = text[pos]
    if phase == "gap":
        if ch in _WS:
            return s
        return ("open", pos, "", 0, -1) if ch == style.open_prefix[0] else None
    if phase == "open":
        n = pos + 1 - start
        if n <= len(style.open_prefix):
            return s if ch == style.open_prefix[n - 1] else None
        if n > _MAX_OPEN:
            return None
        if ch == ">":
            m = style.open_re.fullmatch(text, start, pos + 1)
            if m is not None:
                return ("value", pos + 1, style.close(m.group("name")), 0, -1)
        return s
    # value
    if text.endswith(close, pos + 1 - len(close), pos + 1) and pos + 1 - len(close) >= start and depth == 0:
        return GAP
    if not style.nested:
        return s
    if style.name == "cohere_xml":
        if text.endswith("</cofl:value>", 0, pos + 1) and pos + 1 - 13 >= start:
            return (phase, start, close, depth - 1, mark)
        if text.endswith("<cofl:value ", 0, pos + 1) and pos + 1 - 12 >= start:
            return (phase, start, close, depth + 1, mark)
        return s
    # minimax_m3: elements are `marker<name>` / `marker</name>`
    if text.endswith(M3, 0, pos + 1) and pos + 1 - len(M3) >= start:
        return (phase, start, close, depth, pos + 1)
    if ch == ">" and mark >= 0:
        element = text[mark:pos + 1]
        return (phase, start, close, depth - 1 if element.startswith("</") else depth + 1, -1)
    return s


def can_end(s: ScanState) -> bool:
    return s[0] == "gap"


# ------------------------------------------------------------ conversion --
def split(style: XmlStyle, text: str) -> tuple[list[tuple[str, Optional[str], str]], bool]:
    """The complete parameters ``(name, kind, raw value)`` of ``text``, and
    whether ``text`` ends between parameters."""
    params: list[tuple[str, Optional[str], str]] = []
    s: Optional[ScanState] = GAP
    open_start = 0
    for pos in range(len(text)):
        prev = s
        s = step(style, s, text, pos)  # type: ignore[arg-type]
        if s is None:
            return params, False
        if prev[0] == "gap" and s[0] == "open":  # type: ignore[index]
            open_start = pos
        if prev[0] == "value" and s[0] == "gap":  # type: ignore[index]
            m = style.open_re.match(text, open_start)
            assert m is not None
            value = text[prev[1]:pos + 1 - len(prev[2])]  # type: ignore[index]
            params.append((m.group("name"), m.groupdict().get("kind"), value))
    return params, s is not None and can_end(s)


def _resolve(schema: Any, root: Any) -> Any:
    for _ in range(32):  # local $ref chains only
        if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str) or not schema["$ref"].startswith("#"):
            return schema
        node: Any = root
        for part in schema["$ref"][1:].split("/")[1:] if schema["$ref"] != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, dict) else None
        schema = node if node is not None else True
    return schema


def only_strings(schema: Any, root: Any) -> bool:
    """The schema admits strings and nothing else (so the value is raw text)."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return False
    for key in ("enum",):
        if isinstance(schema.get(key), list) and schema[key]:
            return all(isinstance(v, str) for v in schema[key])
    if "const" in schema:
        return isinstance(schema["const"], str)
    t = schema.get("type")
    if t == "string" or t == ["string"]:
        return True
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return all(only_strings(s, root) for s in schema[key])
    if isinstance(schema.get("allOf"), list):
        return any(only_strings(s, root) for s in schema["allOf"])
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
        except re.error:
            continue
    extra = schema.get("additionalProperties", True)
    return extra


def _is_array(schema: Any, root: Any) -> bool:
    schema = _resolve(schema, root)
    return isinstance(schema, dict) and (schema.get("type") == "array" or "items" in schema or "prefixItems" in schema)


def _is_object(schema: Any, root: Any) -> bool:
    schema = _resolve(schema, root)
    return isinstance(schema, dict) and (schema.get("type") == "object" or "properties" in schema)


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def json_or_text(raw: str) -> Any:
    """A JSON value if ``raw`` is one, else the text itself."""
    try:
        return json.loads(raw.strip(), parse_constant=_reject_constant)
    except ValueError:
        return raw


def _raw(style: XmlStyle, raw: str) -> str:
    if style.name == "qwen_xml":
        # Qwen3-Coder puts the value on its own line; the newlines are layout.
        if raw.startswith("\n"):
            raw = raw[1:]
        if raw.endswith("\n"):
            raw = raw[:-1]
    return raw


def _cohere_items(text: str, schema: Any, root: Any) -> list[Any]:
    items = []
    item_schema = _resolve(schema, root).get("items", True) if isinstance(_resolve(schema, root), dict) else True
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
        if text.startswith("</cofl:value>", pos):
            depth -= 1
            if depth == 0:
                items.append(_typed(STYLES["cohere_xml"], kind, text[start:pos], item_schema, root))
            pos += 13
            continue
        if text.startswith("<cofl:value ", pos):
            depth += 1
        pos += 1
    return items


def _m3_items(text: str, schema: Any, root: Any) -> list[Any]:
    style = STYLES["minimax_m3_xml"]
    s = _resolve(schema, root)
    item_schema = s.get("items", True) if isinstance(s, dict) else True
    return [_typed(style, None, raw, item_schema, root) for _, _, raw in split(style, text)[0]]


def _typed(style: XmlStyle, kind: Optional[str], raw: str, schema: Any, root: Any) -> Any:
    """The JSON value of one parameter."""
    if style.name in ("deepseek_xml", "deepseek_v4_1_xml"):
        return raw if kind == "true" else json_or_text(raw)
    if style.name == "kimi_k3_xml":
        return raw if kind == "string" else json_or_text(raw)
    if style.name == "cohere_xml":
        if kind == "raw":
            return raw
        if kind == "dict":
            return to_object(style, raw, schema, root)
        if kind == "list":
            return _cohere_items(raw, schema, root)
        return json_or_text(raw)
    if style.name == "minimax_m3_xml":
        if only_strings(schema, root):
            return raw
        inner = raw.strip(_WS)
        # Nested elements, or none at all: an empty array or object.
        if inner.startswith(M3) or (not inner and (_is_array(schema, root) or _is_object(schema, root))):
            if _is_array(schema, root):
                return _m3_items(raw, schema, root)
            return to_object(style, raw, schema, root)
        return json_or_text(raw)
    return _raw(style, raw) if only_strings(schema, root) else json_or_text(raw)


def to_object(style: XmlStyle, text: str, schema: Any, root: Any) -> dict[str, Any]:
    params, _ = split(style, text)
    out: dict[str, Any] = {}
    for name, kind, raw in params:
        if style.name == "cohere_xml":
            name = unescape(name, {"&quot;": '"'})
        out[name] = _typed(style, kind, raw, property_schema(schema, name, root), root)
    return out


def arguments_json(style_name: str, text: str, schema: Any, closed: bool) -> str:
    """The arguments of ``text`` as JSON object text: all of it once the call
    is ``closed``, else a prefix of it holding the complete parameters (so
    successive results only ever grow)."""
    style = STYLES[style_name]
    params, _ = split(style, text)
    members = []
    for name, kind, raw in params:
        if style.name == "cohere_xml":
            name = unescape(name, {"&quot;": '"'})
        value = _typed(style, kind, raw, property_schema(schema, name, schema), schema)
        members.append(f"{json.dumps(name, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False)}")
    return "{" + ", ".join(members) + ("}" if closed else "")
