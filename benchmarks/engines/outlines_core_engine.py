"""outlines-core 0.2.14: regex -> DFA -> full token index.

Regex only: JSON Schemas go through its own build_regex_from_schema (recursion
unrolled to its default depth); EBNF workloads need an equivalent regex and
are n/a when the language is not regular. Vocabulary takes text -> ids for
the 128,000 text tokens; special tokens are not text so they are left out,
and its single EOS id is <|eot_id|>.
"""

import numpy as np
from outlines_core import Guide, Index, Vocabulary
from outlines_core.json_schema import build_regex_from_schema

import llama3_vocab


class Engine:
    name = "outlines_core"

    def __init__(self, tokenizer_path):
        ranks = llama3_vocab.load_ranks(tokenizer_path)
        by_bytes = {}
        for token_id, token in enumerate(ranks):
            by_bytes.setdefault(token, []).append(token_id)
        self.vocab = Vocabulary(llama3_vocab.EOT_ID, by_bytes)
        self.vocab_size = len(ranks) + llama3_vocab.N_SPECIAL

    def unsupported(self, workload):
        if workload["kind"] in ("ebnf", "lark") and not workload.get("regex"):
            return "not a regular language (regex-only engine)"
        return None

    def compile(self, workload):
        kind = workload["kind"]
        if kind == "generic_json":
            regex = build_regex_from_schema("{}")
        elif kind == "schema":
            regex = build_regex_from_schema(workload["schema_text"])
        else:
            regex = workload["regex"]
        return Index(regex, self.vocab)

    def new_matcher(self, compiled, previous=None):
        return Guide(compiled)

    def new_bitmask(self):
        mask = np.zeros((1, (self.vocab_size + 31) // 32), dtype=np.int32)
        return mask, mask[0]

    def fill(self, matcher, mask):
        # What outlines_core.kernels.numpy.fill_next_token_bitmask does after
        # its argument checks (that module needs numba, which we skip).
        matcher.write_mask_into(mask.ctypes.data, mask.size, mask.itemsize)

    def accept(self, matcher, token_id):
        try:
            matcher.advance(token_id, return_tokens=False)
            return True
        except ValueError:
            return False

    def error(self, matcher):
        return None
