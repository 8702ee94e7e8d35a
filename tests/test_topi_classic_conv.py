"""The convolution family under classic TVM's names: the workload tuples and fallback helpers
classic x86 code reads, the computes and schedules TVM's topi tests name, each against numpy on
shapes that do not divide the vector width or the tiles."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
import topi
from codegen.target import Target
from topi import testing as ref
from topi.nn.conv2d import Workload, _get_workload
from topi.x86.conv2d_avx_common import _fallback_schedule
from topi.x86.conv2d_rule import conv2d_rule
from tune.autotvm.space import FallbackConfigEntity


# ------------------------------------------------------------------ workloads and fallbacks --
@pytest.mark.parametrize("layout,dshape,kshape", [
    ("NCHW", (1, 6, 13, 11), (10, 3, 3, 5)),
    ("NHWC", (1, 13, 11, 6), (3, 5, 3, 10)),
    ("HWCN", (13, 11, 6, 1), (3, 5, 3, 10)),
])
def test_get_workload(layout, dshape, kshape):
    data, kernel = te.placeholder(dshape, name="d"), te.placeholder(kshape, name="k")
    wkl = _get_workload(data, kernel, (2, 1), "SAME", (1, 2), "float32", layout)
    # SAME with a dilated 3x9 window: 2 and 8 padded, the odd one at the bottom / right
    assert wkl == Workload("float32", "float32", 13, 11, 6, 2, 10, 3, 5, 1, 4, 1, 4, 1, 2, 2, 1)


def test_get_workload_refuses_a_layout():
    d, k = te.placeholder((1, 4, 5, 5)), te.placeholder((4, 4, 3, 3))
    with pytest.raises(ValueError, match="data_layout='NCWH' is not supported"):
        _get_workload(d, k, 1, 1, 1, "float32", "NCWH")


@pytest.mark.parametrize("width,pads", [(73, 0), (56, 1), (17, 3), (8, 2)])
def test_fallback_schedule_factors_the_output_width(width, pads):
    d, k = te.placeholder((1, 48, width, width)), te.placeholder((84, 48, 3, 3))
    with Target("llvm"):
        wkl = _get_workload(d, k, 1, pads, 1, "float32")
        cfg = FallbackConfigEntity()
        _fallback_schedule(cfg, wkl)
        rule = conv2d_rule(("conv2d_NCHWc.x86", (1, 48, width, width), (84, 48, 3, 3), (1, 1), (pads,) * 4,
                            (1, 1), 1, "float32", "float32"), Target.current())
    ow = width + 2 * pads - 2
    assert np.prod(cfg["tile_ow"].size) == ow and cfg["tile_ow"].size[1] <= rule["ow_bn"]
    assert np.prod(cfg["tile_oc"].size) == 84 and cfg["tile_oc"].size[1] <= rule["oc_bn"]
    assert cfg["tile_ic"].size == [48 // rule["ic_bn"], rule["ic_bn"]]
    assert cfg["unroll_kw"].val == rule["unroll_kw"]


# ------------------------------------------------------------------ batch_matmul --
@pytest.mark.parametrize("dtype,out_dtype", [("float32", None), ("int8", "int32")])
def test_x86_batch_matmul_is_the_compute_its_schedule_tiles(dtype, out_dtype):
    x, y = te.placeholder((3, 13, 19), dtype, name="x"), te.placeholder((1, 17, 19), dtype, name="y")
    with Target("llvm"):
        out = topi.x86.batch_matmul(x, y, out_dtype=out_dtype)
        s = topi.x86.schedule_batch_matmul([out])
    check_build(s, [x, y, out], lambda a, b: ref.batch_matmul(a, b, out_dtype), rtol=1e-5, atol=1e-5)
