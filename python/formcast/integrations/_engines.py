"""What the serving-engine integrations (SGLang, vLLM) share.

Both engines hand their backend a Hugging Face tokenizer object, the model's
logits width and its EOS ids, and ask for grammars by request kind with the
grammar as text. :class:`RequestCompiler` turns those into formcast
:class:`~formcast.CompiledGrammar` objects through one cached
:class:`~formcast.GrammarCompiler` with a time budget, so both backends
refuse, cache and bound compilation the same way.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Optional, Sequence

from .. import CompiledGrammar, GrammarCompiler, TokenizerError, TokenizerInfo

__all__ = ["RequestCompiler", "tokenizer_info_from_hf", "compile_timeout_s"]

#: SGLang's and vLLM's name for "any JSON value" (``response_format: json_object``).
ANY_JSON = "$$ANY$$"

_DEFAULT_TIMEOUT_S = 10.0


def compile_timeout_s() -> float:
    """The compile time budget, seconds: ``FORMCAST_COMPILE_TIMEOUT_S`` or 10.

    A grammar that takes longer fails its request alone (the engines compile
    on worker threads and would otherwise stall the request queue)."""
    raw = os.environ.get("FORMCAST_COMPILE_TIMEOUT_S")
    if raw is None:
        return _DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"FORMCAST_COMPILE_TIMEOUT_S must be a number of seconds, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"FORMCAST_COMPILE_TIMEOUT_S must be positive, got {raw!r}")
    return value


def tokenizer_info_from_hf(
    tokenizer: Any,
    *,
    logits_size: Optional[int],
    stop_token_ids: Optional[Iterable[int]] = None,
) -> TokenizerInfo:
    """A formcast vocabulary from an engine's Hugging Face tokenizer object.

    ``tokenizer`` must be a fast tokenizer (``backend_tokenizer`` is a
    ``tokenizers.Tokenizer``), which is what both engines load by default.
    ``stop_token_ids`` are the model's EOS ids (the tokenizer's own EOS when
    not given); ``logits_size`` is the model's logits width, which may exceed
    the vocabulary (the extra ids are always masked).
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not hasattr(backend, "to_str"):
        if hasattr(tokenizer, "to_str"):  # already a tokenizers.Tokenizer
            backend = tokenizer
        else:
            raise TokenizerError(
                f"formcast needs a fast Hugging Face tokenizer (one with a tokenizers backend); got {type(tokenizer).__name__}"
            )
    stops: Optional[list[int]] = sorted({int(t) for t in stop_token_ids}) if stop_token_ids else None
    if stops is None:
        eos = getattr(tokenizer, "eos_token_id", None)
        stops = [int(eos)] if eos is not None else None
    return TokenizerInfo.from_huggingface(backend, stop_token_ids=stops, logits_size=logits_size)


_GBNF_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal. Not ``json.dumps``: its ``\\b`` and
    ``\\f`` are no GBNF escapes, and it writes characters outside the BMP as
    surrogate pairs, which GBNF rejects. Other characters stay literal."""
    out = []
    for ch in text:
        esc = _GBNF_ESCAPES.get(ch)
        if esc is None and (ord(ch) < 0x20 or ord(ch) == 0x7F):
            esc = f"\\x{ord(ch):02x}"
        out.append(esc if esc is not None else ch)
    return '"' + "".join(out) + '"'


class RequestCompiler:
    """Compiles requests' grammars, by kind, for one vocabulary.

    Every method takes the grammar as the engine passes it (text) and returns
    a :class:`~formcast.CompiledGrammar`, or raises a
    :class:`~formcast.FormcastError` naming what is wrong; the compiler's
    cache makes a repeated grammar free, and ``timeout_s`` bounds a new one.
    JSON Schemas are compiled exactly (a keyword formcast cannot honour is an
    error, never dropped).
    """

    def __init__(
        self,
        info: TokenizerInfo,
        *,
        timeout_s: Optional[float] = None,
        any_whitespace: bool = True,
        max_whitespace: Optional[int] = None,
    ) -> None:
        self.info = info
        self.compiler = GrammarCompiler(info)
        self.timeout_s = compile_timeout_s() if timeout_s is None else timeout_s
        # JSON layout: any whitespace between tokens (at most
        # ``max_whitespace`` characters each time, formcast's default when
        # None), or none.
        self.json_options: dict[str, Any] = {"whitespace": "any" if any_whitespace else "compact"}
        if any_whitespace and max_whitespace is not None:
            self.json_options["max_whitespace"] = int(max_whitespace)

    def json_schema(self, text: str) -> CompiledGrammar:
        if text == ANY_JSON:
            return self.any_json()
        schema = json.loads(text) if isinstance(text, str) else text
        return self.compiler.compile_json_schema(schema, timeout_s=self.timeout_s, **self.json_options)

    def any_json(self) -> CompiledGrammar:
        return self.compiler.compile_builtin_json(timeout_s=self.timeout_s)

    def regex(self, pattern: str) -> CompiledGrammar:
        return self.compiler.compile_regex(pattern, timeout_s=self.timeout_s)

    def ebnf(self, text: str) -> CompiledGrammar:
        return self.compiler.compile_ebnf(text, timeout_s=self.timeout_s)

    def structural_tag(self, text: str) -> CompiledGrammar:
        tag = json.loads(text) if isinstance(text, str) else text
        return self.compiler.compile_structural_tag(tag, timeout_s=self.timeout_s)

    def choice(self, choices: Sequence[str]) -> CompiledGrammar:
        """Exactly one of ``choices`` (vLLM's ``choice`` request)."""
        if not choices:
            raise ValueError("choice needs at least one string")
        lits = " | ".join(_gbnf_literal(str(c)) for c in choices)
        return self.compiler.compile_ebnf(f"root ::= {lits}", timeout_s=self.timeout_s)

    def clear(self) -> None:
        self.compiler.clear_cache()
