"""The defensive parsing pipeline: extract -> repair -> parse -> validate.

Valid JSON takes a fast path (one strict ``json`` decode and, with a schema, one
validation); only a failed strict parse pays for extraction and repair.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .errors import (
    ExtractionError,
    GuessRejected,
    RepairError,
    TruncatedError,
    UnrepairableError,
    ValidationFailed,
)
from .extract import Candidate, find_candidates, find_fences
from .fix import GuessNeeded, Repaired, RepairFailed, repair_json
from .report import CandidateRecord, Fix, Issue, Report
from .validate import COERCIONS, Validator, compile_validator

__all__ = ["RepairOptions", "ParseResult", "parse", "loads"]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# Strict: no NaN/Infinity (json.loads accepts them by default).
_STRICT = json.JSONDecoder(parse_constant=_reject_constant)
_LAX = json.JSONDecoder()
_strict_decode = _STRICT.decode


@dataclass(frozen=True)
class RepairOptions:
    """How far the pipeline may go. Defaults repair syntax and report every guess.

    * ``nonfinite``: ``NaN``/``Infinity`` become ``null`` (as ``JSON.stringify`` does),
      stay Python floats (``"float"``, which accepts them as ``json.loads`` does: a
      reply valid apart from them takes the fast path unlogged), or are an error
      (``"error"``).
    * ``guesses``: ``"report"`` accepts judgement calls and marks them in the report;
      ``"reject"`` raises :class:`GuessRejected` instead.
    * ``allow_truncated``: accept output cut off mid-value (flagged ``report.truncated``).
    * ``coerce``: opt-in semantic coercions (see :data:`COERCIONS`), each logged.
    * ``unwrap_double_encoded``: a JSON string holding a JSON object/array is decoded
      (a guess) unless the schema accepts the string itself.
    * ``fallback``: ``"json_repair"`` tries the json-repair library when our own
      repair fails; its result is always marked as a guess.
    """

    nonfinite: Literal["null", "float", "error"] = "null"
    guesses: Literal["report", "reject"] = "report"
    allow_truncated: bool = True
    coerce: frozenset[str] = field(default_factory=frozenset)
    unwrap_double_encoded: bool = True
    fallback: Literal["none", "json_repair"] = "none"
    max_candidates: int = 32

    def __post_init__(self) -> None:
        if self.nonfinite not in ("null", "float", "error"):
            raise ValueError(f"nonfinite must be 'null', 'float' or 'error', not {self.nonfinite!r}")
        if self.guesses not in ("report", "reject"):
            raise ValueError(f"guesses must be 'report' or 'reject', not {self.guesses!r}")
        if self.fallback not in ("none", "json_repair"):
            raise ValueError(f"fallback must be 'none' or 'json_repair', not {self.fallback!r}")
        coerce = frozenset([self.coerce] if isinstance(self.coerce, str) else self.coerce)
        unknown = coerce - set(COERCIONS)
        if unknown:
            raise ValueError(f"unknown coercion(s) {sorted(unknown)}; choose from {sorted(COERCIONS)}")
        object.__setattr__(self, "coerce", coerce)


_DEFAULT = RepairOptions()


class ParseResult:
    """A parsed (and, with a schema, validated) value plus the report of what was done.

    ``value`` is typed (a model instance for a pydantic model); ``data`` is the plain
    JSON value. ``report`` is built lazily on the fast path.
    """

    __slots__ = ("value", "data", "_report", "_text")

    def __init__(self, value: Any, data: Any, report: Report | None, text: str = "") -> None:
        self.value = value
        self.data = data
        self._report = report
        self._text = text  # only for the lazy fast-path report (a reference, not a copy)

    @property
    def report(self) -> Report:
        if self._report is None:
            self._report = Report(
                input_chars=len(self._text),
                fast_path=True,
                stages={"extract": "whole text", "repair": "none needed", "parse": "ok"},
            )
        return self._report

    @property
    def repaired(self) -> bool:
        return self._report is not None and self._report.repaired

    @property
    def guessed(self) -> bool:
        return self._report is not None and self._report.guessed

    @property
    def truncated(self) -> bool:
        return self._report is not None and self._report.truncated

    def __repr__(self) -> str:
        return f"ParseResult(value={self.value!r}, report={self.report.summary()!r})"


# Compiled validators, keyed by the schema object's identity. The schema is kept
# alive in the entry so its id() cannot be reused while cached.
_VALIDATORS: dict[int, tuple[Any, Validator]] = {}


def _validator(schema: Any) -> Validator:
    if isinstance(schema, Validator):
        return schema
    hit = _VALIDATORS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    v = compile_validator(schema)
    if len(_VALIDATORS) >= 128:
        _VALIDATORS.clear()
    _VALIDATORS[id(schema)] = (schema, v)
    return v


def _looks_like_container(s: str) -> bool:
    t = s.strip()
    return len(t) >= 2 and ((t[0] == "{" and t[-1] == "}") or (t[0] == "[" and t[-1] == "]"))


def parse(text: str | bytes, schema: Any = None, *, options: RepairOptions | None = None, **overrides: Any) -> ParseResult:
    """Extract, repair, strictly parse and validate the JSON value in a model reply.

    ``schema`` is a JSON Schema dict, a pydantic model (or ``TypeAdapter``/type), a
    compiled :class:`Validator`, or None. Options are a :class:`RepairOptions` or
    its fields as keywords (``parse(text, coerce={"enum"})``).

    Returns a :class:`ParseResult`; raises a :class:`RepairError` subclass (each
    carrying the report) when no candidate parses, when a candidate parses but
    fails validation (:class:`ValidationFailed`), or when the options forbid what
    the input needs (:class:`GuessRejected`, :class:`TruncatedError`).
    """
    if type(text) is str and options is None and not overrides:
        # The common case, kept to the bare minimum: one strict decode.
        opts = _DEFAULT
        try:
            data = _strict_decode(text)
        except (ValueError, RecursionError):
            return _slow(text, None if schema is None else _validator(schema), opts)
        if schema is None and type(data) is not str:
            return ParseResult(data, data, None, text)
    else:
        opts = replace(options or _DEFAULT, **overrides)
        if not isinstance(text, str):
            if not isinstance(text, (bytes, bytearray)):
                raise TypeError(f"parse() expects str or bytes, not {type(text).__name__}")
            try:
                text = bytes(text).decode("utf-8")
            except UnicodeDecodeError as e:
                raise RepairError(f"input is not UTF-8: {e}") from None
        try:
            data = (_LAX if opts.nonfinite == "float" else _STRICT).decode(text)
        except (ValueError, RecursionError):
            return _slow(text, None if schema is None else _validator(schema), opts)
    # Valid JSON: at most a validation left to do.
    if type(data) is str and opts.unwrap_double_encoded and _looks_like_container(data):
        return _slow(text, None if schema is None else _validator(schema), opts, data)
    if schema is None:
        return ParseResult(data, data, None, text)
    validator = _validator(schema)
    value, issues = validator.validate(data)
    if not issues:
        return ParseResult(value, data, None, text)
    report = Report(input_chars=len(text), fast_path=True, stages={"extract": "whole text", "repair": "none needed", "parse": "ok"})
    return _finish_invalid(data, issues, validator, opts, report)


def loads(text: str | bytes, schema: Any = None, **options: Any) -> Any:
    """Like :func:`parse` but returns only the value (drop-in for ``json.loads`` on model output)."""
    if schema is None and not options and type(text) is str:
        try:
            data = _strict_decode(text)
        except (ValueError, RecursionError):
            pass
        else:
            if type(data) is not str:
                return data
    return parse(text, schema, **options).value


# -- slow path ------------------------------------------------------------------


class _Outcome:
    __slots__ = ("data", "fixes", "truncated", "end")

    def __init__(self, data: Any, fixes: list[Fix], truncated: bool, end: int | None = None) -> None:
        self.data = data
        self.fixes = fixes
        self.truncated = truncated
        self.end = end  # set when repair found the value's end beyond the scanned span


def _finish_invalid(data: Any, issues: list[Issue], validator: Validator, opts: RepairOptions, report: Report) -> ParseResult:
    """Issues found: coerce if (and only as far as) the options allow, else raise."""
    if opts.coerce:
        new, fixes = validator.coerce(data, opts.coerce)
        if fixes:
            value, remaining = validator.validate(new)
            report.fixes.extend(fixes)
            if not remaining:
                report.issues = issues  # what was wrong before coercion, for the log
                report.stages["validate"] = f"ok after {len(fixes)} coercion{'s' if len(fixes) > 1 else ''}"
                report.stages["coerce"] = ", ".join(f.kind for f in fixes)
                return ParseResult(value, new, report)
            issues, data = remaining, new
    report.issues = issues
    report.stages["validate"] = f"{len(issues)} issue{'s' if len(issues) > 1 else ''}"
    raise ValidationFailed(issues, data, report)


def _decode(text: str, nonfinite: str) -> Any:
    return (_LAX if nonfinite == "float" else _STRICT).decode(text)


def _try_candidate(text: str, cand: Candidate, opts: RepairOptions, allow_guesses: bool) -> _Outcome | str:
    """Strict parse, else repair then strict parse. Returns the outcome or why it failed."""
    sub = text[cand.start : cand.end]
    if cand.closed and sub != text.strip():  # the whole text already failed strictly
        try:
            return _Outcome(_decode(sub, opts.nonfinite), [], False)
        except (ValueError, RecursionError):
            pass
    rep: Repaired | None
    try:
        # An unclosed span runs to the end of its region: the value may end earlier.
        rep = repair_json(sub, nonfinite=opts.nonfinite, allow_guesses=allow_guesses, offset=cand.start, stop_at_end=not cand.closed)
    except GuessNeeded as g:
        rep, why = None, f"needs a guess: {g.fix.message}"
    except RepairFailed as e:
        rep, why = None, f"unrepairable: {e}"
    if (rep is None or rep.truncated) and cand.closed and cand.region_end is not None and cand.region_end > cand.end:
        # The bracket scan and the repairer read a quote differently ('"0"A": 1'), so the
        # scan's end is wrong: let the repairer find where the value really ends.
        try:
            wide = repair_json(text[cand.start : cand.region_end], nonfinite=opts.nonfinite, allow_guesses=allow_guesses, offset=cand.start, stop_at_end=True)
        except (GuessNeeded, RepairFailed):
            wide = None
        if wide is not None and not wide.truncated:
            rep = wide
    if rep is None:
        return why
    try:
        data = _LAX.decode(rep.text) if rep.nonfinite_kept else _STRICT.decode(rep.text)
    except (ValueError, RecursionError) as e:  # the repairer wrote invalid JSON: report it, never eval
        return f"strict parse failed after repair: {e}"
    return _Outcome(data, rep.fixes, rep.truncated, cand.start + rep.end if rep.end != len(sub) else None)


def _extract_fixes(text: str, cand: Candidate) -> list[Fix]:
    fixes: list[Fix] = []
    before_end, after_start = cand.start, cand.end
    if cand.fence is not None:
        fixes.append(Fix("extract", "code_fence", f"markdown code fence removed ({cand.fence.lang or 'no language'})", cand.fence.open))
        before_end, after_start = cand.fence.open, cand.fence.close
    before = text[:before_end]
    if before.startswith("\ufeff"):
        fixes.append(Fix("extract", "bom", "byte-order mark removed", 0))
        before = before[1:]
    if before.strip():
        fixes.append(Fix("extract", "prose", f"ignored {len(before.strip())} chars before the value: {before.strip()[:40]!r}", 0))
    after = text[after_start:].strip()
    if after:
        fixes.append(Fix("extract", "prose", f"ignored {len(after)} chars after the value: {after[:40]!r}", after_start))
    return fixes


_UNSET: Any = object()


def _slow(text: str, validator: Validator | None, opts: RepairOptions, whole: Any = _UNSET) -> ParseResult:
    """``whole`` is the strict decode of the text when it succeeded (a JSON string holding JSON)."""
    report = Report(input_chars=len(text))
    if whole is not _UNSET:
        return _unwrap(text, whole, validator, opts, report)

    fences = find_fences(text)
    cands = find_candidates(text, limit=opts.max_candidates, fences=fences)
    whole_only = False
    if not cands and text.strip():
        # No bracket anywhere: maybe a bare scalar (True, 'yes', +1). Mechanical
        # repair only, so plain prose is never read as a string.
        stripped = text.strip()
        lead = len(text) - len(text.lstrip())
        cands = [Candidate(lead, lead + len(stripped), "whole", True)]
        whole_only = True
    records: list[CandidateRecord] = []
    first_invalid: tuple[int, Any, list[Issue], _Outcome] | None = None
    guess_needed: list[str] = []

    def consider(idx: int, cand: Candidate, allow_guesses: bool) -> ParseResult | None:
        nonlocal first_invalid
        rec = records[idx]
        out = _try_candidate(text, cand, opts, allow_guesses)
        if isinstance(out, str):
            rec.outcome = out
            if out.startswith("needs a guess"):
                guess_needed.append(out)
            return None
        if out.truncated and not opts.allow_truncated:
            rec.outcome = "truncated (allow_truncated=False)"
            return None
        if validator is None:
            return _accept(text, cand, idx, out, out.data, report, records, validated=False)
        value, issues = validator.validate(out.data)
        if issues and opts.coerce:
            new, cfixes = validator.coerce(out.data, opts.coerce)
            if cfixes:
                value, remaining = validator.validate(new)
                if not remaining:
                    report.issues = issues
                    out.fixes = out.fixes + cfixes
                    out.data = new
                    report.stages["coerce"] = ", ".join(f.kind for f in cfixes)
                    return _accept(text, cand, idx, out, value, report, records, coerced=len(cfixes))
                issues = remaining
        if issues:
            rec.outcome = f"parsed but invalid: {issues[0]}"
            if first_invalid is None:
                first_invalid = (idx, out.data, issues, out)
            return None
        return _accept(text, cand, idx, out, value, report, records)

    for c in cands:
        records.append(CandidateRecord(len(records), c.start, c.end, c.source))
    # Pass 1: what mechanical repair alone can do, in document order.
    for idx, c in enumerate(cands):
        res = consider(idx, c, allow_guesses=False)
        if res is not None:
            return res
    # Pass 2: judgement calls, only for candidates that needed one.
    if opts.guesses == "report" and not whole_only:
        for idx, c in enumerate(cands):
            if records[idx].outcome.startswith("needs a guess"):
                res = consider(idx, c, allow_guesses=True)
                if res is not None:
                    return res
    # Pass 3: values nested inside a span that never closed and failed as a whole.
    # Only when repair failed outright: a span that parsed (truncated, invalid) or
    # needed a rejected guess is the value, and its insides are not alternatives.
    for c in [c for i, c in enumerate(cands) if not c.closed and records[i].outcome.startswith(("unrepairable", "strict parse failed"))]:
        for inner in find_candidates(text, start=c.start + 1, bound=c.end, limit=opts.max_candidates, fences=fences, nested=True):
            records.append(CandidateRecord(len(records), inner.start, inner.end, "nested"))
            for allow in (False, True) if opts.guesses == "report" else (False,):
                res = consider(len(records) - 1, inner, allow_guesses=allow)
                if res is not None:
                    return res
    report.candidates = records
    if first_invalid is not None:
        idx, data, issues, out = first_invalid
        report.chosen = idx
        report.fixes = _extract_fixes(text, cands[idx]) + out.fixes if idx < len(cands) else list(out.fixes)
        report.truncated = out.truncated
        report.stages.update(_stage_notes(records, idx, out))
        assert validator is not None
        return _finish_invalid(data, issues, validator, opts, report)
    if opts.fallback == "json_repair":
        res = _library_fallback(text, validator, opts, report)
        if res is not None:
            return res
    if not cands or whole_only:
        report.stages["extract"] = "no candidate"
        raise ExtractionError(
            f"no JSON object or array found in the text ({len(text)} chars): {text[:60]!r}",
            report,
        )
    if guess_needed and opts.guesses == "reject":
        report.stages["repair"] = "guess needed (guesses='reject')"
        raise GuessRejected(f"repair needs a judgement call and guesses='reject': {guess_needed[0][15:]}", report)
    if any(r.outcome.startswith("truncated (allow_truncated") for r in records):
        raise TruncatedError("the value is truncated (output cut off) and allow_truncated=False", report)
    first = records[0].outcome
    report.stages["repair"] = "failed"
    offset = None
    if "at offset " in first:
        try:
            offset = int(first.split("at offset ")[1].split()[0])
        except ValueError:
            offset = None
    raise UnrepairableError(f"could not repair the JSON value: {first}", report, offset)


def _stage_notes(records: list[CandidateRecord], idx: int, out: _Outcome) -> dict[str, str]:
    r = records[idx]
    repair_fixes = [f for f in out.fixes if f.stage == "repair"]
    g = sum(f.guess for f in repair_fixes)
    repair = "none needed"
    if repair_fixes:
        repair = f"{len(repair_fixes)} fix{'es' if len(repair_fixes) > 1 else ''}" + (f" ({g} guess{'es' if g > 1 else ''})" if g else "")
    return {
        "extract": f"candidate {idx + 1} of {len(records)} ({r.source}) [{r.start}:{r.end}]",
        "repair": repair,
        "parse": "ok (strict)",
    }


def _accept(
    text: str,
    cand: Candidate,
    idx: int,
    out: _Outcome,
    value: Any,
    report: Report,
    records: list[CandidateRecord],
    coerced: int = 0,
    validated: bool = True,
) -> ParseResult:
    records[idx].outcome = "chosen"
    if out.end is not None:  # the value ended elsewhere than the scanned span said
        cand = replace(cand, end=out.end)
        records[idx].end = out.end
    report.candidates = records
    report.chosen = idx
    report.fixes = _extract_fixes(text, cand) + out.fixes
    report.truncated = out.truncated
    report.stages.update(_stage_notes(records, idx, out))
    if coerced:
        report.stages["validate"] = f"ok after {coerced} coercion{'s' if coerced > 1 else ''}"
    else:
        report.stages["validate"] = "ok" if validated else "skipped (no schema)"
    return ParseResult(value, out.data, report)


def _unwrap(text: str, whole: Any, validator: Validator | None, opts: RepairOptions, report: Report) -> ParseResult:
    """The text is a JSON string holding JSON: decode it (a guess) unless the schema wants the string."""
    report.stages.update({"extract": "whole text", "repair": "none needed", "parse": "ok"})
    if validator is not None:
        value, issues = validator.validate(whole)
        if not issues:
            report.stages["validate"] = "ok"
            return ParseResult(value, whole, report)
    if opts.guesses == "reject":  # decoding would be a judgement call: keep the literal string
        if validator is None:
            report.stages["unwrap"] = "not decoded (guesses='reject')"
            return ParseResult(whole, whole, report)
        _, issues = validator.validate(whole)
        return _finish_invalid(whole, issues, validator, opts, report)
    try:
        inner = parse(whole, options=opts)
    except RepairError:
        if validator is None:
            return ParseResult(whole, whole, report)
        _, issues = validator.validate(whole)
        return _finish_invalid(whole, issues, validator, opts, report)
    report.fixes.append(Fix("unwrap", "double_encoded", "the reply is a JSON string containing JSON; decoded it", 0, None, True))
    report.fixes.extend(replace(f, offset=None) for f in inner.report.fixes)
    report.truncated = inner.report.truncated
    report.stages["unwrap"] = "decoded a double-encoded value"
    if validator is None:
        return ParseResult(inner.data, inner.data, report)
    value, issues = validator.validate(inner.data)
    if issues:
        return _finish_invalid(inner.data, issues, validator, opts, report)
    report.stages["validate"] = "ok"
    return ParseResult(value, inner.data, report)


def _library_fallback(text: str, validator: Validator | None, opts: RepairOptions, report: Report) -> ParseResult | None:
    """Last resort: the json-repair library. Its output is always a guess."""
    try:
        import json_repair
    except ImportError:
        report.stages["fallback"] = "json_repair not installed"
        return None
    try:
        data, log = json_repair.repair_json(text, return_objects=True, logging=True)
    except Exception as e:  # a third-party failure must not escape as a crash
        report.stages["fallback"] = f"json_repair failed: {e}"
        return None
    if data == "" and text.strip() not in ('""', "''"):
        report.stages["fallback"] = "json_repair found nothing"
        return None
    fixes = [Fix("fallback", "library_fallback", "value produced by json_repair; its log follows", None, None, True)]
    fixes += [Fix("fallback", "library_fallback", f"json_repair: {entry.get('text')} (near {entry.get('context')!r})", None, None, True) for entry in log]
    if validator is not None:
        value, issues = validator.validate(data)
        if issues:
            report.stages["fallback"] = f"json_repair result invalid: {issues[0]}"
            return None
    else:
        value = data
    report.fixes = fixes
    report.stages["fallback"] = "json_repair"
    report.stages.setdefault("validate", "ok" if validator is not None else "skipped (no schema)")
    return ParseResult(value, data, report)
