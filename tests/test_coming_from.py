"""docs/coming-from.md's table, row by row: each library's call and arrayconv's, side by side."""

import numpy as np
import pytest
import scipy.ndimage as ndi
import scipy.signal as ss
from _reference import EDGE_RULES, NDIMAGE_MODES, assert_matches, random

import arrayconv as ac

KERNELS = [(5, 3), (4, 6)]  # odd and even


@pytest.fixture
def image(rng):
    return random(rng, (23, 19), "float64")


@pytest.mark.parametrize("shape", KERNELS)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_scipy_signal(image, rng, shape, mode):
    w = random(rng, shape, "float64")
    assert_matches(ac.correlate(image, w, mode), ss.correlate(image, w, mode), dtype="float64")
    assert_matches(ac.convolve(image, w, mode), ss.convolve(image, w, mode), dtype="float64")
    assert_matches(ac.convolve(image, w, mode, "fft"), ss.fftconvolve(image, w, mode), dtype="float64")
    assert_matches(ac.convolve(image, w, mode, "oa"), ss.oaconvolve(image, w, mode), dtype="float64")
    for ours, theirs in (("constant", "fill"), ("wrap", "wrap"), ("symmetric", "symm")):
        expected = ss.convolve2d(image, w, mode, boundary=theirs, fillvalue=0.5)
        assert_matches(ac.convolve(image, w, mode, boundary=ours, fillvalue=0.5), expected, dtype="float64")
        if all(k % 2 for k in shape) or mode != "same":  # correlate2d's 'same' is one sample off for even kernels
            expected = ss.correlate2d(image, w, mode, boundary=theirs, fillvalue=0.5)
            assert_matches(ac.correlate(image, w, mode, boundary=ours, fillvalue=0.5), expected, dtype="float64")


def test_scipy_signal_along_axes(rng):
    signals, fir = random(rng, (6, 200), "float64"), random(rng, (1, 31), "float64")
    assert_matches(ac.convolve(signals, fir, "same", "fft", axes=-1), ss.fftconvolve(signals, fir, "same", axes=-1), dtype="float64")
    assert_matches(ac.convolve(signals, fir, "same", axes=-1), ss.oaconvolve(signals, fir, "same", axes=-1), dtype="float64")


@pytest.mark.parametrize("shape", KERNELS)
@pytest.mark.parametrize("rule", EDGE_RULES)
def test_scipy_ndimage(image, rng, shape, rule):
    w = random(rng, shape, "float64")
    mode = NDIMAGE_MODES[rule]
    assert_matches(ac.correlate(image, w, "same", boundary=rule, fillvalue=0.5), ndi.correlate(image, w, mode=mode, cval=0.5), dtype="float64")
    origin = [-1 if k % 2 == 0 else 0 for k in shape]  # ndimage's even convolution is one sample off
    assert_matches(ac.convolve(image, w, "same", boundary=rule, fillvalue=0.5), ndi.convolve(image, w, mode=mode, cval=0.5, origin=origin), dtype="float64")
    line = random(rng, (shape[0],), "float64")
    assert_matches(ac.correlate(image, line[:, None], "same", axes=0, boundary=rule, fillvalue=0.5), ndi.correlate1d(image, line, 0, mode=mode, cval=0.5), dtype="float64")


@pytest.mark.parametrize("sigma", [0.7, 1.5, 3.0])
def test_scipy_ndimage_gaussian_and_uniform_filters(image, sigma):
    g = ac.kernels.gaussian(sigma, ndim=image.ndim, truncate=4.0)
    assert_matches(ac.correlate(image, g, "same", boundary="symmetric"), ndi.gaussian_filter(image, sigma), dtype="float64")
    for size in (3, 4):
        box = ac.kernels.box(size, ndim=image.ndim)
        assert_matches(ac.correlate(image, box, "same", boundary="symmetric"), ndi.uniform_filter(image, size), dtype="float64")


def test_scikit_image(image, rng):
    feature = pytest.importorskip("skimage.feature")
    restoration = pytest.importorskip("skimage.restoration")
    template = image[4:11, 6:11].copy()
    np.testing.assert_allclose(ac.match_template(image, template), feature.match_template(image, template), atol=1e-12)
    for ours, theirs in (("constant", "constant"), ("mirror", "reflect"), ("edge", "edge")):
        expected = feature.match_template(image, template, pad_input=True, mode=theirs, constant_values=0.3)
        np.testing.assert_allclose(ac.match_template(image, template, "same", boundary=ours, fillvalue=0.3), expected, atol=1e-12)
    counts, psf = np.abs(image) * 0.1, np.full((3, 3), 1 / 9)
    expected = restoration.richardson_lucy(counts, psf, 5, clip=True)
    assert_matches(ac.richardson_lucy(counts, psf, 5, clip=True), expected, dtype="float64")


def test_astropy(image, rng):
    convolution = pytest.importorskip("astropy.convolution")
    kernel = rng.random((5, 3)) + 0.1
    holes = image.copy()
    holes[3, 4] = holes[10, 10] = np.nan
    expected = convolution.convolve(holes, kernel, boundary="fill", fill_value=0, nan_treatment="interpolate", normalize_kernel=True)
    np.testing.assert_allclose(ac.convolve(holes, kernel, "same", nan="normalize"), expected, atol=1e-12)
    for ours, theirs in (("wrap", "wrap"), ("edge", "extend")):
        expected = convolution.convolve(image, kernel / kernel.sum(), boundary=theirs, normalize_kernel=False)
        assert_matches(ac.convolve(image, kernel / kernel.sum(), "same", boundary=ours), expected, dtype="float64")


def test_torch(rng):
    torch = pytest.importorskip("torch")
    x, w = random(rng, (2, 4, 11, 9), "float64"), random(rng, (6, 2, 3, 4), "float64")
    expected = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), stride=2, padding=(1, 2), dilation=(1, 2), groups=2).numpy()
    assert_matches(ac.conv(x, w, stride=2, padding=(1, 2), dilation=(1, 2), groups=2), expected, dtype="float64")
    y = random(rng, (2, 6, 5, 4), "float64")
    expected = torch.nn.functional.conv_transpose2d(torch.tensor(y), torch.tensor(w), stride=2, padding=1, output_padding=1, groups=2).numpy()
    assert_matches(ac.conv_transpose(y, w, stride=2, padding=1, output_padding=1, groups=2), expected, dtype="float64")


@pytest.mark.parametrize("shape", KERNELS)
def test_opencv(rng, shape):
    cv2 = pytest.importorskip("cv2")
    image, kernel = random(rng, (40, 33), "float32"), random(rng, shape, "float32")
    assert_matches(ac.correlate(image, kernel, "same", boundary="mirror"), cv2.filter2D(image, -1, kernel), dtype="float32")
    for ours, border in (("symmetric", cv2.BORDER_REFLECT), ("edge", cv2.BORDER_REPLICATE), ("constant", cv2.BORDER_CONSTANT)):
        assert_matches(ac.correlate(image, kernel, "same", boundary=ours), cv2.filter2D(image, -1, kernel, borderType=border), dtype="float32")
    kx, ky = random(rng, (shape[1],), "float32"), random(rng, (shape[0],), "float32")
    assert_matches(ac.correlate(image, np.outer(ky, kx), "same", boundary="mirror"), cv2.sepFilter2D(image, -1, kx, ky), dtype="float32")
    template = image[5:12, 9:14].copy()
    expected = cv2.matchTemplate(image, template, cv2.TM_CCOEFF_NORMED)
    np.testing.assert_allclose(ac.match_template(image, template), expected, atol=2e-4)  # OpenCV's float32 sums
