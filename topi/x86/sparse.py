"""x86 schedule of the sparse products (``topi.nn.sparse_dense``, ``sparse_conv2d``).

The block product ``Y[block_row, r, m]`` reduces over the stored blocks of its block row (a
data-dependent extent) and the block's columns.  Its block rows run in parallel; inside, each
stored block updates whole rows of ``Y``: the dense operand's axes run innermost, contiguous in
``Y`` and in the column-major copy of the operand (``XT[k, m] = X[m, k]``), and are vectorized::

    parallel block_row:
      Y[block_row, :, :] = 0
      for e in row block_row of W, c < bs_c, r < bs_r:   # the stored blocks only
        Y[block_row, r, 0:M] += W.data[e, r, c] * XT[indices[e] * bs_c + c, 0:M]

This is scipy's CSR-times-dense order (benchmarks/topi_sparse.py).  The unpacking stage and any
epilogue (``relu``) are inlined into the output.
"""

from __future__ import annotations

from topi.generic.nn import inline_then, parallel_outer
from topi.nn.sparse import BLOCK_PRODUCT
from topi.utils import get_const_int

__all__ = ["schedule_sparse_conv2d", "schedule_sparse_dense"]

VECTOR = 8  # float32 lanes of an AVX2 register


def _schedule_block(s, op) -> None:
    if op.tag != BLOCK_PRODUCT:
        parallel_outer(s, op)
        return
    st = s[op]
    nb, r, *lead = op.axis
    e, c = op.reduce_axis
    st.reorder(nb, e, c, r, *lead)
    st.parallel(nb)
    inner = lead[-1]
    if get_const_int(inner.dom.extent) >= VECTOR:
        _, vec = st.split(inner, factor=VECTOR)
        st.vectorize(vec)
    elif get_const_int(inner.dom.extent) > 1:
        st.vectorize(inner)


def schedule_sparse_dense(outs):
    """Schedule of ``sparse_dense`` / ``sparse_conv2d`` (CSR or BSR weights) and their epilogues."""
    return inline_then(outs, _schedule_block)


schedule_sparse_conv2d = schedule_sparse_dense
