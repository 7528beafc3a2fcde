"""Token budgets on free text (``any_text.max_tokens``, ``any_tokens.max_tokens``)
and ``json_schema.excludes``, driven token by token over SmolLM2's real
vocabulary: the mask, ``accept_token``, rollback and jump-forward."""

from __future__ import annotations

import numpy as np
import pytest

import formcast as fc
from formcast import structural_tag as S


@pytest.fixture(scope="module")
def compiler(smollm2) -> fc.GrammarCompiler:
    return fc.GrammarCompiler(smollm2)


@pytest.fixture(scope="module")
def vocab(smollm2) -> list[bytes]:
    return smollm2.all_token_bytes()


@pytest.fixture(scope="module")
def encode(smollm2, vocab):
    """Longest-match tokenization over the non-special tokens (any split is a
    valid model output)."""
    special = set(smollm2.special_token_ids)
    index = {b: i for i, b in enumerate(vocab) if b and i not in special}
    longest = max(len(b) for b in index)

    def run(text: str) -> list[int]:
        data, out, i = text.encode(), [], 0
        while i < len(data):
            n = next(n for n in range(min(longest, len(data) - i), 0, -1) if data[i:i + n] in index)
            out.append(index[data[i:i + n]])
            i += n
        return out

    return run


def wrap(fmt) -> dict:
    return {"type": "structural_tag", "format": fmt}


def tid(tok: fc.TokenizerInfo, text: str) -> int:
    i = tok.token_id(text)
    assert i is not None, text
    return i


def allowed(m: fc.GrammarMatcher, tok: fc.TokenizerInfo) -> np.ndarray:
    bm = fc.allocate_token_bitmask(1, tok.logits_size)
    m.fill_next_token_bitmask(bm)
    return fc.bitmask_to_bool(bm, tok.logits_size)[0]


def leaving(vocab: list[bytes], end: bytes) -> set[int]:
    """Tokens that only start (or are) the end string: all a spent budget allows."""
    return {i for i, b in enumerate(vocab) if b and end.startswith(b)}


# ------------------------------------------------------- any_text.max_tokens --

THINK3 = {"type": "tag", "begin": "<think>", "content": {"type": "any_text", "max_tokens": 3}, "end": "</think>"}


def test_any_text_budget_spent_leaves_only_the_end(compiler, smollm2, vocab):
    m = fc.GrammarMatcher(compiler.compile_structural_tag(wrap(THINK3)), max_rollback_tokens=8)
    assert m.accept_string("<think>")  # no text yet: nothing paid
    words = [tid(smollm2, w) for w in (" one", " two", " three", " four")]
    for w in words[:3]:
        assert allowed(m, smollm2)[w]
        assert m.accept_token(w)
    mask = allowed(m, smollm2)
    assert set(np.flatnonzero(mask)) == leaving(vocab, b"</think>")
    assert not m.accept_token(words[3])  # over budget: rejected, state unchanged
    assert m.find_jump_forward_string() == "</think>"
    # Rollback gives the token back.
    m.rollback(1)
    assert allowed(m, smollm2)[words[3]]
    assert m.accept_token(words[3])
    assert not allowed(m, smollm2)[words[0]]
    assert m.accept_string("</think>") and m.can_terminate()


@pytest.mark.parametrize("text", [" a b c", " a b c d", "x", "Hello, world!", "a  b\n\nc d e"])
def test_any_text_budget_counts_real_tokenizations(compiler, vocab, encode, text):
    ids = encode(f"<think>{text}</think>")
    # The tokens paying: those holding a byte of the text (all ASCII here).
    start, end, pos, paying = len("<think>"), len("<think>") + len(text), 0, 0
    for i in ids:
        paying += pos < end and pos + len(vocab[i]) > start
        pos += len(vocab[i])
    m = fc.GrammarMatcher(compiler.compile_structural_tag(wrap(THINK3)))
    accepted = all(m.accept_token(i) for i in ids) and m.can_terminate()
    assert accepted == (paying <= 3), [vocab[i] for i in ids]


def test_a_token_leaving_the_text_pays_for_its_text_only(compiler, smollm2, vocab, encode):
    # ".<": the last character of the text and the start of the end tag.
    straddle, lt = tid(smollm2, ".<"), tid(smollm2, "<")
    m = fc.GrammarMatcher(compiler.compile_structural_tag(wrap(THINK3)))
    for i in encode("<think> a b"):
        assert m.accept_token(i)
    assert m.accept_token(straddle) and m.accept_string("/think>") and m.can_terminate()
    m = fc.GrammarMatcher(compiler.compile_structural_tag(wrap(THINK3)))
    for i in encode("<think> a b c"):
        assert m.accept_token(i)
    mask = allowed(m, smollm2)
    assert mask[lt] and not mask[straddle] and not m.accept_token(straddle)


def test_any_text_budget_with_chars_and_models(compiler, smollm2):
    both = S.StructuralTag(format=S.AnyTextFormat(max_tokens=2, max_chars=5))
    m = fc.GrammarMatcher(compiler.compile_structural_tag(both))
    assert m.accept_token(tid(smollm2, "hello"))  # 5 characters, 1 token
    assert not allowed(m, smollm2)[tid(smollm2, "a")]  # characters spent first
    m = fc.GrammarMatcher(compiler.compile_structural_tag(both))
    assert m.accept_token(tid(smollm2, "a")) and m.accept_token(tid(smollm2, "b"))
    assert not m.accept_token(tid(smollm2, "c"))  # tokens spent first
    assert m.can_terminate()


def test_any_tokens_budget_and_rollback(compiler, smollm2):
    end = tid(smollm2, "<|im_end|>")
    budget = wrap({"type": "sequence", "elements": [{"type": "any_tokens", "max_tokens": 2}, {"type": "token", "token": "<|im_end|>"}]})
    m = fc.GrammarMatcher(compiler.compile_structural_tag(budget), max_rollback_tokens=4)
    a, b = tid(smollm2, "a"), tid(smollm2, "b")
    assert m.accept_token(a) and m.accept_token(b)
    mask = allowed(m, smollm2)
    assert mask[end] and mask.sum() == 1
    assert not m.accept_token(a)
    m.rollback(1)
    assert allowed(m, smollm2)[a]


# ---------------------------------------------------------- json_schema.excludes --

NOTE = {"type": "object", "properties": {"note": {"type": "string"}, "extra": {"type": "object", "additionalProperties": {"type": "integer"}}}}
CALL = {"type": "tag", "begin": "<tool_call>", "content": {"type": "json_schema", "json_schema": NOTE, "excludes": ["</tool_call>"]}, "end": "</tool_call>"}


def test_excluded_string_spanning_tokens_is_masked_and_rejected(compiler, smollm2, vocab, encode):
    compiled = compiler.compile_structural_tag(wrap(CALL))
    ok = '<tool_call>{"note": "see </tool_cal l>"}</tool_call>'
    m = fc.GrammarMatcher(compiled)
    assert all(m.accept_token(i) for i in encode(ok)) and m.can_terminate()
    head = encode('<tool_call>{"note": "a')
    inside = encode("</tool_call")
    assert len(inside) >= 3  # the exclude spans several tokens
    m = fc.GrammarMatcher(compiled)
    assert all(m.accept_token(i) for i in head + inside)
    mask = allowed(m, smollm2)
    completing = [i for i, b in enumerate(vocab) if b.startswith(b">")]
    assert completing and not mask[completing].any()
    assert not m.accept_token(tid(smollm2, ">"))
    assert mask[tid(smollm2, "s")] and m.accept_token(tid(smollm2, "s"))


def test_excludes_reach_keys_nested_values_and_xml_values(compiler):
    def accepts(tag, text):
        m = fc.GrammarMatcher(compiler.compile_structural_tag(tag))
        return m.accept_string(text) and m.can_terminate()

    tag = wrap(CALL)
    assert accepts(tag, '<tool_call>{"extra": {"k": 1}}</tool_call>')
    assert not accepts(tag, '<tool_call>{"extra": {"k</tool_call>": 1}}</tool_call>')
    # Matched on the emitted text: an escaped "<" is a different text.
    assert accepts(tag, '<tool_call>{"note": "\\u003c/tool_call>"}</tool_call>')
    xml = wrap({**CALL, "content": {**CALL["content"], "style": "qwen_xml"}})
    assert accepts(xml, "<tool_call><parameter=note>fine</parameter></tool_call>")
    assert not accepts(xml, "<tool_call><parameter=note>x</tool_call>y</parameter></tool_call>")
    model = S.StructuralTag(format=S.JSONSchemaFormat(json_schema={"enum": ["bad", "good"]}, excludes=["bad"]))
    assert accepts(model, '"good"') and not accepts(model, '"bad"')


@pytest.mark.parametrize(
    ("content", "path", "fragment"),
    [
        ({"excludes": ['": "']}, "format.excludes[0]", "could span the quotes of a JSON string"),
        ({"excludes": ["ok", "\n\n"]}, "format.excludes[1]", "could occur outside JSON strings"),
        ({"excludes": ["x "], "style": "qwen_xml"}, "format.excludes[0]", "must not start or end with formatting whitespace"),
        ({"excludes": ["x"], "style": "cohere_xml"}, "format.excludes", "JSONSchemaFormat.excludes is not supported for cohere_xml"),
        ({"excludes": ["x"], "style": "minimax_m3_xml"}, "format.excludes", "JSONSchemaFormat.excludes is not supported for minimax_m3_xml"),
    ],
)
def test_excludes_that_cannot_be_enforced_are_refused(compiler, content, path, fragment):
    with pytest.raises(fc.StructuralTagError) as info:
        compiler.compile_structural_tag(wrap({"type": "json_schema", "json_schema": NOTE, **content}))
    assert info.value.path == path and info.value.field == "excludes", str(info.value)
    assert fragment in str(info.value)
