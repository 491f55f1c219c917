"""Direct's compiled form for layers: images and volumes of many input channels a group,
each output map's taps over all of them in loops compiled for the CPU (numba, the ``numba``
extra).

The input is copied once, padded, each channel's planes (of every batch item and every
depth, one above the next) laid out as one line: the padded rows end to end. A band of
output rows is then one line too, of the band's rows at the padded width: a kernel row of
input channel ``c``, plane ``d`` and row ``i`` reads that line shifted to the planes of
``c``, ``d`` planes and ``i`` rows down, so every tap of every channel is one pass over a
long line (no short rows, whatever the image's width and height), and the columns past
each output row's end and the rows that straddle two planes or items are made and
dropped. Each pass takes several output maps at once (as many as keep their weights in the
CPU's vector registers), so that each input sample loaded serves them all, and short
kernel rows two at a time, so that each map's sum read and written serves both; the maps'
lines stay in cache, the band's input in the next level. Bands and passes of maps are the
units of work: they do not depend on the number of threads, so the result is the same bits
on one worker or many, and the loops call no BLAS.

On images and volumes whose groups have many input channels and a multiple of 16 output
maps, the maps run side by side in the vector lanes instead (:func:`by_maps`): for a few
output samples of a row at a time, each input sample under them is loaded once and
multiplies the weights of 16 maps at a time, and the sums stay in the first cache level for
all of a channel's taps. Each unit of rows pads its own input rows into a buffer that stays
in cache (no padded copy of the whole input), and makes each output row of every map in a
buffer before copying it out.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from .._runtime import config as _config
from .._runtime.backend import NUMPY, Array, Backend
from .._runtime.machine import wide_vectors
from .._runtime.rates import Rates
from .._runtime.scratch import scratch
from .._runtime.threads import run_parallel
from .._spec.problem import Problem
from . import _compiled

# Kernel rows of at most this many taps (code is generated per row length).
MAX_ROW_TAPS = 8
# Output samples of a band's line, at most: the maps' lines stay in the first cache level.
_BAND_SAMPLES = 2048
# Kernel rows of up to this many taps run two a pass, where that leaves room for this many
# maps' weights: each sample loaded and each map's sum read and written serve twice the
# multiply-adds (3x3 taps, 16 maps of 48 kernel rows: 33 -> 47 GMAC/s on one AVX-512 core,
# four maps two rows a pass, against eight one row a pass; rows of 5 and 7 taps ran as fast
# one a pass).
_FUSED_TAPS, _FUSED_MAPS = 3, 4
# Output rows this many samples wide, at least: each row is copied from its line to the
# result on its own, and narrower ones copy at a fraction of the memory's speed (3 -> 32
# channels on a hundred 16x16 images: 1.3-1.5x the time of im2col's GEMMs).
_MIN_WIDTH = 24
# Groups a thread, at least, for each group's channels to be padded and summed on one thread
# (one hand-over a call, the padded planes read from cache); else the padding first, shared.
_GROUPS_A_LANE = 2
# On images and volumes, a group's maps, this many at a time, run side by side in the vector
# lanes, a few output samples at a time: each input sample loaded serves every map, and the
# sums stay in cache for all of a channel's taps (a grouped 128 -> 128 3x3 layer, 16 maps a group on
# 28x28: 36 GMAC/s on one AVX-512 core in float32, 17.6 in float64, against 24 and 14.7 by
# passes of maps). A loop of 16: of 8 maps, the compiler left it scalar (5-6 GMAC/s).
_VECTOR_MAPS = 16
# Output samples of a row summed at a time by maps in vectors, with 32 vector registers and
# with 16: there each kernel row's samples and weights are loaded in turn, since all the
# samples under a 3x3 kernel spilled (AVX2, the grouped layer above at batch 16 on two Zen 2
# cores: 6.7 ms, against 7.9 with every row's samples at once and 7.6 by passes of maps).
# There only images of one vector of maps a group take it: two vectors ran at the rate of one
# (design case b, 32 maps: 52.8 ms, im2col's GEMMs 53.3) and volumes ran faster by passes of
# maps (3x3x3, 8 -> 16 channels on 32x64x64: 13.2 ms, 14.9 in vectors). Kernel taps at most.
_PIXELS, _VECTOR_TAPS = {True: 7, False: 4}, 9
# Maps in vectors where a group has this many input channels' kernel planes, at least, and
# its input rows under a row of output take at most this many bytes (they stay in the first
# cache levels): images of 4-8 channels, or 32 of rows 256 wide, ran 0.56-0.89x the rate of
# passes of maps.
_VECTOR_CHANNELS, _VECTOR_ROWS_BYTES = 16, 48 << 10
# Bytes of a unit's padded input rows, maps in vectors, at most: they stay in the core's L2
# (whole 28x28 planes of a grouped layer: 0.85x the time of units of 4 rows).
_UNIT_BYTES = 128 << 10


def takes(problem: Problem, backend: Backend) -> bool:
    """Whether this form runs `problem`: NumPy, numba installed, several input channels a
    group, 2-D images or 3-D volumes of output rows at least :data:`_MIN_WIDTH` wide, unit
    stride and dilation, zero padding, float32 or float64, kernel rows of at most
    :data:`MAX_ROW_TAPS` taps."""
    p = problem
    return (
        backend.name == "numpy"
        and p.in_per_group > 1
        and len(p.spatial) in (2, 3)
        and p.out_spatial[-1] >= _MIN_WIDTH
        and p.unit_stride
        and all(d == 1 for d in p.dilation)
        and not p.circular
        and p.dtype.char in "fd"
        and p.kernel[-1] <= MAX_ROW_TAPS
        and _compiled.available()
    )


@dataclass(frozen=True, slots=True)
class ChannelTaps:
    """The kernel as ``(G, Cg * kd * kh, Og, kw)``: for each kernel row of each input
    channel (and plane), every output map's taps side by side; for maps in vectors
    (:func:`by_maps`), ``(G, Cg, kd, Og / 16, kh * kw, 16)``: 16 maps' weights of each tap
    side by side (:data:`_VECTOR_MAPS`)."""

    taps: np.ndarray


def by_maps(problem: Problem) -> bool:
    """Whether `problem`'s maps run side by side in the vector lanes: images and volumes
    whose groups have a multiple of :data:`_VECTOR_MAPS` maps, :data:`_VECTOR_CHANNELS`
    input channels' kernel planes or more (and rows within :data:`_VECTOR_ROWS_BYTES`),
    kernel planes of at most :data:`_VECTOR_TAPS` taps, output rows of at least
    :data:`_PIXELS` samples; with 16 vector registers, images of one vector of maps a group
    only (32 with :func:`wide_vectors`)."""
    p = problem
    _, (_, _, pw), (kd, kh, kw), _ = _volumes(p)
    planes = p.in_per_group * kd
    return (
        p.out_per_group % _VECTOR_MAPS == 0
        and planes >= _VECTOR_CHANNELS
        and planes * kh * pw * p.dtype.itemsize <= _VECTOR_ROWS_BYTES
        and kh * kw <= _VECTOR_TAPS
        and p.out_spatial[-1] >= _PIXELS[wide_vectors()]
        and (wide_vectors() or (kd == 1 and p.out_per_group == _VECTOR_MAPS))
    )


def prepare(w: Array, problem: Problem) -> ChannelTaps:
    """`w` ``(G*Og, Cg, *kernel)`` in :class:`ChannelTaps`' layout."""
    p = problem
    w = np.asarray(w, p.dtype)
    if by_maps(p):
        kd = _volumes(p)[2][0]
        taps = w.reshape(p.groups, p.out_per_group // _VECTOR_MAPS, _VECTOR_MAPS, p.in_per_group, kd, -1).transpose(0, 3, 4, 1, 5, 2)
        return ChannelTaps(np.ascontiguousarray(taps))
    rows = p.in_per_group * math.prod(p.kernel[:-1])
    taps = w.reshape(p.groups, p.out_per_group, rows, p.kernel[-1]).transpose(0, 2, 1, 3)
    return ChannelTaps(np.ascontiguousarray(taps))


def padded_bytes(problem: Problem) -> int:
    """Bytes of the padded copy of the input (none with maps in vectors: :func:`by_maps`)."""
    p = problem
    if by_maps(p):
        return 0
    return p.batch * p.groups * p.in_per_group * math.prod(p.padded) * p.dtype.itemsize


def _volumes(problem: Problem) -> tuple[tuple[int, int, int], tuple[int, int, int], tuple[int, int, int], tuple[int, int, int]]:
    """`problem`'s input, padded input, kernel and output as volumes: an image is one plane deep."""
    p = problem
    return tuple((1,) * (3 - len(p.spatial)) + tuple(shape) for shape in (p.spatial, p.padded, p.kernel, p.out_spatial))  # type: ignore[return-value]


def _tall_rows(problem: Problem) -> int:
    """Output rows of the items' padded planes one above the next (a valid correlation):
    each plane's rows, and between planes and items the rows that straddle two."""
    _, (pd, ph, _), (kd, kh, _), _ = _volumes(problem)
    return problem.batch * pd * ph - (kd - 1) * ph - kh + 1


def run(x: Array, kernel: ChannelTaps, problem: Problem, out: Array) -> None:
    """Fill `out` ``(B, G*Og, *out_spatial)`` with `problem`'s correlation of `x`
    ``(B, G*Cg, *spatial)``, the units of work on the workers."""
    p = problem
    at = _geometry(p, _config.workers())
    channels = p.groups * p.in_per_group
    spatial, (pd, ph, pw), (kd, kh, _), out_spatial = _volumes(p)
    lo = (0,) * (3 - len(p.pad_lo)) + tuple(p.pad_lo)
    x5, o6 = x.reshape(p.batch, channels, *spatial), out.reshape(p.batch, p.groups, p.out_per_group, *out_spatial)
    if at.by_maps:  # each unit pads its own rows
        run_parallel(at.calls, lambda jobs: at.code.map_jobs(x5, kernel.taps, o6, jobs, *lo, _unit_rows(p)), at.lanes)
        return
    padded = scratch("channels.padded", (p.groups, p.in_per_group * p.batch * pd * ph * pw), p.dtype, NUMPY)
    planes = padded.reshape(channels, p.batch, pd, ph, pw)

    def units(jobs: np.ndarray) -> None:
        line = scratch("channels.line", (at.maps, at.band_rows * pw), p.dtype, NUMPY)
        at.code.channel_jobs(padded, kernel.taps, o6, jobs, p.batch * pd * ph * pw, pw, ph, pd, kd, kh, line)

    if at.by_group:  # each group's channels padded, then its units, on one thread: one hand-over
        def group(g: int) -> None:
            at.code.pad_planes(x5, planes, *lo, g * p.in_per_group, (g + 1) * p.in_per_group)
            units(at.by_group[g])

        run_parallel(range(p.groups), group, at.lanes)
        return
    bounds = np.linspace(0, channels, min(channels, at.lanes) + 1).astype(int)
    run_parallel(zip(bounds[:-1], bounds[1:]), lambda span: at.code.pad_planes(x5, planes, *lo, *span), at.lanes)
    run_parallel(at.calls, units, at.lanes)


@dataclass(frozen=True, slots=True)
class _Geometry:
    """What the shapes and workers decide for :func:`run`: the loops, whether the maps run
    in vectors (:func:`by_maps`), the output maps of a pass, the output rows of a band, the
    units (:func:`_units`) in `calls` shared by `lanes` threads, and where the groups are
    many (:data:`_GROUPS_A_LANE`) and run by passes of maps, each group's units (else none)."""

    code: ModuleType
    by_maps: bool
    maps: int
    band_rows: int
    calls: tuple[np.ndarray, ...]
    lanes: int
    by_group: tuple[np.ndarray, ...]


@functools.lru_cache(maxsize=64)
def _geometry(problem: Problem, workers: int) -> _Geometry:
    """:class:`_Geometry` of `problem` on `workers` threads."""
    p = problem
    jobs = _units(p)
    lanes = _lanes(p, workers)
    calls = _compiled.calls_for(len(jobs), _macs(p), lanes)
    vectors = by_maps(p)
    code = _map_module(_volumes(p)[2], p.out_per_group // _VECTOR_MAPS, _VECTOR_MAPS, p.dtype.char, wide_vectors()) if vectors else _module(p.kernel[-1], _maps(p), _fused_rows(p), p.dtype.char)
    many = lanes > 1 and p.groups >= _GROUPS_A_LANE * lanes and not vectors  # maps in vectors pad no groups first
    by_group = tuple(jobs[jobs[:, 0] == g] for g in range(p.groups)) if many else ()
    return _Geometry(code, vectors, _maps(p), _band_rows(p), tuple(np.array_split(jobs, calls)), lanes, by_group)


def _fused_rows(problem: Problem) -> int:
    """Kernel rows a pass: two of up to :data:`_FUSED_TAPS` taps where their weights leave
    room for :data:`_FUSED_MAPS` maps, else one."""
    p = problem
    kw, rows = p.kernel[-1], p.in_per_group * math.prod(p.kernel[:-1])
    return 2 if kw <= _FUSED_TAPS and rows >= 2 and _compiled.weights_held() // (2 * kw) >= _FUSED_MAPS else 1


def _maps(problem: Problem) -> int:
    """Output maps a pass: as many as keep the weights of its kernel rows
    (:func:`_fused_rows`) in registers, or fewer, so that a group's maps split into passes
    of this many or one fewer (16 maps as 8 + 8, not 9 and seven passes of one: a grouped
    128 -> 128 layer of 16 maps a group ran 0.6x the time so)."""
    kw = problem.kernel[-1] * _fused_rows(problem)
    most = max(1, min(problem.out_per_group, _compiled.weights_held() // kw))
    return -(-problem.out_per_group // -(-problem.out_per_group // most))


def _band_rows(problem: Problem) -> int:
    """Output rows of a band: its line at the padded width of at most :data:`_BAND_SAMPLES`."""
    return max(1, min(_tall_rows(problem), _BAND_SAMPLES // problem.padded[-1]))


def _passes(problem: Problem) -> list[tuple[int, int]]:
    """The output maps ``(o0, o1)`` of each pass over a band: :func:`_maps` or one fewer."""
    og = problem.out_per_group
    count = -(-og // _maps(problem))
    return [(og * j // count, og * (j + 1) // count) for j in range(count)]


@functools.lru_cache(maxsize=64)
def _units(problem: Problem) -> np.ndarray:
    """The units of work ``(g, r0, r1, o0, o1)``: bands of :func:`_tall_rows`, and the
    output maps of a pass (:func:`_passes`), of each group; for maps in vectors
    (:func:`by_maps`), ``(g, b, z, r0, r1)``: output rows r0:r1 (:func:`_unit_rows` of them)
    of plane `z` of item `b`, every map of group `g`."""
    p = problem
    if by_maps(p):
        (depth, height, _), rows = _volumes(p)[3], _unit_rows(p)
        units = [(g, b, z, r, min(height, r + rows)) for g in range(p.groups) for b in range(p.batch) for z in range(depth) for r in range(0, height, rows)]
        jobs = np.array(units, np.int64)
        jobs.flags.writeable = False
        return jobs
    rows, band = _tall_rows(p), _band_rows(p)
    jobs = np.array([(g, r, min(rows, r + band), o0, o1) for g in range(p.groups) for r in range(0, rows, band) for o0, o1 in _passes(p)], np.int64)
    jobs.flags.writeable = False
    return jobs


def _unit_rows(problem: Problem) -> int:
    """Output rows of a unit of work, maps in vectors: as many as keep its padded input rows
    within :data:`_UNIT_BYTES`, and few enough for four units a core."""
    p = problem
    _, (_, _, pw), (kd, kh, _), (depth, height, _) = _volumes(p)
    fits = _UNIT_BYTES // (p.in_per_group * kd * pw * p.dtype.itemsize) - (kh - 1)
    shared = -(-p.batch * p.groups * depth * height // (4 * _config.cores()))
    return max(1, min(height, fits, shared))


def _macs(problem: Problem) -> int:
    """Multiply-adds made: every tap of every sample of the lines, with the columns past
    each row's end and the rows that straddle two planes or items (dropped); with maps in
    vectors, every tap of every output sample."""
    p = problem
    if by_maps(p):
        return p.batch * p.groups * p.out_per_group * p.in_per_group * math.prod(p.out_spatial) * math.prod(p.kernel)
    return p.groups * p.out_per_group * p.in_per_group * _tall_rows(p) * p.padded[-1] * math.prod(p.kernel)


def _lanes(problem: Problem, workers: int) -> int:
    """Threads for `problem`: :func:`._compiled.lanes_for` its multiply-adds."""
    return _compiled.lanes_for(_macs(problem), workers)


def seconds(problem: Problem, rates: Rates, workers: int) -> float:
    """Estimated time: im2col's GEMM without its columns. The multiply-adds made (past
    the rows' ends and between items too) at the GEMM rate of as many rows as the maps of
    a pass times its kernel rows (each input sample loaded serves the maps, as a GEMM's rows
    share each column, and each map's sum read and written serves the kernel rows), or with
    maps in vectors (:func:`by_maps`) as the group's maps, the machine's rate shared by the
    threads it runs on; the input read, its padded copy written and read and the result
    written as the compiled loops' bytes (:func:`._compiled.loop_seconds`)."""
    p = problem
    moved = p.batch * p.groups * p.in_per_group * math.prod(p.spatial) * p.dtype.itemsize + 2 * padded_bytes(p)
    moved += p.batch * p.groups * p.out_per_group * math.prod(p.out_spatial) * p.dtype.itemsize
    if by_maps(p):  # each input sample loaded serves every map of the group; units in few calls
        units, rows = _compiled.calls_for(len(_units(p)), _macs(p), _lanes(p, workers)), p.out_per_group
    else:  # units counted in passes of one kernel row: a pass of two does the work of two of one
        units, rows = p.groups * -(-_tall_rows(p) // _band_rows(p)) * -(-p.out_per_group // (_maps(p) * _fused_rows(p))), _maps(p) * _fused_rows(p)
    lanes = min(_lanes(p, workers), units)
    gemm = p.mac_flops * _macs(p) / rates.gemm_rate(p.dtype, NUMPY.name, rows) * max(1, workers) / lanes
    return gemm + _compiled.loop_seconds(0, moved, units, lanes, rates)


@functools.cache
def _module(row_taps: int, maps: int, rows: int, dtype: str) -> ModuleType:
    """The loops for kernel rows of `row_taps` taps, `maps` output maps and `rows` kernel
    rows a pass, in `dtype`."""
    return _compiled.load(f"arrayconv_channels_{dtype}{row_taps}x{maps}x{rows}_{_VERSION}", _source(row_taps, maps, rows, dtype))


_VERSION = 10  # bump when the generated code changes: numba keys its cache by file


@functools.cache
def _map_module(kernel: tuple[int, int, int], vectors: int, lanes: int, dtype: str, wide: bool) -> ModuleType:
    """The loops of maps in vectors: `vectors` vectors of `lanes` maps a group, kernels of
    `kernel` ``(kd, kh, kw)`` taps, in `dtype`, for a CPU of 32 vector registers (`wide`) or 16."""
    kd, kh, kw = kernel
    name = f"arrayconv_channels_maps_{dtype}{kd}x{kh}x{kw}_{vectors}x{lanes}{'' if wide else '_rows'}_{_VERSION}"
    return _compiled.load(name, _map_source(kernel, vectors, lanes, dtype, wide))


def _map_source(kernel: tuple[int, int, int], vectors: int, lanes: int, dtype: str, wide: bool) -> str:
    """Python source of ``map_jobs``: for :data:`_PIXELS` output samples of a row at a time,
    each input channel's and kernel plane's samples under them loaded once, then for each
    vector of maps, their sums over the plane's taps (loops of known length, which the
    compiler turns into vector operations without checks); with 16 vector registers (not
    `wide`), over one kernel row's samples and taps at a time."""
    (kd, kh, kw), pixels = kernel, _PIXELS[wide]
    steps = [range(kh)] if wide else [range(i, i + 1) for i in range(kh)]
    sums = ""
    for step in steps:
        sums += "".join(f"                        row{i} = padded[c, dz, y - r0 + {i}, q0:]\n" for i in step)
        sums += "".join(f"                        x{i}_{q} = row{i}[{q}]\n" for i in step for q in range(pixels + kw - 1))
        sums += f"                        for v in range({vectors}):\n                            for lane in range({lanes}):\n"
        sums += "".join(f"                                w{i * kw + j} = w[c, dz, v, {i * kw + j}, lane]\n" for i in step for j in range(kw))
        sums += "".join(
            f"                                acc[v, {q}, lane] += " + " + ".join(f"w{i * kw + j} * x{i}_{q + j}" for i in step for j in range(kw)) + "\n"
            for q in range(pixels)
        )
    return f'''"""Generated by arrayconv._methods._channels: maps in {vectors} vectors of {lanes}, kernels of {kd}x{kh}x{kw} taps, {pixels} output samples at a time, in {np.dtype(dtype)}."""
import numpy as np
from numba import njit

CONTRACT = set(["contract"])  # a * b + c as one fused multiply-add


@njit(nogil=True, cache=True, fastmath=CONTRACT)
def map_jobs(x, taps, out, jobs, lo_d, lo_h, lo_w, most_rows):
    """The units ``(g, b, z, r0, r1)`` of `jobs` (at most `most_rows` rows): output rows
    r0:r1 of plane z of item b, every map of group g, from `x` ``(B, G * Cg, D, H, W)`` with
    zeros lo_d planes, lo_h rows and lo_w columns before it (and after it, to the output's
    extent) and `taps` ``(G, Cg, {kd}, {vectors}, {kh * kw}, {lanes})``, into `out` ``(B, G,
    Og, D', H', W')``. Each unit's input rows are first copied, padded, to a buffer that
    stays in cache."""
    cg, width = taps.shape[1], out.shape[5]
    acc = np.zeros(({vectors}, {pixels}, {lanes}), taps.dtype)  # the sums of {pixels} output samples of every map; its own
    padded = np.empty((cg, {kd}, most_rows + {kh - 1}, width + {kw - 1}), taps.dtype)
    # an output row of every map, copied out whole: stored sample by sample straight to maps
    # whose planes are a multiple of 4 KiB apart, they all fell in a few cache sets (the
    # buffer's rows are 16 samples longer, so that a row of 1024 is not such a multiple)
    made = np.empty(({vectors * lanes}, width + 16), taps.dtype)
    for u in range(jobs.shape[0]):
        g, b, z, r0, r1 = jobs[u, 0], jobs[u, 1], jobs[u, 2], jobs[u, 3], jobs[u, 4]
        w = taps[g]
        for c in range(cg):
            for dz in range({kd}):
                plane = z + dz - lo_d
                for r in range(r1 - r0 + {kh - 1}):
                    pad_row(x, b, g * cg + c, plane, r0 + r - lo_h, lo_w, padded[c, dz, r])
        for y in range(r0, r1):
            for s in range(0, width, {pixels}):
                q0 = min(s, width - {pixels})  # the last samples of a row: some made twice, alike
                acc[:] = 0
                for c in range(cg):
                    for dz in range({kd}):
{sums}                for v in range({vectors}):
                    for q in range({pixels}):
                        for lane in range({lanes}):
                            made[v * {lanes} + lane, q0 + q] = acc[v, q, lane]
            for o in range({vectors * lanes}):
                for q in range(width):
                    out[b, g, o, z, y, q] = made[o, q]
{_PAD_ROW}'''


# A padded input row, shared by both forms' loops.
_PAD_ROW = """

@njit(inline="always", nogil=True, cache=True)
def pad_row(x, b, c, plane, row, lo_w, line):
    \"\"\"`line`: row `row` of plane `plane` of channel `c` of item `b` of `x` ``(B, C, D, H,
    W)`` after lo_w zeros, zeros to its end; all zeros past the input's planes and rows.\"\"\"
    if plane < 0 or plane >= x.shape[2] or row < 0 or row >= x.shape[3]:
        line[:] = 0
        return
    samples = x[b, c, plane, row]
    line[:lo_w] = 0
    for q in range(samples.shape[0]):
        line[lo_w + q] = samples[q]
    line[lo_w + samples.shape[0] :] = 0
"""


def _pass_function(maps: int, kw: int, rows: int) -> str:
    """``maps{maps}_{rows}``: `d[k]` (= or +=) the `rows` kernel rows `w[i, k]` of each of
    `maps` output maps over the line of `x` from each of `starts`, its first `n` samples, in
    one loop the compiler vectorizes (indices unsigned: no check for negative ones)."""
    weights = "".join(f"    w{i}_{k}_{j} = w[{i}, {k}, {j}]\n" for i in range(rows) for k in range(maps) for j in range(kw))
    starts = "".join(f"    s{i} = np.uint64(starts[{i}])\n" for i in range(rows))
    loads = "".join(f"            v{i}_{j} = F(x[s{i} + c{f' + np.uint64({j})' if j else ''}])\n" for i in range(rows) for j in range(kw))
    terms = {k: " + ".join(f"w{i}_{k}_{j} * v{i}_{j}" for i in range(rows) for j in range(kw)) for k in range(maps)}
    sums = {op: "".join(f"            d[{k}, c] {op} {terms[k]}\n" for k in range(maps)) for op in ("=", "+=")}
    return f"""
@njit(inline="always", nogil=True, cache=True, fastmath=CONTRACT)
def maps{maps}_{rows}(x, starts, w, d, n, assign):
{weights}{starts}    if assign:
        for c in range(np.uint64(n)):
{loads}{sums['=']}    else:
        for c in range(np.uint64(n)):
{loads}{sums['+=']}"""


def _source(kw: int, maps: int, rows: int, dtype: str) -> str:
    """Python source of the loops: ``maps{maps}_{rows}``, one map fewer and one kernel row
    (a pass), ``channel_jobs`` (the units of a call: each band's passes for each block of
    maps, then the valid columns of their lines copied to the result), ``pad_planes`` (the
    padded copy)."""
    cast = {"f": "np.float32", "d": "np.float64"}[dtype]
    fewer = max(1, maps - 1)
    passes = "".join(_pass_function(k, kw, r) for k in sorted({maps, fewer}) for r in sorted({rows, 1}))
    calls = "".join(f"""
            {f'if fused == {r}:' if r == rows else 'else:  # the last kernel row'}
                if k == {maps}:
                    maps{maps}_{r}(src, starts, taps[i : i + {r}, o0:o1], line, n, i == 0)
                else:
                    maps{fewer}_{r}(src, starts, taps[i : i + {r}, o0:o1], line, n, i == 0)""" for r in sorted({rows, 1}, reverse=True))
    return f'''"""Generated by arrayconv._methods._channels: {maps} output maps and {rows} kernel rows a pass, kernel rows of {kw} taps, in {cast}."""
import numpy as np
from numba import njit

F = {cast}
CONTRACT = set(["contract"])  # a * b + c as one fused multiply-add
{passes}

@njit(nogil=True, cache=True, fastmath=CONTRACT)
def channel_jobs(x, w, out, jobs, length, pw, ph, pd, kd, kh, line):
    """The units ``(g, r0, r1, o0, o1)`` of `jobs`: rows r0:r1 of the items' planes one
    above the next, of maps o0:o1 of group g, from `x` ``(G, Cg * length)`` (each
    channel's padded planes, rows of `pw`, `ph` rows a plane, `pd` planes an item), `w`
    ``(G, Cg * kd * kh, Og, kw)``, into `out` ``(B, G, Og, D, H, W)``: each plane's own rows."""
    rows, og, depth, height, width = w.shape[1], out.shape[2], out.shape[3], out.shape[4], out.shape[5]
    flat = out.reshape(-1)  # each result row's samples by their offset: no view made a row
    starts = np.empty({rows}, np.int64)
    for u in range(jobs.shape[0]):
        g, r0, r1, o0, o1 = jobs[u, 0], jobs[u, 1], jobs[u, 2], jobs[u, 3], jobs[u, 4]
        src, taps = x[g], w[g]
        n = (r1 - r0) * pw - (pw - width)  # the last row's columns past the result: not made
        k = o1 - o0  # {maps} maps, or {fewer} (:func:`_passes`)
        i = 0
        while i < rows:
            fused = {rows} if i + {rows} <= rows else 1
            for t in range(fused):
                j = i + t
                starts[t] = (j // (kd * kh)) * length + (r0 + (j // kh) % kd * ph + j % kh) * pw{calls}
            i += fused
        for t in range(k):
            made = line[t]
            for r in range(r0, r1):
                b, z, row, at = r // (pd * ph), r // ph % pd, r % ph, (r - r0) * pw
                if z < depth and row < height:  # else a row that straddles two planes or items
                    to = ((((b * out.shape[1] + g) * og + o0 + t) * depth + z) * height + row) * width
                    for c in range(width):
                        flat[to + c] = made[at + c]


@njit(nogil=True, cache=True)
def pad_planes(x, planes, lo_d, lo_h, lo_w, first, last):
    """Channels first:last of `planes` ``(G * Cg, B, pd, ph, pw)``: those of `x` ``(B, G * Cg,
    D, H, W)`` with zeros lo_d planes, lo_h rows and lo_w columns before each, zeros to its ends."""
    for c in range(first, last):
        for b in range(x.shape[0]):
            for z in range(planes.shape[2]):
                for r in range(planes.shape[3]):
                    pad_row(x, b, c, z - lo_d, r - lo_h, lo_w, planes[c, b, z, r])
{_PAD_ROW}'''
