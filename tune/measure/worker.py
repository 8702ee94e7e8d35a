"""A persistent worker process: the one mechanism the builders and the runner share.

``Worker.call("module:function", payload, timeout)`` runs the function in a
child process started afresh (never forked: the tuner's process may hold LLVM
and thread-pool state) and returns one of::

    ("ok", value)        the function returned
    ("error", message)   it raised (the message carries the traceback's tail)
    ("timeout", None)    no answer within ``timeout`` s: the child was killed
    ("died", message)    the child exited (a segfault in a kernel): named by its signal

After a timeout or a death the next call starts a fresh child.  The child
answers "ready" once its ``init`` function ran, so start-up never counts
against a measurement's timeout.
"""

from __future__ import annotations

import importlib
import os
import pickle
import select
import signal
import subprocess
import sys
import traceback

STARTUP_TIMEOUT = 120.0


def _resolve(path: str):
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _serve(conn, init: str | None) -> None:
    try:
        if init:
            _resolve(init)()
        conn.send(("ready", None))
    except Exception as err:  # pragma: no cover - reported to the parent
        conn.send(("error", f"worker start-up failed: {type(err).__name__}: {err}"))
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        path, payload = msg
        try:
            out = ("ok", _resolve(path)(payload))
        except Exception as err:
            tail = "".join(traceback.format_exception(type(err), err, err.__traceback__)[-3:])
            out = ("error", f"{type(err).__name__}: {err}\n{tail}")
        try:
            conn.send(out)
        except Exception as err:  # an unpicklable result
            conn.send(("error", f"result could not be sent back: {type(err).__name__}: {err}"))


def signal_name(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


# ----------------------------------------------- a worker without multiprocessing --
def _read_frame(fh):
    head = fh.read(8)
    if len(head) < 8:
        raise EOFError("worker pipe closed")
    size = int.from_bytes(head, "little")
    data = fh.read(size)
    if len(data) < size:
        raise EOFError("worker pipe closed")
    return pickle.loads(data)


def _write_frame(fh, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    fh.write(len(data).to_bytes(8, "little") + data)
    fh.flush()


def _watch_parent(interval: float = 0.5) -> None:
    """Exit when the parent dies (a killed tuner or Dask worker leaves no kernel spinning)."""
    import threading
    import time

    parent = os.getppid()

    def watch():
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="tune-parent-watch", daemon=True).start()


def stdio_serve(init: str | None) -> None:
    """The child of a ``PopenWorker``: frames on stdin/stdout; stray prints go to stderr."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = os.fdopen(os.dup(0), "rb")
    _watch_parent()

    class _Pipe:
        def send(self, obj):
            _write_frame(out, obj)

        def recv(self):
            return _read_frame(inp)

    _serve(_Pipe(), init)


class Worker:
    """One child process (``subprocess``, not ``multiprocessing``: a tutorial script without a
    ``__main__`` guard is never re-run, and Dask's daemonic workers may start one), started on
    first use and after a crash or a timeout.  The child sees this process's ``sys.path``."""

    def __init__(self, init: str | None = None, name: str = "tune-worker"):
        self.init = init
        self.name = name
        self.proc = None
        self.starts = 0

    def start(self) -> None:
        if self.alive:
            return
        self.kill()
        code = f"from tune.measure.worker import stdio_serve; stdio_serve({self.init!r})"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        self.starts += 1
        status, msg = self._recv(STARTUP_TIMEOUT)
        if status != "ready":
            self.kill()
            raise RuntimeError(f"{self.name}: the worker process did not start: {msg}")

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _recv(self, timeout: float) -> tuple:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.kill()
            return "timeout", None
        try:
            return _read_frame(self.proc.stdout)
        except (EOFError, OSError, pickle.UnpicklingError):
            return "died", f"the worker process {signal_name(self._reap())}"

    def call(self, path: str, payload, timeout: float) -> tuple:
        self.start()
        try:
            data = pickle.dumps((path, payload), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError) as err:
            return "error", f"cannot send the work to the worker process: {type(err).__name__}: {err}"
        try:
            self.proc.stdin.write(len(data).to_bytes(8, "little") + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return "died", f"the worker process {signal_name(self._reap())}"
        return self._recv(timeout)

    def _reap(self) -> int | None:
        if self.proc is None:
            return None
        try:
            code = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        self.kill()
        return code

    def kill(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
            for fh in (self.proc.stdin, self.proc.stdout):
                try:
                    fh.close()
                except OSError:
                    pass
            self.proc = None

    def close(self) -> None:
        self.kill()

    def __del__(self):
        try:
            self.kill()
        except Exception:
            pass


PopenWorker = Worker

__all__ = ["PopenWorker", "Worker", "signal_name", "stdio_serve"]
