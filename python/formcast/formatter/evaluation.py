"""Evaluation runs: a formatter over datasets, scored and reported like the paper's Table 1.

A run directory holds::

    config.json                  the formatter configuration and metric options
    predictions/<dataset>.jsonl  one raw response per example, appended as they come
    results.json                 per-dataset scores and JSON-complexity measures
    results.md                   Table 1 layout (per dataset and average, both metrics)
    results.png                  bar chart of both metrics

Runs are resumable: predictions already on disk are kept and only the missing
examples are sent to the model, so an interrupted run continues where it
stopped (with the same configuration).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

from .._depth import loads
from ..evaluate import ContentSimilarity, EvalResult, SimilarityOptions, evaluate
from ..evaluate.baselines import BASELINES
from ..evaluate.complexity import MEASURES, mean_profile
from ..evaluate.degenerate import DegeneracySummary, degeneracy, summarize
from .backends import BackendError, Completion, TransientBackendError
from .data import Example, dataset_name, load_jsonl

__all__ = [
    "DatasetReport",
    "RunReport",
    "RunConfigMismatch",
    "run_eval",
    "score_baselines",
    "load_predictions",
    "display_name",
    "DISPLAY_NAMES",
]

DISPLAY_NAMES = {
    "webnlg": "WebNLG",
    "e2e": "E2E NLG",
    "wikibio": "WikiBio",
    "totto": "ToTTo",
    "github": "GitHub Issues",
    "github-issues": "GitHub Issues",
}


def display_name(name: str) -> str:
    """The paper's name for a dataset (``e2e`` -> ``E2E NLG``), else the name itself."""
    return DISPLAY_NAMES.get(name.lower(), name)


class RunConfigMismatch(ValueError):
    """A run directory holds predictions made with another configuration."""


@dataclass
class DatasetReport:
    """One dataset's scores and gold-output complexity."""

    name: str
    path: str
    result: EvalResult
    complexity: dict[str, float]
    errors: int = 0
    #: schema accuracy and content similarity of each trivial answer
    #: (:data:`formcast.evaluate.baselines.BASELINES`), by baseline name
    baselines: dict[str, dict[str, float]] = field(default_factory=dict)
    #: degenerate-output rates of the answers, and of the gold answers (reference)
    degeneracy: DegeneracySummary | None = None
    gold_degeneracy: DegeneracySummary | None = None
    #: tokens generated for the dataset and the wall time spent generating them
    completion_tokens: int = 0
    seconds: float | None = None

    @property
    def tokens_per_second(self) -> float | None:
        """Completion tokens per second of generation (None when not timed)."""
        return self.completion_tokens / self.seconds if self.seconds and self.completion_tokens else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            **self.result.as_dict(),
            "errors": self.errors,
            "complexity": self.complexity,
            "baselines": self.baselines,
            "degeneracy": self.degeneracy.as_dict() if self.degeneracy else None,
            "gold_degeneracy": self.gold_degeneracy.as_dict() if self.gold_degeneracy else None,
            "completion_tokens": self.completion_tokens,
            "seconds": self.seconds,
            "tokens_per_second": self.tokens_per_second,
        }


@dataclass
class RunReport:
    """All datasets of one formatter configuration."""

    label: str
    config: dict[str, Any]
    datasets: list[DatasetReport] = field(default_factory=list)

    @property
    def average(self) -> dict[str, float]:
        """Unweighted mean over datasets (the paper's "Avg" column)."""
        n = len(self.datasets)
        if n == 0:
            return {"schema_accuracy": 0.0, "content_similarity": 0.0}
        return {
            "schema_accuracy": sum(d.result.schema_accuracy for d in self.datasets) / n,
            "content_similarity": sum(d.result.content_similarity for d in self.datasets) / n,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "config": self.config,
            "datasets": [d.as_dict() for d in self.datasets],
            "average": self.average,
        }


def load_predictions(path: Path) -> dict[str, dict[str, Any]]:
    """Predictions saved so far, by example id.

    A last line cut short by an interruption is ignored (and rewritten when
    the run continues); a malformed line elsewhere is an error naming the line.
    """
    out: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return out
    lines = path.read_text(encoding="utf-8").splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = loads(line)  # (NestingError and JSONDecodeError are ValueErrors)
            out[str(record["id"])] = record
        except (ValueError, KeyError, TypeError):
            if lineno == len(lines):
                continue
            raise ValueError(f"{path}:{lineno}: not a prediction record") from None
    return out


def _config_key(config: dict[str, Any]) -> dict[str, Any]:
    # What makes predictions comparable: the model and every generation
    # setting, but not where the endpoint listens (a server restarted on
    # another port serves the same model).
    formatter = {k: v for k, v in config.get("formatter", {}).items() if k != "base_url"}
    return {"formatter": formatter, "limit": config.get("limit")}


def run_eval(
    formatter: Any | None,
    datasets: Sequence[str | Path],
    out_dir: str | Path,
    *,
    label: str | None = None,
    limit: int | None = None,
    options: SimilarityOptions | None = None,
    schema_mode: Literal["keys-and-types", "jsonschema"] = "keys-and-types",
    resume: bool = True,
    progress: bool = True,
    scorer: ContentSimilarity | None = None,
    write_report: bool = True,
    compare: Sequence[str | Path] = (),
) -> RunReport:
    """Run a formatter over datasets, score it, and write the run directory.

    Args:
        formatter: a :class:`~formcast.formatter.Formatter`; ``None`` scores
            the predictions already in ``out_dir`` (all must be there).
        datasets: JSONL files in the ``shared/data/slot`` form.
        out_dir: the run directory (created; reused when resuming).
        label: the row name in the table (default: model and settings).
        limit: use only the first ``limit`` examples of each dataset.
        options: content-similarity options.
        schema_mode: schema-accuracy mode (see :func:`formcast.evaluate.schema_matches`).
        resume: keep predictions already in ``out_dir``; ``False`` starts over.
        progress: tqdm progress bars.
        write_report: write results.json, results.md and results.png.
        compare: earlier runs' ``results.json`` files shown as extra rows.

    Raises:
        RunConfigMismatch: ``out_dir`` has predictions from another configuration.
        TransientBackendError: the endpoint failed; predictions so far are
            saved, so the same call resumes.
    """
    out = Path(out_dir)
    pred_dir = out / "predictions"
    pred_dir.mkdir(parents=True, exist_ok=True)
    options = options or SimilarityOptions()
    scorer = scorer or ContentSimilarity(options=options)
    if scorer.options != options:
        raise ValueError("scorer and options disagree")

    config_file = out / "config.json"
    if formatter is not None:
        config = {"formatter": formatter.describe(), "limit": limit}
        if config_file.exists() and resume:
            old = json.loads(config_file.read_text(encoding="utf-8"))
            if _config_key(old) != _config_key(config) and any(pred_dir.glob("*.jsonl")):
                raise RunConfigMismatch(
                    f"{out} holds predictions from another configuration ({config_file}); "
                    "use another output directory, or --no-resume to start over"
                )
        if not resume:
            for f in pred_dir.glob("*.jsonl"):
                f.unlink()
        config_file.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        if not config_file.exists():
            raise FileNotFoundError(f"{config_file} not found: no predictions to score without a formatter")
        config = json.loads(config_file.read_text(encoding="utf-8"))

    if label is None:
        f = config.get("formatter", {})
        label = f"{f.get('model') or f.get('backend', 'formatter')} + {'constrained' if f.get('constrained') else 'prompting'}"
    report = RunReport(label=label, config={**config, "metric_options": options.__dict__, "schema_mode": schema_mode})

    seen_names: set[str] = set()
    for path in datasets:
        examples = load_jsonl(path, limit=limit)
        name = examples[0].dataset if examples else dataset_name(path)
        if name in seen_names:
            raise ValueError(f"two datasets named {name!r}; give the files distinct names")
        seen_names.add(name)
        pred_file = pred_dir / f"{name}.jsonl"
        saved = load_predictions(pred_file)
        todo = [ex for ex in examples if ex.id not in saved]
        if todo:
            if formatter is None:
                raise FileNotFoundError(f"{pred_file}: {len(todo)} of {len(examples)} predictions missing")
            _predict(formatter, todo, pred_file, saved, display_name(name), progress)
        raws, errors, tokens = [], 0, 0
        for ex in examples:
            record = saved[ex.id]
            raws.append(record.get("raw") or "")
            errors += 1 if record.get("error") else 0
            tokens += int(record.get("completion_tokens") or 0)
        timing_file = pred_file.with_suffix(".timing.json")
        seconds = json.loads(timing_file.read_text(encoding="utf-8")).get("seconds") if timing_file.exists() else None
        result = evaluate(
            raws,
            [ex.gold_json for ex in examples],
            [ex.json_schema for ex in examples],
            scorer=scorer,
            schema_mode=schema_mode,
            progress=progress,
        )
        complexity = mean_profile(ex.gold_json for ex in examples) if examples else {m: 0.0 for m in MEASURES}
        baselines = score_baselines(examples, scorer=scorer, schema_mode=schema_mode)
        found = [degeneracy(r.value, ex.input_text) for ex, r in zip(examples, result.examples) if r.parsed]
        report.datasets.append(
            DatasetReport(
                name,
                str(path),
                result,
                complexity,
                errors,
                baselines=baselines,
                degeneracy=summarize(found),
                gold_degeneracy=summarize(degeneracy(ex.gold_json, ex.input_text) for ex in examples),
                completion_tokens=tokens,
                seconds=seconds,
            )
        )

    if write_report:
        from .report import write_reports

        others = [load_run(p) for p in compare]
        write_reports(report, out, others=others)
    return report


def score_baselines(
    examples: Sequence[Example],
    *,
    scorer: ContentSimilarity,
    schema_mode: Literal["keys-and-types", "jsonschema"] = "keys-and-types",
) -> dict[str, dict[str, float]]:
    """Schema accuracy and content similarity of each trivial answer (one
    that reads nothing from the input, :data:`~formcast.evaluate.baselines.BASELINES`)
    on ``examples``, by baseline name."""
    out: dict[str, dict[str, float]] = {}
    for key, (_, answer) in BASELINES.items():
        raws = [json.dumps(answer(ex.json_schema, ex.input_text), ensure_ascii=False) for ex in examples]
        res = evaluate(raws, [ex.gold_json for ex in examples], [ex.json_schema for ex in examples],
                       scorer=scorer, schema_mode=schema_mode)
        out[key] = {"schema_accuracy": res.schema_accuracy, "content_similarity": res.content_similarity}
    return out


def _predict(
    formatter: Any,
    todo: list[Example],
    pred_file: Path,
    saved: dict[str, dict[str, Any]],
    desc: str,
    progress: bool,
) -> None:
    # Rewrite the file from the records kept (drops a cut-off last line),
    # then append each new prediction as soon as it arrives.
    with pred_file.open("w", encoding="utf-8") as fh:
        for record in saved.values():
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    lock = threading.Lock()
    started = time.monotonic()
    with pred_file.open("a", encoding="utf-8") as fh:

        def on_result(i: int, res: Completion | BackendError) -> None:
            if isinstance(res, TransientBackendError):
                return  # not recorded: retried when the run resumes
            ex = todo[i]
            if isinstance(res, BackendError):
                record = {"id": ex.id, "raw": "", "finish_reason": None, "error": str(res)}
            else:
                record = {"id": ex.id, "raw": res.text, "finish_reason": res.finish_reason, "error": None}
                if "completion_tokens" in res.usage:
                    record["completion_tokens"] = res.usage["completion_tokens"]
            with lock:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                fh.flush()
                saved[ex.id] = record

        results = formatter.generate_batch(
            [ex.input_text for ex in todo],
            [ex.json_schema for ex in todo],
            progress=progress,
            on_result=on_result,
            errors="return",
            desc=desc,
        )
    # Wall time spent generating, summed over resumed sessions: with the
    # completion tokens of each record, the run's generation speed.
    timing_file = pred_file.with_suffix(".timing.json")
    spent = json.loads(timing_file.read_text(encoding="utf-8")).get("seconds", 0.0) if timing_file.exists() else 0.0
    timing_file.write_text(json.dumps({"seconds": spent + time.monotonic() - started}) + "\n", encoding="utf-8")
    transient = [r for r in results if isinstance(r, TransientBackendError)]
    if transient:
        raise TransientBackendError(
            f"{len(transient)} of {len(todo)} requests failed ({transient[0]}); "
            f"{len(todo) - len(transient)} predictions saved to {pred_file} — run again to resume"
        )


def load_run(path: str | Path) -> RunReport:
    """A :class:`RunReport`-like summary from an earlier run's ``results.json`` (for comparison rows)."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    data = json.loads(p.read_text(encoding="utf-8"))
    report = RunReport(label=data["label"], config=data.get("config", {}))
    for d in data["datasets"]:
        result = EvalResult(
            n=d["n"],
            schema_accuracy=d["schema_accuracy"],
            content_similarity=d["content_similarity"],
            precision=d["precision"],
            recall=d["recall"],
            unparseable=d["unparseable"],
            examples=[],
        )
        deg, gold_deg = d.get("degeneracy"), d.get("gold_degeneracy")
        report.datasets.append(
            DatasetReport(
                d["name"],
                d["path"],
                result,
                d.get("complexity", {}),
                d.get("errors", 0),
                baselines=d.get("baselines") or {},
                degeneracy=DegeneracySummary(**deg) if deg else None,
                gold_degeneracy=DegeneracySummary(**gold_deg) if gold_deg else None,
                completion_tokens=d.get("completion_tokens", 0),
                seconds=d.get("seconds"),
            )
        )
    return report
