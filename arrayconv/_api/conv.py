"""`conv`: a multichannel filter bank with the semantics of a deep-learning conv layer."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._choose.choice import Calls
from .._methods import METHODS
from .._plan import kept as _kept
from .._plan.plan import Plan, Spec, abs_bound, int_guard, terms
from .._runtime.backend import Array, Backend, get_backend, on_arrays_device
from .._runtime.cache import LRUCache
from .._spec.boundary import EDGE_RULES, EdgeRule, Extension, edge_rule
from .._spec.nan import IGNORE, NAN_POLICIES, NanPolicy, NanRule, check_kernel, check_result
from .._spec.problem import (
    ArraySpec,
    Problem,
    as_array,
    check_choice,
    check_conv_shapes,
    check_fits,
    check_no_overlap,
    input_spec,
    int_tuple,
    interned,
    result_dtype,
)
from .._spec.shapes import same_padding
from .docstrings import fill

Padding = int | Sequence[int] | Literal["same", "valid"]


@fill
@on_arrays_device
def conv(
    x: Array,
    w: Array,
    bias: Array | None = None,
    *,
    stride: int | Sequence[int] = 1,
    padding: Padding = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    padding_mode: EdgeRule = "constant",
    nan: NanPolicy = "propagate",
    method: Literal["auto", "direct", "im2col", "fft", "oa"] = "auto",
    measure: bool | Literal["disk"] = False,
    out: Array | None = None,
) -> Array:
    """Apply a bank of filters to multichannel images: a conv layer without the framework.

    ``y[b, o, n] = bias[o] + sum_{{c, m}} x_pad[b, g*Cg + c, n*stride + m*dilation] * w[o, c, m]``
    where ``g = o // (O // groups)`` and ``Cg = C // groups``: cross-correlation (no
    flip, no conjugation), summed over the input channels of each group.

    Parameters
    ----------
    x : array_like, shape ``(B, C, *spatial)``
        Batch of images with 1, 2 or 3 spatial dims.
    w : array_like, shape ``(O, C // groups, *kernel)``
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
    padding_mode : {{'constant', 'wrap', 'symmetric', 'mirror', 'edge'}}, optional
        What the padding holds: zeros ('constant', default), the input wrapped around,
        mirrored with or without repeating the edge sample, or the edge sample; the edge
        rules of :func:`correlate`'s `boundary`. torch's names are aliases ('zeros',
        'circular', 'replicate'); torch's 'reflect' is 'mirror' here (the name is refused:
        scipy.ndimage's 'reflect' is 'symmetric').
    nan : {{'propagate', 'raise', 'fill', 'normalize', 'ignore'}}, optional
        As :func:`correlate`; 'fill' takes NaNs as 0, and with 'normalize' the bias is
        added after the normalization.
    {method}
    {measure}
    {out}

    Returns
    -------
    ndarray, shape ``(B, O, *out)``
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
    options: dict[str, Any] = dict(stride=stride, padding=padding, dilation=dilation, groups=groups, padding_mode=padding_mode, nan=nan)
    backend = get_backend(x=x, w=w, bias=bias)
    x, w = as_array(x, "x", backend), as_array(w, "w", backend)
    bias = None if bias is None else as_array(bias, "bias", backend)
    check_no_overlap(out, backend, w=w, bias=bias)

    def make(kernel: Array, kernel_bias: Array | None, *, calls: Calls) -> Plan:
        spec = conv_spec(ArraySpec(tuple(x.shape), x.dtype), kernel, kernel_bias, backend, method, x_bound=abs_bound(x, x.dtype), **options)
        return Plan(spec, kernel, method, measure=measure, sample=x, calls=calls, retry_smaller=True)

    plan = _kept.plain_plan("conv", x, (w, bias), (*options.values(), method), measure, make)
    return plan(x, out)


@fill
@on_arrays_device
def plan_conv(
    w: Array,
    x_shape: Sequence[int],
    dtype: object = None,
    bias: Array | None = None,
    *,
    stride: int | Sequence[int] = 1,
    padding: Padding = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    padding_mode: EdgeRule = "constant",
    nan: NanPolicy = "propagate",
    method: Literal["auto", "direct", "im2col", "fft", "oa"] = "auto",
    memory_limit: int | None = None,
    measure: bool | Literal["disk"] = False,
) -> Plan:
    """Plan :func:`conv` of many inputs of one shape with the same filter bank.

    Parameters
    ----------
    w : array_like, shape ``(O, C // groups, *kernel)``
        Filter bank; its backend is the plan's.
    x_shape : tuple of int
        Shape ``(B, C, *spatial)`` of every input the plan will take.
    dtype : dtype, optional
        Dtype of every input. Default: the dtype of `w`.
    bias : array_like, shape (O,), optional
        Added to each output channel.
    stride, padding, dilation, groups, padding_mode, nan
        As :func:`conv`.
    {method}
    {memory_limit}
    {measure}

    Returns
    -------
    Plan
        Call it as ``plan(x, out=None)``; it refuses another shape, dtype or backend.

    Examples
    --------
    >>> import numpy as np
    >>> import arrayconv as ac
    >>> rng = np.random.default_rng(0)
    >>> w = rng.standard_normal((8, 3, 5, 5), dtype=np.float32)
    >>> plan = ac.plan_conv(w, (4, 3, 64, 64), padding="same")
    >>> plan.y_shape
    (4, 8, 64, 64)
    >>> x = rng.standard_normal((4, 3, 64, 64), dtype=np.float32)
    >>> np.allclose(plan(x), ac.conv(x, w, padding="same"), atol=1e-4)
    True
    """
    backend = get_backend(w=w, bias=bias)
    w = as_array(w, "w", backend)
    bias = None if bias is None else as_array(bias, "bias", backend)
    x = input_spec("x_shape", x_shape, w.dtype if dtype is None else dtype)
    options: dict[str, Any] = dict(stride=stride, padding=padding, dilation=dilation, groups=groups, padding_mode=padding_mode, nan=nan)
    spec = conv_spec(x, w, bias, backend, method, x_bound=abs_bound(None, x.dtype), **options)
    return Plan(spec, w, method, memory_limit=memory_limit, measure=measure)


def conv_spec(
    x: ArraySpec,
    w: Array,
    bias: Array | None,
    backend: Backend,
    method: str,
    *,
    stride: int | Sequence[int],
    padding: Padding,
    dilation: int | Sequence[int],
    groups: int,
    x_bound: int,
    padding_mode: str = "constant",
    nan: str = "ignore",
) -> Spec:
    """Check a conv layer of an input like `x` with `w` and `bias`, and map it onto a Problem.

    'wrap' makes a circular problem (periodic padding, native to the FFT). With another
    `padding_mode` than zeros (or nan='normalize', which counts the padding as data), the
    input is extended by the mode and the problem has no padding. What the shapes decide is
    cached (:func:`_shaped`); the bias, the integer guard and the weights of
    nan='normalize' read each call's arrays.
    """
    check_kernel(nan, w, "w", backend)
    padding_mode = edge_rule(padding_mode, "padding_mode")
    bias_spec = None if bias is None else ArraySpec(tuple(bias.shape), bias.dtype)
    key = (x, tuple(w.shape), w.dtype, bias_spec, backend, method, stride, padding, dilation, groups, padding_mode, nan)
    shaped = _shaped_specs.get_or_make(key, lambda: _shaped(*key))
    problem, nd = shaped.problem, len(shaped.problem.spatial)
    shift = None if bias is None else bias.reshape(-1, *(1,) * nd)

    def add_bias(y: Array) -> Array:
        if shift is not None:
            y += shift.astype(y.dtype, copy=False)
        return y

    late = nan == "normalize" and shift is not None  # normalized first, then shifted
    rule = shaped.nan
    if nan == "normalize":  # weighs by the kernel itself
        rule = NanRule(nan, "x", reach=rule.reach, weigh=lambda: shaped.mask_plan(w, x.dtype))
    return Spec(
        problem=problem,
        backend=backend,
        x=x,
        y=ArraySpec(problem.y_shape, shaped.result),
        to_problem=lambda a: a,
        from_problem=(lambda y: y) if late else add_bias,
        excluded=int_guard(np.result_type(x.dtype, w.dtype), x_bound, abs_bound(w, w.dtype), terms(problem)),
        same_layout=True,
        extend=shaped.extend,
        nan=rule,
        finish=add_bias if late else None,
    )


@dataclass(frozen=True, slots=True)
class _Shaped:
    """What the shapes of a conv layer decide: the problem, the result's dtype, how the
    input is extended, the NaN rule (less the weights of nan='normalize'), and how to make
    a plan of the same layer on masks."""

    problem: Problem
    result: np.dtype[Any]
    extend: Callable[[Array], Array] | None
    nan: NanRule
    mask_plan: Callable[[Array, np.dtype[Any]], Plan]


_shaped_specs = LRUCache("conv_specs", maxsize=256)


def _shaped(
    x: ArraySpec,
    w_shape: tuple[int, ...],
    w_dtype: np.dtype[Any],
    bias: ArraySpec | None,
    backend: Backend,
    method: str,
    stride: int | Sequence[int],
    padding: Padding,
    dilation: int | Sequence[int],
    groups: int,
    padding_mode: str,
    nan: str,
) -> _Shaped:
    """:func:`conv_spec`'s checks and layout, for a kernel of `w_shape` and `w_dtype`."""
    check_choice("method", method, ("auto", *METHODS))
    check_choice("nan", nan, NAN_POLICIES)
    w = ArraySpec(w_shape, w_dtype)
    check_conv_shapes(x, w, bias, groups)
    nd = x.ndim - 2
    kernel = tuple(w.shape[2:])
    stride = int_tuple("stride", stride, nd, 1)
    dilation = int_tuple("dilation", dilation, nd, 1)
    pad_lo, pad_hi = conv_padding(padding, kernel, stride, dilation)
    given, extension = x, None
    circular = padding_mode == "wrap"
    if not circular and (padding_mode != "constant" or nan == "normalize"):
        pads = tuple(zip(pad_lo, pad_hi))
        x = ArraySpec((*x.shape[:2], *(n + lo + hi for n, (lo, hi) in zip(x.shape[2:], pads))), x.dtype)
        extension = Extension(backend.xp, tuple(range(2, 2 + nd)), pads, EDGE_RULES[padding_mode])
        pad_lo = pad_hi = (0,) * nd
    compute, result = result_dtype(*(a for a in (given, w, bias) if a is not None))
    check_result(nan, result)
    problem = interned(Problem(
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
        circular=circular,
    ))
    check_fits(problem, given.shape, w.shape)

    def mask_plan(kernel_: Array, dtype: np.dtype[Any]) -> Plan:
        options: dict[str, Any] = dict(stride=stride, padding=padding if extension is None else 0, dilation=dilation, groups=groups, padding_mode="wrap" if circular else "constant")
        return Plan(conv_spec(ArraySpec(x.shape, dtype), kernel_, None, backend, "auto", x_bound=1, **options), kernel_, "auto")

    rule = IGNORE if nan == "ignore" else NanRule(nan, "x", reach=lambda: mask_plan(backend.xp.ones(w.shape, np.float32), np.dtype(np.float32)))
    return _Shaped(problem, result, extension, rule, mask_plan)


def conv_padding(
    padding: Padding, kernel: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(pad_lo, pad_hi)`` per spatial axis of a conv layer's `padding` argument."""
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
