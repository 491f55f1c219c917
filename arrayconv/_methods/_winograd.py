"""Winograd's F(2x2, 3x3), F(4x4, 3x3) and F(2x2, 5x5): im2col's form for 3x3 and 5x5
multichannel layers on the CPU.

Each t x t block of outputs (a tile) reads a 4x4 (F(2x2, 3x3)) or 6x6 block of input.
Transformed by fixed matrices, the block's 16 (36) values each meet one transformed tap, so
a layer becomes 16 (36) GEMMs ``(Og, Cg) @ (Cg, tiles)`` with 16 (36) multiplies per tile
where the direct sum has 36 (144, 100) (Lavin and Gray, "Fast Algorithms for Convolutional
Neural Networks", 2016). F(2x2, 3x3)'s transforms add and subtract only, so float32 results
stay within a few float32 roundings of the direct sum; the 6x6 blocks' scale by at most 8
(float32 results within about 5e-6 of the largest). Chunks of tile rows keep the
transformed input and products in cache and run on every thread that may run its own GEMMs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from .._runtime import config as _config
from .._runtime.backend import Array, Backend
from .._runtime.config import Settings
from .._runtime.fitted import fitted
from .._runtime.rates import FULL_RATE_GEMM, Rates
from .._runtime.scratch import scratch
from .._runtime.threads import Gemm, even_chunk_length, gemm_lanes, gemm_share, run_gemm_jobs
from .._spec.problem import Problem
from . import _compiled
from ._taps import pads_periodically, zero_margins

# Channels in per group from which the 16 GEMMs run near the GEMM rate: fewer channels
# leave the transforms' passes over memory to dominate, which im2col's columns do not pay;
# numba's transforms, a pass each, repay Winograd from fewer (32 -> 32 to 48 -> 96 channels
# on 14x14 to 224x224: 0.6-0.97x the columns' time on 28 of 35 layers). With more channels
# in than out, the input's transform outweighs the GEMMs saved (256 -> 64 ran 1.2x slower
# than im2col's columns): Winograd needs at least as many out.
_MIN_CHANNELS, _MIN_COMPILED_CHANNELS = 64, 32
# Channels in per group of 5x5 layers by F(2x2, 5x5), at most: with more, im2col's columns (GEMMs
# 25 channels deep, where Winograd's are one) ran about as fast (96 -> 96 and 128 -> 128 on
# 28x28 0.85-1.2x the columns' time; 64 -> 64 on 28x28 to 112x112 0.55-0.97x).
_MAX_CHANNELS_5 = 64
# Outputs a side of each phase of a dilated kernel, at least: smaller phases' GEMMs are too
# narrow (14x14 phases ran 1.5-4x slower than im2col's columns; 28x28 0.7-1.2x, 56x56 0.7-0.9x).
_MIN_PHASE_OUTPUTS = 28
# Outputs a side of each phase from which 3x3 kernels run by F(4x4, 3x3), not F(2x2, 3x3): on
# fewer, its tiles' cropped outputs and short rows cost more than its GEMMs save (3x3 layers of
# 32-256 channels, batch 16: 20x20 to 56x56 0.74-0.97x F(2x2, 3x3)'s time, 10x10 and 14x14
# 0.84-1.49x).
_MIN_TILE4_OUTPUTS = 20
# Transformed input and products of one chunk, per thread: in cache between the passes.
_CHUNK_BYTES = 4 << 20
# Tiles of one chunk's GEMMs where whole small images share a chunk, at most: GEMMs of a few
# hundred columns ran fastest (256 -> 256 channels on 7x7 images, batch 8: 8.4 -> 4.1 ms).
_GROUPED_TILES = 256
# Passes over the input's and the output's bytes in the transforms, at stream speed, and the
# NumPy calls of one chunk's transforms and GEMMs (a call's).
_PASSES = fitted("winograd", "PASSES")
_CALLS_PER_CHUNK = fitted("calls", "A_CALL")
# numba's transforms read each sample once and write its transform once (n * n values for
# each tile's t * t outputs): 1 + n * n / t^2 passes a side; a chunk's calls are the grid's
# copy and margins, the two transforms and the GEMMs.
_COMPILED_CALLS_PER_CHUNK = 5
# The transforms' planes start this many bytes apart past whole 4 KiB pages (:func:`_planes`).
_PAGE, _PLANE_SKEW = 4096, 256
# F(2x2, 3x3)'s kernel transform: ``U = G g G^T`` for each 3x3 kernel ``g`` (its B^T and A^T
# are written out in the transforms below).
_KERNEL_TRANSFORM = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
# F(2x2, 5x5) at the points 0, 1, -1, 2, -1/2 and infinity (at -2 instead of -1/2, float32
# results strayed twice as far): ``V = B^T d B``, ``U = G g G^T``, ``Y = A^T (U * V) A``.
_INPUT_5 = np.array([
    [1, 1.5, -2, -1.5, 1, 0], [0, -1, -2.5, -0.5, 1, 0], [0, 1, 0.5, -2.5, 1, 0],
    [0, -0.5, -1, 0.5, 1, 0], [0, 2, -1, -2, 1, 0], [0, 1, 1.5, -2, -1.5, 1],
])
_KERNEL_5 = np.array([
    [1, 0, 0, 0, 0], [-1 / 3, -1 / 3, -1 / 3, -1 / 3, -1 / 3], [1 / 3, -1 / 3, 1 / 3, -1 / 3, 1 / 3],
    [1 / 15, 2 / 15, 4 / 15, 8 / 15, 16 / 15], [-16 / 15, 8 / 15, -4 / 15, 2 / 15, -1 / 15], [0, 0, 0, 0, 1],
])
_OUTPUT_5 = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -0.5, 1]])
# F(4x4, 3x3) at the same points: the same B^T, G's first three columns (the last row's third),
# A^T's rows the points' powers 0 to 3.
_KERNEL_43 = np.vstack([_KERNEL_5[:5, :3], [0, 0, 1]])
_OUTPUT_43 = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -0.5, 0], [0, 1, 1, 4, 0.25, 0], [0, 1, -1, 8, -0.125, 1]])
# The factors of those matrices other than 0 and 1, handed to numba's loops in the data's dtype.
_COEFFICIENTS = np.array([0.5, 1.5, 2, 2.5, 4, 8, 0.25, 0.125])


@dataclass(frozen=True, slots=True)
class WinogradKernel:
    """The kernel's transformed taps, ``(n * n, G, Og, Cg)`` for tiles of n x n inputs."""

    taps: Array


def fits(problem: Problem, backend: Backend) -> bool:
    """Whether `problem` runs by F(2x2, 3x3) or F(2x2, 5x5): a 2-D 3x3 kernel (5x5 with
    numba's transforms, up to :data:`_MAX_CHANNELS_5` channels in) at unit stride, zero
    padding, real floating point, on NumPy, with enough channels in per group for its
    GEMMs (:data:`_MIN_CHANNELS`; with numba's transforms :data:`_MIN_COMPILED_CHANNELS`)
    and at least as many out. A dilated kernel runs on each phase of the input (the rows
    and columns a dilation apart), where it is a plain kernel, if every phase has
    :data:`_MIN_PHASE_OUTPUTS` outputs a side."""
    p = problem
    least = _MIN_COMPILED_CHANNELS if _compiled.available() else _MIN_CHANNELS
    channels = least <= p.in_per_group <= p.out_per_group
    phases = all(d == 1 or n // d >= _MIN_PHASE_OUTPUTS for n, d in zip(p.out_spatial, p.dilation))
    plain = p.unit_stride and phases and not pads_periodically(p)
    five = p.kernel == (5, 5) and p.in_per_group <= _MAX_CHANNELS_5 and _compiled.available()  # numba's transforms only
    kernel = p.kernel == (3, 3) or five
    return backend.name == "numpy" and kernel and plain and channels and p.dtype.kind == "f"


def prepare(w: Array, problem: Problem) -> WinogradKernel:
    """``w`` ``(G * Og, Cg, r, r)`` transformed by one GEMM in the problem's dtype, ``(G kron
    G) @ taps`` (in float32 within about 3e-7 of the largest transformed tap: 256 -> 256 3x3
    kernels 5.0 -> 0.8 ms, where float64 and the copies back wrote 28 MiB)."""
    p, r, n = problem, problem.kernel[0], _side(problem)
    transform = _KERNEL_5 if r == 5 else _KERNEL_43 if n == 6 else _KERNEL_TRANSFORM
    taps = np.asarray(w, dtype=p.dtype).reshape(-1, r * r)
    u = np.kron(transform, transform).astype(p.dtype) @ taps.T  # (n * n, kernels): G g G^T of each kernel g
    return WinogradKernel(u.reshape(n * n, p.groups, p.out_per_group, p.in_per_group))


def run(x: Array, kernel: WinogradKernel, problem: Problem, backend: Backend, out: Array, settings: Settings) -> None:
    """Fill `out` ``(B, G, Og, Ho, Wo)`` from `x`, a chunk of one phase at a time: tile rows
    of one item, or of small images whole items side by side (one GEMM as wide as all
    their tiles)."""
    p = problem
    x = x.reshape(p.batch, p.groups, p.in_per_group, *p.spatial)
    items, chunk_rows = _chunking(p, settings)
    chunks = [(b0, min(b0 + items, p.batch), phase, t0, min(t0 + chunk_rows, rows)) for b0 in range(0, p.batch, items)
              for phase in _phases(p) for rows in [_phase_tiles(p, phase)[0]] for t0 in range(0, rows, chunk_rows)]

    def fill(chunk: tuple[int, int, tuple[int, tuple[int, ...]], int, int], gemm: Gemm) -> None:
        _run_chunk(x, kernel.taps, p, backend, out, gemm, *chunk)

    run_gemm_jobs(chunks, fill, gemm_lanes(settings.workers), _macs_per_chunk(p, settings))


def _phases(problem: Problem) -> list[tuple[int, tuple[int, ...]]]:
    """The first output row of each phase (the outputs a dilation apart, which read only the
    input rows and columns a dilation apart; one phase without dilation), with the first
    output columns of the column phases whose tiles lie side by side in its grid: all of
    them, unless the transforms run as lines (:func:`_as_lines`), where each is a phase of
    its own. Side by side, their rows of tiles are as long as an undilated kernel's: the
    transforms loop over long rows, the GEMMs are wide (3x3, 64 -> 64 on 56x56, dilated 2:
    two rows of 15 tiles, not four of 7)."""
    (dy, dx), (ho, wo) = problem.dilation, problem.out_spatial
    columns = tuple(range(min(dx, wo)))
    if _as_lines(problem):
        return [(py, (px,)) for py in range(min(dy, ho)) for px in columns]
    return [(py, columns) for py in range(min(dy, ho))]


def _column_blocks(problem: Problem, columns: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """Each column phase of `columns` side by side in a grid: its first output column, its
    first tile and its tiles. Between two, the tiles that read the first's last samples and
    the second's first are made and dropped."""
    p, t = problem, _tile(problem)
    gap = -(-(_side(p) - t) // t)  # a block's last tile reads n - t samples past its own
    blocks, first = [], 0
    for px in columns:
        tiles = -(-len(range(px, p.out_spatial[1], p.dilation[1])) // t)
        blocks.append((px, first, tiles))
        first += tiles + gap
    return blocks


def _phase_tiles(problem: Problem, phase: tuple[int, tuple[int, ...]]) -> tuple[int, int]:
    """Rows and columns of output tiles of `phase` (:func:`_tile`; the last ones cropped
    where they reach past its output), its column phases' side by side."""
    (py, columns), (dy, _), t = phase, problem.dilation, _tile(problem)
    _, first, tiles = _column_blocks(problem, columns)[-1]
    return -(-len(range(py, problem.out_spatial[0], dy)) // t), first + tiles


def _tiles(problem: Problem) -> tuple[int, int]:
    """Rows and columns of tiles of the largest phase, the first."""
    return _phase_tiles(problem, _phases(problem)[0])


def _tile(problem: Problem) -> int:
    """Outputs a side of a tile: 4 for 3x3 kernels with numba's transforms on phases of at
    least :data:`_MIN_TILE4_OUTPUTS` outputs a side (F(4x4, 3x3): 36 multiplies for 16
    outputs, where F(2x2, 3x3) has 64), else 2."""
    p = problem
    large = all(n // d >= _MIN_TILE4_OUTPUTS for n, d in zip(p.out_spatial, p.dilation))
    return 4 if p.kernel == (3, 3) and large and _compiled.available() else 2


def _side(problem: Problem) -> int:
    """Inputs a side of a tile: 6 but for F(2x2, 3x3)'s 4."""
    return _tile(problem) + problem.kernel[0] - 1


def _chunking(problem: Problem, settings: Settings) -> tuple[int, int]:
    """Batch items and tile rows per chunk: the transformed input and products within
    :data:`_CHUNK_BYTES` and a quarter of the memory budget, split evenly over the cores;
    several items where one item's tiles fit (7x7 to 14x14 images: an item's GEMMs alone
    are a few dozen columns wide). Fewer items than cores are cut a chunk a core where each
    chunk's GEMMs stay as wide as reach the GEMM rate (``FULL_RATE_GEMM``): the cores then
    share the transforms too (3x3 64 -> 64 on 56x56, batch 1: 0.73x the time of one chunk
    whose GEMMs alone are split)."""
    p, cores, (rows, cols), phases = problem, _config.cores(), _tiles(problem), len(_phases(problem))
    per_row = _side(p) ** 2 * p.groups * (p.in_per_group + p.out_per_group) * cols * p.dtype.itemsize
    fits_rows = min(_CHUNK_BYTES, settings.budget // 4) // per_row
    if p.batch * phases < cores and -(-rows // cores) * _row_columns(p, cols) >= FULL_RATE_GEMM["side"]:
        fits_rows = min(fits_rows, -(-rows // cores))  # a chunk a core, its GEMMs still at the full rate
    if fits_rows < rows:
        return 1, even_chunk_length(rows, fits_rows, p.batch * phases, cores)
    items = min(fits_rows // rows, max(1, _GROUPED_TILES // (rows * cols)))
    return even_chunk_length(p.batch, items, phases, cores), rows


def _grid_span(first: int, step: int, count: int, length: int) -> tuple[slice, slice]:
    """The grid's samples ``i < count`` that read input samples ``first + step * i`` within
    ``[0, length)``, and those input samples."""
    lo = max(0, -(first // step))
    hi = max(lo, min(count, -(-(length - first) // step)))
    return slice(lo, hi), slice(first + step * lo, first + step * hi, step)


def _run_chunk(x: Array, taps: Array, problem: Problem, backend: Backend, out: Array, gemm: Gemm, b0: int, b1: int, phase: tuple[int, tuple[int, ...]], t0: int, t1: int) -> None:
    """Tile rows ``t0:t1`` of batch items ``b0:b1`` in `phase`: their input rows,
    zero-padded (each column phase's side by side); the input's transform ``B^T d B`` of
    each item; the GEMMs of all; the output's transform ``A^T m A`` of each item and
    column phase into `out`."""
    p, (py, phase_columns), (dy, dx), n, t = problem, phase, problem.dilation, _side(problem), _tile(problem)
    items, rows, cols = b1 - b0, t1 - t0, _phase_tiles(p, phase)[1]
    lead, wide = (p.groups, p.in_per_group), _row_columns(p, cols)
    first_row = py + t * t0 * dy - p.pad_lo[0]  # the input's row at the grid's first
    v, v_samples, v_plane = _planes("winograd.v", n, (*lead, items, rows, wide), x.dtype, backend)
    m, m_samples, m_plane = _planes("winograd.m", n, (p.groups, p.out_per_group, items, rows, wide), x.dtype, backend)
    out_rows = slice(py + t * t0 * dy, min(py + t * t1 * dy, p.out_spatial[0]), dy)
    blocks = _column_blocks(p, phase_columns)
    targets = [out[b0:b1, :, :, out_rows, px::dx] for px, _, _ in blocks]
    columns = items * rows * wide
    # As lines: the grid by phase (grid[..., f, e, r, q] is its sample (t * r + f, t * q + e)),
    # each item's tiles of each channel one line of the planes.
    if _as_lines(p):
        loops = _compiled_transforms()
        assert loops is not None  # _as_lines: numba's loops only
        [(px, _, _)], [target] = blocks, targets
        grid = scratch("winograd.grid", (items, *lead, t, t, rows + (n - 1) // t, wide), x.dtype, backend)
        getattr(loops, f"fill_phases_{t}")(x[b0:b1], grid, first_row, px - p.pad_lo[1], dy, dx)
        factors, sums = _COEFFICIENTS.astype(x.dtype), scratch("winograd.sums", (n, t, rows * wide + (n - 1) // t), x.dtype, backend)
        to_v, from_m = getattr(loops, f"forward_lines_6_{t}"), getattr(loops, f"backward_lines_6_{t}")

        def forward(i: int) -> None:
            to_v(grid[i], v_samples, v_plane, i * rows * wide, columns, factors, sums)

        def backward(i: int) -> None:
            from_m(m_samples, m_plane, i * rows * wide, columns, rows, wide, target[i], factors, sums)
    else:
        grid = scratch("winograd.grid", (items, *lead, t * rows + n - t, t * cols + n - t), x.dtype, backend)
        _fill_blocks(grid, x[b0:b1], first_row, blocks, p)
        to_tiles, from_tiles = _transforms(n, t, x.dtype, cols, grid.shape[4], backend)

        def forward(i: int) -> None:
            to_tiles(grid[i], v[:, :, :, :, i])

        def backward(i: int) -> None:
            for (_, first, tiles), target in zip(blocks, targets):
                from_tiles(m[:, :, :, :, i, :, first : first + tiles], target[i])
    for i in range(items):
        forward(i)
    gemm(taps, v.reshape(n * n, *lead, columns), m.reshape(n * n, p.groups, p.out_per_group, columns))
    for i in range(items):
        backward(i)


def _as_lines(problem: Problem) -> bool:
    """Whether F(2x2, 5x5)'s transforms run on each channel's tiles as one line (numba's
    :func:`_lines_source`): its layers have few channels, whose transforms outweigh their
    GEMMs (32 -> 32 on 56x56, batch 16: 0.8x the time). F(4x4, 3x3) keeps a loop a row of
    tiles: as lines, its GEMMs' extra column a row made 128 -> 256 channels 8-10% slower."""
    return _side(problem) == 6 and _tile(problem) == 2


def _row_columns(problem: Problem, cols: int) -> int:
    """Columns of the GEMMs for each row of `cols` tiles: those tiles, and where the
    transforms run as lines (:func:`_as_lines`), the (n - 1) // t that each line makes past
    a row's tiles (from the next row's samples, and unused)."""
    return cols + (_side(problem) - 1) // _tile(problem) if _as_lines(problem) else cols


def _fill_blocks(grid: Array, x: Array, first_row: int, blocks: list[tuple[int, int, int]], problem: Problem) -> None:
    """``grid[..., r, :]``: the input's row ``first_row + r * dy``, each column phase of
    `blocks` ``(px, first tile, tiles)`` in its block of columns, zero past the input's
    edges and under the tiles dropped between two blocks. Column phases a step of 2 or more
    apart by numba's loop where it is installed (a row read once; NumPy's strided copies
    took 2.5x as long)."""
    p, t, n = problem, _tile(problem), _side(problem)
    (dy, dx), pad = p.dilation, p.pad_lo[1]
    loops = _compiled_transforms()
    if dx > 1 and loops is not None:
        cols = np.full(grid.shape[-1], -1, np.int64)
        for px, first, tiles in blocks:
            span = np.arange(px - pad, px - pad + dx * (t * tiles + n - t), dx)
            cols[t * first : t * first + span.size] = np.where((span >= 0) & (span < x.shape[-1]), span, -1)
        loops.fill_mapped(x, grid, first_row, dy, cols)
        return
    end = 0
    for px, first, tiles in blocks:
        grid[..., min(t * end + n - t, t * first) : t * first] = 0  # read only by tiles dropped between two blocks
        end = first + tiles
        _fill(grid[..., t * first : t * end + n - t], x, (first_row, px - pad), (dy, dx))


def _fill(grid: Array, x: Array, first: tuple[int, int], step: tuple[int, int]) -> None:
    """``grid[..., r, q]``: the input sample ``x[..., first[0] + step[0] * r, first[1] +
    step[1] * q]``, zero past the input's edges."""
    rows, x_rows = _grid_span(first[0], step[0], grid.shape[-2], x.shape[-2])
    cols, x_cols = _grid_span(first[1], step[1], grid.shape[-1], x.shape[-1])
    grid[..., rows, cols] = x[..., x_rows, x_cols]
    zero_margins(grid, (rows, cols))  # the zero padding, and the grid past the input


Transform = Callable[[Array, Array], None]


def _transforms(n: int, tile: int, dtype: np.dtype[Any], cols: int, width: int, backend: Backend) -> tuple[Transform, Transform]:
    """The input's transform ``(grid, v)`` and the output's ``(m, target)`` of tiles of `n`
    inputs and `tile` outputs a side, `cols` a row from grid rows `width` wide: numba's
    loops, or NumPy's array calls (F(2x2, 3x3) only)."""
    loops = _compiled_transforms()
    if n == 6:
        assert loops is not None  # :func:`_tile` takes tiles of 6x6 inputs only with numba's loops
        factors = _COEFFICIENTS.astype(dtype)
        forward, backward = getattr(loops, f"forward_6_{tile}"), getattr(loops, f"backward_6_{tile}")
        rows, sums = scratch("winograd.rows", (n, width), dtype, backend), scratch("winograd.sums", (tile, n, cols), dtype, backend)
        return (lambda grid, v: forward(grid, v, factors, rows)), (lambda m, target: backward(m, target, factors, sums))
    if loops is not None:
        return loops.input_transform, loops.output_transform
    return (lambda grid, v: _input_transform(grid, v, backend)), (lambda m, target: _output_transform(m, target, backend))


def _planes(name: str, n: int, shape: tuple[int, ...], dtype: np.dtype[Any], backend: Backend) -> tuple[Array, Array, int]:
    """A ``(n, n, *shape)`` scratch array whose n * n planes (contiguous each) start
    :data:`_PLANE_SKEW` bytes past a multiple of 4 KiB from one another: a transform reads
    or writes all of them at once, and planes a multiple of 4 KiB apart share the L1
    cache's sets (32 channels of 8 rows of 112 tiles: the input's transform 16x slower).
    With it, the samples of the scratch and how many lie from one plane's start to the next."""
    size = math.prod(shape) * dtype.itemsize
    stride = -(-size // _PAGE) * _PAGE + _PLANE_SKEW
    flat = scratch(name, (n * n * stride // dtype.itemsize,), dtype, backend)
    return flat.reshape(n * n, -1)[:, : size // dtype.itemsize].reshape(n, n, *shape), flat, stride // dtype.itemsize


def _input_transform(grid: Array, v: Array, backend: Backend) -> None:
    """``v[a, b, g, c, r, q]``: ``B^T d B`` of the 4x4 block of ``grid[g, c]`` at ``(2r,
    2q)``, in NumPy's array calls: the rows' four sums, then each one's columns'."""
    lead, (rows, cols) = v.shape[2:4], v.shape[4:]
    d = [grid[..., k : k + 2 * rows : 2, :] for k in range(4)]  # B^T's rows: d0-d2, d1+d2, d2-d1, d1-d3
    across = scratch("winograd.across", (*lead, rows, 2 * cols + 2), v.dtype, backend)
    for a, (first_row, second_row, sign) in enumerate(((0, 2, -1), (1, 2, 1), (2, 1, -1), (1, 3, -1))):
        combine(d[first_row], d[second_row], sign, across)
        e = [across[..., k : k + 2 * cols : 2] for k in range(4)]
        for b, (i, j, s) in enumerate(((0, 2, -1), (1, 2, 1), (2, 1, -1), (1, 3, -1))):
            combine(e[i], e[j], s, v[a, b])


def _output_transform(m: Array, target: Array, backend: Backend) -> None:
    """`target` ``(G, Og, rows, cols)``: ``A^T m A`` of each tile, the 2x2 outputs at
    ``(2r, 2q)`` that lie in it, in NumPy's array calls: the rows' two sums, then each
    one's columns'."""
    half = scratch("winograd.half", m.shape[1:], m.dtype, backend)
    for i, (first_row, sign) in enumerate(((0, 1), (3, -1))):  # A^T's rows: m0+m1+m2, m1-m2-m3
        sum_three(m[first_row], m[1], m[2], sign, half)
        for j, (first_col, s) in enumerate(((0, 1), (3, -1))):
            dst = target[..., i::2, j::2]
            n, k = dst.shape[-2:]
            sum_three(half[first_col, ..., :n, :k], half[1, ..., :n, :k], half[2, ..., :n, :k], s, dst)


@functools.cache
def _compiled_transforms() -> ModuleType | None:
    """numba's loops of both transforms (each tile's sums in NumPy's order: the same bits),
    or None without numba."""
    return _compiled.load(f"arrayconv_winograd_{_VERSION}", _TRANSFORMS_SOURCE) if _compiled.available() else None


def combine(a: Array, b: Array, sign: int, out: Array) -> None:
    """``out = a + sign * b``."""
    (np.add if sign > 0 else np.subtract)(a, b, out=out)


def sum_three(edge: Array, one: Array, two: Array, sign: int, out: Array) -> None:
    """``A^T``'s row: ``edge + one + two`` (first row) or ``one - two - edge`` (second)."""
    if sign > 0:
        np.add(edge, one, out=out)
        np.add(out, two, out=out)
    else:
        np.subtract(one, two, out=out)
        np.subtract(out, edge, out=out)


def cost_seconds(problem: Problem, rates: Rates, settings: Settings, efficiency: float) -> float:
    """The n * n GEMMs at the GEMM rate times `efficiency` (their share of it, for their
    channels and tiles per chunk) and the share of the threads their chunks keep busy
    (:func:`.._runtime.threads.gemm_share`), and the transforms' passes over the input and
    output shared by the threads, with a call per chunk for each of the transforms' few
    dozen array operations (:data:`_PASSES`, :data:`_CALLS_PER_CHUNK`; numba's loops: a
    few). Without the kernel's transform (:func:`prepare_seconds`)."""
    p = problem
    rows, cols = _tiles(p)
    phases = len(_phases(p))
    tiles, wide = p.batch * phases * rows * cols, _row_columns(p, cols)
    planes = _side(p) ** 2
    flops = p.mac_flops * planes * p.groups * p.out_per_group * p.in_per_group * tiles * wide / cols
    size = p.dtype.itemsize * p.groups * _tile(p) ** 2 * tiles
    items, chunk_rows = _chunking(p, settings)
    chunks = -(-p.batch // items) * phases * -(-rows // chunk_rows)
    lanes = max(1, min(gemm_lanes(settings.workers), chunks))
    share = gemm_share(chunks, _macs_per_chunk(p, settings), gemm_lanes(settings.workers))
    gemm = flops / (rates.gemm_rate(p.dtype, "numpy", p.out_per_group) * efficiency * share)
    compiled = _compiled.available()
    per_side, calls = (1 + planes / _tile(p) ** 2, _COMPILED_CALLS_PER_CHUNK) if compiled else (_PASSES, _CALLS_PER_CHUNK)
    passes = per_side * (p.in_per_group + p.out_per_group) * size / (lanes * rates.stream_bytes)
    return gemm + passes + chunks * calls * rates.call_seconds


def prepare_seconds(problem: Problem, rates: Rates) -> float:
    """Time of :func:`prepare`: the taps read and their transforms written by one GEMM."""
    p = problem
    kernels, taps, planes = p.groups * p.out_per_group * p.in_per_group, p.kernel[0] ** 2, _side(p) ** 2
    moved = kernels * (taps + planes) * p.dtype.itemsize
    return moved / rates.stream_bytes + 2 * planes * taps * kernels / rates.gemm_rate(p.dtype, "numpy")


def _macs_per_chunk(problem: Problem, settings: Settings) -> int:
    """Multiply-adds of one chunk's stack of GEMMs (one call, which a single chunk splits
    over the cores by whole GEMMs where it is large enough: :func:`.._runtime.threads.run_gemm_jobs`)."""
    p = problem
    return _side(p) ** 2 * p.groups * p.out_per_group * p.in_per_group * columns_per_chunk(p, settings)


def columns_per_chunk(problem: Problem, settings: Settings) -> int:
    """Columns of each of one chunk's GEMMs: the chunk's tiles (NumPy's matmul of the
    stack calls BLAS once for each matrix, each at the rate of its own width)."""
    items, rows = _chunking(problem, settings)
    return items * rows * _row_columns(problem, _tiles(problem)[1])


def temp_bytes(problem: Problem, settings: Settings) -> int:
    """The chunks' buffers held at once, one set per thread."""
    p = problem
    (items, rows), cols = _chunking(p, settings), _row_columns(p, _tiles(p)[1])
    n, t = _side(p), _tile(p)
    grid_and_across = p.in_per_group * ((t + 1) * rows + n) * (t * cols + n)  # (t rows + n - t) + rows rows, at most
    transformed = (n * n * (p.in_per_group + p.out_per_group) + n * p.out_per_group) * rows * cols  # v, m, half
    per_lane = items * p.groups * (grid_and_across + transformed) * p.dtype.itemsize
    return gemm_lanes(settings.workers) * per_lane


_VERSION = 9  # bump when the source below changes: numba keys its cache by file

_TRANSFORMS_SOURCE = '''"""Generated by arrayconv._methods._winograd: F(2x2, 3x3)'s, F(4x4, 3x3)'s and F(2x2, 5x5)'s transforms, tile by tile."""
from numba import njit

@njit(nogil=True, cache=True)
def input_transform(grid, v):
    """v[a, b, g, c, r, q] = (B^T d B)[a, b] of the 4x4 block d of grid[g, c] at (2r, 2q)."""
    G, Cg, R, C = v.shape[2], v.shape[3], v.shape[4], v.shape[5]
    for g in range(G):
        for c in range(Cg):
            for r in range(R):
                d0, d1, d2, d3 = grid[g, c, 2 * r], grid[g, c, 2 * r + 1], grid[g, c, 2 * r + 2], grid[g, c, 2 * r + 3]
                v00, v01, v02, v03 = v[0, 0, g, c, r], v[0, 1, g, c, r], v[0, 2, g, c, r], v[0, 3, g, c, r]
                v10, v11, v12, v13 = v[1, 0, g, c, r], v[1, 1, g, c, r], v[1, 2, g, c, r], v[1, 3, g, c, r]
                v20, v21, v22, v23 = v[2, 0, g, c, r], v[2, 1, g, c, r], v[2, 2, g, c, r], v[2, 3, g, c, r]
                v30, v31, v32, v33 = v[3, 0, g, c, r], v[3, 1, g, c, r], v[3, 2, g, c, r], v[3, 3, g, c, r]
                for q in range(C):
                    k = 2 * q
                    a0, a1, a2, a3 = d0[k], d0[k + 1], d0[k + 2], d0[k + 3]
                    b0, b1, b2, b3 = d1[k], d1[k + 1], d1[k + 2], d1[k + 3]
                    c0, c1, c2, c3 = d2[k], d2[k + 1], d2[k + 2], d2[k + 3]
                    e0, e1, e2, e3 = d3[k], d3[k + 1], d3[k + 2], d3[k + 3]
                    t0, t1, t2, t3 = a0 - c0, a1 - c1, a2 - c2, a3 - c3
                    v00[q] = t0 - t2
                    v01[q] = t1 + t2
                    v02[q] = t2 - t1
                    v03[q] = t1 - t3
                    t0, t1, t2, t3 = b0 + c0, b1 + c1, b2 + c2, b3 + c3
                    v10[q] = t0 - t2
                    v11[q] = t1 + t2
                    v12[q] = t2 - t1
                    v13[q] = t1 - t3
                    t0, t1, t2, t3 = c0 - b0, c1 - b1, c2 - b2, c3 - b3
                    v20[q] = t0 - t2
                    v21[q] = t1 + t2
                    v22[q] = t2 - t1
                    v23[q] = t1 - t3
                    t0, t1, t2, t3 = b0 - e0, b1 - e1, b2 - e2, b3 - e3
                    v30[q] = t0 - t2
                    v31[q] = t1 + t2
                    v32[q] = t2 - t1
                    v33[q] = t1 - t3

@njit(nogil=True, cache=True)
def output_transform(m, out):
    """out[g, o, 2r + i, 2q + j] = (A^T m A)[i, j] of tile (r, q), where it lies in out."""
    G, O, R, C = m.shape[2], m.shape[3], m.shape[4], m.shape[5]
    n, w = out.shape[2], out.shape[3]
    for g in range(G):
        for o in range(O):
            for r in range(R):
                m00, m01, m02, m03 = m[0, 0, g, o, r], m[0, 1, g, o, r], m[0, 2, g, o, r], m[0, 3, g, o, r]
                m10, m11, m12, m13 = m[1, 0, g, o, r], m[1, 1, g, o, r], m[1, 2, g, o, r], m[1, 3, g, o, r]
                m20, m21, m22, m23 = m[2, 0, g, o, r], m[2, 1, g, o, r], m[2, 2, g, o, r], m[2, 3, g, o, r]
                m30, m31, m32, m33 = m[3, 0, g, o, r], m[3, 1, g, o, r], m[3, 2, g, o, r], m[3, 3, g, o, r]
                top = out[g, o, 2 * r]
                two = 2 * r + 1 < n
                bottom = out[g, o, 2 * r + 1] if two else top
                for q in range(C):
                    h00 = (m00[q] + m10[q]) + m20[q]
                    h01 = (m01[q] + m11[q]) + m21[q]
                    h02 = (m02[q] + m12[q]) + m22[q]
                    h03 = (m03[q] + m13[q]) + m23[q]
                    j = 2 * q
                    top[j] = (h00 + h01) + h02
                    if j + 1 < w:
                        top[j + 1] = (h01 - h02) - h03
                if two:
                    for q in range(C):
                        h10 = (m10[q] - m20[q]) - m30[q]
                        h11 = (m11[q] - m21[q]) - m31[q]
                        h12 = (m12[q] - m22[q]) - m32[q]
                        h13 = (m13[q] - m23[q]) - m33[q]
                        j = 2 * q
                        bottom[j] = (h10 + h11) + h12
                        if j + 1 < w:
                            bottom[j + 1] = (h11 - h12) - h13
'''


def _weighted_sum(terms: list[tuple[float, str]]) -> str:
    """Python source of ``sum(factor * name)``, each factor other than 1 read from the
    loops' coefficient array ``k`` (:data:`_COEFFICIENTS`)."""
    source = ""
    for factor, name in terms:
        magnitude = abs(float(factor))
        product = name if magnitude == 1 else f"k[{list(_COEFFICIENTS).index(magnitude)}] * {name}"
        source += (" - " if factor < 0 else " + ") + product if source else ("-" if factor < 0 else "") + product
    return source


def _six_by_six_source(tile: int, at: np.ndarray) -> str:
    """numba's loops of F(tile x tile, r x r)'s transforms on 6x6 blocks (F(4x4, 3x3)'s):
    ``v = B^T d B`` of each 6x6 block of the grid at every `tile`-th sample, and ``out = A^T m A``
    (`at`: A^T) of each tile where it lies in out; each in two passes through scratch `t`,
    each value read once a pass: along the block's rows (all of B^T's rows or A^T's from
    one read of each sample), then along its columns (one pass over all 36 planes ran 2.5x
    slower)."""
    n, bt = 6, _INPUT_5
    lines = ["", "@njit(nogil=True, cache=True)", f"def forward_6_{tile}(grid, v, k, t):",
             "    G, Cg, R, C = v.shape[2], v.shape[3], v.shape[4], v.shape[5]",
             "    for g in range(G):", "        for c in range(Cg):", "            for r in range(R):"]
    lines += [f"                d{i} = grid[g, c, {tile} * r + {i}]" for i in range(n)]
    lines += [f"                t{a} = t[{a}]" for a in range(n)]
    lines += [f"                for j in range({tile} * C + {n - tile}):"]
    lines += [f"                    e{i} = d{i}[j]" for i in range(n)]
    lines += [f"                    t{a}[j] = " + _weighted_sum([(bt[a, i], f"e{i}") for i in range(n) if bt[a, i]]) for a in range(n)]
    for a in range(n):  # B^T's rows over the block's columns, from the rows' sums t[a]
        lines += [f"                v{b} = v[{a}, {b}, g, c, r]" for b in range(n)]
        lines += ["                for q in range(C):", f"                    j = {tile} * q"]
        lines += [f"                    x{i} = t{a}[j + {i}]" for i in range(n)]
        lines += [f"                    v{b}[q] = " + _weighted_sum([(bt[b, i], f"x{i}") for i in range(n) if bt[b, i]]) for b in range(n)]
    lines += ["", "@njit(nogil=True, cache=True)", f"def backward_6_{tile}(m, out, k, t):",
              "    G, O, R, C = m.shape[2], m.shape[3], m.shape[4], m.shape[5]",
              "    rows, width = out.shape[2], out.shape[3]",
              f"    whole = min(C, width // {tile})  # tiles whose outputs all lie in out",
              "    for g in range(G):", "        for o in range(O):", "            for r in range(R):"]
    for b in range(n):  # A^T's rows over the tile's rows: t[i, b] from one read of each plane
        lines += [f"                m{a} = m[{a}, {b}, g, o, r]" for a in range(n)]
        lines += ["                for q in range(C):"]
        lines += [f"                    x{a} = m{a}[q]" for a in range(n)]
        lines += [f"                    t[{i}, {b}, q] = " + _weighted_sum([(at[i, a], f"x{a}") for a in range(n) if at[i, a]]) for i in range(tile)]
    lines += [f"                for i in range(min({tile}, rows - {tile} * r)):  # A^T's rows over the tile's columns",
              f"                    y, s = out[g, o, {tile} * r + i], t[i]"]
    return "\n".join(lines + _tile_columns(tile, at, "s[{b}, q]")) + "\n"


def _tile_columns(tile: int, at: np.ndarray, load: str) -> list[str]:
    """Lines of the output transform's last pass over a row ``y`` of `tile` outputs' rows:
    A^T's rows over each tile's columns, from sums read by `load` (formatted with ``b``),
    the whole tiles in a loop without a branch (it vectorizes), then the cropped last."""
    sums = [_weighted_sum([(at[e, b], f"h{b}") for b in range(6) if at[e, b]]) for e in range(tile)]
    loads = [f"                        h{b} = {load.format(b=b)}" for b in range(6)] + [f"                        j = {tile} * q"]
    return ["                    for q in range(whole):", *loads, *(f"                        y[j + {e}] = {sums[e]}" for e in range(tile)),
            "                    for q in range(whole, C):", *loads,
            *(f"                        if j + {e} < width:\n                            y[j + {e}] = {sums[e]}" for e in range(tile))]


def _lines_source(tile: int, at: np.ndarray) -> str:
    """As :func:`_six_by_six_source`'s loops (F(2x2, 5x5)'s, :func:`_as_lines`), each pass
    over a channel's tiles as one long loop over unit-stride lines, which the compiler
    vectorizes whole (a loop a row of tiles, reading at a stride of `tile`, ran at a third
    of the speed on rows of 28 tiles: the vector loop needs 32 or more). The grid comes by
    phase (``grid[g, c, f, e]``: its rows ``tile * r + f``, columns ``tile * q + e``;
    ``fill_phases``), the planes as lines of samples (`v`, `m`: a plane every `plane`,
    each channel's `columns`, this item's from `at`), and each row of tiles with
    ``(6 - 1) // tile`` columns past its tiles (made from the next row's samples, unused)."""
    n, bt, extra = 6, _INPUT_5, (6 - 1) // tile
    phases = range(tile)
    lines = ["", "@njit(nogil=True, cache=True)", f"def fill_phases_{tile}(x, grid, first_row, first_col, dy, dx):",
             f'    """grid[i, g, c, f, e, r, q] = x[i, g, c, first_row + dy * ({tile} * r + f), first_col + dx * ({tile} * q + e)],',
             '    zero past the edges of x: each row of the grid read once, into its phases."""',
             "    R, Q, H, W = grid.shape[5], grid.shape[6], x.shape[3], x.shape[4]",
             f"    lo = min(Q, max(0, -(first_col // ({tile} * dx))))  # the columns q whose samples all lie in x",
             f"    hi = max(lo, min(Q, (W - first_col - dx * {tile - 1} + {tile} * dx - 1) // ({tile} * dx)))",
             "    for i in range(grid.shape[0]):", "        for g in range(grid.shape[1]):", "            for c in range(grid.shape[2]):",
             f"                for k in range({tile} * R):",
             f"                    f, r, row = k % {tile}, k // {tile}, first_row + dy * k"]
    lines += [f"                    d{e} = grid[i, g, c, f, {e}, r]" for e in phases]
    lines += ["                    if row < 0 or row >= H:", "                        for q in range(Q):"]
    lines += [f"                            d{e}[q] = 0" for e in phases]
    lines += ["                        continue", "                    src = x[i, g, c, row]",
              "                    if dx == 1:  # unit-stride reads: the compiler's vector loads", "                        for q in range(lo, hi):"]
    lines += [f"                            d{e}[q] = src[first_col + {tile} * q + {e}]" for e in phases]
    lines += ["                    else:", "                        for q in range(lo, hi):"]
    lines += [f"                            d{e}[q] = src[first_col + dx * ({tile} * q + {e})]" for e in phases]
    for edge in ("range(lo)", "range(hi, Q)"):  # the columns past the edges
        lines += [f"                    for q in {edge}:"]
        lines += [f"                        s = first_col + dx * ({tile} * q + {e})\n                        d{e}[q] = src[s] if 0 <= s < W else 0" for e in phases]
    lines += ["", "@njit(nogil=True, cache=True)", f"def forward_lines_6_{tile}(grid, v, plane, at, columns, k, t):",
             f"    G, Cg, R, Q = grid.shape[0], grid.shape[1], grid.shape[4] - {extra}, grid.shape[5]",
             f"    size, blocks = R * Q, grid.reshape(G, Cg, {tile * tile}, (R + {extra}) * Q)",
             "    for a in range(t.shape[0]):  # the rows' sums past the last row: read, unused",
             "        for e in range(t.shape[1]):", "            for j in range(size, t.shape[2]):", "                t[a, e, j] = 0",
             "    for g in range(G):", "        for c in range(Cg):", "            row = (g * Cg + c) * columns + at"]
    for e in range(tile):  # B^T's rows over the blocks' rows, one column phase at a time
        lines += [f"            d{i} = blocks[g, c, {i % tile * tile + e}]" for i in range(n)]
        lines += [f"            t{a}_{e} = t[{a}, {e}]" for a in range(n)]
        lines += ["            for j in range(size):"]
        lines += [f"                e{i} = d{i}[j{f' + {i // tile} * Q' if i // tile else ''}]" for i in range(n)]
        lines += [f"                t{a}_{e}[j] = " + _weighted_sum([(bt[a, i], f"e{i}") for i in range(n) if bt[a, i]]) for a in range(n)]
    for a in range(n):  # B^T's rows over the blocks' columns, from the rows' sums t[a]
        lines += [f"            v{b} = v[{a * n + b} * plane + row : {a * n + b} * plane + row + size]" for b in range(n)]
        lines += ["            for j in range(size):"]
        lines += [f"                x{i} = t{a}_{i % tile}[j{f' + {i // tile}' if i // tile else ''}]" for i in range(n)]
        lines += [f"                v{b}[j] = " + _weighted_sum([(bt[b, i], f"x{i}") for i in range(n) if bt[b, i]]) for b in range(n)]
    lines += ["", "@njit(nogil=True, cache=True)", f"def backward_lines_6_{tile}(m, plane, at, columns, R, Q, out, k, t):",
              "    G, O, rows, width = out.shape[0], out.shape[1], out.shape[2], out.shape[3]",
              f"    size, C = R * Q, Q - {extra}",
              f"    whole = min(C, width // {tile})  # tiles whose outputs all lie in out",
              "    for g in range(G):", "        for o in range(O):", "            row = (g * O + o) * columns + at"]
    for b in range(n):  # A^T's rows over the tiles' rows: t[b, i] from one read of each plane
        lines += [f"            m{a} = m[{a * n + b} * plane + row : {a * n + b} * plane + row + size]" for a in range(n)]
        lines += [f"            s{i} = t[{b}, {i}]" for i in range(tile)]
        lines += ["            for j in range(size):"]
        lines += [f"                x{a} = m{a}[j]" for a in range(n)]
        lines += [f"                s{i}[j] = " + _weighted_sum([(at[i, a], f"x{a}") for a in range(n) if at[i, a]]) for i in range(tile)]
    lines += ["            for r in range(R):",
              f"                for i in range(min({tile}, rows - {tile} * r)):  # A^T's rows over the tiles' columns",
              f"                    y, base = out[g, o, {tile} * r + i], r * Q"]
    return "\n".join(lines + _tile_columns(tile, at, "t[{b}, i, base + q]")) + "\n"


_TRANSFORMS_SOURCE += _six_by_six_source(4, _OUTPUT_43) + _lines_source(2, _OUTPUT_5) + '''

@njit(nogil=True, cache=True)
def fill_mapped(x, grid, first_row, dy, cols):
    """grid[i, g, c, r, j] = x[i, g, c, first_row + dy * r, cols[j]], zero past the rows of
    x and where cols[j] is -1."""
    H = x.shape[3]
    for i in range(grid.shape[0]):
        for g in range(grid.shape[1]):
            for c in range(grid.shape[2]):
                for r in range(grid.shape[3]):
                    dst, row = grid[i, g, c, r], first_row + dy * r
                    if row < 0 or row >= H:
                        for j in range(dst.shape[0]):
                            dst[j] = 0
                        continue
                    src = x[i, g, c, row]
                    for j in range(dst.shape[0]):
                        k = cols[j]
                        dst[j] = src[k] if k >= 0 else 0
'''
