"""Writes corpus.jsonl: malformed model outputs with the reading each one has.

    python tests/data/repair/make_corpus.py          # rewrite corpus.jsonl
    python tests/data/repair/make_corpus.py --check  # exit 1 if the file is stale

Two parts, both written for formcast (no case is taken from another project):

* ``HAND``: cases written by hand, one per line below, for the shapes of issue #24
  (a string's missing closing quote before ``, "key":``, text after a value that
  continues it, fences and regexes inside strings, several values, duplicate
  keys) and the usual slips.
* generated: twelve base documents, each damaged by every fault of ``FAULTS``
  with a fixed seed (deterministic: same file on every run).

Each line: ``id``, ``shape``, ``source`` ("hand" | "generated"), ``input``,
``ambiguous`` and either ``expected`` (the one reading) or, when ambiguous,
``readings`` (the acceptable readings: a repairer must flag its pick as a guess,
or fail). A truncated input's reading is the cut-off prefix, open containers
closed: what the text says, no more.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("corpus.jsonl")
SEED = 24

# (shape, input, expected) — or (shape, input, None, [readings]) when ambiguous.
HAND: list[tuple] = [
    # A string's closing quote missing before ', "key":' (the structural reading is the likely one).
    ("missing_quote", '{"name": "John", "age": 30, "city": "New York, "gender": "male"}', None, [{"name": "John", "age": 30, "city": "New York", "gender": "male"}]),
    ("missing_quote", "{'name': 'Ann', 'city': 'Paris, 'zip': '75001'}", None, [{"name": "Ann", "city": "Paris", "zip": "75001"}]),
    ("missing_quote", '[{"id": 1, "tag": "red, "n": 2}, {"id": 2, "tag": "blue", "n": 3}]', None, [[{"id": 1, "tag": "red", "n": 2}, {"id": 2, "tag": "blue", "n": 3}]]),
    ("missing_quote", '{"items": ["apple, "banana", "cherry"]}', None, [{"items": ["apple", "banana", "cherry"]}]),
    ("missing_quote", '{"a": {"b": "x}, "c": 1}', None, [{"a": {"b": "x"}, "c": 1}]),
    ("missing_quote", '{"title": "Dune, "author": "Frank Herbert", "year": 1965}', None, [{"title": "Dune", "author": "Frank Herbert", "year": 1965}]),
    ("missing_quote", '{"q": "What is 2+2?, "a": "4"}', None, [{"q": "What is 2+2?", "a": "4"}]),
    ("missing_quote", '{"tags": ["x", "y], "count": 2}', None, [{"tags": ["x", "y"], "count": 2}]),
    ("missing_quote", '{"name: "Bob", "age": 41}', None, [{"name": "Bob", "age": 41}]),
    ("missing_quote", '{"city": "Rome, "country": "Italy"}\n', None, [{"city": "Rome", "country": "Italy"}]),
    # Text after a complete value that continues it.
    ("continuation", '{"key": "value"}, "key2": "value2"}', None, [{"key": "value", "key2": "value2"}]),
    ("continuation", '{"a": 1}, "b": 2, "c": 3}', None, [{"a": 1, "b": 2, "c": 3}]),
    ("continuation", "[1, 2], 3, 4]", None, [[1, 2, 3, 4]]),
    ("continuation", '{"user": {"name": "A"}}, "id": 7}', None, [{"user": {"name": "A"}, "id": 7}, {"user": {"name": "A", "id": 7}}]),
    ("continuation", '[{"id": 1}], {"id": 2}]', None, [[{"id": 1}, {"id": 2}]]),
    ("continuation", '{"a": 1} "b": 2}', None, [{"a": 1, "b": 2}]),
    ("continuation", '{"a": 1}\n, "b": 2}', None, [{"a": 1, "b": 2}]),
    ("continuation", '{"a": [1, 2]}, "b": [3]}', None, [{"a": [1, 2], "b": [3]}]),
    # Fences, brackets and JSON inside strings are content.
    ("string_holds_fence", '{"a": "\n```{}```\n"\n",\n b: "x",\n}', None, [{"a": '\n```{}```\n"\n', "b": "x"}]),
    ("string_holds_fence", '{"doc": "Use ```json\\n{\\"k\\": 1}\\n``` to format", "ok": true,}', {"doc": 'Use ```json\n{"k": 1}\n``` to format', "ok": True}),
    ("string_holds_fence", "Here:\n{\"snippet\": \"```python\\nprint('hi')\\n```\", \"lang\": \"py\"", {"snippet": "```python\nprint('hi')\n```", "lang": "py"}),
    ("string_holds_fence", '{"md": "```\\n[1, 2]\\n```"} Done.', {"md": "```\n[1, 2]\n```"}),
    ("string_holds_fence", '```json\n{"readme": "Run:\\n```bash\\nmake\\n```", "v": 2,}\n```', {"readme": "Run:\n```bash\nmake\n```", "v": 2}),
    ("string_holds_json", '{"json": "{\\"k\\": [1, 2]}", "n": 1,}', {"json": '{"k": [1, 2]}', "n": 1}),
    ("string_holds_json", '{"code": "if (x) { return [1, 2]; }", "lang": "js",}', {"code": "if (x) { return [1, 2]; }", "lang": "js"}),
    ("string_holds_json", '{"s": "a], [b", "t": 1,}', {"s": "a], [b", "t": 1}),
    ("string_holds_json", 'Result: {"template": "Hello {name}, you have [n] items", "n": 3}', {"template": "Hello {name}, you have [n] items", "n": 3}),
    ("string_holds_json", '{"url": "https://x.com/a?b=1&c=[2]", "ok": true,}', {"url": "https://x.com/a?b=1&c=[2]", "ok": True}),
    # Regexes with quotes and backslashes.
    ("regex", '["^\\s*path\\(\\s*[\'"]", "x"]', None, [["^\\s*path\\(\\s*['\"]", "x"]]),
    ("regex", '{"patterns": ["^\\s*path\\(\\s*[\'"]", "^\\s*url\\("], "n": 2}', None, [{"patterns": ["^\\s*path\\(\\s*['\"]", "^\\s*url\\("], "n": 2}]),
    ("regex", '{"pattern": "^\\d{3}-\\d{4}$", "flags": "i"}', {"pattern": "^\\d{3}-\\d{4}$", "flags": "i"}),
    ("regex", '{"re": "[\\"\']+", "n": 1,}', {"re": "[\"']+", "n": 1}),
    ("regex", "{'pattern': '^\\\\s*path\\\\(\\\\s*[\\'\"]', 'n': 1}", {"pattern": "^\\s*path\\(\\s*['\"]", "n": 1}),
    ("regex", '{"sql": "SELECT * FROM t WHERE name = "O\'Brien"", "ok": true}', None, [{"sql": "SELECT * FROM t WHERE name = \"O'Brien\"", "ok": True}]),
    ("regex", '{"glob": "*.{js,ts}", "dirs": ["src/**", "test/**",]}', {"glob": "*.{js,ts}", "dirs": ["src/**", "test/**"]}),
    # Several values: which one is the answer is a choice.
    ("multiple_values", '{"a": 1} {"b": 2}', None, [{"a": 1}, {"b": 2}]),
    ("multiple_values", '{"answer": "yes"}\n{"answer": "no"}', None, [{"answer": "yes"}, {"answer": "no"}]),
    ("multiple_values", 'Option A: {"x": 1}\nOption B: {"x": 2}', None, [{"x": 1}, {"x": 2}]),
    ("multiple_values", "[1, 2]\n[3, 4]", None, [[1, 2], [3, 4]]),
    ("multiple_values", 'Example: {"sentiment": "<label>"}\nAnswer: {"sentiment": "negative"}', None, [{"sentiment": "<label>"}, {"sentiment": "negative"}]),
    ("multiple_values", '{"a": 1}{"a": 2}', None, [{"a": 1}, {"a": 2}]),
    ("multiple_values", '```json\n{"a": 1}\n```\nOr, shorter:\n```json\n{"a": 2}\n```', None, [{"a": 1}, {"a": 2}]),
    # Duplicate keys: which value was meant is a choice.
    ("duplicate_key", '[{"key": "first", "key": "second"}]', None, [[{"key": "second"}], [{"key": "first"}]]),
    ("duplicate_key", '{"a": 1, "b": 2, "a": 3}', None, [{"a": 3, "b": 2}, {"a": 1, "b": 2}]),
    ("duplicate_key", '{"user": {"id": 1, "id": 2}, "ok": true,}', None, [{"user": {"id": 2}, "ok": True}, {"user": {"id": 1}, "ok": True}]),
    ("duplicate_key", "{'x': 1, 'x': 1}", {"x": 1}),
    # Wrappers.
    ("fence", '```json\n{"a": 1}\n```', {"a": 1}),
    ("fence", "Sure! Here's the data:\n\n```json\n{\"items\": [1, 2, 3]}\n```\n\nLet me know!", {"items": [1, 2, 3]}),
    ("fence", '```JSON\n[{"n": 1}]\n```', [{"n": 1}]),
    ("fence", '~~~json\n{"a": true}\n~~~', {"a": True}),
    ("prose", 'The result is {"ok": true}.', {"ok": True}),
    ("prose", '<json>{"a": 1}</json>', {"a": 1}),
    ("prose", 'json\n{"a": 1}', {"a": 1}),
    ("prose", 'I looked at the {data} you sent. Here: {"count": 2}', {"count": 2}),
    # The usual slips.
    ("unquoted_keys", "{name: 'Alice', age: 30, active: True, spouse: None}", {"name": "Alice", "age": 30, "active": True, "spouse": None}),
    ("comment", '{"a": 1, // the first\n "b": 2}', {"a": 1, "b": 2}),
    ("comment", '{"a": 1, /* block */ "b": 2}', {"a": 1, "b": 2}),
    ("trailing_comma", '{"list": [1, 2, 3,],}', {"list": [1, 2, 3]}),
    ("missing_comma", '{"a": 1\n"b": 2\n"c": 3}', {"a": 1, "b": 2, "c": 3}),
    ("raw_newline", '{"text": "line1\nline2"}', {"text": "line1\nline2"}),
    ("unescaped_quote", '{"quote": "She said "hi" twice"}', {"quote": 'She said "hi" twice'}),
    ("single_quotes", "{'msg': \"It's fine\", 'n': 1}", {"msg": "It's fine", "n": 1}),
    ("python_literal", '{"a": True, "b": False, "c": None}', {"a": True, "b": False, "c": None}),
    ("js_literal", '{"a": undefined, "b": NaN}', {"a": None, "b": None}),
    ("smart_quotes", "{\u201ca\u201d: \u201cb\u201d}", {"a": "b"}),
    ("doubled_comma", '{"a": [1, 2,, 3]}', {"a": [1, 2, 3]}),
    ("invalid_escape", '{"path": "C:\\Users\\me"}', {"path": "C:\\Users\\me"}),
    ("mismatched_bracket", '[{"a": 1]', [{"a": 1}]),
    ("mismatched_bracket", '{"a": [1, 2, 3}', {"a": [1, 2, 3]}),
    ("unescaped_quote", '{"answer": "The capital is "Paris"."}', {"answer": 'The capital is "Paris".'}),
    ("missing_quote", '{"text": "a "quoted" word, "n": 1}', None, [{"text": 'a "quoted" word', "n": 1}]),
    ("single_quotes", "{'a': 'x', 'b': 'it's'}", {"a": "x", "b": "it's"}),
    ("stray_punctuation", '{"a": 1 ; "b": 2}', {"a": 1, "b": 2}),
    ("missing_comma", '{"a": "x" "b": "y"}', {"a": "x", "b": "y"}),
    ("extra_closer", '{"a": [1, 2]}}', {"a": [1, 2]}),
    # Cut off: the prefix, closed; a cut inside a token is a choice.
    ("truncated", '{"a": 1, "b": {"c": true,', {"a": 1, "b": {"c": True}}),
    ("truncated", '{"a": [1, 2, 3', None, [{"a": [1, 2, 3]}, {"a": [1, 2]}]),
    ("truncated", '{"a": "hel', None, [{"a": "hel"}, {}]),
    ("truncated", '[{"id": 1}, {"id": 2}, {"id"', None, [[{"id": 1}, {"id": 2}, {}], [{"id": 1}, {"id": 2}]]),
    ("truncated", '```json\n{"rows": [[1, 2], [3', None, [{"rows": [[1, 2], [3]]}, {"rows": [[1, 2], []]}]),
]


# -- generated ---------------------------------------------------------------------------

BASES: list[Any] = [
    {"sentiment": "positive", "confidence": 0.93, "reasons": ["fast shipping", "works as described"]},
    {"name": "Zoë Martin", "email": "zoe@example.com", "age": 34, "verified": True, "manager": None},
    [{"sku": "A-100", "price": 19.99, "tags": ["new", "sale"]}, {"sku": "B-7", "price": 5, "tags": []}],
    {"tool": "search", "arguments": {"query": "hotels in Paris, France", "max_results": 5}},
    {"title": "It's complicated", "summary": "A story about trust, time and a dog named Rex.", "rating": 4},
    {"steps": ["Open the file", "Run `make`", "Check {output}"], "done": False},
    {"city": "São Paulo", "population": 12325232, "coords": [-23.55, -46.63], "capital": False},
    {"matrix": [[1, 2], [3, 4]], "label": "identity-ish", "meta": {"rows": 2, "cols": 2}},
    {"answer": "42", "explanation": "Six times seven (6 * 7) is 42.", "sources": []},
    {"user": {"id": 7, "roles": ["admin", "dev"]}, "active": True, "note": "path C:/tmp"},
    {"q": "What is JSON?", "a": "A text format: {\"k\": [1, 2]}.", "tags": ["format", "web"]},
    {"items": [{"id": 1, "ok": True}, {"id": 2, "ok": False}, {"id": 3, "ok": None}], "total": 3},
]


class Writer:
    """Serializes a value with chosen slips (every slip keeps the value's one reading)."""

    def __init__(self, rnd: random.Random, **slips: bool) -> None:
        self.r = rnd
        self.s = slips

    def string(self, v: str, key: bool = False) -> str:
        if key and self.s.get("unquoted_keys") and v.replace("_", "a").isalnum() and not v[0].isdigit():
            return v
        if self.s.get("single_quotes"):
            return "'" + json.dumps(v, ensure_ascii=False)[1:-1].replace('\\"', '"').replace("'", "\\'") + "'"
        if self.s.get("smart_quotes") and "\u201c" not in v and "\u201d" not in v and '"' not in v:
            return "\u201c" + json.dumps(v, ensure_ascii=False)[1:-1] + "\u201d"
        text = json.dumps(v, ensure_ascii=False)
        if self.s.get("raw_newlines"):
            text = text.replace("\\n", "\n")
        return text

    def dump(self, v: Any, level: int = 0) -> str:
        ind = "\n" + "  " * (level + 1)
        end = "\n" + "  " * level
        if v is None or isinstance(v, bool):
            if self.s.get("python_literals"):
                return {None: "None", True: "True", False: "False"}[v]
            return json.dumps(v)
        if isinstance(v, (int, float)):
            return json.dumps(v)
        if isinstance(v, str):
            return self.string(v)
        items = [self.dump(x, level + 1) for x in v] if isinstance(v, list) else [self.string(k, True) + ": " + self.dump(x, level + 1) for k, x in v.items()]
        open_, close = ("[", "]") if isinstance(v, list) else ("{", "}")
        if not items:
            return open_ + close
        sep = "," if not self.s.get("missing_commas") else ""
        if self.s.get("comments"):
            items = [it + sep + "  // note " + str(i) if i < len(items) - 1 else it for i, it in enumerate(items)]
            body = ind + ind.join(items)
        else:
            body = ind + (sep + ind).join(items)
        if self.s.get("trailing_commas"):
            body += ","
        return open_ + body + end + close


def _strict_prefix(value: Any) -> list[tuple[str, Any]]:
    """(text, reading) for cuts of ``json.dumps(value)`` between tokens: after each
    comma and after each opener. The reading is the prefix with the dangling comma
    dropped and the open containers closed."""
    text = json.dumps(value, ensure_ascii=False)
    cuts = []
    stack: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c in "[{":
            stack.append("]" if c == "[" else "}")
            cuts.append((text[: i + 1], text[: i + 1] + "".join(reversed(stack))))
        elif c in "]}":
            stack.pop()
        elif c == ",":
            cuts.append((text[: i + 1], text[:i] + "".join(reversed(stack))))
        i += 1
    return [(cut, json.loads(closed)) for cut, closed in cuts if len(cut) > 1]


def generated(rnd: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(shape: str, text: str, expected: Any = None, readings: list[Any] | None = None) -> None:
        out.append({"shape": shape, "source": "generated", "input": text, "ambiguous": readings is not None, **({"readings": readings} if readings is not None else {"expected": expected})})

    for b, v in enumerate(BASES):
        w = lambda **s: Writer(rnd, **s)  # noqa: E731
        plain = json.dumps(v, ensure_ascii=False)
        add("fence", "```json\n" + json.dumps(v, indent=2, ensure_ascii=False) + "\n```", v)
        add("prose", "Here is the JSON you asked for:\n" + plain + "\nLet me know if you need any changes.", v)
        add("trailing_comma", w(trailing_commas=True).dump(v), v)
        add("single_quotes", w(single_quotes=True).dump(v), v)
        add("python_repr", repr(v), v)
        add("unquoted_keys", w(unquoted_keys=True).dump(v), v)
        add("comment", w(comments=True).dump(v), v)
        add("missing_comma", w(missing_commas=True).dump(v), v)
        add("python_literal", w(python_literals=True).dump(v), v)
        add("kitchen_sink", "Sure!\n```json\n" + w(single_quotes=True, trailing_commas=True, python_literals=True, comments=True).dump(v) + "\n```\nDone.", v)
        if any("\u201c" not in s for s in _strings(v)):
            add("smart_quotes", w(smart_quotes=True).dump(v), v)
        # Cut off between tokens: the prefix is the reading.
        cuts = _strict_prefix(v)
        for cut, reading in rnd.sample(cuts, min(3, len(cuts))):
            add("truncated", cut, reading)
        # Choices: each must be flagged.
        if isinstance(v, dict) and len(v) >= 2:
            keys = list(v)
            # The closing quote of a string value missing before the next key.
            for k in keys[:-1]:
                if isinstance(v[k], str) and v[k]:
                    text = plain.replace(json.dumps(v[k], ensure_ascii=False) + ", " + json.dumps(keys[keys.index(k) + 1], ensure_ascii=False), json.dumps(v[k], ensure_ascii=False)[:-1] + ", " + json.dumps(keys[keys.index(k) + 1], ensure_ascii=False), 1)
                    if text != plain:
                        add("missing_quote", text, readings=[v])
                        break
            # The first member closed early: the rest continues it.
            first = json.dumps({keys[0]: v[keys[0]]}, ensure_ascii=False)
            rest = plain[len(first) - 1 :]  # ', "k2": ...}'
            add("continuation", first + rest, readings=[v])
            # A key repeated with another value.
            dup = plain[:-1] + ", " + json.dumps(keys[0], ensure_ascii=False) + ": " + json.dumps(f"dup-{b}") + "}"
            last = dict(v)
            last[keys[0]] = f"dup-{b}"
            add("duplicate_key", dup, readings=[last, v])
        # Two values in one reply.
        other = BASES[(b + 1) % len(BASES)]
        add("multiple_values", plain + "\n\n" + json.dumps(other, ensure_ascii=False), readings=[v, other])
        # Cut inside a string value: close it, or drop the member.
        s_at = plain.find('": "')
        if s_at > 0:
            cut = plain[: s_at + 7]
            try:
                import_reading = _closed(cut)
            except ValueError:
                import_reading = None
            if import_reading is not None:
                add("truncated_in_string", cut, readings=import_reading)
    return out


def _strings(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x)]
    if isinstance(v, dict):
        return [s for k, x in v.items() for s in [k, *_strings(x)]]
    return []


def _closed(cut: str) -> list[Any]:
    """Readings of a text cut inside a string value: the string closed, or its member dropped."""
    stack = []
    in_str = False
    i = 0
    member_start = None
    while i < len(cut):
        c = cut[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            stack.append("]" if c == "[" else "}")
            member_start = i + 1
        elif c in "]}":
            stack.pop()
        elif c == ",":
            member_start = i + 1
        i += 1
    if not in_str or member_start is None:
        raise ValueError("not inside a string")
    closers = "".join(reversed(stack))
    with_str = json.loads(cut + '"' + closers)
    head = cut[:member_start].rstrip()
    without = json.loads((head[:-1] if head.endswith(",") else head) + closers)
    return [with_str, without]


def build() -> list[dict[str, Any]]:
    rnd = random.Random(SEED)
    cases = []
    for entry in HAND:
        shape, text, expected = entry[:3]
        readings = entry[3] if len(entry) > 3 else None
        cases.append({"shape": shape, "source": "hand", "input": text, "ambiguous": readings is not None, **({"readings": readings} if readings is not None else {"expected": expected})})
    cases += generated(rnd)
    for i, c in enumerate(cases):
        c["id"] = i
    return [{"id": c.pop("id"), **c} for c in cases]


def render(cases: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases)


def main(argv: list[str]) -> int:
    text = render(build())
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run python {Path(__file__).relative_to(Path.cwd()) if Path.cwd() in Path(__file__).parents else __file__}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({text.count(chr(10))} cases)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
