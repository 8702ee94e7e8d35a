"""The one error a schedule raises when it cannot be honoured."""

from te.errors import TesseraError


class ScheduleError(ValueError, TesseraError):
    """A schedule primitive (or lowering) that cannot be honoured.

    Messages follow one pattern: what failed, where (stage, axis), the current
    state (leaf axes) and what to do instead.  It is a ``ValueError`` and a ``TesseraError``
    (classic TVM's ``TVMError``, a ``RuntimeError``), so classic code that catches either works.
    """
