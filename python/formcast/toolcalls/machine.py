"""Reads text against a structural-tag tree, all interpretations at once.

The tree is compiled into a few node kinds (literal, free text, JSON value,
XML parameters, regex; sequence, choice, repeat; call). A *thread* is one
interpretation of the text read so far: the node consuming input, its local
state, the continuation (what to do when the node finishes) and a
persistent list of events (text of a channel, call start/end, arguments).
Each character advances every thread; threads in the same machine state are
merged (the earlier one wins). Everything all live threads agree on is
final — that is what the stream parser emits.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Union

from ..styles.formats import CallRole, Path, Role, TextRole
from . import jsonscan, xmlargs

LIT, TEXT, JSON, XML, REGEX, DEAD, SEQ, ALT, REP, CALL = range(10)
_INF = -1
_REGEX_MAX = 256  # longest span a regex node may cover without partial matching

try:  # the `regex` package knows whether text can still grow into a match
    import regex as _partial_re  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the environment
    _partial_re = None


class ParserConfigError(ValueError):
    """The structural tag cannot be read back (malformed or unsupported)."""


class Node:
    __slots__ = ("kind", "text", "children", "lo", "hi", "excludes", "by_last", "channel", "in_call", "schema", "style", "pattern", "partial", "name", "call_kind", "args")

    def __init__(self, kind: int, **kw: Any) -> None:
        self.kind = kind
        self.text = ""
        self.children: list[Node] = []
        self.lo = self.hi = 0
        self.excludes: tuple[str, ...] = ()
        self.by_last: dict[str, tuple[str, ...]] = {}
        self.channel = "content"
        self.in_call = False
        self.schema: Any = True
        self.style: Optional[xmlargs.XmlStyle] = None
        self.pattern: Optional[re.Pattern[str]] = None
        self.partial: Any = None
        self.name = ""
        self.call_kind = "function"
        self.args: Optional[Node] = None
        for k, v in kw.items():
            setattr(self, k, v)


def _text_node(excludes: Any, ctx: "_Ctx") -> Node:
    ex = tuple(dict.fromkeys(e for e in (*excludes, *ctx.ends) if isinstance(e, str) and e))
    by_last: dict[str, list[str]] = {}
    for e in ex:
        by_last.setdefault(e[-1], []).append(e)
    return Node(TEXT, excludes=ex, by_last={k: tuple(v) for k, v in by_last.items()}, channel=ctx.channel, in_call=ctx.in_call)


class _Ctx:
    __slots__ = ("channel", "in_call", "ends")

    def __init__(self, channel: str = "content", in_call: bool = False, ends: tuple[str, ...] = ()) -> None:
        self.channel, self.in_call, self.ends = channel, in_call, ends

    def with_(self, **kw: Any) -> "_Ctx":
        c = _Ctx(self.channel, self.in_call, self.ends)
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
    return Node(LIT, text=s) if s is not None else Node(DEAD)


def _seq(*children: Node) -> Node:
    return Node(SEQ, children=list(children))


def _alt(children: list[Node]) -> Node:
    return children[0] if len(children) == 1 else Node(ALT, children=children)


def _rep(child: Node, lo: int, hi: int) -> Node:
    return Node(REP, children=[child], lo=lo, hi=hi)


class Compiler:
    """Structural-tag dict (+ roles by path) -> node graph."""

    def __init__(self, roles: Mapping[Path, Role]) -> None:
        self.roles = roles

    def compile(self, tag: Mapping[str, Any]) -> Node:
        if not isinstance(tag, Mapping):
            raise ParserConfigError("a structural tag must be a dict")
        if tag.get("type") == "structural_tag":
            if "format" not in tag:
                raise ParserConfigError("structural tag has no format field")
            return self.node(tag["format"], ("format",), _Ctx())
        return self.node(tag, (), _Ctx())

    def _list(self, f: Mapping[str, Any], key: str, path: Path) -> list[Any]:
        v = f.get(key)
        if not isinstance(v, list) or not v:
            raise ParserConfigError(f"{'/'.join(map(str, path + (key,)))}: {f.get('type')} format needs a non-empty {key} list")
        return v

    def tag(self, f: Mapping[str, Any], path: Path, ctx: _Ctx, skip: int = 0) -> Node:
        """A tag; ``skip`` characters of its begin were already read as a trigger."""
        if not isinstance(f, Mapping) or f.get("type", "tag") != "tag":
            raise ParserConfigError(f"{'/'.join(map(str, path))}: expected a tag")
        begin = _token_text(f.get("begin"))
        end = f.get("end")
        ends = [end] if isinstance(end, str) else ([e for e in end if isinstance(e, str)] if isinstance(end, list) else [])
        end_node = _alt([_lit(e) for e in ends]) if ends else _lit(_token_text(end))
        role = self.roles.get(path)
        inner = ctx.with_(ends=tuple(e for e in ends if e))
        if isinstance(role, TextRole):
            inner.channel = role.channel
        if isinstance(role, CallRole):
            inner.in_call = True
        content = self.node(f.get("content"), path + ("content",), inner)
        body = _seq(_lit(begin[skip:] if begin is not None else None), content, end_node)
        if isinstance(role, CallRole):
            return Node(CALL, children=[body], name=role.name, call_kind=role.kind, args=_find_args(content))
        return body

    def node(self, f: Any, path: Path, ctx: _Ctx) -> Node:
        if not isinstance(f, Mapping):
            raise ParserConfigError(f"{'/'.join(map(str, path)) or 'format'}: a format must be an object")
        t = f.get("type")
        role = self.roles.get(path)
        if isinstance(role, TextRole) and t != "tag":
            ctx = ctx.with_(channel=role.channel)
        if t == "const_string":
            return _lit(f.get("value", ""))
        if t in ("any_text", "grammar"):
            return _text_node(f.get("excludes", ()) if t == "any_text" else (), ctx)
        if t in ("exclude_token", "any_tokens"):
            return _text_node([_token_text(x) for x in f.get("exclude_tokens", ())], ctx)
        if t in ("json_schema", "qwen_xml_parameter"):
            style = "qwen_xml" if t == "qwen_xml_parameter" else f.get("style", "json")
            schema = f.get("json_schema", True)
            if isinstance(style, str) and style in xmlargs.STYLES:
                return Node(XML, style=xmlargs.STYLES[style], schema=schema, channel=ctx.channel, in_call=ctx.in_call)
            return Node(JSON, schema=schema, channel=ctx.channel, in_call=ctx.in_call)
        if t == "regex":
            try:
                pattern = f.get("pattern", "")
                partial = None
                if _partial_re is not None:
                    try:
                        partial = _partial_re.compile(pattern)
                    except _partial_re.error:
                        partial = None
                return Node(REGEX, pattern=re.compile(pattern), partial=partial)
            except (re.error, TypeError) as e:
                raise ParserConfigError(f"{'/'.join(map(str, path))}: regex not understood by the parser: {e}") from None
        if t == "token":
            return _lit(_token_text(f))
        if t == "sequence":
            return _seq(*[self.node(e, path + ("elements", i), ctx) for i, e in enumerate(self._list(f, "elements", path))])
        if t == "or":
            return _alt([self.node(e, path + ("elements", i), ctx) for i, e in enumerate(self._list(f, "elements", path))])
        if t in ("optional", "star", "plus", "repeat"):
            child = self.node(f.get("content"), path + ("content",), ctx)
            lo, hi = {"optional": (0, 1), "star": (0, _INF), "plus": (1, _INF)}.get(t, (f.get("min", 0), f.get("max", _INF)))
            if not isinstance(lo, int) or not isinstance(hi, int):
                raise ParserConfigError(f"{'/'.join(map(str, path))}: repeat bounds must be integers")
            return _rep(child, max(lo, 0), hi if hi >= 0 else _INF)
        if t == "tag":
            return self.tag(f, path, ctx)
        if t in ("triggered_tags", "token_triggered_tags"):
            return self.triggered(f, path, ctx, token=t == "token_triggered_tags")
        if t == "tags_with_separator":
            tags = _alt([self.tag(x, path + ("tags", i), ctx) for i, x in enumerate(self._list(f, "tags", path))])
            sep = f.get("separator", "")
            body = tags if f.get("stop_after_first") else _seq(tags, _rep(_seq(_lit(sep), tags), 0, _INF))
            return body if f.get("at_least_one") else _rep(body, 0, 1)
        if t in ("dispatch", "token_dispatch"):
            rules = self._list(f, "rules", path)
            patterns, bodies = [], []
            for i, r in enumerate(rules):
                if not isinstance(r, (list, tuple)) or len(r) != 2:
                    raise ParserConfigError(f"{'/'.join(map(str, path))}/rules/{i}: a rule is a [pattern, format] pair")
                p = _token_text(r[0]) if t == "token_dispatch" else r[0]
                patterns.append(p)
                bodies.append(_seq(_lit(p if isinstance(p, str) else None), self.node(r[1], path + ("rules", i, 1), ctx)))
            ex = [*f.get("excludes", ()), *[_token_text(x) for x in f.get("exclude_tokens", ())], *[p for p in patterns if isinstance(p, str)]]
            text = _text_node(ex, ctx.with_(ends=()))
            rule = _alt(bodies)
            if f.get("loop", True):
                return _seq(text, _rep(_seq(rule, text), 0, _INF))
            return _seq(text, _rep(rule, 0, 1))
        raise ParserConfigError(f"{'/'.join(map(str, path)) or 'format'}: format type {t!r} not recognized")

    def triggered(self, f: Mapping[str, Any], path: Path, ctx: _Ctx, token: bool) -> Node:
        raw_triggers = self._list(f, "trigger_tokens" if token else "triggers", path)
        triggers = [_token_text(x) if token else x for x in raw_triggers]
        tags = self._list(f, "tags", path)
        full = [self.tag(x, path + ("tags", i), ctx) for i, x in enumerate(tags)]
        groups = []
        for trig in triggers:
            if not isinstance(trig, str) or not trig:
                groups.append(Node(DEAD))
                continue
            rest = []
            for i, x in enumerate(tags):
                begin = _token_text(x.get("begin")) if isinstance(x, Mapping) else None
                if begin is not None and begin.startswith(trig):
                    rest.append(self.tag(x, path + ("tags", i), ctx, skip=len(trig)))
            groups.append(_seq(_lit(trig), _alt(rest)) if rest else Node(DEAD))
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
    stack = [node]
    seen = set()
    while stack:
        n = stack.pop(0)
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.kind in (JSON, XML, TEXT):
            return n
        stack.extend(n.children)
    return None


# ------------------------------------------------------------- threads --
# Event cells: (previous cell, kind, payload, start, end). Kinds: "text"
# (payload: channel), "args" (payload: the arguments node), "call" / "end"
# (payload: the CALL node; start = end = position).
Event = Optional[tuple]
Thread = tuple  # (node or None when accepted, state, continuation, events)


def _add_span(ev: Event, kind: str, payload: Any, pos: int) -> tuple:
    if ev is not None and ev[1] == kind and ev[2] is payload and ev[4] == pos:
        return (ev[0], kind, payload, ev[3], pos + 1)
    return (ev, kind, payload, pos, pos + 1)


def events_of(ev: Event) -> list[tuple[str, Any, int, int]]:
    out = []
    while ev is not None:
        out.append(ev[1:])
        ev = ev[0]
    out.reverse()
    return out


class Machine:
    """Feeds characters to every live interpretation of the text."""

    def __init__(self, root: Node) -> None:
        self.root = root
        self.text = ""
        out: list[Thread] = []
        self._enter(root, None, None, 0, out, set())
        self.threads = self._dedup(out)

    @staticmethod
    def _dedup(threads: list[Thread]) -> list[Thread]:
        seen = set()
        out = []
        for th in threads:
            key = (id(th[0]), th[1], th[2])
            if key not in seen:
                seen.add(key)
                out.append(th)
        return out

    def _span(self, node: Node, ev: Event, pos: int) -> tuple:
        if node.in_call:
            return _add_span(ev, "args", node, pos)
        return _add_span(ev, "text", node.channel, pos)

    def _enter(self, node: Node, cont: Any, ev: Event, pos: int, out: list, guard: set) -> None:
        key = (id(node), cont)
        if key in guard:
            return
        guard.add(key)
        k = node.kind
        if k == LIT:
            if node.text:
                out.append((node, 0, cont, ev))
            else:
                self._complete(cont, ev, pos, out, guard)
        elif k == TEXT:
            out.append((node, pos, cont, ev))
            self._complete(cont, ev, pos, out, guard)
        elif k == JSON:
            out.append((node, jsonscan.START, cont, ev))
        elif k == XML:
            out.append((node, xmlargs.GAP, cont, ev))
            self._complete(cont, ev, pos, out, guard)
        elif k == REGEX:
            out.append((node, pos, cont, ev))
            if node.pattern.fullmatch(""):  # type: ignore[union-attr]
                self._complete(cont, ev, pos, out, guard)
        elif k == SEQ:
            self._enter(node.children[0], (("s", node, 0), cont), ev, pos, out, guard)
        elif k == ALT:
            for c in node.children:
                self._enter(c, cont, ev, pos, out, guard)
        elif k == REP:
            if node.hi != 0:
                self._enter(node.children[0], (("r", node, 0), cont), ev, pos, out, guard)
            if node.lo == 0:
                self._complete(cont, ev, pos, out, guard)
        elif k == CALL:
            self._enter(node.children[0], (("c", node, 0), cont), (ev, "call", node, pos, pos), pos, out, guard)
        # DEAD: nothing

    def _complete(self, cont: Any, ev: Event, pos: int, out: list, guard: set) -> None:
        if cont is None:
            out.append((None, None, None, ev))
            return
        (what, node, i), parent = cont
        if what == "s":
            if i + 1 < len(node.children):
                self._enter(node.children[i + 1], (("s", node, i + 1), parent), ev, pos, out, guard)
            else:
                self._complete(parent, ev, pos, out, guard)
        elif what == "r":
            n = i + 1
            if node.hi == _INF or n < node.hi:
                # Unbounded counts past the minimum are all the same state.
                capped = n if node.hi != _INF else min(n, node.lo)
                self._enter(node.children[0], (("r", node, capped), parent), ev, pos, out, guard)
            if n >= node.lo:
                self._complete(parent, ev, pos, out, guard)
        else:  # call
            self._complete(parent, (ev, "end", node, pos, pos), pos, out, guard)

    def feed_char(self, ch: str) -> bool:
        """Advances every thread over ``ch``; False (threads kept) if none survives."""
        pos = len(self.text)
        text = self.text = self.text + ch
        out: list[Thread] = []
        guard: set = set()
        for node, st, cont, ev in self.threads:
            if node is None:
                continue
            k = node.kind
            if k == LIT:
                if node.text[st] != ch:
                    continue
                if st + 1 == len(node.text):
                    self._complete(cont, ev, pos + 1, out, guard)
                else:
                    out.append((node, st + 1, cont, ev))
            elif k == TEXT:
                dead = False
                for x in node.by_last.get(ch, ()):
                    s = pos + 1 - len(x)
                    if s >= st and text.startswith(x, s):
                        dead = True
                        break
                if dead:
                    continue
                ev2 = self._span(node, ev, pos)
                out.append((node, st, cont, ev2))
                self._complete(cont, ev2, pos + 1, out, guard)
            elif k == JSON:
                s2 = jsonscan.step(st, ch)
                if s2 is None:
                    continue
                ev2 = self._span(node, ev, pos)
                out.append((node, s2, cont, ev2))
                if jsonscan.is_complete(s2):
                    self._complete(cont, ev2, pos + 1, out, guard)
            elif k == XML:
                s2 = xmlargs.step(node.style, st, text, pos)  # type: ignore[arg-type]
                if s2 is None:
                    continue
                ev2 = self._span(node, ev, pos)
                out.append((node, s2, cont, ev2))
                if xmlargs.can_end(s2):
                    self._complete(cont, ev2, pos + 1, out, guard)
            elif k == REGEX:
                full = node.pattern.fullmatch(text, st, pos + 1) is not None  # type: ignore[union-attr]
                if node.partial is not None:
                    alive = node.partial.fullmatch(text, st, pos + 1, partial=True) is not None
                else:
                    # Without partial matching: a span that matched and no
                    # longer does is taken as finished (exact for `\d+`).
                    alive = full or (pos + 1 - st < _REGEX_MAX and not (pos > st and node.pattern.fullmatch(text, st, pos)))  # type: ignore[union-attr]
                if alive:
                    out.append((node, st, cont, ev))
                if full:
                    self._complete(cont, ev, pos + 1, out, guard)
        if not out:
            return False
        self.threads = self._dedup(out)
        return True

    def accepted(self) -> Optional[Thread]:
        """The preferred interpretation that ends here, if any."""
        for th in self.threads:
            if th[0] is None:
                return th
        return None
