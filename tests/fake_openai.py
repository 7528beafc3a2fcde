"""A minimal OpenAI-compatible chat-completions server on 127.0.0.1 for tests.

It answers with a function of the request (``respond(body) -> (status, text)``),
records every request body, and speaks just enough of the API for the
``openai`` client: ``GET /v1/models`` and ``POST /v1/chat/completions``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class FakeOpenAI:
    def __init__(self, respond: Callable[[dict[str, Any]], tuple[int, str]], model: str = "fake-model") -> None:
        self.respond = respond
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": outer.model, "object": "model", "owned_by": "t"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length))
                with outer._lock:
                    outer.requests.append(body)
                status, text = outer.respond(body)
                if status != 200:
                    self._send(status, {"error": {"message": text, "type": "test"}})
                    return
                self._send(
                    200,
                    {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", outer.model),
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "FakeOpenAI":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def prompt_text(body: dict[str, Any]) -> str:
    """The input text of a formatting prompt (the paper's template)."""
    content = body["messages"][-1]["content"]
    start = content.index("Text: ") + len("Text: ")
    end = content.index("\nProvide your response in the following JSON format: ")
    return content[start:end]
