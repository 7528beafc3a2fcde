"""formcast: the engine under test, run from the project's own venv."""

try:
    import formcast as fc
except ImportError as e:  # the Python API is still being built
    raise ImportError(
        f"formcast is not importable ({e}). Build it into the project venv first "
        "(e.g. `maturin develop --release` in /work/main with /work/main/.venv active), "
        "or pass --formcast-python."
    ) from e


class Engine:
    name = "formcast"

    def __init__(self, tokenizer_path):
        # Special-token names and stop ids default to Llama-3's.
        self.tok = fc.TokenizerInfo.from_tiktoken(tokenizer_path)
        self.vocab_size = self.tok.logits_size
        self.compiler = fc.GrammarCompiler(self.tok)

    def unsupported(self, workload):
        if workload["kind"] == "schema" and not hasattr(fc.Grammar, "from_json_schema"):
            return "no JSON Schema front-end yet (formcast.Grammar.from_json_schema)"
        return None

    def compile(self, workload):
        kind = workload["kind"]
        if kind == "generic_json":
            g = fc.Grammar.builtin_json()
        elif kind == "structural":
            return self.compiler.compile_structural_tag(workload["tag_text"])
        elif kind == "schema":
            # JSON Schema's own defaults (extra properties allowed unless
            # the schema says otherwise), like llguidance's.
            g = fc.Grammar.from_json_schema(workload["schema_text"], strict=False)
        elif kind == "lark":
            g = fc.Grammar.from_lark(workload["lark"], self.tok)
        else:
            g = fc.Grammar.from_ebnf(workload["gbnf"], root="root")
        return self.compiler.compile(g)

    def new_matcher(self, compiled, previous=None):
        return fc.GrammarMatcher(compiled)

    def grammar_bytes(self, compiled):
        # The automaton, the partitions and mask cache built so far.
        return compiled.memory_bytes

    def new_bitmask(self):
        mask = fc.allocate_token_bitmask(1, self.vocab_size)
        return mask, mask[0]

    def fill(self, matcher, mask):
        matcher.fill_next_token_bitmask(mask, 0)

    def accept(self, matcher, token_id):
        return matcher.accept_token(token_id)

    def error(self, matcher):
        return None
