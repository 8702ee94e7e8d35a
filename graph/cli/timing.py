"""Comparing with onnxruntime for the command line and the benchmarks: sessions, output summaries and
differences.  Timing itself (interleaved batches, paired rounds) is ``codegen.timing``."""

from __future__ import annotations


import numpy as np

from codegen.timing import format_samples, format_time, interleaved, paired, paired_ratio  # noqa: F401  (the CLI's names)
from graph.cli.common import ATOL, EXIT_MISMATCH, RTOL
from graph.cli.model import format_type


# ------------------------------------------------------------------ outputs
def summarize(name: str, array: np.ndarray) -> str:
    """One line: name, shape, dtype, first values, range; argmax of a 1000-class output."""
    flat = array.reshape(-1)
    first = ", ".join(f"{x:.6g}" if array.dtype.kind == "f" else str(x) for x in flat[:5])
    line = f"{name}: {format_type(array.shape, array.dtype)}  [{first}{', ...' if flat.size > 5 else ''}]"
    if flat.size and array.dtype.kind in "fiub":
        line += f"  min {flat.min():.6g} max {flat.max():.6g}"
    classes = [d for d in array.shape if d != 1]
    if classes == [1000]:
        top = int(np.argmax(flat))
        line += f"  argmax {top} ({flat[top]:.6g})"
    return line


def differences(ours: np.ndarray, ref: np.ndarray) -> tuple:
    """(max abs difference, max relative difference, agree): relative to |ref|, floored at
    1e-3 of the largest |ref| so near-zero elements do not dominate."""
    a, b = ours.astype(np.float64), ref.astype(np.float64)
    if a.shape != b.shape:
        return float("inf"), float("inf"), False
    if a.size == 0:
        return 0.0, 0.0, True
    diff = np.abs(a - b)
    scale = float(np.abs(b).max())
    rel = diff / np.maximum(np.abs(b), 1e-3 * scale + 1e-30)
    agree = bool(np.all(diff <= ATOL * max(scale, 1e-30) + RTOL * np.abs(b))) and bool(
        np.array_equal(np.isnan(a), np.isnan(b))
    )
    return float(np.nanmax(diff)), float(np.nanmax(rel)), agree


def ort_session(path: str | None, threads: int, profile: str | None = None) -> tuple:
    """(an onnxruntime session with ``threads`` intra-op threads, None) or (None, why not);
    ``profile``: its profiler on, writing to files of that prefix (``end_profiling`` names one)."""
    if path is None:
        return None, "a compiled library carries no ONNX model"
    try:
        import onnxruntime as ort
    except ImportError:
        return None, "onnxruntime is not installed (pip install onnxruntime)"
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: no warnings about unused initializers
    if profile is not None:
        options.enable_profiling, options.profile_file_prefix = True, profile
    try:
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]), None
    except Exception as err:  # noqa: BLE001 - onnxruntime raises its own exception types
        return None, f"onnxruntime cannot load the model: {flat(err)}"


def compare_outputs(m, ref: list) -> int:
    """Print the differences of each output from onnxruntime's; EXIT_MISMATCH if any disagree."""
    status = 0
    for k, name in enumerate(m.output_names()):
        ours = m.get_output(k)
        if k >= len(ref):
            print(f"output {name}: onnxruntime has no output {k}")
            status = EXIT_MISMATCH
            continue
        theirs = np.asarray(ref[k])
        abs_d, rel_d, agree = differences(ours, theirs)
        verdict = "agree" if agree else f"DIFFER (rtol {RTOL:g}, atol {ATOL:g} x max|ref|)"
        shapes = "" if ours.shape == theirs.shape else f" shapes {ours.shape} vs {theirs.shape}"
        print(f"output {name}: max abs diff {abs_d:.3g}, max rel diff {rel_d:.3g}{shapes}: {verdict}")
        status = status if agree else EXIT_MISMATCH
    return status
