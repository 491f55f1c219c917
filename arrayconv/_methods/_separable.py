"""Separable kernels: direct's two passes for a 2-D kernel that is an outer product.

A Gaussian, a box or a Sobel kernel is the outer product ``a[:, None] * b[None, :]`` of a
column ``a`` (``k0`` taps) and a row ``b`` (``k1`` taps). Its correlation is the row
filter ``b`` along the last axis, then the column filter ``a`` along the first:
``k0 + k1`` multiply-adds per output instead of ``k0 * k1``. The row pass is direct's own
run of the row filter (its fastest form: rows, banded or taps), over the rows of the
padding too. The column pass is a GEMM per block of :data:`BLOCK_ROWS` output rows with a
banded matrix of ``a``, ``(BLOCK_ROWS, BLOCK_ROWS + k0 - 1)``, over the block's rows of
the row pass: the zeros outside the band cost flops, at the GEMM's rate.
A 2048x2048 float32 image with a 7x7 Gaussian ran in 8.7 ms against 12.9 by overlap-save,
1024x1024 float64 with 9x9 in 4.9 against 7.0 (bench/results/separable-2026-11-25.md).

:func:`rank_one` finds the factors from the kernel's values; correlate marks such a
problem (``Problem.rank_one``), and direct's cost model picks this form where it is
estimated faster than the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .._backend import Array, Backend
from .._problem import Problem
from .._rates import Rates
from .._scratch import scratch
from . import Cost, direct
from ._taps import REUSED_BYTES

# Output rows per block of the column pass: 16 ran 1.1-1.5x slower than 32 on 256x256 to
# 4096x4096 float32 images with 5x5 to 11x11 kernels, 64 about as fast as 32.
BLOCK_ROWS = 32
# Largest difference between the kernel and the outer product of its factors, in units
# of the dtype's epsilon times its largest tap: factors of a kernel made as an outer
# product and rounded to the dtype reproduce it to a few units.
_TOLERANCE_EPS = 8
# Share of the GEMM rate that the column pass's small GEMMs reach (32 x 36 blocks,
# measured about 0.5 of a large GEMM's).
_GEMM_SHARE = 0.5
# Weights on the row pass's estimate (direct's, in the cost model's units) and on the
# column pass's, and the two passes' fixed cost in array calls. Fitted on 284 random
# images (32 to 4096 a side, up to 2**23 samples) with outer-product kernels of 2-31 taps
# a side, every mode, float32 and float64, the form and 'auto' without it timed as plans:
# the faster (or one within 1.2x) on 97.2% in sample (worst 1.79; unweighted: 87.0%, worst
# 2.84) and on 99.3% of 146 more held out (worst 1.22) (bench/results/separable-2026-11-25.md).
_ROWS_WEIGHT, _COLUMN_WEIGHT, _FIXED_CALLS = 1.8, 1.5, 4


@dataclass(frozen=True, slots=True)
class SeparableTaps:
    """The kernel as its row pass (direct's kernel for :func:`row_problem`) and the banded
    matrix of its column ``(BLOCK_ROWS, BLOCK_ROWS + k0 - 1)``."""

    rows: object
    band: Array


def eligible(problem: Problem, backend: Backend) -> bool:
    """Whether `problem`'s kernel, if an outer product, could run in two passes: NumPy,
    one real float 2-D kernel of at least two taps along each axis on one input channel,
    unit stride, no dilation."""
    p = problem
    one_kernel = p.groups * p.in_per_group * p.out_per_group == 1
    shape = len(p.kernel) == 2 and min(p.kernel) > 1 and p.unit_stride and all(d == 1 for d in p.dilation)
    return backend.name == "numpy" and one_kernel and shape and p.dtype.char in "fd"


def factors(w: Array, problem: Problem) -> tuple[np.ndarray, np.ndarray] | None:
    """``(a, b)`` with ``w == a[:, None] * b[None, :]`` to :data:`_TOLERANCE_EPS` units of
    the dtype's epsilon times ``max|w|``, in float64: ``b`` the row through the largest
    tap, ``a`` the column through it over that tap (exact for a box or a Sobel kernel).
    None for any other kernel (or all zeros)."""
    taps = np.asarray(w, dtype=np.float64).reshape(problem.kernel)
    i, j = np.unravel_index(np.argmax(np.abs(taps)), taps.shape)
    peak = taps[i, j]
    if peak == 0 or not np.isfinite(taps).all():
        return None
    a, b = taps[:, j] / peak, taps[i, :]
    if np.abs(np.outer(a, b) - taps).max() > _TOLERANCE_EPS * np.finfo(problem.dtype).eps * abs(peak):
        return None
    return a, b


def rank_one(w: Array, problem: Problem, backend: Backend) -> bool:
    """Whether `problem` with the kernel `w` (in its layout) may run in two passes."""
    return eligible(problem, backend) and factors(w, problem) is not None


def takes(problem: Problem, backend: Backend) -> bool:
    """Whether the two passes apply: a problem marked rank one, and :func:`eligible`."""
    return problem.rank_one and eligible(problem, backend)


def row_problem(problem: Problem) -> Problem:
    """The row pass: the row filter over the padded rows (kernel ``(1, k1)``, the same
    padding), whose output has the padded input's rows and the output's columns."""
    return replace(problem, kernel=(1, problem.kernel[1]), rank_one=False)


def prepare(w: Array, problem: Problem, backend: Backend) -> SeparableTaps:
    """The row pass's kernel and the banded matrix of the column."""
    found = factors(w, problem)
    if found is None:
        msg = "the kernel is not an outer product of two 1-D kernels"
        raise ValueError(msg)
    a, b = (backend.xp.asarray(f.astype(problem.dtype)) for f in found)
    k0 = problem.kernel[0]
    band = backend.xp.zeros((BLOCK_ROWS, BLOCK_ROWS + k0 - 1), problem.dtype)
    for r in range(BLOCK_ROWS):
        band[r, r : r + k0] = a
    rows = direct.prepare(b.reshape(1, 1, 1, -1), row_problem(problem), backend)
    return SeparableTaps(rows, band)


def run(x: Array, kernel: SeparableTaps, problem: Problem, backend: Backend, out: Array) -> None:
    """Fill `out` ``(B, 1, 1, *out_spatial)``: the row pass (into this thread's scratch
    buffer up to :data:`._taps.REUSED_BYTES`, as the padded input), then one batched GEMM
    over every whole block of output rows of every batch item, and one for the rows left."""
    p, xp, rp = problem, backend.xp, row_problem(problem)
    size = math.prod(rp.y_shape) * p.dtype.itemsize
    reused = scratch("separable.rows", rp.y_shape, p.dtype, backend) if size <= REUSED_BYTES else None
    rowed = direct.run(x, kernel.rows, rp, backend, reused)  # (B, 1, padded rows, out columns)
    rowed = rowed.reshape(p.batch, p.padded[0], p.out_spatial[1])
    target = out.reshape(p.batch, *p.out_spatial)
    rows, k0 = p.out_spatial[0], p.kernel[0]
    whole = rows // BLOCK_ROWS
    sb, sr, sc = rowed.strides
    if whole:
        blocks = xp.lib.stride_tricks.as_strided(rowed, (p.batch, whole, BLOCK_ROWS + k0 - 1, rowed.shape[2]), (sb, BLOCK_ROWS * sr, sr, sc))
        xp.matmul(kernel.band, blocks, out=target[:, : whole * BLOCK_ROWS].reshape(p.batch, whole, BLOCK_ROWS, -1))
    left = rows - whole * BLOCK_ROWS
    if left:
        xp.matmul(kernel.band[:left, : left + k0 - 1], rowed[:, whole * BLOCK_ROWS :], out=target[:, whole * BLOCK_ROWS :])


def cost(problem: Problem, backend: Backend, rates: Rates) -> Cost:
    """The row pass's cost (direct's), and the column pass: its GEMMs' flops at
    :data:`_GEMM_SHARE` of the GEMM rate, and the row pass's result read and the output
    written at the stream rate; weighted, with a fixed cost (:data:`_ROWS_WEIGHT`)."""
    p = problem
    rows = direct.cost(row_problem(p), backend, rates)
    outputs = p.batch * math.prod(p.out_spatial)
    flops = 2 * outputs * (BLOCK_ROWS + p.kernel[0] - 1)
    rowed_bytes = p.batch * p.padded[0] * p.out_spatial[1] * p.dtype.itemsize
    column = flops / (_GEMM_SHARE * rates.gemm_rate(p.dtype, backend.name)) + (rowed_bytes + outputs * p.dtype.itemsize) / rates.stream_bytes
    seconds = _ROWS_WEIGHT * rows.seconds + _COLUMN_WEIGHT * column + _FIXED_CALLS * rates.call_seconds
    return Cost(seconds, rows.temp_bytes + rowed_bytes)
