"""``einsum``: a general Einstein summation as one te reduction.

``einsum("bij,bjk->bik", A, B)`` is ``out[b, i, k] = sum_j A[b, i, j] * B[b, j, k]``:
one output axis per output letter, one reduce axis per letter that appears in
the operands only; a letter repeated in one operand reads its diagonal.  ``...``
stands for broadcast leading axes and an implicit output (no ``->``) is the
letters used once, sorted (:func:`parse_subscripts`).  (The graph layer lowers the
subscripts of a batched matrix product to ``batch_matmul`` instead.)
``tensordot`` is an einsum.  Reference: ``numpy.einsum``.
"""

from __future__ import annotations

import te
from topi.utils import get_const_tuple

__all__ = ["einsum", "parse_subscripts", "tensordot"]


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


def _one(d) -> bool:
    return isinstance(d, int) and d == 1


def _letter_extents(terms, operands) -> dict:
    """Letter -> (its extent, its extents in the operands that may differ from it).

    Constant extents other than 1 must agree; an extent of 1 broadcasts.  Symbolic extents
    are known only at run time: a letter whose extents are two different variables (``K`` and
    ``K2``) spans their maximum, and each of them is read as broadcast when it is 1."""
    seen: dict = {}
    for t, x in zip(terms, operands):
        for c, d in zip(t, get_const_tuple(x.shape)):
            seen.setdefault(c, [])
            if not any(d is e or (isinstance(d, int) and isinstance(e, int) and d == e) for e in seen[c]):
                seen[c].append(d)
    out = {}
    for c, ds in seen.items():
        ints = sorted({d for d in ds if isinstance(d, int) and d != 1})
        if len(ints) > 1:
            raise ValueError(f"einsum: letter {c!r} has extents {ints[0]} and {ints[1]}")
        syms = [d for d in ds if not isinstance(d, int)]
        if ints:
            extent = ints[0]
        elif not syms:
            extent = 1
        else:
            extent = syms[0]
            for d in syms[1:]:
                extent = te.max(extent, d)
        out[c] = (extent, [d for d in syms if d is not extent])
    return out


def einsum(subscripts: str, *operands: te.Tensor) -> te.Tensor:
    """``numpy.einsum(subscripts, *operands)`` as a te compute: explicit or implicit output,
    ``...`` for broadcast leading axes; an extent of 1 broadcasts against its letter's other
    extents, a symbolic one too when it is 1 at run time (:func:`_letter_extents`)."""
    terms, out = parse_subscripts(subscripts, [get_const_tuple(x.shape) for x in operands])
    letters = _letter_extents(terms, operands)
    extents = {c: e for c, (e, _) in letters.items()}
    summed = sorted(set("".join(terms)) - set(out))
    for c in out:
        if c not in extents:
            raise ValueError(f"einsum: output letter {c!r} of {subscripts!r} appears in no operand")

    def index(c: str, d, axis):
        if _one(d):
            return 0
        if any(d is e for e in letters[c][1]):  # symbolic, other than the letter's extent: 1 broadcasts
            return te.if_then_else(d == 1, te.const(0, axis.dtype), axis)
        return axis

    def body(*i):
        axes = dict(zip(out, i))
        reduce_axes = [te.reduce_axis((0, extents[c]), name=c) for c in summed]
        axes.update(zip(summed, (r.var for r in reduce_axes)))
        prod = None
        for t, x in zip(terms, operands):
            shape = get_const_tuple(x.shape)
            read = x(*[index(c, shape[k], axes[c]) for k, c in enumerate(t)])
            prod = read if prod is None else prod * read
        if not reduce_axes:
            return prod
        return te.sum(prod, axis=reduce_axes)

    return te.compute(tuple(extents[c] for c in out), body, name="T_einsum", tag="einsum" if summed else "")


def tensordot(a: te.Tensor, b: te.Tensor, axes=2) -> te.Tensor:
    """``numpy.tensordot(a, b, axes)``: ``axes`` an int N (the last N axes of ``a`` with the first
    N of ``b``) or a pair of axis lists; the result has ``a``'s free axes, then ``b``'s."""
    if isinstance(axes, int):
        a_axes, b_axes = list(range(len(a.shape) - axes, len(a.shape))), list(range(axes))
    else:
        a_axes, b_axes = ([x] if isinstance(x, int) else list(x) for x in axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"tensordot: axes {a_axes} of a and {b_axes} of b differ in number")
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    ta = list(letters[: len(a.shape)])
    tb = list(letters[len(a.shape): len(a.shape) + len(b.shape)])
    for i, j in zip(a_axes, b_axes):
        tb[j] = ta[i]
    free = [c for k, c in enumerate(ta) if k not in a_axes] + [c for k, c in enumerate(tb) if k not in b_axes]
    return einsum(f"{''.join(ta)},{''.join(tb)}->{''.join(free)}", a, b)
