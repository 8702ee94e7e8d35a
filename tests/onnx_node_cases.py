"""ONNX's own backend node test cases, run through ``graph.from_onnx`` and ``graph.build``.

The onnx wheel ships its node tests as code
(``onnx.backend.test.case.node.collect_testcases``): a model, input sets and
expected outputs with their rtol/atol.  :func:`eligible_cases` keeps the cases
whose every operator has a converter; :func:`run_case` imports one, builds it
and compares every output; the outcome is one of

``pass``     every output matches (shape, dtype, values within rtol/atol);
``random``   a case of a random generator, checked by property (:func:`check_random`:
             shape, dtype, support and moments over many runs against onnx's reference
             sampler), since no two runtimes draw the same stream: not an exact pass;
``refused``  the import raised a ValueError (the message is the reason);
``wrong``    it built and ran but an output differs;
``crash``    anything else (an exception from build or run).

``python tests/onnx_node_cases.py`` prints the outcome of every case and
the totals (``--only NAME`` for a few, ``--refusals`` for the table the
conformance test keeps).
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import graph
from graph.onnx.loader import RANDOM_OPS, default_opset
from graph.onnx.table import DEFAULT_DOMAINS, lookup


@dataclass
class Outcome:
    name: str
    kind: str  # pass, random, refused, wrong, crash
    detail: str = ""
    seconds: float = 0.0


def _all_cases() -> list:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return collect_testcases(None)


def has_converters(model: onnx.ModelProto) -> bool:
    """Every node of the main graph is a default-domain operator with a converter at the model's opset."""
    try:
        opset = default_opset(model, "case")
    except ValueError:
        return False
    return all(n.domain in DEFAULT_DOMAINS and lookup(n.op_type, opset) is not None for n in model.graph.node)


def eligible_cases() -> list:
    """Every node case of the installed onnx wheel, by name."""
    return sorted(_all_cases(), key=lambda c: c.name)


def _compare(got, want, rtol: float, atol: float) -> str:
    if isinstance(want, list) or want is None:
        if want is None or got is None:
            return "" if want is None and got is None else f"{type(got).__name__} != expected {type(want).__name__}"
        if not isinstance(got, list) or len(got) != len(want):
            return f"a sequence of {len(want)} expected, got {type(got).__name__}"
        for k, (a, b) in enumerate(zip(got, want)):
            problem = _compare(np.asarray(a), _value(b), rtol, atol)
            if problem:
                return f"item {k}: {problem}"
        return ""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} != expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != expected {want.dtype}"
    if want.dtype.kind == "V":  # ml_dtypes (bfloat16, float8, int4...): compare as float32, NaN equal to NaN
        got, want = got.astype(np.float32), want.astype(np.float32)
    if want.dtype.kind in "fc":
        bad = ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        bad = got != want
    if bad.any():
        k = int(np.flatnonzero(bad.reshape(-1))[0])
        return f"{int(bad.sum())} of {bad.size} elements differ, first at {k}: {got.reshape(-1)[k]!r} != {want.reshape(-1)[k]!r}"
    return ""


def _value(value):
    """A case's input or output as the executor takes it: an array, a list of them (a
    sequence) or None (an empty optional)."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


_array = _value

RANDOM_RUNS = 200  # runs of a random case compared by their moments


def is_random(case) -> bool:
    """Whether the case's model draws random numbers (a random generator in its graph)."""
    return any(n.op_type in RANDOM_OPS for n in case.model.graph.node)


def _reference_draws(model: onnx.ModelProto, feeds: dict, runs: int) -> list:
    """``runs`` outputs of onnx's reference evaluator on ``model`` with its ``seed`` attributes
    removed: samples of the distribution each random output follows (not of one stream)."""
    from onnx.reference import ReferenceEvaluator

    unseeded = onnx.ModelProto()
    unseeded.CopyFrom(model)
    for node in unseeded.graph.node:
        keep = [a for a in node.attribute if a.name != "seed"]
        del node.attribute[:]
        node.attribute.extend(keep)
    ref = ReferenceEvaluator(unseeded)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return [ref.run(None, feeds) for _ in range(runs)]


def check_random(got_runs: list, ref_runs: list, expected: list) -> str:
    """'' if the outputs of ``got_runs`` (one list of arrays per run) follow the distribution of
    ``ref_runs`` (onnx's reference, as many runs), else what differs.

    Each output must have the expected shape and dtype; a discrete output (integers, booleans, or
    floats the reference draws from at most 32 values) must take only values the reference draws
    (the case's own expected output too); every element's mean over the runs must be within 6
    standard errors of the reference's (plus 1 / runs), the pooled variance within 30% of the
    reference's; and an output the reference varies from run to run must vary (not folded)."""
    runs = len(got_runs)
    for i, want in enumerate(expected):
        want = _value(want)
        got = np.stack([np.asarray(r[i]) for r in got_runs])
        ref = np.stack([np.asarray(r[i]) for r in ref_runs])
        if got.shape[1:] != want.shape or got.dtype != want.dtype:
            return f"output {i}: {got.dtype}{list(got.shape[1:])} != expected {want.dtype}{list(want.shape)}"
        g, r = got.astype(np.float64), ref.astype(np.float64)
        support = np.unique(r)
        if want.dtype.kind in "biu" or support.size <= 32:
            for what, values in (("Tessera draws", g), ("the case expects", want.astype(np.float64))):
                outside = ~np.isin(values, support)
                if outside.any():
                    return f"output {i}: {what} {values[outside].reshape(-1)[0]!r}, never drawn by the reference " \
                           f"(its values: {support[:8].tolist()})"
        mean_g, mean_r = g.mean(axis=0), r.mean(axis=0)
        var_g, var_r = g.var(axis=0), r.var(axis=0)
        slack = 6 * np.sqrt((var_g + var_r) / runs) + 1.0 / runs + 1e-6 * np.abs(mean_r)
        far = np.abs(mean_g - mean_r) > slack
        if far.any():
            k = int(np.flatnonzero(far.reshape(-1))[0])
            return f"output {i}: element {k} has mean {mean_g.reshape(-1)[k]:.4g} over {runs} runs, " \
                   f"the reference {mean_r.reshape(-1)[k]:.4g}"
        if var_r.mean() > 0:
            ratio = var_g.mean() / var_r.mean()
            if not 0.7 <= ratio <= 1.3:
                return f"output {i}: variance over runs {var_g.mean():.4g}, the reference {var_r.mean():.4g}"
        if (var_r > 0).any() and not (var_g > 0).any():
            return f"output {i}: the same value in all {runs} runs (folded?), the reference varies"
    return ""


def run_case(case) -> Outcome:
    """Import, build and run one node case on each of its input sets, fed as the case gives
    them (shape inputs, sequences and optionals as run-time inputs).  A ValueError from the
    import, or one from the importer when the first run specialises the model (a value it
    cannot compile), is a refusal; anything else that goes wrong is a crash."""
    start = time.perf_counter()
    model = case.model
    names = [v.name for v in model.graph.input]
    try:
        g, params = graph.from_onnx(model)
    except ValueError as err:
        return Outcome(case.name, "refused", str(err), time.perf_counter() - start)
    except Exception as err:  # noqa: BLE001 - any other exception is the finding
        return Outcome(case.name, "crash", f"import: {type(err).__name__}: {err}", time.perf_counter() - start)
    try:
        m = graph.build(g, params=params).create_executor()
    except Exception as err:  # noqa: BLE001
        return Outcome(case.name, "crash", f"build: {type(err).__name__}: {err}"[:400], time.perf_counter() - start)
    random = is_random(case)
    for k, (inputs, outputs) in enumerate(case.data_sets):
        feeds = {n: _value(a) for n, a in zip(names, inputs)}
        try:
            m.run(**{n: a for n, a in feeds.items() if n not in params})
            got = [m.get_output(i) for i in range(len(outputs))]
            if random:
                runs = [got]
                for _ in range(RANDOM_RUNS - 1):
                    m.run(**{n: a for n, a in feeds.items() if n not in params})
                    runs.append([m.get_output(i) for i in range(len(outputs))])
        except ValueError as err:
            if k == 0 and str(err).startswith("from_onnx: ") and getattr(g, "is_dynamic", False):
                return Outcome(case.name, "refused", str(err), time.perf_counter() - start)
            return Outcome(case.name, "crash", f"ValueError: {err}"[:400], time.perf_counter() - start)
        except Exception as err:  # noqa: BLE001
            return Outcome(case.name, "crash", f"{type(err).__name__}: {err}"[:400], time.perf_counter() - start)
        if random:
            problem = check_random(runs, _reference_draws(model, feeds, RANDOM_RUNS), outputs)
            if problem:
                return Outcome(case.name, "wrong", f"random, by property: {problem}", time.perf_counter() - start)
            continue
        for i, want in enumerate(outputs):
            problem = _compare(got[i], _value(want), case.rtol, case.atol)
            if problem:
                return Outcome(case.name, "wrong", f"output {i}: {problem}", time.perf_counter() - start)
    if random:
        return Outcome(case.name, "random", f"checked by property over {RANDOM_RUNS} runs",
                       time.perf_counter() - start)
    return Outcome(case.name, "pass", "", time.perf_counter() - start)


class _Child:
    """One forked child running ``job() -> (kind, detail)``, reporting one JSON line on a pipe.

    An exception escaping ``job`` is a "crash"; so are a signal, an exit without a result and
    running past ``timeout`` (the child is killed: a "hang")."""

    def __init__(self, name: str, job, timeout: float):
        self.name, self.start = name, time.perf_counter()
        self.deadline = self.start + timeout
        self.timeout = timeout
        self.chunks: list = []
        read, write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: run, report, leave without cleanup
            os.close(read)
            try:
                payload = json.dumps(list(job()))
            except BaseException as err:  # noqa: BLE001
                payload = json.dumps(["crash", f"{type(err).__name__}: {err}"[:2000]])
            data = payload.encode()
            while data:
                data = data[os.write(write, data) :]
            os._exit(0)
        os.close(write)
        self.fd = read

    def kill(self) -> Outcome:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)
        return Outcome(self.name, "crash", f"hang: no result after {self.timeout:.0f}s", self.timeout)

    def finish(self) -> Outcome:
        os.close(self.fd)
        _, status = os.waitpid(self.pid, 0)
        elapsed = time.perf_counter() - self.start
        if not self.chunks:
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            what = (
                f"killed by signal {signal.Signals(sig).name}"
                if sig
                else f"exit status {os.WEXITSTATUS(status)}"
            )
            return Outcome(self.name, "crash", f"{what}, no result", elapsed)
        kind, detail = json.loads(b"".join(self.chunks).decode())
        return Outcome(self.name, kind, detail, elapsed)


def run_forked(jobs: list, n_jobs: int = 2, timeout: float = 120.0, report=None) -> dict:
    """Run ``(name, job)`` pairs each in a forked child, at most ``n_jobs`` at once; returns
    name -> Outcome (``report(outcome)`` is called as each finishes)."""
    pending, running, results = list(reversed(jobs)), {}, {}

    def done(out: Outcome) -> None:
        results[out.name] = out
        if report:
            report(out)

    while pending or running:
        while pending and len(running) < n_jobs:
            child = _Child(*pending.pop(), timeout)
            running[child.fd] = child
        wait = max(min(c.deadline for c in running.values()) - time.perf_counter(), 0)
        ready, _, _ = select.select(list(running), [], [], wait)
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if chunk:
                running[fd].chunks.append(chunk)
            else:
                done(running.pop(fd).finish())
        for fd, child in list(running.items()):
            if time.perf_counter() > child.deadline:
                done(running.pop(fd).kill())
    return results


def run_isolated(cases: list, jobs: int = 2, timeout: float = 120.0, report=None) -> dict:
    """:func:`run_case` of every case in forked children (see :func:`run_forked`)."""

    def job(case):
        def run() -> tuple:
            out = run_case(case)
            return out.kind, out.detail

        return run

    return run_forked([(c.name, job(c)) for c in cases], jobs, timeout, report)


def run_in_fresh_cache(cases: list, cache_dir, jobs: int = 2, timeout: float = 300.0) -> dict:
    """:func:`run_isolated` compiling into ``cache_dir`` (``TESSERA_CACHE_DIR`` restored after)."""
    old = os.environ.get("TESSERA_CACHE_DIR")
    os.environ["TESSERA_CACHE_DIR"] = str(cache_dir)
    try:
        return run_isolated(list(cases), jobs=jobs, timeout=timeout)
    finally:
        if old is None:
            os.environ.pop("TESSERA_CACHE_DIR")
        else:
            os.environ["TESSERA_CACHE_DIR"] = old


def refusal_table(results: dict) -> str:
    """The refused cases as the Python dict the conformance test keeps (name -> message)."""
    lines = ["REFUSED = {"]
    for name in sorted(results):
        out = results[name]
        if out.kind == "refused":
            lines.append(f"    {name!r}: {out.detail.split(': ', 1)[-1][:200]!r},")
    lines.append("}")
    return "\n".join(lines)


def main(argv: list) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="case names (prefix match)")
    ap.add_argument("--quiet", action="store_true", help="print only cases that do not pass")
    ap.add_argument("--jobs", type=int, default=2, help="cases run at once (forked children)")
    ap.add_argument("--refusals", metavar="FILE", help="write the table of refused cases to FILE")
    args = ap.parse_args(argv)
    cases = eligible_cases()
    if args.only:
        cases = [c for c in cases if any(c.name.startswith(p) for p in args.only)]

    def report(out: Outcome) -> None:
        if out.kind != "pass" or not args.quiet:
            print(f"{out.kind:8s} {out.seconds:6.2f}s {out.name}: {out.detail[:300]}", flush=True)

    start = time.perf_counter()
    results = run_isolated(cases, args.jobs, report=report)
    counts: dict = {}
    for out in results.values():
        counts[out.kind] = counts.get(out.kind, 0) + 1
    print(f"{len(cases)} cases in {time.perf_counter() - start:.0f}s: {counts}")
    exact = counts.get("pass", 0)
    print(f"pass (exact) {exact} = {100 * exact / max(len(cases), 1):.1f}%; random: checked by property "
          f"{counts.get('random', 0)}; pass + random {100 * (exact + counts.get('random', 0)) / max(len(cases), 1):.1f}%")
    if args.refusals:
        with open(args.refusals, "w") as f:
            f.write(refusal_table(results) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
