"""rewrite_layout: a tensor read by one stage, copied into the layout that stage's loops read it in.

::

    C[i, j] = sum(A[i, k] * B[k, j], k)        B.packed[j0, k, j1] = B[k, j0*16 + j1]
                                         ->    C[i, j] = sum(A[i, k] * B.packed[j // 16, k, j % 16], k)
    (lengths [[1024], [64, 16]],
     order [[1, 0], [0, 0], [1, 1]])

Each dimension ``d`` of the tensor is cut into loops of ``lengths[d]`` (outermost
first; a product above the extent pads the copy with zeros) and ``order``
lists the ``(dimension, level)`` pairs of the new layout, outermost first.
When the reader's loops are split by the same lengths, the reads simplify to
the loop variables and the innermost level is contiguous.  The copy is a
stage of its own, run on every call; ``pre_transformed`` takes it out, so the
kernel reads the packed tensor as an argument that a caller with constant
weights packs once (classic TVM's auto_scheduler layout rewrite and its
``REWRITE_FOR_PRE_TRANSFORMED``; Halide: ``f.in().reorder_storage()``).
"""

from __future__ import annotations

import math

from te import expr as E
from te.operation import compute
from te.tensor import ComputeOp, Tensor
from te.visitor import pre_order
from schedule.errors import ScheduleError
from schedule.stage import Stage

TAG = "rewrite_layout"  # the tag of the copies rewrite_layout adds


def _check(sch, tensor: Tensor, reader, lengths, order) -> tuple:
    src, dst = sch[tensor], reader if isinstance(reader, Stage) else sch[reader]
    if src not in sch.reads(dst):
        raise ScheduleError(f"rewrite_layout of '{tensor.name}': stage '{dst.name}' does not read it. "
                            f"Readers of {tensor.name}: {[s.name for s in sch.consumers(src)]}.")
    shape = [int(d) for d in tensor.shape]
    lengths = [[int(x) for x in lv] for lv in lengths]
    if len(lengths) != len(shape) or any(not lv or min(lv) < 1 or math.prod(lv) < n
                                         for lv, n in zip(lengths, shape)):
        raise ValueError(f"rewrite_layout of '{tensor.name}' (shape {shape}): lengths must give each dimension "
                         f"loops of positive lengths whose product covers it, got {lengths}")
    pairs = sorted((d, t) for d, lv in enumerate(lengths) for t in range(len(lv)))
    order = [tuple(int(x) for x in p) for p in order]
    if sorted(order) != pairs:
        raise ValueError(f"rewrite_layout of '{tensor.name}': order must list each (dimension, level) of "
                         f"{pairs} once, got {order}")
    return shape, lengths, order, dst


def _levels(idx, lv: list) -> list:
    """The loop values of index ``idx`` cut into loops of lengths ``lv``, outermost first."""
    out = []
    for t in range(len(lv)):
        inner = math.prod(lv[t + 1:])
        v = E.FloorDiv(idx, E.const(inner), "int32") if inner > 1 else idx
        out.append(E.FloorMod(v, E.const(lv[t]), "int32") if t > 0 else v)
    return out


def rewrite_layout(sch, tensor: Tensor, reader, lengths, order) -> Tensor:
    shape, lengths, order, dst = _check(sch, tensor, reader, lengths, order)
    if not isinstance(dst.op, ComputeOp):
        raise ScheduleError(f"rewrite_layout: reader '{dst.name}' is not a compute stage")
    padded = any(math.prod(lv) > n for lv, n in zip(lengths, shape))

    def packed_value(*new):
        at = dict(zip(order, new))
        orig = [sum((at[(d, t)] * math.prod(lv[t + 1:]) for t in range(len(lv))), E.const(0))
                for d, lv in enumerate(lengths)]
        value = tensor(*orig)
        if padded:
            inside = [o < n for o, n in zip(orig, shape)]
            cond = inside[0]
            for c in inside[1:]:
                cond = E.And(cond, c, "bool")
            value = E.Select(cond, value, E.const(0, tensor.dtype), tensor.dtype)
        return value

    packed = compute([lengths[d][t] for d, t in order], packed_value, name=f"{tensor.name}.packed", tag=TAG,
                     attrs={"layout": {"lengths": lengths, "order": [list(p) for p in order]}})

    def rule(x):
        if isinstance(x, E.TensorRead) and x.tensor == tensor:
            levels = [_levels(pre_order(i, rule), lv) for i, lv in zip(x.indices, lengths)]
            return E.TensorRead(packed, tuple(levels[d][t] for d, t in order), x.dtype)
        return None

    sch._swap_op(dst, _rewrite_reads(dst.op, rule))
    sch._add_stage(Stage(packed.op, sch), after=sch[tensor])
    return packed


def pre_transformed(sch, args) -> tuple:
    """``(schedule, args, packs)``: a copy of ``sch`` without the rewrite_layout copies of tensors in
    ``args``: each copy's reader reads a placeholder of the packed layout instead, which the returned
    ``args`` take in the tensor's place; ``packs`` maps each such placeholder to the packing compute
    (of the original tensor), for a caller to run once on constant weights.  A copy of a tensor
    not in ``args``, or that another stage also reads as it is, stays."""
    from te.operation import placeholder

    sch = sch.copy()
    packs, args = {}, list(args)
    for st in [st for st in sch.stages if getattr(st.op, "tag", "") == TAG]:
        (src,) = st.op.input_tensors
        if src not in args or sch.consumers(sch[src]) != [st]:
            continue
        packed = st.op.output(0)
        ph = placeholder(packed.shape, dtype=packed.dtype, name=packed.name)
        rule = lambda x: (E.TensorRead(ph, x.indices, x.dtype)
                          if isinstance(x, E.TensorRead) and x.tensor == packed else None)
        for reader in sch.consumers(st):
            sch._swap_op(reader, _rewrite_reads(reader.op, rule))
        new = Stage(ph.op, sch)
        sch.stages[sch.stages.index(st)] = new
        sch.stage_map[ph.op] = new
        del sch.stage_map[st.op]
        args[args.index(src)] = ph
        packs[ph] = packed
    return sch, args, packs


def _rewrite_reads(op: ComputeOp, rule) -> ComputeOp:
    body = []
    for b in op.body:
        if isinstance(b, E.Reduce):
            body.append(E.Reduce(b.combiner, tuple(pre_order(x, rule) for x in b.source), b.axis,
                                 pre_order(b.condition, rule), b.value_index, b.dtype))
        else:
            body.append(pre_order(b, rule))
    return ComputeOp(op.name, op.tag, dict(op.attrs), op.axis, op.reduce_axis, tuple(body))


__all__ = ["TAG", "pre_transformed", "rewrite_layout"]
