"""formcast: structured output for language models.

The engine (grammars, tokenizers, token masks) is a Rust extension; this
package is its typed Python face::

    import formcast as fc

    tok = fc.TokenizerInfo.from_huggingface("tokenizer.json")
    compiled = fc.GrammarCompiler(tok).compile(fc.Grammar.builtin_json())
    matcher = fc.GrammarMatcher(compiled)
    bitmask = fc.allocate_token_bitmask(1, tok.logits_size)
    matcher.fill_next_token_bitmask(bitmask)
"""

from ._engine import (
    CancelledError,
    CompileTimeoutError,
    FormcastError,
    GrammarError,
    GrammarMatcher,
    LimitError,
    StructuralTagError,
    TokenizerError,
    __version__,
)
from .bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    bitmask_to_bool,
    fill_next_token_bitmask_batch,
)
from .compiler import CancelToken, CompiledGrammar, GrammarCompiler
from .grammar import Grammar
from .tokenizer import TokenizerInfo


def __getattr__(name: str):
    # Subpackages that do not need the engine load on first use.
    if name in ("repair", "structural_tag"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'formcast' has no attribute {name!r}")


__all__ = [
    "__version__",
    "repair",
    "structural_tag",
    "TokenizerInfo",
    "Grammar",
    "GrammarCompiler",
    "CompiledGrammar",
    "CancelToken",
    "GrammarMatcher",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_to_bool",
    "fill_next_token_bitmask_batch",
    "FormcastError",
    "GrammarError",
    "StructuralTagError",
    "TokenizerError",
    "LimitError",
    "CompileTimeoutError",
    "CancelledError",
]
