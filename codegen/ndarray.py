"""``NDArray`` and ``Device``: classic TVM's runtime array, over a numpy array.

Tessera's kernels run on numpy arrays; an ``NDArray`` is a thin holder of
one (``a.numpy()`` returns it, a copy is never made behind the user's
back), so that classic code written against ``tvm.nd.array`` runs as is, and
so packed functions called from a kernel receive the arrays TVM's would.
Only the CPU exists here: a GPU device can be named but holds no memory.
"""

from __future__ import annotations

import numpy as np

# Byte alignment of every buffer Tessera allocates for a kernel (classic TVM's kAllocAlignment):
# numpy aligns to 16 bytes, and a 32- or 64-byte vector load from a 16-byte aligned buffer
# crosses a cache line every other load: a kernel streaming weights 16 or 48 bytes past a line
# runs about 5% slower, so without this a build's speed would be a draw of where numpy put
# each weight.
ALIGN = 64


def aligned_empty(shape, dtype="float32") -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on an ``ALIGN``-byte boundary."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)  # a list, tuple, array
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGN, np.uint8)
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def aligned_zeros(shape, dtype="float32") -> np.ndarray:
    out = aligned_empty(shape, dtype)
    out.fill(0)
    return out


def aligned_copy(arr) -> np.ndarray:
    """A C-contiguous ``ALIGN``-aligned copy of ``arr``."""
    arr = np.asarray(arr)
    out = aligned_empty(arr.shape, arr.dtype)
    np.copyto(out, arr)
    return out


def aligned(arr) -> np.ndarray:
    """``arr`` itself when it is a C-contiguous ``ALIGN``-aligned numpy array, else an aligned copy."""
    arr = np.asarray(arr)
    if arr.flags.c_contiguous and arr.ctypes.data % ALIGN == 0:
        return arr
    return aligned_copy(arr)


_TYPES = {
    "cpu": 1,
    "llvm": 1,
    "c": 1,
    "stackvm": 1,
    "cuda": 2,
    "gpu": 2,
    "nvptx": 2,
    "cl": 4,
    "opencl": 4,
    "sdaccel": 4,
    "aocl": 5,
    "aocl_sw_emu": 5,
    "vulkan": 7,
    "metal": 8,
    "vpi": 9,
    "rocm": 10,
    "ext_dev": 12,
    "hexagon": 14,
    "webgpu": 15,
}
_NAMES = {1: "cpu", 2: "cuda", 4: "opencl", 5: "aocl", 7: "vulkan", 8: "metal", 9: "vpi", 10: "rocm",
          12: "ext_dev", 14: "hexagon", 15: "webgpu"}


class Device:
    """A device (classic ``tvm.device("llvm", 0)``); ``device_type`` 1 is the CPU."""

    __slots__ = ("device_id", "device_type")

    def __init__(self, device_type, device_id: int = 0):
        if isinstance(device_type, str):
            key = device_type.split()[0].split("-")[0]
            if key not in _TYPES:
                raise ValueError(f"device: unknown device {device_type!r}; use one of {sorted(_TYPES)}")
            device_type = _TYPES[key]
        self.device_type = int(device_type)
        self.device_id = int(device_id)

    @property
    def exist(self) -> bool:
        return self.device_type == 1

    def sync(self) -> None:
        """Kernels run synchronously on the CPU: nothing to wait for."""

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and (other.device_type, other.device_id) == (
            self.device_type,
            self.device_id,
        )

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{_NAMES.get(self.device_type, self.device_type)}({self.device_id})"


def device(dev_type, dev_id: int = 0) -> Device:
    return dev_type if isinstance(dev_type, Device) else Device(dev_type, dev_id)


def cpu(dev_id: int = 0) -> Device:
    return Device(1, dev_id)


def cuda(dev_id: int = 0) -> Device:
    """A CUDA device; it can be named, but holds no memory here (``exist`` is False)."""
    return Device("cuda", dev_id)


def opencl(dev_id: int = 0) -> Device:
    return Device("opencl", dev_id)


def rocm(dev_id: int = 0) -> Device:
    return Device("rocm", dev_id)


def metal(dev_id: int = 0) -> Device:
    return Device("metal", dev_id)


def vulkan(dev_id: int = 0) -> Device:
    return Device("vulkan", dev_id)


cl = opencl


def _check_device(dev) -> Device:
    dev = cpu(0) if dev is None else device(dev)
    if not dev.exist:
        raise ValueError(
            f"{dev}: Tessera runs on the CPU only (no GPU runtime); use tvm.cpu(0) / tvm.device('llvm')"
        )
    return dev


class NDArray:
    """An n-d array on the CPU, holding a C-contiguous numpy array."""

    __slots__ = ("_array", "device")

    def __init__(self, array: np.ndarray, dev: Device | None = None):
        self._array = array
        self.device = _check_device(dev)

    @property
    def shape(self) -> tuple:
        return self._array.shape

    @property
    def dtype(self) -> str:
        return self._array.dtype.name

    @property
    def ndim(self) -> int:
        return self._array.ndim

    def numpy(self) -> np.ndarray:
        """The numpy array this NDArray holds (shared memory, as the kernels write it)."""
        return self._array

    asnumpy = numpy

    def __array__(self, dtype=None, copy=None):
        return self._array if dtype is None else self._array.astype(dtype)

    def copyfrom(self, source) -> NDArray:
        src = source.numpy() if isinstance(source, NDArray) else np.asarray(source)
        if src.shape != self.shape:
            raise ValueError(f"copyfrom: source shape {src.shape} does not match this array's {self.shape}")
        np.copyto(self._array, src, casting="same_kind")
        return self

    def copyto(self, target) -> NDArray:
        """Copy into ``target`` (an NDArray of the same shape) or to a new array on a device."""
        if isinstance(target, NDArray):
            if target.shape != self.shape:
                raise ValueError(
                    f"copyto: this array has shape {self.shape} {self.dtype}, the target "
                    f"{target.shape} {target.dtype}; shapes must match"
                )
            np.copyto(target._array, self._array, casting="same_kind")
            return target
        return NDArray(self._array.copy(), device(target))

    def __getitem__(self, key):
        return self._array[key]

    def __setitem__(self, key, value) -> None:
        self._array[key] = value.numpy() if isinstance(value, NDArray) else value

    def __repr__(self) -> str:
        return f"<tvm.nd.NDArray shape={self.shape}, {self.device}>\n{self._array!r}"


def array(arr, dev: Device | None = None, *, device: Device | None = None) -> NDArray:
    """An NDArray holding a C-contiguous copy of ``arr`` (classic ``tvm.nd.array``; ``device=``
    as TVM >= 0.8 names it)."""
    src = arr.numpy() if isinstance(arr, NDArray) else arr
    return NDArray(aligned_copy(src), dev if dev is not None else device)


def empty(shape, dtype: str = "float32", dev: Device | None = None, *, device: Device | None = None) -> NDArray:
    """An uninitialised NDArray (classic ``tvm.nd.empty``)."""
    return NDArray(aligned_empty(shape, dtype), dev if dev is not None else device)


def as_numpy(x):
    """An NDArray's numpy array; anything else unchanged (the kernels' calling convention)."""
    return x._array if type(x) is NDArray else x


__all__ = [
    "ALIGN",
    "Device",
    "NDArray",
    "aligned",
    "aligned_copy",
    "aligned_empty",
    "aligned_zeros",
    "array",
    "as_numpy",
    "cl",
    "cpu",
    "cuda",
    "device",
    "empty",
    "metal",
    "opencl",
    "rocm",
    "vulkan",
]
