"""Pure integer shape math: output sizes, SciPy's mode windows, padding."""

from __future__ import annotations

from collections.abc import Sequence

Shape = tuple[int, ...]


def conv_output_shape(
    spatial: Sequence[int],
    kernel: Sequence[int],
    pad_lo: Sequence[int],
    pad_hi: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
) -> Shape:
    """Spatial output shape of a padded, strided, dilated valid correlation."""
    return tuple(
        (n + lo + hi - d * (k - 1) - 1) // s + 1
        for n, k, lo, hi, s, d in zip(spatial, kernel, pad_lo, pad_hi, stride, dilation)
    )


def mode_window(n: int, k: int, mode: str) -> tuple[int, int]:
    """``(start, length)`` of SciPy's `mode` output inside the full correlation of one axis.

    The full correlation of lengths `n` and `k` has ``n + k - 1`` samples. 'same' keeps
    `n` of them starting at ``(k - 1) // 2`` (as ``scipy.signal.correlate`` and
    ``convolve``); 'valid' keeps the ``|n - k| + 1`` samples that need no zero padding.
    """
    if mode == "full":
        return 0, n + k - 1
    if mode == "same":
        return (k - 1) // 2, n
    return min(n, k) - 1, abs(n - k) + 1


def mode_padding(n: int, k: int, mode: str) -> tuple[int, int]:
    """Zero padding ``(lo, hi)`` of the input that turns `mode` into a valid correlation."""
    start, length = mode_window(n, k, mode)
    return k - 1 - start, length - n + start


def same_padding(k: int, dilation: int) -> tuple[int, int]:
    """Padding ``(lo, hi)`` of a conv layer's ``padding='same'``: the odd sample goes high."""
    total = dilation * (k - 1)
    return total // 2, total - total // 2
