"""Row dots: the direct method's taps summed one kernel row at a time by ``numpy.correlate``.

With one input channel per group, each tap of the direct method is an elementwise
multiply-add over the whole image. NumPy correlates with kernels of up to 11 taps in its
own unrolled loop (``small_correlate``), which keeps the kernel in registers and reads the
input once. A kernel row (its taps along the last axis) over the wide padded input (see
:mod:`._taps`) is then one ``numpy.correlate(..., 'valid')`` call: a kernel of ``R`` rows
of ``K`` taps costs ``R`` calls and ``R - 1`` adds, instead of ``R * K`` multiply-adds:
a plan on 64x64 float32 with 7x7 ran 119 against 240 us by taps, 512x512 float64 with 7x7
2.9 against 7.4 ms (bench/results/direct-rows-2026-11-23.md). Rows of 2-3 taps on float32
images from 128x128 stay faster as taps; the cost model picks the form.

Longer rows go to BLAS one output sample at a time (10-30 ns each), so this form takes
rows of up to :data:`MAX_TAPS` taps only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._backend import Array, Backend
from .._problem import Problem
from .._rates import Rates
from .._scratch import scratch
from ._taps import Chunk, Layout

# numpy's small_correlate handles kernels of up to this many taps.
MAX_TAPS = 11
# Its time per output sample (ns) for 1 to 11 taps, float32 and float64 alike within
# 0.3 ns (numpy 2.4, this 2-core machine: 10**5 samples).
_NS_PER_SAMPLE = (0.5, 0.7, 1.1, 0.9, 1.1, 1.3, 1.5, 1.8, 2.0, 2.3, 3.4)
# Adds of each row's result into the sum ran at about this multiple of the stream rate
# (cache-sized chunks), as the taps' multiply-adds.
_CACHE_SPEEDUP = 6
# Weight on the loops and adds, fitted against the taps' estimate (which runs about 1.4x
# over its measured time): on 154 timings (images of 64x64 to 2048x2048, a stack of 32
# 512x512 images and 1-D signals of 10**3 to 10**6 samples; kernels of 2 to 11 taps a
# side; float32 and float64), weight 1 took rows where the taps were up to 1.73x faster
# (16 points over 1.2x), weight 2 up to 1.69x (7 points over 1.2x; the worst are 1-D
# float64 signals with 2-3 taps) (bench/results/direct-rows-2026-11-23.md).
_WEIGHT = 2.0


@dataclass(frozen=True, slots=True)
class RowKernels:
    """The kernel as rows along its last axis.

    Attributes
    ----------
    rows : ndarray
        ``(G, Og, R, K)``: row ``r`` of filter ``o`` of group ``g``, contiguous.
    starts : tuple of int
        Flat offset in the wide padded grid of each row's first tap.
    """

    rows: Array
    starts: tuple[int, ...]


def takes(problem: Problem, backend: Backend) -> bool:
    """Whether the row form applies: NumPy, float32/float64, unit stride (the wide
    layout), one input channel per group, and undilated rows of at most :data:`MAX_TAPS`."""
    p = problem
    return (
        backend.name == "numpy"
        and p.dtype.char in "fd"
        and p.unit_stride
        and p.in_per_group == 1
        and p.dilation[-1] == 1
        and p.kernel[-1] <= MAX_TAPS
    )


def prepare(w: Array, problem: Problem, lay: Layout) -> RowKernels:
    """`w` ``(G*Og, 1, *kernel)`` as rows, with where each row starts."""
    p = problem
    width = p.kernel[-1]
    rows = np.ascontiguousarray(w.reshape(p.groups, p.out_per_group, -1, width))
    return RowKernels(rows, tuple(lay.offsets[::width]))


def accumulate(padded: Array, kernels: RowKernels, lay: Layout, chunk: Chunk, backend: Backend) -> Array:
    """The sum over kernel rows for `chunk` of `padded` (as :func:`.direct.accumulate`):
    ``(Bc, G, Og, chunk_length)`` in this thread's scratch buffer, junk columns included."""
    p = lay.problem
    n = lay.chunk_length(chunk)
    reach = n + p.kernel[-1] - 1
    total = scratch("rows.sum", (chunk.b1 - chunk.b0, p.groups, p.out_per_group, n), padded.dtype, backend)
    base = chunk.r0 * lay.row_length
    for b, g, o in np.ndindex(total.shape[:3]):
        line, target = padded[chunk.b0 + b, g, 0], total[b, g, o]
        for r, start in enumerate(kernels.starts):
            row = np.correlate(line[base + start : base + start + reach], kernels.rows[g, o, r], "valid")
            if r:
                target += row
            else:
                target[...] = row
    return total


def seconds(problem: Problem, samples: int, lines: int, threads: int, rates: Rates) -> float:
    """Estimated time of the rows' work for `samples` flat output samples (all batch items
    and groups) on `threads` threads, each batch item of each chunk (`lines` in all) one
    run of calls: each row's loop per output sample and filter, the adds of its result,
    and two calls per row, filter, group and line."""
    p = problem
    n_rows = math.prod(p.kernel[:-1])
    products = samples * p.out_per_group * n_rows
    dots = products * _NS_PER_SAMPLE[p.kernel[-1] - 1] * 1e-9
    adds = products * 3 * p.dtype.itemsize / (_CACHE_SPEEDUP * rates.stream_bytes)
    calls = 2 * n_rows * p.out_per_group * p.groups * lines
    return _WEIGHT * (dots + adds) / threads + calls * rates.call_seconds
