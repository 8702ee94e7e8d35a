"""The transformer passes and their places in the pass table.

=====  ======================  ==================  =========
pos    pass                    tags                opt_level
=====  ======================  ==================  =========
42     fuse_layer_norm         transformer fusion  1
43     fold_norm_transposes    transformer fusion  1
44     fuse_activation         transformer fusion  1
46     fuse_attention          transformer fusion  2
47     merge_attention_heads   transformer fusion  2
48     hoist_dense_epilogue    transformer fusion  1
78     privatize_attention_    transformer fusion  2
       inputs
=====  ======================  ==================  =========

They run after the first constant folding (shapes and masks are constants by
then) and before the layout pass packs the dense weights; the last one after
the late common-subexpression pass, right before ``fuse_ops``.
"""

from __future__ import annotations

from graph.passes.dense_epilogue import hoist_dense_epilogue
from graph.passes.fuse_activation import fuse_activation
from graph.passes.fuse_attention import fuse_attention, merge_attention_heads, privatize_attention_inputs
from graph.passes.fuse_layer_norm import fold_norm_transposes, fuse_layer_norm

TAGS = ("transformer", "fusion")


def register_transformer_passes(db) -> None:
    """Add the transformer passes to ``db`` (``graph.passes.OPTDB``)."""
    db.register("fuse_layer_norm", fuse_layer_norm, 42, TAGS, opt_level=1)
    db.register("fold_norm_transposes", fold_norm_transposes, 43, TAGS, opt_level=1)
    db.register("fuse_activation", fuse_activation, 44, TAGS, opt_level=1)
    db.register("fuse_attention", fuse_attention, 46, TAGS, opt_level=2)
    db.register("merge_attention_heads", merge_attention_heads, 47, TAGS, opt_level=2)
    db.register("hoist_dense_epilogue", hoist_dense_epilogue, 48, TAGS, opt_level=1)
    db.register("privatize_attention_inputs", privatize_attention_inputs, 78, TAGS, opt_level=2)
