"""Overlap-save ('oa'): the FFT method on blocks of the output, for problems whose whole
spectra do not fit the memory budget, or whose blocks' spectra stay in cache.

The output is cut into blocks. The candidates are slabs (a power of two of rows, or all,
along the first spatial axis, whole along the others) and cubes (the same power of two of
samples along every spatial axis): under a tight budget only a small cube fits, where
one-row slabs would run many times slower and past the budget. On the CPU, when each output
map reads one input map, a block holds one batch item, so its spectra stay in cache. A block of `n` outputs along a cut axis
needs ``(n - 1) * stride + dilation * (kernel - 1) + 1`` input samples along it (its halo
overlaps the next block's); those are cut from the input (zero-filled past the padding, or read
around the input's period when the padding is periodic), transformed, multiplied by the kernel
spectrum (computed once, at the block's FFT size) and transformed back. Along an axis it does
not cut, a block keeps the problem's padding, which the FFT method applies itself. Every block
has the same shape, so one kernel spectrum serves them all. The block is the one of least
estimated time whose temporaries fit the budget.

On the CPU, when the problem is cut into three or more blocks (with batch items), they run on
:func:`arrayconv.config`'s workers, one single-threaded FFT each: a slab's transforms are
too small for the FFT's own threads to pay (case c: 57 ms with two-thread transforms one
slab at a time, 33 ms with two slabs at a time).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any

from .._runtime import config as _config
from .._runtime.backend import Array, Backend
from .._runtime.cache import LRUCache
from .._runtime.config import Settings
from .._runtime.fitted import fitted
from .._runtime.rates import Rates, rates_for
from .._runtime.threads import run_parallel
from .._spec.problem import Problem
from .._spec.shapes import Shape
from .._spec.window import periodic_window, window
from . import fft
from ._registry import Cost, Method, output, register


def cut_axes(problem: Problem, block: Shape) -> list[int]:
    """The spatial axes along which blocks of `block` outputs cut the output."""
    return [i for i, (b, n) in enumerate(zip(block, problem.out_spatial)) if b < n]


def block_problem(problem: Problem, backend: Backend, block: Shape) -> Problem:
    """The problem of one block of `block` outputs per spatial axis of
    :func:`items_per_block` batch items: unpadded along the axes it cuts, as the problem
    along the others."""
    p, cut = problem, cut_axes(problem, block)
    need = [(b - 1) * s + d * (k - 1) + 1 for b, s, d, k in zip(block, p.stride, p.dilation, p.kernel)]
    return replace(
        p,
        batch=items_per_block(p, backend),
        spatial=tuple(need[i] if i in cut else n for i, n in enumerate(p.spatial)),
        pad_lo=tuple(0 if i in cut else lo for i, lo in enumerate(p.pad_lo)),
        pad_hi=tuple(0 if i in cut else hi for i, hi in enumerate(p.pad_hi)),
    )


def items_per_block(problem: Problem, backend: Backend) -> int:
    """Batch items in one block: on the CPU one when each output map reads one input map (a
    stack of frames), so that a block's spectra stay in cache whatever the batch; else the
    whole batch: the channel sum is a per-frequency GEMM over batch items and channels,
    which runs faster with more rows, and on a GPU every block costs launches."""
    return 1 if problem.in_per_group == 1 and backend.name == "numpy" else problem.batch


def _block_count(problem: Problem, backend: Backend, block: Shape) -> int:
    """Blocks of the whole problem: blocks of the output times groups of batch items."""
    spatial = math.prod(-(-n // b) for n, b in zip(problem.out_spatial, block))
    return spatial * (problem.batch // items_per_block(problem, backend))


# Slabs run side by side on the workers, faster than one at a time with threaded transforms; the
# gain is not assumed to grow past 2 cores (the transforms' own threads share those).
_THREADED_SPEEDUP = fitted("overlap", "THREADED_SPEEDUP")


# Fewer blocks than this run one at a time: two 512x512 half-images at once, each with a
# one-thread FFT, were no faster than one after the other with two-thread FFTs, and the
# speed-up the estimate assumed made 'auto' pick oa over the whole FFT at 1.7-1.9x its
# time (seed-8 sweep).
_MIN_THREADED_BLOCKS = 3


def _most_threads(problem: Problem, backend: Backend, block: Shape, workers: int) -> int:
    """Blocks that may be in flight at once: on the CPU, its `workers`, at most one per
    block, from three blocks up; else one."""
    count = _block_count(problem, backend, block)
    if backend.name != "numpy" or count < _MIN_THREADED_BLOCKS:
        return 1
    return min(workers, count)


def _block_cost(problem: Problem, backend: Backend, block: Shape, threads: int, rates: Rates, contraction_weight: float | None = None) -> Cost:
    """Time of the kernel's spectrum (once) and of every block (its transforms, and two passes
    over its input and result), `threads` blocks at a time, and the temporaries of the blocks
    in flight (their spectra, inputs and outputs). Only the result is copied (the input of
    a block inside the image is a view); charging one pass instead picked worse on sweeps
    30-31, so two are kept. `contraction_weight`: as :func:`.fft.split_cost`'s."""
    one = block_problem(problem, backend, block)
    # the kernel once, the data per block (whose threads `threads` counts: one worker each)
    kernel_seconds, data_seconds = fft.split_cost(one, backend, rates, 1, block=True, contraction_weight=contraction_weight)
    count = _block_count(problem, backend, block)
    data = (math.prod(one.x_shape) + math.prod(one.y_shape)) * fft.work_dtype(one).itemsize
    blocks_seconds = count * (data_seconds + 2 * data / rates.stream_bytes) / (_THREADED_SPEEDUP if threads > 1 else 1)
    return Cost(kernel_seconds + blocks_seconds, threads * (fft.temp_bytes(one, backend) + data), kernel_seconds)


def _powers_of_two(n: int) -> list[int]:
    """Powers of two below `n`, and `n`."""
    return [*(1 << j for j in range(n.bit_length()) if 1 << j < n), n]


def _candidates(problem: Problem) -> list[Shape]:
    """Blocks worth trying: slabs of a power of two of rows (or all), whole along the other
    axes; and cubes of a power of two of samples along every axis (or all, where that is
    fewer), whose spectra stay small under a tight budget."""
    out = problem.out_spatial
    slabs = [(rows, *out[1:]) for rows in _powers_of_two(out[0])]
    cubes = [tuple(min(n, side) for n in out) for side in _powers_of_two(max(out))]
    return list(dict.fromkeys([*slabs, *cubes]))


# Block plans of recent problems: weighing every candidate block costs 1-2 ms a plain call.
_block_plans = LRUCache("oa_block_plans", maxsize=256)


def block_plan(problem: Problem, backend: Backend, settings: Settings, rates: Rates) -> tuple[Shape, int]:
    """Outputs per block along each spatial axis, the fastest estimate one block at a time
    that fits the memory budget of `settings` (else one output sample), and blocks at a time:
    as many as may run (:func:`_most_threads`) when their temporaries fit together, else
    one. Threads never make the blocks smaller: cutting an image into more slabs to have
    several ran 0.7-0.9x as fast on 256x256-512x512 images. Kept per problem, budget, rates
    and workers."""
    key = (problem, backend.name, settings, rates)
    return _block_plans.get_or_make(key, lambda: _weigh_blocks(problem, backend, settings, rates))


# Blocks estimated within this factor of the fastest are a tie, which the one of smallest
# temporaries wins: on 4096x4096 with 31x31, blocks of 1024x1024, estimated 0.1% faster
# than 512x512, ran 1.12x slower.
_TIE = 1.02


# Candidate blocks are ranked with the channel sum at the whole-image FFT's weight, as when the
# blocks were fitted (the block's own weight picked smaller, slower blocks).
_RANKING_CONTRACTION_WEIGHT = fft.CONTRACTION_WEIGHT


def _weigh_blocks(problem: Problem, backend: Backend, settings: Settings, rates: Rates) -> tuple[Shape, int]:
    memory_limit = settings.budget
    costs = {block: _block_cost(problem, backend, block, 1, rates, _RANKING_CONTRACTION_WEIGHT) for block in _candidates(problem)}
    fitting = [block for block, c in costs.items() if c.temp_bytes <= memory_limit]
    if not fitting:
        return _smallest(problem), 1
    fastest = min(costs[b].seconds for b in fitting)
    block = min((b for b in fitting if costs[b].seconds <= _TIE * fastest), key=lambda b: costs[b].temp_bytes)
    threads = _most_threads(problem, backend, block, settings.workers)
    if threads * costs[block].temp_bytes > memory_limit:  # each block in flight holds its temporaries
        threads = 1
    return block, threads


def prepare(w: Array, problem: Problem, backend: Backend) -> tuple[Shape, int, Problem, Array]:
    """Outputs per block along each spatial axis, blocks at a time, the block's problem, and
    the kernel spectrum at the block's FFT size."""
    block, threads = block_plan(problem, backend, _config.settings(backend.name), rates_for(backend))
    one = block_problem(problem, backend, block)
    return block, threads, one, fft.prepare(w, one, backend)


def run(x: Array, kernel: tuple[Shape, int, Problem, Array], problem: Problem, backend: Backend, out: Array | None = None) -> Array:
    """Solve `problem` block by block (`kernel` from :func:`prepare`), several at a time on
    the CPU."""
    block, threads, one, w_hat = kernel
    p, cut = problem, cut_axes(problem, block)
    result = output(out, p, backend, x.dtype)

    def solve(block_at: tuple[int, ...]) -> None:
        b0, *firsts = block_at
        piece = x[b0 : b0 + one.batch]
        starts = [firsts[i] * p.stride[i] - p.pad_lo[i] for i in cut]
        if p.circular:
            for i, start in zip(cut, starts):
                piece = periodic_window(backend.xp, piece, 2 + i, start, one.spatial[i])
        else:
            piece = window(backend.xp, piece, [2 + i for i in cut], starts, [one.spatial[i] for i in cut])
        y = fft.run(piece, w_hat, one, backend).reshape(one.batch, p.groups, p.out_per_group, *block)
        takes = [min(b, n - first) for b, n, first in zip(block, p.out_spatial, firsts)]
        into = tuple(slice(first, first + take) for first, take in zip(firsts, takes))
        result[(slice(b0, b0 + one.batch), slice(None), slice(None), *into)] = y[(..., *(slice(take) for take in takes))]

    firsts_per_axis = [range(0, n, b) for n, b in zip(p.out_spatial, block)]
    blocks = list(itertools.product(range(0, p.batch, one.batch), *firsts_per_axis))
    if threads == 1:
        for block_at in blocks:
            solve(block_at)
        return result.reshape(p.y_shape)
    limit = _config.budget(backend.name) // threads  # settings are per thread: pass them on

    def solve_alone(block_at: tuple[int, ...]) -> None:
        with _config.config(memory_limit=max(limit, 1), workers=1):
            solve(block_at)

    run_parallel(blocks, solve_alone, threads)
    return result.reshape(p.y_shape)


def _smallest(problem: Problem) -> Shape:
    """The block of least temporaries: one output sample."""
    return tuple(1 for _ in problem.out_spatial)


def unsupported(problem: Problem, backend: Backend, memory_limit: int) -> str | None:
    """Overlap-save needs room for the spectra of a block of one output sample."""
    need = _block_cost(problem, backend, _smallest(problem), 1, rates_for(backend)).temp_bytes
    if need > memory_limit:
        return f"even blocks of one output sample need {need} bytes, over memory_limit={memory_limit}"
    return None


def cost(problem: Problem, backend: Backend, rates: Rates, settings: Settings) -> Cost:
    """The cost of the blocks as :func:`prepare` would cut and run them under `settings`."""
    block, threads = block_plan(problem, backend, settings, rates)
    return _block_cost(problem, backend, block, threads, rates)


def work_dtype(problem: Problem) -> Any:
    """As the FFT method: integers in float64."""
    return fft.work_dtype(problem)


METHOD = register(Method("oa", prepare, run, work_dtype, unsupported, cost))
