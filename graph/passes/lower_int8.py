"""Lower quantized convolutions and matmuls to int8 kernels on the target's integer dot-product
instructions: ``conv2d_int8`` and ``dense_int8``, as the target's strategy computes them
(x86: ``topi.x86.conv2d_int8``, ``topi.x86.dense_int8``)."""

from __future__ import annotations

import numpy as np

from graph.ir import Graph, Value, constant_node, copy_node, make_node, rebuild
from graph.ops import get_op
from graph.passes.common import const_array, use_counts
from topi.strategy import layout_helpers
from tune.autotvm.choose import choose

EVAL_LIMIT_BYTES = 64 << 20


def lower_qdq_conv(graph: Graph, context) -> Graph:
    """Rewrite ``QuantizeLinear(Conv(DequantizeLinear(x), DequantizeLinear(W)) [+ bias] [-> Relu])``
    (and QLinearConv's ``requantize(qnn_conv2d(x, W) [+ B])``) into one ``conv2d_int8`` node: the int32 accumulation on the target's integer dot-product
    instructions and onnxruntime's QLinearConv output stage, fused.

    It applies when ``x`` is uint8 with a per-tensor scale and zero point, ``W`` is constant
    (int8 or uint8, per tensor or per output channel, ``W - w_zp`` exact in the kernel's type),
    the bias (if any) is a constant that is exactly ``int32 * x_scale * w_scale`` (onnxruntime's
    quantizer writes it so), the conv is 2-D with one group, the output quantization is per
    tensor, it has at least one vector of output channels, and nothing else reads the conv, the
    bias add or the ReLU.  The target's strategy decides the instruction (x86:
    :func:`topi.x86.int8_dot.choose_mode`); a target without integer kernels keeps the float path.

    The result is onnxruntime's fused int8 conv exactly:
    ``saturate(round_half_even(float32(acc + bias) * (x_scale * w_scale / y_scale)) + y_zp)``,
    a ReLU as the lower clamp ``y_zp``.  Against the float graph (dequantize, float conv,
    quantize) it may differ by one step where the float conv's rounding moves a value across
    a rounding boundary.  A max pooling of a dequantized value pools the integers instead
    (:func:`_max_pool_first`).
    """
    if int8_helpers(context.target) is None:
        return graph
    uses = use_counts(graph)

    def rewrite(node, ins):
        new = None
        if node.op == "quantize":
            new = _lower(node, ins, uses, context)
        elif node.op == "requantize" and len(ins) == 3:
            new = _lower_qlinear(node, ins, uses, context)
        elif node.op == "pool2d":
            new = _max_pool_first(node, ins)
        if new is None:
            if all(a is b for a, b in zip(ins, node.inputs)):
                return None
            new = copy_node(node, ins).outputs
        else:
            new = (new,)
        for old, v in zip(node.outputs, new):  # new values inherit the uses of the old
            uses[id(v)] = uses.get(id(old), 0)
        return new

    return rebuild(graph, rewrite)


def lower_int8_dense(graph: Graph, context) -> Graph:
    """Rewrite ``qnn_dense(x, W, x_zp, w_zp)`` (ONNX MatMulInteger, the integer product of
    QLinearMatMul, QGemm and dynamically quantized models) with a constant ``W`` into
    ``dense_int8``: the same int32 result on the target's integer dot-product instructions.

    It applies when ``x`` is uint8 with a per-tensor zero point (constant or computed at run
    time: DynamicQuantizeLinear), ``W - w_zp`` (``w_zp`` per tensor or per column) is exact in
    the kernel's type and there is at least one vector of columns; the target decides the
    instruction (its strategy's ``int8_mode`` helper; x86: ``topi.x86.int8_dot.choose_mode``),
    the config of template ``dense_int8.x86`` the register tile and the weight's column block
    (the best tuning record, else the target's rule), the weights how many words share a widening
    (``int8_dense_group``; x86: ``topi.x86.dense_int8.group``).  Runs after ``fold_constants``, so the
    importer's transposed weight is a constant.
    """
    target = context.target
    h = int8_helpers(target)
    if h is None:
        return graph

    def rewrite(node, ins):
        if node.op != "qnn_dense" or len(ins) != 4:
            return None
        x, w, zx, zw = ins
        wq = const_array(w)
        if x.dtype != "uint8" or wq is None or wq.dtype not in (np.uint8, np.int8):
            return None
        if zx is not None and zx.shape not in ((), (1,)):
            return None
        zwv = np.zeros((), "int64") if zw is None else const_array(zw)
        n, k = wq.shape
        if zwv is None or zwv.size not in (1, n):
            return None
        wc = wq.astype("int64") - zwv.astype("int64").reshape(-1, 1)
        mode = _mode(h, target, wc)
        if mode is None:
            return None
        nb, mr = h.int8_dense_blocks(mode, target)
        group = h.int8_dense_group(wc, mode)
        cfg = _tuned(context, h.int8_dense_workload(x.shape, (n, k), mode, group), "nb", n)
        if cfg is not None:
            nb, mr = cfg["nb"].val, cfg["mr"].val
        if n < nb:
            return None
        packed = h.pack_int8_dense_weight(wc, mode, nb, group)
        wsum = np.zeros(packed.shape[0] * nb, "int64")
        wsum[:n] = wc.sum(1)
        name = node.output.name
        if zx is None:
            zx = constant_node(np.zeros((), "uint8"), f"{name}.x_zp").output
        consts = [constant_node(a, f"{name}.{key}").output for key, a in
                  (("weight_int8", packed), ("wsum", wsum.astype("int32")))]
        attrs = {"units": int(n), "mode": mode, "mr": int(mr), "config": cfg}
        return (make_node("dense_int8", (x, *consts, zx), attrs, node.name, [name]).output,)

    return rebuild(graph, rewrite)


def _lower(q, ins, uses: dict, context) -> Value | None:
    """``quantize(conv2d(dequantize(x), dequantize(W)) [+ bias] [-> relu])`` -> ``conv2d_int8``."""
    y, sy, zy = (tuple(ins) + (None,))[:3]
    dtype = q.attrs.get("dtype")
    sy, zy = _scalar(sy), _scalar(zy) if zy is not None else 0
    if dtype not in ("uint8", "int8") or sy is None or zy is None or q.attrs.get("block_size", 0):
        return None
    relu, bias_f, v = False, None, y
    if _single(v, uses, "relu"):
        relu, v = True, v.node.inputs[0]
    v, bias_f = _through_bias(v, uses, "conv2d")
    if bias_f is not None:
        bias_f = bias_f.astype("float32")
    if not _single(v, uses, "conv2d") or len(v.node.inputs) != 2 or len(v.shape) != 4:
        return None
    conv = v.node
    if conv.attrs.get("groups", 1) != 1:
        return None
    xd, wd = conv.inputs
    if not (_is(xd, "dequantize") and _is(wd, "dequantize")):
        return None
    xq, sx, zx = (tuple(xd.node.inputs) + (None,))[:3]
    sx, zx = _scalar(sx), (_scalar(zx) if zx is not None else 0)
    if xq.dtype != "uint8" or sx is None or zx is None or xd.node.attrs.get("block_size", 0):
        return None
    wq, sw, zw = (tuple(wd.node.inputs) + (None,))[:3]
    w, sw = _evaluate(wq), _evaluate(sw)
    zw = np.zeros((), "int64") if zw is None else _evaluate(zw)
    oc = v.shape[1]
    if w is None or sw is None or zw is None or w.dtype not in (np.uint8, np.int8) or wd.node.attrs.get("block_size", 0):
        return None
    per_channel = sw.size != 1 or zw.size != 1
    if per_channel and (wd.node.attrs.get("axis", 1) % 4 != 0 or sw.size not in (1, oc) or zw.size not in (1, oc)):
        return None
    wc = w.astype("int64") - zw.astype("int64").reshape(-1, 1, 1, 1)
    scale_xw = np.float32(sx) * sw.astype("float32").reshape(-1)  # onnxruntime: x_scale * w_scale / y_scale
    multiplier = np.broadcast_to(scale_xw / np.float32(sy), (oc,)).astype("float32")
    bias = np.zeros(oc, "int64")
    if bias_f is not None:
        s = np.broadcast_to(scale_xw, (oc,))
        bias = np.rint(bias_f.astype("float64") / s.astype("float64")).astype("int64")
        if np.any(np.abs(bias) > 2**31 - 1) or not np.array_equal(bias.astype("float32") * s, bias_f):
            return None  # not an int32 bias at scale x_scale * w_scale: keep the float path
    return _conv_int8(q, xq, wc, conv.attrs, int(zx), int(zy), multiplier, bias, dtype, relu, context)


def _max_pool_first(pool, ins) -> Value | None:
    """``max_pool(dequantize(x))`` -> ``dequantize(max_pool(x))`` for a per-tensor positive scale:
    dequantizing is non-decreasing, so the maximum commutes with it exactly, and the pooling
    reads and writes the integers (ResNet's pooling after its stem: a quarter of the bytes,
    and the stem's int8 kernel writes integers).  Only where every window holds an input
    point (no ceil mode, no dilation, padding below the window): a window of padding alone
    would give -inf in float."""
    a = pool.attrs
    kernel, pad = tuple(a["kernel"]), tuple(a.get("padding", (0, 0, 0, 0)))
    if a["pool_type"] != "max" or a.get("ceil_mode", False) or tuple(a.get("dilation", (1, 1))) != (1, 1) \
            or len(kernel) != 2 or any(p >= kernel[i % 2] for i, p in enumerate(pad)) or not _is(ins[0], "dequantize"):
        return None
    dq = ins[0].node
    xq, sx, zx = (tuple(dq.inputs) + (None,))[:3]
    scale = _scalar(sx)
    if dq.attrs.get("block_size", 0) or scale is None or not scale > 0 or (zx is not None and _scalar(zx) is None):
        return None
    pooled = make_node("pool2d", [xq], a, pool.name, [f"{pool.output.name}_int"])
    return make_node("dequantize", [pooled.output, *dq.inputs[1:]], dq.attrs, f"{pool.name}_dequantize",
                     [pool.output.name]).output


def _lower_qlinear(rq, ins, uses: dict, context) -> Value | None:
    """``requantize(qnn_conv2d(x, W, x_zp, w_zp) [+ int32 bias])`` (QLinearConv) with constant
    weights, zero points and multiplier -> ``conv2d_int8``."""
    acc, m, zy = ins
    zy, mult = _scalar(zy), _evaluate(m)
    dtype = rq.attrs.get("dtype")
    if dtype not in ("uint8", "int8") or zy is None or mult is None:
        return None
    v, bias = _through_bias(acc, uses, "qnn_conv2d")
    if not _single(v, uses, "qnn_conv2d") or len(v.shape) != 4 or v.node.attrs.get("groups", 1) != 1:
        return None
    x, w, zx, zw = (tuple(v.node.inputs) + (None, None))[:4]
    oc = v.shape[1]
    w = _evaluate(w)
    zx = 0 if zx is None else _scalar(zx)
    zw = np.zeros((), "int64") if zw is None else _evaluate(zw)
    if x.dtype != "uint8" or w is None or zx is None or zw is None or zw.size not in (1, oc) or mult.size not in (1, oc):
        return None
    wc = w.astype("int64") - zw.astype("int64").reshape(-1, 1, 1, 1)
    multiplier = np.broadcast_to(mult.reshape(-1).astype("float32"), (oc,))
    bias = np.zeros(oc, "int64") if bias is None else bias.astype("int64")
    return _conv_int8(rq, x, wc, v.node.attrs, int(zx), int(zy), multiplier, bias, dtype, False, context)


def _mode(h, target, wc: np.ndarray) -> str | None:
    """The integer instruction for centered weights ``wc`` (reduced along axis 1) on ``target``."""
    fits_int8 = bool(wc.min() >= -128 and wc.max() <= 127)
    return h.int8_mode(target, fits_int8, fits_int8 and h.int8_pairs_fit(wc, 1))


def int8_helpers(target):
    """The integer-kernel helpers of ``target``'s strategy (``int8_mode``, ``int8_pairs_fit``,
    ``int8_conv_blocks``, ``int8_conv_group``, ``pack_int8_conv_kernel``, ``int8_dense_blocks``,
    ``int8_dense_workload``, ``int8_dense_group``, ``pack_int8_dense_weight``), or None: the target
    has no integer kernels."""
    found = layout_helpers(target)
    return found if hasattr(found, "int8_mode") else None


def _conv_int8(node, x: Value, wc: np.ndarray, conv_attrs: dict, zx: int, zy: int, multiplier: np.ndarray,
               bias: np.ndarray, dtype: str, relu: bool, context) -> Value | None:
    """The ``conv2d_int8`` node standing for ``node`` (its names kept): uint8 ``x``, centered OIHW
    weights ``wc``, per-channel ``multiplier`` and int32 ``bias``; None where the target or the
    weights leave no integer kernel.  A direct conv's register tile is its config's
    (template ``conv2d_NCHWc_int8.x86``: the best tuning record, else the target's rule)."""
    target = context.target
    h = int8_helpers(target)
    if h is None:
        return None
    oc = wc.shape[0]
    mode = _mode(h, target, wc)
    if mode is None:
        return None
    ic_bn, oc_bn, ow_bn = h.int8_conv_blocks(oc, wc.shape[1], mode, target)
    if oc < oc_bn:  # fewer channels than one vector: the float conv does as well
        return None
    strides, dilation = tuple(conv_attrs.get("strides", (1, 1))), tuple(conv_attrs.get("dilation", (1, 1)))
    packed = h.int8_winograd_kernel(wc, strides, dilation, mode, h.int8_winograd_block(mode, target))
    if packed is None and h.int8_conv_float_is_faster(wc.shape[1], wc.shape[2], wc.shape[3], mode, target):
        exact = _conv_float_exact(node, x, wc, conv_attrs, zx, zy, multiplier, bias, dtype, relu)
        if exact is not None:
            return exact
    cfg, center = None, 0  # the data's offset in the kernel's products: x - center
    if packed is not None:
        mode, oc_bn = "i16", packed.shape[4]  # Winograd centers the data: the offset is the bias alone
    else:
        group = h.int8_conv_group(wc, mode, ic_bn)
        if dilation == (1, 1):
            cfg = _tuned(context, h.int8_conv_workload(
                x.shape, wc.shape, strides, tuple(conv_attrs.get("padding", (0, 0, 0, 0))), mode, group),
                "oc_bn", oc)
            if cfg is not None:
                oc_bn, ow_bn = cfg["oc_bn"].val, cfg["ow_bn"].val
        packed = h.pack_int8_conv_kernel(wc, mode, ic_bn, oc_bn, group)
        center = 128 if group > 1 else 0
    ocp = -(-oc // oc_bn) * oc_bn
    offset = np.zeros(ocp, "int64")
    offset[:oc] = bias - (0 if mode == "i16" else (zx - center) * wc.reshape(oc, -1).sum(1))
    if np.any(np.abs(offset) > 2**31 - 1):
        return None
    mult = np.zeros(ocp, "float32")
    mult[:oc] = multiplier
    name = node.output.name
    consts = [constant_node(a, f"{name}.{k}").output for k, a in
              (("kernel_int8", packed), ("offset", offset.astype("int32")), ("multiplier", mult))]
    attrs = {"channels": int(oc), "strides": strides, "padding": tuple(conv_attrs.get("padding", (0, 0, 0, 0))),
             "dilation": dilation, "x_zp": zx, "y_zp": zy, "mode": mode, "dtype": dtype,
             "lo": zy if relu else None, "ow_bn": int(ow_bn), "oc_bn": int(oc_bn), "config": cfg}
    return make_node("conv2d_int8", (x, *consts), attrs, node.name, [name]).output


def _tuned(context, workload: tuple, block_knob: str, channels: int):
    """The config an int8 kernel of ``workload`` runs (``tune.autotvm.choose``: a whole-model
    tune's choice, the best record, else the rule's), stored on its node so that ``tessera tune``
    extracts its task; None where its column block ``block_knob`` exceeds the ``channels``."""
    cfg = choose(workload, context.target, context.records, context.options)
    return cfg if channels >= cfg[block_knob].val else None


FLOAT_EXACT = 2**24  # float32 holds every integer below it exactly


def _conv_float_exact(node, x: Value, wc: np.ndarray, conv_attrs: dict, zx: int, zy: int, multiplier: np.ndarray,
                      bias: np.ndarray, dtype: str, relu: bool) -> Value | None:
    """The requantized conv as a float32 conv of the same integers, for a conv whose int8 kernel
    would issue more multiply cycles (``int8_conv_float_is_faster``: a 3-channel stem padded to
    whole blocks): ``requantize(relu(conv2d(float32(x - x_zp), float32(w)) + bias))``, the
    float conv template's speed and the int8 kernel's result exactly: every product and partial
    sum is an integer below 2**24 in magnitude (``max|x - x_zp| * sum|w| + max|bias|``), so
    float32 holds each exactly in any order of summation, and ``float32(acc) + bias`` rounds
    once as ``float32(acc + bias)`` does.  A ReLU commutes with the positive multiplier's
    rounding (``round(max(v, 0) * m) = max(round(v * m), 0)``).  The multiplier is per tensor
    or per channel (the requantization then runs on the conv's blocked output with its
    multipliers re-laid out: ``graph.passes.alter_op_layout``).  None where that bound fails."""
    mult = np.asarray(multiplier, "float32").reshape(-1)
    span = max(zx, 255 - zx)
    reach = span * int(np.abs(wc).reshape(wc.shape[0], -1).sum(1).max()) + int(np.abs(bias).max(initial=0))
    if not (np.all(np.isfinite(mult)) and np.all(mult > 0)) or reach >= FLOAT_EXACT:
        return None
    mult = mult[:1] if np.all(mult == mult[0]) else mult
    name = node.output.name

    def const(a, key):
        return constant_node(np.asarray(a), f"{name}.{key}").output

    xf = make_node("dequantize", (x, const(np.float32(1.0), "one"), const(np.uint8(zx), "x_zp")),
                   {"axis": 1, "block_size": 0}, f"{node.name}_centered", [f"{name}.centered"]).output
    v = make_node("conv2d", (xf, const(wc.astype("float32"), "weight")), dict(conv_attrs), f"{node.name}_conv",
                  [f"{name}.acc"]).output
    if np.any(bias):
        v = make_node("add", (v, const(bias.astype("float32").reshape(1, -1, 1, 1), "bias")), {},
                      f"{node.name}_bias", [f"{name}.biased"]).output
    if relu:
        v = make_node("relu", (v,), {}, f"{node.name}_relu", [f"{name}.relu"]).output
    return make_node("requantize", (v, const(mult[0] if mult.size == 1 else mult, "multiplier"),
                                    const(np.array(zy, dtype), "y_zp")),
                     {"axis": 1, "dtype": dtype}, node.name, [name]).output


def _through_bias(v: Value, uses: dict, op: str) -> tuple:
    """``(p, bias)`` for ``v = add(p, bias)`` read once, ``p`` made by ``op`` and read once, ``bias`` a
    constant of one value per channel (flattened); ``(v, None)`` otherwise."""
    if _single(v, uses, "add"):
        a, b = v.node.inputs
        for p, c in ((a, b), (b, a)):
            arr = _evaluate(c)
            if _single(p, uses, op) and arr is not None and arr.size == p.shape[1]:
                return p, arr.reshape(-1)
    return v, None


def _is(v: Value, op: str) -> bool:
    return v.node is not None and v.node.op == op


def _single(v: Value, uses: dict, op: str) -> bool:
    """``v`` is made by ``op`` and read once."""
    return _is(v, op) and uses.get(id(v), 0) == 1


def _scalar(v: Value | None):
    """The one number of a constant ``v`` of one element, else None."""
    arr = None if v is None else _evaluate(v)
    if arr is None or arr.size != 1:
        return None
    return arr.reshape(()).item()


def _evaluate(v: Value, depth: int = 4) -> np.ndarray | None:
    """``v``'s value when it is computed from constants alone (a weight made by ``full`` and
    quantized: folding runs after this pass), else None."""
    arr = const_array(v)
    if arr is not None or v.node is None or depth == 0 or v.nbytes > EVAL_LIMIT_BYTES:
        return arr
    arrays = [_evaluate(x, depth - 1) for x in v.node.inputs]
    if any(a is None for a in arrays):
        return None
    try:
        out = get_op(v.node.op).evaluate(arrays, v.node.attrs)
    except Exception:  # an op without a numpy twin for these inputs: not a constant here
        return None
    return np.asarray(out[next(k for k, o in enumerate(v.node.outputs) if o is v)])


__all__ = ["lower_int8_dense", "lower_qdq_conv"]
