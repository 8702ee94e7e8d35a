"""x86 schedules of the pooling operators.

``topi.nn.pool2d`` is a chain of one reduction stage per spatial axis
(``pool_h``, ``pool_w``) and, for averages, a division stage.  The chain is
computed per (batch, channel) plane for NCHW, per output row for NHWC::

    parallel (n.c.fused, 0, N*C)
      pool_h[oh, w]   = max_kh tap(data[..])     // vectorized along w: contiguous
      pool_w[oh, ow]  = max_kw tap(pool_h[..])   // vectorized along ow
      out[oh, ow]     = pool_w[oh, ow] / count   // (avg)

Every stage vectorizes its innermost data axis with its reduction axes
moved outside the vector loop, and unrolls a reduction axis of at most
``UNROLL_TAPS`` taps.  The computes clamp their indices and mask padded taps
arithmetically, so no vector loop falls back to scalar code at the borders;
unrolled, each tap's clamp and mask are constants of the row that LLVM
hoists (as a loop, each vector max took ~14 instructions of index arithmetic;
``benchmarks/topi_nn.py`` times the max pool against onnxruntime).

Every choice comes from a config (``tune.autotvm.config``)
(:func:`default_pool_config`): ``vec`` lanes per vector, ``small_vec`` for a
stage narrower than ``vec``, and whether the outer loop is ``parallel``.
"""

from __future__ import annotations

import te
from te import expr as E
from topi import tag as tags
from tune.autotvm.config import check_config, choose_config, register_rule
from tune.autotvm.space import ConfigEntity
from topi.generic.nn import default_schedule
from topi.config import records_target

TEMPLATE = "pool.x86"
UNROLL_TAPS = 8  # taps of a window axis unrolled (7x7 windows included)


def pool_workload(out_shape: tuple, dtype: str = "float32") -> tuple:
    """The workload key of a pooling chain with output ``out_shape``."""
    return (TEMPLATE, tuple(int(d) for d in out_shape), str(dtype))


def pool_space(workload: tuple, target) -> dict:
    return {"vec": [4, 8, 16, 32, 64], "small_vec": [2, 4, 8, 16], "parallel": [True, False]}


def pool_rule(workload: tuple, target) -> dict:
    """* ``vec``: lanes of each stage's innermost axis when its extent is at least
      ``vec``: one vector of the target (16 float32 lanes with AVX-512, 8 with
      AVX2; at most 64 for narrow integer types);
    * ``small_vec``: the split factor (capped by the extent) of a narrower axis, half a vector;
    * ``parallel``: run the fused (batch, channel/row) loop in parallel.
    """
    vec = min(target.lanes(workload[2]), 64)
    return {"vec": vec, "small_vec": min(max(vec // 2, 2), 16), "parallel": True}


register_rule(TEMPLATE, pool_space, pool_rule, doc="pool1d/2d/3d, global and adaptive pooling")


def default_pool_config(out_shape: tuple, dtype: str = "float32") -> ConfigEntity:
    """The chosen config of :func:`schedule_pool` for an output of ``out_shape``
    (:func:`pool_rule` unless a dispatch context says otherwise)."""
    return choose_config(pool_workload(out_shape, dtype))


def _chain(out_op) -> list:
    """The pooling stages feeding ``out_op`` (outermost producer first), ``out_op`` last."""
    chain = [out_op]
    op = out_op
    while True:
        nxt = [t.op for t in op.input_tensors  # not a constant (a fused epilogue's scale, zero point)
               if isinstance(t.op, te.ComputeOp) and t.op.input_tensors
               and (t.op.tag == tags.POOL or tags.is_injective(t.op.tag))]
        if len(nxt) != 1:
            return chain[::-1]
        op = nxt[0]
        chain.append(op)


def _extent(iv) -> int | None:
    ext = iv.dom.extent if iv.dom is not None else None
    return ext.value if isinstance(ext, E.IntImm) else None


def _vectorize_inner(st, cfg: ConfigEntity) -> None:
    """Split the innermost data axis by ``vec`` (``small_vec`` if narrower), move
    reductions outside, vectorize; unroll the reductions of at most ``UNROLL_TAPS`` taps."""
    data = [iv for iv in st.op.axis]
    if not data:
        return
    inner = data[-1]
    ext = _extent(inner)
    if ext is None or ext < 2:
        return
    vec = cfg["vec"].val
    factor = vec if ext >= vec else min(cfg["small_vec"].val, ext)
    io, ii = st.split(inner, factor=factor)
    st.reorder(io, *st.op.reduce_axis, ii)
    st.vectorize(ii)
    for r in st.op.reduce_axis:
        taps = _extent(r)
        if taps is not None and taps <= UNROLL_TAPS:
            st.unroll(r)


def _parallel_outer(st, parallel: bool):
    """Fuse the two outer axes (batch and channel/row), with a blocked NCHW[x]c output the
    rows too; parallelize them if asked."""
    axes = st.op.axis
    if len(axes) == 5:
        outer = st.fuse(*axes[:3])
    elif len(axes) >= 3:
        outer = st.fuse(axes[0], axes[1])
    else:
        outer = axes[0]
    if parallel:
        st.parallel(outer)
    return outer


def _schedule_chain(s, chain: list, cfg: ConfigEntity) -> None:
    out = chain[-1]
    outer = _parallel_outer(s[out], cfg["parallel"].val)
    consumer, at = out, outer
    for op in reversed(chain[:-1]):
        s[op].compute_at(s[consumer], at)
        consumer, at = op, s[op].op.axis[1] if len(op.axis) >= 3 else s[op].op.axis[0]
    for op in chain:
        _vectorize_inner(s[op], cfg)


@records_target
def schedule_pool(outs, layout: str = "NCHW", cfg: ConfigEntity | None = None):
    """Schedule ``pool2d`` / ``pool1d`` / ``global_pool`` (and epilogues) for x86.

    Parameters
    ----------
    outs : te.Tensor or list
        The pooling output (or an injective epilogue of it).
    layout : str
        Accepted for TVM compatibility; the stages carry their own shapes.
    cfg : ConfigEntity, optional
        Knobs (default :func:`default_pool_config`).

    Returns
    -------
    schedule.Schedule
    """
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    if len(outs) != 1 or len(outs[0].shape) < 2:
        return default_schedule(outs)
    out_op = outs[0].op
    chain = _chain(out_op)
    if not any(op.tag == tags.POOL for op in chain) or any(
            any(_extent(iv) is None for iv in op.axis) for op in chain):
        return default_schedule(outs)
    s = te.create_schedule([out_op])
    pool_inputs = {t.op for op in chain for t in op.input_tensors}
    for op in list(pool_inputs):
        if isinstance(op, te.ComputeOp) and op not in chain and tags.is_injective(op.tag):
            s[op].compute_inline()
    # the pooled data's type, as the graph's workload (an epilogue may quantize the output)
    data = next(op for op in chain if op.tag == tags.POOL).input_tensors[0]
    key = pool_workload(tuple(_extent(iv) for iv in out_op.axis), data.dtype)
    cfg = choose_config(key) if cfg is None else check_config(cfg, key)
    _schedule_chain(s, chain, cfg)
    return s


@records_target
def schedule_adaptive_pool(outs, cfg: ConfigEntity | None = None):
    """Schedule ``adaptive_pool``: the same chain schedule as :func:`schedule_pool`."""
    return schedule_pool(outs, cfg=cfg)


@records_target
def schedule_max_pool_with_indices(outs, cfg: ConfigEntity | None = None):
    """Schedule ``topi.nn.max_pool2d_with_indices``: its argmax stages (rows computed per
    plane inside the columns' loop) and the two output stages each run parallel over the
    (batch, channel) planes, vectorized along the row with the window loop outside the
    vector loop (the argmax stage stays at root: both outputs read it)::

        parallel (n.c.fused) {
          for (oh) { for (w.outer) { for (rh) { vectorized (w.inner) pool_argmax_h[..] = .. }}}
          for (oh) { for (ow.outer) { for (rw) { vectorized (ow.inner) pool_argmax[..] = .. }}}
        }
        parallel (n.c.fused) { ... pool_values[..] = ... }      // and pool_indices

    Parameters
    ----------
    outs : (te.Tensor, te.Tensor)
        The values and indices.
    cfg : ConfigEntity, optional
        Pooling knobs (default :func:`default_pool_config` of the output shape).
    """
    outs = list(outs)
    if len(outs) != 2 or len(outs[0].shape) != 4:
        raise ValueError(f"schedule_max_pool_with_indices: expects (values, indices) of "
                         f"max_pool2d_with_indices, got {len(outs)} tensor(s)")
    s = te.create_schedule([t.op for t in outs])
    red = next(t.op for t in outs[0].op.input_tensors if t.op.tag == tags.POOL)
    rows = next(t.op for t in red.input_tensors if t.op.tag == tags.POOL)
    key = pool_workload(tuple(_extent(iv) for iv in outs[0].op.axis), outs[0].dtype)
    cfg = choose_config(key) if cfg is None else check_config(cfg, key)
    for op in (red, outs[0].op, outs[1].op):
        outer = _parallel_outer(s[op], cfg["parallel"].val)
        if op is red:
            s[rows].compute_at(s[red], outer)
        _vectorize_inner(s[op], cfg)
    _vectorize_inner(s[rows], cfg)
    return s
