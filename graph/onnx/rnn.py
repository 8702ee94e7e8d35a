"""Converters of the recurrent ONNX operators: RNN, GRU, LSTM, unrolled over the (static) sequence.

Per direction, the input projection of every step is one ``dense``
(``[seq * batch, input] x W^T``); each step then adds ``h @ R^T`` and the biases,
slices the gates and applies the activations::

    LSTM  i, o, f = f(.. + P (.) c);  c~ = g(..);  c = f (.) c + i (.) c~;  h = o (.) h(c)
    GRU   z, r = f(..);  h~ = g(x W_h + (r (.) h) R_h + ..)   (linear_before_reset: r (.) (h R_h + Rb_h))
          h = (1 - z) (.) h~ + z (.) h
    RNN   h = f(x W + h R + Wb + Rb)

``sequence_lens`` masks the steps past each batch entry's length: its state
stops there and its ``Y`` rows are 0; the reverse direction first reverses
each entry within its own length (and its outputs back).  ``clip`` bounds the
gate inputs; ``activations`` with ``activation_alpha``/``activation_beta`` are
consumed in order, per direction; ``layout=1`` puts the batch first.
"""

from __future__ import annotations

import numpy as np

from graph.ir import Value
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter

# activation -> (alpha default, beta default); None where it takes no such parameter.
_ACTIVATIONS = {"Relu": (None, None), "Tanh": (None, None), "Sigmoid": (None, None), "Softsign": (None, None),
                "Softplus": (None, None), "Affine": (1.0, 0.0), "LeakyRelu": (0.01, None),
                "ThresholdedRelu": (1.0, None), "ScaledTanh": (1.0, 1.0), "HardSigmoid": (0.2, 0.5),
                "Elu": (1.0, None)}


def _activations(node: OnnxNode, defaults: list, directions: int) -> list:
    """[(name, alpha, beta)] per direction, the attribute lists consumed in order."""
    names = list(node.attr("activations") or defaults * directions)
    alphas, betas = list(node.attr("activation_alpha") or []), list(node.attr("activation_beta") or [])
    if len(names) != len(defaults) * directions:
        raise node.error(f"activations {names} must name {len(defaults)} functions per direction")
    out = []
    for name in names:
        canon = next((k for k in _ACTIVATIONS if k.lower() == str(name).lower()), None)
        if canon is None:
            raise node.error(f"activation {name!r} is not one of {sorted(_ACTIVATIONS)}")
        da, db = _ACTIVATIONS[canon]
        alpha = (alphas.pop(0) if alphas else da) if da is not None else None
        beta = (betas.pop(0) if betas else db) if db is not None else None
        out.append((canon, alpha, beta))
    return [out[k * len(defaults):(k + 1) * len(defaults)] for k in range(directions)]


def _apply(ctx: Context, act: tuple, x: Value) -> Value:
    name, alpha, beta = act
    s = lambda v: ctx.scalar(v, x.dtype)  # noqa: E731
    if name == "Relu":
        return ctx.op("relu", [x])
    if name == "Tanh":
        return ctx.op("tanh", [x])
    if name == "Sigmoid":
        return ctx.op("sigmoid", [x])
    if name == "Softsign":
        return ctx.op("divide", [x, ctx.op("add", [ctx.op("abs", [x]), s(1.0)])])
    if name == "Softplus":
        return ctx.op("softplus", [x])
    if name == "Affine":
        return ctx.op("add", [ctx.op("multiply", [x, s(alpha)]), s(beta)])
    if name == "LeakyRelu":
        return ctx.op("leaky_relu", [x], {"alpha": float(alpha)})
    if name == "ThresholdedRelu":
        return ctx.op("where", [ctx.op("greater", [x, s(alpha)]), x, s(0.0)])
    if name == "ScaledTanh":
        return ctx.op("multiply", [ctx.op("tanh", [ctx.op("multiply", [x, s(beta)])]), s(alpha)])
    if name == "HardSigmoid":
        y = ctx.op("add", [ctx.op("multiply", [x, s(alpha)]), s(beta)])
        return ctx.op("clip", [y], {"a_min": 0.0, "a_max": 1.0})
    return ctx.op("elu", [x], {"alpha": float(alpha)})


class _Cell:
    """What every step of one direction reads: weights, biases, clip, mask inputs."""

    def __init__(self, ctx: Context, node: OnnxNode, d: int, gates: int, hidden: int):
        self.ctx, self.node, self.hidden, self.gates, self.d = ctx, node, hidden, gates, d
        w, r = node.input(1, "W"), node.input(2, "R")
        self.w = self._take(w, d)  # [G*H, I]
        self.r = self._take(r, d)  # [G*H, H]
        self.wb = self.rb = None
        if node.has_input(3):
            b = self._take(node.input(3, "B"), d)  # [2*G*H]
            self.wb = self._slice(b, 0, gates * hidden, 0)
            self.rb = self._slice(b, gates * hidden, 2 * gates * hidden, 0)
        clip = node.attr("clip")
        self.clip = None if clip is None else float(clip)

    def _take(self, v: Value, d: int) -> Value:
        part = self._slice(v, d, d + 1, 0)
        return self.ctx.reshape(part, v.shape[1:])

    def _slice(self, v: Value, lo: int, hi: int, axis: int) -> Value:
        if lo == 0 and hi == v.shape[axis]:
            return v
        return self.ctx.op("strided_slice", [v], {"begin": (lo,), "end": (hi,), "strides": (1,), "axes": (axis,)})

    def gate(self, v: Value, k: int) -> Value:
        """Gate ``k`` (columns ``[k*H, (k+1)*H)``) of ``[batch, G*H]``."""
        return self._slice(v, k * self.hidden, (k + 1) * self.hidden, 1)

    def recurrent(self, h: Value) -> Value:
        return self.ctx.op("dense", [h, self.r])

    def clipped(self, v: Value) -> Value:
        if self.clip is None:
            return v
        return self.ctx.op("clip", [v], {"a_min": -self.clip, "a_max": self.clip})


def _inputs(ctx: Context, node: OnnxNode, directions: int, hidden: int) -> tuple:
    """(X as [seq, batch, input], sequence lengths or None, initial h per direction, batch, seq)."""
    x = node.input(0, "X")
    layout = int(node.attr("layout", 0))
    if len(x.shape) != 3:
        raise node.error(f"X must be 3-D, got {x.shape}")
    if layout:
        x = ctx.transpose(x, (1, 0, 2))
    seq, batch, _ = x.shape
    lens = node.inputs[4] if node.has_input(4) else None
    if lens is not None:
        lens = ctx.cast(lens, "int64")
    h0 = _initial(ctx, node, 5, directions, batch, hidden, layout, x.dtype)
    return x, lens, h0, batch, seq


def _initial(ctx: Context, node: OnnxNode, k: int, directions: int, batch: int, hidden: int, layout: int,
             dtype: str) -> list:
    if not node.has_input(k):
        zero = ctx.op("full", [], {"shape": (batch, hidden), "value": 0.0, "dtype": dtype})
        return [zero] * directions
    v = node.inputs[k]
    if layout:
        v = ctx.transpose(v, (1, 0, 2))
    return [ctx.reshape(ctx.op("strided_slice", [v], {"begin": (d,), "end": (d + 1,), "strides": (1,), "axes": (0,)}),
                        (batch, hidden)) for d in range(directions)]


def _reverse_within(ctx: Context, x: Value, lens: Value | None) -> Value:
    """``x`` [seq, batch, ...] with each batch entry's first ``lens[b]`` steps reversed."""
    seq = x.shape[0]
    if lens is None:
        return ctx.reverse(x, 0)
    t = ctx.const(np.arange(seq, dtype=np.int64).reshape((seq, 1)), "time")
    back = ctx.op("subtract", [ctx.op("subtract", [ctx.reshape(lens, (1, x.shape[1])), ctx.scalar(1, "int64")]), t])
    src = ctx.op("where", [ctx.op("less", [t, ctx.reshape(lens, (1, x.shape[1]))]), back, t])
    src = ctx.reshape(src, src.shape + (1,) * (len(x.shape) - 2))
    src = ctx.op("broadcast_to", [src], {"shape": x.shape})
    return ctx.op("gather_elements", [x, src], {"axis": 0})


def _run(ctx: Context, node: OnnxNode, gates: int, defaults: list, step) -> list:
    """Run ``step(cell, acts, xw_t, state, t) -> (h, state)`` over every direction; outputs
    (Y, Y_h, and the last state's second part for LSTM)."""
    direction = node.attr("direction", "forward")
    directions = 2 if direction == "bidirectional" else 1
    if direction not in ("forward", "reverse", "bidirectional"):
        raise node.error(f"direction={direction!r} is not forward, reverse or bidirectional")
    hidden = int(node.required("hidden_size"))
    x, lens, h0, batch, seq = _inputs(ctx, node, directions, hidden)
    acts = _activations(node, defaults, directions)
    c0 = _initial(ctx, node, 6, directions, batch, hidden, int(node.attr("layout", 0)), x.dtype) \
        if node.op_type == "LSTM" else [None] * directions
    ys, hs, cs = [], [], []
    for d in range(directions):
        reverse = direction == "reverse" or d == 1
        cell = _Cell(ctx, node, d, gates, hidden)
        xd = _reverse_within(ctx, x, lens) if reverse else x
        xw = ctx.reshape(ctx.op("dense", [ctx.reshape(xd, (seq * batch, x.shape[2])), cell.w]),
                         (seq, batch, gates * hidden))
        if cell.wb is not None:
            xw = ctx.op("add", [xw, cell.wb])
        h, c, outs = h0[d], c0[d], []
        for t in range(seq):
            xw_t = ctx.reshape(ctx.op("strided_slice", [xw], {"begin": (t,), "end": (t + 1,), "strides": (1,),
                                                              "axes": (0,)}), (batch, gates * hidden))
            h_new, c_new = step(cell, acts[d], xw_t, h, c)
            if lens is not None:
                keep = ctx.reshape(ctx.op("less", [ctx.scalar(t, "int64"), lens]), (batch, 1))
                outs.append(ctx.op("where", [keep, h_new, ctx.scalar(0.0, x.dtype)]))
                h_new = ctx.op("where", [keep, h_new, h])
                c_new = None if c is None else ctx.op("where", [keep, c_new, c])
            else:
                outs.append(h_new)
            h, c = h_new, c_new
        y = ctx.op("concatenate", [ctx.reshape(o, (1, batch, hidden)) for o in outs], {"axis": 0}) if seq > 1 \
            else ctx.reshape(outs[0], (1, batch, hidden)) if outs else None
        if y is None:
            raise node.error("X has no time steps")
        if reverse:
            y = _reverse_within(ctx, y, lens)
        ys.append(ctx.reshape(y, (seq, 1, batch, hidden)))
        hs.append(ctx.reshape(h, (1, batch, hidden)))
        cs.append(None if c is None else ctx.reshape(c, (1, batch, hidden)))
    cat = (lambda vs, axis: vs[0] if len(vs) == 1 else ctx.op("concatenate", vs, {"axis": axis}))  # noqa: E731
    y, y_h = cat(ys, 1), cat(hs, 0)
    y_c = cat(cs, 0) if cs[0] is not None else None
    if int(node.attr("layout", 0)):
        y = ctx.transpose(y, (2, 0, 1, 3))
        y_h = ctx.transpose(y_h, (1, 0, 2))
        y_c = None if y_c is None else ctx.transpose(y_c, (1, 0, 2))
    return [y, y_h, y_c]


@converter("RNN", since=7)
def convert_rnn(ctx: Context, node: OnnxNode) -> list:
    def step(cell, acts, xw, h, c):
        pre = ctx.op("add", [xw, cell.recurrent(h)])
        if cell.rb is not None:
            pre = ctx.op("add", [pre, cell.rb])
        return _apply(ctx, acts[0], cell.clipped(pre)), None

    return _run(ctx, node, 1, ["Tanh"], step)[:2]


@converter("GRU", since=7)
def convert_gru(ctx: Context, node: OnnxNode) -> list:
    before_reset = bool(node.attr("linear_before_reset", 0))

    def step(cell, acts, xw, h, c):
        hidden = cell.hidden
        rec = ctx.op("dense", [h, cell._slice(cell.r, 0, 2 * hidden, 0)])  # z and r columns
        if cell.rb is not None:
            rec = ctx.op("add", [rec, cell._slice(cell.rb, 0, 2 * hidden, 0)])
        zr = ctx.op("add", [cell._slice(xw, 0, 2 * hidden, 1), rec])
        z = _apply(ctx, acts[0], cell.clipped(cell.gate(zr, 0)))
        r = _apply(ctx, acts[0], cell.clipped(cell.gate(zr, 1)))
        r_h = cell._slice(cell.r, 2 * hidden, 3 * hidden, 0)
        rb_h = None if cell.rb is None else cell._slice(cell.rb, 2 * hidden, 3 * hidden, 0)
        if before_reset:
            hr = ctx.op("dense", [h, r_h])
            hr = hr if rb_h is None else ctx.op("add", [hr, rb_h])
            rec_h = ctx.op("multiply", [r, hr])
        else:
            rec_h = ctx.op("dense", [ctx.op("multiply", [r, h]), r_h])
            rec_h = rec_h if rb_h is None else ctx.op("add", [rec_h, rb_h])
        cand = _apply(ctx, acts[1], cell.clipped(ctx.op("add", [cell.gate(xw, 2), rec_h])))
        one_minus = ctx.op("subtract", [ctx.scalar(1.0, z.dtype), z])
        return ctx.op("add", [ctx.op("multiply", [one_minus, cand]), ctx.op("multiply", [z, h])]), None

    return _run(ctx, node, 3, ["Sigmoid", "Tanh"], step)[:2]


@converter("LSTM", since=7)
def convert_lstm(ctx: Context, node: OnnxNode) -> list:
    """Gates in ONNX's order i, o, f, c; peepholes ``P`` ([i, o, f]) and ``input_forget``."""
    couple = bool(node.attr("input_forget", 0))
    peep = node.inputs[7] if node.has_input(7) else None

    def step(cell, acts, xw, h, c):
        pre = ctx.op("add", [xw, cell.recurrent(h)])
        if cell.rb is not None:
            pre = ctx.op("add", [pre, cell.rb])
        p = None if peep is None else cell._take(peep, cell.d)
        gi, go, gf, gc = (cell.gate(pre, k) for k in range(4))
        if p is not None:
            gi = ctx.op("add", [gi, ctx.op("multiply", [cell._slice(p, 0, cell.hidden, 0), c])])
            gf = ctx.op("add", [gf, ctx.op("multiply", [cell._slice(p, 2 * cell.hidden, 3 * cell.hidden, 0), c])])
        i = _apply(ctx, acts[0], cell.clipped(gi))
        f = ctx.op("subtract", [ctx.scalar(1.0, i.dtype), i]) if couple else _apply(ctx, acts[0], cell.clipped(gf))
        cand = _apply(ctx, acts[1], cell.clipped(gc))
        c_new = ctx.op("add", [ctx.op("multiply", [f, c]), ctx.op("multiply", [i, cand])])
        if p is not None:
            go = ctx.op("add", [go, ctx.op("multiply", [cell._slice(p, cell.hidden, 2 * cell.hidden, 0), c_new])])
        o = _apply(ctx, acts[0], cell.clipped(go))
        return ctx.op("multiply", [o, _apply(ctx, acts[2], c_new)]), c_new

    return _run(ctx, node, 4, ["Sigmoid", "Tanh", "Tanh"], step)
