"""The command line's errors, exit statuses and progress log."""

from __future__ import annotations

import sys

EXIT_ERROR = 2
EXIT_MISMATCH = 1
RTOL = 1e-3
ATOL = 1e-5  # times the largest magnitude of the reference output


class CliError(Exception):
    """A user error (bad file, bad --input, unsupported model): one line, exit status 2."""


def flat(err: BaseException) -> str:
    """The message of ``err`` on one line (a KeyError's without its quotes)."""
    return " ".join(str(err.args[0] if isinstance(err, KeyError) and err.args else err).split())


def one_line(err: BaseException) -> str:
    text = flat(err)
    if isinstance(err, CliError):
        return text
    if isinstance(err, (ValueError, FileNotFoundError, OSError, TypeError, KeyError, NotImplementedError)):
        return text or type(err).__name__
    return f"{type(err).__name__}: {text} (an internal error; rerun with --debug for the traceback)"


class Log:
    """Progress notes on stderr, silenced by ``--quiet``."""

    def __init__(self, quiet: bool):
        self.quiet = quiet

    def __call__(self, msg: str) -> None:
        if not self.quiet:
            print(msg, file=sys.stderr, flush=True)
