"""The "local" formatter backend with the real embedded SmolLM2-135M-Instruct.

Generation is greedy and short (max_tokens <= 96) to keep the tests fast.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

pytest.importorskip("llama_cpp", reason="the local backend needs llama-cpp-python")

from formcast.formatter import (  # noqa: E402
    BackendError,
    FormatError,
    Formatter,
    GenerationRequest,
    available_backends,
    create_backend,
    load_jsonl,
)
from formcast.tokenizer_sources import default_model_path  # noqa: E402

try:
    MODEL = default_model_path()
except FileNotFoundError as exc:  # pragma: no cover - set-up installs it
    pytest.skip(f"the embedded model is not installed: {exc}", allow_module_level=True)

from formcast.formatter.local import LocalBackend  # noqa: E402

SLOT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "slot"
E2E = SLOT / "e2e-dev.jsonl"
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "eatType": {"type": "string"}, "area": {"type": "string"}},
    "required": ["name", "eatType", "area"],
    "additionalProperties": False,
}
TEXT = "A coffee shop in the city centre area called Blue Spice."


@pytest.fixture(scope="module")
def backend():
    b = LocalBackend(n_ctx=1024, num_slots=2)
    yield b
    b.close()


def test_local_is_a_registered_backend():
    assert "local" in available_backends()
    from formcast.formatter.backends import _REGISTRY

    create_backend.__call__  # the registry is filled on first use
    Formatter(max_tokens=8)  # lazy: nothing is loaded yet
    import formcast.formatter.local  # noqa: F401

    assert _REGISTRY["local"] is LocalBackend


def test_constrained_output_matches_the_schema(backend):
    fmt = Formatter(backend=backend, max_tokens=96)
    value = fmt.format(TEXT, SCHEMA)
    assert set(value) == {"name", "eatType", "area"}
    jsonschema.validate(value, SCHEMA)
    c = fmt.generate(TEXT, SCHEMA)
    assert c.finish_reason == "stop"
    assert json.loads(c.text) == value  # greedy: the same answer twice
    assert c.usage["completion_tokens"] > 0 and c.usage["prompt_tokens"] > 20


def test_constrained_nested_schema_of_a_webnlg_example(backend):
    ex = load_jsonl(SLOT / "webnlg-dev.jsonl")[0]
    fmt = Formatter(backend=backend, max_tokens=96)
    c = fmt.generate(ex.input_text, ex.json_schema)
    if c.finish_reason == "stop":  # complete: valid against the full schema
        jsonschema.validate(json.loads(c.text), ex.json_schema)
    else:  # cut off by max_tokens: a prefix of a valid document, never anything else
        assert c.finish_reason == "length" and c.text.lstrip().startswith("{")


def test_prompting_only_is_not_masked(backend):
    fmt = Formatter(backend=backend, constrained=False, max_tokens=12)
    assert fmt.request(TEXT, SCHEMA).schema is None
    a = fmt.generate(TEXT, SCHEMA)
    b = fmt.generate(TEXT, SCHEMA)
    assert a.text == b.text and a.text  # greedy decoding is deterministic
    assert a.finish_reason in ("stop", "length") and a.usage["completion_tokens"] <= 12
    # The same prompt constrained to a schema the model would never write
    # unprompted: the mask forces it.
    odd = {"type": "object", "properties": {"zzz": {"type": "integer"}}, "required": ["zzz"], "additionalProperties": False}
    forced = Formatter(backend=backend, max_tokens=24).generate(TEXT, odd)
    assert forced.text != a.text
    assert list(json.loads(forced.text)) == ["zzz"] and isinstance(json.loads(forced.text)["zzz"], int)


def test_max_tokens_cut_is_reported(backend):
    # Prompting only: the cut answer is returned as it is.
    fmt = Formatter(backend=backend, constrained=False, max_tokens=3)
    c = fmt.generate(TEXT, SCHEMA)
    assert c.finish_reason == "length" and c.usage["completion_tokens"] == 3
    with pytest.raises(FormatError, match="max_tokens=3"):
        fmt.format(TEXT, SCHEMA)


def test_batched_outputs_stay_with_their_inputs(backend):
    """Four requests decoded together, each under its own schema. llama.cpp's
    batched kernels are not bit-identical to one-sequence ones (greedy
    choices can flip on near-ties), so the texts are not compared with a
    one-by-one run; what must hold is that each output follows its own
    request's schema (their key sets differ) and is valid when complete."""
    examples = []
    for ex in load_jsonl(E2E):
        if all(set(ex.json_schema["properties"]) != set(e.json_schema["properties"]) for e in examples):
            examples.append(ex)
        if len(examples) == 4:
            break
    texts = [ex.input_text for ex in examples]
    schemas = [ex.json_schema for ex in examples]
    together = Formatter(backend=backend, max_tokens=96, max_workers=4)
    outs = [c.text for c in together.generate_batch(texts, schemas, progress=False)]
    assert len(outs) == 4
    for text, schema in zip(outs, schemas):
        keys = re.findall(r'"(\w+)"\s*:', text)  # compact or pretty-printed
        assert keys and keys == list(schema["properties"])[: len(keys)], (text, schema)
        if text.rstrip().endswith("}"):
            jsonschema.validate(json.loads(text), schema)


def test_bad_schema_and_missing_model_are_backend_errors(backend):
    with pytest.raises(BackendError, match="grammar"):
        backend.generate(GenerationRequest("x", schema={"type": "object", "properties": {"a": {"type": "no-such-type"}}}))
    with pytest.raises(BackendError, match="not found"):
        Formatter("/nonexistent/model.gguf").format(TEXT, SCHEMA)


def test_a_gguf_path_loads_that_model():
    fmt = Formatter(str(MODEL), n_ctx=512, num_slots=1, max_tokens=64)
    try:
        assert fmt.backend.name == "local"
        assert fmt.backend.runtime.model_path == MODEL
        jsonschema.validate(fmt.format(TEXT, SCHEMA), SCHEMA)
    finally:
        fmt.backend.close()
    with pytest.raises(BackendError, match="closed"):
        fmt.backend.generate(GenerationRequest(TEXT))


def _cut_backend(backend, complete: bool):
    """The fixture's backend with complete_on_length set (restored by the caller)."""
    old = backend.complete_on_length
    backend.complete_on_length = complete
    return old


@pytest.mark.parametrize("max_tokens", [1, 3, 8, 20])
@pytest.mark.parametrize("which", ["e2e", "webnlg"])
def test_budget_running_out_still_gives_a_schema_valid_answer(backend, which, max_tokens):
    # complete_on_length (the default): the answer is closed along the
    # grammar's shortest completion when the budget would run out first.
    ex = load_jsonl(SLOT / f"{which}-dev.jsonl")[1]
    fmt = Formatter(backend=backend, max_tokens=max_tokens)
    c = fmt.generate(ex.input_text, ex.json_schema)
    assert c.finish_reason == "length" or max_tokens > 3  # 20 tokens may be enough for a short answer
    value = json.loads(c.text)  # complete JSON by itself
    jsonschema.validate(value, ex.json_schema)
    assert fmt.format(ex.input_text, ex.json_schema) == value


def test_completion_stays_within_the_budget_when_it_fits(backend):
    # Flat all-string schema: no single token lengthens the completion, so the
    # closed answer ends within max_tokens, and it starts with what the model
    # wrote (the same greedy prefix as an uncut answer).
    ex = load_jsonl(E2E)[1]
    full = Formatter(backend=backend, max_tokens=256).generate(ex.input_text, ex.json_schema)
    assert full.finish_reason == "stop"
    n = full.usage["completion_tokens"]
    budget = max(16, n - 8)
    cut = Formatter(backend=backend, max_tokens=budget).generate(ex.input_text, ex.json_schema)
    assert cut.finish_reason == "length" and cut.usage["completion_tokens"] <= budget
    jsonschema.validate(json.loads(cut.text), ex.json_schema)
    common = 0
    while common < min(len(cut.text), len(full.text)) and cut.text[common] == full.text[common]:
        common += 1
    assert common >= len(cut.text) // 2


def test_without_complete_on_length_the_answer_is_cut(backend):
    old = _cut_backend(backend, False)
    try:
        fmt = Formatter(backend=backend, max_tokens=3)
        assert fmt.describe()["complete_on_length"] is False
        c = fmt.generate(TEXT, SCHEMA)
        assert c.finish_reason == "length" and c.usage["completion_tokens"] == 3
        with pytest.raises(FormatError, match="max_tokens=3"):
            fmt.format(TEXT, SCHEMA)
    finally:
        backend.complete_on_length = old
