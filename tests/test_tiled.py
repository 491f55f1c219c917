"""Overlap-save ('oa') and out-of-core filtering into memmaps, zarr, HDF5 and TIFF files."""

import re
import time
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.ndimage
import scipy.signal
from _reference import assert_matches, random

import arrayconv as ac

BOUNDARIES = ("constant", "wrap", "symmetric", "mirror", "edge")


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("options", [dict(), dict(axes=(1, 2)), dict(boundary="wrap")])
def test_oa_matches_reference_over_many_slabs(xp, mode, options, rng):
    x, k = random(rng, (3, 61, 40) if "axes" in options else (61, 40), "float64"), random(rng, (3, 7, 6) if "axes" in options else (7, 6), "float64")
    with ac.config(memory_limit=64 << 10):  # slabs of a few rows
        got = ac.correlate(xp.asarray(x), xp.asarray(k), mode, "oa", **options)
    expected = ac.correlate(x, k, mode, "direct", **options)
    assert_matches(got, expected.astype(np.float64), dtype="float64", backend=xp.__name__)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_oa_cuts_a_stack_of_frames_into_one_frame_per_slab(xp, workers, mode, rng):
    """Each output map reads one input map: on the CPU one frame per slab (its spectra stay
    in cache whatever the stack's length), several rows of slabs per frame, all of them on
    the workers; on a GPU, and for a filter bank that sums channels, the whole batch in each
    slab."""
    frames, k = random(rng, (4, 50, 33), "float64"), random(rng, (1, 6, 5), "float64")
    with ac.config(workers=workers, memory_limit=48 << 10):  # slabs of a few rows
        plan = ac.plan_correlate(xp.asarray(k), frames.shape, mode, "oa", axes=(1, 2))
        got = plan(xp.asarray(frames))
    block, _, one, _ = plan._kernel
    assert one.batch == (1 if xp is np else 4) and block[0] < plan._spec.problem.out_spatial[0], (block, one)
    expected = np.stack([scipy.signal.correlate(frame, k[0], mode) for frame in frames])
    assert_matches(got, expected, dtype="float64", backend=xp.__name__)
    bank = ac.plan_conv(random(rng, (4, 3, 5, 5), "float64"), (2, 3, 40, 40), method="oa")
    assert bank._kernel[2].batch == 2


@pytest.mark.parametrize("boundary", ["fill", "wrap"])
def test_fft_copies_no_input_and_no_result_it_need_not(monkeypatch, boundary, rng):
    """Slabs (and plain FFT calls) are extended periodically only where circular padding
    is not native to the transform, not because an equal problem is another object; and
    one chunk's result is its inverse transform's samples as they are (a view, as SciPy's)."""
    from arrayconv._methods import fft

    extended = []
    monkeypatch.setattr(fft, "extend", lambda *args: extended.append(args) or args[1])
    x, k = random(rng, (61, 37), "float64"), random(rng, (7, 6), "float64")  # 37: not a fast length
    with ac.config(memory_limit=64 << 10):  # slabs of a few rows
        plan = ac.plan_correlate(k, x.shape, "same", "oa", boundary=boundary)
        for _ in range(2):  # the second call finds the layouts of the first in the cache
            extended.clear()
            plan(x)
            assert not extended if boundary == "fill" else extended
    monkeypatch.undo()
    y = ac.correlate(x, k, "same", "fft")
    assert not y.flags.owndata
    assert_matches(y, scipy.signal.correlate(x, k, "same"), dtype="float64")


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_oa_runs_blocks_on_the_workers_within_the_budget(workers, rng):
    """On the CPU, `workers` blocks at a time (each with its own single-threaded FFT) when
    that many fit the memory budget, else one; the caller's budget reaches their threads."""
    from arrayconv._methods import overlap
    from arrayconv._runtime.backend import NUMPY
    from arrayconv._runtime.rates import rates_for

    x, k = random(rng, (2, 3, 600, 256), "float64"), random(rng, (4, 3, 9, 6), "float64")
    expected = ac.conv(x, k, padding=4, method="direct")
    problem = ac.plan_conv(k, x.shape, padding=4, method="oa")._spec.problem
    smallest = overlap._block_cost(problem, NUMPY, (1, 1), 1, rates_for(NUMPY)).temp_bytes
    assert overlap._most_threads(problem, NUMPY, (-(-problem.out_spatial[0] // 2), *problem.out_spatial[1:]), workers) == 1  # two slabs: one after the other
    for budget, most in ((64 << 20, workers), (smallest * 3 // 2, 1)):  # no two blocks fit together in the second
        with ac.config(workers=workers, memory_limit=budget):
            block, threads, _, _ = overlap.prepare(k, problem, NUMPY)
            got = ac.conv(x, k, padding=4, method="oa")
        assert overlap._block_count(problem, NUMPY, block) > 1  # several blocks
        assert threads == most, (budget, block, threads)
        assert_matches(got, expected, dtype="float64")


BLOCK_CASES = [  # x, w, conv options: strides, dilations, padding and groups along cut axes; 1-D to 3-D
    ((2, 4, 70, 160), (6, 2, 7, 6), dict(stride=(2, 3), dilation=(1, 2), padding=(3, 4), groups=2)),
    ((3, 2, 64, 57), (2, 2, 9, 8), dict(padding=(5, 3), padding_mode="circular", stride=(1, 2))),
    ((1, 1, 30, 26, 28), (2, 1, 5, 4, 6), dict(padding=2, padding_mode="circular")),
    ((2, 1, 33, 40, 29), (3, 1, 4, 5, 3), dict(padding=(1, 2, 0), dilation=(2, 1, 1), stride=(1, 1, 2))),
    ((2, 3, 400), (2, 3, 17), dict(padding=8, stride=3)),
]


@pytest.mark.parametrize(("x_shape", "w_shape", "options"), BLOCK_CASES)
def test_oa_cuts_every_axis_into_blocks_where_they_fit_and_slabs_do_not(xp, x_shape, w_shape, options, rng):
    """Under a budget that holds blocks of 8 outputs along every axis but no slab of whole
    rows, overlap-save cuts every spatial axis, and its blocks match the direct sum."""
    from arrayconv._methods import overlap
    from arrayconv._runtime.backend import get_backend
    from arrayconv._runtime.rates import rates_for

    x, w = random(rng, x_shape, "float64"), random(rng, w_shape, "float64")
    problem = ac.plan_conv(w, x.shape, method="oa", **options)._spec.problem
    backend = get_backend(w=xp.asarray(w))
    out = problem.out_spatial
    budget = overlap._block_cost(problem, backend, tuple(min(8, n) for n in out), 1, rates_for(backend)).temp_bytes
    if len(out) > 1:
        assert overlap._block_cost(problem, backend, (1, *out[1:]), 1, rates_for(backend)).temp_bytes > budget
    with ac.config(memory_limit=budget):
        plan = ac.plan_conv(xp.asarray(w), x.shape, method="oa", **options)
        got = plan(xp.asarray(x))
    block = plan._kernel[0]
    assert overlap.cut_axes(problem, block) == list(range(len(out))), block
    assert_matches(got, ac.conv(x, w, method="direct", **options), dtype="float64", backend=xp.__name__)


def test_in_memory_filters_that_fit_no_whole_fft_stay_within_the_budget(rng):
    """512x512 with 63x63 in 256 KiB: a method within the budget (overlap-save in blocks, or
    direct's compiled loops reading the input in place), where overlap-save's one-row slabs
    once ran past it (with a warning that no method fits) in 14x the time."""
    x, k = random(rng, (512, 512), "float32"), random(rng, (63, 63), "float32")
    budget = 256 << 10
    with ac.config(memory_limit=budget), warnings.catch_warnings():
        warnings.simplefilter("error")  # no MemoryLimitWarning
        choice = ac.choose_method(x, k, mode="same")
        ac.correlate(x, k, "same")  # imports and caches, not the call's own memory
        tracemalloc.start()
        try:
            got = ac.correlate(x, k, "same")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert choice.method not in choice.rejected and choice.estimates[choice.method].temp_bytes <= budget, choice
    assert peak - got.nbytes < budget, f"{(peak - got.nbytes) / 2**10:.0f} KiB beside the result"
    reference = scipy.signal.correlate(x.astype(np.float64), k.astype(np.float64), "same", method="fft")
    assert_matches(got, reference, dtype="float32")


def test_oa_estimate_counts_its_slab_threads_and_choices_are_cached_per_worker_count():
    with ac.config(workers=1):
        alone = ac.choose_method((1920, 1920), (30, 30), mode="valid", dtype="float32")
    with ac.config(workers=2):
        shared = ac.choose_method((1920, 1920), (30, 30), mode="valid", dtype="float32")
    assert shared.estimates["oa"].seconds < alone.estimates["oa"].seconds


def test_oa_weighs_its_blocks_once_per_problem_budget_and_worker_count(monkeypatch, rng):
    from arrayconv._methods import overlap

    weighed = []
    real = overlap._weigh_blocks
    monkeypatch.setattr(overlap, "_weigh_blocks", lambda *args: weighed.append(args[2]) or real(*args))
    ac.clear_caches()
    x, k = random(rng, (300, 200), "float32"), random(rng, (9, 9), "float32")
    expected = scipy.signal.correlate(x.astype(np.float64), k.astype(np.float64), "same")
    for budget, workers in ((1 << 30, 2), (1 << 30, 2), (300_000, 2), (300_000, 1), (1 << 30, 2)):
        with ac.config(memory_limit=budget, workers=workers):
            assert_matches(ac.correlate(x, k, "same", method="oa"), expected, dtype="float32")
    assert [(s.budget, s.workers) for s in weighed] == [(1 << 30, 2), (300_000, 2), (300_000, 1)]  # a new budget or worker count weighs again
    assert ac.cache_info()["oa_block_plans"].size == 3


def test_auto_takes_oa_when_the_whole_fft_does_not_fit(rng):
    x, k = random(rng, (1024, 1024), "float32"), random(rng, (41, 41), "float32")
    with ac.config(memory_limit=4 << 20):
        choice = ac.choose_method(x, k, mode="same")
        got = ac.correlate(x, k, "same")
    assert choice.method == "oa", choice
    assert "fft" in choice.rejected
    reference = scipy.signal.correlate(x.astype(np.float64), k.astype(np.float64), "same", method="fft")
    assert_matches(got, reference, dtype="float32")


def filter_within(budget, image, kernel, out):
    """`correlate_into` with `memory_limit=budget`, asserting that the peak of the memory
    Python traces stays under the budget plus a stated constant of 2 MiB."""
    tracemalloc.start()
    try:
        ac.correlate_into(image, kernel, out, memory_limit=budget, progress=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < budget + (2 << 20), f"peak {peak / 2**20:.1f} MiB"


def test_memmap_larger_than_the_budget_63x63(tmp_path, rng):
    """A 16 MiB memmap through an 8 MiB budget: the in-memory result, with bounded peak memory."""
    shape, budget = (2048, 2048), 8 << 20
    image = np.memmap(tmp_path / "in.dat", np.float32, "w+", shape=shape)
    image[:] = rng.standard_normal(shape, dtype=np.float32)
    psf = rng.standard_normal((63, 63), dtype=np.float32)
    out = np.memmap(tmp_path / "out.dat", np.float32, "w+", shape=shape)
    filter_within(budget, image, psf, out)
    expected = ac.correlate(np.asarray(image), psf, "same")
    assert_matches(np.asarray(out), expected.astype(np.float64), dtype="float32")


class _Writes(np.ndarray):
    """An output that records the index of each write."""

    def __setitem__(self, index, value):
        self.writes.append(index)
        super().__setitem__(index, value)


@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize(
    "x_shape, k_shape, budget, axes",
    [
        ((3, 300, 200), (1, 9, 6), 1_000_000, 2),  # planes of 240 KB: five in flight need 1.2 MB
        ((12, 60, 50), (5, 7, 4), 100_000, 3),  # a 3-D kernel on planes of 12 KB: five boxes of 5 planes need 300 KB
        ((3, 300, 200), (1, 9, 6), 20_000, 3),  # rows of 800 bytes: five boxes of 9 rows need 36 KB
        ((6, 5000), (3, 25), 20_000, 2),  # rows of 20 KB
    ],
)
def test_tiles_cut_as_many_axes_as_the_budget_needs(xp, boundary, mode, x_shape, k_shape, budget, axes, rng):
    """Slabs were cut along the first axis only, so a budget that could not hold five
    slabs of a kernel's length in whole rows was refused: the planes of a volume with a
    3-D kernel, wide rows (a stack of planes with a 2-D kernel had its own path). Tiles
    now cut the first two axes, or three, as the budget and the cost estimate decide."""
    x, k = random(rng, x_shape, "float32"), random(rng, k_shape, "float32")
    expected = ac.correlate(x.astype(np.float64), k.astype(np.float64), mode, "direct", boundary=boundary)
    out = np.zeros(expected.shape, np.float32).view(_Writes)
    out.writes = []
    ac.correlate_into(x, xp.asarray(k), out, mode, boundary=boundary, memory_limit=budget, progress=False)
    assert_matches(np.asarray(out), expected, dtype="float32")
    assert {len(index) for index in out.writes} == {axes}, out.writes[:3]
    x[2, 100 % x.shape[1]] = np.nan
    out[...] = 0
    with pytest.raises(ValueError, match="`in1` contains NaN and nan='raise'"):  # every tile read before one is written
        ac.correlate_into(x, xp.asarray(k), out, mode, nan="raise", memory_limit=budget, progress=False)
    x[2, 100 % x.shape[1]], k[(0,) * k.ndim] = 0.5, np.nan
    with pytest.raises(ValueError, match="`in2` contains NaN and nan='raise'"):  # the kernel too, before any tile
        ac.correlate_into(x, xp.asarray(k), out, mode, nan="raise", memory_limit=budget, progress=False)
    assert not np.asarray(out).any()


@pytest.mark.parametrize("k_shape", [(1, 9, 6), (5, 9, 6)])
def test_a_volume_of_large_planes_stays_within_the_budget(tmp_path, k_shape, rng):
    """Planes of 3 MB in an 8 MiB budget: five slabs of whole planes in flight would take
    15 MB with a 2-D kernel, 75 MB with a kernel 5 planes deep."""
    shape, budget = (6, 1000, 750), 8 << 20
    x = np.memmap(tmp_path / "volume.dat", np.float32, "w+", shape=shape)
    x[:] = random(rng, shape, "float32")
    k = random(rng, k_shape, "float32")
    out = np.memmap(tmp_path / "out.dat", np.float32, "w+", shape=shape)
    filter_within(budget, x, k, out)
    expected = scipy.signal.correlate(np.asarray(x[:, :, 200:300], np.float64), k.astype(np.float64), "same")
    assert_matches(np.asarray(out[:, 4:-4, 203:297]), expected[:, 4:-4, 3:-3], dtype="float32")


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("flip", [False, True])
def test_every_boundary_across_slabs(xp, boundary, mode, flip, rng):
    """Slabs read on the host; with a CuPy kernel each is filtered on the GPU."""
    x, k = random(rng, (50, 9, 7), "float64"), random(rng, (8, 3, 4), "float64")
    x[20, 4, 3] = np.nan
    func, into = (ac.convolve, ac.convolve_into) if flip else (ac.correlate, ac.correlate_into)
    expected = func(x, k, mode, "direct", boundary=boundary, fillvalue=0.5)
    out = np.full(expected.shape, -1.0)
    into(x, xp.asarray(k), out, mode, boundary=boundary, fillvalue=0.5, memory_limit=100_000, progress=False)  # slabs of 2-3 rows
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    assert_matches(np.nan_to_num(out), np.nan_to_num(expected), dtype="float64")


@pytest.mark.parametrize(
    "x_dtype, k_dtype, options",
    [
        ("float64", "float64", dict(nan="fill", fillvalue=2.5)),  # NaNs became 0, not 2.5
        ("int16", "float64", dict(fillvalue=0.5)),  # the fill read 0 in the int16 slabs
        ("float32", "float64", dict(fillvalue=0.211, nan="fill")),  # rounded to float32
    ],
)
def test_fillvalue_across_slabs_as_in_memory(xp, x_dtype, k_dtype, options, rng):
    x, k = random(rng, (40, 9), x_dtype), random(rng, (5, 3), k_dtype)
    if x.dtype.kind == "f":
        x[[3, 20, 38], [0, 4, 8]] = np.nan
    expected = ac.correlate(x, k, "full", "direct", **options)
    out = np.full(expected.shape, -1.0)
    ac.correlate_into(x, xp.asarray(k), out, "full", **options, memory_limit=4_000, progress=False)
    assert_matches(out, expected, dtype="float64")


def test_big_endian_float32_image_across_slabs(xp, tmp_path, rng):
    """A big-endian file (FITS data are): on the GPU its slabs are read into native-order
    pinned buffers."""
    data = random(rng, (90, 33), "float32")
    image = np.memmap(tmp_path / "in.dat", ">f4", "w+", shape=data.shape)
    image[:] = data
    k = random(rng, (6, 5), "float32")
    out = np.full(data.shape, np.nan, np.float32)
    ac.correlate_into(image, xp.asarray(k), out, boundary="wrap", memory_limit=16_000, progress=False)
    assert_matches(out, ac.correlate(data.astype(np.float64), k.astype(np.float64), "same", boundary="wrap"), dtype="float32")


def test_zarr_in_and_out(rng):
    zarr = pytest.importorskip("zarr")
    data = random(rng, (300, 200), "float32")
    source = zarr.create_array(store={}, shape=data.shape, chunks=(64, 64), dtype="float32")
    source[:] = data
    target = zarr.create_array(store={}, shape=data.shape, chunks=(64, 64), dtype="float32")
    k = random(rng, (15, 15), "float32")
    ac.correlate_into(source, k, target, boundary="symm", memory_limit=256 << 10, progress=False)
    assert_matches(target[:], ac.correlate(data, k, "same", boundary="symm").astype(np.float64), dtype="float32")


def test_h5py_in_and_out_and_a_stack_in_tiles(tmp_path, rng):
    """HDF5 datasets, as the docs say: a 2-D image, and a stack whose planes the budget
    cannot hold, in tiles (``dataset[i:j, a:b, c:d]``)."""
    h5py = pytest.importorskip("h5py")
    image, stack = random(rng, (300, 200), "float32"), random(rng, (3, 300, 200), "float32")
    k = random(rng, (9, 7), "float32")
    with h5py.File(tmp_path / "data.h5", "w") as file:
        source = file.create_dataset("image", data=image, chunks=(50, 200))
        target = file.create_dataset("result", shape=image.shape, dtype="float32")
        ac.correlate_into(source, k, target, boundary="wrap", memory_limit=200_000, progress=False)
        expected = scipy.ndimage.correlate(image.astype(np.float64), k.astype(np.float64), mode="wrap")
        assert_matches(target[:], expected, dtype="float32")
        source = file.create_dataset("stack", data=stack)
        target = file.create_dataset("stack_result", shape=stack.shape, dtype="float32")
        ac.correlate_into(source, k[None], target, memory_limit=400_000, progress=False)  # planes of 240 KB
        expected = scipy.ndimage.correlate(stack.astype(np.float64), k[None].astype(np.float64), mode="constant")
        assert_matches(target[:], expected, dtype="float32")


def test_tiff_in_and_out(tmp_path, rng):
    tifffile = pytest.importorskip("tifffile")
    data = random(rng, (256, 300), "float32")
    tifffile.imwrite(tmp_path / "in.tif", data)
    source = tifffile.memmap(tmp_path / "in.tif")
    target = tifffile.memmap(tmp_path / "out.tif", shape=data.shape, dtype="float32")
    k = random(rng, (9, 9), "float32")
    ac.convolve_into(source, k, target, memory_limit=256 << 10, progress=False)
    target.flush()
    assert_matches(tifffile.imread(tmp_path / "out.tif"), ac.convolve(data, k, "same").astype(np.float64), dtype="float32")


class _FailingSource:
    """An image whose rows from `bad` on cannot be read (a disk error, say)."""

    def __init__(self, data, bad):
        self.data, self.bad, self.shape, self.dtype = data, bad, data.shape, data.dtype

    def __getitem__(self, rows):
        if rows.stop > self.bad:
            raise OSError(f"cannot read rows {rows.start}:{rows.stop}")
        return self.data[rows]


def test_a_read_error_in_the_io_thread_reaches_the_caller(rng):
    x, k = random(rng, (60, 20), "float64"), random(rng, (5, 5), "float64")
    out = np.zeros((60, 20))
    with pytest.raises(OSError, match="cannot read rows"):
        ac.correlate_into(_FailingSource(x, bad=40), k, out, memory_limit=20_000, progress=False)
    done = np.flatnonzero(out.any(axis=1))
    assert done.size and done.max() < 40  # the slabs before the bad rows were written


def test_slabs_are_written_one_at_a_time_in_order(rng):
    x, k = random(rng, (60, 20), "float64"), random(rng, (5, 5), "float64")
    writes, busy = [], []

    class Recorder(np.ndarray):
        def __setitem__(self, rows, value):
            assert not busy, "two slab writes at once"
            busy.append(rows)
            time.sleep(0.005)  # a slow disk: a second writer would arrive meanwhile
            writes.append(rows)
            super().__setitem__(rows, value)
            busy.pop()

    out = np.zeros((60, 20)).view(Recorder)
    ac.correlate_into(x, k, out, memory_limit=20_000, progress=False)
    assert len(writes) > 3 and [w.start for w in writes] == sorted(w.start for w in writes)
    assert_matches(np.asarray(out), ac.correlate(x, k, "same"), dtype="float64")


def test_progress_bar_reports_every_row_or_tile(capsys, rng):
    pytest.importorskip("tqdm")
    x, k = random(rng, (40, 30), "float64"), random(rng, (5, 5), "float64")
    ac.correlate_into(x, k, np.empty((40, 30)), memory_limit=100_000, progress=True)
    assert "40/40 [" in capsys.readouterr().err  # slabs of whole rows
    ac.correlate_into(x, k, np.empty((40, 30)), memory_limit=10_000, progress=True)
    assert re.search(r"(\d+)/\1 \[.*tile", capsys.readouterr().err)  # tiles cut along both axes


@pytest.mark.parametrize(
    "out_shape, out_dtype, k_shape, mode, match",
    [
        ((40, 31), "float64", (5, 5), "same", r"`out` must have shape \(40, 30\) and dtype float64"),
        ((40, 30), "float32", (5, 5), "same", r"`out` must have shape \(40, 30\) and dtype float64, got .* float32"),
        ((40, 30), "float64", (5,), "same", r"`in1` and `in2` must have the same ndim"),
        ((1, 1), "float64", (50, 5), "valid", r"mode 'valid' needs"),
    ],
)
def test_errors(out_shape, out_dtype, k_shape, mode, match, rng):
    x, out = random(rng, (40, 30), "float64"), np.zeros(out_shape, out_dtype)
    with pytest.raises(ValueError, match=match):
        ac.correlate_into(x, random(rng, k_shape, "float64"), out, mode, progress=False)
    assert not out.any()


@pytest.mark.parametrize(
    "x_shape, x_dtype, k_shape, error, match",
    [
        ((0, 30), "float64", (5, 5), ValueError, r"`in1` must not be empty, got shape \(0, 30\)"),
        ((40, 0), "float64", (5, 5), ValueError, r"`in1` must not be empty, got shape \(40, 0\)"),
        ((40, 30), "float64", (5, 0), ValueError, r"`in2` must not be empty, got shape \(5, 0\)"),
        ((40, 30), "bool", (5, 5), TypeError, r"`in1` must have an integer, float or complex dtype, got bool"),
    ],
)
def test_empty_or_boolean_inputs_are_refused_as_by_correlate(x_shape, x_dtype, k_shape, error, match, rng):
    """An empty image once wrote nothing ('full') or failed with an IndexError ('same')."""
    x, k = random(rng, x_shape, "float64").astype(x_dtype), random(rng, k_shape, "float64")
    out = np.zeros([n + m - 1 for n, m in zip(x_shape, k_shape)])
    with pytest.raises(error, match=match):
        ac.correlate_into(x, k, out, "full", progress=False)
    with pytest.raises(error, match=match):
        ac.correlate(x, k, "full")
    assert not out.any()


def test_out_over_the_image_or_kernel_and_bad_budgets_are_refused(tmp_path, rng):
    """Filtering in place once wrote slabs over rows still to be read: with 'wrap' the last
    slab read the first rows' results (errors of 1e7)."""
    x, k = random(rng, (40, 30), "float64"), random(rng, (5, 5), "float64")
    kept = x.copy()
    for out in (x, x[:, :], x.view(np.memmap)):
        with pytest.raises(ValueError, match="`out` must not overlap the input `in1`"):
            ac.correlate_into(x, k, out, boundary="wrap", memory_limit=5000, progress=False)
    with pytest.raises(ValueError, match="`out` must not overlap the input `in2`"):
        ac.correlate_into(random(rng, (5, 5), "float64"), k, k, progress=False)
    for limit in (0, -5, 1e6, True, "1GB"):
        with pytest.raises(ValueError, match=f"`memory_limit` must be a positive int, got {limit!r}"):
            ac.correlate_into(x, k, np.zeros_like(x), memory_limit=limit, progress=False)
    np.testing.assert_array_equal(x, kept)


def test_big_endian_image_and_out_as_in_a_fits_file(xp, rng):
    """FITS stores big-endian data: `out` of dtype >f4 was refused for a float32 result.
    The slabs are read into native order (CuPy takes no other)."""
    x, k = random(rng, (90, 60), "float32").astype(">f4"), random(rng, (6, 5), "float32")
    out = np.zeros((90, 60), ">f4")
    ac.correlate_into(x, xp.asarray(k), out, "same", boundary="symm", memory_limit=30_000, progress=False)
    ref = scipy.ndimage.correlate(x.astype(np.float64), k.astype(np.float64), mode="reflect")
    assert_matches(out.astype(np.float32), ref, dtype="float32")
    with pytest.raises(ValueError, match=r"`out` must have shape \(90, 60\) and dtype float32, got shape \(90, 60\) and dtype >f8"):
        ac.correlate_into(x, k, np.zeros((90, 60), ">f8"), "same", progress=False)


def test_nan_raise_reads_every_row_before_writing_one(xp, rng):
    """A NaN in a later slab raised after the slabs before it were written (34500 of 40000
    outputs here)."""
    x, k = random(rng, (400, 100), "float64"), random(rng, (3, 3), "float64")
    x[350, 5] = np.nan
    out = np.zeros_like(x)
    with pytest.raises(ValueError, match="`in1` contains NaN and nan='raise'"):
        ac.correlate_into(x, xp.asarray(k), out, nan="raise", memory_limit=50_000, progress=False)
    assert not out.any()
    x[350, 5] = 0.5
    got = ac.convolve_into(x, xp.asarray(k), out, nan="raise", memory_limit=50_000, progress=False)
    assert_matches(got, scipy.signal.convolve(x, k, "same"), dtype="float64")


def test_two_mappings_of_one_file_are_one_array(tmp_path, rng):
    """`np.load(path, mmap_mode=...)` twice gives two mappings at different addresses, which
    ``may_share_memory`` took to be apart: filtering a file into itself with 'wrap' gave
    errors of 4.9 (relative to max|ref|), the last slab reading rows already written."""
    path = tmp_path / "image.npy"
    x, k = random(rng, (60, 40), "float32"), random(rng, (5, 5), "float32")
    np.save(path, x)
    image, out = np.load(path, mmap_mode="r"), np.load(path, mmap_mode="r+")
    for view in (out, out[10:20], out[:, ::3].T, np.asarray(out[::-1])):
        assert ac._spec.problem.overlaps(view, image, ac._runtime.backend.NUMPY)
    with pytest.raises(ValueError, match="`out` must not overlap the input `in1`"):
        ac.correlate_into(image, k, out, "same", boundary="wrap", memory_limit=20_000, progress=False)
    with pytest.raises(ValueError, match="`out` must not overlap the input `in1`"):
        ac.correlate(image, k, "same", out=out)
    with pytest.raises(ValueError, match="`out` must not overlap the input `x`"):
        ac.conv(image[None, None], k[None, None], padding=2, out=out[None, None])
    with pytest.raises(ValueError, match="`out` must not overlap the input"):
        ac.plan_correlate(k, image.shape, "same")(image, out=out)
    np.testing.assert_array_equal(np.load(path), x)
    rows = np.memmap(tmp_path / "rows.raw", np.float32, "w+", shape=(20, 40))  # two arrays in one file
    rows[:] = random(rng, (20, 40), "float32")
    first, second = np.memmap(rows.filename, np.float32, "r+", shape=(10, 40)), rows[10:]
    assert not ac._spec.problem.overlaps(first, second, ac._runtime.backend.NUMPY)
    assert ac._spec.problem.overlaps(first, rows[9:], ac._runtime.backend.NUMPY)
    ac.correlate_into(first, k[:3], second, "same", progress=False)
    ref = scipy.signal.correlate(np.asarray(first, np.float64), k[:3].astype(np.float64), "same")
    assert_matches(np.asarray(second), ref, dtype="float32")


def test_out_that_is_no_array_or_read_only_and_an_unknown_method_are_refused(tmp_path, rng):
    """`out=None` (or a list) was an AttributeError, a read-only memmap NumPy's "assignment
    destination is read-only" at the first write, and `method='fast'` a KeyError."""
    x, k = random(rng, (40, 30), "float64"), random(rng, (5, 5), "float64")
    np.save(tmp_path / "out.npy", np.zeros((40, 30)))
    for out, error, match in [
        (None, TypeError, "`out` must be an array with shape, dtype and slice assignment .* got NoneType"),
        (np.zeros((40, 30)).tolist(), TypeError, "got list"),
        (np.load(tmp_path / "out.npy", mmap_mode="r"), ValueError, "`out` must be writeable, got a read-only array"),
    ]:
        with pytest.raises(error, match=match):
            ac.correlate_into(_Unread(x), k, out, progress=False)
    with pytest.raises(ValueError, match="`method` must be one of .*, got 'fast'"):
        ac.correlate_into(_Unread(x), k, np.zeros((40, 30)), method="fast", progress=False)


def test_a_zarr_or_hdf5_dataset_into_itself_is_refused(tmp_path, rng):
    """Only NumPy arrays were checked for overlap: filtering a zarr array into itself gave
    errors of 2.1 (relative to max|ref|), tiles reading samples already written. The same
    object, or a second handle on the same dataset, is refused before any read; another
    dataset in the same store or file is not."""
    zarr, h5py = pytest.importorskip("zarr"), pytest.importorskip("h5py")
    x, k = random(rng, (60, 50), "float64"), random(rng, (5, 5), "float64")
    group = zarr.open_group(str(tmp_path / "data.zarr"), mode="w")
    image = group.create_array("image", shape=x.shape, chunks=(20, 20), dtype="float64")
    image[:] = x
    file = h5py.File(tmp_path / "data.h5", "w")
    dataset = file.create_dataset("image", data=x)
    second_handles = (zarr.open(str(tmp_path / "data.zarr"), mode="r+", path="image"), file["image"])
    for source, target in ((image, image), (image, second_handles[0]), (dataset, dataset), (dataset, second_handles[1])):
        with pytest.raises(ValueError, match="`out` must not overlap the input `in1`"):
            ac.correlate_into(source, k, target, memory_limit=20_000, progress=False)
        np.testing.assert_array_equal(target[:], x)
    expected = scipy.signal.correlate(x, k, "same")
    others = (group.create_array("result", shape=x.shape, dtype="float64"), file.create_dataset("result", shape=x.shape, dtype="float64"))
    for source, target in zip((image, dataset), others):
        ac.correlate_into(source, k, target, memory_limit=20_000, progress=False)
        assert_matches(target[:], expected, dtype="float64")
    file.close()


@pytest.mark.parametrize("pad_mode, halo", [("symmetric", [2, 1, 0]), ("reflect", [3, 2, 1]), ("edge", [0, 0, 0])])
def test_a_box_past_a_reflecting_edge_gathers_only_its_halo(pad_mode, halo):
    """A tile at the image's edge with 'symm' (or 'mirror', 'nearest') read every sample of
    its box through index arrays, as its source indices are not in order (106 ms for a
    4090x4102 box, against 8 ms for a copy): the stretch in order is now one slice."""
    from arrayconv._api.tiled import _placements
    from arrayconv._spec.boundary import source_index

    index = source_index(np.arange(-3, 10), 10, pad_mode)
    (into, source), (halo_into, halo_from) = _placements(index, 0, 10)
    assert (into, source) == (slice(3, 13), slice(0, 10))
    assert halo_into.tolist() == [0, 1, 2] and halo_from.tolist() == halo


@pytest.mark.parametrize("method", ["fft", "im2col", "oa", "direct"])
def test_a_method_named_gets_slabs_it_can_filter(method, rng):
    """Slabs were sized by their share of the budget alone, and the filter got what they
    left: FFT's spectra outgrow a slab, so method='fft' failed on the first slab at any
    budget smaller than the whole problem ("over memory_limit=75040" at 200 KB for a
    200x60 image), and im2col below 400 KB. A method named now gets slabs as large as it
    can filter within the budget."""
    x, k = random(rng, (200, 60), "float64"), random(rng, (12, 12), "float64")
    out = np.full(x.shape, np.nan)
    ac.correlate_into(x, k, out, method=method, memory_limit=200_000, progress=False)
    assert_matches(out, ac.correlate(x, k, "same"), dtype="float64")


def test_budgets_too_small_for_the_tiles_or_the_method_are_refused_before_any_read(rng, numpy_forms):
    """A budget that cannot hold the tiles in flight with one output sample each once ran
    over it silently (memory_limit=100 filtered 40x40 with 12x12 in slabs of 9 KB); a
    method named that cannot filter even those within what they leave once failed on the
    first slab with "over memory_limit=1" (the share left to the filter) and advice to use
    arrayconv.config; with 'auto', where no method could, it ran over the budget."""
    x, k = random(rng, (40, 40), "float64"), random(rng, (12, 12), "float64")
    out = np.full((40, 40), -1.0)
    for limit in (100, 5759):  # the boxes in flight need 5 x 12 x 12 float64 samples
        with pytest.raises(ValueError, match=rf"`memory_limit`={limit} cannot hold the tiles in flight: even with one output sample each they need 5760 bytes"):
            ac.correlate_into(_Unread(x), k, out, memory_limit=limit, progress=False)
    for method, limit, reason in (("fft", 11_000, "its spectra need"), ("oa", 12_000, "even blocks of one output sample need"), ("auto", 6_900, "'im2col', the method with the smallest temporaries: the padded input under one output row and one row of columns need 1152 bytes")):
        which = "no method can" if method == "auto" else f"method '{method}' cannot"
        match = (
            rf"{which} filter the tiles within `memory_limit`={limit}, even tiles of one output sample: "
            rf"their boxes in flight leave {limit - 5760} bytes to filter each one, and {reason}"
        )
        with pytest.raises(ValueError, match=match):
            ac.correlate_into(_Unread(x), k, out, method=method, memory_limit=limit, progress=False)
    assert (out == -1).all()
    ac.correlate_into(x, k, out, memory_limit=7_100, progress=False)  # im2col fits in what tiles of one sample leave
    assert_matches(out, ac.correlate(x, k, "same"), dtype="float64")


class _Unread:
    """An array-like whose slabs must not be read."""

    def __init__(self, data):
        self.shape, self.dtype = data.shape, data.dtype

    def __getitem__(self, rows):
        raise AssertionError("a slab was read")


class _SlabsOnly:
    """An array-like that reads and writes slabs, and refuses to be read whole (a zarr
    array larger than memory)."""

    def __init__(self, data):
        self.data, self.shape, self.dtype = data, data.shape, data.dtype

    def __getitem__(self, rows):
        return self.data[rows]

    def __setitem__(self, rows, value):
        self.data[rows] = value

    def __array__(self, *args, **kwargs):
        raise AssertionError("read whole")


def test_image_and_out_of_one_array_like_kind_are_never_read_whole(rng):
    """The overlap check looks at NumPy arrays only: it once handed two zarr arrays to
    numpy.may_share_memory, which reads both whole."""
    x, k = random(rng, (40, 30), "float64"), random(rng, (5, 4), "float64")
    out = _SlabsOnly(np.zeros_like(x))
    ac.correlate_into(_SlabsOnly(x), k, out, memory_limit=20_000, progress=False)
    assert_matches(out.data, ac.correlate(x, k, "same"), dtype="float64")


def test_a_nested_list_image_or_kernel_is_taken_as_an_array(rng):
    x, k = random(rng, (40, 30), "float64"), random(rng, (5, 4), "float64")
    out = np.empty_like(x)
    ac.correlate_into(x.tolist(), k.tolist(), out, memory_limit=20_000, progress=False)
    assert_matches(out, ac.correlate(x, k, "same"), dtype="float64")


@pytest.mark.parametrize("boundary", ["fill", "symm"])
def test_gpu_slab_copies_wait_for_each_late_copy(monkeypatch, boundary, rng):
    """The GPU's slab loop (pinned buffers, a copy stream, downloads that do not block) on a
    stand-in for CuPy whose copies land 3 ms late and whose device buffers start as NaN:
    the filter waits for its upload, and each write for its download (either wait left out
    fails this test). The filter runs on the host here, so the waits that guard work still
    queued on a device cannot fail it: the I/O thread's before it refills a pinned buffer
    (the filter has waited for that upload already), and the first upload's for the
    caller's stream. The budget cuts tiles of 12x16 and 12x14 (the last column): the
    narrower ones take the first bytes of each buffer in their own shape. A GPU runs this
    loop in the `xp` tests above."""
    import _fake_cupy

    from arrayconv._api import tiled as _tiled
    from arrayconv._runtime.slab_copies import PinnedCopies

    monkeypatch.setattr(_tiled, "slab_copies", lambda backend, *shapes: PinnedCopies(_fake_cupy.cupy, *shapes))
    _fake_cupy.calls.update(uploads=0, downloads=0, pinned=0)
    x, k = random(rng, (120, 30), "float64"), random(rng, (5, 4), "float64")
    out = np.full((120, 30), -1.0)
    ac.correlate_into(x, k, out, boundary=boundary, memory_limit=20_000, progress=False)
    assert _fake_cupy.calls["uploads"] == 20, _fake_cupy.calls
    assert _fake_cupy.calls["downloads"] == _fake_cupy.calls["uploads"] and _fake_cupy.calls["pinned"] == 4
    assert_matches(out, ac.correlate(x, k, "same", boundary=boundary), dtype="float64")
