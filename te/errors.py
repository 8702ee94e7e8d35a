"""The project's error base: every error Tessera raises about a program it was given derives from it.

Classic TVM code catches ``tvm.TVMError`` (a ``RuntimeError``); ``tessera.TVMError`` is this class.
An error that is also a bad value (a refused schedule, ``schedule.ScheduleError``) derives from
``ValueError`` as well, so both ``except ValueError`` and ``except tvm.TVMError`` catch it.
"""


class TesseraError(RuntimeError):
    """An error about a program, schedule or argument that Tessera cannot honour."""


class ComputeError(TesseraError, ValueError):
    """A compute definition that cannot be one stage (a reduction inside an expression, outputs
    mixing reductions and values): a bad value and a ``TVMError``, as classic TVM raised."""


class OpError(TesseraError, ValueError):
    """An operator's arguments cannot be honoured (an unsupported layout, attribute or shape):
    a bad value and a ``TVMError`` (classic ``tvm.error.OpError``)."""
