"""Reading untrusted JSON: the request body and JSON text carried inside it.

Everything here is bounded before Python recurses into it: a body larger
than the size limit is a 413, nesting deeper than :data:`MAX_JSON_DEPTH` is
found by a linear pre-scan of the bytes (so ``json.loads`` never meets a
100,000-deep array), invalid UTF-8 and lone UTF-16 surrogates (``"\\ud800"``,
which ``json.loads`` accepts but no UTF-8 encoder does) are 400s naming
where they are, and the non-JSON constants ``NaN`` / ``Infinity`` and numbers
that overflow a double are refused instead of flowing on as ``nan`` / ``inf``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any, Iterable, Optional

import numpy as np

from .errors import APIError

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_JSON_DEPTH",
    "parse_body",
    "loads_bounded",
    "value_depth",
    "check_value_depth",
    "lone_surrogate_path",
    "format_path",
]

#: Default request body limit (``ServerConfig.max_body_bytes``).
MAX_BODY_BYTES = 8 * 1024 * 1024
#: Deepest nesting of arrays/objects accepted anywhere in a request. The
#: Rust JSON front-end refuses deeper input anyway (formcast-jsonschema's
#: ``MAX_JSON_DEPTH``); refusing here keeps Python's recursion out of it.
MAX_JSON_DEPTH = 512

_OPEN = (0x5B, 0x7B)  # [ {
_CLOSE = (0x5D, 0x7D)  # ] }
_QUOTE, _BACKSLASH, _COMMA = 0x22, 0x5C, 0x2C
_CHUNK = 1 << 20  # bytes per vectorized pass: bounds the scan's temporary memory
# A \uD800-\uDFFF escape: the only way a lone surrogate gets into parsed JSON
# (raw surrogate bytes are invalid UTF-8 and refused before parsing).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def format_path(parts: Iterable[Any]) -> str:
    """``("messages", 0, "role")`` → ``messages[0].role``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out


# ------------------------------------------------------------- depth scan --
def _deep_offset(raw: bytes, limit: int) -> Optional[tuple[int, int]]:
    """Where nesting outside strings first exceeds ``limit``: ``(offset,
    start of the top-level member it is in)``, or None.

    Linear and vectorized (numpy, in chunks), so a hostile body costs
    milliseconds. Quotes preceded by an odd run of backslashes are escaped;
    brackets between an opening and a closing quote are string content.
    The member start is the last top-level ``{`` or ``,`` before the offset
    (-1 when the body is not an object)."""
    if raw.count(b"[") + raw.count(b"{") <= limit:  # fast path: cannot be deeper
        return None
    depth, inside, bs_run, member = 0, 0, 0, -1
    for base in range(0, len(raw), _CHUNK):
        a = np.frombuffer(raw, dtype=np.uint8, count=min(_CHUNK, len(raw) - base), offset=base)
        n = a.size
        idx = np.arange(n, dtype=np.int64)
        bs = a == _BACKSLASH
        # Index of the last non-backslash byte at or before each position; a run
        # carried over from the previous chunk sits at virtual index -1 - bs_run.
        last = np.maximum.accumulate(np.where(bs, -1 - bs_run, idx))
        q = np.flatnonzero(a == _QUOTE)
        run_before = np.where(q > 0, (q - 1) - last[np.maximum(q - 1, 0)], bs_run)
        real = q[run_before % 2 == 0]
        bs_run = int((n - 1) - last[n - 1])
        mark = np.zeros(n, dtype=np.int32)
        mark[real] = 1
        outside = ((np.cumsum(mark) + inside) & 1) == 0  # a closing quote itself counts as outside
        inside = (inside + real.size) & 1
        step = (np.isin(a, _OPEN) & outside).astype(np.int32) - (np.isin(a, _CLOSE) & outside).astype(np.int32)
        level = np.cumsum(step) + depth  # depth after each byte
        over = np.flatnonzero(level > limit)
        stop = int(over[0]) if over.size else n
        tops = np.flatnonzero(((a[:stop] == _COMMA) | (a[:stop] == 0x7B)) & outside[:stop] & (level[:stop] == 1))
        if tops.size:
            member = base + int(tops[-1])
        if over.size:
            return base + stop, member
        depth = int(level[-1])
    return None


def _member_name(text_after: bytes) -> Optional[str]:
    """The key that starts ``text_after`` (JSON whitespace, then a string)."""
    head = text_after[:4096].decode("utf-8", "ignore").lstrip(" \t\r\n")
    if not head.startswith('"'):
        return None
    try:
        key, _ = json.decoder.scanstring(head, 1)  # type: ignore[attr-defined]
    except (ValueError, IndexError):
        return None
    return _printable(key)


def _printable(s: str, limit: int = 80) -> str:
    """``s`` safe to put in an error message (no lone surrogates, bounded)."""
    s = s.encode("utf-8", "backslashreplace").decode("utf-8")
    return s if len(s) <= limit else s[: limit - 1] + "…"


# ----------------------------------------------------------------- parsing --
def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"the number {text[:40]} is out of range")
    return v


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)


def parse_body(raw: bytes, *, max_depth: int = MAX_JSON_DEPTH) -> dict:
    """The request body as a JSON object. Every failure is a 400 that says
    what is wrong and, where it can, which field."""
    if not raw.strip():
        raise APIError(400, "the request body is empty; expected a JSON object", code="invalid_json")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise APIError(
            400, f"the request body is not valid UTF-8: byte 0x{raw[e.start]:02x} at offset {e.start}", code="invalid_encoding"
        ) from None
    _check_depth_bytes(raw, max_depth, what="the request body")
    try:
        body = _loads(text)
    except RecursionError:  # pragma: no cover - the pre-scan bounds the depth
        raise APIError(400, f"the request body is nested deeper than {max_depth} levels", code="nesting_too_deep") from None
    except ValueError as e:
        raise APIError(400, f"the request body is not valid JSON: {_json_error(e)}", code="invalid_json") from None
    if not isinstance(body, dict):
        raise APIError(400, f"the request body must be a JSON object, not {_json_type(body)}", code="invalid_json")
    if _SURROGATE_ESCAPE.search(text):
        _raise_on_surrogate(body, ())
    return body


def loads_bounded(text: str, *, param: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """JSON text found inside a request (a schema or tool-call arguments
    given as a string), with the body's depth, constant and surrogate rules;
    errors are 400s naming ``param``."""
    raw = text.encode("utf-8", "surrogatepass")
    _check_depth_bytes(raw, max_depth, what=f"'{param}'", param=param)
    try:
        value = _loads(text)
    except RecursionError:  # pragma: no cover - the pre-scan bounds the depth
        raise APIError(400, f"'{param}' is nested deeper than {max_depth} levels", param=param, code="nesting_too_deep") from None
    except ValueError as e:
        raise APIError(400, f"'{param}' is not valid JSON: {_json_error(e)}", param=param) from None
    _raise_on_surrogate(value, (param,))
    return value


def _json_error(e: ValueError) -> str:
    # int() refuses more than sys.get_int_max_str_digits() digits; say so plainly.
    if "digits" in str(e) and "limit" in str(e):
        return f"a number has more than {sys.get_int_max_str_digits()} digits"
    return str(e)


def _check_depth_bytes(raw: bytes, limit: int, *, what: str, param: Optional[str] = None) -> None:
    hit = _deep_offset(raw, limit)
    if hit is None:
        return
    offset, member = hit
    if param is None and member >= 0:
        param = _member_name(raw[member + 1 : offset])
    where = f" (in '{param}')" if param and not what.startswith("'") else ""
    raise APIError(
        400,
        f"{what} is nested deeper than {limit} levels{where}; arrays and objects may nest at most {limit} levels",
        param=param,
        code="nesting_too_deep",
    )


def _raise_on_surrogate(value: Any, root: tuple) -> None:
    found = lone_surrogate_path(value, root)
    if found is not None:
        path, in_key = found
        where = f"a key of '{path}'" if in_key else f"'{path}'" if path else "the request body"
        raise APIError(
            400,
            f"{where} contains a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not a Unicode "
            "character; text must be valid Unicode",
            param=path or None,
            code="invalid_unicode",
        )


def lone_surrogate_path(value: Any, root: tuple = ()) -> Optional[tuple[str, bool]]:
    """The path of the first string (or key: then the flag is True) holding
    a lone surrogate, walking iteratively; None when there is none."""
    stack: list[tuple[Any, tuple]] = [(value, root)]
    while stack:
        v, path = stack.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v):
                return format_path(path), False
        elif isinstance(v, dict):
            for k, x in v.items():
                if _SURROGATE.search(k):
                    return format_path(path), True
                stack.append((x, path + (_printable(k),)))
        elif isinstance(v, list):
            stack.extend((x, path + (i,)) for i, x in enumerate(v))
    return None


# ------------------------------------------------------ parsed-value depth --
def value_depth(value: Any, stop_above: Optional[int] = None) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0, ``{}`` is 1),
    computed iteratively; stops early once it exceeds ``stop_above``."""
    best = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children: Iterable[Any] = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        best = max(best, d)
        if stop_above is not None and best > stop_above:
            return best
        stack.extend((c, d + 1) for c in children)
    return best


def check_value_depth(value: Any, limit: int, *, param: str, what: str) -> None:
    """A 400 naming ``param`` when ``value`` nests deeper than ``limit``."""
    if value_depth(value, stop_above=limit) > limit:
        raise APIError(
            400,
            f"{what} in '{param}' is nested deeper than {limit} levels, the most this server accepts",
            param=param,
            code="nesting_too_deep",
        )


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    return "an object"
