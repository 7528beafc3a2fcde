"""The server app in-process (no model needed): health while loading or after
a failed load, CLI wiring, and the pure helpers (stop strings, sampling,
biases and penalties, reading hostile bodies, request models)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from formcast.cli import SUBCOMMANDS, main  # noqa: E402
from formcast.server import ServerConfig, create_app  # noqa: E402
from formcast.server import body as body_mod  # noqa: E402
from formcast.server.body import parse_body  # noqa: E402
from formcast.server.constraints import MAX_SCHEMA_DEPTH, constraint_from_request  # noqa: E402
from formcast.server.engine import LogitBias, SamplingParams, StopScanner, _find_stop, _held_suffix, _penalize, _sample  # noqa: E402
from formcast.server.errors import APIError  # noqa: E402
from formcast.server.validation import ENDPOINT_MODELS, ChatCompletionRequest, validate_request  # noqa: E402


def test_health_is_503_until_loaded_and_reports_a_failed_load(tmp_path):
    app = create_app(ServerConfig(model=str(tmp_path / "missing.gguf")))
    with TestClient(app) as client:
        deadline = time.monotonic() + 30
        while True:
            r = client.get("/health")
            assert r.status_code == 503 and r.headers["retry-after"]
            if r.json()["status"] == "error":
                break
            assert r.json()["status"] == "loading"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert "missing.gguf" in r.json()["error"]
        r = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 503 and r.json()["error"]["code"] == "model_loading"


def test_cli_has_pluggable_serve_subcommand(capsys):
    assert "serve" in SUBCOMMANDS
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    for flag in ("--host", "--port", "--model", "--threads", "--ctx-size", "--queue-size", "--api-key"):
        assert flag in out
    assert main(["serve", "--template", "not-a-template"]) == 2
    try:
        import formcast.formatter.cli  # noqa: F401
    except ImportError:
        return
    with pytest.raises(SystemExit):  # the formatter's subcommands plug in too
        main(["format", "--help"])
    assert "--schema" in capsys.readouterr().out


def test_stop_string_helpers():
    assert _find_stop("abc STOP def", ("STOP",)) == 4
    assert _find_stop("abc", ("STOP",)) is None
    assert _held_suffix("hello ST", ("STOP",)) == 2
    assert _held_suffix("hello", ("STOP",)) == 0
    assert _held_suffix("xaab", ("aabaab",)) == 3
    assert _held_suffix("xSTOP", ("STOP",)) == 0  # a whole stop string is not a proper prefix
    assert _held_suffix("aaaa", ("aaaa",)) == 3


def _stream_by_rescanning(pieces: list[str], stops: tuple[str, ...]) -> tuple[str, bool]:
    """The reference: rescan the whole held text after every piece."""
    held, out = "", ""
    for piece in pieces:
        held += piece
        hit = _find_stop(held, stops)
        if hit is not None:
            return out + held[:hit], True
        keep = _held_suffix(held, stops)
        out, held = out + held[: len(held) - keep], held[len(held) - keep :]
    return out + held, False


def _stream_by_scanner(pieces: list[str], stops: tuple[str, ...]) -> tuple[str, bool]:
    """What the engine does: feed only the new text to a StopScanner."""
    scanner, held, out = StopScanner(stops), "", ""
    for piece in pieces:
        held += piece
        hit, keep = scanner.feed(piece)
        if hit is not None:
            return out + held[: len(held) - hit], True
        assert len(held) >= keep
        out, held = out + held[: len(held) - keep], held[len(held) - keep :]
    return out + held, False


def test_stop_scanner_matches_rescanning_on_random_streams():
    rng = np.random.default_rng(7)
    for _ in range(3000):
        alphabet = "ab" if rng.random() < 0.7 else "abc "
        stops = tuple("".join(rng.choice(list(alphabet), size=rng.integers(1, 7))) for _ in range(rng.integers(1, 4)))
        text = "".join(rng.choice(list(alphabet), size=rng.integers(0, 40)))
        cuts = sorted(rng.choice(len(text) + 1, size=min(len(text), rng.integers(0, 12)), replace=False)) if text else []
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        assert _stream_by_scanner(pieces, stops) == _stream_by_rescanning(pieces, stops), (stops, pieces)


def test_stop_scanner_is_linear_in_long_stop_strings():
    # 16 stop strings of 1,000 characters that keep almost matching: the
    # held text stays ~1,000 characters long, yet each token costs O(1) per
    # stop string instead of O(length²).
    stops = tuple("a" * 999 + chr(ord("b") + k) for k in range(16))
    scanner = StopScanner(stops)
    t0 = time.perf_counter()
    for _ in range(5000):
        hit, keep = scanner.feed("a")
        assert hit is None
    assert keep == 999
    hit, _ = scanner.feed("c")
    assert hit == 1000
    assert time.perf_counter() - t0 < 2.0
    assert StopScanner(["", "x"]).stops == ("x",)  # empty stop strings are ignored


def test_stop_strings_are_limited_in_the_request_model():
    user = [{"role": "user", "content": "x"}]
    assert validate_request(ChatCompletionRequest, {"messages": user, "stop": ["s" * 1000] * 16}).stop
    for stop, param in (("s" * 1001, "stop"), (["ok", "s" * 1001], "stop[1]"), (["s"] * 17, "stop")):
        with pytest.raises(APIError) as e:
            validate_request(ChatCompletionRequest, {"messages": user, "stop": stop})
        assert e.value.status == 400 and e.value.param == param, e.value.message
    with pytest.raises(APIError) as e:
        validate_request(ChatCompletionRequest, {"messages": user, "stop": "s" * 5000})
    assert "at most 1000 characters" in e.value.message


# ------------------------------------------------ request templates --
@pytest.fixture
def template_pool():
    from formcast.server.jinja_sandbox import WorkerPool

    pool = WorkerPool(max_workers=1)
    yield pool
    pool.close()
    assert not pool.worker_pids


def _render(pool, source, **kw):
    from formcast.server.templates import render_chat

    return render_chat(source, [{"role": "user", "content": "hi"}], time_limit_s=kw.pop("time_limit_s", 5.0), pool=pool, **kw)


def test_request_template_renders_in_a_reused_worker(template_pool):
    src = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{{ extra }}"
    assert _render(template_pool, src, kwargs={"extra": "!"}) == "<user>hi!"
    pid = template_pool.worker_pids
    assert len(pid) == 1 and pid[0] != os.getpid()
    t0 = time.perf_counter()
    for _ in range(50):
        _render(template_pool, src, kwargs={"extra": "!"})
    assert (time.perf_counter() - t0) / 50 < 0.05  # a pipe round trip, not a process start
    assert template_pool.worker_pids == pid


@pytest.mark.parametrize("source, param, needle", [
    ("{{ 'a'.ljust(10**10) }}", "chat_template", "MiB"),
    ("{% for %}", "chat_template", "not a valid Jinja template"),
    ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "chat_template", "too deeply"),
    ("{{ ''.__class__.__mro__ }}", "chat_template", "unsafe"),
    ("{{ raise_exception('no tools here') }}", "messages", "no tools here"),
    ("{{ messages[5].content }}", "messages", "no element 5"),
    ("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "chat_template", "more than"),
])
def test_request_template_failures_are_400s(template_pool, source, param, needle):
    with pytest.raises(APIError) as e:
        _render(template_pool, source)
    assert e.value.status == 400 and e.value.param == param and needle in e.value.message, e.value.message
    assert _render(template_pool, "{{ 'ok' }}") == "ok"  # the pool goes on


def test_request_template_timeout_and_a_stuck_worker(template_pool):
    loop = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
    with pytest.raises(APIError) as e:
        _render(template_pool, loop, time_limit_s=0.3)
    assert e.value.param == "chat_template" and "0.3 s" in e.value.message
    # A worker that stops answering (a C call that ignores signals) is killed
    # after the limit plus a grace period, and replaced.
    import signal

    assert _render(template_pool, "{{ 1 }}") == "1"
    (pid,) = template_pool.worker_pids
    os.kill(pid, signal.SIGSTOP)
    t0 = time.perf_counter()
    with pytest.raises(APIError) as e:
        _render(template_pool, "{{ 1 }}", time_limit_s=0.2)
    assert e.value.param == "chat_template" and time.perf_counter() - t0 < 10
    assert _render(template_pool, "{{ 2 }}") == "2" and template_pool.worker_pids != [pid]


def test_a_dead_idle_worker_is_replaced(template_pool):
    import signal

    assert _render(template_pool, "{{ 1 }}") == "1"
    (pid,) = template_pool.worker_pids
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.1)
    assert _render(template_pool, "{{ 2 }}") == "2"
    assert template_pool.worker_pids != [pid]


def test_a_closed_pool_is_503():
    from formcast.server.jinja_sandbox import WorkerPool

    pool = WorkerPool()
    pool.close()
    with pytest.raises(APIError) as e:
        _render(pool, "{{ 1 }}")
    assert e.value.status == 503


def test_trusted_templates_render_in_process_and_request_jinja_is_not_compiled_here():
    from formcast.server.templates import BUILTIN_TEMPLATES, render_chat, resolve_template

    assert resolve_template("{% for %}", None, param="chat_template", trusted=False) == "{% for %}"
    with pytest.raises(APIError) as e:
        resolve_template("{% for %}", None, param="--template")
    assert e.value.param == "--template"
    out = render_chat(BUILTIN_TEMPLATES["chatml"], [{"role": "user", "content": "hi"}])
    assert out.startswith("<|im_start|>user\nhi")


def test_sampling_respects_mask_and_params():
    rng = np.random.default_rng(0)
    row = np.full(100, -np.inf, dtype=np.float32)
    row[[3, 7]] = [1.0, 2.0]
    for _ in range(50):
        t, _ = _sample(row.copy(), SamplingParams(max_tokens=1, temperature=1.0), rng)
        assert t in (3, 7)
    t, lp = _sample(row.copy(), SamplingParams(max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=5), rng)
    assert t == 7 and [x for x, _ in lp["top"]] == [7, 3]
    assert abs(np.exp(lp["top"][0][1]) + np.exp(lp["top"][1][1]) - 1) < 1e-6
    for _ in range(20):  # top_k 1 is greedy, a small top_p keeps the best token only
        assert _sample(row.copy(), SamplingParams(max_tokens=1, temperature=1.0, top_k=1), rng)[0] == 7
        assert _sample(row.copy(), SamplingParams(max_tokens=1, temperature=1.0, top_p=0.1), rng)[0] == 7


# ------------------------------------------- logits: biases and penalties --
def _row(values: dict[int, float], size: int = 10) -> np.ndarray:
    row = np.zeros(size, dtype=np.float32)
    for k, v in values.items():
        row[k] = v
    return row


def test_logit_bias_adds_to_the_named_tokens():
    row = _row({1: 2.0, 2: -1.0})
    _penalize(row, SamplingParams(max_tokens=1, logit_bias=LogitBias.from_mapping({1: -100.0, 3: 5.0})), [], [], 100)
    assert row.tolist() == pytest.approx([0, -98, -1, 5, 0, 0, 0, 0, 0, 0])


def test_frequency_and_presence_penalties_count_generated_tokens_only():
    row = _row({1: 5.0, 2: 5.0, 3: 5.0})
    p = SamplingParams(max_tokens=1, frequency_penalty=0.5, presence_penalty=1.0)
    _penalize(row, p, [3, 3, 3], [1, 1, 1, 2], 100)  # the prompt's 3s do not count
    assert row[[1, 2, 3]].tolist() == pytest.approx([5 - 1.5 - 1, 5 - 0.5 - 1, 5])


def test_repeat_penalty_is_llama_cpp_s_over_the_last_n_tokens_prompt_included():
    base = {1: 4.0, 2: -4.0, 3: 4.0, 4: 4.0}
    row = _row(base)
    _penalize(row, SamplingParams(max_tokens=1, repeat_penalty=2.0, repeat_last_n=3), [4, 1, 2], [2], 100)
    # window = last 3 of prompt + generated = [1, 2, 2]: token 4 fell out of it
    assert row[[1, 2, 3, 4]].tolist() == pytest.approx([2.0, -8.0, 4.0, 4.0])
    row = _row(base)
    _penalize(row, SamplingParams(max_tokens=1, repeat_penalty=2.0, repeat_last_n=-1), [4, 1, 2], [3], 100)
    assert row[[1, 2, 3, 4]].tolist() == pytest.approx([2.0, -8.0, 2.0, 2.0])
    row = _row(base)
    assert not SamplingParams(max_tokens=1, repeat_penalty=2.0, repeat_last_n=0).changes_logits
    assert not SamplingParams(max_tokens=1).changes_logits


def test_min_p_keeps_tokens_near_the_likeliest():
    rng = np.random.default_rng(0)
    row = np.full(10, -np.inf, dtype=np.float32)
    row[[2, 5, 7]] = [0.0, np.log(0.6), np.log(0.05)]  # p ∝ 1, 0.6, 0.05
    seen = {_sample(row.copy(), SamplingParams(max_tokens=1, temperature=1.0, min_p=0.5), rng)[0] for _ in range(300)}
    assert seen == {2, 5}
    assert {_sample(row.copy(), SamplingParams(max_tokens=1, temperature=2.0, min_p=1.0), rng)[0] for _ in range(50)} == {2}


# ------------------------------------------------------ reading bodies --
def _reference_deep_offset(raw: bytes, limit: int):
    depth, inside, run = 0, False, 0
    for i, c in enumerate(raw):
        if c == 0x22 and run % 2 == 0:
            inside = not inside
        elif not inside and c in b"[{":
            depth += 1
            if depth > limit:
                return i
        elif not inside and c in b"]}":
            depth -= 1
        run = run + 1 if c == 0x5C else 0
    return None


def test_depth_scan_matches_a_reference_across_chunk_borders(monkeypatch):
    import random

    rnd = random.Random(7)
    for chunk in (1, 2, 3, 5, 1 << 20):
        monkeypatch.setattr(body_mod, "_CHUNK", chunk)
        for _ in range(400):
            raw = bytes(rnd.choice(b'[]{}"\\a,') for _ in range(rnd.randint(0, 50)))
            limit = rnd.randint(0, 4)
            hit = body_mod._deep_offset(raw, limit)
            assert (hit[0] if hit else None) == _reference_deep_offset(raw, limit), (raw, limit, chunk)


def test_parse_body_refuses_what_python_would_choke_on():
    cases = [
        (b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "a", "nesting_too_deep"),
        (b'{"m":[{"c":"x \\ud800"}]}', "m[0].c", "invalid_unicode"),
        (b'{"s":{"\\udfff":1}}', "s", "invalid_unicode"),
        (b'{"a":"\xff"}', None, "invalid_encoding"),
        (b'{"a":NaN}', None, "invalid_json"),
        (b'{"a":-Infinity}', None, "invalid_json"),
        (b'{"a":1e400}', None, "invalid_json"),
        (b"[1]", None, "invalid_json"),
        (b"", None, "invalid_json"),
    ]
    for raw, param, code in cases:
        with pytest.raises(APIError) as e:
            parse_body(raw)
        assert (e.value.status, e.value.param, e.value.code) == (400, param, code), raw[:40]
    # brackets and escaped quotes inside strings are text, not nesting
    assert parse_body(b'{"s":"' + b'[\\"{' * 10_000 + b'"}') == {"s": '["{' * 10_000}


def test_schema_depth_limit_names_the_field():
    s: object = {"type": "string"}
    for _ in range(MAX_SCHEMA_DEPTH):
        s = {"not": s}
    with pytest.raises(APIError) as e:
        constraint_from_request({"json_schema": s})
    assert e.value.param == "json_schema" and "100 levels" in e.value.message


# ------------------------------------------------------ request models --
def test_every_request_field_is_documented_in_the_readme():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    serving = readme[readme.index("## Serving"):]
    serving = serving[: serving.index("\n## ", 1)]
    for path, model in ENDPOINT_MODELS.items():
        for name, field in model.model_fields.items():
            assert f"`{field.alias or name}`" in serving, (path, field.alias or name)


def test_validation_errors_name_the_field_and_what_was_expected():
    cases = [
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role", "'user'"),
        ({"messages": [{"role": "user", "content": "x"}], "stream": "yes"}, "stream", "boolean"),
        ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 5.0}, "max_tokens", "integer"),
        ({"messages": [{"role": "user", "content": "x"}], "stop": 5}, "stop", "array of at most 16 strings"),
        ({"messages": [{"role": "user", "content": "x"}], "seed": True}, "seed", "integer"),
        ({"messages": [{"role": "user", "content": "x"}], "vendor_flag": 1}, "vendor_flag", "Unrecognized request argument"),
        ({"messages": [{"role": "user", "content": [{"type": "text"}]}]}, "messages[0].content[0].text", "required"),
    ]
    for body, param, needle in cases:
        with pytest.raises(APIError) as e:
            validate_request(ChatCompletionRequest, body)
        assert e.value.status == 400 and e.value.param == param and needle in e.value.message, e.value.message


def test_a_tiny_temperature_is_greedy_not_nan():
    rng = np.random.default_rng(0)
    row = np.array([30.0, 31.0, -np.inf, 5.0], dtype=np.float32)
    for t in (1e-310, 1e-300, 1e-30):
        assert _sample(row.copy(), SamplingParams(max_tokens=1, temperature=t), rng)[0] == 1
