"""Boundary rules: extend an array past its edges before a valid correlation (halo padding).

Every method then runs unchanged on the extended array, so each boundary rule works on
every method and both backends.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

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
