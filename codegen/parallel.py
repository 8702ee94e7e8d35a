"""Parallel loops: outlined bodies and the one launcher call.

A ``parallel`` loop becomes::

    closure = {free vars and buffers of the body, min, extent}
    tessera_parallel_launch(body, &closure, ntasks)     // codegen/runtime.py

    body(task, ntasks, closure):  work(task, ntasks, *closure)
    work(task, ntasks, ..., lo, ext):                    // buffers are noalias
        for (i, lo + ext*task/ntasks, lo + ext*(task+1)/ntasks) { ... }

``ntasks`` (:func:`task_count`) is one per iteration where the loop has at most
``UNIT_TASKS_PER_THREAD`` iterations per pool thread, else ``TASKS_PER_THREAD``
per thread; the pool runs each participant's contiguous share of them first
and then the others' leftovers (:func:`finish_time` mirrors it).  A parallel
loop inside another runs serially.
"""

from __future__ import annotations

from llvmlite import ir

from te import expr as E
from te.visitor import walk
from schedule import stmt as S

TASKS_PER_THREAD = 2  # tasks per pool thread; a faster thread takes a slower one's leftovers
# Up to this many iterations per thread, each iteration is a task: a conv's 6 channel blocks
# in 4 tasks of 1, 2, 1, 2 blocks kept one of 2 threads busy 4 blocks of 6 (MobileNet-v2).
UNIT_TASKS_PER_THREAD = 8
I32, I64 = ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType(ir.IntType(8))


def task_count(extent: int, threads: int) -> int:
    """The tasks a parallel loop of ``extent`` iterations is cut into on ``threads`` pool threads
    (what the launch code computes at run time)."""
    if threads <= 1 or extent <= 0:
        return min(max(extent, 0), 1)
    return extent if extent <= threads * UNIT_TASKS_PER_THREAD else threads * TASKS_PER_THREAD


def task_ranges(extent: int, threads: int) -> list:
    """``[(start, stop)]`` of each task of such a loop: task ``t`` of ``n`` runs
    ``[extent*t/n, extent*(t+1)/n)``."""
    n = task_count(extent, threads)
    return [(extent * t // n, extent * (t + 1) // n) for t in range(n)]


def finish_time(tasks: list, speeds: tuple) -> float:
    """When the last of ``tasks`` (their sizes, in task order) ends on participants running at
    ``speeds``, as the pool hands them out (``codegen/runtime.py``): participant ``i`` of ``P``
    runs its home range ``[i*n/P, (i+1)*n/P)`` in order (its first task kept for it), then,
    whenever it is free, the next task left in the ranges ``i+1, i+2, ...`` (mod P)."""
    n, parts = len(tasks), min(len(speeds), len(tasks))
    if parts == 0:
        return 0.0
    nxt = [n * i // parts for i in range(parts)]
    end = [n * (i + 1) // parts for i in range(parts)]
    clocks = [tasks[nxt[i]] / speeds[i] for i in range(parts)]
    nxt = [a + 1 for a in nxt]
    while any(a < b for a, b in zip(nxt, end)):
        i = clocks.index(min(clocks))
        q = next(r for r in ((i + k) % parts for k in range(parts)) if nxt[r] < end[r])
        clocks[i] += tasks[nxt[q]] / speeds[i]
        nxt[q] += 1
    return max(clocks)


class ParallelLoops:
    """Mixed into ``CodeGen``: outlining of ``parallel`` loops."""

    def parallel_for(self, s: S.For) -> None:
        """Outline ``s`` into ``body(task, ntasks, closure)`` and launch it.

        The closure holds the free variables and buffers of the loop body plus
        the loop's min and extent.  ``body`` unpacks it and calls ``work``,
        whose buffer parameters are ``noalias`` (so accumulators stay in
        registers); task ``t`` of ``n`` runs ``[ext*t/n, ext*(t+1)/n)``.
        """
        free = self.free_symbols(s)
        lo, ext = self.as_i64(self.expr(s.min)), self.as_i64(self.expr(s.extent))
        values = [self.cur.symbols[k] for k in free] + [lo, ext]
        struct = ir.LiteralStructType([v.type for v in values])
        outer = self.cur
        closure = ir.IRBuilder(outer.entry).alloca(struct, name="closure")
        zero = ir.Constant(I32, 0)
        for k, v in enumerate(values):
            self.b.store(v, self.b.gep(closure, [zero, ir.Constant(I32, k)]))
        base = f"{outer.fn.name}_par{next(self.counter)}"
        work = self._parallel_work(base, s, free, [v.type for v in values])
        body = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I32, I32, PTR]), name=base)
        body.linkage = "internal"
        tb = ir.IRBuilder(body.append_basic_block("entry"))
        task, ntasks, cptr = body.args
        cl = tb.bitcast(cptr, struct.as_pointer())
        loaded = [tb.load(tb.gep(cl, [zero, ir.Constant(I32, k)])) for k in range(len(values))]
        tb.call(work, [task, ntasks, *loaded])
        tb.ret_void()
        b = self.b
        threads = b.sext(b.call(self.declare("tessera_get_num_threads", I32, []), []), I64)
        units = b.icmp_signed("<=", ext, b.mul(threads, ir.Constant(I64, UNIT_TASKS_PER_THREAD)))
        tasks = b.select(units, ext, b.mul(threads, ir.Constant(I64, TASKS_PER_THREAD)))
        tasks = b.select(b.icmp_signed(">", threads, ir.Constant(I64, 1)), tasks, threads)
        n = b.select(b.icmp_signed("<", ext, tasks), ext, tasks)
        launch = self.declare("tessera_parallel_launch", I32, [PTR, PTR, I32])
        with b.if_then(b.icmp_signed(">", n, ir.Constant(I64, 0))):
            b.call(launch, [b.bitcast(body, PTR), b.bitcast(closure, PTR), b.trunc(n, I32)])

    def _parallel_work(self, base: str, s: S.For, free: list, types: list) -> ir.Function:
        """``work(task, ntasks, free..., lo, ext)``: this task's share of the loop."""
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I32, I32, *types]), name=base + "_work")
        fn.linkage = "internal"
        outer = self.cur
        self.cur = inner = self.new_function(fn)
        inner.in_parallel = True
        task, ntasks, *rest = fn.args
        for key, arg in zip(free, rest):
            if isinstance(key, E.Buffer):
                arg.add_attribute("noalias")
            inner.symbols[key] = arg
        lo64, ext64 = rest[-2], rest[-1]
        b = self.b
        t64, n64 = b.sext(task, I64), b.sext(ntasks, I64)
        start = b.add(lo64, b.sdiv(b.mul(ext64, t64), n64))
        stop = b.add(lo64, b.sdiv(b.mul(ext64, b.add(t64, ir.Constant(I64, 1))), n64))
        vt = self.type_of(s.loop_var.dtype)
        if vt != I64:
            start, stop = b.trunc(start, vt), b.trunc(stop, vt)
        self.serial_loop(s.loop_var, start, stop, s.body)
        self.finish_function()
        self.cur = outer
        return fn

    def free_symbols(self, s: S.Stmt) -> list:
        """Vars and buffers used in ``s`` but defined outside it, in a stable order."""
        defined: set = set()
        used: dict = {}

        def visit_stmt(x):
            if isinstance(x, S.For):
                defined.add(x.loop_var)
            elif isinstance(x, S.LetStmt):
                defined.add(x.var)
            elif isinstance(x, S.Allocate):
                defined.add(x.buffer)
            elif isinstance(x, S.Store):
                used.setdefault(x.buffer, None)
            for e in S.stmt_exprs(x):
                walk(e, visit_expr)

        def visit_expr(e):
            if isinstance(e, E.Var):
                used.setdefault(e, None)
            elif isinstance(e, E.Load):
                used.setdefault(e.buffer, None)

        S.walk_stmt(s, visit_stmt)
        return [k for k in used if k not in defined and k in self.cur.symbols]

