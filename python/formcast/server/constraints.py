"""Request → constraint: which field of a request constrains the output, the
formcast :class:`~formcast.Grammar` for it, and compiling it off the event
loop within a time budget.

Accepted constraint fields (at most one per request; two is a 400 naming
both):

* ``response_format``: ``text`` | ``json_object`` | ``json_schema``
  (``{"name", "schema", "strict"}``) | ``structural_tag`` (current form
  ``{"format": {...}}`` and legacy ``{"structures", "triggers"}``);
* top-level ``json_schema`` (a schema), ``grammar`` (GBNF), ``regex``,
  ``choice`` (a list of strings), ``ebnf`` (SGLang's name for a grammar),
  ``structural_tag``;
* ``structured_outputs`` / ``guided_*`` (vLLM's names): ``json``, ``regex``,
  ``choice``, ``grammar``, ``structural_tag``.

Tools are combined with these by :mod:`formcast.server.tools`.

Schemas are checked against their metaschema with python-jsonschema, which
recurses several Python frames per level: a schema nested deeper than
:data:`MAX_SCHEMA_DEPTH` is refused first (a 400 naming the field and the
limit), never met by a ``RecursionError``.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

import jsonschema

from .. import CompileTimeoutError, FormcastError, Grammar, GrammarCompiler
from .body import check_value_depth, loads_bounded
from .errors import APIError

__all__ = ["Constraint", "MAX_SCHEMA_DEPTH", "constraint_from_request", "compile_constraint", "check_schema_depth"]

#: Deepest JSON nesting of a JSON Schema (tool parameters included). The
#: metaschema check handles ~120 levels in a fresh thread (a chain of
#: ``items`` or ``not``, the worst case); 100 leaves room for the frames of the
#: caller.
MAX_SCHEMA_DEPTH = 100


@dataclass
class Constraint:
    """What the output must match.

    ``kind``: ``json_schema``, ``json_object``, ``grammar``, ``regex``,
    ``choice`` or ``structural_tag``; ``param``: the request field it came
    from (named in errors); ``schema``: the JSON Schema for JSON kinds;
    ``grammar``: the formcast grammar (built by :func:`build_grammar`).
    """

    kind: str
    param: str
    spec: Any
    schema: Optional[Any] = None
    grammar: Optional[Grammar] = None
    warnings: list[str] = field(default_factory=list)


def check_schema_depth(schema: Any, param: str) -> None:
    """A 400 naming ``param`` when ``schema`` nests deeper than :data:`MAX_SCHEMA_DEPTH`."""
    check_value_depth(schema, MAX_SCHEMA_DEPTH, param=param, what="the JSON Schema")


def _collect(req: Mapping[str, Any]) -> list[Constraint]:
    found: list[Constraint] = []
    rf = req.get("response_format")
    if rf is not None:
        if not isinstance(rf, Mapping) or not isinstance(rf.get("type"), str):
            raise APIError(400, "'response_format' must be an object with a 'type'", param="response_format")
        t = rf["type"]
        if t == "text":
            pass
        elif t == "json_object":
            found.append(Constraint("json_object", "response_format", rf, schema={"type": "object"}))
        elif t == "json_schema":
            js = rf.get("json_schema")
            if not isinstance(js, Mapping):
                raise APIError(400, "response_format.json_schema must be an object with a 'schema'", param="response_format.json_schema")
            schema = js.get("schema", {}) if "schema" in js else None
            if schema is None:
                raise APIError(400, "response_format.json_schema.schema is missing", param="response_format.json_schema.schema")
            found.append(Constraint("json_schema", "response_format.json_schema.schema", js, schema=schema))
        elif t == "structural_tag":
            found.append(Constraint("structural_tag", "response_format", rf))
        else:
            raise APIError(
                400,
                f"unknown response_format type {t!r}; expected text, json_object, json_schema or structural_tag",
                param="response_format.type",
            )
    simple = {
        "json_schema": "json_schema",
        "grammar": "grammar",
        "ebnf": "grammar",
        "regex": "regex",
        "choice": "choice",
        "structural_tag": "structural_tag",
        "guided_json": "json_schema",
        "guided_regex": "regex",
        "guided_grammar": "grammar",
        "guided_choice": "choice",
    }
    for key, kind in simple.items():
        if req.get(key) is not None:
            found.append(Constraint(kind, key, req[key], schema=req[key] if kind == "json_schema" else None))
    so = req.get("structured_outputs")
    if so is not None:
        if not isinstance(so, Mapping):
            raise APIError(400, "'structured_outputs' must be an object", param="structured_outputs")
        for key, kind in (("json", "json_schema"), ("regex", "regex"), ("choice", "choice"), ("grammar", "grammar"), ("structural_tag", "structural_tag")):
            if so.get(key) is not None:
                found.append(Constraint(kind, f"structured_outputs.{key}", so[key], schema=so[key] if kind == "json_schema" else None))
    return found


def constraint_from_request(req: Mapping[str, Any], tokenizer: Any = None) -> Optional[Constraint]:
    """The single output constraint of ``req`` (None for free text), with
    its grammar built. Raises a 400 :class:`APIError` when two constraints
    are given or the constraint is invalid. ``tokenizer`` resolves token
    strings in structural tags."""
    found = _collect(req)
    if len(found) > 1:
        names = " and ".join(f"'{c.param}'" for c in found)
        raise APIError(400, f"conflicting constraints: {names} were both given; use only one", param=found[1].param)
    if not found:
        return None
    c = found[0]
    build_grammar(c, tokenizer)
    return c


def _schema_value(c: Constraint) -> Any:
    schema = c.schema
    if isinstance(schema, str):
        schema = loads_bounded(schema, param=c.param)
    if not isinstance(schema, (Mapping, bool)):
        raise APIError(400, f"'{c.param}' must be a JSON Schema object", param=c.param)
    check_schema_depth(schema, c.param)
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
    except RecursionError:  # pragma: no cover - bounded by check_schema_depth; kept as a last guard
        raise APIError(400, f"the JSON Schema in '{c.param}' is nested too deeply to check", param=c.param,
                       code="nesting_too_deep") from None
    except jsonschema.SchemaError as e:
        where = "/".join(str(p) for p in e.absolute_path)
        raise APIError(400, f"invalid JSON Schema in '{c.param}' at '/{where}': {e.message}", param=c.param) from None
    except Exception as e:  # unknown $schema dialects and the like
        raise APIError(400, f"invalid JSON Schema in '{c.param}': {e}", param=c.param) from None
    c.schema = schema
    return schema


def build_grammar(c: Constraint, tokenizer: Any = None) -> Grammar:
    """Builds ``c.grammar`` from ``c.spec``; every failure is a 400 that names
    the field and the problem."""
    try:
        if c.kind == "json_object":
            c.grammar = Grammar.from_json_schema({"type": "object"})
        elif c.kind == "json_schema":
            c.grammar = Grammar.from_json_schema(_schema_value(c), strict=True)
            c.warnings = list(c.grammar.warnings)
        elif c.kind == "grammar":
            if not isinstance(c.spec, str) or not c.spec.strip():
                raise APIError(400, f"'{c.param}' must be a non-empty GBNF string", param=c.param)
            c.grammar = Grammar.from_ebnf(c.spec, "root")
        elif c.kind == "regex":
            if not isinstance(c.spec, str):
                raise APIError(400, f"'{c.param}' must be a string", param=c.param)
            c.grammar = Grammar.from_regex(c.spec)
        elif c.kind == "choice":
            if not isinstance(c.spec, list) or not c.spec or not all(isinstance(s, str) for s in c.spec):
                raise APIError(400, f"'{c.param}' must be a non-empty array of strings", param=c.param)
            c.grammar = Grammar.from_regex("|".join(re.escape(s) for s in c.spec))
        elif c.kind == "structural_tag":
            c.grammar = _structural_tag_grammar(c, tokenizer)
        else:  # pragma: no cover - _collect only makes the kinds above
            raise APIError(400, f"unsupported constraint kind {c.kind!r}", param=c.param)
    except APIError:
        raise
    except RecursionError:  # pragma: no cover - nesting is bounded before; never a 500
        raise APIError(400, f"the constraint in '{c.param}' is nested too deeply", param=c.param, code="nesting_too_deep") from None
    except (FormcastError, ValueError, TypeError) as e:
        what = {"grammar": "GBNF grammar", "regex": "regex", "json_schema": "JSON Schema", "json_object": "JSON object",
                "choice": "choice list", "structural_tag": "structural tag"}[c.kind]
        raise APIError(400, f"invalid {what} in '{c.param}': {e}", param=c.param) from None
    return c.grammar


def _structural_tag_grammar(c: Constraint, tokenizer: Any) -> Grammar:
    spec = c.spec
    if isinstance(spec, str):
        spec = loads_bounded(spec, param=c.param)
    if not isinstance(spec, Mapping):
        raise APIError(400, f"'{c.param}' must be an object", param=c.param)
    has_current = "format" in spec
    has_legacy = "structures" in spec or "triggers" in spec
    if not has_current and not has_legacy:
        raise APIError(400, f"'{c.param}' needs 'format' (or the legacy 'structures' and 'triggers')", param=c.param)
    if has_current and not (isinstance(spec["format"], Mapping) and isinstance(spec["format"].get("type"), str)):
        raise APIError(400, f"'{c.param}.format' must be an object with a 'type'", param=c.param)
    if has_legacy:
        structures = spec.get("structures")
        triggers = spec.get("triggers")
        if not isinstance(structures, list) or not isinstance(triggers, list) or not all(isinstance(t, str) for t in triggers):
            raise APIError(400, f"legacy '{c.param}' needs 'structures' (array) and 'triggers' (array of strings)", param=c.param)
        for i, s in enumerate(structures):
            if not isinstance(s, Mapping) or not isinstance(s.get("begin"), str) or not isinstance(s.get("end"), str):
                raise APIError(400, f"'{c.param}.structures[{i}]' needs string 'begin' and 'end' and a 'schema'", param=c.param)
    c.spec = dict(spec, type="structural_tag")
    return Grammar.from_structural_tag(c.spec, tokenizer)


def compile_constraint(compiler: GrammarCompiler, c: Constraint, *, timeout_s: float) -> tuple[Any, float]:
    """Compiles ``c.grammar`` (through the compiler's cache); returns the
    compiled grammar and the seconds spent. Blocking: run it in a worker
    thread. A compile that exceeds ``timeout_s`` is a 400."""
    assert c.grammar is not None
    t0 = time.perf_counter()
    try:
        compiled = compiler.compile(c.grammar, timeout_s=timeout_s)
    except CompileTimeoutError:
        raise APIError(
            400, f"the constraint in '{c.param}' is too large to compile within {timeout_s:g} s", param=c.param
        ) from None
    except FormcastError as e:
        raise APIError(400, f"the constraint in '{c.param}' cannot be compiled: {e}", param=c.param) from None
    return compiled, time.perf_counter() - t0
