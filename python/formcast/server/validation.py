"""The request bodies of the endpoints, declared once: one pydantic model per
endpoint (:class:`ChatCompletionRequest`, :class:`CompletionRequest`,
:class:`ResponsesRequest`, :class:`TokenizeRequest`,
:class:`DetokenizeRequest`).

Every model forbids unknown fields (a field the server does not implement
is a 400 naming it, never silently ignored) and is strict: ``"yes"`` is not
a boolean, ``5.0`` is not an integer. Values whose JSON type may vary
(``stop``: a string or an array) are discriminated by their JSON type, so an
error names the field and what was expected instead of one error per union
member. The deep payloads (JSON Schemas, structural tags, template kwargs)
are typed ``Any``/objects here and checked by :mod:`.constraints`,
:mod:`.tools` and :mod:`.templates`, after :mod:`.body` has bounded their
nesting.

:func:`validate_request` turns a ``ValidationError`` into a 400 OpenAI
error body whose ``param`` is the field's path (``messages[0].role``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal, Optional, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from .body import format_path
from .errors import APIError

__all__ = [
    "ChatCompletionRequest",
    "CompletionRequest",
    "ResponsesRequest",
    "TokenizeRequest",
    "DetokenizeRequest",
    "ENDPOINT_MODELS",
    "MAX_STOP_CHARS",
    "MAX_STOPS",
    "validate_request",
]


# ------------------------------------------------------------------ types --
def _json_kind(v: Any) -> Optional[str]:
    """The JSON type of ``v`` as a union tag (``<...>`` marks tags, which are
    left out of error paths)."""
    if isinstance(v, bool):
        return "<boolean>"
    if isinstance(v, int):
        return "<integer>"
    if isinstance(v, float):
        return "<number>"
    if isinstance(v, str):
        return "<string>"
    if isinstance(v, list):
        return "<array>"
    if isinstance(v, dict):
        return "<object>"
    return None


def _either(expected: str, **members: Any) -> Any:
    """A union chosen by the value's JSON type (``string=str, array=...``);
    any other JSON type is one error saying ``expected``."""
    tagged = tuple(Annotated[t, Tag(f"<{kind}>")] for kind, t in members.items())
    return Annotated[
        Union[tagged],  # type: ignore[valid-type]
        Discriminator(_json_kind, custom_error_type="wrong_json_type", custom_error_message=expected),
    ]


# The error messages of the unions chosen by an object's "type" field, so that
# an unknown type is reported at '<path>.type' (see _message).
_BY_TYPE_MESSAGES: set[str] = set()


def _by_type(default: Optional[str] = None, **members: Any) -> Any:
    """A union chosen by an object's ``"type"`` field (``default`` when the
    field is absent); anything else is one error naming the allowed types."""
    names = [f"'{n}'" for n in members]
    expected = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    _BY_TYPE_MESSAGES.add(expected)

    def kind(v: Any) -> Optional[str]:
        t = v.get("type", default) if isinstance(v, dict) else None
        return f"<{t}>" if t in members else None

    tagged = tuple(Annotated[t, Tag(f"<{n}>")] for n, t in members.items())
    return Annotated[
        Union[tagged],  # type: ignore[valid-type]
        Discriminator(kind, custom_error_type="wrong_json_type", custom_error_message=expected),
    ]


Number = Annotated[float, Field(allow_inf_nan=False)]
JsonObject = dict[str, Any]
SchemaValue = _either("a JSON Schema (an object, a boolean or JSON text)", object=JsonObject, boolean=bool, string=str)
TagValue = _either("a structural tag (an object or JSON text)", object=JsonObject, string=str)
#: The longest stop string (characters) and the most stop strings in a request.
MAX_STOP_CHARS = 1000
MAX_STOPS = 16
StopString = Annotated[str, Field(max_length=MAX_STOP_CHARS)]
Stop = _either(f"a string or an array of at most {MAX_STOPS} strings", string=StopString,
               array=Annotated[list[StopString], Field(max_length=MAX_STOPS)])
NonEmptyStrings = Annotated[list[str], Field(min_length=1)]


class _Body(BaseModel):
    """Strict, closed objects. ``unsupported_fields`` names fields that are known
    (OpenAI or vLLM names) but not implemented, with why, for the error."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)
    unsupported_fields: ClassVar[dict[str, str]] = {}


# ---------------------------------------------------------------- messages --
class TextPart(_Body):
    """A text content part (chat ``text``; Responses ``input_text`` /
    ``output_text``). Other part types (images, audio, files) are refused."""

    type: Literal["text", "input_text", "output_text"]
    text: str
    annotations: Optional[list[Any]] = None  # echoed Responses output: citations, not rendered


Content = _either(
    "a string or an array of text parts",
    string=str,
    array=list[_either("a string or a text part ({'type': 'text', 'text': ...})", string=str, object=TextPart)],
)


class CalledFunction(_Body):
    """``tool_calls[].function`` of an assistant message in the history."""

    name: str
    arguments: _either("a JSON string or an object", string=str, object=JsonObject)  # type: ignore[valid-type]


class CalledCustom(_Body):
    """``tool_calls[].custom`` of an assistant message in the history."""

    name: str
    input: str


class HistoryToolCall(_Body):
    """A tool call made by the assistant earlier in the conversation: a
    function call, or a custom tool's (``type`` ``custom``, ``custom``
    holding ``name`` and ``input``)."""

    id: str
    type: Literal["function", "custom"] = "function"
    function: Optional[CalledFunction] = None
    custom: Optional[CalledCustom] = None

    @model_validator(mode="after")
    def _one_body(self) -> "HistoryToolCall":
        want = "custom" if self.type == "custom" else "function"
        other = "function" if want == "custom" else "custom"
        if getattr(self, want) is None:
            raise _FieldError(want, f"'{want}' is required for a tool call of type '{self.type}'")
        if getattr(self, other) is not None:
            raise _FieldError(other, f"'{other}' is not allowed on a tool call of type '{self.type}'")
        return self


class ChatMessage(_Body):
    """One message. ``developer`` is passed to the chat template as is; the
    fields that only an assistant (``tool_calls``, ``reasoning_content``) or
    a tool result (``tool_call_id``) carries are refused on other roles.
    ``refusal``, ``audio``, ``function_call`` and ``annotations`` are only
    accepted empty, as clients echo an assistant message back."""

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Optional[Content] = None  # type: ignore[valid-type]
    name: Optional[str] = None
    tool_calls: Optional[list[HistoryToolCall]] = None
    tool_call_id: Optional[str] = None
    reasoning_content: Optional[str] = None
    refusal: None = None
    audio: None = None
    function_call: None = None
    annotations: Optional[Annotated[list[Any], Field(max_length=0)]] = None

    @field_validator("tool_calls", "reasoning_content")
    @classmethod
    def _assistant_only(cls, v: Any, info: Any) -> Any:
        if v is not None and info.data.get("role") != "assistant":
            raise ValueError("is only allowed on assistant messages")
        return v

    @field_validator("tool_call_id")
    @classmethod
    def _tool_only(cls, v: Any, info: Any) -> Any:
        if v is not None and info.data.get("role") != "tool":
            raise ValueError("is only allowed on tool messages")
        return v


# ------------------------------------------------------------------- tools --
class FunctionDefinition(_Body):
    """``tools[].function``; ``parameters`` is checked as a JSON Schema by the tools code."""

    name: Annotated[str, Field(min_length=1)]
    description: Optional[str] = None
    parameters: Optional[_either("a JSON Schema object", object=JsonObject, boolean=bool)] = None  # type: ignore[valid-type]
    strict: Optional[bool] = None


class FunctionTool(_Body):
    """A function tool."""

    type: Literal["function"] = "function"
    function: FunctionDefinition


class CustomGrammar(_Body):
    """``custom.format.grammar``: the input's grammar. ``regex`` is Rust
    regex syntax (as OpenAI documents it); ``lark`` is llguidance's Lark."""

    syntax: Literal["lark", "regex"]
    definition: Annotated[str, Field(min_length=1)]


class _CustomFormatText(_Body):
    type: Literal["text"]


class _CustomFormatGrammar(_Body):
    type: Literal["grammar"]
    grammar: CustomGrammar


CustomFormat = _by_type(text=_CustomFormatText, grammar=_CustomFormatGrammar)


class CustomDefinition(_Body):
    """``tools[].custom``: a tool whose input is raw text, free (``format``
    absent or ``{"type": "text"}``) or following a grammar."""

    name: Annotated[str, Field(min_length=1)]
    description: Optional[str] = None
    format: Optional[CustomFormat] = None  # type: ignore[valid-type]


class CustomTool(_Body):
    """An OpenAI custom tool."""

    type: Literal["custom"]
    custom: CustomDefinition


Tool = _by_type(default="function", function=FunctionTool, custom=CustomTool)


ToolChoice = _either(
    "'auto', 'none', 'required' or a tool choice object",
    string=Literal["auto", "none", "required"],
    object=JsonObject,  # {"type": "function", ...} / {"type": "allowed_tools", ...}: checked by the tools code
)


class StructuredOutputs(_Body):
    """vLLM's ``structured_outputs`` (one of its fields at a time)."""

    json_: Optional[SchemaValue] = Field(None, alias="json")  # type: ignore[valid-type]
    regex: Optional[str] = None
    choice: Optional[NonEmptyStrings] = None
    grammar: Optional[str] = None
    structural_tag: Optional[TagValue] = None  # type: ignore[valid-type]


# ----------------------------------------------------------- output format --
class JsonSchemaFormat(_Body):
    """``response_format.json_schema``. ``name`` and ``description`` are
    labels: accepted, not shown to the model."""

    name: Optional[str] = None
    description: Optional[str] = None
    schema_: Optional[SchemaValue] = Field(None, alias="schema")  # type: ignore[valid-type]
    strict: Optional[bool] = None


class _FormatText(_Body):
    type: Literal["text"]


class _FormatJsonObject(_Body):
    type: Literal["json_object"]


class _FormatJsonSchema(_Body):
    type: Literal["json_schema"]
    json_schema: JsonSchemaFormat


class _FormatStructuralTag(_Body):
    """A structural tag: current (``format``) or legacy (``structures`` and
    ``triggers``) form; the tag itself is checked when it is compiled."""

    type: Literal["structural_tag"]
    format: Optional[JsonObject] = None
    structures: Optional[list[Any]] = None
    triggers: Optional[list[str]] = None


class _TextFormatJsonSchema(_Body):
    """``text.format`` of /v1/responses: the json_schema fields are flat."""

    type: Literal["json_schema"]
    name: Optional[str] = None
    description: Optional[str] = None
    schema_: Optional[SchemaValue] = Field(None, alias="schema")  # type: ignore[valid-type]
    strict: Optional[bool] = None


def _format_union(json_schema: Any) -> Any:
    return _by_type(text=_FormatText, json_object=_FormatJsonObject, json_schema=json_schema, structural_tag=_FormatStructuralTag)


ResponseFormat = _format_union(_FormatJsonSchema)
TextFormat = _format_union(_TextFormatJsonSchema)


class StreamOptions(_Body):
    """``stream_options``."""

    include_usage: Optional[bool] = None


# --------------------------------------------------------- shared fields --
class _Common(_Body):
    """Fields of every generation endpoint."""

    model: Optional[str] = None
    stream: Optional[bool] = None
    user: Optional[str] = None  # accepted and ignored: metadata
    metadata: Optional[dict[str, str]] = None  # accepted and ignored: metadata
    store: Optional[bool] = None

    @field_validator("store")
    @classmethod
    def _no_store(cls, v: Optional[bool]) -> Optional[bool]:
        if v:
            raise ValueError("must be false: this server stores nothing")
        return v


class _Sampling(_Body):
    """Sampling fields of chat and completions (OpenAI names, plus top_k,
    min_p, repeat_penalty and repeat_last_n as llama.cpp defines them)."""

    n: Optional[Annotated[int, Field(ge=1, le=16)]] = None
    seed: Optional[int] = None
    stop: Optional[Stop] = None  # type: ignore[valid-type]
    max_tokens: Optional[Annotated[int, Field(ge=1)]] = None
    temperature: Optional[Annotated[Number, Field(ge=0, le=2)]] = None
    top_p: Optional[Annotated[Number, Field(ge=0, le=1)]] = None
    top_k: Optional[Annotated[int, Field(ge=-1)]] = None
    min_p: Optional[Annotated[Number, Field(ge=0, le=1)]] = None
    frequency_penalty: Optional[Annotated[Number, Field(ge=-2, le=2)]] = None
    presence_penalty: Optional[Annotated[Number, Field(ge=-2, le=2)]] = None
    repeat_penalty: Optional[Annotated[Number, Field(gt=0, le=100)]] = None
    repeat_last_n: Optional[Annotated[int, Field(ge=-1)]] = None
    logit_bias: Optional[dict[str, Annotated[Number, Field(ge=-100, le=100)]]] = None
    stream_options: Optional[StreamOptions] = None

    @field_validator("logit_bias")
    @classmethod
    def _token_ids(cls, v: Optional[dict[str, float]]) -> Optional[dict[str, float]]:
        # Canonical decimal ids only, so "1" and "01" cannot name one token twice.
        for key in v or {}:
            if not re.fullmatch(r"0|[1-9][0-9]{0,9}", key):
                raise ValueError(f"must map token ids (decimal integers) to biases; {key[:40]!r} is not a token id")
        return v


class _Constraints(_Body):
    """The output-constraint fields (at most one per request; see :mod:`.constraints`)."""

    response_format: Optional[ResponseFormat] = None  # type: ignore[valid-type]
    json_schema: Optional[SchemaValue] = None  # type: ignore[valid-type]
    grammar: Optional[str] = None
    ebnf: Optional[str] = None
    regex: Optional[str] = None
    choice: Optional[NonEmptyStrings] = None
    structural_tag: Optional[TagValue] = None  # type: ignore[valid-type]
    structured_outputs: Optional[StructuredOutputs] = None
    guided_json: Optional[SchemaValue] = None  # type: ignore[valid-type]
    guided_regex: Optional[str] = None
    guided_grammar: Optional[str] = None
    guided_choice: Optional[NonEmptyStrings] = None


_NOT_IMPLEMENTED = {
    "functions": "the legacy 'functions' field is not supported; use 'tools'",
    "function_call": "the legacy 'function_call' field is not supported; use 'tool_choice'",
    "audio": "audio output is not supported",
    "modalities": "only text output is supported",
    "prediction": "predicted outputs are not supported",
    "reasoning_effort": "'reasoning_effort' is not supported; use chat_template_kwargs {'enable_thinking': ...}",
    "service_tier": "'service_tier' is not supported",
    "web_search_options": "web search is not supported",
    "best_of": "'best_of' is not supported; use 'n'",
    "suffix": "'suffix' (insertion) is not supported",
}


# --------------------------------------------------------------- endpoints --
class ChatCompletionRequest(_Common, _Sampling, _Constraints):
    """``POST /v1/chat/completions``."""

    unsupported_fields: ClassVar[dict[str, str]] = _NOT_IMPLEMENTED

    messages: Annotated[list[ChatMessage], Field(min_length=1)]
    max_completion_tokens: Optional[Annotated[int, Field(ge=1)]] = None
    logprobs: Optional[bool] = None
    top_logprobs: Optional[Annotated[int, Field(ge=0, le=20)]] = None
    tools: Optional[list[Tool]] = None  # type: ignore[valid-type]
    tool_choice: Optional[ToolChoice] = None  # type: ignore[valid-type]
    parallel_tool_calls: Optional[bool] = None
    chat_template: Optional[str] = None
    template: Optional[str] = None
    chat_template_kwargs: Optional[JsonObject] = None

    @model_validator(mode="after")
    def _cross_field(self) -> "ChatCompletionRequest":
        if self.top_logprobs and not self.logprobs:
            raise _FieldError("top_logprobs", "'top_logprobs' needs 'logprobs': true")
        if self.chat_template is not None and self.template is not None:
            raise _FieldError("template", "give only one of 'chat_template' and 'template'")
        return self


def _prompt_kind(v: Any) -> Optional[str]:
    if isinstance(v, list):
        return "<tokens>" if v and all(isinstance(t, int) and not isinstance(t, bool) for t in v) else "<strings>"
    return _json_kind(v)


Prompt = Annotated[
    Union[
        Annotated[str, Tag("<string>")],
        Annotated[Annotated[list[str], Field(min_length=1)], Tag("<strings>")],
        Annotated[list[Annotated[int, Field(ge=0)]], Tag("<tokens>")],
    ],
    Discriminator(
        _prompt_kind,
        custom_error_type="wrong_json_type",
        custom_error_message="a string, an array of strings or an array of token ids",
    ),
]


class CompletionRequest(_Common, _Sampling, _Constraints):
    """``POST /v1/completions``."""

    unsupported_fields: ClassVar[dict[str, str]] = dict(
        _NOT_IMPLEMENTED,
        tools="'tools' are not supported on /v1/completions; use /v1/chat/completions",
        tool_choice="'tool_choice' is not supported on /v1/completions; use /v1/chat/completions",
        messages="/v1/completions takes a 'prompt'; use /v1/chat/completions for 'messages'",
    )

    prompt: Prompt
    echo: Optional[bool] = None
    logprobs: Optional[Annotated[int, Field(ge=0, le=20)]] = None


class ResponseInputMessage(_Body):
    """A message in ``input`` (``developer`` becomes ``system``). ``id`` and
    ``status`` of an echoed output item are accepted and ignored."""

    type: Optional[Literal["message"]] = None
    role: Literal["system", "developer", "user", "assistant"]
    content: Content  # type: ignore[valid-type]
    id: Optional[str] = None
    status: Optional[str] = None


class ResponseText(_Body):
    """``text``: ``format`` is ``text``, ``json_object``, ``json_schema``
    (``name``/``schema``/``strict``, flat) or ``structural_tag``."""

    format: Optional[TextFormat] = None  # type: ignore[valid-type]


class ResponsesRequest(_Common):
    """``POST /v1/responses`` (text in, text out; no tools, no stored state)."""

    unsupported_fields: ClassVar[dict[str, str]] = dict(
        _NOT_IMPLEMENTED,
        tools="'tools' are not supported on /v1/responses yet; use /v1/chat/completions",
        tool_choice="'tool_choice' is not supported on /v1/responses yet; use /v1/chat/completions",
        previous_response_id="this server keeps no responses: send the whole conversation in 'input'",
        reasoning="'reasoning' is not supported",
    )

    input: _either("a string or an array of messages", string=str, array=Annotated[list[ResponseInputMessage], Field(min_length=1)])  # type: ignore[valid-type]
    instructions: Optional[str] = None
    temperature: Optional[Annotated[Number, Field(ge=0, le=2)]] = None
    top_p: Optional[Annotated[Number, Field(ge=0, le=1)]] = None
    max_output_tokens: Optional[Annotated[int, Field(ge=1)]] = None
    seed: Optional[int] = None
    text: Optional[ResponseText] = None


class TokenizeRequest(_Body):
    """``POST /tokenize``: exactly one of ``content`` (llama.cpp's name),
    ``prompt`` or ``text``."""

    model: Optional[str] = None
    content: Optional[str] = None
    prompt: Optional[str] = None
    text: Optional[str] = None
    add_special: Optional[bool] = None
    parse_special: Optional[bool] = None
    with_pieces: Optional[bool] = None

    @model_validator(mode="after")
    def _one_text(self) -> "TokenizeRequest":
        given = [k for k in ("content", "prompt", "text") if getattr(self, k) is not None]
        if not given:
            raise _FieldError("content", "'content' is required: the text to tokenize ('prompt' or 'text' also work)")
        if len(given) > 1:
            raise _FieldError(given[1], f"give only one of 'content', 'prompt' and 'text', not {' and '.join(given)}")
        return self

    @property
    def the_text(self) -> str:
        """The text to tokenize."""
        return next(v for v in (self.content, self.prompt, self.text) if v is not None)


class DetokenizeRequest(_Body):
    """``POST /detokenize``."""

    model: Optional[str] = None
    tokens: list[Annotated[int, Field(ge=0)]]


#: Endpoint path → its request model.
ENDPOINT_MODELS: dict[str, type[_Body]] = {
    "/v1/chat/completions": ChatCompletionRequest,
    "/v1/completions": CompletionRequest,
    "/v1/responses": ResponsesRequest,
    "/tokenize": TokenizeRequest,
    "/detokenize": DetokenizeRequest,
}


# -------------------------------------------------------------- validation --
class _FieldError(ValueError):
    """A cross-field problem raised by a model validator: the field it is
    reported on and the whole message."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


M = TypeVar("M", bound=_Body)


def validate_request(model: type[M], body: dict) -> M:
    """``body`` as ``model``, or a 400 naming the first bad field."""
    try:
        return model.model_validate(body)
    except ValidationError as e:
        raise _to_api_error(model, e) from None


def _to_api_error(model: type[_Body], e: ValidationError) -> APIError:
    errors = e.errors(include_url=False)
    err = errors[0]
    path = format_path(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("<") and p.endswith(">")))
    ctx = err.get("ctx") or {}
    exc = ctx.get("error")
    if isinstance(exc, _FieldError):  # a model validator's cross-field check
        path = format_path([*(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("<"))), exc.field])
        message = exc.message
    elif err["type"] == "extra_forbidden":
        name = path.rsplit(".", 1)[-1]
        if len(err["loc"]) == 1:
            hint = model.unsupported_fields.get(name)
            message = f"Unrecognized request argument supplied: {name}" + (f" ({hint})" if hint else "")
        else:
            message = f"'{path}' is not a recognized field"
    else:
        got = err.get("input")
        expectation = _expectation(err)
        if err["type"] == "wrong_json_type" and err["msg"] in _BY_TYPE_MESSAGES:
            if isinstance(got, dict) and "type" in got:  # an unknown 'type': name that field
                path, got = f"{path}.type", got["type"]
            else:
                expectation = f"must be an object whose 'type' is {err['msg']}"
        message = f"'{path}' {expectation}"
        if err["type"] not in ("missing", "value_error"):
            message += f" (got {_describe(got)})"
    if len(errors) > 1:
        message += f"; {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''} in the request"
    return APIError(400, _printable(message), param=_printable(path), code=_code(err["type"]))


def _code(pydantic_type: str) -> str:
    """OpenAI-style error codes."""
    if pydantic_type == "extra_forbidden":
        return "unknown_parameter"
    if pydantic_type == "missing":
        return "missing_required_parameter"
    if pydantic_type.endswith("_type"):
        return "invalid_type"
    return "invalid_value"


_EXPECT = {
    "missing": "is required",
    "bool_type": "must be a boolean (true or false)",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "list_type": "must be an array",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "none_required": "must be null (not supported)",
    "finite_number": "must be a finite number",
}


def _expectation(err: dict) -> str:
    t, ctx = err["type"], err.get("ctx") or {}
    if t in _EXPECT:
        return _EXPECT[t]
    if t == "wrong_json_type":
        return f"must be {err['msg']}"
    if t == "literal_error":
        return f"must be {ctx.get('expected')}"
    if t in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        word = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[t]
        bound = next(iter(ctx.values()))
        return f"must be {word} {bound}"
    if t == "too_short":
        return f"must have at least {ctx.get('min_length')} item(s)"
    if t == "too_long":
        return f"must have at most {ctx.get('max_length')} item(s)"
    if t == "string_too_long":
        return f"must have at most {ctx.get('max_length')} characters"
    if t == "value_error":
        return str(ctx.get("error", err["msg"]))
    return err["msg"]


def _describe(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if len(repr(v)) <= 24 else "a number"
    if isinstance(v, str):
        return f"the string {v[:40]!r}" + ("…" if len(v) > 40 else "")
    if isinstance(v, list):
        return f"an array of {len(v)} item(s)"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _printable(s: str) -> str:
    return s.encode("utf-8", "backslashreplace").decode("utf-8")
