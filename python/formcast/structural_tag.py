"""Typed structural tags: pydantic models of every format type.

A structural tag describes a whole model output as a tree of formats (a
``<think>`` block, free text with tool calls, JSON arguments...). Build one
from these models or write the same thing as a dict / JSON text; both give
identical JSON (``model_dump(mode="json", by_alias=True)``), which is what
:meth:`formcast.Grammar.from_structural_tag` compiles. Validation of the
tree (paths, triggers, budgets) happens in the Rust compiler, so a dict and
a model are checked by the same rules.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "StructuralTag",
    "LegacyStructuralTag",
    "StructuralTagItem",
    "Format",
    "ConstStringFormat",
    "JSONSchemaFormat",
    "QwenXMLParameterFormat",
    "GrammarFormat",
    "RegexFormat",
    "AnyTextFormat",
    "SequenceFormat",
    "OrFormat",
    "OptionalFormat",
    "PlusFormat",
    "StarFormat",
    "RepeatFormat",
    "TagFormat",
    "TriggeredTagsFormat",
    "TagsWithSeparatorFormat",
    "DispatchFormat",
    "TokenFormat",
    "ExcludeTokenFormat",
    "AnyTokensFormat",
    "TokenTriggeredTagsFormat",
    "TokenDispatchFormat",
    "structural_tag_json",
]

_I32_MAX = 2_147_483_647

JSONSchemaStyle = Literal[
    "json",
    "qwen_xml",
    "minimax_xml",
    "minimax_m3_xml",
    "deepseek_xml",
    "glm_xml",
    "cohere_xml",
    "kimi_k3_xml",
    "deepseek_v4_1_xml",
]

# A token by id or by its exact text (resolved through the tokenizer).
TokenRef = Union[Annotated[int, Field(ge=0)], Annotated[str, Field(min_length=1)]]


class _Model(BaseModel):
    # Unknown fields are refused, as the compiler does for dicts.
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ConstStringFormat(_Model):
    """Exactly ``value``."""

    type: Literal["const_string"] = "const_string"
    value: str


class JSONSchemaFormat(_Model):
    """A value matching ``json_schema``, as JSON or in an XML parameter
    ``style``.

    ``excludes``: strings the value's text must not contain. They are
    removed from the emitted text of every string (property names and
    values at any depth, ``const``/``enum``/``pattern``/``format`` strings
    included; in XML styles, parameter names and raw string values), so an
    escaped form such as ``"\\u003c"`` does not match ``"<"``. An exclude
    must contain no ``"`` and at least one character that JSON outside
    strings never holds (not only whitespace, punctuation, digits or letters
    of ``true``/``false``/``null``): then the whole JSON text is free of it,
    and anything else is refused. XML styles: excludes must not start or end
    with formatting whitespace; ``cohere_xml`` and ``minimax_m3_xml`` do not
    support them."""

    type: Literal["json_schema"] = "json_schema"
    json_schema: Union[dict[str, Any], bool]
    style: JSONSchemaStyle = "json"
    any_order: bool = False
    max_whitespace_cnt: Annotated[int, Field(gt=0)] | None = None
    excludes: list[Annotated[str, Field(min_length=1)]] = []


class QwenXMLParameterFormat(_Model):
    """Deprecated: ``json_schema`` with ``style="qwen_xml"``."""

    type: Literal["qwen_xml_parameter"] = "qwen_xml_parameter"
    json_schema: Union[dict[str, Any], bool]


class GrammarFormat(_Model):
    """Text matching a GBNF/EBNF grammar (start rule ``root``)."""

    type: Literal["grammar"] = "grammar"
    grammar: Annotated[str, Field(min_length=1)]


class RegexFormat(_Model):
    """Text fully matching a regular expression."""

    type: Literal["regex"] = "regex"
    pattern: Annotated[str, Field(min_length=1)]


class AnyTextFormat(_Model):
    """Free text containing none of ``excludes`` (nor the end of the
    enclosing tag), at most ``max_chars`` code points and ``max_tokens``
    tokens.

    A token counts once if it starts a character of the text (the second
    half of a character split across tokens is free). The budget is enforced
    through the token mask — once spent, only leaving the text is allowed —
    and ``accept_token`` rejects an over-budget token; a string given to
    ``accept_string`` counts as one token. Rollback restores the count."""

    type: Literal["any_text"] = "any_text"
    excludes: list[Annotated[str, Field(min_length=1)]] = []
    max_tokens: Annotated[int, Field(ge=0, le=_I32_MAX)] | None = None
    max_chars: Annotated[int, Field(ge=0, le=_I32_MAX)] | None = None


class SequenceFormat(_Model):
    """The elements one after the other."""

    type: Literal["sequence"] = "sequence"
    elements: Annotated[list["Format"], Field(min_length=1)]


class OrFormat(_Model):
    """Any one of the elements."""

    type: Literal["or"] = "or"
    elements: Annotated[list["Format"], Field(min_length=1)]


class OptionalFormat(_Model):
    """The content or nothing."""

    type: Literal["optional"] = "optional"
    content: "Format"


class PlusFormat(_Model):
    """The content one or more times."""

    type: Literal["plus"] = "plus"
    content: "Format"


class StarFormat(_Model):
    """The content zero or more times."""

    type: Literal["star"] = "star"
    content: "Format"


class RepeatFormat(_Model):
    """The content ``min`` to ``max`` times (``max=-1``: unbounded)."""

    type: Literal["repeat"] = "repeat"
    min: Annotated[int, Field(ge=0, le=_I32_MAX)]
    max: Annotated[int, Field(ge=-1)]
    content: "Format"


class TokenFormat(_Model):
    """One vocabulary token, by id or exact text."""

    type: Literal["token"] = "token"
    token: TokenRef


class TagFormat(_Model):
    """``begin`` content ``end``; ``end`` may list several strings (any of
    them ends the tag); begin and end may be tokens."""

    type: Literal["tag"] = "tag"
    begin: Union[str, TokenFormat]
    content: "Format"
    end: Union[str, Annotated[list[str], Field(min_length=1)], TokenFormat]


class TriggeredTagsFormat(_Model):
    """Free text in which each trigger starts one of the tags (the trigger
    must be a prefix of exactly the tags it starts)."""

    type: Literal["triggered_tags"] = "triggered_tags"
    triggers: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    tags: Annotated[list[TagFormat], Field(min_length=1)]
    excludes: list[Annotated[str, Field(min_length=1)]] = []
    at_least_one: bool = False
    stop_after_first: bool = False


class TagsWithSeparatorFormat(_Model):
    """Tags joined by ``separator``, nothing else."""

    type: Literal["tags_with_separator"] = "tags_with_separator"
    tags: Annotated[list[TagFormat], Field(min_length=1)]
    separator: str
    at_least_one: bool = False
    stop_after_first: bool = False


class DispatchFormat(_Model):
    """Free text in which each pattern is followed by its format."""

    type: Literal["dispatch"] = "dispatch"
    rules: Annotated[list[tuple[Annotated[str, Field(min_length=1)], "Format"]], Field(min_length=1)]
    loop: bool = True
    excludes: list[Annotated[str, Field(min_length=1)]] = []


class ExcludeTokenFormat(_Model):
    """One token that is not in ``exclude_tokens``."""

    type: Literal["exclude_token"] = "exclude_token"
    exclude_tokens: list[TokenRef] = []


class AnyTokensFormat(_Model):
    """Any tokens but ``exclude_tokens`` (at most ``max_tokens``)."""

    type: Literal["any_tokens"] = "any_tokens"
    exclude_tokens: list[TokenRef] = []
    max_tokens: Annotated[int, Field(ge=0, le=_I32_MAX)] | None = None


class TokenTriggeredTagsFormat(_Model):
    """Free tokens in which each trigger token starts the tags that begin
    with it."""

    type: Literal["token_triggered_tags"] = "token_triggered_tags"
    trigger_tokens: Annotated[list[TokenRef], Field(min_length=1)]
    tags: Annotated[list[TagFormat], Field(min_length=1)]
    exclude_tokens: list[TokenRef] = []
    at_least_one: bool = False
    stop_after_first: bool = False


class TokenDispatchFormat(_Model):
    """Free tokens in which each dispatch token is followed by its format."""

    type: Literal["token_dispatch"] = "token_dispatch"
    rules: Annotated[list[tuple[TokenRef, "Format"]], Field(min_length=1)]
    loop: bool = True
    exclude_tokens: list[TokenRef] = []


Format = Annotated[
    Union[
        ConstStringFormat,
        JSONSchemaFormat,
        QwenXMLParameterFormat,
        GrammarFormat,
        RegexFormat,
        AnyTextFormat,
        SequenceFormat,
        OrFormat,
        OptionalFormat,
        PlusFormat,
        StarFormat,
        RepeatFormat,
        TagFormat,
        TriggeredTagsFormat,
        TagsWithSeparatorFormat,
        DispatchFormat,
        TokenFormat,
        ExcludeTokenFormat,
        AnyTokensFormat,
        TokenTriggeredTagsFormat,
        TokenDispatchFormat,
    ],
    Field(discriminator="type"),
]


class StructuralTag(_Model):
    """The OpenAI-style request: ``{"type": "structural_tag", "format": ...}``."""

    type: Literal["structural_tag"] = "structural_tag"
    format: Format


class StructuralTagItem(_Model):
    """One structure of the legacy form: ``begin`` JSON ``end``."""

    begin: str
    schema_: Union[dict[str, Any], bool] = Field(alias="schema")
    end: str


class LegacyStructuralTag(_Model):
    """The legacy request: each structure is dispatched on its trigger in
    free text (a ``triggered_tags``)."""

    type: Literal["structural_tag"] = "structural_tag"
    structures: list[StructuralTagItem]
    triggers: list[Annotated[str, Field(min_length=1)]]


# Resolve the forward references to Format.
for _m in list(globals().values()):
    if isinstance(_m, type) and issubclass(_m, _Model) and _m is not _Model:
        _m.model_rebuild()


#: Formats nested in a tag (the engine's MAX_FORMAT_DEPTH).
MAX_FORMAT_DEPTH = 48


def _check_model_depth(tag: BaseModel) -> None:
    """Formats nested deeper than the engine reads are refused before
    pydantic serializes them (its serializer recurses per level and stops
    at about 250 with a bare ``ValueError``). Iterative."""
    stack: list[tuple[Any, int, str]] = [(tag, 0, "")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, BaseModel):
            if depth > MAX_FORMAT_DEPTH:
                from . import LimitError

                raise LimitError(f"structural tag formats are nested more than {MAX_FORMAT_DEPTH} levels deep at {where or 'format'}")
            for name in type(value).model_fields:
                child = getattr(value, name, None)
                if isinstance(child, (BaseModel, list, tuple)):
                    stack.append((child, depth + 1, f"{where}.{name}" if where else name))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, depth, f"{where}[{i}]") for i, v in enumerate(value) if isinstance(v, (BaseModel, list, tuple)))


def structural_tag_json(tag: Any) -> str:
    """Canonical JSON text of a structural tag given as a model, a dict or
    JSON text (the compiler's input and the cache key).

    Raises :class:`~formcast.LimitError` for formats nested more than
    :data:`MAX_FORMAT_DEPTH` levels or data nested more than the engine's
    JSON limit (512 levels; pydantic's own serializer stops earlier, at about
    250: that too is a ``LimitError``)."""
    if isinstance(tag, BaseModel):
        _check_model_depth(tag)
        try:
            tag = tag.model_dump(mode="json", by_alias=True)
        except ValueError as e:
            if "depth" not in str(e):
                raise
            from . import LimitError

            raise LimitError(f"structural tag too deeply nested to serialize: {e}") from None
    if isinstance(tag, (dict, str, bytes, bytearray)):
        from .grammar import _structural_tag_text

        return _structural_tag_text(tag)
    raise TypeError(f"a structural tag must be a dict, JSON text or a formcast.structural_tag model, not {type(tag).__name__}")
