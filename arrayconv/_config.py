"""Thread-local settings: the memory budget and the number of worker threads."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

from ._machine import usable_cores

_FALLBACK_AVAILABLE = 4 << 30
_DEFAULT_FRACTION = 0.25
_QUANTUM = 64 << 20
_REFRESH_SECONDS = 1.0  # free memory is read at most this often
_ram_seen: tuple[float, int] = (-_REFRESH_SECONDS, 0)  # (when, bytes available)
_gpu_free: dict[int, tuple[float, int]] = {}
_gpu_total: dict[int, int] = {}
_CORES = usable_cores()  # read once: asking costs about 10 us per call on Linux


def _available_memory() -> int:
    """Bytes of RAM available (Linux/macOS via sysconf, read at most once a second: a
    call asks several times), or 4 GiB if unknown."""
    global _ram_seen
    now = time.monotonic()
    seen = _ram_seen
    if now - seen[0] > _REFRESH_SECONDS:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            available = _FALLBACK_AVAILABLE
        seen = _ram_seen = (now, available)
    return seen[1]


def _ram_total() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62  # unknown: let the allocator decide


_RAM_TOTAL = _ram_total()


class _Settings(threading.local):
    def __init__(self) -> None:
        self.memory_limit: int | None = None
        self.workers: int | None = None


_settings = _Settings()


def memory_limit(device: str = "cpu") -> int:
    """Bytes that the temporaries of one call may use.

    The value set with :func:`config`, else a quarter of the memory available on
    `device` ('cpu': RAM; 'gpu': the current CUDA device's free memory plus what CuPy's
    pool holds free; read at most once a second), rounded down to 64 MiB so that it stays
    steady between calls.
    """
    if _settings.memory_limit is not None:
        return _settings.memory_limit
    available = _available_gpu_memory() if device == "gpu" else _available_memory()
    return max(_QUANTUM, int(available * _DEFAULT_FRACTION) // _QUANTUM * _QUANTUM)


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


def _available_gpu_memory() -> int:
    """Free device memory plus CuPy's pooled free blocks, read at most once a second (the
    driver query costs more than a small GPU call)."""
    import cupy

    now = time.monotonic()
    device = cupy.cuda.runtime.getDevice()
    seen = _gpu_free.get(device)
    if seen is None or now - seen[0] > _REFRESH_SECONDS:
        free, _ = cupy.cuda.runtime.memGetInfo()
        seen = _gpu_free[device] = (now, free + cupy.get_default_memory_pool().free_bytes())
    return seen[1]


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
        Default: a quarter of the RAM available (read at most once a second).
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
