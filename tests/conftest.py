"""Shared fixtures: real vocabularies from ../shared and from installed packages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

import formcast as fc

# Property tests draw the same examples on every run ("ci", the default), so
# a red run is reproducible and CI never fails on a newly drawn example; run
# with HYPOTHESIS_PROFILE=explore to draw new ones (what found the repair
# cases pinned with @example), and the fuzzing step explores on every run.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
TOKENIZERS = SHARED / "tokenizers"


def mask_row_bits(mask: np.ndarray, n: int) -> np.ndarray:
    """Row 0 of a token bitmask as booleans for the first `n` token ids."""
    return np.unpackbits(mask[0].view(np.uint8), bitorder="little")[:n].astype(bool)


def accepted_by_parser(m: fc.GrammarMatcher, n: int) -> np.ndarray:
    """Which of the first `n` token ids `accept_token` takes from `m`'s
    state, one by one (each rolled back): the reference a mask is checked
    against, since acceptance takes none of the mask walk's shortcuts."""
    ok = np.zeros(n, dtype=bool)
    for t in range(n):
        if m.accept_token(t):
            ok[t] = True
            m.rollback(1)
    return ok


def mask_after(m: fc.GrammarMatcher, tok: fc.TokenizerInfo, text: str) -> np.ndarray:
    """`m`'s mask after accepting `text`, checked against token-by-token
    acceptance over the whole vocabulary (as booleans by token id)."""
    assert m.accept_string(text)
    mask = fc.allocate_token_bitmask(1, tok.logits_size)
    m.fill_next_token_bitmask(mask, 0)
    n = tok.vocab_size
    bits = mask_row_bits(mask, n)
    diff = np.flatnonzero(bits != accepted_by_parser(m, n))
    assert diff.size == 0, f"after {text!r}: mask and accept_token disagree on {[(int(t), bool(bits[t])) for t in diff[:8]]}"
    return bits


def run_with_llama3(script: str, paths: list[Path], env: dict[str, str | None], wrapper: list[str] = ()) -> str:
    """Runs `script` in a fresh interpreter (under `wrapper`, strace say)
    with the Llama-3 ranks file and `paths` as arguments, this process's
    environment changed by `env` (None removes a variable); returns what it
    printed. A fresh process: allocator settings are read at start-up."""
    full = {k: v for k, v in os.environ.items() if k not in env}
    full.update({k: v for k, v in env.items() if v is not None})
    out = subprocess.run(
        [*wrapper, sys.executable, "-c", script, str(TOKENIZERS / "llama3-tokenizer.model"), *map(str, paths)],
        env=full,
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return out.stdout


@pytest.fixture(scope="session")
def llama3() -> fc.TokenizerInfo:
    """Llama-3 (128,256 ids) from its tiktoken ranks file."""
    return fc.TokenizerInfo.from_tiktoken(TOKENIZERS / "llama3-tokenizer.model")


@pytest.fixture(scope="session")
def smollm2() -> fc.TokenizerInfo:
    """SmolLM2 (49,152 ids) from its tokenizer.json."""
    return fc.TokenizerInfo.from_huggingface(
        TOKENIZERS / "smollm2-tokenizer.json",
        tokenizer_config=TOKENIZERS / "smollm2-tokenizer_config.json",
    )
