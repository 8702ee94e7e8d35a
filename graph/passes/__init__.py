"""Graph passes: ``Graph -> Graph`` rewrites in one ordered, tagged table (``OPTDB``).

Each pass lives in its own module, named verb_object, and returns its
argument itself when it changes nothing.  ``optimize`` runs the table::

    from graph.passes import OPTDB, PassProfile, optimize

    profile = PassProfile()
    g = optimize(g, opt_level=2, exclude=("merge_common_subexpressions",), profile=profile)
    print(profile.report())

The standard table (``opt_level``: the lowest level that runs the pass;
``include`` by name or tag runs it at any level, ``exclude`` always wins):

====  ================================  ========  =========
pos   pass                              tags      opt_level
====  ================================  ========  =========
10    eliminate_dead_code               cleanup   0
20    merge_common_subexpressions       cleanup   1
30    simplify_inference                simplify  0
35    simplify_arithmetic               simplify  1
38    lower_qdq_conv                    quantize  2
40    fold_constants                    fold      0
45    lower_int8_dense                  quantize  2
50    fold_scale_into_conv              fold      2
54    tune_layouts                      config    2
55    choose_configs                    config    2
58    alter_op_layout                   layout    2
60    alter_conv_layout                 layout    2
65    choose_configs_late               config    2
70    fold_constants_late               fold      0
75    merge_common_subexpressions_late  cleanup   1
80    (reserved: fuse_ops)              fusion
====  ================================  ========  =========

``tune_layouts`` acts only inside ``apply_history_best``: it picks each tuned
conv's record against the layout transforms the choice costs its neighbours.
``fold_constants`` runs at every level: ``shape_of`` has no kernel, so it
must fold.  ``fold_constants_late`` folds what the layout pass packs, and
``merge_common_subexpressions_late`` merges the constants folding made equal
(models whose statistics are all one value give identical scales and shifts).
Passes written elsewhere join with ``OPTDB.register(name, fn, position,
tags, opt_level)``.  ``TESSERA_PRINT_GRAPH_PASSES=1`` prints the graph after
each pass that changed it.
"""

from __future__ import annotations

from collections.abc import Iterable

from graph.fuse import fuse_ops
from graph.ir import Graph
from graph.passes.alter_conv_layout import alter_conv_layout
from graph.passes.alter_op_layout import alter_op_layout
from graph.passes.choose_configs import choose_configs
from graph.passes.context import BuildContext
from graph.passes.database import Pass, PassDatabase, PassProfile, PassStats  # noqa: F401
from graph.passes.eliminate_dead_code import eliminate_dead_code
from graph.passes.fold_constants import fold_constants
from graph.passes.fold_scale_into_conv import fold_scale_into_conv
from graph.passes.lower_int8 import lower_int8_dense, lower_qdq_conv
from graph.passes.merge_common_subexpressions import merge_common_subexpressions
from graph.passes.simplify_arithmetic import simplify_arithmetic
from graph.passes.simplify_inference import simplify_inference
from graph.passes.transformer import register_transformer_passes
from graph.passes.tune_layouts import tune_layouts

OPTDB = PassDatabase("OPTDB")
OPTDB.register("eliminate_dead_code", eliminate_dead_code, 10, ("cleanup",), opt_level=0)
OPTDB.register("merge_common_subexpressions", merge_common_subexpressions, 20, ("cleanup",), opt_level=1)
OPTDB.register("simplify_inference", simplify_inference, 30, ("simplify",), opt_level=0)
OPTDB.register("simplify_arithmetic", simplify_arithmetic, 35, ("simplify",), opt_level=1)
OPTDB.register("lower_qdq_conv", lower_qdq_conv, 38, ("quantize",), opt_level=2, context=True)
OPTDB.register("fold_constants", fold_constants, 40, ("fold",), opt_level=0)
OPTDB.register("lower_int8_dense", lower_int8_dense, 45, ("quantize",), opt_level=2, context=True)
OPTDB.register("fold_scale_into_conv", fold_scale_into_conv, 50, ("fold",), opt_level=2)
OPTDB.register("tune_layouts", tune_layouts, 54, ("config",), opt_level=2, context=True)
OPTDB.register("choose_configs", choose_configs, 55, ("config",), opt_level=2, context=True)
OPTDB.register("alter_op_layout", alter_op_layout, 58, ("layout",), opt_level=2, context=True)
OPTDB.register("alter_conv_layout", alter_conv_layout, 60, ("layout",), opt_level=2, context=True)
OPTDB.register("choose_configs_late", choose_configs, 65, ("config",), opt_level=2, context=True)
OPTDB.register("fold_constants_late", fold_constants, 70, ("fold",), opt_level=0)
OPTDB.register("merge_common_subexpressions_late", merge_common_subexpressions, 75, ("cleanup",), opt_level=1)
OPTDB.register("fuse_ops", fuse_ops, 80, ("fusion",), opt_level=1)
register_transformer_passes(OPTDB)


def optimize(
    graph: Graph,
    opt_level: int = 2,
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    profile: PassProfile | None = None,
    context: BuildContext | None = None,
) -> Graph:
    """Run the passes of ``OPTDB`` that ``opt_level``, ``include`` and ``exclude`` select.

    Returns ``graph`` itself when no pass changed it; ``profile`` (a
    ``PassProfile``) accumulates time, node counts and times applied per pass.
    ``context``: the target, records and options the config passes choose with (default: the
    current target, the records of the user's ``apply_history_best``, default options).
    """
    return OPTDB.run(graph, opt_level, include, exclude, profile, context or BuildContext.of())
