"""Whole ONNX models through ``graph.from_onnx`` + ``graph.build``, checked against onnxruntime.

* The nine "light" models shipped inside the onnx wheel
  (``onnx/backend/test/data/light``): their weights come from
  ConstantOfShape nodes (every weight 0.02), so the shipped
  ``light_*_output_0.pb`` is flat and the same for every input (there is no
  shipped input); each model is checked against it and against onnxruntime
  on a seeded input, and then on a copy with seeded random weights
  (:func:`random_weights`), where a wrong kernel cannot hide behind constant
  weights.
* Every ``pytorch-converted`` and ``pytorch-operator`` test model must
  build and match its shipped outputs (none is refused since Pad
  reflect/edge/wrap convert).

Each light model is imported and built once per variant per session
(module-scoped fixtures hold only the outputs).  The first run compiles
every kernel (minutes on 2 cores); the kernel disk cache
(``$TESSERA_CACHE_DIR``) makes later runs, and the random-weight builds,
which share kernel shapes with the shipped ones, much faster.
"""

import collections
import glob
import os

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import graph
from graph.onnx.zoo import BACKEND_DATA, LIGHT_MODELS, light_model_path

ort = pytest.importorskip("onnxruntime")

DATA = BACKEND_DATA
LIGHT = LIGHT_MODELS
RTOL, ATOL = 1e-3, 1e-5  # light models: atol is ATOL times the largest |expected|
TORCH_RTOL, TORCH_ATOL = 1e-3, 1e-4
LOGIT_STD = 3.0  # random weights: the classifier is rescaled so the softmax is neither flat nor one-hot

# Models of the pytorch suites that from_onnx refuses: name -> a fragment of its error.


# ------------------------------------------------------------------ helpers
def load_tensor(path: str) -> np.ndarray:
    tensor = onnx.TensorProto()
    with open(path, "rb") as fh:
        tensor.ParseFromString(fh.read())
    return numpy_helper.to_array(tensor)


def run_tessera(model, feed: dict) -> list:
    """Import, build (params bound) and run ``model`` (a path or a ModelProto)."""
    g, params = graph.from_onnx(model)
    lib = graph.build(g, params=params)
    m = lib.create_executor()
    m.run(**feed)
    return [m.get_output(k) for k in range(m.num_outputs)]


def ort_session(model):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.log_severity_level = 3
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def run_ort(model, feed: dict) -> list:
    return ort_session(model).run(None, feed)


def assert_close(
    ours: np.ndarray, expected: np.ndarray, rtol: float = RTOL, atol: float = ATOL, what: str = ""
):
    """allclose with ``atol`` scaled by the largest magnitude of ``expected``."""
    assert ours.shape == expected.shape, f"{what}: shape {ours.shape}, expected {expected.shape}"
    assert ours.dtype == expected.dtype, f"{what}: dtype {ours.dtype}, expected {expected.dtype}"
    scale = max(float(np.abs(expected).max()), 1e-30) if expected.size else 1.0
    np.testing.assert_allclose(ours, expected, rtol=rtol, atol=atol * scale, err_msg=what)


def light_path(name: str) -> str:
    return light_model_path(name)


def seeded_input(model: onnx.ModelProto, seed: int = 0) -> dict:
    """Standard normal data for every graph input that is not an initializer."""
    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feed = {}
    for v in model.graph.input:
        if v.name not in inits:
            shape = [d.dim_value for d in v.type.tensor_type.shape.dim]
            feed[v.name] = rng.standard_normal(shape).astype(np.float32)
    return feed


# ------------------------------------------------------------------ random weights
def weight_role(name: str, consumers: dict) -> tuple:
    """(role, consumer node) of a weight: what reads it, looking through Unsqueeze/Reshape."""
    for node, k in consumers.get(name, ()):
        if node.op_type in ("Unsqueeze", "Reshape") and k == 0:
            return weight_role(node.output[0], consumers)
        if node.op_type == "Conv":
            return ("conv_weight" if k == 1 else "bias"), node
        if node.op_type == "Gemm":
            return ("gemm_weight" if k == 1 else "bias"), node
        if node.op_type == "BatchNormalization":
            return ("scale", "bias", "bias", "variance")[k - 1], node
        if node.op_type == "Mul":
            return "scale", node
    return "bias", None


def random_array(shape: tuple, role: str, node, rng) -> np.ndarray:
    """He-normal conv/gemm weights, scales and BN variances in [0.5, 1.5], small biases and means."""
    if role == "conv_weight":
        fan_in = int(np.prod(shape[1:]))
    elif role == "gemm_weight":
        trans_b = any(a.name == "transB" and a.i for a in node.attribute)
        fan_in = shape[1] if trans_b else shape[0]
    elif role in ("scale", "variance"):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    else:
        return (0.1 * rng.standard_normal(shape)).astype(np.float32)
    return (np.sqrt(2.0 / fan_in) * rng.standard_normal(shape)).astype(np.float32)


def random_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """A copy of ``model`` whose ConstantOfShape weights are initializers of seeded random values."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    inits = {t.name: t for t in g.initializer}
    consumers = collections.defaultdict(list)
    for node in g.node:
        for k, name in enumerate(node.input):
            consumers[name].append((node, k))
    rng = np.random.default_rng(seed)
    keep, new = [], []
    for node in g.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            keep.append(node)
            continue
        shape = tuple(int(d) for d in numpy_helper.to_array(inits[node.input[0]]))
        role, reader = weight_role(node.output[0], consumers)
        new.append(numpy_helper.from_array(random_array(shape, role, reader, rng), node.output[0]))
    used = {name for node in keep for name in node.input} | {o.name for o in g.output}
    old = [t for t in g.initializer if t.name in used]
    inputs = [v for v in g.input if v.name in used]
    del g.node[:], g.initializer[:], g.input[:]
    g.node.extend(keep)
    g.initializer.extend(old + new)
    g.input.extend(inputs)
    if out.ir_version < 4:  # IR 3 requires every initializer to be a graph input too
        g.input.extend(helper.make_tensor_value_info(t.name, t.data_type, t.dims) for t in new)
    return out


def calibrate_logits(model: onnx.ModelProto, feed: dict, std: float = LOGIT_STD) -> onnx.ModelProto:
    """Rescale the Gemm that feeds the final Softmax so its logits have standard deviation ``std``."""
    g = model.graph
    producer = {o: n for n in g.node for o in n.output}
    softmax = [n for n in g.node if n.op_type == "Softmax" and n.output[0] in {o.name for o in g.output}]
    gemm = producer.get(softmax[0].input[0]) if softmax else None
    if gemm is None or gemm.op_type != "Gemm":
        return model
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.add().name = gemm.output[0]
    logits = run_ort(probe, feed)[-1]
    factor = std / max(float(np.std(logits)), 1e-12)
    sources = set()
    for name in gemm.input[1:]:  # weight and bias, through the reshapes that may lie between
        while name in producer and producer[name].op_type in ("Reshape", "Transpose", "Unsqueeze", "Flatten"):
            name = producer[name].input[0]
        sources.add(name)
    for t in g.initializer:
        if t.name in sources:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * np.float32(factor), t.name))
    return model


# ------------------------------------------------------------------ light models
@pytest.fixture(scope="module", params=LIGHT)
def shipped(request):
    """(name, Tessera outputs, onnxruntime outputs, shipped expected output) on the shipped weights."""
    name = request.param
    model = onnx.load(light_path(name))
    feed = seeded_input(model)
    expected = load_tensor(os.path.join(DATA, "light", f"light_{name}_output_0.pb"))
    return name, run_tessera(light_path(name), feed), run_ort(light_path(name), feed), expected


@pytest.fixture(scope="module", params=LIGHT)
def randomized(request):
    """(name, Tessera outputs, onnxruntime outputs) on seeded random weights."""
    name = request.param
    model = random_weights(onnx.load(light_path(name)), seed=0)
    feed = seeded_input(model, seed=1)
    model = calibrate_logits(model, feed)
    return name, run_tessera(model, feed), run_ort(model, feed)


def test_light_shipped_weights_match_expected_output(shipped):
    name, ours, _, expected = shipped
    assert len(ours) == 1
    assert_close(ours[0], expected, what=f"{name}: Tessera vs light_{name}_output_0.pb")


def test_light_shipped_weights_match_onnxruntime(shipped):
    name, ours, ref, _ = shipped
    for k, (a, b) in enumerate(zip(ours, ref, strict=True)):
        assert_close(a, b, what=f"{name} output {k}: Tessera vs onnxruntime")


def test_light_random_weights_match_onnxruntime(randomized):
    name, ours, ref = randomized
    for k, (a, b) in enumerate(zip(ours, ref, strict=True)):
        assert np.all(np.isfinite(b)), f"{name}: the random weights overflow in onnxruntime"
        assert float(np.std(b)) > 0, f"{name}: the random-weight output is flat; the check would be weak"
        if abs(float(b.sum()) - 1.0) < 1e-3:  # a softmax: it must be neither flat nor one-hot
            assert float(b.max()) < 0.99, (
                f"{name}: the random-weight softmax is one-hot; the check would be weak"
            )
        assert_close(a, b, what=f"{name} output {k}: Tessera vs onnxruntime, random weights")


def test_random_weights_replace_every_constant_of_shape():
    model = onnx.load(light_path("inception_v2"))
    copy = random_weights(model, seed=0)
    assert not [n for n in copy.graph.node if n.op_type == "ConstantOfShape"]
    weights = {t.name: numpy_helper.to_array(t) for t in copy.graph.initializer}
    made = [n.output[0] for n in model.graph.node if n.op_type == "ConstantOfShape"]
    assert all(name in weights for name in made)
    variances = [n.input[4] for n in copy.graph.node if n.op_type == "BatchNormalization"]
    assert variances and all(weights[v].min() > 0 for v in variances if v in made)
    onnx.checker.check_model(copy)


# ------------------------------------------------------------------ pytorch suites
def pytorch_cases() -> list:
    dirs = sorted(glob.glob(os.path.join(DATA, "pytorch-converted", "*", "")))
    dirs += sorted(glob.glob(os.path.join(DATA, "pytorch-operator", "*", "")))
    return [os.path.relpath(d, DATA).rstrip(os.sep) for d in dirs]


PYTORCH = pytorch_cases()


@pytest.mark.parametrize("case", PYTORCH)
def test_pytorch_model(case):
    root = os.path.join(DATA, case)
    g, params = graph.from_onnx(os.path.join(root, "model.onnx"))
    m = graph.build(g, params=params).create_executor()
    sets = sorted(glob.glob(os.path.join(root, "test_data_set_*")))
    assert sets
    for ds in sets:
        inputs = [load_tensor(f) for f in sorted(glob.glob(os.path.join(ds, "input_*.pb")))]
        outputs = [load_tensor(f) for f in sorted(glob.glob(os.path.join(ds, "output_*.pb")))]
        assert len(inputs) == len(m.input_names)
        m.run(**dict(zip(m.input_names, inputs)))
        assert m.num_outputs == len(outputs)
        for k, expected in enumerate(outputs):
            ours = m.get_output(k)
            assert ours.shape == expected.shape and ours.dtype == expected.dtype, (ours.shape, expected.shape)
            np.testing.assert_allclose(
                ours,
                expected,
                rtol=TORCH_RTOL,
                atol=TORCH_ATOL,
                equal_nan=True,
                err_msg=f"{case} {ds} output {k}",
            )

