"""`match_template`: normalized cross-correlation, to find a template in an image.

Each output is the Pearson correlation of the template with the window of the image
under it, in [-1, 1]: 1 where the window is the template up to an offset and a positive
scale. It is computed as

``score = sum(window * t) / sqrt(spread(window))``

with ``t`` the template less its mean, scaled to unit norm, and ``spread = sum(window**2)
- sum(window)**2 / n`` (``n`` samples per window). Since ``t`` sums to zero, the
numerator is a plain correlation of the image with ``t``, by any method (the FFT too).

The spread's two terms cancel where a window's mean is far above its spread, so they are
summed in float64, from the image less its mean (a microscope's offset of 1000 counts
costs nothing), and each window's sums add its own samples only: sums of 1, 2, 4, ...
neighbours, doubled (about ``2 log2(k)`` passes per axis). Neither a running sum's
rounding (the whole row's) nor an FFT's (the whole image's) reaches a window's spread,
which would swamp dark, flat regions; a NaN or inf reaches only the windows over it.
For float32 scores on the CPU, axes of :data:`_RUNNING_TAPS` samples or more take
differences of running sums over a slab instead (3 passes), whose rounding stays far
below float32's; with numba's loops, every window of a 2-D image does, its sums, spread
and score made in one pass (:func:`window_scores`). On the CPU this runs in slabs of
about a MiB, on all cores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._methods import compiled_loops, window_scores
from .._plan.plan import check_memory
from .._runtime import config as _config
from .._runtime.backend import Array, Backend, get_backend, on_arrays_device
from .._runtime.scratch import reused
from .._runtime.threads import run_parallel
from .._spec.boundary import EDGE_RULES, EdgeRule, edge_rule, extend, fill_number
from .._spec.problem import as_array, check_broadcast, check_choice, check_real, check_same_ndim, normalize_axes
from .._spec.shapes import mode_padding
from .correlate import MODES, MethodName, Mode, correlate

# A window whose spread is at most this many float64 roundings of its squared sum over n,
# per sample, is flat: its score is 0 (no variance to correlate with).
_FLAT_ROUNDINGS = 1.0
# A template whose deviations from its mean are all within this many roundings of its
# largest sample is constant along the correlated axes: its scores are undefined.
_CONSTANT_ROUNDINGS = 16


@on_arrays_device
def match_template(
    image: Array,
    template: Array,
    mode: Mode = "valid",
    *,
    boundary: EdgeRule = "constant",
    fillvalue: float = 0,
    axes: int | Sequence[int] | None = None,
    method: MethodName = "auto",
) -> Array:
    """Normalized cross-correlation of `template` over `image`: where it matches, and how well.

    Parameters
    ----------
    image : ndarray
        Real data, NumPy or CuPy, any ndim.
    template : ndarray
        Real and finite, the same ndim as `image`, no larger than it along the matched
        axes, and not constant along them.
    mode : {'valid', 'same', 'full'}, optional
        Which windows are scored, as in :func:`correlate`: 'valid' (default) those inside
        the image (``skimage.feature.match_template``'s default), 'same' one centred on
        each sample (skimage's ``pad_input=True``), 'full' every window that overlaps the
        image. Windows past the edges read the samples that `boundary` puts there, which
        count in their mean and variance.
    boundary : {'constant', 'wrap', 'symmetric', 'mirror', 'edge'}, optional
        How `image` continues past its edges, as in :func:`correlate`. Default 'constant'.
    fillvalue : float, optional
        The value past the edges with boundary='constant'. Default 0.
    axes : int or sequence of int, optional
        Axes to match along (default: all). The others are batched: each equal in both
        inputs or 1 in one of them (one template over a stack of frames, or a stack of
        templates over one image).
    method : {'auto', 'direct', 'im2col', 'fft', 'oa'}, optional
        The method of the correlation with the template (see :func:`correlate`). The
        windows' means and variances are always summed directly, in float64.

    Returns
    -------
    ndarray
        The scores, in [-1, 1]: the shape of ``correlate(image, template, mode, axes=axes)``,
        float32 for float32 (or float16, or small integer with a float32 template) data,
        else float64. A window with no variance (all its samples equal, to float64
        rounding) scores 0. A NaN or inf in `image` makes the scores of the windows over
        it NaN, and only those.

    Raises
    ------
    TypeError
        For complex or non-numeric inputs.
    ValueError
        For different ndims, a template larger than the image, constant along the
        matched axes or holding NaN or inf, batch axes that do not broadcast, or an
        unknown `mode`, `boundary` or `method`.

    See Also
    --------
    correlate : The correlation behind the numerator.
    skimage.feature.match_template : The same scores (mode 'valid', or 'same' with
        ``pad_input=True``), by FFT and cumulative sums.

    Notes
    -----
    A window's spread is the difference of its sum of squares and its squared sum over
    ``n``: where the spread is far below the sum of squares (a window of nearly equal
    samples, away from the image's mean), the score loses digits in proportion, on
    every method. By 'fft' or 'oa', the rounding of the correlation with the template
    is also relative to the whole image: in a window whose spread is far below the
    largest window's, it grows by the square root of their ratio (float32 scores lose
    digits there); 'direct' and 'im2col' sum each window's own products.
    :func:`arrayconv.dask.match_template` scores dask arrays block by block.

    Examples
    --------
    >>> import numpy as np
    >>> import arrayconv as ac
    >>> image = np.random.default_rng(0).standard_normal((64, 64))
    >>> scores = ac.match_template(image, image[20:27, 30:35])
    >>> np.unravel_index(np.argmax(scores), scores.shape), round(float(scores.max()), 6)
    ((np.int64(20), np.int64(30)), 1.0)
    """
    backend = get_backend(image=image, template=template)
    xp = backend.xp
    image, template = as_array(image, "image", backend), as_array(template, "template", backend)
    axes, dtype, fill = check_match(image, template, mode, boundary, fillvalue, axes)

    # The image, extended past its edges as `mode` reads it, less its mean: every window
    # is then scored by 'valid' correlations.
    pads = [mode_padding(image.shape[ax], template.shape[ax], mode) for ax in axes]
    _check_memory(image, template, axes, pads, dtype, backend)  # before the extended copy
    shape = _extended_shape(image.shape, axes, pads)
    into = reused("match.x", shape, dtype, backend) if backend.name == "numpy" else None  # no fresh pages each call
    x = extend(xp, image, axes, pads, EDGE_RULES[edge_rule(boundary)], fill, dtype=dtype, into=into)  # not the image
    mean, finite = _finite_mean(x, xp)
    x -= xp.asarray(mean, dtype)

    numerator = correlate(x, centred_template(template, axes, xp).astype(dtype), "valid", method, axes=axes)

    window = tuple(template.shape[ax] for ax in axes)
    scores = xp.empty(numerator.shape, dtype)
    float32_cpu = backend.name == "numpy" and dtype == np.float32 and finite  # may sum by running sums
    compiled = float32_cpu and x.ndim == len(window) == 2 and compiled_loops()  # scored in numba's loops
    offset = _mean_square(x, xp) if float32_cpu and (compiled or max(window) >= _RUNNING_TAPS) else None

    def score_slab(rows: tuple[int, int]) -> None:
        lo, hi = rows
        reach = hi + (window[0] - 1 if axes[0] == 0 else 0)  # the samples the slab's windows read
        if compiled:
            flat = _FLAT_ROUNDINGS * np.finfo(np.float64).eps * math.prod(window)
            window_scores(x[lo:reach], window, offset, numerator[lo:hi], scores[lo:hi], flat)  # type: ignore[arg-type]
            return
        with np.errstate(invalid="ignore"):  # inf - inf where a window holds an inf: NaN
            sums, squares = _window_sums(_slab(x, lo, reach), window, axes, offset, xp)
            scores[lo:hi] = _scores(_slab(numerator, lo, hi), sums, squares, math.prod(window), xp)

    threads = _config.workers() if backend.name == "numpy" else 1  # a GPU's slabs queue on one stream
    run_parallel(_slabs(scores, window[0] if axes[0] == 0 else 1, xp), score_slab, threads)
    return scores


# The windows are scored in slabs along the first axis, each slab's float64 temporaries
# of about this many bytes (more where the window is tall: its rows are read twice): on
# the CPU small enough for the caches, on all cores; on a GPU large enough that the
# launches do not count, and bounded however large the image.
_SLAB_BYTES = 1 << 20
_GPU_SLAB_BYTES = 256 << 20
_SLABS_PER_WINDOW = 4


def _slabs(scores: Array, window_rows: int, xp: Any) -> list[tuple[int, int]]:
    """``(first, end)`` indices along the first axis of `scores` of the slabs to score:
    slabs of :data:`_SLAB_BYTES` (:data:`_GPU_SLAB_BYTES` on a GPU) and at least
    :data:`_SLABS_PER_WINDOW` times the window's height, less one."""
    n = scores.shape[0]
    per_row = max(1, scores.size // n) * 8
    rows = max(1, (_SLAB_BYTES if xp is np else _GPU_SLAB_BYTES) // per_row, _SLABS_PER_WINDOW * (window_rows - 1))
    return [(lo, min(n, lo + rows)) for lo in range(0, n, rows)]


def _slab(a: Array, lo: int, hi: int) -> Array:
    """Indices ``lo:hi`` along the first axis of `a`, or all of it where that axis is
    broadcast (length 1)."""
    return a[lo:hi] if a.shape[0] > 1 else a


def _window_sums(x: Array, window: tuple[int, ...], axes: tuple[int, ...], offset: float | None, xp: Any) -> tuple[Array, Array]:
    """The sums of `x` and of its squares over every window of shape `window` (along
    `axes`) that fits in it, in float64: each a sum of the window's own samples, or with
    an `offset` (NumPy only), along axes of :data:`_RUNNING_TAPS` or more, a difference
    of running sums (see :func:`_running_sums`), of the squares less `offset`. With
    numba's loops and no `offset`: box filters of `x` (read as it is) and of its squares,
    each window's own samples summed in float64 in one pass in cache, on this thread."""
    if xp is np and offset is None and compiled_loops():
        box = np.ones(tuple(window[axes.index(ax)] if ax in axes else 1 for ax in range(x.ndim)))
        with _config.config(workers=1):  # the same settings on every slab's thread
            return correlate(x, box, "valid", "direct", axes=axes), correlate(np.square(x, dtype=np.float64), box, "valid", "direct", axes=axes)
    pair = xp.empty((2, *x.shape), np.float64)
    pair[0] = x
    xp.multiply(pair[0], pair[0], out=pair[1])
    if offset is not None:
        pair[1] -= offset  # keeps the squares' running sums near zero
    for ax, k in zip(axes, window):
        pair = _running_sums(pair, k, ax + 1) if offset is not None and k >= _RUNNING_TAPS else _sliding_sums(pair, k, ax + 1)
    if offset is not None:
        pair[1] += math.prod(window) * offset
    return pair[0], pair[1]


def _sliding_sums(a: Array, k: int, axis: int) -> Array:
    """The sums of every `k` consecutive samples of `a` along `axis`, as a new array: sums
    of 1, 2, 4, ... samples, each two of the last, added where `k` has their bit (about
    ``2 log2(k)`` passes, every output a sum of its own samples)."""
    n, before = a.shape[axis], (slice(None),) * axis

    def part(b: Array, start: int, length: int) -> Array:
        return b[(*before, slice(start, start + length))]

    sums, start, width, run = None, 0, 1, a  # run: the sums of `width` samples from each index
    while True:
        if k & width:
            piece = part(run, start, n - k + 1)
            if sums is None:
                sums = piece.copy()
            else:
                sums += piece
            start += width
        if 2 * width > k:
            return sums
        run = part(run, 0, n - 2 * width + 1) + part(run, width, n - 2 * width + 1)
        width *= 2


# Float32 scores on the CPU sum the windows along axes of this many samples or more as
# differences of running sums: 3 passes whatever the length, against about 2 log2(k) for
# :func:`_sliding_sums`. Alternating in one process, the whole call took 0.64-0.84 of the
# time with 63x63 templates (1024x1024-4096x4096), about the same at 31x31, and 1.02-1.22
# times as long at 15x15. Their rounding is the slab's along the axis, not the window's:
# for float64 scores (kept exact) and with a NaN or inf (which a running sum carries to
# every later window) the sums stay the windows' own.
_RUNNING_TAPS = 32


def _mean_square(x: Array, xp: Any) -> float:
    """About the mean of `x`'s squares, from some 8192 of them in float64 (a float32 dot
    product would overflow past 1.8e19): any constant gives the same window sums, this one
    keeps running sums of the squares less it near zero."""
    sample = x.ravel()[:: max(1, x.size // 8192)].astype(np.float64)
    return float(xp.dot(sample, sample)) / sample.size


def _running_sums(a: Array, k: int, axis: int) -> Array:
    """The sums of every `k` consecutive samples of NumPy array `a` along `axis`, as a new
    array: differences of its running sums from a leading zero (along an axis before the
    last, a row at a time: ``numpy.cumsum`` steps down such an axis one strided column at
    a time, 4158x4158 float64 in 421 ms against 18)."""
    n, before = a.shape[axis], (slice(None),) * axis
    total: Any
    total = np.empty((*a.shape[:axis], n + 1, *a.shape[axis + 1 :]))
    total[(*before, 0)] = 0
    if axis == a.ndim - 1:
        np.cumsum(a, axis=axis, out=total[(*before, slice(1, None))])
    else:
        rows, given = np.moveaxis(total, axis, 0), np.moveaxis(a, axis, 0)
        for i in range(n):
            np.add(rows[i], given[i], out=rows[i + 1])
    return total[(*before, slice(k, n + 1))] - total[(*before, slice(0, n + 1 - k))]


def _scores(numerator: Array, sums: Array, squares: Array, samples: int, xp: Any) -> Array:
    """The windows' scores (float64) from their correlations with the template (centred,
    of unit norm) and their sums and sums of squares (float64, consumed): 0 where a
    window's spread is within rounding of zero, clipped to [-1, 1]."""
    sums *= sums
    sums /= samples  # the squared sum's share of the sum of squares
    squares -= sums  # the spread
    sums *= _FLAT_ROUNDINGS * np.finfo(np.float64).eps * samples
    flat = squares <= sums
    squares[flat] = 1.0
    xp.sqrt(squares, out=squares)
    scores = numerator / squares  # the shape of `numerator`: the batch axes of both inputs
    xp.clip(scores, -1.0, 1.0, out=scores)  # rounding past |1|; NaN stays NaN
    return xp.where(flat, xp.zeros((), scores.dtype), scores)  # `flat` may broadcast over templates


def _extended_shape(shape: tuple[int, ...], axes: tuple[int, ...], pads: list[tuple[int, int]]) -> tuple[int, ...]:
    """`shape` extended by ``pads[i] = (before, after)`` along ``axes[i]``."""
    extended = list(shape)
    for ax, (lo, hi) in zip(axes, pads):
        extended[ax] += lo + hi
    return tuple(extended)


def _check_memory(image: Array, template: Array, axes: tuple[int, ...], pads: list[tuple[int, int]], dtype: np.dtype, backend: Backend) -> None:
    """Refuse, before any work, arrays that the device's memory cannot hold: the extended
    image, its correlation with the template and the scores; warn where the first two,
    the temporaries, exceed the memory budget (:func:`._plan.check_memory`)."""
    extended = _extended_shape(image.shape, axes, pads)
    scores = [n - k + 1 if ax in axes else max(n, k) for ax, (n, k) in enumerate(zip(extended, template.shape))]
    extended_bytes, scores_bytes = math.prod(extended) * dtype.itemsize, math.prod(scores) * dtype.itemsize
    check_memory(
        "match_template",
        (f"the extended image, its correlation with the template and the scores of shape {tuple(scores)}", extended_bytes + 2 * scores_bytes),
        ("the extended image and its correlation with the template", extended_bytes + scores_bytes),
        "match tiles of the image, overlapping by the template less one",
        backend.name,
    )


def check_match(image: Array, template: Array, mode: str, boundary: str, fillvalue: object, axes: int | Sequence[int] | None) -> tuple[tuple[int, ...], np.dtype, float]:
    """Refuse arguments of :func:`match_template` that do not fit (`image` and `template`
    need only ``shape``, ``ndim`` and ``dtype``); return the matched axes, the scores'
    dtype and the fill value."""
    check_choice("mode", mode, MODES)
    fill = _real_fill(fillvalue)
    edge_rule(boundary, "boundary", fill)
    return _check_shapes(image, template, axes), _score_dtype(image, template), fill


def centred_template(template: Array, axes: tuple[int, ...], xp: Any) -> Array:
    """`template` less its mean along `axes`, of unit norm there (float64): the scores'
    scale. ValueError for a template that is not finite or is constant."""
    t = template.astype(np.float64)
    t0 = t - xp.mean(t, axis=axes, keepdims=True)
    _check_template(t0, t, axes, xp)
    t0 /= xp.sqrt(xp.sum(t0 * t0, axis=axes, keepdims=True))
    return t0


def _real_fill(fillvalue: object) -> float:
    """`fillvalue` as a real number; ValueError for a complex one."""
    value = fill_number(fillvalue)
    if isinstance(value, complex):
        msg = f"`fillvalue` must be a real number, got {fillvalue!r}"
        raise ValueError(msg)
    return value


def _check_shapes(image: Array, template: Array, axes: int | Sequence[int] | None) -> tuple[int, ...]:
    """The correlated axes, after refusing complex inputs and shapes that do not fit."""
    for name, a in (("image", image), ("template", template)):
        check_real(name, a, "match the real and imaginary parts, or the magnitude")
    if image.ndim == 0:
        msg = "`image` and `template` must have at least one dimension, got 0-d arrays"
        raise ValueError(msg)
    names = ("image", "template")
    check_same_ndim(image, template, names)
    axes = normalize_axes(axes, image.ndim)
    if any(template.shape[ax] > image.shape[ax] for ax in axes):
        msg = f"`template` must be no larger than `image` along the matched axes, got shapes {template.shape} and {image.shape} with axes={axes}"
        raise ValueError(msg)
    check_broadcast(image, template, axes, names)
    return axes


def _score_dtype(image: Array, template: Array) -> np.dtype:
    """float32 where NumPy's promotion of the inputs is float16 or float32, else float64."""
    promoted = np.result_type(image.dtype, template.dtype)
    return np.dtype(np.float32 if promoted.kind == "f" and promoted.itemsize <= 4 else np.float64)


def _finite_mean(x: Array, xp: Any) -> tuple[float, bool]:
    """The mean of `x`'s finite samples (0 if none), in float64, and whether all of them
    are finite."""
    with np.errstate(invalid="ignore"):  # inf - inf
        mean = float(xp.mean(x, dtype=np.float64))
    if math.isfinite(mean):
        return mean, True
    finite = x[xp.isfinite(x)]
    return (float(xp.mean(finite, dtype=np.float64)) if finite.size else 0.0), False


def _check_template(t0: Array, t: Array, axes: tuple[int, ...], xp: Any) -> None:
    """Refuse a template holding NaN or inf, or whose samples are all equal (to rounding)
    along `axes`."""
    if not bool(xp.isfinite(t).all()):
        msg = "`template` must be finite: a NaN or inf in it would make every score NaN"
        raise ValueError(msg)
    spread = xp.max(xp.abs(t0), axis=axes)
    scale = xp.max(xp.abs(t), axis=axes)
    if bool(xp.any(spread <= _CONSTANT_ROUNDINGS * np.finfo(np.float64).eps * scale)):
        msg = "`template` is constant along the matched axes: its normalized cross-correlation is undefined"
        raise ValueError(msg)
