"""The Winograd rule's streaming tile, paired: a model built as the rule stands against the same
model built with F(4x4) wherever the output allows it (``f4x4_streams`` never true).

Where F(4x4)'s transformed kernel streams from memory (``topi.x86.conv2d_winograd.f4x4_streams``:
past ``STREAM_KERNEL_BYTES``, or past ``STREAM_SHARED_BYTES`` over fewer than ``STREAM_MIN_TILES``
tiles) the rule takes F(2x2) (ResNet-50's 512->512 @7: 16.7 against 37.7 MB, which no call finds
in the caches; its 256->256 @14: 4.2 against 9.4 MB over 16 tiles).  Both builds live in this
process; each round times both (``codegen.timing.paired``: the fastest of 3 runs each, 2 threads, the
vCPUs' state read first), and the figure is the median over the near-state rounds of
(rule / F(4x4)), with its interquartile range: the machine's drift, which moves both builds of
one round alike, cancels.

    python benchmarks/winograd_stream_ab.py [MODEL] [--seconds 90]
"""

from __future__ import annotations

import argparse
import os
import sys
from unittest import mock

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from graph_models import model_path, seeded_feed  # noqa: E402
from graph.tuning import node_configs  # noqa: E402

import graph  # noqa: E402
from codegen.timing import paired, paired_ratio  # noqa: E402
import topi.x86.conv2d_winograd as winograd  # noqa: E402


def executor(g, params, rule: bool):
    """An executor of ``g`` built with the Winograd rule as it stands (``rule``) or with F(4x4)
    wherever the output allows it, and the tiles its Winograd convs took."""
    streams = winograd.f4x4_streams if rule else (lambda workload, size: False)
    with mock.patch.object(winograd, "f4x4_streams", streams):
        lib = graph.build(g, target="llvm", params=params)
    tiles = [cfg["tile"].val for n in lib.graph.nodes for cfg in node_configs(n)
             if cfg.template == winograd.TEMPLATE]
    m = lib.create_executor()
    m.set_input(**seeded_feed(lib))
    m.run()
    return m, tiles


def main(argv: list | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", nargs="?", default="resnet50")
    p.add_argument("--seconds", type=float, default=90.0)
    a = p.parse_args(argv)
    g, params = graph.from_onnx(model_path(a.model))
    rule, rule_tiles = executor(g, params, True)
    wide, wide_tiles = executor(g, params, False)
    if rule_tiles == wide_tiles:
        print(f"{a.model}: no Winograd conv passes the streaming limit; both builds are the same")
        return {}
    diff = float(np.max(np.abs(rule.get_output(0) - wide.get_output(0))))
    print(f"{a.model}: Winograd tiles {rule_tiles} (rule) against {wide_tiles}; outputs differ by {diff:.2e}")
    rounds = paired({"rule": rule.run, "f4x4": wide.run}, a.seconds)
    for k in ("rule", "f4x4"):
        print(f"{k:5s} median {1e3 * float(np.median(rounds[k])):.2f} ms over {len(rounds[k])} rounds")
    q = paired_ratio(rounds, "rule", "f4x4")
    print(f"rule / F(4x4): median {q[0]:.3f} (IQR {q[1]:.3f}-{q[2]:.3f}) over {q[3]} near-state rounds")
    return {"ratio": q[0], "rounds": q[3]}


if __name__ == "__main__":
    main()
