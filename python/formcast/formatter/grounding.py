"""Grounded formatting: string values constrained to text that occurs in the input.

A small formatter's worst answers are values it invents: a type name copied
from the schema, a date out of nowhere, a word repeated until the budget
runs out. In grounded mode every string value must be a *substring of the
input text*, so the model can only choose which span goes under which key.

:func:`grounded_tag` turns a JSON Schema and an input text into a structural
tag (``{"type": "structural_tag", "format": ...}``, compiled by formcast like
any other) that writes the object the way ``json.dumps(indent=2)`` does:

* objects whose keys are all required and closed (``additionalProperties:
  false``) become their keys in ``properties`` order, as constant text;
* string values become a ``grammar`` format: a JSON string whose content is
  a non-empty substring of the input (:func:`substring_gbnf`);
* arrays of such strings become a JSON array of substrings;
* everything else -- numbers, booleans, ``enum``/``const``, strings with a
  ``format``, ``pattern`` or length bounds, ``anyOf``, optional keys, and
  every field named in ``generated`` or marked ``"x-grounded": false`` --
  is generated under its own schema (a ``json_schema`` format) and listed in
  :attr:`GroundedPlan.generated`.

The substring language is the input's *suffix automaton* (Blumer et al.,
1985): the smallest automaton accepting every substring of a text, with at
most ``2n - 1`` states and ``3n - 4`` transitions for ``n`` characters, built
in linear time. Each state becomes one GBNF rule, so the grammar grows
linearly with the input. It is written here (not taken from a library)
because it *is* the product: the engine needs it as grammar rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
import re
from typing import Any, Hashable, Mapping, Sequence

from .._refs import follow_refs

__all__ = ["GroundedPlan", "grounded_tag", "substring_gbnf", "suffix_automaton", "words", "MAX_INPUT_CHARS"]

#: Longest input text grounded mode takes (its grammar has ~3 rules per character).
MAX_INPUT_CHARS = 20_000
_MAX_DEPTH = 32


def suffix_automaton(symbols: Sequence[Hashable]) -> list[dict[Any, int]]:
    """Transitions of the suffix automaton of a sequence (a string's
    characters, or words): ``result[state][symbol]`` is the next state; state
    0 is the start and every state accepts (each path from the start spells a
    contiguous subsequence, and every one has exactly one path)."""
    nxt: list[dict[str, int]] = [{}]
    link = [-1]
    length = [0]
    last = 0
    for c in symbols:
        cur = len(nxt)
        nxt.append({})
        length.append(length[last] + 1)
        link.append(0)
        p = last
        while p != -1 and c not in nxt[p]:
            nxt[p][c] = cur
            p = link[p]
        if p != -1:
            q = nxt[p][c]
            if length[p] + 1 == length[q]:
                link[cur] = q
            else:
                clone = len(nxt)
                nxt.append(dict(nxt[q]))
                length.append(length[p] + 1)
                link.append(link[q])
                while p != -1 and nxt[p].get(c) == q:
                    nxt[p][c] = clone
                    p = link[p]
                link[q] = link[cur] = clone
        last = cur
    return nxt


def _json_char(c: str) -> str:
    # How json.dumps(ensure_ascii=False) writes c inside a string.
    return json.dumps(c, ensure_ascii=False)[1:-1]


def _gbnf_literal(s: str) -> str:
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02X}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


# A word (letters and digits) or one other visible character, with the
# whitespace before it.
_UNIT = re.compile(r"(\s*)(\w+|[^\w\s])")


def words(text: str) -> list[tuple[str, str]]:
    """``text`` as (whitespace before, word) units: a word is a run of letters
    and digits or one other visible character; trailing whitespace is dropped."""
    return [(m.group(1), m.group(2)) for m in _UNIT.finditer(text)]


def substring_gbnf(text: str, *, allow_empty: bool = False, array: bool = False) -> str:
    """GBNF (start rule ``root``) for a JSON string literal whose content is a
    span of whole words of ``text`` -- it starts at the start of a word and
    ends at the end of one (``"Blue Spice"`` but not ``"lue Sp"``), with the
    text's own spacing between them -- and is non-empty unless
    ``allow_empty``; with ``array``, a JSON array of such strings.

    The automaton is the suffix automaton of the text's word sequence
    (:func:`words`), so its size is linear in the number of words.

    Raises:
        ValueError: ``text`` is longer than :data:`MAX_INPUT_CHARS`.
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ValueError(f"grounded mode takes input texts of at most {MAX_INPUT_CHARS} characters, not {len(text)}")
    sam = suffix_automaton(words(text))

    def lit(s: str) -> str:
        return _gbnf_literal("".join(_json_char(c) for c in s))

    lines = []
    if array:
        lines.append('root ::= "[" ( ws str ( "," ws str )* )? ws "]"')
        lines.append("ws ::= [ \\n]{0,16}")
        lines.append('str ::= "\\"" ' + ("s0" if allow_empty else "f0") + ' "\\""')
    else:
        lines.append('root ::= "\\"" ' + ("s0" if allow_empty else "f0") + ' "\\""')
    # The first word of a value without the whitespace before it; distinct
    # units with the same word may lead to different states (an ambiguous
    # alternation, which the parser resolves by what follows).
    first = sorted({f"{lit(w)} s{t}" for (_, w), t in sam[0].items()})
    if not allow_empty:
        lines.append("f0 ::= " + (" | ".join(first) if first else '""'))
    else:
        lines.append("s0 ::= " + (f"( {' | '.join(first)} )?" if first else '""'))
    for state, trans in enumerate(sam):
        if state == 0 and allow_empty:
            continue
        alts = [f"{lit(ws + w)} s{t}" for (ws, w), t in sorted(trans.items())]
        lines.append(f"s{state} ::= " + (f"( {' | '.join(alts)} )?" if alts else '""'))
    return "\n".join(lines) + "\n"


@dataclass
class GroundedPlan:
    """What :func:`grounded_tag` built: the structural tag and which fields
    are grounded or generated (JSON-pointer-like paths, ``/properties/x``
    written as ``x`` joined by ``.``; array items as ``[]``)."""

    tag: dict[str, Any]
    grounded: list[str] = field(default_factory=list)
    generated: list[str] = field(default_factory=list)


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    # Local references, at most _MAX_DEPTH in a chain; where one cannot be
    # followed, the schema holding it is returned as it is.
    return follow_refs(schema, root, max_hops=_MAX_DEPTH)


_STRING_LIMITS = ("enum", "const", "format", "pattern", "minLength", "maxLength", "anyOf", "oneOf", "allOf", "not")


def _plain_string(schema: Any) -> bool:
    return (
        isinstance(schema, Mapping)
        and schema.get("type") == "string"
        and schema.get("x-grounded", True) is not False
        and not any(k in schema for k in _STRING_LIMITS)
    )


def _closed_object(schema: Any) -> bool:
    if not isinstance(schema, Mapping) or schema.get("x-grounded", True) is False:
        return False
    props = schema.get("properties")
    if schema.get("type", "object") != "object" or not isinstance(props, Mapping) or not props:
        return False
    required = schema.get("required", [])
    return (
        schema.get("additionalProperties") is False
        and isinstance(required, list)
        and set(required) == set(props)
        and not any(k in schema for k in ("patternProperties", "anyOf", "oneOf", "allOf", "not", "if", "dependentRequired"))
    )


def grounded_tag(
    schema: Mapping[str, Any],
    input_text: str,
    *,
    generated: Sequence[str] = (),
    allow_empty: bool = False,
) -> GroundedPlan:
    """A structural tag for answers to ``input_text`` under ``schema`` whose
    string values are substrings of ``input_text`` (see the module docs).

    Args:
        schema: the answer's JSON Schema.
        input_text: the text the values must come from.
        generated: field paths to generate instead (``"category"``,
            ``"properties.birthDate"``; array items as ``"starring[]"``).
        allow_empty: let a grounded string be ``""``.

    Raises:
        ValueError: ``input_text`` is longer than :data:`MAX_INPUT_CHARS`.
    """
    root = schema
    wanted = set(generated)
    plan = GroundedPlan(tag={})
    elements: list[dict[str, Any]] = []
    grammars: dict[tuple[bool], str] = {}

    def const(text: str) -> None:
        if elements and elements[-1]["type"] == "const_string":
            elements[-1]["value"] += text
        else:
            elements.append({"type": "const_string", "value": text})

    def substring(array: bool) -> dict[str, Any]:
        key = (array,)
        if key not in grammars:
            grammars[key] = substring_gbnf(input_text, allow_empty=allow_empty, array=array)
        return {"type": "grammar", "grammar": grammars[key]}

    def generate(sub: Any, path: str) -> None:
        plan.generated.append(path or "(root)")
        subschema = dict(sub) if isinstance(sub, Mapping) else sub
        if isinstance(subschema, dict) and isinstance(root, Mapping):
            for defs in ("$defs", "definitions"):
                if defs in root and defs not in subschema:
                    subschema[defs] = root[defs]
        elements.append({"type": "json_schema", "json_schema": subschema})

    def value(sub: Any, path: str, indent: int) -> None:
        sub = _resolve(sub, root)
        if path in wanted or indent > _MAX_DEPTH:
            generate(sub, path)
        elif _plain_string(sub):
            plan.grounded.append(path or "(root)")
            elements.append(substring(False))
        elif (
            isinstance(sub, Mapping)
            and sub.get("type") == "array"
            and set(sub) <= {"type", "items", "description", "title"}
            and _plain_string(_resolve(sub.get("items"), root))
            and f"{path}[]" not in wanted
        ):
            plan.grounded.append(f"{path}[]")
            elements.append(substring(True))
        elif _closed_object(sub):
            props = sub["properties"]
            pad = "  " * (indent + 1)
            const("{\n")
            for i, (key, child) in enumerate(props.items()):
                const(f"{pad}{json.dumps(key, ensure_ascii=False)}: ")
                value(child, f"{path}.{key}" if path else key, indent + 1)
                const(",\n" if i < len(props) - 1 else "\n")
            const("  " * indent + "}")
        else:
            generate(sub, path)

    value(schema, "", 0)
    fmt: dict[str, Any] = elements[0] if len(elements) == 1 else {"type": "sequence", "elements": elements}
    plan.tag = {"type": "structural_tag", "format": fmt}
    return plan
