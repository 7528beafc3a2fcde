"""Schema accuracy and content similarity, as defined by the SPOT formatter paper (§3, App. C.2).

*Schema accuracy* of a raw model response ``y'`` against a schema ``f``: the
response must be valid JSON by itself (no surrounding prose, no code fence, no
``NaN``) and match the schema exactly in key strings and value types.

*Content similarity* of a prediction against the gold JSON: both are flattened
to leaves keyed by their full path (all ancestor keys); each predicted leaf is
scored against the gold leaf at the same path (Sentence-BERT cosine, identical
strings 1, a path missing from the gold 0) and averaged into a soft precision;
each gold leaf is scored the same way against the prediction into a soft
recall; the similarity is their harmonic mean.

Where the paper is silent this module makes explicit, documented choices,
each of them an option of :class:`SimilarityOptions` (see docs/formatter.md):

* array alignment: ``"index"`` (array positions are path components; the
  literal reading of the paper) or ``"assignment"`` (order-free: predicted
  elements are matched to gold elements by an optimal one-to-one assignment on
  their own content similarity, scipy's ``linear_sum_assignment``);
* typed scalars (default on): numbers, numeric strings and booleans are
  compared by value (``"99.0"`` vs ``"98.0"`` is 0, ``"1887"`` vs ``1887`` is 1)
  instead of by embedding, which rates near-equal numerals as similar;
* negative cosines are clipped to 0, so every score is in [0, 1];
* empty objects and arrays are leaves themselves (an empty container matches
  only an identical one);
* unparseable predictions score 0 on both metrics (``unparseable="zero"``) or
  are left out of the content-similarity average (``"skip"``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

import numpy as np

from .._depth import MAX_CHECK_DEPTH, MAX_JSON_DEPTH, text_nesting
from .._refs import ref_target

__all__ = [
    "PathKey",
    "SimilarityOptions",
    "ContentScore",
    "ContentSimilarity",
    "ParseResult",
    "parse_response",
    "flatten",
    "schema_matches",
    "schema_accuracy",
    "leaf_text",
]

PathKey = tuple  # tuple[str | int, ...]: object keys (str) and array indices (int)

_MISSING = object()


# ---------------------------------------------------------------------------
# Parsing


@dataclass(frozen=True)
class ParseResult:
    """A raw response parsed as strict JSON.

    Attributes:
        ok: the whole response is one valid JSON value.
        value: the parsed value (``None`` when not ok).
        error: why parsing failed, with position (empty when ok).
    """

    ok: bool
    value: Any = None
    error: str = ""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_response(raw: str) -> ParseResult:
    """Parse a model response as strict JSON: one value, optional surrounding
    whitespace, no ``NaN``/``Infinity`` and nothing else."""
    if not isinstance(raw, str):
        raise TypeError(f"a raw response is a str, not {type(raw).__name__}")
    deep = text_nesting(raw, MAX_JSON_DEPTH)
    if deep is not None:  # json.loads recurses per level: refuse first, deterministically
        return ParseResult(False, None, f"nested more than {MAX_JSON_DEPTH} levels deep (at char {deep})")
    try:
        return ParseResult(True, json.loads(raw, parse_constant=_reject_constant))
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        return ParseResult(False, None, str(exc))


# ---------------------------------------------------------------------------
# Schema accuracy


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Any:
    # One step, strict: a reference that is not local, or that does not
    # resolve, raises (ValueError, KeyError, IndexError...).
    return ref_target(ref, root, strict=True, context="schema accuracy")


def _type_ok(value: Any, type_name: str) -> bool:
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "boolean":
        return isinstance(value, bool)
    if type_name == "null":
        return value is None
    if type_name == "object":
        return isinstance(value, dict)
    if type_name == "array":
        return isinstance(value, list)
    if type_name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_name == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    raise ValueError(f"unknown JSON Schema type {type_name!r}")


#: Nested checks on one path in keys-and-types mode (3 Python frames each).
_MAX_HOPS = 200


def _keys_and_types(value: Any, schema: Any, root: Mapping[str, Any], depth: int = 0, memo: dict | None = None) -> bool:
    """Recursive, with a budget: more than ``_MAX_HOPS`` schema and value
    steps on one path (a very deep value) is no match, and a ``$ref`` cycle
    back to a pair being decided is no match; each (schema, value) pair is
    decided once (``anyOf`` of two references to the level below would
    otherwise double the work per level)."""
    if memo is None:
        memo = {}
    key = (id(schema), id(value))
    hit = memo.get(key)
    if hit is not None:
        return hit[0]
    if depth > _MAX_HOPS:
        return False
    memo[key] = (False, schema, value)  # (a cycle back to this pair is no match; keeps both alive)
    ok = _keys_and_types_once(value, schema, root, depth, memo)
    memo[key] = (ok, schema, value)
    return ok


def _keys_and_types_once(value: Any, schema: Any, root: Mapping[str, Any], depth: int, memo: dict) -> bool:
    if schema is True or schema == {}:
        return True
    if schema is False:
        return False
    if not isinstance(schema, Mapping):
        raise ValueError(f"a schema is an object or a boolean, not {type(schema).__name__}")
    if "$ref" in schema:
        if not _keys_and_types(value, _resolve_ref(schema["$ref"], root), root, depth + 1, memo):
            return False
    for key in ("anyOf", "oneOf"):
        if key in schema and not any(_keys_and_types(value, s, root, depth + 1, memo) for s in schema[key]):
            return False
    if "allOf" in schema and not all(_keys_and_types(value, s, root, depth + 1, memo) for s in schema["allOf"]):
        return False
    types = schema.get("type")
    if types is None:
        if "properties" in schema:
            types = ["object"]
        elif "items" in schema or "prefixItems" in schema:
            types = ["array"]
    if types is not None:
        types = [types] if isinstance(types, str) else list(types)
        if not any(_type_ok(value, t) for t in types):
            return False
    if isinstance(value, dict):
        props = schema.get("properties")
        if props is not None:
            if set(value) != set(props):
                return False
            return all(_keys_and_types(value[k], props[k], root, depth + 1, memo) for k in props)
        extra = schema.get("additionalProperties")
        if isinstance(extra, (Mapping, bool)) and extra is not True:
            return all(_keys_and_types(v, extra, root, depth + 1, memo) for v in value.values())
        return True
    if isinstance(value, list):
        prefix = schema.get("prefixItems") or []
        items = schema.get("items")
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else items
            if sub is not None and not _keys_and_types(item, sub, root, depth + 1, memo):
                return False
        return True
    return True


def schema_matches(
    value: Any,
    schema: Mapping[str, Any] | bool,
    *,
    mode: Literal["keys-and-types", "jsonschema"] = "keys-and-types",
) -> bool:
    """Whether a parsed JSON value matches a schema.

    Args:
        value: the parsed JSON value.
        schema: a JSON Schema.
        mode: ``"keys-and-types"`` (default, the paper's definition): every
            object with declared ``properties`` has exactly those keys — none
            missing, none extra, whether ``required`` or not — and every value
            has its declared type (``anyOf``/``oneOf``/``allOf``/local ``$ref``
            followed; value constraints such as ``enum`` or ``minLength``
            ignored).  ``"jsonschema"``: full validation with the
            ``jsonschema`` package (draft 2020-12; honours ``required``,
            ``additionalProperties``, ``enum``, ...).
    """
    if mode == "keys-and-types":
        root = schema if isinstance(schema, Mapping) else {}
        return _keys_and_types(value, schema, root)
    if mode == "jsonschema":
        # formcast.repair's validator: jsonschema with bounded depth, $ref
        # cycles refused (InvalidSchema) and an evaluation budget.
        from ..repair.validate import compile_validator

        return not compile_validator(schema).validate(value)[1]
    raise ValueError(f"unknown schema-accuracy mode {mode!r} (use 'keys-and-types' or 'jsonschema')")


def schema_accuracy(
    raw: str,
    schema: Mapping[str, Any] | bool,
    *,
    mode: Literal["keys-and-types", "jsonschema"] = "keys-and-types",
) -> float:
    """1.0 if the raw response is valid JSON by itself and matches the schema, else 0.0."""
    parsed = parse_response(raw)
    if not parsed.ok:
        return 0.0
    return 1.0 if schema_matches(parsed.value, schema, mode=mode) else 0.0


# ---------------------------------------------------------------------------
# Content similarity


def flatten(value: Any, prefix: PathKey = ()) -> dict[PathKey, Any]:
    """Leaves of a JSON value keyed by their full path.

    Object keys are ``str`` path components and array positions ``int`` ones;
    primitives and empty containers are leaves::

        flatten({"a": {"b": 1}, "c": [True, {}]})
        == {("a", "b"): 1, ("c", 0): True, ("c", 1): {}}
    """
    out: dict[PathKey, Any] = {}
    _flatten_into(value, prefix, out)
    return out


def _flatten_into(value: Any, prefix: PathKey, out: dict[PathKey, Any]) -> None:
    # An explicit stack, children pushed in reverse so leaves come out in
    # document order (as the recursive definition lists them).
    stack: list[tuple[Any, PathKey]] = [(value, prefix)]
    while stack:
        v, p = stack.pop()
        if isinstance(v, dict) and v:
            stack.extend((c, p + (k,)) for k, c in reversed(list(v.items())))
        elif isinstance(v, list) and v:
            stack.extend((v[i], p + (i,)) for i in range(len(v) - 1, -1, -1))
        else:
            out[p] = v


def leaf_text(value: Any) -> str:
    """The text a leaf is embedded as: strings as they are, other values as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_GROUPED_RE = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        s = value.strip()
        if _NUMBER_RE.fullmatch(s):
            return float(s)
        if _GROUPED_RE.fullmatch(s):
            return float(s.replace(",", ""))
    return None


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


@dataclass(frozen=True)
class SimilarityOptions:
    """Choices the paper leaves open (see the module docstring and docs/formatter.md).

    Attributes:
        array_alignment: ``"index"`` or ``"assignment"`` (order-free optimal matching).
        typed_scalars: compare numbers, numeric strings and booleans by value.
        number_rel_tol: relative tolerance for typed number equality.
        unparseable: ``"zero"`` (score 0) or ``"skip"`` (left out of the
            content-similarity average; schema accuracy still counts them as 0).
    """

    array_alignment: Literal["index", "assignment"] = "index"
    typed_scalars: bool = True
    number_rel_tol: float = 1e-9
    unparseable: Literal["zero", "skip"] = "zero"

    def __post_init__(self) -> None:
        if self.array_alignment not in ("index", "assignment"):
            raise ValueError(f"array_alignment must be 'index' or 'assignment', not {self.array_alignment!r}")
        if self.unparseable not in ("zero", "skip"):
            raise ValueError(f"unparseable must be 'zero' or 'skip', not {self.unparseable!r}")
        if not (self.number_rel_tol >= 0):
            raise ValueError("number_rel_tol must be >= 0")


@dataclass(frozen=True)
class ContentScore:
    """Soft precision, soft recall and their harmonic mean (the content similarity)."""

    precision: float
    recall: float
    similarity: float

    @staticmethod
    def from_pr(precision: float, recall: float) -> "ContentScore":
        f = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
        return ContentScore(precision, recall, f)


ZERO = ContentScore(0.0, 0.0, 0.0)


class ContentSimilarity:
    """Content similarity between predicted and gold JSON values.

    Args:
        encoder: anything with ``encode(list[str]) -> np.ndarray`` of unit
            vectors; defaults to the numpy all-MiniLM-L6-v2
            (:func:`formcast.evaluate.sbert.get_encoder`), loaded on first use.
        options: the choices where the paper is silent.

    Embeddings are cached per distinct string, so scoring many examples embeds
    each string once; :meth:`score_many` embeds them in batches up front.
    """

    def __init__(self, encoder: Any | None = None, options: SimilarityOptions | None = None) -> None:
        self._encoder = encoder
        self.options = options or SimilarityOptions()
        self._cache: dict[str, np.ndarray] = {}
        # Scores of (prediction, gold) sub-pairs during one alignment.
        self._pairs: dict[tuple[int, int], tuple[ContentScore, Any, Any]] = {}

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from .sbert import get_encoder

            self._encoder = get_encoder()
        return self._encoder

    # -- embeddings --------------------------------------------------------

    def prepare(self, texts: Iterable[str]) -> None:
        """Embed (and cache) the given strings in one batch."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            vectors = np.asarray(self.encoder.encode(todo), dtype=np.float32)
            for t, v in zip(todo, vectors):
                self._cache[t] = v

    def _cosine(self, a: str, b: str) -> float:
        self.prepare([a, b])
        cos = float(np.dot(self._cache[a], self._cache[b]))
        return min(1.0, max(0.0, cos))

    # -- leaves --------------------------------------------------------------

    def _typed(self, a: Any, b: Any) -> float | None:
        """A by-value score, or None when the pair is compared by embedding."""
        if not self.options.typed_scalars:
            return None
        if a is None or b is None:
            return 1.0 if a is None and b is None else 0.0
        if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
            return 1.0 if type(a) is type(b) and a == b else 0.0
        na, nb = _as_number(a), _as_number(b)
        if na is not None and nb is not None:
            return 1.0 if math.isclose(na, nb, rel_tol=self.options.number_rel_tol, abs_tol=0.0) else 0.0
        ba, bb = _as_bool(a), _as_bool(b)
        if ba is not None and bb is not None:
            return 1.0 if ba == bb else 0.0
        if not isinstance(a, str) or not isinstance(b, str):
            # A JSON number or boolean against text that does not read as one.
            return 0.0
        return None

    def leaf_score(self, pred: Any, gold: Any) -> float:
        """Similarity of two leaf values in [0, 1] (symmetric)."""
        ta, tb = leaf_text(pred), leaf_text(gold)
        if ta == tb and type(pred) is type(gold):
            return 1.0
        typed = self._typed(pred, gold)
        if typed is not None:
            return typed
        if ta == tb:
            return 1.0
        return self._cosine(ta, tb)

    # -- whole values --------------------------------------------------------

    def _aligned_pred_leaves(self, pred: Any, gold: Any, prefix: PathKey, level: int = 0) -> dict[PathKey, Any]:
        """Flatten ``pred`` with its array positions renamed to the gold
        positions they are optimally matched with (unmatched ones get a
        path component no gold path has). Recursive along the paths the two
        values share (``level`` counts the levels above ``pred`` in the
        whole prediction); below ``MAX_CHECK_DEPTH`` levels arrays are
        aligned by index."""
        if level + len(prefix) >= MAX_CHECK_DEPTH:
            return flatten(pred, prefix)
        if isinstance(pred, dict) and pred and isinstance(gold, dict):
            out: dict[PathKey, Any] = {}
            for k, v in pred.items():
                if k in gold:
                    out.update(self._aligned_pred_leaves(v, gold[k], prefix + (k,), level))
                else:
                    _flatten_into(v, prefix + (k,), out)
            return out
        if isinstance(pred, list) and pred and isinstance(gold, list) and gold:
            from scipy.optimize import linear_sum_assignment

            scores = np.zeros((len(pred), len(gold)))
            for i, p in enumerate(pred):
                for j, g in enumerate(gold):
                    scores[i, j] = self._pair_score(p, g, level + len(prefix) + 1).similarity
            rows, cols = linear_sum_assignment(scores, maximize=True)
            match = dict(zip(rows.tolist(), cols.tolist()))
            out = {}
            for i, p in enumerate(pred):
                if i in match:
                    out.update(self._aligned_pred_leaves(p, gold[match[i]], prefix + (match[i],), level))
                else:
                    _flatten_into(p, prefix + (f"<unmatched {i}>",), out)
            return out
        return flatten(pred, prefix)

    def _pair_score(self, pred: Any, gold: Any, level: int) -> ContentScore:
        """Similarity of two sub-values met while aligning arrays ``level``
        levels down, computed once per pair (nested arrays would otherwise
        rescore every sub-pair at every level above it)."""
        memo = self._pairs
        key = (id(pred), id(gold))
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = (self._score_values(pred, gold, level), pred, gold)
        return hit[0]

    def _score_values(self, pred: Any, gold: Any, level: int = 0) -> ContentScore:
        gold_leaves = flatten(gold)
        if self.options.array_alignment == "assignment":
            if level == 0:
                try:
                    pred_leaves = self._aligned_pred_leaves(pred, gold, (), 0)
                finally:
                    self._pairs = {}
            else:
                pred_leaves = self._aligned_pred_leaves(pred, gold, (), level)
        else:
            pred_leaves = flatten(pred)
        shared = {path: self.leaf_score(pred_leaves[path], gold_leaves[path]) for path in pred_leaves if path in gold_leaves}
        precision = sum(shared.values()) / len(pred_leaves)
        recall = sum(shared.values()) / len(gold_leaves)
        return ContentScore.from_pr(precision, recall)

    def _texts_for(self, pred: Any, gold: Any) -> list[str]:
        texts = []
        for v in list(flatten(pred).values()) + list(flatten(gold).values()):
            texts.append(leaf_text(v))
        return texts

    def score(self, pred: Any, gold: Any) -> ContentScore:
        """Content similarity of a parsed prediction against the gold value."""
        self.prepare(self._texts_for(pred, gold))
        return self._score_values(pred, gold)

    def score_raw(self, raw: str, gold: Any) -> ContentScore | None:
        """Score a raw response; unparseable ones give zero (or None with ``unparseable='skip'``)."""
        parsed = parse_response(raw)
        if not parsed.ok:
            return None if self.options.unparseable == "skip" else ZERO
        return self.score(parsed.value, gold)

    def score_many(
        self,
        pairs: Sequence[tuple[Any, Any]],
        *,
        progress: bool | Callable[[Iterable[Any]], Iterable[Any]] = False,
    ) -> list[ContentScore]:
        """Score parsed (prediction, gold) pairs, embedding all strings up front."""
        texts: list[str] = []
        for pred, gold in pairs:
            texts.extend(self._texts_for(pred, gold))
        self.prepare(texts)
        iterable: Iterable[tuple[Any, Any]] = pairs
        if progress:
            from tqdm.auto import tqdm

            iterable = tqdm(pairs, desc="content similarity", unit="ex") if progress is True else progress(pairs)
        return [self._score_values(p, g) for p, g in iterable]
