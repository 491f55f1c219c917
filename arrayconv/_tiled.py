"""Out-of-core filtering: read an image slab by slab, filter each slab, write it out.

`in1` is anything that slices along its first axis into a NumPy array: ``numpy.memmap``,
a zarr array, a TIFF opened with tifffile as a memmap or zarr store, an h5py dataset.
`out` is anything that takes slab assignments (the same kinds, or a NumPy array).

One I/O thread reads the next slab of input rows (with its halo) and writes the previous
slab of results while the current one is filtered, so the disk (or a zarr codec) and the
filter work at once; writes go in order, one at a time (slabs may share a zarr chunk).
At most two input slabs and two result slabs are in memory at a time. How slabs reach
the GPU and come back (pinned buffers, a copy stream) is :mod:`arrayconv._slab_copies`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import _config
from ._backend import NUMPY, Array, get_backend
from ._boundary import BOUNDARIES, extend, fill_dtype, fill_number, source_index
from ._choose_method import choose_method
from ._correlate import Boundary, MethodName, Mode, convolve, correlate
from ._docstrings import fill
from ._nan import NAN_POLICIES, NanPolicy, check_kernel, check_result, refuse_nan
from ._problem import as_array, check_choice, check_no_overlap, check_numeric, check_valid_sizes, result_dtype
from ._shapes import mode_padding
from ._slab_copies import SLOTS, slab_copies

# Bytes of temporaries per byte of a slab: the slabs in flight, the FFT's spectra, with room
# to spare. In flight while a slab is filtered: the next slab being read, this one and its
# extended copy, its result, and the previous result being written. What they leave of
# the budget goes to the filter itself.
_SLAB_SHARE = 8
_IN_FLIGHT_SLABS = 5
# On the GPU each slab also has two pinned host buffers each way: slabs of at most this
# many bytes keep them (and what stays in CuPy's pinned-memory pool) to about 1 GiB.
_PINNED_SLAB_BYTES = 256 << 20


@fill
def correlate_into(
    in1: Any,
    in2: Array,
    out: Any,
    mode: Mode = "same",
    method: MethodName = "auto",
    *,
    boundary: Boundary = "fill",
    fillvalue: complex = 0,
    nan: NanPolicy = "propagate",
    memory_limit: int | None = None,
    progress: bool = True,
) -> Any:
    """Correlate an image larger than memory into an output array, slab by slab.

    The same result as ``out[...] = correlate(in1[...], in2, mode, boundary=..., nan=...)``,
    but `in1` is read and `out` written one slab of rows at a time, so memory stays within
    `memory_limit` however large the image. With a CuPy `in2`, each slab is copied to the
    GPU, filtered there and copied back.

    Parameters
    ----------
    in1 : array_like with slicing
        The image: anything ``in1[a:b]`` turns into an array (``numpy.memmap``, zarr,
        tifffile, h5py). Its first axis is cut into slabs; where the budget cannot hold
        whole planes ``in1[i]`` in flight and `in2` has length 1 along that axis (a stack
        of planes, bands), each plane is cut along its own first axis (``in1[i, a:b]``).
    in2 : array_like
        The kernel, in memory (NumPy, or CuPy to filter on the GPU); same ndim as `in1`.
    out : array_like with slice assignment
        Where the result goes: shape of the result for `mode`, dtype
        ``np.result_type(in1, in2)`` in either byte order (a FITS file's big-endian data,
        opened for update, may take it); not `in1` or a view of it (its slabs would be
        written over rows still to be read; nor a memmap of the same bytes of its file).
    {mode}
    {method}
    {boundary}
    {nan}
    {memory_limit}
    progress : bool, optional
        Show a progress bar (tqdm, when installed). Default True.

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
    return _filter_into(in1, in2, out, mode, method, boundary, fillvalue, nan, memory_limit, progress, flip=False)


@fill
def convolve_into(
    in1: Any,
    in2: Array,
    out: Any,
    mode: Mode = "same",
    method: MethodName = "auto",
    *,
    boundary: Boundary = "fill",
    fillvalue: complex = 0,
    nan: NanPolicy = "propagate",
    memory_limit: int | None = None,
    progress: bool = True,
) -> Any:
    """Convolve an image larger than memory into an output array, slab by slab.

    Parameters and results are those of :func:`correlate_into`, for :func:`convolve`.

    Returns
    -------
    array_like
        `out`.
    """
    return _filter_into(in1, in2, out, mode, method, boundary, fillvalue, nan, memory_limit, progress, flip=True)


def _filter_into(in1, in2, out, mode, method, boundary, fillvalue, nan, memory_limit, progress, *, flip):  # type: ignore[no-untyped-def]
    backend = get_backend(in2=in2)
    in2 = as_array(in2, "in2", backend)
    if not all(hasattr(in1, attr) for attr in ("shape", "dtype", "__getitem__")):
        in1 = np.asarray(in1)  # a nested list, say: in memory already
    check_choice("mode", mode, ("full", "same", "valid"))
    check_choice("boundary", boundary, BOUNDARIES)
    check_choice("nan", nan, NAN_POLICIES)
    if memory_limit is not None:
        _config.check_positive_int("memory_limit", memory_limit)
    check_no_overlap(out, NUMPY, in1=in1)  # a slab written over rows still to be read
    check_no_overlap(out, backend, in2=in2)
    check_kernel(nan, in2, "in2", backend)
    shape, kernel = tuple(in1.shape), tuple(in2.shape)
    if len(shape) != len(kernel) or not shape:
        msg = f"`in1` and `in2` must have the same ndim (>= 1), got shapes {shape} and {kernel}"
        raise ValueError(msg)
    in1_dtype = np.dtype(in1.dtype).newbyteorder("=")  # a FITS file's big-endian data, say: slabs in native order
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
    filled = BOUNDARIES[boundary] == "constant" and mode != "valid"
    slab_dtype = fill_dtype(fillvalue, in1_dtype, dtype) if filled else in1_dtype
    limit = _config.budget(backend.name) if memory_limit is None else memory_limit
    extended = tuple(n + lo + hi for n, (lo, hi) in zip(shape[1:], pads[1:]))  # a slab's row, past its edges
    row_bytes = math.prod(extended) * max(dtype.itemsize, 4)
    slab_bytes = limit // _SLAB_SHARE if backend.name == "numpy" else min(limit // _SLAB_SHARE, _PINNED_SLAB_BYTES)
    func = convolve if flip else correlate
    options = dict(op="convolve" if flip else "correlate", dtype=slab_dtype, mode="valid")

    def left(rows: int) -> int:  # of the budget, to filter one slab: what its slabs in flight leave
        return max(1, limit - _IN_FLIGHT_SLABS * (min(rows, y_shape[0]) + kernel[0] - 1) * row_bytes)

    def rejected(rows: int) -> str | None:  # why `method` ('auto': every method) cannot filter slabs of `rows` output rows
        slab_shape = (min(rows, y_shape[0]) + kernel[0] - 1, *extended)
        choice = choose_method(slab_shape, in2, memory_limit=left(rows), **options)
        if method != "auto":
            return choice.rejected.get(method)
        reason = choice.rejected.get(choice.method)  # where none fits, 'auto' takes the one with the smallest temporaries
        return reason and f"{choice.method!r}, the method with the smallest temporaries: {reason}"

    one_row = _IN_FLIGHT_SLABS * kernel[0] * row_bytes  # the slabs in flight, one output row each
    if kernel[0] == 1 and len(shape) > 1 and (limit < one_row or rejected(1)):
        return _plane_by_plane(in1, in2, out, mode, method, boundary, fillvalue, nan, limit, progress, flip=flip)
    _check_room(limit, one_row)
    rows = _slab_rows(max(1, slab_bytes // row_bytes - kernel[0] + 1), method, rejected, limit, left)
    source = _RowReader(in1, BOUNDARIES[boundary], fillvalue, slab_dtype)
    slabs = [(first, min(first + rows, y_shape[0])) for first in range(0, y_shape[0], rows)]
    y_rows = min(rows, y_shape[0])  # of the largest slab
    if nan == "raise":  # every row read before one is written: the error leaves `out` untouched
        _refuse_nan_rows(in1, y_rows + kernel[0] - 1)

    def read(slot: int, first: int, last: int) -> np.ndarray:
        start = first - pads[0][0]
        stop = last + kernel[0] - 1 - pads[0][0]
        return source.rows(start, stop, into=copies.input_buffer(slot, stop - start))

    def write(slot: int, first: int, last: int, y: np.ndarray) -> None:
        copies.wait_for_host(slot)
        out[first:last] = y

    with (
        _config.config(memory_limit=left(rows)),
        _bar(y_shape[0], progress) as bar,
        ThreadPoolExecutor(1) as io,
        slab_copies(backend, (y_rows + kernel[0] - 1, *shape[1:]), slab_dtype, (y_rows, *y_shape[1:]), dtype) as copies,
    ):
        reading, writing = io.submit(read, 0, *slabs[0]), None
        for i, (first, last) in enumerate(slabs):
            slot = i % SLOTS
            slab = copies.to_device(slot, reading.result())
            if i + 1 < len(slabs):
                reading = io.submit(read, (i + 1) % SLOTS, *slabs[i + 1])
            slab = extend(backend.xp, slab, range(1, len(shape)), pads[1:], BOUNDARIES[boundary], fillvalue)
            y = copies.to_host(slot, func(slab, in2, "valid", method, nan=nan, fillvalue=fillvalue))
            del slab
            if writing is not None:
                writing.result()  # one result waiting at a time, and its error raised here
            writing = io.submit(write, slot, first, last, y)
            del y
            bar.update(last - first)
        writing.result()
    return out


def _plane_by_plane(in1, in2, out, mode, method, boundary, fillvalue, nan, limit, progress, *, flip):  # type: ignore[no-untyped-def]
    """Filter each plane ``in1[i]`` into ``out[i]``, slab by slab along the plane's own first
    axis: for a kernel of length 1 along the first axis (a stack of planes, the bands of a
    multispectral image) whose planes the budget cannot hold in flight. Each plane is
    sliced lazily (:class:`_Plane`), so no more than a slab of it is read at a time."""
    planes = [(_Plane(in1, i), _Plane(out, i)) for i in range(in1.shape[0])]
    if nan == "raise":  # every plane read for NaN before one is written
        row_bytes = math.prod(in1.shape[2:]) * np.dtype(in1.dtype).itemsize
        for plane, _ in planes:
            _refuse_nan_rows(plane, max(1, limit // _SLAB_SHARE // row_bytes))
        nan = "propagate"  # no NaN: the same filter as 'raise'
    with _bar(len(planes), progress, unit="plane") as bar:
        try:
            for plane, result in planes:
                _filter_into(plane, in2[0], result, mode, method, boundary, fillvalue, nan, limit, False, flip=flip)
                bar.update(1)
        except ValueError as error:  # the budget's refusal, on the first plane: say whose numbers it gives
            msg = f"filtering the {len(planes)} planes of `in1` one at a time (each of shape {planes[0][0].shape}): {error}"
            raise ValueError(msg) from None
    return out


class _Plane:
    """Plane `index` of an array-like, read and written along its own first axis:
    ``plane[a:b]`` is ``source[index, a:b]``, read only when asked (a zarr array or an h5py
    dataset would read a whole plane at ``source[index]``)."""

    def __init__(self, source: Any, index: int) -> None:
        self.source, self.index = source, index
        self.shape, self.dtype = tuple(source.shape[1:]), source.dtype

    def __getitem__(self, rows: slice) -> Any:
        return self.source[self.index, rows]

    def __setitem__(self, rows: slice, value: Any) -> None:
        self.source[self.index, rows] = value


def _refuse_nan_rows(source: Any, block: int) -> None:
    """Raise the error of nan='raise' if the rows of `source`, read `block` at a time, hold a NaN."""
    for first in range(0, source.shape[0], block):
        refuse_nan("in1", np.asarray(source[first : first + block]), np)


def _check_room(limit: int, need: int) -> None:
    """Refuse a budget of `limit` bytes that cannot hold the slabs in flight even with one
    output row each (`need` bytes), rather than go over it."""
    if limit < need:
        msg = (
            f"`memory_limit`={limit} cannot hold the slabs in flight: with one output row each they "
            f"need {need} bytes; raise `memory_limit` (default: arrayconv.config's budget)"
        )
        raise ValueError(msg)


def _slab_rows(most: int, method: str, rejected: Callable[[int], str | None], limit: int, left: Callable[[int], int]) -> int:
    """Output rows per slab: `most` (the slabs' share of the budget), or the most up to it
    that `method` (for 'auto', some method) can filter within what their slabs in flight
    leave of the budget (``left(rows)`` bytes; ``rejected(rows)``: why it cannot, or None).
    FFT's spectra outgrow the slab: at the slabs' share, method='fft' could never run."""
    if not rejected(most):
        return most
    if reason := rejected(1):
        which, advice = ("no method can", "") if method == "auto" else (f"method {method!r} cannot", " or use method='auto'")
        msg = (
            f"{which} filter the slabs within `memory_limit`={limit}, even slabs of one output row: "
            f"their slabs in flight leave {left(1)} bytes to filter each one, and {reason}. Raise `memory_limit`{advice}"
        )
        raise ValueError(msg)
    fits, fails = 1, most
    while fails - fits > 1:
        middle = (fits + fails) // 2
        fits, fails = (fits, middle) if rejected(middle) else (middle, fails)
    return fits


class _RowReader:
    """Rows ``start:stop`` of an array-like, continued past its edges by a numpy.pad mode,
    as `dtype`."""

    def __init__(self, source: Any, pad_mode: str, fillvalue: complex, dtype: np.dtype[Any]) -> None:
        self.source, self.pad_mode, self.fillvalue, self.dtype = source, pad_mode, fillvalue, dtype

    def rows(self, start: int, stop: int, into: np.ndarray | None = None) -> np.ndarray:
        """Rows ``start:stop``, into `into` (of that shape) if given, else a new array;
        indices outside ``[0, n)`` follow the pad mode."""
        index = source_index(np.arange(start, stop), self.source.shape[0], self.pad_mode)
        inside = index >= 0
        slab = np.empty((stop - start, *self.source.shape[1:]), self.dtype) if into is None else into
        slab[~inside] = self.fillvalue
        wanted = index[inside]
        if wanted.size:
            for lo, hi in _runs(np.unique(wanted)):
                block = np.asarray(self.source[lo:hi])
                at = np.flatnonzero(inside & (index >= lo) & (index < hi))
                if at[-1] - at[0] == hi - lo - 1 and np.array_equal(index[at], np.arange(lo, hi)):
                    slab[at[0] : at[-1] + 1] = block  # the rows in order: a plain copy
                else:
                    slab[at] = block[index[at] - lo]
        return slab


def _runs(sorted_rows: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs ``[lo, hi)`` of consecutive values in `sorted_rows`."""
    breaks = np.flatnonzero(np.diff(sorted_rows) > 1)
    starts = [sorted_rows[0], *sorted_rows[breaks + 1]]
    stops = [*(sorted_rows[breaks] + 1), sorted_rows[-1] + 1]
    return [(int(a), int(b)) for a, b in zip(starts, stops)]


@contextmanager
def _bar(total: int, show: bool, unit: str = "row") -> Iterator[Any]:
    """A tqdm progress bar over `total` rows (or other units), or a silent stand-in."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        show = False
    if not show:
        yield _Silent()
        return
    with tqdm(total=total, unit=unit, desc="arrayconv") as bar:
        yield bar


class _Silent:
    def update(self, n: int) -> None:
        """Do nothing."""
