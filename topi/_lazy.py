"""Lazy re-export of names from submodules (PEP 562), so a package imports fast
and each operator lives in its own module."""

from __future__ import annotations

import importlib


def lazy_exports(package: str, table: dict[str, str]):
    """Return ``(__getattr__, __dir__)`` resolving ``name`` from ``table[name]``."""

    def __getattr__(name: str):
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__():
        return sorted(table)

    return __getattr__, __dir__
