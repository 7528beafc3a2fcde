"""Writes tests/data/lark_llguidance_answers.json: seeded random Lark
grammars (string and regex terminals, groups, alternatives, repetition,
%ignore, lazy rules) with random texts, and whether llguidance accepts each
text. Run it with the peers' interpreter, which has llguidance:

    .bench-venv/bin/python scripts/lark_peer_answers.py

tests/test_lark_lexer.py checks formcast against the answers.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import llama3_vocab  # noqa: E402
import llguidance  # noqa: E402
from llguidance.tiktoken import lltokenizer_from_encoding  # noqa: E402

TERMINALS = ['/a+/', '/[ab]*b/', '/ab?/', '"a"', '"ab"', '"b"', '/b+a/', '/(ab)+/', '"aa"', '/a*b/', '"ba"']
LAZY = ['/[ab]*b/', '/a+/', '/(ab)+/', '/.*a/']


def grammar(rng: random.Random) -> str:
    n = rng.randint(1, 3)

    def expr(depth: int) -> str:
        k = rng.random()
        if depth > 2 or k < 0.35:
            if rng.random() < 0.25 and n > 1:
                return f"r{rng.randrange(1, n)}"
            return rng.choice(TERMINALS)
        if k < 0.6:
            return "(" + " ".join(expr(depth + 1) for _ in range(rng.randint(2, 3))) + ")"
        if k < 0.8:
            return "(" + " | ".join(expr(depth + 1) for _ in range(rng.randint(2, 3))) + ")"
        return "(" + expr(depth + 1) + ")" + rng.choice(["?", "*", "+"])

    lines = ["start: r0"] + [f"r{i}: {expr(0)}" for i in range(n)]
    if rng.random() < 0.3:
        lines.append('%ignore " "')
    if rng.random() < 0.3:
        lines.append(f"z[lazy]: {rng.choice(LAZY)}")
        lines[1] += " | z"
    return "\n".join(lines)


def main() -> None:
    enc = llama3_vocab.tiktoken_encoding()
    tok = lltokenizer_from_encoding(enc, eos_token=llama3_vocab.STOP_IDS)
    rng = random.Random(11)
    out = []
    for _ in range(400):
        text = grammar(rng)
        alphabet = "ab" + (" " if "%ignore" in text else "")
        texts = []
        for _ in range(8):
            s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
            m = llguidance.LLMatcher(tok, llguidance.LLMatcher.grammar_from_lark(text), log_level=0)
            if m.is_error():
                raise SystemExit(f"llguidance refused {text!r}: {m.get_error()}")
            ok = m.consume_tokens(enc.encode(s, allowed_special=set())) and not m.is_error() and m.is_accepting()
            texts.append([s, bool(ok)])
        out.append({"lark": text, "texts": texts})
    about = (f"Written by scripts/lark_peer_answers.py with llguidance {llguidance.__version__}: "
             "whether its LLMatcher (over Llama-3 tokens) accepts each text.")
    path = ROOT / "tests" / "data" / "lark_llguidance_answers.json"
    path.write_text(json.dumps({"about": about, "grammars": out}, indent=0) + "\n", encoding="utf-8")
    print(f"{len(out)} grammars, {sum(len(g['texts']) for g in out)} texts -> {path}")


if __name__ == "__main__":
    main()
