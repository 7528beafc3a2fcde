"""formcast as SGLang's grammar backend, driven through SGLang's own code.

Runs in the engines environment (``.engines-venv``, made by
scripts/setup.sh: SGLang 0.5.23 with torch on the CPU); skipped elsewhere.
What runs is SGLang's: its plugin loader finds formcast's entry point, its
argument parser takes ``--grammar-backend formcast``, ``publish`` installs
the runtime config, ``create_grammar_backend`` builds the backend,
``BaseGrammarBackend``'s cache and dispatch compile, ``SamplingBatchInfo``
fills and applies a batch's masks, ``spec_utils.generate_token_bitmask``
walks a speculative draft tree (accept / fill / rollback),
``FunctionCallParser`` makes tool-call structural tags, and
``ReasonerGrammarBackend`` / ``ReasonerGrammarObject`` wrap the grammar for
reasoning models. Every mask is compared with formcast's own matcher on the
real SmolLM2 vocabulary.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sglang = pytest.importorskip("sglang")

import formcast as fc  # noqa: E402
from formcast.integrations import sglang as fc_sglang  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "tokenizers"
VOCAB = 49152  # SmolLM2's logits width
EOS = 2  # <|im_end|>, SmolLM2-Instruct's end of turn

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "role": {"enum": ["admin", "user"]},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "minItems": 1},
    },
    "required": ["name", "age", "role", "tags"],
    "additionalProperties": False,
    "$defs": {"tag": {"type": "string", "pattern": "^[a-z]{2,8}$"}},
}
PERSON_DOC = '{"name": "Ada", "age": 36, "role": "admin", "tags": ["math", "poet"]}'
ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
                "required": ["sku", "qty"],
            },
            "maxItems": 3,
        },
    },
    "required": ["id", "lines"],
}
ORDER_DOC = '{"id": "123e4567-e89b-12d3-a456-426614174000", "lines": [{"sku": "A-1", "qty": 2}]}'


def _server_args(model_dir: Path, *extra: str):
    from sglang.srt.server_args import prepare_server_args

    return prepare_server_args(["--model-path", str(model_dir), "--device", "cpu", "--grammar-backend", "formcast", *extra])


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A model folder with SmolLM2-135M's config and real tokenizer (no weights:
    nothing here runs the model)."""
    d = tmp_path_factory.mktemp("smollm2")
    (d / "tokenizer.json").write_bytes((SHARED / "smollm2-tokenizer.json").read_bytes())
    (d / "tokenizer_config.json").write_bytes((SHARED / "smollm2-tokenizer_config.json").read_bytes())
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 576, "intermediate_size": 1536,
        "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "vocab_size": VOCAB,
        "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 100000, "tie_word_embeddings": True,
        "bos_token_id": 1, "eos_token_id": EOS, "torch_dtype": "bfloat16", "hidden_act": "silu",
    }
    (d / "config.json").write_text(json.dumps(config))
    return d


@pytest.fixture(scope="module")
def plugins_loaded():
    from sglang.srt.plugins import load_plugins

    load_plugins()  # SGLang's own discovery of the sglang.srt.plugins entry points


@pytest.fixture(scope="module")
def tokenizer(model_dir):
    from sglang.srt.utils.hf_transformers.tokenizer import get_tokenizer

    return get_tokenizer(str(model_dir))


def _create_backend(model_dir, tokenizer, *extra: str):
    from sglang.srt.constrained.base_grammar_backend import create_grammar_backend
    from sglang.srt.runtime_context import SpawnRanks, publish

    args = _server_args(model_dir, *extra)
    publish(args, role="scheduler", ranks=SpawnRanks(world_rank=0))
    return create_grammar_backend(args, tokenizer, VOCAB, {EOS})


@pytest.fixture(scope="module")
def backend(plugins_loaded, model_dir, tokenizer):
    return _create_backend(model_dir, tokenizer)


@pytest.fixture(scope="module")
def reference(tokenizer):
    """formcast's own compiler on the same vocabulary, to compare masks with."""
    info = fc.TokenizerInfo.from_huggingface(tokenizer.backend_tokenizer, stop_token_ids=[EOS], logits_size=VOCAB)
    return fc.GrammarCompiler(info)


def _compile(backend, key_type: str, key_string: str):
    """SGLang's path: cache lookup, then the dispatch on its executor."""
    value, hit = backend.get_cached_or_future_value((key_type, key_string), False)
    grammar = value if hit else value.result(timeout=60)
    backend.set_cache((key_type, key_string), grammar.copy())
    return grammar


def _own_mask(matcher) -> np.ndarray:
    bm = fc.allocate_token_bitmask(1, VOCAB)
    matcher.fill_next_token_bitmask(bm, 0)
    return fc.bitmask_to_bool(bm, VOCAB)[0]


def _sampling_info(grammars):
    from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo

    n = len(grammars)
    return SamplingBatchInfo(
        temperatures=torch.ones(n, 1), top_ps=torch.ones(n), top_ks=torch.full((n,), VOCAB), min_ps=torch.zeros(n),
        is_all_greedy=True, is_any_greedy=True, need_top_p_sampling=False, need_top_k_sampling=False,
        need_min_p_sampling=False, vocab_size=VOCAB, grammars=grammars, device="cpu",
    )


# -- the plugin and the flag --------------------------------------------------


def test_entry_point_registers_the_flag_and_the_factory(plugins_loaded, model_dir):
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    from sglang.srt.constrained.base_grammar_backend import GRAMMAR_BACKEND_REGISTRY

    assert "formcast" in GRAMMAR_BACKEND_CHOICES
    assert GRAMMAR_BACKEND_REGISTRY["formcast"] is fc_sglang.create_backend
    assert _server_args(model_dir).grammar_backend == "formcast"


def test_create_grammar_backend_builds_formcasts(backend):
    assert isinstance(backend, fc_sglang.FormcastGrammarBackend)
    assert backend.vocab_size == VOCAB


def test_grammar_manager_compiles_caches_and_aborts(plugins_loaded, model_dir, tokenizer):
    """SGLang's scheduler-side GrammarManager with real Req objects: grammars
    compile on the backend's executor and come back ready; a repeated schema
    is a cache hit with a fresh state; a bad schema aborts its request alone
    with a 400 naming the keyword, and so does its cached failure."""
    from array import array
    from types import SimpleNamespace

    from sglang.srt.constrained.grammar_manager import GrammarManager
    from sglang.srt.managers.schedule_batch import Req
    from sglang.srt.runtime_context import SpawnRanks, publish
    from sglang.srt.sampling.sampling_params import SamplingParams

    args = _server_args(model_dir)
    publish(args, role="scheduler", ranks=SpawnRanks(world_rank=0))
    scheduler = SimpleNamespace(
        server_args=args, tokenizer=tokenizer,
        model_config=SimpleNamespace(vocab_size=VOCAB, hf_eos_token_id={EOS}, think_end_ids=None),
        dp_tp_cpu_group=None, dp_tp_group=SimpleNamespace(world_size=1, first_rank=0, is_first_rank=True), pp_group=None,
    )
    manager = GrammarManager(scheduler)
    assert isinstance(manager.grammar_backend, fc_sglang.FormcastGrammarBackend)

    def req(rid, **constraint):
        return Req(rid, "hi", array("i", [1, 2, 3]), SamplingParams(max_new_tokens=16, **constraint), vocab_size=VOCAB)

    bad_schema = '{"type": "object", "properties": {"a": {"type": "strin"}}}'
    first = [req("a", json_schema=json.dumps(PERSON)), req("b", regex="[0-9]+"), req("c", json_schema=bad_schema)]
    assert all(manager.process_req_with_grammar(r) for r in first)
    ready = []
    for _ in range(200):
        ready += manager.get_ready_grammar_requests()
        if not manager.grammar_queue:
            break
    assert sorted(r.rid for r in ready) == ["a", "b", "c"]
    a, b, c = sorted(ready, key=lambda r: r.rid)
    assert isinstance(a.grammar, fc_sglang.FormcastGrammar) and isinstance(b.grammar, fc_sglang.FormcastGrammar)
    assert a.to_finish is None and b.to_finish is None
    assert c.grammar is None and c.to_finish is not None and c.to_finish.status_code == 400
    assert "strin" in c.to_finish.message
    # the same schema again: a cache hit, a fresh state
    for t in tokenizer.encode('{"name"', add_special_tokens=False):
        a.grammar.accept_token(t)
    again = req("d", json_schema=json.dumps(PERSON))
    assert manager.process_req_with_grammar(again) is False
    assert isinstance(again.grammar, fc_sglang.FormcastGrammar) and again.grammar.matcher.num_rollbackable == 0
    bad_again = req("e", json_schema=bad_schema)
    assert manager.process_req_with_grammar(bad_again) is False
    assert bad_again.to_finish is not None and "strin" in bad_again.to_finish.message


# -- masks through SGLang's batch path -----------------------------------------


def test_batch_masks_equal_formcasts_at_every_step(backend, reference, tokenizer):
    """Four requests of four kinds decode side by side; at every step
    SGLang's SamplingBatchInfo fills and applies the batch's masks, and each
    row allows exactly what formcast's own matcher allows."""
    requests = [
        ("json", json.dumps(PERSON), PERSON_DOC, reference.compile_json_schema(PERSON)),
        ("json", json.dumps(ORDER), ORDER_DOC, reference.compile_json_schema(ORDER)),
        ("regex", r"(\+1 )?\(\d{3}\) \d{3}-\d{4}", "+1 (555) 010-4477", reference.compile_regex(r"(\+1 )?\(\d{3}\) \d{3}-\d{4}")),
        ("ebnf", 'root ::= "yes" | "no" | "maybe: " [0-9]+', "maybe: 42", reference.compile_ebnf('root ::= "yes" | "no" | "maybe: " [0-9]+')),
    ]
    grammars = [_compile(backend, kind, text) for kind, text, _, _ in requests]
    own = [fc.GrammarMatcher(c) for *_, c in requests]
    docs = [tokenizer.encode(doc, add_special_tokens=False) + [EOS] for _, _, doc, _ in requests]
    # A row without a grammar rides along and must stay unmasked.
    info = _sampling_info(grammars + [None])
    steps = max(map(len, docs))
    for step in range(steps):
        info.update_regex_vocab_mask()
        logits = torch.zeros(len(grammars) + 1, VOCAB)
        info.apply_logits_bias(logits)
        allowed = torch.isfinite(logits).numpy()
        assert allowed[-1].all(), "the row without a grammar was masked"
        for row, (grammar, matcher, doc) in enumerate(zip(grammars, own, docs)):
            if step >= len(doc):
                continue  # ended: SGLang leaves it out of the fill
            assert (allowed[row] == _own_mask(matcher)).all(), f"row {row} step {step}"
            token = doc[step]
            assert allowed[row, token], f"row {row}: the document's token {token} is masked at step {step}"
            grammar.accept_token(token)
            assert matcher.accept_token(token)
        for row, (grammar, doc) in enumerate(zip(grammars, docs)):
            assert grammar.is_terminated() == (step >= len(doc) - 1), f"row {row} step {step}"


def test_eos_only_where_the_grammar_can_end(backend, tokenizer):
    grammar = _compile(backend, "json", json.dumps(PERSON))
    doc = tokenizer.encode(PERSON_DOC, add_special_tokens=False)
    info = _sampling_info([grammar])
    for token in doc:
        info.update_regex_vocab_mask()
        logits = torch.zeros(1, VOCAB)
        info.apply_logits_bias(logits)
        assert not torch.isfinite(logits[0, EOS]), "EOS allowed inside the document"
        grammar.accept_token(token)
    info.update_regex_vocab_mask()
    logits = torch.zeros(1, VOCAB)
    info.apply_logits_bias(logits)
    assert torch.isfinite(logits[0, EOS])
    assert not grammar.is_terminated()
    grammar.accept_token(EOS)
    assert grammar.is_terminated()


def test_a_refused_token_is_the_valueerror_sglang_aborts_on(backend, tokenizer):
    grammar = _compile(backend, "json", json.dumps(PERSON))
    with pytest.raises(ValueError, match="not allowed"):
        grammar.accept_token(tokenizer.encode("[", add_special_tokens=False)[0])


def test_the_cache_hands_out_fresh_states(backend, tokenizer):
    first = _compile(backend, "json", json.dumps(ORDER))
    first.accept_token(tokenizer.encode("{", add_special_tokens=False)[0])
    again, hit = backend.get_cached_or_future_value(("json", json.dumps(ORDER)), False)
    assert hit and isinstance(again, fc_sglang.FormcastGrammar)
    assert again.grammar_stats.is_cache_hit
    # The copy starts at the beginning, not where the first request is.
    assert again.matcher.num_rollbackable == 0 and first.matcher.num_rollbackable == 1


# -- speculative decoding: SGLang's draft-tree walk ---------------------------------


def test_draft_tree_masks_and_rollback(backend, reference, tokenizer):
    """SGLang's generate_token_bitmask accepts, fills and rolls back along a
    draft tree; every node's mask must equal formcast's after that node's
    path, and the grammar must come back to where it was."""
    from sglang.srt.speculative.spec_utils import generate_token_bitmask

    class Req:
        def __init__(self, grammar):
            self.grammar = grammar

    grammar = _compile(backend, "json", json.dumps(PERSON))
    prefix = tokenizer.encode('{"name": "Ada", "age": ', add_special_tokens=False)
    for t in prefix:
        grammar.accept_token(t)
    three, four, comma, x = (tokenizer.encode(s, add_special_tokens=False)[0] for s in ("3", "4", ",", "x"))
    # node 0 = the committed token (already accepted); its children 1 ("3") and
    # 3 ("x", invalid: its subtree is skipped); node 1's child 2 (",")... and
    # node 1's sibling chain 1 -> 3 -> 4 ("4").
    draft = torch.tensor([[prefix[-1], three, comma, x, four]])
    next_token = torch.tensor([[1, 2, -1, -1, -1]])
    next_sibling = torch.tensor([[-1, 3, -1, 4, -1]])
    before = grammar.matcher.num_rollbackable
    mask, _ = generate_token_bitmask([Req(grammar)], next_token, next_sibling, draft, VOCAB)
    assert grammar.matcher.num_rollbackable == before, "the walk did not roll back"
    allowed = fc.bitmask_to_bool(mask.numpy(), VOCAB)
    own = fc.GrammarMatcher(reference.compile_json_schema(PERSON))
    for t in prefix:
        assert own.accept_token(t)
    assert (allowed[0] == _own_mask(own)).all()
    for node, path in ((1, [three]), (2, [three, comma]), (4, [four])):
        probe = fc.GrammarMatcher(reference.compile_json_schema(PERSON))
        for t in prefix + path:
            assert probe.accept_token(t)
        assert (allowed[node] == _own_mask(probe)).all(), f"node {node}"
    # "x" is not allowed after "age": so its row stays as allocated (all allowed).
    assert allowed[3].all()


# -- jump-forward -----------------------------------------------------------------


def test_jump_forward_string_and_retokenize(plugins_loaded, model_dir, tokenizer):
    """Compact JSON forces the keys of a fixed object: the grammar offers
    them as a jump-forward string, and after SGLang appends that text and
    retokenizes the output, jump_and_retokenize rolls back to the common
    prefix and accepts the new tokens."""
    compact = _create_backend(model_dir, tokenizer, "--constrained-json-disable-any-whitespace")
    schema = {"type": "object", "properties": {"status": {"const": "shipped"}, "n": {"type": "integer"}}, "required": ["status", "n"], "additionalProperties": False}
    grammar = compact._init_value_dispatch(("json", json.dumps(schema)), False)
    out = tokenizer.encode('{"', add_special_tokens=False)
    for t in out:
        grammar.accept_token(t)
    helper = grammar.try_jump_forward(tokenizer)
    assert helper is not None
    text, state = grammar.jump_forward_str_state(helper)
    assert text == 'status":"shipped","n":', text
    new = tokenizer.encode('{"' + text, add_special_tokens=False)
    assert new[: len(out)] != out or len(new) > len(out)
    grammar.jump_and_retokenize(out, new, state)
    assert grammar.matcher.num_rollbackable == len(new)
    for t in tokenizer.encode("7}", add_special_tokens=False):
        grammar.accept_token(t)
    grammar.accept_token(EOS)
    assert grammar.is_terminated()
    # A retokenized output the grammar does not allow is refused.
    g2 = compact._init_value_dispatch(("json", json.dumps(schema)), False)
    for t in out:
        g2.accept_token(t)
    with pytest.raises(ValueError):
        g2.jump_and_retokenize(out, tokenizer.encode('{"state":', add_special_tokens=False), -1)


def test_no_jump_forward_where_the_model_chooses(backend, tokenizer):
    grammar = _compile(backend, "json", json.dumps({"type": "array", "items": {"type": "integer"}}))
    for t in tokenizer.encode("[1", add_special_tokens=False):
        grammar.accept_token(t)
    assert grammar.try_jump_forward(tokenizer) is None


# -- tool calls: SGLang's own structural tags -----------------------------------------


def _sampling_params(**request) -> dict:
    """SGLang's OpenAI layer: a chat request to the sampling params its
    scheduler compiles (tools through FunctionCallParser's qwen25 detector)."""
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    req = ChatCompletionRequest(model="smollm2", messages=[{"role": "user", "content": "hi"}], **request)
    constraint = None
    if req.tools:
        constraint = FunctionCallParser(req.tools, "qwen25").get_structure_constraint(req.tool_choice)
    return req.to_sampling_params([], {}, constraint)


WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14}}, "required": ["city", "days"]}


def test_tools_required_become_a_structural_tag_formcast_compiles(backend, tokenizer):
    """tools + tool_choice "required" -> SGLang's structural tag (legacy form
    with at_least_one) -> formcast: the call is accepted, arguments outside
    the schema and text instead of a call are refused."""
    params = _sampling_params(
        tools=[{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER, "strict": True}}],
        tool_choice="required",
    )
    key = params["structural_tag"]
    grammar = _compile(backend, "structural_tag", key)
    assert isinstance(grammar, fc_sglang.FormcastGrammar), getattr(grammar, "error_message", grammar)
    (structure,) = json.loads(key)["structures"]
    call = structure["begin"] + '{"city": "Oslo", "days": 3}' + structure["end"]
    own = fc.GrammarMatcher(grammar.compiled)
    for t in tokenizer.encode(call, add_special_tokens=False):
        assert _own_mask(own)[t]
        grammar.accept_token(t)
        own.accept_token(t)
    assert own.can_terminate()
    bad = _compile(backend, "structural_tag", key)
    with pytest.raises(ValueError):
        for t in tokenizer.encode(call.replace('"days": 3', '"days": 30'), add_special_tokens=False):
            bad.accept_token(t)
    # at_least_one: the reply cannot end without a call
    no_call = fc.GrammarMatcher(grammar.compiled)
    assert not (no_call.accept_string("Sure.") and no_call.can_terminate())


def test_response_format_json_schema_is_compiled_exactly(backend, tokenizer):
    params = _sampling_params(response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}})
    grammar = _compile(backend, "json", params["json_schema"])
    for t in tokenizer.encode(PERSON_DOC, add_special_tokens=False):
        grammar.accept_token(t)
    grammar.accept_token(EOS)
    assert grammar.is_terminated()
    # the pattern on tags is kept: an upper-case tag is refused
    strict = _compile(backend, "json", params["json_schema"])
    with pytest.raises(ValueError):
        for t in tokenizer.encode(PERSON_DOC.replace('"math"', '"MATH"'), add_special_tokens=False):
            strict.accept_token(t)


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key_type,key_string,needle",
    [
        ("json", '{"type": "object", "properties": {"a": {"type": "strin"}}}', "strin"),
        ("json", "{not json", "JSON"),
        ("regex", "(unclosed", "regex"),
        ("ebnf", "root ::= undefined_rule", "undefined_rule"),
        ("structural_tag", '{"type": "structural_tag", "format": {"type": "nope"}}', "nope"),
    ],
)
def test_a_bad_grammar_fails_its_request_with_the_reason(backend, key_type, key_string, needle):
    from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject

    grammar = backend._init_value_dispatch((key_type, key_string), False)
    assert isinstance(grammar, InvalidGrammarObject)
    assert needle.lower() in grammar.error_message.lower(), grammar.error_message


def test_a_whitespace_pattern_is_refused_not_ignored(plugins_loaded, model_dir, tokenizer):
    with pytest.raises(ValueError, match="whitespace-pattern"):
        _create_backend(model_dir, tokenizer, "--constrained-json-whitespace-pattern", "[ ]?")


def test_compact_json_when_any_whitespace_is_off(plugins_loaded, model_dir, tokenizer):
    compact = _create_backend(model_dir, tokenizer, "--constrained-json-disable-any-whitespace")
    grammar = compact._init_value_dispatch(("json", json.dumps(PERSON)), False)
    for t in tokenizer.encode('{"name":', add_special_tokens=False):
        grammar.accept_token(t)
    with pytest.raises(ValueError):
        grammar.accept_token(tokenizer.encode(" ", add_special_tokens=False)[0])


def test_an_untested_sglang_version_fails_at_start(monkeypatch, plugins_loaded, model_dir, tokenizer):
    monkeypatch.setattr(sglang, "__version__", "0.4.0")
    with pytest.raises(RuntimeError, match="tested with SGLang 0.5.23"):
        _create_backend(model_dir, tokenizer)


def test_a_failing_mask_ends_its_request_alone(backend, tokenizer, monkeypatch):
    """A formcast limit while filling one row's mask leaves the batch-mates'
    masks right and turns that request's next accept into the ValueError
    SGLang aborts one request on."""
    good = _compile(backend, "json", json.dumps(PERSON))
    bad = _compile(backend, "json", json.dumps(ORDER))

    class Exploding:
        def __init__(self, inner):
            self.inner = inner

        def fill_next_token_bitmask(self, *a, **k):
            raise fc.LimitError("mask work limit reached")

        def __getattr__(self, name):
            return getattr(self.inner, name)

    bad.matcher = Exploding(bad.matcher)
    info = _sampling_info([bad, good])
    monkeypatch.setattr(fc_sglang, "fill_next_token_bitmask_batch", lambda *a, **k: (_ for _ in ()).throw(fc.LimitError("x")))
    info.update_regex_vocab_mask()
    logits = torch.zeros(2, VOCAB)
    info.apply_logits_bias(logits)
    assert torch.isfinite(logits[0]).all()
    assert not torch.isfinite(logits[1]).all()
    with pytest.raises(ValueError, match="LimitError"):
        bad.accept_token(0)


# -- reasoning: SGLang's wrapper --------------------------------------------------------


def test_reasoning_parser_wraps_the_grammar(plugins_loaded, model_dir, tokenizer, reference):
    """With --reasoning-parser, free text until </think>, then the schema."""
    from sglang.srt.constrained.reasoner_grammar_backend import ReasonerGrammarBackend, ReasonerGrammarObject

    wrapped = _create_backend(model_dir, tokenizer, "--reasoning-parser", "qwen3")
    assert isinstance(wrapped, ReasonerGrammarBackend)
    assert isinstance(wrapped.grammar_backend, fc_sglang.FormcastGrammarBackend)
    value, _ = wrapped.get_cached_or_future_value(("json", json.dumps(PERSON)), True)
    grammar = value.result(timeout=60)
    assert isinstance(grammar, ReasonerGrammarObject)
    info = _sampling_info([grammar])
    thinking = tokenizer.encode("Let me think about Ada. [not JSON]</think>", add_special_tokens=False)
    for t in thinking:
        info.update_regex_vocab_mask()
        logits = torch.zeros(1, VOCAB)
        info.apply_logits_bias(logits)
        assert torch.isfinite(logits).all(), "the reasoning was constrained"
        grammar.accept_token(t)
    own = fc.GrammarMatcher(reference.compile_json_schema(PERSON))
    for t in tokenizer.encode(PERSON_DOC, add_special_tokens=False):
        info.update_regex_vocab_mask()
        logits = torch.zeros(1, VOCAB)
        info.apply_logits_bias(logits)
        assert (torch.isfinite(logits[0]).numpy() == _own_mask(own)).all()
        grammar.accept_token(t)
        own.accept_token(t)
    grammar.accept_token(EOS)
    assert grammar.is_terminated()
