"""What a build decides with, read once at ``graph.build`` and passed to the passes that choose.

``BuildContext(target, records, options)``: the build's ``Target`` (parsed once),
the tuning records it runs with (``tune.autotvm.Records``: the user's
``apply_history_best`` read at the call, or the ``records=`` given) and its
``tune.autotvm.choose.Options``.  A pass registered with ``context=True`` gets it
as its second argument; none reads ambient state.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.target import Target, create
from topi.strategy import check_target_keys
from tune.autotvm.choose import Options
from tune.autotvm.history import Records


@dataclass(frozen=True)
class BuildContext:
    target: Target
    records: Records
    options: Options

    @staticmethod
    def of(target=None, records=None, options=None) -> BuildContext:
        """The context of a build: ``target`` (None: the current one), ``records`` (None: what the
        user's ``apply_history_best`` contexts hold now), ``options`` (None: the defaults)."""
        records = Records.current() if records is None else Records.of(records)
        target = create(target)
        check_target_keys(target)
        return BuildContext(target, records, Options.of(options))


__all__ = ["BuildContext"]
