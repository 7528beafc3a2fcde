"""A character-at-a-time JSON recognizer: where does a JSON value end?

States are small immutable tuples so parser threads can share and compare
them. It checks syntax only (RFC 8259, any whitespace); the schema was the
constraint's job.

Every step is O(1), whatever the nesting: the open containers are a
persistent linked stack (:class:`Stack`) whose hash is computed once per
cell, so pushing, popping, hashing and comparing a state never walks the
stack (a string stack made each bracket copy and rehash all the open ones,
which was quadratic on deeply nested arguments).
"""

from __future__ import annotations

from typing import Optional

__all__ = ["Stack", "State", "START", "step", "is_complete", "depth", "scan", "is_json"]


class Stack:
    """One open container (``top`` is ``"{"`` or ``"["``) above ``parent``."""

    __slots__ = ("top", "parent", "depth", "_hash")

    def __init__(self, top: str, parent: Optional["Stack"]) -> None:
        self.top = top
        self.parent = parent
        self.depth = 1 if parent is None else parent.depth + 1
        self._hash = hash((top, parent._hash if parent is not None else 0, self.depth))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        # Iterative, and usually settled by identity or the hash: two
        # threads only build equal stacks separately in rare ambiguities.
        a: Optional[Stack] = self
        b = other
        while a is not b:
            if not isinstance(b, Stack) or a is None or a._hash != b._hash or a.depth != b.depth or a.top != b.top:
                return False
            a, b = a.parent, b.parent
        return True

    def __repr__(self) -> str:
        return f"Stack(depth={self.depth}, top={self.top!r})"


# (open containers or None, mode, detail)
State = tuple[Optional[Stack], str, object]

START: State = (None, "V", None)
_WS = " \t\n\r"
_NUM_FINAL = {"0", "I", "F", "X"}
_ESCAPES = '"\\/bfnrt'
_HEX = "0123456789abcdefABCDEF"


def is_complete(s: State) -> bool:
    """A whole value has been read (trailing whitespace allowed after it)."""
    stack, mode, aux = s
    return stack is None and (mode == "A" or (mode == "N" and aux in _NUM_FINAL))


def depth(s: State) -> int:
    """Containers open in ``s``."""
    return 0 if s[0] is None else s[0].depth


def _value_start(stack: Optional[Stack], ch: str) -> Optional[State]:
    if ch == "{":
        return (Stack("{", stack), "K", None)
    if ch == "[":
        return (Stack("[", stack), "Z", None)
    if ch == '"':
        return (stack, "S", (False, 0))
    if ch == "-":
        return (stack, "N", "-")
    if ch == "0":
        return (stack, "N", "0")
    if "1" <= ch <= "9":
        return (stack, "N", "I")
    if ch == "t":
        return (stack, "L", "rue")
    if ch == "f":
        return (stack, "L", "alse")
    if ch == "n":
        return (stack, "L", "ull")
    return None


def _number(sub: str, ch: str) -> Optional[str]:
    digit = "0" <= ch <= "9"
    if sub == "-":
        return "0" if ch == "0" else ("I" if digit else None)
    if sub == "0":
        return "." if ch == "." else ("E" if ch in "eE" else None)
    if sub == "I":
        return "I" if digit else ("." if ch == "." else ("E" if ch in "eE" else None))
    if sub in (".", "F"):
        return "F" if digit else ("E" if sub == "F" and ch in "eE" else None)
    if sub == "E":
        return "S" if ch in "+-" else ("X" if digit else None)
    if sub in ("S", "X"):
        return "X" if digit else None
    return None


def step(s: State, ch: str) -> Optional[State]:
    """The state after ``ch``, or None if ``ch`` cannot come next."""
    stack, mode, aux = s
    if mode == "S":
        is_key, esc = aux  # type: ignore[misc]
        if esc == 0:
            if ch == '"':
                return (stack, "C", None) if is_key else (stack, "A", None)
            if ch == "\\":
                return (stack, "S", (is_key, 1))
            return None if ord(ch) < 0x20 else s
        if esc == 1:
            if ch == "u":
                return (stack, "S", (is_key, -4))
            return (stack, "S", (is_key, 0)) if ch in _ESCAPES else None
        if ch not in _HEX:
            return None
        return (stack, "S", (is_key, 0 if esc == -1 else esc + 1))
    if mode == "N":
        nxt = _number(aux, ch)  # type: ignore[arg-type]
        if nxt is not None:
            return (stack, "N", nxt)
        if aux not in _NUM_FINAL:
            return None
        return step((stack, "A", None), ch)
    if mode == "L":
        rest = aux  # type: ignore[assignment]
        if ch != rest[0]:  # type: ignore[index]
            return None
        return (stack, "A", None) if len(rest) == 1 else (stack, "L", rest[1:])  # type: ignore[arg-type]
    if ch in _WS:
        return s
    if mode == "V":
        return _value_start(stack, ch)
    if mode == "Z":
        return (stack.parent, "A", None) if ch == "]" else _value_start(stack, ch)  # type: ignore[union-attr]
    if mode == "K":
        if ch == "}":
            return (stack.parent, "A", None)  # type: ignore[union-attr]
        return (stack, "S", (True, 0)) if ch == '"' else None
    if mode == "k":
        return (stack, "S", (True, 0)) if ch == '"' else None
    if mode == "C":
        return (stack, "V", None) if ch == ":" else None
    if mode == "A":
        if stack is None:
            return None
        top = stack.top
        if ch == ",":
            return (stack, "k", None) if top == "{" else (stack, "V", None)
        if (ch == "}" and top == "{") or (ch == "]" and top == "["):
            return (stack.parent, "A", None)
        return None
    return None


def scan(text: str) -> Optional[State]:
    """The state after all of ``text`` from :data:`START` (None if it is
    not a JSON prefix)."""
    s: Optional[State] = START
    for ch in text:
        s = step(s, ch)  # type: ignore[arg-type]
        if s is None:
            return None
    return s


def is_json(text: str) -> bool:
    """``text`` is exactly one JSON value (whitespace around it allowed)."""
    s = scan(text)
    return s is not None and is_complete(s)
