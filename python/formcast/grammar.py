"""Grammars, before they meet a vocabulary."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

from . import _engine
from ._depth import MAX_JSON_DEPTH, check_nesting

if TYPE_CHECKING:
    from .tokenizer import TokenizerInfo

__all__ = ["Grammar"]

# Styles accepted by Grammar.from_json_schema(style=...).
JSON_SCHEMA_STYLES = (
    "json",
    "qwen_xml",
    "minimax_xml",
    "minimax_m3_xml",
    "deepseek_xml",
    "deepseek_v4_1_xml",
    "glm_xml",
    "cohere_xml",
    "kimi_k3_xml",
)


def _limit_error(message: str, pointer: str, reason: str) -> Exception:
    # Too deep or too big is a limit; a dict that contains itself is no JSON.
    return _engine.GrammarError(message) if reason == "cycle" else _engine.LimitError(message)


def _dumps(value: Any, what: str) -> str:
    """Compact JSON text of a dict given to the engine. The nesting is
    checked first, without recursion: ``json.dumps`` recurses once per level
    and would end in ``RecursionError`` (the engine's JSON reader refuses
    more than ``MAX_JSON_DEPTH`` levels anyway, so text and dicts get the
    same limit and the same :class:`~formcast.LimitError`)."""
    check_nesting(value, MAX_JSON_DEPTH, what, error=_limit_error)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _schema_text(schema: Any) -> str:
    """JSON text of a schema given as a dict, bool, JSON text or pydantic model."""
    if isinstance(schema, str):
        return schema.strip()
    if isinstance(schema, (bytes, bytearray)):
        return bytes(schema).decode("utf-8").strip()
    model_schema = getattr(schema, "model_json_schema", None)
    if callable(model_schema):  # a pydantic model class (or instance)
        schema = model_schema()
    if isinstance(schema, (dict, bool)):
        # Key order is kept: it is the order properties are generated in.
        return _dumps(schema, "schema")
    raise TypeError(
        "schema must be a dict, a bool, JSON text or a pydantic model class, "
        f"not {type(schema).__name__}"
    )


#: Regex syntaxes of :meth:`Grammar.from_regex`, and the default one
#: (kept from before dialects existed; also the server's ``regex`` field
#: and the structural tag's ``regex`` format).
REGEX_DIALECTS = ("rust", "ecma", "python")
DEFAULT_REGEX_DIALECT = "rust"


class Grammar:
    """A grammar in formcast's intermediate representation.

    Build one with :meth:`from_ebnf` (GBNF, llama.cpp's dialect),
    :meth:`from_regex` or :meth:`builtin_json`, then compile it with a
    :class:`~formcast.GrammarCompiler`. Grammars are immutable and can be
    compiled for any number of vocabularies.
    """

    __slots__ = ("_native", "_key", "_warnings")

    def __init__(self, native: _engine.Grammar, key: tuple, warnings: Sequence[str] = ()) -> None:
        self._native = native
        # What built the grammar: the compiler cache's key.
        self._key = key
        self._warnings = tuple(warnings)

    @classmethod
    def from_ebnf(cls, text: str, root: str = "root") -> "Grammar":
        """Parses GBNF/EBNF text; ``root`` names the start rule.

        Raises :class:`~formcast.GrammarError` with line and column on a
        syntax error, an undefined rule, a missing root or an empty language.
        """
        return cls(_engine.Grammar.from_ebnf(text, root), ("ebnf", root, text))

    @classmethod
    def from_regex(cls, pattern: str, dialect: str = DEFAULT_REGEX_DIALECT) -> "Grammar":
        """A grammar whose language is the full matches of ``pattern``.

        ``dialect`` is the regex syntax the pattern is written in:
        ``"rust"`` (the default: Rust's ``regex`` crate, as before dialects
        existed, and as llguidance reads them),
        ``"ecma"`` (ECMA-262 with the ``u`` flag, as ``new RegExp(p, "u")``
        and JSON Schema ``pattern``) or ``"python"`` (Python ``re``, read by
        this interpreter's own ``re``). Each is read exactly; what a grammar
        cannot honour exactly (backreferences, lookaround, word boundaries,
        anchors inside the pattern, and per dialect the constructs listed in
        the README) raises :class:`~formcast.GrammarError` naming it, with
        the position where the dialect's reader knows it.
        """
        if dialect == "python":
            from ._pyregex import to_rust

            native = _engine.Grammar.from_regex(to_rust(pattern), "rust")
        elif dialect in ("rust", "ecma"):
            native = _engine.Grammar.from_regex(pattern, dialect)
        else:
            raise ValueError(f"unknown regex dialect {dialect!r}; expected one of {', '.join(REGEX_DIALECTS)}")
        key = ("regex", pattern) if dialect == "rust" else ("regex", pattern, dialect)
        return cls(native, key)

    @classmethod
    def from_json_schema(
        cls,
        schema: Any,
        *,
        whitespace: str = "any",
        max_whitespace: int = 8,
        indent: int | None = None,
        separators: tuple[str, str] | None = None,
        strict: bool = True,
        any_order: bool = False,
        lenient: bool = False,
        style: str = "json",
        formats: str = "assert",
        time_budget_ms: int = 10_000,
    ) -> "Grammar":
        """A grammar for the JSON values a JSON Schema accepts.

        ``schema`` is a dict, a bool, JSON text or a pydantic model class.
        Draft 2020-12 is supported (and drafts 4 to 2019-09 by their
        ``$schema``); a keyword whose constraint cannot be enforced exactly
        raises :class:`~formcast.GrammarError` naming it and its JSON
        pointer, unless ``lenient`` is set: then it is dropped and listed in
        :attr:`warnings`. A schema that matches nothing raises
        ``GrammarError`` ("unsatisfiable").

        Layout: ``whitespace="any"`` allows up to ``max_whitespace``
        whitespace characters between tokens (bounded, so a model cannot
        loop on whitespace), ``"compact"`` none; ``indent`` / ``separators``
        give exactly the layout of ``json.dumps(indent=..., separators=...)``.

        ``strict`` treats absent ``additionalProperties`` (for objects that
        declare properties) and absent ``items`` after ``prefixItems`` as
        ``false``. ``any_order`` lets properties come in any order (each at
        most once, required ones tracked); otherwise they follow the schema.
        ``style`` selects an XML tool-call parameter style (``"qwen_xml"``,
        ...) instead of JSON. ``formats="annotate"`` ignores ``format``.

        A schema of any object (``{"type": "object"}``, annotations aside)
        compiles like :meth:`builtin_json`: its compile also computes the
        masks at an object's first key, first value and a value after a
        comma.
        """
        if style not in JSON_SCHEMA_STYLES:
            raise ValueError(f"unknown style {style!r}; expected one of {', '.join(JSON_SCHEMA_STYLES)}")
        text = _schema_text(schema)
        native, warnings = _engine.grammar_from_json_schema(
            text,
            whitespace=whitespace,
            max_whitespace=max_whitespace,
            indent=indent,
            separators=tuple(separators) if separators is not None else None,
            strict=strict,
            any_order=any_order,
            lenient=lenient,
            style=style,
            formats=formats,
            time_budget_ms=time_budget_ms,
        )
        key = (
            "json_schema",
            text,
            whitespace,
            max_whitespace,
            indent,
            tuple(separators) if separators is not None else None,
            strict,
            any_order,
            lenient,
            style,
            formats,
        )
        return cls(native, key, warnings)

    @classmethod
    def from_structural_tag(
        cls,
        tag: Any,
        tokenizer: "TokenizerInfo | None" = None,
        *,
        time_budget_ms: int = 10_000,
    ) -> "Grammar":
        """A grammar for a structural tag.

        ``tag`` is the OpenAI-style ``{"type": "structural_tag", "format":
        {...}}`` (or its legacy ``structures``/``triggers`` form, or a bare
        format object), given as a dict, JSON text or a model from
        :mod:`formcast.structural_tag`. Token strings (``{"type": "token",
        "token": "<|tool_call|>"}``, ``exclude_tokens``, grammar references
        like ``<think>``) resolve through ``tokenizer``: the first id whose
        text is exactly the string. ``time_budget_ms`` bounds each embedded
        JSON-schema translation.

        Raises :class:`~formcast.StructuralTagError` (a ``GrammarError``)
        whose message and ``path`` / ``format_type`` / ``field`` attributes
        say where the tag is wrong (``format.elements[1].tags[0].end``), or
        :class:`~formcast.LimitError` for hostile sizes.
        """
        text = _structural_tag_text(tag)
        native_tok = tokenizer._native if tokenizer is not None else None
        native, warnings = _engine.grammar_from_structural_tag(text, native_tok, time_budget_ms=time_budget_ms)
        # Token ids depend on the tokenizer that resolved them.
        return cls(native, ("structural_tag", text, tokenizer), warnings)

    @classmethod
    def from_lark(
        cls,
        text: str,
        tokenizer: "TokenizerInfo | None" = None,
        *,
        named_grammars: Mapping[str, "str | Grammar"] | None = None,
        time_budget_ms: int = 10_000,
        lexer: Literal["llguidance", "context_free"] = "llguidance",
    ) -> "Grammar":
        """A grammar from Lark text in llguidance's dialect (also what
        xgrammar's ``compile_lark`` reads); the start rule is ``start``.

        Rules (``name: ...``), terminals (``NAME: ...``), ``| ( ) [ ] ? * +``,
        ``~ n`` / ``~ n..m`` / ``{m,n}``, strings (``"..."i``), ranges
        (``"a".."z"``), regexes ``/.../imsx`` (Rust ``regex`` syntax),
        ``%import common.X``, ``%ignore`` (skipped text between lexemes only,
        never before the first or after the last), special tokens
        (``<|eot_id|>``, ``<[128010]>``, ``<[1-5,9]>``, ``<[^7]>``, ``<[*]>``),
        ``%json {schema}``, ``%regex {"substring_chunks": [...]}``, ``@name``
        (a grammar of ``named_grammars``: Lark text or a :class:`Grammar`) and
        ``%llguidance {...}`` options. Named special tokens resolve through
        ``tokenizer`` (the special token with that text, else the first token
        with exactly that text); without one they raise ``GrammarError``.

        ``lexer`` says how the text is cut into lexemes (strings, regexes,
        terminals, ``%ignore`` text):

        * ``"llguidance"`` (the default), as llguidance's lexer: a lexeme is
          as long as it can be — while a lexeme under way can take the next
          byte, none ends there (``start: A "ab"`` with ``A: /a+/`` rejects
          ``aab``) — and *lazy* lexemes, ``name[lazy]: ...`` and
          ``name[suffix=S]: ...`` (the rule's terminals, then ``S``), end at
          their first match and end the lexemes going on beside them;
        * ``"context_free"``, as xgrammar reads Lark: any split of the text
          into lexemes counts (``aab`` above is accepted); lazy lexemes are
          an error.

        What formcast does not honour exactly (priorities, templates,
        ``%declare``/``%override``, ``stop`` (llguidance takes the stop
        text's tokens back), ``max_tokens``/``temperature``, the regex
        operators ``&`` and ``~``, other imports) raises
        :class:`~formcast.GrammarError` naming it, with ``line`` and
        ``column`` attributes and the offending line in the message; hostile
        sizes raise :class:`~formcast.LimitError`. ``time_budget_ms`` bounds
        each ``%json`` translation.
        """
        named: list[tuple[str, Any]] = []
        key_named: list[tuple[str, Any]] = []
        for name, value in (named_grammars or {}).items():
            if isinstance(value, Grammar):
                named.append((name, value._native))
                key_named.append((name, value._key))
            elif isinstance(value, str):
                named.append((name, value))
                key_named.append((name, ("lark", value)))
            else:
                raise TypeError(f"named grammar {name!r} must be Lark text or a Grammar, not {type(value).__name__}")
        native_tok = tokenizer._native if tokenizer is not None else None
        native, warnings = _engine.grammar_from_lark(text, native_tok, named, time_budget_ms=time_budget_ms, lexer=lexer)
        # Token ids depend on the tokenizer that resolved them.
        key = ("lark", text, tokenizer, tuple(sorted(key_named, key=lambda kv: kv[0])), lexer)
        return cls(native, key, warnings)

    @classmethod
    def builtin_json(cls) -> "Grammar":
        """Any JSON value (RFC 8259).

        Its compile also computes the masks at an object's first key, its
        first value and a value after a comma, which nearly every answer
        meets (about 0.3 ms of compile on Llama-3's vocabulary)."""
        return cls(_engine.Grammar.builtin_json(), ("builtin_json",))

    @property
    def warnings(self) -> tuple[str, ...]:
        """What was not enforced (lenient mode) or carries no constraint
        (unknown formats, repeat bounds treated as unbounded); empty for
        other grammars."""
        return self._warnings

    @property
    def rule_names(self) -> list[str]:
        """Rule names, the start rule first."""
        return self._native.rule_names

    def __repr__(self) -> str:
        return repr(self._native)


def _structural_tag_text(tag: Any) -> str:
    """Canonical JSON text of a structural tag. Dicts and JSON text (what
    servers pass) are handled here: importing the pydantic models builds
    ~30 model classes, which made the first compile in a process take
    ~250 ms longer than the compile itself. Models are only ever built by
    users who already imported them."""
    if isinstance(tag, (dict, str, bytes, bytearray)):
        if isinstance(tag, (bytes, bytearray)):
            tag = bytes(tag).decode("utf-8")
        if isinstance(tag, str):
            return tag.strip()
        # Key order is kept: it is the order JSON-schema properties are generated in.
        return _dumps(tag, "structural tag")
    from .structural_tag import structural_tag_json

    return structural_tag_json(tag)
