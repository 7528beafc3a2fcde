"""The decode loop's guards against garbage under a constraint: the no-repeat
n-gram guard and the loop guard (formcast.server.engine), driven by a scripted
model that always wants to write a given text and that sees exactly the
tokens the engine feeds it (so a wrong rollback shows up as a wrong text)."""

from __future__ import annotations

import queue
from typing import Callable, Optional, Sequence

import numpy as np
import pytest

import formcast as fc
from formcast.server.engine import (
    Engine,
    ErrorEvent,
    FinishEvent,
    Job,
    SamplingParams,
    TokenEvent,
    _ngram_banned,
)
from formcast.runtime.base import SequenceFeed

from byte_runtime import EOS, VOCAB, ByteRuntime

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False}


class ScriptedRuntime(ByteRuntime):
    """Byte vocabulary; the next token is ``policy(answer so far)`` (a byte,
    or EOS), strongly preferred, with every other token far behind. The
    answer is what the engine fed after the prompt, positions included."""

    def __init__(self, policy: Callable[[bytes], int]) -> None:
        super().__init__("scripted", n_ctx=1024, num_slots=1, kv_capacity=1024, max_batch_tokens=256)
        self.policy = policy
        self.prompt_len = 0
        self._seq: list[int] = []

    def forward(self, feeds: Sequence[SequenceFeed]) -> np.ndarray:
        out = np.full((len(feeds), len(VOCAB)), -5.0, dtype=np.float32)
        for i, f in enumerate(feeds):
            assert f.start <= len(self._seq), "fed past the cached positions"
            self._seq = self._seq[: f.start] + list(f.tokens)
            answer = bytes(t for t in self._seq[self.prompt_len :] if t < 256)
            out[i, self.policy(answer)] = 10.0
        return out

    def clear_slot(self, slot: int, keep: int = 0) -> None:
        self._seq = self._seq[:keep]


def run(policy: Callable[[bytes], int], params: SamplingParams, grammar: Optional[fc.Grammar] = None) -> tuple[str, FinishEvent]:
    rt = ScriptedRuntime(policy)
    prompt = list(b"P:")
    rt.prompt_len = len(prompt)
    matcher = None
    if grammar is not None:
        matcher = fc.GrammarMatcher(fc.GrammarCompiler(rt.tokenizer).compile(grammar))
    events: queue.Queue = queue.Queue()
    eng = Engine(rt, max_queue=2)
    eng.start()
    try:
        eng.submit([Job(index=0, prompt=prompt, params=params, emit=events.put, matcher=matcher)])
        parts = []
        while True:
            ev = events.get(timeout=60)
            if isinstance(ev, TokenEvent):
                parts.append(ev.text)
            elif isinstance(ev, ErrorEvent):
                raise AssertionError(ev.message)
            elif isinstance(ev, FinishEvent):
                return "".join(parts), ev
    finally:
        eng.stop()


def writes(text: bytes, then: Callable[[bytes], int]) -> Callable[[bytes], int]:
    """A policy that writes ``text``, then follows ``then`` on what comes after."""

    def policy(answer: bytes) -> int:
        if len(answer) < len(text) and text.startswith(answer):
            return text[len(answer)]
        if answer.startswith(text):
            return then(answer[len(text) :])
        return EOS  # off script (only after a guard stepped in): the scripted model closes
    return policy


def looping(unit: bytes) -> Callable[[bytes], int]:
    # Inside the string it repeats ``unit`` forever; once the string is
    # closed (by a guard) it closes the object.
    def then(rest: bytes) -> int:
        if b'"' in rest:
            return ord("}") if not rest.endswith(b"}") else EOS
        return unit[len(rest) % len(unit)]
    return writes(b'{"a": "', then)


def test_loop_guard_closes_a_runaway_string_after_its_first_repetition():
    grammar = fc.Grammar.from_json_schema(SCHEMA)
    params = SamplingParams(max_tokens=400, temperature=0.0, complete_on_length=True, loop_guard=True)
    text, finish = run(looping(b"john_"), params, grammar)
    assert text == '{"a": "john_"}'
    assert finish.reason == "stop" and finish.completion_tokens < 40


def test_without_the_loop_guard_the_string_runs_to_the_budget():
    grammar = fc.Grammar.from_json_schema(SCHEMA)
    params = SamplingParams(max_tokens=200, temperature=0.0, complete_on_length=True)
    text, finish = run(looping(b"john_"), params, grammar)
    assert finish.reason == "length" and text.startswith('{"a": "john_john_john_john_')
    assert len(text) >= 190


def test_loop_guard_keeps_repetitions_copied_from_the_prompt():
    # The prompt holds the repeated text: it is a value to copy, not a loop.
    rt_prompt = "P:"
    assert "abcabcabcabc" not in rt_prompt
    grammar = fc.Grammar.from_json_schema(SCHEMA)
    params = SamplingParams(max_tokens=60, temperature=0.0, complete_on_length=True, loop_guard=True)

    def policy(answer: bytes) -> int:  # writes a value of 4 x "ab" then closes
        return writes(b'{"a": "abababab"}', lambda rest: EOS)(answer)

    text, _ = run(policy, params, grammar)
    assert text == '{"a": "abababab"}'  # 8 characters: below the 12-character loop threshold


def test_loop_guard_never_cuts_a_string_the_grammar_cannot_end_there():
    # minLength 30: closing after the first unit would break the schema, so
    # the guard leaves the value alone and the mask keeps it valid.
    schema = {"type": "object", "properties": {"a": {"type": "string", "minLength": 30, "maxLength": 40}},
              "required": ["a"], "additionalProperties": False}
    params = SamplingParams(max_tokens=100, temperature=0.0, complete_on_length=True, loop_guard=True)
    text, _ = run(looping(b"ab_"), params, fc.Grammar.from_json_schema(schema))
    import json

    value = json.loads(text)["a"]
    assert 30 <= len(value) <= 40


def test_loop_guard_with_stop_strings_is_refused():
    with pytest.raises(ValueError, match="stop strings"):
        SamplingParams(max_tokens=10, loop_guard=True, stop=("x",))


def test_no_repeat_ngram_guard_bans_repeats_but_never_breaks_the_grammar():
    # The model wants "xyzxyzxyz..."; with trigrams banned no 3-token sequence repeats.
    params = SamplingParams(max_tokens=30, temperature=0.0, no_repeat_ngram_size=3)
    text, _ = run(writes(b"", lambda rest: b"xyz"[len(rest) % 3]), params, fc.Grammar.from_regex("[a-z]{30}"))
    grams = [text[i : i + 3] for i in range(len(text) - 2)]
    assert len(text) == 30 and len(grams) == len(set(grams))
    # A grammar that forces a repetition still gets it: the ban is a penalty before the mask.
    text, finish = run(writes(b"", lambda rest: ord("a")), params, fc.Grammar.from_regex("a{12}"))
    assert text == "a" * 12 and finish.reason == "stop"


@pytest.mark.parametrize(
    "generated,n,banned",
    [
        ([1, 2, 3, 1, 2], 3, [3]),
        ([1, 2, 3, 1, 2], 2, [3]),
        ([7, 7, 7], 2, [7]),
        ([5, 6], 1, [5, 6]),
        ([1, 2], 3, []),
        ([1, 2, 1, 3, 1], 2, [2, 3]),
    ],
)
def test_ngram_banned(generated, n, banned):
    assert sorted(_ngram_banned(generated, n).tolist()) == banned
