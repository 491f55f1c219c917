"""Plans, choose_method, measure=True, calibrate and the caches."""

import dataclasses
import gc
import json
import re
import weakref

import numpy as np
import pytest
from _reference import assert_matches, random, reference_conv, reference_correlate

import arrayconv as ac

METHODS = ["auto", *ac.METHODS]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("flip", [False, True])
def test_correlate_plan_matches_scipy_on_many_frames(xp, method, mode, flip, rng):
    kernel = random(rng, (5, 4), "float64")
    plan = (ac.plan_convolve if flip else ac.plan_correlate)(xp.asarray(kernel), (19, 16), mode, method)
    for _ in range(3):
        frame = random(rng, (19, 16), "float64")
        assert_matches(plan(xp.asarray(frame)), reference_correlate(frame, kernel, mode, flip=flip), dtype="float64", backend=xp.__name__)


@pytest.mark.parametrize("method", METHODS)
def test_batched_complex_correlate_plan(xp, method, rng):
    kernel = random(rng, (1, 3, 6), "complex128")
    plan = ac.plan_correlate(xp.asarray(kernel), (4, 1, 11), "same", method, axes=-1, dtype="complex128")
    frames = random(rng, (4, 1, 11), "complex128")
    assert plan.y_shape == (4, 3, 11)
    assert_matches(plan(xp.asarray(frames)), reference_correlate(frames, kernel, "same", axes=-1), dtype="complex128", backend=xp.__name__)


@pytest.mark.parametrize("method", METHODS)
def test_conv_plan_with_bias_and_out(xp, method, rng):
    w, bias = random(rng, (6, 2, 3, 3), "float32"), random(rng, (6,), "float32")
    plan = ac.plan_conv(xp.asarray(w), (3, 4, 17, 15), bias=xp.asarray(bias), stride=2, padding=1, groups=2, method=method)
    out = xp.empty(plan.y_shape, dtype=np.float32)
    for _ in range(2):
        x = random(rng, (3, 4, 17, 15), "float32")
        result = plan(xp.asarray(x), out=out)
        assert result is out
        assert_matches(out, reference_conv(x, w, bias, stride=2, padding=1, groups=2), dtype="float32", backend=xp.__name__)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("op", ["conv", "correlate"])
def test_plan_keeps_the_kernel_it_was_made_with(method, op, rng):
    """A plan's calls read their own form of the kernel, never the caller's array: a kernel
    changed in place after planning changes nothing (im2col's CPU form is the kernel's own
    samples, so the plan copies them)."""
    w = random(rng, (6, 4, 3, 3), "float32")
    x = random(rng, (2, 4, 15, 13), "float32")
    if op == "conv":
        plan = ac.plan_conv(w, x.shape, stride=2, padding=1, method=method)
        expected = reference_conv(x, w, stride=2, padding=1)
    else:
        plan = ac.plan_correlate(w[0], x.shape[1:], "same", method)
        expected = reference_correlate(x[0], w[0], "same")
        x = x[0]
    before = plan(x)
    w[...] = random(rng, w.shape, "float32")
    after = plan(x)
    np.testing.assert_array_equal(after, before)
    assert_matches(after, expected, dtype="float32")


def test_plan_of_integers_is_exact_and_avoids_fft_for_wide_types(rng):
    kernel = random(rng, (3, 3), "int64")
    plan = ac.plan_correlate(kernel, (30, 30), "same")
    assert plan.method != "fft"  # an int64 input could reach any magnitude
    assert "fft" in plan.choice.rejected
    frame = random(rng, (30, 30), "int64")
    np.testing.assert_array_equal(plan(frame), reference_correlate(frame, kernel, "same"))
    small = ac.plan_correlate(kernel.astype(np.int8), (30, 30), "same", "fft")  # int8 x int8 * 9 terms is exact
    np.testing.assert_array_equal(small(frame.astype(np.int8)), reference_correlate(frame.astype(np.int8), kernel.astype(np.int8), "same"))


def test_fft_plan_transforms_the_kernel_once(monkeypatch, rng):
    calls = []
    fft = ac.METHODS["fft"]
    monkeypatch.setitem(ac.METHODS, "fft", dataclasses.replace(fft, prepare=lambda *a: calls.append(1) or fft.prepare(*a)))
    plan = ac.plan_correlate(random(rng, (9, 9), "float32"), (64, 64), "same", "fft")
    for _ in range(4):
        plan(random(rng, (64, 64), "float32"))
    assert len(calls) == 1


@pytest.mark.parametrize(
    "bad, error, match",
    [
        (np.zeros((20, 20), np.float32), ValueError, r"this plan takes `x` of shape \(19, 16\) and dtype float32, got shape \(20, 20\) and dtype float32"),
        (np.zeros((19, 16), np.float64), ValueError, r"got shape \(19, 16\) and dtype float64; make a new plan"),
        ([[1.0] * 16] * 19, TypeError, r"this plan takes NumPy arrays, got `x` of type builtins.list"),
    ],
)
def test_plan_refuses_other_inputs(bad, error, match, rng):
    plan = ac.plan_correlate(random(rng, (3, 3), "float32"), (19, 16))
    with pytest.raises(error, match=match):
        plan(bad)


@pytest.mark.parametrize(
    "out, error, match",
    [
        (np.zeros((19, 16), np.float32), ValueError, r"`out` must have shape \(21, 18\) and dtype float32, got shape \(19, 16\)"),
        (np.zeros((21, 18), np.float64), ValueError, r"`out` must have shape \(21, 18\) and dtype float32, got shape \(21, 18\) and dtype float64"),
        ([[0.0] * 18] * 21, TypeError, r"`out` must be a NumPy array like the input, got builtins.list"),
    ],
)
def test_plan_refuses_bad_out_and_leaves_it_untouched(out, error, match, rng):
    plan = ac.plan_correlate(random(rng, (3, 3), "float32"), (19, 16))
    before = np.array(out, copy=True)
    with pytest.raises(error, match=match):
        plan(random(rng, (19, 16), "float32"), out=out)
    np.testing.assert_array_equal(np.asarray(out), before)


def test_out_read_only_or_overlapping_is_refused(rng):
    plan = ac.plan_correlate(random(rng, (1, 1), "float32"), (8, 8))
    frame = random(rng, (8, 8), "float32")
    read_only = np.zeros((8, 8), np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="`out` must be writeable"):
        plan(frame, out=read_only)
    with pytest.raises(ValueError, match="`out` must not overlap the input"):
        plan(frame, out=frame)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda w: ac.plan_correlate(w, (0, 5)), ValueError, r"`in1_shape` must be a tuple of positive ints, got \(0, 5\)"),
        (lambda w: ac.plan_correlate(w, "abc"), ValueError, r"`in1_shape` must be a tuple of positive ints, got 'abc'"),
        (lambda w: ac.plan_correlate(w, (9, 9), dtype=bool), TypeError, r"`dtype` must be an integer, float or complex dtype, got <class 'bool'>"),
        (lambda w: ac.plan_correlate(w, (9,)), ValueError, r"`in1` and `in2` must have the same ndim, got 1 and 2"),
        (lambda w: ac.plan_conv(w[None, None], (1, 2, 9, 9)), ValueError, r"`x` has 2 channels but `w` expects 1"),
        (lambda w: ac.plan_correlate(w, (9, 9), method="fft", memory_limit=1000), ValueError, r"method 'fft' cannot run this problem: its spectra need"),
    ],
)
def test_plan_construction_errors(call, error, match, rng):
    with pytest.raises(error, match=match):
        call(random(rng, (3, 3), "float32"))


def test_plan_repr_and_attributes(rng):
    plan = ac.plan_conv(random(rng, (4, 3, 3, 3), "float32"), (2, 3, 10, 10), padding=1)
    assert (plan.x_shape, plan.x_dtype, plan.y_shape, plan.y_dtype) == ((2, 3, 10, 10), np.float32, (2, 4, 10, 10), np.float32)
    assert re.fullmatch(r"Plan\(method='\w+', x=\(2, 3, 10, 10\) float32 on numpy -> y=\(2, 4, 10, 10\) float32\)", repr(plan))
    assert plan.method == plan.choice.method


def test_choose_method_agrees_with_plans_and_explains(rng):
    x, w = random(rng, (2, 8, 40, 40), "float32"), random(rng, (16, 8, 5, 5), "float32")
    choice = ac.choose_method(x, w, op="conv", padding=2)
    assert choice.method == ac.plan_conv(w, x.shape, padding=2).method
    assert choice == ac.choose_method(x.shape, w.shape, op="conv", dtype="float32", padding=2)
    text = repr(choice)
    assert text.startswith(f"Choice(method={choice.method!r}): fastest estimate per later call (the plan is kept")
    for name in ac.METHODS:  # one call, later calls, temporaries
        assert re.search(rf"^[ *] {name} +[\d.]+ ms +[\d.]+ ms +[\d.]+ MiB", text, re.M)


def test_choose_method_respects_memory_limit():
    roomy = ac.choose_method((4096, 4096), (63, 63), mode="same", dtype="float32")
    tight = ac.choose_method((4096, 4096), (63, 63), mode="same", dtype="float32", memory_limit=80 << 20)
    assert roomy.method == "oa"  # FFTs on slabs of rows that stay in cache
    assert "fft" in tight.rejected and tight.method == "oa"
    assert "over memory_limit=83886080" in repr(tight)


def test_complex_estimates_count_complex_arithmetic():
    """A complex multiply-add is four real products and four sums, and a complex transform
    does twice a real one's work over the whole spectrum. On a (1, 64, 64, 64) x (16, 64, 15,
    15) bank, complex64 over float32 measured 2.99 (direct), 3.09 (im2col), 2.17 (fft), 2.12
    (oa); the estimates had 1.44, 1.37, 1.78, 1.83, and 'auto' took im2col for complex128 at
    3.28x of oa's time (bench/results/chooser-complex-2026-11-24.md)."""
    bank = dict(x=(1, 64, 64, 64), w=(16, 64, 15, 15), op="conv", padding=7)
    real = ac.choose_method(**bank, dtype="float32").estimates
    complex_ = ac.choose_method(**bank, dtype="complex64").estimates
    ratio = {name: complex_[name].seconds / real[name].seconds for name in real}
    assert 2.5 < ratio["direct"] < 4 and 2.5 < ratio["im2col"] < 4, ratio
    assert 1.9 < ratio["fft"] < 2.5 and 1.9 < ratio["oa"] < 2.5, ratio


def test_temporaries_are_counted_as_small_problems_hold_them(rng, numpy_forms):
    """Direct counted a whole 4 MiB chunk of accumulators for a 12x12 tile; im2col's
    operator matrix (tiny images) was built whatever the budget while its check counted
    the columns it does not make, so under 1200 bytes no method fit a problem the operator
    (1152 bytes) runs in, and a tile at an image's edge took an operator larger than the
    columns of the larger tiles. The operator is now used only where it fits the budget,
    else the columns."""
    from arrayconv._methods import im2col

    choice = ac.choose_method((12, 12), (12, 12), mode="valid", dtype="float64", memory_limit=1200)
    assert choice.estimates["direct"].temp_bytes < 12 * 12 * 8 + 1024  # the padded copy and one small chunk
    assert choice.method == "im2col" and not choice.rejected.get("im2col"), choice  # the operator fits
    assert choice.estimates["im2col"].temp_bytes == 12 * 12 * 8
    x, k = random(rng, (18, 18), "float64"), random(rng, (12, 12), "float64")  # an operator of 324 x 324 samples (840 KB)
    for limit, operator in ((512 << 10, False), (1 << 20, True)):
        with ac.config(memory_limit=limit):
            plan = ac.plan_correlate(k, x.shape, "same", "im2col")
            assert isinstance(plan._kernel, im2col.Operator) == operator
            assert_matches(plan(x), reference_correlate(x, k, "same"), dtype="float64")


def test_choose_method_errors():
    with pytest.raises(TypeError, match=r"choose_method\(op='conv'\) takes options \('bias', 'stride', 'padding', 'dilation', 'groups', 'padding_mode', 'nan'\), got unknown \['mode'\]"):
        ac.choose_method((1, 1, 8, 8), (1, 1, 3, 3), op="conv", mode="same")
    with pytest.raises(ValueError, match=r"`op` must be one of \{'correlate', 'convolve', 'conv'\}, got 'conv2d'"):
        ac.choose_method((8, 8), (3, 3), op="conv2d")
    with pytest.raises(ValueError, match=r"the result of shape \(2, 4, 2000000000000000000000000000010, .* needs .* GiB, more than any array can hold"):
        ac.choose_method((2, 3, 12, 10), (4, 3, 3, 3), op="conv", padding=10**30)  # was an OverflowError in the estimates


def test_choose_method_takes_every_option_of_the_call_it_explains(rng):
    """Edge rules, fill values, NaN policies, biases: what a plan of that call runs."""
    x, k = random(rng, (48, 40), "float32"), random(rng, (5, 4), "float32")
    for options in [dict(boundary="symmetric"), dict(boundary="constant", fillvalue=2.0), dict(nan="normalize"), dict(boundary="wrap", nan="fill")]:
        for op, make in (("correlate", ac.plan_correlate), ("convolve", ac.plan_convolve)):
            choice = ac.choose_method(x, k, op=op, mode="same", plan=True, **options)
            assert choice.method == make(k, x.shape, "same", **options).method, (op, options)
    xs, w, bias = random(rng, (2, 3, 20, 20), "float32"), random(rng, (4, 3, 3, 3), "float32"), random(rng, (4,), "float32")
    for options in [dict(padding=1, padding_mode="edge"), dict(padding=2, padding_mode="wrap", bias=bias), dict(padding=1, nan="normalize")]:
        choice = ac.choose_method(xs, w, op="conv", plan=True, **options)
        assert choice.method == ac.plan_conv(w, xs.shape, **options).method, options


def test_measure_times_candidates_once_and_remembers(monkeypatch, tmp_path, rng, numpy_forms):
    monkeypatch.setenv("ARRAYCONV_CACHE_DIR", str(tmp_path))
    ac.clear_caches()
    timed = []
    real = ac._plan.plan.Plan._time
    monkeypatch.setattr(ac._plan.plan.Plan, "_time", lambda self, name, x: timed.append(name) or real(self, name, x))
    x, w = random(rng, (40, 40), "float64"), random(rng, (7, 7), "float64")
    first = ac.correlate(x, w, "same", measure="disk")
    assert_matches(first, reference_correlate(x, w, "same"), dtype="float64")
    assert len(timed) >= 2
    n_timed = len(timed)
    again = ac.correlate(x, w, "same", measure=True)
    assert len(timed) == n_timed  # remembered in memory
    assert_matches(again, reference_correlate(x, w, "same"), dtype="float64")
    planned = ac.plan_correlate(w, x.shape, "same", measure="disk")  # a plan's choice is its own (calls alone timed)
    assert len(timed) > n_timed and planned.choice.calls == "plan"
    n_timed = len(timed)
    second = ac.plan_correlate(w, x.shape, "same", measure=True)
    assert len(timed) == n_timed  # remembered in memory
    assert second.choice.reason == "measured earlier on this machine (cached)"
    assert sorted(json.loads((tmp_path / "measured.json").read_text()).values()) == sorted([planned.method, ac.choose_method(x, w, mode="same", measure=True).method])
    ac.clear_caches()
    third = ac.plan_correlate(w, x.shape, "same", measure="disk")
    assert len(timed) == n_timed and third.method == second.method  # remembered on disk
    assert ac.cache_info()["measured_methods"].hits == 0


def test_measured_choice_shows_its_timings(rng):
    ac.clear_caches()
    plan = ac.plan_conv(random(rng, (8, 4, 3, 3), "float32"), (2, 4, 24, 24), padding=1, measure=True)
    assert plan.choice.measured and plan.method in plan.choice.measured
    assert plan.choice.measured[plan.method] == min(plan.choice.measured.values())
    assert re.search(r"\d+\.\d\d ms\s*$", repr(plan.choice).splitlines()[2])


def test_calibrate_scales_the_shipped_rates_by_this_machines_probes(monkeypatch, tmp_path):
    """The shipped CPU rates are the cost model's units, not a machine's peaks: the probes
    of the machine it was fitted on give them back, a machine with half its GEMM rate and
    calls twice as slow gets half the GEMM rate and twice the call cost. A rates file
    written before (its "rates" the probes themselves) is scaled when read."""
    from arrayconv._runtime import rates as _rates
    from arrayconv._runtime.backend import NUMPY

    def approx(rates):  # type: ignore[no-untyped-def]
        return pytest.approx(dataclasses.asdict(rates))

    monkeypatch.setenv("ARRAYCONV_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_rates._config, "_CORES", 2)  # the reference machine's
    ac.clear_caches()
    reference, default = _rates.REFERENCE_PROBES, _rates.DEFAULT_RATES
    monkeypatch.setattr(_rates, "measure_rates", lambda backend: reference)
    assert dataclasses.asdict(ac.calibrate()) == approx(default)
    slower = dataclasses.replace(reference, gemm_flops=reference.gemm_flops / 2, call_seconds=2 * reference.call_seconds)
    monkeypatch.setattr(_rates, "measure_rates", lambda backend: slower)
    expected = dataclasses.replace(default, gemm_flops=default.gemm_flops / 2, call_seconds=2 * default.call_seconds)
    assert dataclasses.asdict(ac.calibrate()) == approx(expected)
    record = json.loads((tmp_path / "rates-numpy.json").read_text())
    assert record["probes"] == approx(slower) and record["rates"] == approx(expected)
    (tmp_path / "rates-numpy.json").write_text(json.dumps({"rates": dataclasses.asdict(slower)}))
    ac.clear_caches()
    assert dataclasses.asdict(_rates.rates_for(NUMPY)) == approx(expected)
    # allotted one core, the reference's probes lose what the model charges a lone core
    lone = dataclasses.replace(reference, gemm_flops=reference.gemm_flops * _rates.ONE_CORE_GEMM_SHARE, fft_flops=reference.fft_flops * _rates.ONE_WORKER_FFT_SHARE)
    monkeypatch.setattr(_rates._config, "_CORES", 1)
    monkeypatch.setattr(_rates, "measure_rates", lambda backend: lone)
    assert dataclasses.asdict(ac.calibrate()) == approx(default)
    ac.clear_caches()


def test_calibrate_stores_rates_that_auto_then_uses(monkeypatch, tmp_path):
    monkeypatch.setenv("ARRAYCONV_CACHE_DIR", str(tmp_path))
    ac.clear_caches()
    rates = ac.calibrate()
    record = json.loads((tmp_path / "rates-numpy.json").read_text())
    stored = record["rates"]
    assert stored == pytest.approx({k: getattr(rates, k) for k in stored})
    rates_and_probes = [v for k, v in [*stored.items(), *record["probes"].items()] if k != "dot_extra_ns"]
    assert all(v > 0 for v in rates_and_probes) and stored["dot_extra_ns"] >= 0  # an extra over the reference's dot
    stored["fft_flops"] = 1.0  # a machine whose FFT is absurdly slow: auto must avoid FFT
    (tmp_path / "rates-numpy.json").write_text(json.dumps({**record, "rates": stored}))
    ac.clear_caches()
    assert ac.choose_method((2048, 2048), (63, 63), dtype="float32").method != "fft"
    ac.clear_caches()
    with pytest.raises(ValueError, match="`device` must be 'cpu' or 'gpu', got 'tpu'"):
        ac.calibrate("tpu")


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ARRAYCONV_CACHE_DIR", str(tmp_path / "x"))
    assert ac.cache_dir() == tmp_path / "x"
    monkeypatch.delenv("ARRAYCONV_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if ac.cache_dir().parent == tmp_path:  # Linux and the BSDs
        assert ac.cache_dir() == tmp_path / "arrayconv"


def test_caches_are_bounded_in_count_and_bytes_and_cleared():
    cache = ac._runtime.cache.LRUCache("test_lru", maxsize=3, maxbytes=19_000)
    try:
        for i in range(10):
            cache.put(i, i)
        assert cache.get(9) == 9 and cache.get(0) is None
        info = ac.cache_info()["test_lru"]
        assert (info.hits, info.misses, info.size, info.maxsize, info.maxbytes) == (1, 1, 3, 3, 19_000)
        cache.put("big", np.zeros(1000))  # 8 kB: one of the small ones goes to make room
        cache.put("bigger", np.zeros(1500))  # 12 kB: with the 8 kB one it would be over 19 kB
        assert cache.get("bigger") is not None and cache.get("big") is None
        assert 12_000 <= ac.cache_info()["test_lru"].nbytes <= 19_000
        cache.put("huge", np.zeros(5000))  # larger than the whole cache: not kept
        assert cache.get("huge") is None
        ac.clear_caches()
        assert ac.cache_info()["test_lru"].size == 0 and ac.cache_info()["test_lru"].nbytes == 0
        assert cache.get_or_make(("axes", [0, 1]), lambda: "made") == "made"  # unhashable: made, not kept
        assert ac.cache_info()["test_lru"].size == 0
    finally:
        del ac._runtime.cache._REGISTRY["test_lru"]


@pytest.mark.parametrize("nan", ["propagate", "normalize", "ignore"])
@pytest.mark.parametrize("dtype", ["float32", "int16"])
def test_plain_calls_leave_no_kernel_in_the_caches(nan, dtype, rng):
    """What a call's shapes decide is cached; the kernel it was given must not be."""
    k_dtype = "float32" if nan == "normalize" else dtype  # normalized means need a float result
    x, kernel = random(rng, (40, 30), dtype), random(rng, (5, 4), k_dtype)
    w, bias = random(rng, (3, 2, 3, 3), k_dtype), random(rng, (3,), k_dtype)
    alive = [weakref.ref(a) for a in (kernel, w, bias)]
    ac.correlate(x, kernel, "same", nan=nan)
    ac.convolve(x, kernel, "same", axes=[0, 1], nan=nan)  # a list: a key that cannot be hashed
    ac.conv(x.reshape(2, 2, 10, 30), w, bias, padding=1, nan=nan)
    del kernel, w, bias
    gc.collect()
    assert all(a() is None for a in alive)


@pytest.mark.parametrize("nan", ["propagate", "normalize"])
def test_conv_calls_of_one_shape_read_their_own_kernel_and_bias(nan, rng):
    """conv caches what the shapes decide; the kernel, the bias and the NaN weights are each call's."""
    x = random(rng, (1, 2, 12, 13), "float64")
    x[0, 1, 4, 5] = np.nan
    for _ in range(2):
        w, bias = rng.random((3, 2, 3, 3)) + 0.1, random(rng, (3,), "float64")
        got = ac.conv(x, w, bias, padding=1, nan=nan)
        missing = np.isnan(x)
        ref = reference_conv(np.where(missing, 0, x), w, bias, padding=1)
        ref[reference_conv(missing.astype(float), np.ones_like(w), padding=1) > 0] = np.nan
        if nan == "normalize":  # the padding counts as data; the bias comes after
            weight = w.sum(axis=(1, 2, 3))[:, None, None] - reference_conv(missing.astype(float), w, padding=1)
            ref = reference_conv(np.where(missing, 0, x), w, padding=1) / weight + bias[:, None, None]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        assert_matches(np.where(np.isnan(ref), 0, got), np.where(np.isnan(ref), 0, ref), dtype="float64")


@pytest.mark.parametrize("method", METHODS)
def test_out_with_moved_axes_and_integer_results(method, rng):
    kernel = random(rng, (5, 1, 3), "float64")  # the bank axis comes first: the result's axes move
    plan = ac.plan_correlate(kernel, (1, 6, 20), "valid", method, axes=-1)
    out = np.full(plan.y_shape, np.nan)
    frames = random(rng, (1, 6, 20), "float64")
    assert plan(frames, out=out) is out
    assert_matches(out, reference_correlate(frames, kernel, "valid", axes=-1), dtype="float64")
    small = random(rng, (3,), "int8")
    ints = ac.plan_correlate(small, (30,), "same", method, dtype="int8")
    out, frame = np.zeros(30, np.int8), random(rng, (30,), "int8")
    assert ints(frame, out=out) is out
    np.testing.assert_array_equal(out, reference_correlate(frame, small, "same"))


def test_plans_choose_for_repeated_calls(rng, plans_made):
    """A plan makes each method's kernel form once, so 'auto' ranks the methods by their time
    per call without it. A plain call that keeps its plan ranks them by the kept rule, and
    its kept plan keeps that method: every call gives the same bits. (Whether those picks
    are near the fastest: tests/test_choice.py.)"""
    from arrayconv._choose.choice import per_call

    x, w = random(rng, (1, 4, 256, 256), "float32"), random(rng, (4, 4, 11, 11), "float32")
    plan = ac.plan_conv(w, x.shape, dtype="float32")
    later = {name: per_call(cost, True) for name, cost in plan.choice.estimates.items() if name not in plan.choice.rejected}
    assert plan.method == min(later, key=later.__getitem__) and plan.choice.calls == "plan", plan.choice
    assert "per repeated call" in repr(plan.choice)
    plain = ac.choose_method(x, w, op="conv")
    assert plain.calls == "kept", plain
    ac.clear_caches()
    plans_made.clear()
    results = [ac.conv(x, w) for _ in range(3)]
    assert plans_made == [plain.method]
    assert_matches(results[0], reference_conv(x, w), dtype="float32")
    np.testing.assert_array_equal(results[1], results[0])
    np.testing.assert_array_equal(results[2], results[0])
    assert_matches(plan(x), reference_conv(x, w), dtype="float32")


@pytest.fixture
def estimates(monkeypatch):
    """Make the registry's methods report given estimates: ``estimates({name: (one call,
    later call)})`` returns the Choice of each kind of call for one problem."""
    from arrayconv._choose import choice as _choose
    from arrayconv._methods import METHODS, Cost
    from arrayconv._runtime.config import Settings

    def choices(seconds):
        fake = {
            name: dataclasses.replace(METHODS[name], unsupported=lambda *a: None, cost=lambda *a, one=one, later=later: Cost(one, 0, one - later))
            for name, (one, later) in seconds.items()
        }
        monkeypatch.setattr(_choose, "METHODS", fake)
        problem = ac.plan_correlate(np.ones(3), (16,))._spec.problem
        return {calls: _choose._estimate(problem, ac._runtime.backend.NUMPY, Settings(2, 1 << 30), None, None, calls) for calls in ("one", "kept", "plan")}

    return choices


def test_the_kept_rule_on_given_estimates(estimates):
    """A plain call that keeps its plan takes the fastest per later call among the methods
    whose one call is within KEPT_WITHIN of the fastest one call, or within KEPT_EXTRA
    seconds and 2x of it; a single call, the fastest call; a plan, the fastest later call."""
    from arrayconv._choose.choice import KEPT_EXTRA, KEPT_WITHIN

    near = estimates({"direct": (1.0, 1.0), "fft": (KEPT_WITHIN * 0.99, 0.5), "im2col": (KEPT_WITHIN * 1.01, 0.1)})
    assert (near["one"].method, near["kept"].method, near["plan"].method) == ("direct", "fft", "im2col")
    small = estimates({"direct": (1e-5, 1e-5), "im2col": (1e-5 + KEPT_EXTRA * 0.99, 1e-6)})  # within KEPT_EXTRA, but past 2x
    assert small["kept"].method == "direct"
    extra = estimates({"direct": (2 * KEPT_EXTRA, 2 * KEPT_EXTRA), "im2col": (2 * KEPT_EXTRA + KEPT_EXTRA * 0.99, KEPT_EXTRA)})  # within KEPT_EXTRA and 2x
    assert extra["kept"].method == "im2col" and extra["one"].method == "direct"
    assert "per later call" in extra["kept"].reason and extra["kept"].calls == "kept"


@pytest.mark.parametrize("n", [16, 64, 256])
@pytest.mark.parametrize("k", [3, 7])
@pytest.mark.parametrize("boundary", ["constant", "symmetric", "edge", "wrap"])
def test_a_plain_calls_bits_do_not_depend_on_the_calls_before_it(rng, n, k, boundary):
    """An outer-product kernel (which may run in passes) gives the same bits after plain
    calls of the same shapes with other kernels (whose plans may run every tap) as in a
    fresh process: what a call keeps for later calls keys on what its choice depends on,
    the compiled loops' reading past the edges (no extended copy) included."""
    x = random(rng, (n, n), "float32")
    g = np.exp(-0.5 * ((np.arange(k) - k // 2) / (k / 4)) ** 2).astype(np.float32)
    gaussian = np.outer(g, g)
    ac.clear_caches()
    fresh = ac.correlate(x, gaussian, "same", boundary=boundary)
    ac.clear_caches()
    for _ in range(2):
        ac.correlate(x, random(rng, (k, k), "float32"), "same", boundary=boundary)
    np.testing.assert_array_equal(ac.correlate(x, gaussian, "same", boundary=boundary), fresh)


def test_plain_calls_that_keep_their_plan_choose_for_later_calls(rng, plans_made):
    """A plain call on a 512x512 image with a 7x7 kernel keeps its plan and chooses by the
    kept rule (:func:`test_the_kept_rule_on_given_estimates`); every later call runs that
    plan. A kernel over the kept plans' 16 MiB keeps no plan and takes the fastest one call."""
    choice = ac.choose_method((512, 512), (7, 7), mode="same", dtype="float32")
    assert choice.calls == "kept", choice
    large = ac.choose_method((512, 512), (2049, 2049), mode="same", dtype="float32")  # 16.02 MiB
    assert large.calls == "one" and large.method == min(large.estimates, key=lambda n: large.estimates[n].seconds)
    for x_other in [np.ones((512, 512), ">f4"), np.ones((512, 512), "int32")]:  # calls that keep no plan
        assert ac.choose_method(x_other, np.ones((7, 7), "float32"), mode="same").calls == "one"
    ac.clear_caches()
    plans_made.clear()
    x, w = random(rng, (512, 512), "float32"), random(rng, (7, 7), "float32")
    results = [ac.correlate(x, w, "same") for _ in range(3)]
    assert plans_made == [choice.method]
    assert_matches(results[0], reference_correlate(x, w, "same"), dtype="float32")
    np.testing.assert_array_equal(results[2], results[0])
    ac.correlate(x, w.astype(np.float64), "same", measure=True)  # measured calls keep no plan
    assert len(plans_made) == 2


def test_double_precision_gemms_are_charged_at_half_the_float32_rate():
    """On the CPU, float64 and complex128 GEMMs run at 0.3-0.5 of float32's rate, so the
    model charges them half of `gemm_flops`: 10^4 float64 samples with 1023 taps run the
    FFT (132 us per call) rather than direct's banded GEMMs (417-435 us)."""
    from arrayconv._runtime.rates import DEFAULT_RATES, DOUBLE_GEMM_SHARE

    full = DEFAULT_RATES.gemm_flops
    for dtype, share in [("float32", 1), ("complex64", 1), ("float64", DOUBLE_GEMM_SHARE), ("complex128", DOUBLE_GEMM_SHARE)]:
        assert DEFAULT_RATES.gemm_rate(np.dtype(dtype), "numpy") == share * full
        assert DEFAULT_RATES.gemm_rate(np.dtype(dtype), "cupy") == full  # the GPU's model as measured
    # the FFT's channel sum too (complex128 GEMMs); the picks on these: tests/test_choice.py
    shapes = dict(x=(64, 16, 64, 64), w=(64, 16, 5, 5), op="conv", padding=2)
    single, double, integer = (ac.choose_method(**shapes, dtype=dtype) for dtype in ("float32", "float64", "int8"))
    assert double.estimates["oa"].seconds > 1.5 * single.estimates["oa"].seconds
    assert integer.estimates["oa"].seconds == double.estimates["oa"].seconds  # transformed in float64


def test_gemms_of_many_output_channels_are_charged_faster():
    """A CPU GEMM with many rows (output channels) reuses each column it reads more, and ran
    faster than the rate: past 16 rows it is charged (rows / 16) ** (1/3) times the rate, at
    most twice. The GPU's rate is as measured."""
    from arrayconv._runtime.rates import DEFAULT_RATES

    rate = DEFAULT_RATES.gemm_rate
    f32 = np.dtype("float32")
    assert rate(f32, "numpy", 1) == rate(f32, "numpy", 16) == rate(f32, "numpy") == DEFAULT_RATES.gemm_flops
    assert rate(f32, "numpy", 64) == pytest.approx(4 ** (1 / 3) * DEFAULT_RATES.gemm_flops)
    assert rate(f32, "numpy", 128) == rate(f32, "numpy", 1024) == 2 * DEFAULT_RATES.gemm_flops
    assert rate(np.dtype("float64"), "numpy", 1024) == DEFAULT_RATES.gemm_flops  # half of float32's
    assert rate(f32, "cupy", 1024) == DEFAULT_RATES.gemm_flops


def test_strided_taps_are_charged_the_copies_of_their_stepped_views(monkeypatch):
    """With a stride, each of direct's taps copies its stepped view of the input before its
    product (as do the pointwise form, and im2col's taps when only the last axis is
    gathered): uncharged, direct was estimated 3-12x under its time. The picks on these
    strided problems: tests/test_choice.py."""
    from arrayconv._methods import direct
    from arrayconv._runtime.rates import DEFAULT_RATES

    passes = direct.STRIDED_COPY_PASSES
    x, w = (1, 4, 512, 512), (1, 4, 15, 15)
    options = dict(op="conv", stride=2, dilation=3, padding=21, dtype="float32")
    charged = ac.choose_method(x, w, **options)
    monkeypatch.setattr(direct, "STRIDED_COPY_PASSES", 0)
    ac.clear_caches()
    uncharged = ac.choose_method(x, w, **options)
    copies = 15 * 15 * 256 * 256 * 4 * 4 * passes / DEFAULT_RATES.stream_bytes  # taps, outputs, channels, bytes, passes
    assert charged.estimates["direct"].seconds - uncharged.estimates["direct"].seconds == pytest.approx(copies)
    monkeypatch.undo()
    ac.clear_caches()
    # im2col's calls per tap (a stand-in for unit-stride costs) are capped with a stride; at
    # unit stride its estimate keeps every tap's call
    strided = ac.choose_method((256, 1, 64, 64), (16, 1, 31, 31), op="conv", stride=3, dilation=2, padding=30)
    unit = ac.choose_method((256, 1, 22, 22), (16, 1, 31, 31), op="conv", padding=15)
    assert unit.estimates["im2col"].seconds > strided.estimates["im2col"].seconds


def test_one_core_loses_the_reference_machines_second_thread(monkeypatch):
    """The shipped rates are those of a 2-core machine, whose BLAS and large transforms use
    both cores. A process allotted one core charges GEMMs at half the rate, and transforms
    that run on all workers (not small ones, nor overlap-save's one-thread slabs) 1.7x
    with one worker: the calibration probes ran at 0.51 and 0.59 of their 2-core rates.
    On one core, 4096x4096 with 63x63 then goes to overlap-save (109 ms against the
    FFT's 212)."""
    from arrayconv._runtime import config as _config
    from arrayconv._runtime.rates import DEFAULT_RATES, ONE_CORE_GEMM_SHARE, ONE_WORKER_FFT_SHARE

    def estimates(shape, kernel):  # type: ignore[no-untyped-def]
        ac.clear_caches()
        choice = ac.choose_method(shape, kernel, mode="same", dtype="float32")
        return choice.method, {name: cost.seconds for name, cost in choice.estimates.items()}

    monkeypatch.setattr(_config, "_CORES", 2)
    _, two = estimates((4096, 4096), (63, 63))
    _, small_two = estimates((64, 64), (5, 5))
    monkeypatch.setattr(_config, "_CORES", 1)
    assert DEFAULT_RATES.gemm_rate(np.dtype("float32"), "numpy") == ONE_CORE_GEMM_SHARE * DEFAULT_RATES.gemm_flops
    assert DEFAULT_RATES.gemm_rate(np.dtype("float32"), "cupy") == DEFAULT_RATES.gemm_flops
    method, one = estimates((4096, 4096), (63, 63))
    assert method == "oa"
    assert two["fft"] * 1.3 < one["fft"] < two["fft"] / ONE_WORKER_FFT_SHARE
    _, small_one = estimates((64, 64), (5, 5))
    assert small_one["fft"] == small_two["fft"]  # transforms too small for threads
    ac.clear_caches()
