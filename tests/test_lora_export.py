"""The LoRA adapter export to llama.cpp (formcast.formatter.export) and the
runtime that applies it. The end-to-end check against peft needs torch and
peft beside llama.cpp: scripts/check_lora_export.py (its figures are in
docs/formatter.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from formcast.formatter.export import GGUF_NAMES, _rope_permute


def test_rope_permutation_interleaves_the_halves_of_each_head():
    n_head, head_dim, rank = 3, 8, 2
    rows = np.arange(n_head * head_dim * rank, dtype=np.float32).reshape(n_head * head_dim, rank)
    out = _rope_permute(rows, n_head)
    half = head_dim // 2
    for h in range(n_head):
        for i in range(half):
            # llama.cpp's row 2i (2i+1) of a head is Hugging Face's row i (half + i)
            assert (out[h * head_dim + 2 * i] == rows[h * head_dim + i]).all()
            assert (out[h * head_dim + 2 * i + 1] == rows[h * head_dim + half + i]).all()


def test_every_llama_linear_layer_has_a_gguf_name():
    assert set(GGUF_NAMES) == {f"self_attn.{p}_proj" for p in "qkvo"} | {f"mlp.{p}_proj" for p in ("gate", "up", "down")}


def _write_adapter(tmp_path, scale: float, modules=("self_attn.v_proj",)):
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    tensors = {}
    for layer in range(30):
        for m in modules:
            width = 576 if m != "mlp.down_proj" else 1536
            out = {"self_attn.v_proj": 192, "self_attn.k_proj": 192}.get(m, 576)
            key = f"base_model.model.model.layers.{layer}.{m}"
            tensors[f"{key}.lora_A.weight"] = (rng.standard_normal((4, width)) * 0.05).astype(np.float32)
            tensors[f"{key}.lora_B.weight"] = (rng.standard_normal((out, 4)) * scale).astype(np.float32)
    save_file(tensors, str(tmp_path / "adapter_model.safetensors"))
    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 4, "lora_alpha": 8}))


def test_exported_adapter_changes_llama_cpp_logits_only_when_it_is_not_zero(tmp_path):
    gguf = pytest.importorskip("gguf", reason="the export needs the gguf package (train extra)")
    assert gguf
    from formcast.formatter.export import export_lora_gguf
    from formcast.runtime import load_runtime
    from formcast.runtime.base import SequenceFeed

    ids = [504, 3458, 314, 253, 12461, 2442, 28]
    outs = {}
    for name, scale in (("zero", 0.0), ("random", 0.5)):
        d = tmp_path / name
        d.mkdir()
        _write_adapter(d, scale)
        info = export_lora_gguf(d, d / "a.gguf", n_head=9, n_head_kv=3)
        assert info["modules"] == 30 and info["rank"] == 4
        rt = load_runtime(None, n_ctx=64, num_slots=1, lora=d / "a.gguf")
        outs[name] = rt.forward([SequenceFeed(0, ids, 0)])[0]
        rt.close()
    rt = load_runtime(None, n_ctx=64, num_slots=1)
    base = rt.forward([SequenceFeed(0, ids, 0)])[0]
    rt.close()
    assert np.allclose(outs["zero"], base, atol=1e-3)
    assert not np.allclose(outs["random"], base, atol=1e-1)


def test_a_missing_adapter_file_is_an_error(tmp_path):
    from formcast.runtime import load_runtime

    with pytest.raises(FileNotFoundError, match="LoRA adapter"):
        load_runtime(None, n_ctx=64, num_slots=1, lora=tmp_path / "nope.gguf")
