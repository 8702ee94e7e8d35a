"""Fallback schedules of the neural-network operators: correct for any compute.

Every schedule here does the same two things, whatever the operator:

* inline every injective intermediate stage (pads, bias adds, activations,
  elementwise tails) into its consumers, as classic TVM's ``traverse_inline``;
* run every remaining stage at root with its outermost data axis parallel
  (the two outermost fused when the first is short, e.g. a batch of 1).

They are the schedules of last resort (new operators, odd layouts, shapes a
tuned x86 schedule does not handle); ``topi.x86`` has the fast ones.
"""

from __future__ import annotations

import te
from te import expr as E
from topi import tag as tags

_MIN_PARALLEL = 8  # fuse the two outer axes when the outermost is shorter


def _as_list(outs) -> list:
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


def _all_ops(outputs: list) -> list:
    """Every compute op reachable from ``outputs``, consumers first."""
    order, seen, todo = [], set(), list(outputs)
    while todo:
        op = todo.pop()
        if id(op) in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(id(op))
        order.append(op)
        todo.extend(t.op for t in op.input_tensors)
    return order


def _extent(iv) -> int | None:
    ext = iv.dom.extent if iv.dom is not None else None
    return ext.value if isinstance(ext, E.IntImm) else None


def parallel_outer(s, op) -> None:
    """Parallelize the outermost data axis of ``s[op]`` (fusing two short ones)."""
    st = s[op]
    data = [iv for iv in st.leaf_iter_vars if iv.iter_type != E.COMM_REDUCE]
    if not data or st.leaf_iter_vars[0] is not data[0]:
        return
    outer = data[0]
    first = _extent(outer)
    if len(data) > 1 and st.leaf_iter_vars[1] is data[1] and first is not None and first < _MIN_PARALLEL:
        outer = st.fuse(data[0], data[1])
    if _extent(outer) != 1:
        st.parallel(outer)


def inline_then(outs, per_stage):
    """A schedule of ``outs`` with injective intermediates inlined and ``per_stage(s, op)``
    applied to every stage left at the root."""
    outputs = [t.op for t in _as_list(outs)]
    s = te.create_schedule(outputs)
    ops = _all_ops(outputs)
    for op in ops:
        if op not in outputs and tags.is_injective(op.tag) and not op.reduce_axis:
            s[op].compute_inline()
    for op in ops:
        if s[op].attach_type == "root":
            per_stage(s, op)
    return s


def default_schedule(outs):
    """Inline injective intermediates, parallelize the outer axis of every other stage.

    Parameters
    ----------
    outs : te.Tensor or list of te.Tensor
        The outputs of the operator (its epilogues included).

    Returns
    -------
    schedule.Schedule
    """
    return inline_then(outs, parallel_outer)


def _fallback(name: str, what: str):
    def schedule(outs):
        return default_schedule(outs)

    schedule.__name__ = name
    schedule.__qualname__ = name
    schedule.__doc__ = (
        f"Generic schedule of {what}: :func:`default_schedule` (inline injective stages such as "
        f"pads and epilogues, parallel outer axis). Correct for any compute of the operator."
    )
    return schedule


schedule_conv2d_nchw = _fallback("schedule_conv2d_nchw", "conv2d (NCHW)")
schedule_conv2d_nhwc = _fallback("schedule_conv2d_nhwc", "conv2d (NHWC)")
schedule_conv2d_NCHWc = _fallback("schedule_conv2d_NCHWc", "conv2d (NCHWc)")
schedule_depthwise_conv2d_nchw = _fallback("schedule_depthwise_conv2d_nchw", "depthwise conv2d (NCHW)")
schedule_depthwise_conv2d_nhwc = _fallback("schedule_depthwise_conv2d_nhwc", "depthwise conv2d (NHWC)")
schedule_conv2d_transpose_nchw = _fallback("schedule_conv2d_transpose_nchw", "conv2d_transpose (NCHW)")
schedule_conv1d_ncw = _fallback("schedule_conv1d_ncw", "conv1d (NCW)")
schedule_dense = _fallback("schedule_dense", "dense / matmul")
schedule_batch_matmul = _fallback("schedule_batch_matmul", "batch_matmul")
schedule_pool_grad = _fallback("schedule_pool_grad", "pool_grad")


def schedule_pool(outs, layout: str = "NCHW"):  # noqa: ARG001  (the stages carry their shapes)
    """Generic schedule of pool1d/2d/3d and global_pool (``layout`` as classic TVM's, unused):
    :func:`default_schedule`."""
    return default_schedule(outs)


schedule_adaptive_pool = _fallback("schedule_adaptive_pool", "adaptive_pool")
schedule_softmax = _fallback("schedule_softmax", "softmax / log_softmax")
schedule_lrn = _fallback("schedule_lrn", "lrn")
schedule_extern = _fallback("schedule_extern", "extern and whole-tensor operators (dft, unique)")
schedule_unique = _fallback("schedule_unique", "unique")
schedule_sort = _fallback("schedule_sort", "sort")
schedule_argsort = _fallback("schedule_argsort", "argsort")
schedule_topk = _fallback("schedule_topk", "topk")
schedule_argwhere = _fallback("schedule_argwhere", "argwhere")
schedule_batch_norm = _fallback("schedule_batch_norm", "batch_norm")
schedule_conv1d_nwc = _fallback("schedule_conv1d_nwc", "conv1d (NWC)")
schedule_group_conv1d_ncw = _fallback("schedule_group_conv1d_ncw", "grouped conv1d (NCW)")
schedule_group_conv1d_nwc = _fallback("schedule_group_conv1d_nwc", "grouped conv1d (NWC)")
schedule_group_conv2d_nchw = _fallback("schedule_group_conv2d_nchw", "grouped conv2d (NCHW)")
schedule_group_conv2d_nhwc = _fallback("schedule_group_conv2d_nhwc", "grouped conv2d (NHWC)")
schedule_sparse_dense = _fallback("schedule_sparse_dense", "sparse_dense and topi.sparse products (CSR, BSR)")
schedule_sparse_conv2d = _fallback("schedule_sparse_conv2d", "sparse_conv2d")
schedule_sparse_transpose = _fallback("schedule_sparse_transpose", "sparse_transpose (a hybrid script)")


def schedule_lstm(outs):
    """Schedule of ``topi.nn.lstm``: the stages of the recurrence step run inside its scan, one
    time step after another; the input projection of all steps (the stages that read no state)
    runs before it, parallel over its outer axes."""
    s = te.create_schedule([t.op for t in _as_list(outs)])
    for st in s.stages:
        if st.attach_type == "root" and isinstance(st.op, te.ComputeOp) and st.op.reduce_axis:
            parallel_outer(s, st.op)
    return s

__all__ = [
    "default_schedule",
    "schedule_sparse_conv2d",
    "schedule_sparse_dense",
    "schedule_sparse_transpose",
    "parallel_outer",
    "schedule_adaptive_pool",
    "schedule_batch_matmul",
    "schedule_conv1d_ncw",
    "schedule_conv2d_NCHWc",
    "schedule_conv2d_nchw",
    "schedule_conv2d_nhwc",
    "schedule_conv2d_transpose_nchw",
    "schedule_dense",
    "schedule_extern",
    "schedule_depthwise_conv2d_nchw",
    "schedule_depthwise_conv2d_nhwc",
    "schedule_lrn",
    "schedule_lstm",
    "schedule_pool",
    "schedule_pool_grad",
    "schedule_softmax",
    "schedule_unique",
    "schedule_sort",
    "schedule_argsort",
    "schedule_topk",
    "schedule_argwhere",
    "schedule_batch_norm",
    "schedule_conv1d_nwc",
    "schedule_group_conv1d_ncw",
    "schedule_group_conv1d_nwc",
    "schedule_group_conv2d_nchw",
    "schedule_group_conv2d_nhwc",
]
