"""``te.tag_scope``: a default tag for the computes created inside it (classic TVM's TagScope).

>>> with te.tag_scope(tag="gemm"):
...     C = te.compute(...)          # C.op.tag == "gemm"

It is also a decorator (every compute made by the decorated function gets the tag).
Scopes do not nest: a compute belongs to one operator family.
"""

from __future__ import annotations

import functools
import threading

_local = threading.local()


class tag_scope:  # noqa: N801 (classic TVM name)
    """Computes created inside take ``tag`` unless they name their own."""

    def __init__(self, tag: str):
        self.tag = str(tag)

    @staticmethod
    def current() -> "tag_scope | None":
        return getattr(_local, "scope", None)

    def __enter__(self) -> "tag_scope":
        outer = tag_scope.current()
        if outer is not None:
            raise ValueError(f"te.tag_scope({self.tag!r}) inside te.tag_scope({outer.tag!r}): "
                             f"tag scopes do not nest; give the inner computes their tag with compute(tag=...)")
        _local.scope = self
        return self

    def __exit__(self, *exc) -> None:
        _local.scope = None

    def __call__(self, func):
        @functools.wraps(func)
        def tagged(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return tagged


def current_tag(tag: str) -> str:
    """The tag a compute gets: its own, else the enclosing scope's, else ""."""
    scope = tag_scope.current()
    return tag if tag or scope is None else scope.tag
