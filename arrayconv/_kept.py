"""Plans of plain calls, kept for a later call with the same small kernel.

Each plain call builds a plan and calls it once: the checks, the choice and the kernel in its
method's form (for the FFT, its spectrum) cost 25-55% of a call on a single image of
64x64-512x512. A plain call on NumPy arrays of float32, float64, complex64 or complex128 whose
kernel (and bias) take at most :data:`KERNEL_BYTES` keeps its plan, keyed by the kernel's
bytes, the shapes, dtypes and options, the memory budget, workers and rates: a later call with
the same kernel values calls that plan (bench/results/kept-plans-2026-11-24.md). The plan is
made from a copy of the kernel, so that a kernel changed in place is a new kernel and the kept
plan keeps the old values. The kept plan keeps the method chosen for one call, so every call
gives the same bits (an explicit plan chooses for repeated calls, its kernel form made once,
and may pick another method). Integer inputs (the plan's overflow guard reads the input's values),
measured calls, larger kernels and CuPy arrays make their plan every time.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from . import _config
from ._backend import NUMPY
from ._cache import LRUCache
from ._rates import rates_for

KERNEL_BYTES = 16 << 10
_plans = LRUCache("plain_call_plans", maxsize=64, maxbytes=64 << 20)


def plan_key(op: str, x: Any, kernels: tuple[Any, ...], options: tuple[Hashable, ...], measure: object) -> tuple[Hashable, ...] | None:
    """The key of the kept plan of a plain call of `op` on `x` with `kernels` (the kernel,
    and for conv its bias or None) and `options`; None for a call that keeps none."""
    given = [a for a in kernels if a is not None]
    if measure or type(x) is not np.ndarray or any(type(a) is not np.ndarray for a in given):
        return None
    if sum(a.nbytes for a in given) > KERNEL_BYTES:
        return None
    if not all(a.dtype.char in "fdFD" and a.dtype.isnative and a.size for a in (x, *given)):
        return None
    try:
        hash(options)  # axes, stride or padding given as a list
    except TypeError:
        return None
    values = tuple(None if a is None else (a.shape, a.dtype, a.tobytes()) for a in kernels)
    return (op, x.shape, x.dtype, values, options, _config.budget("numpy"), _config.workers(), rates_for(NUMPY))


def kept(key: tuple[Hashable, ...] | None) -> Any:
    """The plan kept under `key`, or None."""
    return None if key is None else _plans.get(key)


def keep(key: tuple[Hashable, ...] | None, plan: Any) -> None:
    """Keep `plan` under `key` (nothing when `key` is None)."""
    if key is not None:
        _plans.put(key, plan)
