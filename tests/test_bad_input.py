"""The bad-input catalogue of docs/reliability.md: one test per row not covered elsewhere.

Each kind of awkward input is either handled correctly (checked against SciPy) or refused
with a ValueError/TypeError naming the argument; inputs are never modified and `out` is
untouched when an error is raised.
"""


import numpy as np
import pytest
import scipy.signal
from _reference import assert_matches, random, reference_conv, reference_correlate

import arrayconv as ac

METHODS = ["auto", *ac.METHODS]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_kernel_larger_than_input_is_handled_as_scipy(method, mode, rng):
    x, k = random(rng, (5, 4), "float64"), random(rng, (9, 7), "float64")
    assert_matches(ac.correlate(x, k, mode, method), reference_correlate(x, k, mode), dtype="float64")
    assert_matches(ac.convolve(x, k, mode, method), reference_correlate(x, k, mode, flip=True), dtype="float64")


@pytest.mark.parametrize("method", METHODS)
def test_size_one_axes(method, rng):
    for s1, s2 in [((1, 7), (1, 3)), ((6, 1), (2, 1)), ((1, 1), (1, 1)), ((1,), (4,))]:
        x, k = random(rng, s1, "float64"), random(rng, s2, "float64")
        for mode in ("full", "same", "valid"):
            assert_matches(ac.correlate(x, k, mode, method), reference_correlate(x, k, mode), dtype="float64")
    x, w = random(rng, (1, 1, 1, 9), "float64"), random(rng, (1, 1, 1, 3), "float64")
    assert_matches(ac.conv(x, w, method=method), reference_conv(x, w), dtype="float64")


def views(a):
    """Awkward layouts of `a`'s data: strided, reversed, transposed copies' views, Fortran, big-endian."""
    return {
        "every other sample": np.repeat(a, 2, axis=-1)[..., ::2],
        "negative strides": np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1],
        "fortran order": np.asfortranarray(a),
        "big-endian": a.astype(a.dtype.newbyteorder(">")),
        "transposed view": np.ascontiguousarray(a.T).T,
    }


@pytest.mark.parametrize("method", METHODS)
def test_layouts_and_byte_orders_give_scipy_results(method, rng):
    x, k = random(rng, (23, 17), "float64"), random(rng, (5, 4), "float64")
    expected = reference_correlate(x, k, "same")
    for name, view in views(x).items():
        np.testing.assert_array_equal(view, x)
        got = ac.correlate(view, views(k)[name], "same", method)
        assert got.dtype.isnative, name
        assert_matches(got, expected, dtype="float64")


def test_every_function_leaves_read_only_inputs_unchanged(tmp_path, rng):
    x, w = random(rng, (2, 4, 12, 12), "float64"), random(rng, (3, 4, 3, 3), "float64")
    y, g = random(rng, (2, 3, 12, 12), "float64"), random(rng, (12, 12), "float64")
    psf = np.abs(w[0, 0]) + 0.1  # a PSF sums to more than 0
    arrays = [x, w, y, g, psf]
    copies = [a.copy() for a in arrays]
    for a in arrays:
        a.flags.writeable = False
    for method in METHODS:
        ac.correlate(g, w[0, 0], "same", method, nan="normalize")
        ac.convolve(g, w[0, 0], "full", method, boundary="wrap")
        ac.conv(x, w, padding=1, method=method, padding_mode="mirror")
        ac.conv_transpose(y, w, padding=1, method=method)
        ac.conv_weight_grad(x, y, w.shape, padding=1, method=method)
        ac.correlate_transpose(g, w[0, 0], (14, 14), "valid", method)
        ac.plan_correlate(w[0, 0], g.shape, "same", method)(g)
        ac.match_template(g, w[0, 0], "same", method=method)
        ac.richardson_lucy(g, psf, 2, method=method)
    ac.patch_conv(x[None, :, :, :4, :4], w, padding=1)
    ac.correlate_into(g, w[0, 0], np.empty((12, 12)), progress=False)
    for a, copy in zip(arrays, copies):
        np.testing.assert_array_equal(a, copy)


@pytest.mark.parametrize(
    "dtype, expected",
    [("float16", "float16"), ("int16", "int16"), ("uint8", "uint8"), ("int64", "int64"), ("complex64", "complex64")],
)
def test_numeric_dtypes_keep_numpys_promotion(dtype, expected, rng):
    x, k = random(rng, (20, 20), dtype), random(rng, (3, 3), dtype)
    got = ac.correlate(x, k, "same")
    assert got.dtype == np.dtype(expected)
    assert_matches(got, reference_correlate(x, k, "same"), dtype=expected)


@pytest.mark.parametrize(
    "value, error, match",
    [
        (np.ones((4, 4), bool), TypeError, "`in1` must have an integer, float or complex dtype, got bool"),
        (np.ones((4, 4), object), TypeError, "got object"),
        (np.array([["a"]]), TypeError, "got <U1"),
        (np.ones((4, 4), "datetime64[s]"), TypeError, "got datetime64"),
        (np.ones((4, 0)), ValueError, r"`in1` must not be empty, got shape \(4, 0\)"),
    ],
)
def test_non_numeric_and_empty_inputs_are_refused(value, error, match):
    with pytest.raises(error, match=match):
        ac.correlate(value, np.ones((2, 2)))


@pytest.mark.parametrize(
    "make_out, error, match",
    [
        (lambda x: np.zeros((9, 9)), ValueError, r"`out` must have shape \(8, 8\) and dtype float64"),
        (lambda x: np.zeros((8, 8), np.float32), ValueError, r"`out` must have shape \(8, 8\) and dtype float64"),
        (lambda x: [[0.0] * 8] * 8, TypeError, "`out` must be a NumPy array"),
        (lambda x: x, ValueError, "`out` must not overlap the input `in1`"),
    ],
)
def test_bad_out_is_refused_and_left_untouched(make_out, error, match, rng):
    x, k = random(rng, (8, 8), "float64"), random(rng, (3, 3), "float64")
    out = make_out(x)
    before = np.array(out, copy=True)
    with pytest.raises(error, match=match):
        ac.correlate(x, k, "same", out=out)
    np.testing.assert_array_equal(np.asarray(out), before)


def test_out_overlapping_the_kernel_or_read_only(rng):
    x, k = random(rng, (8, 8), "float64"), random(rng, (8, 8), "float64")
    with pytest.raises(ValueError, match="`out` must not overlap the input `in2`"):
        ac.correlate(x, k, "same", out=k)
    out = np.zeros((8, 8))
    out.flags.writeable = False
    with pytest.raises(ValueError, match="`out` must be writeable"):
        ac.correlate(x, k, "same", out=out)
    base = random(rng, (25,), "float64")
    w, out = base[:9].reshape(1, 1, 3, 3), base.reshape(1, 1, 5, 5)  # out's memory holds w
    before = base.copy()
    with pytest.raises(ValueError, match="`out` must not overlap the input `w`"):
        ac.conv(random(rng, (1, 1, 5, 5), "float64"), w, padding=1, out=out)
    np.testing.assert_array_equal(base, before)


def test_nan_and_inf_follow_the_nan_policy(rng):
    x, k = random(rng, (30, 30), "float64"), random(rng, (5, 5), "float64")
    x[4, 4], x[20, 20] = np.nan, np.inf
    expected = scipy.signal.correlate(x, k, "same", method="direct")
    for method in METHODS:
        got = ac.correlate(x, k, "same", method)
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(expected))


@pytest.mark.parametrize(
    "options, outcome",
    [
        (dict(stride=10**9), (1, 3, 1, 1)),  # absurd but meaningful: one output sample
        (dict(stride=10**9, padding=1), (1, 3, 1, 1)),
        (dict(dilation=10**9), r"dilated kernel 2000000001 > padded input 10"),
        (dict(padding=10**9), r"needs .* GiB, more than the .* GiB of memory of this device"),
        (dict(stride=-1), r"`stride` must be an int or a tuple of 2 ints, each >= 1; got -1"),
        (dict(padding=(1, 2, 3)), r"`padding` must be an int or a tuple of 2 ints"),
        (dict(dilation=True), r"`dilation` must be an int"),
    ],
)
def test_absurd_stride_padding_dilation(options, outcome, rng):
    x, w = random(rng, (1, 2, 10, 10), "float64"), random(rng, (3, 2, 3, 3), "float64")
    if isinstance(outcome, tuple):
        got = ac.conv(x, w, **options)
        assert got.shape == outcome
        assert_matches(got, reference_conv(x, w, **options), dtype="float64")
    else:
        with pytest.raises(ValueError, match=outcome):
            ac.conv(x, w, **options)


def test_results_larger_than_memory_are_refused_before_any_work(rng):
    x = np.broadcast_to(np.float64(1.0), (1 << 20, 1 << 20))  # 8 TiB of view, no memory
    with pytest.raises(ValueError, match=r"the result of shape \(1048578, 1048578\) \(float64\) needs"):
        ac.correlate(x, np.ones((3, 3)), "full")
