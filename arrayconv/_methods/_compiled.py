"""Direct's compiled form: every tap of a row of output while its input rows are in cache.

With numba installed (the ``numba`` extra), direct runs 2-D and 3-D correlations with one
input channel per group (single images, stacks, depthwise layers) through loops compiled
for the CPU. Each output row takes its kernel's rows a few at a time (as many as keep their
weights in the CPU's vector registers), in one loop over the row that the compiler
vectorizes (one load and one multiply-add per tap and sample, the input rows in cache); a
kernel whose taps all fit in the registers (a volume's, an image's of 4 rows or more) takes
them all a pass, two output rows at a time, each sample the two share loaded once; so
does a larger one's on wide rows, a few of its rows a pass (9x9 and 11x11 0.65-0.75x the
time of one output row at a time, 7x7 0.85-0.98x). A
kernel that is an outer product of 1-D kernels (a Gaussian, a box) runs its passes fused:
the column pass of two output rows at a time into lines in cache (the input rows the two
share read once; on short rows, several rows' as one line), then each one's row pass from
its line; a volume's plane pass first, two output planes a pass, from a ring of its planes'
passes in half a core's second cache level.

The loops read the input as it is, through index maps (one per axis: the input sample at
each position of the padded axis, or the fill value): zeros past the edges, a periodic
problem and every boundary rule make no padded copy of the input. Images of rows up to
512 outputs wide (4096 for kernels of 5 rows or 7 columns or more, :data:`_HALO_WIDTH`)
copy each block's input rows, extended past their edges, into a buffer in cache, so that no
column runs in the scalar loop at a row's ends; where its rows are short, the buffer's rows
end to end are one line, and each kernel row one pass over a segment of several output rows.
They also read integer images of up to 16 bits, and float32 images summed in float64,
without a converted copy of the input (:func:`reads_dtype`).

The code is generated per kernel row length and dtype and compiled once per process, or
read from numba's cache on disk (:func:`arrayconv.cache_dir`): a new one costs a few
seconds the first time (each way of running blocks its own entry point, compiled only
where it runs: 3x3 on an image about 3 s, 3x3x3 on a volume about 6 s, 7x7 to 11x11 on a
wide image 8-10 s). An outer product's passes are one module a dtype, shared by every
kernel width: the first Gaussian compiles for about 20 s on an image (26 s more on a
volume), each further width for 8-12 s.
Work is cut into blocks of output rows (or planes), and the rows of a long 1-D signal
into windows of their columns, whose sums do not depend on the number of threads, so the
result is the same bits on one worker or many.
The blocks run on :func:`arrayconv.config`'s workers, a few calls each, in loops that
release the GIL and call no BLAS: no thread but arrayconv's own runs a call.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

import numpy as np

from .._runtime import config as _config
from .._runtime.backend import NUMPY, Array, Backend
from .._runtime.fitted import fitted
from .._runtime.jit import available, load
from .._runtime.machine import l2_bytes, wide_vectors
from .._runtime.rates import Rates
from .._runtime.scratch import scratch
from .._runtime.threads import run_parallel
from .._spec.boundary import source_index
from .._spec.problem import Problem

# Kernel rows of at most this many taps, summed in pieces (an outer product's passes of 65-385
# taps ran in 0.2-0.9x the time of the other forms).
MAX_ROW_TAPS = 1024
# Output samples of a segment of halo_taps's line, at most: its line stays in the first cache
# level; and its output rows, at least, else each row runs on its own, straight into the result
# (3x3x3 on 256^3: the copy from the line costs more than the short rows' overheads it saves).
_LINE_SAMPLES, _LINE_ROWS = 2048, 8
# The vectorized loops run over a multiple of this many samples (:func:`_split_loop`).
_VECTOR_SAMPLES = 8
# The generated loops' weights held in named variables: kernel rows' taps ``w{i}_{j}`` (of
# ``w[i, j]``) and weighed rows' ``a{i}`` (of ``a[i]``).
_NAMED_WEIGHT = re.compile(r"\b([aw])(\d+)(?:_(\d+))?\b")
# An outer product's column passes over output rows as wide as the input's, at least this
# many a segment, as one line, with rows of at most this many taps: else two rows at a time
# (Gaussians on 1M samples: 9 taps on rows of 64 to 256 0.61-0.86x the time, of 512 0.96x;
# 17 and 25 taps on 64^3 to 256^3 volumes 0.9-1.2x, not kept).
_SEPARABLE_LINE_ROWS, _SEPARABLE_LINE_TAPS = 8, 9
# Output samples of one block of work, at least: blocks cut by rows (or planes) to about this.
_BLOCK_SAMPLES = 1 << 16
# A volume's blocks of large planes, under a kernel of several planes: bands of rows of this
# many planes, so that a block's copy of its input rows (``halo_taps``) holds each input
# plane once for them all, not once for each kernel plane (3x3x3 over planes of 256x256:
# 2.4x fewer rows copied).
_BAND_PLANES = 8
# The model of the form's time on each thread (fitted.json; ``python -m bench.filters --fit``):
# seconds per multiply-add (on any vector width) and per tap of the scalar loop at a row's ends,
# as multiples of a byte at the stream rate (each byte read or written counts one); array
# calls per block and per call.
_MAC_BYTES, _EDGE_TAP_BYTES = fitted("compiled", "MAC_BYTES"), fitted("compiled", "EDGE_TAP_BYTES")
_CALLS = fitted("calls", "DIRECT_FORM")
# Calls of fewer multiply-adds run on the calling thread: waking another costs more (with
# the pool woken by a lock, a second thread saves time from about 1M on 2 cores: depthwise
# 3x3 and 5x5 layers at batch 1 0.63-0.74x the time, a Gaussian on 48^3 0.64-0.66x; at 4M
# before).
_THREADED_MACS = 1 << 20
# An image's kernel of at least this many rows (and up to weights_held() taps) sums them all
# in one pass, two output rows at a time, from halo_taps's copy: 5x5 on 4096^2 1.1-1.15x
# faster so; 3x3, bound by the memory, ran up to 1.1x slower on 1024^2 and on 56x56
# depthwise layers, and 4x4 read in place (no copy) 1.2x slower.
_DEEP_IMAGE_ROWS = 4
# Kernel rows summed in one pass over an output row, at most.
_FUSED_ROWS = 5
# Taps' weights a pass holds in registers, with 16 vector registers and with 32 (AVX-512):
# more spill, and each multiply-add loads its weight as well as its sample (7 taps a row on
# AVX2: 4.45 multiply-adds a cycle three rows a pass, 6.17 one).
_HELD_WEIGHTS = (11, 27)
# Kernel rows a pass from halo_taps's copy, at most: three, two of a kernel 6-8 taps wide
# (on 112x112, 5x5: 22.7 -> 15.2 us with three rows, not five; on 56x56, 7x7: 11.8 -> 8.9
# us with two).
_HALO_FUSED_ROWS = (3, 2)
# Kernel rows wider than this are summed in pieces of this many taps (and a narrower last
# one): each width compiles loops of its own, and their compile time grows with the width;
# wider pieces spill their weights (11x11 on 4096^2, AVX2, a row a pass: 131 ms as one piece
# of 11, 103 as 8 + 3).
# A kernel's only row (an outer product's row pass, lines) in pieces of up to 16 (9 taps on
# 1024 samples: 0.34 -> 0.29 ms for 1024 rows, as one piece and not 8 + 1).
_PIECE_TAPS, _ONE_ROW_PIECE_TAPS = 8, 16
# An outer product's row pass of up to this many taps that reads the same both ways runs in
# one loop, mirrored (:func:`_row_pass_function`), its module compiled for its width.
_MIRRORED_TAPS = 32
# Kernel rows of up to this many taps are summed whole, with 16 and with 32 vector registers:
# 32 hold two such rows' weights (AVX-512, 4096^2: 10x10 44.0 -> 39.8 ms, 11x11 49.8 -> 46.4,
# not as 8 + 2 and 8 + 3; 13 and 15 taps ran no faster as 11 + 2 and 11 + 4 than 8 + 5, 8 + 7).
_WHOLE_ROW_TAPS = (8, 11)
# Rows of the separable form's column and plane passes summed a pass (9 rows of 1024
# samples: 0.53 -> 0.46 ms for 1024 rows, as 8 + 1 and not 4 + 4 + 1), for one result or
# two from the rows they share (a Gaussian, sigma 1, on 1024^2: 0.92 -> 0.76 ms); a count
# of k * 8 + 1 (a Gaussian's) takes one pass of 9 for its last 1 (sigma 1 on 4096^2 0.90x).
# A volume's plane pass, with 32 vector registers, up to 16 rows (17 for 16 + 1): its second
# pass of 8 + 9 read and wrote the sums again (17 taps on 256^3: 1.1-1.2x the time); not the
# column passes, which ran no faster so and whose loops every outer product compiles (a
# Gaussian's first call 10.7 -> 17.2 s). Counts of 3 and 5 in one pass too (box and Sobel
# kernels, Gaussians of 5 and 13 taps), not as 1 + 1 + 1 and 4 + 1.
_BUFFER_PASSES, _PLANE_PASSES, _ODD_PASS = (1, 3, 4, 5, 8), (1, 3, 4, 5, 8, 16), 8
# With 16 vector registers, the column passes of rows of at least this many samples in passes
# of as many rows each, at most this many: on a Zen 2 core, two rows a pass over rows of 1024
# and 4096 samples, 17 rows as 6 + 6 + 5 0.73-0.78x the time of 8 + 9, 25 as 7 + 6 + 6 + 6
# 0.70-0.80x of 8 + 8 + 9, 9 as 5 + 4 0.88x of 9 (passes of 8 and 9 rows read their rows from
# the second cache level slower a row than of 5 to 7); over rows of 256 and 512, the same time.
_EVEN_PASS_SAMPLES, _EVEN_PASS_ROWS = 1024, 7
# Output rows at most this wide, with columns past the input's edges, run from a copy of
# their input rows extended past the edges (``halo_taps``), for kernels of under 5 rows and
# under 7 columns, and for the others: the scalar loop at each row's ends and the rows summed
# one at a time there cost more than the copy (7x7 on 56x56: 28 -> 9 us; on 1024^2 1.42 ->
# 1.19 ms; 5x5 and 6x6 on 1024^2 0.78-0.92x the time, on 2048^2 0.93-0.94x); 3x3 from
# 768^2 on, 2x2 and 4x4 cost up to 16% more from the copy.
_HALO_WIDTH = (512, 4096)
# Blocks are handed to the threads in calls of at least this many multiply-adds, and at
# least this many calls a thread: each call's hand-over of the GIL costs tens of
# microseconds, and more calls let a thread on an idle core take a busy one's share.
_CALL_MACS, _CALLS_PER_LANE = 1 << 22, 2
# Inputs read as they are, converted sample by sample in the loop, where the sums run in
# another dtype: 8- and 16-bit integers, and float32 (float64 sums: scipy.ndimage's).
_READ_AS_IS = frozenset("bBhHf")


def takes(problem: Problem, backend: Backend) -> bool:
    """Whether the compiled form runs `problem`: NumPy, numba installed, one input channel
    per group, 2 or 3 spatial dims (or lines, :func:`_image`), unit stride and dilation,
    float32 or float64, kernel rows of at most :data:`MAX_ROW_TAPS` taps."""
    p = _image(problem)
    return (
        backend.name == "numpy"
        and p.in_per_group == 1
        and len(p.spatial) in (2, 3)
        and p.unit_stride
        and all(d == 1 for d in p.dilation)
        and p.dtype.char in "fd"
        and p.kernel[-1] <= MAX_ROW_TAPS
        and available()
    )


@functools.lru_cache(maxsize=256)
def _image(problem: Problem) -> Problem:
    """`problem` as the loops run it: 1-D lines as images with a kernel one row high, a
    batch of lines with one filter as the rows of one image (the rows of an image filtered
    along them), lines with filters of their own each as an image of one row; any other
    problem as it is."""
    p = problem
    if len(p.spatial) != 1:
        return p
    height, batch = (p.batch, 1) if p.groups * p.in_per_group * p.out_per_group == 1 else (1, p.batch)
    return replace(p, batch=batch, spatial=(height, *p.spatial), kernel=(1, *p.kernel), pad_lo=(0, *p.pad_lo), pad_hi=(0, *p.pad_hi),
                   stride=(1, *p.stride), dilation=(1, *p.dilation))


def reads_dtype(dtype: np.dtype[Any]) -> bool:
    """Whether the loops read an input of `dtype` as it is, where the problem's dtype is
    another: 8- and 16-bit integers and float32, converted sample by sample."""
    return dtype.char in _READ_AS_IS


@dataclass(frozen=True, slots=True)
class Edges:
    """What lies past the edges of the input the loops read, along each spatial axis:
    `pads` ``(before, after)`` by `pad_mode` (a ``numpy.pad`` mode) with `fill` for
    'constant'. The problem is then the valid correlation of the input so extended."""

    pads: tuple[tuple[int, int], ...]
    pad_mode: str
    fill: float = 0.0


@dataclass(frozen=True, slots=True)
class CompiledTaps:
    """The kernel in the compiled form's layout: ``(G, Og, kd, kh, kw)`` taps, or for an
    outer product its 1-D factors per axis, ``(G, Og, k)`` each (planes, rows, columns);
    `edges` when the loops read the input before its extension by a boundary rule, and
    with the taps, `fill_rows` ``(G, Og, kd, kh)``: the fill past the edges times the sum
    of each kernel row."""

    taps: np.ndarray | None
    factors: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    edges: Edges | None = None
    fill_rows: np.ndarray | None = None


def prepare(w: Array, problem: Problem, factors: list[np.ndarray] | None = None) -> CompiledTaps:
    """`w` ``(G*Og, 1, *kernel)`` as 3-D taps per map, or the outer product's `factors`."""
    p = problem
    maps = (p.groups, p.out_per_group)
    if factors is not None:
        lines = [np.ones(1)] * (3 - len(factors)) + list(factors)
        if lines[0].size == 1:  # a kernel one plane deep: its weight in the row pass's
            lines = [np.ones(1), lines[1], lines[2] * lines[0][0]]
        as_maps = tuple(np.ascontiguousarray(np.broadcast_to(np.asarray(f, p.dtype), (*maps, f.size))) for f in lines)
        return CompiledTaps(None, as_maps)  # type: ignore[arg-type]
    kernel = (1,) * (3 - len(p.kernel)) + tuple(p.kernel)
    taps = np.ascontiguousarray(np.asarray(w, p.dtype).reshape(*maps, *kernel))
    return CompiledTaps(taps, None, None, np.zeros(taps.shape[:-1], p.dtype))  # the problem's own padding: no fill


def reading_edges(kernel: CompiledTaps, edges: Edges) -> CompiledTaps:
    """`kernel` run on the input before its extension by `edges` (the problem's input)."""
    fill_rows = None if kernel.taps is None else edges.fill * kernel.taps.sum(axis=-1)
    return replace(kernel, edges=edges, fill_rows=fill_rows)


def run(x: Array, kernel: CompiledTaps, problem: Problem, out: Array) -> None:
    """Fill `out` ``(B, G, Og, *out_spatial)`` with `problem`'s correlation of `x`
    ``(B, G, *spatial)`` (or, with ``kernel.edges``, of `x` extended by them), block by
    block on the workers."""
    _bound(kernel, problem, tuple(x.shape), _config.workers())(x, out)


def bound_run(kernel: CompiledTaps, problem: Problem, x_shape: tuple[int, ...]) -> Callable[[Array, Array], None]:
    """:func:`run` for inputs of `x_shape`, with what does not depend on the arrays found
    once (for each number of workers, where a call is large enough to share): a call is then
    a few views and the loops' calls (a plan's call, 3x3 on 256x256 float32: 60 -> 46 us;
    after other work has evicted the caches, 304 -> 229 us)."""
    if _macs(_image(problem), kernel.factors is not None) < _THREADED_MACS:  # the calling thread's, whatever the workers
        return _bound(kernel, problem, x_shape, 1)
    by_workers: dict[int, Callable[[Array, Array], None]] = {}

    def shared(x: Array, out: Array) -> None:
        workers = _config.workers()
        call = by_workers.get(workers)
        if call is None:
            call = by_workers[workers] = _bound(kernel, problem, x_shape, workers)
        call(x, out)

    return shared


def _bound(kernel: CompiledTaps, problem: Problem, x_shape: tuple[int, ...], workers: int) -> Callable[[Array, Array], None]:
    """``f(x, out)``: :func:`run` for `x` of `x_shape` on `workers` threads."""
    p = _image(problem)
    lines = p.spatial != problem.spatial  # lines, read and written as the rows of images
    volume = len(p.spatial) == 3
    x3_shape = (p.batch, p.groups, *(() if volume else (1,)), *((*p.spatial[:-1], x_shape[-1]) if lines else x_shape[2:]))
    o3_shape = (p.batch, p.groups, p.out_per_group, *(() if volume else (1,)), *p.out_spatial)
    source = x3_shape[2:]
    at = _geometry(p, kernel.edges, source, kernel.factors is not None, workers)
    code, fill, maps, columns = at.code, at.fill, at.maps, at.columns
    if kernel.factors is not None:
        fz, fy, fx = kernel.factors
        deep = fz.shape[-1] > 1
        kw, shift, width = fx.shape[-1], columns[2], p.out_spatial[-1]
        banded = width == source[2] and kw <= min(width, _SEPARABLE_LINE_TAPS) and width <= _LINE_SAMPLES // _SEPARABLE_LINE_ROWS and shift < kw

        def separable(x: Array, out: Array) -> None:
            x3, o3 = _read_only(x.reshape(x3_shape)), out.reshape(o3_shape)
            # the samples of the input and the result, for passes over several rows as one line
            out_flat = o3.reshape(-1) if (banded or deep) and o3.flags.c_contiguous else _no_samples(o3.dtype, writable=True)
            x_flat = x3.reshape(-1) if banded and x3.flags.c_contiguous else _no_samples(x3.dtype)

            def blocks(jobs: np.ndarray) -> None:
                line = scratch("compiled.line", (2, maps[2].size), p.dtype, NUMPY)
                band = scratch("compiled.band", (_LINE_SAMPLES,), p.dtype, NUMPY) if banded else _no_samples(p.dtype, writable=True)
                if not deep:
                    code.image_jobs(x3, fy, fx, o3, *maps, jobs, shift, fill, line, x_flat, out_flat, band)
                    return
                ring = scratch("compiled.ring", (fz.shape[-1] + 1, at.band_rows * width), p.dtype, NUMPY)
                rows_out = _no_samples(p.dtype, writable=True) if out_flat.size else scratch("compiled.rows", (2 * o3[0, 0, 0, 0].size,), p.dtype, NUMPY)
                code.volume_jobs(x3, fz, fy, fx, o3, *maps, jobs, shift, fill, ring, line, x_flat, out_flat, band, rows_out)

            run_parallel(at.calls, blocks, at.lanes)

        return separable
    assert kernel.taps is not None and kernel.fill_rows is not None
    taps, fill_rows = kernel.taps, kernel.fill_rows
    no_buffer = np.empty((1, 1), p.dtype)  # taps_jobs and deep_jobs read the input itself
    one_call = at.calls[0] if len(at.calls) == 1 else None
    every_job = np.concatenate(at.calls)
    windows = _windows(p, len(every_job), at.lanes) if at.buffer is None and not at.deep_rows else [(0, p.out_spatial[-1])]

    def direct(x: Array, out: Array) -> None:
        x3, o3 = _read_only(x.reshape(x3_shape)), out.reshape(o3_shape)
        # How the blocks run: from a copy with its edges, all rows of a volume's kernel a
        # pass (its planes stacked as the rows of one view), or kernel rows a few at a time.
        stacked = at.deep_rows and all(x3.strides[i] == x3.shape[i + 1] * x3.strides[i + 1] for i in range(3))
        jobs_of = code.halo_jobs if at.buffer else code.deep_jobs if stacked else code.taps_jobs
        flat = x3.reshape(-1, x3.shape[-1]) if stacked else x3[0, 0, 0]

        def blocks(jobs: np.ndarray) -> None:
            buf = scratch("compiled.halo", at.buffer, p.dtype, NUMPY) if at.buffer else no_buffer
            jobs_of(x3, flat, taps, fill_rows, o3, *maps, jobs, *columns, fill, buf, at.segment_rows)

        def window(span: tuple[int, int]) -> None:  # every block's output columns [lo, hi)
            lo, hi = span
            c_lo, c_hi, shift = columns
            inner_lo = min(max(c_lo - lo, 0), hi - lo)
            code.taps_jobs(x3, flat, taps, fill_rows, o3[..., lo:hi], maps[0], maps[1], maps[2][lo : hi + p.kernel[-1] - 1], every_job,
                           inner_lo, max(inner_lo, min(c_hi - lo, hi - lo)), shift - lo, fill, no_buffer, at.segment_rows)

        if len(windows) > 1:
            run_parallel(windows, window, at.lanes)
        elif one_call is not None:
            blocks(one_call)
        else:
            run_parallel(at.calls, blocks, at.lanes)

    return direct


def _windows(problem: Problem, blocks: int, lanes: int) -> list[tuple[int, int]]:
    """The output columns of `problem`'s rows in :func:`_window_count` windows of near-equal
    width, ``(lo, hi)`` each (a window's outputs are the same bits as the whole row's)."""
    cuts = np.linspace(0, problem.out_spatial[-1], _window_count(problem, blocks, lanes) + 1).astype(int)
    return list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))


def _window_count(problem: Problem, blocks: int, lanes: int) -> int:
    """Windows of the output columns run side by side: for rows one high (lines) in fewer
    `blocks` than `lanes`, :data:`_CALLS_PER_LANE` a thread of at least :data:`_CALL_MACS`
    multiply-adds (a second thread's hand-over outweighs smaller ones: 2^16-2^19 samples
    with 9-17 taps in four windows ran 1.1-2.4x slower); else one, the whole row."""
    if blocks >= lanes or _out_dims(problem)[:2] != (1, 1):
        return 1
    return max(1, min(_CALLS_PER_LANE * lanes, problem.out_spatial[-1], _macs(problem, False) // _CALL_MACS))


@dataclass(frozen=True, slots=True)
class _Geometry:
    """What the shapes and workers decide for :func:`run`: the compiled loops (with
    ``deep_taps`` where `deep_rows`), the index maps (planes, rows, columns), the columns
    ``(c_lo, c_hi, shift)`` (output column c of the interior ``[c_lo, c_hi)`` reads input
    column ``c + j - shift``), the fill value, the blocks of work (a row ``(b, g, o, z0,
    z1, r0, r1)`` each) in `calls` shared by `lanes` threads, the shape of ``halo_taps``'s
    copy on each thread (None where the loops read the input) and the output rows of its
    line's segments (1: each row on its own, see :data:`_LINE_SAMPLES`); a volume's outer
    product's rows a block, at most (:func:`_band_rows`; else 0)."""

    code: ModuleType
    deep_rows: bool
    maps: tuple[np.ndarray, np.ndarray, np.ndarray]
    columns: tuple[int, int, int]
    fill: float
    calls: tuple[np.ndarray, ...]
    lanes: int
    buffer: tuple[int, int] | None
    segment_rows: int
    band_rows: int


@functools.lru_cache(maxsize=64)
def _geometry(problem: Problem, edges: Edges | None, source: tuple[int, int, int], separable: bool, workers: int) -> _Geometry:
    """:class:`_Geometry` of `problem` on an input of `source` (planes, rows, columns) padded
    by `edges` (or by the problem's own padding), on `workers` threads."""
    p = problem
    pads = _pads(p, edges)
    maps = tuple(_index_map(n, pad, pads.pad_mode) for n, pad in zip(source, pads.pads))
    out = _out_dims(p)
    height, width = out[1:]
    kw = p.kernel[-1]
    shift = pads.pads[-1][0]
    c_lo = min(shift, width)
    c_hi = max(c_lo, min(width, source[2] + shift - kw + 1))
    halo = not separable and _halo(p, pads)
    fused = 1 if separable else _fused_rows(p.kernel, halo)
    deep_rows = None if separable else _deep_rows(p.kernel, halo)
    pieces = _pieces(kw, separable or p.kernel[-2] == 1)
    mirrored = kw if separable and pieces[0] < kw <= _MIRRORED_TAPS else 0  # rows of one piece mirror as that piece
    code = _module(*pieces, fused, p.dtype.char, deep_rows, mirrored)
    kh = p.kernel[-2]
    lanes = _lanes(p, separable, workers)
    deep = separable and len(p.kernel) == 3 and p.kernel[0] > 1
    band_rows = _band_rows(p, out, lanes) if deep else 0
    jobs = np.array(_ring_units(p, out, band_rows, lanes) if deep else _units(p, out), np.int64).reshape(-1, 7)
    jobs.flags.writeable = False
    calls = calls_for(len(jobs), _macs(p, separable), lanes)
    buffer = None
    if halo:  # the input rows of a block, of each of the kernel's planes
        buffer = ((int(np.max(jobs[:, 6] - jobs[:, 5])) + kh - 1) * (p.kernel[0] if len(p.kernel) == 3 else 1), maps[2].size)
    segment = _LINE_SAMPLES // maps[2].size
    return _Geometry(code, deep_rows is not None, maps, (c_lo, c_hi, shift), pads.fill, tuple(np.array_split(jobs, calls)), lanes,  # type: ignore[arg-type]
                     buffer, segment if segment >= _LINE_ROWS else 1, band_rows)


def _halo(problem: Problem, pads: Edges) -> bool:
    """Whether `problem`'s taps run from a copy of each block's input rows extended past
    the column edges `pads` (see :data:`_HALO_WIDTH`)."""
    many = problem.kernel[-2] >= 5 or problem.kernel[-1] >= 7
    return any(pads.pads[-1]) and problem.out_spatial[-1] <= _HALO_WIDTH[many]


Unit = tuple[int, int, int, int, int, int, int]


def _maps(problem: Problem) -> list[tuple[int, int, int]]:
    """The output maps ``(b, g, o)`` of `problem`."""
    p = problem
    return [(b, g, o) for b in range(p.batch) for g in range(p.groups) for o in range(p.out_per_group)]


def _map_count(problem: Problem) -> int:
    """``len(_maps(problem))``, without listing them."""
    return problem.batch * problem.groups * problem.out_per_group


def _out_dims(problem: Problem) -> tuple[int, int, int]:
    """Planes, rows and columns of each of `problem`'s output maps (one plane for an image)."""
    *planes, height, width = problem.out_spatial
    return (planes[0] if planes else 1, height, width)


def _units(problem: Problem, out: tuple[int, int, int]) -> list[Unit]:
    """The blocks of `problem` (`out`: planes, rows, columns a map), ``(b, g, o, z0, z1, r0,
    r1)``, of :func:`_block_size`."""
    (depth, height, _), (planes_per, rows_per) = out, _block_size(problem, out)
    return [(*m, z, min(depth, z + planes_per), r, min(height, r + rows_per))
            for m in _maps(problem) for z in range(0, depth, planes_per) for r in range(0, height, rows_per)]


def _unit_count(problem: Problem, out: tuple[int, int, int]) -> int:
    """``len(_units(problem, out))``, without making them."""
    (depth, height, _), (planes_per, rows_per) = out, _block_size(problem, out)
    return _map_count(problem) * -(-depth // planes_per) * -(-height // rows_per)


def _block_size(problem: Problem, out: tuple[int, int, int]) -> tuple[int, int]:
    """Planes and rows of a block of about :data:`_BLOCK_SAMPLES` outputs of `problem`
    (`out`: planes, rows, columns a map): several planes of small ones, else bands of rows
    of one plane, or under a kernel of several planes of up to :data:`_BAND_PLANES`."""
    depth, height, width = out
    if height * width < _BLOCK_SAMPLES:
        return max(1, _BLOCK_SAMPLES // max(1, height * width)), height
    planes_per = min(depth, _BAND_PLANES) if len(problem.kernel) == 3 and problem.kernel[0] > 1 else 1
    return planes_per, max(1, _BLOCK_SAMPLES // max(1, width * planes_per))


def _band_rows(problem: Problem, out: tuple[int, int, int], lanes: int) -> int:
    """Rows of a band of a volume's outer product (:func:`_ring_units`): as many as
    half a core's second cache level holds, one slot a kernel plane and one more (the plane
    pass then reads them from that cache, not each input plane once per kernel plane from
    memory; 17 taps on 256^3, L2 of 1 MiB: rings of 1 MiB 1.6x the time of 512 KiB), in
    bands of equal height, at least one a thread where there are fewer maps than threads
    (8 rows a band at least)."""
    kz, (_, height, width) = problem.kernel[0], out
    most = max(1, l2_bytes() // 2 // ((kz + 1) * width * problem.dtype.itemsize))
    bands = max(-(-height // most), -(-lanes // _map_count(problem)))
    return max(min(height, 8), -(-height // bands))


def _ring_units(problem: Problem, out: tuple[int, int, int], rows: int, lanes: int) -> list[Unit]:
    """Blocks of a volume's outer product ``(b, g, o, z0, z1, r0, r1)``: bands of `rows`
    rows, every plane of a map in one (each block makes its first output plane from as
    many input planes as the kernel has), cut in two or more slabs of planes where there
    are fewer blocks than `lanes` and the planes are many."""
    depth, height, _ = out
    bands = [(*m, r, min(height, r + rows)) for m in _maps(problem) for r in range(0, height, rows)]
    slabs = max(1, min(-(-lanes // len(bands)), depth // (4 * problem.kernel[0])))
    planes = -(-depth // slabs)
    return [(b, g, o, z, min(depth, z + planes), r0, r1) for b, g, o, r0, r1 in bands for z in range(0, depth, planes)]


@functools.cache
def _no_samples(dtype: np.dtype[Any], writable: bool = False) -> np.ndarray:
    """An empty array of `dtype` (read-only unless `writable`): the loops' stand-in for
    samples they are not given."""
    empty = np.empty(0, dtype)
    return empty if writable else _read_only(empty)


def _read_only(x: np.ndarray) -> np.ndarray:
    """`x` as a read-only view: numba compiles once for writable and read-only inputs
    (memory-mapped files) alike."""
    view = x.view()
    view.flags.writeable = False
    return view


def _pads(problem: Problem, edges: Edges | None) -> Edges:
    """What lies past the edges of the input the loops read, along planes, rows and columns:
    `edges`, or the problem's own padding (zeros, or periodic)."""
    if edges is None:
        edges = Edges(tuple(zip(problem.pad_lo, problem.pad_hi)), "wrap" if problem.circular else "constant")
    return replace(edges, pads=((0, 0),) * (3 - len(edges.pads)) + edges.pads)


@functools.lru_cache(maxsize=256)
def _index_map(n: int, pad: tuple[int, int], mode: str) -> np.ndarray:
    """The sample of an axis of `n` at each position of the axis padded by `pad` under
    `mode` (a ``numpy.pad`` mode); -1 past the edges of a constant fill."""
    lo, hi = pad
    index = source_index(np.arange(-lo, n + hi), n, mode).astype(np.int64)
    index.flags.writeable = False
    return index


def _lanes(problem: Problem, separable: bool, workers: int) -> int:
    """Threads for `problem`: :func:`lanes_for` its multiply-adds."""
    return lanes_for(_macs(problem, separable), workers)


def lanes_for(macs: int, workers: int) -> int:
    """Threads for a call of `macs` multiply-adds: the workers, or one for a call too small
    to share (:data:`_THREADED_MACS`)."""
    return workers if macs >= _THREADED_MACS else 1


def calls_for(units: int, macs: int, lanes: int) -> int:
    """Calls that `units` blocks of work of `macs` multiply-adds in all are handed to
    `lanes` threads in (:data:`_CALL_MACS`, :data:`_CALLS_PER_LANE`)."""
    return 1 if lanes == 1 else min(units, max(_CALLS_PER_LANE * lanes, macs // _CALL_MACS))


def _macs(problem: Problem, separable: bool) -> int:
    """Multiply-adds of `problem` in the compiled form: every tap of every output, or the
    outer product's factors' taps."""
    p = problem
    outputs = _map_count(p) * math.prod(p.out_spatial)
    return outputs * (sum(p.kernel) if separable else math.prod(p.kernel))


def seconds(problem: Problem, rates: Rates, separable: bool, workers: int) -> float:
    """Estimated time (see :data:`_MAC_BYTES`): multiply-adds, the scalar loops at each
    row's ends, the input read and the output written, and a cost per block, shared by the
    threads (:func:`_lanes`), and a fixed cost per call."""
    p = _image(problem)
    outputs = _map_count(p) * math.prod(p.out_spatial)
    rows = outputs // p.out_spatial[-1]  # output rows, each of which takes a call per kernel row
    kw = p.kernel[-1]
    row_calls = rows if separable else rows * math.prod(p.kernel[:-1])  # an outer product's row pass once per row
    extended = separable or _halo(p, _pads(p, None))  # rows run from a copy extended past their ends
    edge_taps = 0 if extended else row_calls * (kw - 1) * kw
    moved = (p.batch * p.groups * math.prod(p.spatial) + outputs) * p.dtype.itemsize
    units = _unit_count(p, _out_dims(p))
    lanes = _lanes(p, separable, workers)
    blocks = units if extended else max(units, _window_count(p, units, lanes))  # lines cut in windows
    return loop_seconds(_macs(p, separable), moved, blocks, lanes, rates, edge_taps)


def loop_seconds(macs: int, moved: int, blocks: int, lanes: int, rates: Rates, edge_taps: int = 0) -> float:
    """Estimated time of compiled loops making `macs` vectorized multiply-adds and
    `edge_taps` scalar ones, moving `moved` bytes, in `blocks` units of work shared by
    `lanes` threads (see :data:`_MAC_BYTES`)."""
    work = (_MAC_BYTES * macs + _EDGE_TAP_BYTES * edge_taps + moved) / rates.stream_bytes
    lanes = min(lanes, blocks)
    # Handing work to other threads costs what a second one saves at _THREADED_MACS: half its time.
    handover = 0.0 if lanes == 1 else _MAC_BYTES * _THREADED_MACS / 2 / rates.stream_bytes
    return (work + _CALLS * blocks * rates.call_seconds) / lanes + _CALLS * rates.call_seconds + handover


def _pieces(row_taps: int, one_row: bool) -> tuple[int, int]:
    """Widths of the pieces a kernel row of `row_taps` taps is summed in (`one_row`: the
    kernel's only row): all but the last (:data:`_PIECE_TAPS`, or the whole row up to
    :data:`_WHOLE_ROW_TAPS`), and the last where it is narrower (else 0)."""
    most = _ONE_ROW_PIECE_TAPS if one_row else _PIECE_TAPS
    if row_taps <= max(most, _WHOLE_ROW_TAPS[wide_vectors()]):
        return row_taps, 0
    return most, row_taps % most


@functools.cache
def _module(piece: int, last: int, fused: int, dtype: str, deep: tuple[int, int] | None = None, mirrored: int = 0) -> ModuleType:
    """The compiled loops for kernel rows summed in pieces of `piece` taps and a `last`
    narrower one (:func:`_pieces`), `fused` rows a pass (and a kernel of `deep` planes and
    rows, all its rows a pass, where given: :func:`_deep_rows`; an outer product's row pass
    of `mirrored` taps in one loop where it reads the same both ways:
    :func:`_row_pass_function`), in `dtype` ('f' or 'd'): see :func:`_load`."""
    shape = f"{piece}_{last}x{fused}{f'd{deep[0]}x{deep[1]}' if deep else ''}{f'm{mirrored}' if mirrored else ''}"
    _passes_module(dtype)  # imported by name from the module's source
    return load(f"arrayconv_compiled_{dtype}{shape}_{_VERSION}", _source(piece, last, fused, dtype, deep, mirrored))


def window_scores(x: np.ndarray, window: tuple[int, int], offset: float, numerator: np.ndarray, scores: np.ndarray, flat: float) -> None:
    """`scores`: the normalized cross-correlation scores of every window of shape `window`
    that fits in 2-D `x` (less its mean), from their correlations with the centred template
    of unit norm, `numerator`, in numba's loops on this thread: the windows' sums and sums
    of squares in float64, column sums of the window's rows kept running down the image (a
    row added, one taken away) and each output row's windows as differences of running
    sums along it, the squares less `offset` (one near their mean keeps these small);
    0 where a window's spread is at most `flat` times its squared sum, clipped to [-1, 1].
    `numerator`'s rows go in as one line of samples (an FFT's 'valid' result is a view of
    rows apart: looped over as 2-D, its rows did not vectorize, 1.7x the time)."""
    rows, width = numerator.shape
    if numerator.strides[1] != numerator.itemsize or numerator.strides[0] < 0 or numerator.strides[0] % numerator.itemsize:
        numerator = np.ascontiguousarray(numerator)
    step = numerator.strides[0] // numerator.itemsize
    line = np.lib.stride_tricks.as_strided(numerator, ((rows - 1) * step + width,), (numerator.itemsize,), writeable=False) if rows else numerator.reshape(-1)
    _window_module().window_scores(x, *window, offset, line, step, scores, flat)


@functools.cache
def _window_module() -> ModuleType:
    return load(f"arrayconv_window_scores_{_VERSION}", _WINDOW_SOURCE)


_WINDOW_SOURCE = '''"""Generated by arrayconv._methods._compiled: template matching's scores by running sums."""
import numpy as np
from numba import njit


@njit(nogil=True, cache=True, error_model="numpy")  # a float division with no check for zero: vectorized
def window_scores(x, kh, kw, offset, numerator, step, scores, flat):
    n, samples = x.shape[1], kh * kw
    per_sample = 1.0 / samples
    col, col2 = np.zeros(n), np.zeros(n)
    run, run2 = np.zeros(n + 1), np.zeros(n + 1)
    for j in range(kh):
        row = x[j]
        for c in range(n):
            v = np.float64(row[c])
            col[c] += v
            col2[c] += v * v - offset
    for i in range(scores.shape[0]):
        if i > 0:
            entering, leaving = x[i + kh - 1], x[i - 1]
            for c in range(n):
                a, b = np.float64(entering[c]), np.float64(leaving[c])
                col[c] += a - b
                col2[c] += a * a - b * b
        for c in range(n):
            run[c + 1] = run[c] + col[c]
            run2[c + 1] = run2[c] + col2[c]
        # The rows' sum of squares bounds every window's: the root of each spread is then a
        # float32, whose division takes half the time, unless samples near float32's largest.
        narrow = run2[n] + n * kh * offset < 1e76
        out, top = scores[i], numerator[i * step : i * step + scores.shape[1]]
        for c in range(out.shape[0]):
            s = run[c + kw] - run[c]
            shared = s * s * per_sample  # the squared sum's share of the sum of squares
            spread = run2[c + kw] - run2[c] + samples * offset - shared
            spread_kept = spread > shared * flat  # else a flat window: score 0
            root = np.sqrt(spread if spread_kept else 1.0)
            v = top[c] / np.float32(root) if narrow else top[c] / root
            v = 1.0 if v > 1.0 else -1.0 if v < -1.0 else v
            out[c] = v if spread_kept else 0.0
'''


def box_sums(x: np.ndarray, size: int, index: np.ndarray, fill: float, out: np.ndarray) -> None:
    """`out` ``(A, n, C)``: the means of `size` samples of `x` ``(A, m, C)`` along its
    middle axis, output ``i`` over the samples ``index[i:i + size]`` (``fill`` where an
    index is -1: `index` is the axis extended by a boundary rule), in numba's loops: a
    running sum in float64, one sample added and one taken away an output, on the workers
    (`x` must not share memory with `out`)."""
    code = _box_module()
    a, _, c = out.shape
    if c == 1:  # lines along the last axis: several a pass, their sums side by side
        x, out = x[:, :, 0], out[:, :, 0]
    run = code.box_lines if c == 1 else code.box_sums
    parts = min(_config.workers(), max(a, c))
    if parts <= 1 or out.size < _THREADED_MACS:  # about a multiply-add's work a sample
        run(x, size, index, fill, out)
        return
    cuts = np.linspace(0, max(a, c), parts + 1).astype(int)

    def part(span: tuple[int, int]) -> tuple[slice, ...]:  # cut between lines, else a slice of every row
        return (slice(*span),) if a >= c else (slice(None), slice(None), slice(*span))

    run_parallel(zip(cuts[:-1], cuts[1:]), lambda span: run(x[part(span)], size, index, fill, out[part(span)]), parts)


@functools.cache
def _box_module() -> ModuleType:
    return load(f"arrayconv_box_sums_{_VERSION}", _BOX_SOURCE.replace("{box_lines}", _box_lines_source(_BOX_LANES)))


# Lines along the last axis summed side by side: independent running sums, not one chain of
# adds (2048 lines of 2048 float32 samples, a 15-sample mean: 3.8 ms with 2 or 4, 5.4 with 8).
_BOX_LANES = 4


def _box_lines_source(lanes: int) -> str:
    """``box_lines``: :func:`box_sums` of lines along the last axis, `lanes` lines side by
    side in scalar running sums (then the rest one at a time)."""
    k = range(lanes)

    def each(template: str, indent: int) -> str:
        return "".join(" " * indent + template.format(k=i) + "\n" for i in k)

    return f"""@njit(nogil=True, cache=True)
def box_lines(x, size, index, fill, out):
    lines, n = out.shape
    first = 0
    while first < lines:
        if first + {lanes} > lines:
            box_sums(x[first:].reshape(lines - first, x.shape[1], 1), size, index, fill, out[first:].reshape(lines - first, n, 1))
            return
{each("r{k}, o{k} = x[first + {k}], out[first + {k}]", 8)}{each("a{k} = 0.0", 8)}        for j in range(size):
            s = index[j]
            if s < 0:
{each("a{k} += fill", 16)}            else:
{each("a{k} += np.float64(r{k}[s])", 16)}{each("o{k}[0] = a{k} / size", 8)}        for i in range(1, n):
            s, t = index[i + size - 1], index[i - 1]
            if s >= 0 and t >= 0:
{each("a{k} += np.float64(r{k}[s]) - np.float64(r{k}[t])", 16)}            else:
{each("a{k} += (fill if s < 0 else np.float64(r{k}[s])) - (fill if t < 0 else np.float64(r{k}[t]))", 16)}{each("o{k}[i] = a{k} / size", 12)}        first += {lanes}
"""


_BOX_SOURCE = '''"""Generated by arrayconv._methods._compiled: box means by running sums."""
import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def box_sums(x, size, index, fill, out):
    a_count, n, c_count = out.shape
    acc = np.empty(c_count)
    for a in range(a_count):
        acc[:] = 0.0
        for j in range(size):
            s = index[j]
            if s < 0:
                acc += fill
            else:
                row = x[a, s]
                for c in range(c_count):
                    acc[c] += np.float64(row[c])
        dst = out[a, 0]
        for c in range(c_count):
            dst[c] = acc[c] / size
        for i in range(1, n):
            s, t = index[i + size - 1], index[i - 1]
            dst = out[a, i]
            if s >= 0 and t >= 0:
                entering, leaving = x[a, s], x[a, t]
                for c in range(c_count):
                    acc[c] += np.float64(entering[c]) - np.float64(leaving[c])
                    dst[c] = acc[c] / size
            else:
                for c in range(c_count):
                    acc[c] += (fill if s < 0 else np.float64(x[a, s, c])) - (fill if t < 0 else np.float64(x[a, t, c]))
                    dst[c] = acc[c] / size


{box_lines}'''


_VERSION = 33  # bump when the generated code changes: numba keys its cache by file


def weights_held() -> int:
    """Taps' weights one pass holds in vector registers: :data:`_HELD_WEIGHTS` by the count
    of registers of the CPU (32 with AVX-512 or on arm64, else 16: :func:`wide_vectors`)."""
    return _HELD_WEIGHTS[wide_vectors()]


def _fused_rows(kernel: tuple[int, ...], halo: bool = False) -> int:
    """Kernel rows summed in one pass over an output row: as many as keep their weights in
    registers (:func:`weights_held`), at most :data:`_FUSED_ROWS` (and
    :data:`_HALO_FUSED_ROWS` from halo_taps's copy) but for rows of one tap, whose passes
    are bound by the sum's loads and stores (9 rows of a 256^3 volume 21 -> 8.5 ms)."""
    rows = max(1, weights_held() // _pieces(kernel[-1], False)[0])
    if kernel[-1] == 1:
        return min(kernel[-2], rows)
    if halo:
        rows = min(rows, _HALO_FUSED_ROWS[0] if kernel[-1] <= 5 or kernel[-1] > 8 else _HALO_FUSED_ROWS[1])
    return min(kernel[-2], _FUSED_ROWS, rows)


def _deep_rows(kernel: tuple[int, ...], halo: bool) -> tuple[int, int] | None:
    """Planes and rows of a kernel whose rows, those of every plane, are summed in one pass,
    two output rows at a time, where its weights stay in registers (:func:`weights_held`):
    a volume's, or an image's of at least :data:`_DEEP_IMAGE_ROWS` rows from the copy with
    edges (`halo`); None for others, larger ones and those of rows in pieces
    (:func:`_pieces`)."""
    planes = kernel[0] if len(kernel) == 3 else 1
    many = planes > 1 or (halo and kernel[-2] >= _DEEP_IMAGE_ROWS)
    deep = many and math.prod(kernel) <= weights_held() and not _pieces(kernel[-1], False)[1]
    return (planes, kernel[-2]) if deep else None


def _split_loop(count: str, body: str, unsigned: bool = False) -> str:
    """`body` (statements indented 12, over index ``c``) for ``c`` in ``range(count)`` (an
    int; as unsigned ints with `unsigned`) as two loops: the vectorized one over a multiple
    of :data:`_VECTOR_SAMPLES`, then the rest with its weights (:data:`_NAMED_WEIGHT`) read
    from memory. The vector loop so has no scalar epilogue keeping its weights in registers:
    with 16 vector registers (AVX2), a 9-tap loop spilled them and ran 1.3x slower."""
    cast = "np.uint64" if unsigned else ""
    rest = _NAMED_WEIGHT.sub(lambda m: f"{m[1]}[{', '.join(i for i in m.groups()[1:] if i)}]", body)
    return f"""        most = {cast}({count} // {_VECTOR_SAMPLES} * {_VECTOR_SAMPLES})
        for c in range(most):
{body}        for c in range(most, {cast}({count})):
{rest}"""


def _rows_function(g: int, kw: int) -> str:
    """``rows{g}_{kw}``: `g` kernel rows `w` of `kw` taps over input rows ``x[rows]``, the
    interior columns ``[c_lo, c_hi)`` of `dst` (= or +=), in one loop unrolled over the taps
    (inlined where called, as ``span`` and ``edges``: a call per output row cost 15-20% of
    a 3x3 filter over 112-sample rows). Several rows are indexed by unsigned ints, not
    through slices: no views made per row, no check for negative indices (3x3x3 on 128^3
    0.6x the time, 3x3 and 5x5 on 1024^2 0.8-0.98x); one row through slices (an outer
    product's row pass: 3-7% faster so)."""
    weights = "".join(f"    w{i}_{j} = w[{i}, {j}]\n" for i in range(g) for j in range(kw))
    if g == 1:
        sources = f"    s0 = x[rows[0], c_lo - shift : c_hi - shift + {kw - 1}]\n    d = dst[c_lo:c_hi]\n"
        at, stored = (lambda i, j: f"s{i}[c + {j}]"), "d[c]"
    else:
        sources = "    a, lo = np.uint64(c_lo - shift), np.uint64(c_lo)\n" + "".join(f"    s{i} = np.uint64(rows[{i}])\n" for i in range(g))
        at, stored = (lambda i, j: f"x[s{i}, a + c{f' + np.uint64({j})' if j else ''}]"), "dst[lo + c]"
    terms = " + ".join(f"w{i}_{j} * F({at(i, j)})" for i in range(g) for j in range(kw))
    loops = {op: _split_loop("n", f"            {stored} {op} {terms}\n", g > 1) for op in ("=", "+=")}
    return f"""
@njit(inline="always", **LOOP)
def rows{g}_{kw}(x, rows, w, dst, c_lo, c_hi, shift, assign):
    n = c_hi - c_lo
    if n <= 0:
        return
{weights}{sources}    if assign:
{loops['=']}    else:
{loops['+=']}"""


def _row_pass_function(piece: int, last: int, mirrored: int = 0) -> str:
    """``row_pass``: an outer product's row pass, ``span1`` over a whole output row; where the
    kernel row reads the same both ways (a Gaussian's, a box's) and is one piece of
    :func:`_pieces`, or `mirrored` taps wide, the samples under each pair of its mirrored
    taps summed first and multiplied once, in one loop (``mirror``: half the multiply-adds
    and half the dependent chain; on a Zen 2 core Gaussians of 9 and 13 taps 1.2-1.5x faster
    a row, of 17 and 25 taps 1.2-1.3x faster than in pieces of 16)."""
    call = "span1(x, rows, w, dst, 0, n, 0, True)"
    taps = mirrored or (0 if last else piece)
    if taps < 2:
        return f"""
@njit(inline="always", **LOOP)
def row_pass(x, rows, w, dst, n):
    {call}
"""
    half = taps // 2
    weights = "".join(f"    w0_{j} = w[0, {j}]\n" for j in range(half + taps % 2))
    terms = ([f"w0_{half} * s0[c + {half}]"] if taps % 2 else []) + [f"w0_{j} * (s0[c + {j}] + s0[c + {taps - 1 - j}])" for j in range(half)]
    loop = _split_loop("n", f"            d[c] = {' + '.join(terms)}\n")
    return f"""
@njit(inline="always", **LOOP)
def mirror(x, rows, w, dst, n):
{weights}    s0, d = x[rows[0], : n + {taps - 1}], dst[:n]
    if n > 0:
{loop}

@njit(inline="always", **LOOP)
def row_pass(x, rows, w, dst, n):
    \"\"\"dst[:n] = the kernel row w over row rows[0] of x: by ``mirror`` where w reads the
    same both ways.\"\"\"
    if w.shape[1] != {taps}:
        {call}
        return
    for j in range({half}):
        if w[0, j] != w[0, {taps - 1} - j]:
            {call}
            return
    mirror(x, rows, w, dst, n)
"""


def _span_function(g: int, piece: int, last: int) -> str:
    """``span{g}``: ``rows{g}`` over a whole kernel row (:func:`_in_pieces`)."""
    return _in_pieces(f"span{g}", "x, rows, w, dst, c_lo, c_hi, shift, assign",
                      f"rows{g}_{{k}}(x, rows, {{w}}, dst, c_lo, c_hi, shift - j, assign and j == 0)", piece, last)


def _in_pieces(name: str, params: str, call: str, piece: int, last: int) -> str:
    """``{name}({params})``: `call` (with the width ``{k}`` and the weights ``{w}`` of a
    piece of `w`'s rows, whose first tap is ``j``) over the whole rows, piece by piece (see
    :func:`_pieces`)."""
    tail = f"    if j < w.shape[1]:\n        {call.format(k=last, w='w[:, j:]')}\n" if last else ""
    return f"""
@njit(inline="always", **LOOP)
def {name}({params}):
    j = 0
    while j + {piece} <= w.shape[1]:
        {call.format(k=piece, w=f'w[:, j : j + {piece}]')}
        j += {piece}
{tail}"""


def _line_function(g: int, kw: int) -> str:
    """``line{g}_{kw}``: as ``rows{g}_{kw}``, over one line of `x` (1-D) read from each of
    `starts` plus `at`: the first `n` samples of `dst` (= or +=), in one vectorized loop
    (unsigned indices: no check for negative ones)."""
    weights = "".join(f"    w{i}_{j} = w[{i}, {j}]\n" for i in range(g) for j in range(kw))
    sources = "".join(f"    s{i} = np.uint64(starts[{i}] + at)\n" for i in range(g))
    terms = " + ".join(f"w{i}_{j} * x[s{i} + c{f' + np.uint64({j})' if j else ''}]" for i in range(g) for j in range(kw))
    loops = {op: _split_loop("n", f"            dst[c] {op} {terms}\n", True) for op in ("=", "+=")}
    return f"""
@njit(inline="always", **LOOP)
def line{g}_{kw}(x, starts, at, w, dst, n, assign):
{weights}{sources}    if assign:
{loops['=']}    else:
{loops['+=']}"""


def _lines_function(g: int, piece: int, last: int) -> str:
    """``lines{g}``: ``line{g}`` over a whole kernel row (:func:`_in_pieces`)."""
    return _in_pieces(f"lines{g}", "x, starts, w, dst, n, assign", f"line{g}_{{k}}(x, starts, j, {{w}}, dst, n, assign and j == 0)", piece, last)


def _twin_function(planes: int, rows: int, kw: int, add: bool = False, call: bool = False) -> str:
    """``twin{planes}x{rows}``: as ``rows{planes * rows}_{kw}`` (=), two output rows a pass,
    `d` and `e`: `rows` holds ``rows + 1`` input rows a plane, `e`'s kernel rows one input
    row below `d`'s. Each sample loaded is summed into both where the two share its row
    (3x3x3: 18 loads an output, not 27; 1.3x the multiply-adds a second in cache). Only
    assignments (=); with `add`, ``twin_add{planes}x{rows}``: only sums (+=). With `call`,
    called, not inlined: each place it is called from does not compile it again."""
    op, name = ("+=", "twin_add") if add else ("=", "twin")
    weights = "".join(f"    w{i}_{j} = w[{i}, {j}]\n" for i in range(planes * rows) for j in range(kw))
    sources = "".join(f"    s{p}_{i} = np.uint64(rows[{p * (rows + 1) + i}])\n" for p in range(planes) for i in range(rows + 1))
    loads = "".join(f"        v{p}_{i}_{j} = F(x[s{p}_{i}, a + c{f' + np.uint64({j})' if j else ''}])\n"
                    for p in range(planes) for i in range(rows + 1) for j in range(kw))

    def terms(below: int) -> str:
        return " + ".join(f"w{p * rows + i}_{j} * v{p}_{i + below}_{j}" for p in range(planes) for i in range(rows) for j in range(kw))

    def rest(below: int) -> str:  # the weights read from memory, as _split_loop's
        return _NAMED_WEIGHT.sub(lambda m: f"w[{m[2]}, {m[3]}]", terms(below))

    return f"""
@njit({'' if call else 'inline="always", '}**LOOP)
def {name}{planes}x{rows}(x, rows, w, d, e, c_lo, c_hi, shift):
    n = max(c_hi - c_lo, 0)
{weights}    a, lo = np.uint64(c_lo - shift), np.uint64(c_lo)
{sources}    most = np.uint64(n // {_VECTOR_SAMPLES} * {_VECTOR_SAMPLES})
    for c in range(most):
{loads}        d[lo + c] {op} {terms(0)}
        e[lo + c] {op} {terms(1)}
    for c in range(most, np.uint64(n)):
{loads}        d[lo + c] {op} {rest(0)}
        e[lo + c] {op} {rest(1)}
"""


def _weights_function(g: int, pair: bool, flat: bool = False) -> str:
    """``buffer{g}``: `d` (= or +=) the sum of `g` rows of `b`, ``b[index[i]]``, weighted by
    `a`; with `pair`, ``pair{g}``: the same, and `e` from the rows one index on (the rows
    they share read once); with `flat`, ``flat{g}``: the same from a line `x`, its rows `step`
    samples apart from `start`, as long as `d`."""
    rows = "x[start + {i} * step : start + {i} * step + d.shape[0]]" if flat else "b[index[{i}]]"
    named = "".join(f"    a{i} = a[{i}]\n" for i in range(g)) + "".join(f"    r{i} = {rows.format(i=i)}\n" for i in range(g + pair))
    loads = "".join(f"            v{i} = F(r{i}[c])\n" for i in range(g + pair))
    results = ("d", "e") if pair else ("d",)
    stores = "".join(f"            {o}[c] {{op}} " + " + ".join(f"a{i} * v{i + k}" for i in range(g)) + "\n" for k, o in enumerate(results))
    sums = {op: _split_loop("d.shape[0]", loads + stores.format(op=op)) for op in ("=", "+=")}
    return f"""
@njit(**LOOP)
def {'flat' if flat else 'pair' if pair else 'buffer'}{g}(a, {'x, start, step' if flat else 'b, index'}, {', '.join(results)}, assign):
{named}    if assign:
{sums['=']}    else:
{sums['+=']}"""



def _passes_name(dtype: str) -> str:
    """The module name of :func:`_passes_source`'s loops in `dtype`."""
    return f"arrayconv_compiled_{dtype}_passes_{_VERSION}"


@functools.cache
def _passes_module(dtype: str) -> ModuleType:
    """The compiled loops of outer products' passes in `dtype` ('f' or 'd'), shared by every
    kernel width's module (:func:`_module`): compiled once, not once a width."""
    return load(_passes_name(dtype), _passes_source(dtype))


def _passes_source(dtype: str) -> str:
    """Python source of the loops that sum weighted rows: ``buffer{g}``, ``pair{g}`` and
    ``flat{g}`` (one result, two from the rows they share, or rows of a line), the
    ``weigh*`` passes that run them, the most rows a pass (an outer product's column and
    plane passes), and ``weigh_mapped`` over rows past the edges."""
    cast = {"f": "np.float32", "d": "np.float64"}[dtype]
    wide = wide_vectors()
    column, plane = _BUFFER_PASSES, _PLANE_PASSES if wide else _BUFFER_PASSES
    even = () if wide else tuple(range(1, _EVEN_PASS_ROWS + 1))  # the column passes of long rows, 16 registers
    counts = sorted({*column, *plane, *(g + 1 for g in plane if g >= _ODD_PASS), *even})
    flat = sorted({*column, *(g + 1 for g in column if g >= _ODD_PASS)})  # weigh_flat's: short rows only
    functions = [_weights_function(g, pair) for g in counts for pair in (False, True)] + [_weights_function(g, False, True) for g in flat]

    def weighing(name: str, params: str, doc: str, passes: str, rows: str, sizes: tuple[int, ...], balanced: tuple[int, ...] = ()) -> str:
        """``name``: the passes of `sizes` rows, the most rows left a pass; one more where
        that would leave one (k * 8 + 1: 9, not 8 + 1). With `balanced` sizes, rows of
        :data:`_EVEN_PASS_SAMPLES` or more take the fewest passes of up to the largest of
        them, as many rows each."""
        order = [branch for g in sorted(sizes, reverse=True) for branch in ([(f"left % {g} == 1 and left > {g}", g + 1)] if g >= _ODD_PASS else []) + [(f"left >= {g}", g)]]
        split = ""
        if balanced:
            split = f"        rows = -(-left // -(-left // {max(balanced)})) if d.shape[0] >= {_EVEN_PASS_SAMPLES} else 0\n"
            order = [(f"rows == {g}", g) for g in reversed(balanced)] + order
        return f"""
@njit(**LOOP)
def {name}({params}):
    \"\"\"{doc}\"\"\"
    i = 0
    while i < a.shape[0]:
        left = a.shape[0] - i
{split}""" + "".join(f"""        {'elif' if k else 'if'} {test}:
            {passes}{g}(a[i:], {rows}, i == 0)
            i += {g}
""" for k, (test, g) in enumerate(order))

    weighings = "".join(weighing(*args) for args in (
        ("weigh", "a, b, index, d", f"d = sum_i a[i] * b[index[i]], up to {max(column)} rows a pass.", "buffer", "b, index[i:], d", column, even),
        ("weigh_pair", "a, b, index, d, e", "d as ``weigh``'s, e the same from index[1:].", "pair", "b, index[i:], d, e", column, even),
        ("weigh_flat", "a, x, start, step, d", "d = sum_i a[i] * x[start + i * step :], as long as d.", "flat", "x, start + i * step, step, d", column),
        ("weigh_planes", "a, b, index, d", f"As ``weigh``, up to {max(plane)} rows a pass.", "buffer", "b, index[i:], d", plane),
        ("weigh_planes_pair", "a, b, index, d, e", f"As ``weigh_pair``, up to {max(plane)} rows a pass.", "pair", "b, index[i:], d, e", plane)))
    return f'''"""Generated by arrayconv._methods._compiled: weighted sums of rows in {cast}."""
import numpy as np
from numba import njit

F = {cast}
CONTRACT = set(["contract"])  # a * b + c as one fused multiply-add
LOOP = dict(nogil=True, cache=True, fastmath=CONTRACT, _nrt=False)
{"".join(functions)}
{weighings}

@njit(**LOOP)
def put(d, v, assign):
    """d[:] = v, or += v (loops: numba's array expressions take long to compile)."""
    if assign:
        for c in range(d.shape[0]):
            d[c] = v
    else:
        for c in range(d.shape[0]):
            d[c] += v


@njit(inline="always", **LOOP)
def all_in(index):
    """Whether every index is one of a row (none is -1)."""
    for i in range(index.shape[0]):
        if index[i] < 0:
            return False
    return True


@njit(**LOOP)
def weigh_mapped(a, b, index, first, d, fill):
    """d = sum_i a[i] * b[index[first + i]] (the fill where the index is -1): the rows in
    the input, where they run unbroken between the fill's (a constant edge's), by ``weigh``
    (many a pass), then the fill's weights."""
    rows = index[first : first + a.shape[0]]
    lo, hi = 0, rows.shape[0]
    while lo < hi and rows[lo] < 0:
        lo += 1
    while hi > lo and rows[hi - 1] < 0:
        hi -= 1
    if lo < hi and all_in(rows[lo:hi]):
        weigh(a[lo:hi], b, rows[lo:hi], d)
        if fill != 0 and hi - lo < rows.shape[0]:
            put(d, (a[:lo].sum() + a[hi:].sum()) * F(fill), False)
        return
    put(d, 0, True)
    for i in range(rows.shape[0]):
        if rows[i] >= 0:
            buffer1(a[i:], b, rows[i:], d, False)
        elif fill != 0:
            put(d, a[i] * F(fill), False)


@njit(**LOOP)
def weigh_mapped_pair(a, b, index, first, d, e, fill):
    """d as ``weigh_mapped``'s, e the same from index[first + 1] on."""
    if all_in(index[first : first + a.shape[0] + 1]):
        weigh_pair(a, b, index[first:], d, e)
    else:
        weigh_mapped(a, b, index, first, d, fill)
        weigh_mapped(a, b, index, first + 1, e, fill)
'''


def _source(piece: int, last: int, fused: int, dtype: str, deep: tuple[int, int] | None = None, mirrored: int = 0) -> str:
    """Python source of the compiled loops for kernel rows in pieces of `piece` and `last`
    taps (:func:`_pieces`) in `dtype` (see the module's docstring): ``span1`` and
    ``span{fused}`` sum kernel rows, piece by piece, over an output row's
    interior columns (where the column map is the identity), ``edges`` the columns near its
    ends (an outer product's passes are :func:`_passes_source`'s); ``taps`` and
    ``halo_taps`` run a block, and with
    `deep` rows, ``deep_taps`` (a volume's kernel, all its planes' rows a pass);
    ``*_jobs`` run a call's blocks, ``image_jobs`` and ``volume_jobs`` an outer product's.
    Few sizes of each are made: numba's compile time grows with the unrolled code."""
    cast = {"f": "np.float32", "d": "np.float64"}[dtype]
    pairs = not deep and fused > 1 and not last  # halo_taps's pairs of output rows, `fused` kernel rows a pass
    widths = [w for w in (piece, last) if w]
    groups = sorted({1, fused, *([deep[0] * deep[1]] if deep else [])})
    functions = [_rows_function(g, w) for g in groups for w in widths] + [_span_function(g, piece, last) for g in groups]
    functions += [_line_function(g, w) for g in groups for w in widths] + [_lines_function(g, piece, last) for g in groups]
    functions.append(_row_pass_function(piece, last, mirrored))
    if deep:
        functions.append(_twin_function(*deep, piece))
    elif pairs:
        functions += [_twin_function(1, fused, piece, add=add, call=True) for add in (False, True)]
    return f'''"""Generated by arrayconv._methods._compiled: kernel rows in pieces of {piece} (last {last}) taps in {cast}."""
import numpy as np
from numba import njit

F = {cast}
FUSED = {fused}
CONTRACT = set(["contract"])  # a * b + c as one fused multiply-add
# The loops run without numba's reference counts: each view of a row made an atomic
# increment and decrement, a fifth of the time of short rows. So they allocate nothing: the
# entry points (``*_jobs``) make their scratch, INTS indices and the lines they need.
LOOP = dict(nogil=True, cache=True, fastmath=CONTRACT, _nrt=False)
INTS = 128
from {_passes_name(dtype)} import put, weigh_flat, weigh_mapped, weigh_mapped_pair, weigh_planes, weigh_planes_pair
{"".join(functions)}

@njit(inline="always", **LOOP)
def extend(line, src, cols, lo, hi, fill):
    """line[q] for q outside [lo, hi): src[cols[q]], the fill where cols is -1."""
    for q in range(lo):
        k = cols[q]
        line[q] = F(src[k]) if k >= 0 else F(fill)
    for q in range(hi, line.shape[0]):
        k = cols[q]
        line[q] = F(src[k]) if k >= 0 else F(fill)

@njit(inline="always", **LOOP)
def copy_row(x, p, s, line, cols, shift, fill):
    """line = input row s of plane p (the fill where either is -1), from `shift` on,
    extended past its ends by `cols`."""
    if p < 0 or s < 0:
        put(line, F(fill), True)
        return
    src = x[p, s]
    lo, hi = min(shift, line.shape[0]), min(line.shape[0], shift + src.shape[0])
    inner, given = line[lo:hi], src[lo - shift : hi - shift]
    for q in range(inner.shape[0]):  # the input row as it is: a vectorized copy
        inner[q] = F(given[q])
    extend(line, src, cols, lo, hi, fill)  # past its ends, by the boundary rule


@njit(inline="always", **LOOP)
def edges(x, rows, w, cols, dst, c_lo, c_hi, fill, assign):
    """dst[c] (= or +=) sum_i,j w[i, j] * x[rows[i], cols[c + j]] for the columns c of dst
    outside the interior [c_lo, c_hi), the fill where cols is -1 (each column looked up
    once for every row)."""
    for part in range(2):
        start, stop = (0, c_lo) if part == 0 else (c_hi, dst.shape[0])
        for c in range(start, stop):
            t = F(0)
            for j in range(w.shape[1]):
                k = cols[c + j]
                if k >= 0:
                    for i in range(rows.shape[0]):
                        t += w[i, j] * F(x[rows[i], k])
                elif fill != 0:
                    for i in range(rows.shape[0]):
                        t += w[i, j] * F(fill)
            if assign:
                dst[c] = t
            else:
                dst[c] += t


@njit(**LOOP)
def taps(x, w, fill_rows, out, planes, rows, cols, z0, z1, r0, r1, c_lo, c_hi, shift, fill, ints):
    """out[z, r] for planes z0:z1 and rows r0:r1: every tap w[d, i, j] over the input
    sample x[planes[z + d], rows[r + i], cols[c + j]], FUSED kernel rows a pass where
    they all lie in the input; `fill_rows[d, i]`: the fill times the sum of row (d, i);
    `ints`: scratch for the rows' indices."""
    kd, kh = w.shape[0], w.shape[1]
    idx, one = ints[:FUSED], ints[FUSED : FUSED + 1]
    for z in range(z0, z1):
        for r in range(r0, r1):
            o = out[z, r]
            assign = True
            for d in range(kd):
                p = planes[z + d]
                i = 0
                while i < kh:
                    inside = p >= 0 and i + FUSED <= kh
                    if inside:
                        for q in range(FUSED):
                            idx[q] = rows[r + i + q]
                            inside = inside and idx[q] >= 0
                    if inside and FUSED > 1:
                        span{fused}(x[p], idx, w[d, i : i + FUSED], o, c_lo, c_hi, shift, assign)
                        edges(x[p], idx, w[d, i : i + FUSED], cols, o, c_lo, c_hi, fill, assign)
                        assign = False
                        i += FUSED
                        continue
                    s = rows[r + i]
                    if p >= 0 and s >= 0:
                        one[0] = s
                        span1(x[p], one, w[d, i : i + 1], o, c_lo, c_hi, shift, assign)
                        edges(x[p], one, w[d, i : i + 1], cols, o, c_lo, c_hi, fill, assign)
                        assign = False
                    elif fill != 0 or assign:
                        if assign:
                            put(o, 0, True)
                            assign = False
                        put(o, fill_rows[d, i], False)
                    i += 1
            if assign:
                put(o, 0, True)


@njit(nogil=True, cache=True, fastmath=CONTRACT)
def image_jobs(x, fy, fx, out, planes, rows, cols, jobs, shift, fill, line, x_flat, out_flat, band):
    """The blocks ``(b, g, o, z0, z1, r0, r1)`` of `jobs` of an outer product's correlation
    with a kernel one plane deep (images, as volumes one plane deep): ``plane_rows`` (with
    `x_flat` and `out_flat` the samples of `x` and `out`, or empty)."""
    size, out_size = x.shape[3] * x.shape[4], out.shape[4] * out.shape[5]
    ints = np.empty(INTS, np.int64)
    for u in range(jobs.shape[0]):
        b, g, o, z0, z1, r0, r1 = jobs[u, 0], jobs[u, 1], jobs[u, 2], jobs[u, 3], jobs[u, 4], jobs[u, 5], jobs[u, 6]
        for z in range(z0, z1):
            at = ((b * x.shape[1] + g) * x.shape[2] + planes[z]) * size
            to = (((b * out.shape[1] + g) * out.shape[2] + o) * out.shape[3] + z) * out_size
            flat = x_flat[at : at + size] if x_flat.shape[0] else x_flat
            dst = out_flat[to : to + out_size] if out_flat.shape[0] else out_flat
            plane_rows(x[b, g, planes[z]], flat, fy[g, o], fx[g, o], out[b, g, o, z], dst, rows, cols, r0, r1, shift, F(fill), line, band, 0, ints)


@njit(nogil=True, cache=True, fastmath=CONTRACT)
def volume_jobs(x, fz, fy, fx, out, planes, rows, cols, jobs, shift, fill, ring, line, x_flat, out_flat, band, rows_out):
    """The same on volumes, their planes' passes first: each input plane's column and row
    passes for the block's rows (``plane_rows``) into the next slot of `ring` (one more
    slot than the kernel has planes, so that the plane pass reads them from cache), then
    the output planes' rows, two planes a pass, as the slots' weighted sums into the result
    (`out_flat`, else `rows_out` and copied row by row)."""
    size, out_size = x.shape[3] * x.shape[4], out.shape[4] * out.shape[5]
    kz, width, slots = fz.shape[2], out.shape[5], ring.shape[0]
    order, ints = np.empty(slots, np.int64), np.empty(INTS, np.int64)
    for u in range(jobs.shape[0]):
        b, g, o, z0, z1, r0, r1 = jobs[u, 0], jobs[u, 1], jobs[u, 2], jobs[u, 3], jobs[u, 4], jobs[u, 5], jobs[u, 6]
        wz, wy, wx, m = fz[g, o], fy[g, o], fx[g, o], (r1 - r0) * width
        fill_planes = F(fill) * wy.sum() * wx.sum()  # the passes' result on a plane past the edges
        for at in range(z0, z1 + kz - 1):  # the input plane of padded position `at` into slot at % slots
            slot, p = ring[at % slots, :m], planes[at]
            if p < 0:
                put(slot, fill_planes, True)
            else:
                start = ((b * x.shape[1] + g) * x.shape[2] + p) * size
                flat = x_flat[start : start + size] if x_flat.shape[0] else x_flat
                plane_rows(x[b, g, p], flat, wy, wx, slot.reshape(r1 - r0, width), slot, rows, cols, r0, r1, shift, F(fill), line, band, r0, ints)
            z = at - kz + 1  # the last output plane whose input planes are all in the slots
            made = 2 if (z - z0) % 2 else 1
            if z < z0 or (made == 1 and z + 1 < z1):
                continue
            first = z - made + 1
            for i in range(slots):
                order[i] = (first + i) % slots
            to = ((((b * out.shape[1] + g) * out.shape[2] + o) * out.shape[3] + first) * out.shape[4] + r0) * width
            if out_flat.shape[0]:
                dst = out_flat[to : to + out_size * made]
            else:
                dst = rows_out[: out_size * made]
            if made == 2:
                weigh_planes_pair(wz, ring, order, dst[:m], dst[out_size : out_size + m])
            else:
                weigh_planes(wz, ring, order, dst[:m])
            for t in range(made if not out_flat.shape[0] else 0):
                for r in range(r0, r1):
                    row, src = out[b, g, o, first + t, r], dst[t * out_size + (r - r0) * width :]
                    for c in range(width):
                        row[c] = src[c]


@njit(**LOOP)
def segment_rows(flat, s, n, fy, fx, out_flat, r, k, cols, shift, fill, band, line, ints):
    """Output rows r:r+k of a plane (samples `out_flat`, rows of `n`) from its input rows
    from `s` on (samples `flat`, as wide): their column passes as one line into `band`,
    then row by row, each copied into `line` at `shift` and extended past its ends by `cols`
    (`fill` past the edges of the column passes' result), its row pass over every column."""
    w = fx.reshape(1, fx.shape[0])
    weigh_flat(fy, flat, s * n, n, band[: k * n])
    row, at = line[0], ints[2:3]
    at[0] = 0
    inner = row[shift : shift + n]
    for t in range(k):
        given = band[t * n : (t + 1) * n]
        for q in range(n):
            inner[q] = given[q]
        extend(row, inner, cols, shift, shift + n, fill)
        row_pass(line, at, w, out_flat[(r + t) * n : (r + t + 1) * n], n)


@njit(**LOOP)
def plane_rows(plane, flat, fy, fx, out, out_flat, rows, cols, r0, r1, shift, fill, line, band, o0, ints):
    """Output rows r0:r1 of one plane's column and row passes (`fill` past its edges), as the
    rows from `o0` on of `out`. Where `flat`
    and `out_flat` hold the samples of `plane` and `out` (else they are empty; `out` as wide
    as `plane`), the output rows whose input rows lie in the plane in order run several at a
    time (``segment_rows``). Others two at a time: two rows' column passes
    into the rows of `line` at `shift`, each extended past its ends by `cols`, then their
    row passes over every column."""
    at = ints[:2]
    at[0], at[1] = 0, 1
    w = fx.reshape(1, fx.shape[0])
    fill_cols = fill * fy.sum()  # past the edges of the column pass's result
    n, ky = plane.shape[1], fy.shape[0]
    first, second = line[0, shift : shift + n], line[1, shift : shift + n]
    per = band.shape[0] // n if flat.shape[0] and out_flat.shape[0] else 0
    r = r0
    while r < r1:
        k, s = min(per, r1 - r), rows[r]
        while k >= 2 and (s < 0 or rows[r + k + ky - 2] != s + k + ky - 2):  # input rows s, s + 1, ... in order
            k -= 1
        if k >= 2:
            segment_rows(flat, s, n, fy, fx, out_flat, r - o0, k, cols, shift, fill_cols, band, line, ints)
            r += k
            continue
        made = min(2, r1 - r)
        if made == 2:
            weigh_mapped_pair(fy, plane, rows, r, first, second, fill)
        else:
            weigh_mapped(fy, plane, rows, r, first, fill)
        for t in range(made):
            extend(line[t], line[t, shift : shift + n], cols, shift, shift + n, fill_cols)
            row_pass(line, at[t:], w, out[r - o0 + t], out.shape[1])
        r += made
''' + _halo_function(fused, deep, pairs) + (_deep_function(deep) if deep else "") + _jobs_function(deep)


def _jobs_function(deep: tuple[int, int] | None) -> str:
    """``halo_jobs``, ``taps_jobs`` and with `deep`, ``deep_jobs``: the blocks ``(b, g, o,
    z0, z1, r0, r1)`` of `jobs`, each by ``halo_taps``, ``taps`` or ``deep_taps`` (`flat`:
    the input's planes as rows), in one call: no Python between blocks. One entry point
    each, so that a call compiles only the loops it runs."""
    calls = {
        "halo": "halo_taps(x[b, g], w[g, o], out[b, g, o], planes, rows, cols, z0, z1, r0, r1, shift, fill, buf, per, seg, ints)",
        "taps": "taps(x[b, g], w[g, o], fill_rows[g, o], out[b, g, o], planes, rows, cols, z0, z1, r0, r1, c_lo, c_hi, shift, fill, ints)",
    }
    if deep:
        calls["deep"] = ("planes_at = (b * x.shape[1] + g) * x.shape[2]\n"
                         "        rows_of = flat[planes_at * x.shape[3] : (planes_at + x.shape[2]) * x.shape[3]]\n"
                         "        deep_taps(x[b, g], rows_of, x.shape[3], w[g, o], fill_rows[g, o], out[b, g, o], planes, rows, cols, z0, z1, r0, r1, c_lo, c_hi, shift, fill, ints)")
    return "".join(f'''

@njit(nogil=True, cache=True, fastmath=CONTRACT)
def {name}_jobs(x, flat, w, fill_rows, out, planes, rows, cols, jobs, c_lo, c_hi, shift, fill, buf, per):
    ints, seg = np.empty(INTS, np.int64), np.empty(per * buf.shape[1] if per > 1 else 1, F)
    for u in range(jobs.shape[0]):
        b, g, o, z0, z1, r0, r1 = jobs[u, 0], jobs[u, 1], jobs[u, 2], jobs[u, 3], jobs[u, 4], jobs[u, 5], jobs[u, 6]
        {call}
''' for name, call in calls.items())


def _halo_function(fused: int, deep: tuple[int, int] | None, pairs: bool) -> str:
    """``halo_taps``: as ``taps``, from a copy of the block's input rows in `buf`, each
    extended past the column edges (`cols`, the fill where -1; a volume's planes in a ring
    of the kernel's depth, each copied once a block). The copy's rows, end to end, are one
    line, and so are the output rows of a segment at the copy's width: every kernel row is
    one pass over the segment's line (no short rows), in passes of `fused` kernel rows, the
    columns past each output row's end made and dropped. A kernel of `deep` planes and rows
    (:func:`_deep_rows`) takes all its rows a pass, two output rows at a time (``twin``),
    straight into the result; with `pairs`, output rows of their own (no segments) run two
    at a time too, `fused` kernel rows a pass (``twin`` then ``twin_add``), the kernel's
    last rows short of `fused` one at a time."""
    deep_arrays = deep_pass = ""
    if deep:
        kd, kh = deep
        deep_arrays = f'''
    stacked = w.reshape(kd * kh, w.shape[2])
    deep_idx, twin_idx = ints[{fused} + 1 : {fused} + 1 + {kd * kh}], ints[{fused} + 1 + {kd * kh} : {fused} + 1 + {kd * kh + kd * (kh + 1)}]'''
        deep_pass = f'''
        if kd == {kd} and kh == {kh}:
            for r in range(r0, r1, 2):
                top = r - r0
                if r + 1 < r1:
                    for d in range(kd):
                        for i in range(kh + 1):
                            twin_idx[d * (kh + 1) + i] = (z + d) % kd * n + top + i
                    twin{kd}x{kh}(buf, twin_idx, stacked, out[z, r], out[z, r + 1], 0, width, 0)
                else:
                    for d in range(kd):
                        for i in range(kh):
                            deep_idx[d * kh + i] = ((z + d) % kd * n + top + i) * pw
                    lines{kd * kh}(flat, deep_idx, stacked, out[z, r], width, True)
            continue'''
    pair_pass = ""
    if pairs:
        pair_pass = f'''
        if per == 1:
            for r in range(r0, r1 - 1, 2):  # two output rows a pass; the last of an odd count below
                top, first = r - r0, True
                for d in range(kd):
                    row = (z + d) % kd * n + top
                    i = 0
                    while i + {fused} <= kh:
                        for q in range({fused} + 1):
                            pair_idx[q] = row + i + q
                        if first:
                            twin1x{fused}(buf, pair_idx, w[d, i : i + {fused}], out[z, r], out[z, r + 1], 0, width, 0)
                        else:
                            twin_add1x{fused}(buf, pair_idx, w[d, i : i + {fused}], out[z, r], out[z, r + 1], 0, width, 0)
                        first = False
                        i += {fused}
                    while i < kh:
                        for t in range(2):
                            one[0] = (row + t + i) * pw
                            lines1(flat, one, w[d, i : i + 1], out[z, r + t], width, first)
                        first = False
                        i += 1
            if (r1 - r0) % 2 == 0:
                continue
            r_first = r1 - 1
        else:
            r_first = r0'''
    return f'''

@njit(**LOOP)
def halo_taps(x, w, out, planes, rows, cols, z0, z1, r0, r1, shift, fill, buf, per, seg, ints):
    kd, kh = w.shape[0], w.shape[1]{deep_arrays}
    n, width, pw = r1 - r0 + kh - 1, out.shape[-1], buf.shape[1]
    flat = buf.reshape(-1)
    idx, one = ints[:{fused}], ints[{fused} : {fused} + 1]
    pair_idx = ints[{fused} + 1 : {2 * fused + 2}]
    for z in range(z0, z1):
        for d in range(0 if z == z0 else kd - 1, kd):  # each plane copied once: a ring of kd
            p, at = planes[z + d], (z + d) % kd * n
            for i in range(n):
                copy_row(x, p, rows[r0 + i], buf[at + i], cols, shift, fill){deep_pass}{pair_pass if pairs else """
        r_first = r0"""}
        for r in range(r_first, r1, per):
            k = min(per, r1 - r)
            top, m = r - r0, k * pw - (pw - width)  # the last row's columns past the result: not made
            dst = out[z, r] if per == 1 else seg
            assign = True
            for d in range(kd):
                base = ((z + d) % kd * n + top) * pw
                i = 0
                while i + {fused} <= kh:
                    for q in range({fused}):
                        idx[q] = base + (i + q) * pw
                    lines{fused}(flat, idx, w[d, i : i + {fused}], dst, m, assign)
                    assign = False
                    i += {fused}
                while i < kh:
                    one[0] = base + i * pw
                    lines1(flat, one, w[d, i : i + 1], dst, m, assign)
                    assign = False
                    i += 1
            for t in range(k if per > 1 else 0):  # each output row's columns (unsigned: a vectorized copy)
                o, at = out[z, r + t], np.uint64(t * pw)
                for c in range(np.uint64(width)):
                    o[c] = seg[at + c]
'''


def _deep_function(deep: tuple[int, int]) -> str:
    """``deep_taps``: as ``taps`` for a volume, its kernel's rows (those of its `deep` planes
    and rows) summed in one pass over each output row whose rows all lie in the input, two
    rows a pass where both do (``twin``; `flat`: the input's planes as one stack of rows,
    `height` rows a plane), ``taps`` for the others."""
    kd, kh = deep
    return f'''

@njit(**LOOP)
def deep_taps(x, flat, height, w, fill_rows, out, planes, rows, cols, z0, z1, r0, r1, c_lo, c_hi, shift, fill, ints):
    kd, kh = w.shape[0], w.shape[1]
    stacked = w.reshape(kd * kh, w.shape[2])
    idx, below = ints[FUSED + 1 : FUSED + 1 + {kd * kh}], ints[FUSED + 1 + {kd * kh} : FUSED + 1 + {2 * kd * kh}]
    twin_idx = ints[FUSED + 1 + {2 * kd * kh} : FUSED + 1 + {2 * kd * kh + kd * (kh + 1)}]
    for z in range(z0, z1):
        r = r0
        while r < r1:
            pair = r + 1 < r1
            inside = True
            for d in range(kd):
                p = planes[z + d]
                for i in range(kh + 1 if pair else kh):
                    s = rows[r + i]
                    if i < kh:
                        inside = inside and p >= 0 and s >= 0
                        idx[d * kh + i] = p * height + s
                    if i > 0:
                        pair = pair and p >= 0 and s >= 0
                        below[d * kh + i - 1] = p * height + s
                    twin_idx[d * (kh + 1) + i] = p * height + s
            if inside and pair:
                twin{kd}x{kh}(flat, twin_idx, stacked, out[z, r], out[z, r + 1], c_lo, c_hi, shift)
                edges(flat, idx, stacked, cols, out[z, r], c_lo, c_hi, fill, True)
                edges(flat, below, stacked, cols, out[z, r + 1], c_lo, c_hi, fill, True)
                r += 2
                continue
            if inside:
                span{kd * kh}(flat, idx, stacked, out[z, r], c_lo, c_hi, shift, True)
                edges(flat, idx, stacked, cols, out[z, r], c_lo, c_hi, fill, True)
            else:
                taps(x, w, fill_rows, out, planes, rows, cols, z, z + 1, r, r + 1, c_lo, c_hi, shift, fill, ints)
            r += 1

'''
