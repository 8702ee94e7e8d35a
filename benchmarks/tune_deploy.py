"""Tuned speed, deployed: the tuned convolutions of a log, timed where the model built under
``apply_history_best`` calls them, against the records' costs.

The "deployed within 5% of what tuning recorded" figure.  The model (``--model``, ResNet-50 by
default) is built with the records; every kernel call whose fused group holds a conv config of
the log (direct or Winograd; the build picks between them) is timed in place, on the model's own
blocked activations, in 5 ms windows for ``--seconds``; its 10th percentile (the machine's fast
state: this VM drifts between speed states for seconds at a time) is set against the best
record's cost (the runner's settled scale, also a fast-state figure).  A workload the model
calls several times reports the median of its calls.  It also checks that the build chose the
recorded config: the best record, or the rule's config where no record beat it by more than
``tune.autotvm.choose.RECORD_MARGIN`` (then that config's own record is the reference).

A second figure cancels the machine's drift: each deployed call alternates, 5 ms windows at a
time, with the recorded config built alone from its template (the kernel the runner timed); the
median ratio says whether deployment keeps the tuned kernel's speed (its fused epilogue, the
model's buffers), apart from the noise of the recorded figure itself (``tune_noise.py``).

A third puts the deployed call on the records' own scale: alternated with the runner's yardstick
(``tune/autotvm/measure/yardstick.py``, the fixed kernel whose settled time, stored once per host,
scales every normalized reading), the median ratio times the yardstick's stored time is what the
runner would have recorded for the deployed call.  It counts the windows in which the deployed
call ran at its fast speed (within the runner's ``FAST_STATE`` of its fastest window), as the
runner counts the ratios timed with its reference at speed: in this VM's slow spells a conv slows
and the compute-bound yardstick does not.  The ratio of two kernels also drifts by ~3% between
moments tens of seconds apart, so it is taken in ``--passes`` rounds over all the convs, as the
runner takes its tasks' scales (``LocalRunner.calibrate``).
Only records written with the yardstick scale (this host, since the yardstick) compare.
The same rounds also alternate the deployed call with the task's reference, the kernel the runner
brackets candidates with, times the reference's stored scale: the runner's own way of timing.  A
pair of large-weight kernels alternated shares the caches otherwise than one beside the small
yardstick, so for some layers (ResNet-50's 7-wide 1x1 convs: 1.11-1.13 against the yardstick in
every host state, 0.99-1.03 against the reference) only this second figure reads as the records do.

A fourth times each deployed call in place, inside whole runs of the model (every other layer
runs between two of its calls, as in deployment; the figures above call it in a loop, its weights
warm in the caches), at the start and after each of the ``--passes`` rounds: the median over
those moments of its median over the runs, against the record.  The in-place records
(``graph.tuning.confirm_in_place``) are on the records' scale, the yardstick timed after each
run (``graph.tuning.scaled_kernel_runs``), and so is this figure: the record and the check are
minutes apart, and this VM's speed moves 10-30% in between.  A log whose in-place records are
raw seconds (written before) is compared raw.  The yardstick is compute-bound and a model's run
is not, so the two drift apart too (a deployed build timed right after the in-place phase that
recorded it read 0.97-1.08x of its records in one run, 0.87-0.97x in the next): the in-place
figure is also read against the rule's build, timed in whole runs right after the deployed one at
each moment.  The in-place phase timed that build beside its candidates, so its calls' records
summed are its run then; each moment's reading is multiplied by that sum over the same calls' sum
now, both on the records' scale.  A runner that measures with its weights warm (``tessera
tune``'s default, as classic TVM's without ``enable_cpu_cache_flush``) records less than this for
a kernel whose weights stream from memory.

Where the log holds cold or in-place readings of a workload (``tessera tune`` ends by timing the
configs the model may deploy with the runner's flush, then inside whole runs of the model, and the
in-place readings alone then rank it, else the cold ones), the record is such a reading, while the
loop figures (the first and the third) call the kernel warm.  So those two are also set against
the deployed config's warm readings (the median, as the records rank configs): like against like.
The in-place figure compares with the record: an in-place reading where the tune took them.

That third figure counts only the chunks timed with the vCPUs near (``tune/autotvm/measure/
vcpus.py``'s probe, a cache line bounced between the pool's two threads after every quarter second
of alternation): the host moves the two vCPUs apart now and then, for seconds at a time, and a
kernel whose threads hand data to each other pays it.  The records are near-state figures (the
runner's reference probe and its confirmations wait for the near state), and so, as they do, a
chunk that would start with the vCPUs apart first waits for them to be near (``--near-wait``
seconds per conv in all); the apart-state figure is printed apart, to say what that state costs
the deployed call.

    python benchmarks/tune_deploy.py --log /tmp/resnet50.jsonl
    python benchmarks/tune_deploy.py --log /tmp/resnet50.jsonl --limit 4 --seconds 2

Timings share the machine with whatever else runs on it; run it on a quiet one.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import graph
from graph.cli import random_inputs, set_threads
from graph.onnx.zoo import light_model_path
from graph.tuning import build_with_records, node_configs, scaled_kernel_runs, window_seconds
from tune import autotvm
from tune import record
from tune.measure import LocalBuilder, execute, vcpus

CONV_TEMPLATES = ("conv2d_NCHWc.x86", "conv2d_winograd.x86")
WINDOW_S = 0.005


def best_per_conv(records) -> dict:
    """conv args -> (template name, best MeasureInput, best cost in seconds) over both implementations
    (``records``: a log's path or its (input, result) pairs)."""
    best: dict = {}
    for inp, res in record.best_by_workload(record.load_records(records)).values():
        cost = res.cost
        key = tuple(inp.task.args)
        if inp.task.name in CONV_TEMPLATES and (key not in best or cost < best[key][2]):
            best[key] = (inp.task.name, inp, cost)
    return best


def measured_configs(records) -> dict:
    """(template, args, knob values) -> (MeasureInput, cost) of every conv config the log measured
    without error (its median measurement, as the records rank it)."""
    return {(inp.task.name, tuple(inp.task.args), tuple(sorted(inp.config.knob_values().items()))): (inp, res.cost)
            for rows in record.ranked_by_workload(record.load_records(records)).values()
            for inp, res in rows if inp.task.name in CONV_TEMPLATES}


def warm_configs(records) -> dict:
    """:func:`measured_configs` of the warm readings alone (the runner without its flush, outside
    the model): what the loop figures, which call a kernel warm, compare with where cold or
    in-place readings rank the workload."""
    return measured_configs([(inp, res) for inp, res in record.load_records(records) if res.warm])


def measured_key(cfg) -> tuple:
    """A built node's config as :func:`measured_configs` keys it."""
    return cfg.template, tuple(cfg.workload[1:]), tuple(sorted(cfg.values.items()))


def deployed_record(cfgs: list, args: tuple, measured: dict):
    """The log's (MeasureInput, cost) of the conv config a call deployed, or None."""
    for cfg in cfgs:
        if cfg.template in CONV_TEMPLATES and tuple(cfg.workload[1:]) == args:
            return measured.get(measured_key(cfg))
    return None


def time_call(call, seconds: float) -> tuple:
    """(10th percentile, median) seconds per call over ``seconds`` of WINDOW_S windows."""
    call()
    samples, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        samples.append(window(call))
    return float(np.percentile(samples, 10)), statistics.median(samples)


def window(call) -> float:
    """Seconds per call over one WINDOW_S window."""
    return window_seconds(call, WINDOW_S)


def task_kernel(inp):
    """A call of the recorded config built alone from its template (what the runner timed, on
    buffers aligned as the runner's and the executor's are)."""
    import codegen
    from codegen.ndarray import aligned

    s, args = inp.task.instantiate(inp.config)
    mod = codegen.build(s, args, target=inp.task.target)
    rng = np.random.default_rng(0)
    arrays = [aligned(rng.uniform(-1, 1, tuple(int(d) for d in t.shape)).astype(t.dtype)) for t in args]
    return lambda: mod(*arrays)


def interleaved(deployed_call, other_call, seconds: float) -> list:
    """``[(deployed window, deployed / other)]`` over ``seconds`` of alternating windows (5 at least)."""
    deployed_call(), other_call()
    pairs, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(pairs) < 5:
        mine = window(deployed_call)
        pairs.append((mine, mine / window(other_call)))
    return pairs


def interleaved_ratio(deployed_call, alone_call, seconds: float) -> float:
    """Median over alternating windows of (deployed / alone), the drift of the machine cancelled."""
    return statistics.median(r for _, r in interleaved(deployed_call, alone_call, seconds))


CHUNK_S = 0.25  # alternation between two state readings
PROBE_QUIET_S = 0.01  # after a chunk, before the probe: the workers' spin (~0.2 ms, the caller's 1.6 ms) is over


def ratios_by_state(deployed_call, yard_call, seconds: float, near_wait: float = 0.0) -> list:
    """``[(near, [(deployed window, deployed/yardstick ratio), ...])]`` per CHUNK_S of alternation,
    the vCPUs' state read before and after each chunk (``vcpus.reading``): near only if both were.
    A chunk that would start apart first waits for the near state, ``near_wait`` seconds in all."""
    out, wait_until = [], time.monotonic() + near_wait
    near_before = vcpus.reading()[1]
    for _ in range(max(1, round(seconds / CHUNK_S))):
        if not near_before and time.monotonic() < wait_until:
            near_before = vcpus.wait_near(wait_until - time.monotonic())
        pairs = interleaved(deployed_call, yard_call, CHUNK_S)
        time.sleep(PROBE_QUIET_S)  # the pool's workers spin after a launch: the probe would share their CPU
        near_after = vcpus.reading()[1]
        out.append((near_before and near_after, pairs))
        near_before = near_after
    return out


def split_states(chunks: list) -> tuple:
    """(near ratios, apart ratios) of ``ratios_by_state`` chunks: each chunk's median ratio over
    the windows in which the deployed call ran within ``FAST_STATE`` of its fastest window, the
    machine's fast state, as the runner's records are (a chunk with none counts nowhere).  In a
    slow state a conv slows and the compute-bound yardstick does not, so the ratio reads high."""
    fastest = min((w for _, pairs in chunks for w, _ in pairs), default=0.0)
    out: tuple = ([], [])
    for near, pairs in chunks:
        kept = [r for w, r in pairs if w <= execute.FAST_STATE * fastest]
        if kept:
            out[0 if near else 1].append(statistics.median(kept))
    return out


def model_nodes(model: str, log: str | None) -> tuple:
    """``(executor, [(kernel call, its graph node), ...])`` of ``model`` (light zoo name or .onnx)
    built with the records of ``log`` (None: the rule defaults), inputs set, run once."""
    path = model if model.endswith(".onnx") else light_model_path(model)
    g, params = graph.from_onnx(path)
    lib = build_with_records(g, params, "llvm", log)
    m = lib.create_executor()
    m.set_input(**random_inputs({v.name: (tuple(v.shape), v.dtype) for v in lib.graph.inputs}, 0))
    m.run()
    return m, list(zip(m._calls, [node for node, key in lib.steps if key is not None]))


def model_calls(model: str, log: str) -> tuple:
    """``(executor, [(kernel call, [config, ...]), ...])`` of ``model`` built with ``log``."""
    m, nodes = model_nodes(model, log)
    return m, [(call, node_configs(node)) for call, node in nodes]


def in_place_moment(m, seconds: float, yard: tuple) -> tuple:
    """``(each kernel call's median seconds, the factor to the records' scale or None)`` of
    executor ``m`` in whole runs of the model over about ``seconds`` (5 runs at least), the
    yardstick timed after each run where one is settled (``graph.tuning.scaled_kernel_runs``)."""
    t0 = time.perf_counter()
    m.run()
    number = max(5, round(seconds / max(time.perf_counter() - t0, 1e-6)))
    if yard[0] is None:
        return np.median(m.kernel_runs(number), axis=0), None
    return scaled_kernel_runs(m, number, yard)


def rule_reference(model: str, records: list) -> tuple:
    """``(executor of the rule's build, [its call indices], their in-place records summed)``: the
    rule build's conv calls whose configs hold an in-place record on the records' scale (the
    in-place phase times the rule's build beside its candidates), or ``(None, [], 0.0)``."""
    placed = measured_configs([(inp, res) for inp, res in records if res.in_place and res.scaled])
    if not placed:
        return None, [], 0.0
    m, calls = model_calls(model, None)
    ks, total = [], 0.0
    for k, (_, cfgs) in enumerate(calls):
        hits = [placed.get(measured_key(c)) for c in cfgs if c.template in CONV_TEMPLATES]
        if len(hits) == 1 and hits[0] is not None:
            ks.append(k)
            total += hits[0][1]
    return m, ks, total


def same_config(chosen: list, want: dict) -> bool:
    """Whether a built node carries the recorded knob values."""
    return any(all(cfg.values.get(k) == v for k, v in want.items()) for cfg in chosen)


def config_note(mine: list, inp) -> str:
    """What the calls deployed against the record ``inp``: its config, the rule's config read in
    its data's block (the record being the rule's own: ``tune.autotvm.choose.rule_in_block``, which a
    log of single layers holds no record of), or another config."""
    from tune.autotvm.choose import rule_variants

    want = inp.config.knob_values()
    if all(same_config(cfgs, want) for _, cfgs in mine):
        return "recorded config"
    variants = rule_variants(tuple(inp.task.workload), inp.task.target)
    chosen = [cfg for _, cfgs in mine for cfg in cfgs if cfg.template == inp.task.name]
    if want == variants[0] and chosen and all(cfg.values in variants[1:] for cfg in chosen):
        return f"the rule's config in its data's block ({chosen[0].values})"
    return "OTHER config " + str(mine[0][1])


def summary(label: str, ratios: list) -> str:
    """``label: median, range, how many within 5% of 1`` of deployed/recorded ratios."""
    within = sum(abs(r - 1) <= 0.05 for r in ratios)
    return (f"{label}: median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}, "
            f"{within}/{len(ratios)} within 5%")


def main(argv: list | None = None) -> list:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--log", required=True, help="records of a tuning run (tessera tune / tune_model.py)")
    p.add_argument("--model", default="resnet50", help="the model the log was tuned for (light zoo name or .onnx)")
    p.add_argument("--limit", type=int, default=None, help="only the first N convs of the log")
    p.add_argument("--seconds", type=float, default=4.0, help="timing window per kernel call (default 4)")
    p.add_argument("--passes", type=int, default=3,
                   help="rounds over the convs in which the records'-scale timing is taken (default 3)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--near-wait", type=float, default=20.0,
                   help="seconds per conv the records'-scale timing may wait for the vCPUs to be near (default 20)")
    a = p.parse_args(argv)
    set_threads(a.threads)
    records = record.load_records(a.log)
    best, measured = best_per_conv(records), measured_configs(records)
    warm = warm_configs(records)
    state = execute.host_note("before")
    m, calls = model_calls(a.model, a.log)
    moment = a.seconds / (a.passes + 1)  # in place: whole runs at the start and after each pass
    calls_at = {id(call): k for k, call in enumerate(m._calls)}
    yard, yard_s = execute.yardstick_call()
    moments = [in_place_moment(m, moment, (yard, yard_s))]  # per moment: each call's seconds, scale
    on_scale = {inp.task.workload for inp, res in records if res.in_place and res.scaled}  # records' scale
    rule_m, rule_ks, rule_rec = rule_reference(a.model, records) if yard is not None else (None, [], 0.0)
    rule_moments = [in_place_moment(rule_m, moment, (yard, yard_s))] if rule_ks else []
    builder = LocalBuilder()  # each task's reference, built as a runner builds it
    rows, paired, scaled, by_ref, by_state, placed, pending, convs_placed = [], [], [], [], [], [], [], []
    beside = []  # the in-place figure with the host's drift read off the rule build's run
    warm_rows, warm_scaled = [], []  # the loop figures against the deployed config's warm readings
    for k, (args, (name, inp, cost)) in enumerate(best.items()):
        if a.limit is not None and k >= a.limit:
            break
        convs = [(call, cfgs) for call, cfgs in calls
                 if any(cfg.template in CONV_TEMPLATES and tuple(cfg.workload[1:]) == args for cfg in cfgs)]
        mine = [(call, cfgs) for call, cfgs in convs if any(cfg.template == name for cfg in cfgs)]
        dshape, kshape, strides = args[0], args[1], args[2]
        label = f"{dshape[1]:4d}->{kshape[0]:4d} {kshape[2]}x{kshape[3]}/{strides[0]} @{dshape[2]:3d} {name:20s}"
        if not mine:
            print(f"{label} " + ("deployed by the other template (the log holds no record of the one the "
                                 "build chose)" if convs else "not called by the model"), flush=True)
            continue
        hit = deployed_record(mine[0][1], args, measured)  # the build may keep the rule over a record
        if hit is not None:  # within RECORD_MARGIN: compare with that config's own record
            inp, cost = hit
        hit = deployed_record(mine[0][1], args, warm)  # none: a config only ever read cold (the search
        warm_cost = cost if hit is None else hit[1]  # reads every config it tries warm, the rule's first)
        times = [time_call(call, a.seconds / len(mine)) for call, _ in mine]
        p10 = statistics.median(t[0] for t in times)
        med = statistics.median(t[1] for t in times)
        ratio = p10 / cost
        alone = task_kernel(inp)
        inter = statistics.median(interleaved_ratio(call, alone, a.seconds / len(mine)) for call, _ in mine)
        rows.append(ratio)
        warm_rows.append(p10 / warm_cost)
        paired.append(inter)
        if yard is not None:
            ref = builder.build_reference(autotvm.task.create(inp.task.name, inp.task.args, inp.task.target))
            ref_call, ref_s = execute.reference_call(ref) if ref is not None else (None, None)
            pending.append((label, mine, cost, warm_cost, [], (ref_call, ref_s, []) if ref_s else None))
        convs_placed.append((label, [calls_at[id(call)] for call, _ in mine], cost,
                             inp.task.workload in on_scale))
        print(f"{label} recorded {cost * 1e3:7.3f} ms (warm {warm_cost * 1e3:7.3f})  deployed p10 {p10 * 1e3:7.3f} ms (median {med * 1e3:7.3f}, "
              f"{len(mine)} call{'s' if len(mine) > 1 else ''})  {ratio:5.2f}x  interleaved with the task kernel {inter:5.2f}x"
              f"  {config_note(mine, inp)}",
              flush=True)
    # on the records' scale: every conv's chunks gathered in --passes rounds over all of them (the
    # ratio of two kernels drifts ~3% between moments tens of seconds apart; the runner calibrates
    # its scales the same way, ``LocalRunner.calibrate``)
    share = a.seconds / a.passes
    for _ in range(a.passes):
        for _, mine, _, _, chunks, by_task in pending:
            wait = a.near_wait / a.passes / len(mine)
            chunks += [c for call, _ in mine for c in ratios_by_state(call, yard, share / len(mine), wait)]
            if by_task:
                by_task[2].extend(c for call, _ in mine for c in
                                  ratios_by_state(call, by_task[0], share / len(mine), wait))
        moments.append(in_place_moment(m, moment, (yard, yard_s)))
        if rule_ks:
            rule_moments.append(in_place_moment(rule_m, moment, (yard, yard_s)))
    builder.close()
    # the rule build's speed at each moment against the in-place phase's, both on the records' scale
    drift = [rule_rec / (sum(seconds[k] for k in rule_ks) * scale) for seconds, scale in rule_moments]
    if convs_placed:
        print(f"in place in the model run, at {len(moments)} moments (the start and after each round), "
              f"against the record (on the records' scale where the record is, else raw):")
    for label, ks, cost, on_scale in convs_placed:
        if on_scale and moments[0][1] is None:
            print(f"{label} no yardstick settled here: the scaled record does not compare")
            continue
        at = [statistics.median(seconds[k] for k in ks) * (scale if on_scale else 1.0) / cost
              for seconds, scale in moments]
        placed.append(statistics.median(at))
        line = (f"{label} {placed[-1]:5.2f}x  (moments {' '.join(f'{r:.2f}' for r in at)}"
                f"{'' if on_scale else '; raw: the record is'})")
        if on_scale and drift:
            beside.append(statistics.median(r * d for r, d in zip(at, drift)))
            line += f"  against the rule build's run {beside[-1]:5.2f}x"
        print(line, flush=True)
    if pending:
        print(f"on the records' scale ({a.passes} rounds over the convs), alternated with the yardstick "
              f"and with the task's reference:")
    for label, _, cost, warm_cost, chunks, by_task in pending:
        by_state.append((chunks, yard_s / cost))
        near, apart = split_states(chunks)
        scaled.append(statistics.median(near or apart) * yard_s / cost)
        warm_scaled.append(scaled[-1] * cost / warm_cost)
        line = f"{label} {scaled[-1]:5.2f}x" + ("" if near else " (vCPUs apart throughout)")
        if by_task:
            near, apart = split_states(by_task[2])
            by_ref.append(statistics.median(near or apart) * by_task[1] / cost)
            line += f"  {by_ref[-1]:5.2f}x" + ("" if near else " (vCPUs apart throughout)")
        else:
            line += "  (no scale stored for the task's reference)"
        print(line, flush=True)
    if rows:
        print(summary("deployed/recorded", rows))
        print(summary("deployed/recorded warm", warm_rows))
        print(summary("deployed/task kernel, interleaved", paired))
    if scaled:
        print(summary("deployed on the records' scale (yardstick)/recorded", scaled))
        print(summary("deployed on the records' scale (yardstick)/recorded warm", warm_scaled))
    elif rows:
        print("no yardstick settled on this host: the records' scale is unknown here")
    if by_ref:
        print(summary("deployed on the records' scale (task reference)/recorded", by_ref))
    if placed:
        print(summary("deployed in place in the model run/recorded", placed))
    if beside:
        print(summary("deployed in place, against the rule build's run at the same moments/recorded", beside)
              + f" (the rule build's {len(rule_ks)} calls recorded {rule_rec * 1e3:.2f} ms in place, read "
              + " ".join(f"{1 / d:.2f}x" for d in drift) + " of that at the moments)")
    if by_state:
        print(f"by state (round trip between the pool's threads; apart above {vcpus.APART}x the host's fastest, "
              f"{vcpus.fastest() or 0:.0f} ns):")
        for name, pick in (("near", 0), ("apart", 1)):
            vals, chunks_in = [], 0
            for chunks, scale in by_state:
                mine = split_states(chunks)[pick]
                if mine:
                    vals.append(statistics.median(mine) * scale)
                    chunks_in += len(mine)
            if vals:
                within = sum(abs(r - 1) <= 0.05 for r in vals)
                print(f"  {name:5s}: {len(vals)} convs ({chunks_in} chunks of {CHUNK_S} s), on the records' scale/"
                      f"recorded median {statistics.median(vals):.3f}, range {min(vals):.3f}-{max(vals):.3f}, "
                      f"{within}/{len(vals)} within 5%: " + " ".join(f"{v:.2f}" for v in vals))
    print(f"{state}\n{execute.host_note('after')}")
    return rows


if __name__ == "__main__":
    main()
