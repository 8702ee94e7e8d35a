"""x86 schedule of ``topi.nn.attention``: one kernel, rows of scores kept in cache.

::

    parallel (b, 0, BH)                               // or (b, i.outer) fused when BH is small
      kt[D, Sk] = k[b]^T                              // once per slice (a strided read of k)
      for (i.outer, 0, Sq/rb)
        for (i.inner, 0, rb)
          dot[Sk]   = sum_d q[b, i, d] * kt[d, :]     // vectorized over keys
          rmax      = max_j dot[j] * scale + mask[i, j]
          p[Sk]     = exp(dot * scale + mask - rmax)
          psum      = sum_j p[j]
          acc[Dv]   = sum_j p[j] * v[b, j, :]         // vectorized over the head size
          vectorized: out[b, i, :] = acc / psum

Only ``kt`` (D x Sk) and one row of scores are ever materialised; ``q``, ``k``,
``v`` are read where they lie, through any injective producers fused into the
kernel (head reshapes and transposes of a QKV projection are inlined reads).

Knobs (template ``attention.x86``): ``rb`` rows per inner block, ``vec`` lanes
of the key and head-size loops, ``fuse_rows`` whether row blocks are parallel
tasks too (when BH alone gives too few tasks).
"""

from __future__ import annotations

import te
from topi import tag as tags
from topi.config import Config, choose_config, register_template
from topi.generic.nn import default_schedule
from topi.utils import get_const_int

TEMPLATE = "attention.x86"


def attention_space(workload: tuple, target) -> dict:
    return {"rb": [1, 2, 4, 8, 16, 32], "vec": [4, 8, 16, 32, 64], "fuse_rows": [False, True]}


def attention_rule(workload: tuple, target) -> dict:
    """``vec``: one vector of the target; ``rb`` 8; row blocks become parallel tasks too
    when fewer than 4 slices (BH) are there to share between the threads."""
    bh, sq = workload[1], workload[2]
    rb = 8 if sq % 8 == 0 else 1
    return {"rb": rb, "vec": target.lanes(workload[6]), "fuse_rows": bh < 4}


def attention_constraint(workload: tuple, values: dict) -> str | None:
    if workload[2] % values["rb"]:
        return f"rb={values['rb']} must divide Sq={workload[2]}"
    return None


register_template(TEMPLATE, attention_space, attention_rule, attention_constraint,
                  doc="scaled dot-product attention (q, k, v, mask) in one kernel")


def default_attention_config(bh: int, sq: int, sk: int, d: int, dv: int, dtype: str = "float32") -> Config:
    from topi.nn.attention import attention_workload

    return choose_config(attention_workload(bh, sq, sk, d, dv, dtype))


def _stages(out_op) -> dict:
    """tag -> op of the attention stages under ``out_op``."""
    found, todo, seen = {}, [out_op], set()
    while todo:
        op = todo.pop()
        if id(op) in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(id(op))
        if op.tag.startswith("attention"):
            found[op.tag] = op
            todo.extend(t.op for t in op.input_tensors)
    return found


def _inline_producers(s, stages: dict) -> None:
    """Inline the injective stages feeding q, k, v and the mask (a fused group's head reshapes)."""
    ours = {id(op) for op in stages.values()}
    seen: set = set()
    todo = [t.op for op in stages.values() for t in op.input_tensors if id(t.op) not in ours]
    while todo:
        op = todo.pop()
        if id(op) in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(id(op))
        if tags.is_injective(op.tag) and not op.reduce_axis:
            s[op].compute_inline()
        todo.extend(t.op for t in op.input_tensors)


def _vec(st, axis, vec: int, extent: int) -> None:
    if extent >= vec:
        _, inner = st.split(axis, factor=vec)
        st.vectorize(inner)


# Vector accumulators of one row kept in registers across the reduction.
MAX_ROW_VECTORS = 8


def _register_tile(st, red, axis, vec: int, extent: int) -> None:
    """``for (red) for (axis)`` with ``axis`` in chunks of at most MAX_ROW_VECTORS vectors
    (unrolled, so the accumulators stay in registers)::

        for (axis.o, 0, extent/(vec*n)) for (red) unrolled (axis.m, 0, n) vectorized (axis.v, 0, vec)
    """
    if extent < vec:
        st.reorder(red, axis)
        return
    n = max(k for k in range(1, MAX_ROW_VECTORS + 1) if (extent // vec) % k == 0) if extent % vec == 0 else 1
    ao, ai = st.split(axis, factor=vec * n)
    am, av = st.split(ai, factor=vec)
    st.reorder(ao, red, am, av)
    st.unroll(am)
    st.vectorize(av)


def schedule_attention(outs, cfg: Config | None = None):
    """Schedule ``topi.nn.attention`` (see the module docstring).

    Parameters
    ----------
    outs : te.Tensor or list
        The attention output.
    cfg : Config, optional
        Knobs of :func:`default_attention_config` (default: the config stored on
        the output stage, else the chosen one).
    """
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    out = outs[0]
    if len(outs) != 1 or out.op.tag != "attention":
        return default_schedule(outs)
    key = out.op.attrs["workload"]
    cfg = cfg or out.op.attrs.get("config")
    cfg = choose_config(key) if cfg is None else cfg.check(key)
    st = _stages(out.op)
    s = te.create_schedule([out.op])
    _inline_producers(s, st)
    s[st["attention_score"]].compute_inline()
    o = s[out]
    b, i, e = o.op.axis
    io, ii = o.split(i, factor=cfg["rb"])
    o.reorder(b, io, ii, e)
    if cfg["fuse_rows"]:
        task = o.fuse(b, io)
        o.parallel(task)
    else:
        task = b
        o.parallel(b)
    dv, sk = get_const_int(e.dom.extent), get_const_int(st["attention_kt"].axis[2].dom.extent)
    _vec(o, e, cfg["vec"], dv)
    s[st["attention_kt"]].compute_at(o, task)
    for tag in ("attention_dot", "attention_max", "attention_exp", "attention_sum", "attention_acc"):
        s[st[tag]].compute_at(o, ii)
    dot = s[st["attention_dot"]]
    _, _, j = dot.op.axis
    (rd,) = dot.op.reduce_axis
    _register_tile(dot, rd, j, cfg["vec"], sk)
    _vec(s[st["attention_exp"]], st["attention_exp"].axis[2], cfg["vec"], sk)
    acc = s[st["attention_acc"]]
    _, _, ea = acc.op.axis
    (ra,) = acc.op.reduce_axis
    _register_tile(acc, ra, ea, cfg["vec"], dv)
    return s
