"""Shared pytest configuration: the ``--update-golden`` option for golden loop-nest tests."""

import os

import pytest

# The tuner's measuring workers settle their yardstick kernel for 4 s once per host (tune/
# measure/yardstick.py); the tests' runners time kernels of microseconds, where 0.2 s says as much
# (a longer settle stored in the cache is reused; a shorter one is never used by a longer SETTLE_S).
os.environ.setdefault("TESSERA_SETTLE_S", "0.2")
# and take each task reference's ratio to the yardstick over 0.1 s instead of 1 s
os.environ.setdefault("TESSERA_PROBE_S", "0.1")
# and wait at most 0.2 s (not 30 s, or 15 s per confirmation) for the vCPUs to be near: the tests
# check what is measured, not on which scale
os.environ.setdefault("TESSERA_PROBE_NEAR_WAIT_S", "0.2")
os.environ.setdefault("TESSERA_CONFIRM_NEAR_WAIT_S", "0.2")


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
