"""CuPy played by NumPy: arrayconv's CuPy paths run on a machine with no GPU (CI).

``install()`` puts this stand-in in ``sys.modules`` as ``cupy``, ``cupyx`` and
``cupyx.scipy.fft`` (and SciPy's ``signal`` and ``ndimage`` as cupyx's, the benchmark's
peers). With ``ARRAYCONV_CUPY_STAND_IN=1``, conftest.py installs it and the GPU tests run
on it. It holds each device array as a NumPy array inside a class
of its own, and keeps the rules of CuPy that a CPU-only run would otherwise never meet:

- a device array is never turned into a NumPy array implicitly (``numpy.asarray``, a
  NumPy array's ``__setitem__``): TypeError, as CuPy; ``.get()`` and ``cupy.asnumpy`` copy;
- CuPy's functions refuse NumPy arrays of more than one element, except those that copy
  host data to the device (``array``, ``asarray``, ``asanyarray``) and ``take``'s indices,
  and device arrays refuse NumPy operands;
- reductions return 0-d device arrays, not NumPy scalars;
- inside ``cupyx.allow_synchronize(False)``, reading a device array on the host (``.get()``,
  ``bool()``, ``float()``, ``.item()``) raises ``cupyx.DeviceSynchronized``;
- ``cupyx.scipy.fft`` has CuPy's signatures (no ``workers``; ``plan`` keyword-only) and
  ``next_fast_len`` cuFFT's lengths (factors 2, 3, 5 and 7);
- arrays live on a device: the current one (``cupy.cuda.Device(i)`` as a context) when
  made, their source's for views. As CuPy with no peer access between devices, a kernel
  (an array function, a ufunc, a copy, an FFT, a ``RawKernel``) given an array on another
  device than the current one raises ValueError; ``.get()`` and ``asarray`` copy from any
  device. One device unless :func:`devices` says more;
- ``RawKernel`` runs arrayconv's two CUDA kernels by NumPy models of what their sources
  compute, from the same launch arguments and ``#define`` constants, and checks the launch
  (argument types, dtypes, contiguity, grid and block limits, shared memory).

What it cannot check: CUDA C itself (the kernels' indexing, races, compilation), timings,
streams that overlap (copies here are synchronous), and memory that runs out. Those need
a GPU (``bash .ci/gpu tests``).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import sys
import time
import types
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

__version__ = "14.2.0+numpy-stand-in"
_IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly."
)
# functions that copy host data to the device
_FROM_HOST = {"array", "asarray", "asanyarray"}
# functions whose arguments after the first may be host data (CuPy copies indices over)
_HOST_INDICES = {"take", "ndarray.take"}
FREE_BYTES, TOTAL_BYTES = 4 << 30, 16 << 30
_device_count = [1]
_current_device = [0]  # a stack: the innermost ``with cupy.cuda.Device(i)`` on top
# ndarray methods that return a view (no kernel runs, so any device's array may be viewed)
_VIEWS = {"reshape", "view", "transpose", "swapaxes", "squeeze", "ravel", "diagonal"}


@contextlib.contextmanager
def _pushed(stack: list[Any], value: Any) -> Any:
    """`value` on top of the setting `stack` inside the block."""
    stack.append(value)
    try:
        yield
    finally:
        stack.pop()


def devices(count: int) -> Any:
    """The stand-in with `count` devices inside the block (one outside)."""
    return _pushed(_device_count, count)


def _on_current_device(a: ndarray, name: str) -> None:
    """CuPy's refusal of an array on another device than the current one, for a kernel
    `name` (no peer access is modelled)."""
    if a._device != _current_device[-1]:
        msg = f"Array device must be same as the current device: array device = {a._device} while current = {_current_device[-1]} (in {name})"
        raise ValueError(msg)


def _on_host_refused(value: Any, name: str) -> None:
    if isinstance(value, np.ndarray) and value.size != 1:
        msg = f"Unsupported type <class 'numpy.ndarray'> in cupy.{name} (the NumPy stand-in for CuPy)"
        raise TypeError(msg)


def _unwrap(value: Any, name: str, host_ok: bool = False) -> Any:
    """NumPy arrays of the device arrays in `value` (nested in tuples, lists and dicts)."""
    if isinstance(value, ndarray):
        if host_ok and name in _FROM_HOST and value._device != _current_device[-1]:
            return value._a.copy()  # asarray and array copy from another device
        _on_current_device(value, name)
        return value._a
    if isinstance(value, (tuple, list)):
        return type(value)(_unwrap(v, name, host_ok) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v, name, host_ok) for k, v in value.items()}
    if not host_ok:
        _on_host_refused(value, name)
    return value


def _wrap(value: Any) -> Any:
    """Device arrays of the NumPy arrays and scalars in `value`."""
    if isinstance(value, np.ndarray):
        return ndarray(value)
    if isinstance(value, np.generic):
        return ndarray(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _on_device(fn: Any, name: str) -> Any:
    host_ok, indices_ok = name in _FROM_HOST, name in _HOST_INDICES

    def call(*args: Any, **kwargs: Any) -> Any:
        if indices_ok and args:
            return _wrap(fn(_unwrap(args[0], name), *_unwrap(args[1:], name, True), **_unwrap(kwargs, name, True)))
        return _wrap(fn(*_unwrap(args, name, host_ok), **_unwrap(kwargs, name, host_ok)))

    call.__name__ = name
    return call


class Device:
    def __init__(self, device: int | None = None) -> None:
        self.id = _current_device[-1] if device is None else device
        if not 0 <= self.id < _device_count[-1]:
            raise RuntimeError(f"cudaErrorInvalidDevice: the stand-in has {_device_count[-1]} device(s), got {self.id}")

    def __enter__(self) -> Device:
        _current_device.append(self.id)
        return self

    def __exit__(self, *exc: object) -> None:
        _current_device.pop()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return self.id

    def synchronize(self) -> None:
        return None


class ndarray(NDArrayOperatorsMixin):
    """A device array: a NumPy array that refuses to leave the device implicitly."""

    __slots__ = ("_a", "_device")
    __module__ = "cupy"

    def __init__(self, a: np.ndarray, device: int | None = None) -> None:
        self._a = a
        self._device = _current_device[-1] if device is None else device

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: ndarray(self._a.T, self._device))
    real = property(lambda self: ndarray(self._a.real, self._device))
    imag = property(lambda self: ndarray(self._a.imag, self._device))
    device = property(lambda self: Device(self._device))

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError(_IMPLICIT)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = ufunc.__name__
        return _wrap(getattr(ufunc, method)(*_unwrap(inputs, name), **_unwrap(kwargs, name)))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        # as CuPy: a NumPy function given a device array runs CuPy's function of that name
        return _on_device(func, func.__name__)(*args, **kwargs)

    def __getitem__(self, key: Any) -> Any:
        return self._viewed(self._a[_unwrap(key, "ndarray.__getitem__", host_ok=True)], "ndarray.__getitem__")

    def __setitem__(self, key: Any, value: Any) -> None:
        _on_current_device(self, "ndarray.__setitem__")
        self._a[_unwrap(key, "ndarray.__setitem__", host_ok=True)] = _unwrap(value, "ndarray.__setitem__", host_ok=True)

    def _viewed(self, result: Any, name: str) -> Any:
        """`result` of indexing or a view method: a view stays on this array's device; a
        copy is a kernel, on the current device."""
        if isinstance(result, np.ndarray) and np.may_share_memory(result, self._a):
            return ndarray(result, self._device)
        _on_current_device(self, name)
        return _wrap(result)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Any:
        return (_wrap(row) for row in self._a)

    def __bool__(self) -> bool:
        return bool(_synchronized(self)._a)

    def __int__(self) -> int:
        return int(_synchronized(self)._a)

    def __float__(self) -> float:
        return float(_synchronized(self)._a)

    def __complex__(self) -> complex:
        return complex(_synchronized(self)._a)

    def __index__(self) -> int:
        return _synchronized(self)._a.__index__()

    def __repr__(self) -> str:
        return f"{self._a!r} (on the NumPy stand-in for CuPy)"

    def get(self, stream: Any = None, order: str = "C", out: np.ndarray | None = None, blocking: bool = True) -> np.ndarray:
        _synchronized(self)
        if out is None:
            return self._a.copy(order=order)
        out[...] = self._a
        return out

    def set(self, arr: np.ndarray, stream: Any = None) -> None:
        if not isinstance(arr, np.ndarray) or arr.shape != self.shape or arr.dtype != self.dtype:
            raise ValueError(f"set takes a NumPy array of shape {self.shape} and dtype {self.dtype}")
        self._a[...] = arr

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # not NumPy's __array_interface__: no way to the host but .get()
            raise AttributeError(name)
        value = getattr(self._a, name)
        if not callable(value):
            return _wrap(value)
        if name in _VIEWS:
            return lambda *args, **kwargs: self._viewed(value(*args, **kwargs), f"ndarray.{name}")
        if name in {"item", "tolist"}:  # reads to the host: from any device, where the host may wait
            _synchronized(self)
        else:
            _on_current_device(self, f"ndarray.{name}")
        return _on_device(value, f"ndarray.{name}")


class DeviceSynchronized(RuntimeError):
    """Raised, as ``cupyx.DeviceSynchronized``, where the host would wait for the device
    inside ``cupyx.allow_synchronize(False)``."""


_sync_allowed = [True]


def _synchronized(a: ndarray) -> ndarray:
    """`a`, after checking that the host may wait for the device (it reads `a`'s data)."""
    if not _sync_allowed[-1]:
        raise DeviceSynchronized(f"a device array of shape {a.shape} was read on the host")
    return a


def allow_synchronize(allow: bool) -> Any:
    return _pushed(_sync_allowed, allow)


class _Module(types.ModuleType):
    """A module whose missing attributes come from the NumPy module of the same role:
    functions run on the device (:func:`_on_device`), types and constants as they are."""

    def __init__(self, name: str, numpy_module: Any) -> None:
        super().__init__(name)
        self._numpy_module = numpy_module

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = getattr(self._numpy_module, attr)
        if isinstance(value, types.ModuleType):
            value = _Module(f"{self.__name__}.{attr}", value)
        elif callable(value) and not isinstance(value, type):
            value = _on_device(value, attr)
        setattr(self, attr, value)
        return value


def asnumpy(a: Any, stream: Any = None, order: str = "C", out: np.ndarray | None = None, blocking: bool = True) -> np.ndarray:
    if isinstance(a, ndarray):
        return a.get(out=out, order=order) if blocking else _synchronized_later(a, out)
    result = np.asarray(a, order=order)
    if out is not None:
        out[...] = result
        return out
    return result


def _synchronized_later(a: ndarray, out: np.ndarray | None) -> np.ndarray:
    """A copy that does not block: it lands at once here, with no wait of the host."""
    if out is None:
        raise ValueError("asnumpy(blocking=False) needs `out`")
    out[...] = a._a
    return out


class Stream:
    """Work runs when queued, so a stream is always done."""

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False) -> None:
        self.ptr = 0

    def synchronize(self) -> None:
        return None

    def record(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        return None

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class Event:
    """Records the host's clock (the work before it is done when it is recorded)."""

    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> None:
        self.seconds = time.perf_counter()

    def synchronize(self) -> None:
        return None

    def record(self, stream: Stream | None = None) -> None:
        self.seconds = time.perf_counter()


# Shared memory a block may opt in to on the stand-in's devices (an H100's; tests change it).
SHARED_BYTES = [227 << 10]


def _device_properties(device: int) -> dict[str, Any]:
    Device(device)
    return {"name": b"NumPy stand-in for CuPy", "multiProcessorCount": 4, "sharedMemPerBlockOptin": SHARED_BYTES[-1]}


class OutOfMemoryError(MemoryError):
    """cupy.cuda.memory.OutOfMemoryError: an allocation the device could not make (CuPy's arguments)."""

    def __init__(self, size: int, total: int, limit: int = 0) -> None:
        super().__init__(f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes).")


class _MemoryPool:
    def free_bytes(self) -> int:
        return 0

    def used_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return 0

    def free_all_blocks(self) -> None:
        pass


_POOL = _MemoryPool()
_CURRENT_STREAM = Stream()

runtime = types.SimpleNamespace(
    getDeviceCount=lambda: _device_count[-1],
    getDevice=lambda: _current_device[-1],
    memGetInfo=lambda: (FREE_BYTES, TOTAL_BYTES),
    getDeviceProperties=_device_properties,
    deviceGetAttribute=lambda attr, device: _device_properties(device)[{16: "multiProcessorCount", 97: "sharedMemPerBlockOptin"}[attr]],
    cudaDevAttrMultiProcessorCount=16,
    cudaDevAttrMaxSharedMemoryPerBlockOptin=97,
    runtimeGetVersion=lambda: 13000,
)
cuda = types.SimpleNamespace(
    is_available=lambda: True,
    runtime=runtime,
    Device=Device,
    Stream=Stream,
    Event=Event,
    get_current_stream=lambda: _CURRENT_STREAM,
    get_elapsed_time=lambda start, end: 1e3 * (end.seconds - start.seconds),
    alloc_pinned_memory=bytearray,
    memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError),
)


# --- the CUDA kernels, as NumPy models of what their sources compute ---------------------

_C_TYPES = {"float": np.float32, "double": np.float64}
_MAX_THREADS, _MAX_GRID_X, _MAX_GRID_Y, _MAX_SHARED = 1024, 2**31 - 1, 65535, 227 << 10


class RawKernel:
    """A kernel of arrayconv's, run by :data:`_MODELS`; any other kernel fails to compile.
    The ``#define`` lines of the source give the constants, its ``typedef`` the element
    type."""

    def __init__(self, code: str, name: str, options: tuple[str, ...] = (), **kwargs: Any) -> None:
        self.code, self.name = code, name
        self.constants = {k: int(v) for k, v in re.findall(r"^#define (\w+) (-?\d+)$", code, re.M)}
        typedef = re.search(r"^typedef (.+) T;$", code, re.M)
        self.element = typedef.group(1) if typedef else None

    def compile(self, log_stream: Any = None) -> None:
        if self.name not in _MODELS:
            raise RuntimeError(f"the NumPy stand-in for CuPy has no model of CUDA kernel {self.name!r}")
        for name, value in self.constants.items():
            if not -(2**63) <= value < 2**63:  # no C integer type holds it
                raise RuntimeError(f"NVRTC: integer constant is too large ({name} {value})")

    def __call__(self, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...], *, shared_mem: int = 0) -> None:
        grid, block = tuple(grid) + (1,) * (3 - len(grid)), tuple(block) + (1,) * (3 - len(block))
        if not (0 < grid[0] <= _MAX_GRID_X and 0 < grid[1] <= _MAX_GRID_Y and 0 < grid[2] <= _MAX_GRID_Y):
            raise ValueError(f"cudaErrorInvalidConfiguration: grid {grid}")
        if not 0 < np.prod(block) <= _MAX_THREADS or not 0 <= shared_mem <= _MAX_SHARED:
            raise ValueError(f"cudaErrorInvalidConfiguration: block {block}, shared memory {shared_mem}")
        for a in args:
            if isinstance(a, np.ndarray):
                raise TypeError(f"kernel {self.name!r} was given a NumPy array")
            if isinstance(a, ndarray):
                _on_current_device(a, f"kernel {self.name!r}")
                if not a.flags.c_contiguous:
                    raise ValueError(f"kernel {self.name!r} was given a non-contiguous array")
                element = _C_TYPES.get(self.element)
                if element is not None and a.dtype != element:
                    raise TypeError(f"kernel {self.name!r} for {self.element} was given {a.dtype} data")
        _MODELS[self.name](self.constants, *args)


def _scalars(values: tuple[Any, ...], dtype: type) -> list[int]:
    for v in values:
        if type(v) is not dtype:
            raise TypeError(f"a kernel's scalar argument should be {dtype.__name__}, got {type(v).__name__}")
    return [int(v) for v in values]


def _direct_correlate(c: dict[str, int], x: ndarray, w: ndarray, y: ndarray, *scalars: Any) -> None:
    """``direct_correlate``: y[b, g, o, i] = sum over c, k of x[b, g, c, i*st + k*d - p] w[g, c, k, o]."""
    n_maps, groups, cg, og, og_pad, *rest = _scalars(scalars, np.int32)
    spatial, n_out, stride, dilation, pad = (rest[i : i + 3] for i in range(0, 15, 3))
    kernel = (c["K0"], c["K1"], c["K2"])
    batch = n_maps // (groups * (og_pad // c["OB"]))
    xs = x._a.reshape(batch, groups, cg, *spatial)
    ws = w._a.reshape(groups, cg, *kernel, og_pad)[..., :og]
    padded = np.pad(xs, [(0, 0)] * 3 + [(p, p + k * d + s * n) for p, k, d, s, n in zip(pad, kernel, dilation, stride, n_out)])
    acc = np.zeros((batch, groups, og, *n_out), dtype=np.result_type(xs, ws))
    for taps in itertools.product(*(range(k) for k in kernel)):
        window = tuple(slice(t * d, t * d + s * (n - 1) + 1, s) for t, d, s, n in zip(taps, dilation, stride, n_out))
        acc += np.einsum("bgcxyz,gco->bgoxyz", padded[(Ellipsis, *window)], ws[(slice(None), slice(None), *taps)])
    y._a.reshape(batch, groups, og, *n_out)[...] = acc


def _patch_correlate(c: dict[str, int], x: ndarray, w: ndarray, y: ndarray, patches: Any) -> None:
    """``patch_correlate``: y[p, d, qy, qx] = sum over c, ky, kx of padded x[p, c, qy*SH + ky, qx*SW + kx] w[d, c, ky, kx]."""
    (count,) = _scalars((patches,), np.int64)
    xs = x._a.reshape(count, c["C"], c["H"], c["W"])
    ws = w._a.reshape(c["D"], c["C"], c["KH"], c["KW"])
    padded = np.pad(xs, [(0, 0), (0, 0), (c["PH"], c["HP"] - c["H"] - c["PH"]), (c["PW"], c["WP"] - c["W"] - c["PW"])])
    acc = np.zeros((count, c["D"], c["OH"], c["OW"]), dtype=xs.dtype)
    for ky, kx in itertools.product(range(c["KH"]), range(c["KW"])):
        window = padded[:, :, ky : ky + c["SH"] * (c["OH"] - 1) + 1 : c["SH"], kx : kx + c["SW"] * (c["OW"] - 1) + 1 : c["SW"]]
        acc += np.einsum("pcyx,dc->pdyx", window, ws[:, :, ky, kx])
    y._a.reshape(acc.shape)[...] = acc


_MODELS = {"direct_correlate": _direct_correlate, "patch_correlate": _patch_correlate}


# --- cupyx.scipy.fft, with CuPy's signatures ------------------------------------------------


def _fft_module() -> types.ModuleType:
    import scipy.fft

    module = types.ModuleType("cupyx.scipy.fft")

    def one_axis(name: str) -> Any:
        fn = getattr(scipy.fft, name)

        def transform(x: Any, n: int | None = None, axis: int = -1, norm: str | None = None, overwrite_x: bool = False, *, plan: Any = None) -> Any:
            if not isinstance(x, ndarray):
                raise TypeError(f"cupyx.scipy.fft.{name} takes a cupy.ndarray, got {type(x).__name__}")
            _on_current_device(x, f"cupyx.scipy.fft.{name}")
            return _wrap(fn(x._a, n=n, axis=axis, norm=norm))

        return transform

    def n_axes(name: str) -> Any:
        fn = getattr(scipy.fft, name)

        def transform(x: Any, s: Any = None, axes: Any = None, norm: str | None = None, overwrite_x: bool = False, *, plan: Any = None) -> Any:
            if not isinstance(x, ndarray):
                raise TypeError(f"cupyx.scipy.fft.{name} takes a cupy.ndarray, got {type(x).__name__}")
            _on_current_device(x, f"cupyx.scipy.fft.{name}")
            return _wrap(fn(x._a, s=s, axes=axes, norm=norm))

        return transform

    for name in ("fft", "ifft", "rfft", "irfft"):
        setattr(module, name, one_axis(name))
    for name in ("fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"):
        setattr(module, name, n_axes(name))
    module.next_fast_len = next_fast_len
    return module


def next_fast_len(target: int, real: bool = False) -> int:
    """cuFFT's fast lengths: the least product of 2, 3, 5 and 7 not below `target`."""
    if target <= 0:
        return 0
    best = 2 ** (target - 1).bit_length()
    for threes, fives, sevens in itertools.product(range(target.bit_length()), repeat=3):
        n = 3**threes * 5**fives * 7**sevens
        if n >= best:
            continue
        while n < target:
            n *= 2
        best = min(best, n)
    return best


_generator = np.random.default_rng(0)
cupy = _Module("cupy", np)
cupy.__version__, cupy.ndarray, cupy.cuda, cupy.RawKernel = __version__, ndarray, cuda, RawKernel
cupy.asnumpy, cupy.get_default_memory_pool = asnumpy, lambda: _POOL
cupy.random = _Module("cupy.random", np.random)
cupy.random.standard_normal = lambda size=None, dtype=float: ndarray(np.asarray(_generator.standard_normal(size, dtype)))


def _signal_module(scipy_signal: types.ModuleType) -> _Module:
    """SciPy's signal as cupyx's, whose ``correlate`` and ``convolve`` under
    ``method='auto'`` take 1-D input only (CuPy 14 raises NotImplementedError on an image)."""
    module = _Module("cupyx.scipy.signal", scipy_signal)

    def one_d_auto(name: str) -> Any:
        function = getattr(module, name)

        def call(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
            if method == "auto" and (in1.ndim != 1 or in2.ndim != 1):
                raise NotImplementedError("Only 1d inputs are supported currently")
            return function(in1, in2, mode, method)

        return call

    for name in ("correlate", "convolve"):
        setattr(module, name, one_d_auto(name))
    return module


def install() -> types.ModuleType:
    """Put the stand-in in ``sys.modules`` as ``cupy``, ``cupyx``, ``cupyx.scipy`` and
    ``cupyx.scipy.fft``, and return it."""
    fft = _fft_module()
    import scipy.ndimage
    import scipy.signal

    scipy_namespace = types.ModuleType("cupyx.scipy")
    scipy_namespace.__path__ = []  # a package, so that its submodules import
    scipy_namespace.fft = fft
    scipy_namespace.signal = _signal_module(scipy.signal)  # the benchmark's peers
    scipy_namespace.ndimage = _Module("cupyx.scipy.ndimage", scipy.ndimage)
    cupyx = types.ModuleType("cupyx")
    cupyx.__path__ = []
    cupyx.scipy = scipy_namespace
    cupyx.allow_synchronize = allow_synchronize
    cupyx.DeviceSynchronized = DeviceSynchronized
    sys.modules.update({"cupy": cupy, "cupyx": cupyx, "cupyx.scipy": scipy_namespace})
    sys.modules.update({f"cupyx.scipy.{name}": getattr(scipy_namespace, name) for name in ("fft", "signal", "ndimage")})
    return cupy
