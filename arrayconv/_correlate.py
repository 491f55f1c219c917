"""`correlate` and `convolve`: SciPy semantics, N-D, with batched axes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from ._backend import Array, get_backend
from ._docstrings import fill
from ._methods import METHODS
from ._problem import (
    Problem,
    as_array,
    check_broadcast,
    check_choice,
    check_same_ndim,
    check_valid_sizes,
    normalize_axes,
    result_dtype,
)
from ._shapes import mode_padding
from ._solve import int_guard, solve, terms, to_result

Mode = Literal["full", "valid", "same"]
MethodName = Literal["auto", "direct", "im2col", "fft"]
MODES = ("full", "valid", "same")


@fill
def correlate(
    in1: Array,
    in2: Array,
    mode: Mode = "full",
    method: MethodName = "auto",
    *,
    axes: int | Sequence[int] | None = None,
) -> Array:
    """Cross-correlate two N-D arrays, exactly as `scipy.signal.correlate`.

    ``z[k] = sum_l in1[l] * conj(in2[l - k + K - 1])`` along the correlated axes, with
    ``K`` the length of `in2`.

    Parameters
    ----------
    in1 : array_like
        First input, NumPy array (or array_like).
    in2 : array_like
        Second input, same ndim as `in1`; conjugated if complex.
    {mode}
    {method}
    {axes}

    Returns
    -------
    ndarray
        The correlation. Its dtype is ``np.result_type(in1, in2)``: float32 stays float32,
        float16 is computed in float32, integers are exact as in SciPy's direct method
        (or computed in float64 and rounded, for the FFT).

    Raises
    ------
    ValueError
        For an unknown `mode` or `method`, different ndims, empty inputs, axes that do not
        broadcast, or 'valid' when neither input is at least as large as the other.
    TypeError
        For non-numeric dtypes, masked arrays or matrices, or NumPy mixed with CuPy.

    See Also
    --------
    convolve : The same with `in2` flipped (and not conjugated).
    conv : Multichannel filter banks with stride, padding, dilation and groups.
    scipy.signal.correlate : The reference semantics.

    Notes
    -----
    Unlike SciPy, `axes` batches correlations (like `scipy.signal.fftconvolve`), and the
    FFT method keeps float32 data in single precision.

    Examples
    --------
    >>> import numpy as np
    >>> import arrayconv as ac
    >>> ac.correlate(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
    array([0.5, 2. , 3.5, 3. , 0. ])
    >>> ac.correlate(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]), mode="same")
    array([2. , 3.5, 3. ])
    """
    return _correlate(in1, in2, mode, method, axes, flip=False)


@fill
def convolve(
    in1: Array,
    in2: Array,
    mode: Mode = "full",
    method: MethodName = "auto",
    *,
    axes: int | Sequence[int] | None = None,
) -> Array:
    """Convolve two N-D arrays, exactly as `scipy.signal.convolve`.

    Parameters
    ----------
    in1 : array_like
        First input.
    in2 : array_like
        Second input, same ndim as `in1`.
    {mode}
    {method}
    {axes}

    Returns
    -------
    ndarray
        The convolution, with the dtype rules of :func:`correlate`.

    Raises
    ------
    ValueError
        As :func:`correlate`.
    TypeError
        As :func:`correlate`.

    See Also
    --------
    correlate : Cross-correlation.
    scipy.signal.convolve : The reference semantics.

    Examples
    --------
    >>> import numpy as np
    >>> import arrayconv as ac
    >>> ac.convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
    array([0. , 1. , 2.5, 4. , 1.5])
    """
    return _correlate(in1, in2, mode, method, axes, flip=True)


def _correlate(
    in1: Array,
    in2: Array,
    mode: str,
    method: str,
    axes: int | Sequence[int] | None,
    *,
    flip: bool,
) -> Array:
    backend = get_backend(in1=in1, in2=in2)
    in1, in2 = as_array(in1, "in1", backend), as_array(in2, "in2", backend)
    check_choice("mode", mode, MODES)
    check_choice("method", method, ("auto", *METHODS))
    check_same_ndim(in1, in2)
    if in1.ndim == 0:
        scalar = _correlate(in1.reshape(1), in2.reshape(1), mode, method, None, flip=flip)
        return scalar.reshape(())
    axes = normalize_axes(axes, in1.ndim)
    check_broadcast(in1, in2, axes)
    if mode == "valid":
        check_valid_sizes(
            tuple(in1.shape[a] for a in axes), tuple(in2.shape[a] for a in axes)
        )
    compute, result = result_dtype(in1, in2)
    x, w, problem, order, shape = _as_problem(in1, in2, mode, axes, compute)
    if flip:
        w = w[(..., *(slice(None, None, -1),) * len(axes))]
    elif w.dtype.kind == "c":
        w = w.conj()
    y = solve(x, w, problem, backend, method, int_guard(in1, in2, terms(problem)))
    y = y.reshape(*shape, *problem.out_spatial).transpose(np.argsort(order))
    return to_result(y, result, backend)


def _as_problem(
    in1: Array, in2: Array, mode: str, axes: tuple[int, ...], dtype: np.dtype
) -> tuple[Array, Array, Problem, list[int], list[int]]:
    """Map a batched correlation onto a grouped one.

    Each non-correlated axis is a batch axis (only `in1` longer than 1), a group axis
    (equal lengths: each slice of `in1` meets its own slice of `in2`) or an output-channel
    axis (only `in2` longer than 1). Returns ``x``, ``w``, the problem, the axis order of
    the result and the lengths of its leading (non-correlated) axes.
    """
    rest = [a for a in range(in1.ndim) if a not in axes]
    batch = [a for a in rest if in2.shape[a] == 1 < in1.shape[a]]
    outs = [a for a in rest if in1.shape[a] == 1 < in2.shape[a]]
    groups = [a for a in rest if a not in batch and a not in outs]
    order = [*batch, *groups, *outs, *axes]
    size = lambda arr, dims: int(np.prod([arr.shape[a] for a in dims], dtype=np.int64))  # noqa: E731
    n_batch, n_groups, n_outs = size(in1, batch), size(in1, groups), size(in2, outs)
    spatial = tuple(in1.shape[a] for a in axes)
    kernel = tuple(in2.shape[a] for a in axes)
    pads = [mode_padding(n, k, mode) for n, k in zip(spatial, kernel)]
    x = in1.transpose(order).reshape(n_batch, n_groups, *spatial)
    w = in2.transpose([*groups, *outs, *batch, *axes]).reshape(n_groups * n_outs, 1, *kernel)
    problem = Problem(
        batch=n_batch,
        groups=n_groups,
        in_per_group=1,
        out_per_group=n_outs,
        spatial=spatial,
        kernel=kernel,
        pad_lo=tuple(lo for lo, _ in pads),
        pad_hi=tuple(hi for _, hi in pads),
        stride=(1,) * len(axes),
        dilation=(1,) * len(axes),
        dtype=dtype,
    )
    shape = [max(in1.shape[a], in2.shape[a]) for a in (*batch, *groups, *outs)]
    return x, w, problem, order, shape
