"""Quantized models: Tessera's int8 build next to onnxruntime's int8 session and Tessera's float32
build of the same network, interleaved in one run.

Run ``python benchmarks/quantized.py [resnet50] [encoder4] [resnet50_light] [--repeat 7] [--full-range]
[--cpu-time]`` (default: the first two).
The quantized models are generated on first use into ``$TESSERA_MODEL_DIR`` (default
``~/.cache/tessera/models``; never committed) by onnxruntime's quantizer:

``resnet50``  torchvision's ResNet-50 definition with random weights (``make_user_models.py``),
              ``quantize_static`` (QDQ, uint8 activations, int8 per-channel weights)
              calibrated on 4 seeded random images; ``resnet50_light`` the same quantization of
              the onnx wheel's light ResNet-50, whose weights are constants (every conv then
              runs in the exact int16 mode and the output is near 0);
``encoder4``  the 4-layer transformer encoder of ``graph.onnx.zoo_transformers``,
              ``quantize_dynamic`` (int8 weights, DynamicQuantizeLinear + MatMulInteger).

Weights are 7-bit (``reduce_range``) unless ``--full-range``: onnxruntime's AVX2 int8 kernels
sum u8 x s8 pairs into saturating int16 (vpmaddubsw), so with 8-bit weights its outputs drift
from ONNX's arithmetic, which Tessera computes exactly.  Per model it prints the latency of
the three (medians of interleaved batches, the fastest batch, the spread
(max - min) / median), the ratios, and how far Tessera's int8 output is from onnxruntime's
int8 output (max abs) and from the float model's, and how many kernels run on the integer dot products.
Every integer of the int8 kernels is ONNX's; the float ops between them (LayerNorm, softmax) may
round one ulp apart from onnxruntime's, and where such a value lies on a DynamicQuantizeLinear
rounding tie its uint8 moves one step (encoder4: one entry of layer 3's input, ``x / scale`` =
-34.5 to within 1e-5), which later layers carry to the output.
``resnet50``'s int8 output is not onnxruntime's bit for bit either (on the seeded input, 223 of
its 1000 outputs one output step apart, none more), and the cause is onnxruntime's: it fuses each
residual ``DequantizeLinear -> Add -> QuantizeLinear`` into QLinearAdd, whose AVX2 kernel
computes ``round(fma(a, sa/sc, fma(b, sb/sc, zc - (sa/sc * za + sb/sc * zb))))`` where ONNX
(and Tessera) compute ``round((sa * (a - za) + sb * (b - zb)) / sc) + zc``.  With every QDQ tensor
made a graph output, the first that differs is layer1.1's residual add: one value of 802,816
(a = 91, b = 140: exactly 51.4999959, ONNX's rounding 51, onnxruntime's 52); a numpy chain of
onnxruntime's conv output stage and that QLinearAdd formula reproduces each of its quantized
tensors through the last residual add exactly, the same chain with ONNX's add Tessera's (the
pooling and the classifier agree node by node; ``tests/test_qnn.py``: ``mlas_qlinear_add``).
``--cpu-time`` runs all three on one thread and times each batch by the calling thread's CPU
time (``time.thread_time``): on a shared machine, other processes' load then slows no one.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from codegen.timing import format_time, interleaved, summary
from graph.cli.timing import ort_session
from graph.onnx import zoo_transformers as T
from graph.onnx.zoo import light_model_path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_user_models as U  # noqa: E402

THREADS = int(os.environ.get("TESSERA_BENCH_THREADS", "2"))
MODELS = ["resnet50", "encoder4", "resnet50_light"]


def _input(path: str) -> tuple:
    import onnx

    model = onnx.load(path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    x = next(i for i in model.graph.input if i.name not in inits)
    dims = tuple(d.dim_value or 1 for d in x.type.tensor_type.shape.dim)
    return x.name, dims


def float_model(name: str) -> tuple:
    """(path, input name, input shape, feed) of the float model."""
    if name.startswith("resnet50"):
        path = light_model_path("resnet50") if name == "resnet50_light" else U.model_path("resnet50")
        iname, shape = _input(path)
        feed = np.random.default_rng(0).standard_normal(shape).astype("float32")
        return path, iname, shape, feed
    spec = T.SPECS[name]
    return T.model_path(name), spec.input_name, tuple(spec.input_shape()), T.sample_input(spec).numpy()


def quantized_model(name: str, full_range: bool) -> str:
    """The quantized model's path in the model cache, made on first use."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)

    src, iname, shape, _ = float_model(name)
    stem = "torchvision_resnet50" if name == "resnet50" else name.replace("_light", "")  # the light one: as before
    dst = os.path.join(T.cache_dir(), f"{stem}_int8{'_full' if full_range else ''}.onnx")
    if os.path.exists(dst):
        return dst
    os.makedirs(T.cache_dir(), exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name.startswith("resnet50"):
            rng = np.random.default_rng(1)

            class Reader(CalibrationDataReader):
                def __init__(self):
                    self.data = iter([{iname: rng.standard_normal(shape).astype("float32")} for _ in range(4)])

                def get_next(self):
                    return next(self.data, None)

            quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                            reduce_range=not full_range)
        else:
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8, reduce_range=not full_range)
    return dst


def build(path: str, iname: str, shape: tuple):
    import graph

    g, params = graph.from_onnx(path, shape={iname: shape})
    return graph.build(g, params=params)


def int8_kernels(lib) -> int:
    """How many kernels of the built graph run on the integer dot products (``conv2d_int8``,
    ``dense_int8``)."""
    return sum(1 for k in lib.kernel_nodes() if k.op in ("conv2d_int8", "dense_int8"))


def bench(name: str, repeat: int, full_range: bool, cpu_time: bool = False) -> dict:
    import codegen

    threads = 1 if cpu_time else THREADS
    codegen.set_num_threads(threads)
    fpath, iname, shape, x = float_model(name)
    qpath = quantized_model(name, full_range)
    lib_q = build(qpath, iname, shape)
    tf, tq = build(fpath, iname, shape).create_executor(), lib_q.create_executor()
    sess, why = ort_session(qpath, threads)
    if sess is None:
        raise SystemExit(f"quantized: onnxruntime: {why}")
    feed = {iname: x}
    outs = {}
    for key, m in (("float32", tf), ("int8", tq)):
        m.set_input(**feed)
        m.run()
        outs[key] = m.get_output(0)
    outs["ort_int8"] = sess.run(None, feed)[0]
    row = {"model": name, "int8_vs_ort": float(np.abs(outs["int8"] - outs["ort_int8"]).max()),
           "int8_vs_float": float(np.abs(outs["int8"] - outs["float32"]).max()),
           "ort_vs_float": float(np.abs(outs["ort_int8"] - outs["float32"]).max()),
           "scale": float(np.abs(outs["float32"]).max()), "int8_kernels": int8_kernels(lib_q)}
    fns = {"tessera_int8": tq.run, "onnxruntime_int8": lambda: sess.run(None, feed), "tessera_float32": tf.run}
    samples = (interleaved(fns, repeat, budget=0.3, settle=0.0, clock=time.thread_time) if cpu_time
               else interleaved(fns, repeat))
    row.update(summary(samples))
    return row


def report(r: dict) -> None:
    print(f"{r['model']}: max |output| {r['scale']:.3g}; tessera int8 vs onnxruntime int8 {r['int8_vs_ort']:.3g}, "
          f"vs float32 {r['int8_vs_float']:.3g} (onnxruntime int8 vs float32 {r['ort_vs_float']:.3g}); "
          f"{r['int8_kernels']} int8 dot-product kernels")
    for key in ("tessera_int8", "onnxruntime_int8", "tessera_float32"):
        print(f"  {key:17} median {format_time(r[key]):>10}  fastest {format_time(r[key + '_best']):>10}  "
              f"spread {r[key + '_spread']:.0%}")
    for a, b in (("tessera_int8", "onnxruntime_int8"), ("tessera_int8", "tessera_float32")):
        print(f"  {a} / {b}: {r[a] / r[b]:.2f}x (medians), {r[a + '_best'] / r[b + '_best']:.2f}x (fastest)")


def main(argv: list | None = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # no ``choices``: Python 3.11's argparse checks the default list against them as one value
    parser.add_argument("models", nargs="*", default=MODELS[:2], help=f"any of {', '.join(MODELS)} "
                        f"(default: {' '.join(MODELS[:2])})")
    parser.add_argument("--repeat", type=int, default=7, help="interleaved batches per system (default 7)")
    parser.add_argument("--full-range", action="store_true", help="8-bit weights (onnxruntime's AVX2 kernels "
                        "saturate: its outputs then drift from ONNX's arithmetic)")
    parser.add_argument("--cpu-time", action="store_true", help="one thread each, timed by thread CPU time")
    args = parser.parse_args(argv)
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model {', '.join(unknown)}: choose from {', '.join(MODELS)}")
    rows = []
    for name in args.models:
        rows.append(bench(name, args.repeat, args.full_range, args.cpu_time))
        report(rows[-1])
    how = "1 thread each, thread CPU time" if args.cpu_time else f"{THREADS} threads each, wall time"
    print(f"{how}; interleaved batches in one process (same load for all three)")
    return rows


if __name__ == "__main__":
    main()
