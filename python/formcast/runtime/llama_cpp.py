"""llama.cpp backend (llama-cpp-python's low-level API): any GGUF model.

One ``llama_context`` holds ``num_slots`` sequences in a unified KV cache;
:meth:`LlamaCppRuntime.forward` puts the tokens of every slot it is given into
one ``llama_batch`` (continuous batching), so concurrent requests share each
forward pass.

The weights are loaded with ``use_extra_bufts = False``. llama.cpp's CPU
"extra buffer types" repack weights for AMX and other wide kernels that run
only on multi-token batches; on this project's CPUs (AMX + AVX-512) the AMX
matmul (``ggml_backend_amx_mul_mat``) segfaults on the first multi-token
batch, while one-token evals take the plain path and work. Without the extra
buffer types every matmul takes the regular ggml CPU path, for any batch size,
whatever flags the wheel was built with.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Optional, Sequence

import numpy as np

from ..tokenizer import TokenizerInfo
from .base import ModelRuntime, ModelRuntimeError, SequenceFeed

__all__ = ["LlamaCppRuntime"]

_backend_lock = threading.Lock()
_backend_ready = False


def _init_backend() -> None:
    global _backend_ready
    import llama_cpp

    with _backend_lock:
        if not _backend_ready:
            llama_cpp.llama_backend_init()
            _backend_ready = True


class LlamaCppRuntime(ModelRuntime):
    """A GGUF model on llama.cpp with ``num_slots`` batched sequences.

    ``n_ctx`` is the context of one sequence; the unified KV cache holds
    ``kv_capacity`` cells shared by all slots (default ``n_ctx * num_slots``,
    so every slot can always fill its whole context).
    ``threads`` is the number of decode threads.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        n_ctx: int = 8192,
        num_slots: int = 8,
        threads: int = 1,
        n_batch: int = 512,
        kv_capacity: Optional[int] = None,
        model_id: Optional[str] = None,
        lora: Optional[str | os.PathLike[str]] = None,
        lora_scale: float = 1.0,
    ) -> None:
        import llama_cpp

        path = Path(model_path)
        if not path.is_file():
            raise FileNotFoundError(f"GGUF model file not found: {path}")
        if n_ctx < 16 or num_slots < 1 or threads < 1 or n_batch < 1:
            raise ValueError("n_ctx >= 16, num_slots >= 1, threads >= 1 and n_batch >= 1 are required")
        self._L = llama_cpp
        _init_backend()
        mp = llama_cpp.llama_model_default_params()
        mp.n_gpu_layers = 0
        mp.use_extra_bufts = False  # see the module docstring
        from ..tokenizer_sources import _quiet_llama_cpp

        with _quiet_llama_cpp():
            self._model = llama_cpp.llama_model_load_from_file(os.fsencode(path), mp)
        if not self._model:
            raise ModelRuntimeError(f"llama.cpp could not load {path}")
        train_ctx = int(llama_cpp.llama_model_n_ctx_train(self._model))
        self.n_ctx = min(n_ctx, train_ctx) if train_ctx > 0 else n_ctx
        # Every slot can hold a full context: the cache is shared (unified) but
        # sized so that no admitted sequence can run out of cells.
        self.kv_capacity = max(kv_capacity or self.n_ctx * num_slots, self.n_ctx)
        self.num_slots = num_slots
        self.max_batch_tokens = n_batch
        cp = llama_cpp.llama_context_default_params()
        cp.n_ctx = self.kv_capacity
        cp.n_batch = n_batch
        cp.n_ubatch = n_batch
        cp.n_seq_max = num_slots
        cp.n_threads = threads
        cp.n_threads_batch = threads
        cp.kv_unified = True
        cp.no_perf = True
        with _quiet_llama_cpp():
            self._ctx = llama_cpp.llama_init_from_model(self._model, cp)
        if not self._ctx:
            llama_cpp.llama_model_free(self._model)
            raise ModelRuntimeError("llama.cpp could not create a context")
        self._lora = None
        if lora is not None:
            lora_path = Path(lora)
            if not lora_path.is_file():
                self._free_native()
                raise FileNotFoundError(f"LoRA adapter GGUF not found: {lora_path}")
            with _quiet_llama_cpp():
                self._lora = llama_cpp.llama_adapter_lora_init(self._model, os.fsencode(lora_path))
            if not self._lora or llama_cpp.llama_set_adapter_lora(self._ctx, self._lora, float(lora_scale)) != 0:
                self._free_native()
                raise ModelRuntimeError(f"llama.cpp could not apply the LoRA adapter {lora_path} to {path}")
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        self._mem = llama_cpp.llama_get_memory(self._ctx)
        self._n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self.tokenizer = TokenizerInfo.from_llama(SimpleNamespace(vocab=self._vocab))
        self.model_id = model_id or path.stem
        self.model_path = path
        self.lora_path = Path(lora) if lora is not None else None
        self._add_bos = bool(llama_cpp.llama_vocab_get_add_bos(self._vocab))
        raw = llama_cpp.llama_model_chat_template(self._model, None)
        self._template = raw.decode("utf-8") if raw else None
        self._closed = False

    # ------------------------------------------------------------ text --
    def tokenize(self, text: str, *, add_special: bool = False, parse_special: bool = True) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 8
        while True:
            buf = (self._L.llama_token * cap)()
            n = self._L.llama_tokenize(self._vocab, data, len(data), buf, cap, add_special and self._add_bos, parse_special)
            if n >= 0:
                return list(buf[:n])
            cap = -n

    @property
    def chat_template(self) -> Optional[str]:
        return self._template

    def _special_text(self, token: int) -> str:
        if token < 0 or token >= self._n_vocab:
            return ""
        return self.tokenizer.token_bytes(token).decode("utf-8", "replace")

    @property
    def bos_token(self) -> str:
        return self._special_text(int(self._L.llama_vocab_bos(self._vocab)))

    @property
    def eos_token(self) -> str:
        return self._special_text(int(self._L.llama_vocab_eos(self._vocab)))

    # ---------------------------------------------------------- decode --
    def clear_slot(self, slot: int, keep: int = 0) -> None:
        self._L.llama_memory_seq_rm(self._mem, slot, keep, -1)

    def forward(self, feeds: Sequence[SequenceFeed]) -> np.ndarray:
        L = self._L
        out = np.empty((len(feeds), self.logits_size), dtype=np.float32)
        # Flatten to (feed index, slot, position, token, wants logits).
        items = []
        for i, f in enumerate(feeds):
            if not f.tokens:
                raise ValueError(f"feed {i} has no tokens")
            if f.start + len(f.tokens) > self.n_ctx:
                raise ModelRuntimeError(f"slot {f.slot} would exceed the context of {self.n_ctx} tokens")
            L.llama_memory_seq_rm(self._mem, f.slot, f.start, -1)
            last = len(f.tokens) - 1
            for j, t in enumerate(f.tokens):
                items.append((i, f.slot, f.start + j, int(t), j == last))
        b = self._batch
        for lo in range(0, len(items), self.max_batch_tokens):
            chunk = items[lo : lo + self.max_batch_tokens]
            for k, (_, slot, pos, tok, want) in enumerate(chunk):
                b.token[k] = tok
                b.pos[k] = pos
                b.n_seq_id[k] = 1
                b.seq_id[k][0] = slot
                b.logits[k] = 1 if want else 0
            b.n_tokens = len(chunk)
            rc = L.llama_decode(self._ctx, b)
            if rc != 0:
                raise ModelRuntimeError(
                    "llama_decode failed" + (" (no room left in the KV cache)" if rc == 1 else f" (code {rc})")
                )
            for k, (i, _, _, _, want) in enumerate(chunk):
                if want:
                    ptr = L.llama_get_logits_ith(self._ctx, k)
                    row = np.ctypeslib.as_array(ptr, shape=(self._n_vocab,))
                    out[i, : self._n_vocab] = row
                    if self.logits_size > self._n_vocab:
                        out[i, self._n_vocab :] = -np.inf
        return out

    def _free_native(self) -> None:
        # Adapters are freed with their model (llama.cpp's rule).
        self._L.llama_free(self._ctx)
        self._L.llama_model_free(self._model)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        L = self._L
        L.llama_batch_free(self._batch)
        L.llama_free(self._ctx)
        L.llama_model_free(self._model)

    def describe(self) -> dict:
        d = super().describe()
        d.update(backend="llama.cpp", path=str(self.model_path))
        if self.lora_path is not None:
            d.update(lora=str(self.lora_path))
        return d
