"""correlate/convolve against scipy.signal in float64, every method, mode and dtype."""

import itertools
import time

import numpy as np
import pytest
import scipy.signal
from _reference import EDGE_RULES, NUMPY_PAD, assert_matches, random, reference_conv, reference_correlate, reference_terms
from _strategies import FLOAT_DTYPES, MODES, correlate_shapes, examples
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import ndimage

import arrayconv as ac
from arrayconv._plan.plan import Plan
from arrayconv._spec.shapes import mode_padding

METHODS = ["auto", *ac.METHODS]
FUNCS = {"correlate": (ac.correlate, False), "convolve": (ac.convolve, True)}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("func", FUNCS)
@settings(max_examples=examples(25))
@given(case=correlate_shapes(), dtype=st.sampled_from(FLOAT_DTYPES), seed=st.integers(0, 2**16))
@example(case=((6, 6), (6, 6), "valid"), dtype="float32", seed=187)  # one output, 180x below its terms
def test_matches_scipy(xp, func, method, case, dtype, seed):
    s1, s2, mode = case
    rng = np.random.default_rng(seed)
    in1, in2 = random(rng, s1, dtype), random(rng, s2, dtype)
    fn, flip = FUNCS[func]
    got = fn(xp.asarray(in1), xp.asarray(in2), mode, method)
    terms = reference_terms(in1, in2, mode, flip=flip)  # a single output (equal shapes, 'valid') may cancel far below its terms
    assert_matches(got, reference_correlate(in1, in2, mode, flip=flip), dtype=dtype, backend=xp.__name__, terms=terms)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [1, 2, 3, 4, 7, 8])
def test_odd_and_even_kernels_2d(xp, method, mode, k, rng):
    in1, in2 = random(rng, (13, 10), "float64"), random(rng, (k, k + 1), "float64")
    for fn, flip in FUNCS.values():
        got = fn(xp.asarray(in1), xp.asarray(in2), mode, method)
        assert_matches(got, reference_correlate(in1, in2, mode, flip=flip), dtype="float64", backend=xp.__name__)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mode", MODES)
def test_kernel_larger_than_input(xp, method, mode, rng):
    in1, in2 = random(rng, (4, 5), "complex128"), random(rng, (9, 11), "complex128")
    for fn, flip in FUNCS.values():
        got = fn(xp.asarray(in1), xp.asarray(in2), mode, method)
        assert_matches(got, reference_correlate(in1, in2, mode, flip=flip), dtype="complex128", backend=xp.__name__)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "dtypes",
    [("int8", "int8"), ("int16", "int32"), ("uint8", "uint8"), ("int64", "int64"), ("int32", "float32"), ("uint16", "float64")],
)
def test_integer_inputs_as_scipy(xp, method, dtypes, rng):
    in1, in2 = random(rng, (17, 9), dtypes[0]), random(rng, (4, 3), dtypes[1])
    expected = reference_correlate(in1, in2, "same")  # SciPy direct on the integers themselves
    got = ac.correlate(xp.asarray(in1), xp.asarray(in2), "same", method)
    assert_matches(got, expected, dtype=np.result_type(in1, in2), backend=xp.__name__)


@pytest.mark.parametrize("chunk_bytes", [4 << 20, 1 << 9])
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_direct_taps_of_one_map(chunk_bytes, dtype, rng, monkeypatch):
    # One map (one image, one kernel) sums its taps on 1-D views with scalar weights: in one
    # chunk, and in chunks of a few output rows, which start past the first row. The chunked
    # path, not the one-map runner (tested below).
    from arrayconv._methods import _one_map, direct

    monkeypatch.setattr(direct, "_form", lambda problem, backend, rates, settings: ("taps", 0))
    monkeypatch.setattr(direct, "_CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr(_one_map, "one_map", lambda *args: None)
    x, w = random(rng, (37, 29), dtype), random(rng, (4, 5), dtype)
    for mode in MODES:
        plan = ac.plan_correlate(w, x.shape, mode, method="direct")
        assert plan._kernel.shape == (20, 1, 1, 1)
        assert_matches(plan(x), reference_correlate(x, w, mode), dtype=dtype)


@pytest.mark.parametrize("form", ["taps", "rows"])
@settings(max_examples=examples(40), deadline=None)
@given(
    case=correlate_shapes(),
    dtype=st.sampled_from(["float32", "float64"]),
    flip=st.booleans(),
    boundary=st.sampled_from(["constant", "wrap"]),
    seed=st.integers(0, 2**16),
)
def test_one_map_runs_as_its_chunk(form, case, dtype, flip, boundary, seed):
    """One image with one kernel in one chunk runs without the chunk machinery
    (:mod:`._one_map`): the same bits as the chunked path, into `out` too, and SciPy's
    result; the plain call's first (through the plan) and later (without it) the same.
    'wrap' too (a circular problem: its halos copied one period away), where no halo is
    longer than its axis."""
    from arrayconv._methods import _one_map, _rows, direct

    s1, s2, mode = case
    rng = np.random.default_rng(seed)
    in1, in2 = random(rng, s1, dtype), random(rng, s2, dtype)
    make = ac.plan_convolve if flip else ac.plan_correlate
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(direct, "_form", lambda problem, backend, rates, settings: (form, 0))
        plan = make(in2, s1, mode, method="direct", boundary=boundary)
        one = isinstance(plan._kernel, _one_map.MapKernel)
        patch.setattr(_one_map, "one_map", lambda *args: None)
        chunked = make(in2, s1, mode, method="direct", boundary=boundary)
    p = plan._spec.problem
    single = p.batch * p.groups * p.out_per_group == 1
    past_one_period = p.circular and any(max(lo, hi) > n for n, lo, hi in zip(p.spatial, p.pad_lo, p.pad_hi))
    assert p.circular == (boundary == "wrap" and mode != "valid")  # "valid" reads nothing past the edges
    assert one == (single and not (form == "rows" and _rows.reads_lines(p)) and not past_one_period)
    got = plan(in1)
    x, ref_mode = in1, mode
    if boundary == "wrap" and mode != "valid":
        x, ref_mode = np.pad(in1, [mode_padding(n, k, mode) for n, k in zip(s1, s2)], mode="wrap"), "valid"
    assert_matches(got, reference_correlate(x, in2, ref_mode, flip=flip), dtype=dtype, terms=reference_terms(x, in2, ref_mode, flip=flip))
    np.testing.assert_array_equal(got, chunked(in1))
    out = np.full(plan.y_shape, np.nan, dtype)
    assert plan(in1, out=out) is out
    np.testing.assert_array_equal(out, got)


def test_integer_overflow_wraps_as_scipy_direct():
    in1 = (np.arange(5, dtype=np.int8) * 40)
    in2 = np.arange(3, dtype=np.int8)
    expected = np.array([0, 80, -56, 64, -72, -96, 0], dtype=np.int8)  # scipy.signal.correlate(method='direct')
    np.testing.assert_array_equal(ac.correlate(in1, in2, method="direct"), expected)
    np.testing.assert_array_equal(ac.correlate(in1, in2), expected)  # auto keeps it exact


@pytest.mark.parametrize("method", ["auto", *METHODS])
def test_integer_results_past_their_dtype_wrap_on_every_method(method):
    """Found by fuzzing against scipy.signal: integer results that overflow their dtype
    wrap in SciPy's direct sums; a method computing in float64 (exact here) must wrap too,
    not saturate at -2**31."""
    in1, in2 = np.full(256, 255, np.uint8), np.full(256, 2**31 - 1, np.int32)
    expected = scipy.signal.convolve(in1, in2, method="direct")
    np.testing.assert_array_equal(ac.convolve(in1, in2, method=method), expected)
    small = (np.arange(5, dtype=np.int8) * 40, np.arange(3, dtype=np.int8))
    np.testing.assert_array_equal(ac.correlate(*small, method=method), scipy.signal.correlate(*small, method="direct"))


@pytest.mark.parametrize("method", ["auto", *METHODS])
@pytest.mark.parametrize("values", [(np.float64(2.5), np.float64(-3.0)), (np.float32(1.5), np.float32(4.0)), (np.complex128(1 + 2j), np.complex128(3 - 1j)), (np.int16(7), np.int16(-9))])
def test_two_0d_inputs_give_scipys_numpy_scalar_on_every_method(method, values):
    """One rule for 0-d inputs, every method: a NumPy scalar of the result dtype, as SciPy."""
    for ours, theirs in ((ac.correlate, scipy.signal.correlate), (ac.convolve, scipy.signal.convolve)):
        got, expected = ours(*(np.asarray(v) for v in values), method=method), theirs(*(np.asarray(v) for v in values))
        assert type(got) is type(expected) and got == expected


def test_auto_avoids_fft_for_large_integers(monkeypatch):
    big = np.array([2**40, -(2**40) + 1, 3, 2**39], dtype=np.int64)
    kernel = np.array([2**20, 7, -(2**19)], dtype=np.int64)
    monkeypatch.setitem(ac.METHODS, "fft", _refuse(ac.METHODS["fft"]))
    got = ac.correlate(big, kernel)
    np.testing.assert_array_equal(got, reference_correlate(big, kernel, "full"))


@pytest.mark.parametrize(("x_shape", "k_shape", "axes", "lines"), [
    ((8, 1000), (1, 3), None, 8),  # a row filter on an image: 8 lines
    ((2, 3, 50), (1, 1, 31), (0, 1, 2), 6),  # leading axes of length one in the kernel, a long row
    ((1000, 8), (3, 1), None, 0),  # a column filter: its lines would need the image transposed
    ((1, 6, 40), (4, 1, 5), (1, 2), 0),  # a bank of 4 along axis 0: the lines would move it
    ((5, 7), (1, 1), None, 5),  # 1x1: one axis stays correlated
])
def test_kernel_axes_of_length_one_are_batch_axes(x_shape, k_shape, axes, lines, rng):
    """Along an axis where the kernel has length 1, every mode is a product with no padding:
    leading such axes become batch axes, so a row filter runs as 1-D lines."""
    x, k = random(rng, x_shape, "float64"), random(rng, k_shape, "float64")
    problem = ac.plan_correlate(k, x.shape, "same", axes=axes)._spec.problem
    assert (problem.batch * problem.groups if len(problem.spatial) == 1 else 0) == lines
    for mode in MODES:
        for flip in (False, True):
            got = (ac.convolve if flip else ac.correlate)(x, k, mode, axes=axes)
            assert_matches(got, reference_correlate(x, k, mode, axes=axes, flip=flip), dtype="float64")


def test_integer_guard_reads_each_calls_kernel():
    """Calls of one shape share their cached layout, but not the bound on the kernel's values."""
    x = np.array([3, -7, 2, 9], dtype=np.int64)
    small, large = np.array([1, 2, 3], dtype=np.int64), np.array([2**40, 2**41, 1], dtype=np.int64)
    np.testing.assert_array_equal(ac.correlate(x, small, method="fft"), reference_correlate(x, small, "full"))
    with pytest.raises(ValueError, match="method 'fft' cannot run this problem: integer result"):
        ac.correlate(x * 2**20, large, method="fft")
    np.testing.assert_array_equal(ac.correlate(x * 2**20, large), reference_correlate(x * 2**20, large, "full"))


@pytest.mark.parametrize("method", METHODS)
def test_float16_computes_in_float32(method, rng):
    in1, in2 = random(rng, (40,), "float16"), random(rng, (5,), "float16")
    got = ac.correlate(in1, in2, "same", method)
    assert_matches(got, reference_correlate(in1, in2, "same"), dtype="float16")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "s1, s2, axes",
    [
        ((6, 30), (1, 5), 1),  # one kernel, a batch of rows
        ((6, 30), (6, 5), -1),  # each row its own kernel
        ((1, 30), (4, 5), 1),  # one row, a bank of kernels
        ((3, 1, 12, 11), (1, 4, 3, 4), (2, 3)),  # batch x bank, 2-D
        ((5, 3, 2, 9), (5, 1, 2, 4), (3,)),  # paired, batched and paired axes
        ((7, 3, 8), (2, 3, 3), (0, 2)),  # correlated axes around a paired one
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_axes_batching(xp, method, s1, s2, axes, mode, rng):
    in1, in2 = random(rng, s1, "float64"), random(rng, s2, "float64")
    expected = reference_correlate(in1, in2, mode, axes=axes)
    assert_matches(ac.correlate(xp.asarray(in1), xp.asarray(in2), mode, method, axes=axes), expected, dtype="float64", backend=xp.__name__)
    expected = reference_correlate(in1, in2, mode, axes=axes, flip=True)
    assert_matches(ac.convolve(xp.asarray(in1), xp.asarray(in2), mode, method, axes=axes), expected, dtype="float64", backend=xp.__name__)


@pytest.mark.parametrize("method", ["auto", "direct"])
@settings(max_examples=examples(30), deadline=None)
@given(n=st.integers(1, 3000), k=st.integers(1, 80), dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 2**16))
def test_plain_1d_calls_that_are_one_numpy_correlate_skip_the_plan(method, n, k, dtype, seed):
    """From the second call on, a plain call on two 1-D signals whose plan runs one
    numpy.correlate runs it without the plan: the same bits as the plan of the method 'auto'
    picks for one call, and no plan. Every mode and both functions on the same signals:
    each call has its own entry."""
    rng = np.random.default_rng(seed)
    _check_unplanned_calls(random(rng, (n,), dtype), random(rng, (k,), dtype), MODES, method)


@pytest.mark.parametrize("method", ["auto", "direct"])
@settings(max_examples=examples(30), deadline=None)
@given(case=correlate_shapes(), dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 2**16))
def test_plain_calls_on_one_map_skip_the_plan(method, case, dtype, seed):
    """The same for N-D arrays whose plan runs direct on one map in one chunk (size-1 axes
    included: every other axis is correlated)."""
    s1, s2, mode = case
    rng = np.random.default_rng(seed)
    _check_unplanned_calls(random(rng, s1, dtype), random(rng, s2, dtype), [mode], method)


@pytest.mark.parametrize("method", ["auto", "direct"])
@pytest.mark.parametrize(
    "layout",
    ["(B, n)", "(B1, B2, n)", "(B, n, 1)", "(1, B, n)", "(B, n) axes=-1", "(B1, B2, n) axes=[2]", "(B, n, 1) axes=(1, 2)", "(n, B) axes=0", "(B, n) x (B, k) axes=1"],
)
@settings(max_examples=examples(10), deadline=None)
@given(batch=st.integers(2, 12), extra=st.integers(0, 400), k=st.integers(1, 40), dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 2**16))
def test_plain_calls_on_batches_of_lines_laid_end_to_end_skip_the_plan(method, layout, batch, extra, k, dtype, seed):
    """The same for batches of lines with one kernel whose plan runs them as one call
    over the lines laid end to end (its result copied to a contiguous array), with or
    without `axes`. Lines along the first axis ("(n, B) axes=0", whose batch axis comes
    after the correlated one) and a kernel per line run through the plan."""
    rng, n = np.random.default_rng(seed), k + extra  # 'valid' needs the lines at least as long
    shapes = {
        "(B, n)": ((batch, n), (1, k), None),
        "(B1, B2, n)": ((2, batch, n), (1, 1, k), None),
        "(B, n, 1)": ((batch, n, 1), (1, k, 1), None),
        "(1, B, n)": ((1, batch, n), (1, 1, k), None),
        "(B, n) axes=-1": ((batch, n), (1, k), -1),
        "(B1, B2, n) axes=[2]": ((2, batch, n), (1, 1, k), [2]),
        "(B, n, 1) axes=(1, 2)": ((batch, n, 1), (1, k, 1), (1, 2)),
        "(n, B) axes=0": ((n, batch), (k, 1), 0),
        "(B, n) x (B, k) axes=1": ((batch, n), (batch, k), 1),
    }
    s1, s2, axes = shapes[layout]
    _check_unplanned_calls(random(rng, s1, dtype), random(rng, s2, dtype), MODES, method, axes=axes)
    if layout.startswith(("(n, B)", "(B, n) x")):
        assert all(ac.plan_correlate(random(rng, s2, dtype), s1, mode, method="direct", axes=axes).unplanned() is None for mode in MODES)


@pytest.mark.parametrize(("boundary", "fillvalue"), [("constant", 0.5), ("symmetric", 0), ("mirror", 0), ("edge", 0), ("wrap", 0)])
@settings(max_examples=examples(15), deadline=None)
@given(case=correlate_shapes(), dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 2**16))
def test_plain_calls_with_a_boundary_rule_skip_the_plan(boundary, fillvalue, case, dtype, seed):
    """The same with a boundary rule: the input extended, then direct as above ('wrap': a
    circular problem, its halos copied one period away in direct's padded grid)."""
    s1, s2, mode = case
    rng = np.random.default_rng(seed)
    _check_unplanned_calls(random(rng, s1, dtype), random(rng, s2, dtype), [mode], "direct", boundary=boundary, fillvalue=fillvalue)


@pytest.mark.parametrize(("shape", "kernel"), [((32, 32), (3, 3)), ((1000,), (3,)), ((9, 12, 10), (3, 1, 3))])
def test_small_wrap_calls_skip_the_plan(shape, kernel, rng, numpy_forms):
    """boundary='wrap' on a small image: direct on one map, its halos copied one period
    away, without the plan from the second call (32x32 with 3x3: 39 us a call before,
    13 now; scipy.ndimage takes 10): the input extended periodically, then 'valid'. (A
    kernel that could run in passes where an outer product's would, such as 3x2x3 on
    9x12x10, runs through its plan: :meth:`Plan.unplanned`.)"""
    x, k = random(rng, shape, "float64"), random(rng, kernel, "float64")
    pads = [mode_padding(n, m, "same") for n, m in zip(shape, kernel)]
    expected = reference_correlate(np.pad(x, pads, mode="wrap"), k, "valid")
    with ac.config(memory_limit=1 << 30):
        assert_matches(ac.correlate(x, k, "same", boundary="wrap"), expected, dtype="float64")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Plan, "__call__", _refuse_call)
            assert_matches(ac.correlate(x, k, "same", boundary="wrap"), expected, dtype="float64")


def _check_unplanned_calls(in1, in2, modes, method, axes=None, **edges):
    with ac.config(memory_limit=1 << 30):  # the default follows free RAM, which other processes change
        _check_unplanned_calls_steadily(in1, in2, modes, method, axes, edges)


def _check_unplanned_calls_steadily(in1, in2, modes, method, axes, edges):
    calls = [(mode, flip) for mode in modes for flip in (False, True)]
    plans, results = {}, {}
    for mode, flip in calls:
        op = "convolve" if flip else "correlate"
        one_call = ac.choose_method(in1, in2, op=op, mode=mode, axes=axes).method if method == "auto" else method
        plans[mode, flip] = (ac.plan_convolve if flip else ac.plan_correlate)(in2, in1.shape, mode, method=one_call, axes=axes, **edges)
        results[mode, flip] = plans[mode, flip](in1)
        through_layers = plans[mode, flip](in1, out=np.empty_like(results[mode, flip]))  # out: every step of the plan
        np.testing.assert_array_equal(results[mode, flip], through_layers)
        # A plan's own kernel may take the shortcut where the kept one may not (a kernel of
        # other values, an outer product, could run in passes): never the other way round.
        assert plans[mode, flip].unplanned() is None or plans[mode, flip]._single is not None or edges
        x, ref_mode = in1, mode
        if edges and mode != "valid":  # extended as numpy.pad does, then 'valid'
            pads = [mode_padding(n, k, mode) if axes is None or a in np.atleast_1d(axes) % in1.ndim else (0, 0) for a, (n, k) in enumerate(zip(in1.shape, in2.shape))]
            fill = {"constant_values": edges["fillvalue"]} if edges["boundary"] == "constant" else {}
            x, ref_mode = np.pad(in1, pads, mode=NUMPY_PAD[edges["boundary"]], **fill), "valid"
        terms = reference_terms(x, in2, ref_mode, axes=axes, flip=flip)  # a single output of n = k taps may cancel far below its terms
        assert_matches(results[mode, flip], reference_correlate(x, in2, ref_mode, axes=axes, flip=flip), dtype=in1.dtype, terms=terms)
        np.testing.assert_array_equal((ac.convolve if flip else ac.correlate)(in1, in2, mode, method, axes=axes, **edges), results[mode, flip])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Plan, "__call__", _refuse_call)
        for mode, flip in calls:
            fn = ac.convolve if flip else ac.correlate
            if plans[mode, flip].unplanned() is None:
                with pytest.raises(AssertionError, match="a plan ran"):
                    fn(in1, in2, mode, method, axes=axes, **edges)
            else:
                got = fn(in1, in2, mode, method, axes=axes, **edges)
                np.testing.assert_array_equal(got, results[mode, flip])
                assert got.dtype == in1.dtype and got.shape == results[mode, flip].shape and got.flags.c_contiguous


@pytest.mark.parametrize(("n", "k", "dtype", "mode"), [(1000, 3, "float64", "same"), (10000, 9, "float32", "full"), (3000, 21, "float32", "same"), (50, 80, "float64", "valid")])
def test_short_signals_run_as_one_numpy_correlate(n, k, dtype, mode, rng):
    """The calls the previous test skips the plan for include these (for a plain call, the
    cost model picks numpy.correlate's lines for them)."""
    x, w = random(rng, (n,), dtype), random(rng, (k,), dtype)
    assert ac.choose_method(x, w, mode=mode).method == "direct"
    plan = ac.plan_correlate(w, (n,), mode, dtype=dtype, method="direct")
    assert plan.unplanned() is not None


@pytest.mark.parametrize(
    ("n", "k", "dtype", "form"),
    [
        (3000, 1023, "float64", "banded"),  # banded 130 us, lines 246-280
        (30000, 511, "float64", "banded"),  # banded 403 us, lines 1435
        (1847, 153, "float64", "lines"),  # lines 32-34 us (one numpy.correlate); banded 57-59
        (10000, 127, "float32", "banded"),  # banded 51 us, lines 167
        (30000, 255, "float32", "banded"),
        (300000, 255, "float64", "banded"),
    ],
)
def test_long_1d_kernels_are_priced_by_their_bytes(n, k, dtype, form, numpy_forms):
    """numpy.correlate's dot product per output sample grows with the kernel's bytes (taps
    times itemsize), so direct's faster NumPy form (one numpy.correlate per line, or banded
    GEMMs) is the one it runs (times: 'same', 2-core CI machine). Which method 'auto' takes
    on these lines: tests/test_choice.py."""
    from arrayconv._methods import _banded, _rows

    kernel = ac.plan_correlate(np.ones(k, dtype), (n,), "same", method="direct")._kernel
    assert isinstance(kernel, _rows.RowKernels if form == "lines" else _banded.BandedTaps)


@pytest.mark.parametrize(
    ("n", "k", "dtype", "form"),
    [
        (10000, 15, "float64", "lines"),  # lines 27-29 us (two pieces); banded 64-65
        (10000, 12, "float32", "lines"),  # lines 24-26 us; banded 31-51
        (1000, 31, "float64", "lines"),  # lines 11-12 us (three pieces); banded 60+
        (100000, 15, "float32", "banded"),  # banded 142 us; lines 217-220 (one thread)
        (10000, 31, "float32", "banded"),  # banded 51 us; lines 50-56
    ],
)
def test_1d_rows_of_12_to_33_taps_are_priced_as_their_pieces(n, k, dtype, form, monkeypatch):
    """Without numba's compiled loops (which take these where installed), lines sum rows of
    12-33 taps in pieces of at most 11, each in numpy's unrolled loop, 2-3.5x faster than
    one dot product per output sample: priced so, 10**4 samples with 15 taps run as lines
    where the banded form took 2.2x their time ('same', plain calls, 2-core CI machine).
    Longer signals keep the banded GEMM, which shares the two cores."""
    from arrayconv._methods import _banded, _compiled, _rows

    monkeypatch.setattr(_compiled, "available", lambda: False)
    ac.clear_caches()
    kernel = ac.plan_correlate(np.ones(k, dtype), (n,), "same", method="direct")._kernel
    assert isinstance(kernel, _rows.RowKernels if form == "lines" else _banded.BandedTaps)


@pytest.mark.parametrize(
    ("n", "k", "extra_ns", "split"),
    [
        (10000, 14, 0.0, True),  # 2.5 ns a sample in pieces, 8.4 whole
        (300, 14, 0.0, False),  # a second piece's call and the padded copy cost more
        (1000, 33, 0.0, False),  # fast dot: 6.6 whole, 8.2 in three pieces
        (1000, 33, 22.0, True),  # slow dot: 28 whole
        (1000, 34, 0.0, False),  # fast dot: 5.9 ns a sample whole, 9.8 in four pieces (calls)
        (10000, 45, 0.0, False),  # 9.4 whole, 7.5 in pieces: priced even, kept whole
        (1000, 34, 22.0, True),  # slow dot: 28.7 whole, 9.8 in pieces
        (3000, 63, 22.0, True),  # 52 us in pieces against 116 whole ('same', plain calls)
        (300, 127, 22.0, False),  # twelve pieces' calls on 300 samples cost more
    ],
)
def test_1d_rows_past_11_taps_are_split_where_the_pieces_beat_this_machines_dot(n, k, extra_ns, split, monkeypatch):
    """numpy.correlate's dot product per output sample (past 11 taps) took 28-34 ns with
    OpenBLAS's float64 ddot on the AVX-512 host of 2026-11-25 at times, 6-13 at others:
    `calibrate` measures its fixed cost (Rates.dot_extra_ns), and lines sum a long row in
    pieces of 11 taps where that, with each piece's call, is priced faster (times:
    float64, 2-core CI machine, 'same')."""
    from dataclasses import replace

    from arrayconv._methods import _rows, direct
    from arrayconv._runtime import rates as _rates
    from arrayconv._runtime.backend import NUMPY

    ac.clear_caches()
    _rates._loaded.put("numpy", replace(_rates.rates_for(NUMPY), dot_extra_ns=extra_ns))
    monkeypatch.setattr(direct, "_form", lambda problem, backend, rates, settings: ("rows", 0))  # lines, not banded
    rng = np.random.default_rng(n + k)
    x, w = random(rng, (n,), "float64"), random(rng, (k,), "float64")
    try:
        plan = ac.plan_correlate(w, (n,), "same", method="direct")
        assert _rows.splits(plan._spec.problem, _rates.rates_for(NUMPY)) == split and plan._kernel.split == split
        for mode in MODES:  # the result, split or whole, is SciPy's
            got = ac.correlate(x, w, mode, "direct")
            assert_matches(got, reference_correlate(x, w, mode), dtype="float64")
    finally:
        ac.clear_caches()  # no choice made with this dot's cost outlives the test


@pytest.mark.parametrize(("batch", "split"), [(1, False), (2, True), (16, True)])
def test_lines_laid_end_to_end_pay_the_pieces_calls_once(batch, split, rng):
    """A batch of lines with one kernel runs as one call over the lines laid end to end
    (:func:`._rows.wide_lines`), so each further piece's call is paid once for them all:
    2-16 float64 lines of 300 samples with 14 taps are summed in pieces, one line whole
    (fast dot, as conftest pins it), and the result is SciPy's."""
    from arrayconv._methods import _rows

    x, w = random(rng, (batch, 300), "float64"), random(rng, (1, 14), "float64")
    plan = ac.plan_correlate(w, x.shape, "same", method="direct")
    assert isinstance(plan._kernel, _rows.RowKernels) and plan._kernel.split == split
    assert_matches(plan(x), reference_correlate(x, w, "same"), dtype="float64")


def test_the_dot_product_probe_runs_at_calibrate_not_while_planning(monkeypatch, tmp_path):
    """numpy.correlate's dot product is timed by `calibrate` (nothing below the reference's
    cost; a slow one counted), never while a plan is built: the same call on the same
    machine prices the same."""
    from arrayconv._runtime import rates as _rates

    def no_timing(*args, **kwargs):
        raise AssertionError("a timing probe ran while planning")

    ac.clear_caches()
    monkeypatch.setattr(_rates, "_best", no_timing)
    for n, k in [(3000, 63), (1000, 34), (64, 129)]:
        ac.plan_correlate(np.ones(k), (n,), "same")
    monkeypatch.undo()
    monkeypatch.setenv("ARRAYCONV_CACHE_DIR", str(tmp_path))
    try:
        measured = ac.calibrate().dot_extra_ns
        _rates._loaded.clear()
        assert 0.0 <= measured < 500 and _rates.rates_for(_rates.NUMPY).dot_extra_ns == measured  # kept in the file
    finally:
        _rates._loaded.clear()
    monkeypatch.setattr(np, "correlate", lambda *a: time.sleep(1e-4))  # 49 ns a sample: slow
    assert _rates.measure_dot_extra_ns() > 30


def test_batches_of_1d_signals_price_each_lines_transform_by_its_own_bytes():
    """Transforms along one axis take each line whole, in cache whatever the batch (the
    pick on 8 signals of 88008 samples with 1438 taps: tests/test_choice.py)."""
    from arrayconv._methods import fft
    from arrayconv._runtime.backend import NUMPY

    assert fft._slowed(256, 16 << 10, NUMPY, True) == 256 < fft._slowed(256, 16 << 10, NUMPY, False)
    assert fft._slowed(1, 64 << 20, NUMPY, True) == fft._slowed(1, 64 << 20, NUMPY, False) > 1  # one long line


def test_taps_met_per_output_sample_of_a_1d_line():
    """'same' and 'full' pad zeros at each end, which numpy.correlate's partial overlaps skip:
    the mean number of taps meeting the signal, in closed form, against a count."""
    from arrayconv._methods._rows import _taps_met
    from arrayconv._spec.problem import Problem

    for n, k, mode in itertools.product([1, 2, 5, 13, 40], [1, 2, 3, 7, 13, 40], ["full", "same", "valid"]):
        if mode == "valid" and k > n:
            continue
        problem = ac.plan_correlate(np.ones(k), (n,), mode, method="direct")._spec.problem
        assert isinstance(problem, Problem)
        lo, length = problem.pad_lo[0], problem.out_spatial[0]
        counted = sum(min(n, j - lo + k) - max(0, j - lo) for j in range(length)) / length
        assert _taps_met(problem) == pytest.approx(counted, abs=1e-12), (n, k, mode)


def _refuse_call(self, x, out=None):
    raise AssertionError("a plan ran")


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_plain_calls_with_a_kernel_seen_before_reuse_its_plan(dtype, rng, plans_made):
    """A plain call with the same kernel bytes, shapes, dtypes and options as an earlier call
    reuses that call's plan (no new plan): the same bits, for every method and both
    functions, with and without `out`. A kernel changed in place is a new kernel."""
    x, w = random(rng, (40, 50), dtype), random(rng, (7, 6), dtype)
    calls = [(fn, flip, method) for fn, flip in FUNCS.values() for method in METHODS]
    first = [fn(x, w, "same", method) for fn, flip, method in calls]
    plans_made.clear()
    for (fn, flip, method), expected in zip(calls, first):
        assert_matches(expected, reference_correlate(x, w, "same", flip=flip), dtype=dtype)
        np.testing.assert_array_equal(fn(x, w, "same", method), expected)
        out = np.empty_like(expected)
        assert fn(x, w, "same", method, out=out) is out
        np.testing.assert_array_equal(out, expected)
        with pytest.raises(ValueError, match="overlap"):
            fn(x, w, "same", method, out=w)
    assert plans_made == []
    changed = w.copy()
    changed[3, 2] += 1  # changed in place: not the same kernel (the FFT: direct's call on one map skips plans)
    ac.correlate(x, changed, "same", "fft")
    for other in [dict(mode="full"), dict(boundary="symm"), dict(nan="fill")]:  # other options, other plans
        ac.correlate(x, w, **{"mode": "same", **other})
    assert len(plans_made) == 4
    assert_matches(ac.correlate(x, changed, "same"), reference_correlate(x, changed, "same"), dtype=dtype)
    kernel = random(rng, (7, 6), dtype)
    original = kernel.copy()
    for method in METHODS:  # kept plans of the values of `original`, made from `kernel`
        ac.correlate(x, kernel, "same", method)
    kernel *= 2  # a kept plan must not follow the memory it was made from
    for method in METHODS:
        assert_matches(ac.correlate(x, kernel, "same", method), reference_correlate(x, kernel, "same"), dtype=dtype)
        assert_matches(ac.correlate(x, original, "same", method), reference_correlate(x, original, "same"), dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_large_kept_kernels_share_a_plan_only_with_equal_values(dtype, rng, plans_made):
    """A kernel over 64 KiB keys its kept plan by 64 of its words: a kernel of the same
    words there but other values (two words swapped between them), or the kernel changed
    in place, gets its own plan and its own result."""
    x, w = random(rng, (3, 8, 20, 20), dtype), random(rng, (16, 8, 15, 15), dtype)  # 112.5 KiB, 225 KiB
    words = w.reshape(-1).view(np.uint32)
    step = -(-words.size // 64)
    swapped = w.copy()
    swapped_words = swapped.reshape(-1).view(np.uint32)
    swapped_words[[1, 2]] = words[[2, 1]]  # the same sampled words (0, step, ...)
    assert step > 2 and not np.array_equal(swapped, w)
    for kernel in (w, swapped, w, swapped):
        assert_matches(ac.conv(x, kernel, padding=3), reference_conv(x, kernel, padding=3), dtype=dtype)
    assert len(plans_made) == 4  # each call's kept plan replaced by the other kernel's
    for _ in range(2):
        assert_matches(ac.conv(x, swapped, padding=3), reference_conv(x, swapped, padding=3), dtype=dtype)
    assert len(plans_made) == 4  # kept
    swapped *= 2  # changed in place: a new plan of the new values
    assert_matches(ac.conv(x, swapped, padding=3), reference_conv(x, swapped, padding=3), dtype=dtype)
    assert len(plans_made) == 5


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large_kernels_read_as_given_are_not_kept(dtype, rng, plans_made):
    """A plain call whose plan reads a kernel over a MiB as it is (im2col's columns on the
    CPU) keeps no plan, so later calls compare nothing: each makes its plan, with the same
    method and bits, and a kernel changed in place gives its new result. A layer whose form
    is made from the kernel (Winograd's) keeps its plan. 'auto' picks one method for every
    call, whichever it is (with numba or without)."""
    x, w = random(rng, (1, 128, 14, 14), dtype), random(rng, (512, 128, 3, 3), dtype)  # 2.3 or 4.5 MiB
    expected = reference_conv(x, w, stride=2, padding=1)
    first = ac.conv(x, w, stride=2, padding=1, method="im2col")
    assert plans_made == ["im2col"]
    for _ in range(2):
        np.testing.assert_array_equal(ac.conv(x, w, stride=2, padding=1, method="im2col"), first)
    assert plans_made == ["im2col"] * 3
    assert_matches(first, expected, dtype=dtype)
    plans_made.clear()
    picked = [ac.conv(x, w, stride=2, padding=1) for _ in range(3)]
    assert len(set(plans_made)) == 1, plans_made
    for result in picked:
        np.testing.assert_array_equal(result, picked[0])
    assert_matches(picked[0], expected, dtype=dtype)
    w *= -0.5  # changed in place
    assert_matches(ac.conv(x, w, stride=2, padding=1, method="im2col"), -0.5 * expected, dtype=dtype)
    plans_made.clear()
    square = random(rng, (128, 128, 3, 3), dtype)  # 576 KiB or 1.1 MiB, by Winograd's transformed taps
    expected = reference_conv(x, square, padding=1)
    for _ in range(3):
        assert_matches(ac.conv(x, square, padding=1, method="im2col"), expected, dtype=dtype)
    assert plans_made == ["im2col"]


def test_options_given_as_lists_keep_the_plan_of_the_tuples_they_mean(rng, plans_made):
    """`axes`, `stride` or `padding` given as lists key the kept plan as the tuples they
    mean: one plan for both spellings, and the method choose_method reports. Found by the
    'dev' Hypothesis profile: 2 x 9 float32 lines of 26 samples, 26 taps, axes=[2], 'full'
    made a one-call plan (direct) where choose_method said a kept one (im2col)."""
    in1, in2 = random(rng, (2, 9, 26), "float32"), random(rng, (1, 1, 26), "float32")
    chosen = ac.choose_method(in1, in2, mode="full", axes=[2])
    assert chosen.calls == "kept"
    listed = ac.correlate(in1, in2, "full", axes=[2])
    np.testing.assert_array_equal(ac.correlate(in1, in2, "full", axes=(2,)), listed)
    np.testing.assert_array_equal(ac.plan_correlate(in2, in1.shape, "full", method=chosen.method, axes=[2])(in1), listed)
    x, w = random(rng, (2, 3, 20, 20), "float64"), random(rng, (4, 3, 3, 3), "float64")
    np.testing.assert_array_equal(ac.conv(x, w, stride=[2, 1], padding=[1, 2]), ac.conv(x, w, stride=(2, 1), padding=(1, 2)))
    assert len(plans_made) == 3  # correlate's plan of both spellings, choose_method's pick as a plan, conv's plan of both


def test_kept_plans_leave_out_integers_large_kernels_and_measured_calls(rng, plans_made):
    """Integer calls make their plan each time (its overflow guard reads the input's
    values), as do kernels over 16 MiB and measured calls; kept plans are a bounded cache."""
    ints = rng.integers(-9, 9, (30, 30)), rng.integers(-9, 9, (3, 3))
    x, big = random(rng, (80, 80), "float64"), random(rng, (1449, 1449), "float64")  # 16.02 MiB
    for args, options in [(ints, {}), ((x[:3, :3], big), {}), ((x, big[:5, :5]), {"measure": True})]:
        plans_made.clear()
        ac.correlate(*args, "same", **options)
        ac.correlate(*args, "same", **options)
        assert len(plans_made) == 2, (args[1].shape, options)
    info = ac.cache_info()["plain_call_plans"]
    assert info.maxsize == 64 and info.maxbytes == 64 << 20


def test_one_numpy_correlate_calls_leave_other_options_to_the_plan(rng):
    """A call that differs from a cached one-numpy.correlate call in anything but the
    values goes through its plan: other options, dtypes, `out`, array types."""
    x, w = random(rng, (500,), "float64"), random(rng, (5,), "float64")
    for _ in range(2):
        assert_matches(ac.correlate(x, w, "same"), reference_correlate(x, w, "same"), dtype="float64")
    bad = x.copy()
    bad[7] = np.nan
    with pytest.raises(ValueError, match="nan='raise'"):
        ac.correlate(bad, w, "same", nan="raise")
    spread = ac.correlate(bad, w, "same")  # 'propagate': the footprint only, as SciPy's direct method
    np.testing.assert_array_equal(np.flatnonzero(np.isnan(spread)), np.arange(5, 10))
    assert_matches(ac.correlate(bad, w, "same", nan="fill"), reference_correlate(np.nan_to_num(bad, nan=0.0), w, "same"), dtype="float64")
    wrapped = ac.correlate(x, w, "same", boundary="wrap")
    assert_matches(wrapped, ndimage.correlate(x, w, mode="wrap"), dtype="float64")
    assert_matches(ac.correlate(x, w, "same", fillvalue=2.0), ndimage.correlate(x, w, mode="constant", cval=2.0), dtype="float64")
    out = np.full(500, 7.0)
    assert ac.correlate(x, w, "same", out=out) is out
    assert_matches(out, reference_correlate(x, w, "same"), dtype="float64")
    assert ac.correlate(x.astype(np.float32), w, "same").dtype == np.float64
    assert ac.correlate(x.astype(np.float32), w.astype(np.float32), "same").dtype == np.float32
    assert_matches(ac.correlate(list(x), w, "same"), reference_correlate(x, w, "same"), dtype="float64")
    swapped = x.astype(x.dtype.newbyteorder())
    assert_matches(ac.correlate(swapped, w.astype(w.dtype.newbyteorder()), "same"), reference_correlate(x, w, "same"), dtype="float64")
    with pytest.raises(ValueError, match="mode"):
        ac.correlate(x, w, "middle")


def test_zero_dim_inputs_as_scipy():
    assert ac.correlate(np.array(3.0 + 1j), np.array(2.0 - 1j)) == (3.0 + 1j) * (2.0 + 1j)
    assert ac.correlate(np.array(3.0), np.array(2.0)).shape == ()


def test_array_like_inputs():
    got = ac.correlate([1.0, 2.0, 3.0], [1.0, 0.5])
    np.testing.assert_allclose(got, reference_correlate(np.array([1.0, 2, 3]), np.array([1.0, 0.5]), "full"))


@pytest.mark.parametrize("method", METHODS)
def test_inputs_unchanged_and_readonly_ok(method, rng):
    in1, in2 = random(rng, (20, 21), "float32"), random(rng, (4, 5), "complex64")
    keep1, keep2 = in1.copy(), in2.copy()
    in1.flags.writeable = in2.flags.writeable = False
    ac.correlate(in1, in2, "same", method)
    ac.convolve(in1[::-1, ::2], in2.T, "full", method)  # negative-stride, non-contiguous views
    np.testing.assert_array_equal(in1, keep1)
    np.testing.assert_array_equal(in2, keep2)


@pytest.mark.parametrize("method", list(ac.METHODS))
def test_explicit_method_runs_that_method(monkeypatch, method, rng):
    for other in ac.METHODS:
        if other != method:
            monkeypatch.setitem(ac.METHODS, other, _refuse(ac.METHODS[other]))
    in1, in2 = random(rng, (30, 20), "float64"), random(rng, (5, 4), "float64")
    assert_matches(ac.correlate(in1, in2, "same", method), reference_correlate(in1, in2, "same"), dtype="float64")


def _refuse(method):
    import dataclasses

    def run(*args):
        raise AssertionError(f"method {method.name!r} must not run here")

    return dataclasses.replace(method, run=run)


_TAPS_7 = np.arange(7) - 3.0
GAUSSIAN_7 = np.exp(-(_TAPS_7[:, None] ** 2 + _TAPS_7[None, :] ** 2) / 4)  # a 7x7 Gaussian, float64


def _force_separable(patch):
    """Make direct run its passes wherever they apply, and its taps elsewhere (not the
    compiled loops, even where they would skip a copy of the input)."""
    from dataclasses import replace

    from arrayconv._methods import METHODS, _separable, direct

    patch.setattr(direct, "_form", lambda p, backend, rates, settings: ("separable", 0) if _separable.takes(p, backend) else ("taps", 0))
    kept = replace(direct.SHORTCUTS, reading_in_place=lambda kernel, *args: kernel)
    patch.setitem(METHODS, "direct", replace(direct.METHOD, shortcuts=kept))


def _outer(rng, *taps, dtype, zero_tap=False):
    """A random outer-product kernel of one 1-D kernel per axis (a zero in the first one
    with `zero_tap`), complex for a complex `dtype`."""
    lines = [random(rng, k, np.result_type(dtype, np.float64)) for k in taps]
    if zero_tap:
        lines[0][rng.integers(taps[0])] = 0.0
    kernel = lines[0]
    for line in lines[1:]:
        kernel = np.multiply.outer(kernel, line)
    return kernel.astype(dtype)


@st.composite
def _separable_cases(draw):
    """Shapes of 2-D images or 3-D volumes (any size, down to 1) and kernels of 2-9 taps
    a side (2-5 for volumes)."""
    ndim = draw(st.sampled_from([2, 3]))
    size, taps = (80, 9) if ndim == 2 else (14, 5)
    shape = tuple(draw(st.integers(1, size)) for _ in range(ndim))
    return shape, tuple(draw(st.integers(2, taps)) for _ in range(ndim))


@pytest.mark.parametrize("boundary", EDGE_RULES)
@settings(max_examples=examples(30), deadline=None)
@given(
    case=_separable_cases(),
    batch=st.sampled_from([None, 1, 3]),
    mode=st.sampled_from(MODES),
    dtype=st.sampled_from(["float32", "float64", "complex64", "complex128"]),
    complex_parts=st.sampled_from(["both", "data", "kernel"]),
    flip=st.booleans(),
    zero_tap=st.booleans(),
    seed=st.integers(0, 2**16),
)
@example(case=((1, 2, 2), (5, 2, 4)), batch=3, mode="same", dtype="complex64", complex_parts="data", flip=False, zero_tap=True, seed=5)  # 500x below its terms
def test_separable_form_matches_scipy(boundary, case, batch, mode, dtype, complex_parts, flip, zero_tap, seed):
    """An outer-product kernel in direct's passes (forced), 2-D and 3-D, real and complex,
    every mode and boundary, odd and even kernels, inputs smaller than the kernel (where 'valid' allows),
    batches through `axes`: the float64 reference (scipy.signal, on the input extended by
    numpy.pad for the boundary rules). A complex `dtype` is that of the data, the kernel
    or both (`complex_parts`)."""
    from arrayconv._methods import _separable

    shape, kernel = case
    if mode == "valid" and any(n < k for n, k in zip(shape, kernel)) and any(n > k for n, k in zip(shape, kernel)):
        shape = tuple(max(n, k) for n, k in zip(shape, kernel))  # 'valid' needs one array at least as large on every axis
    if boundary != "constant":
        mode = "same"
    rng = np.random.default_rng(seed)
    real = np.finfo(dtype).dtype
    x_dtype, w_dtype = {"both": (dtype, dtype), "data": (dtype, real), "kernel": (real, dtype)}[complex_parts]
    x, w = random(rng, shape if batch is None else (batch, *shape), x_dtype), _outer(rng, *kernel, dtype=w_dtype, zero_tap=zero_tap)
    axes = None if batch is None else tuple(range(1, 1 + len(shape)))
    w_call = w if batch is None else w[None]
    with pytest.MonkeyPatch.context() as patch:
        _force_separable(patch)
        plan = (ac.plan_convolve if flip else ac.plan_correlate)(w_call, x.shape, mode, "direct", axes=axes, boundary=boundary, dtype=x.dtype)
        assert isinstance(plan._kernel, _separable.SeparableTaps)
        got = plan(x)
    if boundary == "constant":
        extended, ref_mode = x, mode
    else:  # the input extended by the rule (numpy.pad), then 'valid'
        pads = [(0, 0)] * (x.ndim - len(shape)) + [mode_padding(n, k, "same") for n, k in zip(shape, kernel)]
        extended = np.pad(x.astype(np.result_type(x.dtype, np.float64)), pads, mode=NUMPY_PAD[boundary])
        ref_mode = "valid"
    expected = reference_correlate(extended, w_call, ref_mode, axes=axes, flip=flip)
    assert got.dtype == dtype
    terms = reference_terms(extended, w_call, ref_mode, axes=axes, flip=flip)  # kernels with zero taps on tiny inputs cancel far below their terms
    assert_matches(got, expected, dtype=dtype, terms=terms)


def test_separable_kernels_are_found_and_others_are_not(rng):
    """Outer products (a Gaussian rounded to float32, a box, a Sobel kernel, one with zero
    taps, a 3-D one, a complex Gabor kernel at any angle, a real kernel on complex data)
    mark the problem rank one; a random kernel, a sum of two outer products, all zeros, a
    NaN, a 1-D kernel, an integer one, or a real Gabor kernel (the sum of two) do not."""
    gauss = GAUSSIAN_7
    sobel = np.outer([1.0, 2.0, 1.0], [-1.0, 0.0, 1.0])
    x = random(rng, (64, 64), "float32")

    def marked(k, image=x):
        return ac.plan_correlate(k, image.shape, "same", dtype=image.dtype)._spec.problem.rank_one

    assert marked(gauss.astype(np.float32)) and marked(np.full((5, 9), 1 / 45, np.float32)) and marked(sobel)
    assert marked(_outer(rng, 4, 6, dtype="float64", zero_tap=True), x.astype(np.float64))
    assert marked(_outer(rng, 3, 4, 5, dtype="float32"), random(rng, (20, 20, 20), "float32"))
    two = _outer(rng, 5, 5, dtype="float32") + _outer(rng, 5, 5, dtype="float32")
    nan = gauss.astype(np.float32)
    nan[0, 0] = np.nan
    for k in (random(rng, (5, 5), "float32"), two, np.zeros((3, 3), np.float32), nan, random(rng, (1, 7), "float32")):
        assert not marked(k)
    assert not ac.plan_correlate(np.ones((3, 3), np.int64), (64, 64), "same", dtype=np.int64)._spec.problem.rank_one
    angle = 0.6  # the wave exp(i k.r) is the product of one along each axis; the envelope is round
    gabor = (gauss * np.exp(1j * (np.cos(angle) * _TAPS_7[None, :] + np.sin(angle) * _TAPS_7[:, None]))).astype(np.complex64)
    assert marked(gabor) and marked(sobel, x.astype(np.complex128))
    assert not marked(gabor.real.copy())


def test_separable_form_propagates_nan_over_the_footprint_only(rng, monkeypatch):
    """Its column pass multiplies the rows outside each output's footprint by zeros, so a
    NaN or inf takes the mask rule (as the FFT's): non-finite exactly where SciPy's direct
    method's result is (NaN there, where SciPy has an inf)."""
    _force_separable(monkeypatch)
    x, w = random(rng, (70, 50), "float64"), _outer(rng, 5, 4, dtype="float64")
    x[10, 7] = x[60, 40] = np.nan
    x[33, 0] = np.inf
    got = ac.correlate(x, w, "same", "direct")
    expected = reference_correlate(x, w, "same")
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.isfinite(got), finite)
    assert np.isnan(got[~finite]).all()
    assert_matches(got[finite], expected[finite], dtype="float64")


def test_auto_sums_a_gaussian_in_two_passes(rng, numpy_forms):
    """With the reference rates, 'auto' runs a 7x7 Gaussian on a 512x512 float32 image as
    direct's two passes (0.55 against 1.3 ms by the FFT when measured), and a random
    7x7 kernel as before."""
    from arrayconv._methods import _separable

    gauss = GAUSSIAN_7.astype(np.float32)

    plan = ac.plan_correlate(gauss, (512, 512), "same", dtype=np.float32)
    assert plan.method == "direct" and isinstance(plan._kernel, _separable.SeparableTaps)
    other = ac.plan_correlate(random(rng, (7, 7), "float32"), (512, 512), "same", dtype=np.float32)
    assert not isinstance(other._kernel, _separable.SeparableTaps)


def test_separable_form_keeps_to_the_memory_budget(rng, numpy_forms):
    """The passes hold the row pass's result (and a volume's middle pass) besides the
    padded input: where those do not fit `memory_limit`, direct sums the taps another
    way."""
    from arrayconv._methods import _separable

    gauss = GAUSSIAN_7
    roomy = ac.plan_correlate(gauss, (512, 512), "same", "direct")
    tight = ac.plan_correlate(gauss, (512, 512), "same", "direct", memory_limit=3 << 20)  # the padded input is 2.1 MiB
    assert isinstance(roomy._kernel, _separable.SeparableTaps) and not isinstance(tight._kernel, _separable.SeparableTaps)
    x = random(rng, (512, 512), "float64")
    assert_matches(tight(x), reference_correlate(x, gauss, "same"), dtype="float64")
