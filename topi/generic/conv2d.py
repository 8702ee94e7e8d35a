"""Fallback schedules of the convolution family beyond :mod:`topi.generic.nn`'s (classic
``topi.generic.conv2d`` and the conv schedules of classic ``topi.generic``): transposed, 3-D,
HWCN, correlation and deformable convolutions, each :func:`topi.generic.nn.default_schedule`
(injective stages inlined, the outer axis parallel), correct for any compute of the operator."""

from __future__ import annotations

from topi.generic.nn import _fallback, schedule_depthwise_conv2d_nhwc  # noqa: F401

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
    "schedule_conv1d_transpose_ncw", "schedule_conv2d_hwcn", "schedule_conv3d_ncdhw", "schedule_conv3d_ndhwc",
    "schedule_conv3d_transpose_ncdhw", "schedule_correlation_nchw", "schedule_deformable_conv2d_nchw",
    "schedule_deformable_conv2d_nhwc", "schedule_depthwise_conv2d_nhwc", "schedule_group_conv2d_transpose_nchw",
]
