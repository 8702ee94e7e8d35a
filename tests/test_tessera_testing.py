"""``tvm.testing`` as classic TVM tests use it: parameters, fixtures, targets, device markers."""

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CLASSIC_TESTS = '''
import numpy as np
import pytest
import tessera as tvm
import tessera.testing
from tessera import te

size = tvm.testing.parameter(1, 7, 64)
dtype, lanes = tvm.testing.parameters(("float32", 8), ("int32", 4))
seen = []


@tvm.testing.fixture
def data(size):
    return np.arange(size, dtype="float32")


@tvm.testing.fixture(cache_return_value=True)
def expensive(size):
    seen.append(size)
    return size * 2


def test_parameter_and_fixture(size, data, expensive):
    assert data.shape == (size,) and expensive == 2 * size


class TestCachedMethodFixture:
    """A cached fixture may be a method of a test class (TVM's tests declare them so)."""

    @tvm.testing.fixture(cache_return_value=True)
    def doubled(self, size):
        return size * 2

    def test_method_fixture(self, size, doubled):
        assert doubled == 2 * size


def test_correlated(dtype, lanes):
    assert (dtype, lanes) in (("float32", 8), ("int32", 4))


def test_target_and_dev(target, dev):
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B], target)
    a = tvm.nd.array(np.ones(4, "float32"), dev)
    b = tvm.nd.empty((4,), "float32", dev)
    f(a, b)
    tvm.testing.assert_allclose(b.numpy(), 2.0)


@tvm.testing.parametrize_targets("llvm", "cuda")
def test_parametrized_targets(target):
    assert target == "llvm"


@tvm.testing.requires_cuda
def test_needs_cuda():
    raise AssertionError("must be skipped")


@tvm.testing.uses_gpu
def test_uses_gpu_runs_on_cpu():
    assert [t for t, _ in tvm.testing.enabled_targets()] == ["llvm"]
    assert tvm.testing.device_enabled("llvm") and not tvm.testing.device_enabled("cuda")


def test_cache_counts():
    assert sorted(seen) == [1, 7, 64]  # once per value, though two tests would ask


class BaseScaled:
    scale = tvm.testing.parameter(1)
    offset = tvm.testing.parameter(0)

    def test_scaled(self, scale, offset):
        assert (scale, offset) in self.expected


class TestBaseParameters(BaseScaled):
    expected = [(1, 0)]


class TestDerivedParameters(BaseScaled):  # a subclass's parameters replace its base's
    scale, offset = tvm.testing.parameters((2, 3), (4, 5))
    expected = [(2, 3), (4, 5)]


if __name__ == "__main__":
    tvm.testing.main()
'''


def test_classic_test_module_runs_with_the_plugin(tmp_path):
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tessera.testing.plugin"]\n')
    (tmp_path / "test_classic.py").write_text(textwrap.dedent(CLASSIC_TESTS))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "test_classic.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    # 3 sizes, 2 pairs, 1 target, 1 of the two targets (cuda is not enabled), gpu, cache, 1 + 2 of the
    # classes' parameters; cuda skipped
    assert "15 passed, 1 skipped" in out, out
    assert "requires cuda: Tessera runs on CPUs only" in out


def test_parameters_are_checked():
    import tessera.testing as testing

    with pytest.raises(ValueError, match="every set must have 2 values"):
        testing.parameters((1, 2), (3,))
    with pytest.raises(ValueError, match="at least one value"):
        testing.parameter()
