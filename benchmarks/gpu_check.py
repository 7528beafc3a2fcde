"""GPU check of formcast's masks in a decode loop (``bash scripts/gpu_check.sh``).

A randomly initialised Llama-shaped model (1.3B parameters, bf16) with the
Llama-3 vocabulary (128,256 ids) decodes batches of 1, 16 and 64 rows, each
row under one of four JSON Schemas. Every step: the forward pass, formcast's
masks filled for every row (one parallel call, GIL released), copied to the
GPU and applied in place (a Triton kernel; the torch gather is timed beside
it), then sampling and advancing the matchers. Prints per-step medians and
p99 (ms) of each part and what masking costs next to the forward pass. Rows
still open at the step cap are closed with their shortest completion; every
output must then parse and hold its schema's required keys. Then the same
through transformers' ``generate()`` with ``FormcastLogitsProcessor``.

Needs a CUDA GPU with PyTorch and transformers, and the Llama-3 ranks file
(``--tokenizer``, default ../shared/tokenizers/llama3-tokenizer.model).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

import formcast as fc
from formcast.bitmask import _TORCH_BITS, _triton_apply

ROOT = Path(__file__).resolve().parents[1]

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "object", "properties": {"ok": {"type": "boolean"}, "level": {"enum": ["low", "mid", "high"]}}, "required": ["ok", "level"],
     "additionalProperties": False},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3}},
     "required": ["tags"], "additionalProperties": False},
    {"type": "object", "properties": {"x": {"type": "number", "minimum": -10, "maximum": 10}, "y": {"type": "integer", "minimum": 0, "maximum": 99}},
     "required": ["x", "y"], "additionalProperties": False},
]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def gather_apply(logits: torch.Tensor, bm: torch.Tensor) -> None:
    """The torch fallback of apply_token_bitmask_inplace, timed beside Triton."""
    allowed = _TORCH_BITS.table(logits.device)[bm.view(torch.uint8).to(torch.int32)].flatten(1)[:, : logits.shape[1]]
    logits.masked_fill_(~allowed, float("-inf"))


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def decode(model, tok_info, compiled, batch: int, steps: int, vocab: int, device: str) -> dict:
    rows = [compiled[i % len(compiled)] for i in range(batch)]
    matchers = [fc.GrammarMatcher(g) for g in rows]
    bitmask = torch.from_numpy(fc.allocate_token_bitmask(batch, tok_info.logits_size))
    if device == "cuda":
        bitmask = bitmask.pin_memory()
    bm_np = bitmask.numpy()
    gen = torch.Generator(device=device).manual_seed(batch)
    prompt = torch.randint(1000, 100_000, (batch, 32), device=device, generator=gen)
    times = {"forward": [], "fill": [], "copy+apply (triton)": [], "apply (torch gather)": [], "sample+accept": []}
    out_ids: list[list[int]] = [[] for _ in range(batch)]
    with torch.inference_mode():
        out = model(input_ids=prompt, use_cache=True)
        past = out.past_key_values
        logits = out.logits[:, -1, :].float()
        for _ in range(steps):
            active = [i for i, m in enumerate(matchers) if not m.is_terminated()]
            if not active:
                break
            sync(device)
            t0 = time.perf_counter()
            fc.fill_next_token_bitmask_batch([matchers[i] for i in active], bm_np, active)
            for i in range(batch):
                if matchers[i].is_terminated():
                    bm_np[i] = -1
            t1 = time.perf_counter()
            spare = logits.clone()
            sync(device)
            t2 = time.perf_counter()
            dev_bm = bitmask.to(device, non_blocking=True)
            fc.apply_token_bitmask_inplace(logits, dev_bm)
            sync(device)
            t3 = time.perf_counter()
            gather_apply(spare, dev_bm)
            sync(device)
            t4 = time.perf_counter()
            assert torch.equal(torch.isinf(spare), torch.isinf(logits)), "the Triton and torch paths disagree"
            probs = torch.softmax(logits, dim=-1)
            nxt = torch.multinomial(probs, 1, generator=gen).squeeze(1)
            ids = nxt.tolist()
            for i in active:
                assert matchers[i].accept_token(ids[i]), "a masked-out token was sampled"
                out_ids[i].append(ids[i])
            t5 = time.perf_counter()
            out = model(input_ids=nxt[:, None], past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[:, -1, :].float()
            sync(device)
            t6 = time.perf_counter()
            times["fill"].append((t1 - t0) * 1e3)
            times["copy+apply (triton)"].append((t3 - t2) * 1e3)
            times["apply (torch gather)"].append((t4 - t3) * 1e3)
            times["sample+accept"].append((t5 - t4) * 1e3)
            times["forward"].append((t6 - t5) * 1e3)
    ended = sum(m.is_terminated() for m in matchers)
    bad = 0
    stops = set(tok_info.stop_token_ids)
    for i, m in enumerate(matchers):
        text = b"".join(tok_info.token_bytes(t) for t in out_ids[i] if t not in stops)
        if not m.is_terminated():
            text += m.find_shortest_completion() or b""
        try:
            value = json.loads(text.decode("utf-8"))
            if not all(k in value for k in SCHEMAS[i % len(SCHEMAS)]["required"]):
                bad += 1
        except (json.JSONDecodeError, UnicodeDecodeError):
            bad += 1
    return {"times": times, "ended": ended, "bad": bad, "steps": len(times["forward"])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", default=str(ROOT.parent / "shared" / "tokenizers" / "llama3-tokenizer.model"))
    ap.add_argument("--steps", type=int, default=96)
    ap.add_argument("--batches", default="1,16,64")
    ap.add_argument("--cpu-smoke", action="store_true", help="a tiny model on the CPU: checks the script, measures nothing")
    args = ap.parse_args()
    if not torch.cuda.is_available() and not args.cpu_smoke:
        print("no CUDA GPU: nothing to check (--cpu-smoke runs the script's logic on a tiny model)", file=sys.stderr)
        return 2
    from transformers import LlamaConfig, LlamaForCausalLM

    from formcast.integrations.transformers import FormcastLogitsProcessor

    device = "cpu" if args.cpu_smoke else "cuda"
    name = torch.cuda.get_device_name(0) if device == "cuda" else "none (CPU smoke run)"
    print(f"GPU: {name}, torch {torch.__version__}, Triton kernel: {device == 'cuda' and _triton_apply() is not None}")
    t = time.perf_counter()
    tok = fc.TokenizerInfo.from_tiktoken(args.tokenizer)
    print(f"tokenizer: {tok.vocab_size} ids, logits {tok.logits_size}, stop {tok.stop_token_ids} ({time.perf_counter() - t:.2f} s)")
    compiler = fc.GrammarCompiler(tok)
    t = time.perf_counter()
    compiled = [compiler.compile_json_schema(s, whitespace="compact") for s in SCHEMAS]
    print(f"4 schemas compiled in {(time.perf_counter() - t) * 1e3:.1f} ms")
    size = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2) if args.cpu_smoke else \
        dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=16, num_attention_heads=16, num_key_value_heads=8)
    cfg = LlamaConfig(vocab_size=tok.logits_size, max_position_embeddings=4096, **size)
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    with torch.device(device):  # initialised where it runs
        model = LlamaForCausalLM(cfg).to(dtype=dtype).eval()
    print(f"model: {sum(p.numel() for p in model.parameters()) / 1e9:.2f}B parameters, {dtype}")
    failures = 0
    print(f"\n{'batch':>5} {'part':<22} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for batch in [int(b) for b in args.batches.split(",")]:
        decode(model, tok, compiled, batch, 4, tok.logits_size, device)  # warm-up
        r = decode(model, tok, compiled, batch, args.steps, tok.logits_size, device)
        for part, xs in r["times"].items():
            print(f"{batch:>5} {part:<22} {statistics.median(xs):8.3f} {pct(xs, 0.99):8.3f} {max(xs):8.3f}")
        fwd = statistics.median(r["times"]["forward"])
        mask = statistics.median(r["times"]["fill"]) + statistics.median(r["times"]["copy+apply (triton)"])
        print(f"{batch:>5} masking / forward      {mask / fwd:8.1%}   ({r['steps']} steps; {r['ended']}/{batch} rows ended by themselves, "
              f"{r['bad']} outputs failed to parse)")
        failures += r["bad"]
    # The same through generate() and the logits processor.
    batch = 16
    prompt = torch.randint(1000, 100_000, (batch, 32), device=device, generator=torch.Generator(device=device).manual_seed(7))
    rows = [compiled[i % len(compiled)] for i in range(batch)]
    proc = FormcastLogitsProcessor(rows)
    t = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), logits_processor=[proc], do_sample=True,
                             max_new_tokens=args.steps, eos_token_id=tok.stop_token_ids, pad_token_id=tok.stop_token_ids[0])
    sync(device)
    dt = time.perf_counter() - t
    parsed = 0
    for i in range(batch):
        ids = [t for t in out[i, prompt.shape[1]:].tolist() if t not in tok.stop_token_ids]
        text = b"".join(tok.token_bytes(t) for t in ids).decode("utf-8", "replace")
        try:
            json.loads(text)
            parsed += 1
        except json.JSONDecodeError:
            pass
    print(f"\ngenerate() with FormcastLogitsProcessor, batch {batch}: {out.shape[1] - prompt.shape[1]} steps in {dt:.2f} s; "
          f"{parsed}/{batch} outputs parse as JSON (rows cut at {args.steps} tokens do not)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
