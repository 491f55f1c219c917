"""How the slabs of :func:`correlate_into` reach the array library that filters them, and
come back.

On the CPU a slab read from disk is filtered where it lies (:class:`InPlace`). On the GPU
(:class:`PinnedCopies`) each slab is read into one of two pinned (page-locked) host
buffers and uploaded on a copy stream of its own while the previous slab is filtered on
the caller's current stream; each result is downloaded on that stream into one of two
pinned buffers without blocking the host, and the I/O thread waits for that download only
when it writes the result out. Events order the work:

- a slab's upload waits until the filter has read the device buffer it overwrites
  (``consumed``), and the filter waits for its upload (``uploaded``);
- the I/O thread reads a slab into a pinned buffer only once that buffer's previous upload
  is done (``uploaded``), and writes a result out only once its download is done
  (``downloaded``).

Both run in the slab loop of :mod:`arrayconv._api.tiled`, slot ``i % 2`` for slab ``i``, as
context managers: on leaving, no copy is left running.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np

from .backend import Array, Backend

SLOTS = 2  # slabs in flight each way: one being copied while the other is filtered


class InPlace:
    """NumPy: slabs are filtered where they are read, and results written as they come."""

    def __enter__(self) -> InPlace:
        return self

    def __exit__(self, *exc: object) -> None:
        """Nothing is left running."""

    def input_buffer(self, slot: int, shape: tuple[int, ...]) -> np.ndarray | None:
        """Where the I/O thread reads the next slab: a new array (None)."""
        return None

    def to_device(self, slot: int, slab: np.ndarray) -> Array:
        """The slab, already where it is filtered."""
        return slab

    def to_host(self, slot: int, y: Array) -> np.ndarray:
        """The result, already on the host."""
        return y

    def wait_for_host(self, slot: int) -> None:
        """Nothing to wait for."""


class PinnedCopies(InPlace):
    """CuPy: pinned host buffers, a copy stream for uploads, downloads that do not block.

    The filter runs on the caller's current stream, as any call would. The copy stream
    is non-blocking (it does not wait for the legacy default stream), so uploads overlap
    the filter; the device buffers they fill are allocated on the caller's stream, and
    the first upload waits for the work queued there before (the kernel's making, the
    buffers' last use).

    Parameters
    ----------
    xp : module
        ``cupy``.
    slab_shape, slab_dtype : tuple of int, numpy.dtype
        The largest input slab (a tile with its halo), and its dtype in native byte order.
    y_shape, y_dtype : tuple of int, numpy.dtype
        The largest result slab and the result's dtype.

    Smaller slabs (the last tiles along each axis) take the first bytes of each buffer,
    contiguous, in their own shape.
    """

    def __init__(self, xp: ModuleType, slab_shape: tuple[int, ...], slab_dtype: np.dtype[Any], y_shape: tuple[int, ...], y_dtype: np.dtype[Any]) -> None:
        self.xp = xp
        self.device = xp.cuda.Device()
        self.stream = xp.cuda.get_current_stream()
        self.copy_stream = xp.cuda.Stream(non_blocking=True)
        self.pinned_in = [_pinned(xp, slab_shape, slab_dtype) for _ in range(SLOTS)]
        self.pinned_out = [_pinned(xp, y_shape, y_dtype) for _ in range(SLOTS)]
        self.device_in = [xp.empty(slab_shape, slab_dtype) for _ in range(SLOTS)]
        self.uploaded: list[Any] = [None] * SLOTS
        self.consumed: list[Any] = [None] * SLOTS
        self.downloaded: list[Any] = [None] * SLOTS
        self.copy_stream.wait_event(self._record(self.stream))

    def __exit__(self, *exc: object) -> None:
        """Wait for both streams (after an error too): no copy is left running into a
        buffer about to be freed."""
        self.stream.synchronize()
        self.copy_stream.synchronize()

    def input_buffer(self, slot: int, shape: tuple[int, ...]) -> np.ndarray:
        """A pinned array of `shape` for the I/O thread to read a slab into, once its
        buffer's last upload is done."""
        if self.uploaded[slot] is not None:
            with self.device:
                self.uploaded[slot].synchronize()
        return _first(self.pinned_in[slot], shape)

    def to_device(self, slot: int, slab: np.ndarray) -> Array:
        """Upload `slab` (a pinned buffer) on the copy stream; the filter waits for it."""
        device = _first(self.device_in[slot], slab.shape)
        if self.consumed[slot] is not None:
            self.copy_stream.wait_event(self.consumed[slot])
        device.set(slab, stream=self.copy_stream)
        self.uploaded[slot] = self._record(self.copy_stream)
        self.stream.wait_event(self.uploaded[slot])
        return device

    def to_host(self, slot: int, y: Array) -> np.ndarray:
        """Start downloading the filtered slab into a pinned buffer; returns that buffer,
        to be read after :meth:`wait_for_host`."""
        self.consumed[slot] = self._record(self.stream)
        host = _first(self.pinned_out[slot], y.shape)
        self.xp.asnumpy(y, stream=self.stream, out=host, blocking=False)
        self.downloaded[slot] = self._record(self.stream)
        return host

    def wait_for_host(self, slot: int) -> None:
        """Block until the result of `slot` is in its pinned buffer."""
        with self.device:
            self.downloaded[slot].synchronize()

    def _record(self, stream: Any) -> Any:
        """An event on `stream` that a waiting thread sleeps on rather than spins."""
        return stream.record(self.xp.cuda.Event(block=True, disable_timing=True))


def _first(buffer: Any, shape: tuple[int, ...]) -> Any:
    """The first elements of a C-contiguous `buffer` (NumPy or CuPy) as a contiguous array of `shape`."""
    return buffer.reshape(-1)[: math.prod(shape)].reshape(shape)


def _pinned(xp: ModuleType, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """A NumPy array in page-locked memory (``cupyx.empty_pinned``, without importing cupyx)."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return np.ndarray(shape, dtype, buffer=xp.cuda.alloc_pinned_memory(nbytes))


def slab_copies(backend: Backend, slab_shape: tuple[int, ...], slab_dtype: np.dtype[Any], y_shape: tuple[int, ...], y_dtype: np.dtype[Any]) -> InPlace | PinnedCopies:
    """The copies of `backend`: :class:`PinnedCopies` for CuPy, else :class:`InPlace`."""
    if backend.name == "cupy":
        return PinnedCopies(backend.xp, slab_shape, slab_dtype.newbyteorder("="), y_shape, y_dtype)
    return InPlace()
