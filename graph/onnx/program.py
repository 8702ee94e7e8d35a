"""Models whose shapes are decided when they run: specialised per input signature, in stages.

A model imports as a static :class:`graph.ir.Graph` when every shape is known
at import time.  Otherwise ``from_onnx`` returns a :class:`DynamicGraph`:

- symbolic input dimensions (``["N", 3, 224, 224]``, as ``torch.onnx.export``
  writes with ``dynamic_axes``);
- shape operands fed as graph inputs (a Reshape target, Resize scales, Slice
  bounds, TopK's k, Pad widths...), read when the model runs, as onnxruntime
  reads them;
- operators whose output size depends on data (NonZero, Unique, Compress,
  NonMaxSuppression), control flow on a run-time condition (If, Loop, Scan),
  sequences and optionals: the *host operators* of :mod:`graph.onnx.host`.

The model is cut into a :class:`Program` of steps: *segments* of convertible
nodes and host operators between them::

    data ──[segment 0: Conv, Relu, ...]── boxes, scores ──[NonMaxSuppression]── selected
         ──[segment 1: Gather, ...]── output

Each segment is compiled per *signature* (the shapes and dtypes of its inputs,
and the values of the inputs a converter needs as values): the first run of a
signature imports the segment with those shapes pinned and those inputs known
(``import_model``) and builds it with the options given to ``graph.build``;
later runs of the same signature reuse the built library.  A run whose shape
inputs contradict the model (a reshape to another element count) raises the
importer's ``ValueError`` naming the node, before any kernel runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

from graph.executor import InputsByName
from graph.onnx.context import NeedsInputValue, onnx_dtype
from graph.onnx.host import run_host, runs_on_host
from graph.onnx.importer import import_model
from graph.onnx.scope import outer_reads, reads

# Inputs whose extents are not all known; the placeholder dims of a symbolic input.
_SYMBOLIC = "?"


def declared_dims(info: onnx.ValueInfoProto) -> list | None:
    """The declared extents of a tensor input (str for symbolic ones), None when it declares no shape."""
    ttype = info.type.tensor_type
    if not ttype.HasField("shape"):
        return None
    return [d.dim_value if d.WhichOneof("value") == "dim_value" else (d.dim_param or _SYMBOLIC)
            for d in ttype.shape.dim]


def _is_tensor(info: onnx.ValueInfoProto) -> bool:
    return info.type.WhichOneof("value") in (None, "tensor_type")


def needs_program(g: onnx.GraphProto, shape: dict, opset: int) -> bool:
    """Whether ``g`` must run as a :class:`Program`: a data input that is not a tensor or has
    a symbolic extent ``shape`` does not pin, or a node that only runs on the host."""
    inits = {t.name for t in g.initializer}
    for v in g.input:
        if v.name in inits or v.name in shape:
            continue
        if not _is_tensor(v):
            return True
        dims = declared_dims(v)
        if dims is not None and any(isinstance(d, str) for d in dims):
            return True
    return bool(host_nodes(g, opset))


def host_nodes(g: onnx.GraphProto, opset: int) -> set:
    """The indices of the nodes of ``g`` that run on the host (:mod:`graph.onnx.host`)."""
    non_tensor = {v.name for v in g.input if not _is_tensor(v)}
    constants = _constants(g)
    out = set()
    for k, node in enumerate(g.node):
        if runs_on_host(node, opset, non_tensor, constants):
            out.add(k)
            non_tensor.update(n for n in node.output if n)
    return out


def _constants(g: onnx.GraphProto) -> set:
    names = {t.name for t in g.initializer}
    for node in g.node:
        if node.op_type == "Constant":
            names.update(node.output)
    return names


# ------------------------------------------------------------------ steps
@dataclass
class Segment:
    """Consecutive convertible nodes, compiled together per signature of their inputs."""

    nodes: list
    inputs: list  # names read from before the segment (graph inputs, earlier steps, outer scope)
    outputs: list  # names later steps or the graph outputs read
    frozen: set = field(default_factory=set)  # inputs a converter needs as values
    model: onnx.ModelProto | None = None
    built: dict = field(default_factory=dict)  # signature -> (executor, frozen names)


@dataclass
class HostStep:
    node: onnx.NodeProto


class Program:
    """An ONNX graph as steps: segments compiled per signature and host operators between them.

    ``outer`` names the values a subgraph (If branch, Loop or Scan body) reads from
    the graph around it."""

    def __init__(self, g: onnx.GraphProto, opset_import, opset: int, label: str, build_options: dict,
                 outer=(), shape: dict | None = None, dtype="float32"):
        self.graph, self.opset, self.label = g, opset, label
        self.opset_import = list(opset_import)
        self.options = build_options
        self.shape, self.dtype = dict(shape or {}), dtype
        self.initializers = {t.name: t for t in g.initializer}
        self.input_names = [v.name for v in g.input if v.name not in self.initializers]
        self.output_names = [o.name for o in g.output]
        self.steps = self._partition(host_nodes(g, opset))
        self._arrays: dict = {}
        self._subprograms: dict = {}
        self.generators: dict = {}  # the random generators' state (graph.onnx.random_ops)

    def _partition(self, host: set) -> list:
        steps, current = [], []
        for k, node in enumerate(self.graph.node):
            if k in host:
                if current:
                    steps.append(current)
                    current = []
                steps.append(HostStep(node))
            else:
                current.append(node)
        if current:
            steps.append(current)
        later: set = set(self.output_names)
        out = []
        for step in reversed(steps):  # what each segment must hand on: read by a later step or an output
            read = reads(step.node) if isinstance(step, HostStep) else {n for node in step for n in reads(node)}
            if isinstance(step, list):
                made = {n for node in step for n in node.output if n}
                inside = made | set(self.initializers)
                step = Segment(step, sorted(n for n in read if n not in inside),
                               [n for n in dict.fromkeys(n for node in step for n in node.output) if n in later])
                later -= made
            later |= read
            out.append(step)
        return list(reversed(out))

    def subprogram(self, node: onnx.NodeProto, key: str) -> Program:
        """The Program of subgraph attribute ``key`` of ``node`` (an If branch, a Loop or Scan
        body), made once and compiled per signature like this one."""
        ident = (id(node), key)
        if ident not in self._subprograms:
            g = next(a.g for a in node.attribute if a.name == key)
            label = f"{self.label} ({node.op_type} {node.name!r} {key})"
            self._subprograms[ident] = Program(g, self.opset_import, self.opset, label, self.options)
        return self._subprograms[ident]

    def outer_values(self, g: onnx.GraphProto, env: dict, feeds: dict) -> dict:
        """The values subgraph ``g`` reads from this program's scope (``env``, initializers)."""
        return {n: env[n] if n in env else self.initializer(n) for n in outer_reads(g)
                if n not in feeds and (n in env or n in self.initializers)}

    # ------------------------------------------------------------- running
    def run(self, feeds: dict) -> list:
        """The graph outputs for ``feeds`` (input name -> array, list for a sequence, None for an
        empty optional; a subgraph's feeds include the outer values it reads)."""
        env = dict(feeds)
        for step in self.steps:
            if isinstance(step, HostStep):
                values = run_host(self, step.node, env)
                env.update((n, v) for n, v in zip(step.node.output, values) if n)
            else:
                env.update(self._run_segment(step, env))
        missing = [n for n in self.output_names if n not in env and n not in self.initializers]
        if missing:
            raise ValueError(f"{self.label}: graph outputs {missing} were not produced")
        return [env[n] if n in env else self.initializer(n) for n in self.output_names]

    def initializer(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            self._arrays[name] = numpy_helper.to_array(self.initializers[name])
        return self._arrays[name]

    def _run_segment(self, seg: Segment, env: dict) -> dict:
        arrays = {}
        for n in seg.inputs:
            if n not in env:
                raise ValueError(f"{self.label}: node input {n!r} is not defined before it is read")
            a = env[n]
            if a is None or isinstance(a, list):
                raise ValueError(f"from_onnx: {self.label}: {n!r} is a sequence or optional, which only "
                                 f"sequence and optional operators read")
            arrays[n] = np.asarray(a)
        key = tuple((n, a.shape, str(a.dtype), a.tobytes() if n in seg.frozen else b"") for n, a in arrays.items())
        if key not in seg.built:
            seg.built[key] = self._specialise(seg, arrays)
        m, frozen = seg.built[key]
        m.run(**{n: a for n, a in arrays.items() if n not in frozen})
        return {n: m.get_output(k) for k, n in enumerate(seg.outputs)}

    def _segment_model(self, seg: Segment) -> onnx.ModelProto:
        if seg.model is None:
            g = onnx.GraphProto(name=f"{self.graph.name or 'main'}_part")
            g.node.extend(seg.nodes)
            used = {n for node in seg.nodes for n in reads(node)}
            g.initializer.extend(t for name, t in self.initializers.items() if name in used)
            g.input.extend(onnx.ValueInfoProto(name=n) for n in seg.inputs)
            g.output.extend(onnx.ValueInfoProto(name=n) for n in seg.outputs)
            seg.model = onnx.helper.make_model(g, opset_imports=self.opset_import)
        return seg.model

    def _specialise(self, seg: Segment, arrays: dict) -> tuple:
        """Import the segment with the inputs' shapes pinned (and the inputs converters need as
        values known), build it, and return (executor, frozen input names)."""
        from graph.build import build

        model = self._segment_model(seg)
        shapes = {n: a.shape for n, a in arrays.items()}
        dtypes = {n: str(a.dtype) for n, a in arrays.items()}
        for a in arrays.values():
            if onnx_dtype(onnx.helper.np_dtype_to_tensor_dtype(a.dtype)) is None:
                raise ValueError(f"from_onnx: {self.label}: an input of type {a.dtype} cannot be compiled")
        while True:
            frozen = {n: arrays[n] for n in seg.frozen}
            try:
                g, params = import_model(model, self.label, shapes, dtypes, frozen)
                break
            except NeedsInputValue as err:
                if err.input_name not in arrays or err.input_name in seg.frozen:
                    raise
                seg.frozen.add(err.input_name)
        lib = build(g, params=params, **self.options)
        return lib.create_executor(), set(frozen)


# ------------------------------------------------------------------ the graph-layer API
class DynamicGraph:
    """An ONNX model imported for specialisation at run time (see the module docstring).

    ``graph.build(dg, target=..., params=..., ...)`` returns a :class:`DynamicLibrary`;
    its ``create_executor()`` runs like ``GraphModule`` (``set_input``, ``run``,
    ``get_output``), compiling each new input signature once."""

    is_dynamic = True

    def __init__(self, proto: onnx.ModelProto, label: str, shape: dict, dtype):
        self.proto, self.label, self.shape, self.dtype = proto, label, dict(shape), dtype
        g = proto.graph
        inits = {t.name for t in g.initializer}
        self.input_infos = [v for v in g.input if v.name not in inits]
        self.name = g.name or "main"

    @property
    def input_names(self) -> list:
        return [v.name for v in self.input_infos]

    @property
    def output_names(self) -> list:
        return [o.name for o in self.proto.graph.output]

    def op_count(self) -> int:
        return len(self.proto.graph.node)

    def build(self, target=None, params: dict | None = None, **options) -> DynamicLibrary:
        if params:
            raise ValueError(f"build: {self.label} is specialised when it runs; its initializers are its "
                             f"params (got params {sorted(params)[:5]})")
        if target is not None:
            options["target"] = target
        return DynamicLibrary(self, options)

    def __repr__(self) -> str:
        dims = {v.name: declared_dims(v) for v in self.input_infos}
        return f"DynamicGraph({self.name!r}, inputs {dims}, {self.op_count()} ONNX nodes)"

    __str__ = __repr__


class DynamicLibrary:
    """What ``graph.build`` of a :class:`DynamicGraph` returns: the build options, the program."""

    def __init__(self, dg: DynamicGraph, options: dict):
        opset = max((i.version for i in dg.proto.opset_import if i.domain in ("", "ai.onnx")), default=1)
        self.graph = dg
        self.program = Program(dg.proto.graph, dg.proto.opset_import, opset, dg.label, options, (), dg.shape,
                               dg.dtype)
        self.params: dict = {}

    @property
    def input_names(self) -> list:
        return self.graph.input_names

    def create_executor(self) -> DynamicModule:
        return DynamicModule(self)


class DynamicModule(InputsByName):
    """Runs a :class:`DynamicLibrary` (classic graph-runtime API: ``set_input``, ``run``, ``get_output``)."""

    def __init__(self, lib: DynamicLibrary):
        self.lib = lib
        self._inputs: dict = {}
        self._outputs: list = []
        self._infos = {v.name: v for v in lib.graph.input_infos}

    def _set_one(self, name: str, array) -> None:
        info = self._infos.get(name)
        if info is None:
            raise KeyError(f"set_input: the graph has no input {name!r}; inputs: {sorted(self._infos)}")
        self._inputs[name] = _checked(info, array, self.lib.graph.shape.get(name))

    def run(self, **inputs) -> None:
        for name, array in inputs.items():  # not set_input(**inputs): an input may be named "key" or "value"
            self._set_one(name, array)
        missing = [n for n in self._infos if n not in self._inputs]
        if missing:
            raise ValueError(f"run: inputs {missing} are not set")
        self._outputs = self.lib.program.run(dict(self._inputs))

    def get_output(self, index: int = 0):
        if not 0 <= index < len(self.lib.graph.output_names):
            raise IndexError(f"get_output: output {index} out of range; the graph has "
                             f"{len(self.lib.graph.output_names)} outputs")
        if not self._outputs:
            raise ValueError("get_output: run the model first")
        out = self._outputs[index]
        return np.array(out, copy=True) if isinstance(out, np.ndarray) else out

    @property
    def num_outputs(self) -> int:
        return len(self.lib.graph.output_names)

    def output_names(self) -> list:
        return list(self.lib.graph.output_names)

    @property
    def input_names(self) -> list:
        return list(self._infos)


def _checked(info: onnx.ValueInfoProto, value, pinned):
    """``value`` for input ``info``: a tensor's rank, fixed extents and element type are checked."""
    if not _is_tensor(info):
        return value
    array = np.asarray(value)
    elem = info.type.tensor_type.elem_type
    want = onnx_dtype(elem) if elem else None
    if want is not None and str(array.dtype) != want:
        raise TypeError(f"set_input: input {info.name!r} expects dtype {want}, got {array.dtype}")
    dims = list(pinned) if pinned is not None else declared_dims(info)
    if dims is not None:
        if array.ndim != len(dims) or any(isinstance(d, int) and d > 0 and d != n for d, n in zip(dims, array.shape)):
            raise ValueError(f"set_input: input {info.name!r} expects shape {tuple(dims)}, got {array.shape}")
    return array
