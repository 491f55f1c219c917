"""Thread-local settings: the memory budget and the number of worker threads."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from .machine import usable_cores

_DEFAULT_FRACTION = 0.25
_QUANTUM = 64 << 20
_gpu_total: dict[int, int] = {}
_CORES = usable_cores()  # read once: asking costs about 10 us per call on Linux


def _ram_total() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 16 << 30  # unknown: a laptop's


_RAM_TOTAL = _ram_total()


class _Settings(threading.local):
    def __init__(self) -> None:
        self.memory_limit: int | None = None
        self.workers: int | None = None


_settings = _Settings()


def memory_limit(device: str = "cpu") -> int:
    """Bytes that the temporaries of one call may use.

    The value set with :func:`config`, else a quarter of the memory of `device` ('cpu':
    the machine's RAM; 'gpu': the current CUDA device's), rounded down to 64 MiB. It does
    not follow the memory free at the moment, so the same call on the same machine picks
    the same method every time; lower it with :func:`config` on a machine that is short of
    memory (on the GPU, a call that runs out anyway plans again within the memory free).
    """
    if _settings.memory_limit is not None:
        return _settings.memory_limit
    total = capacity("cupy" if device == "gpu" else "numpy")
    return max(_QUANTUM, int(total * _DEFAULT_FRACTION) // _QUANTUM * _QUANTUM)


def capacity(backend_name: str) -> int:
    """Bytes of memory where a backend runs: all RAM, or the current GPU's whole memory."""
    if backend_name == "cupy":
        import cupy

        device = cupy.cuda.runtime.getDevice()
        if device not in _gpu_total:
            _gpu_total[device] = cupy.cuda.runtime.memGetInfo()[1]
        return _gpu_total[device]
    return _RAM_TOTAL


def budget(backend_name: str) -> int:
    """:func:`memory_limit` of the device a backend runs on."""
    return memory_limit("gpu" if backend_name == "cupy" else "cpu")


@dataclass(frozen=True, slots=True)
class Settings:
    """What an estimate of a method's cost depends on besides the problem and the machine's
    rates: the worker threads and the memory budget (bytes), passed to it, never read
    inside it."""

    workers: int
    budget: int


def settings(backend_name: str) -> Settings:
    """This thread's settings for a backend: :func:`workers` and :func:`budget`."""
    return Settings(workers(), budget(backend_name))


def cores() -> int:
    """The cores this process may run on (read at import), as many as numpy's BLAS runs
    its threads on."""
    return _CORES


def workers() -> int:
    """Threads for FFTs and tiled loops: the value set with :func:`config`, else all the
    cores this process may run on."""
    return _settings.workers or _CORES


@contextlib.contextmanager
def config(*, memory_limit: int | None = None, workers: int | None = None) -> Iterator[None]:
    """Change arrayconv's settings for this thread inside a ``with`` block.

    Parameters
    ----------
    memory_limit : int, optional
        Bytes that the temporaries of one call may use; methods tile to stay under it.
        Default: a quarter of the device's memory (RAM, or the GPU's).
    workers : int, optional
        Threads for FFTs and tiled loops. Default: all the cores this process may run on
        (its CPU affinity: a batch job's allocation, ``taskset``).

    Examples
    --------
    >>> import arrayconv as ac
    >>> with ac.config(memory_limit=64 << 20, workers=1):
    ...     ac.memory_limit()
    67108864
    """
    for name, value in (("memory_limit", memory_limit), ("workers", workers)):
        if value is not None:
            check_positive_int(name, value)
    old = (_settings.memory_limit, _settings.workers)
    if memory_limit is not None:
        _settings.memory_limit = memory_limit
    if workers is not None:
        _settings.workers = workers
    try:
        yield
    finally:
        _settings.memory_limit, _settings.workers = old


def check_positive_int(name: str, value: object) -> None:
    """Refuse a setting that is not a positive int (a bool, a float or a string included)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = f"`{name}` must be a positive int, got {value!r}"
        raise ValueError(msg)
