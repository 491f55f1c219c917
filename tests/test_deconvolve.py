"""richardson_lucy: skimage's iterations against their definition in float64."""

import numpy as np
import pytest
from _reference import assert_matches, reference_richardson_lucy, to_numpy
from _strategies import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import arrayconv as ac

METHODS = ("auto", *ac.METHODS)
BOUNDARIES = ("constant", "wrap", "symmetric", "mirror", "edge")


def counts(rng, shape, dtype):
    """Positive data as an image of counts or a PSF is (never 0: the ratio's denominator)."""
    data = rng.uniform(1, 50, shape)
    return (np.rint(data) if np.dtype(dtype).kind in "iu" else data).astype(dtype)


@st.composite
def deconvolution_shapes(draw, max_ndim=3):
    """``(image_shape, psf_shape)``: PSFs odd and even, some larger than the image."""
    ndim = draw(st.integers(1, max_ndim))
    size = 40 if ndim == 1 else max(5, 20 // ndim)
    image = tuple(draw(st.integers(1, size)) for _ in range(ndim))
    psf = tuple(draw(st.integers(1, min(n + 2, 9))) for n in image)
    return image, psf


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=examples(20), deadline=None)
@given(
    shapes=deconvolution_shapes(),
    boundary=st.sampled_from(BOUNDARIES),
    dtype=st.sampled_from(["float32", "float64", "int16"]),
    num_iter=st.integers(0, 4),
    filtered=st.booleans(),
    clip=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_matches_the_definition(xp, method, shapes, boundary, dtype, num_iter, filtered, clip, seed):
    rng = np.random.default_rng(seed)
    image, psf = counts(rng, shapes[0], dtype), counts(rng, shapes[1], dtype)
    psf = psf / psf.sum() if dtype != "int16" else psf
    # a floor inside the blurs' range: some ratios are zeroed after the first iteration
    floor = float(np.median(image)) * (0.99 if psf.dtype.kind == "f" else float(psf.sum())) if filtered else None
    ref = reference_richardson_lucy(image, psf, num_iter, boundary=boundary, filter_epsilon=floor, clip=clip)
    got = ac.richardson_lucy(xp.asarray(image), xp.asarray(psf), num_iter, clip=clip, filter_epsilon=floor, boundary=boundary, method=method)
    result = "float32" if dtype == "float32" else "float64"
    assert_rl_matches(got, ref, result, num_iter, xp)


def assert_rl_matches(got, ref, dtype, num_iter, xp):
    """:func:`assert_matches` at its tolerance times `num_iter`: each iteration rounds twice more."""
    assert got.dtype == np.dtype(dtype) and type(got).__module__.split(".")[0] == xp.__name__
    scale = float(np.abs(ref).max()) or 1.0
    err = float(np.abs(to_numpy(got).astype(np.float64) - ref).max()) / scale
    assert err <= (1e-5 if dtype == "float32" else 1e-12) * max(1, num_iter), f"max relative error {err:.2e} after {num_iter} iterations"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("psf_shape", [(5, 5), (6, 4)])
@pytest.mark.parametrize("options", [{}, {"clip": True}, {"filter_epsilon": 40.0}])
def test_matches_skimage(dtype, psf_shape, options, rng):
    skimage = pytest.importorskip("skimage.restoration")
    image = counts(rng, (40, 36), dtype)
    psf = counts(rng, psf_shape, dtype)
    psf /= psf.sum()
    theirs = skimage.richardson_lucy(image, psf, 10, clip=options.get("clip", False), filter_epsilon=options.get("filter_epsilon"))
    ours = ac.richardson_lucy(image, psf, 10, **options)
    assert ours.dtype == theirs.dtype == np.dtype(dtype)
    assert_matches(ours, theirs.astype(np.float64), dtype=dtype, bound=1.0)
    if "filter_epsilon" in options:  # the floor zeroed some ratios: the test covers it
        assert not np.allclose(ours, ac.richardson_lucy(image, psf, 10), rtol=1e-3)


@pytest.mark.parametrize("axes, image, psf", [
    ((1, 2), (3, 30, 20), (1, 5, 5)),  # one PSF for a stack of frames
    ((1, 2), (3, 30, 20), (3, 4, 5)),  # a PSF per frame
    ((-2, -1), (1, 30, 20), (3, 4, 5)),  # a stack of PSFs over one image
    ((0, 2), (25, 2, 18), (6, 2, 3)),  # a batch axis between the deconvolved ones
    (-1, (4, 3, 50), (4, 1, 7)),  # lines
])
def test_batch_axes_deconvolve_each_pair_alone(xp, axes, image, psf, rng):
    image, psf = counts(rng, image, "float64"), counts(rng, psf, "float64")
    ref = reference_richardson_lucy(image, psf, 3, boundary="symm", axes=axes)
    got = ac.richardson_lucy(xp.asarray(image), xp.asarray(psf), 3, boundary="symm", axes=axes)
    assert_rl_matches(got, ref, "float64", 3, xp)
    assert got.shape == ref.shape


@pytest.mark.parametrize("image_dtype, result", [
    ("float16", "float32"), ("float32", "float32"), ("float64", "float64"), ("uint8", "float64"), ("int32", "float64"),
])
def test_result_dtype_is_the_images_float_type(xp, image_dtype, result, rng):
    """skimage's rule: float32 stays float32 (a float64 PSF is cast to it), others float64."""
    image = counts(rng, (20, 18), image_dtype)
    psf = counts(rng, (3, 3), "float64")
    psf /= psf.sum()
    got = ac.richardson_lucy(xp.asarray(image), xp.asarray(psf), 3)
    assert_rl_matches(got, reference_richardson_lucy(image, psf, 3), result, 3, xp)


def test_iterations_go_on_from_a_start(xp, rng):
    image, psf = counts(rng, (30, 26), "float64"), counts(rng, (5, 4), "float64")
    first = ac.richardson_lucy(xp.asarray(image), xp.asarray(psf), 3, boundary="symm")
    kept = to_numpy(first).copy()
    went_on = ac.richardson_lucy(xp.asarray(image), xp.asarray(psf), 2, boundary="symm", start=first)
    np.testing.assert_array_equal(to_numpy(first), kept)  # `start` is not modified
    assert_rl_matches(went_on, to_numpy(ac.richardson_lucy(xp.asarray(image), xp.asarray(psf), 5, boundary="symm")), "float64", 1, xp)
    from_image = ac.richardson_lucy(xp.asarray(image.astype(np.float32)), xp.asarray(psf), 3, start=xp.asarray(image))
    assert_rl_matches(from_image, reference_richardson_lucy(image, psf, 3, start=image), "float32", 3, xp)


@pytest.mark.parametrize("start, error, words", [
    (np.ones((5, 6)), ValueError, r"`start` must have the result's shape \(5, 5\), got \(5, 6\)"),
    (np.ones((5, 5), complex), TypeError, "`start` must be real"),
    (np.full((5, 5), np.inf), ValueError, "`start` must be finite"),
    (np.ones((5, 5), bool), TypeError, "`start` must have an integer, float or complex dtype"),
])
def test_a_bad_start_is_refused_by_name(start, error, words):
    with pytest.raises(error, match=words):
        ac.richardson_lucy(np.ones((5, 5)), np.ones((3, 3)), 2, start=start)


def test_a_start_on_another_backend_is_refused(xp):
    if xp is np:
        pytest.skip("one backend: NumPy")
    with pytest.raises(TypeError, match="start"):
        ac.richardson_lucy(xp.ones((5, 5)), xp.ones((3, 3)), 2, start=np.ones((5, 5)))


def test_no_iterations_give_the_start(xp, rng):
    got = ac.richardson_lucy(xp.asarray(counts(rng, (8, 9), "float32")), xp.asarray(np.ones((3, 3), np.float32)), 0)
    np.testing.assert_array_equal(to_numpy(got), np.full((8, 9), 0.5, np.float32))


@pytest.mark.parametrize("dtype, needed", [("float32", 3 * 40_000), ("uint16", 3 * 80_000 + 80_000)])  # uint16: float64, and its copy
def test_arrays_past_the_devices_memory_are_refused_before_any_work(monkeypatch, rng, dtype, needed):
    from arrayconv._runtime import config as _config

    image, psf = counts(rng, (100, 100), dtype), np.full((3, 3), 1 / 9)
    monkeypatch.setattr(_config, "capacity", lambda backend_name: needed - 1)
    with pytest.raises(ValueError, match=r"richardson_lucy needs .* GiB for the estimate of shape \(100, 100\), .* deconvolve smaller pieces"):
        ac.richardson_lucy(image, psf, 2)
    monkeypatch.setattr(_config, "capacity", lambda backend_name: needed)
    assert ac.richardson_lucy(image, psf, 2).shape == (100, 100)


def test_temporaries_over_the_memory_limit_warn(rng):
    image, psf = counts(rng, (100, 100), "float64"), counts(rng, (3, 3), "float64")
    with ac.config(memory_limit=3 * 100 * 100 * 8 - 1), pytest.warns(ac.MemoryLimitWarning, match="richardson_lucy's temporaries"):
        got = ac.richardson_lucy(image, psf, 2)
    assert_rl_matches(got, reference_richardson_lucy(image, psf, 2), "float64", 2, np)


def test_deconvolution_restores_a_blurred_point(rng):
    """A point blurred by a Gaussian comes back sharper: the iterations do their job."""
    r = np.arange(-6, 7)
    psf = np.exp(-(r[:, None] ** 2 + r[None, :] ** 2) / 8.0)
    psf /= psf.sum()
    truth = np.full((48, 48), 1.0)
    truth[20, 30] = 500.0
    blurred = ac.convolve(truth, psf, "same", boundary="nearest")
    restored = ac.richardson_lucy(blurred, psf, 200, boundary="nearest")
    assert restored[20, 30] > 4 * blurred[20, 30]
    assert np.unravel_index(np.argmax(restored), restored.shape) == (20, 30)


@pytest.mark.parametrize("kwargs, error, words", [
    ({"image": np.ones((5, 5), complex)}, TypeError, "`image` must be real"),
    ({"psf": np.ones((3, 3), np.complex64)}, TypeError, "`psf` must be real"),
    ({"psf": np.ones(3)}, ValueError, "same ndim"),
    ({"image": np.full((5, 5), np.nan)}, ValueError, "`image` must be finite"),
    ({"psf": np.array([[1.0, np.inf]])}, ValueError, "`psf` must be finite"),
    ({"psf": np.zeros((3, 3))}, ValueError, "`psf` must sum to more than 0 along the deconvolved axes"),
    ({"image": np.ones((2, 5, 5)), "psf": np.stack([np.ones((3, 3)), -np.ones((3, 3))]), "axes": (1, 2)}, ValueError, "got sums down to -9"),
    ({"num_iter": -1}, ValueError, "0 or more"),
    ({"num_iter": 2.0}, TypeError, "`num_iter` must be an int"),
    ({"num_iter": True}, TypeError, "`num_iter` must be an int"),
    ({"filter_epsilon": "small"}, TypeError, "`filter_epsilon` must be a real number"),
    ({"boundary": "zero"}, ValueError, "`boundary` must be one of"),
    ({"method": "fast"}, ValueError, "`method` must be one of"),
    ({"image": np.ones((2, 5, 5)), "psf": np.ones((3, 3, 3)), "axes": (1, 2)}, ValueError, "must agree (or be 1) on axis 0"),
])
def test_bad_input_is_refused_by_name(kwargs, error, words):
    arguments = {"image": np.ones((5, 5)), "psf": np.ones((3, 3)), "num_iter": 2, **kwargs}
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        ac.richardson_lucy(arguments.pop("image"), arguments.pop("psf"), **arguments)
