"""Small helpers shared by the operators: shapes as ints, argument checks."""

from __future__ import annotations

import te


def get_const_int(e) -> int:
    """An int from an int or a constant expression (``ValueError`` if symbolic)."""
    if isinstance(e, int):
        return e
    if isinstance(e, te.IntImm):
        return e.value
    s = te.simplify(e)
    if isinstance(s, te.IntImm):
        return s.value
    raise ValueError(f"expected a constant integer, got {e}")


def get_const_tuple(shape) -> tuple:
    """Shape entries as ints where constant (symbolic entries are kept)."""
    out = []
    for s in shape:
        try:
            out.append(get_const_int(s))
        except ValueError:
            out.append(s)
    return tuple(out)


def const_shape(op: str, x) -> tuple:
    """The shape of the tensor ``x`` as ints; ``TypeError``/``ValueError`` naming ``op`` otherwise."""
    if not isinstance(x, te.Tensor):
        raise TypeError(f"{op}: expected a te.Tensor, got {type(x).__name__}")
    shape = get_const_tuple(x.shape)
    if not all(isinstance(d, int) for d in shape):
        raise ValueError(f"{op}: needs a constant shape, got {shape}")
    return shape


def ravel_index(indices, shape):
    """The row-major offset of ``indices`` in ``shape`` (int expressions)."""
    flat = te.const(0, "int32")
    for i, d in zip(indices, shape):
        flat = flat * d + i
    return flat


def unravel_index(flat, shape) -> list:
    """The indices in ``shape`` of row-major offset ``flat`` (an int expression)."""
    out = []
    for d in reversed(shape):
        out.append(flat % d if d != 1 else te.const(0, "int32"))
        flat = flat // d
    return out[::-1]


def shape_str(t) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def check_axis(op: str, axis: int, ndim: int, arg: str = "axis") -> int:
    """Normalise a possibly negative axis; ``ValueError`` naming the operator if out of range."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op}: {arg}={axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim


def traverse_inline(s, final_op, callback) -> None:
    """Inline every injective stage reachable from ``final_op``; call ``callback(op)``
    on the anchors (non-injective compute stages), as classic TVM's helper does."""
    from topi import tag as tags

    visited: set = set()

    def visit(op):
        if id(op) in visited:
            return
        visited.add(id(op))
        if isinstance(op, te.ComputeOp):
            if tags.is_injective(op.tag) and op not in s.outputs and not op.reduce_axis:
                s[op].compute_inline()
            for t in op.input_tensors:
                if isinstance(t.op, te.ComputeOp):
                    visit(t.op)
        callback(op)

    visit(final_op)


def find_anchor(s, out_op, is_anchor, inline: bool = True):
    """The anchor stage under ``out_op`` and the stages between them (the epilogue).

    Walks the producers of ``out_op``; the first compute stage for which
    ``is_anchor(op)`` holds is the anchor (its own producers are not visited).
    When an anchor is found and ``inline``, every other compute stage met,
    except ``out_op``, is inlined (the epilogue runs in the output loop)::

        out = relu(bias_add(unpack(conv)))   ->   anchor conv, epilogue [out, unpack, bias_add]

    Returns ``(anchor, between)``: ``anchor`` is None when none was found;
    ``between`` lists the stages visited (``out_op`` first), anchor excluded.
    """
    anchor, between, stack, seen = None, [], [out_op], set()
    while stack:
        op = stack.pop()
        if id(op) in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(id(op))
        if anchor is None and is_anchor(op):
            anchor = op
            continue
        between.append(op)
        stack.extend(t.op for t in op.input_tensors)
    if anchor is not None and inline:
        for b in between:
            if b is not out_op:
                s[b].compute_inline()
    return anchor, between


def layout_axes(layout: str) -> str:
    """The axis letters of ``layout``, one per tensor dimension: ``"NCHW16c"`` -> ``"NCHWc"``
    (a sub-axis' factor dropped, its letter kept lower-case)."""
    return "".join(c for c in layout if not c.isdigit())


def nchw_pack_layout(layout: str) -> bool:
    """Whether ``layout`` is NCHW with batch and channel blocks inside (``"NCHW1n16c"``)."""
    return layout[:4] == "NCHW" and "n" in layout and "c" in layout


def nchw_xc_layout(layout: str) -> bool:
    """Whether ``layout`` is NCHW with a channel block inside (``"NCHW16c"``)."""
    return layout[:4] == "NCHW" and layout[-1:] == "c" and layout[4:-1].isnumeric()


def _layout_axes(layout: str) -> list:
    import re

    axes = re.findall(r"\d*[A-Za-z]", layout)
    if "".join(axes) != layout or len(set(axes)) != len(axes):
        raise ValueError(f"get_shape: {layout!r} is not a layout (axes such as 'N', 'C', '16c', each once)")
    return axes


def get_shape(src_shape, src_layout: str, dst_layout: str) -> tuple:
    """``src_shape`` (in ``src_layout``) permuted to ``dst_layout``: the same axes, blocked ones
    included, in another order (``"NCHW16c"`` -> ``"NC16cWH"``)."""
    src, dst = _layout_axes(str(src_layout)), _layout_axes(str(dst_layout))
    if sorted(src) != sorted(dst) or len(src) != len(src_shape):
        raise ValueError(f"get_shape: layouts {src_layout!r} and {dst_layout!r} must hold the same axes, "
                         f"one per entry of the shape {tuple(src_shape)}")
    shape = get_const_tuple(src_shape)
    return tuple(shape[src.index(a)] for a in dst)
