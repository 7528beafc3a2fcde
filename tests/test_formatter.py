"""Formatter over an OpenAI-compatible endpoint, evaluation runs and the CLI.

The endpoint is tests/fake_openai.py: a real HTTP server on 127.0.0.1 spoken
to by the real ``openai`` client; its answers are functions of the request.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_openai import FakeOpenAI, prompt_text
from formcast.formatter import (
    BackendError,
    BackendUnavailableError,
    FormatError,
    Formatter,
    PAPER_PROMPT,
    TransientBackendError,
    available_backends,
    load_jsonl,
)
from formcast.formatter.cli import main
from formcast.formatter.evaluation import RunConfigMismatch, run_eval

SLOT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "slot"
E2E, WEBNLG = SLOT / "e2e-dev.jsonl", SLOT / "webnlg-dev.jsonl"
GOLD = {ex.input_text: ex.gold_json for path in (E2E, WEBNLG) for ex in load_jsonl(path)}
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "near": {"type": "string"}},
    "required": ["name", "near"],
    "additionalProperties": False,
}


def oracle(body):
    """Constrained requests get the gold JSON; unconstrained ones get it wrapped in prose."""
    gold = GOLD.get(prompt_text(body), {"name": "Giraffe", "near": "The Rice Boat"})
    if "response_format" in body:
        return 200, json.dumps(gold)
    return 200, "Sure! Here is the JSON:\n" + json.dumps(gold)


def test_format_sends_the_paper_prompt_and_a_strict_json_schema():
    with FakeOpenAI(oracle) as server:
        fmt = Formatter(base_url=server.base_url)
        value = fmt.format("Giraffe sits near The Rice Boat.", SCHEMA)
        assert value == {"name": "Giraffe", "near": "The Rice Boat"}
        body = server.requests[-1]
    assert body["model"] == "fake-model"  # asked from /v1/models
    assert body["temperature"] == 0.0 and body["max_tokens"] == 2048
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["strict"] is True
    assert rf["json_schema"]["schema"] == SCHEMA
    prompt = body["messages"][-1]["content"]
    assert prompt.startswith("Convert the following text into JSON format according to the specified schema.")
    assert "Text: Giraffe sits near The Rice Boat.\n" in prompt
    assert json.dumps(SCHEMA) in prompt
    assert prompt.endswith("Output:")


def test_prompting_only_baseline_sends_no_response_format_and_can_fail():
    with FakeOpenAI(oracle) as server:
        fmt = Formatter("m", base_url=server.base_url, constrained=False)
        with pytest.raises(FormatError, match="not valid JSON") as info:
            fmt.format("some text", SCHEMA)
        assert info.value.raw.startswith("Sure!")
        assert "response_format" not in server.requests[-1]


def test_output_not_matching_the_schema_is_reported():
    with FakeOpenAI(lambda body: (200, '{"name": "Giraffe"}')) as server:
        with pytest.raises(FormatError, match="does not match the schema.*near"):
            Formatter("m", base_url=server.base_url).format("x", SCHEMA)


def test_custom_prompt_template_and_validation():
    with pytest.raises(ValueError, match="json_schema"):
        Formatter("m", base_url="http://127.0.0.1:9/v1", prompt_template="Only {input_text}")
    with FakeOpenAI(oracle) as server:
        fmt = Formatter("m", base_url=server.base_url, prompt_template="S={json_schema}\nText: {input_text}\nProvide your response in the following JSON format: x")
        fmt.format("a {json_schema} b", SCHEMA)
        content = server.requests[-1]["messages"][-1]["content"]
    # A placeholder inside the input text is not substituted.
    assert "Text: a {json_schema} b\n" in content


def test_format_batch_keeps_order_with_parallel_requests():
    texts = [ex.input_text for ex in load_jsonl(E2E, limit=12)]
    schemas = [ex.json_schema for ex in load_jsonl(E2E, limit=12)]
    with FakeOpenAI(oracle) as server:
        fmt = Formatter("m", base_url=server.base_url, max_workers=4)
        values = fmt.format_batch(texts, schemas, progress=False)
    assert values == [GOLD[t] for t in texts]


def test_server_errors_are_backend_errors():
    with FakeOpenAI(lambda body: (400, "schema not supported")) as server:
        with pytest.raises(BackendError, match="schema not supported"):
            Formatter("m", base_url=server.base_url).format("x", SCHEMA)
        out = Formatter("m", base_url=server.base_url).format_batch(["x"], SCHEMA, progress=False, errors="none")
        assert out == [None]
    fmt = Formatter("m", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
    with pytest.raises(TransientBackendError):
        fmt.format("x", SCHEMA)


def test_local_backend_without_llama_cpp_is_unavailable_not_faked(monkeypatch):
    from formcast.formatter import backends

    monkeypatch.delitem(backends._REGISTRY, "local", raising=False)
    monkeypatch.setitem(backends._REQUIRES, "local", "formcast_no_such_module")
    assert "local" not in available_backends()
    with pytest.raises(BackendUnavailableError, match="formcast_no_such_module"):
        Formatter("model.gguf").format("x", SCHEMA)


# -- evaluation runs ---------------------------------------------------------------------


def swap_some(body):
    """Gold for most inputs; name and near swapped for texts mentioning 'Giraffe'."""
    text = prompt_text(body)
    gold = dict(GOLD[text])
    if "near" in gold and "Blue Spice" in text and gold.get("eatType") == "pub":
        gold["name"], gold["near"] = gold["near"], gold["name"]
    return 200, json.dumps(gold)


def test_eval_run_scores_writes_reports_and_resumes(tmp_path):
    out = tmp_path / "run"
    calls = {"n": 0}

    def flaky(body):
        calls["n"] += 1
        if calls["n"] > 4:
            return 503, "overloaded"
        return oracle(body)

    with FakeOpenAI(flaky) as server:
        fmt = Formatter("m", base_url=server.base_url, max_retries=0)
        with pytest.raises(TransientBackendError, match="run again to resume"):
            run_eval(fmt, [E2E], out, limit=8, progress=False)
    saved = (out / "predictions" / "e2e.jsonl").read_text().splitlines()
    assert len(saved) == 4

    with FakeOpenAI(oracle) as server:
        fmt = Formatter("m", base_url=server.base_url, max_retries=0)
        report = run_eval(fmt, [E2E, WEBNLG], out, limit=8, progress=False)
        assert len(server.requests) == 4 + 8  # only the missing ones
    e2e, webnlg = report.datasets
    assert (e2e.name, e2e.result.n, webnlg.result.n) == ("e2e", 8, 8)
    assert e2e.result.schema_accuracy == 1.0 and e2e.result.content_similarity == pytest.approx(1.0)
    assert webnlg.complexity["depth"] >= 2
    md = (out / "results.md").read_text()
    assert "| Formatter + settings | SA E2E NLG | SA WebNLG | SA Avg | CS E2E NLG | CS WebNLG | CS Avg |" in md
    assert "| m + constrained | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 |" in md
    assert "Cyclomatic" in md
    # the trivial answers beside the run, scored with the same metric, and below it
    empty_row = next(line for line in md.splitlines() if line.startswith("| trivial: all fields empty"))
    input_row = next(line for line in md.splitlines() if line.startswith("| trivial: the input text in every field"))
    for row in (empty_row, input_row):
        cells = [float(c) for c in row.strip("|").split("|")[1:]]
        assert cells[:3] == [100.0, 100.0, 100.0] and all(10.0 < c < 60.0 for c in cells[3:])
    assert e2e.baselines["empty"]["content_similarity"] < e2e.baselines["input"]["content_similarity"] < 0.6
    # the gold answers are not degenerate
    assert e2e.degeneracy.degenerate == 0.0 and "| m + constrained | E2E NLG | 0.0 | 0.0 | 0.0 | 0.0 | 0.0 |" in md
    assert (out / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "results.json").read_text())["average"]["schema_accuracy"] == 1.0


def test_eval_of_prompting_baseline_and_swapped_values(tmp_path):
    with FakeOpenAI(oracle) as server:
        prompting = run_eval(
            Formatter("m", base_url=server.base_url, constrained=False), [E2E], tmp_path / "p", limit=5, progress=False
        )
    r = prompting.datasets[0].result
    assert (r.schema_accuracy, r.content_similarity, r.unparseable) == (0.0, 0.0, 5)

    with FakeOpenAI(swap_some) as server:
        swapped = run_eval(
            Formatter("m", base_url=server.base_url), [E2E], tmp_path / "s", limit=10, progress=False,
            compare=[tmp_path / "p"],
        )
    r = swapped.datasets[0].result
    assert r.schema_accuracy == 1.0  # swapped values still match the schema
    assert 0.5 < r.content_similarity < 1.0
    md = (tmp_path / "s" / "results.md").read_text()
    assert md.index("| m + prompting |") < md.index("| m + constrained |")


def test_degenerate_answers_are_counted(tmp_path):
    def copies(body):
        text = prompt_text(body)
        gold = GOLD[text]
        return 200, json.dumps({k: "string" if k == "eatType" else gold["name"] for k in gold})

    with FakeOpenAI(copies) as server:
        report = run_eval(Formatter("m", base_url=server.base_url), [E2E], tmp_path, limit=10, progress=False)
    d = report.datasets[0]
    assert d.degeneracy.type_name == 1.0 and d.degeneracy.degenerate == 1.0
    assert 0.0 < d.degeneracy.copied < 1.0  # the answers with four or more keys copy the name three times
    md = (tmp_path / "results.md").read_text()
    assert "| m + constrained | E2E NLG | 100.0 |" in md


def test_grounded_requests_send_a_structural_tag_and_penalties(tmp_path):
    with FakeOpenAI(oracle) as server:
        fmt = Formatter("m", base_url=server.base_url, grounded=True, frequency_penalty=0.5)
        text = "Blue Spice is a pub near Café Rouge."
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
                  "additionalProperties": False}
        fmt.generate(text, schema)
        body = server.requests[-1]
    assert body["frequency_penalty"] == 0.5
    assert body["response_format"]["type"] == "structural_tag"
    assert "Café" in json.dumps(body["response_format"], ensure_ascii=False)
    with pytest.raises(ValueError, match="local backend"):
        Formatter("m", base_url="http://127.0.0.1:9/v1", loop_guard=True)
    with pytest.raises(ValueError, match="constrained=True"):
        Formatter("m", base_url="http://127.0.0.1:9/v1", grounded=True, constrained=False)


def test_resuming_with_another_configuration_is_refused(tmp_path):
    with FakeOpenAI(oracle) as server:
        run_eval(Formatter("m", base_url=server.base_url), [E2E], tmp_path, limit=2, progress=False)
        with pytest.raises(RunConfigMismatch):
            run_eval(Formatter("m", base_url=server.base_url, constrained=False), [E2E], tmp_path, limit=2, progress=False)


def test_eval_cli_and_score_only(tmp_path, capsys):
    with FakeOpenAI(oracle) as server:
        status = main(
            ["eval", "--data", str(E2E), "--out", str(tmp_path), "--limit", "3", "--base-url", server.base_url,
             "--model", "m", "--label", "oracle", "--quiet", "--array-alignment", "assignment"]
        )  # fmt: skip
    assert status == 0
    assert "| oracle | 100.0 | 100.0 | 100.0 | 100.0 |" in capsys.readouterr().out
    # Scoring again needs no endpoint.
    assert main(["eval", "--data", str(E2E), "--out", str(tmp_path), "--limit", "3", "--score-only", "--quiet"]) == 0
    assert json.loads((tmp_path / "results.json").read_text())["config"]["metric_options"]["array_alignment"] == "index"


def test_format_cli_reads_stdin(tmp_path, capsys, monkeypatch):
    import io

    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(SCHEMA))
    monkeypatch.setattr("sys.stdin", io.StringIO("Giraffe sits near The Rice Boat."))
    with FakeOpenAI(oracle) as server:
        assert main(["format", "--schema", str(schema_file), "-", "--base-url", server.base_url]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "Giraffe", "near": "The Rice Boat"}


def test_cli_reports_bad_dataset_line(tmp_path, capsys):
    bad = tmp_path / "bad-dev.jsonl"
    bad.write_text(json.dumps({"input_text": "x", "json_schema": {}, "gold_json": {}}) + "\n{oops\n")
    assert main(["eval", "--data", str(bad), "--out", str(tmp_path / "o"), "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert f"{bad}:2: not valid JSON" in capsys.readouterr().err


def test_json_object_response_format_for_llama_cpp_style_servers():
    with FakeOpenAI(oracle) as server:
        Formatter("m", base_url=server.base_url, schema_format="json_object").format("Giraffe sits near The Rice Boat.", SCHEMA)
        assert server.requests[-1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    with pytest.raises(ValueError, match="schema_format"):
        Formatter("m", base_url="http://127.0.0.1:9/v1", schema_format="grammar").backend
