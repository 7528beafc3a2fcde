"""Command line of the formatter: ``format``, ``eval``, ``data`` and ``train`` subcommands.

``register(subparsers)`` adds them to a host parser (formcast's own CLI);
``main(argv)`` runs them standalone (``python -m formcast.formatter ...``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["register", "main", "build_parser"]


def _add_model_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    g.add_argument("--model", help="model name on the endpoint (default: its first model), or a GGUF path")
    g.add_argument("--backend", choices=["openai", "local"], help="default: openai with --base-url, else local")
    g.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY, or none for local servers)")
    g.add_argument(
        "--no-constrained",
        dest="constrained",
        action="store_false",
        help="the paper's prompting-only baseline: no constrained decoding",
    )
    g.add_argument("--prompt", type=Path, help="prompt template file with {input_text} and {json_schema}")
    g.add_argument("--max-tokens", type=int, default=2048)
    g.add_argument("--temperature", type=float, default=0.0)
    g.add_argument("--top-p", type=float, default=0.9)
    g.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    g.add_argument("--workers", type=int, default=1, help="parallel requests (local: sequences decoded together)")
    g.add_argument("--threads", type=int, default=1, help="local backend: CPU threads of the model")
    g.add_argument("--n-ctx", type=int, default=4096, help="local backend: context window of one sequence")
    g.add_argument(
        "--lora",
        default="auto",
        help="local backend: a llama.cpp LoRA adapter GGUF for the model; 'auto' (default): the shipped "
        "formatter adapter for the embedded model; 'none': no adapter",
    )
    g.add_argument(
        "--no-complete-on-length",
        dest="complete_on_length",
        action="store_false",
        help="local backend, constrained: cut an answer where max_tokens ends instead of closing it along "
        "the grammar's shortest completion",
    )
    d = p.add_argument_group("decoding controls (see docs/formatter.md)")
    d.add_argument("--frequency-penalty", type=float, default=0.0, help="OpenAI frequency penalty (before the mask)")
    d.add_argument("--presence-penalty", type=float, default=0.0, help="OpenAI presence penalty (before the mask)")
    d.add_argument(
        "--no-repeat-ngram",
        type=int,
        default=None,
        metavar="N",
        help="local backend: ban tokens that would repeat an N-token n-gram of the answer "
        "(0: off; default: 4 for the local backend when constrained)",
    )
    d.add_argument(
        "--loop-guard",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="local backend, constrained: close a string value that starts repeating itself "
        "(default: on for the local backend when constrained)",
    )
    d.add_argument(
        "--grounded",
        action="store_true",
        help="constrained: string values must be substrings of the input text",
    )
    d.add_argument(
        "--generated-field",
        action="append",
        default=[],
        metavar="PATH",
        help="with --grounded: a field the model writes itself (e.g. category, properties.birthDate); repeatable",
    )
    g.add_argument(
        "--response-format",
        choices=["json_schema", "json_object"],
        default="json_schema",
        help="how constrained requests carry the schema: OpenAI json_schema (default), or "
        "{type: json_object, schema} as llama-cpp-python's server takes",
    )


def _formatter(args: argparse.Namespace) -> Any:
    from .core import Formatter
    from .prompts import PAPER_PROMPT

    template = args.prompt.read_text(encoding="utf-8") if args.prompt else PAPER_PROMPT
    options: dict[str, Any] = {}
    backend = args.backend or ("openai" if args.base_url else "local")
    if backend == "openai":
        options = {"api_key": args.api_key, "timeout": args.timeout, "schema_format": args.response_format}
    elif backend == "local":
        options = {
            "threads": args.threads,
            "n_ctx": args.n_ctx,
            "num_slots": max(1, args.workers),
            "complete_on_length": args.complete_on_length,
        }
        options["lora"] = args.lora
    return Formatter(
        args.model,
        base_url=args.base_url,
        backend=backend,
        constrained=args.constrained,
        prompt_template=template,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        max_workers=args.workers,
        frequency_penalty=args.frequency_penalty,
        presence_penalty=args.presence_penalty,
        no_repeat_ngram_size=args.no_repeat_ngram,
        loop_guard=args.loop_guard,
        grounded=args.grounded,
        generated_fields=args.generated_field,
        **options,
    )


def _similarity_options(args: argparse.Namespace) -> Any:
    from ..evaluate import SimilarityOptions

    return SimilarityOptions(
        array_alignment=args.array_alignment, typed_scalars=args.typed_scalars, unparseable=args.unparseable
    )


# -- format ------------------------------------------------------------------------


def _cmd_format(args: argparse.Namespace) -> int:
    from .core import FormatError, as_schema, read_text_arg

    schema = as_schema(args.schema.read_text(encoding="utf-8"))
    text = read_text_arg(args.text)
    fmt = _formatter(args)
    if args.raw:
        print(fmt.generate(text, schema).text)
        return 0
    try:
        value = fmt.format(text, schema)
    except FormatError as exc:
        print(f"formcast format: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(value, ensure_ascii=False, indent=args.indent))
    return 0


# -- eval ----------------------------------------------------------------------------


def _cmd_eval(args: argparse.Namespace) -> int:
    from .evaluation import run_eval
    from .report import results_table

    needs_model = not args.score_only
    fmt = _formatter(args) if needs_model else None
    report = run_eval(
        fmt,
        args.data,
        args.out,
        label=args.label,
        limit=args.limit,
        options=_similarity_options(args),
        schema_mode=args.schema_mode,
        resume=not args.no_resume,
        progress=not args.quiet,
        compare=args.compare or (),
    )
    print(results_table([report]))
    print(f"\nwrote {args.out}/results.md, results.png, results.json")
    return 0


def _add_metric_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("metrics (choices where the paper is silent; see docs/formatter.md)")
    g.add_argument("--array-alignment", choices=["index", "assignment"], default="index")
    g.add_argument("--no-typed-scalars", dest="typed_scalars", action="store_false",
                   help="compare numbers and booleans by embedding too")  # fmt: skip
    g.add_argument("--unparseable", choices=["zero", "skip"], default="zero",
                   help="content similarity of unparseable responses: 0, or left out of the average")  # fmt: skip
    g.add_argument("--schema-mode", choices=["keys-and-types", "jsonschema"], default="keys-and-types")


# -- data ----------------------------------------------------------------------------


def _cmd_data_e2e(args: argparse.Namespace) -> int:
    from .convert import e2e_examples
    from .data import write_jsonl

    examples = e2e_examples(args.csv, dataset=args.dataset, limit=args.limit)
    n = write_jsonl(examples, args.output)
    print(f"wrote {n} examples to {args.output}")
    return 0


def _cmd_data_webnlg(args: argparse.Namespace) -> int:
    from .convert import webnlg_examples
    from .data import write_jsonl

    examples = webnlg_examples(args.xml, dataset=args.dataset, limit=args.limit, lang=args.lang)
    n = write_jsonl(examples, args.output)
    print(f"wrote {n} examples to {args.output}")
    return 0


def _cmd_data_stats(args: argparse.Namespace) -> int:
    from ..evaluate import EvalResult
    from ..evaluate.complexity import mean_profile
    from .data import load_jsonl
    from .evaluation import DatasetReport, RunReport
    from .report import complexity_table

    run = RunReport(label="stats", config={})
    for path in args.data:
        examples = load_jsonl(path)
        if not examples:
            raise SystemExit(f"formcast data stats: {path} has no examples")
        empty = EvalResult(len(examples), 0.0, 0.0, 0.0, 0.0, 0, [])
        run.datasets.append(
            DatasetReport(examples[0].dataset, str(path), empty, mean_profile(e.gold_json for e in examples))
        )
    print(complexity_table(run))
    return 0


def _cmd_data_synth(args: argparse.Namespace) -> int:
    from .backends import OpenAIBackend
    from .data import load_jsonl
    from .synth import synthesize

    demos = []
    for path in args.examples:
        demos.extend(load_jsonl(path))
    generator = OpenAIBackend(args.model, base_url=args.base_url, api_key=args.api_key, timeout=args.timeout)
    judge = (
        OpenAIBackend(args.judge_model, base_url=args.judge_base_url or args.base_url, api_key=args.api_key, timeout=args.timeout)
        if args.judge_model or args.judge_base_url
        else None
    )
    stats = synthesize(
        generator,
        args.output,
        n=args.n,
        demonstrations=demos,
        judge_backend=judge,
        seed=args.seed,
        max_requests=args.max_requests,
        max_tokens=args.max_tokens,
        progress=not args.quiet,
    )
    print(json.dumps(stats.__dict__, indent=2))
    return 0


# -- train ---------------------------------------------------------------------------


def _cmd_train(args: argparse.Namespace) -> int:
    from .prompts import PAPER_PROMPT
    from .train import TrainConfig, train

    template = args.prompt.read_text(encoding="utf-8") if args.prompt else PAPER_PROMPT
    if not args.data and not args.template_examples:
        raise ValueError("no training data: pass --data FILE... and/or --template-examples N")
    examples = None
    if args.template_examples:
        from .data import load_jsonl
        from .template_synth import template_examples

        examples = template_examples(args.template_examples, seed=args.seed)
        for path in args.data or ():
            rows = load_jsonl(path)
            examples.extend(rows[: args.limit] if args.limit else rows)
    config = TrainConfig(
        model=args.model,
        data=list(args.data or ()),
        output_dir=args.out,
        lora_r=args.lora_r,
        lora_alpha=args.lora_alpha,
        learning_rate=args.lr,
        epochs=args.epochs,
        batch_size=args.batch_size,
        grad_accum=args.grad_accum,
        max_length=args.max_length,
        prompt_template=template,
        limit=args.limit,
        seed=args.seed,
        logging_steps=args.logging_steps,
        target_modules=args.target_modules.split(",") if args.target_modules != "all-linear" else "all-linear",
        max_steps=args.max_steps,
        max_minutes=args.max_minutes,
    )
    result = train(config, progress=not args.quiet, examples=examples)
    losses = ", ".join(f"{x:.4f}" for x in result.losses)
    seen = min(result.examples, result.steps * args.batch_size * args.grad_accum)
    print(f"trained {result.steps} steps on {seen} of {result.examples} examples; mean loss {result.train_loss:.4f}")
    print(f"logged losses: {losses}")
    print(f"adapter: {result.adapter_dir}")
    if args.export_gguf:
        from .export import export_lora_gguf

        heads = result.model_config
        info = export_lora_gguf(result.adapter_dir, args.export_gguf, n_head=heads["num_attention_heads"],
                                n_head_kv=heads["num_key_value_heads"])
        print(f"llama.cpp adapter: {args.export_gguf} ({info['modules']} modules, rank {info['rank']}, "
              f"{info['bytes'] / 1e6:.1f} MB)")
    return 0


# -- wiring ----------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add ``format``, ``eval``, ``data`` and ``train`` to an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "format",
        help="turn text into JSON following a schema",
        description="Format TEXT_FILE (or standard input with '-') as JSON matching --schema.",
    )
    p.add_argument("--schema", type=Path, required=True, help="JSON Schema file")
    p.add_argument("text", nargs="?", default="-", metavar="TEXT_FILE|-")
    p.add_argument("--indent", type=int, default=None, help="pretty-print with this indent")
    p.add_argument("--raw", action="store_true", help="print the model's raw output, unparsed")
    _add_model_options(p)
    p.set_defaults(func=_cmd_format)

    p = subparsers.add_parser(
        "eval",
        help="evaluate a formatter on text-to-JSON datasets (paper Table 1)",
        description="Run a formatter over JSONL datasets; write results.md (Table 1 layout), "
        "results.png and results.json to --out. Resumable.",
    )
    p.add_argument("--data", nargs="+", type=Path, required=True, help="JSONL datasets (shared/data/slot form)")
    p.add_argument("--out", type=Path, required=True, help="run directory")
    p.add_argument("--label", help="row name in the table")
    p.add_argument("--limit", type=int, help="first N examples of each dataset")
    p.add_argument("--no-resume", action="store_true", help="discard saved predictions and start over")
    p.add_argument("--score-only", action="store_true", help="score the saved predictions; call no model")
    p.add_argument("--compare", nargs="*", type=Path, help="earlier runs (dirs or results.json) as extra rows")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_model_options(p)
    _add_metric_options(p)
    p.set_defaults(func=_cmd_eval)

    p = subparsers.add_parser("data", help="dataset tools: converters, complexity stats, synthesis")
    data = p.add_subparsers(dest="data_command", required=True, metavar="{e2e,webnlg,stats,synth}")

    q = data.add_parser("e2e", help="E2E NLG meaning-representation CSV -> JSONL")
    q.add_argument("csv", type=Path)
    q.add_argument("-o", "--output", type=Path, required=True)
    q.add_argument("--dataset", default="e2e")
    q.add_argument("--limit", type=int)
    q.set_defaults(func=_cmd_data_e2e)

    q = data.add_parser("webnlg", help="WebNLG RDF XML -> JSONL")
    q.add_argument("xml", type=Path, nargs="+")
    q.add_argument("-o", "--output", type=Path, required=True)
    q.add_argument("--dataset", default="webnlg")
    q.add_argument("--lang", default="en")
    q.add_argument("--limit", type=int)
    q.set_defaults(func=_cmd_data_webnlg)

    q = data.add_parser("stats", help="the seven JSON-complexity measures per dataset")
    q.add_argument("data", type=Path, nargs="+")
    q.set_defaults(func=_cmd_data_stats)

    q = data.add_parser("synth", help="synthesize training data (paper §4, App. F) with an OpenAI-compatible endpoint")
    q.add_argument("-o", "--output", type=Path, required=True)
    q.add_argument("-n", type=int, required=True, help="accepted examples wanted")
    q.add_argument("--examples", type=Path, nargs="+", required=True, help="JSONL pool of demonstrations")
    q.add_argument("--base-url", required=True)
    q.add_argument("--model")
    q.add_argument("--api-key")
    q.add_argument("--judge-base-url", help="stage-2 judge endpoint (default: the generator's)")
    q.add_argument("--judge-model", help="stage-2 judge model (default: the generator)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--max-requests", type=int)
    q.add_argument("--max-tokens", type=int, default=4096)
    q.add_argument("--timeout", type=float, default=300.0)
    q.add_argument("--quiet", action="store_true")
    q.set_defaults(func=_cmd_data_synth)
    _register_train(subparsers)


def _register_train(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "train",
        help="LoRA SFT of a formatter model (needs the train extra: torch, transformers, peft, trl)",
        description="LoRA supervised fine-tuning with the paper's prompt and completion-only loss "
        "(defaults: r=32, alpha=64, lr 1e-5, 2 epochs). Needs pip install 'formcast[train]'.",
    )
    p.add_argument(
        "--model",
        required=True,
        help="base model: a Hugging Face checkpoint directory or hub name, a GGUF file, or 'embedded' "
        "(the embedded SmolLM2-135M-Instruct GGUF)",
    )
    p.add_argument("--data", nargs="+", type=Path, help="JSONL datasets (shared/data/slot form)")
    p.add_argument(
        "--template-examples",
        type=int,
        default=0,
        metavar="N",
        help="train on N examples made from templates in the E2E and WebNLG formats (template_synth)",
    )
    p.add_argument(
        "--target-modules",
        default="all-linear",
        help="LoRA targets: all-linear, or comma-separated module names (q_proj,v_proj,...)",
    )
    p.add_argument("--max-steps", type=int, default=-1, help="stop after this many optimiser steps (-1: epochs)")
    p.add_argument("--max-minutes", type=float, help="stop after the step that passes this much training time")
    p.add_argument("--export-gguf", type=Path, help="also write the adapter as a llama.cpp LoRA GGUF here")
    p.add_argument("--out", type=Path, required=True, help="output directory (adapter in OUT/adapter)")
    p.add_argument("--lora-r", type=int, default=32)
    p.add_argument("--lora-alpha", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--epochs", type=float, default=2.0)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--max-length", type=int, default=2048, help="longest example in tokens")
    p.add_argument("--prompt", type=Path, help="prompt template file with {input_text} and {json_schema}")
    p.add_argument("--limit", type=int, help="first N examples of each dataset")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--logging-steps", type=int, default=10)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_train)


def build_parser(prog: str = "python -m formcast.formatter") -> argparse.ArgumentParser:
    """A standalone parser with the formatter's subcommands."""
    parser = argparse.ArgumentParser(prog=prog, description="formcast formatter: format, evaluate, build data")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a formatter subcommand; returns the exit status.

    Errors users can fix (a bad dataset line, an unreachable endpoint, a
    missing backend) are printed as one line, exit status 2.
    """
    from .backends import BackendError
    from .data import DatasetError
    from .evaluation import RunConfigMismatch
    from .train import TrainingUnavailableError

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (DatasetError, BackendError, RunConfigMismatch, TrainingUnavailableError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
