"""x86 schedule of the sparse products (``topi.nn.sparse_dense``, ``sparse_conv2d``).

The block product ``Y[..., block_row, r]`` reduces over the stored blocks of its block row
(a data-dependent extent) and the block's columns; it runs at the root, its data axes but the
block's row fused and parallel, the block's rows (``r``) innermost and vectorized when a block
holds several::

    parallel (i, block_row):                    # one task per output block
      Y[i, block_row, 0:bs_r] = 0
      for e in row block_row of W, c < bs_c:     # the stored blocks only
        Y[i, block_row, 0:bs_r] += W.data[e, 0:bs_r, c] * X[i, indices[e] * bs_c + c]

The unpacking stage and any epilogue (``relu``) are inlined into the output.
"""

from __future__ import annotations

import te
from topi.generic.nn import inline_then, parallel_outer
from topi.utils import get_const_int

__all__ = ["schedule_sparse_conv2d", "schedule_sparse_dense"]


def _schedule_block(s, op) -> None:
    if op.tag != "sparse_dense_bsrmm":
        parallel_outer(s, op)
        return
    st = s[op]
    *outer, r = op.axis
    e, c = op.reduce_axis
    fused = outer[0]
    for ax in outer[1:]:
        fused = st.fuse(fused, ax)
    st.reorder(fused, e, c, r)
    st.parallel(fused)
    if get_const_int(r.dom.extent) > 1:
        st.vectorize(r)


def schedule_sparse_dense(outs):
    """Schedule of ``sparse_dense`` / ``sparse_conv2d`` (CSR or BSR weights) and their epilogues."""
    return inline_then(outs, _schedule_block)


schedule_sparse_conv2d = schedule_sparse_dense
