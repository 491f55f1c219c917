"""Freed memory kept for reuse: glibc's malloc thresholds, set only when the user asks.

glibc gives a freed block back to the operating system when it was mapped on its own (at or
over the mmap threshold, 128 KiB at start) or when the free top of the heap outgrows the
trim threshold; the next block of that size then takes fresh pages, one page fault per
4 KiB. A call whose temporaries are a few times its largest one (an FFT: the padded input,
the spectrum, the inverse's buffer and the result) can fault on all of them every time;
where a page fault is dear (a virtual machine) that can triple the time of mid-size calls
(``python -m bench.allocator`` measures it).

:func:`keep_freed_memory` sets the thresholds to where glibc's own adjustment ends: blocks
under 32 MiB come from the heap, and up to 64 MiB of free heap top is kept. The setting is
the whole process's, so arrayconv makes it only when asked: by calling the function, or
with ``ARRAYCONV_KEEP_FREED_MEMORY=1`` in the environment (then at the first CPU call). The
command line sets it, as it owns its process. It does nothing off glibc, or when the
environment already sets malloc's parameters (``MALLOC_*_`` or ``GLIBC_TUNABLES``).
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading

OPT_IN = "ARRAYCONV_KEEP_FREED_MEMORY"
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)
MMAP_THRESHOLD = 32 << 20  # glibc's largest dynamic mmap threshold on 64-bit
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # as glibc sets it with the mmap threshold
_ENVIRONMENT = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")

_lock = threading.Lock()
_state: str | None = None  # what keep_freed_memory did, once it has run


def keep_freed_memory() -> str:
    """Keep freed memory for reuse: set glibc's mmap and trim thresholds for this process.

    Repeated calls on mid-size arrays then reuse their temporaries' pages instead of
    faulting on fresh ones each time; the process keeps up to 64 MiB of freed memory that
    it would otherwise hand back. The setting is process-wide and lasts for the process,
    so arrayconv never makes it unless asked: call this once, or set
    ``ARRAYCONV_KEEP_FREED_MEMORY=1`` (the first CPU call then calls it).

    Returns
    -------
    str
        What was done: ``'set'``, or why not (not glibc; the environment sets malloc's
        parameters itself).
    """
    global _state
    if _state is None:
        with _lock:
            if _state is None:
                _state = _apply()
    return _state


def keep_if_asked() -> None:
    """:func:`keep_freed_memory`, where the environment opts in (``ARRAYCONV_KEEP_FREED_MEMORY=1``)."""
    if _state is None and os.environ.get(OPT_IN) == "1":
        keep_freed_memory()


def state() -> str:
    """What :func:`keep_freed_memory` did, without doing it: for ``arrayconv info``."""
    return _state or f"not set (opt in: arrayconv.keep_freed_memory() or {OPT_IN}=1)"


def _apply() -> str:
    if platform.libc_ver()[0] != "glibc":
        return "not set (not glibc)"
    if any(name in os.environ for name in _ENVIRONMENT) or "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return "not set (the environment sets malloc's parameters)"
    mallopt = ctypes.CDLL(None).mallopt
    if mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD):
        return "set"
    return "not set (mallopt refused)"
