"""Hugging Face transformers backend (optional extra ``formcast[transformers]``)
for safetensors checkpoints.

Each slot keeps its own ``past_key_values``; :meth:`forward` runs the slots
it is given one after the other (no padding-based batching), so the
scheduler's interface is the same as llama.cpp's. torch and transformers are
imported only when this backend is chosen.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence

import numpy as np

from ..tokenizer import TokenizerInfo
from .base import ModelRuntime, ModelRuntimeError, SequenceFeed

__all__ = ["TransformersRuntime"]


class TransformersRuntime(ModelRuntime):
    """A causal LM loaded with ``AutoModelForCausalLM`` on CPU (or
    ``device``); the vocabulary comes from its ``tokenizer.json``."""

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        n_ctx: int = 8192,
        num_slots: int = 8,
        threads: int = 1,
        device: str = "cpu",
        model_id: Optional[str] = None,
    ) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:  # pragma: no cover - depends on the extra
            raise ModelRuntimeError(
                "the transformers backend needs `pip install formcast[transformers]`"
            ) from e
        self._torch = torch
        torch.set_num_threads(threads)
        self._hf_tok = AutoTokenizer.from_pretrained(str(model_path))
        self._model = AutoModelForCausalLM.from_pretrained(str(model_path)).to(device).eval()
        self._device = device
        cfg = self._model.config
        logits_size = int(getattr(cfg, "vocab_size", len(self._hf_tok)))
        self.tokenizer = TokenizerInfo.from_huggingface(str(model_path), logits_size=max(logits_size, len(self._hf_tok)))
        max_pos = int(getattr(cfg, "max_position_embeddings", n_ctx) or n_ctx)
        self.n_ctx = min(n_ctx, max_pos)
        self.kv_capacity = self.n_ctx * num_slots
        self.num_slots = num_slots
        self.max_batch_tokens = 512
        self.model_id = model_id or os.path.basename(os.path.normpath(str(model_path)))
        self._past: dict[int, Any] = {}
        self._length: dict[int, int] = {}

    def tokenize(self, text: str, *, add_special: bool = False, parse_special: bool = True) -> list[int]:
        if parse_special:
            return list(self._hf_tok.encode(text, add_special_tokens=add_special))
        # Special-token text is split into ordinary tokens.
        return list(self._hf_tok(text, add_special_tokens=add_special, split_special_tokens=True)["input_ids"])

    @property
    def chat_template(self) -> Optional[str]:
        t = getattr(self._hf_tok, "chat_template", None)
        return t if isinstance(t, str) else None

    @property
    def bos_token(self) -> str:
        return self._hf_tok.bos_token or ""

    @property
    def eos_token(self) -> str:
        return self._hf_tok.eos_token or ""

    def clear_slot(self, slot: int, keep: int = 0) -> None:
        past = self._past.get(slot)
        if past is None:
            return
        if keep <= 0:
            self._past.pop(slot, None)
            self._length[slot] = 0
        elif keep < self._length.get(slot, 0):
            # A negative argument ("drop this many from the end") is what every
            # transformers version's cache accepts; 5.x refuses a positive length.
            past.crop(keep - self._length[slot])
            self._length[slot] = keep

    def forward(self, feeds: Sequence[SequenceFeed]) -> np.ndarray:
        torch = self._torch
        out = np.empty((len(feeds), self.logits_size), dtype=np.float32)
        with torch.inference_mode():
            for i, f in enumerate(feeds):
                if f.start + len(f.tokens) > self.n_ctx:
                    raise ModelRuntimeError(f"slot {f.slot} would exceed the context of {self.n_ctx} tokens")
                self.clear_slot(f.slot, f.start)
                if f.start > self._length.get(f.slot, 0):
                    raise ModelRuntimeError(f"slot {f.slot}: feed starts past the cached positions")
                ids = torch.tensor([list(f.tokens)], device=self._device)
                res = self._model(input_ids=ids, past_key_values=self._past.get(f.slot), use_cache=True)
                self._past[f.slot] = res.past_key_values
                self._length[f.slot] = f.start + len(f.tokens)
                row = res.logits[0, -1].float().cpu().numpy()
                n = min(row.shape[0], self.logits_size)
                out[i, :n] = row[:n]
                out[i, n:] = -np.inf
        return out

    def describe(self) -> dict:
        d = super().describe()
        d.update(backend="transformers")
        return d
