"""``tvm.error``: classic TVM's error classes, over Tessera's one error base."""

from te.errors import ComputeError, OpError
from te.errors import TesseraError as TVMError
from schedule.errors import ScheduleError


class InternalError(TVMError):
    """An invariant of the compiler did not hold."""


class OpNotImplemented(OpError, NotImplementedError):
    """An operator has no implementation for these arguments."""


class OpAttributeRequired(OpError, AttributeError):
    """An operator attribute is missing."""


class OpAttributeInvalid(OpError, AttributeError):
    """An operator attribute has an invalid value."""


class OpAttributeUnImplemented(OpError, NotImplementedError):
    """An operator attribute is not supported."""


class DiagnosticError(TVMError):
    """Errors reported with their location."""


class RPCError(TVMError):
    """Remote execution is not part of Tessera."""


__all__ = ["ComputeError", "DiagnosticError", "InternalError", "OpAttributeInvalid", "OpAttributeRequired",
           "OpAttributeUnImplemented", "OpError", "OpNotImplemented", "RPCError", "ScheduleError", "TVMError"]
