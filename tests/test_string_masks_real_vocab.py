"""Masks inside JSON strings over the real Llama-3 vocabulary equal
token-by-token acceptance, where the engine takes its shortcuts:

- A string with ``maxLength`` above 32 is held in 32-character blocks. Near a
  block's end most of the vocabulary crosses into the next block, and the
  mask there is assembled from frontier runs resolved once per skip set and
  shared across grammars (``formcast_engine::partition::Take``).
- A key that may be any string but the declared names (or must match a
  ``patternProperties`` pattern) is an automaton whose states inside a name's
  prefix take their partitions from the state of any other key
  (``partition::derive_partition``).

Every token of the vocabulary is checked with ``accept_token`` at sampled
steps inside strings, for random decodes biased towards long tokens.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import formcast as fc
from conftest import accepted_by_parser, mask_after, mask_row_bits

SCHEMAS = [
    {"type": "string", "maxLength": 70},
    {
        "type": "object",
        "properties": {"a": {"type": "string", "minLength": 5, "maxLength": 40}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
    {"type": "array", "items": {"type": "string", "maxLength": 33}, "maxItems": 2},
]

KEYS_SCHEMA = {
    "type": "object",
    "properties": {name: {"type": "integer"} for name in ["Actions.Red", "Actions.Grey", "Objects.Green", "Objé"]},
    "patternProperties": {"^/": {"type": "string", "pattern": "^/"}},
    "additionalProperties": {"type": "boolean"},
}
# Inside a key: at its start, along declared names' prefixes, off them, in
# a pattern region, inside a multi-byte character, after an escape.
KEY_PREFIXES = ['{"', '{"A', '{"Act', '{"Actions.', '{"Actions.G', '{"Actions.Gx', '{"Obj', r'{"Obj\t',
                '{"/', '{"/a', '{"Actions.Red": 1, "Objé', r'{"Actions.Red": 1, "\n', '{"é', r'{"\u001f', '{"Actions.Grey']


@pytest.fixture(scope="module")
def parts(llama3):
    compiler = fc.GrammarCompiler(llama3)
    compiled = [compiler.compile(fc.Grammar.from_json_schema(s)) for s in SCHEMAS]
    all_bytes = llama3.all_token_bytes()
    return llama3, compiled, all_bytes



def _string_chars(text: str) -> int:
    """Characters inside the innermost open JSON string of `text` (escapes as one)."""
    inside, count, i = False, 0, 0
    while i < len(text):
        c = text[i]
        if inside and c == "\\":
            i += 6 if text[i + 1 : i + 2] == "u" else 2
            count += 1
            continue
        if c == '"':
            inside, count = not inside, 0
        elif inside:
            count += 1
        i += 1
    return count if inside else -1


@settings(max_examples=2, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_bounded_string_masks_equal_token_acceptance(parts, seed):
    tok, compiled, all_bytes = parts
    rng = random.Random(seed)
    n = tok.vocab_size
    mask = fc.allocate_token_bitmask(1, tok.logits_size)
    checked = 0
    for c in compiled:
        m = fc.GrammarMatcher(c)
        text = b""
        for _ in range(60):
            m.fill_next_token_bitmask(mask, 0)
            bits = mask_row_bits(mask, n)
            chars = _string_chars(text.decode("utf-8", "replace"))
            if chars >= 0 and (chars % 32 >= 20 or chars >= 30):
                expect = accepted_by_parser(m, n)
                diff = np.flatnonzero(bits != expect)
                assert diff.size == 0, (
                    f"schema {json.dumps(SCHEMAS[compiled.index(c)])} after {text!r}: "
                    f"mask and accept_token disagree on {[(int(t), all_bytes[t], bool(bits[t])) for t in diff[:8]]}"
                )
                checked += 1
            allowed = np.flatnonzero(bits)
            text_ids = [int(t) for t in allowed if t not in tok.stop_token_ids]
            if not text_ids:
                break
            # Long tokens cross block ends sooner; a closing quote now and
            # then lets the arrays and objects go on.
            sample = rng.sample(text_ids, min(len(text_ids), 64))
            t = max(sample, key=lambda i: (len(all_bytes[i]) + rng.random() * 4) if b'"' not in all_bytes[i] or rng.random() < 0.05 else 0)
            assert m.accept_token(t)
            text += all_bytes[t]
            if m.is_terminated():
                break
    assert checked > 0


# Strings of several 32-character blocks, at positions where only long
# tokens (runs of spaces, dashes, `=`) cross a block's end: the engine takes
# those by their count of characters, following the sets from block to
# block and into the remainder (``MaskWalker::text_count``), not by walking.
MULTI_BLOCK_SCHEMAS = [
    {"type": "string", "maxLength": 100},
    {"type": "object", "properties": {"q": {"type": "string", "maxLength": 200}, "n": {"type": "integer"}}, "required": ["q"]},
    {"type": "string", "minLength": 40, "maxLength": 70},
    {"type": "array", "items": {"type": "string", "maxLength": 64}},
]
MULTI_BLOCK_PREFIXES = ["", "Open", "Open App", "é" * 5 + " ", "x" * 31, "y" * 33, "z" * 60 + "\\n"]


@pytest.mark.parametrize("prefix", MULTI_BLOCK_PREFIXES)
@pytest.mark.parametrize("schema", range(len(MULTI_BLOCK_SCHEMAS)))
def test_multi_block_string_masks_equal_token_acceptance(parts, schema, prefix):
    s = MULTI_BLOCK_SCHEMAS[schema]
    opening = {"object": '{"q": "', "array": '["'}.get(s["type"], '"')
    _assert_mask_after_prefix_is_acceptance_or_skip(parts, s, opening + prefix)


def _assert_mask_after_prefix_is_acceptance(parts, schema, prefix):
    """The mask after `prefix` equals token-by-token acceptance (and is not empty)."""
    tok, _, _ = parts
    compiled = fc.GrammarCompiler(tok).compile(fc.Grammar.from_json_schema(schema))
    assert mask_after(fc.GrammarMatcher(compiled), tok, prefix).any()


@pytest.mark.parametrize("prefix", KEY_PREFIXES)
def test_key_masks_equal_token_acceptance(parts, prefix):
    _assert_mask_after_prefix_is_acceptance(parts, KEYS_SCHEMA, prefix)


# Strings whose length runs out: a partition walk counts the characters of
# text subtrees taller than what is left instead of walking them
# (``partition::accept_text_up_to``), exactly when every character past the
# bound dies.
COUNTED = [
    {"type": "string", "minLength": 12, "maxLength": 12},
    {"type": "string", "minLength": 3, "maxLength": 21},
    {"type": "string", "maxLength": 5, "pattern": "^[^x]*$"},
]


@settings(max_examples=2, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_counted_string_masks_equal_token_acceptance(parts, seed):
    tok, _, all_bytes = parts
    rng = random.Random(seed)
    n = tok.vocab_size
    mask = fc.allocate_token_bitmask(1, tok.logits_size)
    compiler = fc.GrammarCompiler(tok)
    for schema in COUNTED:
        m = fc.GrammarMatcher(compiler.compile(fc.Grammar.from_json_schema(schema)))
        text = b""
        for _ in range(4):
            m.fill_next_token_bitmask(mask, 0)
            bits = mask_row_bits(mask, n)
            diff = np.flatnonzero(bits != accepted_by_parser(m, n))
            assert diff.size == 0, (
                f"schema {json.dumps(schema)} after {text!r}: "
                f"mask and accept_token disagree on {[(int(t), all_bytes[t], bool(bits[t])) for t in diff[:8]]}"
            )
            # Short text tokens, so that the string goes on for a few steps.
            short = [int(t) for t in np.flatnonzero(bits) if t not in tok.stop_token_ids and len(all_bytes[t]) <= 3]
            if not short:
                break
            t = rng.choice(short)
            assert m.accept_token(t)
            text += all_bytes[t]
            if m.is_terminated():
                break


# Key positions of an object whose properties come in schema order: every
# remaining optional property is an item of its own, each with a partition
# walked from the root's child on `"` (``partition::walk_into``).
ORDERED = {
    "type": "object",
    "properties": {name: {"type": "integer"} for name in ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]},
    "additionalProperties": False,
}


@pytest.mark.parametrize("prefix", ['{', '{"alpha": 1, ', '{"beta": 2, "', '{"gamma": 3, "de'])
def test_ordered_key_masks_equal_token_acceptance(parts, prefix):
    _assert_mask_after_prefix_is_acceptance(parts, ORDERED, prefix)


# A vocabulary made for the comparison deep inside names: every byte, plus
# pieces of the declared names with each way a key can end (its closing
# quote, the colon, the start of a value the declared and the other keys
# disagree on). A derived partition keeps the reference's subtrees only
# where the two states walk alike; these tokens part from it at every depth.
DEEP_NAMES = ["metadata", "meta", "metal", "kind", "kinder", "status"]
DEEP_SCHEMA = {
    "type": "object",
    "properties": {"metadata": {"type": "integer"}, "meta": {"type": "string"}, "metal": {"type": "null"},
                   "kind": {"type": "boolean"}, "kinder": {"type": "integer"}, "status": {"type": "string"}},
    "additionalProperties": {"type": "boolean"},
}
_TAILS = ["", '"', '":', '": 1', '":1', '":true', '":"', '":null', "x", 'x"', 'x":true', 'x":1', "s", 's":']


def _deep_vocab() -> list[bytes]:
    pieces = {bytes([b]) for b in range(256)}
    for name in DEEP_NAMES:
        for i in range(len(name)):
            for j in range(i + 1, len(name) + 1):
                pieces.update((name[i:j] + tail).encode() for tail in _TAILS)
    pieces.update(('{"' + name[:k]).encode() for name in DEEP_NAMES for k in range(len(name) + 1))
    return sorted(pieces)


DEEP_PREFIXES = ['{"'] + ['{"' + name[:k] for name in DEEP_NAMES for k in range(1, len(name) + 1)] + ['{"mex', '{"metadatax', '{"kind": true, "me']


@pytest.fixture(scope="module")
def deep_parts():
    vocab = _deep_vocab()
    tok = fc.TokenizerInfo.from_vocab(vocab)
    return tok, None, vocab


@pytest.mark.parametrize("prefix", DEEP_PREFIXES)
def test_key_masks_deep_in_names_equal_token_acceptance(deep_parts, prefix):
    _assert_mask_after_prefix_is_acceptance(deep_parts, DEEP_SCHEMA, prefix)


# Keys that must match an unanchored pattern: text moves a key among a few
# states (before the pattern's first match and after it, or along its
# alternatives) that all take every character, so the engine counts the
# key's text as unbounded (``partition::text_closed``).
PATTERN_KEYS_SCHEMA = {
    "type": "object",
    "patternProperties": {"[a-z]": {"type": "integer"}, "^p([0-9]+)|t$": {"minimum": 0}},
    "additionalProperties": False,
}
PATTERN_KEY_PREFIXES = ['{"', '{"X', '{"Xy', '{"p', '{"p1', '{"at', '{"9', '{"é', '{"a": 1, "']


# One character refused anywhere in the key: before and after the first
# match alike, so the key's text is bounded by nothing but is not every text.
NO_E_ACUTE_KEYS_SCHEMA = {
    "type": "object",
    "patternProperties": {"^[^é]*[a-z][^é]*$": {"type": "integer"}},
    "additionalProperties": False,
}


@pytest.mark.parametrize("prefix", PATTERN_KEY_PREFIXES)
def test_pattern_key_masks_equal_token_acceptance(parts, prefix):
    _assert_mask_after_prefix_is_acceptance(parts, PATTERN_KEYS_SCHEMA, prefix)
    if "é" not in prefix:
        _assert_mask_after_prefix_is_acceptance(parts, NO_E_ACUTE_KEYS_SCHEMA, prefix)


# A pattern whose parts overlap (a host name, its last label counted, a
# path): on a word's bytes its states move among tens of states, none
# looping on all of them. A walk takes a subtree whole when its bytes lead
# every state of a set closed under them back into the set
# (``partition::closed_bytes``).
HOST_SCHEMA = {"type": "string", "pattern": r"^(https?:\/\/)?([\da-z\.-]+)\.([a-z\.]{2,6})([\/\w \.-]*)*\/?$"}
HOST_PREFIXES = ['"', '"h', '"http', '"https:/', '"https://www.example', '"https://www.example.com', '"a.b.c.de', '"x.io/path to', '"x.io/a_B', '"ab-9.c']

# Loops on a class of ASCII bytes (the most common pattern of real schemas,
# a name's ``[a-z0-9-]+``): every token of the class is taken from the
# vocabulary's class cover, and a walk follows only the paths to the other
# tokens (``VocabIndex::class_cover``), down to the closing quote or the
# literal after the loop.
CLASS_SCHEMAS = [
    {"type": "string", "pattern": "^[a-z0-9-]+$"},
    {"type": "string", "pattern": "^[a-z0-9_-]{2,}$"},
    {"type": "object", "properties": {"n": {"type": "string", "pattern": "^[a-zA-Z0-9._~]+@x$"}}, "required": ["n"], "additionalProperties": False},
    # A walk jumps the skeleton's subtrees whose tokens leave the class only
    # by bytes that no state of the class's paths goes on by
    # (``partition::class_leaves``): here by `.` as well as `"`, ...
    {"type": "string", "pattern": "^[a-z0-9-]+(\\.[a-z0-9-]+)*$"},
    # ... by `"` only from the third character on, ...
    {"type": "string", "pattern": "^[a-z0-9-]{3,}$"},
    # ... through more states than it follows (it then jumps nothing), ...
    {"type": "string", "pattern": "^[a-z0-9-]{70,}$"},
    # ... and by any byte of the string but a hex digit, after the hex
    # digits of a `\u` escape.
    {"type": "string"},
]
CLASS_PREFIXES = ['"', '"d', '"ber', '"ab-9', '"ab.c', '"a\\u', '"a\\u0', '"a\\u00e',
                  '{"n": "', '{"n": "Ab.c', '{"n": "a@']


@pytest.mark.parametrize("schema", range(len(CLASS_SCHEMAS)))
@pytest.mark.parametrize("prefix", CLASS_PREFIXES)
def test_class_loop_masks_equal_token_acceptance(parts, schema, prefix):
    _assert_mask_after_prefix_is_acceptance_or_skip(parts, CLASS_SCHEMAS[schema], prefix)


def _assert_mask_after_prefix_is_acceptance_or_skip(parts, schema, prefix):
    m = fc.GrammarMatcher(fc.GrammarCompiler(parts[0]).compile(fc.Grammar.from_json_schema(schema)))
    if not m.accept_string(prefix):
        pytest.skip(f"{prefix!r} is not a prefix of this schema")
    _assert_mask_after_prefix_is_acceptance(parts, schema, prefix)


# Text that refuses one character: its other characters of the same lead
# byte (é and à share C3) lead back, so the free-text shortcut holds for
# all leads but that one (``partition::utf8_loop_by``). ECMA-262's `.`
# (which refuses U+2028 and U+2029, lead E2) is such text, but Llama-3 has
# no token holding either.
NO_E_ACUTE_SCHEMAS = [
    {"type": "string", "pattern": "^[^é]*$"},
    {"type": "string", "pattern": "^a.+$"},
    {"type": "object", "patternProperties": {"^[^é]*$": {"type": "integer"}}, "additionalProperties": False},
]
NO_E_ACUTE_PREFIXES = ['"', '"a', '"aà', '"a日本', '{"', '{"xà']


@pytest.mark.parametrize("prefix", HOST_PREFIXES)
def test_overlapping_pattern_masks_equal_token_acceptance(parts, prefix):
    _assert_mask_after_prefix_is_acceptance(parts, HOST_SCHEMA, prefix)


@pytest.mark.parametrize("schema", range(len(NO_E_ACUTE_SCHEMAS)))
@pytest.mark.parametrize("prefix", NO_E_ACUTE_PREFIXES)
def test_text_refusing_a_character_masks_equal_token_acceptance(parts, schema, prefix):
    s = NO_E_ACUTE_SCHEMAS[schema]
    if (s["type"] == "object") != prefix.startswith("{") or (s.get("pattern") == "^a.+$" and not prefix.startswith('"a')):
        pytest.skip("not a prefix of this schema")
    _assert_mask_after_prefix_is_acceptance(parts, s, prefix)


# Values that must contain one of several words, or a run of characters,
# anywhere: every character leads the search among up to hundreds of
# states, all of which take every character, so a walk takes text subtrees
# whole (``partition::text_closed`` with ``search_like``). A search whose
# first states take every character but which dies further on (an ``x``
# within the first four characters) is not closed, and none of its states
# may be taken for closed. A value that must match exactly one of several
# unanchored words dies on a second match: its states take any text of up
# to as many characters as the nearest second match needs, and no more
# (``partition::text_bounded_run``; after "ab" of exactly one of "ab" and
# "ba", a token "a" is taken and "aba" is not).
SEARCH_SCHEMAS = [
    {"type": "string", "pattern": "integer|continuous"},
    {"type": "string", "pattern": "[a-z0-9_-]{40}"},
    {"type": "string", "pattern": "^dev|alpha|beta|rc|RC|stable$"},
    {"type": "string", "pattern": "^.{0,3}x[^q]"},
    {"type": "string", "oneOf": [{"pattern": "customer"}, {"pattern": "maker"}, {"pattern": "admin"}]},
    {"type": "string", "oneOf": [{"pattern": "ab"}, {"pattern": "ba"}]},
]
SEARCH_PREFIXES = ['"', '"x', '"inte', '"integer', '"abc-def_', '"al', '"ab', '"abx', '"b', '"customer', '"customer ad']


@pytest.mark.parametrize("schema", range(len(SEARCH_SCHEMAS)))
@pytest.mark.parametrize("prefix", SEARCH_PREFIXES)
def test_search_pattern_masks_equal_token_acceptance(parts, schema, prefix):
    _assert_mask_after_prefix_is_acceptance_or_skip(parts, SEARCH_SCHEMAS[schema], prefix)
