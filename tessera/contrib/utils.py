"""``tvm.contrib.utils.tempdir``: a temporary directory removed with the object."""

from __future__ import annotations

import os
import shutil
import tempfile


class TempDirectory:
    """A fresh directory; ``relpath(name)`` is a path inside it, ``listdir()`` its entries."""

    def __init__(self, custom_path: str | None = None):
        if custom_path is not None:
            os.makedirs(custom_path, exist_ok=True)
        self.temp_dir = custom_path or tempfile.mkdtemp(prefix="tessera_")
        self._remove = custom_path is None

    def relpath(self, name: str) -> str:
        return os.path.join(self.temp_dir, name)

    def listdir(self) -> list:
        return sorted(os.listdir(self.temp_dir))

    def remove(self) -> None:
        if self._remove and os.path.isdir(self.temp_dir):
            shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __del__(self):
        self.remove()

    def __repr__(self) -> str:
        return f"TempDirectory({self.temp_dir})"


def tempdir(custom_path: str | None = None) -> TempDirectory:
    return TempDirectory(custom_path)


__all__ = ["TempDirectory", "tempdir"]
