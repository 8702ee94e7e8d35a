"""ONNX ``Attention`` (opsets 23-24) through Tessera next to onnxruntime (2 threads, interleaved).

Run ``python benchmarks/onnx_attention.py [CASE ...] [--repeat 7]``.  Each case is one
Attention node with float32 inputs; per case: the path Tessera takes (``fused``: one
``attention`` kernel; ``decomposed``: batch_matmul, softmax, batch_matmul), the latency of
Tessera and onnxruntime (medians of interleaved batches), their ratio and whether Y agrees;
with ``TESSERA_BENCH_THREADS=1`` also the best CPU time per call of each (less sensitive to a
loaded machine than wall time).
``softcap_qk`` is ``softcap`` asking for the capped scores too (``qk_matmul_output``, mode 1),
which takes the decomposition: the path every softcap took before the fused kernel learnt it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field

import numpy as np
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from codegen.timing import format_time, interleaved
from graph.cli.timing import differences

THREADS = int(os.environ.get("TESSERA_BENCH_THREADS", "2"))


@dataclass
class Case:
    b: int
    hq: int
    hk: int
    sq: int
    sk: int
    d: int
    past: int = 0
    attrs: dict = field(default_factory=dict)
    qk_output: bool = False
    opset: int = 23


CASES = {
    # prefill, grouped-query heads (4 query heads per kv head), causal
    "gqa_prefill": Case(1, 16, 4, 256, 256, 64, attrs={"is_causal": 1}),
    # one-token decode over a 1023-entry KV cache: present_key/present_value are outputs
    "gqa_decode_cache": Case(4, 16, 4, 1, 1, 64, past=1023, attrs={"is_causal": 1}),
    # Gemma-2-style softcap on the scores, causal
    "softcap": Case(1, 8, 8, 256, 256, 64, attrs={"is_causal": 1, "softcap": 50.0}),
    "softcap_qk": Case(
        1,
        8,
        8,
        256,
        256,
        64,
        attrs={"is_causal": 1, "softcap": 50.0, "qk_matmul_output_mode": 1},
        qk_output=True,
    ),
    # the probabilities as a second output (qk_matmul_output_mode 3): the decomposition
    "qk_probs_output": Case(1, 8, 8, 128, 128, 64, attrs={"qk_matmul_output_mode": 3}, qk_output=True),
}


def model_and_feed(c: Case):
    rng = np.random.default_rng(0)
    shapes = {"Q": (c.b, c.hq, c.sq, c.d), "K": (c.b, c.hk, c.sk, c.d), "V": (c.b, c.hk, c.sk, c.d)}
    ins = ["Q", "K", "V"]
    outs = ["Y"]
    if c.past:
        shapes.update(PK=(c.b, c.hk, c.past, c.d), PV=(c.b, c.hk, c.past, c.d))
        ins += ["", "PK", "PV"]
        outs += ["present_key", "present_value"]
    if c.qk_output:
        outs += [""] * (3 - len(outs)) + ["QK"]
    node = helper.make_node("Attention", ins, outs, **c.attrs)
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes[n]) for n in ins if n]
    outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs if o]
    g = helper.make_graph([node], "attention", inputs, outputs)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", c.opset)])
    feed = {n: rng.standard_normal(shapes[n]).astype("float32") for n in ins if n}
    return model, feed


def build(model):
    import graph

    g, params = graph.from_onnx(model)
    path = "fused" if any(n.op == "attention" for n in g.nodes) else "decomposed"
    return graph.build(g, params=params).create_executor(), path


def bench(name: str, repeat: int) -> dict:
    import onnxruntime as ort

    import codegen

    codegen.set_num_threads(THREADS)
    model, feed = model_and_feed(CASES[name])
    m, path = build(model)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = THREADS, 1
    sess = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    m.run(**feed)
    _, _, agree = differences(m.get_output(0), sess.run(None, feed)[0])
    fns = {"tessera": lambda: m.run(**feed), "onnxruntime": lambda: sess.run(None, feed)}
    samples = interleaved(fns, repeat)
    t, o = (statistics.median(samples[k]) for k in fns)
    row = {"case": name, "path": path, "tessera": t, "onnxruntime": o, "ratio": t / o, "agree": agree}
    if THREADS == 1:  # CPU seconds per call: robust on a loaded machine (both run in this thread)
        row["cpu"] = {k: _cpu_per_call(fn, repeat) for k, fn in fns.items()}
    return row


def _cpu_per_call(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(10):
            fn()
        best = min(best, (time.process_time() - start) / 10)
    return best


def main(argv: list) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", help=f"cases (default all): {', '.join(CASES)}")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    print(
        f"{'case':18} {'path':11} {'Tessera':>10} {'onnxruntime':>12} {'T/ORT':>6} {'Y agrees':>9}  CPU T / ORT"
    )
    for name in args.cases or list(CASES):
        r = bench(name, args.repeat)
        print(
            f"{r['case']:18} {r['path']:11} {format_time(r['tessera']):>10} {format_time(r['onnxruntime']):>12} "
            f"{r['ratio']:5.2f}x {r['agree']!s:>9}  "
            + (
                f"{format_time(r['cpu']['tessera'])} / {format_time(r['cpu']['onnxruntime'])}"
                if "cpu" in r
                else "(TESSERA_BENCH_THREADS=1)"
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
