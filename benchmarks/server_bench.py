"""Decode speed of the embedded model with and without constraints, and the
server under concurrent load.

Part 1 (one sequence, greedy, the server's own runtime and decode step):
  * unconstrained decoding (end-of-generation tokens masked, fixed length);
  * formcast: JSON Schema W1 (bench-workloads) and a 3-tool tool-call grammar;
  * llama.cpp's own grammar sampler (``llama_sampler_init_grammar`` on the GBNF
    of ``llama_cpp.LlamaGrammar.from_json_schema``, the path
    ``llama_cpp.Llama`` uses for ``grammar=``) on the same model, logits and
    schemas.
  tokens/s per mode (median over rounds, modes interleaved), the constraint's
  share of each token's time, and whether both engines produced the same
  greedy text.

Part 2: ``formcast serve`` (subprocess, ``--parallel 8``) and 8 concurrent
clients: requests/s, generated tokens/s, p50/p99 latency, unconstrained and
W1-constrained.

    .venv/bin/python benchmarks/server_bench.py            # both parts
    .venv/bin/python benchmarks/server_bench.py --quick    # fewer rounds
"""

from __future__ import annotations

import argparse
import ctypes
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

import formcast as fc
from formcast.runtime import SequenceFeed, load_runtime

ROOT = Path(__file__).resolve().parent.parent
W1 = ROOT.parent / "shared" / "data" / "bench-workloads" / "W1_simple_glaive_calendar.json"

# Three tools, called Hermes/Qwen style: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>.
TOOLS = [
    {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": False}},
    {"name": "search_web", "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "max_results": {"type": "integer"}},
        "required": ["query", "max_results"], "additionalProperties": False}},
    {"name": "send_email", "parameters": {"type": "object", "properties": {
        "to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
        "required": ["to", "subject", "body"], "additionalProperties": False}},
]


def tool_call_schema() -> dict:
    """One tool call as a JSON Schema: the name selects the arguments."""
    return {"anyOf": [
        {"type": "object", "properties": {"name": {"const": t["name"]}, "arguments": t["parameters"]},
         "required": ["name", "arguments"], "additionalProperties": False}
        for t in TOOLS
    ]}


def tool_call_gbnf() -> str:
    """The 3-tool call as GBNF for both engines: ``<tool_call>\\n`` JSON
    ``\\n</tool_call>``, the JSON from llama.cpp's own schema converter.
    (The same language formcast.styles will produce as a structural tag.)"""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    inner = json_schema_to_gbnf(json.dumps(tool_call_schema())).replace("root ::=", "call ::=", 1)
    return 'root ::= "<tool_call>\\n" call "\\n</tool_call>"\n' + inner


def compile_tool_grammar(compiler, rt, gbnf: str):
    """formcast's 3-tool constraint: the Hermes/Qwen style's structural tag
    (tool_choice required, one call) when this build has formcast.styles and
    Grammar.from_structural_tag, else the same language as GBNF."""
    if hasattr(fc.Grammar, "from_structural_tag"):
        try:
            from formcast.styles import structural_tag_for
        except ImportError:
            structural_tag_for = None
        if structural_tag_for is not None:
            tools = [{"type": "function", "function": {"name": t["name"], "strict": True, "parameters": t["parameters"]}} for t in TOOLS]
            tag = structural_tag_for("qwen_3", tools, "required", False, "disabled")
            return compiler.compile(fc.Grammar.from_structural_tag(tag, rt.tokenizer)), "structural tag (formcast.styles qwen_3)"
    return compiler.compile(fc.Grammar.from_ebnf(gbnf)), "GBNF (structural tags not in this build)"


def chat_prompt(rt, user: str, system: str | None = None) -> list[int]:
    from formcast.server.templates import render_chat, resolve_template

    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    text = render_chat(resolve_template(None, rt.chat_template), msgs, bos_token=rt.bos_token, eos_token=rt.eos_token)
    return rt.tokenize(text, add_special=True)


class FormcastMask:
    """formcast: fill the bitmask, apply it, accept the token."""

    def __init__(self, compiled, logits_size: int) -> None:
        self.m = fc.GrammarMatcher(compiled)
        self.bm = fc.allocate_token_bitmask(1, logits_size)

    def mask(self, logits: np.ndarray) -> None:
        self.m.fill_next_token_bitmask(self.bm)
        fc.apply_token_bitmask_inplace(logits, self.bm)

    def accept(self, token: int) -> bool:
        assert self.m.accept_token(token)
        return self.m.is_terminated()


class LlamaGrammarMask:
    """llama.cpp's grammar sampler over the full candidate array."""

    def __init__(self, rt, gbnf: str) -> None:
        import llama_cpp

        self.L = llama_cpp
        self.smpl = llama_cpp.llama_sampler_init_grammar(rt._vocab, gbnf.encode(), b"root")
        if not self.smpl:
            raise ValueError("llama.cpp rejected the grammar")
        n = rt._n_vocab
        self.data = np.zeros(n, dtype=np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True))
        self.data["id"] = np.arange(n)
        self.arr = llama_cpp.llama_token_data_array(
            data=self.data.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token_data)), size=n, selected=-1, sorted=False)
        self.n = n
        self.stop = set(rt.stop_token_ids)

    def mask(self, logits: np.ndarray) -> None:
        self.data["logit"] = logits[0, : self.n]
        self.data["p"] = 0
        self.arr.size = self.n
        self.arr.selected = -1
        self.arr.sorted = False
        self.L.llama_sampler_apply(self.smpl, ctypes.byref(self.arr))
        logits[0, : self.n] = self.data["logit"]

    def accept(self, token: int) -> bool:
        if token in self.stop:
            return True
        self.L.llama_sampler_accept(self.smpl, token)
        return False

    def close(self) -> None:
        self.L.llama_sampler_free(self.smpl)


def decode(rt, prompt: list[int], max_tokens: int, masker=None) -> dict:
    """Greedy decode on slot 0; returns tokens, text and the time split."""
    stops = list(rt.stop_token_ids)
    t_forward = t_mask = 0.0
    out: list[int] = []
    t0 = time.perf_counter()
    logits = rt.forward([SequenceFeed(0, prompt, 0)])
    t_forward += time.perf_counter() - t0
    pos = len(prompt)
    t_start = time.perf_counter()  # decode speed excludes the prompt
    t_forward = 0.0
    while len(out) < max_tokens:
        t1 = time.perf_counter()
        if masker is None:
            logits[0, stops] = -np.inf  # fixed-length unconstrained run
            token = int(np.argmax(logits[0]))
            done = False
        else:
            masker.mask(logits)
            token = int(np.argmax(logits[0]))
            done = masker.accept(token)
        t_mask += time.perf_counter() - t1
        out.append(token)
        if done or token in rt.stop_token_ids:
            break
        t2 = time.perf_counter()
        logits = rt.forward([SequenceFeed(0, [token], pos)])
        t_forward += time.perf_counter() - t2
        pos += 1
    total = time.perf_counter() - t_start
    text = rt.detokenize([t for t in out if t not in rt.stop_token_ids]).decode("utf-8", "replace")
    return {"tokens": len(out), "seconds": total, "forward": t_forward, "mask": t_mask, "text": text}


def part1(args) -> dict:
    rt = load_runtime(num_slots=1, n_ctx=2048, threads=args.threads)
    compiler = fc.GrammarCompiler(rt.tokenizer)
    from llama_cpp.llama_grammar import LlamaGrammar

    w1 = json.loads(W1.read_text())["schema"]
    w1_gbnf = LlamaGrammar.from_json_schema(json.dumps(w1))._grammar
    tools_gbnf = tool_call_gbnf()
    t0 = time.perf_counter()
    w1_compiled = compiler.compile(fc.Grammar.from_json_schema(w1, strict=True))  # as the server compiles it
    w1_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    tools_compiled, tools_kind = compile_tool_grammar(compiler, rt, tools_gbnf)
    tools_compile = time.perf_counter() - t0
    print(f"formcast 3-tool constraint: {tools_kind}")
    system = "You can call these tools:\n" + json.dumps(TOOLS) + "\nCall one as <tool_call>\n{\"name\": ..., \"arguments\": ...}\n</tool_call>"
    p_w1 = chat_prompt(rt, "Create a calendar event for a team lunch next Friday at noon in Paris. Answer in JSON.")
    p_tools = chat_prompt(rt, "What's the weather in Paris?", system)
    modes = {
        "unconstrained": lambda: decode(rt, p_w1, args.tokens, None),
        "formcast W1 schema": lambda: decode(rt, p_w1, args.tokens, FormcastMask(w1_compiled, rt.logits_size)),
        "llama.cpp grammar W1": lambda: _with_close(LlamaGrammarMask(rt, w1_gbnf), lambda m: decode(rt, p_w1, args.tokens, m)),
        "unconstrained, tools prompt": lambda: decode(rt, p_tools, args.tokens, None),
        "formcast 3-tool call": lambda: decode(rt, p_tools, args.tokens, FormcastMask(tools_compiled, rt.logits_size)),
        "llama.cpp grammar 3-tool": lambda: _with_close(LlamaGrammarMask(rt, tools_gbnf), lambda m: decode(rt, p_tools, args.tokens, m)),
    }
    runs: dict[str, list[dict]] = {k: [] for k in modes}
    for _ in range(args.rounds):
        for name, fn in modes.items():
            runs[name].append(fn())
    rt.close()
    rows = {}
    for name, rs in runs.items():
        tps = statistics.median(r["tokens"] / r["seconds"] for r in rs)
        per_tok_mask = statistics.median(r["mask"] / r["tokens"] for r in rs) * 1e3
        per_tok = statistics.median(r["seconds"] / r["tokens"] for r in rs) * 1e3
        rows[name] = {"tok_s": tps, "ms_per_token": per_tok, "constraint_ms_per_token": per_tok_mask,
                      "tokens": rs[0]["tokens"], "text": rs[0]["text"]}
    baseline = {name: ("unconstrained, tools prompt" if "tool" in name else "unconstrained") for name in rows}
    print(f"\n## Decode speed: {rt.model_id}, 1 sequence, greedy, {args.threads} thread(s), median of {args.rounds} rounds")
    print(f"formcast compile: W1 {w1_compile * 1e3:.1f} ms, 3-tool {tools_compile * 1e3:.1f} ms (first compile, uncached)\n")
    print("| mode | tokens | tok/s | tok/s vs unconstrained (same prompt) | constraint ms/token | overhead vs unconstrained token time |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        b = rows[baseline[name]]
        # Overhead: the extra time per token the constraint costs (mask fill,
        # apply, accept) over the unconstrained argmax, relative to an
        # unconstrained token's time. Robust to machine load, unlike tok/s.
        over = (r["constraint_ms_per_token"] - b["constraint_ms_per_token"]) / b["ms_per_token"] * 100
        print(f"| {name} | {r['tokens']} | {r['tok_s']:.1f} | {r['tok_s'] / b['tok_s'] * 100:.1f}% | "
              f"{r['constraint_ms_per_token']:.3f} | {over:.1f}% |")
    same_w1 = rows["formcast W1 schema"]["text"] == rows["llama.cpp grammar W1"]["text"]
    same_tools = rows["formcast 3-tool call"]["text"] == rows["llama.cpp grammar 3-tool"]["text"]
    print(f"\nsame greedy output from both engines: W1 {same_w1}, 3-tool {same_tools}")
    print("formcast W1 output:", rows["formcast W1 schema"]["text"][:200])
    print("formcast 3-tool output:", rows["formcast 3-tool call"]["text"][:200])
    return rows


def _with_close(m, fn):
    try:
        return fn(m)
    finally:
        m.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def part2(args) -> dict:
    import httpx

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "formcast.cli", "serve", "--port", str(port), "--parallel", str(args.clients),
         "--queue-size", "64", "--ctx-size", "1024", "--threads", str(args.threads)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
    )
    base = f"http://127.0.0.1:{port}"
    results = {}
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the server did not start")
            time.sleep(0.2)
        w1 = json.loads(W1.read_text())["schema"]
        workloads = {
            "unconstrained": {"messages": [{"role": "user", "content": "Write a short poem about the sea."}], "max_tokens": 64,
                              "temperature": 0.7},
            "W1 json_schema": {"messages": [{"role": "user", "content": "Create a calendar event for a team lunch."}],
                               "max_tokens": 128, "temperature": 0.7,
                               "response_format": {"type": "json_schema", "json_schema": {"name": "event", "schema": w1}}},
        }
        print(f"\n## Server: {args.clients} concurrent clients, {args.requests} requests per workload, --parallel {args.clients}\n")
        print("| workload | req/s | generated tok/s | p50 latency s | p99 latency s | valid |")
        print("|---|---|---|---|---|---|")
        for name, body in workloads.items():
            lat: list[float] = []
            toks: list[int] = []
            valid: list[bool] = []
            lock = threading.Lock()
            todo = list(range(args.requests))

            def worker() -> None:
                with httpx.Client(base_url=base, timeout=300) as c:
                    while True:
                        with lock:
                            if not todo:
                                return
                            i = todo.pop()
                        t0 = time.perf_counter()
                        r = c.post("/v1/chat/completions", json=dict(body, model="SmolLM2-135M-Instruct", seed=i))
                        dt = time.perf_counter() - t0
                        d = r.json()
                        ok = r.status_code == 200
                        if ok and "response_format" in body:
                            import jsonschema

                            ch = d["choices"][0]
                            try:
                                jsonschema.validate(json.loads(ch["message"]["content"]), w1)
                            except Exception:
                                ok = ch["finish_reason"] == "length"  # cut by max_tokens, reported as such
                        with lock:
                            lat.append(dt)
                            toks.append(d.get("usage", {}).get("completion_tokens", 0))
                            valid.append(ok)

            t0 = time.perf_counter()
            threads = [threading.Thread(target=worker) for _ in range(args.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - t0
            lat.sort()
            p50 = lat[len(lat) // 2]
            p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))]
            results[name] = {"req_s": len(lat) / wall, "tok_s": sum(toks) / wall, "p50": p50, "p99": p99}
            print(f"| {name} | {len(lat) / wall:.2f} | {sum(toks) / wall:.1f} | {p50:.2f} | {p99:.2f} | {sum(valid)}/{len(valid)} |")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tokens", type=int, default=128, help="max tokens per decode in part 1")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--quick", action="store_true", help="2 rounds, 16 requests")
    ap.add_argument("--part", choices=["1", "2", "all"], default="all")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.requests = 2, 16
    if args.part in ("1", "all"):
        part1(args)
    if args.part in ("2", "all"):
        part2(args)


if __name__ == "__main__":
    main()
