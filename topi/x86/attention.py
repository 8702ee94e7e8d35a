"""x86 schedule of ``topi.nn.attention``: one kernel, rows of scores kept in cache.

::

    parallel (b, 0, BH)                               // (i.outer, b) when BH is small: row blocks
      kt[D, Sk'] = k[b]^T                             // once per slice, in 8 x 8 blocks; at
      for (i.outer, 0, Sq/rb)                         // root, parallel, when row blocks are tasks
        ql[rb, D] = q[b, i.outer*rb : +rb, :]         // the block's rows, contiguous
        dot[rb, Sk'] = sum_d ql[i, d] * kt[d, :]      // rb x n vector accumulators share kt's loads
        cap[rb, Sk'] = c * tanh(dot * scale / c)      // vectorized, only with softcap = c > 0
        rmax[rb]    = max_j dot * scale + mask        // vec lanes of partial maxima, then folded
        p[rb, Sk']  = exp(dot * scale + mask - rmax)
        psum[rb]    = sum_j p                         // vec lanes of partial sums, then folded
        acc[rb, Dv] = sum_j p[:, j] * v[b, j, :]      // rb x Dv/vec accumulators share v's loads
        for (i.inner, 0, rb)
          vectorized: out[b, i, :] = acc / psum         // or out[b / H, i, b % H, :] (heads merged)

``Sk'`` is the key count padded to the vector chunk (``topi.nn.attention.padded_keys``),
so no score loop has a tail; the row loop of a Sq that ``rb`` does not divide is cut into
full blocks (unrolled register tiles) and one partial block.

Only ``kt`` (D x Sk'), the block's rows of ``q`` and of scores are ever materialised;
``q``, ``k``, ``v`` are read where they lie, through any injective producers fused into
the kernel (head reshapes and transposes of a QKV projection are inlined reads).  ``q``'s
rows are copied once per block (``ql``, with a head size of ``Q_COPY_MIN_D`` or more): the
score tile's broadcasts then read fixed offsets of one buffer, where the inlined head
transpose left an index computation and a sign extension per row in the innermost loop
(BERT-base's 12 x 128 x 64 slices: 0.95-1.0x the time; MobileViT's head size 24 did not gain).

Knobs (template ``attention.x86``): ``rb`` rows per register tile, ``tiles`` register
tiles per row block (the rows ``dot`` and ``acc`` compute per pass over a chunk of ``kt``
or ``v``: ``rb * tiles`` share each chunk while it is in L1), ``vec`` lanes of the key and
head-size loops, ``fuse_rows`` whether row blocks are parallel tasks too (when BH alone
gives too few tasks).
"""

from __future__ import annotations

import te
from topi import tag as tags
from tune.autotvm.config import check_config, choose_config, register_rule
from tune.autotvm.space import ConfigEntity
from topi.generic.nn import default_schedule
from topi.utils import get_const_int
from topi.config import gemm_tile, records_target
from topi.nn.attention import padded_keys

TEMPLATE = "attention.x86"


def attention_space(workload: tuple, target) -> dict:
    return {"rb": [1, 2, 4, 6, 8], "vec": [4, 8, 16, 32, 64], "fuse_rows": [False, True], "tiles": [1, 2, 4]}


# A slice's K^T (D x Sk' floats) beyond this many bytes does not stay in L1 across a row block's
# pass over it: four register tiles per block then read each chunk of kt and v once for 4 x rb
# rows (ViT-B's 12 x 197 x 64 slices, kt 53 KB: 0.92x the time; BERT-base's 128 keys, kt 32 KB:
# no gain, one tile kept).
KT_L1_BYTES = 32 * 1024
Q_COPY_MIN_D = 32  # head sizes from which q's rows are copied once per row block (module docstring)


def attention_rule(workload: tuple, target) -> dict:
    """``vec``: one vector of the target; ``rb``: the rows of a GEMM register tile
    (:func:`topi.config.gemm_tile`: 6 with AVX2, a 6 x 2-vector accumulator tile sharing each
    load of ``kt`` and ``v``; 4 with AVX-512) whatever Sq divides (the row loop is cut into full
    blocks and one partial block), fewer for a short Sq, and one that divides Sq where Dv is
    not whole vectors (the output's vector tail keeps a partial row block from being cut off:
    MobileViT's 16 x 64 x 30 slices ran at 0.6x the speed with 6 rows); row blocks become the
    parallel tasks when fewer than 4 slices (BH) are there to share between the threads.
    ``tiles``: 4 register tiles per row block where a slice's K^T passes ``KT_L1_BYTES`` and
    Sq holds four tiles, else 1."""
    bh, sq, sk, d, dv = workload[1:6]
    mr, lanes = gemm_tile(target)[1], target.lanes(workload[6])
    rows = [r for r in (mr, 4, 2, 1) if sq >= r]
    rb = next(r for r in rows if sq % r == 0) if dv % lanes else rows[0]
    kt_bytes = d * padded_keys(sk, lanes) * 4
    tiles = 4 if kt_bytes > KT_L1_BYTES and sq >= 4 * rb and dv % lanes == 0 else 1
    return {"rb": rb, "vec": lanes, "fuse_rows": bh < 4, "tiles": tiles}


register_rule(
    TEMPLATE,
    attention_space,
    attention_rule,
    doc="scaled dot-product attention (q, k, v, mask) in one kernel",
    legacy={"tiles": 1},  # records before the knob ran one register tile per row block
)


def default_attention_config(bh: int, sq: int, sk: int, d: int, dv: int,
                             dtype: str = "float32") -> ConfigEntity:
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


KT_BLOCK = 8  # K^T is copied in KT_BLOCK x KT_BLOCK blocks (_transpose_blocks)


def _transpose_blocks(st, kt) -> None:
    """K^T's copy in square blocks: a block's 8 vectors of kt gather from the same 8 rows of k
    (8 consecutive elements of each, one cache line), where ``for (c) vectorized (j)`` walked
    all Sk' rows of k (a head's row apart) for every c::

        for (j.outer) for (c.outer) unrolled (c.inner, 0, 8) vectorized (j.inner, 0, 8)
          kt[c, j] = k[j, c]

    T5-small's 8 x 128 x 64 kernel 0.81x the time, BERT-base's and GPT-2's 0.93x."""
    _, c, j = kt.axis
    if get_const_int(c.dom.extent) % KT_BLOCK or get_const_int(j.dom.extent) % KT_BLOCK:
        return
    co, ci = st.split(c, factor=KT_BLOCK)
    jo, ji = st.split(j, factor=KT_BLOCK)
    st.reorder(jo, co, ci, ji)
    st.unroll(ci)
    st.vectorize(ji)


def _vec(st, axis, vec: int, extent: int) -> None:
    if extent >= vec:
        _, inner = st.split(axis, factor=vec)
        st.vectorize(inner)


def _lane_reduce(s, op, vec: int, extent: int, block, o) -> None:
    """A row reduction over the keys (max, sum) as ``vec`` lanes of partial results, folded
    once per row: the lanes are a data axis of a factored stage (``rfactor``), vectorized::

        rf[i, :] = init; for (j.outer) rf[i, :] = max(rf[i, :], score[i, j.outer*vec : +vec])
        rmax[i] = max over the lanes of rf[i, :]
    """
    if extent < vec or extent % vec:
        return
    t = op.output(0)
    (r,) = s[op].op.reduce_axis
    _, ri = s[op].split(r, factor=vec)
    rf = s.rfactor(t, ri, factor_axis=len(op.axis))
    s[rf].compute_at(o, block)
    *rows, lane = s[rf].op.axis
    (ro,) = s[rf].op.reduce_axis
    s[rf].reorder(*rows, ro, lane)
    s[rf].vectorize(lane)


def _register_tile(st, red, axis, vec: int, extent: int, rows: int, tiles: int = 1) -> None:
    """``rows x chunk`` accumulators over ``red``: the tile's rows share each load of the
    right-hand side (a row of ``kt`` or ``v``), the block's ``tiles`` tiles each chunk::

        for (axis.o) for (i.t, 0, tiles) for (red)
          unrolled (i, 0, rb) unrolled (axis.m, 0, n) vectorized (axis.v, 0, vec)

    ``n`` vectors per row, at most a GEMM tile's accumulators (:func:`topi.config.gemm_tile`)
    over the block's rows: 12 with AVX2's 16 registers (6 rows x 2 vectors: ViT-small's
    6 x 197 x 64 slices 0.9x the time of 4 x 2; 16 spilled, BERT-base's 12 x 128 x 64 ran at
    0.57x the speed), 16 with 32 registers.
    """
    i = st.op.axis[1]  # rb * tiles rows at the block's attach point
    if extent < vec or extent % vec:
        st.reorder(red, i, axis)
        st.unroll(i)
        return
    vectors, mr, _ = gemm_tile()
    per_row = max(1, vectors * mr // rows)
    n = max(k for k in range(1, per_row + 1) if (extent // vec) % k == 0)
    ao, ai = st.split(axis, factor=vec * n)
    am, av = st.split(ai, factor=vec)
    if tiles > 1:
        it, i = st.split(i, factor=rows)
        st.reorder(ao, it, red, i, am, av)
    else:
        st.reorder(ao, red, i, am, av)
    st.unroll(i)
    st.unroll(am)
    st.vectorize(av)


@records_target
def schedule_attention(outs, cfg: ConfigEntity | None = None):
    """Schedule ``topi.nn.attention`` (see the module docstring).

    Parameters
    ----------
    outs : te.Tensor or list
        The attention output.
    cfg : ConfigEntity, optional
        Knobs of :func:`default_attention_config` (default: the config stored on
        the output stage, else the chosen one).
    """
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    out = outs[0]
    if len(outs) != 1 or out.op.tag != "attention":
        return default_schedule(outs)
    key = out.op.attrs["workload"]
    cfg = cfg or out.op.attrs.get("config")
    cfg = choose_config(key) if cfg is None else check_config(cfg, key)
    st = _stages(out.op)
    s = te.create_schedule([out.op])
    _inline_producers(s, st)
    s[st["attention_score"]].compute_inline()
    o = s[out]
    if out.op.attrs.get("heads"):  # [B, Sq, H, Dv]: slice b*H + h
        bo, i, h, e = o.op.axis
        o.reorder(bo, h, i, e)
        b = o.fuse(bo, h)
    else:
        b, i, e = o.op.axis
    rb, tiles = cfg["rb"].val, cfg["tiles"].val
    io, ii = o.split(i, factor=rb * tiles)
    if cfg["fuse_rows"].val:  # row blocks are the tasks, slices inside: the last (partial) block is a
        o.reorder(io, b, ii, e)  # loop of its own, the others keep the full register tile
        task, block = io, b
    else:
        o.reorder(b, io, ii, e)
        task, block = b, io
    o.parallel(task)
    dv, sk = get_const_int(e.dom.extent), get_const_int(st["attention_kt"].axis[2].dom.extent)
    _vec(o, e, cfg["vec"].val, dv)
    for tag in ("attention_kt", "attention_vp"):  # layout copies of k and v
        if tag not in st:
            continue
        copy = s[st[tag]]
        if cfg["fuse_rows"].val:  # tasks are row blocks: once per call, the slices in parallel
            copy.parallel(st[tag].axis[0])
        else:
            copy.compute_at(o, task)
        if tag == "attention_kt":
            _transpose_blocks(copy, st[tag])
    for tag in ("attention_dot", "attention_max", "attention_exp", "attention_sum", "attention_acc"):
        s[st[tag]].compute_at(o, block)
    if get_const_int(st["attention_dot"].reduce_axis[0].dom.extent) >= Q_COPY_MIN_D:
        kt = st["attention_kt"].output(0)
        (q,) = [t for t in st["attention_dot"].input_tensors if t != kt]
        s[s.cache_read(q, "local", [st["attention_dot"]])].compute_at(o, block)
    dot = s[st["attention_dot"]]
    _, _, j = dot.op.axis
    (rd,) = dot.op.reduce_axis
    _register_tile(dot, rd, j, cfg["vec"].val, sk, rb, tiles)
    if "attention_cap" in st:  # softcap: tanh once per score, vectorized, read by max and exp
        cap = s[st["attention_cap"]]
        cap.compute_at(o, block)
        _vec(cap, st["attention_cap"].axis[2], cfg["vec"].val, sk)
    _vec(s[st["attention_exp"]], st["attention_exp"].axis[2], cfg["vec"].val, sk)
    for tag in ("attention_max", "attention_sum"):
        _lane_reduce(s, st[tag], cfg["vec"].val, sk, block, o)
    acc = s[st["attention_acc"]]
    _, _, ea = acc.op.axis
    (ra,) = acc.op.reduce_axis
    _register_tile(acc, ra, ea, cfg["vec"].val, get_const_int(ea.dom.extent), rb, tiles)
    return s
