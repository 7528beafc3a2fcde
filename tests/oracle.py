"""An independent reference recognizer for the property tests.

A plain Earley recognizer over bytes, written for clarity rather than speed,
sharing no code with the engine: grammars are given as BNF (alternatives of
symbol lists), so EBNF operators are expanded by the test's generator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# A symbol is ("t", frozenset_of_bytes) or ("n", rule_name); `shift` takes
# terminals of any content.
Symbol = tuple
Item = tuple  # (lhs, alt_index, dot, origin)

START = "<start>"


@dataclass
class Earley:
    rules: dict[str, list[list[Symbol]]]
    root: str
    chart: list[set] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rules = dict(self.rules)
        self.rules[START] = [[("n", self.root)]]
        self.nullable = self._nullable()
        self.chart = [self._close({(START, 0, 0, 0)}, 0)]

    def _nullable(self) -> set[str]:
        out: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, alts in self.rules.items():
                if name in out:
                    continue
                if any(all(s[0] == "n" and s[1] in out for s in alt) for alt in alts):
                    out.add(name)
                    changed = True
        return out

    def _close(self, items: set, pos: int) -> set:
        todo = list(items)
        done = set(items)
        while todo:
            lhs, alt, dot, origin = todo.pop()
            body = self.rules[lhs][alt]
            new = []
            if dot == len(body):
                # Complete: advance the items of the origin set waiting for lhs.
                source = done if origin == pos else self.chart[origin]
                for (l2, a2, d2, o2) in list(source):
                    b2 = self.rules[l2][a2]
                    if d2 < len(b2) and b2[d2] == ("n", lhs):
                        new.append((l2, a2, d2 + 1, o2))
            else:
                sym = body[dot]
                if sym[0] == "n":
                    for i in range(len(self.rules[sym[1]])):
                        new.append((sym[1], i, 0, pos))
                    if sym[1] in self.nullable:
                        new.append((lhs, alt, dot + 1, origin))
            for it in new:
                if it not in done:
                    done.add(it)
                    todo.append(it)
        return done

    def _step(self, items: set, byte: int, pos: int) -> set:
        return self._scan(items, lambda terminal: byte in terminal[1], pos)

    def _scan(self, items: set, takes, pos: int) -> set:
        scanned = set()
        for (lhs, alt, dot, origin) in items:
            body = self.rules[lhs][alt]
            if dot < len(body) and body[dot][0] == "t" and takes(body[dot]):
                scanned.add((lhs, alt, dot + 1, origin))
        return self._close(scanned, pos) if scanned else set()

    def next_terminals(self) -> set:
        """The terminals some item of the last chart set expects next."""
        out = set()
        for (lhs, alt, dot, _) in self.chart[-1]:
            body = self.rules[lhs][alt]
            if dot < len(body) and body[dot][0] == "t":
                out.add(body[dot])
        return out

    def shift(self, terminals: set) -> bool:
        """Moves past one of `terminals` (whole symbols, not bytes: a caller
        may read its own tokens, lexemes say, instead of bytes); False (and
        no change) when no item expects one."""
        nxt = self._scan(self.chart[-1], lambda terminal: terminal in terminals, len(self.chart))
        if nxt:
            self.chart.append(nxt)
        return bool(nxt)

    def feed(self, data: bytes) -> bool:
        """Consumes bytes; False (and no change) when they are not viable."""
        added = 0
        for b in data:
            nxt = self._step(self.chart[-1], b, len(self.chart))
            if not nxt:
                del self.chart[len(self.chart) - added :]
                return False
            self.chart.append(nxt)
            added += 1
        return True

    def viable(self, data: bytes) -> bool:
        """Whether the input so far followed by ``data`` is a prefix of a sentence."""
        n = len(self.chart)
        ok = self.feed(data)
        del self.chart[n:]
        return ok

    def can_end(self) -> bool:
        return (START, 0, 1, 0) in self.chart[-1]
