"""Shared fixtures: real vocabularies from ../shared and from installed packages."""

from __future__ import annotations

from pathlib import Path

import pytest

import formcast as fc

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
TOKENIZERS = SHARED / "tokenizers"


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
