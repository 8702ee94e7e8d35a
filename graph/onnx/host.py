"""Host operators: the ONNX nodes a :class:`graph.onnx.program.Program` runs between compiled segments.

Control flow (``If`` on a run-time condition, ``Loop``, ``Scan``, ``SequenceMap``)
runs its subgraphs as programs of their own, each compiled per signature like
the main graph.  The operators whose output *size* depends on data
(``NonZero``, ``Unique``, ``Compress``, ``NonMaxSuppression``) and the sequence
and optional operators run here in numpy: their outputs size the segments
compiled after them.  ``If`` whose condition is a constant never gets here: its
converter inlines the branch at import (:mod:`graph.onnx.control`).

Each operator is ``fn(program, node, args) -> list`` with ``args`` the input
values (arrays, lists for sequences, None for an omitted or empty input).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper

_HOST: dict = {}
_SINCE: dict = {}  # op type -> the first opset that defines it, where that is not 1

# Host operators whose outputs are tensors a compiled segment can read.
_TENSOR_OUTPUTS = {"NonZero", "Unique", "Compress", "NonMaxSuppression", "SequenceAt", "SequenceLength",
                   "ConcatFromSequence", "OptionalHasElement", "Scan", "Det"}


def host(*op_types: str, since: int = 1) -> Callable:
    """Register ``fn`` as the host implementation of ``op_types``, defined from opset ``since``."""
    def register(fn: Callable) -> Callable:
        for op in op_types:
            _HOST[op] = fn
            if since > 1:
                _SINCE[op] = since
        return fn

    return register


def is_host_op(op_type: str, opset: int) -> bool:
    return op_type in _HOST and opset >= _SINCE.get(op_type, 1)


def runs_on_host(node: onnx.NodeProto, opset: int, non_tensor: set, constants: set) -> bool:
    """Whether ``node`` runs on the host: a host operator (but ``If`` on a constant condition),
    or an ``Identity`` of a sequence or optional (``non_tensor``: the names of such values).

    Adds the outputs of ``node`` that are not tensors to ``non_tensor``."""
    reads_non_tensor = any(n in non_tensor for n in node.input)
    if node.op_type == "If" and not reads_non_tensor and node.input[0] in constants:
        return False
    if node.op_type not in _HOST and not (reads_non_tensor and node.op_type == "Identity"):
        return False
    if node.op_type not in _TENSOR_OUTPUTS and not _tensor_results(node):
        non_tensor.update(n for n in node.output if n)
    return True


def _tensor_results(node: onnx.NodeProto) -> bool:
    """If and Loop: whether every output of the subgraph is declared a tensor."""
    for attr in node.attribute:
        if attr.name in ("then_branch", "else_branch", "body"):
            return all(o.type.WhichOneof("value") in (None, "tensor_type") for o in attr.g.output)
    return False


def run_host(program, node: onnx.NodeProto, env: dict) -> list:
    args = []
    for name in node.input:
        if not name:
            args.append(None)
        elif name in env:
            args.append(env[name])
        elif name in program.initializers:
            args.append(program.initializer(name))
        else:
            raise ValueError(f"{program.label}: node {node.name!r} ({node.op_type}) reads {name!r}, "
                             f"which is not defined")
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    try:
        return list(_HOST.get(node.op_type, run_identity)(program, node, args, attrs, env))
    except (IndexError, TypeError, np.exceptions.AxisError) as err:
        raise ValueError(f"from_onnx: node {node.name!r} ({node.op_type}): {type(err).__name__}: {err}") from err


def _run_sub(program, node, key: str, env: dict, feeds: dict) -> list:
    sub = program.subprogram(node, key)
    return sub.run({**program.outer_values(sub.graph, env, feeds), **feeds})


def _scalar(value, default=None):
    if value is None or (isinstance(value, np.ndarray) and value.size == 0):
        return default
    return np.asarray(value).reshape(-1)[0].item()


# ------------------------------------------------------------------ control flow
@host("If")
def run_if(program, node, args, attrs, env) -> list:
    key = "then_branch" if bool(_scalar(args[0])) else "else_branch"
    return _run_sub(program, node, key, env, {})


@host("Loop")
def run_loop(program, node, args, attrs, env) -> list:
    """``for i in range(M) while cond``: body(i, cond, carried...) -> (cond, carried..., scans...)."""
    body = next(a.g for a in node.attribute if a.name == "body")
    trip, cond = _scalar(args[0]), _scalar(args[1], True)
    carried = list(args[2:])
    names = [v.name for v in body.input]
    n_scan = len(body.output) - 1 - len(carried)
    scans: list = [[] for _ in range(n_scan)]
    i = 0
    while (trip is None or i < trip) and bool(cond):
        feeds = {names[0]: np.array(i, np.int64), names[1]: np.array(bool(cond))}
        feeds.update(zip(names[2:], carried))
        outs = _run_sub(program, node, "body", env, feeds)
        cond, carried = _scalar(outs[0], True), outs[1:1 + len(carried)]
        for k, v in enumerate(outs[1 + len(carried):]):
            scans[k].append(v)
        i += 1
    stacked = []
    for k, items in enumerate(scans):
        out = body.output[1 + len(carried) + k]
        if out.type.WhichOneof("value") == "sequence_type":
            stacked.append(items)
        elif items:
            stacked.append(np.stack([np.asarray(a) for a in items]))
        else:
            elem = out.type.tensor_type.elem_type or onnx.TensorProto.FLOAT
            stacked.append(np.zeros((0,), helper.tensor_dtype_to_np_dtype(elem)))
    return carried + stacked


@host("Scan")
def run_scan(program, node, args, attrs, env) -> list:
    """Scan 9+: states and scan inputs sliced along their axes; Scan 8: a leading batch axis
    and optional sequence lengths."""
    if program.opset < 9:
        return _scan_v8(program, node, args, attrs, env)
    n_scan = int(attrs["num_scan_inputs"])
    states, xs = list(args[:len(args) - n_scan]), [np.asarray(a) for a in args[len(args) - n_scan:]]
    return _scan(program, node, attrs, env, states, xs)


def _scan(program, node, attrs, env, states, xs, length=None) -> list:
    body = next(a.g for a in node.attribute if a.name == "body")
    n_scan = len(xs)
    in_axes = list(attrs.get("scan_input_axes", [0] * n_scan))
    in_dirs = list(attrs.get("scan_input_directions", [0] * n_scan))
    n_out = len(body.output) - len(states)
    out_axes = list(attrs.get("scan_output_axes", [0] * n_out))
    out_dirs = list(attrs.get("scan_output_directions", [0] * n_out))
    xs = [np.moveaxis(x, a % x.ndim, 0) for x, a in zip(xs, in_axes)]
    xs = [x[::-1] if d else x for x, d in zip(xs, in_dirs)]
    steps = xs[0].shape[0] if length is None else length
    names = [v.name for v in body.input]
    ys: list = [[] for _ in range(n_out)]
    for t in range(steps):
        feeds = dict(zip(names, states + [x[t] for x in xs]))
        outs = _run_sub(program, node, "body", env, feeds)
        states = outs[:len(states)]
        for k, y in enumerate(outs[len(states):]):
            ys[k].append(np.asarray(y))
    result = list(states)
    for k, items in enumerate(ys):
        y = np.stack(items) if items else np.zeros((0,), np.float32)
        y = y[::-1] if out_dirs[k] else y
        result.append(np.moveaxis(y, 0, out_axes[k] % y.ndim))
    return result


def _scan_v8(program, node, args, attrs, env) -> list:
    n_scan = int(attrs["num_scan_inputs"])
    lens, rest = args[0], args[1:]
    states, xs = rest[:len(rest) - n_scan], [np.asarray(a) for a in rest[len(rest) - n_scan:]]
    directions = list(attrs.get("directions", [0] * n_scan))
    per_batch = []
    for b in range(xs[0].shape[0]):
        length = int(lens[b]) if lens is not None else xs[0].shape[1]
        sub_attrs = {"scan_input_directions": directions}
        per_batch.append(_scan(program, node, sub_attrs, env, [np.asarray(s)[b] for s in states],
                               [x[b, :length] for x in xs]))
    return [np.stack(parts) for parts in zip(*per_batch)]


# ------------------------------------------------------------------ data-dependent sizes
@host("NonZero")
def run_nonzero(program, node, args, attrs, env) -> list:
    x = np.asarray(args[0])
    return [np.array(np.nonzero(x.reshape(1) if x.ndim == 0 else x), dtype=np.int64)[: max(x.ndim, 1)]]


@host("Compress")
def run_compress(program, node, args, attrs, env) -> list:
    x, cond = np.asarray(args[0]), np.asarray(args[1]).astype(bool).reshape(-1)
    axis = attrs.get("axis")
    if axis is None:
        return [np.compress(cond, x.reshape(-1))]
    axis = int(axis) % x.ndim
    if cond.size > x.shape[axis]:
        raise ValueError(f"from_onnx: node {node.name!r} (Compress): condition of {cond.size} entries is longer "
                         f"than axis {axis} of {x.shape}")
    return [np.compress(cond, x, axis=axis)]


@host("Unique")
def run_unique(program, node, args, attrs, env) -> list:
    """Unique values (slices along ``axis``), sorted or in order of first occurrence, with the
    first index of each, the inverse indices and the counts."""
    x = np.asarray(args[0])
    axis = attrs.get("axis")
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    axis = int(axis) % x.ndim
    y, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not attrs.get("sorted", 1):
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        y, first, counts, inverse = np.take(y, order, axis=axis), first[order], counts[order], rank[inverse]
    return [y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)]


def _corners(boxes: np.ndarray, center: bool) -> np.ndarray:
    """[N, 4] boxes as (y1, x1, y2, x2) with y1 <= y2, x1 <= x2."""
    if center:
        x, y, w, h = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
        return np.stack([y - h / 2, x - w / 2, y + h / 2, x + w / 2], axis=1)
    return np.stack([np.minimum(boxes[:, 0], boxes[:, 2]), np.minimum(boxes[:, 1], boxes[:, 3]),
                     np.maximum(boxes[:, 0], boxes[:, 2]), np.maximum(boxes[:, 1], boxes[:, 3])], axis=1)


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    h = np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0])
    w = np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1])
    inter = np.where((h > 0) & (w > 0), h * w, 0.0)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + areas - inter
    ok = (inter > 0) & (area > 0) & (areas > 0) & (union > 0)
    return np.where(ok, inter / np.where(ok, union, 1.0), 0.0)


@host("NonMaxSuppression")
def run_nms(program, node, args, attrs, env) -> list:
    """Greedy per batch and class: boxes by descending score (ties: the lower index first),
    each kept unless its IoU with a kept box exceeds ``iou_threshold``; at most
    ``max_output_boxes_per_class`` per class; ``score_threshold`` drops scores not above it."""
    boxes, scores = np.asarray(args[0]), np.asarray(args[1])
    limit = max(int(_scalar(args[2] if len(args) > 2 else None, 0)), 0)
    iou_threshold = float(_scalar(args[3] if len(args) > 3 else None, 0.0))
    score_threshold = _scalar(args[4] if len(args) > 4 else None)
    center = bool(attrs.get("center_point_box", 0))
    selected = []
    for b in range(boxes.shape[0]):
        corners = _corners(boxes[b].astype(np.float64), center)
        for c in range(scores.shape[1]):
            s = scores[b, c]
            order = [int(i) for i in np.lexsort((np.arange(s.size), -s))
                     if score_threshold is None or s[i] > score_threshold]
            kept: list = []
            for i in order:
                if len(kept) >= limit:
                    break
                if not kept or not (_iou(corners[i], corners[kept]) > iou_threshold).any():
                    kept.append(i)
            selected += [(b, c, i) for i in kept]
    return [np.array(selected, dtype=np.int64).reshape(-1, 3)]


# ------------------------------------------------------------------ sequences and optionals
def _position(pos, n: int, insert: bool = False) -> int:
    k = int(_scalar(pos, n if insert else n - 1))
    k = k + n if k < 0 else k
    if not 0 <= k <= (n if insert else n - 1):
        raise IndexError(f"position {_scalar(pos)} is out of range for a sequence of {n}")
    return k


@host("SequenceEmpty")
def run_sequence_empty(program, node, args, attrs, env) -> list:
    return [[]]


@host("SequenceConstruct")
def run_sequence_construct(program, node, args, attrs, env) -> list:
    return [[np.asarray(a) for a in args]]


@host("SequenceInsert")
def run_sequence_insert(program, node, args, attrs, env) -> list:
    seq = list(args[0])
    seq.insert(_position(args[2] if len(args) > 2 else None, len(seq), insert=True), np.asarray(args[1]))
    return [seq]


@host("SequenceErase")
def run_sequence_erase(program, node, args, attrs, env) -> list:
    seq = list(args[0])
    del seq[_position(args[1] if len(args) > 1 else None, len(seq))]
    return [seq]


@host("SequenceAt")
def run_sequence_at(program, node, args, attrs, env) -> list:
    return [np.asarray(args[0][_position(args[1], len(args[0]))])]


@host("SequenceLength")
def run_sequence_length(program, node, args, attrs, env) -> list:
    return [np.array(len(args[0]), np.int64)]


@host("ConcatFromSequence")
def run_concat_from_sequence(program, node, args, attrs, env) -> list:
    axis = int(attrs["axis"])
    if attrs.get("new_axis", 0):
        return [np.stack(args[0], axis=axis)]
    return [np.concatenate(args[0], axis=axis)]


@host("SplitToSequence")
def run_split_to_sequence(program, node, args, attrs, env) -> list:
    x = np.asarray(args[0])
    axis = int(attrs.get("axis", 0)) % x.ndim
    split = args[1] if len(args) > 1 else None
    n = x.shape[axis]
    if split is None:
        parts = np.split(x, n, axis=axis)
        return [[np.squeeze(p, axis) for p in parts] if attrs.get("keepdims", 1) == 0 else parts]
    split = np.asarray(split).astype(np.int64)
    if split.ndim == 0:
        bounds = list(range(int(split), n, int(split)))
    else:
        if split.sum() != n:
            raise ValueError(f"from_onnx: node {node.name!r} (SplitToSequence): split {split.tolist()} does not "
                             f"add up to axis {axis} of {x.shape}")
        bounds = list(np.cumsum(split)[:-1])
    return [np.split(x, bounds, axis=axis)]


@host("SequenceMap")
def run_sequence_map(program, node, args, attrs, env) -> list:
    body = next(a.g for a in node.attribute if a.name == "body")
    names = [v.name for v in body.input]
    n = len(args[0])
    outs: list = [[] for _ in body.output]
    for i in range(n):
        feeds = {name: (a[i] if isinstance(a, list) else a) for name, a in zip(names, args)}
        for k, y in enumerate(_run_sub(program, node, "body", env, feeds)):
            outs[k].append(np.asarray(y))
    return outs


@host("Optional")
def run_optional(program, node, args, attrs, env) -> list:
    return [args[0] if args else None]


@host("OptionalHasElement")
def run_optional_has_element(program, node, args, attrs, env) -> list:
    return [np.array(bool(args) and args[0] is not None)]


@host("OptionalGetElement")
def run_optional_get_element(program, node, args, attrs, env) -> list:
    if args[0] is None:
        raise ValueError(f"from_onnx: node {node.name!r} (OptionalGetElement): the optional is empty")
    return [args[0]]


def run_identity(program, node, args, attrs, env) -> list:
    return [args[0]]



@host("Det")
def run_det(program, node, args, attrs, env) -> list:
    """The determinant of each trailing square matrix (LU factorisation, numpy)."""
    x = np.asarray(args[0])
    return [np.linalg.det(x).astype(x.dtype)]
