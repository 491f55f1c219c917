"""What only the GPU path has: no host round trip, cuFFT plan reuse, full FP32, CUDA kernels."""

import dataclasses
import re
import warnings

import numpy as np
import pytest
from _reference import assert_matches, random, reference_conv, reference_correlate

import arrayconv as ac

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cp():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    if not cupy.cuda.is_available():
        pytest.skip("no CUDA device available")
    return cupy


@pytest.mark.parametrize("method", ["auto", *ac.METHODS])
def test_no_device_to_host_copy(cp, method):
    cupyx = pytest.importorskip("cupyx")
    if not hasattr(cupyx, "allow_synchronize"):
        pytest.skip("this CuPy has no cupyx.allow_synchronize")
    rng = np.random.default_rng(0)
    x, w = cp.asarray(random(rng, (2, 4, 40, 40), "float32")), cp.asarray(random(rng, (8, 4, 5, 5), "float32"))
    image, psf = cp.asarray(random(rng, (64, 64), "float32")), cp.asarray(random(rng, (9, 9), "float32"))
    patches = cp.asarray(random(rng, (1, 50, 4, 4, 4), "float32"))
    # nan='ignore': the default 'propagate' reads one flag (is the input finite?) from the
    # device per FFT call, a synchronization by design; no data goes to the host either way
    plan = ac.plan_correlate(psf, image.shape, mode="same", method=method, dtype=np.float32, nan="ignore")
    ac.conv(x, w, padding=1, method=method, nan="ignore"), ac.correlate(image, psf, "same", method, nan="ignore"), plan(image)
    ac.patch_conv(patches, w[:, :, :3, :3], padding=1)
    cp.cuda.get_current_stream().synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # allow_synchronize is experimental / deprecated
        with cupyx.allow_synchronize(False):
            ac.conv(x, w, padding=1, method=method, nan="ignore")
            ac.correlate(image, psf, "same", method, nan="ignore")
            plan(image)
            ac.patch_conv(patches, w[:, :, :3, :3], padding=1)
    cp.cuda.get_current_stream().synchronize()


def _plan_cache_counts(capsys, cp):
    cp.fft.config.get_plan_cache().show_info()
    text = capsys.readouterr().out
    found = re.search(r"hits\s*/\s*misses\s*:\s*(\d+)\s*/\s*(\d+)", text)
    assert found, text
    return int(found[1]), int(found[2])


@pytest.mark.cuda
def test_fft_plans_are_made_once_per_shape(cp, capsys):
    rng = np.random.default_rng(1)
    psf = cp.asarray(random(rng, (31, 31), "float32"))
    frames = cp.asarray(random(rng, (5, 300, 280), "float32"))
    plan = ac.plan_correlate(psf, frames.shape[1:], mode="same", method="fft", dtype=np.float32)
    plan(frames[0])
    hits, misses = _plan_cache_counts(capsys, cp)
    for frame in frames[1:]:
        plan(frame)
    hits_after, misses_after = _plan_cache_counts(capsys, cp)
    assert misses_after == misses, "a cuFFT plan was made again for a shape seen before"
    assert hits_after >= hits + 2 * (len(frames) - 1)  # a forward and an inverse plan per frame


@pytest.mark.parametrize("method", ["im2col", "fft"])
def test_float32_gemm_is_full_fp32(cp, method):
    # A deep channel sum: TF32 (10-bit mantissa) would give errors near 1e-3.
    rng = np.random.default_rng(2)
    x, w = random(rng, (2, 256, 12, 12), "float32"), random(rng, (64, 256, 3, 3), "float32")
    got = ac.conv(cp.asarray(x), cp.asarray(w), method=method)
    assert_matches(got, reference_conv(x, w), dtype="float32", backend="cupy")


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_auto_never_raises_for_any_ndim(cp, ndim):
    rng = np.random.default_rng(3)
    a = random(rng, (9, 7, 6, 5)[:ndim], "float64")
    b = random(rng, (3, 4, 2, 3)[:ndim], "float64")
    for mode in ("full", "same", "valid"):
        got = ac.correlate(cp.asarray(a), cp.asarray(b), mode)
        assert_matches(got, reference_correlate(a, b, mode), dtype="float64", backend="cupy")


def test_direct_is_one_cuda_kernel_compiled_once(cp):
    from arrayconv._runtime import cuda as _cuda

    rng = np.random.default_rng(4)
    x, w = random(rng, (3, 5, 20, 21), "float64"), random(rng, (6, 5, 4, 3), "float64")
    ac.clear_caches()
    for _ in range(3):
        got = ac.conv(cp.asarray(x), cp.asarray(w), padding=(2, 1), stride=(1, 2), dilation=(2, 1), method="direct")
    assert_matches(got, reference_conv(x, w, padding=(2, 1), stride=(1, 2), dilation=(2, 1)), dtype="float64", backend="cupy")
    compiled, launches = (ac.cache_info()[name] for name in ("cuda_kernels", "direct_cuda_launches"))
    assert (compiled.misses, compiled.hits, compiled.size) == (1, 0, 1) and _cuda._compiled.info().size == 1
    assert (launches.misses, launches.hits, launches.size) == (1, 2, 1)  # later calls reuse the whole launch


def test_a_stride_past_32_bits_takes_the_tap_path(cp):
    """A stride of 2**31 or more leaves one output along its axis. It does not fit the CUDA
    kernel's ``int`` arguments (an OverflowError), so direct sums the taps by array calls."""
    rng = np.random.default_rng(5)
    x, w = random(rng, (2, 3, 12, 10), "float64"), random(rng, (4, 3, 3, 3), "float64")
    for method in ("auto", "direct"):
        got = ac.conv(cp.asarray(x), cp.asarray(w), stride=(2**40, 1), dilation=(1, 2), padding=1, method=method)
        assert_matches(got, reference_conv(x, w, stride=(2**40, 1), dilation=(1, 2), padding=1), dtype="float64", backend="cupy")


def test_patches_take_a_stride_past_their_size(cp):
    """A stride past the padded patch leaves one output along that axis; the kernel's
    ``#define`` of a stride past 64 bits would not compile."""
    rng = np.random.default_rng(6)
    x, w = random(rng, (1, 20, 3, 6, 5), "float32"), random(rng, (4, 3, 3, 2), "float32")
    got = ac.patch_conv(cp.asarray(x), cp.asarray(w), padding=1, stride=(2**70, 2))
    expected = reference_conv(x[0], w, padding=1, stride=(2**70, 2))
    assert_matches(got[0], expected, dtype="float32", backend="cupy")


def test_compile_error_is_a_clear_exception(cp):
    from arrayconv._runtime import cuda as _cuda

    with pytest.raises(_cuda.KernelCompileError, match=r"CUDA kernel 'broken' for dtype float32 .* failed to compile"):
        _cuda.kernel('extern "C" __global__ void broken() { this is not C++; }', "broken", np.dtype(np.float32))


@pytest.mark.cuda
def test_calibrate_gpu_measures_rates(cp, tmp_path, monkeypatch):
    monkeypatch.setenv("ARRAYCONV_CACHE_DIR", str(tmp_path))
    rates = ac.calibrate("gpu")
    assert rates.gemm_flops > 1e12 and rates.stream_bytes > 1e11 and rates.call_seconds < 1e-3
    assert (tmp_path / "rates-cupy.json").exists()
    ac.clear_caches()


def test_calibrate_gpu_scales_the_gpu_rates_by_the_gpu_reference_probes(cp, tmp_path, monkeypatch):
    """The GPU reference's ceilings give back the shipped GPU rates; a GPU with half the
    GEMM rate and half the bandwidth gets half the GEMM, stream and FFT rates (its FFTs
    are memory-bound) and the shipped call cost (a launch's latency is the host's: the
    call is not probed on a GPU)."""
    from arrayconv._runtime import rates as _rates

    monkeypatch.setenv("ARRAYCONV_CACHE_DIR", str(tmp_path))
    reference, shipped = _rates.GPU_REFERENCE_PROBES, _rates.DEFAULT_GPU_RATES
    monkeypatch.setattr(_rates, "gpu_ceilings", lambda xp: (reference.gemm_flops, reference.stream_bytes))
    assert dataclasses.asdict(ac.calibrate("gpu", save=False)) == pytest.approx(dataclasses.asdict(shipped))
    monkeypatch.setattr(_rates, "gpu_ceilings", lambda xp: (reference.gemm_flops / 2, reference.stream_bytes / 2))
    halved = dataclasses.replace(shipped, gemm_flops=shipped.gemm_flops / 2, stream_bytes=shipped.stream_bytes / 2, fft_flops=shipped.fft_flops / 2)
    assert dataclasses.asdict(ac.calibrate("gpu", save=False)) == pytest.approx(dataclasses.asdict(halved))
    ac.clear_caches()


def test_plan_runs_on_the_gpu_and_refuses_numpy(cp):
    rng = np.random.default_rng(5)
    w = cp.asarray(random(rng, (4, 3, 3, 3), "float32"))
    plan = ac.plan_conv(w, (2, 3, 16, 16), np.float32, padding=1)
    x = random(rng, (2, 3, 16, 16), "float32")
    out = cp.empty((2, 4, 16, 16), np.float32)
    assert plan(cp.asarray(x), out=out) is out
    assert_matches(out, reference_conv(x, w.get(), padding=1), dtype="float32", backend="cupy")
    with pytest.raises(TypeError, match="this plan takes CuPy arrays"):
        plan(x)


@pytest.mark.parametrize(
    "shape, kernel",
    [((50, 83), (3, 40)), ((7, 30, 40), (2, 3, 33)), ((1000,), (5,)), ((3, 9), (3, 9))],
)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_direct_kernel_long_rows_and_ragged_runs(cp, shape, kernel, mode):
    # Kernels wider than the register segment, and rows not a multiple of a thread's run.
    rng = np.random.default_rng(6)
    a, b = random(rng, shape, "float64"), random(rng, kernel, "float64")
    got = ac.correlate(cp.asarray(a), cp.asarray(b), mode, "direct")
    assert_matches(got, reference_correlate(a, b, mode), dtype="float64", backend="cupy")


@pytest.fixture
def two_devices(cp):
    """Two devices: the stand-in for CuPy given a second one, or a machine with two GPUs."""
    if "stand-in" in cp.__version__:
        import _numpy_cupy

        with _numpy_cupy.devices(2):
            yield
    elif cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two CUDA devices")
    else:
        yield


def test_arrays_on_two_devices_are_refused(cp, two_devices):
    with cp.cuda.Device(0):
        a = cp.asarray(random(np.random.default_rng(6), (8, 8), "float32"))
    with cp.cuda.Device(1):
        b = cp.asarray(random(np.random.default_rng(7), (3, 3), "float32"))
        plan = ac.plan_correlate(b, (8, 8), "same")
    with pytest.raises(ValueError, match="all CuPy arrays must be on one device; got `in1` on device 0, `in2` on device 1"):
        ac.correlate(a, b)
    with pytest.raises(ValueError, match="this plan runs on device 1, got `x` on device 0"):
        plan(a)


@pytest.mark.parametrize("method", ["auto", *ac.METHODS])
def test_arrays_on_another_device_than_the_current_one_are_filtered_there(cp, two_devices, method):
    # CuPy runs kernels on the current device: arrayconv makes the arrays' device current
    # for the call (as a tensor's device decides in PyTorch), and leaves it as it was.
    rng = np.random.default_rng(8)
    image, psf = random(rng, (40, 36), "float32"), random(rng, (7, 6), "float32")
    x, w = random(rng, (2, 4, 12, 12), "float32"), random(rng, (8, 2, 3, 3), "float32")
    patches, bank = random(rng, (1, 30, 4, 5, 5), "float32"), random(rng, (6, 4, 3, 3), "float32")
    with cp.cuda.Device(1):
        d_image, d_psf, d_x, d_w, d_patches, d_bank = (cp.asarray(a) for a in (image, psf, x, w, patches, bank))
    y = reference_conv(x, w, groups=2)
    wide = {name: a.astype(np.float64) for name, a in dict(image=image, psf=psf, y=y, w=w, patches=patches, bank=bank).items()}
    results = {
        "correlate": (ac.correlate(d_image, d_psf, "same", method), reference_correlate(image, psf, "same")),
        "convolve wrap": (ac.convolve(d_image, d_psf, "same", method, boundary="wrap"), ac.convolve(wide["image"], wide["psf"], "same", boundary="wrap")),
        "plan": (ac.plan_correlate(d_psf, image.shape, "same", method=method)(d_image), reference_correlate(image, psf, "same")),
        "conv": (ac.conv(d_x, d_w, padding=1, groups=2, method=method), reference_conv(x, w, padding=1, groups=2)),
        "conv_transpose": (ac.conv_transpose(ac.conv(d_x, d_w, groups=2), d_w, groups=2, method=method), ac.conv_transpose(wide["y"], wide["w"], groups=2)),
        "patch_conv": (ac.patch_conv(d_patches, d_bank, padding=1), ac.patch_conv(wide["patches"], wide["bank"], padding=1)),
    }
    streamed = ac.correlate_into(image, d_psf, np.empty_like(image), "same", method, memory_limit=8 << 10, progress=False)
    assert cp.cuda.runtime.getDevice() == 0
    for name, (got, ref) in results.items():
        assert got.device.id == 1, name
        assert_matches(got, ref, dtype="float32", backend="cupy")
    assert_matches(streamed, reference_correlate(image, psf, "same"), dtype="float32")
