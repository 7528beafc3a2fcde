"""The transformers runtime (optional extra) keeps the runtime contract the
decode loop relies on: logits rows as wide as the vocabulary, incremental
feeds over a slot's cache giving the same next-token logits as one full feed,
and slots that do not leak into each other. A tiny randomly initialised
Llama model with the SmolLM2 tokenizer stands in for a checkpoint (no model
hub here). Skipped when torch/transformers are not installed (they are not
part of the default set-up: torch from PyPI is a multi-GB CUDA build)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the transformers extra is not installed")
transformers = pytest.importorskip("transformers", reason="the transformers extra is not installed")

TOKENIZER = Path(__file__).resolve().parents[2] / "shared" / "tokenizers" / "smollm2-tokenizer.json"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    from formcast.runtime.transformers import TransformersRuntime

    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZER), eos_token="<|im_end|>", bos_token="<|im_start|>")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    d = tmp_path_factory.mktemp("tiny-llama")
    transformers.LlamaForCausalLM(cfg).save_pretrained(d)
    tok.save_pretrained(d)
    return TransformersRuntime(d, n_ctx=128, num_slots=2)


def test_incremental_feed_matches_full_feed(runtime):
    from formcast.runtime.base import SequenceFeed

    ids = runtime.tokenize("The quick brown fox jumps")
    full = runtime.forward([SequenceFeed(slot=0, start=0, tokens=ids)])
    assert full.shape == (1, runtime.logits_size)
    runtime.clear_slot(1)
    runtime.forward([SequenceFeed(slot=1, start=0, tokens=ids[:2])])
    step = runtime.forward([SequenceFeed(slot=1, start=2, tokens=ids[2:])])
    np.testing.assert_allclose(step[0], full[0], rtol=1e-4, atol=1e-4)


def test_slots_are_independent_and_rewind(runtime):
    from formcast.runtime.base import SequenceFeed

    a = runtime.tokenize("alpha beta")
    b = runtime.tokenize("gamma delta epsilon")
    ref = runtime.forward([SequenceFeed(slot=0, start=0, tokens=a)])
    runtime.forward([SequenceFeed(slot=1, start=0, tokens=b)])
    # Rewinding slot 0 to its first token and feeding the rest again gives
    # the same logits; slot 1's cache does not interfere.
    again = runtime.forward([SequenceFeed(slot=0, start=1, tokens=a[1:])])
    np.testing.assert_allclose(again[0], ref[0], rtol=1e-4, atol=1e-4)


def test_vocabulary_matches_the_tokenizer(runtime):
    ids = runtime.tokenize("Hello, world!")
    assert runtime.detokenize(ids) == b"Hello, world!"
    assert runtime.stop_token_ids, "end-of-generation tokens are stop tokens"
