"""The pytest plugin of ``tvm.testing``: parameters and the ``target``/``dev`` fixtures.

Load it from a ``conftest.py`` with ``pytest_plugins = ["tessera.testing.plugin"]``.

* A ``tvm.testing.parameter`` (or ``parameters``) of the module or of the test's class (or a
  base class; the most derived one wins) whose variable name a test or one of its fixtures
  takes as an argument parametrizes that test.
* A test taking ``target`` runs once per enabled target (here: ``"llvm"``), unless it is
  parametrized over ``target`` already; ``dev`` is that target's device.  A test parametrized
  over a target that is not enabled (``cuda`` ...) is skipped.
"""

from __future__ import annotations

import pytest

from codegen.ndarray import device
from tessera.testing import Parameter, enabled_targets


def pytest_generate_tests(metafunc) -> None:
    names = set(metafunc.fixturenames)
    scopes = [vars(metafunc.module)] + [vars(c) for c in reversed(getattr(metafunc.cls, "__mro__", ()))]
    params = {name: value for scope in scopes for name, value in scope.items()  # a class's win, a subclass's last
              if isinstance(value, Parameter) and name in names}
    done = set()
    for name, p in params.items():
        if name in done or _already(metafunc, name):
            continue
        group = [n for n, q in params.items() if q.group is not None and q.group is p.group] if p.group else [name]
        group.sort(key=lambda n: params[n].index)
        rows = list(zip(*(params[n].values for n in group)))
        metafunc.parametrize(group if len(group) > 1 else group[0],
                             rows if len(group) > 1 else [r[0] for r in rows], ids=p.ids)
        done.update(group)
    if "target" in names and not _already(metafunc, "target"):
        metafunc.parametrize("target", [t for t, _ in enabled_targets()])


def _already(metafunc, name: str) -> bool:
    return any(name in m.args[0] if isinstance(m.args[0], (list, tuple)) else
               name in [a.strip() for a in m.args[0].split(",")]
               for m in metafunc.definition.iter_markers("parametrize"))


@pytest.fixture
def dev(target):
    """The device of ``target`` (``tvm.device(target)``)."""
    return device(str(target).split()[0], 0)


def pytest_collection_modifyitems(config, items) -> None:
    """A test explicitly parametrized over a target this machine does not run (``cuda``,
    ``vulkan`` ...) is skipped, as classic TVM's plugin skips targets that are not enabled."""
    enabled = {str(t).split()[0] for t, _ in enabled_targets()}
    for item in items:
        target = getattr(getattr(item, "callspec", None), "params", {}).get("target")
        if target is None:
            continue
        kind = str(getattr(getattr(target, "kind", None), "name", None) or str(target).split()[0])
        if kind not in enabled:
            item.add_marker(pytest.mark.skip(reason=f"target {kind!r} is not enabled: Tessera runs on CPUs only "
                                                    f"(enabled: {sorted(enabled)})"))
