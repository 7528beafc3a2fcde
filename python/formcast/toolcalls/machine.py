"""Reads text against a structural-tag tree, all interpretations at once.

The tree is compiled into a few node kinds (literal, free text, JSON value,
XML parameters, regex; sequence, choice, repeat; call). A *thread* is one
interpretation of the text read so far: the node consuming input, its local
state, the continuation (what to do when the node finishes) and a
persistent list of events (text of a channel, call start/end, arguments).
Each character advances every thread; threads in the same machine state are
merged (the earlier one wins). Everything all live threads agree on is
final — that is what the stream parser emits.

Cost: every character costs O(1) per live thread, and the number of live
threads is bounded by the tree (not by the text): leaf states that could
grow with the text are kept canonical — a JSON leaf's open containers are a
persistent stack, free text forgets where it began once no excluded string
can reach back there, a regex leaf is a lazily built DFA — so threads in the
same situation merge. The text itself is kept only as far back as some
thread may still look (:meth:`Machine.lookback`); the caller keeps what it
has not released yet.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from ..styles.formats import MAX_FORMAT_DEPTH, CallRole, InputRole, Path, Role, TextRole
from .. import _engine
from . import jsonscan, regexdfa, xmlargs

LIT, TEXT, JSON, XML, REGEX, DEAD, SEQ, ALT, REP, CALL = range(10)
_INF = -1
#: Longest span a regex leaf may cover when its pattern is outside what
#: :mod:`.regexdfa` models (it is then re-matched at every character).
REGEX_SPAN_LIMIT = 1024
#: Repeat bounds above this are read as this (``min``) and as unbounded
#: (``max``): each count is a distinct parser state, so a bound of 10**6
#: would let one position hold 10**6 threads. The constraint enforced the
#: exact bounds; only text it did not produce can tell the difference.
REPEAT_COUNT_LIMIT = 64
#: Formats compiled for one tag (each format once, however often it is used).
MAX_FORMATS = 200_000
#: Nesting of groups in a regex leaf (Python's regex parser recurses on it).
_REGEX_GROUP_LIMIT = 100

try:  # the `regex` package knows whether text can still grow into a match
    import regex as _partial_re  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the environment
    _partial_re = None


class ParserConfigError(ValueError):
    """The structural tag cannot be read back (malformed or unsupported)."""


class Node:
    __slots__ = (
        "kind", "text", "children", "lo", "hi", "excludes", "by_last", "maxlen", "channel", "in_call", "schema",
        "style", "pattern", "partial", "dfa", "name", "call_kind", "args", "nullable", "emit",
    )

    def __init__(self, kind: int, **kw: Any) -> None:
        self.kind = kind
        self.text = ""
        self.children: list[Node] = []
        self.lo = self.hi = 0
        self.excludes: tuple[str, ...] = ()
        self.by_last: dict[str, tuple[str, ...]] = {}
        self.maxlen = 0  # longest exclude
        self.channel = "content"
        self.in_call = False
        self.schema: Any = True
        self.style: Optional[xmlargs.XmlStyle] = None
        self.pattern: Optional[re.Pattern[str]] = None
        self.partial: Any = None
        self.dfa: Optional[regexdfa.LazyDFA] = None
        self.name = ""
        self.call_kind = "function"
        self.args: Optional[Node] = None
        self.nullable = False
        self.emit = False  # a literal whose text is the channel's (verbatim answers)
        for k, v in kw.items():
            setattr(self, k, v)


def _text_node(excludes: Any, ctx: "_Ctx") -> Node:
    ex = tuple(dict.fromkeys(e for e in (*excludes, *ctx.ends) if isinstance(e, str) and e))
    by_last: dict[str, list[str]] = {}
    for e in ex:
        by_last.setdefault(e[-1], []).append(e)
    return Node(
        TEXT, excludes=ex, by_last={k: tuple(v) for k, v in by_last.items()}, maxlen=max(map(len, ex), default=0),
        channel=ctx.channel, in_call=ctx.in_call,
    )


class _Ctx:
    __slots__ = ("channel", "in_call", "ends", "verbatim")

    def __init__(self, channel: str = "content", in_call: bool = False, ends: tuple[str, ...] = (), verbatim: bool = False) -> None:
        self.channel, self.in_call, self.ends, self.verbatim = channel, in_call, ends, verbatim

    def with_(self, **kw: Any) -> "_Ctx":
        c = _Ctx(self.channel, self.in_call, self.ends, self.verbatim)
        for k, v in kw.items():
            setattr(c, k, v)
        return c


def _token_text(t: Any) -> Optional[str]:
    """A token given by string matches its text; ids need a vocabulary."""
    if isinstance(t, str):
        return t
    if isinstance(t, dict) and t.get("type") == "token":
        t = t.get("token")
        return t if isinstance(t, str) and t else None
    return None


def _lit(s: Optional[str]) -> Node:
    """Literal text; None (a token given by id: the parser reads text, not
    ids) never matches."""
    return Node(LIT, text=s) if s is not None else Node(DEAD)


def _string(f: Mapping[str, Any], key: str, path: Path, default: Optional[str] = None) -> str:
    v = f.get(key, default)
    if not isinstance(v, str):
        raise ParserConfigError(f"{_where(path + (key,))}: must be a string, not {type(v).__name__}")
    return v


def _seq(*children: Node) -> Node:
    return Node(SEQ, children=list(children))


def _alt(children: list[Node]) -> Node:
    return children[0] if len(children) == 1 else Node(ALT, children=children)


def _rep(child: Node, lo: int, hi: int) -> Node:
    return Node(REP, children=[child], lo=lo, hi=hi)


def _where(path: Path) -> str:
    return "/".join(map(str, path)) or "format"


def _group_depth(pattern: str) -> int:
    """Deepest nesting of unescaped parentheses (outside classes)."""
    depth = best = 0
    esc = in_class = False
    for ch in pattern:
        if esc:
            esc = False
        elif ch == "\\":
            esc = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
            best = max(best, depth)
        elif ch == ")":
            depth -= 1
    return best


class Compiler:
    """Structural-tag dict (+ roles by path) -> node graph."""

    def __init__(self, roles: Mapping[Path, Role]) -> None:
        self.roles = roles
        self._tags: dict[tuple, tuple[Node, Node, Optional[Role]]] = {}
        self._nodes = 0

    def compile(self, tag: Mapping[str, Any]) -> Node:
        if not isinstance(tag, Mapping):
            raise ParserConfigError("a structural tag must be a dict")
        if tag.get("type") == "structural_tag" or ("type" not in tag and "format" in tag):
            if "format" not in tag:
                raise ParserConfigError("structural tag has no format field")
            root = self.node(tag["format"], ("format",), _Ctx(), 1)
        else:
            root = self.node(tag, (), _Ctx(), 1)
        _mark_nullable(root)
        return root

    def _list(self, f: Mapping[str, Any], key: str, path: Path) -> list[Any]:
        v = f.get(key)
        if not isinstance(v, list) or not v:
            raise ParserConfigError(f"{_where(path + (key,))}: {f.get('type')} format needs a non-empty {key} list")
        return v

    def tag(self, f: Mapping[str, Any], path: Path, ctx: _Ctx, depth: int, skip: int = 0) -> Node:
        """A tag; ``skip`` characters of its begin were already read as a trigger."""
        if not isinstance(f, Mapping) or f.get("type", "tag") != "tag":
            raise ParserConfigError(f"{_where(path)}: expected a tag")
        self._depth(path, depth)
        # A triggered tag is needed whole and with its trigger already read:
        # its content and end are compiled once and shared (compiling them
        # per use doubled the work at every level of nested triggered tags).
        role = self.roles.get(path)
        if isinstance(role, TextRole) and role.verbatim:
            ctx = ctx.with_(channel=role.channel, verbatim=True)
        key = (path, ctx.channel, ctx.in_call, ctx.ends, ctx.verbatim)
        parts = self._tags.get(key)
        if parts is None:
            end = f.get("end")
            # One end or several; each a string or a token given by string.
            end_texts = [_token_text(e) for e in end] if isinstance(end, list) else [_token_text(end)]
            if not end_texts:
                raise ParserConfigError(f"{_where(path + ('end',))}: a tag needs an end")
            ends = [e for e in end_texts if e is not None]
            end_node = _alt([self._lit(e, ctx) for e in end_texts])
            inner = ctx.with_(ends=tuple(e for e in ends if e))
            if isinstance(role, TextRole):
                inner.channel = role.channel
            if isinstance(role, CallRole):
                inner.in_call = True
            content = self.node(f.get("content"), path + ("content",), inner, depth + 1)
            parts = self._tags[key] = (content, end_node, role)
        content, end_node, role = parts
        begin = _token_text(f.get("begin"))
        body = _seq(self._lit(begin[skip:] if begin is not None else None, ctx), content, end_node)
        if isinstance(role, CallRole):
            return Node(CALL, children=[body], name=role.name, call_kind=role.kind, args=_find_args(content))
        return body

    @staticmethod
    def _depth(path: Path, depth: int) -> None:
        if depth > MAX_FORMAT_DEPTH:
            raise ParserConfigError(f"{_where(path)}: formats are nested more than {MAX_FORMAT_DEPTH} levels deep")

    @staticmethod
    def _lit(s: Optional[str], ctx: _Ctx) -> Node:
        """A literal of the format; in a verbatim answer its text is content."""
        n = _lit(s)
        if ctx.verbatim and n.kind == LIT and n.text and not ctx.in_call:
            n.emit, n.channel = True, ctx.channel
        return n

    def node(self, f: Any, path: Path, ctx: _Ctx, depth: int) -> Node:
        n = self._node(f, path, ctx, depth)
        if isinstance(self.roles.get(path), InputRole) and n.kind in (TEXT, REGEX):
            # A custom tool's input: its text is the call's (REGEX leaves in
            # calls are otherwise syntax, such as a call index).
            n.call_kind = "input"
        return n

    def _node(self, f: Any, path: Path, ctx: _Ctx, depth: int) -> Node:
        self._depth(path, depth)
        self._nodes += 1
        if self._nodes > MAX_FORMATS:
            raise ParserConfigError(f"{_where(path)}: the tag holds more than {MAX_FORMATS} formats")
        if not isinstance(f, Mapping):
            raise ParserConfigError(f"{_where(path)}: a format must be an object")
        t = f.get("type")
        role = self.roles.get(path)
        if isinstance(role, TextRole) and t != "tag":
            ctx = ctx.with_(channel=role.channel, verbatim=ctx.verbatim or role.verbatim)
        d = depth + 1
        if t == "const_string":
            return self._lit(_string(f, "value", path), ctx)
        if t in ("any_text", "grammar", "lark"):
            return _text_node(f.get("excludes", ()) if t == "any_text" else (), ctx)
        if t in ("exclude_token", "any_tokens"):
            return _text_node([_token_text(x) for x in f.get("exclude_tokens", ())], ctx)
        if t in ("json_schema", "qwen_xml_parameter"):
            style = "qwen_xml" if t == "qwen_xml_parameter" else f.get("style", "json")
            schema = f.get("json_schema", True)
            if isinstance(style, str) and style in xmlargs.STYLES:
                return Node(XML, style=xmlargs.STYLES[style], schema=schema, channel=ctx.channel, in_call=ctx.in_call)
            if style != "json":
                raise ParserConfigError(f"{_where(path + ('style',))}: style {style!r} not recognized (json, {', '.join(xmlargs.STYLES)})")
            return Node(JSON, schema=schema, channel=ctx.channel, in_call=ctx.in_call)
        if t == "regex":
            return self.regex(f, path, ctx)
        if t == "token":
            return self._lit(_token_text(f), ctx)
        if t == "sequence":
            return _seq(*[self.node(e, path + ("elements", i), ctx, d) for i, e in enumerate(self._list(f, "elements", path))])
        if t == "or":
            return _alt([self.node(e, path + ("elements", i), ctx, d) for i, e in enumerate(self._list(f, "elements", path))])
        if t in ("optional", "star", "plus", "repeat"):
            child = self.node(f.get("content"), path + ("content",), ctx, d)
            lo, hi = {"optional": (0, 1), "star": (0, _INF), "plus": (1, _INF)}.get(t, (f.get("min", 0), f.get("max", _INF)))
            if not isinstance(lo, int) or not isinstance(hi, int) or isinstance(lo, bool) or isinstance(hi, bool):
                raise ParserConfigError(f"{_where(path)}: repeat bounds must be integers")
            hi = hi if 0 <= hi <= REPEAT_COUNT_LIMIT else _INF
            return _rep(child, min(max(lo, 0), REPEAT_COUNT_LIMIT), hi)
        if t == "tag":
            return self.tag(f, path, ctx, depth)
        if t in ("triggered_tags", "token_triggered_tags"):
            return self.triggered(f, path, ctx, d, token=t == "token_triggered_tags")
        if t == "tags_with_separator":
            tags = _alt([self.tag(x, path + ("tags", i), ctx, d) for i, x in enumerate(self._list(f, "tags", path))])
            sep = _string(f, "separator", path, "")
            body = tags if f.get("stop_after_first") else _seq(tags, _rep(_seq(self._lit(sep, ctx), tags), 0, _INF))
            return body if f.get("at_least_one") else _rep(body, 0, 1)
        if t in ("dispatch", "token_dispatch"):
            rules = self._list(f, "rules", path)
            patterns, bodies = [], []
            for i, r in enumerate(rules):
                if not isinstance(r, (list, tuple)) or len(r) != 2:
                    raise ParserConfigError(f"{_where(path)}/rules/{i}: a rule is a [pattern, format] pair")
                p = _token_text(r[0]) if t == "token_dispatch" else r[0]
                patterns.append(p)
                bodies.append(_seq(self._lit(p if isinstance(p, str) else None, ctx), self.node(r[1], path + ("rules", i, 1), ctx, d)))
            ex = [*f.get("excludes", ()), *[_token_text(x) for x in f.get("exclude_tokens", ())], *[p for p in patterns if isinstance(p, str)]]
            text = _text_node(ex, ctx.with_(ends=()))
            rule = _alt(bodies)
            if f.get("loop", True):
                return _seq(text, _rep(_seq(rule, text), 0, _INF))
            return _seq(text, _rep(rule, 0, 1))
        raise ParserConfigError(f"{_where(path)}: format type {t!r} not recognized")

    def regex(self, f: Mapping[str, Any], path: Path, ctx: _Ctx) -> Node:
        pattern = f.get("pattern", "")
        if not isinstance(pattern, str):
            raise ParserConfigError(f"{_where(path)}: regex pattern must be a string")
        # The engine reads the pattern (the structural tag's dialect, Rust's
        # regex syntax) and gives its language back in Python's syntax, flag
        # free: the parser reads exactly what the mask allows, never
        # Python's own reading of Rust syntax ([@[\].], \cJ, (?i) differ).
        try:
            pattern = _engine.Grammar.regex_as_python(pattern)
        except (_engine.GrammarError, _engine.LimitError) as e:
            raise ParserConfigError(f"{_where(path)}: regex not understood by the engine: {e}") from None
        if _group_depth(pattern) > _REGEX_GROUP_LIMIT:
            raise ParserConfigError(f"{_where(path)}: regex groups nest more than {_REGEX_GROUP_LIMIT} levels deep")
        try:
            compiled = re.compile(pattern)
        except (re.error, RecursionError, OverflowError) as e:
            raise ParserConfigError(f"{_where(path)}: regex not understood by the parser: {e}") from None
        dfa = regexdfa.compile_dfa(pattern)
        partial = None
        if dfa is None and _partial_re is not None:
            try:
                partial = _partial_re.compile(pattern)
            except Exception:  # the `regex` package's own error types
                partial = None
        return Node(REGEX, pattern=compiled, partial=partial, dfa=dfa, channel=ctx.channel, in_call=ctx.in_call)

    def triggered(self, f: Mapping[str, Any], path: Path, ctx: _Ctx, depth: int, token: bool) -> Node:
        raw_triggers = self._list(f, "trigger_tokens" if token else "triggers", path)
        triggers = [_token_text(x) if token else x for x in raw_triggers]
        tags = self._list(f, "tags", path)
        full = [self.tag(x, path + ("tags", i), ctx, depth) for i, x in enumerate(tags)]
        groups = []
        for trig in triggers:
            if not isinstance(trig, str) or not trig:
                groups.append(Node(DEAD))
                continue
            rest = []
            for i, x in enumerate(tags):
                begin = _token_text(x.get("begin")) if isinstance(x, Mapping) else None
                if begin is not None and begin.startswith(trig):
                    rest.append(self.tag(x, path + ("tags", i), ctx, depth, skip=len(trig)))
            groups.append(_seq(self._lit(trig, ctx), _alt(rest)) if rest else Node(DEAD))
        ex = [*f.get("excludes", ()), *[_token_text(x) for x in f.get("exclude_tokens", ())], *triggers]
        text = _text_node(ex, ctx)
        group = _alt(groups)
        at_least_one, stop = bool(f.get("at_least_one")), bool(f.get("stop_after_first"))
        if at_least_one and stop:
            return _alt(full)
        if stop:
            return _seq(text, _rep(group, 0, 1))
        loop = _rep(_seq(group, text), 0, _INF)
        if at_least_one:
            return _seq(_alt(full), text, loop)
        return _seq(text, loop)


def _find_args(node: Node) -> Optional[Node]:
    """The node holding a call's arguments (first JSON/XML/free text)."""
    queue = [node]
    seen = set()
    k = 0
    while k < len(queue):
        n = queue[k]
        k += 1
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.call_kind == "input":
            return n
        queue.extend(n.children)
    # No custom input: the first JSON / XML / free text.
    for n in queue:
        if n.kind in (JSON, XML, TEXT):
            return n
    return None


def _mark_nullable(root: Node) -> None:
    """Sets ``nullable`` (matches the empty text) on every node, children
    first (nodes are shared, so the graph is a DAG: an explicit post-order
    walk), and lets a repeat of a nullable child start at count 0 (empty
    iterations meet any minimum)."""
    done: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        n, expanded = stack.pop()
        if id(n) in done:
            continue
        if not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in n.children if id(c) not in done)
            continue
        done.add(id(n))
        k = n.kind
        if k == LIT:
            n.nullable = not n.text
        elif k in (TEXT, XML):
            n.nullable = True
        elif k == REGEX:
            n.nullable = n.pattern.fullmatch("") is not None  # type: ignore[union-attr]
        elif k == SEQ:
            n.nullable = all(c.nullable for c in n.children)
        elif k == ALT:
            n.nullable = any(c.nullable for c in n.children)
        elif k == REP:
            if n.children[0].nullable:
                n.lo = 0
            n.nullable = n.lo == 0
        elif k == CALL:
            n.nullable = n.children[0].nullable
        else:  # JSON, DEAD
            n.nullable = False


# ------------------------------------------------------------- threads --
# Event cells: (previous cell, kind, payload, start, end, index). Kinds:
# "text" (payload: channel), "args" (payload: the arguments node; JSON or
# free-text arguments, one span per stretch), "param" (payload: (XML node,
# opening tag start, value start, value end): one complete XML parameter),
# "call" / "end" (payload: the CALL node; start = end = position). `index`
# is the cell's position in its list, so two lists' common part is found
# without walking them from the start.
Event = Optional[tuple]
Thread = tuple  # (node or None when accepted, state, continuation, events)


def _cell(prev: Event, kind: str, payload: Any, start: int, end: int) -> tuple:
    return (prev, kind, payload, start, end, 0 if prev is None else prev[5] + 1)


def _add_span(ev: Event, kind: str, payload: Any, pos: int) -> tuple:
    if ev is not None and ev[4] == pos and ev[1] == kind and (ev[2] is payload or ev[2] == payload):
        return (ev[0], kind, payload, ev[3], pos + 1, ev[5])
    return _cell(ev, kind, payload, pos, pos + 1)


def events_of(ev: Event, after: int = -1) -> list[tuple[str, Any, int, int]]:
    """The events of a list as ``(kind, payload, start, end)``, oldest first;
    only those with index > ``after``."""
    out = []
    while ev is not None and ev[5] > after:
        out.append(ev[1:5])
        ev = ev[0]
    out.reverse()
    return out


class Machine:
    """Feeds characters to every live interpretation of the text."""

    def __init__(self, root: Node) -> None:
        self.root = root
        self.pos = 0  # characters read
        # The text from `base` on (what threads may still look back at).
        self.window = ""
        self.base = 0
        self._conts: dict[tuple, tuple] = {}
        out: list[Thread] = []
        self._run([("e", root, None, None)], 0, out, set())
        self.threads = self._dedup(out)

    # Continuations are interned, so hashing and comparing one is O(1)
    # however deep the tree is.
    def _cont(self, what: str, node: Node, i: int, parent: Any) -> tuple:
        key = (what, id(node), i, id(parent))
        c = self._conts.get(key)
        if c is None:
            c = self._conts[key] = (what, node, i, parent)
        return c

    @staticmethod
    def _dedup(threads: list[Thread]) -> list[Thread]:
        seen = set()
        out = []
        for th in threads:
            key = (id(th[0]), th[1], id(th[2]))
            if key not in seen:
                seen.add(key)
                out.append(th)
        return out

    def _span(self, node: Node, ev: Event, pos: int) -> tuple:
        if node.in_call:
            return _add_span(ev, "args", node, pos)
        return _add_span(ev, "text", node.channel, pos)

    def _run(self, work: list[tuple], pos: int, out: list, guard: set) -> None:
        """Enters nodes / completes continuations depth-first with an explicit
        stack (items pushed in reverse, so threads come out in the order of
        preference a recursive walk would give)."""
        while work:
            item = work.pop()
            if item[0] == "c":
                _, cont, ev = item
                if cont is None:
                    out.append((None, None, None, ev))
                    continue
                what, node, i, parent = cont
                if what == "s":
                    if i + 1 < len(node.children):
                        work.append(("e", node.children[i + 1], self._cont("s", node, i + 1, parent), ev))
                    else:
                        work.append(("c", parent, ev))
                elif what == "r":
                    n = i + 1
                    todo = []
                    if node.hi == _INF or n < node.hi:
                        # Unbounded counts past the minimum are all the same state.
                        capped = n if node.hi != _INF else min(n, node.lo)
                        todo.append(("e", node.children[0], self._cont("r", node, capped, parent), ev))
                    if n >= node.lo:
                        todo.append(("c", parent, ev))
                    work.extend(reversed(todo))
                else:  # call
                    work.append(("c", parent, _cell(ev, "end", node, pos, pos)))
                continue
            _, node, cont, ev = item
            key = (id(node), id(cont))
            if key in guard:
                continue
            guard.add(key)
            k = node.kind
            if k == LIT:
                if node.text:
                    out.append((node, 0, cont, ev))
                else:
                    work.append(("c", cont, ev))
            elif k == TEXT:
                out.append((node, pos if node.maxlen else -1, cont, ev))
                work.append(("c", cont, ev))
            elif k == JSON:
                out.append((node, jsonscan.START, cont, ev))
            elif k == XML:
                out.append((node, xmlargs.GAP, cont, ev))
                work.append(("c", cont, ev))
            elif k == REGEX:
                if node.dfa is not None:
                    out.append((node, node.dfa.start, cont, ev))
                else:
                    out.append((node, pos, cont, ev))
                if node.nullable:
                    work.append(("c", cont, ev))
            elif k == SEQ:
                work.append(("e", node.children[0], self._cont("s", node, 0, cont), ev))
            elif k == ALT:
                work.extend(("e", c, cont, ev) for c in reversed(node.children))
            elif k == REP:
                todo = []
                if node.hi != 0:
                    todo.append(("e", node.children[0], self._cont("r", node, 0, cont), ev))
                if node.lo == 0:
                    todo.append(("c", cont, ev))
                work.extend(reversed(todo))
            elif k == CALL:
                work.append(("e", node.children[0], self._cont("c", node, 0, cont), _cell(ev, "call", node, pos, pos)))
            # DEAD: nothing

    def lookback(self) -> int:
        """The earliest position any live thread may still read."""
        pos = self.pos
        low = pos
        for node, st, _cont, _ev in self.threads:
            if node is None:
                continue
            k = node.kind
            if k == TEXT:
                at = st if st >= 0 else pos - node.maxlen
            elif k == XML:
                at = xmlargs.lookback(st, pos)
            elif k == REGEX and node.dfa is None:
                at = st
            else:
                continue
            if at < low:
                low = at
        return max(low, 0)

    def feed(self, delta: str) -> int:
        """Reads ``delta``; returns how many of its characters were read
        before no thread survived (``len(delta)`` when all were). The
        threads before the failing character are kept."""
        keep = self.lookback()
        self.window = self.window[keep - self.base :] + delta
        self.base = keep
        for k, ch in enumerate(delta):
            if not self._step(ch):
                return k
        return len(delta)

    def _step(self, ch: str) -> bool:
        pos = self.pos
        text, base = self.window, self.base
        out: list[Thread] = []
        guard: set = set()
        work: list[tuple] = []
        nxt = pos + 1
        for node, st, cont, ev in self.threads:
            if node is None:
                continue
            k = node.kind
            if k == LIT:
                if node.text[st] != ch:
                    continue
                if node.emit:
                    ev = _add_span(ev, "text", node.channel, pos)
                if st + 1 == len(node.text):
                    work.append(("c", cont, ev))
                    self._run(work, nxt, out, guard)
                else:
                    out.append((node, st + 1, cont, ev))
            elif k == TEXT:
                dead = False
                for x in node.by_last.get(ch, ()):
                    s = nxt - len(x)
                    if s >= st and s >= base and text.startswith(x, s - base):
                        dead = True
                        break
                if dead:
                    continue
                if st >= 0 and nxt - st >= node.maxlen:
                    st = -1  # no excluded string can reach back to the start any more
                ev2 = self._span(node, ev, pos)
                out.append((node, st, cont, ev2))
                work.append(("c", cont, ev2))
                self._run(work, nxt, out, guard)
            elif k == JSON:
                s2 = jsonscan.step(st, ch)
                if s2 is None:
                    continue
                ev2 = self._span(node, ev, pos)
                out.append((node, s2, cont, ev2))
                if jsonscan.is_complete(s2):
                    work.append(("c", cont, ev2))
                    self._run(work, nxt, out, guard)
            elif k == XML:
                x2 = xmlargs.step(node.style, st, text, pos, base)  # type: ignore[arg-type]
                if x2 is None:
                    continue
                if not node.in_call:
                    ev2 = self._span(node, ev, pos)
                elif st[0] == "value" and x2[0] == "gap":
                    ev2 = _cell(ev, "param", (node, st[5], st[1], nxt - len(st[2])), st[5], nxt)
                else:
                    ev2 = ev
                out.append((node, x2, cont, ev2))
                if xmlargs.can_end(x2):
                    work.append(("c", cont, ev2))
                    self._run(work, nxt, out, guard)
            elif k == REGEX:
                if node.call_kind == "input":
                    ev2 = _add_span(ev, "args", node, pos)
                else:
                    ev2 = ev if node.in_call else self._span(node, ev, pos)
                if node.dfa is not None:
                    d2 = node.dfa.step(st, ch)
                    if d2 is regexdfa.DEAD or not d2:
                        continue
                    out.append((node, d2, cont, ev2))
                    full = node.dfa.accepting(d2)
                else:
                    a, b = st - base, nxt - base
                    full = node.pattern.fullmatch(text, a, b) is not None  # type: ignore[union-attr]
                    if nxt - st >= REGEX_SPAN_LIMIT:
                        alive = False
                    elif node.partial is not None:
                        alive = node.partial.fullmatch(text, a, b, partial=True) is not None
                    else:
                        # Without partial matching: a span that matched and no
                        # longer does is taken as finished (exact for `\d+`).
                        alive = full or not (pos > st and node.pattern.fullmatch(text, a, b - 1))  # type: ignore[union-attr]
                    if alive:
                        out.append((node, st, cont, ev2))
                if full:
                    work.append(("c", cont, ev2))
                    self._run(work, nxt, out, guard)
        if not out:
            return False
        self.pos = nxt
        self.threads = self._dedup(out)
        return True

    def accepted(self) -> Optional[Thread]:
        """The preferred interpretation that ends here, if any."""
        for th in self.threads:
            if th[0] is None:
                return th
        return None
