"""ONNX's own backend node test cases, run through ``graph.from_onnx`` and ``graph.build``.

The onnx wheel ships its node tests as code
(``onnx.backend.test.case.node.collect_testcases``): a model, input sets and
expected outputs with their rtol/atol.  :func:`eligible_cases` keeps the cases
whose every operator has a converter; :func:`run_case` imports one, builds it
and compares every output; the outcome is one of

``pass``     every output matches (shape, dtype, values within rtol/atol);
``refused``  the import raised a ValueError (the message is the reason);
``wrong``    it built and ran but an output differs;
``crash``    anything else (an exception from build or run).

``python tests/onnx_node_cases.py`` prints the outcome of every case and
the totals (``--only NAME`` for a few, ``--refusals`` for the table the
conformance test keeps).
"""

from __future__ import annotations

import os
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

import graph  # noqa: E402
from graph.onnx.context import NeedsInputValue  # noqa: E402
from graph.onnx.loader import default_opset  # noqa: E402
from graph.onnx.table import DEFAULT_DOMAINS, lookup  # noqa: E402


@dataclass
class Outcome:
    name: str
    kind: str  # pass, refused, wrong, crash
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
    """The node cases whose operators all have a converter, by name."""
    return sorted((c for c in _all_cases() if has_converters(c.model)), key=lambda c: c.name)


def _compare(got: np.ndarray, want, rtol: float, atol: float) -> str:
    want = np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} != expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != expected {want.dtype}"
    if want.dtype.kind in "fc":
        bad = ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        bad = got != want
    if bad.any():
        k = int(np.flatnonzero(bad.reshape(-1))[0])
        return f"{int(bad.sum())} of {bad.size} elements differ, first at {k}: {got.reshape(-1)[k]!r} != {want.reshape(-1)[k]!r}"
    return ""


def _array(value) -> np.ndarray:
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def freeze_inputs(model: onnx.ModelProto, values: dict) -> onnx.ModelProto:
    """``model`` with the data inputs named in ``values`` turned into initializers holding them."""
    frozen = onnx.ModelProto()
    frozen.CopyFrom(model)
    keep = [v for v in frozen.graph.input if v.name not in values]
    del frozen.graph.input[:]
    frozen.graph.input.extend(keep)
    frozen.graph.initializer.extend(numpy_helper.from_array(np.asarray(a), name) for name, a in values.items())
    return frozen


def import_case(model: onnx.ModelProto, feeds: dict) -> tuple:
    """``from_onnx`` of ``model``; every data input a converter needs as a value at import time
    (a Reshape target, Pad widths... fed as graph inputs) is frozen to its value in ``feeds``,
    as a static-shape compiler needs.  Returns (graph, params, frozen input names)."""
    frozen: dict = {}
    while True:
        try:
            g, params = graph.from_onnx(freeze_inputs(model, frozen) if frozen else model)
            return g, params, sorted(frozen)
        except NeedsInputValue as err:
            if err.input_name not in feeds or err.input_name in frozen:
                raise
            frozen[err.input_name] = feeds[err.input_name]


def run_case(case) -> Outcome:
    """Import, build and run one node case on each of its input sets."""
    start = time.perf_counter()
    model = case.model
    names = [v.name for v in model.graph.input]
    built: dict = {}
    for inputs, outputs in case.data_sets:
        try:
            feeds = {n: _array(a) for n, a in zip(names, inputs)}
        except Exception as err:  # noqa: BLE001 - a sequence or optional input
            return Outcome(case.name, "refused", f"input of a non-tensor type ({err})", time.perf_counter() - start)
        try:
            g, params, frozen = import_case(model, feeds)
        except ValueError as err:
            return Outcome(case.name, "refused", str(err), time.perf_counter() - start)
        except Exception as err:  # noqa: BLE001 - any other exception is the finding
            return Outcome(case.name, "crash", f"import: {type(err).__name__}: {err}", time.perf_counter() - start)
        try:
            key = tuple((n, feeds[n].tobytes()) for n in frozen)
            if key not in built:
                built[key] = graph.build(g, params=params)
            m = built[key].create_executor()
            m.run(**{n: a for n, a in feeds.items() if n not in frozen and n not in params})
            for k, want in enumerate(outputs):
                problem = _compare(m.get_output(k), _array(want), case.rtol, case.atol)
                if problem:
                    return Outcome(case.name, "wrong", f"output {k}: {problem}", time.perf_counter() - start)
        except Exception as err:  # noqa: BLE001
            return Outcome(case.name, "crash", f"{type(err).__name__}: {err}"[:400], time.perf_counter() - start)
    return Outcome(case.name, "pass", "", time.perf_counter() - start)


def run_isolated(case, timeout: float = 120.0) -> Outcome:
    """:func:`run_case` in a forked child, so that a signal or a hang is an outcome ("crash") too."""
    import json
    import select
    import signal

    start = time.perf_counter()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, report one JSON line, leave without cleanup
        os.close(read)
        try:
            out = run_case(case)
            payload = json.dumps([out.kind, out.detail])
        except BaseException as err:  # noqa: BLE001
            payload = json.dumps(["crash", f"{type(err).__name__}: {err}"])
        os.write(write, payload.encode())
        os._exit(0)
    os.close(write)
    chunks, deadline = [], start + timeout
    while True:
        ready, _, _ = select.select([read], [], [], max(deadline - time.perf_counter(), 0))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
            return Outcome(case.name, "crash", f"hang: no result after {timeout:.0f}s", timeout)
        chunk = os.read(read, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    elapsed = time.perf_counter() - start
    if not chunks:
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        what = f"killed by signal {signal.Signals(sig).name}" if sig else f"exit status {os.WEXITSTATUS(status)}"
        return Outcome(case.name, "crash", f"{what}, no result", elapsed)
    kind, detail = json.loads(b"".join(chunks).decode())
    return Outcome(case.name, kind, detail, elapsed)


def main(argv: list) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="case names (prefix match)")
    ap.add_argument("--quiet", action="store_true", help="print only cases that do not pass")
    args = ap.parse_args(argv)
    cases = eligible_cases()
    if args.only:
        cases = [c for c in cases if any(c.name.startswith(p) for p in args.only)]
    counts: dict = {}
    start = time.perf_counter()
    for case in cases:
        out = run_isolated(case)
        counts[out.kind] = counts.get(out.kind, 0) + 1
        if out.kind != "pass" or not args.quiet:
            print(f"{out.kind:8s} {out.seconds:6.2f}s {out.name}: {out.detail[:300]}", flush=True)
    print(f"{len(cases)} cases in {time.perf_counter() - start:.0f}s: {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
