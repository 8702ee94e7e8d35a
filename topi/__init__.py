"""topi: the operator library (computes, x86 and generic schedules, numpy references).

Names resolve lazily from their modules; see each module for its operators.
"""

from topi._lazy import lazy_exports

_TABLE = {}
for _mod, _names in {
    "broadcast": "add subtract multiply divide floor_divide mod floor_mod power maximum minimum "
                 "equal not_equal less less_equal greater greater_equal logical_and logical_or "
                 "logical_not logical_xor where broadcast_to",
    "math": "exp log log2 log10 sqrt rsqrt tanh sigmoid erf abs negative floor ceil round trunc "
            "sign sin cos fast_exp fast_tanh identity",
    "reduction": "sum mean max min prod argmax argmin all any",
    "transform": "reshape transpose flatten concatenate stack split strided_slice take gather "
                 "expand_dims squeeze tile repeat cast layout_transform resize",
}.items():
    for _n in _names.split():
        _TABLE[_n] = _mod
for _sub in ("nn", "x86", "generic", "testing", "tag", "utils", "config"):
    _TABLE[_sub] = "__sub__"


def __getattr__(name):
    if _TABLE.get(name) == "__sub__":
        import importlib

        return importlib.import_module(f"topi.{name}")
    return _get(name)


_get, __dir__ = lazy_exports("topi", {k: v for k, v in _TABLE.items() if v != "__sub__"})
