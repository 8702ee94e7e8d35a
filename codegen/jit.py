"""The process-wide LLVM target machine, optimiser and JIT engine.

One MCJIT engine per process (as numba does): every built kernel module and
the thread-pool runtime are added to it, so kernels call the runtime across
modules.  The target is the host CPU *with its feature string*: the CPU name
alone can imply AVX-512 that a virtual machine hides (SIGILL).
"""

from __future__ import annotations

import threading

import llvmlite.binding as llvm

_lock = threading.RLock()
_state: dict = {}


def target_machine() -> llvm.TargetMachine:
    with _lock:
        if "tm" not in _state:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            llvm.initialize_native_asmparser()
            target = llvm.Target.from_triple(llvm.get_process_triple())
            _state["tm"] = target.create_target_machine(
                cpu=llvm.get_host_cpu_name(),
                features=llvm.get_host_cpu_features().flatten(),
                opt=3,
                reloc="pic",
                codemodel="default",
            )
        return _state["tm"]


def triple() -> str:
    return target_machine().triple


def data_layout() -> str:
    return str(target_machine().target_data)


def optimize(mod: llvm.ModuleRef) -> None:
    """Run the O3 pipeline with loop and SLP vectorisation on ``mod`` in place."""
    tm = target_machine()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = False  # unroll only what the schedule says (explicit unroll, auto_unroll pragma)
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)


def parse(ir_text: str) -> llvm.ModuleRef:
    mod = llvm.parse_assembly(ir_text)
    mod.triple = triple()
    mod.data_layout = data_layout()
    mod.verify()
    return mod


def engine() -> llvm.ExecutionEngine:
    """The engine, created on first use with the thread-pool runtime in it."""
    with _lock:
        if "engine" not in _state:
            from codegen.runtime import runtime_llvm_ir

            tm = target_machine()
            rt = parse(runtime_llvm_ir(triple(), data_layout()))
            optimize(rt)
            eng = llvm.create_mcjit_compiler(rt, tm)
            eng.finalize_object()
            _state["engine"] = eng
            _state["modules"] = [rt]
        return _state["engine"]


def add_module(mod: llvm.ModuleRef) -> None:
    with _lock:
        eng = engine()
        eng.add_module(mod)
        eng.finalize_object()
        _state["modules"].append(mod)


def function_address(name: str) -> int:
    with _lock:
        addr = engine().get_function_address(name)
        if not addr:
            raise RuntimeError(f"JIT: function '{name}' was not found after compilation")
        return addr
