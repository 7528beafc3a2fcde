"""Converters from the original E2E and WebNLG files to the text-to-JSON JSONL form.

* E2E NLG: the meaning-representation CSV files (``trainset.csv``,
  ``devset.csv``, ``testset_w_refs.csv`` of the original release, or the
  cleaned ``*-fixed.csv`` files), columns ``mr`` and ``ref``.  One example per
  distinct MR (first reference as the input text, all references in
  ``meta.all_refs``); the MR ``name[Blue Spice], eatType[pub], customer
  rating[high]`` becomes the object ``{"name": "Blue Spice", "eatType": "pub",
  "customerRating": "high"}`` with an all-string, all-required, closed schema.
* WebNLG (v3.0 / challenge 2020 RDF XML): one example per ``<entry>``; its
  modified triples become ``{"category", "subject", "properties"}`` as in the
  paper's appendix D.1 — the root is the subject that is no triple's object,
  a property repeated for one subject becomes an array, and an object that is
  itself the subject of other triples becomes a nested
  ``{"subject", "properties"}`` object.  Entity names lose their underscores
  and surrounding quotes.

Both reproduce ``shared/data/slot/{e2e,webnlg}-dev.jsonl`` from their
``meta`` fields (tests/test_formatter_data.py).
"""

from __future__ import annotations

import csv
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Iterable, Sequence

from .data import DatasetError, Example

__all__ = [
    "parse_e2e_mr",
    "e2e_record",
    "e2e_examples",
    "webnlg_entity",
    "webnlg_record",
    "webnlg_examples",
    "ConversionError",
]


class ConversionError(DatasetError):
    """A source record that cannot be converted (the message names file and record)."""


# ---------------------------------------------------------------------------
# E2E

_MR_ITEM = re.compile(r"\s*([^,\[\]]+?)\s*\[([^\]]*)\]\s*(?:,|$)")


def parse_e2e_mr(mr: str) -> dict[str, str]:
    """``"name[Blue Spice], eatType[pub]"`` -> ``{"name": "Blue Spice", "eatType": "pub"}``.

    Raises:
        ValueError: the text is not a sequence of ``key[value]`` items, or a key repeats.
    """
    out: dict[str, str] = {}
    pos = 0
    text = mr.strip()
    while pos < len(text):
        m = _MR_ITEM.match(text, pos)
        if not m:
            raise ValueError(f"not an E2E meaning representation at character {pos}: {text[pos:pos + 40]!r}")
        key, value = m.group(1).strip(), m.group(2).strip()
        if key in out:
            raise ValueError(f"attribute {key!r} repeats in {mr!r}")
        out[key] = value
        pos = m.end()
    if not out:
        raise ValueError("empty meaning representation")
    return out


def _closed_string_schema(keys: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: {"type": "string"} for k in keys},
        "required": list(keys),
        "additionalProperties": False,
    }


def _camel(key: str) -> str:
    words = key.split()
    return words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:]) if words else key


def e2e_record(mr: str, *, camel_case_keys: bool = True) -> tuple[dict[str, Any], dict[str, str]]:
    """The (JSON Schema, gold JSON) pair of one E2E meaning representation.

    With ``camel_case_keys`` (default) multi-word attributes follow the other
    attributes' style: ``customer rating`` -> ``customerRating``.
    """
    parsed = parse_e2e_mr(mr)
    gold = {(_camel(k) if camel_case_keys else k): v for k, v in parsed.items()}
    return _closed_string_schema(list(gold)), gold


def _column(fieldnames: Sequence[str], wanted: Sequence[str], path: Path) -> str:
    lower = {f.strip().lower(): f for f in fieldnames}
    for w in wanted:
        if w in lower:
            return lower[w]
    raise ConversionError(f"{path}: no column named {' or '.join(wanted)} (columns: {', '.join(fieldnames)})")


def e2e_examples(
    path: str | Path,
    *,
    dataset: str = "e2e",
    id_prefix: str | None = None,
    source: str | None = None,
    limit: int | None = None,
    camel_case_keys: bool = True,
) -> list[Example]:
    """Examples from an E2E CSV file (one per distinct meaning representation).

    Raises:
        ConversionError: a missing column or a malformed MR (names the file and line).
    """
    path = Path(path)
    prefix = id_prefix if id_prefix is not None else dataset
    groups: dict[str, list[str]] = {}
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames:
            raise ConversionError(f"{path}: empty file")
        mr_col = _column(reader.fieldnames, ["mr", "meaning_representation"], path)
        ref_col = _column(reader.fieldnames, ["ref", "human_reference", "fixed_ref"], path)
        for row in reader:
            mr = (row.get(mr_col) or "").strip()
            ref = (row.get(ref_col) or "").strip()
            if not mr:
                raise ConversionError(f"{path}:{reader.line_num}: empty MR")
            try:
                parse_e2e_mr(mr)
            except ValueError as exc:
                raise ConversionError(f"{path}:{reader.line_num}: {exc}") from None
            refs = groups.setdefault(mr, [])
            if ref and ref not in refs:
                refs.append(ref)
    out: list[Example] = []
    for i, (mr, refs) in enumerate(groups.items()):
        if limit is not None and len(out) >= limit:
            break
        if not refs:
            continue
        schema, gold = e2e_record(mr, camel_case_keys=camel_case_keys)
        meta: dict[str, Any] = {"mr": mr, "all_refs": refs, "source": source or str(path.name)}
        out.append(Example(f"{prefix}-{i}", refs[0], schema, gold, dataset, meta))
    return out


# ---------------------------------------------------------------------------
# WebNLG


def webnlg_entity(text: str) -> str:
    """A WebNLG entity or literal as text: underscores to spaces, outer quotes removed."""
    s = text.strip()
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        s = s[1:-1]
    return s.replace("_", " ").strip()


def _split_triple(triple: str) -> tuple[str, str, str]:
    parts = [p.strip() for p in triple.split(" | ")]
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"not a 'subject | property | object' triple: {triple!r}")
    return parts[0], parts[1], parts[2]


def webnlg_record(category: str, mtriples: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (JSON Schema, gold JSON) pair of one WebNLG triple set.

    Raises:
        ValueError: a malformed triple, or a triple set without a unique root
            subject (every subject is also some triple's object, or several
            subjects are no triple's object and not connected).
    """
    triples = [_split_triple(t) for t in mtriples]
    if not triples:
        raise ValueError("empty triple set")
    if len(triples) > _MAX_TRIPLES:
        raise ValueError(f"triple set has {len(triples)} triples; at most {_MAX_TRIPLES} are converted")
    by_subject: dict[str, list[tuple[str, str]]] = {}
    for s, p, o in triples:
        by_subject.setdefault(s, []).append((p, o))
    objects = {o for _, _, o in triples}
    roots = [s for s in by_subject if s not in objects]
    if len(roots) != 1:
        raise ValueError(
            f"triple set has {len(roots)} root subjects ({', '.join(roots) or 'a cycle'}); expected one"
        )

    budget = [_MAX_EXPANSION]

    def build(subject: str, seen: frozenset[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        # Recursive along a path of subjects (at most _MAX_TRIPLES long); an
        # object shared by several subjects is expanded at each, so the
        # total is bounded too.
        budget[0] -= 1
        if budget[0] < 0:
            raise ValueError(f"triple set expands to more than {_MAX_EXPANSION} nested objects (objects shared by several subjects)")
        props: dict[str, list[str]] = {}
        for p, o in by_subject[subject]:
            props.setdefault(p, []).append(o)
        gold: dict[str, Any] = {}
        schema_props: dict[str, Any] = {}
        for p, objs in props.items():
            values = []
            schemas = []
            for o in objs:
                if o in by_subject and o not in seen:
                    sub_schema, sub_gold = build(o, seen | {o})
                    values.append({"subject": webnlg_entity(o), "properties": sub_gold})
                    schemas.append(
                        {
                            "type": "object",
                            "properties": {"subject": {"type": "string"}, "properties": sub_schema},
                            "required": ["subject", "properties"],
                            "additionalProperties": False,
                        }
                    )
                else:
                    values.append(webnlg_entity(o))
                    schemas.append({"type": "string"})
            if len(values) == 1:
                gold[p], schema_props[p] = values[0], schemas[0]
            else:
                gold[p] = values
                item_schema = schemas[0] if all(s == schemas[0] for s in schemas) else {"anyOf": _dedupe(schemas)}
                schema_props[p] = {"type": "array", "items": item_schema}
        schema = {
            "type": "object",
            "properties": schema_props,
            "required": list(schema_props),
            "additionalProperties": False,
        }
        return schema, gold

    root = roots[0]
    props_schema, props_gold = build(root, frozenset({root}))
    schema = {
        "type": "object",
        "properties": {"category": {"type": "string"}, "subject": {"type": "string"}, "properties": props_schema},
        "required": ["category", "subject", "properties"],
        "additionalProperties": False,
    }
    gold = {"category": category, "subject": webnlg_entity(root), "properties": props_gold}
    return schema, gold


#: Triples of one WebNLG entry converted (the dataset's entries have at most 7).
_MAX_TRIPLES = 256
#: Nested objects one entry may expand to.
_MAX_EXPANSION = 10_000


def _dedupe(items: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for x in items:
        if x not in out:
            out.append(x)
    return out


def _lex_text(lex: ET.Element) -> str:
    text_child = lex.find("text")
    text = text_child.text if text_child is not None else lex.text
    return " ".join((text or "").split())


def webnlg_examples(
    paths: str | Path | Sequence[str | Path],
    *,
    dataset: str = "webnlg",
    id_prefix: str | None = None,
    lang: str = "en",
    source: str | None = None,
    limit: int | None = None,
    skip_unconvertible: bool = True,
) -> list[Example]:
    """Examples from WebNLG RDF XML files (one per entry with at least one reference).

    Ids are ``<prefix>-<n>`` with ``n`` the entry's ``eid`` number minus one
    (``Id1`` -> ``webnlg-0``), as in ``shared/data/slot``.

    Args:
        skip_unconvertible: drop entries whose triples have no unique root
            subject (otherwise raise :class:`ConversionError`).
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    prefix = id_prefix if id_prefix is not None else dataset
    out: list[Example] = []
    for path in map(Path, paths):
        try:
            tree = ET.parse(path)
        except ET.ParseError as exc:
            raise ConversionError(f"{path}: not well-formed XML: {exc}") from None
        for entry in tree.iter("entry"):
            if limit is not None and len(out) >= limit:
                return out
            eid = entry.get("eid", "")
            where = f"{path}: entry {eid or '?'}"
            mtriples = [" ".join((t.text or "").split()) for t in entry.iter("mtriple")]
            refs = [
                _lex_text(lex)
                for lex in entry.findall("lex")
                if lex.get("lang", lang) == lang and _lex_text(lex)
            ]
            if not refs:
                continue
            try:
                schema, gold = webnlg_record(entry.get("category", ""), mtriples)
            except ValueError as exc:
                if skip_unconvertible:
                    continue
                raise ConversionError(f"{where}: {exc}") from None
            m = re.fullmatch(r"Id(\d+)", eid)
            ident = f"{prefix}-{int(m.group(1)) - 1}" if m else f"{prefix}-{len(out)}"
            meta = {
                "eid": eid,
                "size": int(entry.get("size", len(mtriples))),
                "shape_type": entry.get("shape_type", ""),
                "mtriples": mtriples,
                "all_refs": refs,
                "source": source or path.name,
            }
            out.append(Example(ident, refs[0], schema, gold, dataset, meta))
    return out
