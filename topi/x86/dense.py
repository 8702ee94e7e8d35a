"""x86 schedules of ``dense`` / ``matmul``: a register-blocked dot-product kernel.

``dense`` reads both operands along ``K`` (``data[i, k] * weight[j, k]``), so
the kernel vectorizes the reduction itself: ``k`` is split by ``vk`` lanes
and factored out (``rfactor``) into a partial-sum stage whose ``vk`` lanes
are a data axis.  Each ``mr x nr`` tile of the output keeps ``mr*nr`` vector
accumulators in registers while streaming ``mr`` rows of data and ``nr``
rows of weight; the lanes are summed once per tile in the copy-out, where
the bias add and a following activation are fused::

    parallel (j.outer, 0, N/nb)                 // nb weight rows stay in L2
      for (i.outer, 0, M/mr)
        for (j.inner.outer, 0, nb/nr)
          C.rf[mr, nr, vk] = 0                  // registers
          for (k.outer, 0, K/vk)
            unrolled (i, j): C.rf[i, j, :] += data[i, k.outer*vk:+vk] * weight[j, ...]
          out[tile] = relu(sum(C.rf[i, j, :]) + bias[j])

For ``M = 1`` (GEMV, bound by the weight stream) the tile is ``1 x nr`` with
wide ``vk`` so that several independent accumulators hide the FMA latency.
"""

from __future__ import annotations

import te
from te import expr as E
from topi import tag as tags
from topi.config import Config
from topi.generic.nn import default_schedule
from topi.utils import get_const_int, traverse_inline


def default_dense_config(M: int, N: int, K: int) -> Config:
    """Knobs of :func:`schedule_dense` for an ``[M, K] x [N, K]`` product.

    ``vk``: reduction lanes (a divisor of ``K`` when one of 64..8 is);
    ``mr``, ``nr``: the register tile; ``nb``: weight rows per parallel task.
    """
    if M <= 2:
        vk = next((v for v in (64, 32, 16, 8) if K % v == 0), 8)
        values = {"vk": vk, "mr": 1, "nr": 2 if vk == 64 else 4, "nb": 8}
    else:
        values = {"vk": 8, "mr": 4, "nr": 3, "nb": 48}
    space = {"vk": [8, 16, 32, 64], "mr": [1, 2, 3, 4, 6], "nr": [1, 2, 3, 4, 6], "nb": [8, 16, 24, 48, 96]}
    return Config("dense", values, space)


def _find_anchor(s, out_op, tag: str):
    found = []

    def visit(op):
        if op.tag == tag and op.reduce_axis:
            found.append(op)

    traverse_inline(s, out_op, visit)
    return found[0] if found else None


def _tile_output(s, out, cfg: Config):
    """Tile ``out``'s two innermost axes; returns the axis the kernel attaches at."""
    st = s[out]
    *batch, i, j = st.op.axis
    jo, ji = st.split(j, factor=cfg["nb"])
    jio, jii = st.split(ji, factor=cfg["nr"])
    io, ii = st.split(i, factor=cfg["mr"])
    st.reorder(*batch, jo, io, jio, ii, jii)
    st.parallel(st.fuse(*batch, jo) if batch else jo)
    return jio


def _schedule_kernel(s, rf, cfg: Config) -> None:
    """Registers for the ``C.rf`` tile: reduction outermost, tile unrolled, lanes vectorized."""
    st = s[rf]
    *tile, lanes = st.op.axis
    (ko,) = st.op.reduce_axis
    st.reorder(ko, *tile, lanes)
    for ax in tile:
        st.unroll(ax)
    st.vectorize(lanes)


def schedule_dense_op(s, op, out_op, cfg: Config | None = None) -> None:
    """Schedule the dense ``op`` (tag ``dense``) inside schedule ``s`` whose output is ``out_op``."""
    C = _tensor(op)
    M, N = (get_const_int(iv.dom.extent) for iv in op.axis[-2:])
    K = get_const_int(op.reduce_axis[0].dom.extent)
    cfg = cfg or default_dense_config(M, N, K)
    out = _tensor(out_op)
    _, ki = s[C].split(s[C].op.reduce_axis[0], factor=cfg["vk"])
    rf = s.rfactor(C, ki, factor_axis=len(op.axis))
    jio = _tile_output(s, out, cfg)
    if out_op is op:
        s[rf].compute_at(s[C], jio)
    else:
        s[C].compute_at(s[out], jio)
        i_c = s[C].op.axis[-2]
        io_c, _ = s[C].split(i_c, factor=cfg["mr"])
        s[rf].compute_at(s[C], io_c)
    _schedule_kernel(s, rf, cfg)


def _tensor(op):
    from te.tensor import Tensor

    return Tensor(op, 0)


def _schedule(outs, cfg: Config | None, tag: str):
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    if len(outs) > 1:
        return default_schedule(outs)
    out_op = outs[0].op
    s = te.create_schedule([out_op])
    anchor = _find_anchor(s, out_op, tag)
    if anchor is None or len(out_op.axis) < 2 or not _static(anchor):
        return default_schedule(outs)
    schedule_dense_op(s, anchor, out_op, cfg)
    return s


def _static(op) -> bool:
    return all(isinstance(iv.dom.extent, E.IntImm) for iv in list(op.axis) + list(op.reduce_axis))


def schedule_dense(outs, cfg: Config | None = None):
    """Schedule ``topi.nn.dense`` (and its bias add / activation epilogue) for x86.

    Parameters
    ----------
    outs : te.Tensor or list
        The output of ``dense`` or of an injective epilogue applied to it.
    cfg : Config, optional
        Knobs (default :func:`default_dense_config`).

    Returns
    -------
    schedule.Schedule
    """
    return _schedule(outs, cfg, tags.DENSE)


def schedule_matmul(outs, cfg: Config | None = None):
    """Schedule ``topi.nn.matmul``: the same kernel as :func:`schedule_dense`.

    The kernel streams both operands along ``K``; with ``transpose_b=False``
    (or ``transpose_a``) the reads are strided and only the blocking helps.
    """
    return _schedule(outs, cfg, tags.DENSE)
