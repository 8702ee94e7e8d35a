"""The one error a schedule raises when it cannot be honoured."""


class ScheduleError(ValueError):
    """A schedule primitive (or lowering) that cannot be honoured.

    Messages follow one pattern: what failed, where (stage, axis), the current
    state (leaf axes) and what to do instead.
    """
