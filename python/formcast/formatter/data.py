"""Text-to-JSON examples in the JSONL form of ``shared/data/slot/``.

One JSON object per line::

    {"id": "e2e-0", "dataset": "e2e", "input_text": "...",
     "json_schema": {...}, "gold_json": {...}, "meta": {...}}

``id``, ``dataset`` and ``meta`` are optional on input (an id defaults to
``<file stem>-<line>``, the dataset to the file stem); ``gold`` is accepted
as a synonym of ``gold_json`` (the synthesis prompt's name for it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from .._depth import NestingError, loads

__all__ = ["Example", "DatasetError", "load_jsonl", "iter_jsonl", "write_jsonl", "dataset_name"]


class DatasetError(ValueError):
    """A malformed dataset file; the message names the file and line."""


@dataclass
class Example:
    """One (input text, JSON Schema, gold JSON) triple."""

    id: str
    input_text: str
    json_schema: dict[str, Any]
    gold_json: Any
    dataset: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSONL record (key order as in ``shared/data/slot``)."""
        out: dict[str, Any] = {
            "id": self.id,
            "dataset": self.dataset,
            "input_text": self.input_text,
            "json_schema": self.json_schema,
            "gold_json": self.gold_json,
        }
        if self.meta:
            out["meta"] = self.meta
        return out


def dataset_name(path: str | Path) -> str:
    """The dataset name of a file: its stem without a ``-dev``/``-test``/``-train`` suffix."""
    stem = Path(path).name
    for ext in (".jsonl", ".json"):
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
    for suffix in ("-dev", "-test", "-train", "-val", "_dev", "_test", "_train", "_val"):
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem


def _example_from(record: Any, where: str, default_id: str, default_dataset: str) -> Example:
    if not isinstance(record, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(record).__name__}")
    missing = [k for k in ("input_text", "json_schema") if k not in record]
    if "gold_json" not in record and "gold" not in record:
        missing.append("gold_json")
    if missing:
        raise DatasetError(f"{where}: missing field(s) {', '.join(missing)}")
    text, schema = record["input_text"], record["json_schema"]
    if not isinstance(text, str):
        raise DatasetError(f"{where}: input_text must be a string, got {type(text).__name__}")
    if isinstance(schema, str):
        try:
            schema = loads(schema)
        except NestingError as exc:
            raise DatasetError(f"{where}: json_schema: {exc}") from None
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}: json_schema is a string that is not JSON: {exc}") from None
    if not isinstance(schema, dict):
        raise DatasetError(f"{where}: json_schema must be an object, got {type(schema).__name__}")
    meta = record.get("meta") or {}
    if not isinstance(meta, dict):
        raise DatasetError(f"{where}: meta must be an object")
    return Example(
        id=str(record.get("id", default_id)),
        input_text=text,
        json_schema=schema,
        gold_json=record["gold_json"] if "gold_json" in record else record["gold"],
        dataset=str(record.get("dataset") or default_dataset),
        meta=meta,
    )


def iter_jsonl(path: str | Path) -> Iterator[Example]:
    """Examples of a JSONL file, one per non-blank line.

    Raises:
        DatasetError: a line is not JSON or lacks a field (``FILE:LINE: ...``).
        FileNotFoundError: no such file.
    """
    path = Path(path)
    name = dataset_name(path)
    ids: set[str] = set()
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = loads(line)
            except NestingError as exc:
                raise DatasetError(f"{where}: {exc}") from None
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{where}: not valid JSON: {exc.msg} (column {exc.colno})") from None
            ex = _example_from(record, where, f"{name}-{lineno}", name)
            if ex.id in ids:
                raise DatasetError(f"{where}: duplicate id {ex.id!r}")
            ids.add(ex.id)
            yield ex


def load_jsonl(path: str | Path, *, limit: int | None = None) -> list[Example]:
    """All examples of a JSONL file (the first ``limit`` if given)."""
    out = []
    for ex in iter_jsonl(path):
        if limit is not None and len(out) >= limit:
            break
        out.append(ex)
    return out


def write_jsonl(examples: Iterable[Example | dict[str, Any]], path: str | Path) -> int:
    """Write examples (or plain records) as JSONL; returns the number written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for ex in examples:
            record = ex.to_json() if isinstance(ex, Example) else ex
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n
