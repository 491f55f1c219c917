"""Overlap-save ('oa'): the FFT method on slabs of output rows, for problems whose whole
spectra do not fit the memory budget.

The output is cut along its first spatial axis into slabs of `rows` rows (and on the CPU,
when each output map reads one input map, into one batch item per slab: a stack of 8 frames of
1920x1920 ran in 0.55-0.59 of the time of slabs holding the whole stack, whose spectra left the
cache; bench/results/oa-stacks-2026-11-23.md). Each slab needs
``(rows - 1) * stride + dilation * (kernel - 1) + 1`` input rows (its halo overlaps the
next slab's); those are cut from the input (zero-filled past the padding, or read around the input's
period when the padding is periodic), transformed,
multiplied by the kernel spectrum (computed once, at the slab's FFT size) and transformed
back. Every slab has the same shape, so one kernel spectrum serves them all. The number of
rows per slab is the one of least estimated time whose temporaries fit the budget.

On the CPU, when the problem is cut into three or more slabs (rows and batch items), they run on
:func:`arrayconv.config`'s workers, one single-threaded FFT each: a slab's transforms are
too small for the FFT's own threads to pay (case c: 57 ms with two-thread transforms one
slab at a time, 33 ms with two slabs at a time).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from .. import _config
from .._backend import Array, Backend
from .._cache import LRUCache
from .._problem import Problem
from .._rates import Rates, rates_for
from .._threads import run_parallel
from .._window import periodic_window, window
from . import Cost, Method, fft, output, register


def slab_problem(problem: Problem, backend: Backend, rows: int) -> Problem:
    """The problem of one slab of `rows` output rows of :func:`items_per_slab` batch items:
    unpadded along the first axis."""
    p = problem
    need = (rows - 1) * p.stride[0] + p.dilation[0] * (p.kernel[0] - 1) + 1
    return replace(
        p,
        batch=items_per_slab(p, backend),
        spatial=(need, *p.spatial[1:]),
        pad_lo=(0, *p.pad_lo[1:]),
        pad_hi=(0, *p.pad_hi[1:]),
    )


def items_per_slab(problem: Problem, backend: Backend) -> int:
    """Batch items in one slab: on the CPU one when each output map reads one input map (a
    stack of frames), so that a slab's spectra stay in cache whatever the batch; else the
    whole batch: the channel sum is a per-frequency GEMM over batch items and channels,
    which runs faster with more rows, and on a GPU every slab costs launches."""
    return 1 if problem.in_per_group == 1 and backend.name == "numpy" else problem.batch


def _slab_count(problem: Problem, backend: Backend, rows: int) -> int:
    """Slabs of the whole problem: slabs of rows times groups of batch items."""
    return -(-problem.out_spatial[0] // rows) * (problem.batch // items_per_slab(problem, backend))


# Two slabs at a time on 2 cores ran 1.28-1.76x faster than one slab at a time with
# two-thread transforms on images of 1920x1920 and up, 1.23x on 1024x1024
# (bench/results/oa-threads-2026-11-23.md). The gain is not assumed to grow with more
# cores: the transforms' own threads share those.
_THREADED_SPEEDUP = 1.4


# Fewer slabs than this run one at a time: two 512x512 half-images at once, each with a
# one-thread FFT, were no faster than one after the other with two-thread FFTs, and the
# speed-up the estimate assumed made 'auto' pick oa over the whole FFT at 1.7-1.9x its
# time (seed-8 sweep).
_MIN_THREADED_SLABS = 3


def _most_threads(problem: Problem, backend: Backend, rows: int) -> int:
    """Slabs that may be in flight at once: on the CPU, its workers, at most one per slab,
    from three slabs up; else one."""
    count = _slab_count(problem, backend, rows)
    if backend.name != "numpy" or count < _MIN_THREADED_SLABS:
        return 1
    return min(_config.workers(), count)


def _slab_cost(problem: Problem, backend: Backend, rows: int, threads: int, rates: Rates) -> Cost:
    """Time of the kernel's spectrum (once) and of every slab (its transforms, and two passes
    over its input and result), `threads` slabs at a time, and the temporaries of the slabs
    in flight (their spectra, inputs and outputs). Only the result is copied now (the input
    is a view); charging one pass instead picked worse on sweeps 30-31, so two are kept."""
    slab = slab_problem(problem, backend, rows)
    kernel_seconds, data_seconds = fft.split_cost(slab, backend, rates, slab=True)  # the kernel once, the data per slab
    count = _slab_count(problem, backend, rows)
    itemsize = fft.work_dtype(slab).itemsize
    data = (math.prod(slab.x_shape) + math.prod(slab.y_shape)) * itemsize
    slabs_seconds = count * (data_seconds + 2 * data / rates.stream_bytes) / (_THREADED_SPEEDUP if threads > 1 else 1)
    return Cost(kernel_seconds + slabs_seconds, threads * (fft.temp_bytes(slab, backend) + data), kernel_seconds)


def _candidates(problem: Problem) -> list[int]:
    """Rows per slab worth trying: powers of two up to the whole output, and the whole."""
    total = problem.out_spatial[0]
    rows = [2**j for j in range(total.bit_length()) if 2**j < total]
    return [*rows, total]


# Slab plans of recent problems: weighing every candidate height on every plain call cost
# 1-2 ms (plain 256x256 calls 0.64-0.72 of the time once kept, 512x512 0.71-0.76;
# bench/results/oa-slab-plans-2026-11-23.md).
_slab_plans = LRUCache("oa_slab_plans", maxsize=256)


def slab_plan(problem: Problem, backend: Backend, memory_limit: int, rates: Rates) -> tuple[int, int]:
    """Rows per slab, the fastest estimate one slab at a time that fits `memory_limit` (else
    one row), and slabs at a time: as many as may run (:func:`_most_threads`) when their
    temporaries fit together, else one. Threads never make the slabs smaller: cutting an
    image into more slabs to have several ran 0.7-0.9x as fast on 256x256-512x512 images.
    Kept per problem, budget, rates and workers."""
    key = (problem, backend.name, memory_limit, rates, _config.workers())
    return _slab_plans.get_or_make(key, lambda: _weigh_slabs(problem, backend, memory_limit, rates))


def _weigh_slabs(problem: Problem, backend: Backend, memory_limit: int, rates: Rates) -> tuple[int, int]:
    costs = {rows: _slab_cost(problem, backend, rows, 1, rates) for rows in _candidates(problem)}
    fitting = [rows for rows, c in costs.items() if c.temp_bytes <= memory_limit]
    if not fitting:
        return 1, 1
    rows = min(fitting, key=lambda r: costs[r].seconds)
    threads = _most_threads(problem, backend, rows)
    if threads * costs[rows].temp_bytes > memory_limit:  # each slab in flight holds its temporaries
        threads = 1
    return rows, threads


def prepare(w: Array, problem: Problem, backend: Backend) -> tuple[int, int, Problem, Array]:
    """Rows per slab, slabs at a time, the slab's problem, and the kernel spectrum at the
    slab's FFT size."""
    rows, threads = slab_plan(problem, backend, _config.budget(backend.name), rates_for(backend))
    slab = slab_problem(problem, backend, rows)
    return rows, threads, slab, fft.prepare(w, slab, backend)


def run(x: Array, kernel: tuple[int, int, Problem, Array], problem: Problem, backend: Backend, out: Array | None = None) -> Array:
    """Solve `problem` slab by slab (`kernel` from :func:`prepare`), several at a time on
    the CPU."""
    rows, threads, slab, w_hat = kernel
    p = problem
    result = output(out, p, backend, x.dtype)
    total = p.out_spatial[0]

    def solve(slab_at: tuple[int, int]) -> None:
        b0, first = slab_at
        items = x[b0 : b0 + slab.batch]
        start = first * p.stride[0] - p.pad_lo[0]
        if p.circular:
            piece = periodic_window(backend.xp, items, 2, start, slab.spatial[0])
        else:
            piece = window(backend.xp, items, [2], [start], [slab.spatial[0]])
        y = fft.run(piece, w_hat, slab, backend)
        take = min(rows, total - first)
        y = y.reshape(slab.batch, p.groups, p.out_per_group, rows, *p.out_spatial[1:])
        result[b0 : b0 + slab.batch, :, :, first : first + take] = y[:, :, :, :take]

    slabs = [(b0, first) for b0 in range(0, p.batch, slab.batch) for first in range(0, total, rows)]
    if threads == 1:
        for slab_at in slabs:
            solve(slab_at)
        return result.reshape(p.y_shape)
    limit = _config.budget(backend.name) // threads  # settings are per thread: pass them on

    def solve_alone(slab_at: tuple[int, int]) -> None:
        with _config.config(memory_limit=max(limit, 1), workers=1):
            solve(slab_at)

    run_parallel(slabs, solve_alone, threads)
    return result.reshape(p.y_shape)


def unsupported(problem: Problem, backend: Backend, memory_limit: int) -> str | None:
    """Overlap-save needs room for the spectra of a one-row slab."""
    need = _slab_cost(problem, backend, 1, 1, rates_for(backend)).temp_bytes
    if need > memory_limit:
        return f"even a one-row slab needs {need} bytes, over memory_limit={memory_limit}"
    return None


def cost(problem: Problem, backend: Backend, rates: Rates) -> Cost:
    """The cost of the slabs as :func:`prepare` would cut and run them under the current budget."""
    rows, threads = slab_plan(problem, backend, _config.budget(backend.name), rates)
    return _slab_cost(problem, backend, rows, threads, rates)


def work_dtype(problem: Problem) -> Any:
    """As the FFT method: integers in float64."""
    return fft.work_dtype(problem)


METHOD = register(Method("oa", prepare, run, work_dtype, unsupported, cost))
