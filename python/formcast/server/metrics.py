"""Prometheus metrics of one server (its own registry, so several servers can
live in one process, e.g. in tests)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics"]

_FAST = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1)
_SLOW = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """Counters, gauges and histograms exported at ``GET /metrics``."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.requests = Counter("formcast_requests", "HTTP requests by endpoint and status", ["endpoint", "status"], registry=r)
        self.prompt_tokens = Counter("formcast_prompt_tokens", "Prompt tokens admitted", registry=r)
        self.cached_prompt_tokens = Counter("formcast_cached_prompt_tokens", "Prompt tokens reused from a slot's KV cache", registry=r)
        self.generation_tokens = Counter("formcast_generation_tokens", "Tokens generated", registry=r)
        self.finished = Counter("formcast_sequences_finished", "Sequences finished by finish_reason", ["reason"], registry=r)
        self.cancelled = Counter("formcast_sequences_cancelled", "Sequences stopped because the client went away", registry=r)
        self.rejected = Counter("formcast_requests_rejected", "Requests refused because the queue was full", registry=r)
        self.mask_seconds = Histogram("formcast_mask_seconds", "Time to fill and apply the token masks of one decode step", buckets=_FAST, registry=r)
        self.compile_seconds = Histogram("formcast_compile_seconds", "Grammar compile time per request (cache hits included)", buckets=_SLOW, registry=r)
        self.time_to_first_token = Histogram("formcast_time_to_first_token_seconds", "Queue + prefill time until the first token", buckets=_SLOW, registry=r)
        self.queue_depth = Gauge("formcast_queue_depth", "Sequences waiting for a decode slot", registry=r)
        self.active_sequences = Gauge("formcast_active_sequences", "Sequences being decoded", registry=r)

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)
