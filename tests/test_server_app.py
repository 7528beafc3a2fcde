"""The server app in-process (no model needed): health while loading or after
a failed load, CLI wiring, and the pure helpers (stop strings, sampling)."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from formcast.cli import SUBCOMMANDS, main  # noqa: E402
from formcast.server import ServerConfig, create_app  # noqa: E402
from formcast.server.engine import SamplingParams, _find_stop, _held_suffix, _sample  # noqa: E402


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
