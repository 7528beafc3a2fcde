"""xgrammar 0.2.8: EBNF/JSON-Schema grammars, precomputed adaptive mask cache.

TokenizerInfo is built from the raw token bytes (VocabType.RAW: tiktoken
tokens are raw bytes, no byte-level remapping). The 256 special tokens are
given as empty strings, which is how xgrammar marks ids that are not text;
giving their names ("<|eot_id|>") would make xgrammar treat them as literal
text that, e.g., a JSON string may contain.
"""

import xgrammar as xgr

import llama3_vocab


class Engine:
    name = "xgrammar"

    def __init__(self, tokenizer_path):
        ranks = llama3_vocab.load_ranks(tokenizer_path)
        vocab = ranks + [b""] * llama3_vocab.N_SPECIAL
        self.info = xgr.TokenizerInfo(
            vocab,
            xgr.VocabType.RAW,
            vocab_size=len(vocab),
            stop_token_ids=llama3_vocab.STOP_IDS,
        )
        self.vocab_size = self.info.vocab_size
        # One thread like every other engine; no cache so each compile is real.
        self.compiler = xgr.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)

    def unsupported(self, workload):
        if workload["kind"] == "lark" and not hasattr(self.compiler, "compile_lark"):
            return "no Lark front-end in this xgrammar"
        return None

    def compile(self, workload):
        kind = workload["kind"]
        if kind == "generic_json":
            return self.compiler.compile_builtin_json_grammar()
        if kind == "structural":
            # The same structural-tag JSON formcast gets (xgrammar's format).
            return self.compiler.compile_structural_tag(workload["tag_text"])
        if kind == "schema":
            # any_whitespace=True (its default); strict_mode=False so that
            # additionalProperties defaults to true as in JSON Schema (and in
            # llguidance and formcast here): the same language everywhere.
            return self.compiler.compile_json_schema(workload["schema_text"], strict_mode=False)
        if kind == "lark":
            return self.compiler.compile_lark(workload["lark"])
        return self.compiler.compile_grammar(workload["gbnf"], root_rule_name="root")

    def new_matcher(self, compiled, previous=None):
        return xgr.GrammarMatcher(compiled)

    def grammar_bytes(self, compiled):
        # Its precomputed masks and the grammar (xgrammar's own count).
        return compiled.memory_size_bytes

    def new_bitmask(self):
        mask = xgr.allocate_token_bitmask(1, self.vocab_size)  # torch int32, CPU
        return mask, mask.numpy()[0]  # numpy view shares the memory

    def fill(self, matcher, mask):
        matcher.fill_next_token_bitmask(mask, 0)

    def accept(self, matcher, token_id):
        return matcher.accept_token(token_id)

    def error(self, matcher):
        return None
