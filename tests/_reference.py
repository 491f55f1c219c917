"""Float64 references from SciPy, and the comparison every test uses."""

from __future__ import annotations

import sys

import numpy as np
import scipy.signal


def to_numpy(a):
    cp = sys.modules.get("cupy")
    return a.get() if cp is not None and isinstance(a, cp.ndarray) else np.asarray(a)


def _wide(a):
    a = to_numpy(a)
    return a if a.dtype.kind in "iu" else a.astype(np.result_type(a.dtype, np.float64))


def reference_correlate(in1, in2, mode, *, axes=None, flip=False):
    """``scipy.signal.correlate``/``convolve`` (method='direct', float64), looped over batch axes."""
    a, b = _wide(in1), _wide(in2)
    func = scipy.signal.convolve if flip else scipy.signal.correlate
    if axes is None:
        return func(a, b, mode=mode, method="direct")
    axes = sorted(ax % a.ndim for ax in np.atleast_1d(axes))
    rest = [ax for ax in range(a.ndim) if ax not in axes]
    a, b = np.moveaxis(a, rest, range(len(rest))), np.moveaxis(b, rest, range(len(rest)))
    lead = np.broadcast_shapes(a.shape[: len(rest)], b.shape[: len(rest)])
    a = np.broadcast_to(a, lead + a.shape[len(rest) :])
    b = np.broadcast_to(b, lead + b.shape[len(rest) :])
    out = np.stack([func(a[i], b[i], mode=mode, method="direct") for i in np.ndindex(lead)])
    out = out.reshape(lead + out.shape[1:])
    return np.moveaxis(out, range(len(rest)), rest)


def reference_terms(in1, in2, mode, *, axes=None, flip=False):
    """The largest output's terms' 2-norm, ``sqrt(max(|in1|^2 (*) |in2|^2))`` (convolution's
    with `flip`): the scale of rounding where outputs cancel far below their terms (see
    :func:`assert_matches`)."""
    squares = reference_correlate(np.abs(_wide(in1)) ** 2, np.abs(_wide(in2)) ** 2, mode, axes=axes, flip=flip)
    return float(np.sqrt(np.max(squares, initial=0.0)))


def reference_conv(x, w, bias=None, *, stride=1, padding=0, dilation=1, groups=1):
    """Conv layer from SciPy: zero pad, dilate the kernel with zeros, 'valid' channel sums, subsample.

    A conv layer does not conjugate, so `w` is conjugated to undo SciPy's conjugation.
    """
    x, w = _wide(x), _wide(w)
    nd = x.ndim - 2
    stride = (stride,) * nd if np.ndim(stride) == 0 else tuple(stride)
    dilation = (dilation,) * nd if np.ndim(dilation) == 0 else tuple(dilation)
    if padding == "valid":
        padding = 0
    if padding == "same":
        total = [d * (k - 1) for k, d in zip(w.shape[2:], dilation)]
        pads = [(t // 2, t - t // 2) for t in total]
    else:
        padding = (padding,) * nd if np.ndim(padding) == 0 else tuple(padding)
        pads = [(p, p) for p in padding]
    x = np.pad(x, [(0, 0), (0, 0), *pads])
    dilated = np.zeros(
        w.shape[:2] + tuple(d * (k - 1) + 1 for k, d in zip(w.shape[2:], dilation)), w.dtype
    )
    dilated[(..., *(slice(None, None, d) for d in dilation))] = w
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    rows = []
    for b in range(x.shape[0]):
        outs = []
        for o in range(w.shape[0]):
            g = o // og
            full = scipy.signal.correlate(
                x[b, g * cg : (g + 1) * cg], np.conj(dilated[o]), mode="valid", method="direct"
            )[0]
            outs.append(full[tuple(slice(None, None, s) for s in stride)])
        rows.append(np.stack(outs))
    y = np.stack(rows)
    if bias is not None:
        y = y + _wide(bias).reshape(-1, *(1,) * nd)
    return y


def reference_conv_terms(x, w, **options):
    """:func:`reference_terms` of a conv layer: ``sqrt(max(conv(|x|^2, |w|^2)))``."""
    squares = reference_conv(np.abs(_wide(x)) ** 2, np.abs(_wide(w)) ** 2, **options)
    return float(np.sqrt(np.max(squares, initial=0.0)))


TOLERANCE = {np.dtype(np.float32): 1e-5, np.dtype(np.complex64): 1e-5, np.dtype(np.float16): 2e-3}


def assert_matches(actual, ref, *, dtype, backend="numpy", bound=0.0, terms=0.0):
    """Assert dtype, shape, backend and the error relative to max|ref| (exact for integers).

    `terms` is the largest output's terms' 2-norm, ``sqrt(max(|x|^2 (*) |w|^2))``: where the
    outputs cancel far below it (a single output of a short kernel), rounding scales with
    the terms, not with the result, and the error is relative to `terms` instead. Where
    every reference output is exactly zero (each reads only zero padding), the error is
    relative to `bound`: the largest an output could be from the inputs' magnitudes
    (``max|x| sum|w|``), the scale of an FFT's rounding.
    """
    dtype = np.dtype(dtype)
    assert type(actual).__module__.split(".")[0] == backend, type(actual)
    assert actual.dtype == dtype, (actual.dtype, dtype)
    actual = to_numpy(actual)
    assert actual.shape == ref.shape, (actual.shape, ref.shape)
    if dtype.kind in "iu":
        np.testing.assert_array_equal(actual, ref.astype(dtype))
        return
    tol = TOLERANCE.get(dtype, 1e-12)
    scale = max(float(np.max(np.abs(ref), initial=0.0)), terms) or bound or np.finfo(np.float64).tiny
    err = float(np.max(np.abs(actual.astype(ref.dtype) - ref))) / scale
    assert err <= tol, f"max relative error {err:.2e} > {tol:.1e}"


def random(rng, shape, dtype):
    """Random data of `dtype`: normal floats, complex with both parts, small-range integers."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -50), min(info.max, 50), size=shape, endpoint=True).astype(dtype)
    data = rng.standard_normal(shape)
    if dtype.kind == "c":
        data = data + 1j * rng.standard_normal(shape)
    return data.astype(dtype)


# arrayconv's edge rules -> numpy.pad's mode and scipy.ndimage's (written out here, not read from arrayconv)
NUMPY_PAD = {"constant": "constant", "wrap": "wrap", "symmetric": "symmetric", "mirror": "reflect", "edge": "edge"}
NDIMAGE_MODES = {"constant": "constant", "wrap": "wrap", "symmetric": "reflect", "mirror": "mirror", "edge": "nearest"}
EDGE_RULES = tuple(NUMPY_PAD)
# the other libraries' names arrayconv takes as aliases
EDGE_ALIASES = {"fill": "constant", "zeros": "constant", "circular": "wrap", "symm": "symmetric", "nearest": "edge", "replicate": "edge"}


def _windows(image, kernel_shape, axes, mode, boundary, fillvalue=0):
    """The windows of `image` (float64) under a kernel of `kernel_shape` along `axes`, the
    image extended by ``numpy.pad`` as `mode` and `boundary` read it: each output's window
    on the last ``len(axes)`` axes."""
    pads = [(0, 0)] * image.ndim
    for ax in axes:
        k = kernel_shape[ax]
        pads[ax] = {"valid": (0, 0), "same": (k // 2, (k - 1) // 2), "full": (k - 1, k - 1)}[mode]
    boundary = EDGE_ALIASES.get(boundary, boundary)
    extra = {"constant_values": fillvalue} if boundary == "constant" else {}
    x = np.pad(_wide(image).astype(np.float64), pads, mode=NUMPY_PAD[boundary], **extra)
    return np.lib.stride_tricks.sliding_window_view(x, [kernel_shape[a] for a in axes], axis=axes)


def _as_window(kernel, axes):
    """`kernel` (float64) laid out to broadcast against :func:`_windows`: its batch axes
    first (1 along `axes`), then its window."""
    nd = kernel.ndim
    k = np.moveaxis(_wide(kernel).astype(np.float64), axes, range(nd - len(axes), nd))
    return k.reshape([kernel.shape[a] if a not in axes else 1 for a in range(nd)] + [kernel.shape[a] for a in axes])


def _normal_axes(axes, nd):
    return tuple(range(nd)) if axes is None else tuple(sorted(a % nd for a in np.atleast_1d(axes)))


def reference_match_template(image, template, mode="valid", *, boundary="constant", fillvalue=0, axes=None, spread=False):
    """Normalized cross-correlation by its definition, in float64: each window of the image
    (extended by ``numpy.pad`` as `mode` and `boundary` read it) and the template, each
    less its own mean, their dot product over the product of their norms; 0 for a window
    with no spread, NaN for one holding a NaN or inf. With `spread`, also each window's
    spread (its samples' squared deviations from their mean, summed)."""
    nd = image.ndim
    axes = _normal_axes(axes, nd)
    windows = _windows(image, template.shape, axes, mode, boundary, fillvalue)
    ends = tuple(range(nd, nd + len(axes)))  # the windows' own axes
    t = _as_window(template, axes)
    with np.errstate(invalid="ignore"):
        w = windows - windows.mean(axis=ends, keepdims=True)
        t = t - t.mean(axis=ends, keepdims=True)
        spreads = (w * w).sum(axis=ends)
        scores = np.where(spreads == 0, 0.0, (w * t).sum(axis=ends) / np.sqrt(spreads * (t * t).sum(axis=ends)))
    return (scores, spreads) if spread else scores


def reference_richardson_lucy(image, psf, num_iter, *, boundary="constant", axes=None, filter_epsilon=None, clip=False, start=None):
    """Richardson-Lucy by skimage's steps, in float64, each filter by its definition: the
    estimate (`start`, or 0.5) times the ratio of the image to its blur (plus 1e-12; 0 where
    that is under `filter_epsilon`) correlated with the PSF, both 'same' with `boundary`."""
    nd = image.ndim
    axes = _normal_axes(axes, nd)
    ends = tuple(range(nd, nd + len(axes)))
    flipped = np.flip(psf, axis=axes)

    def correlate_same(x, kernel):
        return (_windows(x, kernel.shape, axes, "same", boundary) * _as_window(kernel, axes)).sum(axis=ends)

    image = _wide(image).astype(np.float64)
    shape = [n if ax in axes else max(n, k) for ax, (n, k) in enumerate(zip(image.shape, psf.shape))]
    estimate = np.full(shape, 0.5) if start is None else _wide(start).astype(np.float64)
    for _ in range(num_iter):
        blurred = correlate_same(estimate, flipped) + 1e-12
        ratio = image / blurred
        if filter_epsilon:
            ratio[blurred < filter_epsilon] = 0
        estimate = estimate * correlate_same(ratio, psf)
    return np.clip(estimate, -1, 1) if clip else estimate


def assert_scores_match(got, ref, spreads, *, dtype, backend):
    """:func:`assert_matches` on the scores, each error scaled down by how far its window's
    spread is below the largest: an FFT's rounding of the correlation with the template is
    the whole image's, and dividing by a window's small norm magnifies it there."""
    assert type(got).__module__.split(".")[0] == backend, type(got)
    assert got.dtype == np.dtype(dtype) and got.shape == ref.shape, (got.dtype, got.shape, ref.shape)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # flat windows: 0 / 0
        scale = np.sqrt(np.fmax(1.0, spreads.max() / spreads))
    err = np.abs(to_numpy(got) - ref) / scale
    assert err.max() <= (1e-5 if dtype == "float32" else 1e-12), f"max scaled error {err.max():.2e}"
