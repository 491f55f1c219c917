"""scipy.ndimage's linear filters, on arrayconv: one changed import line.

``from arrayconv import ndimage`` in place of ``from scipy import ndimage`` gives the same
functions with SciPy's signatures, defaults, edge modes (``'reflect'``, ``'mirror'``,
``'nearest'``, ``'wrap'``, ``'constant'`` and the ``'grid-*'`` names), ``cval``,
``origin``, ``axes``, ``output`` (an array or a dtype) and results: sums in float64, the
result in the input's dtype (or `output`'s), integers truncated toward zero as SciPy's C
code casts them. Filters SciPy runs as passes (Gaussians, boxes, Sobel, Laplace) run so
with an integer output, truncated between passes; with a float output and one mode, one
pass over their kernel (an outer product's passes fused in cache), rounded once where SciPy
rounds between passes: the results differ by the output's rounding (in constant mode, only
where SciPy's padding of each pass's result with `cval` allows). Errors are SciPy's types.
The sums run on arrayconv's methods (compiled loops for small kernels, FFTs for large
ones); CuPy arrays run on their GPU. NumPy inputs too small to repay a call's setup (up
to 16384 samples and 100000 multiply-adds) run in scipy.ndimage itself.

SciPy's own tests of these functions (``scipy/ndimage/tests/test_filters.py``) run against
this module in CI (``tests/scipy_suite``).

Examples
--------
>>> import numpy as np
>>> import scipy.ndimage
>>> from arrayconv import ndimage
>>> image = np.random.default_rng(0).random((64, 64))
>>> bool(np.allclose(ndimage.gaussian_filter(image, 2.0), scipy.ndimage.gaussian_filter(image, 2.0)))
True
"""

from __future__ import annotations

import math
import numbers
import operator
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from scipy.ndimage import correlate as _scipy_correlate  # bound now: SciPy's, whatever replaces them later
from scipy.ndimage import correlate1d as _scipy_correlate1d

from ._api.correlate import correlate as _typed_correlate
from ._methods import box_sums, compiled_loops
from ._runtime.backend import NUMPY, array_module
from ._runtime.config import workers
from ._runtime.scratch import REUSED_BYTES, reused
from ._runtime.threads import run_parallel
from ._spec.boundary import EDGE_RULES, extended_index

_ac_correlate: Callable[..., Any] = _typed_correlate  # validated SciPy arguments: str, not its Literal types

__all__ = [
    "convolve",
    "convolve1d",
    "correlate",
    "correlate1d",
    "gaussian_filter",
    "gaussian_filter1d",
    "gaussian_gradient_magnitude",
    "gaussian_laplace",
    "laplace",
    "prewitt",
    "sobel",
    "uniform_filter",
    "uniform_filter1d",
]

# NumPy inputs of at most this many samples and multiply-adds run in scipy.ndimage: its C
# loop is done in 5-60 us, before arrayconv's call (50-80 us of setup) would be.
_SCIPY_SAMPLES, _SCIPY_MACS = 1 << 14, 100_000

# Means of at least this many samples a window run as running sums with numba (one sample
# added and one taken away an output, whatever the window).
_RUNNING_SIZE = 9

# Results of at least this many bytes are stored in parts, on every worker.
_PARALLEL_STORE_BYTES = 1 << 20

# scipy.ndimage's edge modes (filters) -> arrayconv's boundary rules.
_MODES = {
    "reflect": "symmetric",
    "grid-mirror": "symmetric",
    "mirror": "mirror",
    "nearest": "edge",
    "wrap": "wrap",
    "grid-wrap": "wrap",
    "constant": "constant",
    "grid-constant": "constant",
}


def correlate(input: Any, weights: Any, output: Any = None, mode: str = "reflect", cval: Any = 0.0, origin: Any = 0, *, axes: Any = None) -> Any:
    """Multidimensional correlation, as :func:`scipy.ndimage.correlate`."""
    return _correlate_or_convolve(input, weights, output, mode, cval, origin, False, axes)


def convolve(input: Any, weights: Any, output: Any = None, mode: str = "reflect", cval: Any = 0.0, origin: Any = 0, *, axes: Any = None) -> Any:
    """Multidimensional convolution, as :func:`scipy.ndimage.convolve`."""
    return _correlate_or_convolve(input, weights, output, mode, cval, origin, True, axes)


def correlate1d(input: Any, weights: Any, axis: int = -1, output: Any = None, mode: str = "reflect", cval: Any = 0.0, origin: int = 0) -> Any:
    """1-D correlation along `axis`, as :func:`scipy.ndimage.correlate1d`."""
    xp = array_module(input)
    input, weights = xp.asarray(input), xp.asarray(weights)
    if input.dtype.kind == "c" or weights.dtype.kind == "c":
        if weights.dtype.kind == "c":
            weights = weights.conj().astype(np.complex128, copy=False)
        output = _get_output(output, input, complex_output=True)
        return _via_real_parts(correlate1d, input, weights, output, cval, axis=axis, mode=mode, origin=origin)
    output = _get_output(output, input)
    weights = weights.astype(np.float64)
    if weights.ndim != 1 or weights.shape[0] < 1:
        raise RuntimeError("no filter weights given")
    axis = _axis(axis, input.ndim)
    if _invalid_origin(origin, weights.shape[0]):
        msg = "Invalid origin; origin must satisfy -(len(weights) // 2) <= origin <= (len(weights)-1) // 2"
        raise ValueError(msg)
    shape = [1] * input.ndim
    shape[axis] = weights.shape[0]
    origins = [0] * input.ndim
    origins[axis] = origin
    _filter_into(output, input, weights.reshape(shape), _mode(mode), cval, origins)
    return output


def convolve1d(input: Any, weights: Any, axis: int = -1, output: Any = None, mode: str = "reflect", cval: Any = 0.0, origin: int = 0) -> Any:
    """1-D convolution along `axis`, as :func:`scipy.ndimage.convolve1d`."""
    weights = array_module(weights).asarray(weights)[::-1]
    origin = -origin - (0 if weights.shape[0] & 1 else 1)
    if weights.dtype.kind == "c":
        weights = weights.conj()  # undoes correlate1d's conjugation
    return correlate1d(input, weights, axis, output, mode, cval, origin)


def gaussian_filter1d(
    input: Any, sigma: float, axis: int = -1, order: int = 0, output: Any = None, mode: str = "reflect", cval: Any = 0.0, truncate: float = 4.0, *, radius: Any = None
) -> Any:
    """1-D Gaussian filter (or its derivatives), as :func:`scipy.ndimage.gaussian_filter1d`."""
    sd = float(sigma)
    half = int(truncate * sd + 0.5) if radius is None else radius
    if not isinstance(half, numbers.Integral) or half < 0:
        raise ValueError("Radius must be a nonnegative integer.")
    weights = _gaussian_kernel1d(sd, order, int(half))[::-1]  # correlated, not convolved
    return correlate1d(input, array_module(input).asarray(weights), axis, output, mode, cval, 0)


def gaussian_filter(
    input: Any, sigma: Any, order: Any = 0, output: Any = None, mode: Any = "reflect", cval: Any = 0.0, truncate: float = 4.0, *, radius: Any = None, axes: Any = None
) -> Any:
    """Multidimensional Gaussian filter, as :func:`scipy.ndimage.gaussian_filter`: one
    pass per axis, or (float results, one mode) one pass over the outer product."""
    input = array_module(input).asarray(input)
    output = _get_output(output, input)
    axes = _check_axes(axes, input.ndim)
    n = len(axes)
    orders, sigmas, modes, radii = (_normalize_sequence(v, n) for v in (order, sigma, mode, radius))
    passes = [(axes[i], sigmas[i], orders[i], modes[i], radii[i]) for i in range(n) if sigmas[i] > 1e-15]
    if not passes:
        output[...] = input[...]
        return output
    lines = [(axis, _gaussian_kernel1d(float(s), o, _radius(s, truncate, r))[::-1]) for axis, s, o, _, r in passes]
    if _ran_as_one_pass(output, input, lines, [m for *_, m, _ in passes], cval):
        return output
    for axis, s, o, m, r in passes:
        gaussian_filter1d(input, s, axis, o, output, m, cval, truncate, radius=r)
        input = output
    return output


def uniform_filter1d(input: Any, size: int, axis: int = -1, output: Any = None, mode: str = "reflect", cval: Any = 0.0, origin: int = 0) -> Any:
    """1-D mean over `size` samples, as :func:`scipy.ndimage.uniform_filter1d`: the sum of
    the window (exact for integers) over `size`."""
    xp = array_module(input)
    input = xp.asarray(input)
    axis = _axis(axis, input.ndim)
    if size < 1:
        raise RuntimeError("incorrect filter size")
    complex_output = input.dtype.kind == "c"
    output = _get_output(output, input, complex_output=complex_output)
    if size // 2 + origin < 0 or size // 2 + origin >= size:
        raise ValueError("invalid origin")
    shape = [1] * input.ndim
    shape[axis] = size
    origins = [0] * input.ndim
    origins[axis] = origin
    if _running(input, output, size):
        _running_means(input, output, size, axis, _mode(mode), float(cval), origin)
        return output
    parts = [(input.real, output.real, np.real(cval)), (input.imag, output.imag, np.imag(cval))] if complex_output else [(input, output, cval)]
    for x, out, fill in parts:
        _filter_into(out, x, xp.ones(shape), _mode(mode), fill, origins, divide=size)
    return output


def _running(input: Any, output: Any, size: int) -> bool:
    """Whether a mean over `size` samples runs as a running sum (:func:`_running_means`):
    NumPy arrays, not empty, the input of integers or floats and the output float32 or
    float64, numba installed, and windows of at least :data:`_RUNNING_SIZE`."""
    arrays = isinstance(input, np.ndarray) and isinstance(output, np.ndarray)
    dtypes = arrays and (input.dtype.kind in "iu" or input.dtype in (np.float32, np.float64)) and output.dtype in (np.float32, np.float64)
    return dtypes and input.size > 0 and size >= _RUNNING_SIZE and output.flags.c_contiguous and compiled_loops()


def _running_means(input: np.ndarray, output: np.ndarray, size: int, axis: int, boundary: str, cval: float, origin: int) -> None:
    """`output` = the means of `size` samples of `input` along `axis`, centred at ``size // 2
    + origin``, past the edges by `boundary` (an arrayconv rule) with `cval`: a running sum in
    float64 in numba's loops (:func:`arrayconv._methods.box_sums`)."""
    n = input.shape[axis]
    lo = size // 2 + origin
    index = extended_index(n, (lo, size - 1 - lo), EDGE_RULES[boundary]).astype(np.int64)
    lines, inner = math.prod(input.shape[:axis]), math.prod(input.shape[axis + 1 :])
    x = np.ascontiguousarray(input) if not np.shares_memory(input, output) else input.copy()
    box_sums(x.reshape(lines, n, inner), size, index, cval if boundary == "constant" else 0.0, output.reshape(lines, n, inner))


def uniform_filter(input: Any, size: Any = 3, output: Any = None, mode: Any = "reflect", cval: Any = 0.0, origin: Any = 0, *, axes: Any = None) -> Any:
    """Multidimensional mean filter, as :func:`scipy.ndimage.uniform_filter`: one pass per
    axis, or (float results, one mode, no origin) one pass over the whole box; with numba,
    float results of windows of 9 samples or more a running sum per axis."""
    input = array_module(input).asarray(input)
    output = _get_output(output, input, complex_output=input.dtype.kind == "c")
    axes = _check_axes(axes, input.ndim)
    n = len(axes)
    sizes, origins, modes = (_normalize_sequence(v, n) for v in (size, origin, mode))
    passes = [(axes[i], int(sizes[i]), origins[i], modes[i]) for i in range(n) if sizes[i] > 1]
    if not passes:
        output[...] = input[...]
        return output
    lines = [(axis, np.full(s, 1.0 / s)) for axis, s, _, _ in passes]
    if all(_running(input, output, s) for _, s, _, _ in passes):
        # each pass from the last one's result: the passes alternate between a buffer and
        # `output`, so that the last writes `output`
        buffers = [output]
        if len(passes) > 1:
            spare = reused("ndimage.means", output.shape, output.dtype, NUMPY)
            buffers.append(np.empty_like(output) if spare is None else spare)
        for i, (axis, s, o, m) in enumerate(passes):
            written = buffers[(len(passes) - 1 - i) % 2]
            _running_means(input, written, s, axis, _mode(m), float(cval), o)
            input = written
        return output
    if not any(o for *_, o, _ in passes) and input.dtype.kind != "c" and _ran_as_one_pass(output, input, lines, [m for *_, m in passes], cval):
        return output
    for axis, s, o, m in passes:
        uniform_filter1d(input, s, axis, output, m, cval, o)
        input = output
    return output


def prewitt(input: Any, axis: int = -1, output: Any = None, mode: Any = "reflect", cval: Any = 0.0) -> Any:
    """Prewitt filter, as :func:`scipy.ndimage.prewitt`."""
    return _edge_filter(input, axis, output, mode, cval, [1, 1, 1])


def sobel(input: Any, axis: int = -1, output: Any = None, mode: Any = "reflect", cval: Any = 0.0) -> Any:
    """Sobel filter, as :func:`scipy.ndimage.sobel`."""
    return _edge_filter(input, axis, output, mode, cval, [1, 2, 1])


def laplace(input: Any, output: Any = None, mode: Any = "reflect", cval: Any = 0.0, *, axes: Any = None) -> Any:
    """Laplace filter (second differences), as :func:`scipy.ndimage.laplace`: with a float
    output and one mode, one pass of their sum's kernel (:func:`_one_pass`)."""
    input = array_module(input).asarray(input)
    output = _get_output(output, input)
    checked = _check_axes(axes, input.ndim)
    modes = _normalize_sequence(mode, len(checked))
    if checked and _one_pass(input, output, modes):
        weights = np.zeros([3 if ax in checked else 1 for ax in range(input.ndim)])
        centre = [1 if ax in checked else 0 for ax in range(input.ndim)]
        for ax in checked:
            for step, weight in ((-1, 1.0), (0, -2.0), (1, 1.0)):
                at = list(centre)
                at[ax] += step
                weights[tuple(at)] += weight
        return _one_kernel_into(output, input, weights, modes[0], cval)

    def second(x: Any, axis: int, out: Any, m: str) -> Any:
        return correlate1d(x, [1, -2, 1], axis, out, m, cval, 0)

    return _sum_over_axes(input, second, output, mode, axes, squares=False)


def gaussian_laplace(input: Any, sigma: Any, output: Any = None, mode: Any = "reflect", cval: Any = 0.0, *, axes: Any = None, **kwargs: Any) -> Any:
    """Laplacian of Gaussian, as :func:`scipy.ndimage.gaussian_laplace`."""
    input = array_module(input).asarray(input)
    checked = _check_axes(axes, input.ndim)
    sigmas = _on_axes(_normalize_sequence(sigma, len(checked)), checked, input.ndim, 0.0)

    def second(x: Any, axis: int, out: Any, m: str) -> Any:
        order = [0] * x.ndim
        order[axis] = 2
        return gaussian_filter(x, sigmas, order, out, m, cval, **kwargs)

    return _sum_over_axes(input, second, output, mode, axes, squares=False)


def gaussian_gradient_magnitude(input: Any, sigma: Any, output: Any = None, mode: Any = "reflect", cval: Any = 0.0, *, axes: Any = None, **kwargs: Any) -> Any:
    """Gradient magnitude by Gaussian derivatives, as :func:`scipy.ndimage.gaussian_gradient_magnitude`."""

    def first(x: Any, axis: int, out: Any, m: str) -> Any:
        order = [0] * x.ndim
        order[axis] = 1
        return gaussian_filter(x, sigma, order, out, m, cval, **kwargs)

    return _sum_over_axes(input, first, output, mode, axes, squares=True)


def _correlate_or_convolve(input: Any, weights: Any, output: Any, mode: Any, cval: Any, origin: Any, convolution: bool, axes: Any) -> Any:
    xp = array_module(input)
    input, weights = xp.asarray(input), xp.asarray(weights)
    if input.dtype.kind == "c" or weights.dtype.kind == "c":
        if weights.dtype.kind == "c" and not convolution:
            weights = weights.conj()  # as numpy.correlate: the weights, not the input
        output = _get_output(output, input, complex_output=True)
        return _via_real_parts(_correlate_or_convolve, input, weights, output, cval, mode=mode, origin=origin, convolution=convolution, axes=axes)
    checked = _check_axes(axes, input.ndim)
    weights = weights.astype(np.float64)
    if len(checked) < input.ndim:
        if weights.ndim != len(checked):
            msg = f"weights.ndim ({weights.ndim}) must match len(axes) ({len(checked)})"
            raise RuntimeError(msg)
        weights = xp.expand_dims(weights, tuple(ax for ax in range(input.ndim) if ax not in checked))
    origins = _on_axes(_normalize_sequence(origin, len(checked)), checked, input.ndim, 0)
    lengths = [n for n in weights.shape if n > 0]
    if len(lengths) != input.ndim:
        msg = f"weights.ndim ({len(lengths)}) must match len(axes) ({len(checked)})"
        raise RuntimeError(msg)
    if convolution:
        weights = weights[(slice(None, None, -1),) * weights.ndim]
        origins = [-o - (0 if n & 1 else 1) for o, n in zip(origins, weights.shape)]
    for o, n in zip(origins, lengths):
        if _invalid_origin(o, n):
            msg = "Invalid origin; origin must satisfy -(weights.shape[k] // 2) <= origin[k] <= (weights.shape[k]-1) // 2"
            raise ValueError(msg)
    output = _get_output(output, input)
    if not isinstance(mode, str) and isinstance(mode, Iterable):
        raise RuntimeError("A sequence of modes is not supported")
    _filter_into(output, input, weights, _mode(mode), cval, origins)
    return output


def _filter_into(output: Any, input: Any, weights: Any, boundary: str, cval: Any, origins: Sequence[int], divide: int = 1) -> None:
    """`output` = the correlation of real `input` with float64 `weights` (of its ndim), each
    axis's centre at ``k // 2 + origin``, past the edges by `boundary` (an arrayconv rule)
    with `cval`, summed in float64 (then over `divide`), cast as SciPy's C code casts. Along
    an axis of one sample, past whose edges every rule but 'constant' repeats it, the
    weights are summed first."""
    for a in (input, output):
        if a.dtype.kind not in "biuf" or a.dtype.itemsize > 8 or a.dtype == np.float16:
            msg = f"array type {a.dtype!r} not supported"  # as SciPy's C code: float16 and long double
            raise RuntimeError(msg)
    if input.size == 0:
        return
    if np.iscomplexobj(cval):
        raise ValueError("Cannot provide a complex-valued cval when the input is real.")
    single = tuple(ax for ax, (n, k) in enumerate(zip(input.shape, weights.shape)) if n == 1 and k > 1)
    if single and boundary != "constant":  # every tap along an axis of one sample reads that sample
        weights = weights.sum(axis=single, keepdims=True)
        origins = [0 if ax in single else o for ax, o in enumerate(origins)]
    x = input.astype(np.uint8) if input.dtype == bool else input
    fill = float(cval) if boundary == "constant" else 0.0
    if divide == 1 and isinstance(x, np.ndarray) and isinstance(output, np.ndarray) and x.size <= _SCIPY_SAMPLES and x.size * weights.size <= _SCIPY_MACS:
        long = [ax for ax, k in enumerate(weights.shape) if k > 1]
        if len(long) == 1:  # SciPy's 1-D loop: twice as fast as its N-D one on a line
            _scipy_correlate1d(x, weights.ravel(), long[0], output, _SCIPY_MODES[boundary], fill, origins[long[0]])
        else:
            _scipy_correlate(x, weights, output, _SCIPY_MODES[boundary], fill, list(origins))
        return
    if any(origins):  # the centre moved: the 'full' correlation, from the first output the origin asks for
        full = _ac_correlate(x, weights, "full", boundary=boundary, fillvalue=fill)
        result = full[tuple(slice(k - 1 - k // 2 - o, k - 1 - k // 2 - o + n) for k, o, n in zip(weights.shape, origins, x.shape))]
        _store(output, _divided(result, divide, input))
        return
    for read, kept, written in _slabs(x, weights, boundary):
        into = reused("ndimage.result", x[read].shape, np.dtype(np.float64), NUMPY) if isinstance(x, np.ndarray) else None
        result = _ac_correlate(x[read], weights, "same", boundary=boundary, fillvalue=fill, out=into)
        _store(output[written], _divided(result[kept], divide, input))


# arrayconv's boundary rules -> the scipy.ndimage modes that give them.
_SCIPY_MODES = {"symmetric": "reflect", "mirror": "mirror", "edge": "nearest", "wrap": "wrap", "constant": "constant"}


def _divided(result: Any, divide: int, input: Any) -> Any:
    """`result` over `divide`, in place unless it shares the input's memory."""
    if divide == 1:
        return result
    return result / divide if np.may_share_memory(result, input) else array_module(result).divide(result, divide, out=result)


def _slabs(x: Any, weights: Any, boundary: str) -> list[tuple[tuple[slice, ...], tuple[slice, ...], tuple[slice, ...]]]:
    """`x` in slabs ``(read, kept, written)``: each slab's float64 result small enough for a
    kept buffer (fresh pages for a whole large image's float64 sums cost more than the
    filter). Along the first axis (slabs of whole rows) where that costs little, each slab
    read with the rows its outputs' windows reach (its result's `kept` part written) unless
    the edges wrap; else along an axis the weights do not reach across; else whole."""
    everything = (slice(None),) * x.ndim
    whole = [(everything, everything, everything)]
    if not isinstance(x, np.ndarray) or x.size * 8 <= REUSED_BYTES:
        return whole
    free = [ax for ax, k in enumerate(weights.shape) if k == 1 and x.shape[ax] > 1]
    for axis in dict.fromkeys([0, *free]):
        k = weights.shape[axis]
        step = max(REUSED_BYTES // (x.size // x.shape[axis] * 8) - (k - 1), 1)
        if step < x.shape[axis] and (k == 1 or (boundary != "wrap" and step > 4 * (k - 1))):  # halos cost little
            return [_slab(axis, lo, min(lo + step, x.shape[axis]), k, x.shape[axis]) for lo in range(0, x.shape[axis], step)]
    return whole


def _slab(axis: int, lo: int, hi: int, k: int, n: int) -> tuple[tuple[slice, ...], tuple[slice, ...], tuple[slice, ...]]:
    """``(read, kept, written)`` of the slab ``lo:hi`` along `axis` (of `n`) under `k` taps."""
    start, stop = max(lo - k // 2, 0), min(hi + k - 1 - k // 2, n)  # the rows a 'same' output's window reaches
    return _cut(axis, start, stop), _cut(axis, lo - start, hi - start), _cut(axis, lo, hi)


def _cut(axis: int, start: int, stop: int) -> tuple[slice, ...]:
    """The index of ``start:stop`` along `axis`."""
    return (*(slice(None),) * axis, slice(start, stop))


def _ran_as_one_pass(output: Any, input: Any, lines: list[tuple[int, Any]], modes: list[Any], cval: Any) -> bool:
    """Whether SciPy's passes of the 1-D `lines` ``(axis, taps)``, in order, each in its
    mode of `modes`, may run as one (:func:`_one_pass`, :func:`_padded_alike`); if so,
    `output` filtered by their outer product in one call (arrayconv runs an outer product as
    passes fused in cache)."""
    if not (_one_pass(input, output, modes) and _padded_alike(lines, modes[0], cval)):
        return False
    weights = np.ones((1,) * input.ndim)
    for axis, taps in lines:
        shape = [1] * input.ndim
        shape[axis] = len(taps)
        weights = weights * np.asarray(taps, dtype=np.float64).reshape(shape)
    if any(n < 1 for n in weights.shape):
        raise RuntimeError("no filter weights given")
    _one_kernel_into(output, input, weights, modes[0], cval)
    return True


def _one_kernel_into(output: Any, input: Any, weights: np.ndarray, mode: str, cval: Any) -> Any:
    """`output` filtered by the float64 `weights` (centred) in one pass; the input copied
    first where it shares the output's memory, so that a filter in place gives the same bits."""
    if np.may_share_memory(input, output):
        input = input.copy()
    _filter_into(output, input, array_module(input).asarray(weights), _mode(mode), cval, [0] * input.ndim)
    return output


def _padded_alike(lines: list[tuple[int, Any]], mode: str, cval: Any) -> bool:
    """Whether SciPy's passes of `lines`, in order, read what one pass over their outer
    product reads past the edges: in constant mode SciPy pads each pass's result with
    `cval`, where one pass has `cval` times the sum of the passes' weights so far, so only
    where `cval` is 0 or each pass but the last sums to 1."""
    if _mode(mode) != "constant" or cval == 0:
        return True
    return all(abs(math.fsum(taps) - 1) <= 1e-12 * math.fsum(abs(t) for t in taps) for _, taps in lines[:-1])


def _one_pass(input: Any, output: Any, modes: list[Any]) -> bool:
    """Whether SciPy's passes, one per axis, may run as one: the input real, the result
    float (SciPy rounds it between passes, the one pass once: the results differ by the
    result's rounding; integers are truncated between passes), one mode for every axis."""
    return input.dtype.kind in "fiub" and output.dtype.kind == "f" and all(isinstance(m, str) and m == modes[0] for m in modes)


def _edge_filter(input: Any, axis: int, output: Any, mode: Any, cval: Any, smooth: list[int]) -> Any:
    """Sobel and Prewitt: the difference [-1, 0, 1] along `axis`, then `smooth` along each
    other axis, through `output` as SciPy (or as one pass, :func:`_ran_as_one_pass`)."""
    input = array_module(input).asarray(input)
    axis = _axis(axis, input.ndim)
    output = _get_output(output, input)
    modes = _normalize_sequence(mode, input.ndim)
    lines = [(axis, [-1, 0, 1])] + [(other, smooth) for other in range(input.ndim) if other != axis]
    if _ran_as_one_pass(output, input, lines, [modes[ax] for ax, _ in lines], cval):
        return output
    correlate1d(input, [-1, 0, 1], axis, output, modes[axis], cval, 0)
    for other in (ax for ax in range(input.ndim) if ax != axis):
        correlate1d(output, smooth, other, output, modes[other], cval, 0)
    return output


def _sum_over_axes(input: Any, derivative: Any, output: Any, mode: Any, axes: Any, *, squares: bool) -> Any:
    """SciPy's generic Laplace (`squares` False: the sum of `derivative` along each axis)
    and gradient magnitude (True: the square root of the sum of squares)."""
    xp = array_module(input)
    input = xp.asarray(input)
    output = _get_output(output, input)
    checked = _check_axes(axes, input.ndim)
    if not checked:
        output[...] = input[...]
        return output
    modes = _normalize_sequence(mode, len(checked))
    derivative(input, checked[0], output, modes[0])
    if squares:
        xp.multiply(output, output, output)
    for ax, m in zip(checked[1:], modes[1:]):
        term = derivative(input, ax, output.dtype, m)
        if squares:
            xp.multiply(term, term, term)
        output += term
    if squares:
        xp.sqrt(output, output, casting="unsafe")
    return output


def _via_real_parts(func: Any, input: Any, weights: Any, output: Any, cval: Any, **kwargs: Any) -> Any:
    """A complex filter as real ones on the real and imaginary parts (SciPy's way)."""
    complex_input, complex_weights = input.dtype.kind == "c", weights.dtype.kind == "c"
    if complex_input and complex_weights:
        func(input.real, weights.real, output=output.real, cval=np.real(cval), **kwargs)
        output.real -= func(input.imag, weights.imag, output=None, cval=np.imag(cval), **kwargs)
        func(input.real, weights.imag, output=output.imag, cval=np.real(cval), **kwargs)
        output.imag += func(input.imag, weights.real, output=None, cval=np.imag(cval), **kwargs)
    elif complex_input:
        func(input.real, weights, output=output.real, cval=np.real(cval), **kwargs)
        func(input.imag, weights, output=output.imag, cval=np.imag(cval), **kwargs)
    else:
        if np.iscomplexobj(cval):
            raise ValueError("Cannot provide a complex-valued cval when the input is real.")
        func(input, weights.real, output=output.real, cval=cval, **kwargs)
        func(input, weights.imag, output=output.imag, cval=cval, **kwargs)
    return output


def _store(output: Any, result: Any) -> None:
    """`result` (float64) into `output` as SciPy's C code casts: integers truncated toward
    zero and wrapped past their range; large NumPy arrays in parts on every worker."""
    xp = array_module(result)

    def store(part: Any) -> None:
        values = result[part]
        if output.dtype.kind in "iu":
            values = xp.trunc(values).astype(np.int64)  # then wrapped, as C casts on x86
        elif output.dtype == bool:
            values = values != 0
        xp.copyto(output[part], values, casting="unsafe")

    if not isinstance(output, np.ndarray) or output.ndim == 0 or output.nbytes < _PARALLEL_STORE_BYTES:
        store(...)
        return
    step = -(-output.shape[0] // (4 * workers()))
    run_parallel([slice(i, i + step) for i in range(0, output.shape[0], step)], store, workers())


def _gaussian_kernel1d(sigma: float, order: int, radius: int) -> np.ndarray:
    """The 1-D Gaussian of `sigma` over ``[-radius, radius]``, summing to 1, or its
    `order`-th derivative: the Gaussian times the polynomial that differentiating
    ``q(x) exp(-x**2 / (2 sigma**2))`` `order` times makes of ``q = 1``."""
    if order < 0:
        raise ValueError("order must be non-negative")
    x = np.arange(-radius, radius + 1)
    phi = np.exp(-0.5 / (sigma * sigma) * x**2)
    phi = phi / phi.sum()
    if order == 0:
        return phi
    q = np.zeros(order + 1)  # coefficients of the polynomial, by power
    q[0] = 1
    powers = np.arange(order + 1)
    step = np.diag(powers[1:], 1) + np.diag(np.full(order, -1 / (sigma * sigma)), -1)  # q -> q' + q * p'
    for _ in range(order):
        q = step @ q
    return (x[:, None] ** powers) @ q * phi


def _radius(sigma: float, truncate: float, radius: Any) -> int:
    half = int(truncate * float(sigma) + 0.5) if radius is None else radius
    if not isinstance(half, numbers.Integral) or half < 0:
        raise ValueError("Radius must be a nonnegative integer.")
    return int(half)


def _mode(mode: Any) -> str:
    """arrayconv's rule for scipy.ndimage's filter `mode`; RuntimeError as SciPy's."""
    if not isinstance(mode, str) or mode not in _MODES:
        raise RuntimeError("boundary mode not supported")
    return _MODES[mode]


def _invalid_origin(origin: int, length: int) -> bool:
    return origin < -(length // 2) or origin > (length - 1) // 2


def _axis(axis: int, ndim: int) -> int:
    """`axis` in ``[0, ndim)``; numpy's AxisError (a ValueError) as SciPy's."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _normalize_sequence(value: Any, rank: int) -> list[Any]:
    """`value` once per axis: a sequence as it is (of `rank` values), else repeated."""
    if not isinstance(value, str) and np.iterable(value):
        values = list(value)
        if len(values) != rank:
            raise RuntimeError("sequence argument must have length equal to input rank")
        return values
    return [value] * rank


def _on_axes(values: list[Any], axes: tuple[int, ...], ndim: int, other: Any) -> list[Any]:
    """`values` of `axes` as one value per axis of `ndim`, `other` on the rest."""
    full = [other] * ndim
    for value, ax in zip(values, axes):
        full[ax] = value
    return full


def _check_axes(axes: Any, ndim: int) -> tuple[int, ...]:
    """`axes` as SciPy takes them: None (all), an int, or distinct ints in range."""
    if axes is None:
        return tuple(range(ndim))
    if np.isscalar(axes):
        found: tuple[int, ...] = (operator.index(axes),)  # type: ignore[arg-type]
    elif isinstance(axes, Iterable):
        found = tuple(operator.index(ax) for ax in axes)
        for ax in found:
            if ax < -ndim or ax > ndim - 1:
                msg = f"specified axis: {ax} is out of range"
                raise ValueError(msg)
        found = tuple(ax % ndim if ax < 0 else ax for ax in found)
    else:
        raise ValueError("axes must be an integer, iterable of integers, or None")
    if len(set(found)) != len(found):
        raise ValueError("axes must be unique")
    return found


def _get_output(output: Any, input: Any, complex_output: bool = False) -> Any:
    """The array to write into, as SciPy makes it: zeros of the input's dtype (complex for
    a complex filter), of a dtype given, or `output` itself (of the input's shape)."""
    xp = array_module(input)
    shape = input.shape
    if output is None:
        dtype = np.promote_types(input.dtype, np.complex64) if complex_output else input.dtype
        return xp.zeros(shape, dtype=dtype)
    if isinstance(output, type | np.dtype):
        if complex_output and np.dtype(output).kind != "c":
            warnings.warn("promoting specified output dtype to complex", stacklevel=3)
            output = np.promote_types(output, np.complex64)
        return xp.zeros(shape, dtype=output)
    if isinstance(output, str):
        dtype = np.dtype(output)
        if complex_output and dtype.kind != "c":
            raise RuntimeError("output must have complex dtype")
        if not issubclass(dtype.type, np.number):
            raise RuntimeError("output must have numeric dtype")
        return xp.zeros(shape, dtype=dtype)
    output = xp.asarray(output)
    if output.shape != shape:
        raise RuntimeError("output shape not correct")
    if complex_output and output.dtype.kind != "c":
        raise RuntimeError("output must have complex dtype")
    return output
