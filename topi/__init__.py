"""topi: the operator library (classic TVM layout).

Computes live in ``topi`` (broadcast, math, reduction, transform) and
``topi.nn``; default schedules in ``topi.generic``; tuned CPU schedules in
``topi.x86`` (choices from ``tune.autotvm.config`` knob configs); numpy references in
``topi.testing``; tags that drive inlining and fusion in ``topi.tag``.
Importing topi also gives ``te.Tensor`` its arithmetic operators (``A * 2.0``
builds ``topi.multiply``), as classic TVM did.
"""

# Imported eagerly: a lazy lookup would lose to the submodule attribute that
# Python binds on the package when a module shares its function's name.
from topi import config, tag, utils  # noqa: F401
from topi.broadcast import (  # noqa: F401
    add, subtract, multiply, divide, floor_divide, mod, floor_mod, power, maximum, minimum,
    equal, not_equal, less, less_equal, greater, greater_equal, logical_and, logical_or,
    logical_not, logical_xor, where, broadcast_to,
)
from topi.math import (  # noqa: F401
    exp, log, log2, log10, sqrt, rsqrt, tanh, sigmoid, erf, abs, negative, floor, ceil,
    round, trunc, sign, sin, cos, fast_exp, fast_tanh, fast_erf, identity, tan, asin, acos, atan, sinh, cosh,
    asinh, acosh, atanh,
)
from topi import bitwise, einsum, image, indexing  # noqa: F401
from topi.bitwise import (  # noqa: F401
    bitwise_and, bitwise_not, bitwise_or, bitwise_xor, isfinite, isinf, isnan, left_shift, right_shift,
)
from topi.einsum import einsum, tensordot  # noqa: F401,F811  (classic topi.einsum is the function)
from topi.reduction import sum, mean, max, min, prod, argmax, argmin, all, any  # noqa: F401
from topi.transform import (  # noqa: F401
    reshape, transpose, flatten, concatenate, stack, split, strided_slice, take, gather,
    expand_dims, squeeze, tile, repeat, cast, layout_transform, resize,
    adv_index, arange, expand_like, flip, gather_nd, matrix_set_diag, ndarray_size, one_hot, reinterpret,
    reverse_sequence, sequence_mask, shape, sparse_to_dense, strided_set, trilu, unravel_index,
)
from topi.sorting import argsort, sort, topk  # noqa: F401,E402
from topi.signal import dft  # noqa: F401,E402
from topi.unique import unique  # noqa: F401,E402
from topi.scan import cumprod, cumsum  # noqa: F401,E402
from topi.argwhere import argwhere  # noqa: F401,E402
from topi.searchsorted import searchsorted  # noqa: F401,E402
from topi.tensor import elemwise_sum, full, full_like  # noqa: F401,E402
from topi.scatter import scatter_nd  # noqa: F401,E402
from topi import generic, nn, testing, x86  # noqa: F401,E402
from topi.nn.elemwise import clip  # noqa: F401,E402  (classic topi.clip)
from topi.nn.dense import matmul  # noqa: F401,E402  (classic topi.matmul(a, b, transp_a, transp_b))
from topi.operators import install_tensor_operators  # noqa: E402

install_tensor_operators()
