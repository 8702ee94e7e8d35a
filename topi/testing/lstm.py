"""numpy reference of ``topi.nn.lstm`` (classic ``topi.testing.lstm_python``)."""

from __future__ import annotations

import numpy as np

_ACTS = {"sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "tanh": np.tanh}


def lstm_python(Xs, Wi, Wh, Bi=None, Bh=None, h_init=None, c_init=None, proj=None, p_i=None, p_f=None,
                p_o=None, f_act: str = "sigmoid", g_act: str = "tanh", h_act: str = "tanh",
                reverse: bool = False, weight_layout: str = "IFGO"):
    """``(hs, cs)`` of every step, in the order the steps run (see ``topi.nn.lstm``)."""
    fa, ga, ha = _ACTS[f_act], _ACTS[g_act], _ACTS[h_act]
    seq_len, batch, _ = Xs.shape
    hidden = Wi.shape[0] // 4
    out_dim = Wh.shape[1]
    h = np.zeros((batch, out_dim), Xs.dtype) if h_init is None else h_init
    c = np.zeros((batch, hidden), Xs.dtype) if c_init is None else c_init
    hs, cs = [], []
    for step in range(seq_len):
        x = Xs[seq_len - 1 - step if reverse else step]
        z = x @ Wi.T + h @ Wh.T
        if Bi is not None:
            z = z + Bi
        if Bh is not None:
            z = z + Bh
        gates = {g: z[:, n * hidden:(n + 1) * hidden] for n, g in enumerate(weight_layout)}
        i_in, f_in = gates["I"], gates["F"]
        if p_i is not None and p_f is not None:
            i_in, f_in = i_in + p_i * c, f_in + p_f * c
        c = fa(f_in) * c + fa(i_in) * ga(gates["G"])
        o_in = gates["O"] + (p_o * c if p_o is not None else 0)
        h = fa(o_in) * ha(c)
        if proj is not None:
            h = h @ proj.T
        hs.append(h)
        cs.append(c)
    return np.stack(hs).astype(Xs.dtype), np.stack(cs).astype(Xs.dtype)
