"""The decode loop: one thread owns the model runtime and steps every active
sequence together (continuous batching).

Each step: admit waiting jobs into free slots (reusing the longest cached
prompt prefix of a slot), feed every active slot its next tokens in one
``runtime.forward`` call (prompt chunks for new jobs, one token for the
others), fill the token masks of all constrained sequences in one parallel
call, set the disallowed logits to ``-inf``, sample, advance the matchers,
and hand text deltas to the waiting request handlers on the event loop.

Logit processing, in order: ``logit_bias``, the repeat penalty, the
frequency and presence penalties, the no-repeat n-gram guard
(:func:`_penalize`), then the grammar mask, so no bias, penalty or guard can
make an invalid token win; then sampling (:func:`_sample`): ``min_p``,
temperature, ``top_k``, ``top_p``. A constrained job with ``loop_guard``
holds its last tokens' text back and, when a string value starts to repeat
itself, rolls the repeats back and closes the string (:meth:`Engine._guard_loop`).
"""

from __future__ import annotations

import asyncio
import codecs
import itertools
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import FormcastError, GrammarMatcher, LimitError, allocate_token_bitmask, apply_token_bitmask_inplace, fill_next_token_bitmask_batch
from ..runtime import ModelRuntime, SequenceFeed

log = logging.getLogger("formcast.server")

__all__ = ["SamplingParams", "LogitBias", "StopScanner", "Job", "TokenEvent", "FinishEvent", "ErrorEvent", "Engine", "QueueFullError"]


# The no-repeat n-gram guard's penalty: finite, so that when the grammar
# allows only banned tokens the best of them still wins.
NGRAM_BAN = 1.0e4
# Loop guard: held tokens, longest repeated unit, shortest loop (characters).
GUARD_WINDOW = 64
GUARD_MAX_UNIT = 40
GUARD_MIN_CHARS = 12


class QueueFullError(Exception):
    """More jobs are waiting than the queue allows."""


@dataclass(frozen=True)
class LogitBias:
    """OpenAI ``logit_bias`` as arrays: distinct token ``ids`` and the
    ``values`` added to their logits."""

    ids: np.ndarray
    values: np.ndarray

    @classmethod
    def from_mapping(cls, bias: dict[int, float]) -> "LogitBias":
        """From ``{token id: bias}``."""
        return cls(np.fromiter(bias.keys(), dtype=np.int64, count=len(bias)),
                   np.fromiter(bias.values(), dtype=np.float32, count=len(bias)))


@dataclass
class SamplingParams:
    """Per-sequence sampling settings (OpenAI names; ``top_k``, ``min_p``,
    ``repeat_penalty`` and ``repeat_last_n`` as llama.cpp defines them).

    ``frequency_penalty`` / ``presence_penalty``: subtracted from a token's
    logit per earlier occurrence / once if it occurred, counting the tokens
    this choice generated (OpenAI). ``repeat_penalty``: divides the positive
    and multiplies the non-positive logits of every token among the last
    ``repeat_last_n`` tokens, prompt included (llama.cpp; -1: the whole
    context, 0: off). ``min_p``: drops tokens whose probability is below
    ``min_p`` times the most likely one's (before temperature, as llama.cpp).
    """

    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: Optional[int] = None
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    min_p: float = 0.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    repeat_penalty: float = 1.0
    repeat_last_n: int = 64
    logit_bias: Optional[LogitBias] = None
    # Bans (a finite penalty of NGRAM_BAN, before the mask) every token that
    # would repeat an n-gram of this many tokens already in the output; 0: off.
    no_repeat_ngram_size: int = 0
    # Constrained jobs only: close a string value that starts repeating itself
    # (see Engine._guard_loop). Holds back the last GUARD_WINDOW tokens' text.
    loop_guard: bool = False
    # Constrained jobs only: when the shortest completion of the answer no
    # longer fits in the tokens left (max_tokens or the context window), append
    # it instead of sampling on, so a cut-off answer still matches the grammar
    # (finish reason "length", with a note). See Engine._close_at_budget.
    complete_on_length: bool = False

    @property
    def changes_logits(self) -> bool:
        """Whether :func:`_penalize` has anything to do."""
        return (
            self.logit_bias is not None
            or self.frequency_penalty != 0.0
            or self.presence_penalty != 0.0
            or (self.repeat_penalty != 1.0 and self.repeat_last_n != 0)
            or self.no_repeat_ngram_size > 0
        )

    def __post_init__(self) -> None:
        if self.no_repeat_ngram_size < 0:
            raise ValueError("no_repeat_ngram_size must be >= 0")
        if self.loop_guard and any(self.stop):
            # Both hold text back, each by its own rule; nothing needs both yet.
            raise ValueError("loop_guard cannot be combined with stop strings")


@dataclass
class TokenEvent:
    """New output text of choice ``index`` (may be empty while a UTF-8
    character or a possible stop string is incomplete)."""

    index: int
    text: str
    token_ids: list[int]
    logprobs: list[dict] = field(default_factory=list)


@dataclass
class FinishEvent:
    """Choice ``index`` ended. ``note`` explains an unusual end (e.g. a
    constraint cut off by max_tokens)."""

    index: int
    reason: str
    prompt_tokens: int
    completion_tokens: int
    note: Optional[str] = None


@dataclass
class ErrorEvent:
    """Choice ``index`` failed inside the engine."""

    index: int
    message: str


@dataclass
class Job:
    """One sequence to generate. Built by the request handler; the engine
    fills in the decode state. ``prefill_tokens`` are already part of the
    answer (an assistant prefill): they are in the prompt and were accepted
    by ``matcher`` beforehand."""

    index: int
    prompt: list[int]
    params: SamplingParams
    emit: Callable[[Any], None]
    matcher: Optional[GrammarMatcher] = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    # decode state
    slot: int = -1
    pos: int = 0
    pending: list[int] = field(default_factory=list)
    generated: list[int] = field(default_factory=list)
    text_held: str = ""
    stops: Optional["StopScanner"] = None
    decoder: Any = None
    rng: Optional[np.random.Generator] = None
    enqueued_at: float = 0.0
    started_at: float = 0.0
    first_token_at: float = 0.0
    # loop guard: text of the last generated tokens not emitted yet, and its
    # length per token (aligned with the end of ``generated``)
    guard_text: str = ""
    guard_chars: list[int] = field(default_factory=list)
    guard_closed: int = 0
    guard_prompt: Optional[str] = None


class Engine:
    """Owns ``runtime`` from its own thread; :meth:`submit` is thread-safe.

    ``max_queue`` bounds the jobs waiting for a slot (beyond it
    :class:`QueueFullError`). ``metrics`` is an optional
    :class:`~formcast.server.metrics.Metrics`.
    """

    def __init__(self, runtime: ModelRuntime, *, max_queue: int = 64, metrics: Any = None) -> None:
        self.runtime = runtime
        self.max_queue = max_queue
        self.metrics = metrics
        self._waiting: deque[Job] = deque()
        self._active: dict[int, Job] = {}
        self._slot_tokens: list[list[int]] = [[] for _ in range(runtime.num_slots)]
        self._cv = threading.Condition()
        self._stop = False
        self._thread: Optional[threading.Thread] = None
        self._stop_ids = runtime.stop_token_ids
        self._bitmask = allocate_token_bitmask(runtime.num_slots, runtime.logits_size)
        self._seed_counter = itertools.count(int(time.time()))
        self._quote_id: Optional[int] = None

    # ------------------------------------------------------------ control --
    def start(self) -> None:
        """Starts the decode thread."""
        self._thread = threading.Thread(target=self._run, name="formcast-decode", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops the decode thread (waiting jobs get an error event)."""
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=10)

    @property
    def queue_depth(self) -> int:
        """Jobs waiting for a slot."""
        return len(self._waiting)

    @property
    def active_count(self) -> int:
        """Jobs being decoded."""
        return len(self._active)

    def has_room(self, n: int = 1) -> bool:
        """Whether ``n`` more jobs would fit in the queue right now."""
        free = self.runtime.num_slots - len(self._active)
        return len(self._waiting) + n <= self.max_queue + max(free, 0)

    def submit(self, jobs: Sequence[Job]) -> None:
        """Queues ``jobs`` (all or none); raises :class:`QueueFullError`."""
        with self._cv:
            if self._stop:
                raise QueueFullError("the server is shutting down")
            free = self.runtime.num_slots - len(self._active)
            if len(self._waiting) + len(jobs) > self.max_queue + max(free, 0):
                raise QueueFullError(f"{len(self._waiting)} requests are already waiting")
            now = time.monotonic()
            for j in jobs:
                j.enqueued_at = now
                self._waiting.append(j)
            self._cv.notify_all()
        self._gauge()

    # ---------------------------------------------------------- the loop --
    def _gauge(self) -> None:
        if self.metrics is not None:
            self.metrics.queue_depth.set(len(self._waiting))
            self.metrics.active_sequences.set(len(self._active))

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._stop and not self._waiting and not self._active:
                    self._cv.wait()
                if self._stop:
                    for j in list(self._waiting) + list(self._active.values()):
                        j.emit(ErrorEvent(j.index, "the server is shutting down"))
                    self._waiting.clear()
                    self._active.clear()
                    return
                self._admit()
            try:
                self._step()
            except Exception as e:  # never let the loop die: fail the jobs of this step
                log.exception("decode step failed")
                for slot, j in list(self._active.items()):
                    j.emit(ErrorEvent(j.index, f"generation failed: {e}"))
                    self._release(j)
                    # The slot's cache is in an unknown state: forget it.
                    self._slot_tokens[slot] = []
                    try:
                        self.runtime.clear_slot(slot)
                    except Exception:  # pragma: no cover
                        log.exception("clearing slot %d failed", slot)
            self._gauge()

    def _admit(self) -> None:
        free = [s for s in range(self.runtime.num_slots) if s not in self._active]
        while self._waiting and free:
            job = self._waiting.popleft()
            if job.cancelled.is_set():
                continue
            # The free slot whose cached tokens share the longest prefix.
            best, best_len = free[0], -1
            for s in free:
                cached = self._slot_tokens[s]
                n = 0
                for a, b in zip(cached, job.prompt):
                    if a != b:
                        break
                    n += 1
                if n > best_len:
                    best, best_len = s, n
            free.remove(best)
            reuse = min(best_len, len(job.prompt) - 1)  # the last prompt token is always fed: its logits are needed
            job.slot = best
            job.pos = reuse
            job.pending = list(job.prompt[reuse:])
            self._slot_tokens[best] = list(job.prompt[:reuse])
            job.decoder = codecs.getincrementaldecoder("utf-8")("replace")
            job.stops = StopScanner(job.params.stop) if any(job.params.stop) else None
            seed = job.params.seed if job.params.seed is not None else next(self._seed_counter)
            job.rng = np.random.default_rng(seed + job.index if job.params.seed is not None else seed)
            job.started_at = time.monotonic()
            self._active[best] = job
            if self.metrics is not None:
                self.metrics.prompt_tokens.inc(len(job.prompt))
                self.metrics.cached_prompt_tokens.inc(reuse)

    def _release(self, job: Job) -> None:
        self._active.pop(job.slot, None)

    def _step(self) -> None:
        rt = self.runtime
        # Drop cancelled jobs (client gone).
        for slot, j in list(self._active.items()):
            if j.cancelled.is_set():
                self._release(j)
                if self.metrics is not None:
                    self.metrics.cancelled.inc()
        if not self._active:
            return
        budget = rt.max_batch_tokens
        feeds: list[SequenceFeed] = []
        ready: list[Job] = []  # jobs whose feed ends the prompt / a decode step
        decoding = [j for j in self._active.values() if not j.pending or len(j.pending) == 1]
        prefilling = [j for j in self._active.values() if len(j.pending) > 1]
        for j in decoding:
            tokens = j.pending if j.pending else [j.generated[-1]]
            feeds.append(SequenceFeed(j.slot, tokens, j.pos))
            ready.append(j)
            budget -= len(tokens)
        for j in prefilling:
            if budget <= 0:
                break
            chunk = j.pending[:budget]
            feeds.append(SequenceFeed(j.slot, chunk, j.pos))
            ready.append(j)
            budget -= len(chunk)
        if not feeds:
            return
        logits = rt.forward(feeds)
        sample_rows: list[int] = []
        for i, (f, j) in enumerate(zip(feeds, ready)):
            n = len(f.tokens)
            self._slot_tokens[j.slot].extend(f.tokens)
            j.pos += n
            if j.pending:
                del j.pending[:n]
                if j.pending:  # prompt not finished yet
                    continue
            sample_rows.append(i)
        if not sample_rows:
            return
        # Biases and penalties first: the mask applied after them still
        # decides which tokens are possible.
        for i in sample_rows:
            j = ready[i]
            if j.params.changes_logits:
                _penalize(logits[i], j.params, j.prompt, j.generated, rt.n_ctx)
        # Masks for the constrained sequences, filled in parallel.
        constrained = [i for i in sample_rows if ready[i].matcher is not None]
        if constrained:
            t0 = time.perf_counter()
            bm = self._bitmask[: len(constrained)]
            try:
                fill_next_token_bitmask_batch([ready[i].matcher for i in constrained], bm)
            except FormcastError:
                # A row's grammar hit a limit (a pathologically ambiguous one):
                # that job fails alone, its batch-mates go on.
                failed = self._fill_rows(ready, constrained, bm)
                sample_rows = [i for i in sample_rows if i not in failed]
                keep = [k for k, i in enumerate(constrained) if i not in failed]
                constrained = [constrained[k] for k in keep]
                bm = np.ascontiguousarray(bm[keep])
            sub = logits[constrained]
            apply_token_bitmask_inplace(sub, bm)
            logits[constrained] = sub
            if self.metrics is not None:
                self.metrics.mask_seconds.observe(time.perf_counter() - t0)
        for i in sample_rows:
            j = ready[i]
            try:
                self._advance(j, logits[i])
            except Exception as e:  # one job's failure is not its batch-mates'
                log.exception("sampling failed for slot %d", j.slot)
                j.emit(ErrorEvent(j.index, f"generation failed: {e}"))
                self._release(j)

    def _fill_rows(self, ready: list[Job], rows: list[int], bm: np.ndarray) -> set[int]:
        """Fills ``bm`` row by row; fails and releases each job whose mask
        cannot be computed. Returns the failed rows."""
        failed: set[int] = set()
        for k, i in enumerate(rows):
            j = ready[i]
            try:
                j.matcher.fill_next_token_bitmask(bm, k)
            except FormcastError as e:
                log.warning("the mask of slot %d failed: %s", j.slot, e)
                j.emit(ErrorEvent(j.index, f"generation failed: the constraint's mask could not be computed: {e}"))
                self._release(j)
                failed.add(i)
        return failed

    def _advance(self, j: Job, row: np.ndarray) -> None:
        p = j.params
        token, lp = _sample(row, p, j.rng)
        now = time.monotonic()
        if not j.generated:
            j.first_token_at = now
        if j.matcher is not None and not j.matcher.accept_token(token):
            # Cannot happen with a correct mask; never emit an unchecked token.
            j.emit(ErrorEvent(j.index, f"internal error: the grammar rejected sampled token {token}"))
            self._release(j)
            return
        j.generated.append(token)
        if self.metrics is not None:
            self.metrics.generation_tokens.inc()
        if token in self._stop_ids:
            self._finish(j, "stop", flush=True)
            return
        piece = self.runtime.tokenizer.token_bytes(token)
        text = j.decoder.decode(piece)
        logprobs = [lp] if lp is not None else []
        done_reason: Optional[str] = None
        if j.stops is not None:
            # Only the new text is scanned; the held text is the longest
            # suffix that may still become a stop string.
            j.text_held += text
            hit, keep = j.stops.feed(text)
            if hit is not None:
                out = j.text_held[: len(j.text_held) - hit]
                j.text_held = ""
                j.emit(TokenEvent(j.index, out, [token], logprobs))
                self._finish(j, "stop", flush=False)
                return
            out = j.text_held[: len(j.text_held) - keep]
            j.text_held = j.text_held[len(j.text_held) - keep :]
        else:
            out = text
        if p.loop_guard and j.matcher is not None:
            out = self._hold(j, out)
        j.emit(TokenEvent(j.index, out, [token], logprobs))
        if p.complete_on_length and j.matcher is not None and self._close_at_budget(j):
            return
        if j.matcher is not None and j.matcher.is_terminated():
            done_reason = "stop"
        elif len(j.generated) >= p.max_tokens:
            done_reason = "length"
        elif j.pos >= self.runtime.n_ctx:
            done_reason = "length"
        if done_reason is not None:
            self._finish(j, done_reason, flush=True)

    # ------------------------------------------------------- loop guard --
    def _hold(self, j: Job, text: str) -> str:
        """Loop guard: adds ``text`` (the newest token's) to the held text,
        closes a looping string value (:meth:`_guard_loop`), and returns the
        text that leaves the window of the last ``GUARD_WINDOW`` tokens."""
        j.guard_text += text
        j.guard_chars.append(len(text))
        self._guard_loop(j)
        extra = len(j.guard_chars) - GUARD_WINDOW
        if extra <= 0:
            return ""
        n = sum(j.guard_chars[:extra])
        out, j.guard_text = j.guard_text[:n], j.guard_text[n:]
        del j.guard_chars[:extra]
        return out

    def _guard_loop(self, j: Job) -> bool:
        """When the held text ends with a unit of 1-40 characters repeated
        three or more times over 12 or more characters (the same rule as
        :func:`formcast.evaluate.degenerate.find_loop`), inside a string
        value (no quote or backslash in it) and not copied from the prompt:
        rolls the tokens of the repeats back, keeping the first unit, and
        closes the string with a quote token when the grammar takes one
        there. Returns whether it did. The next steps go on from the closed
        string, so a runaway value costs a few dozen tokens, not the budget."""
        text = j.guard_text
        n = len(text)
        for unit in range(1, min(GUARD_MAX_UNIT, n // 3) + 1):
            if text[n - 1] != text[n - 1 - unit]:
                continue
            run = 0
            while run < n - unit and text[n - 1 - run] == text[n - 1 - run - unit]:
                run += 1
            span = run + unit
            if span < 3 * unit or span < GUARD_MIN_CHARS:
                continue
            segment = text[n - span :]
            if '"' in segment or "\\" in segment:
                continue
            if j.guard_prompt is None:
                raw = b"".join(self.runtime.tokenizer.token_bytes(t) for t in j.prompt)
                j.guard_prompt = raw.decode("utf-8", "replace").casefold()
            if segment.casefold() in j.guard_prompt:
                continue
            return self._close_string(j, span - unit)
        return False

    def _close_string(self, j: Job, drop: int) -> bool:
        """Rolls back the fewest held tokens whose text covers the last
        ``drop`` characters and accepts a closing quote instead; leaves
        everything as it was (and returns False) when the grammar refuses
        the quote there."""
        m = j.matcher
        if self._quote_id is None:
            ids = self.runtime.tokenize('"', add_special=False, parse_special=False)
            self._quote_id = ids[0] if len(ids) == 1 else -1
        if self._quote_id < 0:
            return False
        k, dropped = 0, 0
        while dropped < drop and k < len(j.guard_chars) - 1:
            k += 1
            dropped += j.guard_chars[-k]
        if k == 0 or k > m.num_rollbackable or j.guard_text[: len(j.guard_text) - dropped].endswith("\\"):
            return False
        undone = j.generated[-k:]
        m.rollback(k)
        if not m.accept_token(self._quote_id):
            for t in undone:
                m.accept_token(t)
            return False
        fed = k - 1  # the newest token was sampled this step and is not in the cache yet
        j.pos -= fed
        if fed:
            del self._slot_tokens[j.slot][-fed:]
        del j.generated[-k:]
        del j.guard_chars[-k:]
        j.guard_text = j.guard_text[: len(j.guard_text) - dropped] + '"'
        j.guard_chars.append(1)
        j.generated.append(self._quote_id)
        j.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        j.guard_closed += 1
        return True

    def _close_at_budget(self, j: Job) -> bool:
        """Ends a constrained job along the grammar's shortest completion
        when that completion no longer fits in the tokens left after this
        one; returns whether it did.

        The check is cheap (the completion's length in bytes, an upper bound
        on its tokens, since every byte has a token in the vocabularies the
        engine supports); the completion text is only built and tokenized
        once that bound reaches the tokens left, and appended when its tokens
        do. The answer thus ends within ``max_tokens`` unless a single token
        lengthens the completion past the tokens left (e.g. one that opens an
        object with many required keys): then the completion still closes it,
        overshooting ``max_tokens`` by as little as possible.
        """
        m = j.matcher
        if m.is_terminated() or m.can_terminate():
            return False
        left = min(j.params.max_tokens - len(j.generated), self.runtime.n_ctx - j.pos - 1)
        n = m.shortest_completion_length()
        if n is None or n < left:
            return False
        try:
            completion = m.find_shortest_completion(max(n, 1))
        except LimitError:
            # Too ambiguous to complete within the engine's bound: sample on.
            return False
        if completion is None:  # pragma: no cover - n says there is one
            return False
        ids = self._completion_ids(m, completion)  # accepted by m when not None
        n_tokens = len(ids) if ids is not None else len(completion)
        if n_tokens < left:  # still fits later: sample on
            if ids:
                m.rollback(len(ids))
            return False
        if ids is None and not m.accept_string(completion):  # pragma: no cover - the grammar produced it
            j.emit(ErrorEvent(j.index, "internal error: the grammar rejected its own completion"))
            self._release(j)
            return True
        j.generated.extend(ids or [])
        if self.metrics is not None:
            self.metrics.generation_tokens.inc(n_tokens)
        text = j.guard_text + j.text_held + j.decoder.decode(completion) + j.decoder.decode(b"", final=True)
        j.text_held = j.guard_text = ""
        if text:
            j.emit(TokenEvent(j.index, text, list(ids or []), []))
        note = (
            f"the token limit was reached inside the answer: it was closed along the grammar's "
            f"shortest completion ({len(completion)} bytes, {n_tokens} tokens)"
        )
        self._finish(j, "length", flush=False, note=note)
        return True

    def _completion_ids(self, m: GrammarMatcher, completion: bytes) -> Optional[list[int]]:
        """Token ids for ``completion``, accepted by ``m`` one by one; None
        (nothing accepted) when the text does not tokenize into tokens the
        matcher takes, e.g. when it starts inside a UTF-8 character."""
        try:
            text = completion.decode("utf-8")
        except UnicodeDecodeError:
            return None
        ids = self.runtime.tokenize(text, add_special=False, parse_special=False)
        for k, t in enumerate(ids):
            if not m.accept_token(t):
                m.rollback(k)
                return None
        return ids

    def _finish(self, j: Job, reason: str, *, flush: bool, note: Optional[str] = None) -> None:
        if flush:
            tail = j.guard_text + j.text_held + j.decoder.decode(b"", final=True)
            j.text_held = j.guard_text = ""
            if tail:
                j.emit(TokenEvent(j.index, tail, [], []))
        if note is not None:
            pass  # the caller explains the end
        elif reason == "length" and j.matcher is not None:
            if j.matcher.can_terminate():
                reason = "stop"  # the constrained answer is complete
            else:
                note = "max_tokens was reached before the output could satisfy the constraint: the output is incomplete"
        elif reason == "length" and j.pos >= self.runtime.n_ctx:
            note = f"the context window of {self.runtime.n_ctx} tokens is full"
        n_out = len(j.generated)  # a final stop token counts, as OpenAI counts it
        j.emit(FinishEvent(j.index, reason, len(j.prompt), n_out, note))
        if self.metrics is not None:
            self.metrics.finished.labels(reason=reason).inc()
            if j.first_token_at:
                self.metrics.time_to_first_token.observe(j.first_token_at - j.enqueued_at)
        self._release(j)


def _failure(s: str) -> list[int]:
    """KMP failure function of ``s``: ``f[i]`` is the length of the longest
    proper prefix of ``s[: i + 1]`` that is also its suffix."""
    f = [0] * len(s)
    k = 0
    for i in range(1, len(s)):
        while k and s[i] != s[k]:
            k = f[k - 1]
        if s[i] == s[k]:
            k += 1
        f[i] = k
    return f


class StopScanner:
    """Stop strings found in text that arrives piece by piece, in time linear
    in the text: one Knuth-Morris-Pratt automaton per stop string, whose
    state is the longest suffix of the text so far that is a prefix of that
    stop string. That suffix is what must be held back (it may yet become a
    stop string); everything before it can be released. Each character costs
    amortized O(1) per stop string, whatever the stop strings' lengths
    (building the automata is linear in them), so the decode loop never
    rescans the held text. Empty stop strings are ignored."""

    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = tuple(s for s in stops if s)
        self._fail = [_failure(s) for s in self.stops]
        self._state = [0] * len(self.stops)

    def feed(self, text: str) -> tuple[Optional[int], int]:
        """Advances over ``text``. Returns ``(hit, held)``: ``hit`` is where
        the earliest stop string that ends in ``text`` starts, counted back
        from the end of ``text`` (so ``held_text[len(held_text) - hit:]``
        starts with it, where ``held_text`` is the held text plus ``text``),
        or None; ``held`` is how many characters at the end must stay held."""
        hit: Optional[int] = None
        n = len(text)
        for k, s in enumerate(self.stops):
            q, fail, m = self._state[k], self._fail[k], len(s)
            for i, c in enumerate(text):
                while q and s[q] != c:
                    q = fail[q - 1]
                if s[q] == c:
                    q += 1
                if q == m:  # s ends at text[i]: it starts m - 1 characters earlier
                    back = n - i - 1 + m
                    if hit is None or back > hit:
                        hit = back
                    break  # a later end of the same string starts later
            self._state[k] = q
        held = max(self._state, default=0)
        return hit, held


def _find_stop(text: str, stops: Sequence[str]) -> Optional[int]:
    """Where the earliest stop string in ``text`` starts, or None."""
    best = None
    for s in stops:
        k = text.find(s) if s else -1
        if k >= 0 and (best is None or k < best):
            best = k
    return best


def _held_suffix(text: str, stops: Sequence[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of a
    stop string (held back until it is decided); linear in ``text`` and the
    stop strings."""
    keep = 0
    for s in stops:
        if not s:
            continue
        fail, q = _failure(s), 0
        for c in text:
            if q == len(s):
                q = fail[q - 1]
            while q and s[q] != c:
                q = fail[q - 1]
            if s[q] == c:
                q += 1
        if q == len(s):  # text ends with all of s: the longest proper prefix
            q = fail[q - 1]
        keep = max(keep, q)
    return keep


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = np.max(x)
    z = x - m
    with np.errstate(invalid="ignore"):
        return z - np.log(np.sum(np.exp(z)))


def _penalize(row: np.ndarray, p: SamplingParams, prompt: Sequence[int], generated: Sequence[int], n_ctx: int) -> None:
    """Applies ``logit_bias``, the repeat penalty and the frequency and
    presence penalties to one logits row, in place (see
    :class:`SamplingParams`). Vectorized over the distinct tokens involved:
    the cost grows with the tokens generated, not with the vocabulary."""
    if p.logit_bias is not None:
        row[p.logit_bias.ids] += p.logit_bias.values
    if p.repeat_penalty != 1.0 and p.repeat_last_n != 0:
        n = n_ctx if p.repeat_last_n < 0 else p.repeat_last_n
        if len(generated) >= n:
            window = np.asarray(generated[len(generated) - n :], dtype=np.int64)
        else:
            from_prompt = prompt[max(0, len(prompt) - (n - len(generated))) :]
            window = np.concatenate([np.asarray(from_prompt, dtype=np.int64), np.asarray(generated, dtype=np.int64)])
        ids = np.unique(window)
        v = row[ids]
        row[ids] = np.where(v <= 0, v * p.repeat_penalty, v / p.repeat_penalty)
    if (p.frequency_penalty != 0.0 or p.presence_penalty != 0.0) and len(generated):
        ids, counts = np.unique(np.asarray(generated, dtype=np.int64), return_counts=True)
        row[ids] -= counts * p.frequency_penalty + p.presence_penalty
    if p.no_repeat_ngram_size > 0:
        banned = _ngram_banned(generated, p.no_repeat_ngram_size)
        if banned.size:
            row[banned] -= NGRAM_BAN


def _ngram_banned(generated: Sequence[int], n: int) -> np.ndarray:
    """The distinct tokens that would complete an n-gram already in
    ``generated`` (those that follow an earlier occurrence of its last
    ``n - 1`` tokens)."""
    g = np.asarray(generated, dtype=np.int64)
    if len(g) < n:
        return g[:0]
    if n == 1:
        return np.unique(g)
    windows = np.lib.stride_tricks.sliding_window_view(g[:-1], n - 1)  # starts 0 .. len - n
    hits = np.nonzero((windows == g[len(g) - n + 1 :]).all(axis=1))[0]
    return np.unique(g[hits + n - 1])


def _sample(row: np.ndarray, p: SamplingParams, rng: np.random.Generator) -> tuple[int, Optional[dict]]:
    """Samples one token from a (masked) logits row: greedy at temperature
    0, else min-p, temperature, top-k and top-p. Returns the token and, when
    asked, its logprob entry (log-softmax of the biased, penalized and masked
    logits, before temperature)."""
    if p.temperature <= 0 or p.top_k == 1:
        token = int(np.argmax(row))
    else:
        # Shifted so the best logit is 0 before dividing: a tiny temperature
        # then sends the others to -inf instead of overflowing to inf - inf = nan.
        x = row.astype(np.float64)
        x -= np.max(x)
        if p.min_p > 0.0:
            # p_i >= min_p * p_max  <=>  logit_i >= logit_max + ln(min_p)
            x[x < np.log(p.min_p)] = -np.inf
        with np.errstate(over="ignore"):  # -large / tiny = -inf: the intended result
            x = x / p.temperature
        if p.top_k > 0 and p.top_k < x.shape[0]:
            kth = np.partition(x, -p.top_k)[-p.top_k]
            x = np.where(x >= kth, x, -np.inf)
        x = x - np.max(x)
        probs = np.exp(x)
        probs /= probs.sum()
        if p.top_p < 1.0:
            order = np.argsort(-probs)
            cum = np.cumsum(probs[order])
            cut = int(np.searchsorted(cum, p.top_p)) + 1
            keep = order[:cut]
            masked = np.zeros_like(probs)
            masked[keep] = probs[keep]
            probs = masked / masked.sum()
        token = int(rng.choice(probs.shape[0], p=probs))
    if not p.logprobs:
        return token, None
    lsm = _log_softmax(row.astype(np.float64))
    entry: dict = {"token": token, "logprob": float(lsm[token]), "top": []}
    if p.top_logprobs > 0:
        k = min(p.top_logprobs, lsm.shape[0])
        top = np.argpartition(-lsm, k - 1)[:k]
        top = top[np.argsort(-lsm[top])]
        entry["top"] = [(int(t), float(lsm[t])) for t in top if np.isfinite(lsm[t])]
    return token, entry
