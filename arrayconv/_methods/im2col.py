"""im2col method: gather every tap into a column matrix, then GEMMs per chunk.

The column matrix of a chunk is ``(Bc, G, taps * Cg, samples)``, filled from views of the
padded input and multiplied by the kernel as ``(G, Og, taps * Cg)``. On the CPU its rows
run channel by channel, ``Cg * taps``, the kernel's own order, so the kernel needs no form
of its own, and its samples are the output's, so the GEMMs write the result in place.
Chunks are sized so the column matrix stays under both a cache-friendly size and the
memory budget: a 30x30 kernel on a 1920x1920 image never asks for the whole 12.9 GB matrix.

For tiny images (stacks of patches) the gather and the scatter of the result cost more
than the GEMM. There the whole layer is one GEMM with its operator matrix,
``(C * in_samples, O * out_samples)``, built once from the kernel: the input and the
output keep their own layouts, at the price of multiplying by the operator's zeros (at
most 2.5 times the direct work).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from .._runtime import config as _config
from .._runtime.backend import NUMPY, Array, Backend
from .._runtime.config import Settings
from .._runtime.fitted import fitted
from .._runtime.rates import FULL_RATE_GEMM, GEMM_ROWS, Rates, small_gemm_share
from .._runtime.scratch import scratch
from .._runtime.threads import Gemm, gemm_lanes, run_gemm_jobs, splits_gemm
from .._spec.problem import Problem
from . import _gather, _winograd, direct
from ._registry import Cost, Method, exact_dtype, output, register
from ._taps import Chunk, assign_rows, chunk_input, flat_length, layout, pad_input, padded_bytes, padded_grid, padded_rows_shape, pads_periodically, row_elements

# Preferred size of one chunk's column matrix: large enough for an efficient GEMM.
_CHUNK_BYTES = 32 << 20
# On the CPU, chunks of columns hold this much per kernel tap, at least _CPU_CHUNK_BYTES and at
# most _CPU_MAX_CHUNK_BYTES: small enough to stay in cache between the gather and the GEMM.
_CPU_TAP_BYTES = 512 << 10
_CPU_CHUNK_BYTES = 2 << 20
_CPU_MAX_CHUNK_BYTES = 8 << 20
# Passes at stream speed over the result the CPU's GEMMs write (the columns, written by the
# gather and read by the GEMM in cache, are one pass).
_EXACT_RESULT_PASSES = fitted("im2col", "EXACT_RESULT_PASSES")
# Columns at most this deep (a 1x1 kernel over one channel per group) are charged no less than
# direct's run and the gather: a product of one term runs far below the GEMM rate.
_SHALLOW_DEPTH = 1
# On a GPU, launches cost tens of microseconds: fewer, larger chunks.
_GPU_CHUNK_BYTES = 1 << 30
# On a GPU: the GEMM's and the passes' weights, the launches of each chunk (a call's, the
# kernel's form's counted with them), and the launches building the operator matrix takes per
# axis (a kernel form's).
_GPU_GEMM_WEIGHT, _GPU_PASS_WEIGHT = fitted("im2col", "GPU_GEMM_WEIGHT"), fitted("im2col", "GPU_PASS_WEIGHT")
_GPU_CALLS_PER_CHUNK = fitted("calls", "A_CALL")
_GPU_OPERATOR_AXIS_CALLS = fitted("calls", "KERNEL_FORM")
# The operator matrix is used up to this size, and when the image has at most this many
# times the kernel's taps (the share of the operator's zeros).
_OPERATOR_BYTES = 16 << 20
_OPERATOR_WASTE = fitted("im2col", "OPERATOR_WASTE")
# The GEMMs run at least this share of the GEMM rate; on the CPU the operator's is the slower
# of that and its bytes (the matrix, read from cache as a GEMM tap's: direct.GEMM_CACHE_SPEEDUP).
_GEMM_FLOOR = fitted("im2col", "GEMM_FLOOR")
# The GEMMs reach the rate from rates.FULL_RATE_GEMM on their short sides (the operator's batch
# items and columns; the columns' depth, with GEMM_ROWS output channels); on the CPU, shallow and
# narrow columns' GEMMs reach at least a measured share (:func:`.._runtime.rates.small_gemm_share`).
# When the last axis's taps alone make columns this deep (taps x input channels), only they are
# gathered.
_LAST_AXIS_DEPTH = 512
# With a stride, a chunk's calls are charged as if its kernel had at most this many taps: the calls
# per tap stand in for costs measured at unit stride (:func:`_exact_cost`).
_STRIDED_CALLED_TAPS = fitted("im2col", "STRIDED_CALLED_TAPS")


@dataclass(frozen=True, slots=True)
class Operator:
    """The whole layer as one matrix ``(C * in_samples, O * out_samples)``."""

    matrix: Array


@dataclass(frozen=True, slots=True)
class LastAxisColumns:
    """The kernel when only the last axis's taps are gathered: ``(other taps, G, Og,
    Cg * k_last)``, as :func:`direct.prepare` lays it out; the columns' channel
    ``c * k_last + j`` holds tap ``j`` of channel ``c``."""

    taps: Array


def _gathers_last_axis(problem: Problem, backend: Backend) -> bool:
    """Whether `problem` gathers only its last axis's taps (on the CPU, when they alone make
    deep columns and an item has at least as many outputs as filters: with fewer, each tap
    row's GEMM read all the filters for a few columns, and one GEMM of every tap ran a 3x3
    stride-2 256 -> 512 layer on 14x14 in 0.84x the time; on a GPU, where copies are cheap
    and launches are not, every tap is gathered)."""
    p = problem
    deep = p.kernel[-1] * p.in_per_group >= _LAST_AXIS_DEPTH
    wide = p.out_per_group <= math.prod(p.out_spatial)
    return backend.name == "numpy" and len(p.kernel) > 1 and p.kernel[-1] > 1 and deep and wide


def _operator_fits(problem: Problem, budget: int) -> bool:
    """Whether `problem` runs as one GEMM with its operator matrix (tiny images), which
    must fit the memory `budget` too: a tile at an image's edge, smaller than the others,
    once took an operator larger than the columns of the larger ones."""
    p = problem
    size = _operator_bytes(p)
    return size <= min(_OPERATOR_BYTES, budget) and math.prod(p.spatial) <= _OPERATOR_WASTE * math.prod(p.kernel)


def _operator_bytes(problem: Problem) -> int:
    """Bytes of the operator matrix (:func:`_operator`)."""
    p = problem
    return p.groups * p.in_per_group * math.prod(p.spatial) * p.groups * p.out_per_group * math.prod(p.out_spatial) * p.dtype.itemsize


def _operator(w: Array, problem: Problem, backend: Backend) -> Operator:
    """The operator matrix, built from the kernel by placing its taps, one axis at a time.

    Along axis ``d``, tap ``m`` of output ``n`` reads input sample
    ``q = n*stride + m*dilation - pad_lo`` (wrapped when circular; none in the zero
    padding): the kernel's values are copied to ``(n, q)``, wrapped taps landing on one
    sample added up, and the groups' blocks placed on the diagonal. Memory and time are
    those of the matrix, not of a ``taps x outputs x inputs`` selection tensor. For one
    image the matrix is the transposed view of a C-ordered ``(O * out, C * in)`` array:
    its copy runs along input samples, and a matrix-vector product reads either order at
    one speed (a batch's GEMM ran 12-25% slower with a transposed matrix).
    """
    p, xp = problem, backend.xp
    block = w.reshape(p.groups * p.out_per_group * p.in_per_group, *p.kernel)
    for axis in reversed(range(len(p.kernel))):  # -> (G*Og*Cg, n_0, q_0, ..., n_d, q_d)
        block = _place_taps(block, axis, p, xp)
    nd = len(p.kernel)
    block = block.reshape(p.groups, p.out_per_group, p.in_per_group, *block.shape[1:])
    outputs, inputs = (1, *range(3, 3 + 2 * nd, 2)), (2, *range(4, 4 + 2 * nd, 2))
    transposed = _transposed(p)
    order = (0, *outputs, *inputs) if transposed else (0, *inputs, *outputs)
    rows = p.out_per_group * math.prod(p.out_spatial) if transposed else p.in_per_group * math.prod(p.spatial)
    block = block.transpose(order).reshape(p.groups, rows, -1)
    if p.groups == 1:
        matrix = block[0]
    else:
        matrix = xp.zeros((p.groups, block.shape[1], p.groups, block.shape[2]), dtype=w.dtype)
        for group in range(p.groups):
            matrix[group, :, group] = block[group]
        matrix = matrix.reshape(p.groups * block.shape[1], -1)
    return Operator(matrix.T if transposed else matrix)


def _transposed(problem: Problem) -> bool:
    """Whether the operator matrix is kept as a transposed view (one image: a matrix-vector
    product reads either order at one speed; see :func:`_operator`)."""
    return problem.batch == 1


def _place_taps(block: Array, axis: int, problem: Problem, xp: Any) -> Array:
    """``block (L, m_0, ..., m_axis, *rest)`` with the taps of `axis` placed at their
    ``(output, input sample)`` pairs: ``(L, m_0, ..., m_axis-1, n_axis, q_axis, *rest)``.

    Taps closer than the input's length (over the dilation) never wrap onto one sample, so
    each run of them is placed by one indexed write; without wrapping, all taps are one run.
    """
    p = problem
    taps, n_in = p.kernel[axis], p.spatial[axis]
    tap = xp.arange(taps).reshape(-1, 1)
    output = xp.arange(p.out_spatial[axis]).reshape(1, -1)
    read = output * p.stride[axis] + tap * p.dilation[axis] - p.pad_lo[axis]
    if p.circular:
        read = read % n_in
        run = (n_in - 1) // p.dilation[axis] + 1
    else:
        run = taps
    lead, rest = block.shape[: 1 + axis], block.shape[2 + axis :]
    placed = xp.zeros((*lead, p.out_spatial[axis] * n_in, *rest), dtype=block.dtype)
    keep = (slice(None),) * len(lead)
    for first in range(0, taps, run):
        reads = read[first : first + run].ravel()
        pairs = xp.flatnonzero((reads >= 0) & (reads < n_in))  # tap * outputs + output
        target = pairs % p.out_spatial[axis] * n_in + reads[pairs]
        values = block[(*keep, pairs // p.out_spatial[axis] + first)]
        if run < taps:  # runs after the first add onto wrapped samples
            values = values + placed[(*keep, target)]
        placed[(*keep, target)] = values
    return placed.reshape(*lead, p.out_spatial[axis], n_in, *rest)


def _bytes_per_sample(problem: Problem) -> int:
    return problem.groups * math.prod(problem.kernel) * problem.in_per_group * problem.dtype.itemsize


def prepare(w: Array, problem: Problem, backend: Backend) -> Array | Operator | LastAxisColumns | _winograd.WinogradKernel:
    """The kernel as ``(G, Og, Cg * taps)`` on the CPU (a view of it where its samples allow),
    ``(G, Og, taps * Cg)`` on a GPU, matching the order of the columns (or the operator
    matrix, for tiny images; Winograd's transformed taps, for 3x3 layers of many
    channels on the CPU; the last axis's taps, for deep columns on the CPU)."""
    p, xp = problem, backend.xp
    if _operator_fits(p, _config.budget(backend.name)):
        return _operator(w, p, backend)
    if _winograd.fits(p, backend):
        return _winograd.prepare(w, p)
    if _gathers_last_axis(p, backend):
        split = w.reshape(p.groups * p.out_per_group * p.in_per_group, -1, p.kernel[-1])
        depth = p.in_per_group * p.kernel[-1]
        return LastAxisColumns(_swap_rows(split, backend).reshape(-1, p.groups, p.out_per_group, depth))
    if backend.name == "numpy":  # the kernel's own order, channels then taps: a view where it can be
        return w.reshape(p.groups, p.out_per_group, -1)
    taps_last = w.reshape(p.groups, p.out_per_group, p.in_per_group, -1)
    return xp.ascontiguousarray(taps_last.transpose(0, 1, 3, 2)).reshape(p.groups, p.out_per_group, -1)


def _swap_rows(a: Array, backend: Backend) -> Array:
    """``a (n, m, k)`` as a contiguous ``(m, n, k)``. On NumPy each last-axis row moves as one
    element (a void of its bytes) when it is contiguous: numpy's copy loop pays for every
    innermost run, so a (64, 256, 16, 16) kernel took 18.7 ms in runs of 16 samples and 5.1
    ms in rows."""
    xp = backend.xp
    if backend.name != "numpy" or a.strides[-1] != a.itemsize:
        return xp.ascontiguousarray(a.transpose(1, 0, 2))
    rows = row_elements(xp.ascontiguousarray(a))[..., 0]
    return xp.ascontiguousarray(rows.T).view(a.dtype).reshape(a.shape[1], a.shape[0], a.shape[2])


def run(x: Array, w_cols: Array, problem: Problem, backend: Backend, out: Array | None = None) -> Array:
    """Solve `problem` with chunked column matrices and GEMM (`w_cols` from :func:`prepare`).

    On the CPU, :func:`_run_exact`. On a GPU a chunk's columns are ``(G, taps * Cg, Bc *
    samples)``, junk columns included: batch items sit side by side, so a batch of small
    images is one GEMM per group (launches cost more there than the copy of the products).
    """
    p, xp = problem, backend.xp
    out = output(out, p, backend, x.dtype)
    if isinstance(w_cols, Operator):
        xp.matmul(x.reshape(p.batch, -1), w_cols.matrix, out=out.reshape(p.batch, -1))
        return out.reshape(p.y_shape)
    if isinstance(w_cols, _winograd.WinogradKernel):
        _winograd.run(x, w_cols, p, backend, out, _config.settings(NUMPY.name))
        return out.reshape(p.y_shape)
    if isinstance(w_cols, LastAxisColumns):
        _run_last_axis(x, w_cols.taps, p, backend, out)
        return out.reshape(p.y_shape)
    if backend.name == "numpy":
        _run_exact(x, w_cols, p, backend, out)
        return out.reshape(p.y_shape)
    padded, lay = pad_input(x, p, backend), layout(p)
    depth = len(lay.taps) * p.in_per_group
    budget = min(_GPU_CHUNK_BYTES, _config.budget(backend.name) // 2)
    nd = len(p.kernel)
    for chunk in lay.chunks(_bytes_per_sample(p), budget):
        items, n = chunk.b1 - chunk.b0, lay.chunk_length(chunk)
        cols = scratch("im2col.cols", (p.groups, len(lay.taps), p.in_per_group, items, n), x.dtype, backend)
        if p.unit_stride:  # one copy kernel instead of one launch per tap
            windows = lay.tap_windows(padded, chunk, backend)  # (Bc, G, Cg, *kernel, n)
            order = (1, *range(3, 3 + nd), 2, 0, 3 + nd)
            cols.reshape(p.groups, *p.kernel, p.in_per_group, items, n)[...] = windows.transpose(order)
        else:
            for t in range(len(lay.taps)):
                cols[:, t] = lay.tap_block(padded, t, chunk).transpose(1, 2, 0, 3)
        products = scratch("im2col.products", (p.groups, p.out_per_group, items * n), x.dtype, backend)
        xp.matmul(w_cols, cols.reshape(p.groups, depth, items * n), out=products)
        products = products.reshape(p.groups, p.out_per_group, items, n).transpose(2, 0, 1, 3)
        lay.store_block(out, products, chunk)
    return out.reshape(p.y_shape)


def _run_exact(x: Array, w_cols: Array, problem: Problem, backend: Backend, out: Array) -> None:
    """Fill `out` ``(B, G, Og, *out_spatial)`` on the CPU, chunk by chunk: columns of the
    output samples only (no junk columns), ``(Bc, G, Cg * taps, samples)`` per chunk, and
    one GEMM per item and group written straight into `out` (a chunk of rows writes its
    rows of one item: a matrix whose rows are `out`'s, which BLAS takes as it is).

    Small chunks (:func:`_cpu_chunk_bytes`) keep the columns in cache between their
    gather and the GEMM, and the result needs no copy (against wide columns with junk,
    one GEMM per chunk and a transposing copy, up to 1.9x faster). Chunks run on
    every worker thread where BLAS can be held to one thread (:func:`.._threads.gemm_lanes`),
    each gathering its own columns and running its own GEMMs.
    """
    p = problem
    x = x.reshape(p.batch, p.groups, p.in_per_group, *p.spatial)
    whole, lay = _whole_grid(x, p, backend), layout(p)
    row_samples, depth = math.prod(p.out_spatial[1:]), len(lay.taps) * p.in_per_group
    lanes, chunk_bytes = _exact_lanes(p, _config.settings(NUMPY.name))
    chunks = lay.chunks(_bytes_per_sample(p), chunk_bytes, exact=True, parts=_config.cores())
    filters = _filter_parts(p)
    compiled = _gather.applies(p)
    nd = len(p.kernel)
    channels_first = (0, 1, 2 + nd, *range(2, 2 + nd), *range(3 + nd, 3 + nd + len(p.out_spatial)))  # of the taps' windows

    def fill(job: tuple[Chunk, slice], gemm: Gemm) -> None:
        chunk, kept = job
        items, rows = chunk.b1 - chunk.b0, chunk.r1 - chunk.r0
        cols = scratch("im2col.cols", (items, p.groups, p.in_per_group, *p.kernel, rows, *p.out_spatial[1:]), x.dtype, backend)
        if compiled:  # from the input itself, zeros past its edges
            _gather.gather(x[chunk.b0 : chunk.b1], cols, p, chunk.r0)
        else:
            grid, at = chunk_input(whole, x, chunk, p, backend)
            windows = lay.output_windows(grid, at, backend)  # (Bc, G, *kernel, Cg, rows, ...)
            assign_rows(cols, windows.transpose(channels_first))  # one copy of every tap
        cols = cols.reshape(items, p.groups, depth, rows * row_samples)
        if rows == p.out_spatial[0]:
            gemm(w_cols[:, kept], cols, out[chunk.b0 : chunk.b1].reshape(items, p.groups, p.out_per_group, -1)[:, :, kept])
        else:  # one item: its rows r0:r1 of every output channel
            gemm(w_cols[:, kept], cols[0], out[chunk.b0, :, :, chunk.r0 : chunk.r1].reshape(p.groups, p.out_per_group, -1)[:, kept])

    jobs = [(chunk, kept) for chunk in chunks for kept in filters]
    run_gemm_jobs(jobs, fill, lanes, (filters[0].stop - filters[0].start) * depth * (chunks[0].r1 - chunks[0].r0) * row_samples)


def _filter_parts(problem: Problem) -> list[slice]:
    """The output channels each of :func:`_run_exact`'s GEMMs makes: all of them, or a
    block a core for one image too narrow to cut in rows (:func:`_narrow_item`), each
    core gathering all its columns (3x3 stride 2, 256 -> 512 on 14x14: 0.11 ms) and
    reading its share of the kernel: no column made on one core is read on another."""
    p, cores = problem, _config.cores()
    if not _narrow_item(p):
        return [slice(0, p.out_per_group)]
    block = -(-p.out_per_group // cores)
    return [slice(f, min(f + block, p.out_per_group)) for f in range(0, p.out_per_group, block)]


def _narrow_item(problem: Problem) -> bool:
    """Whether `problem` is fewer items than cores, each a GEMM worth splitting whose
    output rows, cut a chunk a core, would leave each core fewer columns than reach the
    GEMM rate (``FULL_RATE_GEMM``), and whose output channels make at least that many a
    core."""
    p, cores, side = problem, _config.cores(), FULL_RATE_GEMM["side"]
    narrow = -(-p.out_spatial[0] // cores) * math.prod(p.out_spatial[1:]) < side
    return p.batch < cores and splits_gemm(p.macs // p.batch) and narrow and p.out_per_group >= cores * side


def _whole_grid(x: Array, problem: Problem, backend: Backend) -> Array | None:
    """The grid ``(B, G, Cg, *padded)`` that every chunk of :func:`_run_exact` reads: `x`
    itself without padding, `x` padded once with circular padding; None with zero padding,
    where each chunk pads its own rows (:func:`_pads_chunks`)."""
    if pads_periodically(problem):
        return padded_grid(pad_input(x, problem, backend), problem)
    return None if _pads_chunks(problem) else x


def _pads_chunks(problem: Problem) -> bool:
    """Whether each chunk of :func:`_run_exact` pads its own rows with zeros
    (:func:`._taps.padded_rows`), in cache and on its own thread, instead of the whole
    input padded first on one thread."""
    return problem.pads and not pads_periodically(problem)


def _exact_lanes(problem: Problem, settings: Settings) -> tuple[int, int]:
    """Threads of :func:`_run_exact` and the bytes of each one's chunk of columns: the
    columns in flight stay within half the memory budget, each thread holds at least a
    row of them (else one thread), and fewer items than cores whose GEMMs are worth
    splitting are cut in rows, a chunk a core at least, so that every core gathers columns
    (a 3x3 stride-2 64 -> 128 layer on 56x56, batch 1: 0.95x the time of one chunk whose
    GEMM alone is split)."""
    p, budget, cores = problem, settings.budget // 2, _config.cores()
    lanes = gemm_lanes(settings.workers)
    row_bytes = _row_bytes(p, exact=True)
    if budget // lanes < row_bytes:
        lanes = 1
    chunk = min(_cpu_chunk_bytes(p), budget // lanes)
    if p.batch < cores and splits_gemm(p.macs // p.batch) and not _narrow_item(p):
        chunk = min(chunk, row_bytes * -(-p.out_spatial[0] // cores))
    return lanes, max(1, chunk)


def _cpu_chunk_bytes(problem: Problem) -> int:
    """Preferred bytes of one chunk's columns on the CPU (:data:`_CPU_TAP_BYTES`)."""
    return min(_CPU_MAX_CHUNK_BYTES, max(_CPU_CHUNK_BYTES, math.prod(problem.kernel) * _CPU_TAP_BYTES))


def _run_last_axis(x: Array, w_taps: Array, problem: Problem, backend: Backend, out: Array) -> None:
    """Fill `out` ``(B, G, Og, *out_spatial)`` chunk by chunk: gather the last axis's taps
    of the chunk's rows into a slab, then sum the other taps over it (:func:`direct.accumulate`).

    The chunks, at least one per core and near-equal (the same chunks for any number of
    workers, so the same bits), run on the GEMM lanes (:func:`.._threads.gemm_lanes`)
    with BLAS on one thread per lane: BLAS's own threads, one call per tap,
    each wait at every call for a thread that a busy machine has preempted (case e16: 7.9x
    slower with both cores busy).
    """
    p = problem
    grid = padded_grid(pad_input(x, p, backend), p)
    lay, lanes, cores = layout(p), gemm_lanes(_config.settings(backend.name).workers), _config.cores()
    depth = p.in_per_group * p.kernel[-1]
    gathered_bytes = p.groups * depth * p.dtype.itemsize  # per output sample
    in_flight = min(_CHUNK_BYTES, _config.budget(backend.name) // 2) // max(lanes, cores)
    chunk_bytes = max(1, min(in_flight, lay.share_bytes(gathered_bytes, cores)))

    def fill(chunk: Chunk, gemm: Gemm) -> None:
        items, rows = chunk.b1 - chunk.b0, chunk.r1 - chunk.r0
        slab_problem = _slab_problem(p, items, rows)
        slab = _gather_last_axis(grid, chunk, p, slab_problem, backend)
        slab_layout, whole = layout(slab_problem), Chunk(0, items, 0, rows)
        block = direct.accumulate(slab, w_taps, slab_layout, whole, backend, gemm)
        slab_layout.store_block(out[chunk.b0 : chunk.b1, :, :, chunk.r0 : chunk.r1], block, whole)

    chunks = lay.chunks(gathered_bytes, chunk_bytes, parts=cores)
    run_gemm_jobs(chunks, fill, lanes, p.out_per_group * depth * lay.chunk_length(chunks[0]))


def _slab_problem(problem: Problem, items: int, rows: int) -> Problem:
    """The problem that a slab of gathered columns solves for `items` batch items and
    `rows` output rows: channels ``Cg * k_last``, the last axis already at its output
    length, no padding, and a kernel of the other axes' taps only."""
    p = problem
    lead = (rows - 1) * p.stride[0] + (p.kernel[0] - 1) * p.dilation[0] + 1
    nd = len(p.kernel)
    return replace(
        p,
        batch=items,
        in_per_group=p.in_per_group * p.kernel[-1],
        spatial=(lead, *p.padded[1:-1], p.out_spatial[-1])[-nd:],
        kernel=(*p.kernel[:-1], 1),
        pad_lo=(0,) * nd,
        pad_hi=(0,) * nd,
        stride=(*p.stride[:-1], 1),
        dilation=(*p.dilation[:-1], 1),
        circular=False,
    )


def _gather_last_axis(grid: Array, chunk: Chunk, problem: Problem, slab_problem: Problem, backend: Backend) -> Array:
    """The input of `chunk` with its last axis's taps gathered, laid out as
    :func:`pad_input` lays out `slab_problem`'s padded input."""
    p, s = problem, slab_problem
    first = chunk.r0 * p.stride[0]
    base = grid[chunk.b0 : chunk.b1, :, :, first : first + s.spatial[0]]
    step = base.strides[-1]
    windows = backend.xp.lib.stride_tricks.as_strided(
        base,
        shape=(*base.shape[:3], p.kernel[-1], *base.shape[3:-1], p.out_spatial[-1]),
        strides=(*base.strides[:3], p.dilation[-1] * step, *base.strides[3:-1], p.stride[-1] * step),
    )
    size, length = math.prod(s.spatial), flat_length(s)
    lead = (s.batch, s.groups, p.in_per_group, p.kernel[-1])
    slab = scratch("im2col.slab", (*lead, length), grid.dtype, backend)
    slab[..., size:] = 0  # the zero row after the grid, when wide
    slab[..., :size].reshape(*lead, *s.spatial)[...] = windows
    slab = slab.reshape(s.batch, s.groups, s.in_per_group, length)
    return slab if s.unit_stride else padded_grid(slab, s)


def _row_bytes(problem: Problem, exact: bool) -> int:
    """Bytes of the smallest chunk: one output row of one batch item (its output samples
    only when `exact`, as in :func:`_run_exact`; else a padded row)."""
    samples = math.prod(problem.out_spatial[1:]) if exact else layout(problem).row_length
    return samples * _bytes_per_sample(problem)


def unsupported(problem: Problem, backend: Backend, memory_limit: int) -> str | None:
    """im2col needs room for the padded input and one row of columns, or for its operator
    matrix (tiny images, which need neither)."""
    p = problem
    if _operator_fits(p, memory_limit):
        return None
    exact = backend.name == "numpy" and not _gathers_last_axis(p, backend)
    if exact and not pads_periodically(p):
        padded, what = _chunk_padding_bytes(p, Chunk(0, 1, 0, 1)), "the padded input under one output row"
    else:
        padded, what = padded_bytes(p), "its padded input"
    need = padded + _row_bytes(p, exact)
    if need > memory_limit:
        return f"{what} and one row of columns need {need} bytes, over memory_limit={memory_limit}"
    return None


def cost(problem: Problem, backend: Backend, rates: Rates, settings: Settings) -> Cost:
    """The operator matrix's build and GEMM (tiny images); else on the CPU
    :func:`_exact_cost`, and on a GPU: columns written and read at stream speed, the
    products written and copied into the output (four passes), and the GEMM's arithmetic
    at the GEMM rate scaled down for few output channels, a shallow column matrix or
    narrow chunks (a deep column matrix leaves few columns per chunk), weighed as fitted
    (:data:`_GPU_GEMM_WEIGHT`), and the fixed costs of the chunks' and kernel's launches.
    The passes are not counted twice: the GEMM's reads of the columns and writes of the
    products are the passes above.
    """
    p = problem
    if _operator_fits(p, settings.budget):
        rows, columns = p.groups * p.in_per_group * math.prod(p.spatial), p.groups * p.out_per_group * math.prod(p.out_spatial)
        efficiency = min(1.0, p.batch / FULL_RATE_GEMM["side"]) * min(1.0, columns / FULL_RATE_GEMM["side"])
        flops = p.mac_flops * p.batch * rows * columns
        data = (p.batch * (rows + columns) + rows * columns) * p.dtype.itemsize
        if backend.name == "cupy":  # as first fitted (unrefitted on a GPU)
            product = flops / (rates.gemm_flops * max(efficiency, _GEMM_FLOOR)) + data / rates.stream_bytes
        else:
            product = max(flops / (rates.gemm_rate(p.dtype, backend.name) * max(efficiency, _GEMM_FLOOR)), data / (direct.GEMM_CACHE_SPEEDUP * rates.stream_bytes))
        building = _operator_seconds(p, rates, backend)
        return Cost(building + product + rates.call_seconds, _operator_bytes(p), building)
    if _winograd.fits(p, backend):
        efficiency = _gemm_efficiency(p.out_per_group, p.in_per_group, _winograd.columns_per_chunk(p, settings), NUMPY)
        prepare = _winograd.prepare_seconds(p, rates)
        return Cost(_winograd.cost_seconds(p, rates, settings, efficiency) + prepare + rates.call_seconds, _winograd.temp_bytes(p, settings), prepare)
    if _gathers_last_axis(p, backend):
        return _last_axis_cost(p, rates)
    if backend.name == "numpy":
        return _exact_cost(p, rates, settings)
    samples = p.batch * p.groups * math.prod(layout(p).row_shape) * p.out_spatial[0]
    depth = math.prod(p.kernel) * p.in_per_group
    cols_bytes = samples * _bytes_per_sample(p)
    out_bytes = samples * p.out_per_group * p.dtype.itemsize
    chunk_columns = min(samples, _CHUNK_BYTES // (depth * p.dtype.itemsize))
    gemm = p.mac_flops * p.macs / (rates.gemm_rate(p.dtype, backend.name) * _gemm_efficiency(p.out_per_group, depth, chunk_columns, backend))
    calls = max(1, cols_bytes // _GPU_CHUNK_BYTES) * _GPU_CALLS_PER_CHUNK
    passes = _GPU_PASS_WEIGHT * (2 * cols_bytes + 4 * out_bytes) / rates.stream_bytes
    seconds = passes + _GPU_GEMM_WEIGHT * gemm + calls * rates.call_seconds
    return Cost(seconds, padded_bytes(p) + min(cols_bytes, _CHUNK_BYTES) + min(out_bytes, _CHUNK_BYTES))


def _exact_cost(problem: Problem, rates: Rates, settings: Settings) -> Cost:
    """Cost of :func:`_run_exact` (the CPU's columns): passes over the padded input, the
    columns (one) and the result (:data:`_EXACT_RESULT_PASSES`) at stream speed, the columns' shared by the threads that gather them
    (the result's, written by the GEMMs, as on one thread);
    the GEMMs' arithmetic at the GEMM rate of their output channels (:func:`.._rates.rows_gain`)
    scaled down for few output channels, shallow columns or few columns per GEMM (one
    item's samples, or a chunk's rows of one item);
    and per chunk a call per tap and one GEMM call (fitted when each tap was a copy of its
    own; the gather is now one copy, and these calls stand for the fixed cost of im2col's
    call: they price large kernels high); shallow columns
    (:data:`_SHALLOW_DEPTH`), and unit-stride 1x1 kernels, whose columns are the input itself (direct's
    pointwise form runs the same GEMMs on the input in place; with a stride both copy the
    samples, and im2col's copies run on every thread), no less than direct's run and the
    gather. The memory is the padding held (:func:`_exact_padding_bytes`) and a
    chunk of columns per thread."""
    p, size = problem, problem.dtype.itemsize
    samples = math.prod(p.out_spatial)
    cols_bytes = p.batch * samples * _bytes_per_sample(p)
    out_bytes = p.batch * p.groups * p.out_per_group * samples * size
    lanes, chunk = _exact_lanes(p, settings)
    depth = math.prod(p.kernel) * p.in_per_group
    columns = min(samples, max(1, chunk // (depth * p.groups * size)))
    gemm = p.mac_flops * p.macs / (rates.gemm_rate(p.dtype, NUMPY.name, p.out_per_group) * _gemm_efficiency(p.out_per_group, depth, columns, NUMPY))
    chunks = min(-(-cols_bytes // chunk), p.batch * p.out_spatial[0])  # at least one row each
    lanes = min(lanes, chunks)
    calls = chunks * ((math.prod(p.kernel) if p.unit_stride else min(math.prod(p.kernel), _STRIDED_CALLED_TAPS)) + 1)
    padding, padding_memory = _exact_padding_bytes(p, chunk, lanes)
    passes = padding + cols_bytes / lanes + _EXACT_RESULT_PASSES * out_bytes
    seconds = passes / rates.stream_bytes + gemm + calls * rates.call_seconds
    if depth <= _SHALLOW_DEPTH or (direct.pointwise(p) and p.unit_stride):  # direct's run, and a copy of the input
        seconds = max(seconds, direct.cost(p, NUMPY, rates, settings).seconds + 2 * cols_bytes / rates.stream_bytes)
    return Cost(seconds, padding_memory + lanes * max(min(cols_bytes, chunk), _row_bytes(p, exact=True)))


def _exact_padding_bytes(problem: Problem, chunk_bytes: int, lanes: int) -> tuple[float, int]:
    """Bytes of :func:`_run_exact`'s padding that each thread passes over, and that are
    held at once: none without padding; the whole padded input on one thread with circular
    padding; with zero padding, each chunk's padded rows (:func:`._taps.padded_rows`: its
    output rows' and the kernel's reach past the last), shared by the threads, one chunk's
    on each."""
    p = problem
    if pads_periodically(p):
        return padded_bytes(p), padded_bytes(p)
    if not _pads_chunks(p):
        return 0, 0
    items, rows = layout(p).chunk_extent(_bytes_per_sample(p), chunk_bytes, exact=True)
    chunks_per_item = -(-p.out_spatial[0] // rows)
    reach = padded_rows_shape(Chunk(0, 1, 0, 1), p)[3]  # padded rows under one output row
    rows_per_item = (p.out_spatial[0] - chunks_per_item) * p.stride[0] + chunks_per_item * reach
    row_bytes = p.groups * p.in_per_group * math.prod(p.padded[1:]) * p.dtype.itemsize
    return p.batch * rows_per_item * row_bytes / lanes, lanes * _chunk_padding_bytes(p, Chunk(0, items, 0, rows))


def _chunk_padding_bytes(problem: Problem, chunk: Chunk) -> int:
    """Bytes of `chunk`'s padded rows in :func:`_run_exact` (none where it reads a whole grid)."""
    return math.prod(padded_rows_shape(chunk, problem)) * problem.dtype.itemsize if _pads_chunks(problem) else 0


def _operator_seconds(problem: Problem, rates: Rates, backend: Backend) -> float:
    """Time to build the operator matrix (:func:`_operator`): three array calls and three
    per axis; per axis, the placed array zeroed and the taps' values placed (rows of the
    later axes' pairs at stream speed; single values, on the first axis placed, at about 20
    bytes' time each for their index arithmetic), and the matrix's final transposed copy
    (for one image, along input samples: at twice the speed). Fitted to 200 builds (1-D to
    3-D, 1-64 channels, groups, batches 1-64, float32/float64): median 1.10x of measured
    for one image and 0.95x for batches, 88-89% within 2x (the rest, down to 0.2x, are
    large transposed copies that miss the cache). On a GPU each axis is
    :data:`_GPU_OPERATOR_AXIS_CALLS` calls."""
    p, size = problem, problem.dtype.itemsize
    lead, rest, moved = p.groups * p.out_per_group * p.in_per_group, 1, 0.0
    for axis in reversed(range(len(p.kernel))):
        taps_lead = lead * math.prod(p.kernel[:axis])
        pairs = p.spatial[axis] * p.out_spatial[axis]
        placed = taps_lead * min(p.kernel[axis] * p.out_spatial[axis], pairs)
        moved += taps_lead * pairs * rest * size + (placed * rest * size if rest > 1 else 20 * placed)
        rest *= pairs
    moved += (0.5 if _transposed(p) else 1.0) * p.groups * lead * rest * size
    axis_calls = 3 if backend.name == "numpy" else _GPU_OPERATOR_AXIS_CALLS
    return (3 + axis_calls * len(p.kernel)) * rates.call_seconds + moved / rates.stream_bytes


def _gemm_efficiency(filters: int, depth: int, columns: int, backend: Backend) -> float:
    """Share of the GEMM rate reached with `filters` output channels, columns `depth` deep
    and (on a GPU) `columns` wide per chunk.

    The first term (:data:`.._runtime.rates.FULL_RATE_GEMM`) was fitted to a sweep (on a GPU, at least
    :data:`_GEMM_FLOOR`). On the CPU the second (:func:`.._runtime.rates.small_gemm_share`) keeps
    shallow GEMMs from being charged far below what they reach, and narrow chunks run at
    the rate of wide ones (``python -m bench.gemm_widths``).
    """
    shape = min(1.0, filters / GEMM_ROWS) * min(1.0, depth / FULL_RATE_GEMM["side"])
    if backend.name == "cupy":
        return max(_GEMM_FLOOR, shape * min(1.0, columns / FULL_RATE_GEMM["gpu_columns"]))
    return max(shape, small_gemm_share(filters, depth))


def _last_axis_cost(problem: Problem, rates: Rates) -> Cost:
    """Cost of gathering only the last axis's taps: the slab written and read at stream
    speed, then per remaining tap a GEMM as deep as ``Cg * k_last`` plus the accumulator's
    traffic at cache speed, as :func:`direct.cost` counts it (with a stride along the other
    axes, each tap's stepped view copied too)."""
    p, size = problem, problem.dtype.itemsize
    whole = _slab_problem(p, p.batch, p.out_spatial[0])
    samples = p.batch * p.groups * p.out_spatial[0] * layout(whole).row_length  # junk included
    depth, lead_taps = whole.in_per_group, math.prod(p.kernel[:-1])
    slab_bytes = p.batch * p.groups * depth * math.prod(whole.spatial) * size
    out_bytes = samples * p.out_per_group * size
    chunk_columns = min(samples, _CHUNK_BYTES // (depth * size))
    efficiency = _gemm_efficiency(p.out_per_group, depth, chunk_columns, NUMPY)  # a CPU-only path
    gemm = p.mac_flops * samples * p.out_per_group * depth * lead_taps / (rates.gemm_rate(p.dtype, NUMPY.name, p.out_per_group) * efficiency)
    per_tap = samples * size * (depth + 3 * p.out_per_group)
    taps = lead_taps * per_tap / (direct.GEMM_CACHE_SPEEDUP * rates.stream_bytes)
    if not whole.unit_stride:  # strided along the other axes: each tap's view copied, as direct's
        taps += lead_taps * samples * depth * size * direct.STRIDED_COPY_PASSES / rates.stream_bytes
    calls = max(1, slab_bytes // _CHUNK_BYTES) * lead_taps
    seconds = (2 * slab_bytes + 3 * out_bytes) / rates.stream_bytes + gemm + taps + calls * rates.call_seconds
    return Cost(seconds, padded_bytes(p) + min(slab_bytes, _CHUNK_BYTES) + min(out_bytes, _CHUNK_BYTES))


def sums_products(kernel: Array | Operator | LastAxisColumns | _winograd.WinogradKernel) -> bool:
    """Columns sum the footprint's products; the operator matrix also multiplies every
    other sample of the image by zero (a NaN there would reach every output), and
    Winograd's transforms mix a tile's 4x4 inputs into all four of its outputs."""
    return not isinstance(kernel, (Operator, _winograd.WinogradKernel))


METHOD = register(Method("im2col", prepare, run, exact_dtype, unsupported, cost, sums_products))
