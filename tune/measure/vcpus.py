"""Which state the VM's vCPUs are in: a cache line bounced between the thread pool's two threads.

On this class of host the two vCPUs are now and then moved apart for seconds at a time (up to
tens of seconds, at times half of all seconds): a cache line's round trip between the pool's
two threads goes from about 115 ns to about 390 ns.  A kernel whose parallel stages hand data
to each other's thread pays it, one that only reads fixed inputs does not.  Measured, ResNet-50's
direct conv 256->64 1x1 @56 with its input repacked in the kernel (the rule's config): 1.9x
its near-state time against the yardstick (which does not care); 1024->256 @14: 1.24x; the
tuned configs of both, which repack nothing: 1.00x.  So a ratio of two such kernels is not
the same in the two states, and the runner (``execute``) asks the state before it trusts one.

The probe is LLVM IR run through the pool's own launch (``codegen.runtime``): task 0 (the
caller) and task 1 (worker 1, pinned to the second CPU) ping-pong one atomic word ``trips``
times.  Every spin is bounded: on one thread (``set_num_threads(1)``, a busy pool) the tasks run
one after the other, give up, and the probe reports None (state unknown) instead of hanging.

``near(ns)`` compares a reading with the fastest round trip this host has shown (stored with
the yardstick's settled time, so a process that starts in the far state still knows it).
"""

from __future__ import annotations

import ctypes
import statistics
import threading
import time

APART = 2.5  # a round trip this many times the host's fastest: the vCPUs are apart (readings: near
# 72-153 ns, most 100-130; apart 366-430 ns; the fastest now and then reads ~72)
TRIPS = 2000  # round trips per burst (~0.4 ms near, ~0.8 ms apart)
BURSTS = 3  # a reading is the median of this many bursts (the first may pay a worker's wake-up)
SPIN_LIMIT = 1 << 24  # polls of the word before a side gives up (~20-40 ms: the other side never
# came, or was descheduled that long by other work on its CPU)
POLL_S = 0.05  # wait_near: seconds between readings while apart

_IR = r"""
; closure: i64 word (own cache line) at 0; i64 trips at 64; i64 failed at 72
define void @tessera_bounce(i32 %task, i32 %ntasks, ptr %cl) nounwind {
entry:
  %np = getelementptr i8, ptr %cl, i64 64
  %n = load i64, ptr %np, align 8
  %fp = getelementptr i8, ptr %cl, i64 72
  %is0 = icmp eq i32 %task, 0
  %is1 = icmp eq i32 %task, 1
  br i1 %is0, label %trip, label %check1
check1:
  br i1 %is1, label %trip, label %done
trip:                                   ; task 0 sends 2i+1 and awaits 2i+2; task 1 the reverse
  %i = phi i64 [ 0, %entry ], [ 0, %check1 ], [ %i.next, %sent ]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %await, label %done
await:
  %two = shl i64 %i, 1
  %send0 = add i64 %two, 1
  %want0 = add i64 %two, 2
  %want = select i1 %is0, i64 %want0, i64 %send0
  %send = select i1 %is0, i64 %send0, i64 %want0
  br i1 %is0, label %put, label %spin
put:
  store atomic i64 %send, ptr %cl release, align 64
  br label %spin
spin:
  %k = phi i64 [ 0, %await ], [ 0, %put ], [ %k.next, %spin_more ]
  %v = load atomic i64, ptr %cl acquire, align 64
  %got = icmp eq i64 %v, %want
  br i1 %got, label %arrived, label %spin_more
spin_more:
  %k.next = add i64 %k, 1
  %gave_up = icmp sge i64 %k.next, @LIMIT@
  br i1 %gave_up, label %fail, label %spin
arrived:
  br i1 %is0, label %sent, label %reply
reply:
  store atomic i64 %send, ptr %cl release, align 64
  br label %sent
sent:
  %i.next = add i64 %i, 1
  br label %trip
fail:
  store atomic i64 1, ptr %fp monotonic, align 8
  br label %done
done:
  ret void
}
"""

_lock = threading.Lock()
_state: dict = {}


def _probe():
    """``(launch, bounce address, closure buffer)``, built and loaded once per process."""
    with _lock:
        if "probe" not in _state:
            from codegen import jit
            from codegen.runtime import bind_runtime
            from codegen.target import host

            target = host()
            mod = jit.parse(_IR.replace("@LIMIT@", str(SPIN_LIMIT)), target)
            obj = jit.target_machine(target).emit_object(mod)
            code = jit.load_objects([obj], ["tessera_bounce"], label="vCPU state probe")
            launch = bind_runtime(jit.runtime_engine()).parallel_launch
            raw = ctypes.create_string_buffer(256)
            base = ctypes.addressof(raw)
            closure = base + (-base) % 64
            _state["probe"] = (launch, code, code.address("tessera_bounce"), raw, closure)
        return _state["probe"]


def round_trip_ns(trips: int = TRIPS, bursts: int = BURSTS) -> float | None:
    """Nanoseconds per round trip of a cache line between the pool's threads 0 and 1 (median of
    ``bursts``), or None when the two do not run at once (fewer than two threads, a busy pool)."""
    from codegen import get_num_threads

    if get_num_threads() < 2:
        return None
    launch, _code, fn, _raw, closure = _probe()
    word = ctypes.c_int64.from_address(closure)
    count = ctypes.c_int64.from_address(closure + 64)
    failed = ctypes.c_int64.from_address(closure + 72)
    out = []
    for _ in range(bursts):
        word.value, count.value, failed.value = 0, int(trips), 0
        t0 = time.perf_counter()
        launch(fn, closure, 2)
        seconds = time.perf_counter() - t0
        if failed.value:
            return None
        out.append(seconds / trips * 1e9)
    return statistics.median(out)


def fastest() -> float | None:
    """The fastest round trip seen on this host (stored across processes), or None."""
    from tune.measure import yardstick

    if "fastest" not in _state:
        _state["fastest"] = yardstick.stored_value(_host_key())
    return _state["fastest"]


def _host_key() -> str:
    from codegen import target as targets

    return f"{targets.host()} round trip ns"


def reading() -> tuple:
    """``(round trip ns or None, near)``: the state now.  ``near`` is True when the probe cannot
    tell (one thread): nothing is then excluded.  A reading faster than the host's stored fastest
    becomes the new fastest."""
    ns = round_trip_ns()
    if ns is None:
        return None, True
    best = fastest()
    if best is None or ns < best:
        from tune.measure import yardstick

        _state["fastest"] = ns
        yardstick.store_value(_host_key(), ns)
        best = ns
    return ns, near(ns, best)


def near(ns: float, fastest_ns: float) -> bool:
    """Whether a round trip of ``ns`` is the near state, the host's fastest being ``fastest_ns``."""
    return ns <= APART * fastest_ns


def wait_near(seconds: float) -> bool:
    """Wait up to ``seconds`` for the near state (a reading every ``POLL_S``); whether it came."""
    end = time.perf_counter() + seconds
    while True:
        if reading()[1]:
            return True
        if time.perf_counter() >= end:
            return False
        time.sleep(POLL_S)


__all__ = ["APART", "fastest", "near", "reading", "round_trip_ns", "wait_near"]
