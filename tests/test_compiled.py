"""Direct's compiled form (numba): the float64 reference on random data, NaNs in their
footprint, the same bits on one worker or many, and the NumPy forms where numba is absent."""

import contextlib
import itertools

import numpy as np
import pytest
from _reference import EDGE_RULES, NUMPY_PAD, assert_matches, random, reference_conv, reference_correlate
from _strategies import MODES, examples
from hypothesis import given, settings
from hypothesis import strategies as st

import arrayconv as ac
from arrayconv._methods import _compiled, _separable, direct
from arrayconv._runtime import config as _config
from arrayconv._runtime import jit
from arrayconv._runtime.backend import NUMPY
from arrayconv._runtime.rates import rates_for
from arrayconv._spec.shapes import mode_padding

pytestmark = pytest.mark.skipif(not _compiled.available(), reason="numba is not installed (the numba extra)")


@contextlib.contextmanager
def _forced(halo: bool = True, held: int | None = None):
    """Direct takes its compiled form wherever that runs (fused passes for an outer
    product), whatever the estimates say; its taps run from a copy of each block's rows
    extended past the column edges at any width (`halo`) or at none; with `held`, the loops
    made for a CPU whose registers hold that many weights (kernel rows a pass)."""
    real = direct._fastest_form

    def form(problem, backend, rates, settings):
        if _compiled.takes(problem, NUMPY):
            return ("compiled", int(_in_passes(problem)))
        return real(problem, backend, rates, settings)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(direct, "_fastest_form", form)
        patch.setattr(_compiled, "_HALO_WIDTH", (1 << 30,) * 2 if halo else (0, 0))
        if held is not None:
            patch.setattr(_compiled, "weights_held", lambda: held)
        ac.clear_caches()
        _compiled._geometry.cache_clear()
        yield
    ac.clear_caches()
    _compiled._geometry.cache_clear()


def _in_passes(problem) -> bool:
    """Whether the compiled loops run `problem` as an outer product's passes: marked rank
    one, but a column (always rank one) only where direct runs it so."""
    return problem.rank_one and (not _separable.column(problem) or direct._columns_in_passes(problem))


@pytest.fixture(params=[True, False], ids=["halo", "in-place"])
def compiled(request):
    with _forced(request.param):
        yield


def _plan_is_compiled(plan) -> bool:
    return isinstance(plan._kernel, _compiled.CompiledTaps)


@settings(max_examples=examples(40))
@given(
    ndim=st.sampled_from([2, 3]),
    sizes=st.lists(st.integers(1, 14), min_size=3, max_size=3),
    kernel=st.lists(st.integers(1, 9), min_size=3, max_size=3),
    mode=st.sampled_from(MODES),
    dtype=st.sampled_from(["float32", "float64"]),
    flip=st.booleans(),
    outer=st.booleans(),
    halo=st.booleans(),
    held=st.sampled_from(_compiled._HELD_WEIGHTS),
    seed=st.integers(0, 2**16),
)
def test_matches_the_reference(ndim, sizes, kernel, mode, dtype, flip, outer, halo, held, seed):
    """2-D and 3-D, odd and even kernels, kernels larger than the image, every mode; an
    outer-product kernel through the fused passes; the loops of 16 and of 32 registers."""
    rng = np.random.default_rng(seed)
    shape, k = tuple(sizes[:ndim]), tuple(kernel[:ndim])
    if mode == "valid":
        k = tuple(min(a, b) for a, b in zip(shape, k))
    x = random(rng, shape, dtype)
    if outer:
        w = np.ones((), dtype)
        for n in k:
            w = np.multiply.outer(w, random(rng, (n,), dtype))
    else:
        w = random(rng, k, dtype)
    with _forced(halo, held):
        plan = (ac.plan_convolve if flip else ac.plan_correlate)(w, x.shape, mode, "direct", dtype=dtype)
        problem = plan._spec.problem  # leading axes where the kernel is 1 long are batch axes: 1-D problems take the rows
        assert _plan_is_compiled(plan) == _compiled.takes(problem, NUMPY)
        assert not _plan_is_compiled(plan) or (plan._kernel.factors is not None) == _in_passes(problem)
        assert_matches(plan(x), reference_correlate(x, w, mode, flip=flip), dtype=dtype)


@pytest.mark.parametrize("options", [dict(padding=2), dict(padding="same"), dict(padding=(0, 3))])
def test_depthwise_and_banks_of_single_channel_filters(compiled, rng, options):
    """conv with one input channel per group: depthwise layers and several filters a channel."""
    x = random(rng, (2, 6, 17, 13), "float32")
    for w_shape, groups in (((6, 1, 5, 5), 6), ((12, 1, 3, 4), 6)):
        w = random(rng, w_shape, "float32")
        plan = ac.plan_conv(w, x.shape, "float32", groups=groups, method="direct", **options)
        assert _plan_is_compiled(plan)
        assert_matches(plan(x), reference_conv(x, w, groups=groups, **options), dtype="float32")


def test_a_nan_stays_in_its_footprint(compiled, rng):
    x = random(rng, (40, 30), "float64")
    x[10, 12] = np.nan
    for w in (random(rng, (5, 3), "float64"), np.outer(random(rng, (5,), "float64"), random(rng, (3,), "float64"))):
        y = ac.correlate(x, w, "same", "direct")
        np.testing.assert_array_equal(np.isnan(y), np.isnan(reference_correlate(x, w, "same")))  # SciPy's direct sums
        assert np.isnan(y).sum() == w.size


def test_the_same_bits_on_one_worker_or_many(compiled, rng):
    x, w = random(rng, (300, 257), "float32"), random(rng, (7, 5), "float32")
    g = np.outer(random(rng, (9,), "float32"), random(rng, (9,), "float32"))
    v, k3 = random(rng, (20, 40, 30), "float32"), random(rng, (3, 3, 3), "float32")
    results = {}
    for workers in (1, 2, 5):
        with ac.config(workers=workers):
            results[workers] = [ac.correlate(x, w, "same", "direct"), ac.correlate(x, g, "same", "direct"), ac.correlate(v, k3, "same", "direct")]
    for one, many in zip(results[1], results[5]):
        np.testing.assert_array_equal(one, many)
    for one, two in zip(results[1], results[2]):
        np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("halo", [True, False], ids=["halo", "in-place"])
@pytest.mark.parametrize("kernel", [(3, 3, 3), (2, 3, 4), (3, 1, 5)])
@pytest.mark.parametrize("boundary", ["constant", "symmetric", "wrap"])
def test_volumes_sum_every_planes_rows_in_one_pass(rng, halo, kernel, boundary):
    """A volume's small kernel (up to 27 taps, where the registers hold 27 weights) sums the
    rows of all its planes in one pass where the input's planes are stacked rows, and plane
    by plane where they are not (a slice of a larger volume); both as the reference, with a
    fill value past the edges; two output rows a pass, and an odd count's last on its own."""
    whole = random(rng, (9, 31, 17), "float32")
    w = random(rng, kernel, "float32")
    fill = -0.75 if boundary == "constant" else 0.0
    with _forced(halo, held=11):
        assert _compiled._deep_rows(kernel, halo) is None
    with _forced(halo, held=27):
        assert _compiled._deep_rows(kernel, halo) == kernel[:2] and _compiled._deep_rows((5, 5, 5), halo) is None
        for x in (whole, whole[:, 3:25]):
            got = ac.correlate(x, w, "same", "direct", boundary=boundary, fillvalue=fill)
            assert_matches(got, _extended_reference(x, w, "same", boundary, fill), dtype="float32")


def test_auto_runs_small_kernels_on_large_images_compiled(rng):
    """With the model's estimates (no forcing): a 3x3 and a 7x7 Gaussian on a 1024x1024 image."""
    for w in (random(rng, (3, 3), "float32"), np.outer(np.hanning(9), np.hanning(9)).astype(np.float32)):
        plan = ac.plan_correlate(w, (1024, 1024), "same", dtype="float32")
        assert plan.method == "direct" and _plan_is_compiled(plan), plan.choice


def test_turned_off_it_leaves_the_numpy_forms(monkeypatch, rng):
    monkeypatch.setenv("ARRAYCONV_NUMBA", "0")
    jit.numba_module.cache_clear()
    ac.clear_caches()
    try:
        assert not _compiled.available()
        x, w = random(rng, (256, 256), "float32"), random(rng, (3, 3), "float32")
        plan = ac.plan_correlate(w, x.shape, "same", "direct")
        assert not _plan_is_compiled(plan)
        assert_matches(plan(x), reference_correlate(x, w, "same"), dtype="float32")
    finally:
        monkeypatch.delenv("ARRAYCONV_NUMBA")
        jit.numba_module.cache_clear()
        ac.clear_caches()


def _extended_reference(x, w, mode, boundary, fillvalue=0.0):
    """The float64 reference with a boundary rule: `x` padded by it, then 'valid'."""
    pads = [mode_padding(n, k, mode) for n, k in zip(x.shape, w.shape)]
    extra = dict(constant_values=fillvalue) if boundary == "constant" else {}
    return reference_correlate(np.pad(x.astype(np.float64), pads, mode=NUMPY_PAD[boundary], **extra), w, "valid")


@settings(max_examples=examples(40))
@given(
    ndim=st.sampled_from([2, 3]),
    sizes=st.lists(st.integers(1, 12), min_size=3, max_size=3),
    kernel=st.lists(st.integers(1, 7), min_size=3, max_size=3),
    mode=st.sampled_from(["same", "full"]),
    boundary=st.sampled_from(EDGE_RULES),
    fillvalue=st.sampled_from([0.0, -1.5]),
    outer=st.booleans(),
    halo=st.booleans(),
    held=st.sampled_from(_compiled._HELD_WEIGHTS),
    seed=st.integers(0, 2**16),
)
def test_every_boundary_rule_read_in_place(ndim, sizes, kernel, mode, boundary, fillvalue, outer, halo, held, seed):
    """Every edge rule (a fill value other than zero too) read through the index maps, with
    no extended copy; pads past one copy of the image (a kernel larger than it) included."""
    rng = np.random.default_rng(seed)
    shape, k = tuple(sizes[:ndim]), tuple(kernel[:ndim])
    x = random(rng, shape, "float64")
    w = random(rng, k, "float64")
    if outer:
        w = np.ones(())
        for n in k:
            w = np.multiply.outer(w, random(rng, (n,), "float64"))
    fill = fillvalue if boundary == "constant" else 0.0
    with _forced(halo, held):
        plan = ac.plan_correlate(w, x.shape, mode, "direct", boundary=boundary, fillvalue=fill)
        if _plan_is_compiled(plan):
            assert plan._as_given  # no extended copy
        assert_matches(plan(x), _extended_reference(x, w, mode, boundary, fill), dtype="float64")


@pytest.mark.parametrize("boundary", EDGE_RULES)
def test_every_boundary_rule_on_each_path(compiled, rng, boundary):
    """Each edge rule (a fill value other than zero for 'constant') on images and volumes,
    odd and even kernels, one wider than the image, outer products too: the taps from a copy
    with its edges and in place, an outer product's rows extended past their ends."""
    fill = -1.5 if boundary == "constant" else 0.0
    for shape, k in (((13, 11), (3, 4)), ((6, 5), (5, 7)), ((5, 9, 8), (3, 3, 3)), ((4, 7, 6), (2, 3, 4))):
        x = random(rng, shape, "float64")
        outer = np.ones(())
        for n in k:
            outer = np.multiply.outer(outer, random(rng, (n,), "float64"))
        for w, mode in itertools.product((random(rng, k, "float64"), outer), ("same", "full")):
            got = ac.correlate(x, w, mode, "direct", boundary=boundary, fillvalue=fill)
            assert_matches(got, _extended_reference(x, w, mode, boundary, fill), dtype="float64")


@pytest.mark.parametrize("boundary", EDGE_RULES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rows_wider_than_two_pieces(compiled, rng, boundary, dtype):
    """Kernel rows of 33 to :data:`MAX_ROW_TAPS` taps, summed in many pieces: rows of a 2-D
    kernel, a kernel one row high, an outer product's passes on images and volumes; the
    rows wider than the image too."""
    fill = 0.75 if boundary == "constant" else 0.0
    for shape, k, outer in (((9, 70), (3, 47), False), ((6, 150), (1, _compiled.MAX_ROW_TAPS), False), ((5, 30), (2, 41), False),
                            ((70, 90), (65, 65), True), ((12, 50, 60), (5, 33, 41), True), ((40, 120), (97, 1), True)):
        x = random(rng, shape, dtype)
        w = random(rng, k, dtype)
        if outer:
            w = np.ones((), dtype)
            for n in k:
                w = np.multiply.outer(w, random(rng, (n,), dtype))
        plan = ac.plan_correlate(w, shape, "same", "direct", boundary=boundary, fillvalue=fill, dtype=dtype)
        assert _plan_is_compiled(plan)
        assert_matches(plan(x), _extended_reference(x, w, "same", boundary, fill), dtype=dtype)


@pytest.mark.parametrize("halo", [True, False], ids=["halo", "in-place"])
@pytest.mark.parametrize("kernel", [(5, 5), (4, 6), (6, 1)])
@pytest.mark.parametrize("boundary", ["constant", "symmetric", "wrap"])
def test_images_sum_every_row_in_one_pass(rng, halo, kernel, boundary):
    """An image's kernel of 4 rows or more (up to 27 taps) sums all its rows in one pass from
    the copy with edges, two output rows at a time, an odd count's last on its own (in place,
    the fused passes); both as the reference."""
    whole = random(rng, (31, 40), "float32")
    w = random(rng, kernel, "float32")
    fill = -0.75 if boundary == "constant" else 0.0
    with _forced(halo, held=27):
        assert _compiled._deep_rows(kernel, halo) == ((1, kernel[0]) if halo else None) and _compiled._deep_rows((3, 3), True) is None
        for x in (whole, whole[3:28, 5:37]):
            got = ac.correlate(x, w, "same", "direct", boundary=boundary, fillvalue=fill)
            assert_matches(got, _extended_reference(x, w, "same", boundary, fill), dtype="float32")


@pytest.mark.parametrize("kernel", [(7, 7), (9, 9), (5, 10), (2, 5, 7)])
@pytest.mark.parametrize("boundary", ["constant", "symmetric", "wrap"])
def test_wide_rows_sum_two_output_rows_a_pass(rng, monkeypatch, kernel, boundary):
    """Output rows of their own (too wide for segments) under a kernel too large for one
    pass run two at a time, a few kernel rows a pass (the rows short of a pass one at a
    time, an odd count's last output row on its own, columns past the vectors in a scalar
    loop): the reference's values, and the same bits as in segments of several rows."""
    shape = (13, 37) if len(kernel) == 2 else (4, 11, 37)
    x, w = random(rng, shape, "float32"), random(rng, kernel, "float32")
    fill = -0.75 if boundary == "constant" else 0.0
    # blocks of 5 rows of an image, of one plane's 11 rows of the volume: odd counts
    monkeypatch.setattr(_compiled, "_BLOCK_SAMPLES", 5 * 37 if len(kernel) == 2 else 740)

    def run(line_samples: int):
        monkeypatch.setattr(_compiled, "_LINE_SAMPLES", line_samples)
        with _forced(halo=True, held=27):
            assert _compiled._deep_rows(kernel, True) is None and _compiled._fused_rows(kernel, True) > 1
            return ac.correlate(x, w, "same", "direct", boundary=boundary, fillvalue=fill)

    pairs, segments = run(1), run(1 << 12)
    assert_matches(pairs, _extended_reference(x, w, "same", boundary, fill), dtype="float32")
    np.testing.assert_array_equal(pairs, segments)


@pytest.mark.parametrize("boundary", EDGE_RULES)
def test_volumes_in_blocks_of_several_planes(compiled, rng, monkeypatch, boundary):
    """Blocks made small, so that a volume's large planes run in bands of rows of several
    planes (each input plane copied once a block, in a ring of the kernel's depth) and
    small ones several planes a block: the reference's values, and the same bits as whole
    planes a block."""
    x, w = random(rng, (11, 13, 9), "float64"), random(rng, (3, 2, 4), "float64")

    def run(block_samples: int):
        monkeypatch.setattr(_compiled, "_BLOCK_SAMPLES", block_samples)
        monkeypatch.setattr(_compiled, "_BAND_PLANES", 4)
        ac.clear_caches()
        _compiled._geometry.cache_clear()
        return ac.correlate(x, w, "same", "direct", boundary=boundary)

    banded, small_planes, whole = run(40), run(300), run(1 << 16)
    assert_matches(banded, _extended_reference(x, w, "same", boundary), dtype="float64")
    np.testing.assert_array_equal(small_planes, banded)
    np.testing.assert_array_equal(whole, banded)
    ac.clear_caches()
    _compiled._geometry.cache_clear()


@settings(max_examples=examples(60))
@given(
    batch=st.integers(1, 5),
    maps=st.integers(1, 4),
    sides=st.lists(st.integers(1, 300), min_size=2, max_size=3),
    taps=st.integers(1, 9),
    chunk_bytes=st.sampled_from([1, 3000, 1 << 20]),
)
def test_the_estimates_count_blocks_and_chunks_without_listing_them(batch, maps, sides, taps, chunk_bytes):
    """The counts the estimates take (a problem of many maps made lists of millions of
    blocks: choosing for 256 maps of 4096x4096 took 22 s) equal the lists' lengths."""
    kernel = (min(taps, min(sides)),) * len(sides)
    plan = ac.plan_conv(np.random.default_rng(0).standard_normal((maps, 1, *kernel)), (batch, 1, *sides), "float32", method="direct")
    p = _compiled._image(plan._spec.problem)
    out = _compiled._out_dims(p)
    assert _compiled._unit_count(p, out) == len(_compiled._units(p, out))
    lay = direct.layout(plan._spec.problem)
    assert lay.item_runs(4, chunk_bytes) == sum(c.b1 - c.b0 for c in lay.chunks(4, chunk_bytes))


@pytest.mark.parametrize("boundary", EDGE_RULES)
@pytest.mark.parametrize("shape, kernel", [((23, 17), (5, 4)), ((7, 12, 10), (3, 3, 2)), ((6, 9, 11), (2, 5, 3))])
def test_halo_rows_as_one_line_in_segments_or_one_by_one(rng, monkeypatch, boundary, shape, kernel):
    """The copy's rows read as one line: segments of a few output rows (a shorter last
    one) and each row on its own give the reference's values."""
    x, w = random(rng, shape, "float64"), random(rng, kernel, "float64")
    reference = _extended_reference(x, w, "same", boundary)
    for line_samples, line_rows in [(3 * (shape[-1] + kernel[-1] - 1) + 2, 2), (1 << 11, 1 << 20)]:
        monkeypatch.setattr(_compiled, "_LINE_SAMPLES", line_samples)
        monkeypatch.setattr(_compiled, "_LINE_ROWS", line_rows)
        with _forced(halo=True):
            assert _compiled._geometry.cache_info().currsize == 0
            assert_matches(ac.correlate(x, w, "same", "direct", boundary=boundary), reference, dtype="float64")


@pytest.mark.parametrize("boundary", EDGE_RULES)
def test_a_plans_bound_call_gives_the_full_paths_bits(compiled, rng, boundary):
    """A plan of a small problem calls its loops bound to the input's shape, skipping its
    other steps (into a new result or a C-contiguous `out`); a strided `out` takes every
    step: the same bits, and the reference's values. Images, volumes, outer products, lines
    and a batch of channels, float32 and float64."""
    fill = 2.5 if boundary == "constant" else 0.0
    for shape, k, dtype in (((37, 29), (3, 4), "float32"), ((9, 11, 8), (3, 3, 3), "float64"), ((4, 3, 21, 17), (5, 5), "float32")):
        x = random(rng, shape, dtype)
        outer = np.ones(())
        for n in k:
            outer = np.multiply.outer(outer, random(rng, (n,), dtype))
        for taps in (random(rng, k, dtype), outer.astype(dtype), random(rng, (1, 7), dtype)):
            w = taps.reshape((1,) * (x.ndim - taps.ndim) + taps.shape)  # the leading axes a batch
            plan = ac.plan_correlate(w, x.shape, "same", "direct", boundary=boundary, fillvalue=fill, dtype=dtype)
            assert plan._bound is not None
            strided = np.empty((*x.shape[:-1], 2 * x.shape[-1]), dtype)[..., ::2]
            into = np.empty(x.shape, dtype)
            bound, given = plan(x), plan(x, out=into)
            full = plan(x, out=strided)
            np.testing.assert_array_equal(bound, full)
            np.testing.assert_array_equal(given, full)
            assert given is into and full is strided
            assert_matches(bound, _extended_reference(x, w, "same", boundary, fill), dtype=dtype)
    x, w, bias = random(rng, (2, 3, 12, 10), "float32"), random(rng, (3, 1, 3, 5), "float32"), random(rng, (3,), "float32")
    plan = ac.plan_conv(w, x.shape, bias=bias, groups=3, padding=(1, 2), method="direct")
    assert plan._bound is not None
    strided = np.empty((*x.shape[:-1], 2 * x.shape[-1]), "float32")[..., ::2]
    np.testing.assert_array_equal(plan(x), plan(x, out=strided))  # the bias added on both paths
    assert_matches(plan(x), reference_conv(x, w, bias, groups=3, padding=(1, 2)), dtype="float32")


def test_a_plans_bound_call_shares_a_large_problem_on_the_workers(compiled, rng):
    """A problem large enough to share (workers taken at each call): the bound call's bits
    on one worker and on several are the full path's."""
    x, w = random(rng, (700, 520), "float32"), random(rng, (7, 7), "float32")
    plan = ac.plan_correlate(w, x.shape, "same", "direct", boundary="symmetric")
    assert plan._bound is not None
    strided = np.empty((700, 1040), "float32")[:, ::2]
    results = []
    for workers in (1, 2):
        with ac.config(workers=workers):
            results += [plan(x), plan(x, out=strided).copy()]
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])
    assert_matches(results[0], _extended_reference(x, w, "same", "symmetric"), dtype="float32")


@pytest.mark.parametrize("boundary", ["constant", "symmetric"])
def test_kernels_with_an_axis_of_one_tap(compiled, rng, boundary):
    """An outer product with one tap along an axis (a Gaussian over two axes of a volume)
    runs the fused passes, a pass of one tap along that axis; kernel rows of one tap are
    summed many a pass. Both as the reference."""
    fill = -0.5 if boundary == "constant" else 0.0
    for shape, k in (((7, 12, 9), (5, 4, 1)), ((6, 11, 10), (4, 1, 5)), ((5, 13, 8), (1, 6, 3)), ((15, 14), (9, 1)), ((6, 13, 8), (2, 7, 1))):
        x = random(rng, shape, "float64")
        for outer in (True, False):
            w = random(rng, k, "float64")
            if outer:
                w = np.ones(())
                for n in k:
                    w = np.multiply.outer(w, random(rng, (n,), "float64"))  # not 1 where n is 1
            plan = ac.plan_correlate(w, x.shape, "same", "direct", boundary=boundary, fillvalue=fill)
            problem = plan._spec.problem
            assert _plan_is_compiled(plan)
            assert (plan._kernel.factors is not None) == (outer and sum(n > 1 for n in k) > 1)
            assert problem.rank_one == (plan._kernel.factors is not None or _separable.column(problem))
            assert_matches(plan(x), _extended_reference(x, w, "same", boundary, fill), dtype="float64")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("boundary", ["constant", "symmetric", "wrap"])
def test_columns_along_planes_or_taller_than_a_pass_run_as_passes(compiled, rng, dtype, boundary):
    """A filter one tap wide along a volume's planes (9 taps and more) or along an image's
    columns (taller than a pass's weights) runs only as an outer product's passes (one tap
    wide, any kernel is one), shorter ones as kernel rows: as the reference in every mode."""
    fill = -0.5 if boundary == "constant" else 0.0
    tall = _compiled.weights_held() + 2
    for shape, k, passes in (((11, 6, 7), (9, 1, 1), True), ((20, 5, 9), (17, 1, 1), True), ((9, 6, 7), (5, 1, 1), False),
                             ((2 * tall, 9), (tall, 1), True), ((tall + 3, 12), (tall + 1, 1), True), ((12, 10), (7, 1), False)):
        x, w = random(rng, shape, dtype), random(rng, k, dtype)
        for mode in ("same", "full", "valid"):
            options = dict(boundary=boundary, fillvalue=fill) if mode == "same" else {}
            plan = ac.plan_correlate(w, x.shape, mode, "direct", dtype=dtype, **options)
            forms = direct._form_seconds(plan._spec.problem, NUMPY, rates_for(NUMPY), _config.settings("numpy"))
            assert (("compiled", 0) not in forms) == passes and (plan._kernel.factors is not None) == passes
            expected = _extended_reference(x, w, mode, boundary, fill) if mode == "same" else reference_correlate(x, w, mode)
            assert_matches(plan(x), expected, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_count_of_rows_and_planes_a_pass_sums_as_the_reference(compiled, rng, dtype):
    """An outer product's column and plane passes take 1 to 19 rows (or planes) as passes of
    the sizes compiled (one of 3, 5 or 9, two of 8 + 9, ...): on narrow rows (several rows a
    pass as one line) and wide ones (two rows a pass), odd counts of output rows too, with a
    constant edge, as the reference; on rows of 1024 samples or more, 1 to 29 rows (with 16
    vector registers, passes of as many rows each: 6 + 6 + 5, 7 + 6 + 6 + 6, ...)."""
    for n in range(1, 30):
        column = random(rng, (n,), dtype)
        row = random(rng, (3,), dtype)
        for shape in ((n + 4, 20), (n + 3, 600), (n + 3, 1100)) if n < 20 else ((n + 3, 1100),):
            x, w = random(rng, shape, dtype), np.multiply.outer(column, row)
            assert_matches(ac.correlate(x, w, "same", "direct", fillvalue=-0.5), _extended_reference(x, w, "same", "constant", -0.5), dtype=dtype)
        if n >= 20:
            continue
        x, w = random(rng, (n + 2, 9, 14), dtype), np.multiply.outer(column, np.multiply.outer(random(rng, (2,), dtype), row))
        assert_matches(ac.correlate(x, w, "same", "direct", fillvalue=-0.5), _extended_reference(x, w, "same", "constant", -0.5), dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rows_that_read_the_same_both_ways_sum_mirrored_taps_first(compiled, rng, dtype):
    """An outer product whose row reads the same both ways (a Gaussian's, a box's) sums the
    samples under each pair of mirrored taps first: rows of 2 to 16 taps (one piece), 17, 18,
    25 and 32 (one loop, not pieces), odd and even, on images narrower and wider than a
    vector, several rows a pass as one line and two at a time, as the reference; so does a row
    that differs in one tap (the plain pass), and one of 33 taps (pieces)."""
    for n in (*range(2, 19), 25, 32, 33):
        half = random(rng, (n,), dtype)
        row = half + half[::-1]
        lopsided = row.copy()
        lopsided[0] *= 1.5
        for r in (row, lopsided):
            for shape in ((9, 5), (7, 21), (6, 600)):
                x, w = random(rng, shape, dtype), np.multiply.outer(random(rng, (3,), dtype), r)
                assert_matches(ac.correlate(x, w, "same", "direct", boundary="symmetric"), _extended_reference(x, w, "same", "symmetric", 0.0), dtype=dtype)


@pytest.mark.parametrize("bands", [True, False], ids=["bands", "whole-planes"])
@pytest.mark.parametrize("segments", [True, False])
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("boundary", ["constant", "wrap"])
def test_an_outer_products_passes_one_or_two_rows_and_planes_a_pass(compiled, rng, monkeypatch, bands, segments, workers, boundary):
    """Column passes make two rows a pass (one for the last of an odd count) or, with
    `segments`, a few rows a pass as one line where the rows are in order; a volume's
    plane pass two planes a pass (one for the last of an odd count) from the ring of its
    planes' passes, in bands of 8 rows with `bands`, else of whole planes, and on two
    workers in slabs of planes where the volume is deep: odd and even counts of rows and
    planes, rows and planes past the edges, strided inputs and results, as the reference."""
    monkeypatch.setattr(_compiled, "l2_bytes", lambda: 2 if bands else 2 << 20)
    monkeypatch.setattr(_compiled, "_THREADED_MACS", 0)
    _compiled._geometry.cache_clear()
    ac.clear_caches()
    monkeypatch.setattr(_compiled, "_LINE_SAMPLES", 30)
    monkeypatch.setattr(_compiled, "_SEPARABLE_LINE_ROWS", 2 if segments else 1 << 20)
    if workers == 2:
        slabs = _compiled._ring_units(_compiled._image(ac.plan_correlate(np.ones((3, 2, 3)), (25, 6, 5), "same", "direct")._spec.problem), (25, 6, 5), 6, 2)
        assert [(z0, z1) for *_, z0, z1, _r0, _r1 in slabs] == [(0, 13), (13, 25)]
    fill = -0.5 if boundary == "constant" else 0.0
    shapes = (((7, 12, 9), (3, 5, 2)), ((6, 11, 10), (4, 2, 3)), ((15, 14), (5, 4)), ((5, 13, 8), (3, 3, 3)), ((25, 6, 5), (3, 2, 3)))
    for shape, k in shapes:
        x = random(rng, shape, "float64")
        strided = np.empty((*shape[:-1], 2 * shape[-1]))[..., ::2]
        strided[...] = x
        w = np.ones(())
        for n in k:
            w = np.multiply.outer(w, random(rng, (n,), "float64"))
        for mode in ("same", "full", "valid"):
            expected = _extended_reference(x, w, mode, boundary, fill)
            with ac.config(workers=workers):
                assert_matches(ac.correlate(x, w, mode, "direct", boundary=boundary, fillvalue=fill), expected, dtype="float64")
            assert_matches(ac.correlate(strided, w, mode, "direct", boundary=boundary, fillvalue=fill), expected, dtype="float64")
            given = np.empty((*expected.shape[:-1], 2 * expected.shape[-1]))[..., ::2]
            ac.correlate(x, w, mode, "direct", boundary=boundary, fillvalue=fill, out=given)
            assert_matches(given, expected, dtype="float64")


@pytest.mark.parametrize(("dtype", "kernel_dtype"), [("uint8", "float32"), ("int8", "float32"), ("uint16", "float32"), ("int16", "float32"), ("float32", "float64")])
@pytest.mark.parametrize("boundary", ["constant", "mirror"])
def test_small_integers_and_float32_read_as_they_are(compiled, rng, dtype, kernel_dtype, boundary):
    """8- and 16-bit images with a float32 kernel, float32 images with a float64 one: read
    without a converted copy, the result in the result dtype, as a float64 reference on the
    same samples."""
    if np.dtype(dtype).kind == "f":
        x = random(rng, (37, 45), dtype)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (37, 45), dtype=dtype, endpoint=True)
    for w in (random(rng, (5, 3), kernel_dtype), np.outer(random(rng, (7,), kernel_dtype), random(rng, (7,), kernel_dtype))):
        plan = ac.plan_correlate(w, x.shape, "same", "direct", boundary=boundary, dtype=dtype)
        assert plan._as_given and plan.y_dtype == np.dtype(kernel_dtype)
        got = plan(x)
        assert got.dtype == np.dtype(kernel_dtype)
        assert_matches(got, _extended_reference(x, w, "same", boundary), dtype=kernel_dtype)


# Each case of the line tests: mode, edge rule, dtype and the data's seed.
_LINE_CASES = dict(
    mode=st.sampled_from(MODES),
    boundary=st.sampled_from(EDGE_RULES),
    dtype=st.sampled_from(["float32", "float64"]),
    seed=st.integers(0, 2**16),
)


@settings(max_examples=examples(40))
@given(
    lines=st.integers(1, 9),
    length=st.integers(1, 40),
    taps=st.sampled_from([1, 2, 5, 9, 40, _compiled.MAX_ROW_TAPS]),  # each width compiles its own loops
    **_LINE_CASES,
)
def test_lines_run_as_the_rows_of_one_image(lines, length, taps, mode, boundary, dtype, seed):
    """A 1-D signal, or a stack of lines filtered along their last axis by one filter, runs
    as the rows of one image with a kernel one row high; every mode and edge rule."""
    rng = np.random.default_rng(seed)
    taps = min(taps, length) if mode == "valid" else taps
    x, w = random(rng, (lines, length), dtype), random(rng, (taps,), dtype)
    with _forced():
        plan = ac.plan_correlate(w[None], x.shape, mode, "direct", boundary=boundary, dtype=dtype)
        single = ac.plan_correlate(w, x[0].shape, mode, "direct", boundary=boundary, dtype=dtype)
    assert _plan_is_compiled(plan) and _plan_is_compiled(single)
    reference = _extended_reference(x, w[None], mode, boundary, 0.0)
    assert_matches(plan(x), reference, dtype=dtype)
    assert_matches(single(x[0]), reference[0], dtype=dtype)


@settings(max_examples=examples(40))
@given(
    lines=st.integers(1, 2),
    length=st.integers(1, 60),
    taps=st.sampled_from([1, 2, 5, 9, 40]),
    **_LINE_CASES,
)
def test_long_lines_run_in_windows_of_their_columns_side_by_side(lines, length, taps, mode, boundary, dtype, seed):
    """Fewer lines than threads (one signal) are cut in windows of their output columns, one
    a call on the workers (here windows of 4 multiply-adds or more on 3 workers): as the
    reference, and the same bits as on one worker, every mode and edge rule."""
    rng = np.random.default_rng(seed)
    taps = min(taps, length) if mode == "valid" else taps
    x, w = random(rng, (lines, length), dtype), random(rng, (taps,), dtype)
    with _forced(halo=False), pytest.MonkeyPatch.context() as patch:
        patch.setattr(_compiled, "_CALL_MACS", 4)
        patch.setattr(_compiled, "_THREADED_MACS", 0)
        got = {}
        for workers in (1, 3):
            with ac.config(workers=workers):
                plan = ac.plan_correlate(w[None], x.shape, mode, "direct", boundary=boundary, dtype=dtype)
                assert _plan_is_compiled(plan)
                got[workers] = plan(x)
    assert_matches(got[3], _extended_reference(x, w[None], mode, boundary, 0.0), dtype=dtype)
    np.testing.assert_array_equal(got[3], got[1])


@settings(max_examples=examples(30))
@given(
    lines=st.integers(1, 6),
    filters=st.integers(1, 3),
    length=st.integers(1, 40),
    taps=st.sampled_from([1, 2, 5, 9, 40]),
    **_LINE_CASES,
)
def test_lines_with_filters_of_their_own_run_as_images_of_one_row(lines, filters, length, taps, mode, boundary, dtype, seed):
    """Lines each with a filter of its own (``axes=-1``), and each with a bank of `filters`
    (a grouped conv), as images one row high; every mode and edge rule."""
    rng = np.random.default_rng(seed)
    taps = min(taps, length) if mode == "valid" else taps
    x, w = random(rng, (lines, length), dtype), random(rng, (lines * filters, taps), dtype)
    with _forced():
        own = ac.plan_correlate(w[::filters], x.shape, mode, "direct", axes=-1, boundary=boundary, dtype=dtype)
        bank = ac.plan_conv(w[:, None], (1, lines, length), dtype, padding=taps - 1, groups=lines, method="direct")
    assert _plan_is_compiled(own) and _plan_is_compiled(bank)
    reference = np.concatenate([_extended_reference(x[i : i + 1], w[i * filters : i * filters + 1], mode, boundary) for i in range(lines)])
    assert_matches(own(x), reference, dtype=dtype)
    banks = reference_conv(x[None], w[:, None], padding=taps - 1, groups=lines)
    assert_matches(bank(x[None]), banks, dtype=dtype)


@pytest.mark.parametrize("boundary", ["symmetric", "mirror", "wrap"])
def test_the_compiled_loops_are_taken_where_they_skip_a_copy_of_the_input(rng, boundary):
    """A float32 image under a float64 row filter: the other forms read a float64 copy of
    it (extended by the edge rule), which the compiled loops skip; that copy is counted, so
    the plan reads the image as given (scipy.ndimage's passes on float32 images)."""
    x, w = random(rng, (512, 512), "float32"), random(rng, (1, 3), "float64")
    plan = ac.plan_correlate(w, x.shape, "same", "direct", boundary=boundary, dtype=x.dtype)
    assert _plan_is_compiled(plan) and plan._as_given
    assert_matches(plan(x), _extended_reference(x, w, "same", boundary), dtype="float64")


@pytest.mark.parametrize(("shape", "taps", "filters"), [((256, 4096), 17, 1), ((1 << 16,), 31, 1), ((2, 1, 64, 1024), 25, 1), ((1, 1, 64, 1024), 17, 4)])
def test_banded_gemms_offered_only_beside_the_loops_where_a_group_has_several_filters(shape, taps, filters):
    # One filter a group: the compiled loops ran rows of 3-31 taps 2.2-4.5x faster than the banded GEMMs.
    x = np.zeros(shape, np.float32)
    if len(shape) == 4:
        choice = ac.choose_method(x, np.ones((filters, 1, 1, taps), np.float32), op="conv")
    else:
        choice = ac.choose_method(x, np.ones((1,) * (len(shape) - 1) + (taps,), np.float32), mode="same")
    forms = {name.split(" ")[0] for name, _ in choice.estimates["direct"].forms}
    assert "compiled" in forms
    assert ("banded" in forms) == (filters > 1)
