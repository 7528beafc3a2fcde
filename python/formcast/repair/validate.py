"""Stage 4 — validate against a JSON Schema (``jsonschema``) or a pydantic model.

Problems are reported as :class:`~formcast.repair.report.Issue` with a JSON pointer
and the validator's own message, verbatim (it is what the model is shown when
re-asked). Semantic problems are never fixed here unless the caller opts in to a
named coercion (``coerce={"enum"}`` / ``{"types"}``), and each coercion is logged
as a guess.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections.abc import Iterable
from typing import Any

from .._depth import MAX_CHECK_DEPTH, NestingError, check_nesting
from .errors import InvalidSchema
from .report import Fix, Issue
from .schemacheck import BudgetExceeded, EvaluationBudget, budgeted_validator_class, check_schema_structure

__all__ = ["Validator", "compile_validator", "validate", "json_pointer", "COERCIONS"]

#: Opt-in semantic coercions. Nothing else is ever changed after parsing.
COERCIONS: dict[str, str] = {
    "enum": "map a string to the single nearest enum member (case, separators, a contained member, close spelling)",
    "types": "lossless scalar conversions to the schema type: '30' -> 30, 'true' -> true, 30 -> '30', 30.0 -> 30",
}

_INT_RE = re.compile(r"[+-]?\d+\Z")
_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_NEGATIONS = frozenset({"not", "no", "non", "never", "none"})
_SEP_RE = re.compile(r"[\s_\-]+")


def json_pointer(path: Iterable[Any]) -> str:
    """RFC 6901 pointer for a path of keys/indices (``""`` is the root)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _norm(s: str) -> str:
    return _SEP_RE.sub("_", s.strip().lower()).strip("_")


def nearest_enum(value: Any, members: list[Any]) -> Any:
    """The one enum member ``value`` plausibly meant, or ``_NONE`` if not exactly one.

    Tries, in order: equal after normalizing case/separators; exactly one member
    contained as a whole token (``slightly_negative`` -> ``negative``, but never
    across a negation like ``not_negative``); a single close spelling.
    """
    if not isinstance(value, str):
        return _NONE
    strs = [m for m in members if isinstance(m, str)]
    if not strs:
        return _NONE
    nv = _norm(value)
    hits = [m for m in strs if _norm(m) == nv]
    if len(hits) == 1:
        return hits[0]
    tokens = nv.split("_")
    if _NEGATIONS.intersection(tokens):
        return _NONE  # "not_negative" is close to "negative" in spelling, opposite in meaning
    hits = [m for m in strs if _norm(m) and _contains_tokens(tokens, _norm(m).split("_"))]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        return _NONE  # "positive_or_negative": a tie is not a guess we make
    normed = {_norm(m): m for m in strs}
    close = difflib.get_close_matches(nv, list(normed), n=2, cutoff=0.75)
    if len(close) == 1:
        return normed[close[0]]
    return _NONE


def _contains_tokens(tokens: list[str], sub: list[str]) -> bool:
    k = len(sub)
    return any(tokens[i : i + k] == sub for i in range(len(tokens) - k + 1))


class _NoneType:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<no match>"


_NONE: Any = _NoneType()


def _convert_scalar(value: Any, expected: list[str]) -> Any:
    """Lossless conversion of ``value`` to one of the JSON types in ``expected``."""
    for t in expected:
        if isinstance(value, str):
            v = value.strip()
            if t == "integer" and _INT_RE.match(v):
                return int(v)
            if t == "number" and _FLOAT_RE.match(v):
                return int(v) if _INT_RE.match(v) else float(v)
            if t == "boolean" and v.lower() in ("true", "false"):
                return v.lower() == "true"
            if t == "null" and v.lower() == "null":
                return None
        elif isinstance(value, bool):
            continue
        elif isinstance(value, (int, float)):
            if t == "string":
                return json.dumps(value)
            if t == "integer" and isinstance(value, float) and value.is_integer():
                return int(value)
    return _NONE


def _set_at(root: Any, path: list[Any], new: Any) -> Any:
    if not path:
        return new
    target = root
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = new
    return root


class Validator:
    """A compiled JSON Schema or pydantic type. Build once with :func:`compile_validator`.

    ``validate(data)`` returns ``(value, issues)``: for a pydantic type ``value`` is
    the model instance; for a JSON Schema it is ``data`` itself.
    """

    kind: str = "jsonschema"

    def __init__(self, json_schema: dict[str, Any]) -> None:
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import Draft202012Validator, validator_for

        # Depth, self-reference and $ref cycles first: jsonschema recurses
        # on all three (RecursionError, or for ever on `{"$ref": "#"}`).
        check_schema_structure(json_schema)
        cls = validator_for(json_schema, default=Draft202012Validator)
        try:
            cls.check_schema(json_schema)
        except SchemaError as e:
            raise InvalidSchema(f"invalid JSON Schema at {json_pointer(e.absolute_path) or '(root)'}: {e.message}") from None
        except RecursionError:
            # Nesting is bounded above; a `pattern` whose groups nest deeply
            # still makes `re.compile` recurse.
            raise InvalidSchema("invalid JSON Schema: too deeply nested to check (a pattern with deeply nested groups?)") from None
        self.json_schema = json_schema
        self._js = _budgeted(cls)(json_schema, format_checker=cls.FORMAT_CHECKER)

    # -- validation ------------------------------------------------------------

    def validate(self, data: Any) -> tuple[Any, list[Issue]]:
        """``(data, issues)``. A value nested deeper than ``MAX_CHECK_DEPTH``
        levels, or one whose checking would take more than its
        :func:`evaluation budget <_budget>`, is one issue saying so (never a
        RecursionError or a hang)."""
        problem, size = _value_limits(data)
        if problem is not None:
            return data, [problem]
        with EvaluationBudget(_budget(size)):
            try:
                errors = list(self._js.iter_errors(data))
            except Exception as e:  # noqa: BLE001 - mapped to the caller's terms below
                return data, [_validation_failure(e)]
        if not errors:
            return data, []
        return data, [self._issue(e) for e in errors]

    def _issue(self, e: Any) -> Issue:
        hint = None
        if e.validator == "enum":
            m = nearest_enum(e.instance, list(e.validator_value))
            if m is not _NONE:
                hint = f"nearest member: {m!r} (accepted only with coerce={{'enum'}})"
        elif e.validator in ("anyOf", "oneOf") and e.context:
            from jsonschema.exceptions import best_match

            best = best_match(e.context)
            if best is not None:
                hint = f"closest alternative: {json_pointer(best.absolute_path) or '(root)'}: {best.message}"
        return Issue(json_pointer(e.absolute_path), e.message, str(e.validator), hint)

    # -- opt-in coercion -------------------------------------------------------

    def coerce(self, data: Any, kinds: Iterable[str]) -> tuple[Any, list[Fix]]:
        """Apply the named coercions until none applies; every change is a logged guess."""
        kinds = frozenset(kinds)
        unknown = kinds - set(COERCIONS)
        if unknown:
            raise ValueError(f"unknown coercion(s) {sorted(unknown)}; choose from {sorted(COERCIONS)}")
        fixes: list[Fix] = []
        if not kinds:
            return data, fixes
        problem, size = _value_limits(data)
        if problem is not None:
            return data, fixes  # nothing is coerced in a value that cannot be validated
        data = copy.deepcopy(data)  # (depth bounded just above)
        # One budget for the whole loop: it revalidates after every change.
        with EvaluationBudget(4 * _budget(size)):
            try:
                for _ in range(1000):
                    for err in self._js.iter_errors(data):
                        done = self._coerce_error(err, kinds)
                        if done is not None:
                            path, new, fix = done
                            data = _set_at(data, path, new)
                            fixes.append(fix)
                            break
                    else:
                        break
            except (BudgetExceeded, RecursionError):
                pass  # keep what was coerced; validating it again reports the rest
        return data, fixes

    def _coerce_error(self, err: Any, kinds: frozenset[str]) -> tuple[list[Any], Any, Fix] | None:
        errs = [err]
        if err.validator in ("anyOf", "oneOf") and err.context:
            errs = list(err.context)
        for e in errs:
            path = list(e.absolute_path)
            ptr = json_pointer(path)
            if e.validator == "enum" and "enum" in kinds:
                m = nearest_enum(e.instance, list(e.validator_value))
                if m is not _NONE:
                    return path, m, Fix("coerce", "enum", f"{e.instance!r} -> {m!r} (nearest enum member)", None, ptr, True)
            if e.validator == "type" and "types" in kinds:
                expected = [e.validator_value] if isinstance(e.validator_value, str) else list(e.validator_value)
                new = _convert_scalar(e.instance, expected)
                if new is not _NONE:
                    return path, new, Fix("coerce", "types", f"{e.instance!r} -> {new!r} ({'/'.join(expected)})", None, ptr, True)
        return None


class PydanticValidator(Validator):
    """Validates with pydantic in strict JSON mode, so ``"30"`` is never silently an int.

    Coercion (opt-in) runs on the model's JSON Schema first, then pydantic validates.
    """

    kind = "pydantic"

    def __init__(self, target: Any) -> None:
        from pydantic import BaseModel, TypeAdapter

        self.target = target
        if isinstance(target, TypeAdapter):
            self._adapter = target
        elif isinstance(target, type) and issubclass(target, BaseModel):
            self._adapter = None
        else:
            try:
                self._adapter = TypeAdapter(target)
            except Exception as e:  # pydantic raises several error types here
                raise InvalidSchema(f"expected a JSON Schema dict or a pydantic-compatible type, got {target!r}: {e}") from None
        schema = self._adapter.json_schema() if self._adapter is not None else target.model_json_schema()
        super().__init__(schema)

    def validate(self, data: Any) -> tuple[Any, list[Issue]]:
        from pydantic import ValidationError

        problem, _ = _value_limits(data)
        if problem is not None:
            return data, [problem]
        text = json.dumps(data, ensure_ascii=False)  # (depth bounded just above)
        try:
            if self._adapter is not None:
                return self._adapter.validate_json(text, strict=True), []
            return self.target.model_validate_json(text, strict=True), []
        except ValidationError as e:
            issues = []
            for err in e.errors(include_url=False):
                hint = None
                ctx = err.get("ctx") or {}
                if err.get("type") == "enum" and "expected" in ctx:
                    members = re.findall(r"'((?:[^'\\]|\\.)*)'", str(ctx["expected"]))
                    m = nearest_enum(err.get("input"), members)
                    if m is not _NONE:
                        hint = f"nearest member: {m!r} (accepted only with coerce={{'enum'}})"
                issues.append(Issue(json_pointer(err["loc"]), err["msg"], err.get("type"), hint))
            return data, issues


_BUDGETED: dict[Any, Any] = {}


def _budgeted(cls: Any) -> Any:
    """The jsonschema validator class ``cls`` with its keywords charging
    the current evaluation budget (one subclass per draft, cached)."""
    sub = _BUDGETED.get(cls)
    if sub is None:
        sub = _BUDGETED[cls] = budgeted_validator_class(cls)
    return sub


def _budget(values: int) -> int:
    """Subschema applications allowed for a value of ``values`` values:
    ample for any schema that checks each value a bounded number of times."""
    return 50_000 + 100 * values


def _value_limits(data: Any) -> tuple[Issue | None, int]:
    """An issue if ``data`` is too deep (or self-referencing) to validate,
    and its number of values. A plain walk first (the common case); the
    thorough one, which finds the place, only when it is needed."""
    if not isinstance(data, (dict, list)):
        return None, 1
    size = 0
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        size += 1 + len(children)
        if size > _MAX_PLAIN_WALK or depth >= MAX_CHECK_DEPTH:
            break
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    else:
        return None, size
    try:
        _, size = check_nesting(data, MAX_CHECK_DEPTH, "the value")
    except NestingError as e:
        return Issue(e.pointer, f"{e}; formcast.repair validates values nested at most {MAX_CHECK_DEPTH} levels", "maxDepth"), 0
    return None, size


# Values counted by the plain walk before it hands over to check_nesting
# (which also catches a value that contains itself).
_MAX_PLAIN_WALK = 1 << 20


def _validation_failure(e: Exception) -> Issue:
    """What a failure inside jsonschema means for the caller."""
    if isinstance(e, BudgetExceeded):
        return Issue("", f"{e}: the schema's $ref/anyOf/oneOf structure makes checking this value too costly", "budget")
    if isinstance(e, RecursionError):
        return Issue("", "validation recursed deeper than Python allows (the value's nesting times the schema's references)", "maxDepth")
    try:
        from referencing.exceptions import Unresolvable
    except ImportError:  # pragma: no cover - jsonschema < 4.18
        Unresolvable = ()  # type: ignore[assignment,misc]
    if isinstance(e, Unresolvable):
        raise InvalidSchema(f"invalid JSON Schema: unresolvable reference: {e}") from None
    raise e


def compile_validator(schema_or_model: Any) -> Validator:
    """Compile a JSON Schema dict, a pydantic model/``TypeAdapter``/type, or pass a Validator through."""
    if isinstance(schema_or_model, Validator):
        return schema_or_model
    if isinstance(schema_or_model, dict):
        return Validator(schema_or_model)
    if isinstance(schema_or_model, bool):
        return Validator({} if schema_or_model else {"not": {}})
    try:
        import pydantic  # noqa: F401
    except ImportError:
        raise InvalidSchema(f"{schema_or_model!r} is not a JSON Schema dict and pydantic is not installed") from None
    return PydanticValidator(schema_or_model)


def validate(value: Any, schema_or_model: Any) -> list[Issue]:
    """Issues found in ``value`` (empty list when it is valid)."""
    return compile_validator(schema_or_model).validate(value)[1]
