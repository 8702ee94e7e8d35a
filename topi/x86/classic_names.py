"""Classic ``topi.x86`` names for the CPU computes and schedules Tessera keeps under other names.

TVM's x86 module named each implementation its strategy chose; the same kernels live here as:

* ``dense_nopack`` / ``schedule_dense_nopack``: ``topi.nn.dense`` with :func:`topi.x86.dense.schedule_dense`
  (row-tiled, no weight packing);
* ``dense_dynamic`` / ``schedule_dense_dynamic``: the same pair, which also handles a symbolic batch;
* ``schedule_group_conv1d_ncw`` / ``_nwc``: the generic schedule (rows parallel), as TVM's x86 did;
* ``conv2d_NCHWc``: ``topi.nn.conv2d_NCHWc``, the compute :func:`topi.x86.schedule_conv2d_NCHWc` tiles.
"""

from __future__ import annotations

from topi.nn.conv2d import conv2d_NCHWc
from topi.nn.dense import dense
from topi.generic.nn import schedule_group_conv1d_ncw, schedule_group_conv1d_nwc
from topi.x86.dense import schedule_dense


def dense_nopack(data, weight, bias=None, out_dtype=None):
    """``data @ weight.T (+ bias)``, unpacked weight (classic ``topi.x86.dense_nopack``)."""
    return dense(data, weight, bias, out_dtype)


schedule_dense_nopack = schedule_dense
dense_dynamic = dense_nopack
schedule_dense_dynamic = schedule_dense

__all__ = ["conv2d_NCHWc", "dense_dynamic", "dense_nopack", "schedule_dense_dynamic", "schedule_dense_nopack",
           "schedule_group_conv1d_ncw", "schedule_group_conv1d_nwc"]
