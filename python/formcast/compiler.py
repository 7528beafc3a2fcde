"""Compiling grammars against a vocabulary, with a thread-safe bounded cache."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Hashable

from . import _engine
from .grammar import DEFAULT_REGEX_DIALECT, Grammar
from .tokenizer import TokenizerInfo

__all__ = ["GrammarCompiler", "CompiledGrammar", "CancelToken"]

CompiledGrammar = _engine.CompiledGrammar
CancelToken = _engine.CancelToken


class GrammarCompiler:
    """Compiles grammars for one vocabulary and caches the results.

    The cache is keyed by what built the grammar (EBNF text and root, regex,
    ...) and bounded in memory: when the compiled grammars (including their
    lazily built mask caches) exceed ``cache_limit_bytes``, the least recently
    used are dropped. Safe to share between threads; concurrent requests for
    the same grammar compile it once.
    """

    def __init__(
        self,
        tokenizer: TokenizerInfo,
        *,
        cache_limit_bytes: int = 512 << 20,
        mask_cache_bytes: int = 64 << 20,
    ) -> None:
        if cache_limit_bytes < 0 or mask_cache_bytes < 0:
            raise ValueError("cache limits must be non-negative")
        self.tokenizer = tokenizer
        self.cache_limit_bytes = cache_limit_bytes
        self.mask_cache_bytes = mask_cache_bytes
        self._cache: OrderedDict[Hashable, CompiledGrammar] = OrderedDict()
        self._inflight: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()
        # Memory of the cached grammars as last counted, plus what was
        # inserted since; a full recount (every grammar's caches keep growing
        # after insertion) runs when the estimate passes the limit or after
        # len/8 insertions, so an insertion costs O(1) amortized.
        self._bytes_estimate = 0
        self._inserts_since_count = 0

    def compile(
        self,
        grammar: Grammar,
        *,
        timeout_s: float | None = None,
        cancel: CancelToken | None = None,
    ) -> CompiledGrammar:
        """Compiles ``grammar`` (or returns the cached result).

        ``timeout_s`` bounds the compilation (``CompileTimeoutError``);
        ``cancel`` lets another thread stop it (``CancelledError``). The GIL
        is released while compiling. The compile ends by computing the
        grammar's first mask into its cache (every matcher's first fill is
        then a copy), and the masks inside the triggers of a structural
        tag's ``triggered_tags`` where the output starts in its free text;
        those masks are bounded like any other, not by ``timeout_s``.
        """
        key = grammar._key
        while True:
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    return hit
                waiter = self._inflight.get(key)
                if waiter is None:
                    event = threading.Event()
                    self._inflight[key] = event
                    break
            waiter.wait()
        try:
            compiled = _engine.compile_grammar(
                grammar._native,
                self.tokenizer._native,
                timeout_s=timeout_s,
                cancel=cancel,
                mask_cache_bytes=self.mask_cache_bytes,
            )
            with self._lock:
                self._cache[key] = compiled
                self._evict(compiled)
            return compiled
        finally:
            with self._lock:
                self._inflight.pop(key, None)
            event.set()

    def compile_ebnf(self, text: str, root: str = "root", **kw) -> CompiledGrammar:
        """Shorthand for ``compile(Grammar.from_ebnf(text, root))``."""
        return self.compile(Grammar.from_ebnf(text, root), **kw)

    def compile_regex(self, pattern: str, dialect: str = DEFAULT_REGEX_DIALECT, **kw) -> CompiledGrammar:
        """Shorthand for ``compile(Grammar.from_regex(pattern, dialect))``."""
        return self.compile(Grammar.from_regex(pattern, dialect), **kw)

    def compile_json_schema(self, schema, *, timeout_s: float | None = None, cancel: CancelToken | None = None, **options) -> CompiledGrammar:
        """Shorthand for ``compile(Grammar.from_json_schema(schema, **options))``;
        cached by the schema's JSON text and the options."""
        return self.compile(Grammar.from_json_schema(schema, **options), timeout_s=timeout_s, cancel=cancel)

    def compile_structural_tag(self, tag, *, timeout_s: float | None = None, cancel: CancelToken | None = None, **options) -> CompiledGrammar:
        """Shorthand for ``compile(Grammar.from_structural_tag(tag, self.tokenizer, **options))``:
        token strings resolve through this compiler's vocabulary; cached by
        the tag's JSON text."""
        return self.compile(Grammar.from_structural_tag(tag, self.tokenizer, **options), timeout_s=timeout_s, cancel=cancel)

    def compile_lark(self, text: str, *, timeout_s: float | None = None, cancel: CancelToken | None = None, **options) -> CompiledGrammar:
        """Shorthand for ``compile(Grammar.from_lark(text, self.tokenizer, **options))``:
        special tokens resolve through this compiler's vocabulary; cached by
        the text and the named grammars."""
        return self.compile(Grammar.from_lark(text, self.tokenizer, **options), timeout_s=timeout_s, cancel=cancel)

    def compile_builtin_json(self, **kw) -> CompiledGrammar:
        """Shorthand for ``compile(Grammar.builtin_json())``."""
        return self.compile(Grammar.builtin_json(), **kw)

    @property
    def cache_size_bytes(self) -> int:
        """Memory held by the cached grammars right now."""
        with self._lock:
            return sum(c.memory_bytes for c in self._cache.values())

    def clear_cache(self) -> None:
        """Drops every cached grammar."""
        with self._lock:
            self._cache.clear()
            self._bytes_estimate = 0
            self._inserts_since_count = 0

    def _evict(self, inserted: CompiledGrammar) -> None:
        self._bytes_estimate += inserted.memory_bytes
        self._inserts_since_count += 1
        if self._bytes_estimate <= self.cache_limit_bytes and self._inserts_since_count < max(16, len(self._cache) // 8):
            return
        total = sum(c.memory_bytes for c in self._cache.values())
        while total > self.cache_limit_bytes and len(self._cache) > 1:
            _, dropped = self._cache.popitem(last=False)
            total -= dropped.memory_bytes
        self._bytes_estimate = total
        self._inserts_since_count = 0
