"""Stage 1 — find the JSON value(s) inside a model reply.

Replies wrap the payload in prose, markdown fences, ``<json>`` tags or a stray
``json`` word. We scan for ``{``/``[`` and follow each to its balanced closer while
tracking strings, so braces inside string values (``"if (x) { ... }"``) and braces in
the surrounding prose (``Note: the {age} field``) never shift the boundaries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Candidate", "Fence", "find_candidates", "find_fences"]

# A fence opener is 3+ backticks (or tildes) optionally followed by a language tag.
_FENCE_RE = re.compile(r"(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+.#-]*)[^\n`]*?(?:\n|$)|(`{3,}|~{3,})")
_OPEN_RE = re.compile(r"[\[{]")
# Characters that matter while scanning for the end of a value.
_SCAN_RE = re.compile(r"[\[\]{}\"'\u201c\u201d\u2018/]")
_DQ_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_WS_RE = re.compile(r"[ \t\r\n]*")
# After a closing quote: what may legitimately follow a string token.
_AFTER_STRING = frozenset(",:}]")
_NEXT_TOKEN = frozenset("\"'\u201c\u2018/#{[-0123456789")


@dataclass(frozen=True, slots=True)
class Fence:
    """A markdown code block: ``open``..``close`` is the whole block, ``start``..``end`` its content."""

    open: int
    start: int
    end: int
    close: int
    lang: str
    closed: bool


@dataclass(frozen=True, slots=True)
class Candidate:
    """A span of the text that may hold a JSON value.

    ``closed`` is False when the brackets never balance (truncated output); such a
    candidate runs to the end of its fence or of the text.
    """

    start: int
    end: int
    source: str  # "fence" | "balanced" | "unclosed"
    closed: bool
    fence: Fence | None = None
    nested: bool = False
    region_end: int | None = None  # end of the enclosing fence or text: how far the value may reach


def find_fences(text: str) -> list[Fence]:
    """Markdown code blocks, paired in order; an unclosed last fence runs to the end."""
    if "```" not in text and "~~~" not in text:
        return []
    fences: list[Fence] = []
    pos = 0
    n = len(text)
    while True:
        m = _FENCE_RE.search(text, pos)
        if m is None:
            break
        marker = m.group(1) or m.group(3)
        lang = m.group(2) or ""
        start = m.end()
        # The closer is the next run of the same fence character at least as long.
        close_re = re.compile(re.escape(marker[0]) + "{" + str(len(marker)) + ",}")
        c = close_re.search(text, start)
        if c is None:
            fences.append(Fence(m.start(), start, n, n, lang, False))
            break
        fences.append(Fence(m.start(), start, c.start(), c.end(), lang, True))
        pos = c.end()
    return fences


def _quote_closes(text: str, j: int, bound: int) -> bool:
    """Is the quote at ``j`` the end of a string token? (what follows must fit JSON)

    Besides ``, : } ]``, the start of another token counts (a missing comma) when
    whitespace separates it: ``'a' 'b'``, ``'a' 1``; a letter right after the quote
    never does (``'rock 'n' roll'``).
    """
    k = _WS_RE.match(text, j + 1, bound).end()
    if k >= bound or text[k] in _AFTER_STRING:
        return True
    return k > j + 1 and text[k] in _NEXT_TOKEN


def _skip_loose_string(text: str, i: int, bound: int, closers: str) -> int | None:
    """End of a single/smart-quoted string opened at ``i`` (index after the closer)."""
    j = i + 1
    while j < bound:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c in closers and _quote_closes(text, j, bound):
            return j + 1
        j += 1
    return None


def scan_value_end(text: str, start: int, bound: int | None = None) -> int | None:
    """Index just past the bracket that balances the one at ``start``; None if it never does.

    String-aware: double-quoted strings are skipped whole; single and typographic
    quotes open a string only outside a word and close it only where a token can
    end, so an apostrophe in ``'It's'`` keeps the scan aligned.
    """
    if bound is None:
        bound = len(text)
    depth = 0
    i = start
    while i < bound:
        m = _SCAN_RE.search(text, i, bound)
        if m is None:
            return None
        i = m.start()
        c = text[i]
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == '"':
            sm = _DQ_STRING_RE.match(text, i, bound)
            if sm is None:
                return None  # string runs past the bound: truncated
            i = sm.end()
            continue
        elif c == "\u201c":
            end = _skip_loose_string(text, i, bound, "\u201d\u201c")
            if end is None:
                return None
            i = end
            continue
        elif c in "'\u2018":
            # Opens a string unless it sits inside a word (an apostrophe: It's).
            if i == start or not text[i - 1].isalnum():
                end = _skip_loose_string(text, i, bound, "'\u2019" if c == "'" else "\u2019'")
                if end is None:
                    return None
                i = end
                continue
        elif c == "/" and i + 1 < bound:
            nxt = text[i + 1]
            if nxt == "/":
                nl = text.find("\n", i, bound)
                i = bound if nl < 0 else nl
                continue
            if nxt == "*":
                e = text.find("*/", i + 2, bound)
                if e < 0:
                    return None
                i = e + 2
                continue
        # "\u201d" outside a string: a stray closer, ignored.
        i += 1
    return None


def _fence_at(fences: list[Fence], i: int) -> Fence | None:
    for f in fences:
        if f.start <= i < f.end:
            return f
    return None


def find_candidates(
    text: str,
    *,
    start: int = 0,
    bound: int | None = None,
    limit: int = 32,
    fences: list[Fence] | None = None,
    nested: bool = False,
) -> list[Candidate]:
    """Non-overlapping spans that may hold a JSON value, in document order.

    Each ``{``/``[`` outside an earlier span starts a candidate; a span that never
    balances (truncation) runs to the end of its fence or text and ends the scan
    of that region. Fences whose content has no bracket (``42``, ``"yes"``) become
    candidates as they are. Values nested inside an unclosed span are found by
    calling again with ``start``/``bound``/``nested=True``.
    """
    if bound is None:
        bound = len(text)
    if fences is None:
        fences = find_fences(text)
    out: list[Candidate] = []
    pos = start
    while pos < bound and len(out) < limit:
        m = _OPEN_RE.search(text, pos, bound)
        if m is None:
            break
        s = m.start()
        fence = _fence_at(fences, s)
        region_end = min(fence.end, bound) if fence else bound
        end = scan_value_end(text, s, region_end)
        if end is None and fence is not None and region_end < bound:
            # A fence marker inside a string value ends the fence too early: look past it.
            end = scan_value_end(text, s, bound)
            if end is not None:
                out.append(Candidate(s, end, "balanced", True, None, nested, bound))
                pos = end
                continue
        if end is not None:
            out.append(Candidate(s, end, "fence" if fence else "balanced", True, fence, nested, region_end))
            pos = end
        else:
            out.append(Candidate(s, region_end, "unclosed", False, fence, nested, region_end))
            pos = fence.close if fence else bound
    if not nested:
        # Scalars in a fence of their own ("```json\n42\n```").
        for f in fences:
            if f.start >= start and f.end <= bound and not _OPEN_RE.search(text, f.start, f.end):
                body = text[f.start : f.end]
                stripped = body.strip()
                if stripped:
                    lead = len(body) - len(body.lstrip())
                    s = f.start + lead
                    out.append(Candidate(s, s + len(stripped), "fence", f.closed, f, False, f.end))
        out.sort(key=lambda c: c.start)
    return out[:limit]
