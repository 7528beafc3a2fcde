"""The style registry and the one entry point, :func:`structural_tag_for`."""

from __future__ import annotations

import abc
import threading
from typing import Any, ClassVar, Optional, Sequence, Union

from .formats import Format, Path, Role, Roles, TextRole, structural_tag
from .tools import ReasoningMode, StyleError, ToolRequest, normalize_request

__all__ = ["Style", "StyleTag", "register_style", "get_style", "available_styles", "structural_tag_for", "answer_or_calls"]


class Style(abc.ABC):
    """How one model family writes reasoning, text and tool calls.

    Subclass it and implement :meth:`build`, which returns the format tree
    for a validated :class:`~formcast.styles.ToolRequest`. Mark each
    tool-call ``tag`` (and each reasoning region) in ``roles``: the output
    parser reads the same tree, and the roles tell it which text is which.
    """

    #: Registry key, e.g. ``"qwen_3"``.
    name: ClassVar[str]
    #: Which models write this way (documentation only).
    models: ClassVar[str] = ""
    #: Reasoning mode when the caller passes ``reasoning=None``.
    default_reasoning: ClassVar[ReasoningMode] = "enabled"
    #: Whether non-function tools (``builtin_tools``) can be called.
    supports_builtin_tools: ClassVar[bool] = False

    @abc.abstractmethod
    def build(self, request: ToolRequest, roles: Roles) -> Format:
        """The ``format`` of the structural tag for ``request``."""


class StyleTag(dict):
    """A structural tag (``{"type": "structural_tag", "format": ...}``) as a
    plain dict, carrying what the output parser needs on the side.

    It compares, serializes and compiles like the dict it is; ``roles`` maps
    the path of each tool-call or reasoning node to its role.
    """

    def __init__(self, tag: Format, *, style: str, roles: dict[Path, Role], request: ToolRequest) -> None:
        super().__init__(tag)
        self.style = style
        self.roles = roles
        self.request = request

    def __reduce__(self):  # keep the side data through copy/pickle
        return (_rebuild_style_tag, (dict(self), self.style, self.roles, self.request))


def _rebuild_style_tag(tag: Format, style: str, roles: dict[Path, Role], request: ToolRequest) -> "StyleTag":
    return StyleTag(tag, style=style, roles=roles, request=request)


_REGISTRY: dict[str, Style] = {}
_LOCK = threading.Lock()


def register_style(style: Style, *, replace: bool = False) -> Style:
    """Adds ``style`` under ``style.name``. Re-registering a name is an
    error unless ``replace`` is set."""
    if not isinstance(style, Style):
        raise TypeError(f"register_style expects a Style instance, not {type(style).__name__}")
    name = getattr(style, "name", None)
    if not isinstance(name, str) or not name:
        raise StyleError("a style needs a non-empty string `name`")
    with _LOCK:
        if name in _REGISTRY and not replace:
            raise StyleError(f"style {name!r} is already registered (pass replace=True to override it)")
        _REGISTRY[name] = style
    return style


def get_style(name: str) -> Style:
    """The registered style called ``name``."""
    with _LOCK:
        style = _REGISTRY.get(name)
    if style is None:
        raise StyleError(f"unknown style {name!r}; registered styles: {', '.join(available_styles())}")
    return style


def available_styles() -> list[str]:
    """Names of every registered style, sorted."""
    with _LOCK:
        return sorted(_REGISTRY)


def structural_tag_for(
    style: Union[str, Style],
    tools: Optional[Sequence[Any]] = None,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    reasoning: Union[str, bool, None] = None,
    *,
    builtin_tools: Sequence[str] = (),
    exclude_special_tokens: bool = True,
) -> StyleTag:
    """The structural tag a model of ``style`` must follow for an OpenAI
    request's ``tools``, ``tool_choice`` and ``parallel_tool_calls``.

    ``reasoning`` is ``"enabled"`` (the chat template already opened the
    thinking block: the output starts inside it), ``"auto"`` (an optional
    complete block), ``"disabled"``, a bool, or None for the style's
    default. ``builtin_tools`` names non-function tools (harmony only).
    ``exclude_special_tokens=False`` lets free text contain the model's
    special strings. Raises :class:`StyleError` naming the bad field.
    """
    s = get_style(style) if isinstance(style, str) else style
    request = normalize_request(
        tools,
        tool_choice,
        parallel_tool_calls,
        reasoning,
        default_reasoning=s.default_reasoning,
        builtin_tools=builtin_tools,
        exclude_special_tokens=exclude_special_tokens,
    )
    if request.builtin_tools and not s.supports_builtin_tools:
        raise StyleError(f"builtin_tools: style {s.name!r} has no built-in tools")
    roles = Roles()
    tag = structural_tag(s.build(request, roles))
    return StyleTag(tag, style=s.name, roles=roles.resolve(tag), request=request)


def answer_or_calls(answer: Format, calls: StyleTag) -> StyleTag:
    """The structural tag for "either this answer or tool calls": ``or(answer,
    calls)``, with the roles the output parser needs. The answer's whole text
    is content, its literal strings included; the calls keep the roles of
    ``calls`` (a tag from :func:`structural_tag_for`, typically with
    ``tool_choice`` required).

    Built as a plain dict instead, the union loses the roles: the parser
    then guesses them from ``tools``, reads the answer's own tags as
    syntax, and refuses a JSON-holding answer tag that names no tool.
    """
    if not isinstance(calls, StyleTag):
        raise TypeError("calls must be a StyleTag from structural_tag_for")
    fmt = answer.get("format", answer) if answer.get("type") == "structural_tag" else answer
    tag = structural_tag({"type": "or", "elements": [fmt, calls["format"]]})
    roles: dict[Path, Role] = {("format", "elements", 0): TextRole("content", verbatim=True)}
    for path, role in calls.roles.items():
        if path[:1] == ("format",):
            roles[("format", "elements", 1) + path[1:]] = role
    return StyleTag(tag, style=calls.style, roles=roles, request=calls.request)
