"""conv against the SciPy-built float64 conv-layer reference, every method."""

import math

import numpy as np
import pytest
import scipy.signal
from _reference import assert_matches, random, reference_conv, reference_conv_terms, reference_terms, to_numpy
from _strategies import conv_cases, examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

import arrayconv as ac
from arrayconv._methods import _compiled

METHODS = ["auto", *ac.METHODS]
OPTIONS = ("stride", "padding", "dilation", "groups")


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=examples(30))
@given(case=conv_cases(), dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 2**16), with_bias=st.booleans())
@example(  # one output of 180 terms that cancel to 0.34 (terms' norm 12.6): FFT's error 1.6e-5 of it
    case=dict(x_shape=(1, 3, 4, 5, 9), w_shape=(1, 3, 4, 3, 5), stride=(1, 1, 1), padding="valid", dilation=(1, 2, 2), groups=1),
    dtype="float32",
    seed=159,
    with_bias=False,
)
def test_matches_reference(xp, method, case, dtype, seed, with_bias):
    rng = np.random.default_rng(seed)
    x, w = random(rng, case["x_shape"], dtype), random(rng, case["w_shape"], dtype)
    bias = random(rng, (w.shape[0],), dtype) if with_bias else None
    options = {k: case[k] for k in OPTIONS}
    got = ac.conv(xp.asarray(x), xp.asarray(w), None if bias is None else xp.asarray(bias), method=method, **options)
    bound = np.max(np.abs(x)) * np.sum(np.abs(w))
    terms = reference_conv_terms(x, w, **options)  # one output of many terms may cancel far below them
    assert_matches(got, reference_conv(x, w, bias, **options), dtype=dtype, backend=xp.__name__, bound=bound, terms=terms)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "x_shape, w_shape, options",
    [
        ((2, 3, 16, 16), (4, 3, 3, 3), dict(padding=1)),  # case a in small
        ((1, 6, 9, 12), (4, 3, 4, 2), dict(groups=2, padding="same")),  # even kernel, 'same'
        ((2, 4, 11, 13), (4, 1, 3, 3), dict(groups=4, stride=2, padding=1)),  # depthwise, strided
        ((1, 2, 17), (3, 2, 4), dict(dilation=3, padding=2)),  # 1-D dilated
        ((1, 2, 6, 7, 5), (2, 2, 2, 3, 2), dict(padding=(1, 0, 1), stride=(1, 2, 1))),  # 3-D
        ((3, 5, 8, 8), (7, 5, 8, 8), dict()),  # kernel = image, 1x1 output
        ((2, 32, 5, 6), (33, 32, 1, 1), dict()),  # 1x1 conv, many channels
        ((2, 16, 9, 9), (4, 8, 3, 3), dict(groups=2, padding=1)),  # many channels, few outputs per group
        ((1, 2, 5), (2, 2, 1), dict(padding=3)),  # outputs past the kernel's reach
        ((1, 1, 8, 9), (2, 1, 4, 3), dict(padding=(5, 1))),  # padding past the kernel, and unequal
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128", "int32"])
def test_layer_configurations(xp, method, x_shape, w_shape, options, dtype, rng):
    x, w = random(rng, x_shape, dtype), random(rng, w_shape, dtype)
    bias = random(rng, (w_shape[0],), dtype)
    got = ac.conv(xp.asarray(x), xp.asarray(w), xp.asarray(bias), method=method, **options)
    assert_matches(got, reference_conv(x, w, bias, **options), dtype=dtype, backend=xp.__name__)


@pytest.mark.parametrize("method", METHODS)
def test_many_chunks_under_a_small_memory_limit(method, rng):
    x, w = random(rng, (3, 4, 40, 37), "float64"), random(rng, (5, 4, 6, 5), "float64")
    with ac.config(memory_limit=4 << 20, workers=2):
        got = ac.conv(x, w, padding=2, method=method)
    assert_matches(got, reference_conv(x, w, padding=2), dtype="float64")


def test_float16_and_mixed_dtypes(rng):
    x, w = random(rng, (1, 2, 12, 12), "float16"), random(rng, (3, 2, 3, 3), "float16")
    assert_matches(ac.conv(x, w, padding=1), reference_conv(x, w, padding=1), dtype="float16")
    w32 = random(rng, (3, 2, 3, 3), "float32")
    assert ac.conv(x, w32).dtype == np.float32
    assert ac.conv(x.astype(np.float32), w32.astype(np.float64)).dtype == np.float64


def test_float32_stays_float32_inside_fft(monkeypatch, rng):
    seen = []
    real_rfftn = ac._methods.fft.__dict__["_transforms"]

    def spy(backend, real):
        forward, inverse = real_rfftn(backend, real)
        return (lambda a, s, axes: seen.append(a.dtype) or forward(a, s, axes)), inverse

    monkeypatch.setattr(ac._methods.fft, "_transforms", spy)
    x, w = random(rng, (1, 3, 20, 20), "float32"), random(rng, (2, 3, 5, 5), "float32")
    assert ac.conv(x, w, method="fft").dtype == np.float32
    assert seen and all(d == np.float32 for d in seen)


@pytest.mark.parametrize(
    "x_shape, w_shape, options",
    [
        ((2, 4, 20, 17), (6, 2, 5, 4), dict(groups=2, stride=2, padding=3, dilation=2)),
        ((1, 3, 9, 10, 11), (4, 3, 3, 2, 5), dict(padding=2, dilation=(1, 2, 1), padding_mode="circular")),
        ((1, 1, 16, 16), (1, 1, 7, 7), dict(padding=3, padding_mode="circular")),  # native wrap
        ((3, 16, 12, 12), (32, 16, 3, 3), dict(padding=1)),  # frequency-major for the GEMM
        ((2, 32, 9, 8), (24, 16, 3, 4), dict(groups=2, padding=(2, 1), dilation=(2, 1))),  # grouped GEMM
        ((1, 8, 6, 5, 7), (6, 8, 2, 3, 4), dict(padding=1)),  # 3-D, frequency-major
        ((1, 2, 30), (3, 2, 7), dict(stride=3, padding=5, dilation=2)),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_fft_kernel_spectrum_by_axis_equals_the_whole_transform(x_shape, w_shape, options, dtype):
    # The CPU transforms the kernel one axis at a time, skipping zero lines (for the GEMM,
    # with its axes moved so that the spectra come out frequency-major); a GPU transforms
    # the whole zero-filled grid at once and transposes. Both must give the same spectrum.
    from arrayconv._api.conv import conv_spec
    from arrayconv._methods import fft
    from arrayconv._runtime import backend as _backend
    from arrayconv._spec.problem import ArraySpec

    w = random(np.random.default_rng(0), w_shape, dtype)
    settings = {"stride": 1, "dilation": 1, "groups": 1, **options}
    problem = conv_spec(ArraySpec(x_shape, np.dtype(dtype)), w, None, _backend.NUMPY, "fft", x_bound=0, **settings).problem
    fixed = fft.layout(problem, _backend.NUMPY)
    whole = fft._spectrum_at_once(w, fixed, _backend.NUMPY)
    by_axis = fft._spectrum_by_axis(w, fixed, _backend.NUMPY)
    assert by_axis.dtype == whole.dtype == np.result_type(dtype, np.complex64)
    tolerance = np.finfo(whole.dtype).eps * 16 * np.abs(whole).max()
    np.testing.assert_allclose(by_axis, whole, rtol=0, atol=tolerance)
    p = fixed.problem
    prepared = fft.prepare(w, problem, _backend.NUMPY)
    if fft._sums_by_gemm(p, _backend.NUMPY):  # (G, F, Cg, Og)
        whole = whole.reshape(p.groups, p.out_per_group, p.in_per_group, -1).transpose(0, 3, 2, 1)
    np.testing.assert_allclose(prepared.reshape(whole.shape), whole, rtol=0, atol=tolerance)


@pytest.mark.parametrize(
    "x_shape, w_shape, options",
    [
        ((3, 4, 10, 11), (6, 2, 3, 2), dict(groups=2, padding=(2, 1), dilation=(1, 2))),
        ((2, 3, 19), (4, 3, 4), dict(padding=3, dilation=2)),
        ((1, 2, 5, 6, 7), (3, 2, 2, 3, 2), dict(padding=1)),
    ],
)
def test_im2col_one_gather_path(x_shape, w_shape, options):
    # The GPU's im2col gathers every tap with one strided copy; run that path on NumPy
    # through a backend that calls itself 'cupy'.
    import dataclasses

    from arrayconv._api.conv import conv_spec
    from arrayconv._methods import im2col
    from arrayconv._runtime import backend as _backend
    from arrayconv._spec.problem import ArraySpec

    rng = np.random.default_rng(0)
    x, w = random(rng, x_shape, "float64"), random(rng, w_shape, "float64")
    fake = dataclasses.replace(_backend.NUMPY, name="cupy")
    settings = {"stride": 1, "dilation": 1, "groups": 1, **options}
    spec = conv_spec(ArraySpec(x.shape, x.dtype), w, None, fake, "im2col", x_bound=0, **settings)
    with ac.config(memory_limit=1 << 12):  # several chunks
        got = im2col.run(x, im2col.prepare(w, spec.problem, fake), spec.problem, fake)
    assert_matches(got, reference_conv(x, w, **options), dtype="float64")


def test_im2col_runs_tiny_images_as_one_gemm_with_the_operator(rng):
    from arrayconv._methods import im2col

    x, w = random(rng, (50, 6, 4, 4), "float64"), random(rng, (8, 3, 3, 3), "float64")
    options = dict(padding=1, groups=2)
    problem = ac.plan_conv(w, x.shape, padding=1, groups=2, method="im2col")._spec.problem
    assert isinstance(im2col.prepare(w, problem, ac._runtime.backend.NUMPY), im2col.Operator)
    assert_matches(ac.conv(x, w, method="im2col", **options), reference_conv(x, w, **options), dtype="float64")


@settings(max_examples=examples(100))
@given(case=conv_cases(), dtype=st.sampled_from(["float32", "float64", "complex128"]), circular=st.booleans(), seed=st.integers(0, 2**16))
def test_im2col_operator_matrix_is_the_layer_applied_to_unit_inputs(xp, case, dtype, circular, seed):
    # The operator is built from the kernel by index; its definition is the direct
    # method's response to every unit input (how it was built before: 1.6 s for one
    # 64x64 image and a 63x63 kernel).
    from dataclasses import replace

    from arrayconv._methods import direct, im2col
    from arrayconv._runtime.backend import get_backend

    rng = np.random.default_rng(seed)
    w = xp.asarray(random(rng, case["w_shape"], dtype))
    options = {k: case[k] for k in OPTIONS}
    padding_mode = "circular" if circular and isinstance(case["padding"], int) else "zeros"
    problem = ac.plan_conv(w, case["x_shape"], dtype=dtype, padding_mode=padding_mode, method="direct", **options)._spec.problem
    backend = get_backend(w=w)
    rows = problem.groups * problem.in_per_group * math.prod(problem.spatial)
    units = replace(problem, batch=rows)
    eye = xp.eye(rows, dtype=dtype).reshape(units.x_shape)
    expected = direct.run(eye, direct.prepare(w, units, backend), units, backend).reshape(rows, -1)
    got = im2col._operator(w, problem, backend).matrix
    assert_matches(got, to_numpy(expected).astype(np.complex128), dtype=dtype, backend=xp.__name__)


def test_im2col_operator_matrix_is_built_within_a_few_times_its_size(rng):
    # Built through a taps x outputs x inputs selection tensor per axis, a (400,) input with
    # 200 taps and full padding needed 383 MB for its 1.9 MB matrix (6 GB for 1000 and 500).
    import tracemalloc

    from arrayconv._methods import im2col

    w = random(rng, (1, 1, 200), "float64")
    problem = ac.plan_conv(w, (1, 1, 400), padding=199, method="direct")._spec.problem
    tracemalloc.start()
    try:
        matrix = im2col._operator(w, problem, ac._runtime.backend.NUMPY).matrix
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert matrix.shape == (400, 599)
    assert peak < 4 * matrix.nbytes, peak


@settings(max_examples=examples(150))
@given(case=conv_cases(), dtype=st.sampled_from(["float32", "float64", "complex128"]), seed=st.integers(0, 2**16), chunks=st.booleans())
def test_im2col_gathering_only_the_last_axis(case, dtype, seed, chunks):
    # Deep column matrices gather only the last axis's taps; force that path on every case.
    from arrayconv._methods import im2col

    rng = np.random.default_rng(seed)
    x, w = random(rng, case["x_shape"], dtype), random(rng, case["w_shape"], dtype)
    options = {k: case[k] for k in OPTIONS}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(im2col, "_LAST_AXIS_DEPTH", 0)
        if chunks:  # one batch item and output row per chunk
            patch.setattr(im2col, "_CHUNK_BYTES", 1)
        problem = ac.plan_conv(w, x.shape, dtype=dtype, method="im2col", **options)._spec.problem
        kernel = im2col.prepare(w, problem, ac._runtime.backend.NUMPY)
        got = ac.conv(x, w, method="im2col", **options)
    gathers = len(problem.kernel) > 1 and problem.kernel[-1] > 1 and problem.out_per_group <= math.prod(problem.out_spatial)
    assert isinstance(kernel, im2col.LastAxisColumns) == (gathers and not im2col._operator_fits(problem, ac._runtime.config.budget("numpy")))
    assert_matches(got, reference_conv(x, w, **options), dtype=dtype)


@settings(max_examples=examples(150))
@given(
    case=conv_cases(),
    dtype=st.sampled_from(["float32", "float64", "complex128", "int32"]),
    seed=st.integers(0, 2**16),
    chunk_bytes=st.sampled_from([1, 700, 1 << 20]),
)
def test_im2col_columns_of_output_samples_on_the_cpu(case, dtype, seed, chunk_bytes):
    # The CPU's columns hold the output samples only and the GEMM writes into the result:
    # whole items per chunk, or rows of one item (1 byte: one row per chunk).
    from arrayconv._methods import im2col

    rng = np.random.default_rng(seed)
    x, w = random(rng, case["x_shape"], dtype), random(rng, case["w_shape"], dtype)
    options = {k: case[k] for k in OPTIONS}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(im2col, "_LAST_AXIS_DEPTH", 1 << 62)
        patch.setattr(im2col, "_OPERATOR_BYTES", 0)
        patch.setattr(im2col, "_cpu_chunk_bytes", lambda problem: chunk_bytes)
        got = ac.conv(x, w, method="im2col", **options)
    assert_matches(got, reference_conv(x, w, **options), dtype=dtype)


@pytest.mark.parametrize("options", [dict(padding=1, stride=2), dict(padding=(2, 0), stride=(1, 3))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_im2col_cuts_one_image_in_rows_for_the_cores(options, dtype, monkeypatch):
    """One image whose GEMMs are worth splitting: its columns in rows, a chunk a core at least
    (each gathered on its own thread); the reference's values, the same bits on 1 and 2 workers."""
    from arrayconv._methods import im2col
    from arrayconv._runtime import threads

    rng = np.random.default_rng(5)
    x, w = random(rng, (1, 6, 23, 31), dtype), random(rng, (8, 6, 3, 3), dtype)
    monkeypatch.setattr(threads, "_SPLIT_MACS", 1)
    monkeypatch.setattr(im2col, "_LAST_AXIS_DEPTH", 1 << 62)
    monkeypatch.setattr(im2col, "_OPERATOR_BYTES", 0)
    monkeypatch.setattr(ac._runtime.config, "cores", lambda: 3)
    calls, real = [], im2col.run_gemm_jobs

    def recorded(items, job, lanes, macs):  # type: ignore[no-untyped-def]
        calls.append(list(items))
        real(calls[-1], job, lanes, macs)

    monkeypatch.setattr(im2col, "run_gemm_jobs", recorded)
    results = []
    for workers in (2, 1):
        with ac.config(workers=workers):
            results.append(ac.conv(x, w, method="im2col", **options))
    assert len(calls) == 2 and all(len(chunks) >= 3 for chunks in calls), calls
    assert np.array_equal(results[0], results[1])
    assert_matches(results[0], reference_conv(x, w, **options), dtype=dtype)


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize("options", [dict(padding=(3, 1)), dict(padding=(2, 0), stride=(3, 2), dilation=(2, 1)), dict(padding=(0, 2)), dict(padding=(0, 0), stride=(1, 2))])
@pytest.mark.parametrize("chunk_bytes", [1, 20000, 1 << 20])
def test_im2col_chunks_pad_their_own_rows_on_the_cpu(padding_mode, options, chunk_bytes, rng, monkeypatch):
    # With zero padding, NumPy's gather pads each chunk's rows under its output rows (one row,
    # a few rows of an item, or whole items per chunk; on two threads); the whole input is
    # padded first only with circular padding, and never without padding. numba's gather at
    # a stride of 2 reads the input in place, to the same bits.
    from arrayconv._methods import _taps, im2col

    x, w = random(rng, (3, 4, 23, 19), "float64"), random(rng, (5, 4, 4, 3), "float64")
    monkeypatch.setattr(im2col, "_LAST_AXIS_DEPTH", 1 << 62)
    monkeypatch.setattr(im2col, "_cpu_chunk_bytes", lambda problem: chunk_bytes)
    with ac.config(workers=2):  # numba's gather where it applies (stride 2 along the last axis), reading x in place
        gathered = ac.conv(x, w, method="im2col", padding_mode=padding_mode, **options)
    monkeypatch.setattr(im2col._gather, "applies", lambda problem: False)
    whole, chunks = [], []
    monkeypatch.setattr(im2col, "pad_input", lambda *args: whole.append(args) or _taps.pad_input(*args))
    pad_rows = _taps.padded_rows
    monkeypatch.setattr(_taps, "padded_rows", lambda x, chunk, *args: chunks.append(chunk) or pad_rows(x, chunk, *args))
    with ac.config(workers=2):
        got = ac.conv(x, w, method="im2col", padding_mode=padding_mode, **options)
    pads = options["padding"]
    if padding_mode == "circular":
        extended = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[0]), (pads[1], pads[1])), mode="wrap")
        expected = reference_conv(extended, w, **{k: v for k, v in options.items() if k != "padding"})
    else:
        expected = reference_conv(x, w, **options)
    assert_matches(got, expected, dtype="float64")
    np.testing.assert_array_equal(gathered, got)
    assert len(whole) == (padding_mode == "circular" and any(pads))
    if padding_mode == "zeros" and any(pads):  # 3 items: one row, a few rows, or all items per chunk
        rows = 3 * got.shape[2]
        assert {1: len(chunks) == rows, 20000: 3 < len(chunks) < rows, 1 << 20: len(chunks) == 1}[chunk_bytes], len(chunks)


@pytest.mark.parametrize(
    "x_shape, w_shape, options, forms",
    [
        ((2, 1, 23, 19), (3, 1, 4, 3), dict(padding=(3, 1)), ("taps", "rows")),  # one channel: multiply-adds or rows
        ((2, 4, 23, 19), (5, 4, 4, 3), dict(padding=(2, 0), dilation=(2, 1)), ("taps",)),  # GEMM taps, unequal padding
        ((2, 1, 23, 19), (2, 1, 3, 5), dict(padding=0), ("taps", "rows")),  # unpadded: the wide copy, chunk by chunk
        ((1, 2, 9, 10, 11), (2, 1, 3, 2, 3), dict(padding=(1, 2, 0), groups=2), ("taps", "rows")),  # 3-D, groups
    ],
)
@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize("chunk_bytes", [1, 3000, 13000])
def test_direct_chunks_pad_their_own_rows(x_shape, w_shape, options, forms, padding_mode, chunk_bytes, rng, monkeypatch):
    # With unit stride, each of several chunks pads the rows under its output rows into the
    # wide layout (one row, a few rows or whole items per chunk; on two threads with one
    # channel); the whole input is padded first only with circular padding.
    from arrayconv._methods import _taps, direct

    x, w = random(rng, x_shape, "float64"), random(rng, w_shape, "float64")
    monkeypatch.setattr(direct, "_CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr(direct, "_MEMORY_BOUND_CHUNK_BYTES", chunk_bytes)  # the 5-output GEMM taps'
    monkeypatch.setattr(direct, "_ROWS_CHUNK_BYTES", chunk_bytes)
    whole = []
    monkeypatch.setattr(direct, "pad_input", lambda *args: whole.append(args) or _taps.pad_input(*args))
    pads = options["padding"] if isinstance(options["padding"], tuple) else (options["padding"],) * (len(x_shape) - 2)
    if padding_mode == "circular":
        extended = np.pad(x, ((0, 0), (0, 0), *((p, p) for p in pads)), mode="wrap")
        expected = reference_conv(extended, w, **{k: v for k, v in options.items() if k != "padding"})
    else:
        expected = reference_conv(x, w, **options)
    for form in forms:
        whole.clear()
        monkeypatch.setattr(direct, "_form", lambda problem, backend, rates, settings: (form, 0))
        with ac.config(workers=2):
            got = ac.conv(x, w, method="direct", padding_mode=padding_mode, **options)
        assert_matches(got, expected, dtype="float64")
        assert len(whole) == (padding_mode == "circular" and any(pads)), form


def test_direct_memory_bound_taps_run_in_small_chunks(rng, monkeypatch):
    # GEMM taps with at most 8 multiply-adds per element they move (Og * Cg / (Og + Cg))
    # are memory-bound: on the CPU their chunks hold 512 KiB (in cache from tap to tap),
    # others' 4 MiB; one output (a matrix-vector product per tap) and one input channel
    # (elementwise taps) keep the large chunks.
    from arrayconv._methods import direct
    from arrayconv._runtime.backend import NUMPY

    def chunk_bytes(w_shape):  # type: ignore[no-untyped-def]
        x_shape = (1, w_shape[1], 64, 64)
        problem = ac.plan_conv(np.zeros(w_shape, np.float32), x_shape, np.float32, padding=1, method="direct")._spec.problem
        return direct._chunk_bytes(problem, False, NUMPY)

    for outputs, inputs in ((2, 16), (4, 16), (8, 16), (16, 16), (256, 4)):
        assert chunk_bytes((outputs, inputs, 3, 3)) == direct._MEMORY_BOUND_CHUNK_BYTES == 512 << 10, (outputs, inputs)
    for outputs, inputs in ((1, 16), (4, 1), (16, 64), (64, 256)):
        assert chunk_bytes((outputs, inputs, 3, 3)) == direct._CHUNK_BYTES == 4 << 20, (outputs, inputs)
    # the result does not depend on the chunks: float64 against the reference, in one chunk
    # and in chunks of a few rows
    x, w = random(rng, (2, 6, 40, 33), "float64"), random(rng, (4, 6, 3, 5), "float64")
    expected = reference_conv(x, w, padding=(1, 2))
    problem = ac.plan_conv(w, x.shape, padding=(1, 2), method="direct")._spec.problem
    monkeypatch.setattr(direct, "_form", lambda problem, backend, rates, settings: ("taps", 0))
    chunks = []
    for size in (direct._MEMORY_BOUND_CHUNK_BYTES, 3000):
        monkeypatch.setattr(direct, "_MEMORY_BOUND_CHUNK_BYTES", size)
        assert_matches(ac.conv(x, w, padding=(1, 2), method="direct"), expected, dtype="float64")
        chunks.append(len(direct.layout(problem).chunks(direct._bytes_per_sample(problem), direct._chunk_bytes(problem, False, NUMPY))))
    assert chunks[0] == 1 < chunks[1]


@pytest.mark.parametrize("method", ["direct", "im2col"])
def test_padded_rows_past_the_reuse_limit_are_not_kept(method, rng, monkeypatch):
    # A chunk's padded rows reuse this thread's scratch buffer only up to REUSED_BYTES: a
    # direct chunk of one output channel over many input channels pads far more input than
    # its 4 MiB of sums, which a thread must not hold after the call.
    # direct's GEMM taps, not its compiled loops for layers (which pad the whole input once).
    from arrayconv._methods import _channels, direct, im2col
    from arrayconv._runtime import scratch as _scratch

    x, w = random(rng, (2, 8, 30, 20), "float64"), random(rng, (1, 8, 3, 3), "float64")
    monkeypatch.setattr(_channels, "takes", lambda problem, backend: False)
    ac.clear_caches()
    monkeypatch.setattr(direct, "_CHUNK_BYTES", 1000)
    monkeypatch.setattr(im2col, "_cpu_chunk_bytes", lambda problem: 1000)
    for limit, kept in ((1 << 20, True), (1 << 10, False)):
        monkeypatch.setattr(_scratch, "REUSED_BYTES", limit)
        _scratch.clear()
        with ac.config(workers=1):
            assert_matches(ac.conv(x, w, padding=1, method=method), reference_conv(x, w, padding=1), dtype="float64")
        assert any(name == "taps.padded_rows" for name, *_ in _scratch._local.pool) == kept


@pytest.mark.parametrize("padding_mode, numpy_mode", [("wrap", "wrap"), ("mirror", "reflect"), ("edge", "edge"), ("symmetric", "symmetric")])
@pytest.mark.parametrize("options", [dict(padding=2), dict(padding=(1, 3), stride=(2, 1), dilation=(1, 2))])
@pytest.mark.parametrize("chunk_bytes", [None, 1])
def test_im2col_last_axis_path_on_deep_kernels(padding_mode, numpy_mode, options, chunk_bytes, rng, monkeypatch):
    # 128 channels x 4 taps along the last axis: deep enough for the last-axis path.
    from arrayconv._methods import im2col

    x, w = random(rng, (2, 128, 11, 13), "float64"), random(rng, (5, 128, 3, 4), "float64")
    problem = ac.plan_conv(w, x.shape, method="im2col", padding_mode=padding_mode, **options)._spec.problem
    assert isinstance(im2col.prepare(w, problem, ac._runtime.backend.NUMPY), im2col.LastAxisColumns)
    if chunk_bytes:  # one batch item and output row per chunk
        monkeypatch.setattr(im2col, "_CHUNK_BYTES", chunk_bytes)
    pad = options["padding"] if isinstance(options["padding"], tuple) else (options["padding"],) * 2
    extended = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])), mode=numpy_mode)
    expected = reference_conv(extended, w, **{k: v for k, v in options.items() if k != "padding"})
    assert_matches(ac.conv(x, w, method="im2col", padding_mode=padding_mode, **options), expected, dtype="float64")
    backwards = np.ascontiguousarray(w[..., ::-1])[..., ::-1]  # the same kernel, its last axis a negative-stride view
    assert_matches(ac.conv(x, backwards, method="im2col", padding_mode=padding_mode, **options), expected, dtype="float64")


def test_im2col_gathers_every_tap_where_an_item_has_fewer_outputs_than_filters(rng):
    """Deep enough for the last-axis path, but 16 outputs an item for 64 filters: one GEMM of
    every tap's columns, not a GEMM a tap row that reads every filter for 16 columns."""
    from arrayconv._methods import im2col

    x, w = random(rng, (1, 256, 8, 8), "float32"), random(rng, (64, 256, 3, 3), "float32")
    plan = ac.plan_conv(w, x.shape, stride=2, padding=1, method="im2col")
    assert not isinstance(im2col.prepare(w, plan._spec.problem, ac._runtime.backend.NUMPY), im2col.LastAxisColumns)
    assert_matches(plan(x), reference_conv(x, w, stride=2, padding=1), dtype="float32")
    wider = ac.plan_conv(w, (1, 256, 18, 18), stride=2, padding=1, method="im2col")  # 81 outputs an item
    assert isinstance(im2col.prepare(w, wider._spec.problem, ac._runtime.backend.NUMPY), im2col.LastAxisColumns)


@pytest.mark.parametrize("method", ["direct", "im2col"])
@pytest.mark.parametrize(
    "w_shape, options",
    [
        ((6, 8, 1, 1), dict()),
        ((6, 4, 3, 1), dict(groups=2, dilation=2)),
        ((5, 8, 2, 1, 1), dict()),
        ((6, 8, 3, 3), dict(stride=2)),
        ((4, 2, 2, 3), dict(stride=(3, 2), dilation=2, groups=4)),
        ((8, 1, 1, 1), dict(stride=3, groups=8)),
        ((5, 8, 2, 2, 2), dict(stride=(2, 1, 2))),
    ],
)
def test_taps_read_the_input_in_place_without_padding(method, w_shape, options, rng):
    # No padding, and taps along the first axis only or a stride (stepped views of the input):
    # no padded copy is made (a strided 1x1 conv of 64 float64 images of 4x128x128 spent 8.4
    # of its 9.3 ms copying the input).
    from arrayconv._methods import _taps

    x = random(rng, (3, 8, 9, 7, 5)[: len(w_shape)], "float32")
    x.flags.writeable = False
    problem = ac.plan_conv(random(rng, w_shape, "float32"), x.shape, dtype="float32", method=method, **options)._spec.problem
    assert _taps.reads_in_place(problem) and np.shares_memory(_taps.pad_input(x, problem, ac._runtime.backend.NUMPY), x)
    w = random(rng, w_shape, "float32")
    with ac.config(memory_limit=1 << 16):  # several chunks
        got = ac.conv(x, w, method=method, **options)
    assert_matches(got, reference_conv(x, w, **options), dtype="float32")


@pytest.mark.parametrize("block, chunk_bytes", [(8, 4 << 20), (32, 4 << 20), (16, 1 << 10), (16, 1 << 12)])
@pytest.mark.parametrize(
    "x_shape, w_shape, options",
    [
        ((1, 1, 1000), (1, 1, 31), dict(padding=15)),  # a 1-D signal, 'same'
        ((3, 2, 97), (4, 1, 8), dict(groups=2, padding="same", dilation=3)),  # batch, groups, filters, even kernel
        ((2, 5, 64), (5, 1, 9), dict(groups=5, padding=4)),  # a filter per line: groups a slice at a time (3 + 2, 1 each)
        ((2, 1, 5, 40), (3, 1, 1, 11), dict(padding=(1, 5))),  # a row filter on images
        ((1, 4, 3, 6, 33), (4, 1, 1, 1, 7), dict(groups=4, padding=(0, 1, 6))),  # depthwise 3-D row filter
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("circular", [False, True])
def test_direct_banded_form(x_shape, w_shape, options, block, chunk_bytes, dtype, circular, monkeypatch, rng):
    # 1-D kernels and row filters with one input channel per group run their taps as one
    # GEMM with a Toeplitz matrix; force it, at three block lengths, in one chunk and in
    # many (and groups in slices), and check against the reference on every layout it
    # reads (padding, periodic halos, a block tail).
    from arrayconv._methods import _banded, direct

    monkeypatch.setattr(direct, "_form", lambda problem, backend, rates, settings: ("banded", block))
    monkeypatch.setattr(_banded, "_CHUNK_BYTES", chunk_bytes)
    x, w = random(rng, x_shape, dtype), random(rng, w_shape, dtype)
    plan = ac.plan_conv(w, x.shape, method="direct", padding_mode="circular" if circular else "zeros", **options)
    assert isinstance(plan._kernel, _banded.BandedTaps) and plan._kernel.block == block
    assert_matches(plan(x), _expected(plan, x, w, options, circular), dtype=dtype)


def _expected(plan, x, w, options, circular):
    """The reference result of a conv plan, with zero or circular padding."""
    if not circular:
        return reference_conv(x, w, **options)
    problem = plan._spec.problem
    extended = np.pad(x, [(0, 0), (0, 0), *zip(problem.pad_lo, problem.pad_hi)], mode="wrap")
    return reference_conv(extended, w, groups=options.get("groups", 1), dilation=options.get("dilation", 1))


@pytest.mark.parametrize("chunk_bytes", [1 << 20, 1 << 9])
@pytest.mark.parametrize(
    ("x_shape", "w_shape", "options"),
    [
        ((1, 1, 1000), (1, 1, 9), dict(padding="same")),  # a 1-D signal
        ((2, 1, 37, 41), (3, 1, 5, 4), dict(padding=(2, 1))),  # batch, filters, an even row
        ((1, 6, 20, 33), (12, 1, 3, 11), dict(groups=6, padding="same")),  # depthwise, 2 filters each, 11-tap rows
        ((1, 2, 30, 25), (4, 1, 3, 3), dict(groups=2, dilation=(2, 1), padding=2)),  # rows two apart
        ((1, 1, 6, 9, 12), (2, 1, 2, 3, 5), dict(padding=(1, 1, 2))),  # 3-D: rows of planes
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("circular", [False, True])
def test_direct_row_form(x_shape, w_shape, options, chunk_bytes, dtype, circular, monkeypatch, rng):
    # With one input channel per group, kernel rows of up to 11 taps may run as one
    # numpy.correlate each; force that form, in one chunk and in many (run on worker
    # threads), and check it on every layout it reads (one map in one chunk included).
    from arrayconv._methods import _one_map, _rows, direct

    monkeypatch.setattr(direct, "_form", lambda problem, backend, rates, settings: ("rows", 0))
    monkeypatch.setattr(direct, "_ROWS_CHUNK_BYTES", chunk_bytes)
    x, w = random(rng, x_shape, dtype), random(rng, w_shape, dtype)
    plan = ac.plan_conv(w, x.shape, method="direct", padding_mode="circular" if circular else "zeros", **options)
    kernel = plan._kernel
    assert isinstance(kernel, _rows.RowKernels) or (isinstance(kernel, _one_map.MapKernel) and kernel.runner.width)
    assert_matches(plan(x), _expected(plan, x, w, options, circular), dtype=dtype)


@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("taps", [4, 16, 40])
@pytest.mark.parametrize("padding", [0, "same", 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batched_1d_lines_with_one_kernel_run_as_one_wide_line(groups, taps, padding, dtype, rng, monkeypatch):
    # A piece of whole lines that share one kernel (one group) is one numpy.correlate over
    # the lines laid end to end, each with its padding ('same' with even kernels: uneven),
    # not one call per line (15 float32 lines of 324 samples with 16 taps: 17 us against
    # 46); each filter of a bank its own call. Lines of two groups run one by one.
    from arrayconv._methods import _rows, direct

    x, w = random(rng, (6, groups, 50), dtype), random(rng, (3 * groups, 1, taps), dtype)
    wide, wide_lines = [], _rows.wide_lines
    monkeypatch.setattr(direct, "_form", lambda problem, backend, rates, settings: ("rows", 0))
    monkeypatch.setattr(_rows, "wide_lines", lambda *a: wide.append(a[0].shape) or wide_lines(*a))
    got = ac.conv(x, w, padding=padding, groups=groups, method="direct")
    assert_matches(got, reference_conv(x, w, padding=padding, groups=groups), dtype=dtype)
    assert wide == ([(6, 50)] * 3 if groups == 1 else []), wide


@settings(max_examples=examples(40), deadline=None)
@given(
    length=st.integers(1, 80),
    taps=st.integers(1, 70),
    mode=st.sampled_from(["full", "same", "valid"]),
    lines=st.sampled_from([(), (3,)]),
    dtype=st.sampled_from(["float32", "float64"]),
    piece_bytes=st.sampled_from([1 << 20, 24]),
    into_out=st.booleans(),
    seed=st.integers(0, 2**16),
)
@example(length=28, taps=28, mode="valid", lines=(), dtype="float32", piece_bytes=1 << 20, into_out=False, seed=34)  # 3.6e-5 of max|ref|
def test_direct_row_form_reads_1d_lines_in_place(length, taps, mode, lines, dtype, piece_bytes, into_out, seed):
    # 1-D signals skip the padded copy: numpy.correlate's 'full' mode supplies the zeros
    # past each end, and each piece of a line (whole lines, or a few samples when the
    # pieces are tiny) goes straight into the output (the caller's `out`, or one call's
    # result returned as is). Signals shorter than the kernel too, and kernels longer than
    # numpy's unrolled loop (11 taps).
    from arrayconv._methods import _rows, direct

    if mode == "valid" and taps > length:
        length, taps = taps, length  # SciPy's 'valid' needs one input at least as long as the other
    rng = np.random.default_rng(seed)
    x, k = random(rng, (*lines, length), dtype), random(rng, (*(1,) * len(lines), taps), dtype)
    ran, window, wide = [], _rows.correlate_window, _rows.wide_lines  # as run_lines or a plan's single call runs them

    def counted(run):  # type: ignore[no-untyped-def]
        return lambda *args: ran.append(args) or run(*args)

    ref = scipy.signal.correlate(x.astype(np.float64), k.astype(np.float64), mode, method="direct")
    out = np.full(ref.shape, np.nan, dtype) if into_out else None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(direct, "_form", lambda problem, backend, rates, settings: ("rows", 0))
        patch.setattr(direct, "_ROWS_CHUNK_BYTES", piece_bytes)
        patch.setattr(_rows, "correlate_window", counted(window))
        patch.setattr(_rows, "wide_lines", counted(wide))
        got = ac.correlate(x, k, mode, "direct", axes=-1, out=out)
    assert ran, "the 1-D line path did not run"
    assert out is None or got is out
    terms = reference_terms(x, k, mode, axes=-1)  # one output ('valid', equal lengths) may cancel far below its terms
    assert_matches(got, ref, dtype=dtype, terms=terms)


@pytest.mark.parametrize(("length", "taps"), [(2213, 2213), (626, 600), (5000, 300), (40, 12)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_1d_lines_in_valid_mode_compute_only_the_outputs_they_keep(length, taps, dtype, monkeypatch, rng):
    # A window that needs no zeros is correlated in numpy's 'valid' mode: its 'full'
    # correlation also computed the K - 1 partial overlaps at each end and threw them away
    # (2213 samples with 2213 taps: 255 us for one output sample, not 0.5). Rows of 12-33
    # taps run in pieces of at most 11, each computing the outputs once.
    from arrayconv._methods import _rows, direct
    from arrayconv._runtime.backend import NUMPY
    from arrayconv._runtime.rates import rates_for

    x, k = random(rng, (length,), dtype), random(rng, (taps,), dtype)
    computed, correlate = [], np.correlate

    def counted(a, v, mode):  # type: ignore[no-untyped-def]
        result = correlate(a, v, mode)
        computed.append(result.size)
        return result

    ref = scipy.signal.correlate(x.astype(np.float64), k.astype(np.float64), "valid", method="direct")
    monkeypatch.setattr(direct, "_form", lambda problem, backend, rates, settings: ("rows", 0))
    monkeypatch.setattr(np, "correlate", counted)
    assert_matches(ac.correlate(x, k, "valid", "direct"), ref, dtype=dtype)
    problem = ac.plan_correlate(k, x.shape, "valid", method="direct")._spec.problem
    pieces = -(-taps // _rows.MAX_TAPS) if _rows.splits(problem, rates_for(NUMPY)) else 1
    assert len(computed) == pieces and sum(computed) == pieces * ref.size


@pytest.mark.parametrize("split", [True, False])
@pytest.mark.parametrize("taps", [12, 15, 22, 31, 33, 34, 100])
@pytest.mark.parametrize("length", [1, 12, 40, 257])
def test_1d_line_windows_of_split_rows_match_numpy(length, taps, split, rng):
    # Long rows run in pieces of at most 11 over a zero-padded copy where zeros are needed,
    # or whole: every window of output samples of a 'full' correlation, as numpy computes it.
    from arrayconv._methods import _rows

    x, w = random(rng, (length,), "float64"), random(rng, (taps,), "float64")
    full = np.correlate(x, w, "full")
    for r0 in range(0, full.size, max(1, full.size // 7)):
        for r1 in range(r0 + 1, full.size + 1, max(1, full.size // 5)):
            s0, s1 = max(0, r0 - taps + 1), min(length, r1)
            window = (s0, s1, r0 - s0)  # line_window with the padding of 'full'
            got = _rows.correlate_window(x, w, window, r1 - r0, split)
            assert_matches(got, full[r0:r1], dtype="float64")


@pytest.mark.parametrize(("taps", "dtype", "whole"), [(2, "float64", True), (2, "float32", False), (5, "float64", False), (9, "float32", False)])
def test_one_long_line_stays_whole_where_cutting_it_does_not_pay(taps, dtype, whole):
    # The pieces' copy into the output costs more than two threads save on numpy.correlate's
    # fastest loops (float64, 1-2 taps): the whole line is one call, its result the output.
    from arrayconv._methods import _rows
    from arrayconv._runtime.rates import DEFAULT_RATES

    problem = ac.plan_correlate(np.ones(taps, dtype), (10**6,), "same", method="direct")._spec.problem
    pieces = _rows.line_pieces(problem, 1 << 20, 2, DEFAULT_RATES)
    assert (len(pieces) == 1) == whole
    assert len(_rows.line_pieces(problem, 1 << 20, 1, DEFAULT_RATES)) == 1  # one thread: never cut


def test_direct_row_form_pads_wide_where_the_lines_cannot_be_read_in_place():
    # Zero padding longer than the kernel, or periodic padding, is not what numpy.correlate's
    # 'full' mode supplies: those take the padded grid.
    from arrayconv._methods import _rows

    def problem(**options):  # type: ignore[no-untyped-def]
        return ac.plan_conv(np.ones((1, 1, 3)), (1, 1, 50), method="direct", **options)._spec.problem

    assert _rows.reads_lines(problem(padding=2))
    assert not _rows.reads_lines(problem(padding=3)), "padding past the kernel's reach"
    assert not _rows.reads_lines(problem(padding=1, padding_mode="circular")), "periodic padding"
    assert not _rows.reads_lines(ac.plan_conv(np.ones((1, 1, 3, 3)), (1, 1, 9, 9), method="direct")._spec.problem), "2-D"


@pytest.mark.parametrize(
    ("w_shape", "dtype", "options", "why"),
    [
        ((1, 1, 3, 12), "float32", {}, "rows longer than 11 taps"),
        ((1, 1, 3, 3), "complex64", {}, "complex data"),
        ((1, 1, 3, 3), "int64", {}, "integers"),
        ((1, 1, 3, 3), "float32", dict(stride=2), "strides"),
        ((1, 1, 3, 3), "float32", dict(dilation=(1, 2)), "dilated rows"),
        ((2, 2, 3, 3), "float32", {}, "several input channels"),
    ],
)
def test_direct_row_form_applies_only_where_numpy_correlate_does_the_rows(w_shape, dtype, options, why):
    from arrayconv._methods import _rows
    from arrayconv._runtime.backend import NUMPY

    plan = ac.plan_conv(np.ones(w_shape, dtype), (1, w_shape[1], 20, 30), method="direct", **options)
    assert not _rows.takes(plan._spec.problem, NUMPY), why
    assert not _sums_rows(plan._kernel), why


def _sums_rows(kernel):
    """Whether direct's prepared `kernel` sums kernel rows by numpy.correlate: the row form,
    chunked or on one map."""
    from arrayconv._methods import _one_map, _rows

    return isinstance(kernel, _rows.RowKernels) or isinstance(kernel, _one_map.MapKernel) and kernel.runner.width > 0


@pytest.mark.parametrize("calls", [1, 2])  # the second call of a plain one-map call skips the plan
@pytest.mark.parametrize(("side", "one_map"), [(64, True), (2000, False)])  # 2000: rows at 0.6x the taps' time
def test_direct_takes_the_row_form_for_small_kernels_and_keeps_nans_in_their_footprint(side, one_map, calls, rng, numpy_forms):
    from arrayconv._methods import _one_map

    x, k = random(rng, (side, side), "float64"), random(rng, (5, 5), "float64")
    kernel = ac.plan_correlate(k, x.shape, "same", "direct")._kernel
    assert _sums_rows(kernel) and isinstance(kernel, _one_map.MapKernel) == one_map
    x[[3, 40, 63], [0, 20, 63]] = np.nan
    for _ in range(calls):
        got = ac.correlate(x, k, "same", "direct")
    ref = scipy.signal.correlate(x, k, "same", method="direct")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    assert_matches(np.where(np.isnan(ref), 0, got), np.where(np.isnan(ref), 0, ref), dtype="float64")


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize(("length", "taps"), [(10**5, 5), (2000, 31)])
def test_direct_takes_1d_lines_in_place_for_short_kernels_and_keeps_nans_in_their_footprint(mode, length, taps, rng):
    # Short kernels on long signals, and longer kernels on short ones (past 11 taps numpy
    # takes a dot product per output sample; the banded GEMM wins from about 3000 samples).
    from arrayconv._methods import _rows

    x, k = random(rng, (length,), "float64"), random(rng, (taps,), "float64")
    plan = ac.plan_correlate(k, x.shape, mode, "direct")
    assert isinstance(plan._kernel, _rows.RowKernels) and _rows.reads_lines(plan._spec.problem)
    x[[0, 17, 18, length // 2, length - 1]] = np.nan
    x[length * 7 // 10] = np.inf
    got, ref = plan(x), scipy.signal.correlate(x, k, mode, method="direct")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    finite = np.isfinite(ref)
    assert_matches(np.where(finite, got, 0), np.where(finite, ref, 0), dtype="float64")


def test_direct_takes_the_banded_form_for_long_1d_kernels_and_keeps_nans_in_their_footprint(rng, numpy_forms):
    from arrayconv._methods import _banded

    x, k = random(rng, (20000,), "float64"), random(rng, (101,), "float64")
    assert isinstance(ac.plan_correlate(k, x.shape, "same", "direct")._kernel, _banded.BandedTaps)
    x[[10, 5000, 19990]] = np.nan
    got, ref = ac.correlate(x, k, "same", "direct"), scipy.signal.correlate(x, k, "same", method="direct")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    assert_matches(np.where(np.isnan(ref), 0, got), np.where(np.isnan(ref), 0, ref), dtype="float64")


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "options"),
    [
        ((2, 32, 5, 6), (33, 32, 1, 1), dict()),  # many channels, batch
        ((3, 8, 7, 9), (6, 4, 1, 1), dict(groups=2)),  # groups
        ((1, 5, 40), (1, 5, 1), dict()),  # 1-D, one output
        ((2, 3, 4, 5, 6), (2, 3, 1, 1, 1), dict(dilation=3)),  # 3-D; dilation moves no tap
        ((5, 16, 1, 1), (7, 16, 1, 1), dict()),  # one sample per map
        ((2, 6, 9, 10), (4, 3, 1, 1), dict(stride=2, groups=2)),  # every other sample, odd and even sides
        ((1, 4, 7, 5, 8), (3, 4, 1, 1, 1), dict(stride=(3, 1, 2), dilation=2)),  # 3-D, strides of 1-3
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128", "int32"])
@pytest.mark.parametrize("into_out", [False, True])
def test_direct_pointwise_form(x_shape, w_shape, options, dtype, into_out, rng):
    # 1x1 kernels over several channels run as one matmul (of the input's samples, every
    # stride-th along each axis) straight into the result.
    from arrayconv._methods import direct
    from arrayconv._runtime.backend import NUMPY
    from arrayconv._runtime.config import settings
    from arrayconv._runtime.rates import rates_for

    x, w = random(rng, x_shape, dtype), random(rng, w_shape, dtype)
    plan = ac.plan_conv(w, x.shape, method="direct", **options)
    assert direct._form(plan._spec.problem, NUMPY, rates_for(NUMPY), settings(NUMPY.name)) == ("pointwise", 0)
    out = np.full(plan.y_shape, 7, dtype=plan.y_dtype) if into_out else None
    got = plan(x, out=out)
    assert got is out or not into_out
    assert_matches(got, reference_conv(x, w, **options), dtype=dtype)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "options"),
    [
        ((2, 4, 5, 6), (3, 4, 1, 1), dict(padding=1)),  # padded
        ((2, 4, 5, 6), (3, 4, 1, 1), dict(padding=(0, 1), stride=2)),  # padded along one axis, strided
        ((2, 4, 5, 6), (4, 1, 1, 1), dict(groups=4)),  # one channel per group: a multiply
        ((2, 4, 5, 6), (3, 4, 1, 2), dict()),  # two taps
    ],
)
def test_direct_pointwise_form_only_for_unpadded_1x1_kernels_over_channels(x_shape, w_shape, options, rng):
    from arrayconv._methods import direct
    from arrayconv._runtime.backend import NUMPY
    from arrayconv._runtime.config import settings
    from arrayconv._runtime.rates import rates_for

    x, w = random(rng, x_shape, "float64"), random(rng, w_shape, "float64")
    plan = ac.plan_conv(w, x.shape, method="direct", **options)
    assert direct._form(plan._spec.problem, NUMPY, rates_for(NUMPY), settings(NUMPY.name))[0] != "pointwise"
    assert_matches(plan(x), reference_conv(x, w, **options), dtype="float64")


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_direct_chunks_on_worker_threads_reuse_their_buffers(workers, rng, monkeypatch):
    # Many chunks of elementwise taps run on the shared pool's threads, each summing into its
    # own scratch buffers; calls of two shapes, alternated, must not see each other's sums.
    from arrayconv._methods import direct

    monkeypatch.setattr(direct, "_CHUNK_BYTES", 1 << 10)  # one output row per chunk
    cases = [
        (random(rng, (2, 3, 30, 41), "float64"), random(rng, (3, 1, 4, 3), "float64"), dict(groups=3, padding=(2, 1))),
        (random(rng, (1, 1, 23, 64), "float32"), random(rng, (2, 1, 5, 5), "float32"), dict(padding="same")),
    ]
    with ac.config(workers=workers):
        for _ in range(2):
            for x, w, options in cases:
                assert_matches(ac.conv(x, w, method="direct", **options), reference_conv(x, w, **options), dtype=x.dtype.name)



@pytest.mark.parametrize(
    "pick",
    [
        lambda a: a[:, :, :5],  # padded rows (last axis contiguous): moved row by row
        lambda a: a[:, :, 1:6].transpose(1, 0, 2)[:3].transpose(1, 0, 2),  # rows of a transposed view
        lambda a: a[:, :, ::2],  # stepped samples: copied sample by sample
        lambda a: a[0, 0, 0],  # 0-d
    ],
)
def test_assign_rows_copies_every_sample(pick, rng):
    from arrayconv._methods._taps import assign_rows

    src = pick(random(rng, (4, 3, 10), "float32"))
    dst = np.full(src.shape, np.nan, np.float32)
    assign_rows(dst, src)
    np.testing.assert_array_equal(dst, src)


def test_plain_conv_calls_with_weights_seen_before_reuse_their_plan(rng, plans_made):
    """A plain conv call with the same weight and bias bytes, shapes and options as an earlier
    call reuses its plan: the same bits, every method, with and without `out`. Weights or a
    bias changed in place are new ones, and the kept plan keeps the values it was made with."""
    x, w, bias = random(rng, (2, 4, 20, 22), "float32"), random(rng, (6, 2, 3, 3), "float32"), random(rng, (6,), "float32")
    first = {m: ac.conv(x, w, bias, padding=1, groups=2, method=m) for m in METHODS}
    plans_made.clear()
    for method, expected in first.items():
        assert_matches(expected, reference_conv(x, w, bias, padding=1, groups=2), dtype="float32")
        np.testing.assert_array_equal(ac.conv(x, w, bias, padding=1, groups=2, method=method), expected)
        out = np.empty_like(expected)
        assert ac.conv(x, w, bias, padding=1, groups=2, method=method, out=out) is out
        np.testing.assert_array_equal(out, expected)
    assert plans_made == []
    others = [dict(w=w * 2), dict(bias=bias + 1), dict(bias=None), dict(stride=2), dict(padding_mode="circular")]
    for other in others:
        call = {"w": w, "bias": bias, "padding": 1, "groups": 2, **other}
        ac.conv(x, call.pop("w"), call.pop("bias"), **call)
    assert len(plans_made) == len(others)
    weights, shift = w.copy(), bias.copy()
    for method in METHODS:  # kept plans of these values, made from `weights` and `shift`
        ac.conv(x, weights, shift, padding=1, groups=2, method=method)
    weights *= 2
    shift += 1
    for method in METHODS:
        assert_matches(ac.conv(x, w, bias, padding=1, groups=2, method=method), reference_conv(x, w, bias, padding=1, groups=2), dtype="float32")
        assert_matches(ac.conv(x, weights, shift, padding=1, groups=2, method=method), reference_conv(x, weights, shift, padding=1, groups=2), dtype="float32")


@pytest.mark.parametrize(("x_shape", "w_shape"), [((1, 1, 300), (1, 1, 7)), ((6, 1, 120), (1, 1, 16)), ((1, 1, 24, 24), (1, 1, 3, 3))])
@pytest.mark.parametrize("with_bias", [False, True])
def test_plan_calls_of_one_direct_call_give_the_bits_of_every_step(x_shape, w_shape, with_bias, rng, numpy_forms):
    """A plan whose direct run is a single call (a line, lines laid end to end, one map)
    makes that call without its other steps, with `out` too (copied there): the bits of
    every step, the bias included."""
    x, w = random(rng, x_shape, "float64"), random(rng, w_shape, "float64")
    bias = random(rng, (1,), "float64") if with_bias else None
    plan = ac.plan_conv(w, x.shape, "float64", bias=bias, padding="same", method="direct")
    assert plan._single is not None
    got, out = plan(x), np.full(plan.y_shape, np.nan)
    assert plan(x, out=out) is out
    np.testing.assert_array_equal(got, out)
    np.testing.assert_array_equal(got, plan._call(x, np.empty_like(got)))  # every step
    assert_matches(got, reference_conv(x, w, bias, padding="same"), dtype="float64")


# (kernel side, channels in, channels out) that run by Winograd: 3x3 from 64 channels (32 with
# numba's transforms), 5x5 with numba's transforms from 32 to 64 channels in.
_WINOGRAD_LAYERS = [(3, 64, 64), (3, 64, 72), (3, 72, 80)]
if _compiled.available():
    _WINOGRAD_LAYERS += [(3, 32, 40), (5, 32, 32), (5, 32, 40), (5, 48, 64), (5, 64, 72)]


@settings(max_examples=examples(30), deadline=None)
@given(
    batch=st.integers(1, 5),  # from 4, small images share a chunk
    layer=st.sampled_from(_WINOGRAD_LAYERS),
    groups=st.sampled_from([1, 2]),
    # past the operator matrix's tiny images; from 20 a side, 3x3 kernels by F(4x4, 3x3) with numba
    size=st.tuples(st.integers(4, 13), st.integers(4, 13)) | st.tuples(st.integers(20, 27), st.integers(20, 27)),
    padding=st.tuples(st.integers(0, 4), st.integers(0, 4)),
    dtype=st.sampled_from(["float32", "float64"]),
    seed=st.integers(0, 2**16),
)
def test_layers_run_by_winograd_match_the_direct_sum(batch, layer, groups, size, padding, dtype, seed):
    # Odd and even outputs (cropped last tiles), padding, one or several chunks of tile rows.
    from arrayconv._methods import _winograd, im2col

    k, c, o = layer
    rng = np.random.default_rng(seed)
    x, w = random(rng, (batch, c * groups, size[0] + k - 1, size[1] + k - 1), dtype), random(rng, (o * groups, c, k, k), dtype)
    problem = ac.plan_conv(w, x.shape, groups=groups, method="im2col", padding=padding)._spec.problem
    assert isinstance(im2col.prepare(w, problem, ac._runtime.backend.NUMPY), _winograd.WinogradKernel)
    assert _winograd._tile(problem) == (4 if k == 3 and min(problem.out_spatial) >= 20 and _compiled.available() else 2)
    expected = reference_conv(x, w, groups=groups, padding=padding)
    assert_matches(ac.conv(x, w, groups=groups, method="im2col", padding=padding), expected, dtype=dtype)
    with ac.config(memory_limit=1 << 20):  # chunks of a tile row or two
        assert_matches(ac.conv(x, w, groups=groups, method="im2col", padding=padding), expected, dtype=dtype)


@settings(max_examples=examples(10), deadline=None)
@given(
    kernel=st.sampled_from([3, 5] if _compiled.available() else [3]),
    dilation=st.sampled_from([(2, 2), (2, 1), (1, 3), (3, 2)]),
    extra=st.tuples(st.integers(0, 3), st.integers(0, 3)),  # odd and even phases of unequal length
    padding=st.tuples(st.integers(0, 3), st.integers(0, 3)),
    batch=st.integers(1, 2),
    dtype=st.sampled_from(["float32", "float64"]),
    seed=st.integers(0, 2**16),
)
def test_dilated_layers_run_by_winograd_on_phases_match_the_direct_sum(kernel, dilation, extra, padding, batch, dtype, seed):
    # Each phase (outputs a dilation apart) is a plain layer of at least 28 outputs a side.
    from arrayconv._methods import _winograd, im2col

    (c, o) = (32, 40) if _compiled.available() else (64, 64)
    rng = np.random.default_rng(seed)
    shape = [28 * d + e + (kernel - 1) * d - 2 * p for d, e, p in zip(dilation, extra, padding)]  # the output 28 * d + e a side
    x, w = random(rng, (batch, c, *shape), dtype), random(rng, (o, c, kernel, kernel), dtype)
    problem = ac.plan_conv(w, x.shape, method="im2col", padding=padding, dilation=dilation)._spec.problem
    assert isinstance(im2col.prepare(w, problem, ac._runtime.backend.NUMPY), _winograd.WinogradKernel)
    expected = reference_conv(x, w, padding=padding, dilation=dilation)
    assert_matches(ac.conv(x, w, method="im2col", padding=padding, dilation=dilation), expected, dtype=dtype)
    with ac.config(memory_limit=1 << 20):  # chunks of a tile row or two
        assert_matches(ac.conv(x, w, method="im2col", padding=padding, dilation=dilation), expected, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("out_shape", [(10, 14), (9, 13)])
def test_winograds_compiled_transforms_give_numpys_bits(dtype, out_shape, rng):
    """numba's loops of F(2x2, 3x3)'s transforms sum each tile as NumPy's array calls do:
    the same bits, odd outputs cropped."""
    from arrayconv._methods import _winograd

    if not _compiled.available():
        pytest.skip("numba is not installed")
    loops = _winograd._compiled_transforms()
    rows, cols = -(-out_shape[0] // 2), -(-out_shape[1] // 2)
    grid = random(rng, (2, 3, 2 * rows + 2, 2 * cols + 2), dtype)
    v, expected_v = (np.full((4, 4, 2, 3, rows, cols), np.nan, dtype) for _ in range(2))
    loops.input_transform(grid, v)
    _winograd._input_transform(grid, expected_v, ac._runtime.backend.NUMPY)
    np.testing.assert_array_equal(v, expected_v)
    m = random(rng, (4, 4, 2, 5, rows, cols), dtype)
    out, expected = (np.full((2, 5, *out_shape), np.nan, dtype) for _ in range(2))
    loops.output_transform(m, out)
    _winograd._output_transform(m, expected, ac._runtime.backend.NUMPY)
    np.testing.assert_array_equal(out, expected)
    assert not np.isnan(out).any()


def test_a_plain_winograd_calls_estimate_holds_its_kernel_transform():
    """A plan pays Winograd's kernel transform once, a plain call each time it does not keep
    its plan: the one-call estimate is the later calls' plus the transform's time."""
    from arrayconv._methods import _winograd, im2col
    from arrayconv._runtime.rates import rates_for

    if not _compiled.available():
        pytest.skip("numba is not installed")
    w = np.ones((256, 256, 3, 3), np.float32)
    problem = ac.plan_conv(w, (1, 256, 28, 28), padding=1, method="im2col")._spec.problem
    cost = im2col.METHOD.cost(problem, ac._runtime.backend.NUMPY, rates_for(ac._runtime.backend.NUMPY), ac._runtime.config.settings("numpy"))
    assert cost.prepare_seconds == _winograd.prepare_seconds(problem, rates_for(ac._runtime.backend.NUMPY)) > 0
    assert cost.seconds > cost.prepare_seconds


@pytest.mark.parametrize("kernel", [3, 5])
def test_winograds_float32_kernel_transform_is_float64s_rounded(kernel, rng):
    """The float32 kernel transform (one float32 GEMM) stays within a few float32 steps of the
    float64 transform of the same taps, for each of the transforms."""
    from arrayconv._methods import _winograd

    if kernel == 5 and not _compiled.available():
        pytest.skip("numba is not installed")
    w = random(rng, (48, 40, kernel, kernel), "float32")
    for side in (7, 24) if kernel == 3 else (24,):  # 3x3: F(2x2, 3x3), then F(4x4, 3x3) where numba's transforms run it
        problems = [ac.plan_conv(w.astype(dtype), (1, 40, side, side), method="im2col")._spec.problem for dtype in (np.float32, np.float64)]
        got, expected = (_winograd.prepare(w.astype(p.dtype), p).taps for p in problems)
        assert got.dtype == np.float32 and expected.dtype == np.float64
        assert np.abs(got - expected).max() <= 1e-6 * np.abs(expected).max()


@settings(max_examples=examples(40), deadline=None)
@given(
    batch=st.integers(1, 3),
    groups=st.integers(1, 2),
    channels=st.integers(1, 3),
    size=st.tuples(st.integers(1, 12), st.integers(1, 12)),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    row_stride=st.integers(1, 3),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.tuples(st.integers(0, 3), st.integers(0, 3)),
    dtype=st.sampled_from(["float32", "float64"]),
    seed=st.integers(0, 2**16),
)
def test_im2cols_compiled_gather_at_stride_2_gives_numpys_columns(batch, groups, channels, size, kernel, row_stride, dilation, padding, dtype, seed):
    """numba's gather of the columns at a stride of 2 along the last axis, read from the input
    in place, gives the bits of NumPy's copy of the zero-padded chunk's view, for every
    chunk of output rows (its first row past 0 too)."""
    from arrayconv._methods import _gather, _taps

    if not _compiled.available():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(seed)
    extent = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
    shape = [max(n, e - 2 * pad) for n, e, pad in zip(size, extent, padding)]  # at least one output
    x = random(rng, (batch, groups * channels, *shape), dtype)
    w = random(rng, (2 * groups, channels, *kernel), dtype)
    p = ac.plan_conv(w, x.shape, groups=groups, stride=(row_stride, 2), dilation=dilation, padding=padding, method="im2col")._spec.problem
    assert _gather.applies(p)
    x5 = x.reshape(batch, groups, channels, *shape)
    lay, height = _taps.layout(p), p.out_spatial[0]
    for r0 in sorted({0, height // 2}):
        chunk = _taps.Chunk(0, batch, r0, height)
        shape_cols = (batch, groups, channels, *kernel, height - r0, p.out_spatial[1])
        expected, got = np.full(shape_cols, np.nan, dtype), np.full(shape_cols, np.nan, dtype)
        grid, at = _taps.chunk_input(None, x5, chunk, p, ac._runtime.backend.NUMPY)
        _taps.assign_rows(expected, np.moveaxis(lay.output_windows(grid, at, ac._runtime.backend.NUMPY), 4, 2))
        _gather.gather(x5, got, p, r0)
        np.testing.assert_array_equal(got, expected)
    assert_matches(ac.conv(x, w, groups=groups, stride=(row_stride, 2), dilation=dilation, padding=padding, method="im2col"),
                   reference_conv(x, w, groups=groups, stride=(row_stride, 2), dilation=dilation, padding=padding), dtype=dtype)
