"""Boundary rules: extend an array past its edges before a valid correlation (halo padding).

Every method then runs unchanged on the extended array, so each boundary rule works on
every method and both backends.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

import numpy as np

from .._runtime.backend import Array

# One vocabulary of edge rules for every function (`boundary`, `padding_mode`, the CLI):
# each name -> its ``numpy.pad`` mode. The names are numpy.pad's, but for 'mirror'.
EDGE_RULES = {
    "constant": "constant",  # `fillvalue` past the edges (zeros by default)
    "wrap": "wrap",  # periodic: ... c d | a b c d | a b ...
    "symmetric": "symmetric",  # the edge sample repeated: ... b a | a b c d | d c ...
    "mirror": "reflect",  # the edge sample not repeated: ... c b | a b c d | c b ...
    "edge": "edge",  # the edge sample: ... a a | a b c d | d d ...
}
# The names other libraries use for them, accepted as aliases.
ALIASES = {
    "fill": "constant",  # scipy.signal.correlate2d
    "zeros": "constant",  # torch's padding_mode
    "circular": "wrap",  # torch
    "symm": "symmetric",  # scipy.signal.correlate2d
    "nearest": "edge",  # scipy.ndimage
    "replicate": "edge",  # torch
}
EdgeRule = Literal["constant", "wrap", "symmetric", "mirror", "edge", "fill", "zeros", "circular", "symm", "nearest", "replicate"]
_AMBIGUOUS = {
    "reflect": (
        "'reflect' means two rules: 'symmetric' (... b a | a b c d, as scipy.ndimage and OpenCV) "
        "or 'mirror' (... c b | a b c d, as NumPy, scikit-image and torch); say which"
    )
}


def edge_rule(value: object, name: str = "boundary", fillvalue: complex = 0) -> str:
    """The canonical name (a key of :data:`EDGE_RULES`) of the edge rule `value` given as
    argument `name`; a ValueError naming the argument for an unknown or ambiguous name, or
    for 'zeros' with a `fillvalue` other than 0.

    Examples
    --------
    >>> edge_rule("nearest"), edge_rule("symm"), edge_rule("circular", "padding_mode")
    ('edge', 'symmetric', 'wrap')
    """
    if isinstance(value, str) and value in _AMBIGUOUS:
        msg = f"`{name}`: {_AMBIGUOUS[value]}"
        raise ValueError(msg)
    if not isinstance(value, str) or value not in EDGE_RULES and value not in ALIASES:
        names = ", ".join(repr(n) for n in EDGE_RULES)
        aliases = ", ".join(f"{a!r} = {c!r}" for a, c in ALIASES.items())
        msg = f"`{name}` must be one of {{{names}}} (or an alias: {aliases}), got {value!r}"
        raise ValueError(msg)
    if value == "zeros" and fillvalue != 0:
        msg = f"`{name}`='zeros' pads with 0, but `fillvalue` is {fillvalue!r}; use 'constant' with that fillvalue"
        raise ValueError(msg)
    return ALIASES.get(value, value)


def fill_number(fillvalue: Any) -> complex:
    """`fillvalue` as a Python number (int, float or complex); TypeError for anything else
    (None, a string, an array of several values), which NumPy would take as NaN or fail
    on with a message that does not name it."""
    if type(fillvalue) in (int, float, complex):
        return fillvalue
    value = np.asarray(fillvalue) if np.ndim(fillvalue) == 0 else None
    if value is None or value.dtype.kind not in "biufc":
        msg = f"`fillvalue` must be a number (int, float or complex), got {fillvalue!r}"
        raise TypeError(msg)
    return value.item()


def fill_dtype(fillvalue: complex, x_dtype: np.dtype[Any], result: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype to extend an input of `x_dtype` by `fillvalue` in, for a result of dtype
    `result`: the input's own where it holds `fillvalue` exactly, else the result's, as
    SciPy casts `fillvalue` to the result's dtype (an int16 image filled with 0.5 under a
    float kernel reads 0.5 there, not 0; a float32 one under a float64 kernel reads 0.1 in
    float64, not rounded to float32).

    Raises
    ------
    ValueError
        Where `result` cannot hold `fillvalue`: a complex value for a real result, a
        fraction, NaN or value out of range for an integer one.

    Examples
    --------
    >>> fill_dtype(0.5, np.dtype(np.int16), np.dtype(np.float64))
    dtype('float64')
    >>> fill_dtype(2, np.dtype(np.int16), np.dtype(np.float64))
    dtype('int16')
    """
    if _holds(x_dtype, fillvalue):
        return x_dtype
    if result.kind == "c" or (result.kind == "f" and complex(fillvalue).imag == 0) or _holds(result, fillvalue):
        return result
    kind = "a real number" if result.kind == "f" else f"a whole number in [{np.iinfo(result).min}, {np.iinfo(result).max}]"
    msg = f"`fillvalue` must be {kind} for a result of dtype {result}, got {fillvalue!r}"
    raise ValueError(msg)


def _holds(dtype: np.dtype[Any], value: complex) -> bool:
    """Whether `dtype` holds `value` exactly (NaN counts as held by float dtypes)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # complex to real, NaN or out of range to int
        cast = np.asarray(value).astype(dtype).item()
    return cast == value or (value != value and cast != cast)


def extend(
    xp: ModuleType,
    a: Array,
    axes: Sequence[int],
    pads: Sequence[tuple[int, int]],
    pad_mode: str,
    fillvalue: complex = 0,
    dtype: np.dtype[Any] | None = None,
    into: Array | None = None,
) -> Array:
    """`a` extended by ``pads[i] = (before, after)`` samples along ``axes[i]`` by `pad_mode`
    (a ``numpy.pad`` mode), as `dtype` (default: `a`'s), made in `into` where given (an
    array of the result's shape and dtype) and not gathered by index.

    The result is made once and its edges copied from its own middle, slices only (no
    index arrays): ``numpy.pad`` costs 10-15 us more per call on small images. Pads
    longer than one copy of their axis (a kernel larger than the image) gather by index
    (:func:`_extend_by_index`).

    Examples
    --------
    >>> import numpy as np
    >>> extend(np, np.array([1, 2, 3]), [0], [(2, 1)], "symmetric")
    array([2, 1, 1, 2, 3, 3])
    >>> extend(np, np.array([1, 2, 3]), [0], [(2, 1)], "reflect")
    array([3, 2, 1, 2, 3, 2])
    """
    dtype = a.dtype if dtype is None else dtype
    if any(past_one_copy(a.shape[ax], pad, pad_mode) for ax, pad in zip(axes, pads)):
        return _extend_by_index(xp, a.astype(dtype, copy=False), axes, pads, pad_mode)
    shape, middle, copies = _layout(tuple(a.shape), tuple(axes), tuple(map(tuple, pads)), pad_mode)
    out = xp.empty(shape, dtype) if into is None else into
    out[middle] = a
    for edge, source in copies:
        out[edge] = fillvalue if source is None else out[source]
    return out


@dataclass(frozen=True, slots=True)
class Extension:
    """An input's extension past its edges, as data: called on an array, :func:`extend`
    with these arguments; read by the methods that take the input as it is instead."""

    xp: ModuleType
    axes: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]
    pad_mode: str
    fillvalue: complex = 0
    dtype: np.dtype[Any] | None = None

    def __call__(self, a: Array) -> Array:
        return extend(self.xp, a, self.axes, self.pads, self.pad_mode, self.fillvalue, self.dtype)

    def trailing_pads(self, ndim: int, count: int) -> tuple[tuple[int, int], ...] | None:
        """The pads of the last `count` axes of an `ndim`-D input; None where another axis
        is padded."""
        pads = dict(zip(self.axes, self.pads))
        if any(pad != (0, 0) for ax, pad in pads.items() if ax < ndim - count):
            return None
        return tuple(pads.get(ax, (0, 0)) for ax in range(ndim - count, ndim))


def _extend_by_index(xp: ModuleType, a: Array, axes: Sequence[int], pads: Sequence[tuple[int, int]], pad_mode: str) -> Array:
    """``numpy.pad(a, ..., mode=pad_mode)`` for any backend, one axis at a time: the samples
    that ``numpy.pad`` puts at each position of an axis (:func:`extended_index`, on the host)
    are taken from `a`, as ``arrayconv.dask`` extends such axes. Not `xp.pad`: ``cupy.pad``
    differs from ``numpy.pad`` in 'wrap' and 'reflect' where a pad is longer than its axis
    (cupy/cupy#9123; seen on an H100 with CuPy 14.2).
    """
    for ax, (lo, hi) in zip(axes, pads):
        a = xp.take(a, xp.asarray(extended_index(a.shape[ax], (lo, hi), pad_mode)), axis=ax)
    return a


def extended_index(n: int, pad: tuple[int, int], pad_mode: str) -> np.ndarray:
    """The sample of an axis of `n` that each position of the axis extended by
    ``pad = (before, after)`` under `pad_mode` takes (:func:`source_index` of every
    position), so that taking them along the axis extends it as ``numpy.pad`` does.

    Examples
    --------
    >>> extended_index(3, (4, 2), "wrap")
    array([2, 0, 1, 2, 0, 1, 2, 0, 1])
    """
    lo, hi = pad
    return source_index(np.arange(-lo, n + hi), n, pad_mode)


def past_one_copy(n: int, pad: tuple[int, int], pad_mode: str) -> bool:
    """Whether `pad` reaches past one copy of an axis of `n` samples under `pad_mode` (``n``
    samples; ``n - 1`` for 'reflect', which skips the edge): a kernel larger than the
    image. A constant fill never does."""
    return pad_mode != "constant" and max(pad) > n - (pad_mode == "reflect")


def pad_widths(ndim: int, axes: Sequence[int], pads: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``numpy.pad``'s widths: `pads` on `axes`, none on the other axes of `ndim`."""
    widths = [(0, 0)] * ndim
    for ax, pad in zip(axes, pads):
        widths[ax] = pad
    return widths


Index = tuple[slice, ...]


def halo_copies(shape: tuple[int, ...], axes: tuple[int, ...], pads: tuple[tuple[int, int], ...], pad_mode: str) -> list[tuple[Index, Index | None]]:
    """:func:`extend`'s edge copies in order, ``(edge, source)`` in the extended array of
    an array of `shape` (source None: the fill value), for pads within one copy of their
    axis (not :func:`past_one_copy`)."""
    return _layout(shape, axes, pads, pad_mode)[2]


@functools.lru_cache(maxsize=256)
def _layout(shape: tuple[int, ...], axes: tuple[int, ...], pads: tuple[tuple[int, int], ...], pad_mode: str) -> tuple[tuple[int, ...], Index, list[tuple[Index, Index | None]]]:
    """:func:`extend`'s extended shape, where the input goes in it, and its edge copies in
    order: ``(edge, source)`` (source None: the fill value). Each axis's edges span the
    extended length of the axes before it, so corners come out as ``numpy.pad``'s."""
    extended, middle = list(shape), [slice(None)] * len(shape)
    for ax, (lo, hi) in zip(axes, pads):
        extended[ax] += lo + hi
        middle[ax] = slice(lo, lo + shape[ax])
    copies: list[tuple[Index, Index | None]] = []
    for ax, (lo, hi) in zip(axes, pads):
        lead, end = (slice(None),) * ax, lo + shape[ax]
        for edge, source in zip((slice(0, lo), slice(end, end + hi)), _sources(pad_mode, lo, end, hi)):
            if edge.stop > edge.start:
                copies.append(((*lead, edge), None if source is None else (*lead, source)))
    return tuple(extended), tuple(middle), copies


def _sources(pad_mode: str, lo: int, end: int, hi: int) -> tuple[slice | None, slice | None]:
    """Where the `lo` samples before and the `hi` after the middle ``[lo, end)`` of an
    extended axis copy from under `pad_mode`, within one copy of the middle (None: the
    fill value)."""
    if pad_mode == "wrap":
        return slice(end - lo, end), slice(lo, lo + hi)
    if pad_mode == "edge":
        return slice(lo, lo + 1), slice(end - 1, end)
    if pad_mode == "symmetric":
        return _down(2 * lo - 1, lo - 1), _down(end - 1, end - 1 - hi)
    if pad_mode == "reflect":
        return _down(2 * lo, lo), _down(end - 2, end - 2 - hi)
    return None, None


def _down(start: int, stop: int) -> slice:
    """Indices `start` down to `stop`, excluded (a `stop` of -1 takes index 0 in)."""
    return slice(start, stop if stop >= 0 else None, -1)


def source_index(index: np.ndarray, n: int, pad_mode: str) -> np.ndarray:
    """Where each index along an axis of `n` samples reads from under `pad_mode` (as
    ``numpy.pad`` extends it, however far past the edges); -1 for a constant fill."""
    if pad_mode == "constant":
        return np.where((index >= 0) & (index < n), index, -1)
    if pad_mode == "wrap":
        return index % n
    if pad_mode == "edge":
        return np.clip(index, 0, n - 1)
    if pad_mode == "symmetric":
        folded = index % (2 * n)
        return np.where(folded < n, folded, 2 * n - 1 - folded)
    if n == 1:  # 'reflect' of one sample
        return np.zeros_like(index)
    folded = index % (2 * n - 2)
    return np.where(folded < n, folded, 2 * n - 2 - folded)
