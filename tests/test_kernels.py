"""arrayconv.kernels: scipy.ndimage's Gaussian and box kernels, N-D, in the dtype asked for."""

import numpy as np
import pytest
import scipy.ndimage as ndi
from _reference import assert_matches, random

import arrayconv as ac
from arrayconv import kernels


@pytest.mark.parametrize(
    ("sigma", "options"),
    [(1.0, {}), (0.7, {"truncate": 3.0}), ((2.0, 0.5), {}), ((1.5, 1.0, 0.8), {}), (2.5, {"radius": 3}), ((1.0, 2.0), {"radius": (2, 5)})],
)
def test_gaussian_is_gaussian_filters_kernel(sigma, options, rng):
    """Correlating with it, edges 'symmetric', is scipy.ndimage.gaussian_filter (mode
    'reflect'), on random images of its dims."""
    ndim = 1 if np.ndim(sigma) == 0 else len(sigma)
    k = kernels.gaussian(sigma, ndim=ndim, **options)
    x = random(rng, (23, 19, 11)[:ndim], "float64")
    expected = ndi.gaussian_filter(x, sigma, mode="reflect", **options)
    assert_matches(ac.correlate(x, k, "same", boundary="symmetric"), expected, dtype="float64")
    impulse = np.zeros(k.shape)
    impulse[tuple(n // 2 for n in k.shape)] = 1
    np.testing.assert_allclose(k, ndi.gaussian_filter(impulse, sigma, mode="constant", **options), rtol=0, atol=1e-15)


@pytest.mark.parametrize("size", [1, 3, (5, 3), (3, 5, 7)])
def test_box_is_uniform_filters_kernel(size, rng):
    ndim = 1 if np.ndim(size) == 0 else len(size)
    k = kernels.box(size, ndim=None if ndim > 1 else 2, dtype="float32")
    x = random(rng, (20, 17, 9)[: k.ndim], "float32")
    expected = ndi.uniform_filter(x.astype(np.float64), k.shape, mode="nearest")
    assert k.dtype == np.float32 and k.sum() == pytest.approx(1, rel=1e-6)
    assert_matches(ac.correlate(x, k, "same", boundary="edge"), expected, dtype="float32")


def test_disk_is_flat_and_round():
    k = kernels.disk(2.5)
    assert k.shape == (5, 5) and k.sum() == pytest.approx(1) and np.array_equal(k, k.T) and np.array_equal(k, k[::-1])
    assert k[0, 0] == 0 < k[0, 2] == k[2, 2]
    assert kernels.disk(0).shape == (1, 1)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: kernels.gaussian(0.0), ValueError, "`sigma` must be positive"),
        (lambda: kernels.gaussian(np.inf), ValueError, "`sigma` must be positive"),
        (lambda: kernels.gaussian((1.0, 2.0), ndim=3), ValueError, "`sigma` has 2 values, for ndim=3"),
        (lambda: kernels.gaussian(1.0, radius=-1), ValueError, "`radius` must be 0 or more"),
        (lambda: kernels.gaussian(1.0, truncate=0), ValueError, "`truncate` must be positive"),
        (lambda: kernels.gaussian(1.0, dtype="int32"), TypeError, "`dtype` must be a float dtype"),
        (lambda: kernels.box(0), ValueError, "`size` must be 1 or more"),
        (lambda: kernels.box(3, ndim=0), ValueError, "`ndim` must be 1 or more"),
        (lambda: kernels.disk(-1), ValueError, "`radius` must be 0 or more"),
    ],
)
def test_bad_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
