"""Converters of the loss operators: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

Both are gathers and reductions over graph ops::

    loss[n, d...] = -input[n, target[n, d...], d...] * weight[target[n, d...]]   (0 where ignored)
    reduction "mean": sum(loss) / sum(weight[target]) over the targets not ignored

SoftmaxCrossEntropyLoss is the same over ``log_softmax(scores, axis=1)``, which
is its optional second output.
"""

from __future__ import annotations

from graph.ir import Value
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter


def _nll(ctx: Context, node: OnnxNode, logp: Value, target: Value, weight: Value | None) -> Value:
    reduction = node.attr("reduction", "mean")
    if reduction not in ("none", "sum", "mean"):
        raise node.error(f"reduction={reduction!r} is not one of none, sum, mean")
    if len(logp.shape) < 2 or target.shape != logp.shape[:1] + logp.shape[2:]:
        raise node.error(f"target {target.shape} must be input {logp.shape} without its class axis 1")
    target = ctx.cast(target, "int64")
    ignore = node.attr("ignore_index")
    keep = None
    if ignore is not None:
        keep = ctx.op("not_equal", [target, ctx.scalar(int(ignore), "int64")])
        target = ctx.op("where", [keep, target, ctx.scalar(0, "int64")])
    index = ctx.reshape(target, target.shape[:1] + (1,) + target.shape[1:])
    picked = ctx.reshape(ctx.op("gather_elements", [logp, index], {"axis": 1}), target.shape)
    loss = ctx.op("negative", [picked])
    w = ctx.op("take", [weight, target], {"axis": 0}) if weight is not None else None
    if keep is not None:
        mask = ctx.cast(keep, logp.dtype)
        w = mask if w is None else ctx.op("multiply", [w, mask])
    if w is not None:
        loss = ctx.op("multiply", [loss, w])
    if reduction == "none":
        return loss
    axes = {"axis": tuple(range(len(target.shape))), "keepdims": False}
    total = ctx.op("sum", [loss], axes)
    if reduction == "sum":
        return total
    if w is None:
        return ctx.op("divide", [total, ctx.scalar(float(target.size), logp.dtype)])
    return ctx.op("divide", [total, ctx.op("sum", [w], axes)])


@converter("NegativeLogLikelihoodLoss", since=12)
def convert_nll_loss(ctx: Context, node: OnnxNode) -> list:
    weight = node.inputs[2] if node.has_input(2) else None
    return [_nll(ctx, node, node.input(0, "input"), node.input(1, "target"), weight)]


@converter("SoftmaxCrossEntropyLoss", since=12)
def convert_softmax_cross_entropy(ctx: Context, node: OnnxNode) -> list:
    scores = node.input(0, "scores")
    if len(scores.shape) < 2:
        raise node.error(f"scores {scores.shape} need a class axis 1")
    perm = (0,) + tuple(range(2, len(scores.shape))) + (1,)
    logp = ctx.op("log_softmax", [ctx.transpose(scores, perm)], {"axis": -1})
    back = [0] * len(perm)
    for k, p in enumerate(perm):
        back[p] = k
    logp = ctx.transpose(logp, back)
    weight = node.inputs[2] if node.has_input(2) else None
    return [_nll(ctx, node, logp, node.input(1, "labels"), weight), logp]
