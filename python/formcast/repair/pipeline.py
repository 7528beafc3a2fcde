"""The defensive parsing pipeline: extract -> repair -> parse -> validate.

Valid JSON takes a fast path (one strict ``json`` decode and, with a schema, one
validation); only a failed strict parse pays for extraction and repair.
"""

from __future__ import annotations

import json
import re
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
from .fix import _TAIL_QUOTES, RepairFailed, quote_tail, repair_json
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
    JSON value. ``report`` is built lazily on the fast path: valid JSON is decoded
    once, at ``json.loads`` speed, and the check for duplicate keys (which
    ``json.loads`` collapses silently, keeping the last) runs when the report, or
    ``guessed``/``repaired``, is first read.
    """

    __slots__ = ("value", "data", "_report", "_text", "_lax")

    def __init__(self, value: Any, data: Any, report: Report | None, text: str = "", lax: bool = False) -> None:
        self.value = value
        self.data = data
        self._report = report
        self._text = text  # only for the lazy fast-path report (a reference, not a copy)
        self._lax = lax

    @property
    def report(self) -> Report:
        if self._report is None:
            self._report = _fast_report(self._text, self._lax)
        return self._report

    @property
    def repaired(self) -> bool:
        """True when anything beyond a strict parse was done or decided."""
        return self.report.repaired

    @property
    def guessed(self) -> bool:
        """True when the value rests on a judgement call (see ``report.guesses``)."""
        return self.report.guessed

    @property
    def truncated(self) -> bool:
        return self._report is not None and self._report.truncated

    def __repr__(self) -> str:
        return f"ParseResult(value={self.value!r}, report={self.report.summary()!r})"


def _fast_report(text: str, lax: bool) -> Report:
    """The report of a strict parse: clean, unless keys were duplicated."""
    report = Report(input_chars=len(text), fast_path=True, stages={"extract": "whole text", "repair": "none needed", "parse": "ok"})
    if ":" in text:  # else no key at all
        _, dups = decode_checked(text, "float" if lax else "null", None)
        if dups:
            report.fixes = dups
            report.stages["parse"] = f"ok; {len(dups)} duplicate key{'s' if len(dups) > 1 else ''} (the last value kept)"
    return report


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
        if opts.guesses == "reject":
            report = _fast_report(text, opts.nonfinite == "float")
            if report.guessed:
                report.stages["repair"] = "guess needed (guesses='reject')"
                raise GuessRejected(f"repair needs a judgement call and guesses='reject': {report.guesses[0].message}", report, report.guesses)
    lax = opts.nonfinite == "float"
    # Valid JSON: at most a validation left to do.
    if type(data) is str and opts.unwrap_double_encoded and _looks_like_container(data):
        return _slow(text, None if schema is None else _validator(schema), opts, data)
    if schema is None:
        return ParseResult(data, data, None, text, lax)
    validator = _validator(schema)
    value, issues = validator.validate(data)
    if not issues:
        return ParseResult(value, data, None, text, lax)
    return _finish_invalid(data, issues, validator, opts, _fast_report(text, lax))


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
    __slots__ = ("data", "fixes", "truncated", "end", "guessed", "value", "issues")

    def __init__(self, data: Any, fixes: list[Fix], truncated: bool, end: int) -> None:
        self.data = data
        self.fixes = fixes
        self.truncated = truncated
        self.end = end  # where the value (and what was read with it) ends in the text
        self.guessed = False  # needed a judgement call (pass 2)
        self.value: Any = data  # typed value once validated
        self.issues: list[Issue] = []


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


def _pointer_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def decode_checked(text: str, nonfinite: str = "null", offset: int | None = None) -> tuple[Any, list[Fix]]:
    """Strictly decode JSON ``text`` and report duplicate keys (the last value is
    kept, as ``json.loads`` keeps it), located by JSON pointer: a guess when the
    values differ."""
    dups: list[tuple[dict, list[tuple[str, int, bool]]]] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict:
        d = dict(pairs)
        if len(d) != len(pairs):
            counts: dict[str, int] = {}
            differ: set[str] = set()
            for k, v in pairs:
                counts[k] = counts.get(k, 0) + 1
                if v != d[k] or type(v) is not type(d[k]):
                    differ.add(k)
            dups.append((d, [(k, n, k in differ) for k, n in counts.items() if n > 1]))
        return d

    dec = json.JSONDecoder(object_pairs_hook=pairs_hook, **({} if nonfinite == "float" else {"parse_constant": _reject_constant}))
    data = dec.decode(text)
    if not dups:
        return data, []
    targets = {id(d): names for d, names in dups}
    fixes: list[Fix] = []
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:  # iterative: the value may be deep
        v, ptr = stack.pop()
        if isinstance(v, dict):
            for name, n, differ in targets.get(id(v), ()):
                if differ:
                    fixes.append(Fix("parse", "duplicate_key", f"key {name!r} appears {n} times in one object with different values; the last is kept", offset, f"{ptr}/{_pointer_token(name)}", True))
                else:
                    fixes.append(Fix("parse", "duplicate_key", f"key {name!r} appears {n} times in one object, with the same value", offset, f"{ptr}/{_pointer_token(name)}"))
            stack.extend((x, f"{ptr}/{_pointer_token(k)}") for k, x in v.items() if isinstance(x, (dict, list)))
        else:
            stack.extend((x, f"{ptr}/{i}") for i, x in enumerate(v) if isinstance(x, (dict, list)))
    fixes.sort(key=lambda f: f.pointer or "")
    return data, fixes


def _skip_ws(text: str, k: int, bound: int) -> int:
    while k < bound and text[k] in " \t\r\n":
        k += 1
    return k


# Text after a value with a quote before JSON punctuation, or ending its line in a closer.
_WORD_RE = re.compile(r"[^\W\d_]{2,}")
_LITERAL_WORDS = ("null", "true", "false", "none", "nan", "infinity")
# Text after a value that starts with another value: a literal or a number.
_VALUE_AHEAD_RE = re.compile(r"(?:null|true|false|None|True|False|NaN|-?\.?\d)(?![A-Za-z])")
_STRUCTURED_TAIL_RE = re.compile("[\"'\u201d\u2019][ \t]*[,:\\]}]|[\\]}][ \t]*$")
_IDENT_COLON_RE = re.compile(r"[A-Za-z_$][\w$-]*[ \t]*[:=]")
_MAX_MERGES = 8


def _read_candidate(text: str, cand: Candidate, opts: RepairOptions) -> _Outcome | str:
    """The value at ``cand`` (strict parse, else repair), without what follows it."""
    sub = text[cand.start : cand.end]
    region_end = cand.region_end if cand.region_end is not None else cand.end
    if cand.closed and sub != text.strip():  # (the whole text already failed strictly)
        try:
            data, dups = decode_checked(sub, opts.nonfinite, cand.start)
        except (ValueError, RecursionError):
            pass
        else:
            if not quote_tail(text, cand.end, region_end):
                return _Outcome(data, dups, False, cand.end)
    whole = cand.source == "whole"
    try:
        rep = repair_json(text[cand.start : region_end], nonfinite=opts.nonfinite, offset=cand.start, stop_at_end=not whole)
    except RepairFailed as e:
        return f"unrepairable: {e}"
    try:
        data = _LAX.decode(rep.text) if rep.nonfinite_kept else _STRICT.decode(rep.text)
    except (ValueError, RecursionError) as e:  # the repairer wrote invalid JSON: report it, never eval
        return f"strict parse failed after repair: {e}"
    return _Outcome(data, rep.fixes, rep.truncated, cand.start + rep.end)


_STRUCT_RUN_RE = re.compile(r"[}\]][ \t\r\n]*,|,[ \t\r\n]*[\[{]")


def _holds_structure(data: Any) -> bool:
    """Does a string in ``data`` hold '}, ' or ', [' (structure a lost quote swallowed)?"""
    stack = [data]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if _STRUCT_RUN_RE.search(v):
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def _prose_or_part(text: str, out: _Outcome, k: int, region_end: int, rest: str) -> _Outcome:
    """Text after the value that does not continue it: prose, unless it looks like a
    piece of JSON (it has no word but literals, touches the value, closes more
    brackets than it opens, starts with a closer or a colon, opens another value on the same line, starts with a literal
    or a number, or its first line has a quote before JSON punctuation: '1"]',
    'x": 2'): then it is dropped as a guess."""
    eol = text.find("\n", k, region_end)
    eol = region_end if eol < 0 else eol
    opener = min((p for p in (text.find("{", k, eol), text.find("[", k, eol)) if p >= 0), default=eol)
    eol = opener  # (from an opener on, it is another value: candidates weigh that)
    touching = k == out.end and text[k].isalnum()  # '[]nul': no space between them
    wordless = any(ch.isalnum() or ch in _TAIL_QUOTES for ch in rest) and not any(
        not any(lit.startswith(w.group().lower()) for lit in _LITERAL_WORDS) for w in _WORD_RE.finditer(rest)
    )
    same_line = "\n" not in text[out.end : k]
    # More closers than openers: it closes containers the value opened ('{...}\n]\n}'
    # after a stray closer ended the value early).
    closes_more = rest.count("}") + rest.count("]") > rest.count("{") + rest.count("[")
    if touching or wordless or closes_more or text[k] in "}]:" or (same_line and text[k] in "[{") or _VALUE_AHEAD_RE.match(text, k) or _STRUCTURED_TAIL_RE.search(text, k, eol):
        out.fixes = out.fixes + [Fix("extract", "trailing_text", f"dropped {len(rest.rstrip())} chars after the value that look like part of it: {rest[:40]!r}", k, None, True)]
    return out


def _try_candidate(text: str, cand: Candidate, opts: RepairOptions) -> _Outcome | str:
    """Read the value at ``cand``, then decide what the text after it is:
    nothing, stray closers (removed), more of the same value (merged, a guess),
    text that looks like part of it but does not fit (dropped, a guess), or prose
    (dropped; reported with its offset by :func:`_extract_fixes`)."""
    out = _read_candidate(text, cand, opts)
    if isinstance(out, str) or cand.source == "whole":
        return out
    region_end = cand.region_end if cand.region_end is not None else cand.end
    for _ in range(_MAX_MERGES):
        k = _skip_ws(text, out.end, region_end)
        if k >= region_end:
            return out
        rest = text[k:region_end]
        if not rest.strip(" \t\r\n}]"):
            # Which closer is the extra one? Another of the same kind with a sibling
            # after it ('[[1], 2]]') could be it as well: then it is a guess.
            other = [c for c in "}]" if c in rest and re.compile(re.escape(c) + r"\s*[^\s\]}]").search(text, cand.start, out.end)]
            if any(f.kind == "mismatched_bracket" for f in out.fixes):
                out.fixes = out.fixes + [Fix("repair", "extra_closer", f"{len(rest.strip())} unmatched closing bracket(s) after the value removed, after a missing one was inserted (one misplaced closer would explain both)", k, None, True)]
            elif other:
                out.fixes = out.fixes + [Fix("repair", "extra_closer", f"{len(rest.strip())} unmatched closing bracket(s) after the value removed (an earlier {other[0]!r} could be the extra one)", k, None, True)]
            elif _holds_structure(out.data):
                out.fixes = out.fixes + [Fix("repair", "extra_closer", f"{len(rest.strip())} unmatched closing bracket(s) after the value removed (a string in it holds ', [' or '}}, ': its closing quote may be missing)", k, None, True)]
            else:
                out.fixes = out.fixes + [Fix("repair", "extra_closer", f"{len(rest.strip())} unmatched closing bracket(s) after the value removed", k)]
            out.end = region_end
            return out
        c = text[k]
        ident = c not in ",:" and c not in _TAIL_QUOTES and _IDENT_COLON_RE.match(text, k) is not None
        if c != "," and c not in _TAIL_QUOTES and not ident:
            return _prose_or_part(text, out, k, region_end, rest)
        close = out.end - 1
        merged = None
        if text[close] in "}]":
            # Read on as if the closer at ``close`` were not there.
            try:
                merged = repair_json(text[cand.start : close] + text[close + 1 : region_end], nonfinite=opts.nonfinite, offset=cand.start, stop_at_end=True)
            except RepairFailed:
                merged = None
            if merged is not None and (merged.end + cand.start < close + 1 or (ident and (merged.truncated or any(f.guess for f in merged.fixes)))):
                merged = None  # did not read past the closer, or (after a bare word) needed guesses of its own
        if merged is None:
            if ident:
                return _prose_or_part(text, out, k, region_end, rest)  # "Note: ..." after the value
            out.fixes = out.fixes + [Fix("extract", "trailing_text", f"dropped {len(rest.rstrip())} chars after the value that look like part of it but do not fit: {rest[:40]!r}", k, None, True)]
            return out
        try:
            data = _LAX.decode(merged.text) if merged.nonfinite_kept else _STRICT.decode(merged.text)
        except (ValueError, RecursionError) as e:
            return f"strict parse failed after repair: {e}"
        shifted = [f if f.offset is None or f.offset < close else replace(f, offset=f.offset + 1) for f in merged.fixes]
        note = Fix("repair", "continuation", f"text after the value continues it: read on past the {text[close]!r} at {close} (a stray closer)", close, None, True)
        out = _Outcome(data, sorted(shifted + [note], key=lambda f: f.offset or 0), merged.truncated, cand.start + merged.end + 1)
    return out


def _extract_fixes(text: str, cand: Candidate, end: int) -> list[Fix]:
    fixes: list[Fix] = []
    before_end, after_start = cand.start, end
    if cand.fence is not None:
        fixes.append(Fix("extract", "code_fence", f"markdown code fence removed ({cand.fence.lang or 'no language'})", cand.fence.open))
        before_end, after_start = cand.fence.open, max(end, cand.fence.close)
    before = text[:before_end]
    if before.startswith("\ufeff"):
        fixes.append(Fix("extract", "bom", "byte-order mark removed", 0))
        before = before[1:]
    if before.strip():
        fixes.append(Fix("extract", "prose", f"ignored {len(before.strip())} chars before the value: {before.strip()[:40]!r}", 0))
    after = text[after_start:]
    if after.strip():
        at = after_start + len(after) - len(after.lstrip())
        fixes.append(Fix("extract", "prose", f"ignored {len(after.strip())} chars after the value: {after.strip()[:40]!r}", at))
    return fixes


def _string_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Double-quoted strings in ``text[start:end]`` as a string-aware scan reads
    them; an unterminated one runs to ``end``."""
    spans = []
    k = text.find('"', start, end)
    while k >= 0:
        m = _DQ_STRING_RE.match(text, k, end)
        if m is None:
            spans.append((k, end))
            break
        spans.append((k, m.end()))
        k = text.find('"', m.end(), end)
    return spans


_DQ_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_UNSET: Any = object()


_QUOTED_KEY_RE = re.compile("[\"'\u201c\u2018][^\"'\u201d\u2019\n]{0,80}[\"'\u201d\u2019][ \t]*:")


def _looks_like_json(text: str, cand: Candidate) -> bool:
    """Was this span meant as JSON? It opens the reply, or holds a double quote or a
    quoted key (``{this}`` in prose does not)."""
    return not text[: cand.start].strip() or '"' in text[cand.start : cand.end] or _QUOTED_KEY_RE.search(text, cand.start, cand.end) is not None


def _passed_over(text: str, cand: Candidate, rec: CandidateRecord) -> bool:
    """Was this earlier span meant as JSON, yet not read as a value (it failed, or
    read only by guessing)? A schema rejecting it is not that: the schema decided."""
    o = rec.outcome
    failed = o.startswith(("unrepairable", "strict parse failed", "needs a guess", "truncated"))
    return (failed or (o.startswith("parsed") and "invalid" not in o and o.endswith("(with a guess)"))) and _looks_like_json(text, cand)


def _is_alternative(out: _Outcome) -> bool:
    """Does this candidate count as another value in the text? Bracketed prose that
    only parses by reading bare words as strings (``[see below]``) does not."""
    return not out.guessed or not any(f.kind == "bare_string" and f.guess for f in out.fixes)


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
    records = [CandidateRecord(i, c.start, c.end, c.source) for i, c in enumerate(cands)]
    guess_needed: list[str] = []
    found: list[tuple[int, Candidate, _Outcome]] = []

    def attempt(idx: int, cand: Candidate) -> _Outcome | None:
        rec = records[idx]
        out = _try_candidate(text, cand, opts)
        if isinstance(out, str):
            rec.outcome = out
            return None
        out.guessed = any(f.guess for f in out.fixes)
        if out.guessed and whole_only:  # a bare scalar is read mechanically or not at all
            g = next(f for f in out.fixes if f.guess)
            rec.outcome = f"needs a guess: {g.message}"
            guess_needed.append(rec.outcome)
            return None
        if out.truncated and not opts.allow_truncated:
            rec.outcome = "truncated (allow_truncated=False)"
            return None
        rec.end = out.end
        if validator is not None:
            out.value, out.issues = validator.validate(out.data)
            if out.issues and opts.coerce:
                new, cfixes = validator.coerce(out.data, opts.coerce)
                if cfixes:
                    value, remaining = validator.validate(new)
                    if not remaining:
                        report.issues = out.issues
                        report.stages["coerce"] = ", ".join(f.kind for f in cfixes)
                        out.fixes = out.fixes + cfixes
                        out.data, out.value, out.issues = new, value, []
            rec.outcome = f"parsed but invalid: {out.issues[0]}" if out.issues else "parsed and valid"
        else:
            rec.outcome = "parsed"
        if out.guessed:
            rec.outcome += " (with a guess)"
        return out

    # Every candidate outside an earlier value is read: several values in one
    # reply are a choice the report must show.
    covered = -1
    for idx, c in enumerate(cands):
        if c.start < covered:
            records[idx].outcome = "inside the value before it"
            continue
        out = attempt(idx, c)
        if out is not None:
            found.append((idx, c, out))
            covered = out.end
    if not found and opts.guesses == "report" and not whole_only:
        # Values inside a span that never closed and failed as a whole. Only when
        # repair failed outright, and never inside that span's strings (a fence or
        # a bracket quoted in a value is not the value). A guess: the span was
        # something else.
        for c in [c for i, c in enumerate(cands) if not c.closed and records[i].outcome.startswith(("unrepairable", "strict parse failed"))]:
            quoted = _string_spans(text, c.start, c.end)
            for inner in find_candidates(text, start=c.start + 1, bound=c.end, limit=opts.max_candidates, fences=fences, nested=True):
                if any(a <= inner.start < b for a, b in quoted):
                    continue
                idx = len(records)
                records.append(CandidateRecord(idx, inner.start, inner.end, "nested"))
                cands.append(inner)
                out = attempt(idx, inner)
                if out is not None:
                    out.fixes = [Fix("extract", "candidate", f"the value at {c.start} could not be repaired; took a value found inside it", inner.start, None, True)] + out.fixes
                    out.guessed = True
                    found.append((idx, inner, out))
                    break
            if found:
                break
    report.candidates = records
    pool = found if validator is None else [f for f in found if not f[2].issues]
    if pool:
        alts = [f for f in pool if _is_alternative(f[2])]
        idx, cand, out = alts[0] if alts else pool[0]
        if len(alts) > 1:
            where = ", ".join(str(i + 1) for i, _, _ in alts)
            why = "match the schema" if validator is not None else "parse"
            msg = f"{len(alts)} values in the text {why} (candidates {where}); kept the first, candidate {idx + 1}"
            out.fixes = [Fix("extract", "candidate", msg, cand.start, None, True)] + out.fixes
        elif any(_passed_over(text, cands[i], records[i]) for i in range(idx)):
            bad = next(i for i in range(idx) if _passed_over(text, cands[i], records[i]))
            msg = f"the value at {cands[bad].start} (candidate {bad + 1}: {records[bad].outcome[:60]}) was passed over for a later one, candidate {idx + 1}"
            out.fixes = [Fix("extract", "candidate", msg, cand.start, None, True)] + out.fixes
        elif validator is not None and len(found) > 1:
            msg = f"{len(found)} values in the text; candidate {idx + 1} is the only one that matches the schema"
            out.fixes = [Fix("extract", "candidate", msg, cand.start)] + out.fixes
        if opts.guesses == "reject" and any(f.guess for f in out.fixes):
            report.chosen = idx
            report.fixes = _extract_fixes(text, cand, out.end) + out.fixes
            report.stages["repair"] = "guess needed (guesses='reject')"
            g = next(f for f in out.fixes if f.guess)
            raise GuessRejected(f"repair needs a judgement call and guesses='reject': {g.message}", report, [g])
        return _accept(text, cand, idx, out, report, records, validated=validator is not None)
    if found:
        assert validator is not None
        idx, cand, out = found[0]
        report.chosen = idx
        report.fixes = _extract_fixes(text, cand, out.end) + out.fixes
        report.truncated = out.truncated
        report.stages.update(_stage_notes(records, idx, out))
        return _finish_invalid(out.data, out.issues, validator, opts, report)
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
    repair_fixes = [f for f in out.fixes if f.stage in ("repair", "parse")]
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
    report: Report,
    records: list[CandidateRecord],
    validated: bool = True,
) -> ParseResult:
    records[idx].outcome = "chosen"
    records[idx].end = out.end
    report.candidates = records
    report.chosen = idx
    report.fixes = _extract_fixes(text, cand, out.end) + out.fixes
    report.truncated = out.truncated
    report.stages.update(_stage_notes(records, idx, out))
    coerced = sum(f.stage == "coerce" for f in out.fixes)
    if coerced:
        report.stages["validate"] = f"ok after {coerced} coercion{'s' if coerced > 1 else ''}"
    else:
        report.stages["validate"] = "ok" if validated else "skipped (no schema)"
    return ParseResult(out.value, out.data, report)


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
