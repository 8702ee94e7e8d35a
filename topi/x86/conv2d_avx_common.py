"""Classic TVM's x86 conv2d fallback in its knob vocabulary (``tile_ic``, ``tile_oc``, ``tile_ow``,
``unroll_kw``), read from Tessera's own rule of the blocked conv (:mod:`topi.x86.conv2d_rule`).

Classic code fills a fallback config from a :class:`topi.nn.conv2d.Workload`::

    wkl = topi.nn.conv2d._get_workload(A, W, stride, padding, dilation, dtype)
    cfg = autotvm.get_config()
    _fallback_schedule(cfg, wkl)      # cfg["tile_ow"].size == [OW // ow_bn, ow_bn]

A classic split knob factors its extent exactly, where Tessera's blocked conv may pad the output
channels to a whole vector or leave a narrower tail tile at the end of a row; each block of the rule
is therefore given as the largest divisor of the extent not above it (``topi.config.dividing_split``).
"""

from __future__ import annotations

from topi.config import dividing_split
from topi.nn.conv2d import Workload, workload_out_width
from topi.x86.conv2d_rule import conv2d_rule, conv2d_workload
from tune.autotvm.config import current_target
from tune.autotvm.knobs import OtherOptionEntity


def workload_key(wkl: Workload, batch: int = 1) -> tuple:
    """The ``conv2d_NCHWc.x86`` key of a classic workload (NCHW data, OIHW kernel)."""
    dshape = (batch, wkl.in_filter, wkl.height, wkl.width)
    kshape = (wkl.out_filter, wkl.in_filter // wkl.groups, wkl.kernel_h, wkl.kernel_w)
    return conv2d_workload(dshape, kshape, (wkl.stride_h, wkl.stride_w), (wkl.padt, wkl.padl, wkl.padb, wkl.padr),
                           (wkl.dilation_h, wkl.dilation_w), wkl.groups, wkl.in_dtype, wkl.out_dtype)


def _fallback_schedule(cfg, wkl: Workload, target=None) -> None:
    """Set the classic knobs of ``cfg`` (a fallback config) to :func:`conv2d_rule`'s blocks for ``wkl``
    on ``target`` (default: the current target)."""
    values = conv2d_rule(workload_key(wkl), target or current_target())
    cfg["tile_ic"] = dividing_split(wkl.in_filter, values["ic_bn"])
    cfg["tile_oc"] = dividing_split(wkl.out_filter, values["oc_bn"])
    cfg["tile_ow"] = dividing_split(workload_out_width(wkl), values["ow_bn"])
    cfg["unroll_kw"] = OtherOptionEntity(bool(values["unroll_kw"]))


__all__ = ["_fallback_schedule", "workload_key"]
