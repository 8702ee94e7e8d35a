"""``tvm.transform``: ``PassContext``, the options classic code builds under.

Tessera lowers every schedule through one fixed list of passes (``schedule/lower.py``'s
``PIPELINE``: no common-subexpression pass, no optional TIR passes), so TVM's pass
options have nothing to switch: a ``PassContext`` checks and carries them (``opt_level``
0-3, ``required_pass``/``disabled_pass`` names, ``config``) for code written against
classic TVM, and ``PassContext.current()`` answers the innermost one.  None of them changes
what ``tvm.build`` produces.
"""

from __future__ import annotations

import threading

_STACK = threading.local()


class PassContext:
    """The options of the passes run inside ``with PassContext(...)`` (carried, see the module doc)."""

    def __init__(self, opt_level: int = 2, required_pass=None, disabled_pass=None, instruments=None,
                 config=None, trace=None):
        if not isinstance(opt_level, int) or not 0 <= opt_level <= 4:
            raise ValueError(f"PassContext: opt_level must be an integer in 0..4, got {opt_level!r}")
        for name, names in (("required_pass", required_pass), ("disabled_pass", disabled_pass)):
            if names is not None and (isinstance(names, str) or not all(isinstance(n, str) for n in names)):
                raise TypeError(f"PassContext: {name} must be a list of pass names, got {names!r}")
        if config is not None and not isinstance(config, dict):
            raise TypeError(f"PassContext: config must be a dict of option name -> value, got {config!r}")
        self.opt_level = opt_level
        self.required_pass = list(required_pass or [])
        self.disabled_pass = list(disabled_pass or [])
        self.instruments = list(instruments or [])
        self.config = dict(config or {})
        self.trace = trace

    def __enter__(self) -> "PassContext":
        _stack().append(self)
        return self

    def __exit__(self, *exc) -> None:
        _stack().pop()

    @staticmethod
    def current() -> "PassContext":
        """The innermost ``with PassContext(...)``, else the default one."""
        stack = _stack()
        return stack[-1] if stack else PassContext()

    def __repr__(self) -> str:
        return (f"PassContext(opt_level={self.opt_level}, required_pass={self.required_pass}, "
                f"disabled_pass={self.disabled_pass}, config={self.config})")


def _stack() -> list:
    if not hasattr(_STACK, "items"):
        _STACK.items = []
    return _STACK.items


__all__ = ["PassContext"]
