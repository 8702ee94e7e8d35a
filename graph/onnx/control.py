"""``If`` on a condition known at import time: the chosen branch is inlined.

An ``If`` whose condition is an initializer or a ``Constant`` converts here:
the nodes of the branch it takes are converted in place (their names are
unique in the model, as ONNX requires) and its outputs become the node's.  Any
other ``If``, and ``Loop`` and ``Scan``, run their subgraphs on the host
between compiled segments (:mod:`graph.onnx.host`).
"""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from graph.onnx.context import Context, OnnxNode
from graph.onnx.importer import convert_subgraph_nodes
from graph.onnx.table import converter


@converter("If")
def convert_if(ctx: Context, node: OnnxNode) -> list:
    cond = np.asarray(ctx.value(node, 0, "cond"))
    if cond.size != 1:
        raise node.error(f"cond must hold one element, got shape {cond.shape}")
    branch = node.required("then_branch" if bool(cond.reshape(-1)[0]) else "else_branch")
    outer = ctx.node
    for t in branch.initializer:
        ctx.env[t.name] = ctx.const(numpy_helper.to_array(t), "initializer")
    convert_subgraph_nodes(ctx, branch)
    ctx.node = outer
    missing = [o.name for o in branch.output if o.name not in ctx.env]
    if missing:
        raise node.error(f"the branch taken does not define its outputs {missing}")
    return [ctx.env[o.name] for o in branch.output]
