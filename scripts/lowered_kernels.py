"""The lowered loop nests of every kernel of the nine light ONNX models: dump them, or compare
them with a dump, so a refactor can show it left every kernel as it was.

    python scripts/lowered_kernels.py dump /tmp/before           # on the old tree
    python scripts/lowered_kernels.py compare /tmp/before        # on the new one: exit 1 if any differ

Variants (all by default): ``default`` (the rule's configs), ``nowino`` (built with
``options={"winograd": False}``) and ``records`` (ResNet-50, SqueezeNet and DenseNet-121
built with a seeded synthetic log of random configs and costs, written into the dump
directory by ``dump`` and read back by ``compare``, so both sides choose from the same
records).  Kernels are named ``model/symbol`` (the symbol holds a digest of the kernel's
canonical text, configs included).  The text depends on the host's CPU: compare on the
machine that dumped.
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import graph  # noqa: E402
from graph.compile import lower_source  # noqa: E402
from graph.onnx.zoo import LIGHT_MODELS, light_model_path  # noqa: E402
from tune import autotvm  # noqa: E402
from tune.measure import MeasureInput, MeasureResult  # noqa: E402

VARIANTS = ("default", "nowino", "records")
RECORD_MODELS = ("resnet50", "squeezenet", "densenet121")
_build = importlib.import_module("graph.build")


class _Stop(Exception):
    pass


def kernel_sources(name: str, **build_kw) -> list:
    """The ``KernelSource`` of every kernel a build of model ``name`` compiles (not compiled)."""
    got = []

    def capture(sources, jobs=None, progress=None):
        got.extend(sources)
        raise _Stop

    real, _build.compile_kernels = _build.compile_kernels, capture
    try:
        g, params = graph.from_onnx(light_model_path(name))
        graph.build(g, params=params, **build_kw)
    except _Stop:
        pass
    finally:
        _build.compile_kernels = real
    return got


def synthetic_records(path: str) -> None:
    """A seeded log for :data:`RECORD_MODELS`: each task's default and five random configs, one
    to three readings each, a fifth of them timed with the flush."""
    rng = random.Random(7)
    rows = []
    for name in RECORD_MODELS:
        g, params = graph.from_onnx(light_model_path(name))
        for task in autotvm.task.extract_from_program(g, params=params, target="llvm"):
            n = len(task.config_space)
            for cfg in [task.default_config()] + [task.config_space.get(rng.randrange(n)) for _ in range(5)]:
                for _ in range(rng.choice([1, 1, 3])):
                    cost = 1e-3 * (1 + rng.random())
                    rows.append((MeasureInput(task.target, task, cfg),
                                 MeasureResult((cost, cost * 1.01), 0, 1.0, 1.0, flush=rng.random() < 0.2)))
    if os.path.exists(path):
        os.remove(path)
    autotvm.record.save_to_file(rows, path)


def texts(variant: str, records: str) -> dict:
    """``model/symbol`` -> lowered text of every kernel of the variant."""
    models = RECORD_MODELS if variant == "records" else LIGHT_MODELS
    kw = {"options": {"winograd": False}} if variant == "nowino" else {}
    if variant == "records":
        kw["records"] = records
    return {f"{m}/{src.symbol}": str(lower_source(src)) for m in models for src in kernel_sources(m, **kw)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=("dump", "compare"))
    p.add_argument("dir")
    p.add_argument("variants", nargs="*", help=f"of {', '.join(VARIANTS)} (default: all)")
    a = p.parse_args(argv)
    a.variants = a.variants or list(VARIANTS)
    unknown = sorted(set(a.variants) - set(VARIANTS))
    if unknown:
        p.error(f"unknown variants {unknown}; choose from {', '.join(VARIANTS)}")
    records = os.path.join(a.dir, "records.jsonl")
    if a.mode == "dump" and "records" in a.variants:
        os.makedirs(a.dir, exist_ok=True)
        synthetic_records(records)
    bad = 0
    for variant in a.variants:
        got, root = texts(variant, records), os.path.join(a.dir, variant)
        if a.mode == "dump":
            for key, text in got.items():
                path = os.path.join(root, key + ".txt")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as fh:
                    fh.write(text)
            print(f"{variant}: {len(got)} kernels dumped to {root}")
            continue
        want = {}
        for model in os.listdir(root):
            for f in os.listdir(os.path.join(root, model)):
                with open(os.path.join(root, model, f)) as fh:
                    want[f"{model}/{f[:-4]}"] = fh.read()
        missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        differ = sorted(k for k in want.keys() & got.keys() if want[k] != got[k])
        print(f"{variant}: {len(got)} kernels; {len(missing)} missing, {len(extra)} new, {len(differ)} differ")
        for key in (missing + extra + differ)[:20]:
            print(f"  {key}")
        bad += len(missing) + len(extra) + len(differ)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
