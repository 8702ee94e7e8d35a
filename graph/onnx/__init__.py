"""ONNX import: ``g, params = graph.onnx.from_onnx(model, shape=None, dtype="float32")``.

One converter function per ONNX operator, registered with the operator
versions it handles (:mod:`graph.onnx.table`), grouped by kind:

=================  ==============================================================
module             operators
=================  ==============================================================
``elemwise``       activations, unary math, Add/Sub/Mul/Div/Pow/Mod, Sum/Max/Min/Mean,
                   comparisons, logic, Where, Clip, Cast, Softsign, Celu, Mish...
``nn``             Conv, ConvTranspose, Gemm, MatMul
``pool``           MaxPool, AveragePool, global pools, LRN, BatchNormalization,
                   InstanceNormalization, LayerNormalization
``reduce``         Reduce*, ArgMax/ArgMin, TopK, Softmax/LogSoftmax
``tensor``         Reshape, Flatten, Transpose, Squeeze/Unsqueeze, Concat, Split, Slice,
                   Pad, Gather, GatherElements, Tile, Expand, DepthToSpace/SpaceToDepth
``constant``       Constant, ConstantOfShape, Range, Shape, Size, Identity, Dropout
``resize``         Resize, Upsample
``random_ops``     RandomNormal/Uniform(Like), Bernoulli, Multinomial (host operators)
``quantize``       QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv,
                   QLinearMatMul, ConvInteger, MatMulInteger
=================  ==============================================================

Shapes are static: inputs a converter needs as values are folded at import
time (:mod:`graph.onnx.fold`).
"""

from graph.onnx import (  # noqa: F401  (register converters)
    constant,
    control,
    einsum,
    elemwise,
    image,
    indexing,
    llm,
    loss,
    math,
    nn,
    norm,
    pool,
    quantize,
    random_ops,
    reduce,
    resize,
    rnn,
    signal,
    tensor,
    transformer,
    vision,
)
from graph.onnx.frontend import from_onnx
from graph.onnx.table import supported_ops

__all__ = ["from_onnx", "supported_ops"]
