"""llguidance 1.9.1: Lark/JSON-Schema grammars, lazy lexer + Earley + trie walk.

Used as its docs intend: LLTokenizer built from the tiktoken Encoding
(llguidance.tiktoken), one LLMatcher per grammar, masks via the numpy helper.
"""

import json

import llguidance
import llguidance.numpy as llnp
from llguidance.tiktoken import lltokenizer_from_encoding

import llama3_vocab


class Engine:
    name = "llguidance"

    def __init__(self, tokenizer_path):
        enc = llama3_vocab.tiktoken_encoding(tokenizer_path)
        # Default slices (the slicer is part of llguidance's normal set-up).
        self.tok = lltokenizer_from_encoding(enc, eos_token=llama3_vocab.STOP_IDS)
        self.vocab_size = self.tok.vocab_size

    def unsupported(self, workload):
        if workload["kind"] == "structural" and not workload.get("lark"):
            return "no faithful Lark equivalent of this structural tag"
        return None

    def compile(self, workload):
        kind = workload["kind"]
        if kind == "generic_json":
            grammar = llguidance.LLMatcher.grammar_from_lark("start: %json {}")
        elif kind == "schema":
            grammar = llguidance.LLMatcher.grammar_from_json_schema(workload["schema_text"])
        else:
            grammar = llguidance.LLMatcher.grammar_from_lark(workload["lark"])
        # LLMatcher never raises on bad grammars; it enters an error state.
        m = llguidance.LLMatcher(self.tok, grammar, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        # llguidance has no separate "compiled grammar" object: a pristine
        # matcher plays that role and decoding states are copies of it.
        return m

    def new_matcher(self, compiled, previous=None):
        # Warm passes restart the previous matcher: reset() keeps the lexer
        # DFA states built lazily during the cold pass, which is how a server
        # reuses llguidance state; a deep_copy of the pristine matcher would
        # start from an empty lexer cache again.
        if previous is not None and previous.reset():
            return previous
        return compiled.deep_copy()

    def new_bitmask(self):
        mask = llnp.allocate_token_bitmask(1, self.vocab_size)
        return mask, mask[0]

    def fill(self, matcher, mask):
        llnp.fill_next_token_bitmask(matcher, mask, 0)

    def accept(self, matcher, token_id):
        return matcher.consume_token(token_id)

    def error(self, matcher):
        return matcher.get_error() or None
