"""`correlate` and `convolve`: SciPy semantics, N-D, with batched axes."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from .._choose.choice import Calls
from .._methods import METHODS, rank_one
from .._plan import kept as _kept
from .._plan.plan import Plan, Spec, abs_bound, int_guard, terms
from .._runtime.backend import Array, Backend, get_backend, on_arrays_device
from .._runtime.cache import LRUCache
from .._spec.boundary import EDGE_RULES, EdgeRule, Extension, edge_rule, fill_dtype, fill_number
from .._spec.nan import IGNORE, NAN_POLICIES, NanPolicy, NanRule, check_kernel, check_result
from .._spec.problem import (
    ArraySpec,
    Problem,
    as_array,
    check_broadcast,
    check_choice,
    check_no_overlap,
    check_same_ndim,
    check_valid_sizes,
    input_spec,
    interned,
    normalize_axes,
    result_dtype,
)
from .._spec.shapes import Shape, mode_padding
from .docstrings import fill

Mode = Literal["full", "valid", "same"]
MethodName = Literal["auto", "direct", "im2col", "fft", "oa"]
MODES = ("full", "valid", "same")


@fill
@on_arrays_device
def correlate(
    in1: Array,
    in2: Array,
    mode: Mode = "full",
    method: MethodName = "auto",
    *,
    axes: int | Sequence[int] | None = None,
    boundary: EdgeRule = "constant",
    fillvalue: complex = 0,
    nan: NanPolicy = "propagate",
    measure: bool | Literal["disk"] = False,
    out: Array | None = None,
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
    {boundary}
    {nan}
    {measure}
    {out}

    Returns
    -------
    ndarray
        The correlation (`out` when given). Its dtype is ``np.result_type(in1, in2)``: float32 stays float32,
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
    return _correlate(in1, in2, mode, method, axes, boundary, fillvalue, nan, measure, out, flip=False)


@fill
@on_arrays_device
def convolve(
    in1: Array,
    in2: Array,
    mode: Mode = "full",
    method: MethodName = "auto",
    *,
    axes: int | Sequence[int] | None = None,
    boundary: EdgeRule = "constant",
    fillvalue: complex = 0,
    nan: NanPolicy = "propagate",
    measure: bool | Literal["disk"] = False,
    out: Array | None = None,
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
    {boundary}
    {nan}
    {measure}
    {out}

    Returns
    -------
    ndarray
        The convolution (`out` when given), with the dtype rules of :func:`correlate`.

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
    return _correlate(in1, in2, mode, method, axes, boundary, fillvalue, nan, measure, out, flip=True)


@fill
@on_arrays_device
def plan_correlate(
    in2: Array,
    in1_shape: Sequence[int],
    mode: Mode = "full",
    method: MethodName = "auto",
    *,
    axes: int | Sequence[int] | None = None,
    boundary: EdgeRule = "constant",
    fillvalue: complex = 0,
    nan: NanPolicy = "propagate",
    dtype: object = None,
    memory_limit: int | None = None,
    measure: bool | Literal["disk"] = False,
) -> Plan:
    """Plan :func:`correlate` of many inputs of one shape with the same `in2`.

    The plan owns the chosen method and `in2` in that method's form (for FFT, its
    spectrum), so each call does only the work that depends on the input: the
    "same PSF, many frames" workflow.

    Parameters
    ----------
    in2 : array_like
        The kernel (second input of :func:`correlate`); its backend is the plan's.
    in1_shape : tuple of int
        Shape of every input the plan will take.
    {mode}
    {method}
    {axes}
    {boundary}
    {nan}
    dtype : dtype, optional
        Dtype of every input the plan will take. Default: the dtype of `in2`.
    {memory_limit}
    {measure}

    Returns
    -------
    Plan
        Call it as ``plan(in1, out=None)``; it refuses another shape, dtype or backend.

    Examples
    --------
    >>> import numpy as np
    >>> import arrayconv as ac
    >>> rng = np.random.default_rng(0)
    >>> psf = rng.random((15, 15), dtype=np.float32)
    >>> plan = ac.plan_correlate(psf, (256, 256), mode="same")
    >>> frames = rng.random((3, 256, 256), dtype=np.float32)
    >>> out = np.empty((256, 256), dtype=np.float32)
    >>> for frame in frames:
    ...     _ = plan(frame, out=out)
    >>> np.allclose(out, ac.correlate(frames[-1], psf, "same"), atol=1e-4)
    True
    """
    return _plan(in2, in1_shape, mode, method, axes, Edges(boundary, fillvalue, nan), dtype, memory_limit, measure, flip=False)


@fill
@on_arrays_device
def plan_convolve(
    in2: Array,
    in1_shape: Sequence[int],
    mode: Mode = "full",
    method: MethodName = "auto",
    *,
    axes: int | Sequence[int] | None = None,
    boundary: EdgeRule = "constant",
    fillvalue: complex = 0,
    nan: NanPolicy = "propagate",
    dtype: object = None,
    memory_limit: int | None = None,
    measure: bool | Literal["disk"] = False,
) -> Plan:
    """Plan :func:`convolve` of many inputs of one shape with the same `in2`.

    Parameters are those of :func:`plan_correlate`.

    Returns
    -------
    Plan
        Call it as ``plan(in1, out=None)``.
    """
    return _plan(in2, in1_shape, mode, method, axes, Edges(boundary, fillvalue, nan), dtype, memory_limit, measure, flip=True)


def _plan(
    in2: Array,
    in1_shape: Sequence[int],
    mode: str,
    method: str,
    axes: int | Sequence[int] | None,
    edges: Edges,
    dtype: object,
    memory_limit: int | None,
    measure: bool | str,
    *,
    flip: bool,
) -> Plan:
    backend = get_backend(in2=in2)
    in2 = as_array(in2, "in2", backend)
    x = input_spec("in1_shape", in1_shape, in2.dtype if dtype is None else dtype)
    spec, w = correlate_spec(x, in2, backend, mode, method, axes, flip=flip, x_bound=abs_bound(None, x.dtype), edges=edges)
    return Plan(spec, w, method, memory_limit=memory_limit, measure=measure)


def _correlate(
    in1: Array,
    in2: Array,
    mode: str,
    method: str,
    axes: int | Sequence[int] | None,
    boundary: str,
    fillvalue: complex,
    nan: str,
    measure: bool | str,
    out: Array | None,
    *,
    flip: bool,
) -> Array:
    # A plain call whose plan runs direct on one line or map in one piece skips the plan
    # (_Unplanned), with any boundary rule and a real, non-NaN fill.
    plain = type(fillvalue) in (int, float) and fillvalue == fillvalue
    plain = plain and nan == "propagate" and not measure and out is None
    call = _unplanned_call(in1, in2, mode, method, axes, flip) if plain else None
    settings = None if call is None else _kept.settings()  # asked once: both keys hold it
    key = None if call is None or settings is None else (*call, boundary, fillvalue, *settings)
    unplanned = None if key is None else _unplanned_calls.get(key)
    if unplanned:
        return unplanned(in1, in2)
    edges = Edges(boundary, fillvalue, nan)
    backend = get_backend(in1=in1, in2=in2)
    in1, in2 = as_array(in1, "in1", backend), as_array(in2, "in2", backend)
    check_no_overlap(out, backend, in1=in1, in2=in2)

    def make(kernel: Array, *, calls: Calls) -> Plan:
        x = ArraySpec(tuple(in1.shape), in1.dtype)
        spec, w = correlate_spec(x, kernel, backend, mode, method, axes, flip=flip, x_bound=abs_bound(in1, in1.dtype), edges=edges)
        return Plan(spec, w, method, measure=measure, sample=in1, calls=calls, retry_smaller=True)

    plan = _kept.plain_plan("correlate", in1, (in2,), (mode, method, axes, edges, flip), measure, make, settings)
    if key is not None and unplanned is None:
        run = plan.unplanned()
        _unplanned_calls.put(key, False if run is None else _Unplanned(run, plan.y_shape, flip))
    y = plan(in1, out)
    if out is None and y.ndim == 0 and backend.name == "numpy":
        return y[()]  # two 0-d inputs: a NumPy scalar, as SciPy gives, whatever the method
    return y


@dataclass(frozen=True, slots=True)
class _Unplanned:
    """A plain call whose plan runs direct as one ``numpy.correlate`` of a 1-D signal or of
    a batch of lines laid end to end, or on one map in one chunk (:meth:`Plan.unplanned`),
    run without the plan: the same calls on the same samples, so the same result, for a
    fraction of the plan's cost (1000 samples with 3 taps: about 7 us against 47).
    Every axis of such a call is correlated, or one along which `in2` has length 1 (a
    batch axis, before the correlated ones), so flipping `in2` along all of them is
    convolution's flip."""

    run: Callable[[np.ndarray, np.ndarray], np.ndarray]
    y_shape: tuple[int, ...]
    flip: bool

    def __call__(self, in1: np.ndarray, in2: np.ndarray) -> np.ndarray:
        w = in2[(slice(None, None, -1),) * in2.ndim] if self.flip else in2
        return self.run(in1, w).reshape(self.y_shape)


# Plain calls seen: their _Unplanned, or False where the plan runs anything else.
_unplanned_calls = LRUCache("unplanned_calls", maxsize=256)


def _unplanned_call(in1: Array, in2: Array, mode: str, method: str, axes: object, flip: bool) -> tuple[object, ...] | None:
    """For a call with the default NaN policy (and edges that :func:`_correlate` checks) on
    two NumPy arrays of one ndim (at least 1) and one float dtype, with `axes` None, an int
    or a tuple or list of ints, what its plan's choice depends on besides the edges and
    :func:`._kept.settings` (shapes, dtype, mode, method, axes, flip): with them, the key
    of its :class:`_Unplanned`. None for any other call."""
    if type(in1) is not np.ndarray or type(in2) is not np.ndarray or in1.ndim != in2.ndim or not in1.ndim:
        return None
    if type(axes) in (tuple, list) and all(type(a) is int for a in axes):  # type: ignore[attr-defined]
        axes = tuple(axes)  # type: ignore[arg-type]
    elif axes is not None and type(axes) is not int:
        return None
    dtype = in1.dtype
    if dtype != in2.dtype or dtype.char not in "fd" or not dtype.isnative or method not in ("auto", "direct") or mode not in MODES:
        return None
    return (in1.shape, in2.shape, dtype, mode, method, axes, flip)


@dataclass(frozen=True, slots=True)
class Edges:
    """What happens past the edges and at NaNs: `boundary` (with `fillvalue`) and `nan`."""

    boundary: str = "constant"
    fillvalue: complex = 0
    nan: str = "ignore"

    def __post_init__(self) -> None:
        object.__setattr__(self, "fillvalue", fill_number(self.fillvalue))
        object.__setattr__(self, "boundary", edge_rule(self.boundary, "boundary", self.fillvalue))


def correlate_spec(
    x: ArraySpec,
    in2: Array,
    backend: Backend,
    mode: str,
    method: str,
    axes: int | Sequence[int] | None,
    *,
    flip: bool,
    x_bound: int,
    edges: Edges = Edges(),
    kernel_values: bool = True,
) -> tuple[Spec, Array]:
    """Check a correlation of an input like `x` with `in2`, and map it onto a Problem.

    Returns the spec and the kernel in the problem's layout ``(G*Og, 1, *kernel)``,
    already flipped (convolution) or conjugated (complex correlation). 'wrap' makes a
    circular problem (periodic padding, native to the FFT). With another boundary rule than
    zero fill (or nan='normalize', which counts samples past the edges as data, as
    astropy), the input is extended by the rule and correlated in 'valid'.

    What the shapes decide is cached (:func:`_shaped`); the parts that read the kernel's
    values (the integer guard, the weights of nan='normalize', whether a 2-D kernel is an
    outer product: ``Problem.rank_one``) are made on every call. Without `kernel_values`
    (`in2` a stand-in for a kernel of unknown values, or a spec wanted for its shapes) the
    kernel is not taken as an outer product.
    """
    check_kernel(edges.nan, in2, "in2", backend)
    key = (x, in2.shape, in2.dtype, backend, mode, method, axes, edges)
    shaped = _shaped_specs.get_or_make(key, lambda: _shaped(*key))
    spec = shaped.spec
    w = in2.reshape(1) if shaped.scalar else in2
    w = w.transpose(shaped.w_order).reshape(spec.problem.w_shape)
    if flip:
        w = w[(..., *(slice(None, None, -1),) * len(shaped.axes))]
    elif w.dtype.kind == "c":
        w = w.conj()
    if spec.y.dtype.kind in "iu":
        if spec.extend and edges.boundary == "constant":  # the samples past the edges count too
            x_bound = max(x_bound, math.ceil(abs(edges.fillvalue)))
        spec = replace(spec, excluded=int_guard(spec.y.dtype, x_bound, abs_bound(in2, in2.dtype), terms(spec.problem)))
    if edges.nan == "normalize" and not shaped.scalar:  # weighs by the kernel itself
        spec = replace(spec, nan=_nan_rule(shaped.x, in2, backend, shaped.mode, shaped.axes, edges, spec.problem.circular, kernel=in2, flip=flip))
    if kernel_values and rank_one(w, spec.problem, backend):
        spec = replace(spec, problem=interned(replace(spec.problem, rank_one=True)))
    return spec, w


@dataclass(frozen=True, slots=True)
class _Shaped:
    """What the shapes of a correlation decide: its spec, less the parts that read the
    kernel's values (no method excluded for integers, no weights for nan='normalize'),
    and how the kernel and the (extended) input map onto the problem."""

    spec: Spec
    x: ArraySpec
    mode: str
    axes: tuple[int, ...]
    w_order: tuple[int, ...]
    scalar: bool


_shaped_specs = LRUCache("correlate_specs", maxsize=256)


def _shaped(
    x: ArraySpec,
    w_shape: Shape,
    w_dtype: np.dtype,
    backend: Backend,
    mode: str,
    method: str,
    axes: int | Sequence[int] | None,
    edges: Edges,
) -> _Shaped:
    """:func:`correlate_spec`'s checks and layout, for a kernel of `w_shape` and `w_dtype`."""
    check_choice("mode", mode, MODES)
    check_choice("method", method, ("auto", *METHODS))
    check_choice("nan", edges.nan, NAN_POLICIES)
    w = ArraySpec(w_shape, w_dtype)
    check_same_ndim(x, w)
    given, extension = x, None
    # 'valid' reads no sample past the edges: its padding (where `in2` is the larger, as SciPy
    # swaps them) is zeros whatever the boundary rule.
    circular = edges.boundary == "wrap" and x.ndim > 0 and mode != "valid"
    if mode != "valid" and x.ndim and not circular and (edges.boundary != "constant" or edges.fillvalue != 0 or edges.nan == "normalize"):
        x, extension = _extended(x, w, normalize_axes(axes, x.ndim), mode, edges, backend)
        mode = "valid"
    scalar = x.ndim == 0  # SciPy accepts 0-d inputs: the product of two scalars
    if scalar:
        x, w = ArraySpec((1,), x.dtype), ArraySpec((1,), w_dtype)
    axes = normalize_axes(axes, x.ndim)
    check_broadcast(x, w, axes)
    if mode == "valid":
        check_valid_sizes(tuple(x.shape[a] for a in axes), tuple(w.shape[a] for a in axes))
    compute, result = result_dtype(x, w)
    check_result(edges.nan, result)
    axes = _correlated_axes(x.shape, w.shape, axes, mode, compute, circular)
    problem, x_order, w_order, inverse, lead = _as_problem(x.shape, w.shape, mode, axes, compute, circular)
    ordered = (*lead, *problem.out_spatial)
    y_shape = () if scalar else tuple(ordered[a] for a in inverse)
    spec = Spec(
        problem=problem,
        backend=backend,
        x=given,
        y=ArraySpec(y_shape, result),
        to_problem=lambda a: a.reshape(x.shape).transpose(x_order).reshape(problem.x_shape),
        from_problem=lambda y: y.reshape(ordered).transpose(inverse).reshape(y_shape),
        excluded={},
        same_layout=x_order == tuple(range(len(x_order))),
        extend=extension,
        nan=IGNORE if scalar else _nan_rule(x, w, backend, mode, axes, edges, circular),
    )
    return _Shaped(spec, x, mode, axes, w_order, scalar)


def _extended(x: ArraySpec, w: ArraySpec, axes: tuple[int, ...], mode: str, edges: Edges, backend: Backend):
    """The input extended past its edges for `mode` (in the result's dtype where its own
    does not hold `fillvalue`: :func:`fill_dtype`), and the function that extends it."""
    pads = [mode_padding(x.shape[a], w.shape[a], mode) for a in axes]
    shape = list(x.shape)
    for a, (lo, hi) in zip(axes, pads):
        shape[a] += lo + hi
    pad_mode = EDGE_RULES[edges.boundary]
    dtype = fill_dtype(edges.fillvalue, x.dtype, result_dtype(x, w)[1]) if pad_mode == "constant" else x.dtype
    return ArraySpec(tuple(shape), dtype), Extension(backend.xp, axes, tuple(pads), pad_mode, edges.fillvalue, dtype)


def _nan_rule(
    x: ArraySpec,
    w: ArraySpec | Array,
    backend: Backend,
    mode: str,
    axes: tuple[int, ...],
    edges: Edges,
    circular: bool,
    *,
    kernel: Array | None = None,
    flip: bool = False,
) -> NanRule:
    """The NaN policy with how to make plans for its masks, over the extended input (or
    around the period of a `circular` one), for a kernel of `w`'s shape and dtype; only
    nan='normalize' needs `kernel` (`in2`, flipped if `flip`), to weigh by."""
    if edges.nan == "ignore":
        return IGNORE
    mask_edges = Edges("wrap" if circular else "constant")

    def mask_plan(kernel: Array, dtype: np.dtype, flipped: bool) -> Plan:
        spec, w = correlate_spec(ArraySpec(x.shape, dtype), kernel, backend, mode, "auto", axes, flip=flipped, x_bound=1, edges=mask_edges)
        return Plan(spec, w, "auto")

    return NanRule(
        edges.nan,
        "in1",
        reach=lambda: mask_plan(backend.xp.ones(w.shape, np.float32), np.dtype(np.float32), False),
        weigh=None if kernel is None else lambda: mask_plan(kernel, x.dtype, flip),
        fillvalue=edges.fillvalue,
        fill_dtype=fill_dtype(edges.fillvalue, x.dtype, result_dtype(x, w)[1]) if edges.nan == "fill" else None,
    )


def _correlated_axes(s1: Shape, s2: Shape, axes: tuple[int, ...], mode: str, dtype: np.dtype, circular: bool) -> tuple[int, ...]:
    """`axes` less the leading ones along which `in2` has length 1: along those the
    correlation is a product, with no padding in any mode, so they are batch axes (a
    ``(1, k)`` kernel on an image runs as 1-D lines). They stay where moving them would
    reorder the input's axes."""
    first = next((i for i, a in enumerate(axes) if s2[a] > 1), len(axes) - 1)
    if first == 0 or _as_problem(s1, s2, mode, axes[first:], dtype, circular)[1] != tuple(range(len(s1))):
        return axes
    return axes[first:]


def _as_problem(
    s1: Shape, s2: Shape, mode: str, axes: tuple[int, ...], dtype: np.dtype, circular: bool
) -> tuple[Problem, tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Map a batched correlation of shapes `s1` and `s2` onto a grouped one.

    Each non-correlated axis is a batch axis (only `in1` longer than 1), a group axis
    (equal lengths: each slice of `in1` meets its own slice of `in2`) or an output-channel
    axis (only `in2` longer than 1). Returns the problem, the axis orders that bring
    `in1` and `in2` into its layout, the order that brings the result back, and the
    lengths of the result's leading axes.
    """
    rest = [a for a in range(len(s1)) if a not in axes]
    batch = [a for a in rest if s2[a] == 1 < s1[a]]
    outs = [a for a in rest if s1[a] == 1 < s2[a]]
    groups = [a for a in rest if a not in batch and a not in outs]
    spatial = tuple(s1[a] for a in axes)
    kernel = tuple(s2[a] for a in axes)
    pads = [mode_padding(n, k, mode) for n, k in zip(spatial, kernel)]
    problem = interned(Problem(
        batch=math.prod(s1[a] for a in batch),
        groups=math.prod(s1[a] for a in groups),
        in_per_group=1,
        out_per_group=math.prod(s2[a] for a in outs),
        spatial=spatial,
        kernel=kernel,
        pad_lo=tuple(lo for lo, _ in pads),
        pad_hi=tuple(hi for _, hi in pads),
        stride=(1,) * len(axes),
        dilation=(1,) * len(axes),
        dtype=dtype,
        circular=circular,
    ))
    lead = tuple(max(s1[a], s2[a]) for a in (*batch, *groups, *outs))
    x_order = (*batch, *groups, *outs, *axes)
    inverse = tuple(sorted(range(len(x_order)), key=x_order.__getitem__))
    return problem, x_order, (*groups, *outs, *batch, *axes), inverse, lead
