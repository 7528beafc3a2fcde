"""The ``formcast`` command. Subcommands plug in two ways, without touching
:func:`main`:

* :func:`register` puts one in :data:`SUBCOMMANDS` (name → (help,
  add_arguments, run)) — ``serve`` is registered so;
* a module listed in :data:`PLUGIN_MODULES` has ``register(subparsers)``,
  which adds its own subparsers with ``set_defaults(func=...)`` —
  ``formcast.formatter.cli`` adds ``format``, ``eval``, ``data`` and ``train`` so.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import Callable, Optional, Sequence

__all__ = ["main", "register", "SUBCOMMANDS", "PLUGIN_MODULES"]

AddArgs = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]

SUBCOMMANDS: dict[str, tuple[str, AddArgs, Run]] = {}

#: Modules with ``register(subparsers)``; one that is missing is skipped.
PLUGIN_MODULES: list[str] = ["formcast.formatter.cli"]


def register(name: str, help: str, add_arguments: AddArgs, run: Run) -> None:
    """Adds subcommand ``name``: ``add_arguments`` fills its parser, ``run``
    gets the parsed namespace and returns the exit code."""
    SUBCOMMANDS[name] = (help, add_arguments, run)


# ------------------------------------------------------------------ serve --
def _serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    p.add_argument("--model", default=None, help="a GGUF file (default: the embedded SmolLM2-135M-Instruct)")
    p.add_argument("--backend", default="auto", choices=["auto", "llama.cpp", "transformers"], help="model runtime (auto: GGUF files use llama.cpp, directories transformers)")
    p.add_argument("--served-model-name", default=None, help="model id clients use (default: the file's name)")
    p.add_argument("--threads", type=int, default=1, help="decode threads (default 1)")
    p.add_argument("--ctx-size", type=int, default=4096, help="context window of one sequence in tokens (default 4096)")
    p.add_argument("--parallel", type=int, default=4, help="sequences decoded together (default 4)")
    p.add_argument("--queue-size", type=int, default=16, help="requests that may wait for a slot; beyond it 503 (default 16)")
    p.add_argument("--api-key", default=os.environ.get("FORMCAST_API_KEY"), help="require this bearer token (default: $FORMCAST_API_KEY, or none)")
    p.add_argument("--compile-timeout", type=float, default=10.0, help="grammar compile budget per request in seconds (default 10)")
    p.add_argument("--tool-style", default=None, help="tool-call style of the model family (default: detected from the chat template; Hermes/Qwen <tool_call> JSON otherwise)")
    p.add_argument("--reasoning", default=None, choices=["enabled", "auto", "disabled"], help="reasoning block handling (default: detected)")
    p.add_argument("--template", default=None, help="chat template: a built-in name (chatml, llama3, mistral, gemma) or a Jinja file (default: the model's)")


def _serve(ns: argparse.Namespace) -> int:
    from .server import ServerConfig, serve

    template = ns.template
    if template and os.path.isfile(template):
        with open(template, encoding="utf-8") as f:
            template = f.read()
    if template:
        from .server.errors import APIError
        from .server.templates import resolve_template

        try:
            resolve_template(template, None, param="--template")
        except APIError as e:
            print(f"formcast serve: {e.message}", file=sys.stderr)
            return 2
    serve(
        ServerConfig(
            model=ns.model,
            backend=ns.backend,
            host=ns.host,
            port=ns.port,
            threads=ns.threads,
            ctx_size=ns.ctx_size,
            parallel=ns.parallel,
            queue_size=ns.queue_size,
            api_key=ns.api_key or None,
            served_model_name=ns.served_model_name,
            compile_timeout_s=ns.compile_timeout,
            template=template,
            tool_style=ns.tool_style,
            reasoning=ns.reasoning,
        )
    )
    return 0


register("serve", "OpenAI-compatible HTTP server with constrained decoding", _serve_args, _serve)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``formcast`` script."""
    parser = argparse.ArgumentParser(prog="formcast", description="Structured output for language models.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, add, _) in SUBCOMMANDS.items():
        add(sub.add_parser(name, help=help_text, description=help_text))
    owners = {}
    for module in PLUGIN_MODULES:
        try:
            plugin = importlib.import_module(module)
        except ImportError:
            continue
        before = set(sub.choices)
        plugin.register(sub)
        owners.update((name, plugin) for name in set(sub.choices) - before)
    ns = parser.parse_args(argv)
    if not ns.command:
        parser.print_help()
        return 2
    if ns.command in SUBCOMMANDS:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        return SUBCOMMANDS[ns.command][2](ns)
    owner = owners.get(ns.command)
    if owner is not None and hasattr(owner, "main"):
        # The plugin's own entry point: same arguments, its error handling.
        return int(owner.main(list(argv) if argv is not None else sys.argv[1:]) or 0)
    return int(ns.func(ns) or 0)


if __name__ == "__main__":
    sys.exit(main())
