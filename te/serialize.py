"""JSON text of an IR object graph (classic ``tvm.ir.save_json`` / ``load_json``).

Expressions, tensors, operations, schedules: any graph of the project's objects (dataclass
nodes, slotted or plain classes) is written as a table of nodes, each named by its class
and holding its fields; a field refers to another object by its index in the table, so
shared nodes stay shared (two reads of one ``Var`` load as reads of one ``Var``) and cycles
(a stage and its schedule) survive::

    {"root": 0, "nodes": [{"type": "te.expr.Add", "fields": {"a": {"ref": 1}, ...}}, ...]}

Only classes of the project's packages are loaded back; a function or any other object
that has no fields to write is refused naming where it was met.
"""

from __future__ import annotations

import base64
import importlib
import json

import numpy as np

PACKAGES = ("te", "schedule", "codegen", "tune", "topi", "graph", "tessera")
FORMAT = "tessera-ir/1"


def _fields(obj) -> dict:
    out = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                out[name] = getattr(obj, name)
    return out


def save_json(obj) -> str:
    """The JSON text of ``obj`` and everything it refers to."""
    nodes: list = []
    index: dict = {}

    def value(x, where: str):
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        if isinstance(x, np.generic):
            return x.item()
        if isinstance(x, np.ndarray):
            return {"ndarray": base64.b64encode(np.ascontiguousarray(x).tobytes()).decode(),
                    "dtype": str(x.dtype), "shape": list(x.shape)}
        if isinstance(x, list):
            return {"list": [value(v, where) for v in x]}
        if isinstance(x, tuple) and type(x) is tuple:
            return {"tuple": [value(v, where) for v in x]}
        if isinstance(x, (set, frozenset)):
            return {"set": [value(v, where) for v in x]}
        if isinstance(x, dict):
            return {"dict": [[value(k, where), value(v, f"{where}[{k!r}]")] for k, v in x.items()]}
        return {"ref": node(x, where)}

    def node(x, where: str) -> int:
        if id(x) in index:
            return index[id(x)]
        cls = type(x)
        if cls.__module__.split(".")[0] not in PACKAGES:
            raise TypeError(f"save_json: {where} is a {cls.__module__}.{cls.__qualname__}, which has no "
                            f"JSON form (only the IR's own objects do)")
        k = len(nodes)
        index[id(x)] = k
        nodes.append(None)
        entry = {"type": f"{cls.__module__}:{cls.__qualname__}"}
        if isinstance(x, tuple):  # a named tuple
            entry["items"] = [value(v, f"{where}[{i}]") for i, v in enumerate(x)]
        else:
            entry["fields"] = {name: value(v, f"{where}.{name}") for name, v in _fields(x).items()}
        nodes[k] = entry
        return k

    root = value(obj, type(obj).__name__)
    return json.dumps({"format": FORMAT, "root": root, "nodes": nodes})


def load_json(text: str):
    """The object graph written by :func:`save_json`."""
    doc = json.loads(text)
    if doc.get("format") != FORMAT:
        raise ValueError(f"load_json: not a {FORMAT} document (format {doc.get('format')!r})")
    entries = doc["nodes"]
    objs: list = []
    for entry in entries:
        module, _, qualname = entry["type"].partition(":")
        if module.split(".")[0] not in PACKAGES:
            raise ValueError(f"load_json: class {entry['type']} is not one of the IR's")
        cls = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        objs.append(None if "items" in entry else object.__new__(cls))

    def value(x):
        if not isinstance(x, dict):
            return x
        if "ref" in x:
            return objs[x["ref"]]
        if "ndarray" in x:
            return np.frombuffer(base64.b64decode(x["ndarray"]), x["dtype"]).reshape(x["shape"]).copy()
        if "list" in x:
            return [value(v) for v in x["list"]]
        if "tuple" in x:
            return tuple(value(v) for v in x["tuple"])
        if "set" in x:
            return {value(v) for v in x["set"]}
        return {value(k): value(v) for k, v in x["dict"]}

    def containers_last(fields: dict) -> list:
        """Scalar and node fields first: a dict keyed by nodes hashes them once they are filled."""
        return sorted(fields.items(), key=lambda kv: isinstance(kv[1], dict) and ("dict" in kv[1] or "set" in kv[1]))

    for k, entry in enumerate(entries):  # named tuples: their items must exist when referred to
        if "items" in entry:
            module, _, qualname = entry["type"].partition(":")
            cls = importlib.import_module(module)
            for part in qualname.split("."):
                cls = getattr(cls, part)
            objs[k] = cls(*[value(v) for v in entry["items"]])
    for phase in (0, 1):
        for k, entry in enumerate(entries):
            for name, raw in containers_last(entry.get("fields", {})):
                late = isinstance(raw, dict) and ("dict" in raw or "set" in raw)
                if late == bool(phase):
                    object.__setattr__(objs[k], name, value(raw))
    return value(doc["root"])


__all__ = ["load_json", "save_json"]
