"""The formatter: unstructured text + JSON Schema -> JSON value."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence

from .._depth import MAX_CHECK_DEPTH, MAX_JSON_DEPTH, NestingError, check_nesting, loads
from .backends import (
    Backend,
    BackendError,
    Completion,
    GenerationRequest,
    OpenAIBackend,
    create_backend,
    schema_summary,
)
from .prompts import PAPER_PROMPT, render_prompt, validate_template

__all__ = ["Formatter", "FormatError", "SchemaLike", "as_schema"]

SchemaLike = Mapping[str, Any] | str | type


#: The local backend's default no-repeat n-gram size (see the Formatter docs).
DEFAULT_NO_REPEAT_NGRAM = 4


class FormatError(ValueError):
    """The model's output is not valid JSON, or does not match the schema.

    Attributes:
        raw: the model's raw output.
        reason: why it was rejected.
    """

    def __init__(self, reason: str, raw: str) -> None:
        shown = raw if len(raw) <= 200 else raw[:197] + "..."
        super().__init__(f"{reason}; output was {shown!r}")
        self.raw = raw
        self.reason = reason


def as_schema(schema: SchemaLike) -> dict[str, Any]:
    """A JSON Schema dict from a dict, a JSON string, or a pydantic model class."""
    if isinstance(schema, type):
        try:
            from pydantic import BaseModel
        except ImportError:  # pragma: no cover
            BaseModel = None  # type: ignore[assignment]
        if BaseModel is not None and issubclass(schema, BaseModel):
            return schema.model_json_schema()
        raise TypeError(f"{schema.__name__} is not a pydantic model; pass a JSON Schema dict")
    if isinstance(schema, str):
        try:
            schema = loads(schema)
        except NestingError as exc:
            raise ValueError(f"schema string: {exc}") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"schema string is not JSON: {exc}") from None
    if not isinstance(schema, Mapping):
        raise TypeError(f"a schema is a dict, a JSON string or a pydantic model, not {type(schema).__name__}")
    # It is serialized into prompts and requests (json.dumps recurses).
    check_nesting(schema, MAX_JSON_DEPTH, "the schema")  # NestingError is a ValueError
    return dict(schema)


class Formatter:
    """Turns free text into JSON that follows a schema, with a (small) language model.

    Args:
        model: model name on an endpoint, a GGUF path, or None (the endpoint's
            first model; for the local backend, the embedded model).
        base_url: an OpenAI-compatible endpoint (``http://host:port/v1``);
            selects the ``"openai"`` backend.
        backend: a backend name (``"openai"``, ``"local"``) or a
            :class:`~formcast.formatter.backends.Backend` instance; default:
            ``"openai"`` when ``base_url`` is given, else ``"local"``.
        constrained: constrained decoding (default): the backend must produce
            JSON matching the schema.  ``False`` is the paper's "prompting
            only" baseline: the schema is only in the prompt.
        prompt_template: the prompt, with ``{input_text}`` and
            ``{json_schema}`` placeholders (default: the paper's, App. F.1).
        max_tokens, temperature, top_p, seed: generation settings (defaults
            from the paper's Table 4: 2048, 0, 0.9).
        max_workers: parallel requests in batches.
        frequency_penalty, presence_penalty: OpenAI's penalties on tokens
            already generated (applied before the constraint's mask, so the
            answer still matches the schema).
        no_repeat_ngram_size: ban every token that would repeat an n-gram of
            this many tokens of the answer (0: off; local backend; a finite
            ban applied before the mask, so a token the grammar forces still
            comes). Default (``None``): 4 for the local backend when
            constrained (the best-scoring setting on the dev sets, see
            docs/formatter.md), else 0.
        loop_guard: close a string value that starts repeating itself, keeping
            its first repetition (local backend, constrained). Default
            (``None``): on for the local backend when constrained, else off.
        grounded: every string value must be a substring of the input text
            (constrained; see :mod:`formcast.formatter.grounding`); fields the
            model must write itself (numbers, enums, formats, and
            ``generated_fields``) are generated under their own schema.
        generated_fields: with ``grounded``, field paths not to ground
            (``"category"``, ``"properties.birthDate"``, ``"starring[]"``).
        validate: check every output against the schema with jsonschema
            (:meth:`format` raises :class:`FormatError` if it does not match).
        **backend_options: passed to the backend factory (e.g. ``api_key``,
            ``timeout``, ``system_prompt``, ``extra_body``).

    Example::

        fmt = Formatter("my-model", base_url="http://127.0.0.1:8080/v1")
        fmt.format("Blue Spice is a pub by the river.", schema)
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        backend: str | Backend | None = None,
        constrained: bool = True,
        prompt_template: str = PAPER_PROMPT,
        max_tokens: int = 2048,
        temperature: float = 0.0,
        top_p: float = 0.9,
        seed: int | None = None,
        max_workers: int = 1,
        validate: bool = True,
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        no_repeat_ngram_size: int | None = None,
        loop_guard: bool | None = None,
        grounded: bool = False,
        generated_fields: Sequence[str] = (),
        **backend_options: Any,
    ) -> None:
        validate_template(prompt_template)
        if max_workers < 1:
            raise ValueError("max_workers must be >= 1")
        if no_repeat_ngram_size is not None and no_repeat_ngram_size < 0:
            raise ValueError("no_repeat_ngram_size must be >= 0")
        for name, value in (("frequency_penalty", frequency_penalty), ("presence_penalty", presence_penalty)):
            if not -2.0 <= value <= 2.0:
                raise ValueError(f"{name} must be between -2 and 2, as OpenAI defines it")
        if (grounded or loop_guard) and not constrained:
            raise ValueError("grounded and loop_guard constrain the answer: they need constrained=True")
        if generated_fields and not grounded:
            raise ValueError("generated_fields only applies with grounded=True")
        if isinstance(generated_fields, str):
            raise TypeError("generated_fields is a sequence of field paths, not one string")
        self.frequency_penalty = float(frequency_penalty)
        self.presence_penalty = float(presence_penalty)
        # The decode-loop guards default to on where they can act: a local
        # backend decoding under a constraint.
        name = backend if isinstance(backend, str) else getattr(backend, "name", None)
        if name is None:
            name = "openai" if base_url is not None else "local"
        guarded = constrained and name == "local"
        if no_repeat_ngram_size is None:
            no_repeat_ngram_size = DEFAULT_NO_REPEAT_NGRAM if guarded else 0
        if loop_guard is None:
            loop_guard = guarded
        self.no_repeat_ngram_size = int(no_repeat_ngram_size)
        self.loop_guard = bool(loop_guard)
        self.grounded = bool(grounded)
        self.generated_fields = tuple(generated_fields)
        self.model = model
        self.constrained = constrained
        self.prompt_template = prompt_template
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.max_workers = max_workers
        self.validate = validate
        if backend is None:
            backend = "openai" if base_url is not None else "local"
        if backend == "openai" and (no_repeat_ngram_size or loop_guard):
            raise ValueError(
                "no_repeat_ngram_size and loop_guard act inside the decode loop: they need the local backend"
            )
        if isinstance(backend, str):
            options = dict(backend_options)
            if backend == "openai":
                options["base_url"] = base_url
            elif base_url is not None:
                raise ValueError(f"base_url is for the 'openai' backend, not {backend!r}")
            self._backend_spec: tuple[str, dict[str, Any]] | None = (backend, {"model": model, **options})
            self._backend: Backend | None = None
        else:
            if backend_options or base_url is not None:
                raise ValueError("pass backend options to the backend instance, not to Formatter")
            self._backend_spec = None
            self._backend = backend

    @classmethod
    def from_endpoint(cls, base_url: str, model: str | None = None, **kwargs: Any) -> "Formatter":
        """A formatter over an OpenAI-compatible endpoint."""
        return cls(model, base_url=base_url, backend="openai", **kwargs)

    @property
    def backend(self) -> Backend:
        """The backend, created on first use."""
        if self._backend is None:
            assert self._backend_spec is not None
            name, options = self._backend_spec
            self._backend = create_backend(name, **options)
        return self._backend

    def describe(self) -> dict[str, Any]:
        """The configuration as a JSON-able dict (recorded with evaluation results)."""
        backend = self._backend_spec[0] if self._backend_spec else getattr(self._backend, "name", "custom")
        out: dict[str, Any] = {
            "backend": backend,
            "model": self.model,
            "constrained": self.constrained,
            "prompt_template": self.prompt_template,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
        }
        if self._backend_spec and self._backend_spec[1].get("base_url"):
            out["base_url"] = self._backend_spec[1]["base_url"]
        if self._backend_spec and self._backend_spec[1].get("schema_format", "json_schema") != "json_schema":
            out["schema_format"] = self._backend_spec[1]["schema_format"]
        if isinstance(self._backend, OpenAIBackend):
            out["model"] = self._backend._model or self.model
        if self.constrained and backend == "local":
            if self._backend_spec is not None:
                value = self._backend_spec[1].get("complete_on_length", True)
            else:
                value = getattr(self._backend, "complete_on_length", True)
            out["complete_on_length"] = bool(value)
        if backend == "local":
            if self._backend_spec is not None:
                from .local import resolve_lora

                spec = self._backend_spec[1]
                lora = resolve_lora(spec.get("model"), spec.get("lora", "auto"))
            else:
                lora = getattr(self._backend, "lora", None)
            if lora is not None:
                out["lora"] = Path(lora).name
        # Decoding controls, recorded only when set (older runs' configs stay comparable).
        controls = {
            "frequency_penalty": self.frequency_penalty,
            "presence_penalty": self.presence_penalty,
            "no_repeat_ngram_size": self.no_repeat_ngram_size,
            "loop_guard": self.loop_guard,
            "grounded": self.grounded,
            "generated_fields": list(self.generated_fields),
        }
        out.update({k: v for k, v in controls.items() if v})
        return out

    # -- one input -----------------------------------------------------------

    def build_prompt(self, text: str, schema: SchemaLike) -> str:
        """The prompt sent for ``text`` and ``schema``."""
        return render_prompt(self.prompt_template, text, as_schema(schema))

    def request(self, text: str, schema: SchemaLike) -> GenerationRequest:
        """The backend request for one input."""
        s = as_schema(schema)
        tag = None
        if self.grounded:
            from .grounding import grounded_tag

            tag = grounded_tag(s, text, generated=self.generated_fields).tag
        return GenerationRequest(
            prompt=render_prompt(self.prompt_template, text, s),
            schema=s if self.constrained else None,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            seed=self.seed,
            structural_tag=tag,
            frequency_penalty=self.frequency_penalty,
            presence_penalty=self.presence_penalty,
            no_repeat_ngram_size=self.no_repeat_ngram_size,
            loop_guard=self.loop_guard,
        )

    def generate(self, text: str, schema: SchemaLike) -> Completion:
        """The raw completion for one input (no parsing)."""
        return self.backend.generate(self.request(text, schema))

    def parse(self, raw: str, schema: SchemaLike) -> Any:
        """Parse (and, with ``validate``, check) a raw output.

        Raises:
            FormatError: not valid JSON by itself, or not matching the schema.
        """
        try:
            # Values deeper than this are not validated by jsonschema nor
            # printed by json.dumps(indent=...) (both recurse).
            value = loads(raw, MAX_CHECK_DEPTH)
        except NestingError as exc:
            raise FormatError(f"output is not usable JSON: {exc}", raw) from None
        except json.JSONDecodeError as exc:
            raise FormatError(f"output is not valid JSON ({exc.msg} at character {exc.pos})", raw) from None
        if self.validate:
            # formcast.repair's validator: jsonschema with the value's depth
            # bounded, $ref cycles refused and an evaluation budget.
            from ..repair.validate import compile_validator

            issues = sorted(compile_validator(as_schema(schema)).validate(value)[1], key=lambda i: i.pointer)
            if issues:
                where = issues[0].pointer.lstrip("/") or "(root)"
                raise FormatError(f"output does not match the schema at {where}: {issues[0].message}", raw)
        return value

    def format(self, text: str, schema: SchemaLike) -> Any:
        """Format one text: the parsed JSON value.

        Raises:
            FormatError: the output is not JSON or does not match the schema
                (possible with ``constrained=False``, or when generation hit
                ``max_tokens``).
            BackendError: the backend failed.
        """
        completion = self.generate(text, schema)
        if completion.finish_reason == "length":
            try:
                return self.parse(completion.text, schema)
            except FormatError as exc:
                raise FormatError(f"generation stopped at max_tokens={self.max_tokens}: {exc.reason}", exc.raw) from None
        return self.parse(completion.text, schema)

    # -- batches ---------------------------------------------------------------

    def generate_batch(
        self,
        texts: Sequence[str],
        schemas: SchemaLike | Sequence[SchemaLike],
        *,
        progress: bool = True,
        on_result: Callable[[int, Completion | BackendError], None] | None = None,
        errors: Literal["raise", "return"] = "raise",
        desc: str = "formatting",
    ) -> list[Completion | BackendError]:
        """Raw completions for many inputs, in input order, ``max_workers`` at a time.

        Args:
            schemas: one schema for all texts, or one per text.
            progress: show a tqdm progress bar.
            on_result: called as each input finishes (index, completion or
                error), e.g. to save results incrementally.
            errors: ``"raise"`` the first :class:`BackendError`, or
                ``"return"`` it in place of the completion.
        """
        from tqdm.auto import tqdm

        n = len(texts)
        if isinstance(schemas, (Mapping, str, type)):
            schema_list: Sequence[SchemaLike] = [schemas] * n
        else:
            schema_list = schemas
            if len(schema_list) != n:
                raise ValueError(f"{n} texts but {len(schema_list)} schemas")
        requests = [self.request(t, s) for t, s in zip(texts, schema_list)]
        backend = self.backend
        workers = max(1, min(self.max_workers, getattr(backend, "max_concurrency", self.max_workers), n or 1))
        results: list[Completion | BackendError | None] = [None] * n

        def run(i: int) -> tuple[int, Completion | BackendError]:
            try:
                return i, backend.generate(requests[i])
            except BackendError as exc:
                if errors == "raise":
                    raise
                return i, exc

        bar = tqdm(total=n, desc=desc, unit="ex", disable=not progress)
        try:
            if workers == 1:
                outcomes = map(run, range(n))
                for i, res in outcomes:
                    results[i] = res
                    if on_result:
                        on_result(i, res)
                    bar.update(1)
            else:
                with ThreadPoolExecutor(max_workers=workers) as pool:
                    futures = [pool.submit(run, i) for i in range(n)]
                    try:
                        from concurrent.futures import as_completed

                        for fut in as_completed(futures):
                            i, res = fut.result()
                            results[i] = res
                            if on_result:
                                on_result(i, res)
                            bar.update(1)
                    except BaseException:
                        for fut in futures:
                            fut.cancel()
                        raise
        finally:
            bar.close()
        return results  # type: ignore[return-value]

    def format_batch(
        self,
        texts: Sequence[str],
        schemas: SchemaLike | Sequence[SchemaLike],
        *,
        progress: bool = True,
        errors: Literal["raise", "none"] = "raise",
    ) -> list[Any]:
        """Format many texts; parsed values in input order.

        Args:
            errors: ``"raise"`` the first failure, or put ``None`` in its place.
        """
        n = len(texts)
        schema_list = [schemas] * n if isinstance(schemas, (Mapping, str, type)) else list(schemas)
        completions = self.generate_batch(
            texts, schema_list, progress=progress, errors="raise" if errors == "raise" else "return"
        )
        out: list[Any] = []
        for c, s in zip(completions, schema_list):
            if isinstance(c, BackendError):
                out.append(None)
                continue
            try:
                out.append(self.parse(c.text, s))
            except FormatError:
                if errors == "raise":
                    raise
                out.append(None)
        return out

    def __repr__(self) -> str:
        d = self.describe()
        return f"Formatter(backend={d['backend']!r}, model={d['model']!r}, constrained={self.constrained})"


def read_text_arg(path: str) -> str:
    """Text from a file path, or standard input for ``-``."""
    import sys

    if path == "-":
        return sys.stdin.read()
    return Path(path).read_text(encoding="utf-8")
