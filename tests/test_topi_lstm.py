"""topi.nn.lstm (a te.scan over the time steps) against topi.testing.lstm_python."""

import numpy as np
import pytest

import codegen
import te
import topi
from schedule.lower import lower
from topi.testing import lstm_python


def _args(seq, batch, in_dim, hidden, proj=0, peephole=False, zero_init=True, bias=True, seed=0):
    rng = np.random.default_rng(seed)
    out = proj or hidden
    r = lambda *s: rng.uniform(-0.4, 0.4, size=s).astype("float32")  # noqa: E731
    return [rng.normal(size=(seq, batch, in_dim)).astype("float32"), r(4 * hidden, in_dim), r(4 * hidden, out),
            r(4 * hidden) if bias else None, r(4 * hidden) if bias else None,
            None if zero_init else r(batch, out), None if zero_init else r(batch, hidden),
            r(proj, hidden) if proj else None] + ([r(batch, hidden) for _ in range(3)] if peephole else [None] * 3)


@pytest.mark.parametrize("seq,batch,in_dim,hidden,proj,peephole,reverse,layout,zero_init,bias", [
    (1, 1, 1, 1, 0, False, False, "IFGO", True, True),
    (7, 3, 9, 13, 0, False, False, "IFGO", False, True),
    (5, 2, 7, 11, 4, True, True, "OIGF", False, True),
    (6, 4, 5, 10, 0, False, True, "IOFG", True, False),
])
def test_lstm_matches_the_reference(seq, batch, in_dim, hidden, proj, peephole, reverse, layout, zero_init, bias):
    args = _args(seq, batch, in_dim, hidden, proj, peephole, zero_init, bias)
    ph = [te.placeholder(a.shape, name=f"a{k}") if a is not None else None for k, a in enumerate(args)]
    hs, cs = topi.nn.lstm(*ph, reverse=reverse, weight_layout=layout)
    f = codegen.build(topi.generic.schedule_lstm([hs, cs]), [p for p in ph if p is not None] + [hs, cs])
    got_h = np.full((seq, batch, proj or hidden), np.nan, "float32")
    got_c = np.full((seq, batch, hidden), np.nan, "float32")
    f(*[a for a in args if a is not None], got_h, got_c)
    want_h, want_c = lstm_python(*args, reverse=reverse, weight_layout=layout)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_c, want_c, rtol=1e-4, atol=1e-5)


def test_the_input_projection_runs_once_before_the_recurrence():
    ph = [te.placeholder(s, name=n) for s, n in (((6, 2, 5), "X"), ((12, 5), "Wi"), ((12, 3), "Wh"))]
    hs, cs = topi.nn.lstm(*ph)
    text = str(lower(topi.generic.schedule_lstm([hs, cs]), ph + [hs, cs]))
    assert text.index("produce lstm_xi2h") < text.index("for (lstm_scan.idx")
    assert "parallel" in text.split("produce lstm_xi2h")[1].split("produce")[0]


def test_lstm_refuses_a_bad_weight_layout():
    ph = [te.placeholder(s) for s in ((6, 2, 5), (12, 5), (12, 3))]
    with pytest.raises(ValueError, match="weight_layout must order the four gates I, F, G, O"):
        topi.nn.lstm(*ph, weight_layout="IFGG")
