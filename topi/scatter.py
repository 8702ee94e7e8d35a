"""``topi.scatter_nd`` under classic TVM's convention: the first axis of ``indices`` names the
data axes (``indices[:, y...]`` is one position), and ``mode`` is ``update``/``add``/``mul``/
``min``/``max``.  The compute is ONNX ScatterND's (:func:`topi.indexing.scatter_nd`, whose
indices hold a position along their last axis), on the indices moved into that order by an
injective stage::

    out = data;  out[indices[0, y], ..., indices[M-1, y], rest] (mode)= updates[y, rest]
"""

from __future__ import annotations

import te
from topi import indexing, tag
from topi.utils import get_const_tuple

MODES = {"update": "none", "add": "add", "mul": "mul", "min": "min", "max": "max"}


def scatter_nd(data: te.Tensor, indices: te.Tensor, updates: te.Tensor, mode: str = "update") -> te.Tensor:
    """``data`` with ``updates`` scattered (or combined by ``mode``) at the positions of ``indices``."""
    if mode not in MODES:
        raise ValueError(f"scatter_nd: mode={mode!r}; use one of {tuple(MODES)}")
    ishape = get_const_tuple(indices.shape)
    last = te.compute(ishape[1:] + ishape[:1], lambda *i: indices(i[-1], *i[:-1]), name="scatter_nd_indices",
                      tag=tag.INJECTIVE)
    return indexing.scatter_nd(data, last, updates, MODES[mode])
