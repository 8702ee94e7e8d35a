"""``tvm.testing`` for CPU targets: comparisons, parameters and fixtures, device markers.

Classic TVM's tests are written with these; they run here with only their imports
changed.  Only CPU targets exist here: ``enabled_targets()`` is the host's LLVM target,
and the markers of other devices (``requires_cuda``, ``requires_gpu`` ...) skip.

* ``x = tvm.testing.parameter(1, 2, 3)`` at module level: every test (or fixture)
  taking an argument ``x`` runs once per value; ``a, b = tvm.testing.parameters((1, 2),
  (3, 4))`` runs the pairs together.  The plugin (``tessera.testing.plugin``, loaded by a
  ``conftest.py`` with ``pytest_plugins = ["tessera.testing.plugin"]``, as TVM's own
  conftest does) does the parametrizing; it also gives tests the ``target`` and ``dev``
  fixtures.
* ``@tvm.testing.fixture``: a pytest fixture (``cache_return_value=True``: computed once
  per parameter set).
"""

from __future__ import annotations

import inspect
import sys

import numpy as np
import pytest

from codegen.ndarray import as_numpy, cpu
from tessera.testing import utils
from tessera.testing.grads import check_numerical_grads

LLVM = "llvm"


def assert_allclose(actual, desired, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    """``numpy.testing.assert_allclose`` (with TVM's default atol) on arrays or NDArrays."""
    np.testing.assert_allclose(as_numpy(actual), as_numpy(desired), rtol=rtol, atol=atol, verbose=True)


def assert_prim_expr_equal(lhs, rhs) -> None:
    """Two integer expressions that simplify to the same expression."""
    from te.simplify import simplify
    from te.visitor import structural_equal

    a, b = simplify(_expr(lhs)), simplify(_expr(rhs))
    if not structural_equal(simplify(a - b), _expr(0)) and not structural_equal(a, b):
        raise ValueError(f"{lhs} and {rhs} are not equal: they simplify to {a} and {b}")


def _expr(x):
    import te

    return te.const(x, "int32") if isinstance(x, int) else x


# ------------------------------------------------------------------ parameters
class Parameter:
    """A module-level parameter: tests taking an argument of its variable's name run once per value.

    ``group`` ties the parameters made by one ``parameters(...)`` call: they vary together."""

    def __init__(self, values: list, ids=None, group=None, index: int = 0):
        self.values = list(values)
        self.ids = ids
        self.group = group
        self.index = index

    def __repr__(self) -> str:
        return f"tvm.testing.parameter({', '.join(map(repr, self.values))})"


def parameter(*values, ids=None, by_dict=None) -> Parameter:
    """A parameter of the tests of this module: ``x = tvm.testing.parameter(1, 2, 3)``
    (``by_dict={"name": value}``: the keys are the test ids)."""
    if by_dict is not None:
        if values or ids:
            raise ValueError("tvm.testing.parameter: give values or by_dict, not both")
        ids, values = list(by_dict), list(by_dict.values())
    if not values:
        raise ValueError("tvm.testing.parameter: give at least one value")
    return Parameter(values, ids)


def parameters(*value_sets, ids=None) -> tuple:
    """Parameters that vary together: ``a, b = tvm.testing.parameters((1, 2), (3, 4))``."""
    if not value_sets:
        raise ValueError("tvm.testing.parameters: give at least one set of values")
    width = len(value_sets[0])
    if any(len(v) != width for v in value_sets):
        raise ValueError(f"tvm.testing.parameters: every set must have {width} values, got {value_sets}")
    group = object()
    return tuple(Parameter([v[k] for v in value_sets], ids, group, k) for k in range(width))


def fixture(func=None, *, cache_return_value: bool = False):
    """A pytest fixture (``@tvm.testing.fixture`` or ``@tvm.testing.fixture(cache_return_value=True)``)."""
    if func is None:
        return lambda f: fixture(f, cache_return_value=cache_return_value)
    if cache_return_value:
        cache: dict = {}
        names = list(inspect.signature(func).parameters)
        method = bool(names) and names[0] == "self"  # a fixture of a test class: pytest passes the instance

        def cached(*self, **kwargs):
            key = repr(sorted(kwargs.items(), key=lambda kv: kv[0]))
            if key not in cache:
                cache[key] = func(*self, **kwargs)
            return cache[key]

        params = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in names[method:]]
        if method:
            params.insert(0, inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD))
        cached.__signature__ = inspect.Signature(params)
        cached.__name__ = func.__name__
        return pytest.fixture(cached)
    return pytest.fixture(func)


# ------------------------------------------------------------------ targets and devices
def enabled_targets() -> list:
    """``[(target, device)]`` that tests can run on here: the host's LLVM target."""
    return [(LLVM, cpu(0))]


def device_enabled(target) -> bool:
    """Whether ``target`` can run here (only LLVM CPU targets can)."""
    return str(getattr(target, "kind", None) and target.kind.name or target).split()[0] == LLVM


def _targets_of(targets) -> list:
    return [t for t in (targets or [LLVM]) if device_enabled(t)]


def parametrize_targets(*args):
    """``@tvm.testing.parametrize_targets`` or ``@tvm.testing.parametrize_targets("llvm", "cuda")``:
    run the test once per target that runs here, with ``target`` and ``dev`` arguments."""
    if len(args) == 1 and callable(args[0]):
        return parametrize_targets()(args[0])

    def mark(func):
        return pytest.mark.parametrize("target", _targets_of(args))(func)

    return mark


def known_failing_targets(*targets):
    """Targets a test is known to fail on; none of them runs here."""
    return lambda func: func


def _skip(reason: str):
    mark = pytest.mark.skip(reason=reason)

    def decorate(*args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return mark(args[0])
        return mark

    return decorate


def _passthrough(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda func: func


uses_gpu = _passthrough  # marks a test that also runs on GPUs where they exist: here it runs on the CPU
requires_llvm = _passthrough
skip_if_wheel_test = _passthrough
for _name in ("gpu", "cuda", "cudagraph", "tensorcore", "cublas", "cudnn", "rocm", "opencl", "vulkan", "metal",
              "nvptx", "hexagon", "arm_dot", "x86_vnni", "micro", "ethosn", "ethosu", "rpc", "cmsisnn",
              "corstone300", "vitis_ai", "matrixcore", "openclml", "rocblas", "miopen", "aprofile_aem_fvp",
              "package_libtorch", "libtorch", "gpu_64bit", "usmp", "cuda_compute_version"):
    globals()[f"requires_{_name}"] = _skip(f"requires {_name}: Tessera runs on CPUs only")
requires_x86 = _passthrough


def main() -> None:
    """``if __name__ == "__main__": tvm.testing.main()``: run the calling file's tests with pytest."""
    caller = inspect.stack()[1].filename
    sys.exit(pytest.main([caller, "-p", "tessera.testing.plugin", *sys.argv[1:]]))


__all__ = ["Parameter", "assert_allclose", "assert_prim_expr_equal", "check_numerical_grads", "device_enabled", "enabled_targets",
           "fixture", "known_failing_targets", "main", "parameter", "parameters", "parametrize_targets",
           "requires_llvm", "skip_if_wheel_test", "uses_gpu", "utils"]
