"""Bad input gets a clear error naming the argument, never a wrong answer."""

import warnings

import numpy as np
import pytest

import arrayconv as ac

A = np.random.default_rng(0).standard_normal((8, 9))
X = np.random.default_rng(1).standard_normal((2, 4, 10, 10))
W = np.random.default_rng(2).standard_normal((6, 4, 3, 3))
with warnings.catch_warnings():  # NumPy discourages the subclass (an error under this suite's filters)
    warnings.simplefilter("ignore", PendingDeprecationWarning)
    MATRIX = np.matrix(A)


@pytest.mark.parametrize("func", [ac.correlate, ac.convolve])
@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        ((A, A[:3, :3], "middle"), {}, ValueError, r"`mode` must be one of \{'full', 'valid', 'same'\}, got 'middle'"),
        ((A, A[:3, :3]), {"method": "winograd"}, ValueError, r"`method` must be one of \{'auto', 'direct', 'fft', 'im2col', 'oa'\}, got 'winograd'"),
        ((A, A[0]), {}, ValueError, r"`in1` and `in2` must have the same ndim, got 2 and 1 \(shapes \(8, 9\), \(9,\)\)"),
        ((A, A[:3, :0]), {}, ValueError, r"`in2` must not be empty, got shape \(3, 0\)"),
        ((A > 0, A), {}, TypeError, r"`in1` must have an integer, float or complex dtype, got bool; cast"),
        ((A.astype(object), A), {}, TypeError, r"`in1` must have an integer, float or complex dtype, got object"),
        ((["a", "b"], ["c"]), {}, TypeError, r"`in1` must have an integer, float or complex dtype, got <U1"),
        ((A[:4, :9], A[:5, :3], "valid"), {}, ValueError, r"mode 'valid' needs one input at least as large .* got `in1` \(4, 9\) and `in2` \(5, 3\)"),
        ((A, A[:3, :3]), {"axes": 2}, ValueError, r"`axes` must be ints in \[-2, 1\] for 2-D inputs, got 2"),
        ((A, A[:3, :3]), {"axes": (0, -2)}, ValueError, r"`axes` must not repeat an axis, got \(0, -2\)"),
        ((A, A[:3, :3]), {"axes": []}, ValueError, r"`axes` must be ints"),
        ((A, A[:3, :3]), {"axes": [True]}, ValueError, r"`axes` must be ints .* got \[True\]"),  # was axis 1
        ((A, A[:3, :3]), {"axes": 1}, ValueError, r"must agree \(or be 1\) on axis 0, which is not in `axes`; got shapes \(8, 9\) and \(3, 3\)"),
        ((MATRIX, A), {}, TypeError, r"`in1` must not be a numpy.matrix"),
        ((np.ma.masked_array(A), A), {}, TypeError, r"`in1` must not be a masked array"),
    ],
)
def test_correlate_errors(func, args, kwargs, error, match):
    with pytest.raises(error, match=match):
        func(*args, **kwargs)


@pytest.mark.parametrize(
    "x, w, kwargs, error, match",
    [
        (X[0], W, {}, ValueError, r"`w` must be \(O, C // groups, \*kernel\) with ndim 3 like `x`, got shape \(6, 4, 3, 3\)"),
        (X[0, 0], W[0, 0], {}, ValueError, r"`x` must be \(B, C, \*spatial\) with 1 to 3 spatial dims, got shape \(10, 10\)"),
        (X, W[:, :3], {}, ValueError, r"`x` has 4 channels but `w` expects 3 \(w.shape=\(6, 3, 3, 3\), groups=1\)"),
        (X, W[:, :1], {"groups": 3}, ValueError, r"`groups` must divide the input channels and the output channels, got groups=3"),
        (X, W[:5, :2], {"groups": 2}, ValueError, r"`groups` must divide .* w.shape=\(5, 2, 3, 3\) \(O=5\)"),
        (X, W, {"groups": 0}, ValueError, r"`groups` must be a positive int, got 0"),
        (X, W, {"stride": 0}, ValueError, r"`stride` must be an int or a tuple of 2 ints, each >= 1; got 0"),
        (X, W, {"stride": (1, 2, 3)}, ValueError, r"`stride` must be an int or a tuple of 2 ints, each >= 1; got \(1, 2, 3\)"),
        (X, W, {"padding": -1}, ValueError, r"`padding` must be an int or a tuple of 2 ints, each >= 0; got -1"),
        (X, W, {"padding": "full"}, ValueError, r"`padding` must be one of \{'same', 'valid'\}, got 'full'"),
        (X, W, {"padding": "same", "stride": 2}, ValueError, r"`padding='same'` needs stride 1 on every axis, got stride=\(2, 2\)"),
        (X, W, {"dilation": 0.5}, ValueError, r"`dilation` must be an int or a tuple of 2 ints, each >= 1; got 0.5"),
        (X[..., :2, :], W, {}, ValueError, r"kernel larger than the padded input on spatial axis 0: dilated kernel 3 > padded input 2"),
        (X, W, {"dilation": 5}, ValueError, r"dilated kernel 11 > padded input 10 .*dilation=5"),
        (X, W, {"method": "auto!"}, ValueError, r"`method` must be one of"),
        (X[:, :, :0], W, {}, ValueError, r"`x` must not be empty, got shape \(2, 4, 0, 10\)"),
        (X.astype(bool), W, {}, TypeError, r"`x` must have an integer, float or complex dtype, got bool"),
    ],
)
def test_conv_errors(x, w, kwargs, error, match):
    with pytest.raises(error, match=match):
        ac.conv(x, w, **kwargs)


def test_bias_shape_error():
    with pytest.raises(ValueError, match=r"`bias` must have shape \(6,\) for w.shape=\(6, 4, 3, 3\), got \(5,\)"):
        ac.conv(X, W, np.ones(5))


def test_explicit_method_over_memory_budget_says_so():
    x = np.random.default_rng(0).standard_normal((1, 1, 300, 300))
    w = np.random.default_rng(1).standard_normal((1, 1, 30, 30))
    with ac.config(memory_limit=1 << 16), pytest.raises(ValueError, match=r"method 'fft' cannot run .*memory_limit=65536"):
        ac.conv(x, w, method="fft")


def test_auto_never_raises_under_a_tiny_budget_but_says_it_goes_over():
    """Where no method fits the budget, 'auto' runs the one with the smallest temporaries
    and says so (a MemoryLimitWarning, once per plan: a plain call's plan is kept)."""
    x = np.random.default_rng(0).standard_normal((1, 2, 60, 60))  # two channels: direct sums them through a padded copy
    w = np.random.default_rng(1).standard_normal((1, 2, 9, 9))
    with ac.config(memory_limit=1):
        with pytest.warns(ac.MemoryLimitWarning, match=r"no method fits memory_limit=1 bytes for this problem: running '\w+', the one with the smallest temporaries") as record:
            y = ac.conv(x, w)
        assert record[0].filename == __file__  # the caller's line, not arrayconv's
        assert y.shape == (1, 1, 52, 52)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ac.conv(x, w)  # the kept plan: no second warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ac.conv(x, w)  # within the default budget


@pytest.mark.parametrize("kwargs", [{"memory_limit": 0}, {"workers": -1}, {"memory_limit": 1.5}])
def test_config_errors(kwargs):
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=rf"`{name}` must be a positive int"):
        with ac.config(**kwargs):
            pass
