"""Direct's taps or rows on one map in one chunk, with the per-call work cut to its arrays.

A correlation of one image with one kernel (one batch item, group, input and output
channel) whose output fits in one of direct's chunks runs as that chunk would run: the
same wide padded layout (:mod:`._taps`), the same taps or rows summed in the same order,
so the same bits. It skips what many chunks, filters and threads need (chunk lists, 4-D
views, a job per chunk, the store of each chunk), with everything the shapes decide
computed once (:func:`one_map`): on a 64x64 image with a 3x3 kernel that is a third of
the call. A plain call whose plan runs so skips the plan too (:meth:`arrayconv._plan.plan.Plan.unplanned`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._runtime.backend import NUMPY, Array
from .._runtime.cache import LRUCache
from .._runtime.scratch import scratch
from .._spec.boundary import Index, halo_copies, past_one_copy
from .._spec.problem import Problem
from . import _rows
from ._taps import assign_rows, flat_length, layout, zeros

_maps = LRUCache("one_maps", maxsize=256)


@dataclass(frozen=True, slots=True)
class OneMap:
    """What the shapes of a one-map problem decide, for :meth:`run`.

    Attributes
    ----------
    spatial, padded : tuple of int
        The input's shape and its padded grid's.
    interior : tuple of slice
        Where the input sits in the padded grid.
    halo : tuple of (tuple of slice, tuple of slice)
        A circular problem's halo copies, in order: ``grid[edge] = grid[source]``, each
        edge from the grid one period away (:func:`arrayconv._spec.boundary.extend`'s 'wrap'
        slices); none for zero padding.
    flat_length : int
        Samples of the padded buffer: the grid and one zero row after it.
    wide : tuple of int
        The wide output: output rows, each a padded row (junk columns included).
    keep : tuple of slice
        The output within the wide one.
    offsets : tuple of int
        Flat offset of each kernel tap in the padded grid, C order.
    width : int
        Taps per kernel row summed by ``numpy.correlate`` (the row form), or 0 (taps).
    """

    spatial: tuple[int, ...]
    padded: tuple[int, ...]
    interior: tuple[slice, ...]
    halo: tuple[tuple[Index, Index | None], ...]  # 'wrap' copies: a source always
    flat_length: int
    wide: tuple[int, ...]
    keep: tuple[slice, ...]
    offsets: tuple[int, ...]
    width: int

    def run(self, x: np.ndarray, kernel: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """`x` (its samples in the order of the problem's input) correlated with `kernel`
        (its taps in C order, contiguous or not), into `out` when given (the problem's
        output shape, any shape with its samples in order); a new array otherwise."""
        dtype = x.dtype
        flat = zeros((self.flat_length,), dtype, NUMPY)
        grid = flat[: math.prod(self.padded)].reshape(self.padded)
        grid[self.interior] = x.reshape(self.spatial)
        for edge, source in self.halo:
            grid[edge] = grid[source]
        length = math.prod(self.wide)
        total = scratch("direct.sum", (length,), dtype, NUMPY)
        if self.width:
            _rows.sum_rows(flat, kernel.reshape(-1, self.width), self.offsets[:: self.width], 0, total)
        else:
            product = scratch("direct.product", (length,), dtype, NUMPY)
            sum_taps(flat, kernel.reshape(-1), self.offsets, 0, total, product, np)
        result = total.reshape(self.wide)[self.keep]
        if out is None:
            return result.copy()
        assign_rows(out.reshape(result.shape), result)
        return out


@dataclass(frozen=True, slots=True)
class MapKernel:
    """Direct's kernel for a one-map problem: its :class:`OneMap` and the kernel's taps in
    C order, contiguous (as rows of ``runner.width`` taps in the row form)."""

    runner: OneMap
    weights: np.ndarray


def one_map(problem: Problem, rows: bool, chunk_bytes: int, bytes_per_sample: int) -> OneMap | None:
    """The :class:`OneMap` of `problem` summed by taps or by `rows`, when it is one map (on
    the CPU: float32 or float64, unit stride, circular only where no halo is longer than its
    axis) whose output fits one chunk of `chunk_bytes` at `bytes_per_sample`; else None."""
    p = problem
    single = p.batch * p.groups * p.in_per_group * p.out_per_group == 1
    if not single or not p.unit_stride or p.dtype.char not in "fd" or _past_one_period(p):
        return None
    lay = layout(p)
    if len(lay.chunks(bytes_per_sample, chunk_bytes)) > 1:
        return None
    return _maps.get_or_make((p, rows), lambda: _one_map(p, rows))


def _past_one_period(problem: Problem) -> bool:
    """Whether `problem` is circular with a halo longer than its axis (a kernel larger than
    the image), which slices of one period cannot fill."""
    p = problem
    return p.circular and any(past_one_copy(n, (lo, hi), "wrap") for n, lo, hi in zip(p.spatial, p.pad_lo, p.pad_hi))


def _one_map(problem: Problem, rows: bool) -> OneMap:
    p, lay = problem, layout(problem)
    pads = tuple(zip(p.pad_lo, p.pad_hi))
    return OneMap(
        spatial=p.spatial,
        padded=p.padded,
        interior=tuple(slice(lo, lo + n) for lo, n in zip(p.pad_lo, p.spatial)),
        halo=tuple(halo_copies(p.spatial, tuple(range(len(p.spatial))), pads, "wrap")) if p.circular else (),
        flat_length=flat_length(p),
        wide=(p.out_spatial[0], *lay.row_shape),
        keep=(slice(None), *(slice(0, n) for n in p.out_spatial[1:])),
        offsets=tuple(lay.offsets),
        width=p.kernel[-1] if rows else 0,
    )


def sum_taps(line: Array, weights: Array, offsets: Sequence[int], start: int, total: Array, product: Array, xp: Any) -> None:
    """Into `total`: the sum over taps of ``weights[t] * line[start + offsets[t]:][:n]``
    (``n = total.size``; NumPy or CuPy), on 1-D views with scalar weights: each tap costs
    two array calls and a slice, about 0.9 us less than in four dimensions (a 64x64
    float32 image with a 3x3 kernel: 13 us against 19)."""
    length = total.shape[0]
    for t, (offset, weight) in enumerate(zip(offsets, weights)):
        x_tap = line[start + offset : start + offset + length]
        if t:
            xp.multiply(x_tap, weight, out=product)
            total += product
        else:
            xp.multiply(x_tap, weight, out=total)
