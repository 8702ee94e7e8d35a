"""The yardstick: one fixed kernel whose settled time is the unit of every normalized reading.

A normalized measurement reports ``candidate / reference x the reference's settled time``
(``execute.run_candidate``): the ratio, taken within milliseconds, cancels this VM's drift
between speed states, and the settled time turns it back into seconds.  A reference's settled
time is its ratio to the yardstick times the yardstick's settled time.  The yardstick's is
measured once per host and yardstick code (``SETTLE_S`` seconds of short timings, their 10th
percentile) and stored in the kernel cache, so every runner session on this host reads it
instead of settling its own: records of two sessions, a resumed tune, a table measured across
processes share one scale.  (Settled per session, two sessions' readings of the same configs
were up to 30% apart.)

Beside it each task reference's ratio to the yardstick is stored the same way (``store`` with
the probe's seconds; ``execute._scale``), so a task keeps its scale across sessions too.

A stored figure settled for fewer seconds than the current ``SETTLE_S`` (the tests settle for
0.2 s) is not trusted: the yardstick settles again and a longer settle replaces it.
``TESSERA_SETTLE_S`` larger than the stored settle forces a new one.

The kernel is a register-blocked float32 matmul on both threads of the pool (broadcast-FMA
bound, as the convolutions are), built for the host with its vector width; its key is the host
target and a hash of its object code, so a compiler that emits other code settles anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time

M, K, PANELS, MR = 192, 256, 8, 6  # C is M x (PANELS * NR); NR = two vectors; 25 MFLOP with AVX-512


def schedule() -> tuple:
    """``(schedule, [A, Bp, C], target)`` of the yardstick for the host (``execute.build_yardstick``
    compiles it)."""
    import te
    from codegen import target as targets

    host = targets.host()
    nr = 2 * host.lanes("float32")
    A = te.placeholder((M, K), name="A")
    Bp = te.placeholder((PANELS, K, nr), name="Bp")  # B packed in panels of nr columns
    k = te.reduce_axis((0, K), "k")
    C = te.compute((M, PANELS * nr), lambda i, j: te.sum(A[i, k] * Bp[j // nr, k, j % nr], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    i, j = s[C].op.axis
    io, ii = s[C].split(i, factor=MR)
    jo, ji = s[C].split(j, factor=nr)
    s[C].reorder(io, jo, ii, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    s[CC].compute_at(s[C], jo)
    ic, jc = s[CC].op.axis
    (kc,) = s[CC].op.reduce_axis
    s[CC].reorder(kc, ic, jc)
    s[CC].unroll(ic)
    s[CC].vectorize(jc)
    return s, [A, Bp, C], host


def key(built: dict) -> str:
    """The host target and a hash of the yardstick's object code (``built``: its build dict)."""
    from codegen import target as targets

    return f"{targets.host()} yardstick:{code_hash(built['obj'])}"


def code_hash(obj: bytes) -> str:
    """A short hash of a kernel's object code (the yardstick's, a task reference's)."""
    return hashlib.sha1(obj).hexdigest()[:16]


def path() -> str:
    from codegen.service import cache_root

    return os.path.join(cache_root(), "tune_scale.json")


def _read() -> dict:
    try:
        with open(path()) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: settle again (and rewrite it)


def stored(yard_key: str, settle_s: float) -> float | None:
    """The stored settled seconds of the yardstick ``yard_key``, if settled for ``settle_s`` or longer."""
    entry = _read().get(yard_key)
    try:
        if entry and float(entry["settle_s"]) >= settle_s and float(entry["seconds"]) > 0:
            return float(entry["seconds"])
    except (KeyError, TypeError, ValueError):
        pass
    return None


def store(yard_key: str, seconds: float, settle_s: float) -> None:
    """Record a settle, unless a longer one is stored (written whole, then renamed: readers
    never see half a file)."""
    data = _read()
    old = data.get(yard_key)
    if isinstance(old, dict) and float(old.get("settle_s", 0)) > settle_s:
        return
    data[yard_key] = {"seconds": seconds, "settle_s": settle_s, "when": time.time()}
    _write(data)


def stored_value(key: str) -> float | None:
    """Another figure of this host stored beside the yardstick's (``vcpus``' fastest round trip)."""
    entry = _read().get(key)
    try:
        return float(entry["value"]) if entry and float(entry["value"]) > 0 else None
    except (KeyError, TypeError, ValueError):
        return None


def store_value(key: str, value: float) -> None:
    data = _read()
    data[key] = {"value": float(value), "when": time.time()}
    _write(data)


def _write(data: dict) -> None:
    directory = os.path.dirname(path())
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tune_scale.")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path())


__all__ = ["code_hash", "key", "path", "schedule", "store", "store_value", "stored", "stored_value"]
