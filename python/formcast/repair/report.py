"""The record every pipeline stage writes: what was touched, where, and whether it was a guess.

A :class:`Report` travels with every result and every error, so callers can log
exactly what was done to a model's reply before they trusted it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Stage = Literal["extract", "repair", "parse", "unwrap", "validate", "coerce", "decode", "fallback"]

#: Every kind of intervention the pipeline may log, with a one-line meaning.
FIX_KINDS: dict[str, str] = {
    # extract
    "bom": "byte-order mark removed",
    "prose": "text around the value (preamble/postamble) ignored",
    "code_fence": "markdown code fence removed",
    "candidate": "several values in the text (or one inside a broken one); one was chosen",
    "trailing_text": "text after the value that looks like part of it dropped",
    # repair (syntax only)
    "trailing_comma": "comma before a closing bracket removed",
    "extra_comma": "leading or doubled comma removed",
    "missing_comma": "comma inserted between two values",
    "missing_colon": "colon inserted between key and value",
    "comment": "comment removed",
    "smart_quotes": "typographic quotes used as string delimiters replaced",
    "single_quotes": "single-quoted string re-quoted",
    "python_literal": "True/False/None replaced by true/false/null",
    "literal_case": "literal in the wrong case normalized (TRUE -> true)",
    "js_literal": "undefined replaced by null",
    "unquoted_key": "bare object key quoted",
    "numeric_key": "numeric object key quoted",
    "bare_string": "bare word read as a string",
    "control_char": "raw control character inside a string escaped",
    "unescaped_quote": "quote inside a string escaped",
    "missing_quote": "a string's lost quote restored: closed before ', \"key\":' that follows it",
    "ambiguous_key": "a key holding ': <value>' kept whole",
    "invalid_escape": "invalid escape kept as a literal backslash",
    "python_escape": "Python escape (\\' \\xNN \\UNNNNNNNN) converted",
    "nonfinite_number": "NaN/Infinity handled per the `nonfinite` option",
    "json5_number": "JSON5 number literal normalized (+1, .5, 2.)",
    "hex_number": "hexadecimal number converted",
    "leading_zeros": "number with leading zeros read as decimal",
    "mismatched_bracket": "closing bracket of the wrong kind fixed",
    "extra_closer": "unmatched closing bracket removed",
    "continuation": "text after a closed value continued it: the early closer dropped, the rest merged",
    "duplicate_key": "a key repeated in one object: the last value kept",
    "truncated": "input ended early: open strings/containers closed",
    # after parse
    "double_encoded": "JSON string containing JSON decoded",
    # validate / coerce / decode
    "enum": "value mapped to the nearest enum member (explicit option)",
    "types": "scalar converted to the schema's type (explicit option)",
    "tag_text": "tag content decoded per the schema",
    "tag_root": "single wrapping tag unwrapped",
    "library_fallback": "value produced by the fallback repair library",
}

#: The contract, kind by kind: ``"mechanical"`` (only one reading: never a guess),
#: ``"judgement"`` (another reading was plausible: always a guess, refused under
#: ``guesses="reject"``) or, for kinds that are sometimes one and sometimes the
#: other, the condition under which they are a guess.
FIX_CLASSES: dict[str, str] = {
    "bom": "mechanical",
    "prose": "mechanical",
    "code_fence": "mechanical",
    "trailing_comma": "mechanical",
    "smart_quotes": "mechanical",
    "single_quotes": "mechanical",
    "python_literal": "mechanical",
    "literal_case": "mechanical",
    "js_literal": "mechanical",
    "unquoted_key": "mechanical",
    "numeric_key": "mechanical",
    "control_char": "mechanical",
    "invalid_escape": "mechanical",
    "python_escape": "mechanical",
    "nonfinite_number": "mechanical",
    "json5_number": "mechanical",
    "tag_root": "mechanical",
    "bare_string": "judgement",
    "hex_number": "judgement",
    "leading_zeros": "judgement",
    "missing_quote": "judgement",
    "ambiguous_key": "judgement",
    "continuation": "judgement",
    "trailing_text": "judgement",
    "double_encoded": "judgement",
    "enum": "judgement",
    "types": "judgement",
    "library_fallback": "judgement",
    "comment": "a guess when the comment holds a double quote (it may be a string that lost its opening quote)",
    "extra_comma": "a guess right after '[' or '{' (that bracket may have lost its closer); a doubled comma is mechanical",
    "missing_comma": "a guess when the two values touch ('\"a\"\"b\"', ']\"'); with a space or newline between them, mechanical",
    "missing_colon": "a guess when key and value touch; with a space between them, mechanical",
    "unescaped_quote": "mechanical when the quote cannot end the string (a letter follows it); a guess when it could: "
    "before ',' or ':', a doubled quote, a quote re-read as content because ending the string there left the rest unreadable, "
    "or a string that holds '}, ' or ', [' before it",
    "mismatched_bracket": "mechanical when the missing closer has one place to go; a guess when it could go earlier "
    "(the parent is of the same kind, an inner container could have closed earlier, or one closer closes several)",
    "extra_closer": "mechanical when it is the only stray closer; a guess when an earlier closer of its kind, "
    "with more after it, could be the extra one",
    "duplicate_key": "mechanical when the repeated values are equal; a guess when they differ",
    "truncated": "mechanical when the cut falls between values (open containers closed; report.truncated is set, "
    "refused by allow_truncated=False); a guess when it falls inside a string, key, number or literal",
    "candidate": "mechanical when a schema accepts exactly one of several values; a guess when several values parse "
    "(and validate), when a value meant as JSON was passed over, or when a value was taken from inside a broken one",
    "tag_text": "mechanical when the schema says how to read the text; a guess for tags nested past the depth limit",
}


@dataclass(frozen=True, slots=True)
class Fix:
    """One thing a stage changed or decided.

    ``offset`` is a character index into the original text (``None`` when the fix is
    not tied to a position, e.g. a coercion, which is located by ``pointer``).
    ``guess`` marks choices that could have gone another way; those are the ones
    to look at (or reject with ``guesses="reject"``).
    """

    stage: Stage
    kind: str
    message: str
    offset: int | None = None
    pointer: str | None = None
    guess: bool = False

    def __str__(self) -> str:
        where = f" @{self.offset}" if self.offset is not None else ""
        at = f" at {self.pointer or '(root)'}" if self.pointer is not None else ""
        mark = " [guess]" if self.guess else ""
        return f"{self.stage}:{self.kind}{where}{at}: {self.message}{mark}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "kind": self.kind,
            "message": self.message,
            "offset": self.offset,
            "pointer": self.pointer,
            "guess": self.guess,
        }


@dataclass(frozen=True, slots=True)
class Issue:
    """A validation problem, located by a JSON pointer into the value (RFC 6901)."""

    pointer: str
    message: str
    keyword: str | None = None
    hint: str | None = None

    def __str__(self) -> str:
        return f"{self.pointer or '(root)'}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"pointer": self.pointer, "message": self.message, "keyword": self.keyword, "hint": self.hint}


@dataclass(slots=True)
class CandidateRecord:
    """One span of the input that looked like a JSON value, and what became of it."""

    index: int
    start: int
    end: int
    source: str  # "whole" | "fence" | "balanced" | "unclosed" | "tags"
    outcome: str = "not tried"

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "start": self.start, "end": self.end, "source": self.source, "outcome": self.outcome}


@dataclass(slots=True)
class Report:
    """What every stage touched; attached to results and to errors."""

    input_chars: int = 0
    fast_path: bool = False
    candidates: list[CandidateRecord] = field(default_factory=list)
    chosen: int | None = None
    fixes: list[Fix] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    truncated: bool = False
    stages: dict[str, str] = field(default_factory=dict)

    @property
    def guesses(self) -> list[Fix]:
        """Fixes that were a judgement call rather than a mechanical repair."""
        return [f for f in self.fixes if f.guess]

    @property
    def guessed(self) -> bool:
        return any(f.guess for f in self.fixes)

    @property
    def repaired(self) -> bool:
        """True when the text needed anything beyond a strict parse."""
        return bool(self.fixes)

    @property
    def clean(self) -> bool:
        """True when the input was valid as-is (nothing touched, nothing reported)."""
        return not self.fixes and not self.issues and not self.truncated

    def stage(self, name: str) -> list[Fix]:
        return [f for f in self.fixes if f.stage == name]

    def kinds(self) -> list[str]:
        """Distinct fix kinds in the order they first occurred."""
        seen: dict[str, None] = {}
        for f in self.fixes:
            seen.setdefault(f.kind, None)
        return list(seen)

    def summary(self) -> str:
        """One log line: e.g. ``repaired: code_fence, trailing_comma x2; truncated (1 guess)``."""
        if self.clean:
            return "clean" + (" (fast path)" if self.fast_path else "")
        counts: dict[str, int] = {}
        for f in self.fixes:
            if f.kind != "truncated":  # summarized by the suffix below
                counts[f.kind] = counts.get(f.kind, 0) + 1
        parts = [k if n == 1 else f"{k} x{n}" for k, n in counts.items()]
        pieces = []
        if parts:
            pieces.append("repaired: " + ", ".join(parts))
        if self.truncated:
            pieces.append("truncated")
        text = "; ".join(pieces) or "parsed"
        g = len(self.guesses)
        if g:
            text += f" ({g} guess{'es' if g > 1 else ''})"
        if self.issues:
            text += f"; {len(self.issues)} validation issue{'s' if len(self.issues) > 1 else ''}"
        return text

    def lines(self) -> list[str]:
        """Multi-line human-readable form, one entry per stage, candidate, fix and issue."""
        out = [self.summary()]
        out += [f"  stage {k}: {v}" for k, v in self.stages.items()]
        out += [
            f"  candidate {c.index} [{c.start}:{c.end}] {c.source}: {c.outcome}" + (" <- chosen" if c.index == self.chosen else "") for c in self.candidates
        ]
        out += [f"  {f}" for f in self.fixes]
        out += [f"  issue {i}" for i in self.issues]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable form for structured logs."""
        return {
            "summary": self.summary(),
            "input_chars": self.input_chars,
            "fast_path": self.fast_path,
            "truncated": self.truncated,
            "guessed": self.guessed,
            "chosen": self.chosen,
            "stages": dict(self.stages),
            "candidates": [c.to_dict() for c in self.candidates],
            "fixes": [f.to_dict() for f in self.fixes],
            "issues": [i.to_dict() for i in self.issues],
        }
