"""Overlap-save ('oa'): the FFT method on slabs of output rows, for problems whose whole
spectra do not fit the memory budget.

The output is cut along its first spatial axis into slabs of `rows` rows. Each slab needs
``(rows - 1) * stride + dilation * (kernel - 1) + 1`` input rows (its halo overlaps the
next slab's); those are cut from the input (zero-filled past the padding, or read around the input's
period when the padding is periodic), transformed,
multiplied by the kernel spectrum (computed once, at the slab's FFT size) and transformed
back. Every slab has the same shape, so one kernel spectrum serves them all. The number of
rows per slab is the one of least estimated time whose temporaries fit the budget.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from .. import _config
from .._backend import Array, Backend
from .._problem import Problem
from .._rates import Rates, rates_for
from .._window import periodic_window, window
from . import Cost, Method, fft, output, register


def slab_problem(problem: Problem, rows: int) -> Problem:
    """The problem of one slab of `rows` output rows: unpadded along the first axis."""
    p = problem
    need = (rows - 1) * p.stride[0] + p.dilation[0] * (p.kernel[0] - 1) + 1
    return replace(
        p,
        spatial=(need, *p.spatial[1:]),
        pad_lo=(0, *p.pad_lo[1:]),
        pad_hi=(0, *p.pad_hi[1:]),
    )


def _slab_cost(problem: Problem, backend: Backend, rows: int, rates: Rates) -> Cost:
    """Time of the kernel's spectrum (once) and of every slab (its transforms, and copying
    its input in and its result out), and the temporaries of one slab (its spectra,
    input and output)."""
    slab = slab_problem(problem, rows)
    one = fft.cost(slab, backend, rates)
    kernel_seconds, data_seconds = fft.split_cost(slab, backend, rates)  # the kernel once, the data per slab
    count = -(-problem.out_spatial[0] // rows)
    itemsize = fft.work_dtype(slab).itemsize
    data = (math.prod(slab.x_shape) + math.prod(slab.y_shape)) * itemsize
    return Cost(kernel_seconds + count * (data_seconds + 2 * data / rates.stream_bytes), one.temp_bytes + data)


def _candidates(problem: Problem) -> list[int]:
    """Rows per slab worth trying: powers of two up to the whole output, and the whole."""
    total = problem.out_spatial[0]
    rows = [2**j for j in range(total.bit_length()) if 2**j < total]
    return [*rows, total]


def slab_rows(problem: Problem, backend: Backend, memory_limit: int, rates: Rates) -> int:
    """Rows per slab: the fastest estimate that fits `memory_limit` (else the smallest slab)."""
    costs = {rows: _slab_cost(problem, backend, rows, rates) for rows in _candidates(problem)}
    fitting = [rows for rows, c in costs.items() if c.temp_bytes <= memory_limit]
    if not fitting:
        return 1
    return min(fitting, key=lambda rows: costs[rows].seconds)


def prepare(w: Array, problem: Problem, backend: Backend) -> tuple[int, Problem, Array]:
    """Rows per slab, the slab's problem, and the kernel spectrum at the slab's FFT size."""
    rows = slab_rows(problem, backend, _config.budget(backend.name), rates_for(backend))
    slab = slab_problem(problem, rows)
    return rows, slab, fft.prepare(w, slab, backend)


def run(x: Array, kernel: tuple[int, Problem, Array], problem: Problem, backend: Backend, out: Array | None = None) -> Array:
    """Solve `problem` slab by slab (`kernel` from :func:`prepare`)."""
    rows, slab, w_hat = kernel
    p = problem
    result = output(out, p, backend, x.dtype)
    total = p.out_spatial[0]
    for first in range(0, total, rows):
        start = first * p.stride[0] - p.pad_lo[0]
        if p.circular:
            piece = periodic_window(backend.xp, x, 2, start, slab.spatial[0])
        else:
            piece = window(backend.xp, x, [2], [start], [slab.spatial[0]])
        y = fft.run(piece, w_hat, slab, backend)
        take = min(rows, total - first)
        y = y.reshape(p.batch, p.groups, p.out_per_group, rows, *p.out_spatial[1:])
        result[:, :, :, first : first + take] = y[:, :, :, :take]
    return result.reshape(p.y_shape)


def unsupported(problem: Problem, backend: Backend, memory_limit: int) -> str | None:
    """Overlap-save needs room for the spectra of a one-row slab."""
    need = _slab_cost(problem, backend, 1, rates_for(backend)).temp_bytes
    if need > memory_limit:
        return f"even a one-row slab needs {need} bytes, over memory_limit={memory_limit}"
    return None


def cost(problem: Problem, backend: Backend, rates: Rates) -> Cost:
    """The cost of the slabs at the rows :func:`prepare` would pick under the current budget."""
    rows = slab_rows(problem, backend, _config.budget(backend.name), rates)
    return _slab_cost(problem, backend, rows, rates)


def work_dtype(problem: Problem) -> Any:
    """As the FFT method: integers in float64."""
    return fft.work_dtype(problem)


METHOD = register(Method("oa", prepare, run, work_dtype, unsupported, cost))
