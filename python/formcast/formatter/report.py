"""Markdown tables (the paper's Table 1 layout) and bar charts of evaluation runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from .evaluation import RunReport

__all__ = [
    "results_table",
    "complexity_table",
    "details_table",
    "degeneracy_table",
    "baseline_runs",
    "render_markdown",
    "plot_runs",
    "write_reports",
]

BASELINE_PREFIX = "trivial: "

_MEASURE_TITLES = {
    "depth": "Depth",
    "keys": "Keys",
    "elements": "Elements",
    "size": "Size (B)",
    "cyclomatic": "Cyclomatic",
    "schema": "Schema cx.",
    "content": "Content cx.",
}


def _dataset_order(runs: Sequence["RunReport"]) -> list[str]:
    order: list[str] = []
    for run in runs:
        for d in run.datasets:
            if d.name not in order:
                order.append(d.name)
    return order


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def results_table(runs: Sequence["RunReport"]) -> str:
    """Table 1: schema accuracy and content similarity (%) per dataset and on average, one row per run."""
    from .evaluation import display_name

    names = _dataset_order(runs)
    heads = [display_name(n) for n in names] + ["Avg"]
    header = (
        "| Formatter + settings | "
        + " | ".join(f"SA {h}" for h in heads)
        + " | "
        + " | ".join(f"CS {h}" for h in heads)
        + " |"
    )
    sep = "|---|" + "---:|" * (2 * len(heads))
    rows = [header, sep]
    for run in runs:
        by_name = {d.name: d for d in run.datasets}
        sa = [by_name[n].result.schema_accuracy if n in by_name else None for n in names]
        cs = [by_name[n].result.content_similarity if n in by_name else None for n in names]
        avg = run.average
        cells = [_pct(x) for x in sa] + [_pct(avg["schema_accuracy"])]
        cells += [_pct(x) for x in cs] + [_pct(avg["content_similarity"])]
        rows.append(f"| {_md_escape(run.label)} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def details_table(run: "RunReport") -> str:
    """Per dataset: examples, soft precision and recall, unparseable responses, request errors."""
    from .evaluation import display_name

    rows = [
        "| Dataset | n | Schema acc. (%) | Content sim. (%) | Soft precision (%) | Soft recall (%) | Unparseable "
        "| Errors | Tokens/answer | Tokens/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for d in run.datasets:
        r = d.result
        rows.append(
            f"| {display_name(d.name)} | {r.n} | {_pct(r.schema_accuracy)} | {_pct(r.content_similarity)} | "
            f"{_pct(r.precision)} | {_pct(r.recall)} | {r.unparseable} | {d.errors} | "
            f"{d.completion_tokens / r.n if r.n and d.completion_tokens else 0:.1f} | "
            f"{'–' if d.tokens_per_second is None else f'{d.tokens_per_second:.1f}'} |"
        )
    return "\n".join(rows)


def baseline_runs(run: "RunReport") -> list["RunReport"]:
    """The trivial answers scored with ``run`` (one pseudo-run per baseline), for tables and charts."""
    from ..evaluate import EvalResult
    from ..evaluate.baselines import BASELINES
    from .evaluation import DatasetReport, RunReport

    out = []
    for key, (title, _) in BASELINES.items():
        rows = []
        for d in run.datasets:
            b = d.baselines.get(key)
            if b is None:
                continue
            result = EvalResult(d.result.n, b["schema_accuracy"], b["content_similarity"], 0.0, 0.0, 0, [])
            rows.append(DatasetReport(d.name, d.path, result, d.complexity))
        if rows:
            out.append(RunReport(label=BASELINE_PREFIX + title, config={}, datasets=rows))
    return out


def degeneracy_table(runs: Sequence["RunReport"]) -> str:
    """Degenerate answers (%) per run and dataset: any of the four, each of them, and
    string values without support in the input (the gold answers' rate beside it)."""
    from .evaluation import display_name

    rows = [
        "| Formatter + settings | Dataset | Degenerate | Loop | One value in ≥3 fields | Type name as value "
        "| All fields empty | Unsupported values (gold) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        for d in run.datasets:
            g, gold = d.degeneracy, d.gold_degeneracy
            if g is None:
                continue
            gold_cell = f" ({_pct(gold.unsupported_values)})" if gold is not None else ""
            rows.append(
                f"| {_md_escape(run.label)} | {display_name(d.name)} | {_pct(g.degenerate)} | {_pct(g.loop)} | "
                f"{_pct(g.copied)} | {_pct(g.type_name)} | {_pct(g.empty)} | {_pct(g.unsupported_values)}{gold_cell} |"
            )
    return "\n".join(rows)


def complexity_table(run: "RunReport") -> str:
    """The seven JSON-complexity measures of the gold outputs, mean per example, per dataset."""
    from ..evaluate.complexity import MEASURES
    from .evaluation import display_name

    rows = [
        "| Dataset | n | " + " | ".join(_MEASURE_TITLES[m] for m in MEASURES) + " |",
        "|---|---:|" + "---:|" * len(MEASURES),
    ]
    for d in run.datasets:
        rows.append(
            f"| {display_name(d.name)} | {d.result.n} | "
            + " | ".join(f"{d.complexity.get(m, 0.0):.2f}" for m in MEASURES)
            + " |"
        )
    return "\n".join(rows)


def render_markdown(run: "RunReport", others: Sequence["RunReport"] = ()) -> str:
    """The whole results.md of a run (comparison rows from ``others`` first)."""
    opts = run.config.get("metric_options", {})
    parts = [
        f"# Formatter evaluation: {run.label}",
        "",
        "Schema accuracy (SA) and content similarity (CS), in %, per dataset and their unweighted "
        "average, as in Table 1 of the SPOT formatter paper. The `trivial:` rows are answers that "
        "read nothing from the input, scored with the same metric: content similarity means "
        "something only by how far it is above them.",
        "",
        results_table([*others, run, *baseline_runs(run)]),
        "",
        "## Degenerate answers (% of parseable answers)",
        "",
        "A loop repeats a unit of 1-40 characters three or more times over 12+ characters (not "
        "copied from the input); unsupported values are string values less than half of whose "
        "words occur in the input (% of string values; the gold answers' rate in parentheses).",
        "",
        degeneracy_table([*others, run]),
        "",
        "## Details",
        "",
        details_table(run),
        "",
        "## JSON complexity of the gold outputs (mean per example, paper appendix D.3)",
        "",
        complexity_table(run),
        "",
        "## Settings",
        "",
        "```json",
        json.dumps(
            {
                "formatter": {k: v for k, v in run.config.get("formatter", {}).items() if k != "prompt_template"},
                "limit": run.config.get("limit"),
                "metric_options": opts,
                "schema_mode": run.config.get("schema_mode"),
            },
            indent=2,
            ensure_ascii=False,
        ),
        "```",
        "",
    ]
    return "\n".join(parts)


def plot_runs(runs: Sequence["RunReport"], path: str | Path) -> Path:
    """A PNG bar chart: schema accuracy and content similarity per dataset and average, bars per run."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import numpy as np

    from .evaluation import display_name

    names = _dataset_order(runs)
    groups = [display_name(n) for n in names] + ["Avg"]
    fig, axes = plt.subplots(1, 3, figsize=(max(10.0, 1.4 * len(groups) * 3 + 2), 4.6), sharey=True)
    width = 0.8 / max(1, len(runs))
    x = np.arange(len(groups))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    greys = ["#b0b0b0", "#707070", "#d0d0d0"]
    colors, n_model = [], 0
    for run in runs:
        if run.label.startswith(BASELINE_PREFIX):
            colors.append(greys[(len(colors) - n_model) % len(greys)])
        else:
            colors.append(palette[n_model % len(palette)])
            n_model += 1

    def degenerate(d: Any) -> float | None:
        return None if d.degeneracy is None else d.degeneracy.degenerate

    panels = (
        ("Schema accuracy (%)", lambda d: d.result.schema_accuracy),
        ("Content similarity (%)", lambda d: d.result.content_similarity),
        ("Degenerate answers (%)", degenerate),
    )
    for ax, (title, metric) in zip(axes, panels):
        for k, run in enumerate(runs):
            by_name = {d.name: d for d in run.datasets}
            raw = [metric(by_name[n]) if n in by_name else None for n in names]
            if all(v is None for v in raw):
                continue
            known = [v for v in raw if v is not None]
            raw.append(sum(known) / len(known) if known else None)
            values = [100 * v if v is not None else 0.0 for v in raw]
            bars = ax.bar(x - 0.4 + width * (k + 0.5), values, width, label=run.label, color=colors[k],
                          hatch="//" if run.label.startswith(BASELINE_PREFIX) else None)
            ax.bar_label(bars, fmt="%.1f", fontsize=6, padding=1)
        ax.set_title(title)
        ax.set_xticks(x, groups)
        ax.set_ylim(0, 110)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("%")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(runs), 3), fontsize=8, frameon=False)
    rows = (len(runs) + 2) // 3
    fig.tight_layout(rect=(0, min(0.5, 0.06 * rows + 0.02), 1, 1))
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def write_reports(run: "RunReport", out_dir: str | Path, *, others: Sequence["RunReport"] = ()) -> dict[str, Path]:
    """Write results.json, results.md and results.png into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"json": out / "results.json", "markdown": out / "results.md", "chart": out / "results.png"}
    files["json"].write_text(json.dumps(run.as_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    files["markdown"].write_text(render_markdown(run, others), encoding="utf-8")
    plot_runs([*others, run, *baseline_runs(run)], files["chart"])
    return files
