"""Classic TVM's module paths as real, importable modules over the project's packages.

``import tvm.topi.testing`` and ``from tvm.autotvm.task.space import SplitEntity``
become ``import tessera.topi.testing`` and ``from tessera.autotvm.task.space
import SplitEntity``.  A finder on ``sys.meta_path`` maps ``tessera.<name>`` to the
project module that holds it: a plain module resolves to that module itself, a
package to a proxy package of the classic name whose attributes are the project
package's (the same objects: registries and classes are shared, never copied), so
that its submodules resolve under the classic name as well.

TVM's ``autotvm`` spread the same things over other files than ``tune`` does;
:data:`EXACT` maps those, and every other ``tessera.topi.X`` / ``tessera.autotvm.X``
maps by prefix to ``topi.X`` / ``tune.autotvm.X``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types

from tessera import absent_targets

# classic path -> the project module
EXACT = {
    "tessera.autotvm.task.space": "tune.autotvm.space",
    "tessera.autotvm.task.task": "tune.autotvm.task",
    "tessera.autotvm.task.dispatcher": "tune.autotvm.dispatch",
    "tessera.autotvm.record": "tune.record",
    "tessera.autotvm.measure": "tune.measure",
    "tessera.autotvm.measure.measure": "tune.measure.measure",
    "tessera.autotvm.measure.measure_methods": "tune.measure",
    "tessera.autotvm.measure.executor": "tessera.autotvm_compat",
    "tessera.autotvm.feature": "tune.features",
    "tessera.autotvm.database": "tessera.autotvm_compat",
    "tessera.autotvm.env": "tessera.autotvm_compat",
    "tessera.autotvm.utils": "tessera.autotvm_compat",
    "tessera.autotvm.tophub": "tessera.autotvm_compat",
    "tessera.autotvm.tuner.xgboost_cost_model": "tune.autotvm.tuner.xgb_tuner",
    "tessera.autotvm.tuner.xgboost_tuner": "tune.autotvm.tuner.xgb_tuner",
    "tessera.autotvm.tuner.model_based_tuner": "tune.autotvm.tuner.model_based",
    "tessera.autotvm.tuner.ga_tuner": "tune.autotvm.tuner.ga_tuner",
    "tessera.autotvm.tuner.index_based_tuner": "tune.autotvm.tuner.index_based",
    "tessera._ffi.base": "tessera.error",
}
# classic modules whose names Tessera keeps in more than one module (or that have submodules where
# Tessera has a plain module): a module of their own, holding the first module's names, then the
# others' (none overriding), and forwarding any other attribute to the first
PROXIES = {
    "tessera.te": ("te", "tessera.classic_te"),
    "tessera.te.schedule": ("schedule", "tessera.classic_schedule"),
    "tessera.autotvm.task": ("tune.autotvm.task", "tune.autotvm.space", "tune.autotvm.dispatch"),
    "tessera.autotvm.record": ("tune.record", "tune.autotvm.history", "tessera.autotvm_compat"),
    "tessera.te.hybrid": ("schedule.hybrid", "schedule.hybrid.module"),
    "tessera._ffi": ("tessera.error",),  # tvm._ffi.base.TVMError: the one error base
}
PREFIXES = {
    "tessera.topi": "topi",
    "tessera.autotvm": "tune.autotvm",
    "tessera.auto_scheduler": "tune.auto_scheduler",
    "tessera.graph": "graph",
    "tessera.te.hybrid": "schedule.hybrid",
}


def target_of(fullname: str) -> str | None:
    """The project module that ``fullname`` (``tessera.X...``) names, or None."""
    if fullname in PROXIES:
        return PROXIES[fullname][0]
    if fullname in EXACT:
        return EXACT[fullname]
    for prefix, real in PREFIXES.items():
        if fullname == prefix or fullname.startswith(prefix + "."):
            return real + fullname[len(prefix):]
    return None


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if absent_targets.target_of(fullname) is not None:  # topi.cuda, contrib.nvcc ...: calls refuse
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        real = target_of(fullname)
        if real is None:
            return None
        try:
            spec = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            return None
        if spec is None:
            return None
        package = spec.submodule_search_locations is not None or fullname in PROXIES
        return importlib.util.spec_from_loader(fullname, self, is_package=package)

    def create_module(self, spec):
        """A package becomes a proxy named by its classic path, so that its submodules are looked
        up under that path too; a plain module is the project's module itself."""
        absent = absent_targets.target_of(spec.name)
        if absent is not None:
            return absent_targets.AbsentTarget(spec.name, absent)
        sources = [importlib.import_module(m) for m in PROXIES.get(spec.name, (target_of(spec.name),))]
        if spec.name in PROXIES or hasattr(sources[0], "__path__"):
            return proxy(spec.name, sources)
        return sources[0]

    def exec_module(self, module):
        """The module is the project's, already executed."""


def proxy(name: str, sources: list) -> types.ModuleType:
    """A package named ``name`` with the public names of ``sources`` (the first wins), forwarding
    any other attribute to ``sources[0]``; a submodule attribute resolves to ``name.<attr>`` (so
    ``tvm.topi.nn`` is ``tessera.topi.nn`` however it is reached)."""
    module = types.ModuleType(name, sources[0].__doc__)
    for source in reversed(sources):
        module.__dict__.update({k: v for k, v in vars(source).items()
                                if not k.startswith("_") and not isinstance(v, types.ModuleType)})
    module.__path__ = []

    def attribute(attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        for source in sources:
            value = getattr(source, attr, None)
            if isinstance(value, types.ModuleType):
                try:
                    return importlib.import_module(f"{name}.{attr}")
                except ImportError:
                    return value
            if value is not None or hasattr(source, attr):
                return value
        try:  # a classic submodule that the project's package does not hold as an attribute
            return importlib.import_module(f"{name}.{attr}")
        except ImportError:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None

    module.__getattr__ = attribute
    return module


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
