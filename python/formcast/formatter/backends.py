"""Generation backends of the formatter.

A backend turns one :class:`GenerationRequest` (a prompt, and the JSON Schema
the output must match when decoding is constrained) into one
:class:`Completion`.  Two kinds exist:

* ``"openai"`` — :class:`OpenAIBackend`, any OpenAI-compatible chat
  completions endpoint (formcast's server, llama.cpp's, vLLM, ...) through the
  ``openai`` client; constrained requests send
  ``response_format={"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}``,
  which the server enforces.
* ``"local"`` — :class:`formcast.formatter.local.LocalBackend`: the embedded
  SmolLM2-135M-Instruct or any GGUF, decoded in-process by
  ``formcast.runtime`` with formcast token masks.  Its module registers it
  with :func:`register_backend` when imported (on first use); without
  llama-cpp-python, asking for it raises :class:`BackendUnavailableError` —
  there is no fallback.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, runtime_checkable

__all__ = [
    "GenerationRequest",
    "Completion",
    "Backend",
    "BackendError",
    "BackendUnavailableError",
    "TransientBackendError",
    "OpenAIBackend",
    "register_backend",
    "create_backend",
    "available_backends",
]


class BackendError(RuntimeError):
    """A generation request failed for this input (e.g. the server rejected the schema)."""


class TransientBackendError(BackendError):
    """The endpoint could not be reached or is overloaded; retrying later may work."""


class BackendUnavailableError(BackendError):
    """The requested backend is not installed in this build."""


@dataclass(frozen=True)
class GenerationRequest:
    """One formatting call.

    Attributes:
        prompt: the user message (the rendered prompt template).
        schema: when not None, decoding must produce JSON matching it.
        max_tokens: generation limit (the paper: 2048).
        temperature: sampling temperature (the paper: 0).
        top_p: nucleus sampling (the paper: 0.9).
        seed: sampling seed, if the backend supports one.
        schema_name: the ``name`` sent with ``response_format`` json_schema.
        structural_tag: when not None, decoding follows this structural tag
            (``{"type": "structural_tag", "format": ...}``) instead of
            ``schema`` -- what grounded mode sends
            (:func:`formcast.formatter.grounding.grounded_tag`).
        frequency_penalty, presence_penalty: OpenAI's penalties on tokens
            already generated, applied before the constraint's mask.
        no_repeat_ngram_size: ban tokens that would repeat an n-gram of this
            many tokens of the output (0: off; before the mask).
        loop_guard: close a string value that starts repeating itself.
    """

    prompt: str
    schema: Mapping[str, Any] | None = None
    max_tokens: int = 2048
    temperature: float = 0.0
    top_p: float = 0.9
    seed: int | None = None
    schema_name: str = "formatted_output"
    structural_tag: Mapping[str, Any] | None = None
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    no_repeat_ngram_size: int = 0
    loop_guard: bool = False


@dataclass(frozen=True)
class Completion:
    """A backend's answer: the raw text and why generation stopped."""

    text: str
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    """What the formatter needs from a model: one request in, one completion out.

    Implementations must be safe to call from several threads when the
    formatter runs batches with ``max_workers > 1``; a backend that is not can
    say so with ``max_concurrency = 1``.
    """

    name: str

    def generate(self, request: GenerationRequest) -> Completion:
        """Generate one completion; raise :class:`BackendError` on failure."""
        ...


class OpenAIBackend:
    """Any OpenAI-compatible chat completions endpoint.

    Args:
        model: the model name sent with each request; ``None`` asks the
            endpoint (``GET /v1/models``) and uses the first model listed.
        base_url: e.g. ``http://127.0.0.1:8080/v1``.  Defaults to the
            ``openai`` client's own default (``OPENAI_BASE_URL`` or OpenAI).
        api_key: defaults to ``OPENAI_API_KEY``, or a placeholder for local
            servers that need none.
        timeout: seconds per request (the paper: 60).
        max_retries: the client's retries on connection errors and 5xx/429.
        system_prompt: an optional system message before the prompt.
        extra_body: extra JSON fields for every request (e.g. ``{"top_k": 50}``).
        schema_format: how constrained requests carry the schema:
            ``"json_schema"`` (default, the OpenAI form
            ``{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}``)
            or ``"json_object"`` (``{"type": "json_object", "schema": ...}``,
            the form llama-cpp-python's server and some hosted APIs take).
    """

    name = "openai"
    max_concurrency = 64

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        system_prompt: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        client: Any | None = None,
        schema_format: str = "json_schema",
    ) -> None:
        import os

        if schema_format not in ("json_schema", "json_object"):
            raise ValueError(f"schema_format must be 'json_schema' or 'json_object', not {schema_format!r}")
        self.schema_format = schema_format

        import openai

        self._openai = openai
        if client is None:
            key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
            client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)
        self.client = client
        self.system_prompt = system_prompt
        self.extra_body = dict(extra_body or {})
        self._model = model

    @property
    def model(self) -> str:
        """The model name (asked from the endpoint on first use when not given)."""
        if self._model is None:
            try:
                models = self.client.models.list()
            except self._openai.APIError as exc:
                raise self._error(exc) from exc
            ids = [m.id for m in getattr(models, "data", [])]
            if not ids:
                raise BackendError(f"{self.client.base_url} lists no models; pass model=")
            self._model = ids[0]
        return self._model

    def _error(self, exc: Exception) -> BackendError:
        o = self._openai
        where = str(self.client.base_url)
        if isinstance(exc, o.APITimeoutError):
            return BackendError(f"{where}: request timed out")
        if isinstance(exc, (o.APIConnectionError, o.RateLimitError, o.InternalServerError)):
            return TransientBackendError(f"{where}: {type(exc).__name__}: {exc}")
        if isinstance(exc, (o.AuthenticationError, o.PermissionDeniedError, o.NotFoundError)):
            return TransientBackendError(f"{where}: {type(exc).__name__}: {exc} (check base_url, model and api_key)")
        return BackendError(f"{where}: {type(exc).__name__}: {exc}")

    def generate(self, request: GenerationRequest) -> Completion:
        messages = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": request.prompt})
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.no_repeat_ngram_size or request.loop_guard:
            raise BackendError(
                "no_repeat_ngram_size and loop_guard act inside the decode loop: they need the local backend"
            )
        if request.frequency_penalty:
            kwargs["frequency_penalty"] = request.frequency_penalty
        if request.presence_penalty:
            kwargs["presence_penalty"] = request.presence_penalty
        if request.structural_tag is not None:
            # formcast serve takes it; endpoints without structural tags answer 400.
            kwargs["response_format"] = dict(request.structural_tag)
        elif request.schema is not None:
            if self.schema_format == "json_object":
                kwargs["response_format"] = {"type": "json_object", "schema": dict(request.schema)}
            else:
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": request.schema_name, "schema": dict(request.schema), "strict": True},
                }
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        try:
            response = self.client.chat.completions.create(**kwargs)
        except self._openai.APIError as exc:
            raise self._error(exc) from exc
        if not response.choices:
            raise BackendError(f"{self.client.base_url}: response has no choices")
        choice = response.choices[0]
        usage = {}
        if getattr(response, "usage", None) is not None:
            usage = {k: v for k, v in response.usage.model_dump().items() if isinstance(v, int)}
        return Completion(choice.message.content or "", choice.finish_reason, usage)

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self._model!r}, base_url={str(self.client.base_url)!r})"


BackendFactory = Callable[..., Backend]
_REGISTRY: dict[str, BackendFactory] = {"openai": OpenAIBackend}
# Modules that register backends when imported, and the module each needs.
_PROVIDERS: dict[str, str] = {"local": "formcast.formatter.local"}
_REQUIRES: dict[str, str] = {"local": "llama_cpp"}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make a backend available to ``Formatter(backend=name)`` and the CLI.

    ``factory(model=..., **options)`` must return a :class:`Backend`.
    ``formcast.formatter.local`` registers ``"local"`` this way.
    """
    _REGISTRY[name] = factory


def available_backends() -> list[str]:
    """Names of the backends that can be created now."""
    names = set(_REGISTRY)
    for name, module in _PROVIDERS.items():
        needs = _REQUIRES.get(name, module)
        if name not in names and importlib.util.find_spec(needs) is not None:
            names.add(name)
    return sorted(names)


def create_backend(name: str, **options: Any) -> Backend:
    """Create a registered backend by name.

    Raises:
        BackendUnavailableError: no such backend in this build (``"local"``
            needs llama-cpp-python).
    """
    missing: str | None = None
    if name not in _REGISTRY and name in _PROVIDERS:
        needs = _REQUIRES.get(name)
        if needs is not None and importlib.util.find_spec(needs) is None:
            missing = needs
        else:
            importlib.import_module(_PROVIDERS[name])
    if name not in _REGISTRY:
        if name == "local":
            raise BackendUnavailableError(
                f"the local backend (embedded model or a GGUF file, decoded in-process with formcast "
                f"token masks) needs the module {missing or 'llama_cpp'} (pip install llama-cpp-python); "
                "or serve the model behind an OpenAI-compatible endpoint and pass base_url= "
                "(CLI: --base-url)"
            )
        raise BackendUnavailableError(f"unknown backend {name!r}; available: {', '.join(available_backends())}")
    return _REGISTRY[name](**options)


def schema_summary(schema: Mapping[str, Any]) -> str:
    """A short JSON rendering of a schema for error messages."""
    text = json.dumps(schema, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."
