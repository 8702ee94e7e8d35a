"""``@te.hybrid.script``: a Python function that is both a program over tensors and plain Python.

Called on te tensors or expressions, the function's source is parsed
(:mod:`schedule.hybrid.parser`) into a :class:`~schedule.hybrid.op.HybridOp` and its output
tensors are returned; called on numpy arrays and numbers, it runs as Python with the
dialect's names defined (:mod:`schedule.hybrid.runtime`).
"""

from __future__ import annotations

import ast
import collections
import functools
import inspect
import textwrap

import te
from te import expr as E
from te.tag import current_tag
from schedule.hybrid import runtime
from schedule.hybrid.op import HybridOp, outer_axes
from schedule.hybrid.parser import HybridError, HybridParser, Inlined, Parsed


class Source:
    """A script's function definition and where it came from (for errors)."""

    def __init__(self, tree: ast.FunctionDef, filename: str, first_line: int):
        self.tree, self.name, self.filename, self.first_line = tree, tree.name, filename, first_line

    @classmethod
    def of_function(cls, func) -> "Source":
        try:
            lines, first = inspect.getsourcelines(func)
        except (OSError, TypeError) as err:
            raise HybridError(f"hybrid script '{func.__name__}': its source is not available "
                              f"({err})") from None
        tree = ast.parse(textwrap.dedent("".join(lines)))
        return cls(_function_def(tree, func.__name__), inspect.getsourcefile(func) or "<unknown>", first)

    @classmethod
    def of_text(cls, text: str, filename: str = "<hybrid>") -> "Source":
        tree = ast.parse(text)
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        if len(defs) != 1:
            raise HybridError(f"hybrid source {filename}: expected one function, found {len(defs)}")
        return cls(defs[0], filename, 1)


def _function_def(tree: ast.Module, name: str) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise HybridError(f"hybrid script '{name}': no function definition in its source")


def is_symbolic(args) -> bool:
    """Whether the arguments call for parsing (a tensor or an expression among them)."""
    return any(isinstance(a, (te.Tensor, E.Expr)) or (isinstance(a, (list, tuple)) and is_symbolic(a))
               for a in args)


class HybridFunction:
    """The object ``@script`` returns; ``source`` is given for a script built from text."""

    def __init__(self, func, source: Source | None = None):
        self.func = func
        self._source = source
        functools.update_wrapper(self, func)

    @property
    def __globals__(self) -> dict:  # noqa: PLW3201 (a function's attribute, as classic TVM's)
        return self.func.__globals__

    @property
    def source(self) -> Source:
        if self._source is None:
            self._source = Source.of_function(self.func)
        return self._source

    def __call__(self, *args):
        if is_symbolic(args):
            return make_op(self.parse(args))
        return runtime.run(self.func, args)

    def parse(self, args) -> Parsed:
        closure = inspect.getclosurevars(self.func).nonlocals if self.func.__closure__ else {}
        captured = collections.ChainMap(closure, self.func.__globals__)
        return HybridParser(self.source, list(args), captured).parse()

    def inline_into(self, args) -> Inlined:
        """This script called inside another one: its body, to inline, and its outputs."""
        parsed = self.parse(args)
        return Inlined(parsed.body, list(parsed.outputs))


def make_op(parsed: Parsed):
    """The HybridOp of a parsed script: its output tensors (one, or a list)."""
    op = HybridOp(parsed.name, current_tag(""), {}, tuple(parsed.inputs), tuple(parsed.outputs),
                  outer_axes(parsed.body), parsed.body)
    outs = [op.output(k) for k in range(op.num_outputs)]
    return outs[0] if len(outs) == 1 else outs


def script(func) -> HybridFunction:
    """Decorate a hybrid script (classic ``tvm.te.hybrid.script``)::

        @te.hybrid.script
        def outer_product(a, b):
            c = output_tensor((64, 64), a.dtype)
            for i in range(64):
                for j in parallel(64):
                    c[i, j] = a[i] * b[j]
            return c

        c = outer_product(A, B)        # te placeholders: a HybridOp's output, to schedule
        c_np = outer_product(a, b)     # numpy arrays: runs as Python
    """
    return HybridFunction(func)


__all__ = ["HybridFunction", "Source", "is_symbolic", "make_op", "script"]
