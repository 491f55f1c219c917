"""Row dots: the direct method's taps summed one kernel row at a time by ``numpy.correlate``.

With one input channel per group, each tap of the direct method is an elementwise
multiply-add over the whole image. NumPy correlates with kernels of up to 11 taps in its
own unrolled loop (``small_correlate``), which keeps the kernel in registers and reads the
input once. A kernel row (its taps along the last axis) over the wide padded input (see
:mod:`._taps`) is then one ``numpy.correlate(..., 'valid')`` call: a kernel of ``R`` rows
of ``K`` taps costs ``R`` calls and ``R - 1`` adds, instead of ``R * K`` multiply-adds:
about twice as fast as the taps on images with 7x7 kernels. Rows of 2-3 taps on float32
images from 128x128 stay faster as taps; the cost model picks the form.

Longer rows go to a dot product per output sample (6-35 ns each), so on images this form
takes rows of up to :data:`MAX_TAPS` taps only. On 1-D lines, longer rows are summed in
pieces of at most :data:`MAX_TAPS` (:func:`split_valid`) where that, with each piece's
call, is priced faster than the dot product, whose fixed cost this process measures
(:attr:`.Rates.dot_extra_ns`).

1-D signals skip the padded copy (:func:`reads_lines`): ``numpy.correlate``'s 'full' mode
supplies the zeros past each end, and each piece of a line goes straight from its result
into the output, on the worker threads. A 10**6-sample float64 signal with 9 taps ran
4.1 ms through the padded grid, 1.4 ms so (``numpy.correlate`` alone, one thread: 2.1 ms).
Lines take kernels of any length: on short signals, even the dot per output sample beats
the banded form's fixed cost (1847 float64 samples, 153 taps: 32-34 against 57-59 us).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .._runtime.backend import NUMPY, Array, Backend
from .._runtime.fitted import fitted
from .._runtime.rates import Rates
from .._runtime.scratch import scratch
from .._runtime.threads import run_parallel
from .._spec.problem import Problem
from ._registry import output
from ._taps import Chunk, Layout

# numpy's small_correlate handles kernels of up to this many taps.
MAX_TAPS = 11
# The model's weights (fitted.json): its time per output sample (ns) for 1 to 11 taps; past 11
# taps, one dot product per output sample: its fixed part (to which the machine's
# Rates.dot_extra_ns is added); the passes storing a 1-D line's result (:func:`run_lines`);
# and for rows split in pieces (:func:`split_valid`), a weight on the pieces' loops and a
# piece's calls.
_NS_PER_SAMPLE = fitted("rows", "NS_PER_SAMPLE")
_DOT_NS_OFFSET = fitted("rows", "DOT_NS_OFFSET")
_LINE_STORE_PASSES = fitted("rows", "LINE_STORE_PASSES")
_SPLIT_WEIGHT = fitted("rows", "SPLIT_WEIGHT")
_PIECE_CALL_NS = fitted("rows", "PIECE_CALL_NS")
# Adds of each row's result into the sum (and of a piece's), and a dot product's reads of its
# taps, move their bytes as direct's elementwise taps.
_CACHE_SPEEDUP = fitted("direct", "CACHE_SPEEDUP")


@dataclass(frozen=True, slots=True)
class RowKernels:
    """The kernel as rows along its last axis.

    Attributes
    ----------
    rows : ndarray
        ``(G, Og, R, K)``: row ``r`` of filter ``o`` of group ``g``, contiguous.
    starts : tuple of int
        Flat offset in the wide padded grid of each row's first tap.
    split : bool
        Whether 1-D lines sum the row in pieces (:func:`splits`).
    """

    rows: Array
    starts: tuple[int, ...]
    split: bool


def takes(problem: Problem, backend: Backend) -> bool:
    """Whether the row form applies: NumPy, float32/float64, unit stride (the wide
    layout), one input channel per group, and undilated rows of at most :data:`MAX_TAPS`
    (of any length on 1-D lines read in place)."""
    p = problem
    return (
        backend.name == "numpy"
        and p.dtype.char in "fd"
        and p.unit_stride
        and p.in_per_group == 1
        and p.dilation[-1] == 1
        and (p.kernel[-1] <= MAX_TAPS or reads_lines(p))
    )


def prepare(w: Array, problem: Problem, lay: Layout, rates: Rates) -> RowKernels:
    """`w` ``(G*Og, 1, *kernel)`` as rows, with where each row starts, and whether 1-D
    lines sum them in pieces (priced at `rates`)."""
    p = problem
    width = p.kernel[-1]
    rows = np.ascontiguousarray(w.reshape(p.groups, p.out_per_group, -1, width))
    return RowKernels(rows, tuple(lay.offsets[::width]), reads_lines(p) and splits(p, rates))


def accumulate(padded: Array, kernels: RowKernels, lay: Layout, chunk: Chunk, backend: Backend) -> Array:
    """The sum over kernel rows for `chunk` of `padded` (as :func:`.direct.accumulate`):
    ``(Bc, G, Og, chunk_length)`` in this thread's scratch buffer, junk columns included."""
    p = lay.problem
    n = lay.chunk_length(chunk)
    total = scratch("rows.sum", (chunk.b1 - chunk.b0, p.groups, p.out_per_group, n), padded.dtype, backend)
    base = chunk.r0 * lay.row_length
    for b, g, o in np.ndindex(total.shape[:3]):
        sum_rows(padded[chunk.b0 + b, g, 0], kernels.rows[g, o], kernels.starts, base, total[b, g, o])
    return total


def sum_rows(line: np.ndarray, rows: np.ndarray, starts: Sequence[int], start: int, total: np.ndarray) -> None:
    """Into `total`: the sum over kernel rows ``r`` of ``numpy.correlate`` ('valid') of
    `line` from ``start + starts[r]`` with ``rows[r]``, ``total.size`` samples each."""
    reach = total.shape[0] + rows.shape[-1] - 1
    for r, first in enumerate(starts):
        row = np.correlate(line[start + first : start + first + reach], rows[r], "valid")
        if r:
            total += row
        else:
            total[...] = row


def reads_lines(problem: Problem) -> bool:
    """Whether the row form reads a 1-D `problem`'s lines in place (:func:`run_lines`):
    zero padding of at most one tap short of the kernel at each end, which
    ``numpy.correlate``'s 'full' mode supplies."""
    p = problem
    reach = p.kernel[-1] - 1
    return len(p.spatial) == 1 and not p.circular and p.pad_lo[0] <= reach and p.pad_hi[0] <= reach


def line_pieces(problem: Problem, target_bytes: int, workers: int, rates: Rates) -> list[tuple[int, int, int, int]]:
    """Work of :func:`run_lines` in pieces of about `target_bytes` of output: lines
    ``l0:l1`` (batch items times groups) and output samples ``r0:r1`` of each. One line
    with one filter stays whole unless cutting it pays (:func:`_cutting_pays`)."""
    p = problem
    lines, length = p.batch * p.groups, p.out_spatial[0]
    per_piece = max(1, target_bytes // (p.dtype.itemsize * p.out_per_group))
    if per_piece >= length or (lines * p.out_per_group == 1 and not _cutting_pays(p, per_piece, workers, rates)):
        step = max(1, per_piece // length)
        return [(l0, min(l0 + step, lines), 0, length) for l0 in range(0, lines, step)]
    return [(line, line + 1, r0, min(r0 + per_piece, length)) for line in range(lines) for r0 in range(0, length, per_piece)]


def _cutting_pays(problem: Problem, per_piece: int, workers: int, rates: Rates) -> bool:
    """Whether one line cut into pieces of `per_piece` samples on `workers` threads is
    estimated faster than one ``numpy.correlate`` of the whole line, whose result is the
    output itself: the threads share the loop, but each piece's result is then copied into
    the output, a store (weighted as in :func:`line_seconds`) that two cores of the CI
    machine did not share. So float64 signals of 1-2 taps stay whole."""
    p = problem
    length = p.out_spatial[0]
    loop = length * _line_ns(p, rates)[0] * 1e-9
    threads = min(workers, -(-length // per_piece))
    return loop / threads + _LINE_STORE_PASSES * length * p.dtype.itemsize / rates.stream_bytes < loop


def line_window(problem: Problem, r0: int, r1: int) -> tuple[int, int, int]:
    """For output samples ``r0:r1`` of a 1-D line: the input samples ``s0:s1`` they read
    (from ``r0 - pad_lo`` to ``r1 - pad_lo + K - 2``, clipped to the signal), and the index
    of sample ``r0`` in the 'full' correlation of that stretch (``numpy.correlate`` supplies
    the zeros where it was clipped)."""
    p = problem
    n, width, lo = p.spatial[0], p.kernel[-1], p.pad_lo[0]
    s0, s1 = max(0, r0 - lo), min(n, r1 - lo + width - 1)
    return s0, s1, r0 - lo - s0 + width - 1


def correlate_window(signal: Array, row: Array, window: tuple[int, int, int], length: int, split: bool) -> Array:
    """`length` output samples of a 1-D line from its :func:`line_window`: one
    ``numpy.correlate`` of the window's input samples with the kernel row, 'valid' where
    the window needs no zeros (its 'full' correlation would also compute the ``K - 1``
    partial overlaps at each end: 2213 samples with 2213 taps took 255 us, not 0.5), else
    'full', cropped. With `split` (:func:`splits`) the row runs :func:`split_valid`, over a
    copy of the stretch between the zeros it needs (a 'full' call per end, the pieces
    between them and three stores took longer: 10**3 float64 samples with 15 taps, 'same',
    9.6 against 6.9 us; 6 * 10**4 153 against 146)."""
    s0, s1, first = window
    width = row.shape[-1]
    stretch = signal[s0:s1]
    if first == width - 1 and s1 - s0 == length + width - 1:
        return split_valid(stretch, row) if split else np.correlate(stretch, row, "valid")
    if not split:
        return np.correlate(stretch, row, "full")[first : first + length]
    padded = np.zeros(length + width - 1, np.result_type(stretch, row))
    shift = first - width + 1  # padded[i] is stretch[i + shift], or a zero past its ends
    lo, hi = max(0, -shift), min(padded.shape[-1], stretch.shape[-1] - shift)
    padded[lo:hi] = stretch[lo + shift : hi + shift]
    return split_valid(padded, row)


def splits(problem: Problem, rates: Rates) -> bool:
    """Whether the 1-D lines of `problem` sum their row in pieces (:func:`split_valid`):
    rows past :data:`MAX_TAPS` taps where the pieces, with their calls, are priced faster
    than a dot product per output sample (:func:`_line_ns`)."""
    return _line_ns(problem, rates)[1]


def split_valid(stretch: Array, row: Array) -> Array:
    """``numpy.correlate(stretch, row, 'valid')`` as pieces of at most :data:`MAX_TAPS`
    taps, each summed by numpy's unrolled loop, which ran 2-3x faster than one dot product
    per output sample for rows of 12-33 taps (10**4 float64 samples with 15 taps: 24 us
    against 81; ``scipy.ndimage.correlate1d`` 44)."""
    width = row.shape[-1]
    count = stretch.shape[-1] - width + 1
    total = None
    for start in _piece_starts(width):
        piece = row[start : start + MAX_TAPS]
        part = np.correlate(stretch[start : start + count + piece.shape[-1] - 1], piece, "valid")
        if total is None:
            total = part
        else:
            total += part
    return total


def _piece_starts(width: int) -> range:
    """First tap of each piece of at most :data:`MAX_TAPS` taps of a split row."""
    return range(0, width, MAX_TAPS)


def unplanned(kernels: RowKernels, problem: Problem, target_bytes: int, workers: int, rates: Rates) -> Callable[[Array, Array], Array] | None:
    """``f(x, w)``: the samples of :func:`run_lines`' result without `out`, made from `x`
    (its lines in C order) and the row `w` as they are, where that run is a single call:
    one line with one filter in one piece (its window's ``numpy.correlate``), or all lines
    with one kernel in one piece (:func:`wide_lines`, copied into a contiguous result, as
    :func:`run_lines` does). The same calls on the same samples as :func:`run_lines`, so
    the same bits. None for other problems."""
    p, split = problem, kernels.split
    pieces = line_pieces(p, target_bytes, workers, rates)
    if _is_one_call(p, pieces):
        window, length = line_window(p, 0, p.out_spatial[0]), p.out_spatial[0]
        return lambda x, w: correlate_window(x.reshape(-1), w.reshape(-1), window, length, split)
    if len(pieces) == 1 and p.out_per_group == 1 and _is_wide(p, pieces[0]):
        lines = (p.batch, p.spatial[0])
        return lambda x, w: np.ascontiguousarray(wide_lines(x.reshape(lines), w.reshape(-1), p, split))
    return None


def _is_one_call(problem: Problem, pieces: list[tuple[int, int, int, int]]) -> bool:
    """Whether `pieces` of :func:`line_pieces` are one line, one filter, one piece."""
    p = problem
    return p.batch * p.groups * p.out_per_group == 1 and len(pieces) == 1


def run_lines(x: Array, kernels: RowKernels, problem: Problem, out: Array | None, target_bytes: int, workers: int, rates: Rates) -> Array:
    """The 1-D `problem` on `x` ``(B, G, 1, n)``, unpadded, in `out` ``(B, G, Og, n_out)``
    (the caller reshapes the result to ``problem.y_shape``):
    each piece of output samples is one ``numpy.correlate`` of its :func:`line_window`, and
    a piece of whole lines with one kernel one call over them all (:func:`wide_lines`).

    Without `out`, a problem of one call returns that call's result (a view, no copy), as
    SciPy does: a second buffer of the output's size, allocated and freed on every call,
    made glibc return the freed pages and fault them back in on the next call (358 page
    faults per call of 10**5 float64 samples on the 2-core machine, 0.9 ms against 0.17).
    """
    p = problem
    n, width = p.spatial[0], p.kernel[-1]
    signals = x.reshape(p.batch * p.groups, n)
    rows, split = kernels.rows.reshape(p.groups, p.out_per_group, width), kernels.split

    def correlation(line: int, o: int, r0: int, r1: int) -> Array:
        return correlate_window(signals[line], rows[line % p.groups, o], line_window(p, r0, r1), r1 - r0, split)

    pieces = line_pieces(p, target_bytes, workers, rates)
    if out is None and _is_one_call(p, pieces):
        return correlation(0, 0, 0, p.out_spatial[0])
    out = output(out, p, NUMPY, x.dtype)
    results = out.reshape(p.batch * p.groups, p.out_per_group, -1)

    def job(piece: tuple[int, int, int, int]) -> None:
        l0, l1, r0, r1 = piece
        if _is_wide(p, piece):
            for o in range(p.out_per_group):
                results[l0:l1, o] = wide_lines(signals[l0:l1], rows[0, o], p, split)
            return
        for line in range(l0, l1):
            for o in range(p.out_per_group):
                results[line, o, r0:r1] = correlation(line, o, r0, r1)

    run_parallel(pieces, job, workers)
    return out


def _is_wide(problem: Problem, piece: tuple[int, int, int, int]) -> bool:
    """Whether `piece` of :func:`line_pieces` runs as :func:`wide_lines`: several whole
    lines, all with the same kernel (one group)."""
    l0, l1, _, _ = piece
    return l1 - l0 > 1 and problem.groups == 1


def wide_lines(lines: Array, row: Array, problem: Problem, split: bool) -> Array:
    """The outputs ``(m, n_out)`` of `m` whole `lines` with one kernel `row`, from one
    ``numpy.correlate`` (or :func:`split_valid`) over the lines laid end to end, each with
    its zero padding: line ``b``'s outputs start at ``b * L`` (``L`` a padded line's
    length), and the ``K - 1`` outputs between lines are computed and dropped. One call
    instead of one per line: 15 float32 lines of 324 samples with 16 taps ('same') took
    17 us against 46 (``scipy.ndimage.correlate1d`` 26), 64 of 300 with 5 taps 18 against
    57 (ndimage 38)."""
    p = problem
    m, n = lines.shape
    lo, hi, count = p.pad_lo[0], p.pad_hi[0], p.out_spatial[0]
    if lo or hi:
        padded = np.zeros((m, lo + n + hi), lines.dtype)
        padded[:, lo : lo + n] = lines
    else:
        padded = np.ascontiguousarray(lines)
    flat = padded.reshape(-1)
    result = split_valid(flat, row) if split else np.correlate(flat, row, "valid")
    step = padded.shape[1] * result.itemsize  # a view of line b's outputs, at b * L
    return np.ndarray((m, count), result.dtype, buffer=result, strides=(step, result.itemsize))


def _loop_ns(taps: float) -> float:
    """``numpy.correlate``'s time per output sample (ns) in its unrolled loop, for up to
    :data:`MAX_TAPS` taps meeting the signal."""
    return _NS_PER_SAMPLE[max(1, round(taps)) - 1]


def _cached_seconds(moved: float, rates: Rates) -> float:
    """Seconds moving `moved` bytes in cache (:data:`_CACHE_SPEEDUP` times the stream rate)."""
    return moved / (_CACHE_SPEEDUP * rates.stream_bytes)


def _dot_ns(taps: float, itemsize: int, rates: Rates) -> float:
    """``numpy.correlate``'s time per output sample (ns) past :data:`MAX_TAPS` taps: one
    dot product, a fixed part (with what this machine's dot takes over the reference's,
    :attr:`.Rates.dot_extra_ns`) and the taps' bytes, read from cache."""
    return _DOT_NS_OFFSET + rates.dot_extra_ns + _cached_seconds(taps * itemsize, rates) * 1e9


def _split_ns(width: int, itemsize: int, rates: Rates) -> float:
    """Time per output sample (ns) of a row of `width` taps summed in pieces
    (:func:`split_valid`): each piece's loop and each further piece's add (two reads and a
    write from cache, as the row form's adds)."""
    starts = _piece_starts(width)
    loops = sum(_loop_ns(min(MAX_TAPS, width - start)) for start in starts)
    add_ns = _cached_seconds(3 * itemsize, rates) * 1e9
    return _SPLIT_WEIGHT * loops + add_ns * (len(starts) - 1)


def _line_ns(problem: Problem, rates: Rates) -> tuple[float, bool]:
    """Time per output sample (ns) of a 1-D line of `problem` with its row, and whether
    the row is summed in pieces: the unrolled loop for rows of up to :data:`MAX_TAPS`
    taps; longer ones as the cheaper of the pieces (their loops, and their calls over the
    samples of a call) and the dot product over the taps that meet the signal
    (:func:`_taps_met`)."""
    p = problem
    width = p.kernel[-1]
    if width <= MAX_TAPS:
        return _loop_ns(_taps_met(p)), False
    calls, samples = _split_calls(p)
    pieces = _split_ns(width, p.dtype.itemsize, rates) + calls * _PIECE_CALL_NS / samples
    whole = _dot_ns(_taps_met(p), p.dtype.itemsize, rates)
    return (pieces, True) if pieces < whole else (whole, False)


def _split_calls(problem: Problem) -> tuple[int, int]:
    """The calls that summing a row in pieces adds to each ``numpy.correlate`` of a 1-D
    line (one per further piece, and one padded copy where the line needs zeros, which
    :func:`wide_lines` makes in either form), and the output samples of such a call: a
    line's, or those of a batch of lines laid end to end (one group)."""
    p = problem
    further = len(_piece_starts(p.kernel[-1])) - 1
    if p.batch > 1 and p.groups == 1:
        return further, p.batch * (p.spatial[0] + p.pad_lo[0] + p.pad_hi[0])
    return further + (p.pad_lo[0] > 0 or p.pad_hi[0] > 0), p.out_spatial[0]


def _taps_met(problem: Problem) -> float:
    """Mean number of kernel taps that meet the signal per output sample of a 1-D line:
    all of them, less those over the zeros that 'same' and 'full' pad at each end (a
    'full' correlation of N samples with N taps multiplies N^2 pairs, not (2N - 1) N)."""
    p = problem
    n, taps, lo, length = p.spatial[0], p.kernel[-1], p.pad_lo[0], p.out_spatial[0]
    # output j reads padded samples j .. j + taps - 1: lo - j of them left of the signal,
    # j + taps - lo - n right of it (each clipped to 0 .. taps)
    missed = _clipped_sum(lo - length + 1, lo, taps) + _clipped_sum(taps - lo - n, length - 1 + taps - lo - n, taps)
    return taps - missed / length


def _clipped_sum(first: int, last: int, top: int) -> int:
    """``sum(min(max(t, 0), top) for t in range(first, last + 1))`` in closed form."""

    def upto(t: int) -> int:  # sum over 1..t of min(s, top)
        return t * (t + 1) // 2 if t <= top else top * (top + 1) // 2 + (t - top) * top

    return upto(max(last, 0)) - upto(max(first - 1, 0))


def seconds(problem: Problem, samples: int, runs: int, threads: int, rates: Rates) -> float:
    """Estimated time of the rows' work for `samples` flat output samples (all batch items
    and groups) on `threads` threads, in `runs` runs of calls (a run: a chunk's rows of
    one batch item and group): each row's loop per output sample and filter, the adds of
    its result, and two calls per row, filter and run."""
    p = problem
    n_rows = math.prod(p.kernel[:-1])
    products = samples * p.out_per_group * n_rows
    dots = products * _loop_ns(p.kernel[-1]) * 1e-9
    adds = _cached_seconds(products * 3 * p.dtype.itemsize, rates)
    calls = 2 * n_rows * p.out_per_group * runs
    return (dots + adds) / threads + calls * rates.call_seconds


def line_seconds(problem: Problem, pieces: list[tuple[int, int, int, int]], threads: int, rates: Rates) -> float:
    """Estimated time of :func:`run_lines` in `pieces` on `threads` threads: the loop per
    output sample and filter, the store of its result, and a call per line and filter of a
    piece (per filter for a piece of :func:`wide_lines`, which also computes the ``K - 1``
    samples between lines and copies its input into their padding)."""
    p = problem
    lines, count = p.batch * p.groups, p.out_spatial[0]
    wide = [_is_wide(p, piece) for piece in pieces]
    products = computed = lines * p.out_per_group * count
    copied = 0
    if any(wide):
        padded = p.spatial[0] + p.pad_lo[0] + p.pad_hi[0]
        computed = products * padded // count
        copied = lines * padded if padded > p.spatial[0] else 0
    dots = computed * _line_ns(p, rates)[0] * 1e-9
    stored = (products + copied) * p.dtype.itemsize / rates.stream_bytes
    calls = sum(1 if one else l1 - l0 for one, (l0, l1, _, _) in zip(wide, pieces)) * p.out_per_group
    return (dots + _LINE_STORE_PASSES * stored) / threads + calls * rates.call_seconds
