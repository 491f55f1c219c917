"""Kernels scientists filter with: Gaussians, boxes and disks, N-D, in the dtype asked for.

The Gaussian is exactly the kernel of :func:`scipy.ndimage.gaussian_filter`: along each axis
the 1-D Gaussian of that axis's sigma, ``radius = int(truncate * sigma + 0.5)`` taps on
each side of the centre, normalised to sum 1; the N-D kernel is their outer product, so
``arrayconv.correlate(image, gaussian(2.0, ndim=2), 'same', boundary='symmetric')`` is
``scipy.ndimage.gaussian_filter(image, 2.0)`` (whose default mode 'reflect' is arrayconv's
'symmetric'). Outer products run as one pass per axis on every backend.

Examples
--------
>>> from arrayconv import kernels
>>> kernels.gaussian(1.0, truncate=2.0).round(4)
array([0.0545, 0.2442, 0.4026, 0.2442, 0.0545])
>>> kernels.gaussian((2.0, 0.5), truncate=3.0).shape
(13, 5)
>>> kernels.box(3, ndim=2, dtype="float32").sum()
np.float32(1.0)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["box", "disk", "gaussian"]


def gaussian(
    sigma: float | Sequence[float],
    *,
    ndim: int | None = None,
    truncate: float = 4.0,
    radius: int | Sequence[int] | None = None,
    dtype: Any = np.float64,
) -> np.ndarray:
    """A Gaussian kernel, as :func:`scipy.ndimage.gaussian_filter` makes it.

    Parameters
    ----------
    sigma : float or sequence of float
        Standard deviation along each axis, in samples; one value for every axis.
    ndim : int, optional
        Number of axes, where `sigma` is one value. Default: the length of `sigma`, or 1.
    truncate : float
        Half-width in sigmas: ``radius = int(truncate * sigma + 0.5)`` (SciPy's rule).
    radius : int or sequence of int, optional
        Half-width in samples, instead of `truncate`.
    dtype : dtype
        Float dtype of the kernel.

    Returns
    -------
    ndarray
        The outer product of the axes' 1-D Gaussians, each summing to 1, of length
        ``2 * radius + 1`` along each axis.
    """
    sigmas = _per_axis("sigma", sigma, ndim, float)
    if not all(0 < s < math.inf for s in sigmas):
        msg = f"`sigma` must be positive and finite, got {sigma!r}"
        raise ValueError(msg)
    if radius is None:
        if not 0 < truncate < math.inf:
            msg = f"`truncate` must be positive and finite, got {truncate!r}"
            raise ValueError(msg)
        radii = [int(truncate * s + 0.5) for s in sigmas]
    else:
        radii = _per_axis("radius", radius, len(sigmas), int)
        if any(r < 0 for r in radii):
            msg = f"`radius` must be 0 or more, got {radius!r}"
            raise ValueError(msg)
    lines = []
    for s, r in zip(sigmas, radii):
        t = np.arange(-r, r + 1, dtype=np.float64)
        g = np.exp(-0.5 * (t / s) ** 2)
        lines.append(g / g.sum())
    return _outer(lines, dtype)


def box(size: int | Sequence[int], *, ndim: int | None = None, dtype: Any = np.float64) -> np.ndarray:
    """A box (moving-average) kernel: `size` samples along each axis (one value for every
    axis), each ``1 / size``; the kernel of :func:`scipy.ndimage.uniform_filter`."""
    sizes = _per_axis("size", size, ndim, int)
    if any(n < 1 for n in sizes):
        msg = f"`size` must be 1 or more, got {size!r}"
        raise ValueError(msg)
    return _outer([np.full(n, 1.0 / n) for n in sizes], dtype)


def disk(radius: float, *, dtype: Any = np.float64) -> np.ndarray:
    """A flat 2-D disk of `radius` samples, summing to 1: the samples within `radius` of the
    centre (of ``2 * floor(radius) + 1`` on a side). Not an outer product: it runs as a
    full 2-D kernel."""
    if not 0 <= radius < math.inf:
        msg = f"`radius` must be 0 or more and finite, got {radius!r}"
        raise ValueError(msg)
    r = int(radius)
    y, x = np.mgrid[-r : r + 1, -r : r + 1]
    inside = (x * x + y * y <= radius * radius).astype(np.float64)
    return (inside / inside.sum()).astype(_float_dtype(dtype))


def _per_axis(name: str, value: Any, ndim: int | None, kind: type) -> list[Any]:
    """`value` as one number per axis: a sequence as it is (of `ndim` values, if given), a
    number repeated `ndim` times (default 1)."""
    if np.ndim(value) == 0:
        if ndim is not None and ndim < 1:
            msg = f"`ndim` must be 1 or more, got {ndim!r}"
            raise ValueError(msg)
        return [kind(value)] * (ndim or 1)
    values = [kind(v) for v in value]
    if not values or (ndim is not None and len(values) != ndim):
        msg = f"`{name}` has {len(values)} values, for ndim={ndim}" if values else f"`{name}` is empty"
        raise ValueError(msg)
    return values


def _outer(lines: list[np.ndarray], dtype: Any) -> np.ndarray:
    return functools.reduce(np.multiply.outer, lines).astype(_float_dtype(dtype))


def _float_dtype(dtype: Any) -> np.dtype[Any]:
    found = np.dtype(dtype)
    if found.kind != "f":
        msg = f"`dtype` must be a float dtype, got {found}"
        raise TypeError(msg)
    return found
