"""Names of classic ``tvm.te.schedule`` beyond the ``schedule`` package's own (``tessera.te.schedule``)."""

from __future__ import annotations

from schedule.relations import Fuse, Singleton, Split  # noqa: F401
from schedule.auto_inline import auto_inline_broadcast as AutoInlineBroadcast  # noqa: F401
from schedule.auto_inline import auto_inline_elemwise as AutoInlineElemWise  # noqa: F401
from schedule.auto_inline import auto_inline_injective as AutoInlineInjective  # noqa: F401
from schedule.read_graph import create_read_graph as CreateReadGraph  # noqa: F401 (classic TVM names)
from schedule.read_graph import post_dfs_order as PostDFSOrder  # noqa: F401
from schedule.read_graph import scan_fix_point_analysis as ScanFixPointAnalysis  # noqa: F401
from schedule.read_graph import scan_get_body as ScanGetBody  # noqa: F401
from schedule.schedule_ops import schedule_ops
from te.expr import Buffer, IterVar  # noqa: F401


def ScheduleOps(sch, bounds=None, debug_keep_trivial_loop: bool = False):  # noqa: N802 (classic TVM name)
    """The first loop nest of a schedule (before the lowering passes), the outputs taken as
    arguments; ``bounds`` are recomputed.  A nest to look at: reads out of bounds are refused
    where it is compiled (``lower``, ``build``), not here."""
    outputs = {(st.op, k) for st in sch.stages if st.is_output for k in range(st.op.num_outputs)}
    return schedule_ops(sch, outputs, check=False)[0]


__all__ = ["AutoInlineBroadcast", "AutoInlineElemWise", "AutoInlineInjective", "Buffer", "CreateReadGraph", "Fuse", "IterVar", "PostDFSOrder", "ScanFixPointAnalysis", "ScanGetBody",
           "ScheduleOps", "Singleton", "Split"]
