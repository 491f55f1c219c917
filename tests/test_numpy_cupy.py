"""The NumPy stand-in for CuPy (tests/_numpy_cupy.py) refuses what CuPy refuses, and its
models of arrayconv's CUDA kernels compute what their sources do. CI runs the GPU tests on
it (``ARRAYCONV_CUPY_STAND_IN=1``); these check the stand-in itself, on every run."""

import os
import sys

import _numpy_cupy
import numpy as np
import pytest
from _numpy_cupy import cupy as cp
from _reference import assert_matches, random, reference_conv

import arrayconv as ac


@pytest.fixture
def stand_in(monkeypatch):
    """The stand-in as ``cupy`` for one test, with arrayconv's caches and GPU memory
    readings emptied before and after (on a GPU machine, nothing of the stand-in's may
    reach a real CuPy call: a compiled kernel, a plan, a budget)."""
    from arrayconv._runtime import config as _config

    names = ("cupy", "cupyx", "cupyx.scipy", "cupyx.scipy.fft", "cupyx.scipy.signal", "cupyx.scipy.ndimage")
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)  # put back as they were after the test
    monkeypatch.setattr(_config, "_gpu_total", {})
    ac.clear_caches()
    yield _numpy_cupy.install()
    ac.clear_caches()


def test_a_device_array_never_becomes_a_numpy_array_implicitly():
    a = cp.asarray(np.arange(6.0).reshape(2, 3))  # host data goes to the device explicitly
    for implicit in (lambda: np.asarray(a), lambda: np.zeros((2, 3)).__setitem__(Ellipsis, a), lambda: np.array([a, a])):
        with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
            implicit()
    assert isinstance(a.get(), np.ndarray) and isinstance(cp.asnumpy(a), np.ndarray)
    np.testing.assert_array_equal(a.get(), np.arange(6.0).reshape(2, 3))


def test_device_functions_refuse_host_arrays_as_cupy_does():
    a, host = cp.asarray(np.ones((2, 3))), np.ones(3)
    for mixed in (lambda: cp.add(a, host), lambda: a + host, lambda: cp.copyto(a, host), lambda: cp.matmul(host, a.T)):
        with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
            mixed()
    assert isinstance(a + np.float32(2), cp.ndarray) and isinstance(np.add(a, a), cp.ndarray)  # NumPy's functions dispatch
    assert isinstance(cp.take(a, np.array([0, 2]), axis=1), cp.ndarray)  # CuPy copies host indices over
    total = a.sum()
    assert isinstance(total, cp.ndarray) and total.shape == ()  # reductions stay on the device


def test_the_stand_in_leaves_no_trace(stand_in):
    assert sys.modules["cupy"] is stand_in  # the next test checks it is gone


@pytest.mark.skipif(os.environ.get("ARRAYCONV_CUPY_STAND_IN") == "1", reason="the stand-in is installed for the whole run")
def test_the_stand_in_is_gone_after_its_tests():
    assert not isinstance(sys.modules.get("cupy"), type(_numpy_cupy.cupy))


def test_reading_the_device_inside_allow_synchronize_false_raises():
    a = cp.asarray(np.arange(4.0))
    with _numpy_cupy.allow_synchronize(False):
        b = (a * 2).sum()  # device work: no wait
        for read in (lambda: float(b), lambda: bool(b), lambda: b.get(), lambda: b.item(), lambda: int(a[1])):
            with pytest.raises(_numpy_cupy.DeviceSynchronized):
                read()
    assert float(b) == 12.0


def test_fft_takes_cupys_arguments_only():
    fft = _numpy_cupy._fft_module()
    a = cp.asarray(np.arange(8.0))
    np.testing.assert_allclose(fft.rfft(a, n=8, overwrite_x=True).get(), np.fft.rfft(np.arange(8.0)))
    with pytest.raises(TypeError, match="workers"):
        fft.rfft(a, workers=2)
    with pytest.raises(TypeError, match="takes a cupy.ndarray"):
        fft.rfftn(np.arange(8.0))


def test_next_fast_len_gives_cuffts_lengths():
    def fast(n):
        for p in (2, 3, 5, 7):
            while n % p == 0:
                n //= p
        return n == 1

    for target in range(1, 3000):
        expected = next(n for n in range(target, 2 * target + 1) if fast(n))
        assert _numpy_cupy.next_fast_len(target) == expected, target


@pytest.mark.parametrize(
    "options",
    [
        dict(padding=1),
        dict(padding=(2, 0), stride=(2, 1), dilation=(1, 2)),
        dict(padding=(1, 3), stride=(1, 3), dilation=(2, 1), groups=2),
    ],
)
def test_the_direct_kernels_model_computes_a_conv_layer(stand_in, options, rng):
    """arrayconv's direct method on the stand-in: the model of ``direct_correlate`` gets its
    arguments and constants from the same launch a GPU gets (seven output channels: one
    padded block of eight; a 9-tap last axis: the segment form)."""
    groups = options.get("groups", 1)
    x, w = random(rng, (2, 4, 13, 17), "float64"), random(rng, (7 * groups, 4 // groups, 3, 9), "float64")
    got = ac.conv(stand_in.asarray(x), stand_in.asarray(w), method="direct", **options)
    assert_matches(got, reference_conv(x, w, **options), dtype="float64", backend="cupy")


def test_the_patch_kernels_model_computes_a_filter_bank_on_each_patch(stand_in, rng):
    x, w = random(rng, (2, 30, 3, 5, 6), "float32"), random(rng, (5, 3, 3, 2), "float32")
    got = ac.patch_conv(stand_in.asarray(x), stand_in.asarray(w), padding=(1, 0), stride=(2, 1))
    expected = reference_conv(x.reshape(60, 3, 5, 6), w, padding=(1, 0), stride=(2, 1))
    assert_matches(got.reshape(expected.shape), expected, dtype="float32", backend="cupy")


def test_a_launch_past_cudas_limits_or_with_host_data_fails():
    source = "#define OB 1\ntypedef float T;\n"
    kernel = cp.RawKernel(source, "direct_correlate")
    kernel.compile()
    device = cp.asarray(np.ones(4, np.float32))
    with pytest.raises(ValueError, match="grid"):
        kernel((1, 70000), (256,), (device,))
    with pytest.raises(ValueError, match="block"):
        kernel((1,), (2048,), (device,))
    with pytest.raises(TypeError, match="NumPy array"):
        kernel((1,), (256,), (np.ones(4, np.float32),))
    with pytest.raises(TypeError, match="for float was given float64 data"):
        kernel((1,), (256,), (cp.asarray(np.ones(4)),))
    with pytest.raises(RuntimeError, match="no model of CUDA kernel 'other'"):
        cp.RawKernel(source, "other").compile()
    with pytest.raises(RuntimeError, match="integer constant is too large"):
        cp.RawKernel(f"#define SH {2**64}\n" + source, "direct_correlate").compile()


def test_arrays_live_on_a_device_and_kernels_refuse_another_devices_arrays():
    with pytest.raises(RuntimeError, match="cudaErrorInvalidDevice"):
        cp.cuda.Device(1)  # one device unless a test asks for more
    with _numpy_cupy.devices(2):
        with cp.cuda.Device(1):
            a = cp.asarray(np.arange(12.0).reshape(3, 4))
            assert cp.cuda.runtime.getDevice() == 1
        assert cp.cuda.runtime.getDevice() == 0 and a.device.id == 1
        assert a[1:].device.id == a.T.device.id == a.reshape(4, 3).device.id == 1  # views: no kernel
        for kernel in (lambda: a + 1, lambda: a.sum(), lambda: a.copy(), lambda: cp.zeros(3).__setitem__(slice(None), a[0, :3]), lambda: a[[0, 2]]):
            with pytest.raises(ValueError, match="Array device must be same as the current device: array device = 1 while current = 0"):
                kernel()
        assert cp.asarray(a).device.id == 0 and a.get().sum() == 66  # copies from any device
        with cp.cuda.Device(1):
            assert (a + 1).device.id == 1
