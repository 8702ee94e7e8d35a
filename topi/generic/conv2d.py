"""Fallback schedules of the convolution family beyond :mod:`topi.generic.nn`'s (classic
``topi.generic.conv2d`` and the conv schedules of classic ``topi.generic``): transposed, 3-D,
HWCN, correlation and deformable convolutions, each :func:`topi.generic.nn.default_schedule`
(injective stages inlined, the outer axis parallel), correct for any compute of the operator;
and classic TVM's fallback config of an int8 conv on a CPU's dot-product instruction."""

from __future__ import annotations

from topi.config import dividing_split, max_accumulators
from topi.generic.nn import _fallback, schedule_depthwise_conv2d_nhwc  # noqa: F401
from topi.nn.conv2d import workload_out_width
from tune.autotvm.knobs import OtherOptionEntity


def fallback_schedule_cpu_common_int8(cfg, wkl, int32_lanes: int, num_int8_elements: int, target=None) -> None:
    """Fill ``cfg`` (a fallback config) with the blocks of an int8 conv ``wkl``
    (``topi.nn.conv2d.Workload``) whose dot-product instruction multiplies ``num_int8_elements``
    data bytes by ``int32_lanes`` x ``num_int8_elements`` weights into ``int32_lanes`` sums:
    ``tile_oc`` the wider of the two, ``tile_ic`` the largest block of 4-byte steps under it that
    divides the input channels, ``tile_ow`` the widest dividing register tile of int32 accumulators
    ``target`` holds (``topi.config.max_accumulators``), ``unroll_kw`` off."""
    if wkl.out_filter % int32_lanes or wkl.in_filter % num_int8_elements:
        raise ValueError(f"fallback_schedule_cpu_common_int8: {wkl.out_filter} output channels must be a multiple "
                         f"of int32_lanes={int32_lanes} and {wkl.in_filter} input channels of "
                         f"num_int8_elements={num_int8_elements}")
    oc_bn = max(int32_lanes, num_int8_elements)
    ic_bn = next((b for b in range(oc_bn, 0, -4) if wkl.in_filter % b == 0), 1)
    cfg["tile_ic"] = dividing_split(wkl.in_filter, ic_bn)
    cfg["tile_oc"] = dividing_split(wkl.out_filter, oc_bn)
    cfg["tile_ow"] = dividing_split(workload_out_width(wkl), max_accumulators(target))
    cfg["unroll_kw"] = OtherOptionEntity(False)

schedule_conv1d_transpose_ncw = _fallback("schedule_conv1d_transpose_ncw", "conv1d_transpose (NCW)")
schedule_group_conv2d_transpose_nchw = _fallback("schedule_group_conv2d_transpose_nchw",
                                                 "grouped conv2d_transpose (NCHW)")
schedule_conv3d_ncdhw = _fallback("schedule_conv3d_ncdhw", "conv3d (NCDHW)")
schedule_conv3d_ndhwc = _fallback("schedule_conv3d_ndhwc", "conv3d (NDHWC)")
schedule_conv3d_transpose_ncdhw = _fallback("schedule_conv3d_transpose_ncdhw", "conv3d_transpose (NCDHW)")
schedule_conv2d_hwcn = _fallback("schedule_conv2d_hwcn", "conv2d (HWCN)")
schedule_correlation_nchw = _fallback("schedule_correlation_nchw", "correlation (NCHW)")
schedule_deformable_conv2d_nchw = _fallback("schedule_deformable_conv2d_nchw", "deformable conv2d (NCHW)")
schedule_deformable_conv2d_nhwc = _fallback("schedule_deformable_conv2d_nhwc", "deformable conv2d (NHWC)")

__all__ = [
    "fallback_schedule_cpu_common_int8", "schedule_conv1d_transpose_ncw", "schedule_conv2d_hwcn", "schedule_conv3d_ncdhw", "schedule_conv3d_ndhwc",
    "schedule_conv3d_transpose_ncdhw", "schedule_correlation_nchw", "schedule_deformable_conv2d_nchw",
    "schedule_deformable_conv2d_nhwc", "schedule_depthwise_conv2d_nhwc", "schedule_group_conv2d_transpose_nchw",
]
