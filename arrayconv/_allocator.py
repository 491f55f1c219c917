"""Freed memory kept for reuse: glibc's malloc thresholds, set once before the first CPU call.

glibc gives a freed block back to the operating system when it was mapped on its own (at or
over the mmap threshold, 128 KiB at start) or when the free top of the heap outgrows the
trim threshold; the next block of that size then takes fresh pages, one page fault per
4 KiB. It raises both thresholds by itself once the program frees a mapped block, to that
block's size (at most 32 MiB) and twice it, so which calls fault depends on what the process
freed before. A call whose temporaries are a few times its largest one (FFT: the padded
input, the spectrum, the inverse's buffer and the result) can fault on all of them every
time. On the 2-core CI machine (a virtual machine where a page fault costs 2-3 us) a
512x512 float32 correlation with a 15x15 kernel by FFT took 6.5 ms per call with glibc's
defaults and 2.1 ms with the thresholds set (about 1800 and 3 faults per call,
bench/results/page-faults-2026-11-23.md); where faults are cheaper, the gain is smaller.

:func:`keep_freed_memory` sets the thresholds to where glibc's own adjustment ends: blocks
under 32 MiB come from the heap, and up to 64 MiB of free heap top is kept. It does nothing
off glibc, when the environment already sets malloc's parameters (``MALLOC_*_`` or
``GLIBC_TUNABLES``), or with ``ARRAYCONV_KEEP_FREED_MEMORY=0``.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading

OPT_OUT = "ARRAYCONV_KEEP_FREED_MEMORY"
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)
MMAP_THRESHOLD = 32 << 20  # glibc's largest dynamic mmap threshold on 64-bit
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # as glibc sets it with the mmap threshold
_ENVIRONMENT = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")

_lock = threading.Lock()
_state: str | None = None  # what keep_freed_memory did, once it has run


def keep_freed_memory() -> str:
    """Set glibc's mmap and trim thresholds once per process (see the module's docstring).

    Returns
    -------
    str
        What was done: ``'set'``, or why not.
    """
    global _state
    if _state is None:
        with _lock:
            if _state is None:
                _state = _apply()
    return _state


def _apply() -> str:
    if os.environ.get(OPT_OUT, "1") == "0":
        return f"not set ({OPT_OUT}=0)"
    if platform.libc_ver()[0] != "glibc":
        return "not set (not glibc)"
    if any(name in os.environ for name in _ENVIRONMENT) or "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return "not set (the environment sets malloc's parameters)"
    mallopt = ctypes.CDLL(None).mallopt
    if mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD):
        return "set"
    return "not set (mallopt refused)"
