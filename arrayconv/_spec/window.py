"""Windows of arrays: crop, zero-extend or read around the period along some axes, and scatter onto a strided grid."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from .._runtime.backend import Array


def window(xp: ModuleType, a: Array, axes: Sequence[int], starts: Sequence[int], lengths: Sequence[int]) -> Array:
    """``a[start : start + length]`` along each of `axes`, zero where that leaves `a`.

    A view when the window lies inside `a`; otherwise a new zero-filled array holding the
    overlap.

    Examples
    --------
    >>> import numpy as np
    >>> window(np, np.arange(1, 5), [0], [-2], [5])
    array([0, 0, 1, 2, 3])
    """
    inside = all(0 <= s and s + n <= a.shape[ax] for ax, s, n in zip(axes, starts, lengths))
    src = [slice(None)] * a.ndim
    if inside:
        for ax, s, n in zip(axes, starts, lengths):
            src[ax] = slice(s, s + n)
        return a[tuple(src)]
    shape, dst = list(a.shape), [slice(None)] * a.ndim
    for ax, s, n in zip(axes, starts, lengths):
        shape[ax] = n
        lo, hi = max(s, 0), min(s + n, a.shape[ax])
        src[ax], dst[ax] = slice(lo, max(lo, hi)), slice(lo - s, max(lo, hi) - s)
    out = xp.zeros(tuple(shape), a.dtype)
    out[tuple(dst)] = a[tuple(src)]
    return out


def periodic_window(xp: ModuleType, a: Array, axis: int, start: int, length: int) -> Array:
    """``a[start : start + length]`` along `axis`, read around `a`'s period where it leaves `a`.

    A view when the window lies inside `a`; otherwise a new array.

    Examples
    --------
    >>> import numpy as np
    >>> periodic_window(np, np.arange(1, 5), 0, -2, 7)
    array([3, 4, 1, 2, 3, 4, 1])
    """
    if 0 <= start <= a.shape[axis] - length:
        return window(xp, a, [axis], [start], [length])
    return xp.take(a, (xp.arange(length) + start) % a.shape[axis], axis=axis)


def scatter_strided(
    xp: ModuleType,
    a: Array, axes: Sequence[int], lengths: Sequence[int], offsets: Sequence[int], strides: Sequence[int]
) -> Array:
    """Zeros of `lengths` along `axes` holding ``a[i]`` at ``offset + i * stride``.

    Samples that land outside ``[0, length)`` are dropped. This is the zero insertion of a
    transposed strided convolution, with its padding and cropping in the same copy.

    Examples
    --------
    >>> import numpy as np
    >>> scatter_strided(np, np.array([1, 2, 3]), [0], [6], [-1], [2])
    array([0, 2, 0, 3, 0, 0])
    """
    shape, src, dst = list(a.shape), [slice(None)] * a.ndim, [slice(None)] * a.ndim
    for ax, length, offset, stride in zip(axes, lengths, offsets, strides):
        first = max(0, -(offset // stride)) if offset < 0 else 0
        last = min(a.shape[ax], (length - 1 - offset) // stride + 1) if length > offset else 0
        last = max(first, last)
        shape[ax] = length
        src[ax] = slice(first, last)
        dst[ax] = slice(offset + first * stride, offset + first * stride + (last - first) * stride, stride)
    out = xp.zeros(tuple(shape), a.dtype)
    out[tuple(dst)] = a[tuple(src)]
    return out

