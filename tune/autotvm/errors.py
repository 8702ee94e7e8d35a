"""Named errors of AutoTVM: every failure a user can cause says what, where and what to do.

``TuneError`` (the base) and ``RecordError`` are every tuner's (``tune.errors``)."""

from __future__ import annotations

from tune.errors import RecordError, TuneError


class TemplateNotFoundError(TuneError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class TemplateError(TuneError):
    """A template raised while it was being instantiated (defining its space, or with a config)."""


class KnobError(TuneError, ValueError):
    """A knob defined twice with different candidates, or a bad definition."""


class FallbackSplitError(KnobError, RuntimeError):
    """``fallback_split`` found no split within its constraints (classic: a RuntimeError)."""


class MissingKnobError(TuneError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class TunerNotFoundError(TuneError, ValueError):
    """An unknown tuner name."""


class InstantiationError(TuneError):
    """The template cannot be instantiated with this config (classic ``InstantiationError``)."""


__all__ = [
    "FallbackSplitError",
    "InstantiationError",
    "KnobError",
    "MissingKnobError",
    "RecordError",
    "TemplateError",
    "TemplateNotFoundError",
    "TuneError",
    "TunerNotFoundError",
]
