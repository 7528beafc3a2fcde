"""Text-to-JSON formatting with a language model (the SPOT formatter paper).

::

    from formcast.formatter import Formatter

    fmt = Formatter("my-model", base_url="http://127.0.0.1:8080/v1")   # any OpenAI-compatible endpoint
    fmt.format("Blue Spice is a pub by the river.", schema)            # -> dict matching schema
    fmt.format_batch(texts, schemas)                                   # with a progress bar

Constrained decoding is on by default (the endpoint enforces the schema
through ``response_format``); ``constrained=False`` is the paper's
prompting-only baseline.  Evaluation runs (``formcast eval``), dataset
converters and the synthesis pipeline live in :mod:`.evaluation`,
:mod:`.convert` and :mod:`.synth`; metrics in :mod:`formcast.evaluate`.
"""

from __future__ import annotations

from .backends import (
    Backend,
    BackendError,
    BackendUnavailableError,
    Completion,
    GenerationRequest,
    OpenAIBackend,
    TransientBackendError,
    available_backends,
    create_backend,
    register_backend,
)
from .core import FormatError, Formatter, as_schema
from .data import DatasetError, Example, load_jsonl, write_jsonl
from .prompts import GENERATION_PROMPT, JUDGE_PROMPT, PAPER_PROMPT

__all__ = [
    "Formatter",
    "FormatError",
    "as_schema",
    "Backend",
    "BackendError",
    "BackendUnavailableError",
    "TransientBackendError",
    "Completion",
    "GenerationRequest",
    "OpenAIBackend",
    "available_backends",
    "create_backend",
    "register_backend",
    "Example",
    "DatasetError",
    "load_jsonl",
    "write_jsonl",
    "PAPER_PROMPT",
    "JUDGE_PROMPT",
    "GENERATION_PROMPT",
]
