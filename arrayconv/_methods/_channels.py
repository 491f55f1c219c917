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
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from .._runtime import config as _config
from .._runtime.backend import NUMPY, Array, Backend
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
    channel (and plane), every output map's taps side by side."""

    taps: np.ndarray


def prepare(w: Array, problem: Problem) -> ChannelTaps:
    """`w` ``(G*Og, Cg, *kernel)`` in :class:`ChannelTaps`' layout."""
    p = problem
    rows = p.in_per_group * math.prod(p.kernel[:-1])
    taps = np.asarray(w, p.dtype).reshape(p.groups, p.out_per_group, rows, p.kernel[-1]).transpose(0, 2, 1, 3)
    return ChannelTaps(np.ascontiguousarray(taps))


def padded_bytes(problem: Problem) -> int:
    """Bytes of the padded copy of the input."""
    p = problem
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
    spatial, (pd, ph, pw), (kd, kh, _), out_spatial = _volumes(p)
    lo = (0,) * (3 - len(p.pad_lo)) + tuple(p.pad_lo)
    padded = scratch("channels.padded", (p.groups, p.in_per_group * p.batch * pd * ph * pw), p.dtype, NUMPY)
    at = _geometry(p, _config.workers())
    channels = p.groups * p.in_per_group
    x5, planes = x.reshape(p.batch, channels, *spatial), padded.reshape(channels, p.batch, pd, ph, pw)
    o6 = out.reshape(p.batch, p.groups, p.out_per_group, *out_spatial)

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
    """What the shapes and workers decide for :func:`run`: the loops, the output maps of a
    pass, the output rows of a band, the units ``(g, r0, r1, o0, o1)`` (rows of
    :func:`_tall_rows`) in `calls` shared by `lanes` threads, and where the groups are many
    (:data:`_GROUPS_A_LANE`), each group's units (else none)."""

    code: ModuleType
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
    code = _module(p.kernel[-1], _maps(p), _fused_rows(p), p.dtype.char)
    by_group = tuple(jobs[jobs[:, 0] == g] for g in range(p.groups)) if lanes > 1 and p.groups >= _GROUPS_A_LANE * lanes else ()
    return _Geometry(code, _maps(p), _band_rows(p), tuple(np.array_split(jobs, calls)), lanes, by_group)


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
    output maps of a pass (:func:`_passes`), of each group."""
    p = problem
    rows, band = _tall_rows(p), _band_rows(p)
    jobs = np.array([(g, r, min(rows, r + band), o0, o1) for g in range(p.groups) for r in range(0, rows, band) for o0, o1 in _passes(p)], np.int64)
    jobs.flags.writeable = False
    return jobs


def _macs(problem: Problem) -> int:
    """Multiply-adds made: every tap of every sample of the lines, with the columns past
    each row's end and the rows that straddle two planes or items (dropped)."""
    p = problem
    return p.groups * p.out_per_group * p.in_per_group * _tall_rows(p) * p.padded[-1] * math.prod(p.kernel)


def _lanes(problem: Problem, workers: int) -> int:
    """Threads for `problem`: :func:`._compiled.lanes_for` its multiply-adds."""
    return _compiled.lanes_for(_macs(problem), workers)


def seconds(problem: Problem, rates: Rates, workers: int) -> float:
    """Estimated time: im2col's GEMM without its columns. The multiply-adds made (past
    the rows' ends and between items too) at the GEMM rate of as many rows as the maps of
    a pass times its kernel rows (each input sample loaded serves the maps, as a GEMM's rows
    share each column, and each map's sum read and written serves the kernel rows), the
    machine's rate shared by the threads it runs on; the input read, its padded copy
    written and read and the result written as the compiled loops' bytes
    (:func:`._compiled.loop_seconds`)."""
    p = problem
    moved = p.batch * p.groups * p.in_per_group * math.prod(p.spatial) * p.dtype.itemsize + 2 * padded_bytes(p)
    moved += p.batch * p.groups * p.out_per_group * math.prod(p.out_spatial) * p.dtype.itemsize
    # units counted in passes of one kernel row: a pass of two does the work of two of one
    units = p.groups * -(-_tall_rows(p) // _band_rows(p)) * -(-p.out_per_group // (_maps(p) * _fused_rows(p)))
    lanes = min(_lanes(p, workers), units)
    gemm = p.mac_flops * _macs(p) / rates.gemm_rate(p.dtype, NUMPY.name, _maps(p) * _fused_rows(p)) * max(1, workers) / lanes
    return gemm + _compiled.loop_seconds(0, moved, units, lanes, rates)


@functools.cache
def _module(row_taps: int, maps: int, rows: int, dtype: str) -> ModuleType:
    """The loops for kernel rows of `row_taps` taps, `maps` output maps and `rows` kernel
    rows a pass, in `dtype`."""
    return _compiled.load(f"arrayconv_channels_{dtype}{row_taps}x{maps}x{rows}_{_VERSION}", _source(row_taps, maps, rows, dtype))


_VERSION = 9  # bump when the generated code changes: numba keys its cache by file


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
    depth, height, width, ph, pw = x.shape[2], x.shape[3], x.shape[4], planes.shape[3], planes.shape[4]
    for c in range(first, last):
        for b in range(x.shape[0]):
            for z in range(planes.shape[2]):
                for r in range(ph):
                    plane, row = z - lo_d, r - lo_h
                    if plane < 0 or plane >= depth or row < 0 or row >= height:
                        for q in range(pw):
                            planes[c, b, z, r, q] = 0
                        continue
                    for q in range(lo_w):
                        planes[c, b, z, r, q] = 0
                    for q in range(width):
                        planes[c, b, z, r, lo_w + q] = x[b, c, plane, row, q]
                    for q in range(lo_w + width, pw):
                        planes[c, b, z, r, q] = 0
'''
