"""Tokenizer sources: the same model through different sources gives the same bytes."""

from __future__ import annotations

import base64

import pytest

import formcast as fc
from conftest import TOKENIZERS


def test_smollm2_tokenizer_json_matches_gguf(smollm2):
    pytest.importorskip("llama_cpp")
    from formcast.tokenizer_sources import default_model_path

    gguf = fc.TokenizerInfo.from_llama(default_model_path())
    assert gguf.vocab_size == smollm2.vocab_size == 49152
    assert gguf.all_token_bytes() == smollm2.all_token_bytes()
    assert gguf.special_token_ids == smollm2.special_token_ids
    # llama.cpp also counts the fill-in-the-middle <reponame> (id 4) as an
    # end-of-generation token; both agree on <|endoftext|> and <|im_end|>.
    assert {0, 2} <= set(gguf.stop_token_ids)
    assert set(smollm2.stop_token_ids) == {0, 2}
    # Some pieces are longer than 32 bytes and must come back whole.
    assert max(len(b) for b in gguf.all_token_bytes()) > 32


def test_smollm2_three_sources_identical(smollm2):
    """tokenizer.json vs a plain byte list vs tokenizer.json text."""
    raw = fc.TokenizerInfo.from_vocab(smollm2.all_token_bytes(), special_token_ids=smollm2.special_token_ids)
    text = (TOKENIZERS / "smollm2-tokenizer.json").read_text()
    again = fc.TokenizerInfo.from_huggingface(text)
    assert raw.all_token_bytes() == smollm2.all_token_bytes() == again.all_token_bytes()
    assert smollm2.token_bytes(smollm2.token_id(" hello")) == b" hello"
    assert smollm2.kind == "byte_level"


def test_llama3_tiktoken_ranks_and_specials(llama3):
    assert llama3.vocab_size == 128256
    assert llama3.stop_token_ids == [128001, 128008, 128009]
    assert len(llama3.special_token_ids) == 256
    # Every rank decodes to exactly the base64 bytes of its line.
    lines = (TOKENIZERS / "llama3-tokenizer.model").read_text().splitlines()
    for line in lines[::997]:
        b64, rank = line.split()
        assert llama3.token_bytes(int(rank)) == base64.b64decode(b64)
    assert llama3.token_bytes(128009) == b"<|eot_id|>"


def test_logits_padding_is_always_masked():
    tok = fc.TokenizerInfo.from_vocab([b"a", b"b", b"<eos>"], special_token_ids=[2], stop_token_ids=[2], logits_size=40)
    compiled = fc.GrammarCompiler(tok).compile(fc.Grammar.from_regex("[ab]*"))
    bm = fc.allocate_token_bitmask(1, 40)
    fc.GrammarMatcher(compiled).fill_next_token_bitmask(bm)
    allowed = fc.bitmask_to_bool(bm, 40)[0]
    assert allowed[:3].tolist() == [True, True, True]
    assert not allowed[3:].any()


def test_bad_vocabularies_are_clear_errors():
    with pytest.raises(fc.TokenizerError, match="logits_size"):
        fc.TokenizerInfo.from_vocab([b"a", b"b"], logits_size=1)
    with pytest.raises(fc.TokenizerError, match="stop token id 7"):
        fc.TokenizerInfo.from_vocab([b"a"], stop_token_ids=[7])
    with pytest.raises(fc.TokenizerError):
        fc.TokenizerInfo.from_huggingface("{not json")
