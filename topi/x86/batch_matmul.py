"""x86 schedule of ``batch_matmul``: the dense dot-product kernel per batch."""

from __future__ import annotations

from topi import tag as tags
from topi.config import Config
from topi.x86.dense import _schedule


def schedule_batch_matmul(outs, cfg: Config | None = None):
    """Schedule ``topi.nn.batch_matmul`` (and an injective epilogue) for x86.

    The batch axis is fused with the weight-row blocks into the parallel
    loop; each ``[M, N]`` slice runs :mod:`topi.x86.dense`'s register-blocked
    dot-product kernel (``transpose_b=True`` reads both operands along ``K``;
    with ``transpose_b=False`` the same schedule stays correct with strided reads).

    Parameters
    ----------
    outs : te.Tensor or list
    cfg : Config, optional
        Knobs of :func:`topi.x86.dense.default_dense_config`.
    """
    return _schedule(outs, cfg, tags.BATCH_MATMUL)
