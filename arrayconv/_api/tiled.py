"""Out-of-core filtering: read an image tile by tile, filter each tile, write it out.

`in1` is anything that slices into a NumPy array: ``numpy.memmap``, a zarr array, a TIFF
opened with tifffile as a memmap or zarr store, an h5py dataset. `out` is anything that
takes slice assignments (the same kinds, or a NumPy array).

The result is cut into tiles (:class:`_TileGrid`): slabs of whole rows, or tiles along
the first two or more axes, whichever the chooser estimates fastest within the budget. One I/O
thread reads the next tile's input box (with its halo) and writes the previous result
while the current one is filtered, so the disk (or a zarr codec) and the filter work at
once; writes go in order, one at a time (tiles may share a zarr chunk). At most two
input boxes and two results are in memory at a time. How they reach the GPU and come
back (pinned buffers, a copy stream) is :mod:`arrayconv._runtime.slab_copies`.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._choose.choice import Choice
from .._io.resume import Progress, file_of, fingerprint
from .._methods import METHODS
from .._runtime import config as _config
from .._runtime.backend import NUMPY, Array, get_backend, on_arrays_device
from .._runtime.progress import progress_bar
from .._runtime.slab_copies import SLOTS, slab_copies
from .._spec.boundary import EDGE_RULES, EdgeRule, edge_rule, extend, fill_dtype, fill_number, source_index
from .._spec.nan import NAN_POLICIES, NanPolicy, check_kernel, check_result, refuse_nan
from .._spec.problem import as_array, check_choice, check_no_overlap, check_numeric, check_valid_sizes, check_writeable, result_dtype
from .._spec.shapes import mode_padding
from .choose_method import choose_method
from .correlate import MethodName, Mode, convolve, correlate
from .docstrings import fill

# Bytes of temporaries per byte of a tile's input box: the boxes in flight, the FFT's
# spectra, with room to spare. In flight while a tile is filtered: the next box being read,
# this one and its extended copy, its result, and the previous result being written. What
# they leave of the budget goes to the filter itself.
_BOX_SHARE = 8
_IN_FLIGHT_BOXES = 5
# On the GPU each box also has two pinned host buffers each way: boxes of at most this
# many bytes keep them (and what stays in CuPy's pinned-memory pool) to about 1 GiB.
_PINNED_BOX_BYTES = 256 << 20
# Grids that read least, of which the estimated fastest is taken.
_SHORTLIST = 4


@fill
@on_arrays_device
def correlate_into(
    in1: Any,
    in2: Array,
    out: Any,
    mode: Mode = "same",
    method: MethodName = "auto",
    *,
    boundary: EdgeRule = "constant",
    fillvalue: complex = 0,
    nan: NanPolicy = "propagate",
    memory_limit: int | None = None,
    progress: bool = True,
    resume: bool = False,
) -> Any:
    """Correlate an image larger than memory into an output array, tile by tile.

    The same result as ``out[...] = correlate(in1[...], in2, mode, boundary=..., nan=...)``,
    but `in1` is read and `out` written one tile at a time, so memory stays within
    `memory_limit` however large the image. Tiles are slabs of whole rows, or they cut the
    first two (or more) axes, whichever is estimated fastest within the budget (each tile
    reads its halo again). With a CuPy `in2`, each tile is copied to the GPU, filtered
    there and copied back.

    Parameters
    ----------
    in1 : array_like with slicing
        The image: anything ``in1[a:b]`` (and, for tiles, ``in1[a:b, c:d]``) turns into an
        array (``numpy.memmap``, zarr, tifffile, h5py).
    in2 : array_like
        The kernel, in memory (NumPy, or CuPy to filter on the GPU); same ndim as `in1`.
    out : array_like with slice assignment
        Where the result goes: shape of the result for `mode`, dtype
        ``np.result_type(in1, in2)`` in either byte order (a FITS file's big-endian data,
        opened for update, may take it); not `in1` or a view of it (its tiles would be
        written over samples still to be read), nor a memmap of the same bytes of its
        file, nor another handle on the same zarr array or HDF5 dataset.
    {mode}
    {method}
    {boundary}
    {nan}
    {memory_limit}
    progress : bool, optional
        Show a progress bar (tqdm, when installed). Default True.
    resume : bool, optional
        Make the run resumable: record how many tiles are done, about once a second and
        after their data are flushed to `out`'s file (in `out`'s attributes for zarr and
        HDF5, else in ``<out's file>.arrayconv-progress.json``), and first skip the tiles that an earlier
        resumable run into this `out` recorded, after checking that its input, kernel,
        options and memory limit were the same (else a ValueError). The record goes once
        the run completes. The result equals an uninterrupted run's, bit for bit. Needs an
        `out` backed by a file or a store. Default False.

    Returns
    -------
    array_like
        `out`.

    Raises
    ------
    ValueError
        For an `out` of the wrong shape or dtype or overlapping an input, different ndims,
        'valid' with a kernel larger than the image, an empty input, a `memory_limit` that
        is not a positive int, or the errors of :func:`correlate`.
    TypeError
        For data that are not integer, float or complex numbers.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> import arrayconv as ac
    >>> path = os.path.join(tempfile.mkdtemp(), "image.dat")
    >>> image = np.memmap(path, np.float32, "w+", shape=(1000, 800))
    >>> image[:] = np.random.default_rng(0).random((1000, 800), dtype=np.float32)
    >>> psf = np.ones((15, 15), np.float32) / 225
    >>> result = np.empty((1000, 800), np.float32)
    >>> _ = ac.correlate_into(image, psf, result, memory_limit=8 << 20, progress=False)
    >>> bool(np.allclose(result, ac.correlate(np.asarray(image), psf, "same"), atol=1e-5))
    True
    """
    return _filter_into(in1, in2, out, mode, method, boundary, fillvalue, nan, memory_limit, progress, resume, flip=False)


@fill
@on_arrays_device
def convolve_into(
    in1: Any,
    in2: Array,
    out: Any,
    mode: Mode = "same",
    method: MethodName = "auto",
    *,
    boundary: EdgeRule = "constant",
    fillvalue: complex = 0,
    nan: NanPolicy = "propagate",
    memory_limit: int | None = None,
    progress: bool = True,
    resume: bool = False,
) -> Any:
    """Convolve an image larger than memory into an output array, tile by tile.

    Parameters and results are those of :func:`correlate_into`, for :func:`convolve`.

    Returns
    -------
    array_like
        `out`.
    """
    return _filter_into(in1, in2, out, mode, method, boundary, fillvalue, nan, memory_limit, progress, resume, flip=True)


def _filter_into(in1, in2, out, mode, method, boundary, fillvalue, nan, memory_limit, progress, resume, *, flip):
    backend = get_backend(in2=in2)
    in2 = as_array(in2, "in2", backend)
    if not all(hasattr(in1, attr) for attr in ("shape", "dtype", "__getitem__")):
        in1 = np.asarray(in1)  # a nested list, say: in memory already
    check_choice("mode", mode, ("full", "same", "valid"))
    check_choice("method", method, ("auto", *METHODS))
    check_choice("nan", nan, NAN_POLICIES)
    if memory_limit is not None:
        _config.check_positive_int("memory_limit", memory_limit)
    _check_out_writeable(out)
    check_no_overlap(out, NUMPY, in1=in1)  # a tile written over samples still to be read
    check_no_overlap(out, backend, in2=in2)
    check_kernel(nan, in2, "in2", backend)
    shape, kernel = tuple(in1.shape), tuple(in2.shape)
    if len(shape) != len(kernel) or not shape:
        msg = f"`in1` and `in2` must have the same ndim (>= 1), got shapes {shape} and {kernel}"
        raise ValueError(msg)
    in1_dtype = np.dtype(in1.dtype).newbyteorder("=")  # a FITS file's big-endian data, say: boxes in native order
    check_numeric("in1", in1_dtype, shape)
    if mode == "valid":
        check_valid_sizes(shape, kernel)
        if any(n < k for n, k in zip(shape, kernel)):
            msg = f"mode 'valid' needs `in1` at least as large as `in2` here, got {shape} and {kernel}"
            raise ValueError(msg)
    pads = [mode_padding(n, k, mode) for n, k in zip(shape, kernel)]
    y_shape = tuple(n + lo + hi - k + 1 for n, k, (lo, hi) in zip(shape, kernel, pads))
    _, dtype = result_dtype(np.empty(0, in1_dtype), in2)
    check_result(nan, dtype)
    if tuple(out.shape) != y_shape or np.dtype(out.dtype).newbyteorder("=") != dtype:  # either byte order
        msg = f"`out` must have shape {y_shape} and dtype {dtype}, got shape {tuple(out.shape)} and dtype {out.dtype}"
        raise ValueError(msg)
    fillvalue = fill_number(fillvalue)
    pad_mode = EDGE_RULES[edge_rule(boundary, "boundary", fillvalue)]
    filled = pad_mode == "constant" and mode != "valid"
    box_dtype = fill_dtype(fillvalue, in1_dtype, dtype) if filled else in1_dtype
    limit = _config.budget(backend.name) if memory_limit is None else memory_limit
    box_bytes = limit // _BOX_SHARE if backend.name == "numpy" else min(limit // _BOX_SHARE, _PINNED_BOX_BYTES)
    options = dict(op="convolve" if flip else "correlate", dtype=box_dtype, mode="valid")
    grid = _TileGrid.choose(y_shape, kernel, limit, box_bytes, max(dtype.itemsize, 4), method, in2, options)
    if nan == "raise":  # every sample read before one is written: the error leaves `out` untouched
        _refuse_nan_boxes(in1, grid.in_shape[: grid.axes])
    axes = range(grid.axes, len(shape))  # extended in memory; the tiled axes are read past their edges
    source = _BoxReader(in1, pad_mode, fillvalue, box_dtype)
    func = convolve if flip else correlate
    tiles = list(grid.tiles())
    record = None
    if resume:
        options = dict(mode=mode, method=method, boundary=pad_mode, fillvalue=repr(fillvalue), nan=nan, flip=flip)
        record = Progress(out, fingerprint(in1, in2.get() if backend.name == "cupy" else in2, out, options, grid.out_shape), len(tiles))
    first = record.done() if record else 0

    def read(slot: int, i: int) -> np.ndarray:
        ranges = [(s.start - lo, s.stop + k - 1 - lo) for s, k, (lo, _) in zip(tiles[i], kernel, pads)]
        box_shape = (*(b - a for a, b in ranges), *shape[grid.axes :])
        with _naming_tile("reading", i, tiles, in1, "`in1`"):
            return source.box(ranges, into=copies.input_buffer(slot, box_shape))

    def write(slot: int, i: int, y: np.ndarray) -> None:
        copies.wait_for_host(slot)
        with _naming_tile("writing", i, tiles, out, "`out`"):
            out[_index(tiles[i])] = y
            if record is not None:
                record.tile_done(i + 1)

    with (
        record if record is not None else nullcontext(),  # left last: after the writes
        _config.config(memory_limit=grid.left()),
        progress_bar(y_shape[0] if grid.axes == 1 else grid.count(), progress, "row" if grid.axes == 1 else "tile") as bar,
        ThreadPoolExecutor(1) as io,
        slab_copies(backend, grid.in_shape[: grid.axes] + shape[grid.axes :], box_dtype, grid.out_shape, dtype) as copies,
    ):
        bar.update(sum(t[0].stop - t[0].start for t in tiles[:first]) if grid.axes == 1 else first)
        reading = io.submit(read, first % SLOTS, first) if first < len(tiles) else None
        writing: Future[None] | None = None
        for i in range(first, len(tiles)):
            tile, slot = tiles[i], i % SLOTS
            assert reading is not None
            box = copies.to_device(slot, reading.result())
            if i + 1 < len(tiles):  # the next tile's box is read while this one is filtered
                reading = io.submit(read, (i + 1) % SLOTS, i + 1)
            if axes:
                box = extend(backend.xp, box, axes, pads[grid.axes :], pad_mode, fillvalue)
            y = copies.to_host(slot, func(box, in2, "valid", method, nan=nan, fillvalue=fillvalue))
            del box
            if writing is not None:
                writing.result()  # one result waiting at a time, and its error raised here
            writing = io.submit(write, slot, i, y)
            del y
            bar.update(tile[0].stop - tile[0].start if grid.axes == 1 else 1)
        if writing is not None:
            writing.result()
    return out


@contextmanager
def _naming_tile(doing: str, i: int, tiles: list[tuple[slice, ...]], array: Any, name: str) -> Iterator[None]:
    """An OSError (a full disk, a failing read) raised as one that names the file and the tile."""
    try:
        yield
    except OSError as exc:
        where = ", ".join(f"{s.start}:{s.stop}" for s in tiles[i])
        msg = f"{doing} tile {i + 1} of {len(tiles)} (result [{where}]) of {file_of(array) or name}: {exc.strerror or exc}"
        raise OSError(exc.errno, msg) from exc


@dataclass(frozen=True)
class _TileGrid:
    """How :func:`correlate_into` cuts the result into tiles: `rows` along the first axis
    and ``widths[i]`` along axis ``i + 1`` of the first `axes` axes, whole along the rest.
    A tile reads its input box (the tile and its halo, ``k - 1`` more along each axis);
    five such boxes' bytes are in flight at a time (:data:`_IN_FLIGHT_BOXES`), and what
    they leave of `limit` is the filter's."""

    y_shape: tuple[int, ...]
    kernel: tuple[int, ...]
    limit: int
    itemsize: int
    widths: tuple[int, ...]
    rows: int = 1

    @property
    def axes(self) -> int:
        """How many leading axes the tiles cut."""
        return len(self.widths) + 1

    @property
    def out_shape(self) -> tuple[int, ...]:
        """The largest tile of the result."""
        return (min(self.rows, self.y_shape[0]), *self.widths, *self.y_shape[self.axes :])

    @property
    def in_shape(self) -> tuple[int, ...]:
        """The largest tile's input box, extended past the image's edges where it reaches them."""
        return tuple(n + k - 1 for n, k in zip(self.out_shape, self.kernel))

    def in_flight(self, rows: int) -> int:
        """Bytes of the boxes in flight with tiles of `rows` output rows."""
        return _IN_FLIGHT_BOXES * math.prod(replace(self, rows=rows).in_shape) * self.itemsize

    def left(self, rows: int | None = None) -> int:
        """Bytes of the budget left to filter one tile of `rows` (default: its own) rows."""
        return max(1, self.limit - self.in_flight(self.rows if rows is None else rows))

    def blocks(self) -> list[int]:
        """Tiles along each axis of the result (one along the axes not cut)."""
        return [math.ceil(n / w) for n, w in zip(self.y_shape, self.out_shape)]

    def read_factor(self) -> float:
        """Samples read per result sample (the halos each tile reads again), times
        :meth:`cut_factor`."""
        reads = math.prod((n + b * (k - 1)) / n for n, b, k in zip(self.y_shape, self.blocks(), self.kernel))
        return reads * self.cut_factor()

    def cut_factor(self) -> float:
        """What cutting more axes than the first costs beyond the samples: shorter runs
        read from a file in row order, more calls. Counted as 10% more per axis."""
        return 1 + 0.1 * len(self.widths)

    def tiles(self) -> Iterator[tuple[slice, ...]]:
        """The tiles, as slices of the result along the first `axes` axes: along the first
        axis innermost, so each block of the others is streamed row by row."""
        starts = [range(0, n, w) for n, w in zip(self.y_shape, self.out_shape[: self.axes])]
        for *others, first in itertools.product(*starts[1:], starts[0]):
            yield tuple(slice(a, min(a + w, n)) for a, w, n in zip((first, *others), self.out_shape, self.y_shape))

    def count(self) -> int:
        """How many tiles."""
        return math.prod(self.blocks())

    @classmethod
    def choose(cls, y_shape, kernel, limit, box_bytes, itemsize, method, in2, options) -> _TileGrid:
        """The grid estimated fastest (its tiles' count times the chooser's estimate for
        the largest, times :meth:`cut_factor`) among the :data:`_SHORTLIST` that read least
        (:meth:`read_factor`) of those whose boxes in flight with one output row fit
        `limit` and where `method` ('auto': some method) can filter a one-row tile in what
        they leave; its rows as many as fit an eighth of `limit` (`box_bytes`) and, for
        that method, what is left. Reading least shortlists grids; the estimate decides,
        since a small kernel's direct sums cost no more for a slab's halo, and an FFT's
        transforms do."""

        @functools.cache  # asked again for the same grid and rows: whether it fits, then how fast
        def choice(grid: _TileGrid, rows: int) -> Choice:
            return choose_method(replace(grid, rows=rows).in_shape, in2, memory_limit=grid.left(rows), **options)

        def rejected(grid: _TileGrid, rows: int) -> str | None:  # why `method` ('auto': every method) cannot filter tiles of `rows` rows
            chosen = choice(grid, rows)
            if method != "auto":
                return chosen.rejected.get(method)
            reason = chosen.rejected.get(chosen.method)  # where none fits, 'auto' takes the one with the smallest temporaries
            return reason and f"{chosen.method!r}, the method with the smallest temporaries: {reason}"

        def seconds(grid: _TileGrid) -> float:  # estimated, to filter every tile
            chosen = choice(grid, grid.rows)
            return grid.count() * chosen.estimates[chosen.method if method == "auto" else method].seconds * grid.cut_factor()

        def widths(axes: int) -> Iterator[tuple[int, ...]]:  # of the tiles along axes 1 to `axes - 1`: powers of 2, or whole
            sizes = [sorted({n, *(1 << j for j in range(n.bit_length()) if 1 << j < n)}) for n in y_shape[1:axes]]
            return itertools.product(*sizes)

        grids = []
        for axes in range(1, len(y_shape) + 1):
            for w in widths(axes):
                grid = cls(y_shape, kernel, limit, itemsize, w)
                row_box = math.prod(grid.in_shape[1:]) * itemsize
                grid = replace(grid, rows=max(1, box_bytes // row_box - kernel[0] + 1))
                if grid.in_flight(1) <= limit:
                    grids.append((kernel[0] * row_box > box_bytes, grid))  # over the tiles' share even with one row: last
        shortlist: list[_TileGrid] = []
        for _, grid in sorted(grids, key=lambda g: (g[0], g[1].read_factor(), g[1].axes, -math.prod(g[1].widths))):
            if not rejected(grid, grid.rows):
                shortlist.append(grid)
            elif not rejected(grid, 1):
                shortlist.append(replace(grid, rows=_most_rows(grid.rows, lambda rows: rejected(grid, rows))))
            if len(shortlist) == _SHORTLIST:
                break
        if shortlist:
            return min(shortlist, key=seconds)
        finest = cls(y_shape, kernel, limit, itemsize, tuple(1 for _ in y_shape[1:]))
        _check_room(limit, finest.in_flight(1))
        which, advice = ("no method can", "") if method == "auto" else (f"method {method!r} cannot", " or use method='auto'")
        msg = (
            f"{which} filter the tiles within `memory_limit`={limit}, even tiles of one output sample: "
            f"their boxes in flight leave {finest.left(1)} bytes to filter each one, and {rejected(finest, 1)}. "
            f"Raise `memory_limit`{advice}"
        )
        raise ValueError(msg)


def _check_out_writeable(out: Any) -> None:
    """Refuse an `out` that is no array-like (None, a list) or a NumPy array that is read-only
    (:func:`check_writeable`), before any read."""
    if not all(hasattr(out, attr) for attr in ("shape", "dtype", "__setitem__")):
        msg = f"`out` must be an array with shape, dtype and slice assignment (NumPy, a memmap, zarr, h5py), got {type(out).__name__}"
        raise TypeError(msg)
    check_writeable(out)


def _index(tile: tuple[slice, ...]) -> slice | tuple[slice, ...]:
    """`tile` as an index: a plain slice for a tile cut along the first axis only (an
    array-like need take no more than ``a[i:j]``)."""
    return tile[0] if len(tile) == 1 else tile


def _refuse_nan_boxes(source: Any, box: tuple[int, ...]) -> None:
    """Raise the error of nan='raise' if `source`, read a `box` (along its first axes) at a
    time, holds a NaN."""
    starts = itertools.product(*(range(0, n, b) for n, b in zip(source.shape, box)))
    for start in starts:
        refuse_nan("in1", np.asarray(source[_index(tuple(slice(a, a + b) for a, b in zip(start, box)))]), np)


def _check_room(limit: int, need: int) -> None:
    """Refuse a budget of `limit` bytes that cannot hold the boxes in flight even with tiles
    of one output sample (`need` bytes), rather than go over it."""
    if limit < need:
        msg = (
            f"`memory_limit`={limit} cannot hold the tiles in flight: even with one output sample each they "
            f"need {need} bytes; raise `memory_limit` (default: arrayconv.config's budget)"
        )
        raise ValueError(msg)


def _most_rows(fails: int, rejected: Callable[[int], str | None]) -> int:
    """The most output rows per tile, fewer than `fails`, that the method can filter
    (``rejected(rows)``: why it cannot, or None; it can filter one row). FFT's spectra
    outgrow the tile: at the tiles' share of the budget, method='fft' could never run."""
    fits = 1
    while fails - fits > 1:
        middle = (fits + fails) // 2
        fits, fails = (fits, middle) if rejected(middle) else (middle, fails)
    return fits


class _BoxReader:
    """Boxes of an array-like along its first axes, continued past its edges by a
    numpy.pad mode, as `dtype`."""

    def __init__(self, source: Any, pad_mode: str, fillvalue: complex, dtype: np.dtype[Any]) -> None:
        self.source, self.pad_mode, self.fillvalue, self.dtype = source, pad_mode, fillvalue, dtype

    def box(self, ranges: list[tuple[int, int]], into: np.ndarray | None = None) -> np.ndarray:
        """The box ``start:stop`` along each of the first ``len(ranges)`` axes (whole along
        the rest), into `into` (of that shape) if given, else a new array; indices outside
        ``[0, n)`` follow the pad mode. Each run of consecutive source indices along each
        axis is read once, as one slice per combination of runs, and placed by
        :func:`_placements`."""
        shape = self.source.shape
        box = np.empty((*(b - a for a, b in ranges), *shape[len(ranges) :]), self.dtype) if into is None else into
        runs = []
        for axis, (start, stop) in enumerate(ranges):
            index = source_index(np.arange(start, stop), shape[axis], self.pad_mode)
            if (index < 0).any():
                box[(slice(None),) * axis + (index < 0,)] = self.fillvalue
            runs.append([(lo, hi, _placements(index, lo, hi)) for lo, hi in _runs(np.unique(index[index >= 0]))])
        for combination in itertools.product(*runs):
            block = np.asarray(self.source[_index(tuple(slice(lo, hi) for lo, hi, _ in combination))])
            for placement in itertools.product(*(places for _, _, places in combination)):
                into_at, from_at = [at for at, _ in placement], [at for _, at in placement]
                if any(isinstance(at, np.ndarray) for at in into_at):  # samples out of order or repeated
                    into_at = [np.arange(box.shape[i])[at] for i, at in enumerate(into_at)]
                    from_at = [np.arange(block.shape[i])[at] for i, at in enumerate(from_at)]
                    box[np.ix_(*into_at)] = block[np.ix_(*from_at)]
                else:
                    box[tuple(into_at)] = block[tuple(from_at)]
        return box


def _placements(index: np.ndarray, lo: int, hi: int) -> list[tuple[slice | np.ndarray, slice | np.ndarray]]:
    """Where the samples ``lo:hi`` of an axis go in a box whose samples read `index`
    (``index[i]`` is the source sample of the box's sample i): pairs ``(into, from)``, the
    box's samples `into` taking the block's samples `from`. The longest stretch in order
    is one pair of slices (a plain copy); the samples reflected or read twice past an
    edge ('symmetric', 'edge'), index arrays: a gather of the whole box through them took
    106 ms where the copy takes 8."""
    at = np.flatnonzero((index >= lo) & (index < hi))
    source = index[at] - lo
    breaks = np.flatnonzero((np.diff(at) != 1) | (np.diff(source) != 1))  # the stretch in order ends at each
    starts, ends = np.r_[0, breaks + 1], np.r_[breaks, len(at) - 1]
    longest = int(np.argmax(ends - starts))
    first, last = int(starts[longest]), int(ends[longest])
    places: list[tuple[slice | np.ndarray, slice | np.ndarray]] = [
        (slice(at[first], at[last] + 1), slice(source[first], source[last] + 1))
    ]
    rest = np.r_[0:first, last + 1 : len(at)]
    if rest.size:
        places.append((at[rest], source[rest]))
    return places


def _runs(sorted_rows: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs ``[lo, hi)`` of consecutive values in `sorted_rows`."""
    breaks = np.flatnonzero(np.diff(sorted_rows) > 1)
    starts = [sorted_rows[0], *sorted_rows[breaks + 1]]
    stops = [*(sorted_rows[breaks] + 1), sorted_rows[-1] + 1]
    return [(int(a), int(b)) for a, b in zip(starts, stops)]
