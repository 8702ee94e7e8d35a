"""Shared pytest configuration: the ``--update-golden`` option for golden loop-nest tests."""

import os

import pytest

# The tuner's measuring workers settle their probe kernel for 4 s per runner (tune/autotvm/measure/
# execute.py); the tests' runners time kernels of microseconds, where 0.2 s says as much.
os.environ.setdefault("TESSERA_SETTLE_S", "0.2")


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/*.txt from the current lowering output instead of comparing",
    )


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")
