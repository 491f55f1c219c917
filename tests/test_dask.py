"""arrayconv.dask on the local scheduler against the in-memory result."""

import numpy as np
import pytest
from _reference import assert_matches, assert_scores_match, random, reference_match_template, reference_richardson_lucy, to_numpy

import arrayconv as ac

da = pytest.importorskip("dask.array")
acd = pytest.importorskip("arrayconv.dask")

BOUNDARIES = ("constant", "wrap", "symmetric", "mirror", "edge")


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("kernel", [(7, 6), (2, 1), (15, 15)])
def test_correlate_across_chunks(xp, boundary, mode, kernel, rng):
    x, k = random(rng, (60, 45), "float64"), random(rng, kernel, "float64")
    x[30, 20] = np.nan  # NaN near a chunk edge reaches the same outputs
    lazy = acd.correlate(da.from_array(xp.asarray(x), chunks=(8, 10)), xp.asarray(k), mode, boundary=boundary, fillvalue=0.5)
    expected = ac.correlate(x, k, mode, "direct", boundary=boundary, fillvalue=0.5)
    got = lazy.compute(scheduler="threads")
    assert lazy.shape == expected.shape and type(got) is type(xp.asarray(x))
    got = to_numpy(got)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    assert_matches(np.nan_to_num(got), np.nan_to_num(expected), dtype="float64")


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("mode", ["full", "same"])
@pytest.mark.parametrize("kernel", [(25, 3), (12, 19), (3, 40)])
def test_kernels_larger_than_the_image(xp, boundary, mode, kernel, rng):
    """Pads longer than the image: dask.array.pad returned too few samples for 'wrap',
    'symm' and 'mirror' (a result of the wrong shape, or dask's overlap error)."""
    x, k = random(rng, (12, 18), "float64"), random(rng, kernel, "float64")
    lazy = acd.correlate(da.from_array(xp.asarray(x), chunks=(5, 7)), xp.asarray(k), mode, boundary=boundary, fillvalue=0.5)
    expected = ac.correlate(x, k, mode, boundary=boundary, fillvalue=0.5)
    assert lazy.shape == expected.shape
    assert_matches(to_numpy(lazy.compute()), expected, dtype="float64")


@pytest.mark.parametrize(
    "x_dtype, k_dtype, options",
    [
        ("float64", "float64", dict(nan="fill", fillvalue=2.5)),  # NaNs became 0, not 2.5
        ("int16", "float64", dict(fillvalue=0.5)),  # the fill read 0 in int16 chunks
        ("float32", "float64", dict(fillvalue=0.211, nan="fill")),  # rounded to float32
    ],
)
def test_fillvalue_across_chunks_as_in_memory(xp, x_dtype, k_dtype, options, rng):
    x, k = random(rng, (30, 21), x_dtype), random(rng, (5, 4), k_dtype)
    if x.dtype.kind == "f":
        x[[3, 15, 28], [0, 10, 20]] = np.nan
    lazy = acd.correlate(da.from_array(xp.asarray(x), chunks=(8, 7)), xp.asarray(k), "same", **options)
    assert_matches(to_numpy(lazy.compute()), ac.correlate(x, k, "same", "direct", **options), dtype="float64")


def test_nan_normalize_divides_integer_chunks_too(rng):
    x, k = random(rng, (30, 21), "uint16"), rng.random((5, 4)) + 0.1
    lazy = acd.correlate(da.from_array(x, chunks=(8, 7)), k, "same", nan="normalize")
    assert_matches(lazy.compute(), ac.correlate(x.astype(np.float64), k, "same", "direct", nan="normalize"), dtype="float64")


def test_convolve_3d_float32_fft_inside_blocks(rng):
    x, k = random(rng, (30, 28, 26), "float32"), random(rng, (9, 9, 9), "float32")
    lazy = acd.convolve(da.from_array(x, chunks=12), k, "same", "fft", boundary="wrap")
    assert lazy.dtype == np.float32
    assert_matches(lazy.compute(), ac.convolve(x.astype(np.float64), k.astype(np.float64), "same", boundary="wrap"), dtype="float32")


@pytest.mark.parametrize(
    "options",
    [
        dict(padding="same"),
        dict(padding=2, padding_mode="circular", dilation=2),
        dict(padding=1, stride=2, groups=2),
        dict(padding="valid", nan="normalize"),
    ],
)
def test_conv(xp, options, rng):
    groups = options.get("groups", 1)
    x, w, bias = random(rng, (3, 4, 40, 37), "float64"), random(rng, (6, 4 // groups, 5, 4), "float64"), random(rng, (6,), "float64")
    lazy = acd.conv(da.from_array(xp.asarray(x), chunks=(2, 2, 11, 9)), xp.asarray(w), xp.asarray(bias), **options)
    expected = ac.conv(x, w, bias, **options)
    assert lazy.shape == expected.shape
    assert_matches(to_numpy(lazy.compute()), expected, dtype="float64")


def test_errors(rng):
    x = da.from_array(random(rng, (20, 20), "float64"), chunks=5)
    with pytest.raises(ValueError, match="`in1` and `in2` must have the same ndim"):
        acd.correlate(x, np.ones(3))
    with pytest.raises(ValueError, match="mode 'valid' needs"):
        acd.correlate(x, np.ones((30, 3)), "valid")
    with pytest.raises(ValueError, match="`boundary` must be one of"):
        acd.correlate(x, np.ones((3, 3)), boundary="periodic")
    with pytest.raises(ValueError, match=r"`in2` must not be empty, got shape \(0, 3\)"):
        acd.correlate(x, np.ones((0, 3)))
    with pytest.raises(TypeError, match="`in1` must have an integer, float or complex dtype, got bool"):
        acd.correlate(x > 0, np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"`w` must not be empty"):
        acd.conv(x[None, None], np.ones((0, 1, 3, 3)))
    with pytest.raises(ValueError, match="`nan` must be one of"):
        acd.correlate(x, np.ones((3, 3)), nan="omit")
    for func, name in ((acd.correlate, "in1"), (acd.convolve, "in1"), (acd.conv, "x")):  # were AttributeErrors
        with pytest.raises(TypeError, match=rf"`{name}` must be a dask array, got ndarray: wrap an array with dask.array.from_array"):
            func(np.ones((1, 1, 6, 6)), np.ones((1, 1, 3, 3)))
    integers = da.from_array(random(rng, (20, 20), "int16"), chunks=5)
    with pytest.raises(ValueError, match="nan='normalize' divides each output by its kernel weight"):
        acd.correlate(integers, np.ones((3, 3), np.int16), nan="normalize")
    with pytest.raises(ValueError, match="nan='normalize' divides each output by its kernel weight"):
        acd.conv(integers[None, None], np.ones((1, 1, 3, 3), np.int16), nan="normalize")


def test_nested_list_kernels_and_biases_are_taken_as_arrays(rng):
    x, k = random(rng, (20, 21), "float64"), random(rng, (4, 5), "float64")
    lazy = acd.correlate(da.from_array(x, chunks=7), k.tolist(), "same")
    assert_matches(lazy.compute(), ac.correlate(x, k, "same"), dtype="float64")
    images, w = random(rng, (1, 2, 20, 21), "float64"), random(rng, (3, 2, 3, 3), "float64")
    lazy = acd.conv(da.from_array(images, chunks=(1, 2, 7, 7)), w.tolist(), [0.5, 1.0, 2.0])
    assert_matches(lazy.compute(), ac.conv(images, w, np.array([0.5, 1.0, 2.0])), dtype="float64")


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("template", [(7, 6), (3, 2), (15, 15)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_match_template_across_chunks(xp, boundary, mode, template, dtype, rng):
    image = (100 + random(rng, (60, 45), "float64")).astype(dtype)  # blocks of other means
    t = image[20 : 20 + template[0], 10 : 10 + template[1]].copy()
    image[30, 20] = np.nan  # a NaN near a chunk edge reaches the same windows
    lazy = acd.match_template(da.from_array(xp.asarray(image), chunks=(8, 10)), xp.asarray(t), mode, boundary=boundary, fillvalue=0.5)
    expected, spreads = reference_match_template(image, t, mode, boundary=boundary, fillvalue=0.5, spread=True)
    got = lazy.compute(scheduler="threads")
    assert lazy.shape == expected.shape and lazy.dtype == got.dtype == dtype and type(got) is type(xp.asarray(image))
    np.testing.assert_array_equal(np.isnan(to_numpy(got)), np.isnan(expected))
    assert_scores_match(xp.nan_to_num(got), np.nan_to_num(expected), np.nan_to_num(spreads), dtype=dtype, backend=xp.__name__)


def test_match_template_errors(rng):
    image = da.from_array(random(rng, (20, 20), "float64"), chunks=5)
    with pytest.raises(ValueError, match="`template` is constant"):
        acd.match_template(image, np.ones((3, 3)))
    with pytest.raises(ValueError, match="no larger than `image`"):
        acd.match_template(image, np.eye(30))
    with pytest.raises(TypeError, match="`image` must be a dask array"):
        acd.match_template(np.ones((6, 6)), np.eye(3))
    with pytest.raises(TypeError, match="`template` must be real"):
        acd.match_template(image, np.eye(3, dtype=complex))
    with pytest.raises(ValueError, match="`mode` must be one of"):
        acd.match_template(image, np.eye(3), "middle")


@pytest.mark.parametrize("boundary", ["fill", "nearest"])
@pytest.mark.parametrize("chunks", [(2, 40, 30), (3, 15, 12)])  # chunked along the frames, and across the planes too
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_richardson_lucy_deconvolves_each_frame(xp, boundary, chunks, dtype, rng):
    stack = rng.uniform(1, 50, (6, 40, 30)).astype(dtype)
    psf = rng.random((1, 5, 4)).astype(dtype)
    psf /= psf.sum()
    lazy = acd.richardson_lucy(da.from_array(xp.asarray(stack), chunks=chunks), xp.asarray(psf), 4, boundary=boundary, axes=(1, 2))
    got = lazy.compute(scheduler="threads")
    assert lazy.chunks[1:] == ((40,), (30,)) and lazy.dtype == got.dtype == dtype and type(got) is type(xp.asarray(stack))
    expected = reference_richardson_lucy(stack, psf, 4, boundary=boundary, axes=(1, 2))
    assert_matches(got, expected, dtype=dtype, backend=xp.__name__, bound=1.0)


def test_richardson_lucy_errors(rng):
    stack = da.from_array(rng.uniform(1, 50, (4, 20, 20)), chunks=(1, 20, 20))
    with pytest.raises(TypeError, match="`image` must be a dask array"):
        acd.richardson_lucy(np.ones((6, 6)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="`psf` must be 1 along the batch axes"):
        acd.richardson_lucy(stack, np.ones((4, 3, 3)), axes=(1, 2))
    with pytest.raises(ValueError, match="`psf` must be finite"):
        acd.richardson_lucy(stack, np.full((1, 3, 3), np.nan), axes=(1, 2))
    with pytest.raises(ValueError, match="`boundary` must be one of"):
        acd.richardson_lucy(stack, np.ones((1, 3, 3)), boundary="zero")
    with_nan = stack.copy()
    with_nan[2, 5, 5] = np.nan
    with pytest.raises(ValueError, match="`image` must be finite"):
        acd.richardson_lucy(with_nan, np.ones((1, 3, 3)) / 9, 2, axes=(1, 2)).compute()
