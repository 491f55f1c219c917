"""The direct method on the GPU: one CUDA kernel, no padded copy, no per-tap launches.

Each thread computes ``OB`` output channels of ``R`` neighbouring output samples: it walks the input
channels of its group and the kernel taps, reads each input value once (zero padding by
bounds checks) and multiply-adds it into ``OB`` accumulators, with the weights of the
``OB`` channels side by side (``(G, Cg, taps, Og_padded)``), so a warp reads each weight
once, as a broadcast. Spatial dims are padded to three with size-1 axes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._runtime.backend import Array, Backend
from .._runtime.cache import LRUCache
from .._runtime.cuda import blocks, kernel
from .._runtime.fitted import fitted
from .._runtime.rates import Rates
from .._spec.problem import Problem

_SOURCE = Path(__file__).with_name("direct_correlate.cu").read_text()

_THREADS = 256
_MAX_BLOCKS = 1 << 20
_MAX_GRID_Y = 65535
# Longest last-axis kernel whose input segment is held in registers.
_MAX_SEGMENT_TAPS = 32
# Threads that fill the GPU; with fewer, the kernel runs at that fraction of its rate.
_FULL_THREADS = 1 << 16
# A tap's instructions per thread, in multiply-adds at the GEMM rate: its OB * R multiply-adds, OB
# weight reads and its input reads (reads set the pace); the launches' worth of time of a call
# (the kernel's form's counted with it).
_MULTIPLY_ADD, _WEIGHT_READ = fitted("direct_cuda", "MULTIPLY_ADD"), fitted("direct_cuda", "WEIGHT_READ")
_INPUT_READ = fitted("direct_cuda", "INPUT_READ")
_CALLS = fitted("direct_cuda", "CALLS")

_launches = LRUCache("direct_cuda_launches", maxsize=256)


def channels_per_thread(problem: Problem) -> int:
    """Output channels each thread accumulates: a power of two up to 16."""
    return min(16, 1 << max(0, problem.out_per_group - 1).bit_length())


def channel_blocks(problem: Problem) -> int:
    """Blocks of :func:`channels_per_thread` output channels per group (the last padded)."""
    return -(-problem.out_per_group // channels_per_thread(problem))


def _padded_channels(problem: Problem) -> int:
    """Output channels per group in the prepared kernel: :func:`channel_blocks` whole blocks
    (the kernel's weights and its launch's channel stride must agree on it)."""
    return channel_blocks(problem) * channels_per_thread(problem)


def _tap_cost(problem: Problem, ob: int, run_length: int) -> float:
    """One tap of one thread, in multiply-adds: see :data:`_MULTIPLY_ADD`."""
    k2 = problem.kernel[-1]
    reads = (run_length + k2 - 1) / k2 if _segment(problem) else run_length
    return _MULTIPLY_ADD * ob * run_length + _WEIGHT_READ * ob + _INPUT_READ * reads


def _segment(problem: Problem) -> bool:
    """Whether the kernel holds each run's inputs of a kernel row in registers: unit stride
    and dilation on the last axis and at most :data:`_MAX_SEGMENT_TAPS` taps along it."""
    return problem.stride[-1] == problem.dilation[-1] == 1 and problem.kernel[-1] <= _MAX_SEGMENT_TAPS


def _run_length(ob: int) -> int:
    """Neighbouring outputs per thread: up to 4, fewer when OB accumulators are many."""
    return max(1, min(4, 16 // ob))


def prepare(w: Array, problem: Problem, backend: Backend) -> Array:
    """The kernel as ``(G, Cg, taps, Og_padded)``, output channels last, zero-padded to a
    multiple of :func:`channels_per_thread`."""
    p, xp = problem, backend.xp
    padded_og = _padded_channels(p)
    taps = w.reshape(p.groups, p.out_per_group, p.in_per_group, -1).transpose(0, 2, 3, 1)
    if padded_og == p.out_per_group:  # one copy kernel, no zeros
        return xp.ascontiguousarray(taps)
    out = xp.zeros((p.groups, p.in_per_group, taps.shape[2], padded_og), dtype=w.dtype)
    out[..., : p.out_per_group] = taps
    return out


@dataclass(frozen=True, slots=True)
class _Launch:
    """What the shapes decide of a launch: the compiled kernel, its grid and its scalar
    arguments (made once per problem and dtype: 30-40% of a small call's host time)."""

    fn: Any
    grid: tuple[int, int]
    scalars: tuple[np.int32, ...]


def run(x: Array, w_prepared: Array, problem: Problem, backend: Backend, out: Array) -> Array:
    """Write the correlation of `x` (``problem.x_shape``, C-contiguous) into `out`."""
    launch = _launches.get_or_make((problem, x.dtype), lambda: _launch(problem, x.dtype))
    launch.fn(launch.grid, (_THREADS,), (backend.xp.ascontiguousarray(x), w_prepared, out, *launch.scalars))
    return out


def _launch(problem: Problem, dtype: np.dtype[Any]) -> _Launch:
    """The launch of `problem` on `dtype` data.

    Grid: x over runs of ``R`` neighbouring output samples of one map (a grid-stride loop
    with 64-bit counts), y over the maps (batch item, group, block of ``OB`` channels). The
    kernel shape is a compile-time constant, so the tap loops unroll; with unit stride and
    dilation on the last axis a run's inputs are loaded once per kernel row into registers.
    """
    constants = compile_constants(problem)
    fn = kernel(_SOURCE, "direct_correlate", dtype, **constants)
    grid, scalars = launch_arithmetic(problem)
    return _Launch(fn, grid, scalars)


def launch_arithmetic(problem: Problem) -> tuple[tuple[int, int], tuple[np.int32, ...]]:
    """The grid and the kernel's int arguments for `problem`: each argument an extent that
    :func:`takes` keeps under 2**31, the grid within CUDA's limits."""
    p = problem
    three = 3 - len(p.spatial)
    ones, zeros = (1,) * three, (0,) * three
    spatial, n_out = ones + p.spatial, ones + p.out_spatial
    stride, dilation, pad = ones + p.stride, ones + p.dilation, zeros + p.pad_lo
    maps = p.batch * p.groups * channel_blocks(p)
    scalars = (maps, p.groups, p.in_per_group, p.out_per_group, _padded_channels(p), *spatial, *n_out, *stride, *dilation, *pad)
    work = n_out[0] * n_out[1] * -(-n_out[2] // _run_length(channels_per_thread(p)))
    grid = (min(blocks(work, _THREADS), _MAX_BLOCKS), min(maps, _MAX_GRID_Y))
    return grid, tuple(np.int32(v) for v in scalars)


def compile_constants(problem: Problem) -> dict[str, int]:
    """The kernel's compile-time constants for `problem`: threads a block, output channels
    and outputs a thread, whether a run's inputs are held in registers, the kernel's shape."""
    p = problem
    ob = channels_per_thread(p)
    kern = (1,) * (3 - len(p.kernel)) + tuple(p.kernel)
    return dict(THREADS=_THREADS, OB=ob, R=_run_length(ob), SEGMENT=int(_segment(p)), K0=kern[0], K1=kern[1], K2=kern[2])


def takes(problem: Problem) -> bool:
    """Whether the kernel takes `problem`: zero padding, 1 to 3 spatial dims, 32-bit indices
    and arguments (a stride of 2**31 or more, valid where it leaves one output per axis,
    would not fit its ``int``)."""
    p = problem
    maps = p.batch * p.groups * channel_blocks(p)
    padded = (s + lo + hi for s, lo, hi in zip(p.spatial, p.pad_lo, p.pad_hi))
    extents = (math.prod(p.spatial), math.prod(p.out_spatial), maps, *padded, *p.stride, *p.dilation)
    return not p.circular and len(p.spatial) <= 3 and max(extents) < 2**31


def cost(problem: Problem, rates: Rates) -> float:
    """Estimated seconds (the kernel runs without temporaries).

    Each thread's taps (padded output channels included) at :func:`_tap_cost` multiply-adds
    apiece at the GEMM rate, scaled by the share of the GPU the threads fill; input and
    output once at the stream rate; the fixed cost of :data:`_CALLS`.
    """
    p = problem
    ob = channels_per_thread(p)
    run_length = _run_length(ob)
    threads = p.batch * p.groups * channel_blocks(p) * math.prod(p.out_spatial) / run_length
    thread_taps = threads * p.in_per_group * math.prod(p.kernel)
    occupancy = min(1.0, threads / _FULL_THREADS)
    moved = (math.prod(p.x_shape) + math.prod(p.y_shape)) * p.dtype.itemsize
    compute = 2 * thread_taps * _tap_cost(p, ob, run_length) / (rates.gemm_flops * occupancy)
    return compute + moved / rates.stream_bytes + _CALLS * rates.call_seconds
