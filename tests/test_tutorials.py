"""Every tutorial in docs/tutorials/ runs to completion (small sizes: ``TESSERA_TUTORIAL_SMALL=1``).

The folder is listed, so a new tutorial is tested without editing this file."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUTORIALS = os.path.join(ROOT, "docs", "tutorials")


def tutorials() -> list:
    return sorted(f for f in os.listdir(TUTORIALS) if f.endswith(".py"))


def test_the_gallery_is_not_empty():
    assert len(tutorials()) >= 8


@pytest.mark.parametrize("name", tutorials())
def test_tutorial_runs(name, tmp_path):
    env = dict(os.environ, TESSERA_TUTORIAL_SMALL="1", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, os.path.join(TUTORIALS, name)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
