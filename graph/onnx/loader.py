"""Reading and checking an ONNX model before anything is converted.

:func:`load_model` accepts an ``onnx.ModelProto``, a path or the serialized
bytes and turns every way a file can be broken (missing, empty, truncated,
not protobuf, no graph) into one ``ValueError`` (``FileNotFoundError`` for a
missing path) that names the file.  :func:`check_supported` refuses a model
with operators that have no converter, listing all of them at once.
"""

from __future__ import annotations

import os

import onnx
from google.protobuf.message import DecodeError

from graph.onnx.host import is_host_op
from graph.onnx.table import DEFAULT_DOMAINS, lookup, table_name


def _read_path(path: str) -> onnx.ModelProto:
    label = repr(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"from_onnx: no such file {label}")
    if os.path.isdir(path):
        raise ValueError(f"from_onnx: {label} is a directory, not an ONNX model file")
    if os.path.getsize(path) == 0:
        raise ValueError(f"from_onnx: {label} is empty (0 bytes), not an ONNX model")
    try:
        return onnx.load(path)
    except (DecodeError, RuntimeError, ValueError, OSError) as err:
        raise ValueError(f"from_onnx: cannot parse {label} as an ONNX model ({type(err).__name__}: {err}); "
                         f"the file may be truncated or not an ONNX file") from None


def _read_bytes(data: bytes) -> onnx.ModelProto:
    if not data:
        raise ValueError("from_onnx: the model bytes are empty (0 bytes), not an ONNX model")
    try:
        return onnx.load_from_string(data)
    except (DecodeError, RuntimeError, ValueError) as err:
        raise ValueError(f"from_onnx: cannot parse the given {len(data)} bytes as an ONNX model "
                         f"({type(err).__name__}: {err}); they may be truncated or not ONNX") from None


def load_model(model) -> tuple:
    """Parse ``model`` and check its structure.

    Parameters
    ----------
    model : onnx.ModelProto, str, os.PathLike or bytes

    Returns
    -------
    (onnx.ModelProto, str)
        The model and a label naming it in error messages.

    Raises
    ------
    FileNotFoundError
        For a path that does not exist.
    TypeError
        For any other kind of argument.
    ValueError
        For an empty, truncated or malformed model.
    """
    if isinstance(model, onnx.ModelProto):
        proto, label = model, f"model {model.graph.name!r}"
    elif isinstance(model, (bytes, bytearray, memoryview)):
        proto, label = _read_bytes(bytes(model)), "the model bytes"
    elif isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        proto, label = _read_path(path), repr(path)
    else:
        raise TypeError(f"from_onnx: expects an onnx.ModelProto, a file path or the model bytes, "
                        f"got {type(model).__name__}")
    check_structure(proto, label)
    return proto, label


def check_structure(proto: onnx.ModelProto, label: str) -> None:
    """Refuse a model without a graph, outputs or default-domain opset."""
    if not proto.HasField("graph") or proto.ir_version == 0:
        raise ValueError(f"from_onnx: {label} has no graph or no IR version; it is not an ONNX model "
                         f"(truncated or corrupt file?)")
    if not proto.graph.output:
        raise ValueError(f"from_onnx: the graph of {label} declares no outputs (truncated file?)")
    default_opset(proto, label)


def default_opset(proto: onnx.ModelProto, label: str) -> int:
    """The opset version the model imports for the default ONNX domain."""
    for imp in proto.opset_import:
        if imp.domain in DEFAULT_DOMAINS:
            if not 1 <= imp.version < 2**31:
                raise ValueError(f"from_onnx: {label} imports opset version {imp.version} of the default ONNX "
                                 f"domain, which is not an opset version (corrupt file?)")
            return int(imp.version)
    if proto.ir_version < 3:
        return 1
    raise ValueError(f"from_onnx: {label} imports no opset of the default ONNX domain "
                     f"(opset_import: {[(i.domain, i.version) for i in proto.opset_import]})")


# Operators refused by name, with the reason a user reads.
STRING_OPS = frozenset({"StringNormalizer", "StringSplit", "StringConcat", "RegexFullMatch", "TfIdfVectorizer",
                        "ImageDecoder"})
TRAINING_OPS = frozenset({"Gradient", "Momentum", "Adagrad", "Adam"})
RANDOM_OPS = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial",
                        "Bernoulli"})


def _why(op_type: str) -> str:
    if op_type in STRING_OPS:
        return ": strings and images are not tensors the compiler represents"
    if op_type in TRAINING_OPS:
        return ": a training-only operator"
    return ""


def unsupported_nodes(graph: onnx.GraphProto, opset: int, domains: dict, where: str = "") -> list:
    """One entry per node of ``graph`` and its subgraphs (If branches, Loop and Scan bodies)
    that has neither a converter nor a run-time implementation at ``opset``."""
    missing: list = []
    for node in graph.node:
        if not isinstance(node.op_type, str) or not isinstance(node.domain, str):  # not valid UTF-8
            raise ValueError(f"from_onnx: node {node.name!r} has an operator type or domain that is not valid "
                             f"UTF-8 ({node.op_type!r}, domain {node.domain!r}); the file is corrupt")
        label = f"{node.name or (node.output[0] if node.output else '?')!r}{where}"
        if node.domain not in DEFAULT_DOMAINS:
            if lookup(table_name(node.op_type, node.domain), opset) is not None:
                continue
            missing.append(f"{node.domain}.{node.op_type} {label} (domain {node.domain!r}, "
                           f"version {domains.get(node.domain, '?')})")
        elif lookup(node.op_type, opset) is None and not is_host_op(node.op_type, opset):
            missing.append(f"{node.op_type} {label} (opset {opset}){_why(node.op_type)}")
        for attr in node.attribute:
            subgraphs = [attr.g] if attr.HasField("g") else list(attr.graphs)
            for sub in subgraphs:
                missing += unsupported_nodes(sub, opset, domains, f" in {attr.name} of {node.op_type} {label}")
    return missing


def check_supported(graph: onnx.GraphProto, opset: int, domains: dict) -> None:
    """Raise one ValueError listing every node of ``graph`` (and its subgraphs) that cannot be
    imported: op type, node name and opset.

    Parameters
    ----------
    graph : onnx.GraphProto
    opset : int
        The model's default-domain opset.
    domains : dict
        domain -> imported version, for naming operators of other domains.
    """
    missing = unsupported_nodes(graph, opset, domains)
    if missing:
        raise ValueError(f"from_onnx: unsupported operators ({len(missing)} nodes): " + ", ".join(missing))
