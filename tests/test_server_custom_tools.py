"""OpenAI custom tools through `formcast serve` (the real server with the
embedded SmolLM2, driven by the official openai client and httpx): a
grammar-constrained custom tool is called with input that matches its
grammar, as a ``{"type": "custom", "custom": {"name", "input"}}`` tool call,
whole or streamed; malformed custom tools are 400s naming the field."""

from __future__ import annotations

import json
import re

import openai
import pytest
# test_server's module-scoped fixtures: this module gets its own server from them.
from test_server import MODEL, client, http, server  # noqa: F401

import formcast as fc

PHONE = {"type": "custom", "custom": {"name": "phone", "description": "Dial a phone number.",
                                      "format": {"type": "grammar", "grammar": {"syntax": "regex", "definition": r"\d{3}-\d{4}"}}}}
SUM = {"type": "custom", "custom": {"name": "add", "description": "Add two numbers.", "format": {"type": "grammar", "grammar": {
    "syntax": "lark", "definition": 'start: NUM "+" NUM\nNUM: /[0-9]{1,3}/'}}}}
ASK = [{"role": "user", "content": "Call 555-1234 for me."}]




def test_regex_custom_tool_required(client):
    r = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=60, temperature=0, tools=[PHONE],
                                       tool_choice="required", parallel_tool_calls=False)
    c = r.choices[0]
    assert c.finish_reason == "tool_calls"
    [call] = c.message.tool_calls
    assert call.type == "custom" and call.id and call.custom.name == "phone"
    assert re.fullmatch(r"\d{3}-\d{4}", call.custom.input)


def test_named_custom_tool_is_stop(client):
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    r = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=60, temperature=0, tools=[weather, PHONE],
                                       tool_choice={"type": "custom", "custom": {"name": "phone"}})
    c = r.choices[0]
    assert c.finish_reason == "stop"
    assert [(t.type, t.custom.name) for t in c.message.tool_calls] == [("custom", "phone")]
    assert re.fullmatch(r"\d{3}-\d{4}", c.message.tool_calls[0].custom.input)


def test_custom_tool_streams(http):
    body = {"model": MODEL, "messages": ASK, "max_tokens": 60, "temperature": 0, "stream": True, "tools": [PHONE],
            "tool_choice": "required", "parallel_tool_calls": False}
    items = []
    with http.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                for choice in json.loads(line[6:])["choices"]:
                    items += choice["delta"].get("tool_calls") or []
    first = items[0]
    assert first["type"] == "custom" and first["id"] and first["custom"]["name"] == "phone"
    assert all("function" not in i for i in items)
    assert re.fullmatch(r"\d{3}-\d{4}", "".join(i["custom"].get("input", "") for i in items))


@pytest.mark.skipif(not hasattr(fc.Grammar, "from_lark"), reason="Grammar.from_lark is not in this build yet")
def test_lark_custom_tool(client):
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "What is 12 plus 30?"}], max_tokens=60,
                                       temperature=0, tools=[SUM], tool_choice="required", parallel_tool_calls=False)
    [call] = r.choices[0].message.tool_calls
    assert call.type == "custom" and call.custom.name == "add"
    assert re.fullmatch(r"[0-9]{1,3}\+[0-9]{1,3}", call.custom.input)


def test_history_with_a_custom_call(client):
    history = [*ASK, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "custom", "custom": {"name": "phone", "input": "555-1234"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "ringing"}]
    r = client.chat.completions.create(model=MODEL, messages=history, max_tokens=4, tools=[PHONE], tool_choice="none")
    assert r.choices[0].message.content is not None


def _grammar(syntax: str, definition: str) -> dict:
    return {"type": "custom", "custom": {"name": "t", "format": {"type": "grammar", "grammar": {"syntax": syntax, "definition": definition}}}}


@pytest.mark.parametrize("tools,choice,param", [
    ([{"type": "custom", "custom": {"name": "t", "extra": 1}}], None, "tools[0].custom.extra"),
    ([{"type": "custom"}], None, "tools[0].custom"),
    ([{"type": "custom", "custom": {"name": ""}}], None, "tools[0].custom.name"),
    ([{"type": "custom", "custom": {"name": "t", "format": {"type": "bnf"}}}], None, "tools[0].custom.format.type"),
    ([{"type": "custom", "custom": {"name": "t", "format": {"type": "grammar"}}}], None, "tools[0].custom.format.grammar"),
    ([_grammar("perl", "a+")], None, "tools[0].custom.format.grammar.syntax"),
    ([_grammar("regex", "")], None, "tools[0].custom.format.grammar.definition"),
    ([_grammar("regex", "(a")], None, "tools[0].custom.format.grammar.definition"),
    ([_grammar("regex", "(?=a)a")], None, "tools[0].custom.format.grammar.definition"),
    ([{"type": "webby"}], None, "tools[0].type"),
    ([PHONE], {"type": "custom", "custom": {"name": "nope"}}, "tool_choice"),
])
def test_malformed_custom_tools_are_400(client, tools, choice, param):
    extra = {"tool_choice": choice} if choice is not None else {}
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=4, tools=tools, **extra)
    assert e.value.body["param"] == param, e.value.body


@pytest.mark.skipif(not hasattr(fc.Grammar, "from_lark"), reason="Grammar.from_lark is not in this build yet")
def test_malformed_lark_is_400(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=4, tools=[_grammar("lark", "start: x")])
    assert e.value.body["param"] == "tools[0].custom.format.grammar.definition"
    assert "undefined rule" in e.value.body["message"]
