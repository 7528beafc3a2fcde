"""The Jinja sandbox for chat templates, and the worker process that renders
template text sent in a request.

Trusted templates (the model's own, the built-in ones, ``--template``) are
compiled and rendered in the server process with :func:`compile_template`.
Template text from a request is untrusted code, and the sandbox alone does
not bound what it allocates: ``'a'.ljust(10**10)``, ``'%10000000000s' % x``,
``'{:>10000000000}'.format(x)``, ``s.replace(x, s)`` or ``s ~ s`` in a loop
are each one C call that can ask for gigabytes before any time check runs.
So a :class:`WorkerPool` renders request templates in separate, long-lived
worker processes (this file run as a script: it imports only the standard
library and jinja2, not formcast), each one:

* with an address-space limit (``RLIMIT_AS``): the worker's own size when
  the request arrives plus :data:`RENDER_MEMORY_BYTES` while a template is
  compiled and rendered, so a memory bomb is a ``MemoryError`` in the
  worker, not a larger server; the worker then answers and exits, and the
  next request starts a fresh one;
* with a time limit (``SIGALRM`` in the worker, which stops template code
  between bytecodes) and, for a C call that never returns, a CPU limit
  (``RLIMIT_CPU``) and the parent's wall-clock deadline, after which the
  parent kills the worker;
* with a cap on what it sends back (:data:`MAX_OUTPUT_BYTES` of UTF-8);
* ended with the server: :meth:`WorkerPool.close` at shutdown, and however
  the server exits, the end of file on its input (a worker is either
  waiting for input or rendering under its CPU limit, so it cannot outlive
  the server by more than that limit).

The wire protocol on the worker's stdin/stdout: the parent writes a 4-byte
big-endian length and JSON ``[source, context, time_limit_s,
max_output_bytes]`` (the context is JSON already: messages, tools and
``chat_template_kwargs`` come from the request body, whose nesting is
bounded); the worker answers with a status byte, a 4-byte length and a
payload: the rendered text (UTF-8) or JSON ``{"kind", "message"}``. Neither
side unpickles anything.

Resource limits need a POSIX system (``resource``); elsewhere the worker
still isolates the render and enforces the time and output limits.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # run as the worker: keep this directory's modules off the import path
    _HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import json
import select
import signal
import struct
import subprocess
import threading
import time
from datetime import datetime
from functools import lru_cache
from typing import Any, Optional

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX
    resource = None  # type: ignore[assignment]

__all__ = [
    "MAX_OUTPUT_BYTES",
    "RENDER_MEMORY_BYTES",
    "WORKER_MEMORY_BYTES",
    "SandboxedEnvironment",
    "TemplateFailure",
    "WorkerPool",
    "compile_template",
]

#: Memory one render may add to the worker (compiling and rendering the
#: template: every string it builds).
RENDER_MEMORY_BYTES = 256 << 20
#: A worker's whole address space beyond its size at start (the request it
#: reads, then a render).
WORKER_MEMORY_BYTES = 1 << 30
#: The longest rendered prompt (UTF-8 bytes) a request template may produce.
MAX_OUTPUT_BYTES = 16 << 20
#: Seconds the parent waits beyond the render's time limit before it kills the worker.
KILL_GRACE_S = 2.0
#: Seconds a new worker has to start (import jinja2) and say it is ready.
START_TIMEOUT_S = 30.0

_MAX_PRODUCT = 1 << 20  # items/characters one `*` may produce
_MAX_EXPONENT = 256
_MAX_MESSAGE = 1000  # characters of an error message passed back
_REQUEST = struct.Struct(">I")
_REPLY = struct.Struct(">BI")
_OK, _ERROR, _ERROR_EXITING = 0, 1, 2
_MAX_REQUEST_BYTES = (1 << 32) - 1


# ------------------------------------------------------------ the sandbox --
class SandboxedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox, with ``*`` and ``**`` bounded (``'x' * 10**10`` is one C
    call: no time limit could stop it)."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for seq, k in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(k, int) and len(seq) * k > _MAX_PRODUCT:
                    raise SecurityError(f"the template repeats a value into more than {_MAX_PRODUCT} items")
        elif operator == "**" and isinstance(right, (int, float)) and abs(right) > _MAX_EXPONENT:
            raise SecurityError(f"the template raises to a power above {_MAX_EXPONENT}")
        return super().call_binop(context, operator, left, right)


def _raise(message: str) -> None:
    raise jinja2.TemplateError(message)


def _tojson(value: Any, indent: Optional[int] = None, ensure_ascii: bool = False, sort_keys: bool = False) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


@lru_cache(maxsize=64)
def compile_template(source: str) -> jinja2.Template:
    """``source`` compiled in the sandbox (HF chat-template conventions:
    ``tojson``, ``raise_exception``, ``strftime_now``, loop controls)."""
    env = SandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = _strftime_now
    return env.from_string(source)


# ------------------------------------------------------- the parent side --
class TemplateFailure(Exception):
    """A request template failed in the worker. ``kind``: ``syntax`` (does
    not compile), ``timeout``, ``memory``, ``too_deep`` (recursion),
    ``overflow``, ``security`` (a sandbox rule), ``output`` (too long or not
    encodable), ``crashed`` (the worker died), ``template`` (a template
    error such as ``raise_exception``), ``data`` (a Python error on the
    values, e.g. a missing key), ``failed`` (anything else), ``unavailable``
    (no worker could be started, or the pool is closed)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class _Worker:
    """One worker process and its pipes (non-blocking on this side)."""

    def __init__(self) -> None:
        try:
            self.proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), str(RENDER_MEMORY_BYTES), str(WORKER_MEMORY_BYTES)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
                start_new_session=True,  # a Ctrl-C in the terminal is the server's to handle
            )
        except OSError as e:
            raise TemplateFailure("unavailable", f"the template worker could not be started: {e}") from None
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        try:
            status, payload = self._receive(time.monotonic() + START_TIMEOUT_S, 64)
            if status != _OK or payload != b"ready":
                raise EOFError
        except (EOFError, OSError, TimeoutError):
            self.kill()
            raise TemplateFailure("unavailable", "the template worker could not be started") from None

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def exit_signal(self) -> Optional[int]:
        """The signal that ended the worker (waiting a moment for it), if any."""
        try:
            rc = self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return None
        return -rc if rc < 0 else None

    def render(self, request: bytes, deadline: float, max_reply: int) -> tuple[int, bytes]:
        """Sends ``request`` and returns the reply; raises ``TimeoutError``
        after ``deadline``, ``EOFError`` / ``BrokenPipeError`` when the
        worker dies."""
        self._send(_REQUEST.pack(len(request)) + request, deadline)
        return self._receive(deadline, max_reply)

    def _send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            _wait(self._in, select.POLLOUT, deadline)
            try:
                n = os.write(self._in, view[: 1 << 16])
            except BlockingIOError:
                continue
            view = view[n:]

    def _receive(self, deadline: float, max_reply: int) -> tuple[int, bytes]:
        head = self._read(_REPLY.size, deadline)
        status, n = _REPLY.unpack(head)
        if n > max_reply:
            raise EOFError("reply too long")
        return status, self._read(n, deadline)

    def _read(self, n: int, deadline: float) -> bytes:
        parts: list[bytes] = []
        while n:
            _wait(self._out, select.POLLIN, deadline)
            try:
                chunk = os.read(self._out, min(n, 1 << 20))
            except BlockingIOError:
                continue
            if not chunk:
                raise EOFError("the worker exited")
            parts.append(chunk)
            n -= len(chunk)
        return b"".join(parts)

    def close(self, wait_s: float = 1.0) -> None:
        """Asks the worker to exit (end of its input), then kills it."""
        if self.alive:
            try:
                self.proc.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass
            try:
                self.proc.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def signal_kill(self) -> None:
        """SIGKILL, without touching the pipes (another thread may use them)."""
        try:
            self.proc.kill()
        except OSError:  # pragma: no cover - already gone
            pass

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except OSError:  # pragma: no cover - already gone
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass


def _wait(fd: int, event: int, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    poller = select.poll()
    poller.register(fd, event)
    if not poller.poll(max(1, int(left * 1000))):
        raise TimeoutError


class WorkerPool:
    """Up to ``max_workers`` template workers, started when first needed and
    kept for the next request (a render costs a pipe round trip, not a
    process start). A worker that failed on memory, timed out or died is
    replaced by a fresh one at the next request. Thread-safe; :meth:`close`
    ends every worker (busy ones included)."""

    def __init__(self, max_workers: int = 2) -> None:
        self.max_workers = max_workers
        self._cv = threading.Condition()
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._starting = 0
        self._closed = False

    def render(self, source: str, context: dict, *, time_limit_s: float, max_output_bytes: int = MAX_OUTPUT_BYTES) -> str:
        """``source`` rendered with ``context`` in a worker; raises
        :class:`TemplateFailure`."""
        try:
            request = json.dumps([source, context, float(time_limit_s), int(max_output_bytes)], ensure_ascii=False,
                                 allow_nan=False, separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError, RecursionError, UnicodeEncodeError) as e:
            raise TemplateFailure("data", f"the template variables cannot be passed to the renderer: {e}") from None
        if len(request) > _MAX_REQUEST_BYTES:
            raise TemplateFailure("data", "the template variables are too large")
        for attempt in range(2):
            worker = self._acquire()
            ok = False
            try:
                deadline = time.monotonic() + time_limit_s + KILL_GRACE_S
                try:
                    status, payload = worker.render(request, deadline, max_output_bytes + 4096)
                except BrokenPipeError:
                    # It was gone before it read the request (killed while idle): another one.
                    if attempt == 0:
                        continue
                    raise TemplateFailure("crashed", "the template worker exited") from None
                except TimeoutError:
                    raise TemplateFailure("timeout", f"the chat template took longer than {time_limit_s:g} s to render") from None
                except (EOFError, OSError, struct.error):
                    if worker.exit_signal() == getattr(signal, "SIGXCPU", None):  # its CPU limit
                        raise TemplateFailure("timeout", f"the chat template took longer than {time_limit_s:g} s to render") from None
                    raise TemplateFailure("crashed", "the chat template exceeded the renderer's limits (the worker stopped)") from None
                if status == _OK:
                    ok = True
                    try:
                        return payload.decode("utf-8")
                    except UnicodeDecodeError:  # pragma: no cover - the worker encodes strictly
                        raise TemplateFailure("output", "the chat template produced text that is not UTF-8") from None
                ok = status == _ERROR
                try:
                    info = json.loads(payload.decode("utf-8"))
                    kind, message = str(info["kind"]), str(info["message"])
                except (ValueError, KeyError, TypeError):  # pragma: no cover - the worker writes these
                    kind, message = "failed", "the template worker answered nonsense"
                raise TemplateFailure(kind, message)
            finally:
                self._release(worker, keep=ok)
        raise TemplateFailure("crashed", "the template worker exited")  # pragma: no cover - the loop returns or raises

    def _acquire(self) -> _Worker:
        with self._cv:
            while True:
                if self._closed:
                    raise TemplateFailure("unavailable", "the server is shutting down")
                while self._idle:
                    w = self._idle.pop()
                    if w.alive:
                        return w
                    self._all.discard(w)
                    w.kill()
                if len(self._all) + self._starting < self.max_workers:
                    self._starting += 1
                    break
                self._cv.wait()
        try:
            w = _Worker()
        except BaseException:
            with self._cv:
                self._starting -= 1
                self._cv.notify()
            raise
        with self._cv:
            self._starting -= 1
            self._all.add(w)
            closed = self._closed
        if closed:
            self._discard(w)
            raise TemplateFailure("unavailable", "the server is shutting down")
        return w

    def _release(self, w: _Worker, *, keep: bool) -> None:
        with self._cv:
            if keep and not self._closed and w.alive:
                self._idle.append(w)
                self._cv.notify()
                return
        self._discard(w)

    def _discard(self, w: _Worker) -> None:
        w.kill()
        with self._cv:
            self._all.discard(w)
            self._cv.notify()

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the running workers."""
        with self._cv:
            return [w.proc.pid for w in self._all]

    def close(self) -> None:
        """Ends every worker; later renders fail as ``unavailable``. An idle
        worker is asked to exit (then killed); a busy one is killed, and the
        thread rendering with it sees it die and cleans up (its pipes are
        that thread's to close)."""
        with self._cv:
            self._closed = True
            idle = list(self._idle)
            busy = [w for w in self._all if w not in idle]
            self._idle.clear()
            self._all.difference_update(idle)
            self._cv.notify_all()
        for w in idle:
            w.close()
        for w in busy:
            w.signal_kill()


# ------------------------------------------------------------ the worker --
class _Timeout(BaseException):  # not an Exception: template code cannot catch it
    pass


def _vm_size() -> Optional[int]:
    """This process's address-space size in bytes (Linux), else None."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class _Limits:
    """The worker's ``RLIMIT_AS`` and ``RLIMIT_CPU`` around one render."""

    def __init__(self, render_bytes: int, worker_bytes: int) -> None:
        self.render_bytes = render_bytes
        self.hard_as: Optional[int] = None
        if resource is None:
            return
        size = _vm_size()
        if size is not None:
            try:
                _, hard = resource.getrlimit(resource.RLIMIT_AS)
                limit = size + worker_bytes
                if hard != resource.RLIM_INFINITY:
                    limit = min(limit, hard)
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
                self.hard_as = limit
            except (OSError, ValueError):  # pragma: no cover
                self.hard_as = None

    def enter(self, seconds: float) -> None:
        if resource is None:
            return
        if self.hard_as is not None:
            size = _vm_size()
            if size is not None:
                resource.setrlimit(resource.RLIMIT_AS, (min(size + self.render_bytes, self.hard_as), self.hard_as))
        try:
            used = resource.getrusage(resource.RUSAGE_SELF)
            cpu = int(used.ru_utime + used.ru_stime + seconds) + 2
            _, hard = resource.getrlimit(resource.RLIMIT_CPU)
            if hard == resource.RLIM_INFINITY or cpu <= hard:
                resource.setrlimit(resource.RLIMIT_CPU, (cpu, hard))
        except (OSError, ValueError):  # pragma: no cover
            pass

    def leave(self) -> None:
        if resource is None:
            return
        if self.hard_as is not None:
            resource.setrlimit(resource.RLIMIT_AS, (self.hard_as, self.hard_as))
        try:
            _, hard = resource.getrlimit(resource.RLIMIT_CPU)
            resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))
        except (OSError, ValueError):  # pragma: no cover
            pass


def _short(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _render_request(request: bytes, limits: _Limits) -> tuple[int, bytes]:
    """One request: (status, payload)."""

    def error(kind: str, message: str, status: int = _ERROR) -> tuple[int, bytes]:
        return status, json.dumps({"kind": kind, "message": _short(message)}).encode("utf-8")

    stage = "compile"
    try:
        source, context, seconds, max_output = json.loads(request)
        del request
        limits.enter(seconds)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            template = compile_template(source)
            stage = "render"
            text = template.render(**context)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            limits.leave()
        if len(text) > max_output:
            return error("output", f"the chat template rendered more than {max_output} bytes")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return error("output", "the chat template produced a lone surrogate (not encodable as UTF-8)")
        if len(data) > max_output:
            return error("output", f"the chat template rendered more than {max_output} bytes")
        return _OK, data
    except _Timeout:
        return error("timeout", f"the chat template took longer than {seconds:g} s to render")
    except MemoryError:
        compile_template.cache_clear()
        return error("memory", f"the chat template needed more than {limits.render_bytes >> 20} MiB to {stage}", _ERROR_EXITING)
    except RecursionError:
        return error("too_deep", f"the chat template is nested or recurses too deeply to {stage}")
    except OverflowError as e:
        return error("overflow", f"the chat template failed: OverflowError: {e}")
    except SecurityError as e:
        return error("security", f"the chat template is not allowed to do this: {e}")
    except jinja2.TemplateSyntaxError as e:
        return error("syntax", str(e))
    except jinja2.TemplateError as e:
        return error("syntax" if stage == "compile" else "template", str(e))
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
        return error("data", str(e))
    except Exception as e:  # anything else a template can raise is its own failure
        return error("failed", f"{type(e).__name__}: {e}")


def _worker_main(argv: list[str]) -> int:
    render_bytes = int(argv[0]) if argv else RENDER_MEMORY_BYTES
    worker_bytes = int(argv[1]) if len(argv) > 1 else WORKER_MEMORY_BYTES
    inp, out = sys.stdin.buffer, os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot corrupt the replies

    def alarm(signum: int, frame: Any) -> None:
        raise _Timeout()

    signal.signal(signal.SIGALRM, alarm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when this process ends
    limits = _Limits(render_bytes, worker_bytes)

    def reply(status: int, payload: bytes) -> None:
        out.write(_REPLY.pack(status, len(payload)))
        out.write(payload)
        out.flush()

    reply(_OK, b"ready")
    while True:
        head = inp.read(_REQUEST.size)
        if len(head) < _REQUEST.size:
            return 0  # the parent closed the pipe
        (n,) = _REQUEST.unpack(head)
        try:
            request = inp.read(n)
        except MemoryError:
            reply(*(_ERROR_EXITING, json.dumps({"kind": "memory", "message": "the request is too large"}).encode()))
            return 0
        if len(request) < n:
            return 0
        try:
            status, payload = _render_request(request, limits)
        except _Timeout:  # the alarm went off between the render and cancelling it
            status, payload = _ERROR, json.dumps({"kind": "timeout", "message": "the chat template took too long to render"}).encode()
        del request
        reply(status, payload)
        if status == _ERROR_EXITING:
            return 0


if __name__ == "__main__":
    try:
        sys.exit(_worker_main(sys.argv[1:]))
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
