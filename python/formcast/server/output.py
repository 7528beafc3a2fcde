"""Output → response: OpenAI chat / completion objects, stream chunks, SSE
framing and logprobs, from the engine's events."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .engine import FinishEvent, TokenEvent

__all__ = ["ChoiceState", "sse", "chat_logprobs", "completion_logprobs", "new_id", "usage"]


def new_id(prefix: str) -> str:
    """``prefix-<random hex>``."""
    return f"{prefix}-{uuid.uuid4().hex[:24]}"


def sse(obj: Any) -> bytes:
    """One server-sent event carrying JSON (or the literal ``[DONE]``)."""
    data = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return f"data: {data}\n\n".encode("utf-8")


def usage(prompt_tokens: int, completion_tokens: int) -> dict:
    """The ``usage`` object."""
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}


@dataclass
class ChoiceState:
    """What one choice has produced so far."""

    index: int
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[dict] = field(default_factory=list)
    finish: Optional[FinishEvent] = None

    def add(self, ev: TokenEvent) -> None:
        """Appends a token event."""
        self.text += ev.text
        self.token_ids.extend(ev.token_ids)
        self.logprobs.extend(ev.logprobs)


def _token_entry(piece: bytes, logprob: float) -> dict:
    return {"token": piece.decode("utf-8", "replace"), "logprob": logprob, "bytes": list(piece)}


def chat_logprobs(entries: list[dict], token_bytes: Callable[[int], bytes]) -> dict:
    """Chat ``logprobs``: ``{"content": [{token, logprob, bytes, top_logprobs}], "refusal": None}``."""
    content = []
    for e in entries:
        item = _token_entry(token_bytes(e["token"]), e["logprob"])
        item["top_logprobs"] = [_token_entry(token_bytes(t), lp) for t, lp in e["top"]]
        content.append(item)
    return {"content": content, "refusal": None}


def completion_logprobs(entries: list[dict], token_bytes: Callable[[int], bytes], offset0: int = 0) -> dict:
    """Legacy completion ``logprobs``: tokens, token_logprobs, top_logprobs, text_offset."""
    tokens, lps, tops, offsets = [], [], [], []
    off = offset0
    for e in entries:
        piece = token_bytes(e["token"]).decode("utf-8", "replace")
        tokens.append(piece)
        lps.append(e["logprob"])
        tops.append({token_bytes(t).decode("utf-8", "replace"): lp for t, lp in e["top"]})
        offsets.append(off)
        off += len(piece)
    return {"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offsets}


def now() -> int:
    """Unix time in seconds."""
    return int(time.time())
