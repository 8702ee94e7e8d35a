"""Pictures of performance: a roofline, latencies against a peer, tuning curves.

The one plotting module, shared by ``tessera tune --plot`` and
``benchmarks/report.py``.  matplotlib is an optional extra (``pip install
matplotlib``); every function imports it on use and raises ``ImportError``
naming the package when it is missing.  Each function writes one PNG and
takes plain data, so it can be called from anywhere.
"""

from __future__ import annotations

import math
import os


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install matplotlib") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def tuning_curves(curves: dict, out: str, title: str = "tuning", unit: str = "GFLOP/s") -> str:
    """One line per task: the best speed found after each trial (whether to tune longer).

    ``curves``: label -> [best speed after trial 1, 2, ...] (``tune.deployed.best_curves``)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    for k, (label, curve) in enumerate(curves.items()):
        if curve:
            ax.plot(range(1, len(curve) + 1), curve, label=f"{k + 1}: {label}"[:60])
    ax.set_xlabel("trials")
    ax.set_ylabel(f"best {unit}")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if curves:
        ax.legend(fontsize="small")
    return _save(fig, plt, out)


def roofline(points: list, peak_gflops: float, bandwidth_gbs: float, out: str, title: str = "roofline",
             peers: list | None = None, peer_names: str = "peer") -> str:
    """Kernels on this machine's roofline.

    ``points``: ``(label, flops per byte moved, achieved GFLOP/s)``; the roof is
    ``min(peak_gflops, bandwidth_gbs * intensity)``, both as measured on the machine.
    ``peers``: the peer's GFLOP/s on the same workload, one per point (``None`` where it has
    none), drawn as a black cross joined to the point by a thin line.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 5.5))
    intensities = [p[1] for p in points] or [1.0]
    lo = min(min(intensities) / 2, peak_gflops / bandwidth_gbs / 8)
    hi = max(max(intensities) * 2, peak_gflops / bandwidth_gbs * 8)
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(xs, [min(peak_gflops, bandwidth_gbs * x) for x in xs], color="black", lw=1.5,
            label=f"roof: FMA peak {peak_gflops:.0f} GFLOP/s, copy {bandwidth_gbs:.0f} GB/s (measured)")
    for k, (label, intensity, gflops) in enumerate(points):
        ax.scatter([intensity], [gflops], s=40, zorder=3, color=f"C{k % 10}", marker="os^Dv"[k // 10 % 5], label=label)
    first = True
    for (_, intensity, gflops), theirs in zip(points, peers or []):
        if theirs:
            ax.plot([intensity, intensity], [gflops, theirs], color="gray", lw=0.8, zorder=2)
            ax.scatter([intensity], [theirs], s=30, zorder=3, color="black", marker="x",
                       label=f"{peer_names} on the same workload" if first else None)
            first = False
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte read and written)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="x-small", loc="lower right")
    return _save(fig, plt, out)


def speed_against_peer(rows: list, peer: str, out: str, title: str = "speed") -> str:
    """One bar per model: its speed against ``peer``, the peer's time over Tessera's (above 1:
    Tessera is faster), each bar labelled with both latencies.

    ``rows``: ``(model, Tessera seconds, peer seconds)``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.6))
    names = [r[0] for r in rows]
    speeds = [r[2] / r[1] for r in rows]
    ax.barh(range(len(rows)), speeds, color=["C2" if x >= 1 else "C3" for x in speeds])
    for i, (x, (_, ours, theirs)) in enumerate(zip(speeds, rows)):
        ax.text(x, i, f" {x:.2f}x ({ours * 1e3:.1f} ms; {peer} {theirs * 1e3:.1f} ms)", va="center", fontsize="small")
    ax.axvline(1.0, color="black", lw=1)
    ax.set_yticks(range(len(rows)), names)
    ax.invert_yaxis()
    ax.set_xlim(0, max(speeds + [1.0]) * 1.6)
    geo = math.exp(sum(math.log(x) for x in speeds) / len(speeds)) if speeds else float("nan")
    ax.set_xlabel(f"speed against {peer}: {peer} time / Tessera time (higher is better); geometric mean {geo:.2f}x")
    ax.set_title(title)
    return _save(fig, plt, out)


def _save(fig, plt, out: str) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
