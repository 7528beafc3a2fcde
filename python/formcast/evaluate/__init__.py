"""Evaluation of text-to-JSON formatters: schema accuracy, content similarity
and the JSON-complexity measures of the SPOT formatter paper.

::

    from formcast.evaluate import schema_accuracy, content_similarity

    schema = {"type": "object", "properties": {"name": {"type": "string"}},
              "required": ["name"], "additionalProperties": False}
    schema_accuracy('{"name": "Giraffe"}', schema)            # 1.0
    content_similarity({"name": "Giraffe"}, {"name": "Giraffe"}).similarity   # 1.0

See docs/formatter.md for the definitions and the choices made where the
paper is silent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping, Sequence

from .complexity import (
    MEASURES,
    complexity_profile,
    content_complexity,
    cyclomatic_complexity,
    depth,
    mean_profile,
    num_elements,
    num_keys,
    schema_complexity,
    size_bytes,
)
from .metrics import (
    ContentScore,
    ContentSimilarity,
    ParseResult,
    SimilarityOptions,
    flatten,
    leaf_text,
    parse_response,
    schema_accuracy,
    schema_matches,
)

__all__ = [
    "ContentScore",
    "ContentSimilarity",
    "ParseResult",
    "SimilarityOptions",
    "ExampleResult",
    "EvalResult",
    "evaluate",
    "content_similarity",
    "flatten",
    "leaf_text",
    "parse_response",
    "schema_accuracy",
    "schema_matches",
    "MEASURES",
    "complexity_profile",
    "mean_profile",
    "depth",
    "num_keys",
    "num_elements",
    "size_bytes",
    "cyclomatic_complexity",
    "schema_complexity",
    "content_complexity",
]


def content_similarity(
    prediction: Any,
    gold: Any,
    *,
    options: SimilarityOptions | None = None,
    scorer: ContentSimilarity | None = None,
) -> ContentScore:
    """Content similarity of one parsed prediction against its gold value.

    For many examples build one :class:`ContentSimilarity` and reuse it (its
    embedding cache is then shared), or call :func:`evaluate`.
    """
    if scorer is None:
        scorer = ContentSimilarity(options=options)
    elif options is not None and options != scorer.options:
        raise ValueError("pass either options or a scorer built with them, not both")
    return scorer.score(prediction, gold)


@dataclass(frozen=True)
class ExampleResult:
    """Scores of one raw response.

    Attributes:
        parsed: the response is valid JSON by itself.
        schema_ok: it matches the schema (schema accuracy 1).
        content: its content score, or None when unparseable and
            ``unparseable='skip'``.
        value: the parsed response (None when not ``parsed``); left out of
            ``==``, hashing and repr.
    """

    parsed: bool
    schema_ok: bool
    content: ContentScore | None
    value: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class EvalResult:
    """Averages over a dataset (each in [0, 1]) and the per-example scores."""

    n: int
    schema_accuracy: float
    content_similarity: float
    precision: float
    recall: float
    unparseable: int
    examples: list[ExampleResult] = field(repr=False)

    def as_dict(self) -> dict[str, float | int]:
        """The averages as a plain dict (for JSON reports)."""
        return {
            "n": self.n,
            "schema_accuracy": self.schema_accuracy,
            "content_similarity": self.content_similarity,
            "precision": self.precision,
            "recall": self.recall,
            "unparseable": self.unparseable,
        }


def evaluate(
    predictions: Sequence[str],
    golds: Sequence[Any],
    schemas: Sequence[Mapping[str, Any] | bool],
    *,
    options: SimilarityOptions | None = None,
    schema_mode: Literal["keys-and-types", "jsonschema"] = "keys-and-types",
    scorer: ContentSimilarity | None = None,
    progress: bool = False,
) -> EvalResult:
    """Score raw responses against gold values and schemas.

    Args:
        predictions: the raw model responses (strings, parsed strictly).
        golds: the gold JSON values, one per response.
        schemas: the target JSON Schemas, one per response.
        options: content-similarity choices (array alignment, typed scalars,
            unparseable handling).
        schema_mode: see :func:`schema_matches`.
        scorer: a :class:`ContentSimilarity` to reuse (shares its embedding cache).
        progress: show a tqdm progress bar.

    Returns:
        Averages per example: schema accuracy, content similarity (harmonic
        mean of soft precision and recall, computed per example then averaged),
        precision and recall averages, and the number of unparseable responses.
    """
    if not (len(predictions) == len(golds) == len(schemas)):
        raise ValueError(
            f"predictions, golds and schemas differ in length: {len(predictions)}, {len(golds)}, {len(schemas)}"
        )
    if scorer is None:
        scorer = ContentSimilarity(options=options)
    elif options is not None and options != scorer.options:
        raise ValueError("pass either options or a scorer built with them, not both")
    parsed = [parse_response(p) for p in predictions]
    pairs = [(r.value, g) for r, g in zip(parsed, golds) if r.ok]
    scores = iter(scorer.score_many(pairs, progress=progress))
    examples: list[ExampleResult] = []
    for r, schema in zip(parsed, schemas):
        if r.ok:
            examples.append(ExampleResult(True, schema_matches(r.value, schema, mode=schema_mode), next(scores), r.value))
        else:
            zero = None if scorer.options.unparseable == "skip" else ContentScore(0.0, 0.0, 0.0)
            examples.append(ExampleResult(False, False, zero))
    n = len(examples)
    scored = [e.content for e in examples if e.content is not None]

    def mean(xs: Iterable[float], count: int) -> float:
        return sum(xs) / count if count else 0.0

    return EvalResult(
        n=n,
        schema_accuracy=mean((1.0 if e.schema_ok else 0.0 for e in examples), n),
        content_similarity=mean((c.similarity for c in scored), len(scored)),
        precision=mean((c.precision for c in scored), len(scored)),
        recall=mean((c.recall for c in scored), len(scored)),
        unparseable=sum(1 for e in examples if not e.parsed),
        examples=examples,
    )
