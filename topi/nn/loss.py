"""``nll_loss``: the negative log-likelihood loss (torch ``nn.NLLLoss``, ONNX NegativeLogLikelihoodLoss).

With predictions ``p`` of shape ``(N, C, d...)`` (or ``(C,)``), class targets ``t`` of shape
``(N, d...)`` (or ``()``) and class weights ``w`` of shape ``(C,)``::

    loss[n, d] = -p[n, t[n, d], d] * w[t[n, d]]      (0 where t[n, d] == ignore_index)
    "none": loss      "sum": sum(loss)      "mean": sum(loss) / sum(w[t[n, d]] over kept entries)

The per-element loss and its weight are injective stages inlined into the reductions.
A target outside ``[0, C)`` (other than ``ignore_index``) reads nothing: its class index is
clamped, as the graph executor's bounds checks require.
"""

from __future__ import annotations

import te
from topi import tag
from topi.utils import get_const_tuple, shape_str

REDUCTIONS = ("mean", "sum", "none")


def nll_loss(predictions: te.Tensor, targets: te.Tensor, weights: te.Tensor, reduction: str = "mean",
             ignore_index: int = -100) -> te.Tensor:
    """The NLL loss of ``predictions`` (log-probabilities) against class ``targets``.

    Returns
    -------
    te.Tensor
        A scalar (shape ``()``) for ``"mean"`` and ``"sum"``, the targets' shape for ``"none"``.
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"nll_loss: reduction={reduction!r}; use one of {REDUCTIONS}")
    pshape, tshape = get_const_tuple(predictions.shape), get_const_tuple(targets.shape)
    if not pshape:
        raise ValueError(f"nll_loss: predictions {shape_str(predictions)} must have rank >= 1")
    classes = pshape[0] if len(pshape) == 1 else pshape[1]
    want = () if len(pshape) == 1 else (pshape[0],) + pshape[2:]
    if tshape != want:
        raise ValueError(f"nll_loss: targets must have shape {want} for predictions {shape_str(predictions)}, "
                         f"got {shape_str(targets)}")
    if get_const_tuple(weights.shape) != (classes,):
        raise ValueError(f"nll_loss: weights must have shape ({classes},), got {shape_str(weights)}")
    zero = te.const(0, predictions.dtype)

    def kept_class(idx):
        t = targets(*idx)
        return t != ignore_index, te.max(te.min(t, classes - 1), 0)

    def weight(*idx):
        kept, c = kept_class(idx)
        return te.if_then_else(kept, weights[c], zero)

    def loss(*idx):
        kept, c = kept_class(idx)
        p = predictions[c] if not idx else predictions(idx[0], c, *idx[1:])
        return te.if_then_else(kept, -p * weights[c], zero)

    per = te.compute(tshape, loss, name="nll_loss", tag=tag.INJECTIVE if reduction != "none" else tag.ELEMWISE)
    if reduction == "none":
        return per
    w = te.compute(tshape, weight, name="nll_loss_weight", tag=tag.INJECTIVE)

    def total(t):
        axes = [te.reduce_axis((0, d), f"k{i}") for i, d in enumerate(tshape)]
        return te.compute((), lambda: te.sum(t(*axes), axis=axes) if axes else t(), name=t.op.name + "_sum",
                          tag="nll_loss_sum")

    loss_sum = total(per)
    if reduction == "sum":
        return loss_sum
    weight_sum = total(w)
    return te.compute((), lambda: loss_sum() / weight_sum(), name="nll_loss_mean", tag=tag.ELEMWISE)
