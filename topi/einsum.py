"""``einsum``: a general Einstein summation as one te reduction.

``einsum("bij,bjk->bik", A, B)`` is ``out[b, i, k] = sum_j A[b, i, j] * B[b, j, k]``:
one output axis per output letter, one reduce axis per letter that appears in
the operands only; a letter repeated in one operand reads its diagonal.  The
equation must be explicit (``->``) with ellipses already expanded to letters
(the graph layer does both, and lowers the subscripts that describe a batched
matrix product to ``batch_matmul`` instead).  Reference: ``numpy.einsum``.
"""

from __future__ import annotations

import te
from topi.utils import get_const_tuple

__all__ = ["einsum", "parse_subscripts"]


def parse_subscripts(equation: str, shapes: list) -> tuple:
    """(input subscripts, output subscript) of ``equation`` with ``...`` expanded to letters
    and an implicit output (no ``->``) made explicit (the letters used once, sorted)."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: {equation!r} has {len(terms)} operands, got {len(shapes)} tensors")
    used = set(equation) - set(".,->")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used]
    ell = 0
    for t, shape in zip(terms, shapes):
        if "..." in t:
            ell = max(ell, len(shape) - (len(t) - 3))
    ell_letters = "".join(spare[:ell])
    out_terms = []
    for t, shape in zip(terms, shapes):
        if "..." in t:
            n = len(shape) - (len(t) - 3)
            t = t.replace("...", ell_letters[ell - n:] if n else "")
        if len(t) != len(shape) or not (t.isalpha() or not t):
            raise ValueError(f"einsum: subscript {t!r} does not fit an operand of shape {tuple(shape)}")
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", ell_letters)
    else:
        letters = "".join(out_terms)
        out = ell_letters + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell_letters))
    return out_terms, out


def einsum(subscripts: str, *operands: te.Tensor) -> te.Tensor:
    """``numpy.einsum(subscripts, *operands)`` as a te compute (explicit ``->``, no ellipsis)."""
    lhs, out = subscripts.replace(" ", "").split("->")
    terms = lhs.split(",")
    extents: dict = {}
    for t, x in zip(terms, operands):
        for c, d in zip(t, get_const_tuple(x.shape)):
            if extents.setdefault(c, d) != d and d != 1 and extents[c] != 1:
                raise ValueError(f"einsum: letter {c!r} has extents {extents[c]} and {d}")
            extents[c] = max(extents[c], d)
    summed = sorted(set(lhs) - set(out) - {","})
    dtype = operands[0].dtype

    def body(*i):
        axes = dict(zip(out, i))
        reduce_axes = [te.reduce_axis((0, extents[c]), name=c) for c in summed]
        axes.update(zip(summed, reduce_axes))
        prod = None
        for t, x in zip(terms, operands):
            shape = get_const_tuple(x.shape)
            read = x(*[axes[c] if shape[k] != 1 else 0 for k, c in enumerate(t)])
            prod = read if prod is None else prod * read
        if not reduce_axes:
            return prod
        return te.sum(prod, axis=reduce_axes)

    return te.compute(tuple(extents[c] for c in out), body, name="T_einsum", tag="einsum" if summed else "")
