"""graph: the thin graph layer of NNVM (IR, ONNX import, passes, fusion, memory planning, executor)."""

from graph.build import GraphLibrary, build  # noqa: F401
from graph.executor import GraphModule  # noqa: F401
from graph.export import load_library  # noqa: F401
from graph.ir import Graph, GraphBuilder, Node, Value, make_node  # noqa: F401
from graph.onnx import from_onnx  # noqa: F401
from graph import tuning  # noqa: F401  registers autotvm.task.extract_from_program's graph extractor
from graph import auto_schedule  # noqa: F401  registers auto_scheduler.extract_tasks' graph extractor
