"""``tvm.contrib.cc.create_shared``: link object files into a library ``load_module`` reads."""

from codegen.export import link_shared


def create_shared(output: str, objects, options=None, cc: str | None = None) -> None:
    """Link ``objects`` (paths, e.g. what ``Module.save`` wrote) into the shared library ``output``."""
    if isinstance(objects, str):
        objects = [objects]
    link_shared(str(output), [str(o) for o in objects], list(options or []), cc)


__all__ = ["create_shared"]
