"""``tvm.contrib.pickle_memoize``: reuse a function's results (test references) within a process.

``@memoize("topi.tests.test_topi_dense")`` on a function of positional numbers, strings and
tuples (and of the values its closure captures) computes each distinct call once.  Classic
TVM could also pickle the cache to a directory at exit (``save_at_exit=True``); here the
cache lives for the process only, so no file is written.
"""

from __future__ import annotations

import functools

_CACHES: dict = {}  # key.function name -> {arguments: result}
_ALLOWED = (str, int, float, tuple)


def memoize(key: str, save_at_exit: bool = False):  # noqa: ARG001 (classic signature)
    """Decorator: memoize ``f`` under ``key`` by its closure's values and its arguments."""

    def register(f):
        cache = _CACHES.setdefault(f"{key}.{f.__name__}", {})
        captured = tuple(c.cell_contents for c in f.__closure__) if f.__closure__ else ()

        @functools.wraps(f)
        def memoized(*args, **kwargs):
            if kwargs:
                raise TypeError(f"memoize: {f.__name__} takes positional arguments only")
            call = (len(captured),) + captured + args
            for a in call:
                if not isinstance(a, _ALLOWED):
                    raise TypeError(f"memoize: {f.__name__}: argument {a!r} is not a number, "
                                    f"string or tuple")
            if call not in cache:
                cache[call] = f(*args)
            return cache[call]

        return memoized

    return register


__all__ = ["memoize"]
