"""Converters of the signal operators: DFT, STFT, the windows, MelWeightMatrix; and BitCast.

A DFT of static length is a product with constant matrices: with
``C[j, k] = cos(2 pi j k / L)`` and ``S[j, k] = sin(2 pi j k / L)``, a signal
``re + i im`` along the transformed axis gives::

    forward   re' = re C + im S           im' = im C - re S
    inverse   re' = (re C - im S) / L     im' = (im C + re S) / L
    irfft     x   = sum_k w_k (re_k C - im_k S) / L   (w = 2 but for k = 0 and L / 2)

each one ``dense`` (``graph.ops``) over the axis moved last; ``onesided`` keeps
the first ``L // 2 + 1`` columns.  STFT gathers the frames (a constant index),
applies the window and transforms each.  Windows and the mel matrix depend on
sizes only: constants computed at import (per value, when the size is a
run-time input).
"""

from __future__ import annotations

import numpy as np

from graph.ir import Value
from graph.onnx.common import norm_axis
from graph.onnx.context import Context, OnnxNode, onnx_dtype
from graph.onnx.table import converter


def _scalar_input(ctx: Context, node: OnnxNode, k: int, what: str, default=None):
    if not node.has_input(k):
        return default
    return np.asarray(ctx.value(node, k, what)).reshape(-1)[0].item()


def _along_last(ctx: Context, v: Value, matrix: np.ndarray) -> Value:
    """``v [..., n] @ matrix [n, m]`` as one ``dense``."""
    lead = v.shape[:-1]
    flat = ctx.reshape(v, (int(np.prod(lead, dtype=np.int64)), v.shape[-1]))
    y = ctx.op("dense", [flat, ctx.const(np.ascontiguousarray(matrix.T.astype(v.dtype)), "dft_matrix")])
    return ctx.reshape(y, lead + (matrix.shape[1],))


def _fit(ctx: Context, v: Value, length: int) -> Value:
    """``v`` [..., n] cut or zero-padded to ``length`` on its last axis."""
    n = v.shape[-1]
    if n > length:
        return ctx.op("strided_slice", [v], {"begin": (0,), "end": (length,), "strides": (1,), "axes": (len(v.shape) - 1,)})
    if n < length:
        zeros = (0,) * len(v.shape)
        return ctx.op("pad", [v], {"pad_before": zeros, "pad_after": zeros[:-1] + (length - n,), "pad_value": 0.0})
    return v


def dft_last_axis(ctx: Context, re: Value, im: Value | None, length: int, inverse: bool, onesided: bool) -> tuple:
    """(re, im or None) of the DFT of ``re + i im`` along the last axis (see the module docstring)."""
    if inverse and onesided:  # irfft: a real signal of ``length`` from the first bins
        bins = length // 2 + 1
        re, im = _fit(ctx, re, bins), None if im is None else _fit(ctx, im, bins)
        j, k = np.meshgrid(np.arange(bins), np.arange(length), indexing="ij")
        w = np.where((j == 0) | (2 * j == length), 1.0, 2.0)[:, :1] / length
        angle = 2 * np.pi * j * k / length
        out = _along_last(ctx, re, w * np.cos(angle))
        if im is not None:
            out = ctx.op("subtract", [out, _along_last(ctx, im, w * np.sin(angle))])
        return out, None
    re, im = _fit(ctx, re, length), None if im is None else _fit(ctx, im, length)
    bins = length // 2 + 1 if onesided else length
    j, k = np.meshgrid(np.arange(length), np.arange(bins), indexing="ij")
    angle = 2 * np.pi * ((j * k) % length) / length
    scale = 1.0 / length if inverse else 1.0
    c, s = np.cos(angle) * scale, np.sin(angle) * scale * (-1.0 if inverse else 1.0)
    out_re, out_im = _along_last(ctx, re, c), ctx.op("negative", [_along_last(ctx, re, s)])
    if im is not None:
        out_re = ctx.op("add", [out_re, _along_last(ctx, im, s)])
        out_im = ctx.op("add", [out_im, _along_last(ctx, im, c)])
    return out_re, out_im


def _split_complex(ctx: Context, node: OnnxNode, x: Value) -> tuple:
    c = x.shape[-1]
    if c not in (1, 2):
        raise node.error(f"the last axis of input {x.shape} must hold 1 (real) or 2 (complex) values")
    part = lambda k: ctx.reshape(ctx.op("strided_slice", [x], {"begin": (k,), "end": (k + 1,), "strides": (1,),  # noqa: E731
                                                               "axes": (len(x.shape) - 1,)}), x.shape[:-1])
    return part(0), (part(1) if c == 2 else None)


def _join_complex(ctx: Context, re: Value, im: Value | None) -> Value:
    if im is None:
        return ctx.reshape(re, re.shape + (1,))
    return ctx.op("concatenate", [ctx.reshape(re, re.shape + (1,)), ctx.reshape(im, im.shape + (1,))],
                  {"axis": len(re.shape)})


def _dft(ctx: Context, node: OnnxNode, axis: int) -> list:
    x = node.input(0, "input")
    rank = len(x.shape)
    axis = norm_axis(node, axis, rank)
    if axis == rank - 1:
        raise node.error(f"axis {axis} is the complex axis of input {x.shape}")
    inverse, onesided = bool(node.attr("inverse", 0)), bool(node.attr("onesided", 0))
    default = 2 * (x.shape[axis] - 1) if inverse and onesided else x.shape[axis]
    length = int(_scalar_input(ctx, node, 1, "dft_length", default))
    if length < 1:
        raise node.error(f"dft_length={length} must be positive")
    re, im = _split_complex(ctx, node, x)
    perm = [a for a in range(rank - 1) if a != axis] + [axis]
    back = list(np.argsort(perm))
    re, im = ctx.transpose(re, perm), None if im is None else ctx.transpose(im, perm)
    re, im = dft_last_axis(ctx, re, im, length, inverse, onesided)
    re, im = ctx.transpose(re, back), None if im is None else ctx.transpose(im, back)
    if im is None and not (inverse and onesided):
        im = ctx.op("full", [], {"shape": re.shape, "value": 0.0, "dtype": re.dtype})
    return [_join_complex(ctx, re, im)]


@converter("DFT", since=17, until=19)
def convert_dft_v17(ctx: Context, node: OnnxNode) -> list:
    """``axis`` is an attribute (default 1)."""
    return _dft(ctx, node, int(node.attr("axis", 1)))


@converter("DFT", since=20)
def convert_dft_v20(ctx: Context, node: OnnxNode) -> list:
    """``axis`` is an input (default -2)."""
    return _dft(ctx, node, int(_scalar_input(ctx, node, 2, "axis", -2)))


@converter("STFT", since=17)
def convert_stft(ctx: Context, node: OnnxNode) -> list:
    """Frames of ``frame_length`` every ``frame_step`` samples, windowed, each transformed."""
    x = node.input(0, "signal")
    if len(x.shape) != 3:
        raise node.error(f"signal must be [batch, length, 1 or 2], got {x.shape}")
    step = int(_scalar_input(ctx, node, 1, "frame_step"))
    window = node.inputs[2] if node.has_input(2) else None
    length = _scalar_input(ctx, node, 3, "frame_length", None if window is None else window.shape[0])
    if length is None or step < 1 or not 0 < int(length) <= x.shape[1]:
        raise node.error(f"frame_step={step} and frame_length={length} do not frame a signal of {x.shape[1]}")
    length = int(length)
    frames = (x.shape[1] - length) // step + 1
    index = (np.arange(frames)[:, None] * step + np.arange(length)[None, :]).astype(np.int64)
    framed = ctx.op("take", [x, ctx.const(index, "frames")], {"axis": 1})  # [B, F, L, c]
    re, im = _split_complex(ctx, node, framed)
    if window is not None:
        re = ctx.op("multiply", [re, window])
        im = None if im is None else ctx.op("multiply", [im, window])
    onesided = bool(node.attr("onesided", 1)) and im is None
    re, im = dft_last_axis(ctx, re, im, length, False, onesided)
    return [_join_complex(ctx, re, im)]


def _window(kind: str):
    def convert(ctx: Context, node: OnnxNode) -> list:
        size = int(np.asarray(ctx.value(node, 0, "size")).reshape(-1)[0])
        dtype = onnx_dtype(int(node.attr("output_datatype", 1)))
        if dtype is None or size < 0:
            raise node.error(f"output_datatype={node.attr('output_datatype')} or size={size} is not supported")
        n = np.arange(size, dtype=np.float64)
        denominator = size if node.attr("periodic", 1) else size - 1
        angle = 2 * np.pi * n / max(denominator, 1)
        if kind == "hann":
            w = 0.5 - 0.5 * np.cos(angle)
        elif kind == "hamming":
            w = 25.0 / 46.0 - (21.0 / 46.0) * np.cos(angle)
        else:
            w = 0.42 - 0.5 * np.cos(angle) + 0.08 * np.cos(2 * angle)
        return [ctx.const(w.astype(dtype), f"{kind}_window")]

    convert.__name__ = f"convert_{kind}_window"
    convert.__doc__ = f"The {kind} window of ``size`` samples (periodic or symmetric), a constant."
    return convert


for _kind, _op in (("hann", "HannWindow"), ("hamming", "HammingWindow"), ("blackman", "BlackmanWindow")):
    converter(_op, since=17)(_window(_kind))


def mel_weight_matrix(bins: int, dft_length: int, rate: int, low: float, high: float) -> np.ndarray:
    """``[dft_length // 2 + 1, bins]`` triangular filters evenly spaced on the mel scale
    (``mel = 2595 log10(1 + f / 700)``), their edges on the DFT bins as ONNX computes them."""
    def to_mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    mels = to_mel(low) + np.arange(bins + 2) * (to_mel(high) - to_mel(low)) / (bins + 2)
    hertz = 700.0 * (10.0 ** (mels / 2595.0) - 1.0)
    edge = (((dft_length + 1) * hertz) // rate).astype(np.int64)
    out = np.zeros((dft_length // 2 + 1, bins))
    j = np.arange(out.shape[0])[:, None]
    left, centre, right = edge[:-2][None, :], edge[1:-1][None, :], edge[2:][None, :]
    rising = np.where((j >= left) & (j <= centre), (j - left) / np.maximum(centre - left, 1), 0.0)
    rising = np.where((centre == left) & (j == centre), 1.0, rising)
    falling = np.where((j >= centre) & (j < right), (right - j) / np.maximum(right - centre, 1), 0.0)
    return np.where((j >= centre) & (j < right) & (right > centre), falling, rising)


@converter("MelWeightMatrix", since=17)
def convert_mel_weight_matrix(ctx: Context, node: OnnxNode) -> list:
    args = [np.asarray(ctx.value(node, k, what)).reshape(-1)[0].item()
            for k, what in enumerate(("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
                                      "upper_edge_hertz"))]
    dtype = onnx_dtype(int(node.attr("output_datatype", 1)))
    return [ctx.const(mel_weight_matrix(int(args[0]), int(args[1]), int(args[2]), args[3], args[4]).astype(dtype),
                      "mel")]


@converter("BitCast", since=26)
def convert_bitcast(ctx: Context, node: OnnxNode) -> list:
    """The same bits as another type of the same width (``bitcast``)."""
    x = node.input(0, "input")
    dtype = onnx_dtype(int(node.required("to")))
    if dtype is None or np.dtype(dtype).itemsize != np.dtype(x.dtype).itemsize:
        raise node.error(f"to={node.attr('to')} is not a type of {x.dtype}'s width")
    return [ctx.op("bitcast", [x], {"dtype": dtype})]
