"""match_template: normalized cross-correlation against its definition in float64."""

import numpy as np
import pytest
from _reference import assert_matches, assert_scores_match, random, reference_match_template, to_numpy
from _strategies import MODES, examples
from hypothesis import given, settings
from hypothesis import strategies as st

import arrayconv as ac

METHODS = ("auto", *ac.METHODS)
BOUNDARIES = ("constant", "wrap", "symmetric", "mirror", "edge")


@st.composite
def match_shapes(draw, max_ndim=3):
    """``(image_shape, template_shape)``: templates no larger than the image, odd and even,
    some as long as the image along an axis, none of one sample in all."""
    ndim = draw(st.integers(1, max_ndim))
    size = 40 if ndim == 1 else max(6, 24 // ndim)
    image = tuple(draw(st.integers(2, size)) for _ in range(ndim))
    template = tuple(draw(st.integers(1, n)) for n in image)
    if max(template) == 1:
        template = (2, *template[1:])
    return image, template


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=examples(20))
@given(
    shapes=match_shapes(),
    mode=st.sampled_from(MODES),
    boundary=st.sampled_from(BOUNDARIES),
    dtype=st.sampled_from(["float32", "float64", "int16"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_matches_the_definition(xp, method, shapes, mode, boundary, dtype, seed):
    rng = np.random.default_rng(seed)
    image, template = random(rng, shapes[0], dtype), random(rng, shapes[1], dtype)
    template.flat[0] = template.max() + 1  # never constant
    fillvalue = float(rng.standard_normal())
    ref, spreads = reference_match_template(image, template, mode, boundary=boundary, fillvalue=fillvalue, spread=True)
    got = ac.match_template(xp.asarray(image), xp.asarray(template), mode, boundary=boundary, fillvalue=fillvalue, method=method)
    assert_scores_match(got, ref, spreads, dtype="float32" if dtype == "float32" else "float64", backend=xp.__name__)


@pytest.mark.parametrize("axes, image, template", [
    ((1, 2), (3, 30, 20), (1, 4, 5)),  # one template over a stack of frames
    ((-2, -1), (1, 30, 20), (3, 4, 5)),  # a stack of templates over one image
    ((0, 2), (25, 2, 18), (6, 2, 3)),  # a batch axis between the matched ones
    (-1, (4, 3, 50), (4, 1, 7)),  # lines
])
@pytest.mark.parametrize("mode", MODES)
def test_batch_axes_match_each_pair_alone(xp, axes, image, template, mode, rng):
    image, template = rng.standard_normal(image), rng.standard_normal(template)
    ref = reference_match_template(image, template, mode, boundary="symm", axes=axes)
    assert_matches(ac.match_template(xp.asarray(image), xp.asarray(template), mode, boundary="symm", axes=axes), ref, dtype="float64", backend=xp.__name__)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_cut_out_scores_one_where_it_was_cut_and_its_negative_minus_one(xp, dtype, rng):
    image = rng.standard_normal((90, 70)).astype(dtype)
    template = 3 * image[40:51, 25:34] + 7  # a positive scale and an offset do not matter
    scores = to_numpy(ac.match_template(xp.asarray(image), xp.asarray(template)))
    assert np.unravel_index(np.argmax(scores), scores.shape) == (40, 25)
    assert scores.max() == pytest.approx(1, abs=1e-5 if dtype == "float32" else 1e-12)
    assert to_numpy(ac.match_template(xp.asarray(image), xp.asarray(-template))).min() == pytest.approx(-1, abs=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("offset", [1e3, 1e6])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_an_offset_far_above_the_spread_costs_no_precision(offset, dtype, rng):
    """A window's spread is its sum of squares less its squared sum over n, which cancel
    where the mean is far above the spread: the image's mean is taken off first."""
    image = (offset + rng.standard_normal((60, 50))).astype(dtype)
    template = rng.standard_normal((7, 6)).astype(dtype)
    for mode in MODES:
        ref = reference_match_template(image, template, mode, boundary="nearest")
        assert_matches(ac.match_template(image, template, mode, boundary="nearest"), ref, dtype=dtype)


@pytest.mark.parametrize("method", METHODS)
def test_flat_windows_score_zero(xp, method, rng):
    image = rng.standard_normal((40, 40))
    image[5:25, 8:30] = 3.0
    template = rng.standard_normal((6, 5))
    ref = reference_match_template(image, template)
    got = to_numpy(ac.match_template(xp.asarray(image), xp.asarray(template), method=method))
    assert (ref == 0).sum() == 15 * 18
    np.testing.assert_array_equal(got == 0, ref == 0)
    assert_matches(got, ref, dtype="float64")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_nan_or_inf_makes_only_the_windows_over_it_nan(xp, method, bad, rng):
    image = rng.standard_normal((30, 32))
    image[12, 20] = bad
    template = rng.standard_normal((5, 4))
    ref = reference_match_template(image, template, "same")
    got = to_numpy(ac.match_template(xp.asarray(image), xp.asarray(template), "same", method=method))
    assert np.isnan(ref).sum() == 20
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got[~np.isnan(ref)], ref[~np.isnan(ref)], rtol=0, atol=1e-12)


def test_matches_skimage(rng):
    skimage = pytest.importorskip("skimage.feature")
    image = rng.standard_normal((80, 90)).astype(np.float32)
    for template in (image[10:21, 30:37], image[50:60, 5:21]):  # odd and even
        np.testing.assert_allclose(ac.match_template(image, template), skimage.match_template(image, template), atol=1e-5)
        same = skimage.match_template(image, template, pad_input=True)
        np.testing.assert_allclose(ac.match_template(image, template, "same"), same, atol=1e-5)


def test_slabs_give_the_whole_image_scores(xp, monkeypatch, rng):
    """Scores made slab by slab (tiny slabs here, a slab per row) equal those of one slab
    (to rounding: with numba, a slab's window sums run on the form direct picks for it)."""
    from arrayconv._api import match as _match

    image, template = xp.asarray(rng.standard_normal((70, 40))), xp.asarray(rng.standard_normal((9, 4)))
    monkeypatch.setattr(_match, "_SLAB_BYTES", 1 << 30)
    monkeypatch.setattr(_match, "_GPU_SLAB_BYTES", 1 << 30)
    whole = to_numpy(ac.match_template(image, template, "full"))
    monkeypatch.setattr(_match, "_SLAB_BYTES", 8)
    monkeypatch.setattr(_match, "_GPU_SLAB_BYTES", 8)
    monkeypatch.setattr(_match, "_SLABS_PER_WINDOW", 0)
    assert_matches(to_numpy(ac.match_template(image, template, "full")), whole, dtype="float64")
    assert_matches(whole, reference_match_template(to_numpy(image), to_numpy(template), "full"), dtype="float64")


@pytest.mark.parametrize("image, template, options, error, match", [
    (np.ones((5, 5), complex), np.eye(2), {}, TypeError, "`image` must be real"),
    (np.ones((5, 5)), np.eye(2, dtype=complex), {}, TypeError, "`template` must be real"),
    (np.ones((5, 5)), np.eye(2)[0], {}, ValueError, "same ndim"),
    (np.ones((5, 5)), np.eye(6), {}, ValueError, "no larger than `image`"),
    (np.ones((5, 5)), np.full((2, 2), 0.3), {}, ValueError, "constant"),
    (np.ones((5, 5)), np.array([[1.0, np.nan]]), {}, ValueError, "must be finite"),
    (np.ones((3, 5, 5)), np.ones((2, 2, 2)) * np.eye(2), {"axes": (1, 2)}, ValueError, "agree \\(or be 1\\) on axis 0"),
    (np.ones((5, 5)), np.eye(2), {"mode": "middle"}, ValueError, "`mode` must be one of"),
    (np.ones((5, 5)), np.eye(2), {"boundary": "zero"}, ValueError, "`boundary` must be one of"),
    (np.ones((5, 5)), np.eye(2), {"method": "fast"}, ValueError, "`method` must be one of"),
    (np.ones((5, 5)), np.eye(2), {"fillvalue": 1j}, ValueError, "`fillvalue` must be a real number"),
    (np.ones((5, 5)), np.eye(2), {"axes": 2}, ValueError, "`axes` must be ints"),
    (np.array(1.0), np.array(2.0), {}, ValueError, "at least one dimension"),
    (np.ones((5, 5), bool), np.eye(2), {}, TypeError, "`image` must have an integer, float or complex dtype"),
])
def test_bad_input_is_refused_by_name(image, template, options, error, match):
    with pytest.raises(error, match=match):
        ac.match_template(image, template, **options)


def test_arrays_past_the_devices_memory_are_refused_before_any_work(monkeypatch, rng):
    from arrayconv._runtime import config as _config

    monkeypatch.setattr(_config, "capacity", lambda backend_name: 3 * 100 * 100 * 8 - 1)
    with pytest.raises(ValueError, match=r"match_template needs .* GiB .* scores of shape \(100, 100\)"):
        ac.match_template(rng.standard_normal((100, 100)), rng.standard_normal((3, 3)), "same")


def test_temporaries_over_the_memory_limit_warn(rng):
    image, template = rng.standard_normal((100, 100)), rng.standard_normal((3, 3))
    with ac.config(memory_limit=2 * 100 * 100 * 8 - 1), pytest.warns(ac.MemoryLimitWarning, match="match_template's temporaries"):
        scores = ac.match_template(image, template, "same")
    assert_matches(scores, reference_match_template(image, template, "same"), dtype="float64")


@pytest.mark.parametrize("image_dtype, template_dtype, scores", [
    ("float32", "float32", "float32"),
    ("float16", "float16", "float32"),
    ("uint16", "float32", "float32"),  # a camera's counts, a float32 template
    ("uint8", "uint8", "float64"),
    ("int32", "float32", "float64"),
    ("float32", "float64", "float64"),
])
def test_scores_dtype_follows_the_inputs_promotion(image_dtype, template_dtype, scores, rng):
    image = rng.integers(0, 200, (30, 26)).astype(image_dtype)
    template = image[4:9, 6:12].astype(template_dtype)
    got = ac.match_template(image, template)
    assert got.dtype == scores
    assert_matches(got, reference_match_template(image, template), dtype=scores)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bright", [0.0, 1000.0])
@pytest.mark.parametrize("compiled", [True, False], ids=["numba", "numpy"])
def test_float32_windows_are_summed_by_running_sums_within_float32s_rounding(monkeypatch, rng, mode, bright, compiled):
    """For float32 scores, windows of 32 samples or more along an axis (with numba's loops,
    windows of any size on 2-D images): differences of running sums, whose rounding (the
    slab's along the axis) stays far below float32's, even in a region far brighter than
    the image's mean; flat windows still score zero."""
    from arrayconv._api import match as _match

    if compiled and not _match.compiled_loops():
        pytest.skip("numba is not installed (the numba extra)")
    calls, running = [], _match._running_sums
    monkeypatch.setattr(_match, "_running_sums", lambda *args: calls.append(args[1]) or running(*args))
    monkeypatch.setattr(_match, "compiled_loops", lambda: compiled)
    image = rng.standard_normal((150, 130)).astype(np.float32)
    image[40:90, 30:80] += np.float32(bright)
    image[100:140, 60:120] = np.float32(bright + 2.5)
    for template in (image[20:40, 5:41].copy(), image[3:10, 7:12].copy()):  # 36 columns: running sums; 7x5: by doubling in NumPy
        ref, spreads = reference_match_template(image, template, mode, boundary="symm", spread=True)
        got = ac.match_template(image, template, mode, boundary="symm")
        assert_scores_match(got, ref, spreads, dtype="float32", backend="numpy")
        np.testing.assert_array_equal(got == 0, ref == 0)
    assert set(calls) == (set() if compiled else {36})


@pytest.mark.parametrize("layout", ["rows-apart", "every-other-column", "rows-reversed"])
def test_numba_scores_read_a_numerator_of_rows_apart_as_a_contiguous_one(rng, layout):
    """An FFT's 'valid' numerator is a view of rows apart in a larger result: scored as one
    line of samples, each row from its own start; one of columns apart or of rows in
    reverse is copied first."""
    from arrayconv._methods import _compiled, compiled_loops

    if not compiled_loops():
        pytest.skip("numba is not installed (the numba extra)")
    x = rng.standard_normal((40, 50)).astype(np.float32)
    numerator = rng.uniform(-3, 3, (31, 44)).astype(np.float32)
    wide = np.zeros((31, 88), np.float32)
    view = {"rows-apart": wide[:, 3:47], "every-other-column": wide[:, ::2], "rows-reversed": wide[::-1, 3:47]}[layout]
    view[...] = numerator
    expected, got = np.empty_like(numerator), np.empty_like(numerator)
    _compiled.window_scores(x, (10, 7), 0.5, numerator, expected, 1e-12)
    _compiled.window_scores(x, (10, 7), 0.5, view, got, 1e-12)
    np.testing.assert_array_equal(got, expected)
    assert np.all(np.abs(expected) <= 1) and np.count_nonzero(expected) > expected.size // 2


def test_long_float32_windows_with_a_nan_sum_their_own_samples(monkeypatch, rng):
    from arrayconv._api import match as _match

    monkeypatch.setattr(_match, "_running_sums", None)  # never called: a running sum would carry the NaN on
    image = rng.standard_normal((80, 70)).astype(np.float32)
    image[40, 30] = np.nan
    template = image[5:38, 3:40].copy()
    ref = reference_match_template(image, template)
    got = ac.match_template(image, template)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    assert np.isnan(ref).sum() == 33 * 31  # the windows over (40, 30), less those past the first column


@pytest.mark.parametrize(("scale", "method"), [(1e20, "auto"), (3e36, "direct")])
def test_float32_images_past_a_float32_square_are_scored(scale, method, rng):
    """Values of 1e20, whose squares float32 cannot hold: the windows' sums are float64; of
    3e36, whose windows' norms pass float32's largest too (by 'direct': an FFT's sums of
    so many of them overflow float32)."""
    image = (scale * rng.standard_normal((90, 80))).astype(np.float32)
    template = image[10:45, 20:60].copy()
    ref, spreads = reference_match_template(image, template, spread=True)
    assert_scores_match(ac.match_template(image, template, method=method), ref, spreads, dtype="float32", backend="numpy")
