"""`conv`: a multichannel filter bank with the semantics of a deep-learning conv layer."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from ._backend import Array, get_backend
from ._docstrings import fill
from ._methods import METHODS
from ._problem import (
    Problem,
    as_array,
    check_choice,
    check_conv_shapes,
    check_fits,
    int_tuple,
    result_dtype,
)
from ._shapes import same_padding
from ._solve import int_guard, solve, terms, to_result

Padding = int | Sequence[int] | Literal["same", "valid"]


@fill
def conv(
    x: Array,
    w: Array,
    bias: Array | None = None,
    *,
    stride: int | Sequence[int] = 1,
    padding: Padding = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    method: Literal["auto", "direct", "im2col", "fft"] = "auto",
) -> Array:
    """Apply a bank of filters to multichannel images: a conv layer without the framework.

    ``y[b, o, n] = bias[o] + sum_{{c, m}} x_pad[b, g*Cg + c, n*stride + m*dilation] * w[o, c, m]``
    where ``g = o // (O // groups)`` and ``Cg = C // groups``: cross-correlation (no
    flip, no conjugation), summed over the input channels of each group.

    Parameters
    ----------
    x : array_like, shape (B, C, *spatial)
        Batch of images with 1, 2 or 3 spatial dims.
    w : array_like, shape (O, C // groups, *kernel)
        Filter bank, same ndim as `x`.
    bias : array_like, shape (O,), optional
        Added to each output channel.
    stride : int or tuple of int, optional
        Step between output samples, per spatial axis (>= 1). Default 1.
    padding : int, tuple of int, 'same' or 'valid', optional
        Zeros added on both sides of each spatial axis (>= 0). 'valid' is 0; 'same'
        keeps the input size (stride 1 only; an odd total pad puts the extra zero after,
        as PyTorch). Default 0.
    dilation : int or tuple of int, optional
        Spacing between kernel taps (>= 1). Default 1.
    groups : int, optional
        Input and output channels are split into `groups` independent blocks. Default 1.
    {method}

    Returns
    -------
    ndarray, shape (B, O, *out)
        ``out[d] = (spatial[d] + 2 * padding[d] - dilation[d] * (kernel[d] - 1) - 1)
        // stride[d] + 1``, dtype ``np.result_type(x, w, bias)`` (float16 computed in
        float32; integers exact).

    Raises
    ------
    ValueError
        For shapes that do not fit together (ndim, channels, groups, bias), a kernel
        larger than the padded input, bad stride/padding/dilation, or an unknown method.
    TypeError
        For non-numeric dtypes, or NumPy mixed with CuPy.

    See Also
    --------
    correlate : Single-channel N-D correlation with SciPy semantics.

    Examples
    --------
    >>> import numpy as np
    >>> import arrayconv as ac
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((2, 3, 32, 32), dtype=np.float32)
    >>> w = rng.standard_normal((8, 3, 3, 3), dtype=np.float32)
    >>> ac.conv(x, w, padding=1).shape
    (2, 8, 32, 32)
    >>> ac.conv(x, w, stride=2, padding="valid").shape
    (2, 8, 15, 15)
    """
    backend = get_backend(x=x, w=w, bias=bias)
    x, w = as_array(x, "x", backend), as_array(w, "w", backend)
    bias = None if bias is None else as_array(bias, "bias", backend)
    check_choice("method", method, ("auto", *METHODS))
    check_conv_shapes(x, w, bias, groups)
    nd = x.ndim - 2
    kernel = tuple(w.shape[2:])
    stride = int_tuple("stride", stride, nd, 1)
    dilation = int_tuple("dilation", dilation, nd, 1)
    pad_lo, pad_hi = _padding(padding, kernel, stride, dilation)
    compute, result = result_dtype(*(a for a in (x, w, bias) if a is not None))
    problem = Problem(
        batch=x.shape[0],
        groups=groups,
        in_per_group=x.shape[1] // groups,
        out_per_group=w.shape[0] // groups,
        spatial=tuple(x.shape[2:]),
        kernel=kernel,
        pad_lo=pad_lo,
        pad_hi=pad_hi,
        stride=stride,
        dilation=dilation,
        dtype=compute,
    )
    check_fits(problem, x.shape, w.shape)
    y = solve(x, w, problem, backend, method, int_guard(x, w, terms(problem)))
    if bias is not None:
        y += bias.astype(y.dtype).reshape(-1, *(1,) * nd)
    return to_result(y, result, backend)


def _padding(
    padding: Padding, kernel: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(pad_lo, pad_hi)`` per spatial axis."""
    nd = len(kernel)
    if isinstance(padding, str):
        check_choice("padding", padding, ("same", "valid"))
        if padding == "valid":
            return (0,) * nd, (0,) * nd
        if math.prod(stride) != 1:
            msg = f"`padding='same'` needs stride 1 on every axis, got stride={stride}"
            raise ValueError(msg)
        pairs = [same_padding(k, d) for k, d in zip(kernel, dilation)]
        return tuple(lo for lo, _ in pairs), tuple(hi for _, hi in pairs)
    pads = int_tuple("padding", padding, nd, 0)
    return pads, pads
