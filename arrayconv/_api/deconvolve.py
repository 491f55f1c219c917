"""`richardson_lucy`: Richardson-Lucy deconvolution, its two filters planned once per call.

Each iteration blurs the estimate with the PSF, divides the image by the blur, and
multiplies the estimate by that ratio correlated with the PSF (the blur's adjoint with
zero fill and a PSF of odd sizes; for an even size, 'same' centres the two one sample
apart): ``x <- x * correlate(image / (convolve(x, psf) + eps), psf)``, both 'same'.
These are ``skimage.restoration.richardson_lucy``'s steps (its correction convolves with
the flipped PSF, the same correlation), with the PSF's two filters made into plans once,
so its spectrum (by FFT) or its taps (directly) are prepared twice in all, not twice an
iteration, and each filter runs by the method the cost model picks for it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._plan.plan import check_memory
from .._runtime.backend import Array, Backend, get_backend, on_arrays_device
from .._runtime.progress import progress_bar
from .._spec.boundary import EdgeRule, edge_rule
from .._spec.problem import as_array, check_broadcast, check_real, check_same_ndim, is_int, normalize_axes
from .correlate import MethodName, plan_convolve, plan_correlate

# Added to every blurred sample before the division, as skimage does (no division by zero
# where the blur is 0; far below any sample of a float32 image of counts).
_EPSILON = 1e-12


@on_arrays_device
def richardson_lucy(
    image: Array,
    psf: Array,
    num_iter: int = 50,
    *,
    clip: bool = False,
    filter_epsilon: float | None = None,
    boundary: EdgeRule = "constant",
    axes: int | Sequence[int] | None = None,
    method: MethodName = "auto",
    start: Array | None = None,
    progress: bool = False,
) -> Array:
    """Richardson-Lucy deconvolution of `image` blurred by `psf`.

    Parameters
    ----------
    image : ndarray
        Real and finite data, NumPy or CuPy, any ndim: counts (photons, electrons) or
        intensities, blurred by `psf`.
    psf : ndarray
        Real and finite, the same ndim as `image`: the point-spread function, centred as
        :func:`convolve`'s 'same' mode centres a kernel. Not normalized here: a PSF that
        sums to 1 keeps the image's total.
    num_iter : int, optional
        Iterations, 0 or more (default 50). More sharpen more, and amplify noise more.
    clip : bool, optional
        Clip the result to [-1, 1], as skimage does by default for its images scaled to
        that range. Default False: counts and intensities are kept as they are.
    filter_epsilon : float, optional
        Where the blurred estimate is below this, the ratio is 0 instead of the image over
        the blur (no division by near-zero blur). Default None: never.
    boundary : {'constant', 'wrap', 'symmetric', 'mirror', 'edge'}, optional
        How the estimate and the ratio continue past the image's edges in both filters,
        as in :func:`convolve`. 'constant' (default) is zero past the edges, as in skimage,
        whose correction is then the blur's adjoint (for a PSF of odd sizes); the others
        darken the edges less.
    axes : int or sequence of int, optional
        Axes to deconvolve along (default: all). The others are batched: each equal in
        both inputs or 1 in one of them (one PSF for a stack of frames, or a PSF per frame).
    method : {'auto', 'direct', 'im2col', 'fft', 'oa'}, optional
        The method of both filters (see :func:`convolve`); 'auto' picks each one's
        fastest for its plan.
    start : ndarray, optional
        The estimate to start from, of the result's shape, real and finite, on the
        image's backend (not modified): a result of this function, to go on iterating
        (``num_iter=10`` from the result of 20 iterations gives the result of 30, without
        `clip`), or the image itself. Default: 0.5 everywhere, as in skimage.
    progress : bool, optional
        Show a progress bar over the iterations (needs tqdm, in the ``io`` extra).
        Default False.

    Returns
    -------
    ndarray
        The deconvolved image, of the batch-broadcast shape of the inputs (the image's
        along `axes`): float32 for a float16 or float32 image, float64 for others, on the
        image's backend.

    Raises
    ------
    TypeError
        For complex or non-numeric inputs (`start` too), arrays on different backends, a
        `num_iter` that is not an integer, or a `filter_epsilon` that is not a real number.
    ValueError
        For different ndims, batch axes that do not broadcast, a NaN or inf in either
        input or in `start`, a `start` of another shape than the result, a PSF that sums
        to 0 or less, a negative `num_iter`, an unknown `boundary` or `method`, or arrays that the
        device's memory cannot hold (checked before any work; over the memory limit, a
        :class:`MemoryLimitWarning`).

    See Also
    --------
    skimage.restoration.richardson_lucy : The same iterations (with ``clip=True`` by
        default), each filter a fresh ``scipy.signal.convolve`` call.
    convolve, correlate : The two filters; :func:`plan_convolve` plans them.

    Notes
    -----
    The estimate starts at 0.5 everywhere, as in skimage. With the default boundary the
    results equal skimage's to float rounding (float32 for float32 images); with another,
    the correction is the ratio correlated with the PSF under the same boundary, which
    is not the blur's exact adjoint except for 'wrap'. A PSF of an even size along an axis
    makes the correction the adjoint only approximately too (as in skimage): 'same' centres
    the convolution and the correlation one sample apart there.

    Examples
    --------
    >>> import numpy as np
    >>> import arrayconv as ac
    >>> r = np.arange(-4, 5)
    >>> psf = np.exp(-(r[:, None] ** 2 + r[None, :] ** 2) / 4.0)
    >>> psf /= psf.sum()
    >>> truth = np.full((64, 64), 1.0)
    >>> truth[32, 20] = truth[10, 50] = 100.0
    >>> image = ac.convolve(truth, psf, "same")
    >>> restored = ac.richardson_lucy(image, psf, 100)
    >>> round(float(image[32, 20]), 1), round(float(restored[32, 20]), 1)
    (8.9, 44.5)
    """
    backend = get_backend(image=image, psf=psf, start=start)
    xp = backend.xp
    image, psf = as_array(image, "image", backend), as_array(psf, "psf", backend)
    axes, shape, iterations, floor = check_deconvolution(image, psf, num_iter, filter_epsilon, boundary, axes)
    check_finite("image", image, xp)
    check_psf(psf, axes, xp)
    dtype = deconvolution_dtype(image)
    result_bytes = math.prod(shape) * dtype.itemsize
    cast_bytes = 0 if image.dtype == dtype else image.size * dtype.itemsize
    check_memory(
        "richardson_lucy",
        (f"the estimate of shape {shape}, its blur and its correction, and the image in {dtype}", 3 * result_bytes + cast_bytes),
        ("the estimate, its blur and its correction", 3 * result_bytes),
        "deconvolve smaller pieces: the frames of a stack apart, or tiles of the image overlapping by a few PSF widths",
        backend.name,
    )
    estimate = xp.full(shape, 0.5, dtype) if start is None else _start(start, shape, dtype, backend)
    image, psf = image.astype(dtype, copy=False), psf.astype(dtype)

    blur = plan_convolve(psf, shape, "same", method, axes=axes, boundary=boundary, dtype=dtype)
    correction = plan_correlate(psf, shape, "same", method, axes=axes, boundary=boundary, dtype=dtype)
    with progress_bar(iterations, progress, "iteration") as bar:
        for _ in range(iterations):
            ratio = blur(estimate)  # a new array: divided in place
            ratio += dtype.type(_EPSILON)
            small = ratio < floor if floor is not None else None
            xp.divide(image, ratio, out=ratio)
            if small is not None:
                xp.copyto(ratio, dtype.type(0), where=small)
            estimate *= correction(ratio)
            bar.update(1)
    if clip:
        xp.clip(estimate, -1, 1, out=estimate)
    return estimate


def _start(start: Array, shape: tuple[int, ...], dtype: np.dtype, backend: Backend) -> Array:
    """A copy of the estimate `start`, in `dtype`, after refusing one of another shape,
    complex or not finite."""
    start = as_array(start, "start", backend)
    if tuple(start.shape) != shape:
        msg = f"`start` must have the result's shape {shape}, got {tuple(start.shape)}"
        raise ValueError(msg)
    check_real("start", start)
    check_finite("start", start, backend.xp)
    return start.astype(dtype, copy=True)


def deconvolution_dtype(image: Array) -> np.dtype:
    """The dtype `image` is deconvolved in (skimage's rule): float32 for a float16 or float32
    image, else float64."""
    return np.dtype(np.float32 if image.dtype in (np.float16, np.float32) else np.float64)


def check_finite(name: str, a: Array, xp: Any) -> None:
    """Refuse an input `a` (the argument `name`) holding a NaN or inf."""
    if not bool(xp.isfinite(a).all()):
        msg = f"`{name}` must be finite: a NaN or inf would spread over the whole result in a few iterations"
        raise ValueError(msg)


def check_psf(psf: Array, axes: tuple[int, ...], xp: Any) -> None:
    """Refuse a PSF holding a NaN or inf, or one (of a stack) that sums to 0 or less along
    `axes`: it blurs nothing, and the iterations would divide by zero or flip signs."""
    check_finite("psf", psf, xp)
    totals = xp.sum(psf.astype(np.float64), axis=axes)
    if not bool((totals > 0).all()):
        msg = f"`psf` must sum to more than 0 along the deconvolved axes (a blur spreads light, it does not remove it), got sums down to {float(totals.min()):.3g}"
        raise ValueError(msg)


def check_deconvolution(
    image: Array, psf: Array, num_iter: object, filter_epsilon: object, boundary: str, axes: int | Sequence[int] | None
) -> tuple[tuple[int, ...], tuple[int, ...], int, float | None]:
    """Refuse arguments of :func:`richardson_lucy` that do not fit (`image` and `psf` need
    only ``shape``, ``ndim`` and ``dtype``: no sample is read); return the deconvolved
    axes, the result's shape, the number of iterations and the ratio's floor (or None)."""
    for name, a in (("image", image), ("psf", psf)):
        check_real(name, a)
    names = ("image", "psf")
    check_same_ndim(image, psf, names)
    axes = normalize_axes(axes, image.ndim)
    check_broadcast(image, psf, axes, names)
    edge_rule(boundary)
    if not is_int(num_iter):
        msg = f"`num_iter` must be an int, got {num_iter!r}"
        raise TypeError(msg)
    iterations = operator.index(num_iter)  # type: ignore[arg-type]
    if iterations < 0:
        msg = f"`num_iter` must be 0 or more, got {num_iter}"
        raise ValueError(msg)
    floor = None
    if filter_epsilon is not None:
        if isinstance(filter_epsilon, bool) or not isinstance(filter_epsilon, (int, float, np.integer, np.floating)):
            msg = f"`filter_epsilon` must be a real number or None, got {filter_epsilon!r}"
            raise TypeError(msg)
        floor = float(filter_epsilon) or None  # 0 filters nothing, as in skimage
    shape = tuple(n if ax in axes else max(n, k) for ax, (n, k) in enumerate(zip(image.shape, psf.shape)))
    return axes, shape, iterations, floor
