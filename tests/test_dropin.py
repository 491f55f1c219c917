"""arrayconv.ndimage and arrayconv.signal against scipy.ndimage and scipy.signal on random
data: every mode, origin, axes subset and output dtype SciPy takes (SciPy's own tests of
these functions run in tests/test_scipy_suite.py)."""

import numpy as np
import pytest
import scipy.ndimage
import scipy.signal
from _reference import random
from _strategies import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from arrayconv import ndimage, signal

NDIMAGE_MODES = ["reflect", "grid-mirror", "mirror", "nearest", "wrap", "grid-wrap", "constant", "grid-constant"]


@pytest.fixture(autouse=True)
def _arrayconvs_own_sums(monkeypatch):
    """These tests judge arrayconv's sums: no small input handed to scipy.ndimage (but in
    the test of that hand-over)."""
    monkeypatch.setattr(ndimage, "_SCIPY_MACS", 0)


def _assert_like_scipy(got, expected):
    """The same dtype and shape; integers within one (both truncate float64 sums that may
    differ in the last bit), floats within their precision."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if got.dtype.kind in "iu":
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=0, atol=1)
    else:
        scale = max(float(np.max(np.abs(expected))), 1.0)
        rtol = 1e-5 if got.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(got, expected, rtol=0, atol=rtol * scale)


@settings(max_examples=examples(60))
@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    kernel=st.lists(st.integers(1, 6), min_size=3, max_size=3),
    mode=st.sampled_from(NDIMAGE_MODES),
    dtype=st.sampled_from(["float64", "float32", "int16", "uint8"]),
    convolution=st.booleans(),
    origin_seed=st.integers(0, 2**16),
    seed=st.integers(0, 2**16),
)
def test_ndimage_correlate_and_convolve(shape, kernel, mode, dtype, convolution, origin_seed, seed):
    rng = np.random.default_rng(seed)
    x = random(rng, tuple(shape), dtype) if dtype.startswith("float") else rng.integers(0, 100, shape).astype(dtype)
    w = rng.standard_normal(tuple(kernel[: len(shape)]))
    origins = [int(np.random.default_rng(origin_seed + i).integers(-(k // 2), (k - 1) // 2 + 1)) for i, k in enumerate(w.shape)]
    name = "convolve" if convolution else "correlate"
    got = getattr(ndimage, name)(x, w, mode=mode, cval=1.5, origin=origins)
    _assert_like_scipy(got, getattr(scipy.ndimage, name)(x, w, mode=mode, cval=1.5, origin=origins))


@pytest.mark.parametrize("output", [None, np.float32, "float64", "int32"])
@pytest.mark.parametrize("axes", [None, (0,), (1, 2), (-1, 0)])
def test_ndimage_filters_with_axes_and_outputs(output, axes, rng):
    x = random(rng, (11, 9, 8), "float64") * 50
    w = rng.standard_normal((3,) * (3 if axes is None else len(axes)))
    calls = [
        ("correlate", (w,), {}),
        ("convolve", (w,), {}),
        ("gaussian_filter", (1.3,), {"truncate": 3.0}),
        ("gaussian_filter", ((0.7, 1.1, 2.0)[: 3 if axes is None else len(axes)],), {"order": 1}),
        ("uniform_filter", (4,), {}),
        ("gaussian_laplace", (1.0,), {}),
        ("gaussian_gradient_magnitude", (1.0,), {}),
        ("laplace", (), {}),
    ]
    for name, args, kwargs in calls:
        ours = getattr(ndimage, name)(x, *args, output=output, mode="mirror", axes=axes, **kwargs)
        theirs = getattr(scipy.ndimage, name)(x, *args, output=output, mode="mirror", axes=axes, **kwargs)
        _assert_like_scipy(ours, theirs)


@pytest.mark.parametrize("output", [np.float32, np.float64])
@pytest.mark.parametrize("cval", [0.0, 2.5])
def test_ndimage_separable_filters_padded_as_scipys_passes(output, cval, rng):
    """Filters SciPy runs as passes, one per axis (each result padded with `cval`), and
    arrayconv as one: the same results in constant mode, where a pass's weights that do
    not sum to 1 (derivatives, differences) make the two differ past the edges."""
    x = random(rng, (13, 11, 9), "float64") * 50
    calls = [
        ("gaussian_filter", (1.5,), {}),
        ("gaussian_filter", (1.5,), {"order": 1}),
        ("gaussian_filter", (1.5,), {"order": (0, 0, 2)}),
        ("uniform_filter", (3,), {}),
        ("sobel", (0,), {}),
        ("prewitt", (2,), {}),
        ("laplace", (), {}),
        ("gaussian_laplace", (1.2,), {}),
        ("gaussian_gradient_magnitude", (1.2,), {}),
    ]
    for name, args, kwargs in calls:
        ours = getattr(ndimage, name)(x, *args, output=output, mode="constant", cval=cval, **kwargs)
        _assert_like_scipy(ours, getattr(scipy.ndimage, name)(x, *args, output=output, mode="constant", cval=cval, **kwargs))


@pytest.mark.parametrize("dtype", ["float32", "uint16"])
@pytest.mark.parametrize("mode", ["reflect", "wrap", "constant"])
def test_ndimage_large_images_filtered_in_slabs(dtype, mode, rng, monkeypatch):
    """Images whose float64 sums pass the kept buffer's size run in slabs across the axes
    the weights do not reach (here shrunk to a few rows); the same results as SciPy."""
    import arrayconv.ndimage as module

    monkeypatch.setattr(module, "REUSED_BYTES", 8 * 7 * 10)
    x = random(rng, (23, 5, 10), "float32") * 50 if dtype == "float32" else rng.integers(0, 60000, (23, 5, 10)).astype(dtype)
    assert len(module._slabs(x, np.ones((3, 1, 1)), "constant")) == 5
    for name, args in [("laplace", ()), ("sobel", (0,)), ("correlate1d", ([0.5, -1.25, 2.0], 1)), ("gaussian_filter", (1.5,))]:
        got = getattr(ndimage, name)(x, *args, mode=mode, cval=2.5)
        _assert_like_scipy(got, getattr(scipy.ndimage, name)(x, *args, mode=mode, cval=2.5))


@pytest.mark.parametrize("mode", NDIMAGE_MODES)
def test_ndimage_large_images_filtered_in_slabs_with_halos(mode, rng, monkeypatch):
    """Slabs along the first axis, where the weights reach across it, are read with the
    rows their outputs' windows reach (but where the edges wrap); the same results as SciPy."""
    import arrayconv.ndimage as module

    monkeypatch.setattr(module, "REUSED_BYTES", 8 * 6 * 7 * 22)
    x = random(rng, (41, 6, 7), "float32") * 50
    w = rng.standard_normal((5, 3, 2))
    assert len(module._slabs(x, w, module._MODES[mode])) == (1 if "wrap" in mode else 3)
    assert len(module._slabs(x, np.ones((3, 1, 1)), module._MODES[mode])) == (2 if "wrap" in mode else 3)  # wrapped: along free axis 1
    calls = [("correlate", (w,), {}), ("gaussian_filter", (1.0,), {"truncate": 2.0}), ("uniform_filter", (4,), {}), ("correlate1d", ([0.5, -1.25, 2.0], 0), {})]
    for name, args, kwargs in calls:
        for output in (None, np.float64):
            got = getattr(ndimage, name)(x, *args, output=output, mode=mode, cval=2.5, **kwargs)
            _assert_like_scipy(got, getattr(scipy.ndimage, name)(x, *args, output=output, mode=mode, cval=2.5, **kwargs))


@settings(max_examples=examples(60), deadline=None)
@given(
    shape=st.lists(st.integers(1, 24), min_size=1, max_size=3),
    kernel=st.lists(st.integers(1, 7), min_size=3, max_size=3),
    mode=st.sampled_from(NDIMAGE_MODES),
    kept=st.integers(1, 4000),
    seed=st.integers(0, 2**16),
)
def test_ndimage_slabs_of_any_size_give_scipys_results(shape, kernel, mode, kept, seed):
    """Whatever the kept buffer's size (slabs with halos along the first axis, along a free
    axis, or none), the same results as SciPy's, odd and even kernels, every mode."""
    import arrayconv.ndimage as module

    rng = np.random.default_rng(seed)
    x = random(rng, tuple(shape), "float32") * 50
    w = rng.standard_normal(tuple(kernel[: len(shape)]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "REUSED_BYTES", 8 * kept)
        patch.setattr(module, "_SCIPY_MACS", 0)
        got, along_rows = ndimage.correlate(x, w, mode=mode, cval=1.5), ndimage.correlate1d(x, w.ravel()[:5], axis=0, mode=mode)
    _assert_like_scipy(got, scipy.ndimage.correlate(x, w, mode=mode, cval=1.5))
    _assert_like_scipy(along_rows, scipy.ndimage.correlate1d(x, w.ravel()[:5], axis=0, mode=mode))


@pytest.mark.parametrize("shape", [(1, 30, 20), (30, 1, 20), (1, 1, 50)])
@pytest.mark.parametrize("mode", NDIMAGE_MODES)
def test_ndimage_axes_of_one_sample(shape, mode, rng):
    """Along an axis of one sample every mode but the constant ones repeats it, and the
    weights along it are summed first: SciPy's results, origins and derivatives included."""
    x = random(rng, shape, "float32") * 50
    w = rng.standard_normal((3, 4, 2))
    calls = [
        ("correlate", (w,), {"origin": (1, -1, 0)}),
        ("convolve", (w,), {}),
        ("gaussian_filter", (1.2,), {}),
        ("gaussian_filter", (1.2,), {"order": (1, 0, 2)}),
        ("uniform_filter", (3,), {}),
        ("correlate1d", (w[:, 0, 0], 0), {}),
    ]
    for name, args, kwargs in calls:
        for output in (None, np.float64):
            got = getattr(ndimage, name)(x, *args, mode=mode, cval=2.5, output=output, **kwargs)
            _assert_like_scipy(got, getattr(scipy.ndimage, name)(x, *args, mode=mode, cval=2.5, output=output, **kwargs))


@pytest.mark.parametrize("shape", [(37, 1, 41), (5, 37, 41), (3,), (1, 999)])
@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_ndimage_results_stored_in_parts_as_in_one(shape, dtype, rng, monkeypatch):
    """Float64 sums stored into the output in parts (along its first axis, on every
    worker), cast as SciPy's C code casts: the same as one store."""
    import arrayconv.ndimage as module

    monkeypatch.setattr(module, "_PARALLEL_STORE_BYTES", 0)
    result = random(rng, shape, "float64") * 1000
    parts, whole = np.zeros(shape, dtype), np.zeros(shape, dtype)
    module._store(parts, result)
    np.copyto(whole, np.trunc(result).astype(np.int64) if dtype == "int16" else result, casting="unsafe")
    np.testing.assert_array_equal(parts, whole)


@pytest.mark.parametrize("name", ["sobel", "prewitt"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_ndimage_edge_filters(name, dtype, rng):
    x = (random(rng, (20, 17), "float64") * 100).astype(dtype)
    for axis in (0, 1, -1):
        _assert_like_scipy(getattr(ndimage, name)(x, axis, mode="nearest"), getattr(scipy.ndimage, name)(x, axis, mode="nearest"))


@pytest.mark.parametrize("name", ["correlate1d", "convolve1d", "uniform_filter1d", "gaussian_filter1d"])
def test_ndimage_1d_filters(name, rng):
    x = random(rng, (13, 17), "float32")
    first = {"gaussian_filter1d": 1.5, "uniform_filter1d": 4}.get(name, rng.standard_normal(4))
    extra = {} if name == "gaussian_filter1d" else {"origin": -1}
    for axis in (0, 1):
        _assert_like_scipy(getattr(ndimage, name)(x, first, axis, mode="wrap", **extra), getattr(scipy.ndimage, name)(x, first, axis, mode="wrap", **extra))


def test_ndimage_output_in_place_and_complex(rng):
    x = random(rng, (16, 12), "float64")
    expected = scipy.ndimage.gaussian_filter(x, 2.0)
    y = x.copy()
    assert ndimage.gaussian_filter(y, 2.0, output=y) is y
    _assert_like_scipy(y, expected)
    z, w = random(rng, (10, 9), "complex128"), random(rng, (3, 2), "complex128")
    _assert_like_scipy(ndimage.correlate(z, w, mode="constant"), scipy.ndimage.correlate(z, w, mode="constant"))


@pytest.mark.parametrize("mode", NDIMAGE_MODES)
def test_ndimage_small_inputs_run_in_scipy(mode, rng, monkeypatch):
    """Inputs too small to repay arrayconv's setup run in SciPy's own loops: SciPy's bits,
    origins, integer outputs and filters in place included."""
    monkeypatch.setattr(ndimage, "_SCIPY_MACS", 100_000)
    w = random(rng, (3, 4), "float64")
    for x in (random(rng, (40, 30), "float32"), rng.integers(0, 1000, (40, 30)).astype(np.uint16)):
        np.testing.assert_array_equal(ndimage.correlate(x, w, mode=mode, origin=(1, -1)), scipy.ndimage.correlate(x, w, mode=mode, origin=(1, -1)))
        np.testing.assert_array_equal(ndimage.convolve1d(x, w[0], axis=0, mode=mode, origin=1), scipy.ndimage.convolve1d(x, w[0], axis=0, mode=mode, origin=1))
        mine, theirs = x.copy(), x.copy()
        ndimage.uniform_filter(mine, 3, output=mine, mode=mode)
        scipy.ndimage.uniform_filter(theirs, 3, output=theirs, mode=mode)
        _assert_like_scipy(mine, theirs)
        _assert_like_scipy(ndimage.gaussian_filter(x, 1.5, mode=mode), scipy.ndimage.gaussian_filter(x, 1.5, mode=mode))


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: ndimage.correlate(np.ones((3, 3)), np.ones(3)), RuntimeError),  # weights of the wrong ndim
        (lambda: ndimage.correlate(np.ones(5), np.ones(3), origin=2), ValueError),
        (lambda: ndimage.correlate(np.ones(5), np.ones(3), mode="reflective"), RuntimeError),
        (lambda: ndimage.correlate1d(np.ones(5), []), RuntimeError),
        (lambda: ndimage.uniform_filter1d(np.ones(5), 0), RuntimeError),
        (lambda: ndimage.gaussian_filter(np.ones(5, np.float16), 1.0), RuntimeError),
        (lambda: ndimage.correlate(np.ones(5), np.ones(3), output=np.ones(4)), RuntimeError),
        (lambda: ndimage.gaussian_filter(np.ones((4, 4)), [1.0, 2.0, 3.0]), RuntimeError),
    ],
)
def test_ndimage_bad_input_raises_scipys_exception(call, error):
    with pytest.raises(error):
        call()


@settings(max_examples=examples(60))
@given(
    s1=st.lists(st.integers(1, 12), min_size=1, max_size=3),
    s2=st.lists(st.integers(1, 7), min_size=3, max_size=3),
    mode=st.sampled_from(["full", "same", "valid"]),
    function=st.sampled_from(["fftconvolve", "oaconvolve", "convolve", "correlate"]),
    dtype=st.sampled_from(["float64", "float32", "int32", "complex128"]),
    seed=st.integers(0, 2**16),
)
def test_signal_convolutions(s1, s2, mode, function, dtype, seed):
    """Length-1 axes, integer inputs and 'valid' swaps as SciPy's own functions."""
    rng = np.random.default_rng(seed)
    a = random(rng, tuple(s1), dtype) if dtype[0] in "fc" else rng.integers(-50, 50, s1).astype(dtype)
    b = random(rng, tuple(s2[: len(s1)]), dtype) if dtype[0] in "fc" else rng.integers(-50, 50, s2[: len(s1)]).astype(dtype)
    try:
        expected = getattr(scipy.signal, function)(a, b, mode)
    except ValueError as error:
        with pytest.raises(ValueError, match=str(error)[:40]):
            getattr(signal, function)(a, b, mode)
        return
    _assert_like_scipy(np.asarray(getattr(signal, function)(a, b, mode)), np.asarray(expected))


@pytest.mark.parametrize(
    ("axes", "s1", "s2"),
    [(None, (6, 1, 9), (1, 5, 4)), (0, (6, 3, 9), (4, 3, 1)), ([1], (2, 6, 1), (1, 4, 5)), ([0, 1], (6, 1, 9), (1, 5, 9)), (-1, (3, 1, 9), (1, 2, 4))],
)
def test_signal_fft_convolutions_along_axes_broadcast(axes, s1, s2, rng):
    """Axes where either input has length 1 broadcast, not convolve; 'same' keeps in1's
    length there too."""
    a, b = random(rng, s1, "float64"), random(rng, s2, "float64")
    for function in ("fftconvolve", "oaconvolve"):
        for mode in ("full", "same"):
            _assert_like_scipy(getattr(signal, function)(a, b, mode, axes=axes), getattr(scipy.signal, function)(a, b, mode, axes=axes))


@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm", "circular", "symmetric"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_signal_2d_functions(boundary, mode, rng):
    a, b = random(rng, (9, 12), "float64"), random(rng, (4, 3), "float64")
    for name in ("convolve2d", "correlate2d"):
        _assert_like_scipy(getattr(signal, name)(a, b, mode, boundary, 0.5), getattr(scipy.signal, name)(a, b, mode, boundary, 0.5))
        if mode == "valid":  # in2 the larger: swapped as SciPy
            _assert_like_scipy(getattr(signal, name)(b, a, mode, boundary), getattr(scipy.signal, name)(b, a, mode, boundary))


def test_choose_conv_method_answers_direct_or_fft(rng):
    small, large = random(rng, (64, 64), "float64"), random(rng, (2048,), "float64")
    assert signal.choose_conv_method(small, random(rng, (3, 3), "float64")) == "direct"
    assert signal.choose_conv_method(large, random(rng, (1500,), "float64")) == "fft"
    big = np.full(100, 2**40, dtype=np.int64)
    assert signal.choose_conv_method(big, big) == "direct"  # not exact in float64


def test_cupy_arrays_give_scipys_results_on_their_device(xp, rng):
    """CuPy arrays in, CuPy arrays out (cupyx.scipy's behaviour), with SciPy's numbers;
    on the CuPy stand-in (ARRAYCONV_CUPY_STAND_IN=1) without a GPU."""
    x, w = random(rng, (40, 33), "float32"), rng.standard_normal((5, 4))
    line = rng.standard_normal(9)
    calls = [
        (ndimage, scipy.ndimage, "correlate", (w,), {"mode": "mirror"}),
        (ndimage, scipy.ndimage, "convolve", (w,), {"mode": "constant", "cval": 1.5}),
        (ndimage, scipy.ndimage, "correlate1d", (line, 0), {"mode": "wrap"}),
        (ndimage, scipy.ndimage, "gaussian_filter", (1.5,), {}),
        (ndimage, scipy.ndimage, "uniform_filter", (4,), {"mode": "nearest"}),
        (ndimage, scipy.ndimage, "sobel", (0,), {}),
        (ndimage, scipy.ndimage, "laplace", (), {}),
        (signal, scipy.signal, "fftconvolve", (w.astype(np.float32), "same"), {}),
        (signal, scipy.signal, "oaconvolve", (w.astype(np.float32), "full"), {}),
        (signal, scipy.signal, "convolve2d", (w, "same", "symm"), {}),
    ]
    for ours, theirs, name, args, kwargs in calls:
        on_device = [xp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        got = getattr(ours, name)(xp.asarray(x), *on_device, **kwargs)
        assert isinstance(got, xp.ndarray), name
        _assert_like_scipy(xp.asnumpy(got) if xp is not np else got, getattr(theirs, name)(x, *args, **kwargs))


@settings(max_examples=examples(40))
@given(
    shape=st.lists(st.integers(1, 30), min_size=1, max_size=3),
    size=st.integers(9, 40),
    mode=st.sampled_from(NDIMAGE_MODES),
    dtype=st.sampled_from(["float32", "float64", "uint8", "int16"]),
    where=st.floats(0, 1),
    seed=st.integers(0, 2**16),
)
def test_ndimage_means_of_wide_windows(shape, size, mode, dtype, where, seed):
    """Means over windows of 9 samples or more (running sums with numba, into float
    arrays): every mode, an origin anywhere in the window, each axis; the N-D filter, in
    place and from a view; integer images, as integers (truncated as SciPy's) and as floats."""
    rng = np.random.default_rng(seed)
    x = (random(rng, tuple(shape), "float64") * 200 - (0 if dtype == "uint8" else 60)).astype(dtype)
    origin = int(where * (size - 1)) - size // 2
    for axis in range(x.ndim):
        got = ndimage.uniform_filter1d(x, size, axis, mode=mode, cval=1.5, origin=origin)
        _assert_like_scipy(got, scipy.ndimage.uniform_filter1d(x, size, axis, mode=mode, cval=1.5, origin=origin))
    view = x.T
    expected = scipy.ndimage.uniform_filter(view, size, mode=mode, cval=1.5)
    _assert_like_scipy(ndimage.uniform_filter(view, size, mode=mode, cval=1.5), expected)
    mine = view.copy()
    assert ndimage.uniform_filter(mine, size, output=mine, mode=mode, cval=1.5) is mine
    _assert_like_scipy(mine, expected)
    means = scipy.ndimage.uniform_filter(x, size, output=np.float32, mode=mode, cval=1.5)
    _assert_like_scipy(ndimage.uniform_filter(x, size, output=np.float32, mode=mode, cval=1.5), means)
    empty = np.zeros((0, *shape[1:]), dtype)
    got, expected = ndimage.uniform_filter(empty, size, mode=mode), scipy.ndimage.uniform_filter(empty, size, mode=mode)
    assert got.shape == expected.shape and got.dtype == expected.dtype
