"""``DaskRunner(address)``: measure on the workers of a Dask distributed cluster.

``autotvm.measure_option(builder="local", runner=autotvm.DaskRunner("tcp://host:8786"))``
builds locally and sends each built candidate (object code, a few KB) to a
Dask worker, which measures it in a child process of its own (a kernel that
crashes kills the child, not the Dask worker).  At most one measurement runs
per worker *host* at a time (two workers on one machine would disturb each
other's timings); different hosts measure in parallel.  A Dask worker lost
mid-measurement costs that candidate only (``RUNTIME_DEVICE``), and the
records are the same as a ``LocalRunner``'s.  Needs ``dask[distributed]``
on both sides, and ``tessera`` importable on the workers.
"""

from __future__ import annotations

import itertools
import time
import uuid

from tune.measure.measure import MeasureErrorNo, error_result
from tune.measure.runner import LocalRunner, run_result
from tune.measure.worker import PopenWorker

_RUNNER = "tune.measure.runner"
_worker_state: dict = {}
POLL_S = 0.05
GRACE_S = 60.0  # start-up allowance of a worker's measuring child, beyond the timeout


def dask_measure(payload: dict, timeout: float) -> tuple:
    """Runs on a Dask worker: one measurement in this worker's measuring child;
    ``(status, value, seconds, (start, end))``."""
    w = _worker_state.get("worker")
    if w is None:
        w = _worker_state["worker"] = PopenWorker(f"{_RUNNER}:warm_runner", "tune-dask-runner")
    w.start()
    t0, wall0 = time.perf_counter(), time.time()
    status, value = w.call(f"{_RUNNER}:run_candidate", payload, timeout)
    return status, value, time.perf_counter() - t0, (wall0, time.time())


class DaskRunner(LocalRunner):
    """Same parameters as ``LocalRunner``, plus the scheduler ``address`` (or a ``distributed.Client``)."""

    def __init__(self, address, **options):
        """``options``: ``LocalRunner``'s (timeout, number, repeat, min_repeat_ms, ...)."""
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise ImportError(
                "DaskRunner needs dask.distributed: pip install 'dask[distributed]' (or 'tessera[tune]')"
            ) from None
        super().__init__(**options)
        self.worker = None
        self.spans: list = []  # (worker, start, end) of every measurement, wall clock
        self.address = address
        self._client = None

    @property
    def client(self):
        if self._client is None:
            from distributed import Client

            self._client = self.address if hasattr(self.address, "submit") else Client(self.address)
        return self._client

    def _hosts(self) -> dict:
        """host -> worker addresses, as the scheduler sees them now."""
        workers = self.client.run_on_scheduler(
            lambda dask_scheduler: {a: ws.host for a, ws in dask_scheduler.workers.items()}
        )
        hosts: dict = {}
        for addr, host in sorted(workers.items()):
            hosts.setdefault(host, []).append(addr)
        return hosts

    def _alive(self, addr: str) -> bool:
        return self.client.run_on_scheduler(lambda dask_scheduler: addr in dask_scheduler.workers)

    def run(self, measure_inputs: list, build_results: list) -> list:
        out: list = [None] * len(build_results)
        todo = []
        for k, build in enumerate(build_results):
            if build.build is None:
                out[k] = error_result(build.error_no, build.error, build.time_cost)
            else:
                todo.append(k)
        busy: dict = {}  # host -> (k, future, worker address, start)
        rr = itertools.count()
        while todo or busy:
            hosts = self._hosts()
            if not hosts and not busy:
                for k in todo:
                    out[k] = error_result(
                        MeasureErrorNo.RUNTIME_DEVICE,
                        "DaskRunner: the cluster has no workers",
                        build_results[k].time_cost,
                    )
                break
            for host, addrs in hosts.items():
                if host in busy or not todo:
                    continue
                k = todo.pop(0)
                addr = addrs[next(rr) % len(addrs)]
                fut = self.client.submit(
                    dask_measure,
                    self.payload(build_results[k].build),
                    self.timeout,
                    workers=[addr],
                    allow_other_workers=False,
                    pure=False,
                    retries=0,
                    key=f"tune-measure-{uuid.uuid4().hex}",
                )
                busy[host] = (k, fut, addr, time.perf_counter())
            time.sleep(POLL_S)
            for host, (k, fut, addr, start) in list(busy.items()):
                done = self._collect(k, fut, addr, start, build_results[k])
                if done is not None:
                    out[k] = done
                    del busy[host]
                    if self.cooldown_interval > 0:
                        time.sleep(self.cooldown_interval)
        return out

    def _collect(self, k, fut, addr, start, build):
        """The result of a finished (or lost) measurement; None while it is still running."""
        elapsed = time.perf_counter() - start
        if fut.status == "finished":
            status, value, t_run, span = fut.result()
            self.spans.append((addr, *span))
            return self.note(run_result(status, value, build, t_run, self.timeout))
        if fut.status in ("error", "cancelled"):
            err = fut.exception() if fut.status == "error" else "cancelled"
            return error_result(
                MeasureErrorNo.RUNTIME_DEVICE,
                f"DaskRunner: measurement on {addr} failed: {err}",
                build.time_cost + elapsed,
            )
        if not self._alive(addr):
            fut.cancel()
            return error_result(
                MeasureErrorNo.RUNTIME_DEVICE,
                f"DaskRunner: worker {addr} was lost during the measurement",
                build.time_cost + elapsed,
            )
        if elapsed > self.timeout + GRACE_S:
            fut.cancel()
            return error_result(
                MeasureErrorNo.RUN_TIMEOUT,
                f"DaskRunner: no answer from {addr} within {self.timeout + GRACE_S:g} s",
                build.time_cost + elapsed,
            )
        return None

    def close(self) -> None:
        if self._client is not None and not hasattr(self.address, "submit"):
            self._client.close()
        self._client = None


__all__ = ["DaskRunner", "dask_measure"]
