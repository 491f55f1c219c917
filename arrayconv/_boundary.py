"""Boundary rules: extend an array past its edges before a valid correlation (halo padding).

Every method then runs unchanged on the extended array, so each boundary rule works on
every method and both backends.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

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
