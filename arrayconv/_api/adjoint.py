"""Adjoints: the transposes of `conv`, `correlate` and `convolve`, and their kernel gradients.

Each is built from the forward functions on rearranged arrays, so it runs on every method
and both backends. For a loss ``L`` with ``y_grad = dL/dy`` (real data), the ``*_transpose``
functions return ``dL/dx`` and the ``*_weight_grad`` functions ``dL/dw``. For complex
data they follow PyTorch's convention: the gradient of the real loss ``Re <y_grad, y>``,
so that ``Re vdot(y_grad, A(x)) == Re vdot(A^T(y_grad), x)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .._runtime.backend import Array, get_backend, on_arrays_device
from .._spec.problem import ArraySpec, as_array, input_spec, int_tuple, normalize_axes
from .._spec.shapes import mode_padding
from .._spec.window import scatter_strided, window
from .conv import Padding, conv, conv_padding, conv_spec
from .correlate import MethodName, Mode, convolve, correlate, correlate_spec
from .docstrings import fill

ConvMethod = Literal["auto", "direct", "im2col", "fft", "oa"]


@fill
@on_arrays_device
def conv_transpose(
    y: Array,
    w: Array,
    *,
    stride: int | Sequence[int] = 1,
    padding: Padding = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    output_padding: int | Sequence[int] = 0,
    method: ConvMethod = "auto",
) -> Array:
    """The adjoint of :func:`conv` with respect to its input (a "transposed convolution").

    ``conv_transpose(y, w, ...)`` is ``A^T y`` for the linear map ``A: x -> conv(x, w, ...)``
    (``A^H`` for complex `w`): the gradient of a loss with respect to `x` given its
    gradient `y` with respect to the output; PyTorch's ``conv_transpose`` without bias.

    Parameters
    ----------
    y : array_like, shape ``(B, O, *out)``
        Array in the output space of the forward :func:`conv`.
    w : array_like, shape ``(O, C // groups, *kernel)``
        The forward filter bank.
    stride, padding, dilation, groups
        Those of the forward :func:`conv`.
    output_padding : int or tuple of int, optional
        Extra samples at the end of each spatial axis of the result (each < stride): a
        strided forward conv maps up to `stride` input sizes onto one output size, and this
        picks which. Default 0, the smallest.
    {method}

    Returns
    -------
    ndarray, shape ``(B, C, *spatial)``
        ``spatial[d] = (out[d] - 1) * stride[d] - pad_lo[d] - pad_hi[d]
        + dilation[d] * (kernel[d] - 1) + 1 + output_padding[d]``.

    Raises
    ------
    ValueError
        If `y` and `w` do not fit together (ndim, channels), if `output_padding` is not
        below `stride`, or if the implied input is empty or smaller than the kernel.
    TypeError
        For non-numeric dtypes, or NumPy mixed with CuPy.

    See Also
    --------
    conv_weight_grad : The adjoint with respect to the filters.

    Notes
    -----
    With stride > 1 the work runs on `y` spread out with zeros (stride**ndim times its
    size): simple, exact, on every method.

    Examples
    --------
    >>> import numpy as np
    >>> import arrayconv as ac
    >>> rng = np.random.default_rng(0)
    >>> x, w = rng.standard_normal((2, 3, 9, 9)), rng.standard_normal((4, 3, 3, 3))
    >>> g = rng.standard_normal((2, 4, 4, 4))
    >>> lhs = np.vdot(g, ac.conv(x, w, stride=2))
    >>> rhs = np.vdot(ac.conv_transpose(g, w, stride=2), x)
    >>> bool(np.isclose(lhs, rhs))
    True
    """
    backend = get_backend(y=y, w=w)
    y, w = as_array(y, "y", backend), as_array(w, "w", backend)
    if not 3 <= y.ndim <= 5 or w.ndim != y.ndim:
        msg = f"`y` must be (B, O, *out) and `w` (O, C // groups, *kernel) with 1 to 3 spatial dims, got shapes {y.shape} and {w.shape}"
        raise ValueError(msg)
    if y.shape[1] != w.shape[0]:
        msg = f"`y` has {y.shape[1]} channels but `w` has {w.shape[0]} filters (y.shape={y.shape}, w.shape={w.shape})"
        raise ValueError(msg)
    nd, kernel = y.ndim - 2, tuple(w.shape[2:])
    strides = int_tuple("stride", stride, nd, 1)
    dilations = int_tuple("dilation", dilation, nd, 1)
    extra = int_tuple("output_padding", output_padding, nd, 0)
    if any(e >= s for e, s in zip(extra, strides)):
        msg = f"`output_padding` must be below `stride` on every axis, got output_padding={extra} and stride={strides}"
        raise ValueError(msg)
    pad_lo, pad_hi = conv_padding(padding, kernel, strides, dilations)
    spatial = tuple(
        (n - 1) * s - lo - hi + d * (k - 1) + 1 + e
        for n, s, lo, hi, d, k, e in zip(y.shape[2:], strides, pad_lo, pad_hi, dilations, kernel, extra)
    )
    if min(spatial) < 1:
        msg = f"`y` of shape {y.shape} with padding {padding!r} implies an empty input of spatial shape {spatial}"
        raise ValueError(msg)
    options: dict[str, Any] = dict(stride=strides, padding=padding, dilation=dilations, groups=groups)
    x_spec = ArraySpec((y.shape[0], w.shape[1] * groups, *spatial), y.dtype)
    spec = conv_spec(x_spec, w, None, backend, method, x_bound=0, **options)
    if spec.problem.out_spatial != tuple(y.shape[2:]):  # pragma: no cover - follows from the sizes above
        msg = f"`y` of shape {y.shape} is not an output of conv with these options"
        raise ValueError(msg)
    out_per_group, in_per_group = w.shape[0] // groups, w.shape[1]
    flipped = w[(..., *(slice(None, None, -1),) * nd)]
    w_t = flipped.reshape(groups, out_per_group, in_per_group, *kernel).swapaxes(1, 2)
    w_t = w_t.reshape(groups * in_per_group, out_per_group, *kernel)
    if w_t.dtype.kind == "c":
        w_t = w_t.conj()
    reach = [d * (k - 1) for d, k in zip(dilations, kernel)]
    spread = scatter_strided(
        backend.xp,
        y,
        range(2, y.ndim),
        [n + r for n, r in zip(spatial, reach)],
        [r - lo for r, lo in zip(reach, pad_lo)],
        strides,
    )
    return conv(spread, w_t, dilation=dilations, groups=groups, method=method)


@fill
@on_arrays_device
def conv_weight_grad(
    x: Array,
    y: Array,
    w_shape: Sequence[int],
    *,
    stride: int | Sequence[int] = 1,
    padding: Padding = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    method: ConvMethod = "auto",
) -> Array:
    """The adjoint of :func:`conv` with respect to its filters: the weight gradient.

    For ``B: w -> conv(x, w, ...)``, returns ``B^T y``: the gradient of a loss with respect
    to `w` given its gradient `y` with respect to the output (summed over the batch).

    Parameters
    ----------
    x : array_like, shape ``(B, C, *spatial)``
        The forward input.
    y : array_like, shape ``(B, O, *out)``
        Array in the output space of the forward :func:`conv`.
    w_shape : tuple of int
        Shape ``(O, C // groups, *kernel)`` of the forward filters.
    stride, padding, dilation, groups
        Those of the forward :func:`conv`.
    {method}

    Returns
    -------
    ndarray, shape `w_shape`
        ``sum_{{b, n}} y[b, o, n] * conj(x_pad[b, g*Cg + c, n*stride + m*dilation])``.

    Raises
    ------
    ValueError
        If the shapes do not fit the forward conv, or `y` is not its output shape.
    TypeError
        For non-numeric dtypes, or NumPy mixed with CuPy.

    See Also
    --------
    conv_transpose : The adjoint with respect to the input.

    Examples
    --------
    >>> import numpy as np
    >>> import arrayconv as ac
    >>> rng = np.random.default_rng(0)
    >>> x, w = rng.standard_normal((2, 3, 9, 9)), rng.standard_normal((4, 3, 3, 3))
    >>> g = rng.standard_normal((2, 4, 9, 9))
    >>> lhs = np.vdot(g, ac.conv(x, w, padding=1))
    >>> rhs = np.vdot(ac.conv_weight_grad(x, g, w.shape, padding=1), w)
    >>> bool(np.isclose(lhs, rhs))
    True
    """
    backend = get_backend(x=x, y=y)
    x, y = as_array(x, "x", backend), as_array(y, "y", backend)
    options: dict[str, Any] = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    w_spec = input_spec("w_shape", w_shape, y.dtype)
    spec = conv_spec(ArraySpec(tuple(x.shape), x.dtype), w_spec, None, backend, method, x_bound=0, **options)
    problem = spec.problem
    if tuple(y.shape) != problem.y_shape:
        msg = f"`y` must have the forward output shape {problem.y_shape}, got {tuple(y.shape)}"
        raise ValueError(msg)
    nd, batch, out = x.ndim - 2, x.shape[0], problem.out_spatial
    reach = [(n - 1) * s + d * (k - 1) + 1 for n, s, d, k in zip(out, problem.stride, problem.dilation, problem.kernel)]
    padded = window(backend.xp, x, range(2, x.ndim), [-lo for lo in problem.pad_lo], reach)
    spatial = tuple(range(3, 3 + nd))
    # channels of a group become the batch, the batch becomes the channels, and y the filters
    x_t = padded.reshape(batch, groups, problem.in_per_group, *reach).transpose(2, 1, 0, *spatial)
    x_t = x_t.reshape(problem.in_per_group, groups * batch, *reach)
    y_t = y.reshape(batch, groups * problem.out_per_group, *out).swapaxes(0, 1)
    complex_ = y_t.dtype.kind == "c" or x_t.dtype.kind == "c"
    if complex_:
        y_t = y_t.conj()
    grad = conv(x_t, y_t, stride=problem.dilation, dilation=problem.stride, groups=groups, method=method)
    grad = grad.swapaxes(0, 1)
    return _contiguous(backend.xp, grad.conj() if complex_ else grad)


@fill
@on_arrays_device
def correlate_transpose(
    y: Array,
    in2: Array,
    in1_shape: Sequence[int],
    mode: Mode = "full",
    method: MethodName = "auto",
    *,
    axes: int | Sequence[int] | None = None,
) -> Array:
    """The adjoint of :func:`correlate` with respect to `in1`.

    For ``A: in1 -> correlate(in1, in2, mode, axes=axes)``, returns ``A^H y`` of shape
    `in1_shape` (summed over the axes where `in1` was broadcast).

    Parameters
    ----------
    y : array_like
        Array of the forward result's shape.
    in2 : array_like
        The forward kernel.
    in1_shape : tuple of int
        Shape of the forward `in1`.
    {mode}
    {method}
    {axes}

    Returns
    -------
    ndarray, shape `in1_shape`
        The convolution of `y` with `in2`, windowed onto `in1`'s samples.

    Raises
    ------
    ValueError, TypeError
        As :func:`correlate`, and if `y` is not the forward result's shape.

    See Also
    --------
    correlate_weight_grad : The adjoint with respect to `in2`.
    convolve_transpose : The same for :func:`convolve`.

    Examples
    --------
    >>> import numpy as np
    >>> import arrayconv as ac
    >>> rng = np.random.default_rng(0)
    >>> x, k, g = rng.standard_normal(50), rng.standard_normal(7), rng.standard_normal(50)
    >>> lhs = np.vdot(g, ac.correlate(x, k, "same"))
    >>> bool(np.isclose(lhs, np.vdot(ac.correlate_transpose(g, k, x.shape, "same"), x)))
    True
    """
    return _transpose(y, in2, in1_shape, mode, method, axes, flip=False)


@fill
@on_arrays_device
def convolve_transpose(
    y: Array,
    in2: Array,
    in1_shape: Sequence[int],
    mode: Mode = "full",
    method: MethodName = "auto",
    *,
    axes: int | Sequence[int] | None = None,
) -> Array:
    """The adjoint of :func:`convolve` with respect to `in1`.

    Parameters and results are those of :func:`correlate_transpose`, for
    ``A: in1 -> convolve(in1, in2, mode, axes=axes)``.

    Returns
    -------
    ndarray, shape `in1_shape`
        ``A^H y``.
    """
    return _transpose(y, in2, in1_shape, mode, method, axes, flip=True)


@fill
@on_arrays_device
def correlate_weight_grad(
    in1: Array,
    y: Array,
    in2_shape: Sequence[int],
    mode: Mode = "full",
    method: MethodName = "auto",
    *,
    axes: int | Sequence[int] | None = None,
) -> Array:
    """The gradient of :func:`correlate` with respect to `in2`.

    For a loss with gradient `y` with respect to ``correlate(in1, in2, mode, axes=axes)``,
    returns its gradient with respect to `in2` (summed over the axes where `in2` was
    broadcast). For complex data, ``vdot(correlate(in1, in2), y) == vdot(G, in2)``
    (correlate conjugates `in2`).

    Parameters
    ----------
    in1 : array_like
        The forward first input.
    y : array_like
        Array of the forward result's shape.
    in2_shape : tuple of int
        Shape of the forward `in2`.
    {mode}
    {method}
    {axes}

    Returns
    -------
    ndarray, shape `in2_shape`
        The correlation of `in1` with `y`, windowed onto `in2`'s samples.

    Raises
    ------
    ValueError, TypeError
        As :func:`correlate`, and if `y` is not the forward result's shape.

    Examples
    --------
    >>> import numpy as np
    >>> import arrayconv as ac
    >>> rng = np.random.default_rng(0)
    >>> x, k, g = rng.standard_normal(50), rng.standard_normal(7), rng.standard_normal(44)
    >>> lhs = np.vdot(g, ac.correlate(x, k, "valid"))
    >>> bool(np.isclose(lhs, np.vdot(ac.correlate_weight_grad(x, g, k.shape, "valid"), k)))
    True
    """
    return _weight_grad(in1, y, in2_shape, mode, method, axes, flip=False)


@fill
@on_arrays_device
def convolve_weight_grad(
    in1: Array,
    y: Array,
    in2_shape: Sequence[int],
    mode: Mode = "full",
    method: MethodName = "auto",
    *,
    axes: int | Sequence[int] | None = None,
) -> Array:
    """The adjoint of :func:`convolve` with respect to `in2`.

    Parameters and results are those of :func:`correlate_weight_grad`, for
    ``B: in2 -> convolve(in1, in2, mode, axes=axes)``: returns ``B^H y``.

    Returns
    -------
    ndarray, shape `in2_shape`
        ``B^H y``.
    """
    return _weight_grad(in1, y, in2_shape, mode, method, axes, flip=True)


def _check_forward(in1: ArraySpec, in2: Array, y: Array, mode: str, method: str, axes: object, backend) -> None:
    """Check the forward correlation and that `y` has its result's shape."""
    spec, _ = correlate_spec(in1, in2, backend, mode, method, axes, flip=False, x_bound=0, kernel_values=False)  # type: ignore[arg-type]
    if tuple(y.shape) != spec.y.shape:
        msg = f"`y` must have the forward result's shape {spec.y.shape}, got {tuple(y.shape)}"
        raise ValueError(msg)


def _reversed(a: Array, axes: tuple[int, ...]) -> Array:
    """`a` flipped along `axes` and conjugated: the kernel that turns convolve into correlate."""
    flipped = a[tuple(slice(None, None, -1) if ax in axes else slice(None) for ax in range(a.ndim))]
    return flipped.conj() if flipped.dtype.kind == "c" else flipped


def _contiguous(xp, a: Array) -> Array:
    """`a` in C order (0-d stays 0-d)."""
    return xp.ascontiguousarray(a).reshape(a.shape)


def _unbroadcast(xp, a: Array, shape: tuple[int, ...]) -> Array:
    """Sum `a` over the axes where `shape` is 1 and `a` is longer."""
    summed = tuple(ax for ax, n in enumerate(shape) if n == 1 < a.shape[ax])
    return xp.sum(a, axis=summed, keepdims=True) if summed else a


def _transpose(y, in2, in1_shape, mode, method, axes, *, flip):
    backend = get_backend(y=y, in2=in2)
    y, in2 = as_array(y, "y", backend), as_array(in2, "in2", backend)
    in1 = input_spec("in1_shape", in1_shape, y.dtype)
    axes = normalize_axes(axes, len(in1.shape)) if in1.shape else ()
    kernel = _reversed(in2, axes) if flip else in2
    _check_forward(in1, kernel, y, mode, method, axes or None, backend)
    if not in1.shape:
        return convolve(y, kernel, method=method)
    full = convolve(y, kernel, "full", method, axes=axes)
    starts = [mode_padding(in1.shape[ax], in2.shape[ax], mode)[0] for ax in axes]
    grad = window(backend.xp, full, axes, starts, [in1.shape[ax] for ax in axes])
    return _contiguous(backend.xp, _unbroadcast(backend.xp, grad, in1.shape))


def _weight_grad(in1, y, in2_shape, mode, method, axes, *, flip):
    backend = get_backend(in1=in1, y=y)
    in1, y = as_array(in1, "in1", backend), as_array(y, "y", backend)
    in2 = input_spec("in2_shape", in2_shape, y.dtype)
    x = ArraySpec(tuple(in1.shape), in1.dtype)
    axes = normalize_axes(axes, in1.ndim) if in1.ndim else ()
    _check_forward(x, backend.xp.zeros(in2.shape, y.dtype), y, mode, method, axes or None, backend)
    if not in1.ndim:
        grad = correlate(in1, y, method=method)
    else:
        full = correlate(in1, y, "full", method, axes=axes)
        starts = [y.shape[ax] - 1 - mode_padding(in1.shape[ax], in2.shape[ax], mode)[0] for ax in axes]
        grad = window(backend.xp, full, axes, starts, [in2.shape[ax] for ax in axes])
        grad = _unbroadcast(backend.xp, grad, in2.shape)
    return _contiguous(backend.xp, _reversed(grad, axes) if flip else grad)
