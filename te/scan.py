"""Scan: a recurrence over the first (time) axis (classic ``te.scan``).

::

    s_state = te.placeholder((m, n))                         # the state at t - 1
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
    s_scan = te.scan(s_init, s_update, s_state, inputs=[X])  # cumulative sum over t

The init stages write rows ``[0, init_len)`` of the result; the update
stages (and every stage between the state and them) then run once per step
``t`` of the scan axis, reading the state placeholder as the result's rows
before ``t``.  Lowered::

    produce scan {
      for (i, 0, n) { scan[0, i] = X[0, i] }
      for (scan.idx, 0, (m - 1)) {
        for (i, 0, n) { scan[(scan.idx + 1), i] = (scan[scan.idx, i] + X[(scan.idx + 1), i]) }
      }
    }
"""

from __future__ import annotations

from dataclasses import dataclass

from te import expr as E
from te.simplify import simplify
from te.tensor import Operation, Tensor


@dataclass(eq=False, repr=False)
class ScanOp(Operation):
    """Outputs ``k``: ``init[k]`` on the first rows, then ``update[k]`` step by step."""

    name: str
    tag: str
    attrs: dict
    scan_axis: E.IterVar  # the steps after init: [init_len, T)
    init: tuple
    update: tuple
    state_placeholder: tuple
    inputs: tuple
    spatial_axis_: tuple = ()  # one axis per non-time dimension of each update, in order (classic TVM)

    @property
    def shape(self) -> tuple:
        return self.update[0].shape

    @property
    def output_shapes(self) -> tuple:
        return tuple(t.shape for t in self.update)

    @property
    def dtypes(self) -> tuple:
        return tuple(t.dtype for t in self.update)

    @property
    def num_outputs(self) -> int:  # type: ignore[override]
        return len(self.update)

    @property
    def input_tensors(self) -> list[Tensor]:
        seen: dict = {}
        for t in list(self.init) + list(self.update) + list(self.inputs):
            seen.setdefault(t, None)
        return list(seen)


def _as_list(x, what: str, name: str) -> list:
    items = list(x) if isinstance(x, (list, tuple)) else [x]
    for t in items:
        if not isinstance(t, Tensor):
            raise TypeError(f"scan '{name}': {what} must be tensors, got {t!r}")
    return items


def _same(a, b) -> bool:
    from te.visitor import structural_equal

    return a is b or structural_equal(simplify(E.as_expr(a)), simplify(E.as_expr(b)))


def scan(
    init, update, state_placeholder, inputs=None, name: str = "scan", tag: str = "", attrs: dict | None = None
):
    """The recurrence ``state[t] = update(state[t - 1], ...)`` from ``init`` (classic ``te.scan``).

    ``init``, ``update`` and ``state_placeholder`` are tensors or equally long
    lists (several states advance together).  Returns a tensor, or a list.
    """
    multi = isinstance(update, (list, tuple))
    init = _as_list(init, "init", name)
    update = _as_list(update, "update", name)
    states = _as_list(state_placeholder, "state_placeholder", name)
    inputs = _as_list(inputs or [], "inputs", name)
    if not (len(init) == len(update) == len(states)) or not update:
        raise ValueError(
            f"scan '{name}': give as many init ({len(init)}), update ({len(update)}) and "
            f"state_placeholder ({len(states)}) tensors, at least one"
        )
    init_len = init[0].shape[0] if init[0].shape else None
    for k, (i, u, s) in enumerate(zip(init, update, states)):
        if len(i.shape) != len(u.shape) or len(s.shape) != len(u.shape) or not u.shape:
            raise ValueError(
                f"scan '{name}': state {k}: init {tuple(i.shape)}, update {tuple(u.shape)} and "
                f"state {tuple(s.shape)} must have the same rank, with the time axis first"
            )
        for d in range(1, len(u.shape)):
            if not (_same(i.shape[d], u.shape[d]) and _same(s.shape[d], u.shape[d])):
                raise ValueError(
                    f"scan '{name}': state {k}: dimension {d} differs between init "
                    f"{tuple(i.shape)}, update {tuple(u.shape)} and state {tuple(s.shape)}"
                )
        if not _same(i.shape[0], init_len) or not _same(u.shape[0], update[0].shape[0]):
            raise ValueError(f"scan '{name}': all inits and all updates must share their time extent")
        if i.dtype != u.dtype or s.dtype != u.dtype:
            raise ValueError(
                f"scan '{name}': state {k}: init {i.dtype}, update {u.dtype} and state {s.dtype} differ"
            )
    steps = simplify(E.as_expr(update[0].shape[0]) - init_len)
    axis = E.IterVar(E.Range(E.as_expr(init_len), steps), E.Var(f"{name}.idx"))
    spatial = tuple(E.IterVar(E.Range(E.const(0), E.as_expr(u.shape[d])), E.Var(f"{name}.out{k}.i{d}"))
                    for k, u in enumerate(update) for d in range(1, len(u.shape)))
    op = ScanOp(name, tag, dict(attrs or {}), axis, tuple(init), tuple(update), tuple(states), tuple(inputs),
                spatial)
    outs = [Tensor(op, k) for k in range(len(update))]
    return outs if multi else outs[0]


__all__ = ["ScanOp", "scan"]
