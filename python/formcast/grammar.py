"""Grammars, before they meet a vocabulary."""

from __future__ import annotations

from . import _engine

__all__ = ["Grammar"]


class Grammar:
    """A grammar in formcast's intermediate representation.

    Build one with :meth:`from_ebnf` (GBNF, llama.cpp's dialect),
    :meth:`from_regex` or :meth:`builtin_json`, then compile it with a
    :class:`~formcast.GrammarCompiler`. Grammars are immutable and can be
    compiled for any number of vocabularies.
    """

    __slots__ = ("_native", "_key")

    def __init__(self, native: _engine.Grammar, key: tuple[str, ...]) -> None:
        self._native = native
        # What built the grammar: the compiler cache's key.
        self._key = key

    @classmethod
    def from_ebnf(cls, text: str, root: str = "root") -> "Grammar":
        """Parses GBNF/EBNF text; ``root`` names the start rule.

        Raises :class:`~formcast.GrammarError` with line and column on a
        syntax error, an undefined rule, a missing root or an empty language.
        """
        return cls(_engine.Grammar.from_ebnf(text, root), ("ebnf", root, text))

    @classmethod
    def from_regex(cls, pattern: str) -> "Grammar":
        """A grammar whose language is the full matches of ``pattern``.

        Raises :class:`~formcast.GrammarError` with the position on a syntax
        error; backreferences and lookaround are rejected by name.
        """
        return cls(_engine.Grammar.from_regex(pattern), ("regex", pattern))

    @classmethod
    def builtin_json(cls) -> "Grammar":
        """Any JSON value (RFC 8259)."""
        return cls(_engine.Grammar.builtin_json(), ("builtin_json",))

    @property
    def rule_names(self) -> list[str]:
        """Rule names, the start rule first."""
        return self._native.rule_names

    def __repr__(self) -> str:
        return repr(self._native)
