"""The one visitor from the loop AST to LLVM IR (``llvmlite.ir``).

Expressions become SSA values; a vector expression (from ``vectorize_loops``)
becomes LLVM vector instructions: ``ramp(b, 1, n)`` addresses give vector
loads and stores, scalar addresses broadcasts, anything else a gather.  Float
arithmetic carries the ``reassoc contract`` flags, so LLVM may reassociate
reductions and fuse multiply-adds.  A ``parallel`` loop is outlined into
``body(task, num_tasks, closure)`` and started by ``tessera_parallel_launch``.
"""

from __future__ import annotations

import itertools

from llvmlite import ir

from te import dtype as dt
from te import expr as E
from te.visitor import children, collect_vars, unsafe_select_loads
from schedule import stmt as S
from codegen import intrinsics
from codegen.llvm_types import I1, I8, I32, I64, PTR, llvm_type, memory_type  # noqa: F401 (re-exported)
from codegen.parallel import ParallelLoops

FAST = ("reassoc", "contract")
EXTERN_PREFIX = "call_pure_extern:"  # Call("call_pure_extern:expf", args): tessera.tir.call_pure_extern
STACK_LIMIT = 256 * 1024
WORKSPACE_LIMIT = 256 * 1024 * 1024  # bytes; larger constant buffers are malloc'ed per call  # bytes; larger or dynamic allocations use the heap


class _Function:
    """Per-LLVM-function state: builder, entry block, symbol table."""

    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.entry = fn.append_basic_block("entry")
        self.body = fn.append_basic_block("body")
        self.builder = ir.IRBuilder(self.body)
        self.symbols: dict = {}
        self.memo: dict = {}
        self.numbered: dict = {}  # local value numbering: key -> (block, value, operands)
        self.in_parallel = False


ENTRY = "tessera.entry"  # the entry function's name in the emitted module (never a C symbol)


class CodeGen(ParallelLoops):
    """Emit one lowered function (and its outlined parallel bodies) into a module."""

    def __init__(self, module_name: str):
        self.module = ir.Module(name=module_name)
        self.counter = itertools.count()
        self.cur: _Function | None = None
        self.masked_vars: frozenset = frozenset()  # ids of loop vars under floormod(.., 2**k) in an index

    # module-level helpers ---------------------------------------------------
    def declare(self, name: str, ret: ir.Type, args: list) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        return fn

    def new_function(self, fn: ir.Function) -> "_Function":
        return _Function(fn)

    def type_of(self, dtype: str) -> ir.Type:
        return llvm_type(dtype)

    @property
    def b(self) -> ir.IRBuilder:
        return self.cur.builder

    # the entry point -------------------------------------------------------
    def add_function(self, lowered) -> ir.Function:
        """``void name(params)``: buffers as noalias pointers, vars by value."""
        types = [PTR if isinstance(p, E.Buffer) else llvm_type(p.dtype) for p in lowered.params]
        # emitted as ENTRY, renamed to the exported symbol by the caller: a kernel named like a libm
        # function it calls ("tan", "expf") would otherwise declare the callee as itself
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), types), name=ENTRY)
        self.cur = _Function(fn)
        for p, arg in zip(lowered.params, fn.args):
            arg.name = _clean(p.name)
            if isinstance(p, E.Buffer):
                arg.add_attribute("noalias")
            self.cur.symbols[p] = arg
        self.masked_vars = _masked_index_vars(lowered.body)
        self.stmt(lowered.body)
        self.finish_function()
        return fn

    def finish_function(self) -> None:
        f = self.cur
        if not f.builder.block.is_terminated:
            f.builder.ret_void()
        ir.IRBuilder(f.entry).branch(f.body)

    # statements ------------------------------------------------------------
    def stmt(self, s: S.Stmt) -> None:
        self.cur.memo = {}  # a value is reused only within one statement (dominance)
        getattr(self, "stmt_" + type(s).__name__)(s)

    def stmt_Block(self, s: S.Block) -> None:
        for x in s.stmts:
            self.stmt(x)

    def stmt_Produce(self, s: S.Produce) -> None:
        self.stmt(s.body)

    def stmt_Evaluate(self, s: S.Evaluate) -> None:
        self.expr(s.value)

    def stmt_LetStmt(self, s: S.LetStmt) -> None:
        self.cur.symbols[s.var] = self.expr(s.value)
        self.stmt(s.body)

    def stmt_IfThenElse(self, s: S.IfThenElse) -> None:
        cond = self.expr(s.cond)
        if s.else_case is None:
            with self.b.if_then(cond):
                self.stmt(s.then_case)
        else:
            with self.b.if_else(cond) as (then, other):
                with then:
                    self.stmt(s.then_case)
                with other:
                    self.stmt(s.else_case)

    def stmt_Store(self, s: S.Store) -> None:
        value = self.expr(s.value)
        if dt.is_bool(s.buffer.dtype):
            value = self.b.zext(value, ir.VectorType(I8, value.type.count) if isinstance(value.type, ir.VectorType) else I8)
        buf = self.cur.symbols[s.buffer]
        elem = memory_type(s.buffer.dtype)
        n = dt.lanes(s.value.dtype)
        if n == 1:
            self.b.store(value, self.address(buf, elem, s.index), align=_align(elem))
            return
        if isinstance(s.index, E.Ramp) and _is_one(s.index.stride):
            ptr = self.address(buf, elem, s.index.base)
            self.b.store(value, self.vector_pointer(ptr, value.type), align=_align(elem))
            return
        idx = self.expr(s.index)
        for k in range(n):
            lane = self.b.extract_element(idx, ir.Constant(I32, k))
            self.b.store(self.b.extract_element(value, ir.Constant(I32, k)),
                         self.address_value(buf, elem, lane), align=_align(elem))

    def stmt_Allocate(self, s: S.Allocate) -> None:
        elem = memory_type(s.buffer.dtype)
        ext = s.extent
        nbytes = ext.value * _size(s.buffer.dtype) if isinstance(ext, E.IntImm) else None
        if nbytes is not None and nbytes <= STACK_LIMIT:
            entry = ir.IRBuilder(self.cur.entry)
            arr = entry.alloca(ir.ArrayType(elem, max(ext.value, 1)), name=_clean(s.buffer.name))
            arr.align = 64
            self.cur.symbols[s.buffer] = self.b.bitcast(arr, PTR)
            self.stmt(s.body)
            return
        if nbytes is not None and not self.cur.in_parallel and nbytes <= WORKSPACE_LIMIT:
            self.workspace_allocate(s, elem, ext.value)
            return
        size = self.b.mul(self.as_i64(self.expr(ext)), ir.Constant(I64, _size(s.buffer.dtype)))
        raw, self.cur.symbols[s.buffer] = self.heap_allocate(size)
        self.stmt(s.body)
        self.b.call(self.declare("free", ir.VoidType(), [PTR]), [raw])

    def heap_allocate(self, nbytes: ir.Value) -> tuple:
        """``(raw, aligned)``: ``malloc`` of ``nbytes`` + 64 and the first 64-byte boundary in it
        (malloc aligns to 16; a vector loop over a buffer 16 bytes off a line splits its loads)."""
        b = self.b
        raw = b.call(self.declare("malloc", PTR, [I64]), [b.add(nbytes, ir.Constant(I64, 64))])
        skip = b.and_(b.sub(ir.Constant(I64, 0), b.ptrtoint(raw, I64)), ir.Constant(I64, 63))
        return raw, b.gep(raw, [skip])

    def workspace_allocate(self, s: S.Allocate, elem: ir.Type, count: int) -> None:
        """A large buffer of constant size outside parallel loops: a static workspace
        of the module, reused from call to call (a fresh ``malloc`` of many MB
        page-faults on every call).  A concurrent call that finds it taken (an
        atomic flag) falls back to ``malloc``/``free``."""
        b = self.b
        name = f"{self.cur.fn.name}_ws{next(self.counter)}"
        ws = ir.GlobalVariable(self.module, ir.ArrayType(elem, count), name=name)
        ws.initializer = ir.Constant(ws.value_type, None)
        ws.linkage = "internal"
        ws.align = 64
        flag = ir.GlobalVariable(self.module, I32, name=name + "_busy")
        flag.initializer = ir.Constant(I32, 0)
        flag.linkage = "internal"
        pair = b.cmpxchg(flag, ir.Constant(I32, 0), ir.Constant(I32, 1), "acquire", "monotonic")
        got = b.extract_value(pair, 1)
        static = b.bitcast(ws, PTR)
        with b.if_else(got) as (then, other):
            with then:
                then_bb = b.block
            with other:
                heap_raw, heap = self.heap_allocate(ir.Constant(I64, count * elem_size(elem)))
                other_bb = b.block
        ptr = b.phi(PTR)
        ptr.add_incoming(static, then_bb)
        ptr.add_incoming(heap, other_bb)
        raw = b.phi(PTR)  # what to free on the heap path
        raw.add_incoming(static, then_bb)
        raw.add_incoming(heap_raw, other_bb)
        self.cur.symbols[s.buffer] = ptr
        self.stmt(s.body)
        b = self.b
        with b.if_else(got) as (then, other):
            with then:
                b.store_atomic(ir.Constant(I32, 0), flag, "release", 4)
            with other:
                b.call(self.declare("free", ir.VoidType(), [PTR]), [raw])

    def stmt_For(self, s: S.For) -> None:
        if s.kind == S.PARALLEL and not self.cur.in_parallel:
            self.parallel_for(s)
            return
        self.serial_loop(s.loop_var, self.expr(s.min), self.b.add(self.expr(s.min), self.expr(s.extent)), s.body,
                         unroll=s.kind == S.UNROLLED)

    def serial_loop(self, var: E.Var, lo: ir.Value, hi: ir.Value, body: S.Stmt, unroll: bool = False) -> None:
        b = self.b
        pre = b.block
        head = b.append_basic_block(f"for_{_clean(var.name)}")
        loop = b.append_basic_block(f"for_{_clean(var.name)}_body")
        done = b.append_basic_block(f"for_{_clean(var.name)}_end")
        b.branch(head)
        b.position_at_end(head)
        phi = b.phi(lo.type, name=_clean(var.name))
        phi.add_incoming(lo, pre)
        b.cbranch(b.icmp_signed("<", phi, hi), loop, done)
        b.position_at_end(loop)
        self.cur.symbols[var] = phi
        self.stmt(body)
        nxt = b.add(phi, ir.Constant(phi.type, 1), flags=["nsw"])
        phi.add_incoming(nxt, b.block)
        latch = b.branch(head)
        if unroll:
            latch.set_metadata("llvm.loop", self.loop_id("llvm.loop.unroll.full"))
        elif id(var) in self.masked_vars:
            latch.set_metadata("llvm.loop", self.loop_id("llvm.loop.vectorize.enable", ir.Constant(I1, 0)))
        b.position_at_end(done)

    def loop_id(self, key: str, value: ir.Constant | None = None) -> ir.MDValue:
        """A fresh self-referential ``!llvm.loop`` id with one hint: ``llvm.loop.unroll.full`` (a loop
        the schedule unrolls: ``schedule.passes.unroll_loops``), ``llvm.loop.vectorize.enable`` false."""
        m = self.module
        hint = m.add_metadata([ir.MetaDataString(m, key)] + ([] if value is None else [value]))
        loop_id = ir.MDValue(m, [hint], name=str(len(m.metadata)))
        loop_id.operands = (loop_id, hint)
        return loop_id

    # addresses ---------------------------------------------------------------
    def address(self, buf: ir.Value, elem: ir.Type, index: E.Expr) -> ir.Value:
        return self.address_value(buf, elem, self.index64(index))

    def index64(self, e: E.Expr) -> ir.Value:
        """An ``int32`` index expression evaluated in ``i64``: its sums, differences and products
        on sign-extended operands (``nsw``: the ``int32`` arithmetic never overflows either), so
        the address is a base plus constant offsets that LLVM folds into the load or store,
        instead of an ``int32`` sum sign-extended per access (``shl``/``sar`` pairs once the
        loop counters are widened)."""
        op = _INDEX_OPS.get(type(e))
        if op is None or e.dtype != "int32":
            if isinstance(e, E.IntImm):
                return ir.Constant(I64, e.value)
            return self.as_i64(self.expr(e))
        key, operands, values = ("i64", op), [], []
        for child in (e.a, e.b):
            v = self.index64(child)
            values.append(v)
            if isinstance(child, E.IntImm):
                key += (child.value,)
            else:
                key += ("v",)
                operands.append(v)
        return self.reuse(key, tuple(operands), lambda: getattr(self.b, op)(*values, flags=["nsw"]))

    def address_value(self, buf: ir.Value, elem: ir.Type, idx: ir.Value) -> ir.Value:
        base = self.reuse(("bitcast", elem), (buf,), lambda: self.b.bitcast(buf, elem.as_pointer()))
        idx = self.as_i64(idx)
        return self.reuse(("gep", elem), (base, idx), lambda: self.b.gep(base, [idx], inbounds=True))

    def vector_pointer(self, ptr: ir.Value, vt: ir.Type) -> ir.Value:
        return self.reuse(("vptr", vt), (ptr,), lambda: self.b.bitcast(ptr, vt.as_pointer()))

    def as_i64(self, v: ir.Value) -> ir.Value:
        if v.type == I64:
            return v
        if isinstance(v, ir.Constant) and isinstance(v.constant, int):  # a fresh object each time: by value
            return self.reuse(("sext", str(v.type), v.constant), (), lambda: self.b.sext(v, I64))
        return self.reuse(("sext",), (v,), lambda: self.b.sext(v, I64))

    def reuse(self, key: tuple, operands: tuple, make) -> ir.Value:
        """``make()``, or the value an identical pure instruction on the same ``operands`` gave
        earlier in the current basic block (local value numbering).

        Unrolled statements recompute the same index arithmetic (``floordiv(f, 56) * 4608``:
        ten instructions) once per statement; LLVM's CSE would merge them, but only after
        parsing, verifying and optimising every copy.  Reuse is limited to one block, where
        an earlier instruction dominates every later one; operands are compared by identity
        (SSA values), so a variable bound anew (an unrolled ``let``) never hits a stale value.
        """
        table = self.cur.numbered
        block = self.b.block
        hit = table.get(key + tuple(map(id, operands)))
        if hit is not None and hit[0] is block and all(x is y for x, y in zip(hit[2], operands)):
            return hit[1]
        value = make()
        if self.b.block is block:
            table[key + tuple(map(id, operands))] = (block, value, operands)
        return value

    # expressions -------------------------------------------------------------
    def expr(self, e: E.Expr) -> ir.Value:
        """Emit ``e``; a node shared within the statement is emitted once."""
        memo = self.cur.memo
        v = memo.get(id(e))
        if v is None:
            v = memo[id(e)] = getattr(self, "expr_" + type(e).__name__)(e)
        return v

    def expr_IntImm(self, e):
        return ir.Constant(llvm_type(e.dtype), e.value)

    def expr_FloatImm(self, e):
        return ir.Constant(llvm_type(e.dtype), e.value)

    def expr_Var(self, e):
        try:
            return self.cur.symbols[e]
        except KeyError:
            raise ValueError(f"codegen: variable '{e.name}' is used but never defined") from None

    def expr_IterVar(self, e):
        return self.expr_Var(e.var)

    def expr_Broadcast(self, e):
        v = self.expr(e.value)
        return self.splat(v, e.lanes)

    def splat(self, v: ir.Value, n: int) -> ir.Value:
        return self.reuse(("splat", n), (v,), lambda: self._splat(v, n))

    def _splat(self, v: ir.Value, n: int) -> ir.Value:
        vt = ir.VectorType(v.type, n)
        undef = ir.Constant(vt, ir.Undefined)
        one = self.b.insert_element(undef, v, ir.Constant(I32, 0))
        mask = ir.Constant(ir.VectorType(I32, n), [0] * n)
        return self.b.shuffle_vector(one, undef, mask)

    def expr_Ramp(self, e):
        base, stride = self.expr(e.base), self.expr(e.stride)
        return self.reuse(("ramp", e.lanes, e.base.dtype), (base, stride), lambda: self._ramp(e, base, stride))

    def _ramp(self, e, base: ir.Value, stride: ir.Value) -> ir.Value:
        base, stride = self.splat(base, e.lanes), self.splat(stride, e.lanes)
        et = llvm_type(e.base.dtype)
        offs = ir.Constant(ir.VectorType(et, e.lanes), list(range(e.lanes)))
        return self.b.add(base, self.b.mul(stride, offs))

    def expr_Load(self, e):
        v = self.load(e)
        if dt.is_bool(e.buffer.dtype):
            return self.b.icmp_unsigned("!=", v, ir.Constant(v.type, None))
        return v

    def load(self, e):
        buf = self.cur.symbols[e.buffer]
        elem = memory_type(e.buffer.dtype)
        n = dt.lanes(e.dtype)
        if n == 1:
            return self.b.load(self.address(buf, elem, e.index), align=_align(elem))
        idx = e.index
        if isinstance(idx, E.Ramp):
            return self.load_ramp(buf, elem, idx)
        if isinstance(idx, E.Broadcast):
            return self.splat(self.b.load(self.address(buf, elem, idx.value), align=_align(elem)), n)
        clamp = _clamped_ramp(idx)
        if clamp is not None:
            return self.clamped_load(buf, elem, idx, *clamp)
        return self.gather(buf, elem, idx, n)

    def gather(self, buf, elem, idx: E.Expr, n: int) -> ir.Value:
        iv = self.expr(idx)
        out = ir.Constant(ir.VectorType(elem, n), ir.Undefined)
        for k in range(n):
            lane = self.b.extract_element(iv, ir.Constant(I32, k))
            val = self.b.load(self.address_value(buf, elem, lane), align=_align(elem))
            out = self.b.insert_element(out, val, ir.Constant(I32, k))
        return out

    def clamped_load(self, buf, elem, idx: E.Expr, ramp: E.Ramp, lo, hi) -> ir.Value:
        """``buf[min(max(ramp, lo), hi)]`` (``lo`` or ``hi`` None: no bound on that side): when the
        whole ramp lies in ``[lo, hi]`` (all but the border vectors) load it as a ramp, else gather
        the clamped lanes."""
        b = self.b
        base, stride = self.expr(ramp.base), self.expr(ramp.stride)
        last = b.add(base, b.mul(stride, ir.Constant(stride.type, ramp.lanes - 1)))
        inside = ir.Constant(ir.IntType(1), 1)
        for bound, op in ((lo, ">="), (hi, "<=")):
            if bound is not None:
                v = self.expr(bound)
                inside = b.and_(inside, b.and_(b.icmp_signed(op, base, v), b.icmp_signed(op, last, v)))
        return self.if_value(
            inside, lambda: self.load_ramp(buf, elem, ramp), lambda: self.gather(buf, elem, idx, ramp.lanes)
        )

    def load_ramp(self, buf, elem, ramp: E.Ramp) -> ir.Value:
        if _is_one(ramp.stride):
            ptr = self.address(buf, elem, ramp.base)
            return self.b.load(self.vector_pointer(ptr, ir.VectorType(elem, ramp.lanes)), align=_align(elem))
        if isinstance(ramp.stride, E.IntImm) and 1 < ramp.stride.value <= 8:
            return self.strided_load(buf, elem, ramp)
        return self.gather(buf, elem, ramp, ramp.lanes)

    def strided_load(self, buf, elem, idx: E.Ramp) -> ir.Value:
        """``ramp(b, s, n)`` with a small constant ``s``: one contiguous load of the
        ``(n-1)*s + 1`` elements spanned (never past the last lane's element) and
        a shuffle that keeps every ``s``-th, instead of ``n`` scalar loads."""
        stride, n = idx.stride.value, idx.lanes
        span = (n - 1) * stride + 1
        ptr = self.address(buf, elem, idx.base)
        wide = self.b.load(self.b.bitcast(ptr, ir.VectorType(elem, span).as_pointer()), align=_align(elem))
        mask = ir.Constant(ir.VectorType(I32, n), [k * stride for k in range(n)])
        return self.b.shuffle_vector(wide, ir.Constant(wide.type, ir.Undefined), mask)

    def expr_Let(self, e):
        self.cur.symbols[e.var] = self.expr(e.value)
        return self.expr(e.body)

    def expr_Select(self, e):
        if dt.lanes(e.cond.dtype) == 1 and unsafe_select_loads(e):
            return self.branching_select(e)
        c = self.expr(e.cond)
        t, f = self.expr(e.true_value), self.expr(e.false_value)
        n = dt.lanes(e.dtype)
        if n > 1 and not isinstance(c.type, ir.VectorType):
            c = self.splat(c, n)
        return self.b.select(c, t, f)

    def branching_select(self, e) -> ir.Value:
        """Evaluate only the taken side: its loads may be out of bounds otherwise."""
        cond = self.expr(e.cond)
        return self.if_value(cond, lambda: self.expr(e.true_value), lambda: self.expr(e.false_value))

    def if_value(self, cond: ir.Value, then, other) -> ir.Value:
        """``cond ? then() : other()`` evaluating only the taken side (branches and a phi).

        Values emitted inside a branch are not reused after it (they would not
        dominate): each side starts from a copy of the statement's memo.
        """
        b = self.b
        then_bb, else_bb, merge = (b.append_basic_block(n) for n in ("if_then", "if_else", "if_end"))
        b.cbranch(cond, then_bb, else_bb)
        outer_memo = self.cur.memo
        ends = []
        for block, fn in ((then_bb, then), (else_bb, other)):
            b.position_at_end(block)
            self.cur.memo = dict(outer_memo)
            ends.append((fn(), b.block))
            b.branch(merge)
        b.position_at_end(merge)
        self.cur.memo = outer_memo
        phi = b.phi(ends[0][0].type)
        for value, block in ends:
            phi.add_incoming(value, block)
        return phi

    def expr_Not(self, e):
        return self.b.not_(self.expr(e.a))

    def expr_Cast(self, e):
        return intrinsics.cast(self.b, self.expr(e.value), e.value.dtype, e.dtype)

    def expr_Call(self, e):
        if e.name == "likely":
            return self.expr(e.args[0])
        if e.name == "tvm_call_packed":  # te.extern's call of a registered function
            from codegen.packed import emit_call_packed

            return emit_call_packed(self, e)
        if e.name.startswith(EXTERN_PREFIX):  # tir.call_pure_extern: a C function of the process
            from codegen.packed import emit_call_extern

            return emit_call_extern(self, e)
        if e.name in ("tvm_address_of", "tvm_index_of"):  # schedule.tensorize: a region's first element
            return self.element_of(e)
        if e.name in ("tvm_load_at", "tvm_store_at"):  # schedule.tensorize: a bound buffer's vload/store
            return self.load_store_at(e)
        args = [self.expr(a) for a in e.args]
        bounds = _clamp_bounds(e.args[0]) if e.name == "exp" else (None, None)
        if bounds != (None, None):  # exp(max(min(x, 0), lo)): the clamps its range makes moot left out
            from codegen.vecmath import emit_math

            r = emit_math(self.b, "exp", args, bounds)
            if r is not None:
                return r
        if e.name == "reinterpret":  # te.reinterpret: the same bits, another type of their width
            return self.b.bitcast(args[0], llvm_type(e.dtype))
        if e.name.startswith(intrinsics.LLVM_PREFIX):  # a named LLVM intrinsic (topi.x86.int8_dot)
            return intrinsics.llvm_intrinsic(self.b, e.name, args, e.dtype)
        return intrinsics.call(self.b, e.name, args, e.dtype)

    def element_of(self, e):
        """``tvm_address_of(buf[i], offset)``: a byte pointer to element ``i + offset``;
        ``tvm_index_of(buf[i])``: ``i``."""
        load = e.args[0]
        if not isinstance(load, E.Load):
            raise ValueError(f"codegen: {e.name} needs a buffer element, got {load}")
        if e.name == "tvm_index_of":
            return self.expr(load.index)
        # values, not a new Add node: the expression memo is keyed by the nodes of the function
        index = self.as_i64(self.expr(load.index))
        if len(e.args) > 1 and not (isinstance(e.args[1], E.IntImm) and e.args[1].value == 0):
            index = self.b.add(index, self.as_i64(self.expr(e.args[1])))
        elem = memory_type(load.buffer.dtype)
        return self.b.bitcast(self.address_value(self.cur.symbols[load.buffer], elem, index), PTR)

    def load_store_at(self, e):
        """``tvm_load_at(buf[i], k)``: the value of ``e.dtype`` (a vector: its lanes contiguous)
        at element ``i + k``; ``tvm_store_at(buf[i], k, v)`` stores ``v`` there.  A tensor
        intrinsic's ``Load``/``Store`` of the region it is bound to (``schedule.tensorize``)."""
        first = e.args[0]
        if not isinstance(first, E.Load):
            raise ValueError(f"codegen: {e.name} needs a buffer element, got {first}")
        elem = memory_type(first.buffer.dtype)
        index = self.b.add(self.as_i64(self.expr(first.index)), self.as_i64(self.expr(e.args[1])))
        ptr = self.address_value(self.cur.symbols[first.buffer], elem, index)
        if e.name == "tvm_load_at":
            vt = llvm_type(e.dtype)
            return self.b.load(self.b.bitcast(ptr, vt.as_pointer()), align=_align(elem))
        value = self.expr(e.args[2])
        self.b.store(value, self.b.bitcast(ptr, value.type.as_pointer()), align=_align(elem))
        return ir.Constant(I32, 0)

    def expr_TensorRead(self, e):
        raise ValueError(f"codegen: tensor read {e} survived storage_flatten")

    def binary(self, e) -> ir.Value:
        op, x, y = type(e).__name__, self.expr(e.a), self.expr(e.b)
        key, operands = (op, e.a.dtype), []
        for child, value in ((e.a, x), (e.b, y)):  # a constant by its value, anything else by identity
            if isinstance(child, E.IntImm):
                key += (child.value,)
            else:
                key += ("v",)
                operands.append(value)
        return self.reuse(key, tuple(operands), lambda: intrinsics.binary(self.b, op, x, y, e.a.dtype))


_INDEX_OPS = {E.Add: "add", E.Sub: "sub", E.Mul: "mul"}

for _name in ("Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max",
              "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or"):
    setattr(CodeGen, "expr_" + _name, CodeGen.binary)


def _clamp_bounds(e: E.Expr) -> tuple:
    """``(lo, hi)`` that ``min`` / ``max`` with float constants (scalar or broadcast) around ``e``
    clamp it to (None: no bound), as in ``max(min(x, 0), -86.5)``: ``(-86.5, 0)``."""
    if not isinstance(e, (E.Min, E.Max)):
        return None, None
    consts = [side.value if isinstance(side, E.Broadcast) else side for side in (e.a, e.b)]
    k = next((k for k, c in enumerate(consts) if isinstance(c, E.FloatImm)), None)
    if k is None:
        return None, None
    c = consts[k].value
    lo, hi = _clamp_bounds((e.b, e.a)[k])
    if isinstance(e, E.Min):
        return (None if lo is None else min(lo, c)), (c if hi is None else min(hi, c))
    return (c if lo is None else max(lo, c)), (None if hi is None else max(hi, c))


def _masked_index_vars(body: S.Stmt) -> frozenset:
    """The ids of the variables under ``floormod(.., 2**k)`` anywhere in ``body`` (an index,
    or a ``let`` that an index may read).

    A serial loop over one of them gets ``llvm.loop.vectorize.enable false``:
    LLVM 22.1's loop vectorizer miscompiles such a loop nested in another
    (``C[i] += B[r*4 + floormod(i, 4)]``, i.e. ``or disjoint (r << 2), (i & 3)``
    after instcombine): it loads ``B[r*4 .. r*4 + VF)`` contiguously, whatever
    the pipeline's flags (found by scripts/fuzz_schedules.py; the regression
    tests in tests/test_fuzz.py).  Such loops keep LLVM's SLP vectorizer and
    Tessera's own ``vectorize``; only LLVM's loop vectorizer is off for them.
    """
    found: set[int] = set()
    stack: list = []
    S.walk_stmt(body, lambda st: stack.extend(S.stmt_exprs(st)))
    seen: set[int] = set()  # one walk over all expressions: unrolled bodies share subtrees
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, E.FloorMod) and _is_pow2_const(e.b):
            found.update(id(v) for v in collect_vars(e.a))
        stack.extend(children(e))
    return frozenset(found)


def _is_pow2_const(e: E.Expr) -> bool:
    return isinstance(e, E.IntImm) and e.value > 0 and e.value & (e.value - 1) == 0


def _clamped_ramp(idx: E.Expr):
    """``min(max(ramp, x(lo)), x(hi))`` (either nesting), ``min(ramp, x(hi))`` or ``max(ramp, x(lo))``
    -> ``(ramp, lo, hi)`` (None for a side without a bound), else None."""
    for outer, inner in ((E.Min, E.Max), (E.Max, E.Min)):
        if isinstance(idx, outer) and isinstance(idx.a, inner) and isinstance(idx.a.a, E.Ramp):
            a, b = idx.a.b, idx.b
            if isinstance(a, E.Broadcast) and isinstance(b, E.Broadcast):
                lo, hi = (a.value, b.value) if outer is E.Min else (b.value, a.value)
                return idx.a.a, lo, hi
    for op in (E.Min, E.Max):  # one side: a padded loop's reads clamped to the last element (attention keys)
        if isinstance(idx, op):
            for r, c in ((idx.a, idx.b), (idx.b, idx.a)):
                if isinstance(r, E.Ramp) and isinstance(c, E.Broadcast):
                    return (r, None, c.value) if op is E.Min else (r, c.value, None)
    return None


def elem_size(t: ir.Type) -> int:
    return _align(t)


def _is_one(e: E.Expr) -> bool:
    return isinstance(e, E.IntImm) and e.value == 1


def _size(dtype: str) -> int:
    return max(1, dt.bits(dt.element(dtype)) // 8)


def _align(t: ir.Type) -> int:
    if isinstance(t, ir.IntType):
        return max(1, t.width // 8)
    return {"half": 2, "float": 4, "double": 8}.get(str(t), 8)


def _clean(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
