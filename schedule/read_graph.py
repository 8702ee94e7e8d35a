"""The dataflow graph of operations, as classic TVM's ``te.schedule`` graph utilities.

``create_read_graph(roots)`` maps each operation reachable from ``roots`` to the
tensors it reads; ``post_dfs_order`` lists those operations producers first.  For a
``te.scan``, ``scan_get_body`` lists the operations of one step (between the state
placeholders and the updates) and ``scan_fix_point_analysis`` tells, per spatial
axis of the scan, whether step ``t`` at index ``i`` of that axis reads the state at
``t - 1`` only at the same index ``i`` (then the axis can be split across threads or
computed in tiles without crossing the recurrence)::

    update[t, i, j] = x[t, j, i] + state[t - 1, i, j]    ->  {i: 1, j: 1}  (same index)
    update[t, i, j] = x[t, j, i] + state[t - 1, j, i]    ->  {i: 0, j: 0}  (transposed)

Bounds inference does not need these; they are the analysis classic TVM exposed.
"""

from __future__ import annotations

from te import expr as E
from te.scan import ScanOp
from te.tensor import ComputeOp, Operation
from te.visitor import walk


def create_read_graph(roots) -> dict:
    """``{op: [tensors it reads]}`` for every operation that ``roots`` (operations) depend on."""
    graph: dict = {}
    todo = [r.op if hasattr(r, "value_index") else r for r in _as_list(roots)]
    while todo:
        op = todo.pop()
        if op in graph:
            continue
        graph[op] = list(op.input_tensors)
        todo.extend(t.op for t in graph[op])
    return graph


def post_dfs_order(roots, graph: dict | None = None) -> list:
    """The operations of ``graph`` (default: ``create_read_graph(roots)``), each after what it reads."""
    roots = [r.op if hasattr(r, "value_index") else r for r in _as_list(roots)]
    graph = create_read_graph(roots) if graph is None else graph
    order: list = []
    seen: set = set()

    def visit(op: Operation) -> None:
        if id(op) in seen:
            return
        seen.add(id(op))
        for t in graph.get(op, ()):
            visit(t.op)
        order.append(op)

    for op in roots:
        visit(op)
    return order


def scan_get_body(scan: ScanOp) -> list:
    """The operations of one step of ``scan``: those between its state placeholders (and declared
    inputs) and its updates, producers first."""
    from schedule.opaque_ops import scan_body_ops

    return scan_body_ops(_scan(scan))


def scan_fix_point_analysis(scan: ScanOp) -> dict:
    """``{spatial axis: IntImm(1 | 0)}``: 1 where every read of the state along the step's
    dataflow keeps that axis's index in the same dimension (an exact fix point), else 0."""
    scan = _scan(scan)
    reach: dict = {}  # (tensor key, dimension) -> the spatial axis whose index it carries
    failed: set = set()
    axes = iter(scan.spatial_axis_)
    for state in scan.state_placeholder:
        for d in range(1, len(state.shape)):
            reach[(_key(state), d)] = next(axes)

    def merge(dst, src) -> None:
        if src not in reach:
            return
        if dst not in reach:
            reach[dst] = reach[src]
        elif reach[dst] is not reach[src]:
            failed.update((id(reach[dst]), id(reach[src])))

    for op in scan_get_body(scan):
        if not isinstance(op, ComputeOp):
            for t in op.input_tensors:  # an opaque stage: its reads pin nothing exactly
                failed.update(id(reach[(_key(t), d)]) for d in range(len(t.shape)) if (_key(t), d) in reach)
            continue
        dim_of = {iv.var: d for d, iv in enumerate(op.axis)}

        def visit(x, op=op, dim_of=dim_of):
            if not isinstance(x, E.TensorRead):
                return
            for d, index in enumerate(x.indices):
                src = (_key(x.tensor), d)
                if isinstance(index, E.Var) and index in dim_of:
                    for k in range(op.num_outputs):
                        merge((_key(op.output(k)), dim_of[index]), src)
                elif src in reach:
                    failed.add(id(reach[src]))

        for b in op.body:
            walk(b, visit)
    out = {}
    axes = iter(scan.spatial_axis_)
    for update in scan.update:
        for d in range(1, len(update.shape)):
            axis = next(axes)
            exact = reach.get((_key(update), d)) is axis and id(axis) not in failed
            out[axis] = E.const(1 if exact else 0)
    return out


def _key(t) -> tuple:
    return (id(t.op), t.value_index)


def _scan(op) -> ScanOp:
    op = getattr(op, "op", op)
    if not isinstance(op, ScanOp):
        raise TypeError(f"expected a te.scan operation, got {op!r}")
    return op


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


__all__ = ["create_read_graph", "post_dfs_order", "scan_fix_point_analysis", "scan_get_body"]
