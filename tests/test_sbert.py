"""The numpy all-MiniLM-L6-v2 reproduces sentence-transformers (torch) embeddings.

tests/data/sbert/reference.npz was made by tests/data/sbert/make_reference.py
with the real sentence-transformers in a separate torch venv.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from formcast.evaluate.sbert import MiniLMEncoder, ModelNotFoundError, get_encoder

REFERENCE = Path(__file__).parent / "data" / "sbert" / "reference.npz"


@pytest.fixture(scope="module")
def reference():
    data = np.load(REFERENCE)
    return [str(s) for s in data["sentences"]], data["embeddings"]


def test_numpy_encoder_matches_sentence_transformers(reference):
    sentences, expected = reference
    assert len(sentences) >= 30
    got = get_encoder().encode(sentences)
    assert got.shape == expected.shape == (len(sentences), 384)
    cos = (got * expected).sum(axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(expected, axis=1))
    worst = int(np.argmin(cos))
    assert cos.min() >= 0.9999, f"{sentences[worst][:60]!r}: cosine {cos[worst]}"


def test_embeddings_are_unit_vectors_and_order_independent(reference):
    sentences, _ = reference
    enc = get_encoder()
    forward = enc.encode(sentences)
    backward = enc.encode(sentences[::-1])[::-1]
    np.testing.assert_allclose(np.linalg.norm(forward, axis=1), 1.0, atol=1e-5)
    # Batching and padding do not change an embedding.
    np.testing.assert_allclose(forward, backward, atol=1e-5)


def test_long_inputs_truncate_at_256_word_pieces(reference):
    sentences, expected = reference
    longest = max(sentences, key=len)
    enc = get_encoder()
    assert len(enc.tokenizer.encode(longest).ids) == 256
    assert enc.max_seq_length == 256


def test_similarity_ranks_related_strings_higher():
    enc = get_encoder()
    assert enc.similarity("coffee shop", "café") > enc.similarity("coffee shop", "Fighter pilot")
    assert enc.similarity("same", "same") == pytest.approx(1.0, abs=1e-5)


def test_empty_batch():
    assert get_encoder().encode([]).shape == (0, 384)


def test_missing_model_directory_is_reported(tmp_path):
    with pytest.raises(ModelNotFoundError, match="model.safetensors"):
        MiniLMEncoder(tmp_path)
