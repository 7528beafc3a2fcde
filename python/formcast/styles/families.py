"""The built-in model families (wire formats from the model-styles spec).

Most families are one of two shapes, described here as data:

- :class:`TriggeredStyle` — calls appear in free text, each starting with a
  trigger (``<tool_call>``); ``required`` means the output is calls only
  (joined by the family's separator).
- :class:`SectionStyle` — calls are grouped in a section
  (``<|tool_calls_section_begin|>`` ... ``_end|>``) that free text may open.

Harmony (gpt-oss) and Kimi-K3 lay out the whole message and have their own
builders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Optional

from .formats import (
    CallRole,
    Format,
    InputRole,
    Roles,
    TextRole,
    any_text,
    const,
    json_schema,
    one_of,
    optional,
    regex,
    sequence,
    tag,
    tags_with_separator,
    triggered_tags,
)
from .registry import Style, register_style
from .tools import CustomTool, FunctionTool, ReasoningMode, StyleError, ToolRequest

THINK = ("<think>", "</think>")


@dataclass(frozen=True)
class Thinking:
    """How a family writes its reasoning block."""

    begin: str = "<think>"
    end: str = "</think>"
    #: Text after the end tag (Qwen writes ``</think>\n\n``).
    suffix: str = ""
    #: ``enabled`` still needs the opening tag (the template does not write it).
    enabled_writes_begin: bool = False
    #: ``disabled`` makes the output start with this closed block.
    disabled_prefix: Optional[str] = None
    #: The reasoning text excludes special strings only in ``auto`` mode.
    excludes_only_in_auto: bool = False
    #: Strings reasoning may not contain besides the family's special strings.
    extra_excludes: tuple[str, ...] = ()
    #: ``auto`` also accepts the end tag alone (an empty, unopened block).
    auto_accepts_lone_end: bool = False


def reasoning_prefix(th: Optional[Thinking], mode: ReasoningMode, excludes: list[str], roles: Roles) -> Optional[Format]:
    """The reasoning block that starts the output, or None."""
    if th is None:
        return None
    if mode == "disabled":
        if th.disabled_prefix is None:
            return None
        return sequence(const(th.disabled_prefix), const(th.suffix) if th.suffix else None)
    ex = list(excludes) if excludes else []
    if ex:
        ex += [e for e in th.extra_excludes if e not in ex]
    if th.excludes_only_in_auto and mode != "auto":
        ex = []
    suffix = const(th.suffix) if th.suffix else None
    if mode == "enabled":
        block = roles.mark(tag(th.begin if th.enabled_writes_begin else "", any_text(ex), th.end), TextRole("reasoning"))
        return sequence(block, suffix)
    block = roles.mark(tag(th.begin, any_text(ex), th.end), TextRole("reasoning"))
    alternatives = [sequence(block, suffix)]
    if th.auto_accepts_lone_end:
        alternatives.append(sequence(const(th.end), suffix))
    return optional(one_of(*alternatives))


def _free_form(schema: Any) -> bool:
    """An object schema that declares no property and does not close
    itself: any keys are allowed."""
    if not isinstance(schema, dict):
        return schema is True
    return not schema.get("properties") and not schema.get("patternProperties") and schema.get("additionalProperties", True) is not False


def _explicitly_open(schema: Any) -> bool:
    """A schema without properties that asks for other keys in so many words."""
    if not isinstance(schema, dict) or schema.get("properties"):
        return False
    extra = schema.get("additionalProperties")
    return bool(schema.get("patternProperties")) or (extra is not None and extra is not False)


def custom_call(call: Callable[[str, Format], Format], tool: CustomTool, roles: Roles) -> Format:
    """A custom tool's call: the family's call wrapper with the raw input
    (free text, or text following the tool's grammar) where a function's
    arguments go."""
    return roles.mark(call(tool.name, roles.mark(tool.content(), InputRole())), CallRole(tool.name, "custom"))


def with_reasoning(prefix: Optional[Format], body: Format) -> Format:
    return sequence(prefix, body) if prefix is not None else body


@dataclass(frozen=True)
class Family(Style):
    """Fields shared by the data-driven families."""

    name: str  # type: ignore[misc]
    #: Builds the tag of one call: (function name, arguments format) -> tag.
    call: Callable[[str, Format], Format]
    models: str = ""  # type: ignore[misc]
    #: ``json_schema`` style of the arguments.
    args_style: str = "json"
    thinking: Optional[Thinking] = field(default_factory=Thinking)
    #: Special strings free text may not contain (with exclude_special_tokens).
    special: tuple[str, ...] = THINK
    #: Extra strings excluded from the text when no call is possible.
    none_excludes: tuple[str, ...] = ()

    def arguments(self, fn: FunctionTool) -> Format:
        schema = fn.schema
        if self.args_style in ("minimax_m3_xml", "cohere_xml") and _free_form(schema):
            # These styles cannot write free-form keys: fall back to the
            # declared parameters, or to no arguments at all (a tool without
            # parameters, `{"type": "object"}` or `{"type": "object",
            # "properties": {}}`, takes none). Parameters that ask for
            # free-form keys explicitly are refused rather than narrowed.
            for s in (fn.parameters, schema):
                if _explicitly_open(s):
                    raise StyleError(
                        f"function {fn.name!r}: the {self.name} style cannot write arguments with free-form keys "
                        "(additionalProperties / patternProperties without properties); declare the properties"
                    )
            declared = fn.parameters if fn.parameters and not _free_form(fn.parameters) else None
            schema = declared or {"type": "object", "properties": {}, "additionalProperties": False}
        return json_schema(schema, self.args_style)

    def calls(self, request: ToolRequest, roles: Roles) -> list[Format]:
        return [custom_call(self.call, fn, roles) if isinstance(fn, CustomTool)
                else roles.mark(self.call(fn.name, self.arguments(fn)), CallRole(fn.name)) for fn in request.functions]

    def excludes(self, request: ToolRequest) -> list[str]:
        return list(self.special) if request.exclude_special_tokens else []

    def text_only(self, request: ToolRequest) -> Format:
        ex = self.excludes(request)
        if request.exclude_special_tokens:
            ex += [e for e in self.none_excludes if e not in ex]
        return any_text(ex)

    def build(self, request: ToolRequest, roles: Roles) -> Format:
        prefix = reasoning_prefix(self.thinking, request.reasoning, self.excludes(request), roles)
        if not request.calls_allowed:
            return with_reasoning(prefix, self.text_only(request))
        return with_reasoning(prefix, self.body(request, roles))

    def body(self, request: ToolRequest, roles: Roles) -> Format:
        raise NotImplementedError


@dataclass(frozen=True)
class TriggeredStyle(Family):
    """Calls inside free text, each opened by ``trigger``.

    With ``tool_choice="required"`` the output is calls only: one or more
    (one without ``parallel_tool_calls``), joined by ``call_separator``, with
    no text before, between or after them; a whitespace separator may also
    follow the last call once (the reference engine's
    ``triggered_tags(at_least_one=True)`` lets free text follow the first
    call; formcast does not)."""

    trigger: str = "<tool_call>"
    #: What the family's chat template writes between consecutive calls.
    call_separator: str = ""

    def body(self, request: ToolRequest, roles: Roles) -> Format:
        calls = self.calls(request, roles)
        if request.mode == "forced":
            return calls[0]
        if request.mode == "required":
            listed = tags_with_separator(calls, self.call_separator, at_least_one=True, stop_after_first=not request.parallel)
            if self.call_separator.strip():
                return listed
            # A whitespace separator may also end the turn once: a model that
            # writes its usual newline after the last call must still be
            # able to stop, instead of being held to start another call.
            return sequence(listed, optional(const(self.call_separator))) if self.call_separator else listed
        return triggered_tags(
            [self.trigger],
            calls,
            self.excludes(request),
            stop_after_first=not request.parallel,
        )


@dataclass(frozen=True)
class SectionStyle(Family):
    """Calls grouped in one section that free text may open."""

    section_begin: str = ""
    section_end: str = ""
    separator: str = ""
    #: What opens the section in free text (default: ``section_begin``).
    trigger: Optional[str] = None
    #: Text before the section when a call is required or forced.
    required_prefix: str = ""
    #: A forced call is one tag with the section strings folded in.
    fold_forced: bool = False

    def body(self, request: ToolRequest, roles: Roles) -> Format:
        calls = self.calls(request, roles)
        begin = self.required_prefix + self.section_begin
        if request.mode == "forced":
            if self.fold_forced:
                t = dict(calls[0])
                t["begin"] = begin + t["begin"]
                t["end"] = t["end"] + self.section_end
                return roles.mark(t, CallRole(request.functions[0].name))
            return sequence(const(begin), calls[0], const(self.section_end))
        listed = tags_with_separator(calls, self.separator, at_least_one=True, stop_after_first=not request.parallel)
        if request.mode == "required":
            return sequence(const(begin), listed, const(self.section_end))
        section = tag(self.section_begin, listed, self.section_end)
        return triggered_tags(
            [self.trigger or self.section_begin],
            [section],
            self.excludes(request),
            stop_after_first=not request.parallel,
        )


def _fmt(begin: str, end: str) -> Callable[[str, Format], Format]:
    """A call tag ``begin.format(name=...) args end``."""
    return lambda name, args: tag(begin.format(name=name), args, end)


DSML = "｜DSML｜"


def _dsml_style(name: str, models: str, *, section: str, invoke: str = "invoke",
                args_style: str = "deepseek_xml", **extra) -> SectionStyle:
    """DeepSeek's DSML family: ``<｜DSML｜{section}>`` around
    ``<｜DSML｜{invoke} name="…">`` calls, after a blank line."""
    return SectionStyle(
        name=name,
        models=models,
        call=_fmt(f'<{DSML}{invoke} name="{{name}}">\n', f"</{DSML}{invoke}>\n"),
        args_style=args_style,
        section_begin=f"<{DSML}{section}>\n",
        section_end=f"</{DSML}{section}>",
        trigger=f"<{DSML}{section}>",
        required_prefix="\n\n",
        **extra,
    )
M3 = "]<]minimax[>["

BUILTIN_FAMILIES: list[Family] = [
    TriggeredStyle(
        name="llama",
        models="Llama 3, 3.1, 3.2",
        call=_fmt('{{"name": "{name}", "parameters": ', "}"),
        thinking=None,
        trigger='{"name": ',
        # The template writes one call per message; "; " is what vLLM's
        # llama3_json reader splits parallel calls on.
        call_separator="; ",
    ),
    SectionStyle(
        name="kimi",
        models="Kimi-K2, K2.5",
        call=lambda name, args: tag(
            f"<|tool_call_begin|>functions.{name}:",
            sequence(regex(r"\d+"), const("<|tool_call_argument_begin|>"), args),
            "<|tool_call_end|>",
        ),
        thinking=Thinking(excludes_only_in_auto=True),
        special=THINK + ("<|tool_call_begin|>",),
        section_begin="<|tool_calls_section_begin|>",
        section_end="<|tool_calls_section_end|>",
    ),
    SectionStyle(
        name="deepseek_r1",
        models="DeepSeek-R1, R1-0528",
        call=_fmt("<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n", "\n```<｜tool▁call▁end｜>"),
        section_begin="<｜tool▁calls▁begin｜>",
        section_end="<｜tool▁calls▁end｜>",
        separator="\n",
        fold_forced=True,
    ),
    SectionStyle(
        name="deepseek_v3_1",
        models="DeepSeek-V3.1, V3.2-Exp",
        call=_fmt("<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>", "<｜tool▁call▁end｜>"),
        section_begin="<｜tool▁calls▁begin｜>",
        section_end="<｜tool▁calls▁end｜>",
    ),
    TriggeredStyle(
        name="qwen_3",
        models="Qwen3, Qwen3-Next",
        call=_fmt('<tool_call>\n{{"name": "{name}", "arguments": ', "}\n</tool_call>"),
        thinking=Thinking(suffix="\n\n"),
        call_separator="\n",
    ),
    TriggeredStyle(
        name="qwen_3_5",
        models="Qwen3.5, Qwen3.6, Qwen3-Coder, Qwen3-Coder-Next",
        # The template writes "\n</parameter>\n" after each parameter and then
        # "</function>": the newline before "</function>" is the parameters'
        # trailing whitespace, so a call without arguments
        # ("<function=NAME>\n</function>") is accepted too.
        call=_fmt("<tool_call>\n<function={name}>\n", "</function>\n</tool_call>"),
        args_style="qwen_xml",
        thinking=Thinking(suffix="\n\n"),
        trigger="<tool_call>\n<function=",
        call_separator="\n",
    ),
    TriggeredStyle(
        name="mimo",
        models="MiMo-V2.6",
        call=_fmt("<tool_call><function={name}>", "</function></tool_call>"),
        args_style="qwen_xml",
        thinking=Thinking(enabled_writes_begin=True),
        special=THINK + ("</tool_call>", "<function="),
    ),
    _dsml_style("deepseek_v3_2", "DeepSeek-V3.2", section="function_calls"),
    _dsml_style("deepseek_v4", "DeepSeek-V4", section="tool_calls"),
    # V4.1 puts a space after the DSML marker in every tag.
    _dsml_style("deepseek_v4_1", "DeepSeek-V4.1-Flash", section=" calls", invoke=" invoke",
                args_style="deepseek_v4_1_xml", none_excludes=(f"<{DSML} calls>",)),
    SectionStyle(
        name="minimax",
        models="MiniMax-M2.5, M2.7",
        call=_fmt('<invoke name="{name}">\n', "</invoke>\n"),
        args_style="minimax_xml",
        thinking=Thinking(suffix="\n\n", disabled_prefix="\n</think>\n\n"),
        section_begin="<minimax:tool_call>\n",
        section_end="</minimax:tool_call>",
        trigger="<minimax:tool_call>",
        required_prefix="\n",
    ),
    SectionStyle(
        name="minimax_m3",
        models="MiniMax-M3",
        call=_fmt(f'{M3}<invoke name="{{name}}">', f"{M3}</invoke>\n"),
        args_style="minimax_m3_xml",
        thinking=Thinking(begin="<mm:think>", end="</mm:think>", auto_accepts_lone_end=True),
        # Stray markers: the namespace token may only open the section.
        special=("<mm:think>", "</mm:think>", f"{M3}<invoke", f"{M3}</invoke>", f"{M3}</tool_call>"),
        section_begin=f"{M3}<tool_call>\n",
        section_end=f"{M3}</tool_call>",
        trigger=f"{M3}<tool_call>",
    ),
    TriggeredStyle(
        name="glm_4_7",
        models="GLM-4.7, GLM-5",
        call=_fmt("<tool_call>{name}", "</tool_call>"),
        args_style="glm_xml",
        thinking=Thinking(extra_excludes=("<tool_call>",)),
        special=THINK + ("</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"),
    ),
    SectionStyle(
        name="cohere",
        models="Cohere Command (XML tool calls)",
        call=lambda name, args: tag(
            '<cofl:tool_call id="',
            sequence(regex(r"\d+"), const(f'" name="{name}">'), args),
            "</cofl:tool_call>",
        ),
        args_style="cohere_xml",
        thinking=Thinking(begin="<|START_THINKING|>", end="<|END_THINKING|>"),
        special=("<|START_THINKING|>", "<|END_THINKING|>"),
        section_begin="<cofl:tool_calls>",
        section_end="</cofl:tool_calls>",
    ),
    TriggeredStyle(
        name="exaone",
        models="EXAONE-4.0",
        call=_fmt('<tool_call>{{"name": "{name}", "arguments": ', "}</tool_call>"),
        thinking=Thinking(suffix="\n\n"),
        call_separator="\n",
    ),
]


class HarmonyStyle(Style):
    """gpt-oss: every part of the answer is a message on a channel."""

    name = "harmony"
    models = "gpt-oss"
    supports_builtin_tools = True
    special = ("<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|call|>", "<|end|>", "<|return|>")
    separator = "<|start|>assistant"

    def _calls(self, request: ToolRequest, roles: Roles, ex: list[str]) -> list[Format]:
        out = []
        for fn in request.functions:
            if isinstance(fn, CustomTool):
                for begin in (f"<|channel|>commentary to=functions.{fn.name}<|message|>",
                              f" to=functions.{fn.name}<|channel|>commentary<|message|>"):
                    out.append(custom_call(lambda name, content, begin=begin: tag(begin, content, "<|call|>"), fn, roles))
                continue
            args = json_schema(fn.schema)
            for begin in (
                f"<|channel|>commentary to=functions.{fn.name}<|constrain|>json<|message|>",
                f" to=functions.{fn.name}<|channel|>commentary <|constrain|>json<|message|>",
                f" to=functions.{fn.name}<|channel|>commentary json<|message|>",
            ):
                out.append(roles.mark(tag(begin, args, "<|call|>"), CallRole(fn.name)))
        for name in request.builtin_tools:
            for begin in (f"<|channel|>commentary to={name} code<|message|>", f" to={name}<|channel|>commentary code<|message|>"):
                out.append(roles.mark(tag(begin, any_text(ex), "<|call|>"), CallRole(name, "builtin")))
        return out

    def build(self, request: ToolRequest, roles: Roles) -> Format:
        ex = list(self.special) if request.exclude_special_tokens else []
        ends = ["<|end|>", "<|return|>"]
        messages = []
        if request.reasoning != "disabled":
            messages.append(roles.mark(tag("<|channel|>analysis<|message|>", any_text(ex), ends), TextRole("reasoning")))
        if not request.calls_allowed or request.mode == "auto":
            messages.append(roles.mark(tag("<|channel|>final<|message|>", any_text(ex), ends), TextRole("content")))
        if not request.calls_allowed:
            return tags_with_separator(messages, self.separator)
        calls = self._calls(request, roles, ex)
        if request.mode == "auto":
            if request.parallel:
                return tags_with_separator(messages + calls, self.separator)
            return one_of(
                tags_with_separator(messages, self.separator),
                one_of(*calls),
                sequence(tags_with_separator(messages, self.separator, at_least_one=True), const(self.separator), one_of(*calls)),
            )
        if request.mode == "forced":
            tail = one_of(*calls)
        else:
            tail = tags_with_separator(calls, self.separator, at_least_one=True, stop_after_first=not request.parallel)
        if not messages:
            return tail
        lead = sequence(tags_with_separator(messages, self.separator, at_least_one=True), const(self.separator))
        return sequence(optional(lead), tail)


class KimiK3Style(Style):
    """Kimi-K3: [think] response [tools] end-of-message, all as open/close blocks."""

    name = "kimi_k3"
    models = "Kimi-K3"
    special = ("<|open|>", "<|close|>", "<|sep|>")

    def build(self, request: ToolRequest, roles: Roles) -> Format:
        ex = list(self.special) if request.exclude_special_tokens else []
        think_end = "<|close|>think<|sep|>"
        prefix: Optional[Format] = None
        if request.reasoning == "enabled":
            prefix = roles.mark(tag("", any_text(ex), think_end), TextRole("reasoning"))
        elif request.reasoning == "auto":
            prefix = optional(roles.mark(tag("<|open|>think<|sep|>", any_text(ex), think_end), TextRole("reasoning")))
        # With reasoning disabled the prompt already opened the response.
        response_begin = "" if request.reasoning == "disabled" else "<|open|>response<|sep|>"
        response_end = "<|close|>response<|sep|>"
        if request.calls_allowed and request.mode in ("required", "forced"):
            # The turn is calls only: the response block the layout always
            # has stays empty.
            response: Format = const(response_begin + response_end)
        else:
            response = tag(response_begin, any_text(ex), response_end)
        block: Optional[Format] = None
        if request.calls_allowed:
            def call(name: str, content: Format) -> Format:
                return tag(f'<|open|>call tool="{name}" index="', sequence(regex(r"\d+"), const('"<|sep|>'), content), "<|close|>call<|sep|>")

            calls = [
                custom_call(call, fn, roles) if isinstance(fn, CustomTool)
                else roles.mark(call(fn.name, json_schema(fn.schema, "kimi_k3_xml")), CallRole(fn.name))
                for fn in request.functions
            ]
            if request.mode == "forced":
                listed = calls[0]
            else:
                listed = tags_with_separator(calls, "", at_least_one=True, stop_after_first=not request.parallel)
            block = tag("<|open|>tools<|sep|>", listed, "<|close|>tools<|sep|>")
            if request.mode == "auto":
                block = optional(block)
        return sequence(prefix, response, block, const("<|close|>message<|sep|>"))


def register_builtin_styles() -> None:
    for style in [*BUILTIN_FAMILIES, HarmonyStyle(), KimiK3Style()]:
        register_style(style, replace=True)
    # Qwen3-Coder writes exactly like Qwen3.5.
    register_style(TriggeredStyle(**{**_fields(_by_name("qwen_3_5")), "name": "qwen_3_coder"}), replace=True)


def _by_name(name: str) -> Family:
    return next(f for f in BUILTIN_FAMILIES if f.name == name)


def _fields(f: Family) -> dict[str, Any]:
    import dataclasses

    return {x.name: getattr(f, x.name) for x in dataclasses.fields(f)}
