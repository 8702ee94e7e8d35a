"""Reading auto_scheduler records: ``load_records``, ``load_best_record``, ``RecordReader``.

The records are ``tune.record``'s JSON lines, whose candidate field is
``"trace"`` (``State.to_json_dict``: the steps, and the sketch and genes they
were realised from).  A file may hold AutoTVM records too; they are skipped
here.  A corrupted line is skipped with its line number (``RecordWarning``).
"""

from __future__ import annotations

import json
import math
import warnings

from tune.record import RecordWarning, load_from_file, save_to_file, target_key
from tune.auto_scheduler.search_task import State


def load_records(filename):
    """``[(MeasureInput, MeasureResult)]`` of the auto_scheduler records in ``filename``."""
    return [(i, r) for i, r in load_from_file(filename) if isinstance(i.config, State)]


class RecordReader:
    """Iterates over ``(MeasureInput, MeasureResult)`` of a log (classic ``RecordReader``)."""

    def __init__(self, filename):
        self.filename = filename

    def read_lines(self, max_lines=None, skip_lines=0):
        rows = load_records(self.filename)[skip_lines:]
        rows = rows[:max_lines] if max_lines else rows
        return [i for i, _ in rows], [r for _, r in rows]

    def __iter__(self):
        return iter(load_records(self.filename))


def workload_key_of(inp) -> str:
    return json.dumps([inp.task.name, *inp.task.args])


def load_best_record(filename, workload_key=None, target=None, include_compatible=False) -> tuple:
    """``(MeasureInput, MeasureResult)`` of the fastest valid record of ``workload_key`` for
    ``target`` (any, where None); ``(None, None)`` when there is none, with a warning naming what the
    log holds when it holds records of other workloads or targets."""
    want_target = target_key(target) if target is not None else None
    best, others = (None, None), set()
    for inp, res in load_records(filename):
        wk, tk = workload_key_of(inp), target_key(inp.target)
        if (workload_key is not None and wk != workload_key) or (want_target is not None and tk != want_target):
            others.add((wk, tk))
            continue
        if res.error_no != 0 or not res.costs or not math.isfinite(res.cost):
            continue
        if best[1] is None or res.cost < best[1].cost:
            best = (inp, res)
    if best[0] is None and others:
        shown = "; ".join(f"{wk} on {tk!r}" for wk, tk in sorted(others)[:4])
        warnings.warn(f"{filename}: no record of {workload_key} for {want_target!r}; the log holds records of "
                      f"other workloads or targets ({shown}{' ...' if len(others) > 4 else ''}), not applied",
                      RecordWarning, stacklevel=2)
    return best


def save_records(filename, inputs, results) -> None:
    save_to_file(list(zip(inputs, results)), filename)


__all__ = ["RecordReader", "load_best_record", "load_records", "save_records", "workload_key_of"]
