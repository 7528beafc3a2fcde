#!/usr/bin/env python3
"""Structural tags: formcast vs xgrammar (and llguidance where its Lark can
say the same thing) — compile time and per-token mask time for tool calling.

Workloads (tags built by formcast.styles.structural_tag_for, so they are
exactly what the server compiles; xgrammar reads the same JSON):
  ST_qwen3_1 / _10 / _100   qwen_3, tool_choice=auto, parallel calls,
                            reasoning off: triggered_tags on "<tool_call>"
                            over 1, 10, 100 tools with small JSON schemas.
  ST_deepseek_think_forced  deepseek_r1, reasoning on, one forced tool:
                            think text up to "</think>", then the call.
Each document is realistic output (text + one tool call, the last tool for
the multi-tool tags) tokenized once with Llama-3; every engine gets the same
ids. The measurement and its correctness checks are engine_bench.py's
(measure.py): compile, 1st mask, cold and warm mask p50/p99.

llguidance has no structural-tag input in this version; its equivalent is
written in its Lark dialect the way its own tool-calling docs do it: a lazy
lexeme "text up to the trigger" followed by the tag body with %json, and the
free text given as a regex minus the excluded strings (`&` / `~`).

Usage (peers from the shared bench venv):
  .venv/bin/python benchmarks/structural_bench.py \\
      --peer-python /work/main/.bench-venv/bin/python
The driver itself must run where tiktoken is installed; when started from the
project venv it re-executes itself under --peer-python.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import engine_bench  # noqa: E402

# Small, realistic tool parameter shapes, cycled over the tools.
PARAM_SHAPES = [
    {"type": "object", "properties": {"city": {"type": "string"},
                                       "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
     "required": ["city"]},
    {"type": "object", "properties": {"query": {"type": "string", "maxLength": 200},
                                       "max_results": {"type": "integer", "minimum": 1, "maximum": 50}},
     "required": ["query"]},
    {"type": "object", "properties": {"to": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                                       "subject": {"type": "string"}, "body": {"type": "string"},
                                       "urgent": {"type": "boolean"}},
     "required": ["to", "subject", "body"], "additionalProperties": False},
    {"type": "object", "properties": {"path": {"type": "string"},
                                       "start_line": {"type": "integer", "minimum": 0},
                                       "end_line": {"type": "integer", "minimum": 0}},
     "required": ["path"]},
]
VERBS = ["get_weather", "search_web", "send_email", "read_file"]

# Arguments of the call in each document, valid for the shape of that tool.
ARGS = [
    {"city": "Paris", "unit": "celsius"},
    {"query": "population of Lyon 2024", "max_results": 5},
    {"to": ["ana@example.com"], "subject": "Lunch", "body": "Are you free at noon on Friday?"},
    {"path": "src/main.rs", "start_line": 10, "end_line": 42},
]


def tools(n):
    return [{"type": "function", "function": {"name": f"{VERBS[i % 4]}_{i}", "description": "a tool",
                                              "parameters": PARAM_SHAPES[i % 4]}} for i in range(n)]


def emit_tags():
    """Run under the project venv: the tags the server would compile."""
    from formcast.styles import structural_tag_for

    out = {}
    for n in (1, 10, 100):
        out[f"qwen3_{n}"] = structural_tag_for("qwen_3", tools(n), tool_choice="auto",
                                               parallel_tool_calls=True, reasoning="disabled")
    forced = {"type": "function", "function": {"name": "get_weather_0"}}
    out["deepseek"] = structural_tag_for("deepseek_r1", tools(1), tool_choice=forced, reasoning="enabled")
    json.dump(out, sys.stdout)


def lark_str(s):
    return json.dumps(s)


def lark_text_excluding(excluded):
    """A Lark regex for text containing none of `excluded`."""
    import re

    alts = "|".join(re.escape(e).replace("/", "\\/") for e in excluded)
    return f"/(?s:.*)/ & ~/(?s:.*({alts}).*)/"


def lark_triggered(tag_format):
    """llguidance Lark for a triggered_tags format whose tags all start with
    its one trigger and contain a json_schema (the qwen_3 auto shape)."""
    f = tag_format
    (trigger,) = f["triggers"]
    excludes = list(f.get("excludes", []))
    bodies = []
    for t in f["tags"]:
        assert t["begin"].startswith(trigger) and t["content"]["type"] == "json_schema"
        bodies.append(f'{lark_str(t["begin"][len(trigger):])} %json {json.dumps(t["content"]["json_schema"])} '
                      f'{lark_str(t["end"])}')
    calls = " | ".join(f"( {b} )" for b in bodies)
    assert not f.get("stop_after_first") and not f.get("at_least_one")
    return "\n".join([
        "%llguidance {}",
        # Free text, then calls; the text before a call ends lazily at the
        # trigger, the text after the last call must not contain it.
        "start: call* TAIL",
        f"call: head ({calls})",
        "head[lazy]: TEXT " + lark_str(trigger),
        "TEXT: " + lark_text_excluding(excludes + [trigger]),
        "TAIL: " + lark_text_excluding(excludes + [trigger]),
    ])


def lark_think_forced(fmt):
    """llguidance Lark for sequence(tag("", any_text(excludes), "</think>"),
    tag(begin, json_schema, end)) — the deepseek_r1 forced shape."""
    think, call = fmt["elements"]
    assert think["begin"] == "" and think["content"]["type"] == "any_text"
    return "\n".join([
        "%llguidance {}",
        f"start: think {lark_str(call['begin'])} %json {json.dumps(call['content']['json_schema'])} "
        f"{lark_str(call['end'])}",
        "think[lazy]: THINK " + lark_str(think["end"]),
        "THINK: " + lark_text_excluding(think["content"].get("excludes", [])),
    ])


def qwen_doc(n):
    k = n - 1  # the last tool: the one the automaton/dispatch reaches last
    call = json.dumps({"name": f"{VERBS[k % 4]}_{k}", "arguments": ARGS[k % 4]})
    return f"I'll look that up for you.<tool_call>\n{call}\n</tool_call>"


def workloads(tags):
    out = []
    for n in (1, 10, 100):
        tag = tags[f"qwen3_{n}"]
        out.append(dict(name=f"ST_qwen3_{n}", kind="structural", tag_text=json.dumps(tag),
                        lark=lark_triggered(tag["format"]), doc=qwen_doc(n)))
    tag = tags["deepseek"]
    doc = ("The user wants the weather in Paris. I should call get_weather_0 with the city; "
           "the unit was not given, so I'll ask for celsius.</think>"
           "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather_0\n```json\n"
           + json.dumps(ARGS[0]) + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>")
    out.append(dict(name="ST_deepseek_think_forced", kind="structural", tag_text=json.dumps(tag),
                    lark=lark_think_forced(tag["format"]), doc=doc))
    return out


def main():
    if "--emit-tags" in sys.argv:
        emit_tags()
        return 0
    p = engine_bench.arg_parser(__doc__)
    p.set_defaults(engines="formcast,llguidance,xgrammar")
    args = p.parse_args()
    if args.worker:  # workers are engine_bench's; kept for symmetry
        engine_bench.worker_main(args.worker, args.workload)
        return 0
    try:
        import tiktoken  # noqa: F401
    except ImportError:  # started from the project venv: re-run as a peer-venv driver
        os.execv(args.peer_python, [args.peer_python, os.path.abspath(__file__)] + sys.argv[1:])
    tags = json.loads(subprocess.run([args.formcast_python, os.path.abspath(__file__), "--emit-tags"],
                                     check=True, capture_output=True, text=True).stdout)
    return engine_bench.driver_main(args, workloads(tags), prefix="structural_bench")


if __name__ == "__main__":
    sys.exit(main())
