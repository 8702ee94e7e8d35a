"""x86 ``batch_matmul``: its compute (``topi.nn.batch_matmul``) and schedule, the dense
dot-product kernel per batch."""

from __future__ import annotations

from topi import nn, tag as tags
from tune.autotvm.config import choose_config, register_rule
from tune.autotvm.space import ConfigEntity
from topi.x86.dense import _schedule, dense_rule, dense_space, dense_workload
from topi.config import records_target

TEMPLATE = "batch_matmul.x86"
register_rule(TEMPLATE, dense_space, dense_rule, doc="batch_matmul: the dense kernel per slice")


def default_batch_matmul_config(batch: int, M: int, N: int, K: int, dtype: str = "float32") -> ConfigEntity:
    """Knobs of :func:`schedule_batch_matmul` for ``batch`` ``[M, K] x [N, K]`` products:
    the per-slice rule of :func:`topi.x86.dense.dense_rule` (``vk``, ``mr``, ``nr``,
    ``nb``); the batch does not change it (the key is the slice's)."""
    return choose_config(dense_workload(M, N, K, dtype, TEMPLATE))


def batch_matmul(x, y, out_shape=None, out_dtype=None, transpose_a: bool = False, transpose_b: bool = True):
    """The compute :func:`schedule_batch_matmul` tiles (classic ``topi.x86.batch_matmul``):
    ``topi.nn.batch_matmul``, whose arguments it takes."""
    return nn.batch_matmul(x, y, out_shape, out_dtype, transpose_a, transpose_b)


@records_target
def schedule_batch_matmul(outs, cfg: ConfigEntity | None = None):
    """Schedule ``topi.nn.batch_matmul`` (and an injective epilogue) for x86.

    The batch axis is fused with the weight-row blocks into the parallel
    loop; each ``[M, N]`` slice runs :mod:`topi.x86.dense`'s register-blocked
    dot-product kernel (``transpose_b=True`` reads both operands along ``K``;
    with ``transpose_b=False`` the same schedule stays correct with strided reads).

    Parameters
    ----------
    outs : te.Tensor or list
    cfg : ConfigEntity, optional
        Knobs of :func:`default_batch_matmul_config` (the same as
        :func:`topi.x86.dense.default_dense_config`, which the schedule
        applies when ``cfg`` is None).
    """
    return _schedule(outs, cfg, tags.BATCH_MATMUL, TEMPLATE)
