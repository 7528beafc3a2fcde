"""The decode loop keeps a request's failure to itself: when one row's mask
cannot be computed (a grammar so ambiguous that its mask hits the engine's
limit), that job ends with an error and its batch-mates go on."""

from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

import formcast as fc
from formcast.runtime.base import SequenceFeed
from formcast.server import engine as engine_mod
from formcast.server.engine import Engine, ErrorEvent, FinishEvent, Job, SamplingParams

from byte_runtime import VOCAB, ByteRuntime


class TinyRuntime(ByteRuntime):
    """Byte vocabulary, random logits: enough to drive the decode loop."""

    def __init__(self) -> None:
        super().__init__("tiny", n_ctx=256, num_slots=2, kv_capacity=512, max_batch_tokens=64)
        self._rng = np.random.default_rng(0)

    def forward(self, feeds: Sequence[SequenceFeed]) -> np.ndarray:
        return self._rng.standard_normal((len(feeds), len(VOCAB))).astype(np.float32)

    def clear_slot(self, slot: int, keep: int = 0) -> None:
        pass


class FailingMask:
    """Stands for a matcher whose mask hits a limit."""

    def fill_next_token_bitmask(self, bitmask, index=0):
        raise fc.LimitError("the grammar is too ambiguous here (test)")

    def is_terminated(self) -> bool:
        return False


def test_a_failing_mask_ends_only_its_own_job(monkeypatch):
    rt = TinyRuntime()
    compiled = fc.GrammarCompiler(rt.tokenizer).compile(fc.Grammar.from_regex("[ab]{3}"))
    real_batch = engine_mod.fill_next_token_bitmask_batch

    def batch(matchers, bitmask, indices=None):
        if any(isinstance(m, FailingMask) for m in matchers):
            raise fc.LimitError("one row failed (test)")
        real_batch(matchers, bitmask, indices)

    monkeypatch.setattr(engine_mod, "fill_next_token_bitmask_batch", batch)
    events: dict[int, list] = {0: [], 1: []}
    done = threading.Event()

    def emit(ev) -> None:
        events[ev.index].append(ev)
        if all(any(isinstance(e, (FinishEvent, ErrorEvent)) for e in evs) for evs in events.values()):
            done.set()

    eng = Engine(rt, max_queue=4)
    eng.start()
    try:
        params = SamplingParams(max_tokens=8, temperature=1.0, seed=1)
        good = Job(index=0, prompt=list(b"hi"), params=params, emit=emit, matcher=fc.GrammarMatcher(compiled))
        bad = Job(index=1, prompt=list(b"yo"), params=params, emit=emit, matcher=FailingMask())  # type: ignore[arg-type]
        eng.submit([good, bad])
        assert done.wait(30)
    finally:
        eng.stop()
    assert isinstance(events[1][-1], ErrorEvent) and "mask could not be computed" in events[1][-1].message
    finish = events[0][-1]
    assert isinstance(finish, FinishEvent) and finish.reason == "stop"
    text = "".join(e.text for e in events[0] if hasattr(e, "text"))
    assert len(text) == 3 and set(text) <= {"a", "b"}
