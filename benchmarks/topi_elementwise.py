"""topi injective and reduction operators (x86 schedules) vs numpy, onnxruntime, torch.

Workloads: a fused chain ``relu(x * a + b)`` over 16M floats, a broadcast add
(64, 112, 112) + (64, 1, 1), the activations sigmoid, SiLU, GELU and tanh-GELU over 1M
floats, and sum / mean over the last axis of 4096 x 1000.
Each row is the median of interleaved runs (one batch of each contender in
turn), with a 0.25 s sleep before each timed batch: BLAS and torch threads spin
after a call and would steal the cores of the next contender.  onnxruntime
runs with 2 intra-op threads.

Run: ``python3 benchmarks/topi_elementwise.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import codegen
import te
from codegen import timing
import topi
from topi import x86

REPEAT = 7
NUMBER = 5


def tessera(out, ins, outs_np, sched=x86.schedule_injective) -> Callable:
    """The built x86 kernel, writing into the preallocated ``outs_np``."""
    f = codegen.build(sched(out), [*ins, out], name=out.op.name)
    return lambda *arrays: f(*arrays, outs_np)


def onnx_session(node_type: str, shapes: list, out_shape, attrs=None, extra=None):
    """An onnxruntime session for one node (or a small chain ``extra``) over float32 inputs."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    names = [f"in{k}" for k in range(len(shapes))]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in zip(names, shapes)]
    output = helper.make_tensor_value_info("out", TensorProto.FLOAT, out_shape)
    nodes = extra(names) if extra else [helper.make_node(node_type, names, ["out"], **(attrs or {}))]
    graph = helper.make_graph(nodes, "g", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return lambda *arrays: sess.run(None, dict(zip(names, arrays)))


def chain_nodes(names):
    from onnx import helper

    return [helper.make_node("Mul", [names[0], names[1]], ["t0"]),
            helper.make_node("Add", ["t0", names[2]], ["t1"]),
            helper.make_node("Relu", ["t1"], ["out"])]


def interleaved(contenders: dict, args) -> dict:
    """Median seconds per call of each contender on ``args`` (``codegen.timing.interleaved``)."""
    runs = timing.interleaved({k: (lambda fn=fn: fn(*args)) for k, fn in contenders.items()},
                              repeat=REPEAT, number=NUMBER)
    return {k: timing.median(v) for k, v in runs.items()}


def workloads():
    """(title, contenders, args, bytes moved) for each row."""
    rng = np.random.default_rng(0)
    n = 16 * 1024 * 1024
    x, a, b = rng.random(n, dtype=np.float32), rng.random(1, dtype=np.float32), rng.random(1, dtype=np.float32)
    X, A, B = te.placeholder((n,), name="X"), te.placeholder((1,), name="A"), te.placeholder((1,), name="B")
    Y = topi.nn.relu(topi.add(topi.multiply(X, A), B))
    yield ("relu(x*a+b) 16M", {
        "tessera": tessera(Y, [X, A, B], np.empty(n, np.float32)),
        "numpy": lambda x, a, b: np.maximum(x * a + b, 0),
        "onnxruntime": onnx_session("", [[n], [1], [1]], [n], extra=chain_nodes),
        "torch": _torch(lambda t, u, v: (t * u + v).relu()),
    }, [x, a, b], 2 * n * 4)

    p, q = rng.random((64, 112, 112), dtype=np.float32), rng.random((64, 1, 1), dtype=np.float32)
    P, Q = te.placeholder(p.shape, name="P"), te.placeholder(q.shape, name="Q")
    yield ("add (64,112,112)+(64,1,1)", {
        "tessera": tessera(topi.add(P, Q), [P, Q], np.empty(p.shape, np.float32)),
        "numpy": np.add,
        "onnxruntime": onnx_session("Add", [list(p.shape), list(q.shape)], list(p.shape)),
        "torch": _torch(lambda t, u: t + u),
    }, [p, q], 2 * p.nbytes)

    yield from activations(rng)

    r = rng.random((4096, 1000), dtype=np.float32)
    R = te.placeholder(r.shape, name="R")
    for name, op, onnx_op in (("sum", topi.sum, "ReduceSum"), ("mean", topi.mean, "ReduceMean")):
        yield (f"{name} 4096x1000 axis=-1", {
            "tessera": tessera(op(R, -1), [R], np.empty(4096, np.float32), x86.schedule_reduce),
            "numpy": _numpy_reduce(name),
            "onnxruntime": onnx_session(onnx_op, [list(r.shape)], [4096], {"axes": [-1], "keepdims": 0})
            if name == "mean" else _onnx_sum(r.shape),
            "torch": _torch(lambda t, f=name: getattr(t, f)(-1)),
        }, [r], r.nbytes)


def activations(rng, n: int = 1 << 20):
    """sigmoid, SiLU, GELU (erf) and tanh-GELU over 1M floats in [-8, 8] (cache-resident:
    the transcendental's arithmetic is what is timed)."""
    import math

    from topi.nn.activation import gelu_tanh, silu
    from topi.nn.elemwise import gelu

    x = rng.uniform(-8, 8, n).astype(np.float32)
    X = te.placeholder((n,), name="X")

    def sig(t):
        return 1 / (1 + np.exp(-t))

    def erf(t):
        return np.vectorize(math.erf, otypes=[np.float64])(t)

    def onnx_chain(*ops):
        def nodes(names):
            from onnx import helper

            if ops == ("Sigmoid",):
                return [helper.make_node("Sigmoid", [names[0]], ["out"])]
            return [helper.make_node("Sigmoid", [names[0]], ["s"]), helper.make_node("Mul", [names[0], "s"], ["out"])]
        return onnx_session("", [[n]], [n], extra=nodes)

    import_torch = _torch(lambda t: t)
    for name, out, ref, ort, torch_fn in (
            ("sigmoid", topi.sigmoid(X), sig, onnx_chain("Sigmoid"), "sigmoid"),
            ("silu", silu(X), lambda t: t * sig(t), onnx_chain("Sigmoid", "Mul"), "silu"),
            ("gelu (erf)", gelu(X), lambda t: 0.5 * t * (1 + erf(t / math.sqrt(2))), None, "gelu"),
            ("gelu_tanh", gelu_tanh(X), lambda t: 0.5 * t * (1 + np.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t**3))),
             None, "gelu_tanh")):
        y = np.empty(n, np.float32)
        fn = tessera(out, [X], y)
        fn(x)
        np.testing.assert_allclose(y, ref(x.astype(np.float64)), rtol=1e-5, atol=1e-6)
        yield (f"{name} 1M", {
            "tessera": fn,
            "numpy": ref if name in ("sigmoid", "silu") else None,
            "onnxruntime": ort,
            "torch": _torch_activation(torch_fn) if import_torch else None,
        }, [x], 2 * x.nbytes)


def _torch_activation(name: str):
    import torch.nn.functional as F

    fn = {"sigmoid": F.sigmoid, "silu": F.silu, "gelu": F.gelu,
          "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}[name]
    return _torch(fn)


def _numpy_reduce(name: str):
    fn = getattr(np, name)
    return lambda t: fn(t, axis=-1)


def _onnx_sum(shape):
    """ReduceSum takes its axes as an input from opset 13."""
    try:
        from onnx import TensorProto, helper
    except ImportError:
        return None

    def nodes(names):
        axes = helper.make_tensor("axes", TensorProto.INT64, [1], [-1])
        return [helper.make_node("Constant", [], ["ax"], value=axes),
                helper.make_node("ReduceSum", [names[0], "ax"], ["out"], keepdims=0)]

    return onnx_session("", [list(shape)], [shape[0]], extra=nodes)


def _torch(fn):
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(2)
    return lambda *arrays: fn(*[torch.from_numpy(a) for a in arrays])


def main() -> None:
    cols = ["tessera", "numpy", "onnxruntime", "torch"]
    print(f"{'workload':<28}" + "".join(f"{c + ' ms':>16}" for c in cols) + f"{'tessera GB/s':>14}")
    for title, contenders, args, nbytes in workloads():
        contenders = {k: v for k, v in contenders.items() if v is not None}
        t = interleaved(contenders, args)
        row = "".join(f"{t[c] * 1e3:>16.3f}" if c in t else f"{'-':>16}" for c in cols)
        print(f"{title:<28}{row}{nbytes / t['tessera'] / 1e9:>14.1f}")


if __name__ == "__main__":
    main()
