"""formcast.repair — defensive parsing for model output that could not be constrained.

The pipeline (every stage logs what it touched in a :class:`Report`)::

    from formcast.repair import parse

    res = parse(reply, schema)          # extract -> repair -> strict parse -> validate
    res.value                           # the value (a model instance for pydantic)
    log.info(res.report.summary())      # e.g. "repaired: code_fence, trailing_comma"

The contract: every result is the only reasonable reading of the text, or it is
marked, or it is an error.

* **Mechanical** repairs have one reading (a trailing comma, a comment, ``True``,
  single quotes, a bare key, a raw newline in a string, a fence or prose around
  the value...). They are logged, not flagged.
* **Judgement** repairs are choices between plausible readings: a string's lost
  closing quote (``"New York, "gender": "male"``), a quote that could end a
  string read as content, text after a value that continues it
  (``{"a": 1}, "b": 2}``), several values in one reply, a key repeated with
  different values, a bare word read as a string, a cut inside a token. Each is
  a :class:`Fix` with ``guess=True``: ``report.guessed`` is set, and
  ``guesses="reject"`` raises :class:`GuessRejected` instead of returning it.
* **Truncation** between values (``max_tokens``) closes the open containers and
  sets ``report.truncated``; ``allow_truncated=False`` raises instead.
* Everything else is an **error**: a :class:`RepairError` subclass carrying the
  report (:class:`ExtractionError`, :class:`UnrepairableError`, ...).

:data:`FIX_CLASSES` says for each kind of fix which it is (and, for kinds that
can be either, when it is a guess). Semantics are never changed silently: a
near-miss enum value or a wrong type is a :class:`ValidationFailed` unless a
coercion is explicitly enabled (``coerce={"enum"}``), and then it is a guess.

Also here: :func:`structured` (an OpenAI-compatible client that climbs down the
rungs and re-asks with the validator's message), :class:`JsonStream` (partial
JSON while it streams) and :func:`parse_tags` / :class:`TagStream` (rung 3,
tag-delimited answers).
"""

from .client import Attempt, ChatClient, StructuredResult, schema_prompt, structured
from .errors import (
    EndpointError,
    ExtractionError,
    GuessRejected,
    InvalidSchema,
    RepairError,
    StructuredOutputError,
    TruncatedError,
    UnrepairableError,
    ValidationFailed,
)
from .extract import Candidate, find_candidates
from .fix import Repaired, repair_json
from .pipeline import ParseResult, RepairOptions, loads, parse
from .report import FIX_CLASSES, FIX_KINDS, CandidateRecord, Fix, Issue, Report
from .stream import JsonStream, iter_partial, parse_partial
from .tags import TagNode, TagStream, parse_tags
from .validate import COERCIONS, Validator, compile_validator, validate

__all__ = [
    # pipeline
    "parse",
    "loads",
    "RepairOptions",
    "ParseResult",
    "Report",
    "Fix",
    "Issue",
    "CandidateRecord",
    "FIX_KINDS",
    "FIX_CLASSES",
    # stages, usable on their own
    "find_candidates",
    "Candidate",
    "repair_json",
    "Repaired",
    "validate",
    "compile_validator",
    "Validator",
    "COERCIONS",
    # client
    "structured",
    "StructuredResult",
    "Attempt",
    "ChatClient",
    "schema_prompt",
    # streaming and tags
    "JsonStream",
    "iter_partial",
    "parse_partial",
    "parse_tags",
    "TagStream",
    "TagNode",
    # errors
    "RepairError",
    "ExtractionError",
    "UnrepairableError",
    "GuessRejected",
    "TruncatedError",
    "ValidationFailed",
    "InvalidSchema",
    "StructuredOutputError",
    "EndpointError",
]
