"""Hostile requests against the real `formcast serve` (a subprocess with the
embedded model, as in test_server.py): deep and huge bodies, bad Unicode,
wrong types for every field of every endpoint, unknown roles and fields,
odd bodies and content types. Each must be a 4xx JSON error naming the
field; after each test the server is alive and answers a valid request.

Also the sampling fields the decode loop implements (logit_bias, presence /
frequency / repeat penalties, min_p): each one changes what greedy decoding
produces, and none can make the output break its constraint.
"""

from __future__ import annotations

import collections
import json
import os
import time
from typing import Any, Optional

import httpx
import pytest
from test_server import MODEL, running_server

from formcast.server.validation import ENDPOINT_MODELS

pytest.importorskip("llama_cpp")

USER = [{"role": "user", "content": "hi"}]
# A minimal valid body per endpoint (one token, so the checks stay cheap).
VALID: dict[str, dict] = {
    "/v1/chat/completions": {"model": MODEL, "messages": USER, "max_tokens": 1},
    "/v1/completions": {"model": MODEL, "prompt": "hi", "max_tokens": 1},
    "/v1/responses": {"model": MODEL, "input": "hi", "max_output_tokens": 1},
    "/tokenize": {"content": "hi"},
    "/detokenize": {"tokens": [1]},
}
DEEP = 100_000


@pytest.fixture(scope="module")
def server():
    with running_server("--parallel", "2", "--queue-size", "2", "--ctx-size", "1024") as s:
        yield s


@pytest.fixture(scope="module")
def http(server):
    with httpx.Client(base_url=server["base"], timeout=120) as c:
        yield c


@pytest.fixture(autouse=True)
def still_serving(request):
    """After every test: the process is alive and a valid request gets 200."""
    yield
    if "server" not in request.fixturenames:
        return
    srv = request.getfixturevalue("server")
    assert srv["proc"].poll() is None, "the server process died"
    r = httpx.post(srv["base"] + "/v1/chat/completions", json=VALID["/v1/chat/completions"], timeout=120)
    assert r.status_code == 200, r.text


def expect_error(r: httpx.Response, status: int, param: Optional[str], *, code: Optional[str] = None) -> dict:
    """The response is an OpenAI error with ``status`` naming ``param``."""
    assert r.status_code == status, r.text[:500]
    assert r.headers["content-type"].startswith("application/json")
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"]
    assert err["type"] == ("invalid_request_error" if status < 500 else "server_error")
    assert err["param"] == param, err
    if code is not None:
        assert err["code"] == code, err
    return err


def post_raw(http: httpx.Client, path: str, raw: bytes, content_type: Optional[str] = "application/json") -> httpx.Response:
    headers = {"content-type": content_type} if content_type else {}
    return http.post(path, content=raw, headers=headers)


def nested(kind: str, depth: int) -> Any:
    """A JSON Schema nested ``depth`` levels by ``items`` or by ``properties``."""
    s: Any = {"type": "string"}
    for _ in range(depth - 1):
        s = {"type": "array", "items": s} if kind == "items" else {"type": "object", "properties": {"a": s}}
    return s


def deep_array(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def deep_objects(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


# ------------------------------------------------------------- nesting --
@pytest.mark.parametrize("field", ["some_unknown_field", "messages", "metadata", "json_schema"])
def test_100k_deep_array_in_any_field_is_400(http, field):
    body = b'{"model":"%s","max_tokens":1,"%s":%s' % (MODEL.encode(), field.encode(), deep_array(DEEP))
    if field != "messages":
        body += b',"messages":[{"role":"user","content":"hi"}]'
    err = expect_error(post_raw(http, "/v1/chat/completions", body + b"}"), 400, field, code="nesting_too_deep")
    assert "nested deeper than 512 levels" in err["message"]


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/responses", "/tokenize", "/detokenize"])
def test_deep_body_on_every_endpoint_is_400(http, path):
    body = b'{"x":' + deep_objects(DEEP) + b"}"
    expect_error(post_raw(http, path, body), 400, "x", code="nesting_too_deep")


@pytest.mark.parametrize("kind", ["items", "properties"])
def test_10k_deep_json_schema_is_400(http, kind):
    # Written as text: json.dumps itself cannot nest 10,000 levels.
    n = 10_000
    if kind == "items":
        schema = b'{"type":"array","items":' * n + b'{"type":"string"}' + b"}" * n
    else:
        schema = b'{"type":"object","properties":{"a":' * n + b'{"type":"string"}' + b"}}" * n
    raw = json.dumps(VALID["/v1/chat/completions"]).encode()[:-1] + b',"json_schema":' + schema + b"}"
    expect_error(post_raw(http, "/v1/chat/completions", raw), 400, "json_schema", code="nesting_too_deep")


@pytest.mark.parametrize("kind", ["items", "properties"])
@pytest.mark.parametrize("where", ["json_schema", "response_format", "structured_outputs", "tools"])
def test_300_deep_schema_is_a_limit_400_not_a_recursion_message(http, kind, where):
    schema = nested(kind, 300 if kind == "items" else 150)  # both about 300 JSON levels
    body = dict(VALID["/v1/chat/completions"])
    if where == "json_schema":
        body["json_schema"], param = schema, "json_schema"
    elif where == "response_format":
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
        param = "response_format.json_schema.schema"
    elif where == "structured_outputs":
        body["structured_outputs"], param = {"json": json.dumps(schema)}, "structured_outputs.json"
    else:
        schema = {"type": "object", "properties": {"a": schema}}
        body["tools"] = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
        param = "tools[0].function.parameters"
    err = expect_error(http.post("/v1/chat/completions", json=body), 400, param, code="nesting_too_deep")
    assert "nested deeper than 100 levels" in err["message"] and "recursion" not in err["message"]


def test_schema_at_the_depth_limit_is_served(http):
    body = dict(VALID["/v1/chat/completions"], json_schema=nested("items", 100))
    assert http.post("/v1/chat/completions", json=body).status_code == 200


def test_body_depth_limit_is_exact(http):
    def kwargs_nest(depth: int) -> dict:  # the body's depth: root + chat_template_kwargs + depth
        v: Any = 1
        for _ in range(depth):
            v = {"a": v}
        return dict(VALID["/v1/chat/completions"], chat_template_kwargs={"deep": v})

    assert http.post("/v1/chat/completions", json=kwargs_nest(510)).status_code == 200  # 512 levels
    expect_error(http.post("/v1/chat/completions", json=kwargs_nest(511)), 400, "chat_template_kwargs", code="nesting_too_deep")


def test_deep_json_text_inside_strings_is_400(http):
    deep_text = deep_array(DEEP).decode()
    body = dict(VALID["/v1/chat/completions"], json_schema=deep_text)
    expect_error(http.post("/v1/chat/completions", json=body), 400, "json_schema", code="nesting_too_deep")
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": deep_text}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    body = dict(VALID["/v1/chat/completions"], messages=history)
    expect_error(http.post("/v1/chat/completions", json=body), 400, "messages[1].tool_calls[0].function.arguments",
                 code="nesting_too_deep")


# ---------------------------------------------------------------- size --
def test_20mb_body_is_413(http):
    raw = json.dumps(dict(VALID["/v1/chat/completions"], messages=[{"role": "user", "content": "a" * (20 << 20)}])).encode()
    err = expect_error(post_raw(http, "/v1/chat/completions", raw), 413, None, code="request_too_large")
    assert str(8 << 20) in err["message"]


def test_20mb_chunked_body_is_413(http):
    def chunks():
        yield b'{"messages":[{"role":"user","content":"'
        for _ in range(20):
            yield b"a" * (1 << 20)
        yield b'"}]}'

    r = http.post("/v1/chat/completions", content=chunks(), headers={"content-type": "application/json"})
    expect_error(r, 413, None, code="request_too_large")


def test_large_body_under_the_limit_is_judged_on_its_content(http):
    raw = json.dumps(dict(VALID["/v1/chat/completions"], messages=[{"role": "user", "content": "word " * (1 << 20)}])).encode()
    assert len(raw) < 8 << 20
    expect_error(post_raw(http, "/v1/chat/completions", raw), 400, "messages", code="context_length_exceeded")


# ------------------------------------------------------------- Unicode --
def test_lone_surrogates_are_400_naming_the_string(http):
    cases = [
        ("/v1/chat/completions", b'{"messages":[{"role":"user","content":"hi \\ud800"}],"max_tokens":1}', "messages[0].content"),
        ("/v1/chat/completions", b'{"messages":[{"role":"user","content":"hi"}],"max_tokens":1,'
                                 b'"json_schema":{"type":"object","properties":{"\\udc00":{"type":"string"}}}}', "json_schema.properties"),
        ("/v1/completions", b'{"prompt":["ok","\\udbff x"],"max_tokens":1}', "prompt[1]"),
        ("/v1/responses", b'{"input":"\\ud800","max_output_tokens":1}', "input"),
        ("/tokenize", b'{"content":"\\ude00"}', "content"),
        ("/v1/chat/completions", b'{"messages":[{"role":"user","content":"hi"}],"max_tokens":1,"stop":["a","\\ud800"]}', "stop[1]"),
    ]
    for path, raw, param in cases:
        err = expect_error(post_raw(http, path, raw), 400, param, code="invalid_unicode")
        assert "surrogate" in err["message"]


def test_lone_surrogate_inside_json_text_in_a_string_is_400(http):
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"city": "\\ud800"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    r = http.post("/v1/chat/completions", json=dict(VALID["/v1/chat/completions"], messages=history))
    expect_error(r, 400, "messages[1].tool_calls[0].function.arguments.city", code="invalid_unicode")


@pytest.mark.parametrize("bad", [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])
def test_invalid_utf8_is_400(http, bad):
    raw = b'{"messages":[{"role":"user","content":"hi ' + bad + b'"}],"max_tokens":1}'
    err = expect_error(post_raw(http, "/v1/chat/completions", raw), 400, None, code="invalid_encoding")
    assert "UTF-8" in err["message"]


def test_paired_surrogates_and_a_bom_are_fine(http):
    raw = '\ufeff{"messages":[{"role":"user","content":"hi \\ud83d\\ude00"}],"max_tokens":1}'.encode()
    assert post_raw(http, "/v1/chat/completions", raw).status_code == 200


# ----------------------------------------------------- odd bodies --
@pytest.mark.parametrize("raw", [b"", b"  \n", b"[]", b'"x"', b"1", b"null", b"{not json", b'{"a":1}{"b":2}',
                                 b'{"messages":NaN}', b'{"max_tokens":1e999}', b'{"n":' + b"9" * 5000 + b"}"])
@pytest.mark.parametrize("path", list(VALID))
def test_non_object_empty_and_invalid_json_bodies_are_400(http, raw, path):
    expect_error(post_raw(http, path, raw), 400, None, code="invalid_json")


@pytest.mark.parametrize("ctype, status", [
    ("text/plain", 415), ("application/x-www-form-urlencoded", 415), ("multipart/form-data; boundary=x", 415),
    ("application/json; charset=latin-1", 415), ("application/json; charset=utf-8", 200), ("application/vnd.x+json", 200),
    (None, 200),
])
def test_content_types(http, ctype, status):
    r = post_raw(http, "/v1/chat/completions", json.dumps(VALID["/v1/chat/completions"]).encode(), ctype)
    if status == 200:
        assert r.status_code == 200, r.text
    else:
        expect_error(r, status, "content-type", code="unsupported_media_type")


# ------------------------------------------------ unknown and wrong --
# The JSON types each field accepts: the test's own spec, independent of the
# server's models. A field added to a model without a line here fails
# test_every_field_has_a_declared_type, so every field gets a wrong-type case.
TYPES: dict[str, tuple[str, ...]] = {
    "model": ("string",), "stream": ("boolean",), "user": ("string",), "metadata": ("object",), "store": ("boolean",),
    "n": ("integer",), "seed": ("integer",), "stop": ("string", "array"), "max_tokens": ("integer",),
    "temperature": ("number",), "top_p": ("number",), "top_k": ("integer",), "min_p": ("number",),
    "frequency_penalty": ("number",), "presence_penalty": ("number",), "repeat_penalty": ("number",),
    "repeat_last_n": ("integer",), "logit_bias": ("object",), "stream_options": ("object",),
    "response_format": ("object",), "json_schema": ("object", "boolean", "string"), "grammar": ("string",),
    "ebnf": ("string",), "regex": ("string",), "choice": ("array",), "structural_tag": ("object", "string"),
    "structured_outputs": ("object",), "guided_json": ("object", "boolean", "string"), "guided_regex": ("string",),
    "guided_grammar": ("string",), "guided_choice": ("array",),
    "messages": ("array",), "max_completion_tokens": ("integer",), "top_logprobs": ("integer",), "tools": ("array",),
    "tool_choice": ("string", "object"), "parallel_tool_calls": ("boolean",), "chat_template": ("string",),
    "template": ("string",), "chat_template_kwargs": ("object",),
    "echo": ("boolean",), "input": ("string", "array"), "instructions": ("string",), "max_output_tokens": ("integer",),
    "content": ("string",), "add_special": ("boolean",), "parse_special": ("boolean",), "with_pieces": ("boolean",),
    "tokens": ("array",),
}
TYPES_BY_ENDPOINT: dict[tuple[str, str], tuple[str, ...]] = {
    ("/v1/chat/completions", "logprobs"): ("boolean",),
    ("/v1/completions", "logprobs"): ("integer",),
    ("/v1/completions", "prompt"): ("string", "array"),
    ("/tokenize", "prompt"): ("string",),
    ("/v1/responses", "text"): ("object",),
    ("/tokenize", "text"): ("string",),
}
WRONG = {"string": "zzz", "boolean": True, "object": {"k": 1}, "array": ["x"], "number": 1.5}


def _fields(path: str) -> list[str]:
    return [f.alias or name for name, f in ENDPOINT_MODELS[path].model_fields.items()]


def _accepted(path: str, field: str) -> tuple[str, ...]:
    return TYPES_BY_ENDPOINT.get((path, field)) or TYPES[field]


def test_every_field_has_a_declared_type():
    for path in VALID:
        for field in _fields(path):
            assert _accepted(path, field), (path, field)


WRONG_TYPE_CASES = [
    (path, field, next(v for kind, v in WRONG.items() if kind not in _accepted(path, field)))
    for path in VALID for field in _fields(path)
]


@pytest.mark.parametrize("path, field, value", WRONG_TYPE_CASES, ids=[f"{p}:{f}" for p, f, _ in WRONG_TYPE_CASES])
def test_wrong_json_type_for_every_field_is_400_naming_it(http, path, field, value):
    body = dict(VALID[path], **{field: value})
    err = expect_error(http.post(path, json=body), 400, field)
    assert field in err["message"] and err["code"] in ("invalid_type", "invalid_value")


@pytest.mark.parametrize("body, param, needle", [
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role", "'user'"),
    ({"messages": [{"role": "function", "content": "x", "name": "f"}]}, "messages[0].role", "'tool'"),
    ({"messages": [{"role": "user", "content": "x", "colour": "red"}]}, "messages[0].colour", "not a recognized"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
     "messages[0].content[0].type", "'text'"),
    ({"messages": [{"role": "user", "content": "x", "tool_call_id": "c"}]}, "messages[0].tool_call_id", "tool messages"),
    ({"messages": USER, "frequency_penalty": 2.5}, "frequency_penalty", "<= 2"),
    ({"messages": USER, "logit_bias": {"abc": 5}}, "logit_bias", "token id"),
    ({"messages": USER, "logit_bias": {"5": 500}}, "logit_bias.5", "<= 100"),
    ({"messages": USER, "logit_bias": {"999999999": 5}}, "logit_bias.999999999", "vocabulary"),
    ({"messages": USER, "repeat_penalty": 0}, "repeat_penalty", "> 0"),
    ({"messages": USER, "store": True}, "store", "stores nothing"),
    ({"messages": USER, "functions": []}, "functions", "Unrecognized request argument supplied: functions"),
    ({"messages": USER, "best_of": 2}, "best_of", "Unrecognized request argument"),
    ({"messages": USER, "response_format": {"type": "xml"}}, "response_format.type", "json_schema"),
    ({"messages": USER, "response_format": {"type": "json_schema", "json_schema": {"schema": {}, "strict": "yes"}}},
     "response_format.json_schema.strict", "boolean"),
    ({"messages": USER, "structured_outputs": {"json_object": True}}, "structured_outputs.json_object", "not a recognized"),
    ({"messages": USER, "stream_options": {"include_usage": 1}}, "stream_options.include_usage", "boolean"),
    ({"messages": USER, "chat_template": "chatml", "template": "chatml"}, "template", "only one"),
    ({"messages": USER, "chat_template_kwargs": {"messages": []}}, "chat_template_kwargs.messages", "replace"),
    ({"messages": USER, "top_logprobs": 2}, "top_logprobs", "logprobs"),
    ({"messages": USER, "n": 16}, "n", "at most 4"),
    ({"messages": USER, "stop": ["ok", "s" * 1001]}, "stop[1]", "at most 1000 characters"),
    ({"messages": USER, "stop": "s" * 100_000}, "stop", "at most 1000 characters"),
    ({"messages": USER, "tools": [{"type": "function", "function": {"name": "f"}, "extra": 1}]}, "tools[0].extra", "not a recognized"),
])
def test_bad_chat_fields_name_the_field(http, body, param, needle):
    err = expect_error(http.post("/v1/chat/completions", json=dict(body, max_tokens=1)), 400, param)
    assert needle in err["message"], err


@pytest.mark.parametrize("path, body, param", [
    ("/v1/completions", {"prompt": "x", "tools": []}, "tools"),
    ("/v1/completions", {"prompt": "x", "messages": USER}, "messages"),
    ("/v1/completions", {"prompt": [1, 10 ** 9]}, "prompt[1]"),
    ("/v1/completions", {"prompt": ["a", "b", "c", "d", "e"]}, "prompt"),
    ("/v1/completions", {"prompt": "x", "template": "chatml"}, "template"),
    ("/v1/responses", {"input": [{"role": "wizard", "content": "x"}]}, "input[0].role"),
    ("/v1/responses", {"input": "x", "tools": []}, "tools"),
    ("/v1/responses", {"input": "x", "previous_response_id": "r1"}, "previous_response_id"),
    ("/v1/responses", {"input": "x", "text": {"format": {"type": "json_schema", "name": "p"}}}, "text.format.schema"),
    ("/tokenize", {}, "content"),
    ("/tokenize", {"content": "a", "text": "b"}, "text"),
    ("/detokenize", {"tokens": [1, 10 ** 9]}, "tokens[1]"),
    ("/detokenize", {"tokens": [True]}, "tokens[0]"),
])
def test_bad_fields_on_other_endpoints_name_the_field(http, path, body, param):
    expect_error(http.post(path, json=body), 400, param)


def test_metadata_fields_are_accepted(http):
    body = dict(VALID["/v1/chat/completions"], user="u-1", metadata={"k": "v"}, store=False)
    assert http.post("/v1/chat/completions", json=body).status_code == 200


def test_runaway_request_template_is_400(http):
    tpl = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
    err = expect_error(http.post("/v1/chat/completions", json=dict(VALID["/v1/chat/completions"], chat_template=tpl)),
                       400, "chat_template")
    assert "5 s" in err["message"]
    tpl = "{{ 'x' * 10000000000 }}"
    expect_error(http.post("/v1/chat/completions", json=dict(VALID["/v1/chat/completions"], template=tpl)), 400, "template")


# ------------------------------------------------ request templates --
def _status_kib(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


def _children(pid: int) -> set[int]:
    """Process ids whose parent is ``pid``."""
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.add(int(entry))
    return out


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# Each builds gigabytes in one C call or a few loop iterations; the sandbox's
# own rules (bounded `*` and `**`, ranges of 100,000) do not stop them.
MEMORY_BOMBS = {
    "ljust": "{{ 'a'.ljust(10**10) }}",
    "percent": "{{ '%10000000000s' % 'x' }}",
    "format": "{{ '{:>10000000000}'.format('x') }}",
    "replace": "{% set ns = namespace(v='ab') %}{% for i in range(64) %}{% set ns.v = ns.v.replace('a', ns.v) %}{% endfor %}{{ ns.v }}",
    "concat": "{% set ns = namespace(v='ab') %}{% for i in range(64) %}{% set ns.v = ns.v ~ ns.v %}{% endfor %}{{ ns.v }}",
    "join": "{{ (['x' * 1000000] * 1000000) | join }}",
    "loop": "{% for i in range(100000) %}{{ 'x' * 1000000 }}{% endfor %}",
    "center": "{{ messages[0].content.center(10**12) }}",
    "expandtabs": "{{ ('\t' * 1000).expandtabs(10**7) }}",
}


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
@pytest.mark.parametrize("name", list(MEMORY_BOMBS))
def test_request_template_memory_bombs_are_400_and_the_server_does_not_grow(http, server, name):
    pid = server["proc"].pid
    try:  # reset the peak RSS, so a transient allocation would show in VmHWM
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        peak = "VmHWM"
    except OSError:
        peak = "VmRSS"
    before = _status_kib(pid, "VmRSS")
    err = expect_error(http.post("/v1/chat/completions", json=dict(VALID["/v1/chat/completions"], chat_template=MEMORY_BOMBS[name])),
                       400, "chat_template")
    assert "MiB" in err["message"] or "more than" in err["message"], err
    assert http.post("/v1/chat/completions", json=VALID["/v1/chat/completions"]).status_code == 200
    grew = _status_kib(pid, peak) - before
    assert grew < 200 * 1024, f"the server grew by {grew} KiB"


def test_a_cpu_bound_request_template_is_stopped(http):
    # One C call (a big-integer power) running for many seconds.
    r = http.post("/v1/chat/completions", json=dict(VALID["/v1/chat/completions"], chat_template="{{ ((10**256)**256)**256 }}"))
    expect_error(r, 400, "chat_template")


def test_a_request_template_is_served_and_cheap_once_warm(http, server):
    tpl = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
           "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    body = dict(VALID["/v1/chat/completions"], chat_template=tpl, temperature=0, max_tokens=4)
    first = http.post("/v1/chat/completions", json=body)
    assert first.status_code == 200, first.text
    builtin = dict(body, chat_template="chatml")
    assert http.post("/v1/chat/completions", json=builtin).json()["choices"][0]["message"]["content"] == \
        first.json()["choices"][0]["message"]["content"]
    workers = _children(server["proc"].pid)
    assert workers  # the template worker, kept for the next request
    assert http.post("/v1/chat/completions", json=body).status_code == 200
    assert _children(server["proc"].pid) == workers


@pytest.mark.parametrize("how", ["terminate", "kill"])
def test_template_workers_end_with_the_server(how):
    with running_server("--parallel", "1", "--ctx-size", "512") as s:
        body = dict(VALID["/v1/chat/completions"], chat_template="{{ messages[0].content }}")
        assert httpx.post(s["base"] + "/v1/chat/completions", json=body, timeout=120).status_code == 200
        workers = _children(s["proc"].pid)
        assert workers
        getattr(s["proc"], how)()  # SIGTERM: shut down in order; SIGKILL: no shutdown code runs
        s["proc"].wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers):
        assert time.monotonic() < deadline, f"template workers {workers} outlived the server"
        time.sleep(0.1)


# ------------------------------------------------- sampling fields --
HELLO = [{"role": "user", "content": "Write the word 'hello' ten times."}]


def greedy(http, messages, **extra) -> tuple[str, list[str]]:
    """Content and token texts of a greedy answer."""
    body = {"messages": messages, "max_tokens": 30, "temperature": 0, "logprobs": True, **extra}
    r = http.post("/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    return choice["message"]["content"], [t["token"] for t in choice["logprobs"]["content"]]


def token_id(http, text: str) -> int:
    ids = http.post("/tokenize", json={"content": text}).json()["tokens"]
    assert len(ids) == 1, (text, ids)
    return ids[0]


def test_logit_bias_bans_and_forces_tokens(http):
    _, tokens = greedy(http, HELLO)
    first = token_id(http, tokens[0])
    _, banned = greedy(http, HELLO, logit_bias={str(first): -100})
    assert banned[0] != tokens[0]
    forced_id = http.post("/tokenize", json={"content": " banana"}).json()["tokens"][0]
    piece = http.post("/detokenize", json={"tokens": [forced_id]}).json()["content"]
    _, forced = greedy(http, HELLO, max_tokens=3, logit_bias={str(forced_id): 100})
    assert forced == [piece] * 3


def test_logit_bias_and_penalties_cannot_break_a_constraint(http):
    ids = {t: token_id(http, t) for t in ("ab", "a")}
    for extra in ({"logit_bias": {str(ids["ab"]): -100, str(ids["a"]): -100}}, {"presence_penalty": 2, "repeat_penalty": 100},
                  {"logit_bias": {str(token_id(http, "yes")): 100}}):
        content, _ = greedy(http, HELLO, regex="(ab){5}", **extra)
        assert content == "ababababab", extra


@pytest.mark.parametrize("penalty", ["presence_penalty", "frequency_penalty"])
def test_presence_and_frequency_penalties_stop_repetition(http, penalty):
    _, base = greedy(http, HELLO)
    assert collections.Counter(base)[" hello"] >= 5  # greedy repeats the word
    _, tokens = greedy(http, HELLO, **{penalty: 2.0})
    assert collections.Counter(tokens)[" hello"] <= 1


def test_repeat_penalty_and_its_window(http):
    ones = [{"role": "user", "content": "List the numbers 1 1 1 1 1 1 1 1"}]
    base, _ = greedy(http, ones)
    assert "1, 1, 1" in base
    penalized, _ = greedy(http, ones, repeat_penalty=1.5)
    assert "1, 1, 1" not in penalized
    assert greedy(http, ones, repeat_penalty=1.5, repeat_last_n=0)[0] == base  # an empty window: no penalty


def test_long_stop_strings_that_almost_match(http):
    # 16 stop strings of 1,000 characters that the answer keeps matching the
    # start of: the text is held back, then released when the answer ends.
    base, _ = greedy(http, HELLO)
    stops = [(base * 200)[:999] + chr(0x2460 + k) for k in range(16)]
    assert greedy(http, HELLO, stop=stops)[0] == base
    cut = base.index(" hello", 1)
    assert greedy(http, HELLO, stop=stops[:15] + [base[cut:cut + 12]])[0] == base[:cut]


def test_min_p_one_and_a_denormal_temperature_are_greedy(http):
    base, _ = greedy(http, HELLO)
    for seed in (1, 2):
        assert greedy(http, HELLO, temperature=1.5, seed=seed, min_p=1.0)[0] == base
    assert greedy(http, HELLO, temperature=1e-310)[0] == base
