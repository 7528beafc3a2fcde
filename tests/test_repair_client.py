"""structured(): against a scripted OpenAI-compatible endpoint, a real HTTP server
on 127.0.0.1 started by the test, answering with canned (often malformed) replies."""

from __future__ import annotations

import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import formcast.repair as fr
import pytest
from pydantic import BaseModel, Field

SCHEMA = {
    "type": "object",
    "properties": {
        "sentiment": {"type": "string", "enum": ["positive", "neutral", "negative"], "description": "overall polarity of the review"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1, "description": "calibrated, in [0,1]"},
    },
    "required": ["sentiment", "confidence"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "user", "content": "Classify: 'the hinge snapped after two weeks'"}]
GOOD = '{"sentiment": "negative", "confidence": 0.9}'


@pytest.fixture(autouse=True)
def _fresh_rung_memory() -> None:
    # Ports are reused between tests: forget which rungs earlier fake endpoints rejected.
    sys.modules["formcast.repair.client"]._REJECTED.clear()


class Review(BaseModel):
    sentiment: Literal["positive", "neutral", "negative"]
    confidence: float = Field(ge=0, le=1, description="calibrated, in [0,1]")


class FakeEndpoint:
    """Scripted OpenAI-compatible chat endpoint on a real loopback socket.

    ``replies`` are consumed one per accepted request: a string is the assistant
    content; a dict may set ``content``, ``finish_reason``, ``refusal`` or an error
    ``status``/``body``. Requests whose ``response_format`` type is in ``reject``
    get an HTTP 400 naming it, like servers without structured outputs.
    """

    def __init__(self, replies: list[Any], reject: tuple[str, ...] = ()) -> None:
        self.replies = list(replies)
        self.reject = set(reject)
        self.requests: list[dict[str, Any]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.requests.append(payload)
                fmt = (payload.get("response_format") or {}).get("type")
                if fmt in endpoint.reject:
                    self._send(400, {"error": {"message": f"response_format type '{fmt}' is not supported by this server", "param": "response_format"}})
                    return
                if not endpoint.replies:
                    self._send(500, {"error": {"message": "script exhausted"}})
                    return
                r = endpoint.replies.pop(0)
                r = {"content": r} if isinstance(r, str) else r
                if "status" in r:
                    self._send(r["status"], r.get("body", {"error": {"message": "boom"}}))
                    return
                msg = {"role": "assistant", "content": r.get("content")}
                if "refusal" in r:
                    msg["refusal"] = r["refusal"]
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(endpoint.requests)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": payload.get("model", "fake"),
                        "choices": [{"index": 0, "message": msg, "finish_reason": r.get("finish_reason", "stop")}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def test_native_response_format_and_a_repairable_reply() -> None:
    with FakeEndpoint(["```json\n{'sentiment': 'negative', 'confidence': 0.9,}\n```"]) as ep:
        res = fr.structured(ep.base_url, MESSAGES, SCHEMA, model="m")
    assert res.value == {"sentiment": "negative", "confidence": 0.9}
    assert res.rung == "json_schema" and res.retries == 0
    [req] = ep.requests
    assert req["model"] == "m"
    assert req["response_format"]["type"] == "json_schema"
    assert req["response_format"]["json_schema"]["schema"] == SCHEMA
    assert req["response_format"]["json_schema"]["strict"] is True
    assert req["messages"] == MESSAGES  # the API enforces the schema: no prompt tokens spent
    assert {"code_fence", "single_quotes", "trailing_comma"} <= set(res.report.kinds())


def test_reasks_with_the_validator_message_verbatim() -> None:
    bad = '{"sentiment": "slightly_negative", "confidence": 0.4}'
    with FakeEndpoint([bad, GOOD]) as ep:
        res = fr.structured(fr.ChatClient(ep.base_url), MESSAGES, SCHEMA)
    assert res.value == {"sentiment": "negative", "confidence": 0.9}
    first, second = res.attempts
    assert first.status == "invalid" and second.status == "ok"
    verbatim = "/sentiment: 'slightly_negative' is not one of ['positive', 'neutral', 'negative']"
    assert verbatim in first.error
    retry = ep.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": bad}
    assert retry[-1]["role"] == "user" and verbatim in retry[-1]["content"]
    assert res.retries == 1


def test_steps_down_to_prompt_and_prefill_when_response_format_is_rejected() -> None:
    continuation = '"sentiment": "negative", "confidence": 0.9}'
    with FakeEndpoint([continuation], reject=("json_schema", "json_object")) as ep:
        res = fr.structured(ep.base_url, [{"role": "system", "content": "You are terse."}, *MESSAGES], SCHEMA)
    assert res.value == {"sentiment": "negative", "confidence": 0.9}
    assert [a.status for a in res.attempts] == ["unsupported", "unsupported", "ok"]
    assert [a.rung for a in res.attempts] == ["json_schema", "json_object", "prompt"]
    assert res.retries == 0  # rung changes are not retries
    last = ep.requests[-1]
    assert "response_format" not in last
    system = last["messages"][0]["content"]
    assert system.startswith("You are terse.")
    assert '- sentiment (required; one of "positive", "neutral", "negative"): overall polarity of the review' in system
    assert "- confidence (required; number; >= 0; <= 1): calibrated, in [0,1]" in system
    assert last["messages"][-1] == {"role": "assistant", "content": "{"}


def test_prefill_that_the_endpoint_ignores_still_works() -> None:
    with FakeEndpoint(["Sure! Here it is: " + GOOD], reject=("json_schema", "json_object")) as ep:
        res = fr.structured(ep.base_url, MESSAGES, SCHEMA)
    assert res.value == {"sentiment": "negative", "confidence": 0.9}
    assert len(ep.requests) == 3


def test_json_object_rung_puts_the_schema_in_the_prompt() -> None:
    with FakeEndpoint([GOOD], reject=("json_schema",)) as ep:
        res = fr.structured(ep.base_url, MESSAGES, SCHEMA)
    assert res.rung == "json_object"
    req = ep.requests[-1]
    assert req["response_format"] == {"type": "json_object"}
    assert "JSON Schema" in req["messages"][0]["content"]


def test_persistent_failure_raises_with_every_attempt() -> None:
    replies = ["I think it's negative.", '{"sentiment": "bad"}', '{"sentiment": "negative", "confidence": 2}']
    with FakeEndpoint(replies) as ep, pytest.raises(fr.StructuredOutputError) as e:
        fr.structured(ep.base_url, MESSAGES, SCHEMA, max_retries=2)
    attempts = e.value.attempts
    assert [a.status for a in attempts] == ["unparseable", "invalid", "invalid"]
    assert [a.reply for a in attempts] == replies
    assert "no JSON object or array" in attempts[0].error
    assert "/confidence: 2 is greater than the maximum of 1" in e.value.last_error
    assert len(ep.requests) == 3
    json.dumps([a.to_dict() for a in attempts])  # the log is serializable


def test_max_retries_zero_means_one_attempt() -> None:
    with FakeEndpoint(["nope", GOOD]) as ep, pytest.raises(fr.StructuredOutputError) as e:
        fr.structured(ep.base_url, MESSAGES, SCHEMA, max_retries=0)
    assert len(e.value.attempts) == 1 and len(ep.requests) == 1


def test_pydantic_model_returns_an_instance() -> None:
    with FakeEndpoint(['{"sentiment": "neutral", "confidence": "0.5"}', '{"sentiment": "neutral", "confidence": 0.5}']) as ep:
        res = fr.structured(ep.base_url, MESSAGES, Review)
    assert res.value == Review(sentiment="neutral", confidence=0.5)
    assert ep.requests[0]["response_format"]["json_schema"]["name"] == "Review"
    assert "/confidence" in res.attempts[0].error  # strict: "0.5" is not silently a float


def test_truncated_reply_is_reasked() -> None:
    with FakeEndpoint([{"content": '{"sentiment": "negative", "confid', "finish_reason": "length"}, GOOD]) as ep:
        res = fr.structured(ep.base_url, MESSAGES, SCHEMA)
    assert res.attempts[0].status == "truncated"
    assert "cut off" in ep.requests[1]["messages"][-1]["content"]
    assert res.value["sentiment"] == "negative"


def test_refusal_is_not_retried() -> None:
    with FakeEndpoint([{"content": None, "refusal": "I can't help with that."}]) as ep, pytest.raises(fr.StructuredOutputError, match="refused"):
        fr.structured(ep.base_url, MESSAGES, SCHEMA)
    assert len(ep.requests) == 1


def test_endpoint_errors_are_typed() -> None:
    with FakeEndpoint([{"status": 500, "body": {"error": {"message": "overloaded"}}}]) as ep, pytest.raises(fr.EndpointError) as e:
        fr.structured(ep.base_url, MESSAGES, SCHEMA)
    assert e.value.status == 500 and "overloaded" in (e.value.body or "")
    assert e.value.attempts[0].status == "endpoint_error"


def test_unreachable_endpoint_is_an_endpoint_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(fr.EndpointError, match="cannot reach"):
        fr.structured(fr.ChatClient(f"http://127.0.0.1:{port}/v1", timeout=2), MESSAGES, SCHEMA)


def test_schema_prompt_lists_fields_with_descriptions() -> None:
    text = fr.schema_prompt(Review.model_json_schema())
    assert '- sentiment (required; one of "positive", "neutral", "negative")' in text
    assert "- confidence (required; number; >= 0; <= 1): calibrated, in [0,1]" in text


def test_official_openai_client_against_the_fake_endpoint() -> None:
    openai = pytest.importorskip("openai")
    with FakeEndpoint(["```json\n" + GOOD + "\n```"], reject=("json_schema",)) as ep:
        client = openai.OpenAI(base_url=ep.base_url, api_key="test", max_retries=0)
        res = fr.structured(client, MESSAGES, SCHEMA, model="fake")
    assert res.value == {"sentiment": "negative", "confidence": 0.9}
    assert [a.status for a in res.attempts] == ["unsupported", "ok"]


def test_a_rejected_rung_is_remembered_per_endpoint() -> None:
    with FakeEndpoint([GOOD, GOOD], reject=("json_schema", "json_object")) as ep:
        first = fr.structured(ep.base_url, MESSAGES, SCHEMA)
        second = fr.structured(ep.base_url, MESSAGES, SCHEMA)
    assert [a.status for a in first.attempts] == ["unsupported", "unsupported", "ok"]
    assert [a.rung for a in second.attempts] == ["prompt"]
    assert len(ep.requests) == 4
