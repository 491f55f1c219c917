"""patch_conv against the per-patch conv-layer reference, on both backends."""

import numpy as np
import pytest
from _reference import assert_matches, random, reference_conv

import arrayconv as ac

_REFERENCES = {}


def _reference(x, w, padding, stride):
    """Per-patch float64 reference, computed once per data (the tests share it across methods)."""
    key = (x.tobytes(), w.tobytes(), x.shape, w.shape, padding, stride)
    if key not in _REFERENCES:
        _REFERENCES[key] = _conv_each_patch(x, w, padding, stride)
    return _REFERENCES[key]


def _conv_each_patch(x, w, padding, stride):
    patches = x.reshape(-1, *x.shape[2:])
    y = reference_conv(patches, w, padding=padding, stride=stride)
    return y.reshape(*x.shape[:2], *y.shape[1:])


@pytest.mark.parametrize("method", ["auto", "patch", "direct", "im2col", "fft"])
@pytest.mark.parametrize(
    "x_shape, w_shape, padding, stride",
    [
        ((1, 100, 32, 4, 4), (64, 32, 3, 3), 1, 1),  # case f in small
        ((2, 1, 5, 6, 7), (7, 5, 3, 3), 0, 1),  # N = 1, C and D not multiples of 32
        ((1, 1037, 3, 8, 8), (9, 3, 4, 4), 2, 1),  # even kernel, padding 2, N large
        ((2, 40, 6, 9, 9), (5, 6, 5, 2), 2, (2, 1)),  # rectangular kernel, strided
        ((1, 17, 70, 4, 4), (130, 70, 2, 2), 0, 2),  # many filters: several filter tiles
        ((1, 30, 4, 7, 7), (12, 4, 3, 3), 0, 1),  # 5-wide output rows
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_reference(xp, method, x_shape, w_shape, padding, stride, dtype):
    rng = np.random.default_rng(7)
    x, w = random(rng, x_shape, dtype), random(rng, w_shape, dtype)
    if method == "patch" and xp is np:
        with pytest.raises(ValueError, match="method 'patch' needs CuPy arrays"):
            ac.patch_conv(x, w, padding=padding, stride=stride, method=method)
        return
    got = ac.patch_conv(xp.asarray(x), xp.asarray(w), padding=padding, stride=stride, method=method)
    assert_matches(got, _reference(x, w, padding, stride), dtype=dtype, backend=xp.__name__)


def test_wide_patches_and_other_dtypes_take_the_conv_path(xp):
    rng = np.random.default_rng(8)
    x, w = random(rng, (1, 3, 2, 50, 50), "complex64"), random(rng, (4, 2, 3, 3), "complex64")
    got = ac.patch_conv(xp.asarray(x), xp.asarray(w), padding=1)
    assert_matches(got, _reference(x, w, 1, 1), dtype="complex64", backend=xp.__name__)


@pytest.mark.parametrize(
    "x_shape, w_shape, kwargs, match",
    [
        ((3, 2, 4, 4), (4, 2, 3, 3), {}, r"`x` must be a patch stack \(B, N, C, h, w\), got shape \(3, 2, 4, 4\)"),
        ((1, 3, 2, 4, 4), (4, 5, 3, 3), {}, r"`w` must be \(D, C, kh, kw\) with C=2 like `x`, got shape \(4, 5, 3, 3\)"),
        ((1, 3, 2, 4, 4), (4, 2, 3, 3), {"padding": -1}, r"`padding` must be an int or a tuple of 2 ints, each >= 0; got -1"),
        ((1, 3, 2, 4, 4), (4, 2, 3, 3), {"stride": 0}, r"`stride` must be an int or a tuple of 2 ints, each >= 1; got 0"),
        ((1, 3, 2, 4, 4), (4, 2, 3, 3), {"method": "fast"}, r"`method` must be one of"),
        # the user's shapes, not the patches' as one batch ("x.shape=(3, 2, 2, 2)")
        ((1, 3, 2, 2, 2), (4, 2, 3, 3), {}, r"`w`'s kernel \(3, 3\) must fit in the padded patches, got x.shape=\(1, 3, 2, 2, 2\), w.shape=\(4, 2, 3, 3\), padding=\(0, 0\)"),
        ((1, 3, 2, 4, 2), (4, 2, 3, 5), {"padding": (0, 1)}, r"`w`'s kernel \(3, 5\) must fit in the padded patches"),
    ],
)
def test_bad_input(xp, x_shape, w_shape, kwargs, match):
    rng = np.random.default_rng(9)
    x, w = xp.asarray(random(rng, x_shape, "float32")), xp.asarray(random(rng, w_shape, "float32"))
    with pytest.raises(ValueError, match=match):
        ac.patch_conv(x, w, **kwargs)
