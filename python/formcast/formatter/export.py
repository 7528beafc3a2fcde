"""A trained LoRA adapter as a llama.cpp adapter GGUF, so ``formcast serve``
and the local backend run the fine-tuned formatter on the same quantized
base model it was trained against.

llama.cpp reads an adapter GGUF with ``general.type = "adapter"``,
``adapter.type = "lora"``, ``adapter.lora.alpha`` and, per adapted base
tensor ``W`` (GGUF name, e.g. ``blk.3.attn_v.weight``), the two factors
``W.lora_a`` (rank x inputs) and ``W.lora_b`` (outputs x rank); it adds
``alpha / rank * B A`` to ``W``.

Llama GGUF files store the query and key projections with their rows
permuted for llama.cpp's rotary embedding (per head, the two halves of the
rotated dimensions interleaved); transformers undoes that permutation when
it loads a GGUF, so an adapter trained on the loaded model has its ``B``
factors of ``q_proj``/``k_proj`` in the un-permuted order and gets the
permutation back here. Needs the ``gguf`` and ``safetensors`` packages
(the ``train`` extra).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["export_lora_gguf", "GGUF_NAMES"]

#: Hugging Face Llama module -> llama.cpp GGUF tensor (per layer ``blk.N.``).
GGUF_NAMES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def _rope_permute(rows: np.ndarray, n_head: int) -> np.ndarray:
    # Hugging Face order -> GGUF order of the output rows of q/k (see module docs).
    out = rows.shape[0]
    return rows.reshape(n_head, 2, out // n_head // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def export_lora_gguf(adapter_dir: str | Path, out_path: str | Path, *, n_head: int, n_head_kv: int,
                     architecture: str = "llama") -> dict[str, Any]:
    """Write the PEFT adapter in ``adapter_dir`` (``adapter_config.json`` and
    ``adapter_model.safetensors``) as a llama.cpp LoRA adapter GGUF.

    Args:
        n_head, n_head_kv: the base model's attention heads and key/value
            heads (``llama.attention.head_count`` / ``head_count_kv``).

    Returns:
        a summary: tensors written, rank, alpha, bytes.

    Raises:
        ValueError: a module the adapter adapts has no llama.cpp tensor here.
    """
    import gguf
    from safetensors.numpy import load_file

    adapter_dir = Path(adapter_dir)
    config = json.loads((adapter_dir / "adapter_config.json").read_text(encoding="utf-8"))
    weights = load_file(str(adapter_dir / "adapter_model.safetensors"))
    rank, alpha = int(config["r"]), float(config["lora_alpha"])
    writer = gguf.GGUFWriter(str(out_path), arch=architecture)
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", alpha)
    count = 0
    for name in sorted(weights):
        if ".lora_A." not in name:
            continue
        # base_model.model.model.layers.{i}.{module}.lora_A.weight
        prefix = name.split(".lora_A.")[0]
        parts = prefix.split(".")
        try:
            layer = int(parts[parts.index("layers") + 1])
        except (ValueError, IndexError):
            raise ValueError(f"{name}: not a per-layer module; only {sorted(GGUF_NAMES)} can be exported") from None
        module = ".".join(parts[parts.index("layers") + 2 :])
        if module not in GGUF_NAMES:
            raise ValueError(f"{name}: {module} has no llama.cpp tensor; adapt only {sorted(GGUF_NAMES)}")
        a = weights[name].astype(np.float32)
        b = weights[prefix + ".lora_B.weight"].astype(np.float32)
        if module == "self_attn.q_proj":
            b = _rope_permute(b, n_head)
        elif module == "self_attn.k_proj":
            b = _rope_permute(b, n_head_kv)
        base = f"blk.{layer}.{GGUF_NAMES[module]}.weight"
        # float16 halves the file; llama.cpp adds the product in float32.
        writer.add_tensor(base + ".lora_a", np.ascontiguousarray(a, dtype=np.float16))
        writer.add_tensor(base + ".lora_b", np.ascontiguousarray(b, dtype=np.float16))
        count += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return {"modules": count, "rank": rank, "alpha": alpha, "bytes": Path(out_path).stat().st_size}
