"""Masks over free text equal token-by-token acceptance on the real Llama-3
vocabulary, where the engine takes its free-text shortcut: a state (or, in
the mask walk, a parser set) that every UTF-8 character but a few ASCII
bytes leads back to accepts a subtree of well-formed UTF-8 whole when its
ASCII bytes are among those (``formcast_engine::partition::utf8_loop``,
``MaskWalker::utf8_loop``), and the vocabulary's set of such tokens is
taken at once (``VocabIndex::free_text_cover``). Free text before a tool
call's trigger may end
(an accepting state: the mask walk's shortcut); reasoning text before
``</think>`` may not (an interior state: the partition walk's).

Every token of the vocabulary is checked with ``accept_token`` after each
prefix: ASCII, multi-byte characters, and the trigger or end tag partly
written.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import formcast as fc
from conftest import accepted_by_parser, mask_row_bits
from formcast.styles import structural_tag_for

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]

GRAMMARS = {
    # Text, then optionally tool calls after "<tool_call>": text may end.
    "qwen3_auto": lambda: fc.Grammar.from_structural_tag(json.dumps(
        structural_tag_for("qwen_3", TOOLS, tool_choice="auto", parallel_tool_calls=True, reasoning="disabled"))),
    # Reasoning text that must run on to "</think>", then a forced call.
    "deepseek_think": lambda: fc.Grammar.from_structural_tag(json.dumps(
        structural_tag_for("deepseek_r1", TOOLS, tool_choice={"type": "function", "function": {"name": "get_weather"}},
                           reasoning="enabled"))),
    # Any characters but "<", then "</end>" (an interior loop).
    "gbnf_not_lt": lambda: fc.Grammar.from_ebnf('root ::= [^<]* "</end>"'),
    # Any characters but "<", ending anywhere (an accepting loop).
    "gbnf_not_lt_open": lambda: fc.Grammar.from_ebnf("root ::= [^<]*"),
    # Two excluded bytes other than "<", interior and accepting: each set of
    # excluded bytes has its own cover (``VocabIndex::free_text_cover``).
    "gbnf_not_brace_gt": lambda: fc.Grammar.from_ebnf('root ::= [^{>]* "{}"'),
    "gbnf_not_brace_gt_open": lambda: fc.Grammar.from_ebnf("root ::= [^{>]* (\"{\" [a-z]*)?"),
    # Text that refuses every printable ASCII byte but the space, and takes
    # every longer character (``partition::utf8_chars_loop``): a key that
    # must not match an unanchored pattern of letters, digits and marks.
    "gbnf_few_ascii": lambda: fc.Grammar.from_ebnf('root ::= [^\\x21-\\x7E]* "."'),
    # Text that must not hold "<x>the": after "<x>", the tokens that start
    # with "the" are refused although they are free text of the cover.
    "any_text_excluding": lambda: fc.Grammar.from_structural_tag(json.dumps(
        {"type": "structural_tag", "format": {"type": "any_text", "excludes": ["<x>the"]}})),
}

PREFIXES = ["", "Hello, ", "naïve café — ", " — ", "日本語", "a < b", "Let me check.<", "<too", "</thi", "x\n\t\"\\", "a {", "{x", "<x>", "so <x"]


@pytest.fixture(scope="module")
def compiled(llama3):
    compiler = fc.GrammarCompiler(llama3)
    return {name: compiler.compile(make()) for name, make in GRAMMARS.items()}



@pytest.mark.parametrize("name", sorted(GRAMMARS))
@pytest.mark.parametrize("prefix", PREFIXES)
def test_free_text_masks_equal_token_acceptance(llama3, compiled, name, prefix):
    m = fc.GrammarMatcher(compiled[name])
    if not m.accept_string(prefix):
        pytest.skip(f"{prefix!r} is not a prefix of {name}")
    mask = fc.allocate_token_bitmask(1, llama3.logits_size)
    m.fill_next_token_bitmask(mask, 0)
    n = llama3.vocab_size
    bits = mask_row_bits(mask, n)
    assert bits.any()
    diff = np.flatnonzero(bits != accepted_by_parser(m, n))
    all_bytes = llama3.all_token_bytes()
    assert diff.size == 0, f"{name} after {prefix!r}: mask and accept_token disagree on {[(int(t), all_bytes[t], bool(bits[t])) for t in diff[:8]]}"
