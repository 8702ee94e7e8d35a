"""Errors every tuner shares: the base of the tuner's errors and unreadable records."""

from __future__ import annotations


class TuneError(Exception):
    """Base of the tuner's errors."""


class RecordError(TuneError, ValueError):
    """An unreadable record file or record line."""


__all__ = ["RecordError", "TuneError"]
