"""``tvm.container`` / ``tvm.runtime.container``: TVM's Map and Array are Python's dict and list here."""

Map = dict
Array = list

__all__ = ["Array", "Map"]
