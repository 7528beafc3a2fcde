"""Typed failures. Each carries the :class:`~formcast.repair.report.Report` built so far."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .report import Fix, Issue, Report

if TYPE_CHECKING:  # pragma: no cover
    from .client import Attempt


class RepairError(ValueError):
    """Base class: the text could not be turned into a trustworthy value.

    Subclasses ``ValueError`` so existing ``except ValueError`` handlers (as for
    ``json.loads``) keep working.
    """

    def __init__(self, message: str, report: Report | None = None) -> None:
        super().__init__(message)
        self.report = report if report is not None else Report()


class ExtractionError(RepairError):
    """No JSON value (object, array or scalar) could be found in the text."""


class UnrepairableError(RepairError):
    """A value was found but its syntax is broken beyond mechanical repair.

    ``offset`` is the character index (in the original text) where repair gave up.
    """

    def __init__(self, message: str, report: Report | None = None, offset: int | None = None) -> None:
        super().__init__(message, report)
        self.offset = offset


class GuessRejected(RepairError):
    """Repair needed a judgement call and the options say ``guesses="reject"``."""

    def __init__(self, message: str, report: Report | None = None, guesses: list[Fix] | None = None) -> None:
        super().__init__(message, report)
        self.guesses = guesses or []


class TruncatedError(RepairError):
    """The text ended early (e.g. ``max_tokens``) and ``allow_truncated`` is off."""


class ValidationFailed(RepairError):
    """The value parsed but does not match the schema/model.

    ``str(error)`` is the validator's messages, one per line, each prefixed with its
    JSON pointer: exactly what :func:`~formcast.repair.client.structured` sends back
    to the model when it re-asks.
    """

    def __init__(self, issues: list[Issue], value: Any = None, report: Report | None = None) -> None:
        self.issues = list(issues)
        self.value = value
        super().__init__(format_issues(self.issues), report)


class InvalidSchema(TypeError):
    """The schema itself is not a valid JSON Schema, or the model is not a pydantic type."""


class StructuredOutputError(Exception):
    """``structured()`` gave up. ``attempts`` holds every request/reply/error in order."""

    def __init__(self, message: str, attempts: list[Attempt]) -> None:
        super().__init__(message)
        self.attempts = list(attempts)

    @property
    def last_error(self) -> str | None:
        return self.attempts[-1].error if self.attempts else None


class EndpointError(StructuredOutputError):
    """The endpoint itself failed (HTTP error, connection refused, malformed envelope)."""

    def __init__(self, message: str, attempts: list[Attempt], status: int | None = None, body: str | None = None) -> None:
        super().__init__(message, attempts)
        self.status = status
        self.body = body


def format_issues(issues: list[Issue]) -> str:
    if not issues:
        return "validation failed"
    head = "1 validation issue" if len(issues) == 1 else f"{len(issues)} validation issues"
    return head + ":\n" + "\n".join(str(i) for i in issues)
