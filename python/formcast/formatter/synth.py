"""Synthetic text-to-JSON training data: the pipeline of the SPOT paper (§4, App. D.2, F.2).

For each generation call:

1. sample the five diversity dimensions — industry vertical, JSON
   complexity, text length style, genre, text type — and a temperature in
   [0, 0.5];
2. sample 1–3 demonstrations from a seed dataset (the paper uses WikiBio's
   training set; any JSONL in the ``shared/data/slot`` form works);
3. fill the generation prompt (Figure 8) and ask the generator model;
4. take every JSON object inside the ``<JSONL>...</JSONL>`` blocks of the answer;
5. **stage 1** (format validity): ``input_text`` is a non-empty string, the
   schema is a valid JSON Schema of an object with ``properties``, and the
   gold output validates against it with exactly its keys and value types;
6. **stage 2** (content validity): the judge model answers the prompt of
   Figure 7; only ``<validity>True</validity>`` is kept.

Accepted examples are appended to the output JSONL as they pass (with the
sampled dimensions in ``meta``), rejected ones with their reason to
``<output>.rejected.jsonl``; the run resumes from the examples already there.

The paper names only a few values of each dimension (e.g. "Healthcare",
"Financial Services"; "Basic" (3-5 key-value pairs) to "Comprehensive"; "Brief
Snippets" (15-30 words) to "Extended" (200-300 words); "Bullet points", "Code
snippets", "Dialogue"); the full lists below, with the counts the paper gives
(30, 10, 10, 40, 10), are ours.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from .._depth import MAX_CHECK_DEPTH, NestingError, check_nesting
from ..evaluate.metrics import schema_matches
from .backends import Backend, BackendError, GenerationRequest, TransientBackendError
from .data import Example
from .prompts import GENERATION_PROMPT, JUDGE_PROMPT, fill

__all__ = [
    "INDUSTRY_VERTICALS",
    "JSON_COMPLEXITIES",
    "TEXT_LENGTH_STYLES",
    "GENRES",
    "TEXT_TYPES",
    "SynthesisSpec",
    "Candidate",
    "sample_spec",
    "generation_prompt",
    "parse_generation",
    "stage1_problems",
    "judge",
    "parse_verdict",
    "SynthesisStats",
    "synthesize",
]

INDUSTRY_VERTICALS = [
    "Healthcare", "Financial Services", "Retail and E-commerce", "Manufacturing", "Education",
    "Real Estate", "Transportation and Logistics", "Energy and Utilities", "Telecommunications",
    "Media and Entertainment", "Hospitality and Tourism", "Agriculture", "Insurance", "Legal Services",
    "Government and Public Sector", "Automotive", "Aerospace and Defense", "Pharmaceuticals and Biotech",
    "Construction", "Food and Beverage", "Software and IT Services", "Cybersecurity", "Human Resources",
    "Marketing and Advertising", "Non-profit", "Sports and Fitness", "Fashion and Apparel",
    "Environmental Services", "Gaming", "Scientific Research",
]  # fmt: skip

JSON_COMPLEXITIES = [
    "Basic: 3-5 flat key-value pairs, all strings",
    "Simple: 5-8 flat key-value pairs with strings, numbers and booleans",
    "Listed: flat keys plus one array of strings",
    "Grouped: one nested object of 3-5 keys beside flat keys",
    "Moderate: two nested objects and one array, 8-12 keys in total",
    "Tabular: an array of 3-6 objects that share the same keys",
    "Layered: nesting three levels deep with mixed value types",
    "Detailed: 12-20 keys across nested objects and arrays of objects",
    "Complex: arrays of objects that contain arrays, four levels deep",
    "Comprehensive: multiple nested objects, arrays of objects, numbers, booleans and nulls, 20+ keys",
]

TEXT_LENGTH_STYLES = [
    "Brief Snippets (15-30 words)",
    "Short Sentences (30-50 words)",
    "Compact Paragraph (50-70 words)",
    "Standard Paragraph (70-100 words)",
    "Detailed Paragraph (100-130 words)",
    "Two Paragraphs (130-160 words)",
    "Multi-paragraph (160-200 words)",
    "Long-form (200-230 words)",
    "In-depth (230-260 words)",
    "Extended (260-300 words)",
]

GENRES = [
    "news article", "technical report", "blog post", "product review", "academic abstract",
    "press release", "email", "meeting minutes", "customer support chat", "legal contract clause",
    "medical note", "financial statement summary", "job posting", "recipe", "travel guide",
    "user manual", "FAQ", "social media post", "interview transcript", "speech",
    "policy document", "scientific paper excerpt", "marketing copy", "event announcement",
    "incident report", "case study", "forum post", "memo", "biography", "obituary",
    "sports commentary", "real estate listing", "invoice description", "patent abstract",
    "course syllabus", "release notes", "bug report", "weather report", "podcast summary",
    "fiction excerpt",
]  # fmt: skip

TEXT_TYPES = [
    "Bullet points",
    "Code snippets",
    "Dialogue",
    "Narrative prose",
    "Numbered steps",
    "Table-like text",
    "Question and answer",
    "Key: value lines",
    "Markdown with headings",
    "Mixed prose and lists",
]


@dataclass(frozen=True)
class SynthesisSpec:
    """The sampled target characteristics of one generation call."""

    industry_vertical: str
    json_complexity_description: str
    text_length_style: str
    genre: str
    text_type: str
    temperature: float


def sample_spec(rng: random.Random, *, max_temperature: float = 0.5) -> SynthesisSpec:
    """Sample the five diversity dimensions and a temperature in [0, max_temperature]."""
    return SynthesisSpec(
        industry_vertical=rng.choice(INDUSTRY_VERTICALS),
        json_complexity_description=rng.choice(JSON_COMPLEXITIES),
        text_length_style=rng.choice(TEXT_LENGTH_STYLES),
        genre=rng.choice(GENRES),
        text_type=rng.choice(TEXT_TYPES),
        temperature=round(rng.uniform(0.0, max_temperature), 3),
    )


def _demo_line(ex: Example) -> str:
    return json.dumps({"input_text": ex.input_text, "json_schema": ex.json_schema, "gold": ex.gold_json}, ensure_ascii=False)


def generation_prompt(spec: SynthesisSpec, demonstrations: Sequence[Example]) -> str:
    """The Figure 8 prompt for one spec, with the demonstrations as JSONL."""
    return fill(
        GENERATION_PROMPT,
        examples="\n" + "\n".join(_demo_line(d) for d in demonstrations) + "\n",
        industry_vertical=spec.industry_vertical,
        genre=spec.genre,
        json_complexity_description=spec.json_complexity_description,
        text_length_style=spec.text_length_style,
        text_type=spec.text_type,
    )


@dataclass
class Candidate:
    """One generated pair before validation (``problem`` set if it could not be read)."""

    record: Any
    problem: str = ""


_JSONL_BLOCK = re.compile(r"<JSONL>(.*?)</JSONL>", re.S | re.I)


def parse_generation(text: str) -> list[Candidate]:
    """Every JSON value inside the ``<JSONL>`` blocks of a generator answer.

    Objects may span lines; text between them (and fences) is skipped.  A
    block without any JSON value yields one candidate with a ``problem``.
    """
    out: list[Candidate] = []
    decoder = json.JSONDecoder()
    for block in _JSONL_BLOCK.findall(text):
        found = False
        pos = 0
        while True:
            start = block.find("{", pos)
            if start < 0:
                break
            try:
                value, end = decoder.raw_decode(block, start)
            except json.JSONDecodeError:
                pos = start + 1
                continue
            except RecursionError:  # (the decoder's own guard: nothing deeper is a candidate)
                out.append(Candidate(None, "a JSON object in the <JSONL> block is nested too deeply"))
                found = True
                break
            out.append(Candidate(value))
            found = True
            pos = end
        if not found:
            out.append(Candidate(None, "no JSON object inside <JSONL> block"))
    return out


def stage1_problems(record: Any) -> list[str]:
    """Stage-1 format validity; an empty list means the record passes."""
    import jsonschema

    if not isinstance(record, dict):
        return [f"not an object but {type(record).__name__}"]
    problems = []
    for key in ("input_text", "json_schema", "gold"):
        if key not in record:
            problems.append(f"missing {key}")
    if problems:
        return problems
    text, schema, gold = record["input_text"], record["json_schema"], record["gold"]
    if not isinstance(text, str) or not text.strip():
        problems.append("input_text is not a non-empty string")
    if not isinstance(schema, dict):
        return problems + ["json_schema is not an object"]
    # A generator's answer is untrusted: bound what jsonschema will walk.
    for name, value in (("json_schema", schema), ("gold", gold)):
        try:
            check_nesting(value, MAX_CHECK_DEPTH, name)
        except NestingError as exc:
            return problems + [str(exc)]
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict) or not schema["properties"]:
        problems.append('json_schema lacks "type": "object" with non-empty "properties"')
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return problems + [f"json_schema is not a valid JSON Schema: {exc.message}"]
    except RecursionError:
        return problems + ["json_schema is not a valid JSON Schema: too deeply nested to check"]
    from ..repair.errors import InvalidSchema
    from ..repair.validate import compile_validator

    try:
        issues = compile_validator(schema).validate(gold)[1]
    except InvalidSchema as exc:  # e.g. a $ref cycle
        return problems + [f"json_schema is not a valid JSON Schema: {exc}"]
    if issues:
        problems.append(f"gold does not validate at {issues[0].pointer.lstrip('/') or '(root)'}: {issues[0].message}")
    elif not schema_matches(gold, schema):
        problems.append("gold keys or value types differ from the schema's properties")
    return problems


_VERDICT = re.compile(r"<validity>\s*(true|false)\s*</validity>", re.I)


def parse_verdict(text: str) -> bool | None:
    """The judge's verdict: True/False from ``<validity>`` tags (the last one), None if absent."""
    found = _VERDICT.findall(text)
    if not found:
        return None
    return found[-1].lower() == "true"


def judge(backend: Backend, input_text: str, gold: Any, *, max_tokens: int = 512) -> tuple[bool | None, str]:
    """Stage 2: ask the judge whether ``gold`` is supported by ``input_text`` (Figure 7).

    Returns:
        (verdict or None when the answer has no ``<validity>`` tag, raw answer)
    """
    prompt = fill(JUDGE_PROMPT, input_text=input_text, gold=json.dumps(gold, ensure_ascii=False))
    answer = backend.generate(GenerationRequest(prompt=prompt, max_tokens=max_tokens, temperature=0.0, top_p=1.0))
    return parse_verdict(answer.text), answer.text


@dataclass
class SynthesisStats:
    """Counts of one synthesis run."""

    requests: int = 0
    candidates: int = 0
    stage1_rejected: int = 0
    stage2_rejected: int = 0
    accepted: int = 0
    failed_requests: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def reject(self, reason: str) -> None:
        key = reason.split(":")[0]
        self.reasons[key] = self.reasons.get(key, 0) + 1


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def synthesize(
    generator: Backend,
    out_path: str | Path,
    *,
    n: int,
    demonstrations: Sequence[Example],
    judge_backend: Backend | None = None,
    seed: int = 0,
    max_requests: int | None = None,
    max_tokens: int = 4096,
    dataset: str = "synthetic",
    progress: bool = True,
    on_accept: Callable[[Example], None] | None = None,
) -> SynthesisStats:
    """Generate until ``out_path`` holds ``n`` accepted examples.

    Args:
        generator: the model that writes examples (Figure 8 prompt).
        out_path: the output JSONL (appended to; existing lines count toward ``n``).
        n: the number of accepted examples wanted.
        demonstrations: the pool the 1-3 demonstrations are sampled from.
        judge_backend: the stage-2 judge (default: the generator itself).
        seed: seeds the sampling of specs and demonstrations.
        max_requests: stop after this many generator calls (default ``4 * n``).
        max_tokens: generation limit of a generator call.

    Raises:
        ValueError: no demonstrations.
        TransientBackendError: the endpoint failed; accepted examples are saved.
    """
    from tqdm.auto import tqdm

    if not demonstrations:
        raise ValueError("synthesis needs at least one demonstration example")
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    rejected_path = out.with_name(out.name.removesuffix(".jsonl") + ".rejected.jsonl")
    judge_backend = judge_backend or generator
    have = _count_lines(out)
    # A resumed run draws a fresh stream (seeded by seed and the examples
    # already kept), so it does not repeat the specs of the interrupted one.
    rng = random.Random(f"{seed}:{have}")
    stats = SynthesisStats()
    limit = max_requests if max_requests is not None else 4 * n
    bar = tqdm(total=n, initial=min(have, n), desc="synthesizing", unit="ex", disable=not progress)
    try:
        with out.open("a", encoding="utf-8") as fh, rejected_path.open("a", encoding="utf-8") as rej:
            while have < n and stats.requests < limit:
                spec = sample_spec(rng)
                demos = rng.sample(list(demonstrations), k=min(len(demonstrations), rng.randint(1, 3)))
                prompt = generation_prompt(spec, demos)
                stats.requests += 1
                try:
                    answer = generator.generate(
                        GenerationRequest(prompt=prompt, max_tokens=max_tokens, temperature=spec.temperature, top_p=1.0)
                    )
                except TransientBackendError:
                    raise
                except BackendError as exc:
                    stats.failed_requests += 1
                    rej.write(json.dumps({"spec": asdict(spec), "reason": f"request failed: {exc}"}) + "\n")
                    continue
                candidates = parse_generation(answer.text)
                if not candidates:
                    stats.reject("no <JSONL> block")
                    rej.write(json.dumps({"spec": asdict(spec), "reason": "no <JSONL> block", "raw": answer.text}) + "\n")
                for cand in candidates:
                    if have >= n:
                        break
                    stats.candidates += 1
                    problems = [cand.problem] if cand.problem else stage1_problems(cand.record)
                    if problems:
                        stats.stage1_rejected += 1
                        stats.reject(problems[0])
                        rej.write(
                            json.dumps({"spec": asdict(spec), "stage": 1, "reason": problems, "record": cand.record}, ensure_ascii=False)
                            + "\n"
                        )
                        continue
                    record = cand.record
                    verdict, raw_verdict = judge(judge_backend, record["input_text"], record["gold"])
                    if verdict is not True:
                        stats.stage2_rejected += 1
                        reason = "judge: unsupported content" if verdict is False else "judge: no <validity> verdict"
                        stats.reject(reason)
                        rej.write(
                            json.dumps(
                                {"spec": asdict(spec), "stage": 2, "reason": reason, "record": record, "judge": raw_verdict},
                                ensure_ascii=False,
                            )
                            + "\n"
                        )
                        continue
                    ex = Example(
                        id=f"{dataset}-{have}",
                        input_text=record["input_text"],
                        json_schema=record["json_schema"],
                        gold_json=record["gold"],
                        dataset=dataset,
                        meta={"spec": asdict(spec), "demonstrations": [d.id for d in demos]},
                    )
                    fh.write(json.dumps(ex.to_json(), ensure_ascii=False) + "\n")
                    fh.flush()
                    have += 1
                    stats.accepted += 1
                    bar.update(1)
                    if on_accept:
                        on_accept(ex)
    finally:
        bar.close()
    return stats


def iter_specs(seed: int, count: int) -> Iterator[SynthesisSpec]:
    """The first ``count`` specs a run with this seed samples (for inspection)."""
    rng = random.Random(f"{seed}:0")
    for _ in range(count):
        yield sample_spec(rng)
