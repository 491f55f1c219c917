"""Find the array library of the inputs: the only module that looks for CuPy."""

from __future__ import annotations

import functools
import importlib
import itertools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal, TypeVar

import numpy as np

Array = Any
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Backend:
    """The array library a call runs on.

    Attributes
    ----------
    name : {'numpy', 'cupy'}
        Library name.
    xp : module
        ``numpy`` or ``cupy``.
    fft : module
        ``scipy.fft`` or ``cupyx.scipy.fft``.
    device : int or None
        CUDA device id; None on the CPU.
    """

    name: Literal["numpy", "cupy"]
    xp: ModuleType
    fft: ModuleType
    device: int | None


class _Deferred(ModuleType):
    """A module imported on first attribute access (scipy.fft costs ~0.25 s to import).
    Each attribute is looked up once, then kept (a lookup through the import system cost
    5 us, a dozen times per FFT call)."""

    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(self.__name__), attr)
        setattr(self, attr, value)
        return value


NUMPY = Backend("numpy", np, _Deferred("scipy.fft"), None)


def is_cupy_array(x: object) -> bool:
    """True for a CuPy array; never imports CuPy."""
    cp = sys.modules.get("cupy")  # never imports CuPy
    return cp is not None and isinstance(x, cp.ndarray)


def array_module(*arrays: object) -> Any:
    """The array module of `arrays`: CuPy where one is a CuPy array, else NumPy."""
    if any(is_cupy_array(a) for a in arrays):
        import cupy

        return cupy
    return np


def on_arrays_device(function: F) -> F:
    """`function`, run with the device of its first CuPy array argument made current.

    CuPy runs kernels and makes arrays on the current device: arrays on device 1 filtered
    while device 0 is current would be refused (no peer access) or read across devices,
    with the result on device 0. Arrays on several devices are refused inside, by
    :func:`get_backend`. Where CuPy was never imported, one dictionary lookup.
    """

    @functools.wraps(function)
    def on_device(*args: Any, **kwargs: Any) -> Any:
        cupy = sys.modules.get("cupy")  # never imported: no CuPy arrays
        if cupy is not None:
            for a in itertools.chain(args, kwargs.values()):
                if isinstance(a, cupy.ndarray):
                    with a.device:
                        return function(*args, **kwargs)
        return function(*args, **kwargs)

    return on_device  # type: ignore[return-value]


def get_backend(**arrays: object) -> Backend:
    """Return the backend shared by the named arrays (``None`` values are ignored).

    Raises
    ------
    TypeError
        If some arrays are CuPy arrays and others are not.
    """
    for a in arrays.values():  # the common case first, asked on every plain call
        if a is not None and type(a) is not np.ndarray:
            break
    else:
        return NUMPY
    given = {name: a for name, a in arrays.items() if a is not None}
    on_gpu = {name: is_cupy_array(a) for name, a in given.items()}
    if not any(on_gpu.values()):
        return NUMPY
    if not all(on_gpu.values()):
        where = ", ".join(
            f"`{name}` is {type(given[name]).__module__}.{type(given[name]).__name__}"
            for name in given
        )
        msg = f"all arrays must be NumPy arrays or all CuPy arrays; got {where}"
        raise TypeError(msg)
    return _cupy_backend(given)


def _cupy_backend(arrays: dict[str, object]) -> Backend:
    import cupy
    import cupyx.scipy.fft

    devices = {name: a.device.id for name, a in arrays.items()}  # type: ignore[attr-defined]
    if len(set(devices.values())) > 1:
        where = ", ".join(f"`{n}` on device {d}" for n, d in devices.items())
        msg = f"all CuPy arrays must be on one device; got {where}"
        raise ValueError(msg)
    return Backend("cupy", cupy, cupyx.scipy.fft, next(iter(devices.values())))
