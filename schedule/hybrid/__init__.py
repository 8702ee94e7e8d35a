"""Hybrid script (classic ``tvm.te.hybrid``): loop programs written in Python, scheduled as stages.

``script`` decorates a function (:mod:`schedule.hybrid.script`); called on tensors it makes a
:class:`HybridOp` (:mod:`schedule.hybrid.op`) from the parsed source
(:mod:`schedule.hybrid.parser`, expressions in :mod:`schedule.hybrid.expressions`), called on
numpy arrays it runs as Python
(:mod:`schedule.hybrid.runtime`).  ``schedule.hybrid.module.build`` writes a schedule back
as a script (it lowers, so this package, which bounds inference imports, leaves it out).
"""

from schedule.hybrid.op import HybridOp
from schedule.hybrid.parser import HybridError
from schedule.hybrid.script import HybridFunction, script

__all__ = ["HybridError", "HybridFunction", "HybridOp", "script"]
