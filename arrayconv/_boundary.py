"""Boundary rules: extend an array past its edges before a valid correlation (halo padding).

Every method then runs unchanged on the extended array, so each boundary rule works on
every method and both backends.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from ._backend import Array

# correlate/convolve's `boundary` -> numpy.pad mode, as scipy.signal.correlate2d and
# scipy.ndimage: 'symm' and 'reflect' repeat the edge sample (d c b a | a b c d),
# 'mirror' does not (d c b | a b c d), 'nearest' repeats the edge, 'wrap' is periodic.
BOUNDARIES = {
    "fill": "constant",
    "wrap": "wrap",
    "symm": "symmetric",
    "reflect": "symmetric",
    "mirror": "reflect",
    "nearest": "edge",
}

# conv's `padding_mode` -> numpy.pad mode, as PyTorch's conv layers.
PADDING_MODES = {"zeros": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def fill_number(fillvalue: object) -> complex:
    """`fillvalue` as a Python number (int, float or complex); TypeError for anything else
    (None, a string, an array of several values), which NumPy would take as NaN or fail
    on with a message that does not name it."""
    if type(fillvalue) in (int, float, complex):
        return fillvalue  # type: ignore[return-value]
    value = np.asarray(fillvalue) if np.ndim(fillvalue) == 0 else None
    if value is None or value.dtype.kind not in "biufc":
        msg = f"`fillvalue` must be a number (int, float or complex), got {fillvalue!r}"
        raise TypeError(msg)
    return value.item()  # type: ignore[no-any-return]


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
) -> Array:
    """`a` extended by ``pads[i] = (before, after)`` samples along ``axes[i]`` by `pad_mode`.

    Examples
    --------
    >>> import numpy as np
    >>> extend(np, np.array([1, 2, 3]), [0], [(2, 1)], "symmetric")
    array([2, 1, 1, 2, 3, 3])
    """
    widths = [(0, 0)] * a.ndim
    for ax, pad in zip(axes, pads):
        widths[ax] = pad
    if pad_mode == "constant":
        return xp.pad(a, widths, mode="constant", constant_values=fillvalue)
    return xp.pad(a, widths, mode=pad_mode)


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
