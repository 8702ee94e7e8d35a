"""A trace as the te Python code a user would write (``print(s.trace)``, ``task.print_best``).

::

    C_i, C_j, C_k = tuple(s[C].op.axis) + tuple(s[C].op.reduce_axis)
    C_i_outer, C_i_inner = s[C].split(C_i, factor=32)
    s[C].parallel(C_i_outer)

``s`` is the schedule and each tensor is named as its stage (``C``, and
``C_local`` for the stage ``C.local`` that the code itself creates).  The
printed code, run on a fresh schedule, builds the same loop nest as the trace.
"""

from __future__ import annotations

import re

_IDENT = re.compile(r"[^0-9a-zA-Z_]")


def py_name(name: str) -> str:
    """A Python identifier for a stage or axis name (``C.local`` -> ``C_local``)."""
    out = _IDENT.sub("_", name)
    return out if out and not out[0].isdigit() else "_" + out


class _Printer:
    def __init__(self, trace):
        self.lines: list[str] = []
        self.snaps = list(trace._roots)
        self.roots: dict = {}
        self.defined: set = set()  # (stage ref, axis name) with a Python variable
        self.introduced: set = set()  # stage refs whose root axes have variables

    def advance(self, n: int) -> None:
        """Take the root-axis snapshots recorded up to step ``n``."""
        while self.snaps and self.snaps[0][0] <= n:
            _, new = self.snaps.pop(0)
            for ref, names in new.items():
                if self.roots.get(ref) != names:
                    self.introduced.discard(ref)
                    self.defined = {d for d in self.defined if d[0] != ref}
            self.roots = new

    def tensor(self, ref: str, index=0) -> str:
        return py_name(ref) if not index else f"{py_name(ref)}.op.output({index})"

    def axis(self, ref: str, name: str) -> str:
        if (ref, name) not in self.defined:
            names = self.roots.get(ref)
            if ref not in self.introduced and names and name in names:
                t = self.tensor(ref)
                vars_ = ", ".join(self.var(ref, n) for n in names)
                vars_ += "," if len(names) == 1 else ""
                self.lines.append(f"{vars_} = tuple(s[{t}].op.axis) + tuple(s[{t}].op.reduce_axis)")
                self.introduced.add(ref)
                self.defined |= {(ref, n) for n in names}
            else:  # a trace read from JSON: no record of the stage's axes, look the axis up
                self.lines.append(
                    f"{self.var(ref, name)} = [iv for iv in s[{self.tensor(ref)}].leaf_iter_vars "
                    f"if iv.var.name == {name!r}][0]"
                )
                self.defined.add((ref, name))
        return self.var(ref, name)

    @staticmethod
    def var(ref: str, name: str) -> str:
        return f"{py_name(ref)}_{py_name(name)}"

    def define(self, ref: str, *names: str) -> str:
        self.defined |= {(ref, n) for n in names}
        return ", ".join(self.var(ref, n) for n in names)

    def step(self, st) -> None:
        ref, a, k = st.stage, dict(st.args), st.kind
        s_ = f"s[{self.tensor(ref)}]"
        if k == "split":
            p = a["parent"]
            outs = self.define(ref, p + ".outer", p + ".inner")
            how = f"factor={a['factor']}" if a["factor"] is not None else f"nparts={a['nparts']}"
            self.lines.append(f"{outs} = {s_}.split({self.axis(ref, p)}, {how})")
        elif k == "tile":
            x, y = a["x_parent"], a["y_parent"]
            xv, yv = self.axis(ref, x), self.axis(ref, y)
            outs = self.define(ref, x + ".outer", y + ".outer", x + ".inner", y + ".inner")
            self.lines.append(f"{outs} = {s_}.tile({xv}, {yv}, x_factor={a['x_factor']}, "
                              f"y_factor={a['y_factor']})")
        elif k == "fuse":
            names = list(a["args"])
            ins = ", ".join(self.axis(ref, n) for n in names)
            fused = names[0] if names else "singleton"
            for n in names[1:]:
                fused = f"{fused}.{n}.fused"
            self.lines.append(f"{self.define(ref, fused)} = {s_}.fuse({ins})")
        elif k in ("reorder", "reorder_storage"):
            self.lines.append(f"{s_}.{k}({', '.join(self.axis(ref, n) for n in a['args'])})")
        elif k in ("vectorize", "parallel", "unroll"):
            self.lines.append(f"{s_}.{k}({self.axis(ref, a['iv'])})")
        elif k == "bind":
            self.lines.append(f"{s_}.bind({self.axis(ref, a['ivar'])}, te.thread_axis({a['thread_ivar']!r}))")
        elif k == "pragma":
            self.lines.append(f"{s_}.pragma({self.axis(ref, a['iv'])}, {a['key']!r}, {a['value']!r})")
        elif k == "storage_align":
            self.lines.append(f"{s_}.storage_align({self.axis(ref, a['axis'])}, {a['factor']}, {a['offset']})")
        elif k == "set_scope":
            self.lines.append(f"{s_}.set_scope({a['scope']!r})")
        elif k == "compute_at":
            p = a["parent"]
            self.lines.append(f"{s_}.compute_at(s[{self.tensor(p)}], {self.axis(p, a['axis'])})")
        elif k in ("compute_inline", "compute_root"):
            self.lines.append(f"{s_}.{k}()")
        else:
            self.dataflow(st, ref, a)

    def dataflow(self, st, ref: str, a: dict) -> None:
        k = st.kind
        idx = a["tensor"]
        t = "[" + ", ".join(self.tensor(ref, i) for i in idx) + "]" if isinstance(idx, tuple) else self.tensor(ref, idx)
        if k == "cache_read":
            readers = ", ".join(self.tensor(r) for r in a["readers"])
            new = py_name(f"{ref.partition('#')[0]}.{a['scope']}")
            self.lines.append(f"{new} = s.cache_read({t}, {a['scope']!r}, [{readers}])")
        elif k == "cache_write":
            new = py_name(f"{ref}.{a['scope']}")
            lhs = f"{new}," if isinstance(idx, tuple) else new
            self.lines.append(f"{lhs} = s.cache_write({t}, {a['scope']!r})")
        elif k == "rewrite_layout":
            new = py_name(f"{ref.partition('#')[0]}.packed")
            self.lines.append(f"{new} = s.rewrite_layout({t}, s[{self.tensor(a['reader'])}], "
                              f"lengths={_list(a['lengths'])}, order={_list(a['order'])})")
        elif k == "rfactor":
            ax = self.axis(ref, a["axis"])
            self.lines.append(f"{py_name(ref + '.rf')} = s.rfactor({t}, {ax}, factor_axis={a['factor_axis']})")


def _list(v):
    return [_list(x) for x in v] if isinstance(v, tuple) else v


def trace_python(trace) -> str:
    """The te Python code of ``trace``'s steps."""
    p = _Printer(trace)
    for n, st in enumerate(trace.steps):
        p.advance(n)
        p.step(st)
    return "\n".join(p.lines)


__all__ = ["py_name", "trace_python"]
