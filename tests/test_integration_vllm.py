"""formcast as vLLM's structured-output backend, through vLLM's own code.

The engine objects are vLLM's real ones, on the CPU: ``VllmConfig`` (a tiny
registered model class stands in for the weights, which are never loaded),
``SamplingParams.verify`` (request validation), ``Request``,
``StructuredOutputManager`` (grammar_init / grammar_bitmask / accept_tokens /
validate_tokens), the CLI parser, and ``apply_grammar_bitmask`` with a real
``SchedulerOutput``, ``GrammarOutput`` and ``InputBatch``. The oracle is a
formcast ``GrammarMatcher`` compiled separately, plus structural checks that
do not depend on formcast (the document's next token is allowed, EOS only at
the end, padding ids never).

Needs the engines environment (``.engines-venv``: torch, transformers, vLLM);
skipped elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from concurrent.futures import Future
from pathlib import Path
from typing import get_args

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
# vLLM's CPU platform (device "cpu", no pinned memory): this runs without a
# GPU, and vLLM cannot infer a device otherwise.
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
vllm = pytest.importorskip("vllm")

import numpy as np  # noqa: E402

import formcast as fc  # noqa: E402
from formcast.integrations import vllm as fv  # noqa: E402
from formcast.integrations._engines import RequestCompiler, tokenizer_info_from_hf  # noqa: E402

from vllm.config import DeviceConfig, ModelConfig, ParallelConfig, SpeculativeConfig, StructuredOutputsConfig, VllmConfig  # noqa: E402
from vllm.exceptions import VLLMValidationError  # noqa: E402
from vllm.sampling_params import SamplingParams, StructuredOutputsParams  # noqa: E402
from vllm.v1.core.sched.output import GrammarOutput, SchedulerOutput  # noqa: E402
from vllm.v1.request import Request  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402
from vllm.v1.structured_output.backend_types import StructuredOutputOptions  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "tokenizers"
SMOLLM2 = SHARED / "smollm2-tokenizer.json"
LLAMA3 = SHARED / "llama3-tokenizer.model"

TOKENIZER_VOCAB = 49152
# The model's logits are wider than the tokenizer (as with padded embedding
# tables): ids 49152.. exist for vLLM and must never be allowed.
LOGITS = 49216
EOS = 2  # <|im_end|>, SmolLM2's EOS

ARCH = "FormcastTinyForCausalLM"

ORDER = {
    "$defs": {
        "item": {
            "type": "object",
            "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                "qty": {"type": "integer", "minimum": 1},
            },
            "required": ["sku", "qty"],
        }
    },
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "status": {"enum": ["new", "paid", "shipped"]},
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "minItems": 1},
        "note": {"type": ["string", "null"]},
    },
    "required": ["id", "status", "items"],
}
TREE = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 12},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3},
            },
            "required": ["name"],
        }
    },
    "$ref": "#/$defs/node",
}
POINT = {
    "type": "object",
    "properties": {
        "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "minItems": 2},
        "label": {"const": "origin"},
        "when": {"type": "string", "format": "date"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["point", "label"],
}
DOCS = [
    (ORDER, {"id": 42, "status": "paid", "items": [{"sku": "ABC-1234", "qty": 2}, {"sku": "XYZ-0001", "qty": 10}], "note": None}),
    (TREE, {"name": "root", "children": [{"name": "a", "children": []}, {"name": "b"}]}),
    (POINT, {"point": [1.5, -2], "label": "origin", "when": "2024-02-29", "score": 0.25}),
]
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOL_TAG = {
    "type": "structural_tag",
    "format": {
        "type": "triggered_tags",
        "triggers": ["<call>"],
        "tags": [{"type": "tag", "begin": "<call>weather:", "content": {"type": "json_schema", "json_schema": CITY}, "end": "</call>"}],
    },
}


# ----------------------------------------------------------------- set-up --


class TinyLM(torch.nn.Module):
    """Registered under ARCH so that ModelConfig can inspect an architecture
    without importing vLLM's model zoo; never instantiated."""

    def __init__(self, *, vllm_config=None, prefix: str = "") -> None:
        super().__init__()

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):  # pragma: no cover
        raise NotImplementedError

    def compute_logits(self, hidden_states):  # pragma: no cover
        raise NotImplementedError

    def embed_input_ids(self, input_ids):  # pragma: no cover
        raise NotImplementedError


def _model_dir(path: Path, tokenizer_dir: Path | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    if tokenizer_dir is None:
        shutil.copy(SMOLLM2, path / "tokenizer.json")
        shutil.copy(SHARED / "smollm2-tokenizer_config.json", path / "tokenizer_config.json")
    config = {
        "architectures": [ARCH],
        "model_type": "llama",
        "vocab_size": LOGITS,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "num_hidden_layers": 1,
        "max_position_embeddings": 2048,
        "bos_token_id": 1,
        "eos_token_id": EOS,
        "torch_dtype": "float32",
    }
    (path / "config.json").write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """register(), the tiny model directories, and no pinned memory (in case
    vLLM resolved a GPU platform before this module set the CPU one)."""
    if not SMOLLM2.exists():
        pytest.skip(f"{SMOLLM2} is missing")
    fv.register()
    vllm.ModelRegistry.register_model(ARCH, TinyLM)
    import vllm.v1.structured_output.utils as so_utils
    import vllm.v1.worker.gpu_input_batch as gib

    mp = pytest.MonkeyPatch()
    mp.setattr(so_utils, "PIN_MEMORY", False)
    mp.setattr(gib, "PIN_MEMORY", False)

    root = tmp_path_factory.mktemp("vllm-models")
    plain = _model_dir(root / "smollm2")
    # The same tokenizer with <think> and </think> added (ids 49152, 49153),
    # for vLLM's deepseek_r1 reasoning parser.
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(plain))
    tok.add_tokens(["<think>", "</think>"], special_tokens=True)
    reasoning = root / "smollm2-think"
    tok.save_pretrained(str(reasoning))
    _model_dir(reasoning, tokenizer_dir=reasoning)
    yield {"plain": plain, "reasoning": reasoning}
    mp.undo()


def make_config(model_dir: Path, *, spec_tokens: int = 0, reasoning_parser: str = "") -> VllmConfig:
    mc = ModelConfig(model=str(model_dir), tokenizer=str(model_dir), dtype="float32", max_model_len=1024)
    spec = None
    if spec_tokens:
        spec = SpeculativeConfig(
            method="ngram",
            num_speculative_tokens=spec_tokens,
            prompt_lookup_max=3,
            prompt_lookup_min=1,
            target_model_config=mc,
            target_parallel_config=ParallelConfig(),
        )
    return VllmConfig(
        model_config=mc,
        device_config=DeviceConfig(device="cpu"),
        speculative_config=spec,
        structured_outputs_config=StructuredOutputsConfig(backend="formcast", reasoning_parser=reasoning_parser),
    )


@pytest.fixture(scope="module")
def config(env) -> VllmConfig:
    return make_config(env["plain"])


@pytest.fixture
def manager(config):
    m = StructuredOutputManager(config)
    yield m
    m.clear_backend()


def make_params(vc: VllmConfig, tokenizer, stop_token_ids=None, **so) -> SamplingParams:
    """SamplingParams as vLLM's input processor prepares and validates them."""
    params = SamplingParams(max_tokens=256, stop_token_ids=stop_token_ids, structured_outputs=StructuredOutputsParams(**so))
    params.update_from_generation_config(vc.model_config.try_get_generation_config(), tokenizer.eos_token_id)
    params.verify(vc.model_config, vc.speculative_config, vc.structured_outputs_config, tokenizer)
    return params


def start(manager: StructuredOutputManager, rid: str = "r0", *, reasoning_ended=None, stop_token_ids=None, **so) -> Request:
    params = make_params(manager.vllm_config, manager.tokenizer, stop_token_ids, **so)
    assert params.structured_outputs._backend == "formcast"
    req = Request(rid, prompt_token_ids=[1, 9690, 198], sampling_params=params, pooling_params=None, reasoning_ended=reasoning_ended)
    manager.grammar_init(req)
    pending = req.structured_output_request._grammar
    if isinstance(pending, Future):
        pending.exception(timeout=60)  # compiled on vLLM's executor
    assert req.structured_output_request.is_grammar_ready
    return req


def grammar_of(req: Request) -> fv.FormcastGrammar:
    g = req.structured_output_request.grammar
    assert isinstance(g, fv.FormcastGrammar), g
    return g


def step(manager, req: Request, token: int) -> None:
    """What the scheduler does with a sampled token."""
    req.append_output_token_ids(token)
    assert manager.accept_tokens(req, [token])


def masks(manager, reqs: list[Request], spec: dict[str, list[int]] | None = None) -> np.ndarray:
    return manager.grammar_bitmask({r.request_id: r for r in reqs}, [r.request_id for r in reqs], spec or {})


def allowed(rows: np.ndarray) -> np.ndarray:
    return fc.bitmask_to_bool(np.atleast_2d(rows), LOGITS)


class Oracle:
    """formcast's own matcher for the same request, compiled separately."""

    def __init__(self, tokenizer, stops, compile_fn) -> None:
        rc = RequestCompiler(tokenizer_info_from_hf(tokenizer, logits_size=LOGITS, stop_token_ids=stops))
        self.matcher = fc.GrammarMatcher(compile_fn(rc))
        self.row = fc.allocate_token_bitmask(1, LOGITS)

    def mask(self) -> np.ndarray:
        self.matcher.fill_next_token_bitmask(self.row)
        return self.row[0].copy()


def encode(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


def apply_with_vllm(batch: list[str], bitmask_ids: list[str], bitmask: np.ndarray, logits, spec=None) -> None:
    """vLLM's apply step, with its real scheduler output and input batch."""
    from vllm.v1.structured_output.utils import apply_grammar_bitmask
    from vllm.v1.worker.gpu_input_batch import CachedRequestState, InputBatch

    ib = InputBatch(
        max_num_reqs=8, max_model_len=1024, max_num_batched_tokens=1024, device=torch.device("cpu"),
        vocab_size=LOGITS, block_sizes=[16], max_num_blocks_per_req=[64],
    )
    for rid in batch:
        ib.add_request(CachedRequestState(
            req_id=rid, prompt_token_ids=[1, 2, 3], mm_features=[], sampling_params=SamplingParams(), generator=None,
            block_ids=([0],), num_computed_tokens=0, output_token_ids=[],
        ))
    so = SchedulerOutput.make_empty()
    so.scheduled_spec_decode_tokens = spec or {}
    apply_grammar_bitmask(so, GrammarOutput(structured_output_request_ids=bitmask_ids, grammar_bitmask=bitmask), ib, logits)


# ------------------------------------------------------------ registration --


def test_plugin_entry_point_is_what_vllm_loads(env):
    from vllm.plugins import DEFAULT_PLUGINS_GROUP, load_plugins_by_group

    assert load_plugins_by_group(DEFAULT_PLUGINS_GROUP).get("formcast") is fv.register


def test_cli_accepts_the_formcast_backend(env):
    from vllm.engine.arg_utils import EngineArgs
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
    args = parser.parse_args(["--structured-outputs-config", '{"backend": "formcast"}'])
    assert EngineArgs.from_cli_args(args).structured_outputs_config.backend == "formcast"
    args = parser.parse_args(["--structured-outputs-config.backend", "formcast"])
    assert args.structured_outputs_config.backend == "formcast"
    with pytest.raises(SystemExit):  # the Literal still rejects other names
        parser.parse_args(["--structured-outputs-config", '{"backend": "nope"}'])
    # A dict is validated through VllmConfig's own (rebuilt) schema.
    assert VllmConfig(device_config=DeviceConfig(device="cpu"), structured_outputs_config={"backend": "formcast"}).structured_outputs_config.backend == "formcast"


def test_register_is_idempotent(env):
    for _ in range(3):
        fv.register()
    assert get_args(StructuredOutputsConfig.__dataclass_fields__["backend"].type).count("formcast") == 1
    for fn in (SamplingParams._validate_structured_outputs, StructuredOutputManager.grammar_init):
        assert getattr(fn, "__formcast_wrapped__", False)
        assert not getattr(fn.__wrapped__, "__formcast_wrapped__", False)  # wrapped once


def test_other_vllm_versions_are_refused(env, config, monkeypatch, caplog):
    for version in ("0.33.0", "0.33.5.dev12+gabc"):
        monkeypatch.setattr(vllm, "__version__", version)
        fv.register()
    patch_calls = []
    monkeypatch.setattr(fv, "_accept_backend_name", lambda: patch_calls.append(1))
    for version in ("0.34.0", "0.32.1", "1.0.0", "unknown"):
        monkeypatch.setattr(vllm, "__version__", version)
        caplog.clear()
        with caplog.at_level("ERROR", logger=fv.__name__):
            fv.register()  # never breaks vLLM for people who do not select formcast
        assert patch_calls == [], "patched an untested vLLM"
        assert any(re.search(r"0\.33\.x", r.getMessage()) for r in caplog.records)
        with pytest.raises(RuntimeError, match=r"0\.33\.x"):
            fv.FormcastBackend(config, tokenizer=None, vocab_size=LOGITS)


def test_other_backends_are_left_alone(config):
    params = SamplingParams(structured_outputs=StructuredOutputsParams(regex="[a-z]+"))
    other = StructuredOutputsConfig(backend="xgrammar")
    from vllm.tokenizers import cached_tokenizer_from_config

    params.verify(config.model_config, None, other, cached_tokenizer_from_config(config.model_config))
    assert params.structured_outputs._backend == "xgrammar"


# ------------------------------------------------------------------- masks --


@pytest.mark.parametrize("schema,doc", DOCS, ids=["order-ref-enum-pattern-minItems", "recursive-tree", "prefixItems-const-format"])
def test_masks_along_a_document_equal_formcast_and_end_only_at_the_end(manager, schema, doc):
    tok = manager.tokenizer
    req = start(manager, json=schema)
    g = grammar_of(req)
    oracle = Oracle(tok, req.sampling_params.all_stop_token_ids, lambda rc: rc.json_schema(json.dumps(schema)))
    ids = encode(tok, json.dumps(doc))
    for i, t in enumerate(ids + [EOS]):
        row = masks(manager, [req])[0]
        np.testing.assert_array_equal(row, oracle.mask(), err_msg=f"step {i}")
        ok = allowed(row)[0]
        assert ok[t], f"step {i}: the document's token {t} is masked"
        assert not ok[TOKENIZER_VOCAB:].any(), "padding ids past the tokenizer are allowed"
        assert ok[EOS] == (i == len(ids)), f"step {i}: EOS allowed={ok[EOS]}"
        assert not g.is_terminated()
        step(manager, req, t)
        assert oracle.matcher.accept_token(t)
    assert g.is_terminated() and g.num_processed_tokens == len(ids) + 1
    g.reset()
    assert not g.is_terminated() and g.num_processed_tokens == 0
    np.testing.assert_array_equal(masks(manager, [req])[0], Oracle(tok, [EOS], lambda rc: rc.json_schema(json.dumps(schema))).mask())


def test_an_invalid_document_is_masked_where_it_goes_wrong(manager):
    tok = manager.tokenizer
    req = start(manager, json=ORDER)
    good = encode(tok, '{"id": 7, "status": "')
    for t in good:
        assert allowed(masks(manager, [req])[0])[0][t]
        step(manager, req, t)
    ok = allowed(masks(manager, [req])[0])[0]
    g = grammar_of(req)
    for word in ("lost", "paidx", "Paid", "paid\\n"):
        ids = encode(tok, word + '"')
        assert not ok[ids[0]] or g.validate_tokens(ids) != ids, word
    assert ok[encode(tok, "paid")[0]]
    assert g.validate_tokens(encode(tok, 'paid"')) == encode(tok, 'paid"')
    assert g.num_processed_tokens == len(good)
    # Rejected by the grammar: vLLM's accept path reports it (and ends the request).
    bad = encode(tok, "lost")[0]
    req.append_output_token_ids(bad)
    assert not manager.accept_tokens(req, [bad])


def test_vllm_apply_keeps_exactly_the_allowed_logits(manager):
    tok = manager.tokenizer
    a = start(manager, "a", json=ORDER)
    b = start(manager, "b", regex=r"\d{3}-[a-z]+")
    for t in encode(tok, '{"id": 1, "status": "new", "items'):
        step(manager, a, t)
    bitmask = masks(manager, [a, b])
    want = allowed(bitmask)
    for dtype in (torch.float32, torch.bfloat16):
        # The batch has an unconstrained request between the two, so vLLM
        # reorders the rows and applies with indices.
        logits = torch.randn(3, LOGITS, generator=torch.Generator().manual_seed(0)).to(dtype)
        before = logits.clone()
        apply_with_vllm(["b", "free", "a"], ["a", "b"], bitmask, logits)
        finite = torch.isfinite(logits).numpy()
        np.testing.assert_array_equal(finite[2], want[0])
        np.testing.assert_array_equal(finite[0], want[1])
        assert torch.equal(logits[1], before[1])
        kept = torch.from_numpy(want[0])
        assert torch.equal(logits[2][kept], before[2][kept])
        assert 0 < want[0].sum() < 1000 and 0 < want[1].sum() < 1000


def test_a_failing_mask_fails_its_request_alone(manager):
    """A formcast limit while filling one request's mask: vLLM's batch fill
    goes on, the batch-mate's row is right, and the failing request's next
    accept is refused (vLLM ends that request with an error)."""
    tok = manager.tokenizer
    a = start(manager, "fail", json=ORDER)
    b = start(manager, "ok", regex=r"\d{3}-[a-z]+")
    want_b = allowed(masks(manager, [b]))[0]

    class Exploding:
        def __init__(self, inner):
            self.inner = inner

        def fill_next_token_bitmask(self, *args, **kwargs):
            raise fc.LimitError("mask work limit reached")

        def __getattr__(self, name):
            return getattr(self.inner, name)

    grammar_of(a).matcher = Exploding(grammar_of(a).matcher)
    rows = allowed(masks(manager, [a, b]))
    np.testing.assert_array_equal(rows[1], want_b)
    assert rows[0].all()
    token = encode(tok, "{")[0]
    a.append_output_token_ids(token)
    assert not manager.accept_tokens(a, [token])
    assert "LimitError" in (grammar_of(a).error or "")


def test_a_requests_stop_tokens_are_allowed_only_where_it_can_end(manager):
    tok = manager.tokenizer
    brace, quote, space_brace = 109, 18, 4029  # "}", '"', " }"
    assert tok.convert_ids_to_tokens([brace, quote, space_brace]) == ["}", '"', "Ġ}"]
    plain = start(manager, "plain", json=CITY)
    stopping = start(manager, "stopping", json=CITY, stop_token_ids=[brace])
    assert stopping.sampling_params.all_stop_token_ids == {EOS, brace}
    oracle = Oracle(tok, {EOS, brace}, lambda rc: rc.json_schema(json.dumps(CITY)))
    for t in encode(tok, '{"city": "Oslo') + [quote]:
        for r in (plain, stopping):
            step(manager, r, t)
        oracle.matcher.accept_token(t)
    rows = allowed(masks(manager, [plain, stopping]))
    # As text, "}" would close the object; as a stop token vLLM would end the
    # request on it before the document is complete, so it is masked.
    assert rows[0][brace] and not rows[1][brace]
    want = allowed(oracle.mask())[0]
    want[brace] = False
    np.testing.assert_array_equal(rows[1], want)
    assert not grammar_of(stopping).validate_tokens([brace])
    step(manager, stopping, space_brace)
    ok = allowed(masks(manager, [stopping])[0])[0]
    assert ok[brace] and ok[EOS]
    step(manager, stopping, brace)
    assert grammar_of(stopping).is_terminated()


# ------------------------------------------------------------ request kinds --

KINDS = [
    ("json", {"json": json.dumps(ORDER)}, json.dumps(DOCS[0][1]), '{"id": 1, "status": "lost"}'),
    ("json_object", {"json_object": True}, '{"a": [1, {"b": null}], "c": "d"}', "[1, 2]"),
    ("regex", {"regex": r"\d{3}-[a-z]+"}, "123-abc", "12-abc"),
    ("grammar", {"grammar": 'root ::= answer "!"\nanswer ::= "yes" | "no"'}, "no!", "no"),
    ("choice", {"choice": ["red", "green", 'blue "😀"']}, 'blue "😀"', "gre"),
    ("structural_tag", {"structural_tag": json.dumps(TOOL_TAG)}, 'Let me check. <call>weather:{"city": "Oslo"}</call>', '<call>weather:{"town": "Oslo"}</call>'),
]


@pytest.mark.parametrize("kind,so,valid,invalid", KINDS, ids=[k[0] for k in KINDS])
def test_every_request_kind(manager, kind, so, valid, invalid):
    tok = manager.tokenizer
    req = start(manager, **so)
    assert req.structured_output_request.structured_output_key[0] is StructuredOutputOptions[kind.upper()]
    g = grammar_of(req)
    # The invalid text is refused somewhere (or cannot end).
    bad = encode(tok, invalid) + [EOS]
    assert g.validate_tokens(bad) != bad
    assert g.num_processed_tokens == 0
    ids = encode(tok, valid)
    for i, t in enumerate(ids + [EOS]):
        ok = allowed(masks(manager, [req])[0])[0]
        assert ok[t], f"step {i}: token {t} masked"
        assert ok[EOS] == (i == len(ids)) or kind == "structural_tag"  # free text may end anywhere
        step(manager, req, t)
    assert g.is_terminated()


# ------------------------------------------------------------------ errors --

BAD = [
    ({"json": json.dumps({"type": "array", "items": {"type": "object"}, "uniqueItems": True})}, "uniqueItems"),
    ({"json": json.dumps({"$ref": "#/$defs/missing"})}, "unresolvable reference"),
    ({"json": json.dumps({"type": "string", "pattern": "(?=x)a"})}, "lookaround"),
    ({"json": "{not json"}, "Expecting"),
    ({"regex": "(a"}, "unclosed group"),
    ({"grammar": "start: 'a'"}, "Lark"),
    ({"grammar": 'root ::= missing'}, "missing"),
    ({"choice": []}, "at least one"),
    ({"structural_tag": json.dumps({"type": "structural_tag", "format": {"type": "no_such_format"}})}, "no_such_format"),
]


@pytest.mark.parametrize("so,reason", BAD, ids=[r for _, r in BAD])
def test_a_request_formcast_refuses_is_a_validation_error(config, so, reason):
    from vllm.tokenizers import cached_tokenizer_from_config

    params = SamplingParams(structured_outputs=StructuredOutputsParams(**so))
    with pytest.raises(VLLMValidationError, match="formcast") as err:
        params.verify(config.model_config, None, config.structured_outputs_config, cached_tokenizer_from_config(config.model_config))
    assert reason in str(err.value)
    assert params.structured_outputs._backend is None


def test_a_compile_error_in_the_engine_fails_the_request(manager):
    # A request that skipped validation: the engine's compile fails, and the
    # grammar slot holds the error (the scheduler answers "Invalid structured
    # outputs: ..." for that request alone).
    params = SamplingParams(max_tokens=8, structured_outputs=StructuredOutputsParams(json=json.dumps({"$ref": "#/nope"})))
    params.structured_outputs._backend = "formcast"
    req = Request("bad", prompt_token_ids=[1], sampling_params=params, pooling_params=None)
    manager.grammar_init(req)
    req.structured_output_request._grammar.exception(timeout=60)
    err = req.structured_output_request.grammar
    assert isinstance(err, fc.GrammarError) and "unresolvable" in str(err)
    assert isinstance(manager.backend, fv.FormcastBackend)


# ------------------------------------------------------ speculative decoding --


def test_speculative_masks_validate_and_rollback(env):
    vc = make_config(env["plain"], spec_tokens=3)
    manager = StructuredOutputManager(vc)
    try:
        tok = manager.tokenizer
        req = start(manager, json=ORDER)
        g = grammar_of(req)
        assert g.max_rollback_tokens >= 3
        oracle = Oracle(tok, req.sampling_params.all_stop_token_ids, lambda rc: rc.json_schema(json.dumps(ORDER)))
        ids = encode(tok, json.dumps(DOCS[0][1]))
        for t in ids[:5]:
            step(manager, req, t)
            oracle.matcher.accept_token(t)
        drafts = ids[5:8]
        # One mask per draft position plus the bonus token, each the state
        # after the drafts before it; the grammar ends where it started.
        rows = masks(manager, [req], {"r0": drafts})
        assert rows.shape[0] == 4
        for k in range(4):
            np.testing.assert_array_equal(rows[k], oracle.mask(), err_msg=f"position {k}")
            if k < 3:
                oracle.matcher.accept_token(drafts[k])
        oracle.matcher.rollback(3)
        assert g.num_processed_tokens == 5
        np.testing.assert_array_equal(masks(manager, [req])[0], oracle.mask())
        # vLLM's apply step over the 4 rows of this request.
        logits = torch.zeros(4, LOGITS)
        apply_with_vllm(["r0"], ["r0"], rows, logits, spec={"r0": drafts})
        np.testing.assert_array_equal(torch.isfinite(logits).numpy(), allowed(rows))

        # A bad draft: validation keeps the valid prefix and does not advance.
        bad = encode(tok, "}")[0]
        assert manager.validate_tokens(req, [drafts[0], bad, drafts[1]]) == [drafts[0]]
        assert g.validate_tokens(drafts) == drafts and g.num_processed_tokens == 5
        # After a rejected draft, later rows repeat the last valid state.
        rows = masks(manager, [req], {"r0": [drafts[0], bad, drafts[1]]})
        np.testing.assert_array_equal(rows[2], rows[1])
        np.testing.assert_array_equal(rows[3], rows[1])
        np.testing.assert_array_equal(masks(manager, [req])[0], oracle.mask())

        # accept / rollback round trip, through a stop token.
        rest = ids[5:]
        assert g.accept_tokens("r0", rest + [EOS])
        assert g.is_terminated() and g.validate_tokens([EOS]) == []
        assert g.accept_tokens("r0", [5]) and g.num_processed_tokens == len(ids) + 1  # ignored after the end
        g.rollback(1)
        assert not g.is_terminated() and g.num_processed_tokens == len(ids)
        assert g.validate_tokens([EOS, 5]) == [EOS]  # stops at the stop token
        g.rollback(3)
        for t in rest[:-3]:
            oracle.matcher.accept_token(t)
        np.testing.assert_array_equal(masks(manager, [req])[0], oracle.mask())
    finally:
        manager.clear_backend()


# --------------------------------------------------------------- reasoning --


def test_reasoning_stays_outside_the_grammar(env):
    vc = make_config(env["reasoning"], reasoning_parser="deepseek_r1")
    manager = StructuredOutputManager(vc)
    try:
        tok = manager.tokenizer
        think, end_think = tok.convert_tokens_to_ids(["<think>", "</think>"])
        assert (think, end_think) == (49152, 49153)
        schema = json.dumps(CITY)
        doc = encode(tok, '{"city": "Oslo"}')

        req = start(manager, json=schema)
        g = grammar_of(req)
        oracle = Oracle(tok, req.sampling_params.all_stop_token_ids, lambda rc: rc.json_schema(schema))
        # While reasoning, rows are unconstrained and the grammar does not move.
        for t in [think, *encode(tok, " Oslo is cold; answer in JSON.")]:
            assert (masks(manager, [req])[0] == -1).all()
            assert manager.validate_tokens(req, [t, t]) == [t, t]
            step(manager, req, t)
        assert g.num_processed_tokens == 0 and req.structured_output_request.reasoning_ended is False
        step(manager, req, end_think)
        assert req.structured_output_request.reasoning_ended is True and g.num_processed_tokens == 0
        for t in doc + [EOS]:
            row = masks(manager, [req])[0]
            np.testing.assert_array_equal(row, oracle.mask())
            assert allowed(row)[0][t]
            step(manager, req, t)
            oracle.matcher.accept_token(t)
        assert g.is_terminated()

        # The end of reasoning and the first answer tokens in one step (as
        # with speculative decoding): only the answer reaches the grammar.
        req2 = start(manager, "r1", json=schema)
        for t in [think, *encode(tok, " ok")]:
            step(manager, req2, t)
        chunk = [end_think, *doc[:2]]
        for t in chunk:
            req2.append_output_token_ids(t)
        assert manager.accept_tokens(req2, chunk)
        assert grammar_of(req2).num_processed_tokens == 2
    finally:
        manager.clear_backend()


# -------------------------------------------------------- another vocabulary --


def test_llama3_vocabulary_masks_match_the_tiktoken_file(config):
    """The Llama-3 vocabulary as vLLM holds it (a Hugging Face tokenizer,
    converted from the tiktoken file, behind vLLM's cached wrapper) gives the
    same masks as formcast reading the tiktoken file itself."""
    if not LLAMA3.exists():
        pytest.skip(f"{LLAMA3} is missing")
    pytest.importorskip("tiktoken")
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter
    from vllm.tokenizers.hf import get_cached_tokenizer

    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
                "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
                "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"] + [f"<|reserved_special_token_{i}|>" for i in range(3, 248)]
    hf = PreTrainedTokenizerFast(
        tokenizer_object=TikTokenConverter(vocab_file=str(LLAMA3), extra_special_tokens=specials).converted(),
        eos_token="<|eot_id|>",
    )
    tokenizer = get_cached_tokenizer(hf)
    stops = {128001, 128008, 128009}
    backend = fv.FormcastBackend(config, tokenizer=tokenizer, vocab_size=128256)
    g = backend.compile_grammar(StructuredOutputOptions.JSON, json.dumps(ORDER), stop_token_ids=stops)
    bitmask = backend.allocate_token_bitmask(2)
    assert bitmask.dtype == torch.int32 and tuple(bitmask.shape) == (2, 128256 // 32)

    direct = fc.GrammarCompiler(fc.TokenizerInfo.from_tiktoken(LLAMA3)).compile_json_schema(ORDER)
    m = fc.GrammarMatcher(direct)
    want = fc.allocate_token_bitmask(1, 128256)
    ids = hf.encode(json.dumps(DOCS[0][1]), add_special_tokens=False)
    for i, t in enumerate(ids + [128009]):
        g.fill_bitmask(bitmask, 1)
        m.fill_next_token_bitmask(want)
        np.testing.assert_array_equal(bitmask[1].numpy(), want[0], err_msg=f"step {i}")
        assert g.accept_tokens("llama", [t]) and m.accept_token(t)
    assert g.is_terminated()
    backend.destroy()
