"""Matcher behaviour users rely on: real grammars driven token by token,
rollback, jump-forward, batches, bitmask application and termination."""

from __future__ import annotations

import numpy as np
import pytest
from tokenizers import Tokenizer

import formcast as fc
from conftest import ROOT, TOKENIZERS

GBNF = ROOT / "tests" / "data" / "gbnf"

# One valid document per llama.cpp sample grammar.
VALID = {
    "json": '{"name": "formcast", "tags": ["a", "b\\n"], "n": -1.5e3, "ok": true, "none": null}',
    "json_arr": '[\n{"a": 1},\n"x"]',
    "arithmetic": "1+2*(3-x1)= 7\n",
    "chess": "1. e4 e5\n2. Nf3 Nc6\n",
    "list": "- milk\n- eggs\n",
    "english": "Hello, world! 42",
    "japanese": "こんにちは 世界",
    "c": "int main(){int x = 1;return x;}",
}
INVALID = {
    "json": '{"a" 1}',
    "arithmetic": "1+=2\n",
    "chess": "1. e9",
    "list": "* milk\n",
    "c": "int main(){x = ;}",
}


@pytest.fixture(scope="module")
def hf_tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(TOKENIZERS / "smollm2-tokenizer.json"))


@pytest.fixture(scope="module")
def compiler(smollm2) -> fc.GrammarCompiler:
    return fc.GrammarCompiler(smollm2)


def allowed_ids(matcher, tok) -> np.ndarray:
    bm = fc.allocate_token_bitmask(1, tok.logits_size)
    matcher.fill_next_token_bitmask(bm)
    return fc.bitmask_to_bool(bm, tok.logits_size)[0]


@pytest.mark.parametrize("name", sorted(VALID))
def test_llama_cpp_sample_grammars_accept_valid_documents(name, compiler, smollm2, hf_tokenizer):
    grammar = fc.Grammar.from_ebnf((GBNF / f"{name}.gbnf").read_text())
    matcher = fc.GrammarMatcher(compiler.compile(grammar))
    ids = hf_tokenizer.encode(VALID[name], add_special_tokens=False).ids
    for i, t in enumerate(ids):
        assert allowed_ids(matcher, smollm2)[t], f"{name}: token {i} {smollm2.token_bytes(t)!r} not in mask"
        assert matcher.accept_token(t)
    assert matcher.can_terminate()
    stop = smollm2.stop_token_ids[0]
    assert allowed_ids(matcher, smollm2)[stop]
    assert matcher.accept_token(stop)
    assert matcher.is_terminated()


@pytest.mark.parametrize("name", sorted(INVALID))
def test_llama_cpp_sample_grammars_reject_invalid_documents(name, compiler):
    matcher = fc.GrammarMatcher(compiler.compile(fc.Grammar.from_ebnf((GBNF / f"{name}.gbnf").read_text())))
    text = INVALID[name]
    # Some prefix must be refused, and the refusal must leave the state usable.
    accepted = 0
    for ch in text:
        if not matcher.accept_string(ch):
            break
        accepted += 1
    assert accepted < len(text)
    assert matcher.num_rollbackable == accepted


def test_all_sample_grammar_files_load(compiler):
    files = sorted(GBNF.glob("*.gbnf"))
    assert len(files) >= 8
    for f in files:
        compiler.compile(fc.Grammar.from_ebnf(f.read_text()))


def test_rollback_restores_state_and_masks(compiler, smollm2, hf_tokenizer):
    matcher = fc.GrammarMatcher(compiler.compile_builtin_json())
    ids = hf_tokenizer.encode('{"key": [1, 2, {"x": "yz"}]}', add_special_tokens=False).ids
    masks = []
    for t in ids:
        masks.append(allowed_ids(matcher, smollm2))
        assert matcher.accept_token(t)
    for k in range(len(ids), 0, -1):
        matcher.rollback(1)
        assert (allowed_ids(matcher, smollm2) == masks[k - 1]).all()
    with pytest.raises(ValueError, match="roll back"):
        matcher.rollback(1)
    # Speculative decoding: accept a draft, reject its tail, continue.
    for t in ids[:5]:
        matcher.accept_token(t)
    matcher.rollback(3)
    for t in ids[2:]:
        assert matcher.accept_token(t)
    assert matcher.can_terminate()


def test_max_rollback_bounds_history(compiler):
    matcher = fc.GrammarMatcher(compiler.compile_regex("[a-z]+"), max_rollback_tokens=2)
    for ch in "abcde":
        assert matcher.accept_string(ch)
    assert matcher.num_rollbackable == 2


def test_jump_forward_string(compiler):
    grammar = fc.Grammar.from_ebnf(
        'root ::= "{\\"name\\": \\"" [a-z]+ "\\", \\"kind\\": " ("\\"tool\\"" | "\\"text\\"") "}"'
    )
    matcher = fc.GrammarMatcher(compiler.compile(grammar))
    assert matcher.find_jump_forward_string() == '{"name": "'
    assert matcher.accept_string('{"name": "ab')
    assert matcher.find_jump_forward_string() == ""
    assert matcher.accept_string('"')
    assert matcher.find_jump_forward_string() == ', "kind": "t'
    # Jump-forward does not move the matcher.
    assert matcher.accept_string(', "kind": "text"}')
    assert matcher.can_terminate()
    assert matcher.find_jump_forward_string() == ""


def test_jump_forward_stops_at_utf8_boundary(compiler):
    matcher = fc.GrammarMatcher(compiler.compile(fc.Grammar.from_ebnf('root ::= "日本" ("語" | "人")')))
    assert matcher.find_jump_forward_string() == "日本"


def test_accept_string_refuses_without_changing_state(compiler):
    matcher = fc.GrammarMatcher(compiler.compile_regex(r"\d{3}-\d{4}"))
    assert matcher.accept_string("555")
    assert not matcher.accept_string("5")
    assert matcher.accept_string("-")
    assert matcher.accept_string(b"1234")
    assert matcher.can_terminate()


def test_batch_fill_equals_single_fills(compiler, smollm2, hf_tokenizer):
    grammars = [compiler.compile_builtin_json(), compiler.compile_regex("[0-9]+(\\.[0-9]+)?"), compiler.compile_ebnf('root ::= "yes" | "no"')]
    prefixes = ['{"a": [1, ', "12.", "y"]
    matchers = []
    for cg, p in zip(grammars, prefixes):
        m = fc.GrammarMatcher(cg)
        assert m.accept_string(p)
        matchers.append(m)
    batch = fc.allocate_token_bitmask(4, smollm2.logits_size)
    fc.fill_next_token_bitmask_batch(matchers, batch, indices=[3, 0, 1])
    for m, row in zip(matchers, [3, 0, 1]):
        single = fc.allocate_token_bitmask(1, smollm2.logits_size)
        m.fill_next_token_bitmask(single)
        assert (batch[row] == single[0]).all()
    assert (batch[2] == -1).all()  # untouched row
    with pytest.raises(ValueError, match="used by two matchers"):
        fc.fill_next_token_bitmask_batch(matchers[:2], batch, indices=[1, 1])


def test_compiling_computes_the_first_mask(smollm2, hf_tokenizer):
    # A server compiles off its decoding step and fills masks on it: the
    # compile leaves the start's mask in the grammar's cache, so a
    # matcher's first fill computes nothing (the grammar does not grow),
    # where a later state's does.
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    compiled = fc.GrammarCompiler(smollm2).compile_json_schema(schema)
    matcher = fc.GrammarMatcher(compiled)
    held = compiled.memory_bytes
    first = allowed_ids(matcher, smollm2)
    assert compiled.memory_bytes == held
    assert matcher.accept_string('{"name": "')
    allowed_ids(matcher, smollm2)
    assert compiled.memory_bytes > held
    # The cached mask is the start's: what the tokenizer's tokens can open.
    brace, x = (hf_tokenizer.token_to_id(t) for t in ("{", "x"))
    assert first[brace] and not first[x]


@pytest.mark.parametrize("grammar", ["builtin_json", "any_object_schema"])
def test_json_compiles_the_masks_at_an_objects_first_key_and_values(smollm2, grammar):
    # Nearly every json_object answer passes an object's first key, its
    # first value and a value after a comma: the compile computes those
    # masks, whatever the keys and values before; a nested object's are
    # computed on demand. The server's json_object response format is the
    # schema {"type": "object"} (whitespace bounded per gap).
    compiler = fc.GrammarCompiler(smollm2)
    if grammar == "builtin_json":
        compiled = compiler.compile_builtin_json()
    else:
        compiled = compiler.compile(fc.Grammar.from_json_schema({"type": "object", "description": "any object"}))
    held = compiled.memory_bytes
    for text in ['{"', '{ "city":', '{"city":"Paris", "n": 2,"ok":']:
        matcher = fc.GrammarMatcher(compiled)
        assert matcher.accept_string(text)
        allowed_ids(matcher, smollm2)
        assert compiled.memory_bytes == held, text
    matcher = fc.GrammarMatcher(compiled)
    assert matcher.accept_string('{"a": {"b": ')
    allowed_ids(matcher, smollm2)
    assert compiled.memory_bytes > held


def test_apply_token_bitmask_inplace_numpy():
    bm = np.zeros((2, 2), dtype=np.int32)
    bm[0, 0] = 0b101
    bm[1, 1] = 1  # token 32
    logits = np.zeros((2, 40), dtype=np.float32)
    fc.apply_token_bitmask_inplace(logits, bm)
    assert np.isfinite(logits[0]).nonzero()[0].tolist() == [0, 2]
    assert np.isfinite(logits[1]).nonzero()[0].tolist() == [32]
    one = np.zeros(40, dtype=np.float32)
    fc.apply_token_bitmask_inplace(one, bm[1])
    assert np.isfinite(one).nonzero()[0].tolist() == [32]


def test_stop_token_only_where_grammar_can_end(compiler, smollm2):
    matcher = fc.GrammarMatcher(compiler.compile_ebnf('root ::= "ab" "c"?'))
    stop = smollm2.stop_token_ids
    assert not allowed_ids(matcher, smollm2)[stop].any()
    assert not matcher.accept_token(stop[0])
    assert matcher.accept_string("ab")
    assert allowed_ids(matcher, smollm2)[stop].all()
    assert matcher.accept_token(stop[0])
    assert matcher.is_terminated()
    # Once terminated, only stop tokens remain allowed and nothing is accepted.
    assert np.nonzero(allowed_ids(matcher, smollm2))[0].tolist() == sorted(stop)
    assert not matcher.accept_string("c")
    matcher.reset()
    assert not matcher.is_terminated()
    assert matcher.accept_string("abc")


def test_terminate_without_stop_token(compiler):
    matcher = fc.GrammarMatcher(compiler.compile_ebnf('root ::= "ok"'), terminate_without_stop_token=True)
    assert not matcher.is_terminated()
    matcher.accept_string("ok")
    assert matcher.is_terminated()


def test_special_tokens_never_match_text(compiler, smollm2):
    # "<|im_end|>" is special in SmolLM2: text that spells it is fine, the token is not.
    im_end = smollm2.token_id("<|im_end|>")
    assert im_end in smollm2.special_token_ids
    matcher = fc.GrammarMatcher(compiler.compile_ebnf('root ::= "<|im_end|>" | "x"'))
    assert not allowed_ids(matcher, smollm2)[im_end]
    assert not matcher.accept_token(im_end)
    assert matcher.accept_string("<|im_end|>")
