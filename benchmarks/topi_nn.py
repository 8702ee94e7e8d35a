"""topi.nn operators with their x86 schedules, against numpy and onnxruntime.

Run ``python3 benchmarks/topi_nn.py`` (``--plain-dense`` adds dense over the
unpacked ``[N, K]`` weight; the dense rows hand Tessera its weight block-packed
once, see ``_dense_fn``).  ``--rows`` instead sweeps the row count of a ViT-sized
packed dense (384 -> 1536) and of attention-sized batch_matmuls, one thread, each kernel in its
CPU time, each row count's GFLOP/s next to that of the nearest multiple of the register tile's
rows (target: >= 0.85x), the two timed in interleaved batches (spread: the per-batch ratios);
``--model-rows`` the same for the dense layers and attention products of ViT-S, BERT, GPT-2 and
T5 at rows 1, 3, 7, 50, 197 and the model's own.  Every system is timed in interleaved
batches (a 0.25 s sleep before each, since BLAS and onnxruntime threads spin
after a call and steal the cores); the table shows medians per call and the
ratio ``baseline / tessera`` (above 1: tessera is faster).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import codegen
import te
from codegen import timing
from topi.nn.dense import dense
from topi.nn.pooling import global_pool, pool2d
from topi.nn.softmax import softmax
from topi.x86.dense import (
    default_dense_pack_config, dense_pack, pack_dense_weight_numpy, schedule_dense, schedule_dense_pack,
)
from topi.x86.pooling import schedule_pool
from topi.x86.softmax import schedule_softmax

ROUNDS = 9
BATCH_SECONDS = 0.05


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def _ort(node, inputs: dict, out_shape):
    """An onnxruntime session (2 intra-op threads) running one node, or None."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    ins = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)
    model = helper.make_model(helper.make_graph([node], "g", ins, [out]),
                              opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, inputs)


def _numpy_maxpool(x):
    p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    oh, ow = (x.shape[2] - 1) // 2 + 1, (x.shape[3] - 1) // 2 + 1
    out = np.full((*x.shape[:2], oh, ow), -np.inf, np.float32)
    for kh in range(3):
        for kw in range(3):
            np.maximum(out, p[:, :, kh:kh + 2 * oh:2, kw:kw + 2 * ow:2], out=out)
    return out


def _numpy_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _build(out, ins, sched):
    return codegen.build(sched(out), list(ins) + [out], name=out.op.name.replace(".", "_"))


def _dense_fn(M: int, wt, packed: bool):
    """The dense kernel and the weight it takes: block-packed once (``dense_pack``,
    as a graph compiler folds a constant weight; onnxruntime prepacks at session
    creation too) or the plain ``[N, K]`` weight (``dense``)."""
    N, K = wt.shape
    X = te.placeholder((M, K), name="X")
    if not packed:
        W = te.placeholder((N, K), name="W")
        return _build(dense(X, W), [X, W], schedule_dense), wt
    wk = pack_dense_weight_numpy(wt, default_dense_pack_config(M, N, K)["bn"].val)
    W = te.placeholder(wk.shape, name="W")
    return _build(dense_pack(X, W, units=N), [X, W], schedule_dense_pack), wk


def workloads(plain_dense: bool = False):
    """``name -> (tessera_fn, {baseline: fn}, check)`` for the five kernels (and dense
    over the plain weight too with ``plain_dense``)."""
    import onnx.helper as oh

    w = {}
    for M in (1, 64):
        x, wt, y = _rand(M, 2048, seed=1), _rand(1000, 2048, seed=2), np.zeros((M, 1000), np.float32)
        f, wk = _dense_fn(M, wt, packed=True)
        ort = _ort(oh.make_node("Gemm", ["x", "w"], ["y"], transB=1), {"x": x, "w": wt}, [M, 1000])
        base = {"numpy": lambda x=x, wt=wt: np.dot(x, wt.T), "onnxruntime": ort}
        w[f"dense {M}x2048->1000"] = (lambda f=f, x=x, wk=wk, y=y: f(x, wk, y), base,
                                      (y, lambda x=x, wt=wt: x @ wt.T))
        if plain_dense:
            f, _ = _dense_fn(M, wt, packed=False)
            w[f"dense {M}x2048->1000 plain W"] = (lambda f=f, x=x, wt=wt, y=y: f(x, wt, y), base,
                                                  (y, lambda x=x, wt=wt: x @ wt.T))
    X = te.placeholder((1, 64, 112, 112), name="X")
    f = _build(pool2d(X, 3, 2, 1, 1, "max"), [X], schedule_pool)
    x, y = _rand(1, 64, 112, 112, seed=3), np.zeros((1, 64, 56, 56), np.float32)
    ort = _ort(oh.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
               {"x": x}, [1, 64, 56, 56])
    w["max pool 3x3/2 64x112x112"] = (lambda f=f, x=x, y=y: f(x, y),
                                      {"numpy": lambda x=x: _numpy_maxpool(x), "onnxruntime": ort},
                                      (y, lambda x=x: _numpy_maxpool(x)))
    X = te.placeholder((1, 2048, 7, 7), name="X")
    f = _build(global_pool(X, "avg"), [X], schedule_pool)
    x, y = _rand(1, 2048, 7, 7, seed=4), np.zeros((1, 2048, 1, 1), np.float32)
    ort = _ort(oh.make_node("GlobalAveragePool", ["x"], ["y"]), {"x": x}, [1, 2048, 1, 1])
    w["global avg pool 2048x7x7"] = (lambda f=f, x=x, y=y: f(x, y),
                                     {"numpy": lambda x=x: x.mean(axis=(2, 3), keepdims=True), "onnxruntime": ort},
                                     (y, lambda x=x: x.mean(axis=(2, 3), keepdims=True)))
    X = te.placeholder((4096, 1000), name="X")
    f = _build(softmax(X), [X], schedule_softmax)
    x, y = _rand(4096, 1000, seed=5), np.zeros((4096, 1000), np.float32)
    ort = _ort(oh.make_node("Softmax", ["x"], ["y"], axis=1), {"x": x}, [4096, 1000])
    w["softmax 4096x1000"] = (lambda f=f, x=x, y=y: f(x, y),
                              {"numpy": lambda x=x: _numpy_softmax(x), "onnxruntime": ort},
                              (y, lambda x=x: _numpy_softmax(x)))
    return w


def measure(fns: dict) -> dict:
    """Median seconds per call of each function, timed in interleaved batches (``codegen.timing``)."""
    runs = timing.interleaved(fns, repeat=ROUNDS, budget=BATCH_SECONDS)
    return {k: timing.median(v) for k, v in runs.items()}


def main(plain_dense: bool = False) -> list:
    """Print the table; return rows ``(workload, tessera_ms, {baseline: ms})``."""
    rows = []
    print(f"{'workload':30s} {'tessera':>10s} {'numpy':>10s} {'ort':>10s} {'np/t':>6s} {'ort/t':>6s}")
    for name, (fn, baselines, (y, want)) in workloads(plain_dense).items():
        fn()
        np.testing.assert_allclose(y, want(), rtol=1e-3, atol=1e-3)
        t = measure({"tessera": fn, **{k: v for k, v in baselines.items() if v is not None}})
        ms = {k: v * 1e3 for k, v in t.items()}
        npy, ort = ms.get("numpy", float("nan")), ms.get("onnxruntime", float("nan"))
        print(f"{name:30s} {ms['tessera']:10.4f} {npy:10.4f} {ort:10.4f} "
              f"{npy / ms['tessera']:6.2f} {ort / ms['tessera']:6.2f}")
        rows.append((name, ms["tessera"], {k: v for k, v in ms.items() if k != "tessera"}))
    return rows


ROWS = (1, 3, 4, 7, 8, 13, 48, 50, 196, 197, 198)
MODEL_ROWS = (1, 3, 7, 50, 197)
# (label, N, K, extra rows) of the dense layers and attention products in the issue-49 models
MODEL_DENSE = (("ViT-S qkv", 1152, 384, ()), ("ViT-S proj", 384, 384, ()), ("ViT-S fc1", 1536, 384, ()),
               ("ViT-S fc2", 384, 1536, ()), ("BERT 768", 768, 768, (128,)), ("BERT fc1", 3072, 768, (128,)),
               ("GPT-2 qkv", 2304, 768, (128,)), ("T5 512", 512, 512, (32,)), ("T5 fc1", 2048, 512, (32,)))


def row_sweep(rows=ROWS, N: int = 1536, K: int = 384) -> list:
    """GFLOP/s of the packed dense at each row count (one thread, CPU time) and its ratio to
    the nearest multiple of the tile's rows (at least one tile); then a narrow layer (ConvNeXt-T's
    384 -> 96: fewer weight blocks than ``topi.x86.dense.FEW_BLOCKS``) at 3136 rows and a few;
    then ``topi.x86.batch_matmul`` over 12 slices, an attention's ``q @ k^T`` (``[M, 64] x
    [197, 64]^T``) and ``p @ v`` (``[M, 197] x [197, 64]``, K = 197) with ``y`` as ``[N, K]``
    and as ``[K, N]`` (``transpose_b=False``, as a graph's ``MatMul``)."""
    return (_row_sweep(rows, N, K) + _row_sweep((50, 197, 3136), 96, K)
            + _row_sweep(rows, 197, 64, batch=12) + _row_sweep(rows, 64, 197, batch=12)
            + _row_sweep(rows, 64, 197, batch=12, transpose_b=False))


def model_row_sweep(rows=MODEL_ROWS) -> list:
    """:func:`row_sweep`'s table for the models' dense layers (``MODEL_DENSE``) and attention
    products (6 heads x 197 x 64 as ViT-S, 12 x 128 x 64 as BERT; ``transpose_b=False``)."""
    out = []
    for label, N, K, extra in MODEL_DENSE:
        print(label)
        out += _row_sweep(tuple(rows) + tuple(extra), N, K)
    for label, batch, S in (("ViT-S", 6, 197), ("BERT", 12, 128)):
        for name, N, K in (("q @ k^T", S, 64), ("p @ v", 64, S)):
            print(f"{label} {name}")
            own = (S,) if S not in rows else ()
            out += _row_sweep(tuple(rows) + own, N, K, batch=batch, transpose_b=False)
    return out


def _kernel_call(f, args):
    """A call of the built kernel ``f`` on ``args`` as the tuner's runner times a candidate (the
    compiled entry on checked pointers, without the ~4 us of numpy argument checks a Python call
    adds); it holds ``f`` and ``args``."""
    fn, raw = f._fn, f._check(args)
    return lambda f=f, args=args: fn(*raw)


def _row_sweep(rows, N: int, K: int, batch: int = 0, transpose_b: bool = True) -> list:
    import time

    from topi.x86.batch_matmul import batch_matmul, default_batch_matmul_config, schedule_batch_matmul
    from topi.x86.batch_matmul import batch_matmul_template

    codegen.set_num_threads(1)
    wt = _rand(max(batch, 1), N, K, seed=2)
    y_shape = f"[{N}, {K}]^T" if transpose_b else f"[{K}, {N}]"
    print(f"batch_matmul {batch} x [rows, {K}] x {y_shape}" if batch else f"dense {K} -> {N}")

    def config(M: int):
        if batch:
            template = batch_matmul_template(M, K, "float32", transpose_b=transpose_b)
            return default_batch_matmul_config(batch, M, N, K, template=template)
        return default_dense_pack_config(M, N, K)

    def kernel(M: int):
        """(a call of the checked kernel for M rows, its flops)."""
        if batch:
            X = te.placeholder((batch, M, K), name="X")
            Y = te.placeholder((batch, N, K) if transpose_b else (batch, K, N), name="Y")
            w = wt if transpose_b else np.ascontiguousarray(np.swapaxes(wt, -1, -2))
            f = _build(batch_matmul(X, Y, transpose_b=transpose_b), [X, Y], schedule_batch_matmul)
            x, y = _rand(batch, M, K, seed=1), np.zeros((batch, M, N), np.float32)
        else:
            f, w = _dense_fn(M, wt[0], packed=True)
            x, y = _rand(M, K, seed=1), np.zeros((M, N), np.float32)
        f(x, w, y)
        np.testing.assert_allclose(y, x @ np.swapaxes(wt, -1, -2) if batch else x @ wt[0].T, rtol=1e-3, atol=1e-3)
        return _kernel_call(f, (x, w, y)), 2.0 * max(batch, 1) * M * N * K

    out = []
    print(f"{'rows':>5s} {'tile':>6s} {'GFLOP/s':>8s} {'nearest':>8s} {'GFLOP/s':>8s} {'ratio':>6s} {'spread':>11s}")
    for M in rows:
        cfg = config(M)
        mr = cfg["mr"].val
        near = max(mr, round(M / mr) * mr)
        (mine, mine_flops), (ref, ref_flops) = kernel(M), kernel(near)
        runs = timing.interleaved({"mine": mine, "near": ref}, repeat=ROUNDS, settle=0.0, clock=time.thread_time)
        ratios = sorted((mine_flops / a) / (ref_flops / b) for a, b in zip(runs["mine"], runs["near"]))
        rate, ref_rate = (fl / timing.median(runs[k]) / 1e9 for k, fl in (("mine", mine_flops), ("near", ref_flops)))
        tile = f"{cfg['bn'].val}x{mr}" if "bn" in cfg.values else f"{cfg['nr'].val}x{mr}"
        print(f"{M:5d} {tile:>6s} {rate:8.1f} {near:8d} {ref_rate:8.1f} {rate / ref_rate:6.2f} "
              f"{ratios[0]:5.2f}-{ratios[-1]:.2f}", flush=True)
        out.append((M, rate, near, ref_rate))
    return out


if __name__ == "__main__":
    if "--rows" in sys.argv[1:]:
        row_sweep()
    elif "--model-rows" in sys.argv[1:]:
        model_row_sweep()
    else:
        main(plain_dense="--plain-dense" in sys.argv[1:])
