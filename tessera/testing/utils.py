"""``tvm.testing.utils``: only what the gallery scripts call."""


def install_request_hook(depth: int = 0) -> None:
    """The gallery's download hook; nothing is downloaded here, so it does nothing."""


__all__ = ["install_request_hook"]
