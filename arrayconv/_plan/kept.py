"""Plans of plain calls, kept for a later call with the same small kernel.

Each plain call builds a plan and calls it once: the checks, the choice and the kernel in its
method's form (for the FFT, its spectrum) cost 25-55% of a call on a single image of
64x64-512x512. A plain call on NumPy arrays of float32, float64, complex64 or complex128 whose
kernel takes at most :data:`KERNEL_BYTES` keeps its plan, keyed by the kernel's (and bias's)
values, the shapes, dtypes and options, the memory budget, workers and rates: a later call
with the same kernel values calls that plan. The plan is made from a copy of the kernel, so that a kernel changed in place is a new kernel
and the kept plan keeps the old values. Such a call chooses its method for the calls to come
(:data:`~arrayconv._choose.choice.KEPT_WITHIN`, :data:`~arrayconv._choose.choice.KEPT_EXTRA`): the
fastest per later call among the methods whose one call is estimated near the fastest; the
choice depends on the problem alone, so every call gives the same bits. A plan that reads a
kernel over a MiB as it is (nothing prepared) is not kept: its later calls make their plan, which
picks the same method, instead of comparing the kernel. Integer inputs (the plan's overflow guard reads the
input's values), measured calls, larger kernels and CuPy arrays make their plan every time.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._runtime import config as _config
from .._runtime.backend import NUMPY
from .._runtime.cache import LRUCache
from .._runtime.rates import rates_for
from .plan import Plan

# Kept plans save their plan and kernel form on later calls (interleaved, batch 1: 3x3 128 ->
# 128 on 28x28, 576 KiB, 0.76x the time a call; 3x3 256 -> 256 on 14x14, 2.3 MiB, 0.87x;
# 3x3 512 -> 512 on 7x7, 9 MiB, 0.76x); the cache's byte bound holds a few of the largest.
KERNEL_BYTES = 16 << 20
# Kernels of up to this many bytes are keyed by their bytes (hashing them costs about 0.3 us
# a KiB); larger ones by some of their 32-bit words, evenly spaced, and then compared with
# the kept copy (about 0.05 us a KiB from cache), so that only equal kernels share a plan.
_BYTES_KEYED = 64 << 10
_SAMPLED_WORDS = 64
_plans = LRUCache("plain_call_plans", maxsize=64, maxbytes=64 << 20)
# Calls (keyed but for their kernel's values) whose plan used a kernel over _AS_GIVEN_BYTES as it
# is, nothing prepared (im2col's columns on the CPU): keeping the plan would save less than the
# compare of the kernel each call costs (3x3 256 -> 512 on 14x14, 4.5 MiB: 2.15 -> 1.57 ms); under
# about a MiB the compare costs less than making the plan again.
_AS_GIVEN_BYTES = 1 << 20
_forms_as_given = LRUCache("plain_call_kernels_as_given", maxsize=64)


@dataclass(frozen=True, slots=True)
class _Kept:
    """A kept plan and the kernels (and bias) it was made from, copies of the caller's."""

    plan: Plan
    kernels: tuple[Any, ...]


def plain_plan(
    op: str,
    x: Any,
    kernels: tuple[Any, ...],
    options: tuple[Hashable, ...],
    measure: object,
    make: Callable[..., Plan],
    known_settings: tuple[Hashable, ...] | None = None,
) -> Plan:
    """The plan of a plain call of `op` on `x` with `kernels` (the kernel, and for conv its
    bias or None) and `options`: the one kept from an earlier call with the same kernel
    values, else ``make(*kernels, calls=...)``. A call that keeps its plan hands `make`
    copies of the kernels (a kept plan must not read the caller's arrays, which may change)
    and ``calls='kept'``; any other, the kernels themselves and ``calls='one'``.
    `known_settings`, when the caller has just asked :func:`settings`, saves asking again
    (about 1 us)."""
    key = _plan_key(op, x, kernels, options, measure, known_settings)
    if key is None:
        return make(*kernels, calls="one")
    large = kernels[0].nbytes > _AS_GIVEN_BYTES
    if large and _forms_as_given.get(_shapes_key(key)) is not None:
        return make(*kernels, calls="one")  # the same pick: its one call is its later calls
    kept = _plans.get(key)
    if kept is not None and all(a is None or a.nbytes <= _BYTES_KEYED or np.array_equal(_words(a), _words(b)) for a, b in zip(kernels, kept.kernels)):
        return kept.plan
    copies = tuple(None if a is None else a.copy() for a in kernels)
    plan = make(*copies, calls="kept")
    if large and plan.uses_kernel_as_given(copies[0]):
        _forms_as_given.put(_shapes_key(key), True)
    else:
        _plans.put(key, _Kept(plan, copies))
    return plan


def _shapes_key(key: tuple[Hashable, ...]) -> tuple[Hashable, ...]:
    """A kept plan's `key` without the kernels' values: what :data:`_forms_as_given` holds."""
    values: Any = key[3]
    return (*key[:3], tuple(None if v is None else v[:2] for v in values), *key[4:])


def _plan_key(op: str, x: Any, kernels: tuple[Any, ...], options: tuple[Hashable, ...], measure: object, known_settings: tuple[Hashable, ...] | None) -> tuple[Hashable, ...] | None:
    """The key of the kept plan of a plain call; None for a call that keeps none. Written
    without generators, as every plain call asks (2.0 us against 2.6, timed alone)."""
    kernel = kernels[0]
    if measure or type(x) is not np.ndarray:
        return None
    dtypes, sizes = [x.dtype], [x.size]
    for a in kernels:
        if a is not None:
            if type(a) is not np.ndarray:
                return None
            dtypes.append(a.dtype)
            sizes.append(a.size)
    if not keeps_plan(dtypes, sizes, kernel.nbytes):
        return None
    try:
        hash(options)
    except TypeError:  # axes, stride or padding given as a list: keyed as the tuple it means
        options = _as_tuples(options)
        try:
            hash(options)
        except TypeError:
            return None
    values = tuple(None if a is None else (a.shape, a.dtype, _values_key(a)) for a in kernels)
    return (op, x.shape, x.dtype, values, options, *(settings() if known_settings is None else known_settings))


def _values_key(a: np.ndarray) -> Hashable:
    """What keys the values of kernel `a`: its bytes up to :data:`_BYTES_KEYED`, else
    :data:`_SAMPLED_WORDS` of its words (:func:`plain_plan` compares the rest)."""
    if a.nbytes <= _BYTES_KEYED:
        return a.tobytes()
    words = _words(a)
    return words[:: -(-words.size // _SAMPLED_WORDS)].tobytes()


def _words(a: np.ndarray) -> np.ndarray:
    """The bytes of `a` (of a float or complex dtype: 4 to 16 bytes a sample) as one line of
    32-bit words."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint32)


def _as_tuples(value: Any) -> Any:
    """`value` with every list in it, nested in lists or tuples, made a tuple."""
    return tuple(_as_tuples(v) for v in value) if isinstance(value, list | tuple) else value


def settings() -> tuple[Hashable, ...]:
    """What a NumPy plan's choice depends on besides its problem and options: the memory
    budget, the workers and the rates (part of every key of a plain call's cached plan)."""
    return (_config.budget("numpy"), _config.workers(), rates_for(NUMPY))


def keeps_plan(dtypes: list[np.dtype[Any]], sizes: list[int], kernel_bytes: int) -> bool:
    """Whether a plain, unmeasured call on NumPy arrays of `dtypes` and `sizes` with a
    kernel of `kernel_bytes` keeps its plan: float or complex in native byte order,
    nonempty, the kernel within :data:`KERNEL_BYTES`."""
    for dtype in dtypes:
        if dtype.char not in "fdFD" or not dtype.isnative:
            return False
    return all(sizes) and kernel_bytes <= KERNEL_BYTES
