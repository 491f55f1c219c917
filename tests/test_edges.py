"""Boundary rules and NaN policies, every method, against SciPy (and astropy, torch)."""

import numpy as np
import pytest
import scipy.ndimage
import scipy.signal
from _reference import EDGE_RULES, NDIMAGE_MODES, NUMPY_PAD, assert_matches, random, reference_conv, reference_correlate, to_numpy
from _strategies import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import arrayconv as ac
from arrayconv._spec.shapes import mode_padding

METHODS = ["auto", *ac.METHODS]
SIGNAL_BOUNDARIES = {"constant": "fill", "wrap": "wrap", "symmetric": "symm"}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("boundary", list(NDIMAGE_MODES))
@settings(max_examples=examples(15))
@given(
    shape=st.lists(st.integers(1, 12), min_size=1, max_size=3),
    kernel=st.lists(st.integers(1, 7), min_size=3, max_size=3),
    dtype=st.sampled_from(["float32", "float64"]),
    seed=st.integers(0, 2**16),
)
def test_same_matches_ndimage(xp, method, boundary, shape, kernel, dtype, seed):
    """'same' with a boundary rule is scipy.ndimage.correlate with that mode (kernels may exceed the image)."""
    rng = np.random.default_rng(seed)
    x, k = random(rng, shape, dtype), random(rng, kernel[: len(shape)], dtype)
    fill = float(rng.standard_normal())
    got = ac.correlate(xp.asarray(x), xp.asarray(k), "same", method, boundary=boundary, fillvalue=fill)
    x64, k64, mode = x.astype(np.float64), k.astype(np.float64), NDIMAGE_MODES[boundary]
    ref = scipy.ndimage.correlate(x64, k64, mode=mode, cval=fill)
    terms = np.sqrt(np.max(scipy.ndimage.correlate(x64**2, k64**2, mode=mode, cval=fill**2)))
    assert_matches(got, ref, dtype=dtype, backend=xp.__name__, terms=terms)
    flipped = ac.convolve(xp.asarray(x), xp.asarray(k), "same", method, boundary=boundary, fillvalue=fill)
    if all(n % 2 for n in k.shape):  # ndimage centres even kernels of convolve differently
        ref = scipy.ndimage.convolve(x64, k64, mode=mode, cval=fill)
        terms = np.sqrt(np.max(scipy.ndimage.convolve(x64**2, k64**2, mode=mode, cval=fill**2)))
        assert_matches(flipped, ref, dtype=dtype, backend=xp.__name__, terms=terms)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("boundary", [b for b in EDGE_RULES if b != "constant"])
@pytest.mark.parametrize("shape, kernel", [((2,), (31,)), ((3,), (35,)), ((2, 5), (17, 24))])
def test_halos_longer_than_the_image_repeat_the_rule(xp, method, boundary, shape, kernel, rng):
    """A kernel many times the image's length extends it by the rule repeated, as
    numpy.pad: scipy.ndimage's 'reflect' departs from it there (2 samples under 31 taps),
    so the reference is numpy.pad's extension correlated in mode 'valid'."""
    x, k = random(rng, shape, "float64"), random(rng, kernel, "float64")
    widths = [(n - 1 - (n - 1) // 2, (n - 1) // 2) for n in kernel]  # 'same' centring, as SciPy
    ref = scipy.signal.correlate(np.pad(x, widths, mode=NUMPY_PAD[boundary]), k, "valid")
    got = ac.correlate(xp.asarray(x), xp.asarray(k), "same", method, boundary=boundary)
    assert_matches(got, ref, dtype="float64", backend=xp.__name__)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("boundary", list(SIGNAL_BOUNDARIES))
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("kernel", [(3, 5), (4, 2), (9, 12)])
@pytest.mark.parametrize("dtype", ["float64", "complex128", "float32"])
def test_2d_matches_signal_convolve2d(xp, method, boundary, mode, kernel, dtype, rng):
    x, k = random(rng, (7, 10), dtype), random(rng, kernel, dtype)
    if mode == "valid" and kernel[0] > 7:
        x, k = k, x  # valid needs one input to cover the other
    got = ac.convolve(xp.asarray(x), xp.asarray(k), mode, method, boundary=boundary, fillvalue=0.5)
    ref = scipy.signal.convolve2d(x.astype(np.complex128), k.astype(np.complex128), mode, boundary=SIGNAL_BOUNDARIES[boundary], fillvalue=0.5)
    assert_matches(got, ref if dtype[0] == "c" else ref.real, dtype=dtype, backend=xp.__name__)
    if mode == "full" or all(n % 2 for n in kernel):  # correlate2d's 'same' is off by one for even kernels
        got = ac.correlate(xp.asarray(x), xp.asarray(k), mode, method, boundary=boundary, fillvalue=0.5)
        ref = scipy.signal.correlate2d(x.astype(np.complex128), k.astype(np.complex128), mode, boundary=SIGNAL_BOUNDARIES[boundary], fillvalue=0.5)
        assert_matches(got, ref if dtype[0] == "c" else ref.real, dtype=dtype, backend=xp.__name__)


def test_batched_axes_extend_only_the_correlated_axes(rng):
    x, k = random(rng, (3, 20), "float64"), random(rng, (3, 6), "float64")
    got = ac.correlate(x, k, "same", axes=-1, boundary="wrap")
    ref = np.stack([scipy.ndimage.correlate1d(x[i], k[i], mode="wrap") for i in range(3)])
    assert_matches(got, ref, dtype="float64")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("padding_mode", ["mirror", "edge", "wrap", "symmetric"])
@pytest.mark.parametrize("options", [dict(padding=2), dict(padding="same", dilation=2), dict(padding=(1, 3), stride=2, groups=2)])
def test_conv_padding_modes(xp, method, padding_mode, options, rng):
    x, w = random(rng, (2, 4, 9, 11), "float64"), random(rng, (6, 4 // options.get("groups", 1), 4, 3), "float64")
    got = ac.conv(xp.asarray(x), xp.asarray(w), method=method, padding_mode=padding_mode, **options)
    numpy_mode = NUMPY_PAD[padding_mode]
    padding = options["padding"]
    if padding == "same":
        total = [2 * (k - 1) for k in w.shape[2:]]
        pads = [(t // 2, t - t // 2) for t in total]
    else:
        pads = [(p, p) for p in ((padding,) * 2 if isinstance(padding, int) else padding)]
    padded = np.pad(x, [(0, 0), (0, 0), *pads], mode=numpy_mode)
    rest = {k: v for k, v in options.items() if k != "padding"}
    assert_matches(got, reference_conv(padded, w, **rest), dtype="float64", backend=xp.__name__)


def test_conv_padding_modes_match_torch(rng):
    torch = pytest.importorskip("torch")
    x, w = random(rng, (1, 3, 12, 13), "float64"), random(rng, (5, 3, 5, 4), "float64")
    for mode, ours in [("reflect", "mirror"), ("replicate", "replicate"), ("circular", "circular"), ("zeros", "zeros")]:
        layer = torch.nn.Conv2d(3, 5, (5, 4), padding=(2, 1), padding_mode=mode, bias=False, dtype=torch.float64)
        layer.weight.data = torch.tensor(w)
        ref = layer(torch.tensor(x)).detach().numpy()
        assert_matches(ac.conv(x, w, padding=(2, 1), padding_mode=ours), ref, dtype="float64")


# Lengths where the FFT wraps natively (fast lengths) and where it extends first (primes).
PERIODS = [8, 12, 15, 16, 11, 13, 17]


def wrapped(x, axes, pads):
    """`x` extended periodically by `pads` along `axes` (the reference's padding)."""
    widths = [(0, 0)] * x.ndim
    for ax, pad in zip(axes, pads):
        widths[ax] = pad
    return np.pad(x, widths, mode="wrap")


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=examples(25))
@given(
    shape=st.lists(st.sampled_from(PERIODS), min_size=1, max_size=2),
    kernel=st.lists(st.integers(1, 20), min_size=2, max_size=2),
    mode=st.sampled_from(["full", "same", "valid"]),
    dtype=st.sampled_from(["float32", "float64", "complex128"]),
    flip=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_wrap_every_mode_matches_periodic_extension(xp, method, shape, kernel, mode, dtype, flip, seed):
    """boundary='wrap' is the input extended periodically, then 'valid': also for kernels
    longer than a period (wrapping more than once) and 'full' outputs longer than one.
    'valid' reads nothing past the edges: SciPy's result, also where `in2` is the larger
    (SciPy swaps them; their zero padding was taken as periodic: [16, 16] for [10, 6])."""
    rng = np.random.default_rng(seed)
    x, k = random(rng, shape, dtype), random(rng, kernel[: len(shape)], dtype)
    if mode == "valid" and any(m > n for n, m in zip(x.shape, k.shape)) and any(m < n for n, m in zip(x.shape, k.shape)):
        return  # neither input covers the other: SciPy refuses it (test_errors)
    lo = [{"full": m - 1, "same": m // 2, "valid": 0}[mode] for m in k.shape]
    hi = [{"full": m - 1, "same": m - 1 - low, "valid": 0}[mode] for m, low in zip(k.shape, lo)]
    extended = x if mode == "valid" else wrapped(x, range(x.ndim), list(zip(lo, hi)))
    func = ac.convolve if flip else ac.correlate
    got = func(xp.asarray(x), xp.asarray(k), mode, method, boundary="wrap")
    terms = np.sqrt(np.max(reference_correlate(np.abs(extended) ** 2, np.abs(k) ** 2, "valid", flip=flip)))
    assert_matches(got, reference_correlate(extended, k, "valid", flip=flip), dtype=dtype, backend=xp.__name__, terms=terms)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("boundary", NDIMAGE_MODES)
@pytest.mark.parametrize("nan", ["propagate", "normalize"])
def test_valid_with_the_larger_kernel_reads_nothing_past_the_edges(xp, method, boundary, nan, rng):
    """'valid' with `in2` larger than `in1` on every axis is SciPy's swapped correlation, whatever
    the boundary rule (as scipy.signal.correlate2d): 'wrap' once took its zero padding as
    periodic ([16, 16] for [2] with [3, 5], where SciPy gives [10, 6]), and so did the NaN masks."""
    x, k = random(rng, (4, 5), "float64"), rng.random((7, 6)) + 0.1
    if nan == "normalize":
        x[1, 2] = np.nan  # (under 'propagate' every output would cover it)
    for func, flip in ((ac.correlate, False), (ac.convolve, True)):
        got = func(xp.asarray(x), xp.asarray(k), "valid", method, boundary=boundary, fillvalue=2.5, nan=nan)
        reference = normalized_reference(x, k[::-1, ::-1] if flip else k, "valid") if nan == "normalize" else reference_correlate(x, k, "valid", flip=flip)
        assert_nan_matches(got, reference, "float64", xp.__name__)
    one = np.array([2.0])
    assert ac.correlate(xp.asarray(one), xp.asarray(np.array([3.0, 5.0])), "valid", method, boundary=boundary).tolist() == [10.0, 6.0]


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=examples(20))
@given(
    spatial=st.lists(st.sampled_from(PERIODS), min_size=2, max_size=2),
    kernel=st.lists(st.integers(1, 6), min_size=2, max_size=2),
    padding=st.lists(st.integers(0, 14), min_size=2, max_size=2),
    stride=st.integers(1, 3),
    dilation=st.integers(1, 2),
    seed=st.integers(0, 2**16),
)
def test_conv_circular_matches_periodic_extension(xp, method, spatial, kernel, padding, stride, dilation, seed):
    """padding_mode='circular' with stride, dilation and padding up to about a period."""
    rng = np.random.default_rng(seed)
    x, w = random(rng, (2, 3, *spatial), "float64"), random(rng, (4, 3, *kernel), "float64")
    extended = wrapped(x, (2, 3), [(p, p) for p in padding])
    if any((k - 1) * dilation >= n for n, k in zip(extended.shape[2:], kernel)):
        return
    got = ac.conv(xp.asarray(x), xp.asarray(w), padding=tuple(padding), stride=stride, dilation=dilation, padding_mode="circular", method=method)
    assert_matches(got, reference_conv(extended, w, stride=stride, dilation=dilation), dtype="float64", backend=xp.__name__)


def test_wrap_is_native_to_the_fft():
    """At a fast length the FFT runs at the input's own length (no padding); at a prime
    length it runs on the periodically extended input, rounded up to a fast length."""
    from arrayconv._api.correlate import Edges, correlate_spec
    from arrayconv._methods.fft import fft_shape
    from arrayconv._runtime.backend import get_backend
    from arrayconv._spec.problem import ArraySpec

    k = np.ones((7, 5))
    for shape, expected in [((64, 60), (64, 60)), ((61, 60), (72, 60))]:
        spec, _ = correlate_spec(ArraySpec(shape, np.dtype(np.float64)), k, get_backend(), "same", "fft", None, flip=False, x_bound=1, edges=Edges("wrap"))
        assert spec.problem.circular and spec.extend is None
        assert fft_shape(spec.problem, get_backend()) == expected


@pytest.mark.parametrize("method", METHODS)
def test_wrap_nan_propagates_around_the_period(xp, method, rng):
    x, k = random(rng, (16, 15), "float64"), random(rng, (5, 4), "float64")
    x[0, 14] = np.nan  # a corner: its footprint wraps to the three other corners
    ref = reference_correlate(wrapped(x, (0, 1), [(2, 2), (2, 1)]), k, "valid")
    got = ac.correlate(xp.asarray(x), xp.asarray(k), "same", method, boundary="wrap")
    assert_nan_matches(got, ref, "float64", xp.__name__)
    assert np.isnan(ref[-1, 0]) and np.isnan(ref[0, 0])


def with_nans(rng, shape, dtype, count=3):
    x = random(rng, shape, dtype)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, size=count, replace=False)] = np.nan
    return x


def assert_nan_matches(got, ref, dtype, backend="numpy"):
    """Same NaN positions; the other samples within tolerance."""
    got_np = to_numpy(got)
    assert type(got).__module__.split(".")[0] == backend
    np.testing.assert_array_equal(np.isnan(got_np), np.isnan(ref))
    finite = ~np.isnan(ref)
    assert finite.any()
    assert_matches(np.where(finite, got_np, 0).astype(dtype), np.where(finite, ref, 0), dtype=dtype)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_nan_propagates_over_the_footprint_only(xp, method, mode, dtype, rng):
    x, k = with_nans(rng, (40, 37), dtype), random(rng, (6, 5), dtype)
    k[2, 3] = 0  # a zero tap still carries NaN, as SciPy's direct sum (NaN * 0 = NaN)
    ref = scipy.signal.correlate(x.astype(np.complex128), k.astype(np.complex128), mode, method="direct")
    ref = ref if dtype[0] == "c" else ref.real
    for func, reference in [(ac.correlate, ref)]:
        assert_nan_matches(func(xp.asarray(x), xp.asarray(k), mode, method), reference, dtype, xp.__name__)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "x_shape, w_shape, options",
    [
        ((2, 4, 16, 15), (6, 2, 3, 4), dict(padding=2, stride=(1, 2), groups=2)),
        ((64, 2, 4, 4), (3, 2, 3, 3), dict(padding=1)),  # tiny images: im2col's operator matrix
    ],
)
def test_conv_nan_propagates_over_the_footprint_only(xp, method, x_shape, w_shape, options, rng):
    x, w = with_nans(rng, x_shape, "float64"), random(rng, w_shape, "float64")
    assert_nan_matches(ac.conv(xp.asarray(x), xp.asarray(w), method=method, **options), reference_conv(x, w, **options), "float64", xp.__name__)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("func", [ac.correlate, ac.convolve])
def test_nan_stays_in_its_footprint_where_scipy_swaps_the_inputs(xp, method, func, rng):
    """In mode 'full' with `in2` the larger (more samples), SciPy's direct method swaps the
    inputs and slides the image over the zero-padded kernel, so a NaN times those zeros
    makes every output NaN. arrayconv keeps the NaN in its footprint, as in every other case."""
    x, k = random(rng, (5, 2, 3), "float64"), random(rng, (4, 6, 2), "float64")
    x[3, 1, 0] = np.nan
    scipy_func = scipy.signal.correlate if func is ac.correlate else scipy.signal.convolve
    assert np.isnan(scipy_func(x, k, "full", method="direct")).all()
    footprint = scipy_func(np.isnan(x).astype(float), np.ones(k.shape), "full", method="direct") > 0.5
    got = to_numpy(func(xp.asarray(x), xp.asarray(k), "full", method))
    np.testing.assert_array_equal(np.isnan(got), footprint)
    assert_matches(np.where(footprint, 0, got), np.where(footprint, 0, scipy_func(np.nan_to_num(x), k, "full")), dtype="float64")


@pytest.mark.parametrize("method", ["fft", "direct"])
def test_inf_reaches_only_its_footprint(method, rng):
    x, k = random(rng, (30, 30), "float64"), random(rng, (5, 5), "float64")
    x[3, 4] = np.inf
    got = ac.correlate(x, k, "same", method)
    ref = scipy.signal.correlate(x, k, "same", method="direct")
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref))


def test_nan_raise_fill_ignore(rng):
    x, k = with_nans(rng, (20, 20), "float64"), random(rng, (3, 3), "float64")
    with pytest.raises(ValueError, match="`in1` contains NaN and nan='raise'"):
        ac.correlate(x, k, nan="raise")
    with pytest.raises(ValueError, match="`in2` contains NaN"):
        ac.correlate(k, x, nan="raise")
    filled = ac.correlate(x, k, "same", nan="fill", fillvalue=2.5)
    ref = scipy.ndimage.correlate(np.where(np.isnan(x), 2.5, x), k, mode="constant", cval=2.5)  # edges hold fillvalue too
    assert_matches(filled, ref, dtype="float64")
    assert np.isnan(ac.correlate(x, k, "same", "fft", nan="ignore")).all()
    with pytest.raises(ValueError, match="`nan` must be one of"):
        ac.correlate(x, k, nan="skip")


def normalized_reference(x, k, mode):
    """Normalized convolution from SciPy direct correlations; samples past the edges are data
    (zeros), except in 'valid', which reads none (where `k` is the larger, SciPy's swapped
    correlation: only the image's samples weigh)."""
    missing = np.isnan(x)
    top = scipy.signal.correlate(np.where(missing, 0, x), k, mode, method="direct")
    pads = [mode_padding(n, m, mode) for n, m in zip(x.shape, k.shape)]
    present = np.pad((~missing).astype(float), pads, constant_values=mode != "valid")
    weight = scipy.signal.correlate(present, k, "valid", method="direct")  # exactly 0 where every sample is missing
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight == 0, np.nan, top / np.where(weight == 0, 1, weight))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_nan_normalize(xp, method, mode, rng):
    x, k = with_nans(rng, (30, 33), "float64", count=40), rng.random((5, 4)) + 0.1
    x[:6, :6] = np.nan  # a hole wider than the kernel: NaN in its middle
    got = ac.correlate(xp.asarray(x), xp.asarray(k), mode, method, nan="normalize")
    assert_nan_matches(got, normalized_reference(x, k, mode), "float64", xp.__name__)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_nan_normalize_gives_nan_where_every_sample_is_missing(xp, method, dtype, rng):
    """Where an output covers only NaN, FFT's weight is rounded, not 0: the output was its
    rounding divided by rounding (323-243j), not NaN."""
    x, k = random(rng, (5, 7, 6), dtype), rng.random((4, 4, 3)) + 0.2
    x[2:, :3, :3] = np.nan  # a corner hole that 'nearest' carries past the edges
    got = ac.correlate(xp.asarray(x), xp.asarray(k), "full", method, boundary="nearest", nan="normalize")
    extended = np.pad(x, [(3, 3), (3, 3), (2, 2)], mode="edge")
    missing = np.isnan(extended)
    top = scipy.signal.correlate(np.where(missing, 0, extended), k, "valid", method="direct")
    weight = scipy.signal.correlate((~missing).astype(float), k, "valid", method="direct")  # exactly 0 where all are missing
    with np.errstate(invalid="ignore"):
        assert_nan_matches(got, top / weight, dtype, xp.__name__)
    assert np.isnan(to_numpy(got)[5:, :3, :3]).all()  # the outputs that cover only the hole


@pytest.mark.parametrize(("shape", "kernel", "weights_by"), [((12, 13), (3, 3), "direct"), ((70, 64), (31, 30), "fft")])
def test_nan_normalize_counts_samples_only_where_weights_are_rounded(shape, kernel, weights_by, rng):
    """The samples present in each footprint are counted (one more correlation, the rule's
    'reach') only where the weights come from a method that does not sum the footprint's
    products: direct's weights are 0 exactly where every sample is missing (a 32x32
    float64 image with a 3x3 kernel: 52 us a call before, 37 now)."""
    x, k = random(rng, shape, "float64"), rng.random(kernel) + 0.2
    x[2:-2, 2:-2][: kernel[0] + 2, : kernel[1] + 2] = np.nan  # a hole wider than the kernel
    plan = ac.plan_correlate(k, shape, "same", nan="normalize", dtype="float64")
    got = plan(x)
    weigh = plan._masks["weigh"]
    assert weigh.method == weights_by and ("reach" in plan._masks) == (weights_by == "fft")
    assert np.isnan(got[kernel[0] // 2 + 3, kernel[1] // 2 + 3])  # an output that covers only the hole
    assert_nan_matches(got, normalized_reference(x, k, "same"), "float64", "numpy")


@pytest.mark.parametrize("method", METHODS)
def test_nan_normalize_divides_integer_data_too(xp, method, rng):
    """Integers hold no NaN, but the outputs are still divided by the kernel weight (they
    were returned undivided: 10x too large for a kernel summing to 10)."""
    x, k = random(rng, (17, 20), "uint16"), rng.random((5, 4)) + 0.1
    for mode in ("full", "same"):
        ref = normalized_reference(x.astype(np.float64), k, mode)
        assert_matches(ac.correlate(xp.asarray(x), xp.asarray(k), mode, method, nan="normalize"), ref, dtype="float64", backend=xp.__name__)
        plan = ac.plan_correlate(xp.asarray(k), x.shape, mode, method, nan="normalize", dtype=x.dtype)
        assert_matches(plan(xp.asarray(x)), ref, dtype="float64", backend=xp.__name__)
    got = ac.conv(xp.asarray(x[None, None]), xp.asarray(k[None, None]), padding=2, method=method, nan="normalize")
    ref = ac.conv(x[None, None].astype(np.float64), k[None, None], padding=2, method="direct", nan="normalize")
    assert_matches(got, ref, dtype="float64", backend=xp.__name__)


def test_nan_normalize_refuses_integer_results(rng):
    x, k = random(rng, (10, 12), "int32"), random(rng, (3, 3), "int32")
    match = "nan='normalize' divides each output by its kernel weight, which a result of dtype int32 cannot hold"
    with pytest.raises(ValueError, match=match):
        ac.correlate(x, k, nan="normalize")
    with pytest.raises(ValueError, match=match):
        ac.plan_correlate(k, x.shape, nan="normalize", dtype=x.dtype)
    with pytest.raises(ValueError, match=match):
        ac.conv(x[None, None], k[None, None], nan="normalize")
    with pytest.raises(ValueError, match=match):
        ac.correlate_into(x, k, np.zeros((12, 14), np.int32), "full", nan="normalize")


def test_nan_normalize_weighs_by_each_calls_kernel(rng):
    """Calls of one shape share their cached layout; the weights come from each call's kernel."""
    x = with_nans(rng, (20, 24), "float64", count=30)
    for k in (rng.random((3, 5)) + 0.1, rng.random((3, 5)) + 2.0):
        for method in ("direct", "fft"):
            got = ac.correlate(x, k, "same", method, nan="normalize")
            assert_nan_matches(got, normalized_reference(x, k, "same"), "float64")


def test_nan_normalize_matches_astropy(rng):
    convolution = pytest.importorskip("astropy.convolution")
    x, k = with_nans(rng, (40, 50), "float64", count=60), rng.random((5, 7)) + 0.1
    got = ac.convolve(x, k, "same", nan="normalize")
    ref = convolution.convolve(x, k, boundary="fill", fill_value=0, nan_treatment="interpolate", normalize_kernel=True)
    assert_matches(got, ref, dtype="float64")


def test_conv_nan_normalize_adds_bias_after(rng):
    x, w, bias = with_nans(rng, (1, 1, 12, 12), "float64"), rng.random((1, 1, 3, 3)) + 0.1, np.array([5.0])
    got = ac.conv(x, w, bias, padding=1, nan="normalize")
    ref = normalized_reference(x[0, 0], w[0, 0], "same") + 5.0
    assert_nan_matches(got[0, 0], ref, "float64")


@pytest.mark.parametrize("pad_mode", ["constant", "wrap", "edge", "symmetric", "reflect"])
def test_extend_is_numpy_pad(xp, pad_mode, rng):
    """The boundary extension (its edges copied from its own middle by slices, or numpy.pad
    for pads longer than the axis) gives numpy.pad's samples, corners included."""
    from arrayconv._spec.boundary import extend

    for _ in range(150):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(n) for n in rng.integers(1 + (pad_mode == "reflect"), 6, ndim))
        axes = sorted(rng.choice(ndim, int(rng.integers(1, ndim + 1)), replace=False).tolist())
        pads = [(int(rng.integers(0, 9)), int(rng.integers(0, 9))) for _ in axes]
        a = random(rng, shape, "float64")
        widths = [(0, 0)] * ndim
        for ax, pad in zip(axes, pads):
            widths[ax] = pad
        fill = {"constant_values": 2.5} if pad_mode == "constant" else {}
        got = extend(xp, xp.asarray(a), axes, pads, pad_mode, 2.5)
        np.testing.assert_array_equal(to_numpy(got), np.pad(a, widths, mode=pad_mode, **fill))
    assert extend(xp, xp.asarray(np.arange(3, dtype=np.int16)), [0], [(1, 1)], "constant", 0.5, np.dtype(np.float64)).dtype == np.float64


def test_boundary_errors(rng):
    x, k = random(rng, (8, 8), "float64"), random(rng, (3, 3), "float64")
    with pytest.raises(ValueError, match="`boundary` must be one of"):
        ac.correlate(x, k, boundary="periodic")
    with pytest.raises(ValueError, match="`padding_mode` must be one of"):
        ac.conv(x[None, None], k[None, None], padding_mode="periodic")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "x_dtype, k_dtype, fillvalue",
    [
        ("int16", "float64", 0.5),  # the int16 image's fill reads 0.5, not 0
        ("float32", "float64", 0.211),  # not rounded to float32
        ("float64", "complex128", 1.5j),  # a real image's fill holds the imaginary part
        ("int64", "int64", 2**41 + 3),  # too large for FFT to sum exactly
    ],
)
def test_fillvalue_is_cast_to_the_results_dtype(xp, method, x_dtype, k_dtype, fillvalue, rng):
    """As SciPy: `fillvalue` is taken in the result's dtype, not the image's."""
    x, k = random(rng, (9, 12), x_dtype), random(rng, (5, 3), k_dtype)  # odd: correlate2d's 'same' is off by one for even kernels
    if x_dtype == "int64":
        k *= 2**5  # outputs up to 2**41 * 2**11 * 15: past float64's exact integers, inside int64
    if method in ("fft", "oa") and x_dtype == "int64":
        with pytest.raises(ValueError, match="not exact in float64"):
            ac.correlate(xp.asarray(x), xp.asarray(k), "full", method, fillvalue=fillvalue)
        return
    for mode in ("full", "same"):
        ref = scipy.signal.correlate2d(x, k, mode, boundary="fill", fillvalue=fillvalue)
        got = ac.correlate(xp.asarray(x), xp.asarray(k), mode, method, fillvalue=fillvalue)
        assert_matches(got, ref, dtype=ref.dtype, backend=xp.__name__)
        plan = ac.plan_correlate(xp.asarray(k), x.shape, mode, method, fillvalue=fillvalue, dtype=x.dtype)
        assert_matches(plan(xp.asarray(x)), ref, dtype=ref.dtype, backend=xp.__name__)


@pytest.mark.parametrize("method", METHODS)
def test_nan_fill_takes_fillvalue_in_the_results_dtype(xp, method, rng):
    x, k = with_nans(rng, (20, 17), "float32"), random(rng, (3, 4), "float64")
    got = ac.correlate(xp.asarray(x), xp.asarray(k), "valid", method, nan="fill", fillvalue=0.211)
    ref = scipy.signal.correlate(np.where(np.isnan(x), 0.211, x.astype(np.float64)), k, "valid", method="direct")
    assert_matches(got, ref, dtype="float64", backend=xp.__name__)


@pytest.mark.parametrize(
    "x_dtype, k_dtype, fillvalue, error, match",
    [
        ("uint8", "uint8", -1, ValueError, r"`fillvalue` must be a whole number in \[0, 255\] for a result of dtype uint8, got -1"),
        ("int16", "int16", 300.5, ValueError, "must be a whole number .* got 300.5"),
        ("int32", "int32", np.nan, ValueError, "must be a whole number .* got nan"),
        ("float32", "float64", 1j, ValueError, "must be a real number for a result of dtype float64, got 1j"),
        ("float64", "float64", None, TypeError, "`fillvalue` must be a number .* got None"),
        ("float64", "float64", "0", TypeError, "`fillvalue` must be a number .* got '0'"),
        ("float64", "float64", [1, 2], TypeError, r"`fillvalue` must be a number .* got \[1, 2\]"),
    ],
)
def test_fillvalue_the_result_cannot_hold_is_refused(x_dtype, k_dtype, fillvalue, error, match, rng):
    """Not wrapped, truncated or dropped (NumPy would make -1 into 255 and None into NaN)."""
    x, k = random(rng, (6, 7), x_dtype), random(rng, (3, 3), k_dtype)
    with pytest.raises(error, match=match):
        ac.correlate(x, k, "same", fillvalue=fillvalue)
    with pytest.raises(error, match=match):
        ac.plan_correlate(k, x.shape, "full", boundary="fill", fillvalue=fillvalue, dtype=x.dtype)


@pytest.mark.parametrize("method", METHODS)
def test_plans_take_boundary_and_nan(xp, method, rng):
    frames = [with_nans(rng, (30, 26), "float64") for _ in range(3)]
    k = rng.random((5, 4)) + 0.1
    plan = ac.plan_correlate(xp.asarray(k), (30, 26), "same", method, boundary="wrap", nan="normalize", dtype="float64")
    for frame in frames:
        expected = ac.correlate(frame, k, "same", "direct", boundary="wrap", nan="normalize")
        assert_nan_matches(plan(xp.asarray(frame)), expected, "float64", xp.__name__)
    x, w = with_nans(rng, (2, 4, 12, 11), "float64"), random(rng, (3, 4, 3, 3), "float64")
    conv_plan = ac.plan_conv(xp.asarray(w), x.shape, "float64", padding=1, padding_mode="circular", method=method)
    assert_nan_matches(conv_plan(xp.asarray(x)), ac.conv(x, w, padding=1, padding_mode="circular", method="direct"), "float64", xp.__name__)


def test_plan_nan_raise_checks_the_kernel_once_and_each_input(rng):
    k = random(rng, (3, 3), "float64")
    plan = ac.plan_correlate(k, (10, 10), nan="raise")
    with pytest.raises(ValueError, match="`in1` contains NaN"):
        plan(with_nans(rng, (10, 10), "float64"))
    k[1, 1] = np.nan
    with pytest.raises(ValueError, match="`in2` contains NaN"):
        ac.plan_correlate(k, (10, 10), nan="raise")
    with pytest.raises(ValueError, match="`w` contains NaN"):
        ac.plan_conv(k[None, None], (1, 1, 10, 10), nan="raise")
