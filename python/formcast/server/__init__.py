"""OpenAI-compatible HTTP server with constrained decoding (``formcast serve``).

Modules: ``app`` (endpoints), ``body`` (reading untrusted JSON: size, depth,
Unicode), ``validation`` (one request model per endpoint), ``constraints``
(request → grammar), ``tools`` (tools / tool_choice), ``templates`` (chat
templates), ``jinja_sandbox`` (the Jinja sandbox, and the worker processes
that render templates sent in requests under memory and time limits),
``engine`` (decode loop with masks, continuous batching),
``output`` (responses and SSE), ``metrics`` (Prometheus).
"""

from .app import ServerConfig, create_app

__all__ = ["ServerConfig", "create_app", "serve"]


def serve(config: ServerConfig) -> None:
    """Runs the server until interrupted (uvicorn, one worker)."""
    import uvicorn

    uvicorn.run(create_app(config), host=config.host, port=config.port, log_level="info", access_log=False)
