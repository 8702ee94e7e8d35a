"""Mutated ONNX files: each must end in a Python exception or a correct run, never a signal or a hang.

The corpus is onnx's own node test models (``tests/onnx_node_cases.py``, less the known-wrong ones and
those specialised at run time), each
serialized and mutated in one of four ways, chosen by a seeded RNG:

``flip``      1 to 4 bytes XORed with a random nonzero byte;
``truncate``  the file cut at a random length;
``dims``      an input's or initializer's extent set to 2^40, 2^62, 2^31, -1, -7 or 0;
``attr``      an integer attribute set to 2^40, -2^40, 2^31 - 1, -1 or 0.

Each mutant runs in a forked child (address space capped at 4 GiB, so an
absurd allocation is a MemoryError, not the kernel's OOM killer) with a
timeout: ``graph.from_onnx`` of the bytes, and when that accepts it
``graph.build`` and a run on the original inputs (random ones when the
mutation changed the declared inputs), compared with onnx's
``ReferenceEvaluator`` on the same mutant.  Outcomes:

``exception``       a Python exception (its type is counted), from import, build or run;
``correct``         ran and matched the reference;
``ran-unverified``  ran, and the reference itself refused the mutant;
``built-not-run``   built, but an input is too large to allocate (over 256 MiB);
``mismatch``        ran and differed from the reference (a finding);
``crash``           a signal, a hang past the timeout, or no result (a finding).

    python scripts/fuzz_onnx_files.py --count 400 --seed 0     # the full run
    python scripts/fuzz_onnx_files.py --count 24 --verbose     # a quick share
"""

from __future__ import annotations

import os
import random
import resource
import sys
import warnings

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

import onnx_node_cases as cases

KINDS = ("flip", "truncate", "dims", "attr")
ABSURD_DIMS = (2**40, 2**62, 2**31, -1, -7, 0)
ABSURD_INTS = (2**40, -(2**40), 2**31 - 1, -1, 0)
MEMORY_LIMIT = 4 << 30
FEED_LIMIT = 256 << 20  # a mutant whose inputs exceed this is built but not run


def corpus(limit: int | None = None, seed: int = 0) -> list:
    """(name, serialized model, feeds) of the node cases that import as static graphs (no shape
    read at run time, no host operators) and are not known wrong (``KNOWN_WRONG`` of
    tests/test_onnx_conformance.py)."""
    import graph
    from test_onnx_conformance import KNOWN_WRONG

    picked = [c for c in cases.eligible_cases() if c.name not in KNOWN_WRONG]
    random.Random(seed).shuffle(picked)
    out = []
    for case in picked:
        if limit is not None and len(out) >= limit:
            break
        names = [v.name for v in case.model.graph.input]
        try:
            feeds = {n: cases._array(a) for n, a in zip(names, case.data_sets[0][0])}
            g, _ = graph.from_onnx(case.model)
        except Exception:  # noqa: BLE001 - refused cases are no use as seeds
            continue
        if getattr(g, "is_dynamic", False) or any(not isinstance(a, np.ndarray) for a in feeds.values()):
            continue
        out.append((case.name, case.model.SerializeToString(), feeds))
    return out


def _mutate_proto(data: bytes, rng: random.Random, kind: str) -> bytes:
    model = onnx.load_from_string(data)
    g = model.graph
    if kind == "dims":
        targets = [v.type.tensor_type.shape.dim for v in g.input if v.type.tensor_type.shape.dim]
        targets += [t.dims for t in g.initializer if t.dims]
        if targets:
            dims = rng.choice(targets)
            k = rng.randrange(len(dims))
            value = rng.choice(ABSURD_DIMS)
            if isinstance(dims[k], int):
                dims[k] = value
            else:
                dims[k].Clear()
                dims[k].dim_value = value
    else:
        attrs = [
            a
            for n in g.node
            for a in n.attribute
            if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS)
        ]
        if attrs:
            attr = rng.choice(attrs)
            value = rng.choice(ABSURD_INTS)
            if attr.type == onnx.AttributeProto.INT:
                attr.i = value
            elif attr.ints:
                attr.ints[rng.randrange(len(attr.ints))] = value
    return model.SerializeToString()


def mutate(data: bytes, rng: random.Random, kind: str) -> bytes:
    """One mutant of the serialized model ``data``."""
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(len(out))] ^= rng.randint(1, 255)
        return bytes(out)
    if kind == "truncate":
        return data[: rng.randrange(len(data))]
    return _mutate_proto(data, rng, kind)


def _feeds_for(g, feeds: dict, rng: np.random.Generator) -> dict:
    """The original inputs when the graph still declares them, else random ones of its declared types."""
    out = {}
    for v in g.inputs:
        if v.name in feeds and feeds[v.name].shape == v.shape and str(feeds[v.name].dtype) == v.dtype:
            out[v.name] = feeds[v.name]
        elif v.dtype == "bool":
            out[v.name] = rng.random(v.shape) < 0.5
        elif v.dtype.startswith(("int", "uint")):
            out[v.name] = rng.integers(0, 3, v.shape).astype(v.dtype)
        else:
            out[v.name] = rng.standard_normal(v.shape).astype(v.dtype)
    return out


def _matches(got: list, want: list) -> bool:
    if len(got) != len(want):
        return False
    for a, b in zip(got, want):
        b = np.asarray(b)
        if a.shape != b.shape:
            return False
        if b.dtype.kind in "fc":
            if not np.allclose(a, b.astype(a.dtype), rtol=1e-3, atol=1e-4, equal_nan=True):
                return False
        elif not np.array_equal(a, b):
            return False
    return True


def run_mutant(data: bytes, feeds: dict) -> tuple:
    """(outcome, detail) of one mutant; meant to run in a forked child."""
    import graph

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    try:
        g, params = graph.from_onnx(data)
        lib = graph.build(g, params=params)
        big = [v for v in g.inputs if v.name not in params and v.nbytes > FEED_LIMIT]
        if big:
            return (
                "built-not-run",
                f"input {big[0].name!r} {big[0].shape} is too large to feed ({big[0].nbytes} bytes)",
            )
        inputs = _feeds_for(g, feeds, np.random.default_rng(0))
        inputs = {k: v for k, v in inputs.items() if k not in params}
        m = lib.create_executor()
        m.run(**inputs)
        got = [m.get_output(k) for k in range(m.num_outputs)]
    except Exception as err:  # noqa: BLE001 - a Python exception is an accepted outcome
        return "exception", f"{type(err).__name__}: {str(err)[:300]}"
    try:
        from onnx.reference import ReferenceEvaluator

        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = ReferenceEvaluator(onnx.load_from_string(data)).run(None, {**inputs, **params})
    except Exception as err:  # noqa: BLE001
        return "ran-unverified", f"reference: {type(err).__name__}: {str(err)[:200]}"
    if _matches(got, want):
        return "correct", ""
    return "mismatch", f"outputs differ from onnx's reference ({[a.shape for a in got]})"


def mutants(count: int, seed: int = 0, seeds: int = 60) -> list:
    """``count`` (name, bytes, feeds) mutants, the kinds in turn, over ``seeds`` corpus models."""
    rng = random.Random(seed)
    base = corpus(seeds, seed)
    out = []
    for k in range(count):
        name, data, feeds = base[k % len(base)]
        kind = KINDS[k % len(KINDS)]
        out.append((f"{k:04d}-{kind}-{name}", mutate(data, rng, kind), feeds))
    return out


def fuzz(count: int, seed: int = 0, jobs: int = 2, timeout: float = 60.0, report=None) -> dict:
    """Run ``count`` mutants; returns name -> Outcome (kind is one of the outcomes above)."""
    work = [(name, (lambda d=data, f=feeds: run_mutant(d, f))) for name, data, feeds in mutants(count, seed)]
    return cases.run_forked(work, jobs, timeout, report)


def summary(results: dict) -> str:
    kinds: dict = {}
    exceptions: dict = {}
    for out in results.values():
        kinds[out.kind] = kinds.get(out.kind, 0) + 1
        if out.kind == "exception":
            t = out.detail.split(":", 1)[0]
            exceptions[t] = exceptions.get(t, 0) + 1
    by_mutation: dict = {}
    for name, out in results.items():
        key = (name.split("-")[1], out.kind)
        by_mutation[key] = by_mutation.get(key, 0) + 1
    lines = [
        f"{len(results)} mutants: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())),
        "exceptions by type: "
        + ", ".join(f"{k} {v}" for k, v in sorted(exceptions.items(), key=lambda x: -x[1])),
        "by mutation: " + ", ".join(f"{m}/{k} {v}" for (m, k), v in sorted(by_mutation.items())),
    ]
    return "\n".join(lines)


def main(argv: list) -> int:
    import argparse
    import tempfile
    import time

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per mutant before it counts as a hang"
    )
    ap.add_argument("--verbose", action="store_true", help="print every outcome, not only the findings")
    args = ap.parse_args(argv)
    os.environ.setdefault("TESSERA_CACHE_DIR", tempfile.mkdtemp(prefix="tessera-fuzz-"))

    def report(out) -> None:
        if args.verbose or out.kind in ("mismatch", "crash"):
            print(f"{out.kind:15s} {out.seconds:6.2f}s {out.name}: {out.detail[:200]}", flush=True)

    start = time.perf_counter()
    results = fuzz(args.count, args.seed, args.jobs, args.timeout, report)
    print(summary(results))
    print(f"{time.perf_counter() - start:.0f}s")
    bad = sum(1 for o in results.values() if o.kind in ("mismatch", "crash"))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
