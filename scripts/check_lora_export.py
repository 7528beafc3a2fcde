"""End-to-end check of the LoRA export: the same random adapter run by peft on
transformers and, exported, by llama.cpp must give the same logits.

    .engines-venv/bin/python scripts/check_lora_export.py make DIR   # needs torch, transformers, peft, gguf
    .venv/bin/python scripts/check_lora_export.py check DIR          # needs llama-cpp-python

``make`` puts a random rank-4 adapter on every linear layer of the embedded
SmolLM2-135M (loaded from its GGUF), saves peft's logits with and without it
for one prompt, and exports the adapter; ``check`` computes llama.cpp's logits
with and without the exported adapter and prints their correlation with
peft's, position by position (an export that put the query/key rows in the
wrong order would agree with the base model, not with peft).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

PROMPT = "Blue Spice is a coffee shop near the river. JSON:"


def make(out: Path) -> None:
    import peft
    import torch

    from formcast.formatter.export import export_lora_gguf
    from formcast.formatter.train import load_gguf

    torch.manual_seed(0)
    model, tok = load_gguf("embedded")
    pm = peft.get_peft_model(model, peft.LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))
    with torch.no_grad():
        for name, p in pm.named_parameters():
            if "lora_" in name:
                p.mul_(0.5)
    pm.save_pretrained(str(out / "adapter"))
    ids = tok(PROMPT, add_special_tokens=False).input_ids
    with torch.no_grad():
        with_adapter = pm(input_ids=torch.tensor([ids])).logits[0].numpy()
        with pm.disable_adapter():
            without = pm(input_ids=torch.tensor([ids])).logits[0].numpy()
    np.save(out / "ids.npy", np.array(ids))
    np.save(out / "peft.npy", with_adapter)
    np.save(out / "base.npy", without)
    print(export_lora_gguf(out / "adapter", out / "adapter.gguf", n_head=pm.config.num_attention_heads,
                           n_head_kv=pm.config.num_key_value_heads))


def check(out: Path) -> None:
    from formcast.runtime import load_runtime
    from formcast.runtime.base import SequenceFeed

    ids = np.load(out / "ids.npy").tolist()
    refs = {"base": np.load(out / "base.npy"), "peft": np.load(out / "peft.npy")}
    for label, lora in (("llama.cpp base", None), ("llama.cpp + adapter", out / "adapter.gguf")):
        rt = load_runtime(None, n_ctx=256, num_slots=1, lora=lora)
        rows = []
        for k in range(1, len(ids) + 1):
            rt.clear_slot(0, 0)
            rows.append(rt.forward([SequenceFeed(0, ids[:k], 0)])[0])
        rt.close()
        got = np.array(rows)[:, : refs["base"].shape[1]]
        for ref_name, ref in refs.items():
            corr = [np.corrcoef(got[i], ref[i])[0, 1] for i in range(len(ids))]
            top1 = float(np.mean(got.argmax(1) == ref.argmax(1)))
            print(f"{label:20s} vs transformers {ref_name:5s}: correlation min {min(corr):.4f} mean {np.mean(corr):.4f}, "
                  f"same top token {top1:.0%}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("make", "check"):
        sys.exit(__doc__)
    directory = Path(sys.argv[2])
    directory.mkdir(parents=True, exist_ok=True)
    (make if sys.argv[1] == "make" else check)(directory)
