"""Training-mode Dropout with a ``seed`` attribute: onnx's reference mask.

onnx's reference draws ``RandomState(seed).uniform(0, 1, shape) >= ratio`` on every
call, so every call drops the same elements; the converter computes that mask once
(numpy's MT19937, the same generator) and multiplies by ``mask / (1 - ratio)``.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx.helper import make_node as N
from onnx.reference import ReferenceEvaluator
from test_graph_onnx import make_model

import graph


def _model(shape, ratio, seed, dtype="float32", mask=True):
    attrs = {} if seed is None else {"seed": seed}
    node = N("Dropout", ["X", "r", "t"], ["Y", "Z"] if mask else ["Y"], **attrs)
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    inits = {"r": np.array(ratio, dtype), "t": np.array(True)}
    return make_model([node], {"X": x}, ["Y", "Z"] if mask else ["Y"], inits, opset=13), x


@pytest.mark.parametrize("shape, ratio, seed", [((3, 4, 5), 0.5, 0), ((7, 33), 0.75, 0), ((2, 3, 17), 0.1, 12345),
                                                ((1000,), 0.3, 2**32 - 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_seeded_training_dropout_matches_onnx_reference(shape, ratio, seed, dtype):
    model, x = _model(shape, ratio, seed, dtype)
    want = ReferenceEvaluator(model).run(None, {"X": x})
    g, params = graph.from_onnx(model)
    m = graph.build(g, target="llvm", params=params).create_executor()
    for _ in range(2):  # the reference re-seeds per call: every call drops the same elements
        m.run(X=x)
        np.testing.assert_array_equal(m.get_output(0), want[0])
        np.testing.assert_array_equal(m.get_output(1), want[1])
    keep = want[1].mean()
    assert abs(keep - (1 - ratio)) < 0.2  # a real draw, not all-kept


def test_seeded_training_dropout_new_input_same_mask():
    model, _ = _model((4, 9), 0.5, 7, mask=False)
    g, params = graph.from_onnx(model)
    m = graph.build(g, target="llvm", params=params).create_executor()
    x2 = np.arange(36, dtype=np.float32).reshape(4, 9) + 1
    m.run(X=x2)
    np.testing.assert_array_equal(m.get_output(0), ReferenceEvaluator(model).run(None, {"X": x2})[0])


@pytest.mark.parametrize("seed", [None, -1])
def test_training_dropout_without_usable_seed_refused(seed):
    model, _ = _model((2, 3), 0.5, seed)
    with pytest.raises(ValueError, match=r"node 'Y' \(Dropout, opset 13\): input 2 \(training_mode\) is True with "
                                         r"ratio=0.5: random dropout is not supported without a seed attribute"):
        graph.from_onnx(model)
