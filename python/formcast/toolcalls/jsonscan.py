"""A character-at-a-time JSON recognizer: where does a JSON value end?

States are small immutable tuples so parser threads can share and compare
them. It checks syntax only (RFC 8259, any whitespace); the schema was the
constraint's job.
"""

from __future__ import annotations

from typing import Optional

# (stack of open containers, mode, detail)
State = tuple[str, str, object]

START: State = ("", "V", None)
_WS = " \t\n\r"
_NUM_FINAL = {"0", "I", "F", "X"}
_ESCAPES = '"\\/bfnrt'
_HEX = "0123456789abcdefABCDEF"


def is_complete(s: State) -> bool:
    """A whole value has been read (trailing whitespace allowed after it)."""
    stack, mode, aux = s
    return stack == "" and (mode == "A" or (mode == "N" and aux in _NUM_FINAL))


def _value_start(stack: str, ch: str) -> Optional[State]:
    if ch == "{":
        return (stack + "{", "K", None)
    if ch == "[":
        return (stack + "[", "Z", None)
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
        return (stack[:-1], "A", None) if ch == "]" else _value_start(stack, ch)
    if mode == "K":
        if ch == "}":
            return (stack[:-1], "A", None)
        return (stack, "S", (True, 0)) if ch == '"' else None
    if mode == "k":
        return (stack, "S", (True, 0)) if ch == '"' else None
    if mode == "C":
        return (stack, "V", None) if ch == ":" else None
    if mode == "A":
        if not stack:
            return None
        top = stack[-1]
        if ch == ",":
            return (stack, "k", None) if top == "{" else (stack, "V", None)
        if (ch == "}" and top == "{") or (ch == "]" and top == "["):
            return (stack[:-1], "A", None)
        return None
    return None
