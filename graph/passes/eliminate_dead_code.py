"""Dead-code elimination: drop the nodes the outputs do not depend on."""

from __future__ import annotations

from graph.ir import Graph, topo_sort


def eliminate_dead_code(graph: Graph) -> Graph:
    """Keep only the nodes reachable from the graph outputs.

    Graph inputs stay (the signature does not change), even when unused.
    TVM's ``relay.transform.DeadCodeElimination``.

    Examples
    --------
    Before::

        graph main(%x: float32[4]) {
          %a: float32[4] = relu(%x)
          %b: float32[4] = exp(%x)
          return %a
        }

    After::

        graph main(%x: float32[4]) {
          %a: float32[4] = relu(%x)
          return %a
        }
    """
    order = topo_sort(graph.outputs)
    if len(order) == len(graph.nodes):
        return graph
    return Graph(graph.inputs, order, graph.outputs, graph.name)
