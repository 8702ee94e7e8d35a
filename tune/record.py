"""Tuning records: JSON lines, one measurement a line, appended and flushed as measured.

The current schema (``"schema": 1``)::

    {"schema": 1,
     "input": {"target": "llvm -mcpu=znver4 -mattr=+avx,...", "task": "tutorial/matmul",
               "args": [512, 512, 512, "float32"]},
     "config": {"index": 35, "code_hash": null, "entity": [["tile_y", "sp", [64, 8]], ...]},
     "result": {"costs": [0.0011, 0.0010], "error_no": 0, "all_cost": 0.31, "timestamp": 1763860000.0}}

where ``"config"`` is the field of an AutoTVM record (the candidate, a point of the
template's space; each tuner registers the field of its candidates, ``register_kind``),
with ``"flush": true`` in ``result`` for a measurement timed with the weights out of the caches
(optional: a record without it was timed warm, as every record before it was), and
``"in_place": true`` for one timed inside whole runs of a model (each cost a round's median), and
``"clock": "thread_cpu"`` for one timed by the CPU time of the one thread that ran the kernel
(the runner's ``clock``; without it, wall time).
Older files may also say ``"scaled"`` (readings of a normalising runner since removed): read
and ignored.

The loader also reads classic TVM's two formats: v0.7-v0.12
(``{"input": [target, name, args, kwargs], "config": ..., "result": [costs,
error_no, all_cost, timestamp], "version": 0.2}``) and v0.6
(``{"i": [...], "r": [...], "v": 0.1}``).  A malformed line is reported with
its line number (a ``RecordWarning``) and skipped; nothing is pickled.
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import warnings
from collections.abc import Callable

from tune.errors import RecordError
from tune.measure.measure import MeasureInput, MeasureResult

SCHEMA = 1
# The field of a record that holds the measured candidate -> (its type, the function that makes
# the MeasureInput of a line: ``(target text, task name, args, candidate JSON) -> MeasureInput``).
# Each tuner registers its own on import: AutoTVM "config"; auto_scheduler its schedule's steps.
_KINDS: dict[str, tuple] = {}


def register_kind(field: str, candidate_type: type, make_input: Callable) -> None:
    """Records whose ``field`` holds a ``candidate_type`` (which has ``to_json_dict()``) are read
    back by ``make_input(target text, task name, args, candidate JSON)``."""
    _KINDS[field] = (candidate_type, make_input)


def target_key(target) -> str:
    """The canonical target text records carry: CPU name and every enabled feature."""
    from codegen.target import create  # on use: codegen loads LLVM, and topi's operators load without it

    return str(create(target))


class RecordWarning(UserWarning):
    """A record line that could not be read (and was skipped)."""


PROTOCOLS = ("json", "pickle")


def _jsonable(x):
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def encode(inp: MeasureInput, result: MeasureResult, protocol: str = "json") -> str:
    """One record line (no newline): JSON, or with ``protocol="pickle"`` the same record
    pickled and base64-encoded (classic AutoTVM's second protocol; unpickle only your own)."""
    if protocol not in PROTOCOLS:
        raise RecordError(f"record.encode: unknown protocol {protocol!r}; use one of {PROTOCOLS}")
    row = _row(inp, result)
    if protocol == "pickle":
        return base64.b64encode(pickle.dumps(row)).decode("ascii")
    return json.dumps(row)


def _row(inp: MeasureInput, result: MeasureResult) -> dict:
    field = next((f for f, (kind, _) in _KINDS.items() if isinstance(inp.config, kind)), None)
    if field is None:
        raise RecordError(f"record.encode: no record kind holds a {type(inp.config).__name__}; "
                          f"known: {sorted(_KINDS)}")
    costs = [c if isinstance(c, (int, float)) else str(c) for c in result.costs]
    row = {
        "schema": SCHEMA,
        "input": {"target": target_key(inp.target), "task": inp.task.name, "args": _jsonable(inp.task.args)},
        field: inp.config.to_json_dict(),
        "result": {
            "costs": costs,
            "error_no": int(result.error_no),
            "all_cost": float(result.all_cost),
            "timestamp": float(result.timestamp),
        },
    }
    if result.flush:
        row["result"]["flush"] = True
    if result.in_place:
        row["result"]["in_place"] = True
    if result.clock != "wall":
        row["result"]["clock"] = result.clock
    return row


def _tuplify(x):
    return tuple(_tuplify(v) for v in x) if isinstance(x, list) else x


def _input(field: str, target: str, name: str, args, candidate) -> MeasureInput:
    if field not in _KINDS:
        raise RecordError(f"a record of kind {field!r}, which no tuner imported here reads "
                          f"(known: {sorted(_KINDS)}); import the tuner that wrote it")
    try:
        return _KINDS[field][1](target, name, _tuplify(list(args)), candidate)
    except ValueError as err:
        raise RecordError(f"target {target!r} of the record cannot be read: {err}") from None


def decode(line: str, protocol: str = "json") -> tuple:
    """``(MeasureInput, MeasureResult)`` of one line, of any schema written so far."""
    if protocol not in PROTOCOLS:
        raise RecordError(f"record.decode: unknown protocol {protocol!r}; use one of {PROTOCOLS}")
    row = pickle.loads(base64.b64decode(line)) if protocol == "pickle" else json.loads(line)
    if not isinstance(row, dict):
        raise RecordError("a record line must be a JSON object")
    if row.get("schema") == 1:
        i, r = row["input"], row["result"]
        field = next((f for f in row if f not in ("schema", "input", "result")), "config")
        inp = _input(field, i["target"], i["task"], i["args"], row.get(field))
        res = MeasureResult(
            tuple(r["costs"]), int(r["error_no"]), float(r["all_cost"]), float(r["timestamp"]),
            bool(r.get("flush", False)), bool(r.get("in_place", False)), r.get("clock", "wall"),
        )
    elif "input" in row and "result" in row:  # classic TVM v0.7-v0.12 ("version": 0.2)
        target, name, args = row["input"][:3]
        inp = _input("config", target, name, args, row["config"])
        costs, error_no, all_cost, stamp = row["result"]
        res = MeasureResult(tuple(costs), int(error_no), float(all_cost), float(stamp))
    elif "i" in row and "r" in row:  # classic TVM v0.6 ("v": 0.1)
        target, name, args = row["i"][:3]
        cfg = row["i"][5]
        inp = _input("config", target, name, args,
                     {"index": cfg.get("i", -1), "code_hash": cfg.get("c"), "entity": cfg["e"]})
        costs, error_no, all_cost, stamp = row["r"]
        res = MeasureResult(tuple(costs), int(error_no), float(all_cost), float(stamp))
    else:
        raise RecordError(
            f"unknown record schema (keys {sorted(row)}); this version reads schema 1 and "
            f"classic TVM's v0.1 / v0.2 records"
        )
    return inp, res


def load_from_file(filename):
    """Yield ``(MeasureInput, MeasureResult)`` of every readable line; warn about (and skip) the rest."""
    try:
        fh = open(filename, encoding="utf-8")
    except OSError as err:
        raise RecordError(f"cannot read tuning records {os.fspath(filename)!r}: {err.strerror}") from None
    with fh:
        yield from load_from_buffer(fh, os.fspath(filename))


def load_from_buffer(lines, name: str = "<buffer>"):
    """Yield the records of an open text file or any iterable of lines (skipping malformed ones)."""
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield decode(line)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecordError) as err:
            warnings.warn(
                f"{name}:{lineno}: skipped a malformed record: {type(err).__name__}: {err}",
                RecordWarning,
                stacklevel=3,
            )


def load_records(records) -> list:
    """Records given as a path, an open text file, (input, result) pairs, or any nesting of
    iterables of those (several files, several batches), as one list of pairs."""
    if isinstance(records, (str, bytes)) or hasattr(records, "__fspath__"):
        return list(load_from_file(records))
    if isinstance(records, io.TextIOBase):
        return list(load_from_buffer(records))
    out: list = []
    for item in records:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], MeasureInput):
            out.append(item)
        else:
            out.extend(load_records(item))
    return out


def save_to_file(records, filename) -> None:
    with open(filename, "a", encoding="utf-8") as fh:
        fh.writelines(encode(inp, res) + "\n" for inp, res in records)


def ranked_by_workload(records) -> dict:
    """``{(target text, workload): [(input, result), ...]}``: the successful records of each,
    fastest first, one per distinct config: its median measurement (the lower middle one of
    an even count).  The fastest of many noisy measurements is biased low; a config measured
    again (``tune.network.confirm_best``) counts at its typical speed, and a lucky reading
    of one config does not outrank another's repeated ones.

    Where a workload has measurements timed inside whole runs of its model (``in_place``), those
    alone rank it: they are the speeds deployment sees.  Else, where it has measurements timed
    with the weights out of the caches (``flush``), those alone: a warm reading does not compare
    with a cold one.  Nor does one clock's with another's: where a workload's records were timed by
    several (``MeasureResult.clock``), those of its last record's clock alone rank it."""
    ranked: dict = {}
    for inp, res in records:
        if res.error_no != 0 or not res.costs:
            continue
        key = (target_key(inp.target), inp.task.workload)
        ranked.setdefault(key, []).append((inp, res))
    for key, rows in ranked.items():
        rows = same_clock(rows)
        rows = [row for row in rows if row[1].in_place] or [row for row in rows if row[1].flush] or rows
        by_config: dict = {}  # config key -> its rows, fastest first
        for row in sorted(rows, key=lambda row: row[1].cost):
            by_config.setdefault(row[0].config.key(), []).append(row)
        ranked[key] = sorted((r[(len(r) - 1) // 2] for r in by_config.values()), key=lambda row: row[1].cost)
    return ranked


def same_clock(rows: list) -> list:
    """The ``(input, result)`` rows timed by the clock of the last of them (the one a tune now uses)."""
    clock = rows[-1][1].clock if rows else "wall"
    return [row for row in rows if row[1].clock == clock]


def best_by_workload(records) -> dict:
    """``{(target text, workload): (input, result)}``: the fastest config's record of each
    (its median measurement, ``ranked_by_workload``)."""
    return {key: rows[0] for key, rows in ranked_by_workload(records).items()}


def pick_best(in_file, out_file) -> None:
    """Write the best record of each (target, workload) of ``in_file`` to ``out_file``."""
    best = best_by_workload(load_records(in_file))
    with open(out_file, "w", encoding="utf-8") as fh:
        fh.writelines(encode(inp, res) + "\n" for inp, res in best.values())


__all__ = [
    "SCHEMA",
    "register_kind",
    "target_key",
    "RecordWarning",
    "best_by_workload",
    "decode",
    "encode",
    "PROTOCOLS",
    "load_from_buffer",
    "load_from_file",
    "load_records",
    "pick_best",
    "ranked_by_workload",
    "same_clock",
    "save_to_file",
]
