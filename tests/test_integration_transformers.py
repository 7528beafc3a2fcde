"""formcast in transformers' generate(): FormcastLogitsProcessor over a tiny
random Llama with the real SmolLM2 vocabulary, and the torch path of
apply_token_bitmask_inplace. Skipped where torch and transformers are not
installed (they are not part of the default set-up: torch from PyPI is a
multi-GB CUDA build); the GPU path is checked by scripts/gpu_check.sh."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from conftest import TOKENIZERS

torch = pytest.importorskip("torch", reason="torch is not installed")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")

import formcast as fc  # noqa: E402
from formcast.integrations.transformers import FormcastLogitsProcessor, RowsReorderedError  # noqa: E402

SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["a"], "additionalProperties": False},
    {"type": "object", "properties": {"b": {"enum": ["x", "y"]}}, "required": ["b"], "additionalProperties": False},
    {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2},
    {"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}, "required": ["s"], "additionalProperties": False},
]
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "maxLength": 8}}, "required": ["city"], "additionalProperties": False}}}


@pytest.fixture(scope="module")
def setup():
    tok = fc.TokenizerInfo.from_huggingface(TOKENIZERS / "smollm2-tokenizer.json", tokenizer_config=TOKENIZERS / "smollm2-tokenizer_config.json")
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZERS / "smollm2-tokenizer.json"), eos_token="<|im_end|>")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=tok.logits_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2)
    model = transformers.LlamaForCausalLM(cfg).eval()
    return tok, hf, model, fc.GrammarCompiler(tok)


def generate(setup, processor, rows: int, **kw):
    tok, hf, model, _ = setup
    ids = torch.tensor([hf.encode("Answer:")] * rows)
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), logits_processor=[processor], max_new_tokens=48,
                         eos_token_id=tok.stop_token_ids, pad_token_id=tok.stop_token_ids[0], **kw)
    return [hf.decode(out[i, ids.shape[1]:], skip_special_tokens=False).split("<|im_end|>")[0].replace("<|endoftext|>", "")
            for i in range(rows)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_row_follows_its_own_schema(setup, seed):
    *_, compiler = setup
    torch.manual_seed(seed)
    texts = generate(setup, FormcastLogitsProcessor([compiler.compile_json_schema(s, whitespace="compact") for s in SCHEMAS]),
                     len(SCHEMAS), do_sample=True)
    for text, schema in zip(texts, SCHEMAS):
        jsonschema.validate(json.loads(text), schema)


def test_a_tool_call_tag_beside_schemas(setup):
    from formcast.styles import structural_tag_for
    from formcast.toolcalls import parse_output

    *_, compiler = setup
    tag = structural_tag_for("qwen_3", [WEATHER], "required", parallel_tool_calls=False, reasoning="disabled")
    grammars = [compiler.compile_structural_tag(tag), compiler.compile_json_schema(SCHEMAS[0], whitespace="compact")]
    torch.manual_seed(3)
    call_text, json_text = generate(setup, FormcastLogitsProcessor(grammars), 2, do_sample=True)
    calls = parse_output(tag, call_text, tools=[WEATHER]).tool_calls
    assert len(calls) == 1 and calls[0].name == "get_weather" and calls[0].complete
    jsonschema.validate(json.loads(calls[0].arguments), WEATHER["function"]["parameters"])
    jsonschema.validate(json.loads(json_text), SCHEMAS[0])


def test_one_grammar_serves_every_row_and_greedy_search(setup):
    *_, compiler = setup
    texts = generate(setup, FormcastLogitsProcessor(compiler.compile_json_schema(SCHEMAS[1], whitespace="compact")), 3, do_sample=False)
    for text in texts:
        jsonschema.validate(json.loads(text), SCHEMAS[1])


def test_beam_search_and_reuse_are_refused_clearly(setup):
    *_, compiler = setup
    grammars = [compiler.compile_json_schema(s) for s in SCHEMAS[:2]]
    with pytest.raises(ValueError, match="beam search is not supported"):
        generate(setup, FormcastLogitsProcessor(grammars), 2, num_beams=2)
    one = FormcastLogitsProcessor(grammars[0])
    with pytest.raises((RowsReorderedError, ValueError), match="beam search"):
        generate(setup, one, 2, num_beams=3, do_sample=False)
    used = FormcastLogitsProcessor(grammars)
    generate(setup, used, 2, do_sample=False)
    with pytest.raises(RowsReorderedError, match="one generate call"):
        generate(setup, used, 2, do_sample=False)


def test_torch_and_numpy_masks_agree():
    rng = np.random.default_rng(0)
    for vocab, width_extra in [(100, 0), (4096, 0), (4100, 0), (50, -1)]:
        words = (vocab + 31) // 32 + width_extra
        bitmask = rng.integers(-(2**31), 2**31 - 1, size=(3, words), dtype=np.int64).astype(np.int32)
        logits = rng.standard_normal((3, vocab)).astype(np.float32)
        expected = logits.copy()
        fc.apply_token_bitmask_inplace(expected, bitmask)
        t = torch.from_numpy(logits.copy())
        fc.apply_token_bitmask_inplace(t, torch.from_numpy(bitmask))
        assert np.array_equal(np.isinf(t.numpy()), np.isinf(expected)), vocab
        # Selected rows only: row indices[i] takes bitmask row i.
        t = torch.from_numpy(logits.copy())
        fc.apply_token_bitmask_inplace(t, bitmask[:2], indices=[2, 0])
        picked = logits.copy()
        fc.apply_token_bitmask_inplace(picked, bitmask[:2], indices=[2, 0])
        assert np.array_equal(np.isinf(t.numpy()), np.isinf(picked))
        assert not np.isinf(t.numpy()[1]).any()
