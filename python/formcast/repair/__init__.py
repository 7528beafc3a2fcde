"""formcast.repair — defensive parsing for model output that could not be constrained.

The pipeline (every stage logs what it touched in a :class:`Report`)::

    from formcast.repair import parse

    res = parse(reply, schema)          # extract -> repair -> strict parse -> validate
    res.value                           # the value (a model instance for pydantic)
    log.info(res.report.summary())      # e.g. "repaired: code_fence, trailing_comma"

Syntax is repaired mechanically; semantics never silently: a near-miss enum value
or a wrong type is a :class:`ValidationFailed` unless a coercion is explicitly
enabled (``coerce={"enum"}``), and then it is logged as a guess.

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
from .report import FIX_KINDS, CandidateRecord, Fix, Issue, Report
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
