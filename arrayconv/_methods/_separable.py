"""Separable kernels: direct's passes for a kernel that is an outer product of 1-D kernels.

A Gaussian, a box or a Sobel kernel is the outer product of one 1-D kernel per axis: for
2-D, a column ``a`` (``k0`` taps) and a row ``b`` (``k1`` taps), ``a[:, None] * b[None, :]``.
Its correlation is the row filter along the last axis, then each other axis's filter along
its axis, last to first: ``k0 + k1 (+ k2)`` multiply-adds per output instead of the
product. The row pass is direct's own run of the row filter (its fastest form: rows,
banded or taps), over the rows of the padding too. Each other pass is a GEMM per block of
:data:`BLOCK_ROWS` outputs along its axis with a banded matrix of the axis's filter,
``(BLOCK_ROWS, BLOCK_ROWS + k - 1)``, over the block's samples of the pass before: the
zeros outside the band cost flops, at the GEMM's rate.
On a 2048x2048 float32 image with a 7x7 Gaussian this is about 1.5x faster than the best
method that takes the whole kernel.

:func:`rank_one` finds the factors from the kernel's values; correlate marks such a
problem (``Problem.rank_one``), and direct's cost model picks this form where it is
estimated faster than the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._runtime.backend import Array, Backend
from .._runtime.config import Settings
from .._runtime.fitted import fitted
from .._runtime.rates import Rates, small_gemm_share
from .._runtime.scratch import reused
from .._spec.problem import Problem
from ._registry import Cost, Method

# Output rows per block of the column pass: 16 ran 1.1-1.5x slower than 32 on 256x256 to
# 4096x4096 float32 images with 5x5 to 11x11 kernels, 64 about as fast as 32.
BLOCK_ROWS = 32
# Largest difference between the kernel and the outer product of its factors, in units
# of the dtype's epsilon times its largest tap: factors of a kernel made as an outer
# product and rounded to the dtype reproduce it to a few units.
_TOLERANCE_EPS = 8
# Weights on the row pass's estimate (direct's, in the model's units) and on the other passes',
# by data (real or complex) and kernel dimensions.
_WEIGHTS = fitted("separable", "WEIGHTS")  # [rows, columns] by "real 2-D" ... "complex 3-D"
_FIXED_CALLS = fitted("calls", "DIRECT_FORM")


@dataclass(frozen=True, slots=True)
class SeparableTaps:
    """The kernel as its row pass (direct's kernel for :func:`row_problem`) and the banded
    matrix ``(BLOCK_ROWS, BLOCK_ROWS + k - 1)`` of each other axis's filter, first axis
    first."""

    rows: object
    bands: tuple[Array, ...]


def eligible(problem: Problem, backend: Backend) -> bool:
    """Whether `problem`'s kernel, if an outer product, could run in passes: NumPy, one
    float or complex 2-D or 3-D kernel of at least two taps along two axes or more, or a
    :func:`column`, on one input channel, unit stride, no dilation."""
    p = problem
    one_kernel = p.groups * p.in_per_group * p.out_per_group == 1
    taps = len(p.kernel) in (2, 3) and (sum(k > 1 for k in p.kernel) > 1 or column(p))
    shape = taps and p.unit_stride and all(d == 1 for d in p.dilation)
    return backend.name == "numpy" and one_kernel and shape and p.dtype.char in "fdFD"


def column(problem: Problem) -> bool:
    """Whether `problem`'s kernel is one tap wide, with taps along one other axis: a filter
    along an image's columns or a volume's rows or planes."""
    return problem.kernel[-1] == 1 and sum(k > 1 for k in problem.kernel) == 1


def factors(w: Array, problem: Problem) -> list[np.ndarray] | None:
    """One 1-D kernel per axis whose outer product is `w` to :data:`_TOLERANCE_EPS` units
    of the dtype's epsilon times ``max|w|``, in float64 (complex128 for a complex problem):
    along the last axis, the line of taps through the largest tap; along each other axis,
    the line through it over that tap (exact for a box or a Sobel kernel). None for any
    other kernel (or all zeros)."""
    taps = np.asarray(w, dtype=np.result_type(problem.dtype, np.float64)).reshape(problem.kernel)
    at: tuple[Any, ...] = np.unravel_index(np.argmax(np.abs(taps)), taps.shape)
    peak = taps[at]
    if peak == 0 or not np.isfinite(taps).all():
        return None
    lines = [taps[(*at[:axis], slice(None), *at[axis + 1 :])] for axis in range(taps.ndim)]
    found = [line / peak for line in lines[:-1]] + [lines[-1]]
    product = found[0]
    for line in found[1:]:
        product = np.multiply.outer(product, line)
    if np.abs(product - taps).max() > _TOLERANCE_EPS * np.finfo(problem.dtype).eps * abs(peak):
        return None
    return found


def rank_one(w: Array, problem: Problem, backend: Backend) -> bool:
    """Whether `problem` with the kernel `w` (in its layout) may run in passes."""
    return eligible(problem, backend) and factors(w, problem) is not None


def outer_product(problem: Problem, backend: Backend) -> bool:
    """Whether `problem` is marked rank one and :func:`eligible`: the compiled loops run
    its passes (a pass of one tap along an axis of one)."""
    return problem.rank_one and eligible(problem, backend)


def takes(problem: Problem, backend: Backend) -> bool:
    """Whether these passes apply: :func:`outer_product`, with at least two taps along
    every axis."""
    return outer_product(problem, backend) and min(problem.kernel) > 1


def row_problem(problem: Problem) -> Problem:
    """The row pass: the row filter over the padded rows (kernel ``(1, ..., 1, k_last)``,
    the same padding), whose output has the padded input's other axes and the output's
    last axis."""
    p = problem
    return replace(p, kernel=(*(1,) * (len(p.kernel) - 1), p.kernel[-1]), rank_one=False)


def prepare(w: Array, problem: Problem, backend: Backend, rows: Method) -> SeparableTaps:
    """The row pass's kernel (prepared by `rows`, direct's method) and the banded matrix of
    each other axis's filter."""
    found = factors(w, problem)
    if found is None:
        msg = "the kernel is not an outer product of 1-D kernels"
        raise ValueError(msg)
    xp = backend.xp
    bands = []
    for found_line in found[:-1]:
        complex_line = bool(np.iscomplexobj(found_line) and found_line.imag.any())  # else real, on complex data too
        dtype = problem.dtype if complex_line else np.finfo(problem.dtype).dtype
        line = xp.asarray((found_line if complex_line else found_line.real).astype(dtype))
        band = xp.zeros((BLOCK_ROWS, BLOCK_ROWS + line.size - 1), dtype)
        k, j = xp.arange(line.size)[:, None], xp.arange(BLOCK_ROWS)
        band[j, j + k] = line[:, None]  # tap k on the diagonal j + k of every output row j
        bands.append(band)
    row = xp.asarray(found[-1].astype(problem.dtype)).reshape(1, 1, *(1,) * (len(problem.kernel) - 1), -1)
    return SeparableTaps(rows.prepare(row, row_problem(problem), backend), tuple(bands))


def run(x: Array, kernel: SeparableTaps, problem: Problem, backend: Backend, out: Array, rows: Method) -> None:
    """Fill `out` ``(B, 1, 1, *out_spatial)``: the row pass by `rows` (into this thread's
    scratch buffer up to :data:`.._scratch.REUSED_BYTES`, as the padded input:
    :func:`.._scratch.reused`), then each other axis, last to first, by :func:`_along`:
    the first axis's pass writes `out`."""
    p, rp = problem, row_problem(problem)
    rowed = reused("separable.rows", rp.y_shape, p.dtype, backend)
    done = rows.run(x, kernel.rows, rp, backend, rowed).reshape(p.batch, *p.padded[:-1], p.out_spatial[-1])
    for axis in reversed(range(len(p.kernel) - 1)):
        shape = (p.batch, *p.padded[:axis], *p.out_spatial[axis:])
        target = out.reshape(shape) if axis == 0 else backend.xp.empty(shape, p.dtype)
        _along(done, kernel.bands[axis], 1 + axis, target, backend)
        done = target


def _along(a: Array, band: Array, axis: int, target: Array, backend: Backend) -> None:
    """`target` = `a` (C-contiguous) correlated along `axis` with the filter in `band`
    (valid): one batched GEMM over every whole block of :data:`BLOCK_ROWS` outputs along
    the axis, and one for the outputs left."""
    xp, reach = backend.xp, band.shape[1] - BLOCK_ROWS
    lead, after = math.prod(a.shape[:axis]), math.prod(a.shape[axis + 1 :])
    a = a.reshape(lead, a.shape[axis], after)
    target = target.reshape(lead, target.shape[axis], after)
    if band.dtype != a.dtype:  # a real filter on complex data: its parts as real samples (half the flops)
        a, target, after = a.view(band.dtype), target.view(band.dtype), 2 * after
    count = target.shape[1]
    whole = count // BLOCK_ROWS
    sl, sn, sa = a.strides
    if whole:
        blocks = xp.lib.stride_tricks.as_strided(a, (lead, whole, BLOCK_ROWS + reach, after), (sl, BLOCK_ROWS * sn, sn, sa))
        xp.matmul(band, blocks, out=target[:, : whole * BLOCK_ROWS].reshape(lead, whole, BLOCK_ROWS, after))
    left = count - whole * BLOCK_ROWS
    if left:
        xp.matmul(band[:left, : left + reach], a[:, whole * BLOCK_ROWS :], out=target[:, whole * BLOCK_ROWS :])


def cost(problem: Problem, backend: Backend, rates: Rates, settings: Settings, rows: Method) -> Cost:
    """The row pass's cost (by `rows`, direct's method), and each other axis's pass: its
    GEMMs' flops (2 per multiply-add, complex too) at the share of the GEMM rate that
    blocks of :data:`BLOCK_ROWS` rows reach (:func:`.._runtime.rates.small_gemm_share`),
    and the pass's input read and output written at the stream rate; weighted
    (:data:`_WEIGHTS`), with a fixed cost."""
    p, size = problem, problem.dtype.itemsize
    row_cost = rows.cost(row_problem(p), backend, rates, settings)
    columns, held = 0.0, 0
    for axis in reversed(range(len(p.kernel) - 1)):
        gemm_rate = small_gemm_share(BLOCK_ROWS, BLOCK_ROWS + p.kernel[axis] - 1) * rates.gemm_rate(p.dtype, backend.name)
        read = p.batch * math.prod(p.padded[: axis + 1]) * math.prod(p.out_spatial[axis + 1 :])
        written = p.batch * math.prod(p.padded[:axis]) * math.prod(p.out_spatial[axis:])
        columns += 2 * written * (BLOCK_ROWS + p.kernel[axis] - 1) / gemm_rate + (read + written) * size / rates.stream_bytes
        held = max(held, read * size)
    rows_weight, columns_weight = _WEIGHTS[f"{'complex' if p.dtype.kind == 'c' else 'real'} {len(p.kernel)}-D"]
    seconds = rows_weight * row_cost.seconds + columns_weight * columns + _FIXED_CALLS * rates.call_seconds
    return Cost(seconds, row_cost.temp_bytes + 2 * held)
