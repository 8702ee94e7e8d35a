"""``topi.nn.lstm``: a long short-term memory layer over a sequence, as classic TVM's.

The input projection of every time step is one matrix product before the recurrence
(``Xs @ Wi^T`` over all steps); the recurrence is a ``te.scan`` over ``seq_len + 1`` steps whose
step 0 is the initial state, each later step reading the previous one: the hidden-state product
``h @ Wh^T``, the gates, the cell and hidden states (optionally projected by ``proj``; peephole
weights ``p_i``/``p_f`` on the previous cell, ``p_o`` on the new one).  ``weight_layout`` names the
order of the four gates packed in ``Wi``/``Wh``/``Bi``/``Bh`` (PyTorch's ``IFGO``, ONNX's ``IOFG``...).
"""

from __future__ import annotations

import te
from te.tensor import Tensor

__all__ = ["lstm"]


def _gate_order(weight_layout: str) -> dict:
    if len(weight_layout) != 4 or sorted(weight_layout) != sorted("IFGO"):
        raise ValueError(f"lstm: weight_layout must order the four gates I, F, G, O (e.g. 'IFGO'), "
                         f"got {weight_layout!r}")
    return {g: weight_layout.index(g) for g in "IFGO"}


def lstm(Xs: Tensor, Wi: Tensor, Wh: Tensor, Bi: Tensor | None = None, Bh: Tensor | None = None,
         h_init: Tensor | None = None, c_init: Tensor | None = None, proj: Tensor | None = None,
         p_i: Tensor | None = None, p_f: Tensor | None = None, p_o: Tensor | None = None,
         f_act=te.sigmoid, g_act=te.tanh, h_act=te.tanh, reverse: bool = False,
         weight_layout: str = "IFGO"):
    """``(hs, cs)``: the hidden states ``(seq_len, batch, out_dim)`` and the cell states
    ``(seq_len, batch, hidden_dim)`` of every step, in the order the steps run (``reverse``: the
    sequence read from its end).

    ``Xs`` (seq_len, batch, in_dim); ``Wi`` (4 * hidden, in_dim); ``Wh`` (4 * hidden, out_dim),
    ``out_dim`` = ``proj``'s rows if given (``proj``: (out_dim, hidden)), else hidden; ``Bi``/``Bh``
    (4 * hidden,); ``h_init`` (batch, out_dim) and ``c_init`` (batch, hidden), zeros if absent;
    ``p_i``/``p_f``/``p_o`` (batch, hidden).  ``f_act`` (the I, F and O gates), ``g_act`` (G) and
    ``h_act`` (the cell's output) take and return expressions."""
    gate = _gate_order(weight_layout)
    if len(Xs.shape) != 3 or len(Wi.shape) != 2 or len(Wh.shape) != 2:
        raise ValueError(f"lstm: Xs must be (seq_len, batch, in_dim), Wi and Wh 2-D; got {tuple(Xs.shape)}, "
                         f"{tuple(Wi.shape)}, {tuple(Wh.shape)}")
    seq_len, batch, in_dim = Xs.shape
    hidden = te.indexdiv(Wi.shape[0], 4) if not isinstance(Wi.shape[0], int) else Wi.shape[0] // 4
    out_dim = Wh.shape[1]
    dtype = Xs.dtype

    k = te.reduce_axis((0, in_dim), name="ki")
    step = (lambda t: seq_len - 1 - t) if reverse else (lambda t: t)
    xi2h = te.compute((seq_len, batch, Wi.shape[0]),
                      lambda t, b, j: te.sum(Xs[step(t), b, k] * Wi[j, k], axis=k), name="lstm_xi2h")

    h_state = te.placeholder((seq_len + 1, batch, out_dim), dtype, name="lstm_h_state")
    c_state = te.placeholder((seq_len + 1, batch, hidden), dtype, name="lstm_c_state")
    h0 = te.compute((1, batch, out_dim), (lambda _, b, i: h_init[b, i]) if h_init is not None
                    else (lambda _, b, i: te.const(0.0, dtype)), name="lstm_h0")
    c0 = te.compute((1, batch, hidden), (lambda _, b, i: c_init[b, i]) if c_init is not None
                    else (lambda _, b, i: te.const(0.0, dtype)), name="lstm_c0")

    kh = te.reduce_axis((0, out_dim), name="kh")
    hh = te.compute((seq_len + 1, batch, Wh.shape[0]),
                    lambda t, b, j: te.sum(h_state[t - 1, b, kh] * Wh[j, kh], axis=kh), name="lstm_hh")

    def pre(g, t, b, j):
        """The gate ``g``'s input at step t (1-based: step t reads the state of step t - 1)."""
        col = gate[g] * hidden + j
        v = xi2h[t - 1, b, col] + hh[t, b, col]
        if Bi is not None:
            v = v + Bi[col]
        if Bh is not None:
            v = v + Bh[col]
        return v

    def next_cell(t, b, j):
        c_prev = c_state[t - 1, b, j]
        i_in, f_in = pre("I", t, b, j), pre("F", t, b, j)
        if p_i is not None and p_f is not None:  # peepholes (both or neither, as the classic reference)
            i_in, f_in = i_in + p_i[b, j] * c_prev, f_in + p_f[b, j] * c_prev
        return f_act(f_in) * c_prev + f_act(i_in) * g_act(pre("G", t, b, j))

    next_c = te.compute((seq_len + 1, batch, hidden), next_cell, name="lstm_next_c")

    def hidden_out(t, b, j):
        o_in = pre("O", t, b, j)
        if p_o is not None:
            o_in = o_in + p_o[b, j] * next_c[t, b, j]
        return f_act(o_in) * h_act(next_c[t, b, j])

    if proj is None:
        next_h = te.compute((seq_len + 1, batch, hidden), hidden_out, name="lstm_next_h")
    else:
        h_pre = te.compute((seq_len + 1, batch, hidden), hidden_out, name="lstm_h_pre")
        kp = te.reduce_axis((0, hidden), name="kp")
        next_h = te.compute((seq_len + 1, batch, out_dim),
                            lambda t, b, i: te.sum(h_pre[t, b, kp] * proj[i, kp], axis=kp), name="lstm_next_h")

    # no `inputs`: the input projection reads no state, so it runs once before the scan (te.scan
    # counts the stages that read declared inputs as part of each step)
    scan_h, scan_c = te.scan([h0, c0], [next_h, next_c], [h_state, c_state], name="lstm_scan")
    hs = te.compute((seq_len, batch, out_dim), lambda t, b, i: scan_h[t + 1, b, i], name="hs", tag="lstm")
    cs = te.compute((seq_len, batch, hidden), lambda t, b, j: scan_c[t + 1, b, j], name="cs", tag="lstm")
    return hs, cs
