"""arrayconv's CUDA kernels compiled without a GPU: NVRTC from PyPI (``cuda-bindings`` and
``nvidia-cuda-nvrtc``, the ``lint`` extra) compiles every kind of instantiation the code
makes, for each dtype and each GPU architecture NVRTC supports from compute capability
7.5 to 9.0, to PTX; a syntax or type error in CUDA C fails here, not on a user's first
GPU call. Complex dtypes include CuPy's complex header, which needs CuPy: they compile on
a GPU machine only. Also the launch arithmetic and the shared-memory fit, on no device."""

import itertools

import numpy as np
import pytest

from arrayconv._methods import _direct_cuda, _patch_cuda
from arrayconv._runtime import cuda as _cuda
from arrayconv._spec.problem import Problem

ARCHITECTURES = (75, 80, 86, 89, 90)  # Turing to Hopper; CUDA 13's NVRTC has dropped 7.0
REAL_DTYPES = ("float32", "float64")


def _problem(spatial, kernel, groups=1, cin=1, cout=1, batch=1, stride=None, dilation=None, pad=None):
    nd = len(spatial)
    return Problem(
        batch=batch, groups=groups, in_per_group=cin, out_per_group=cout, spatial=spatial, kernel=kernel,
        pad_lo=pad or (0,) * nd, pad_hi=pad or (0,) * nd, stride=stride or (1,) * nd, dilation=dilation or (1,) * nd,
        dtype=np.dtype("float32"),
    )


# The direct kernel's kinds of instantiation: 1-D to 3-D, one to many output channels a
# thread, register segments (unit stride and dilation) or not, long and tiny kernels.
DIRECT_PROBLEMS = [
    _problem((4096, 4096), (3, 3)),
    _problem((4096, 4096), (15, 15)),
    _problem((300000,), (129,)),
    _problem((64, 64), (3, 3), cin=16, cout=32, batch=100, pad=(1, 1)),
    _problem((32, 60), (5, 5), cin=256, cout=64),
    _problem((128, 128), (3, 3), cin=4, cout=4, stride=(2, 2), dilation=(2, 2)),
    _problem((40, 40, 40), (3, 3, 3), cin=8, cout=16, pad=(1, 1, 1)),
    _problem((64, 64), (1, 1), cin=16, cout=16, groups=4),
]
# The patch kernel's: case f, wide and narrow patches, strides, one filter.
PATCH_PROBLEMS = [
    ((20480, 32, 4, 4), (64, 32, 3, 3), (1, 1), (1, 1)),
    ((1000, 3, 16, 16), (8, 3, 5, 5), (2, 2), (1, 1)),
    ((500, 1, 38, 38), (1, 1, 3, 3), (1, 1), (2, 2)),
    ((64, 16, 8, 8), (128, 16, 1, 1), (0, 0), (1, 1)),
]


def _nvrtc():
    return pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC from PyPI is not installed (the lint extra)")


def _compile(nvrtc, source: str, name: str, architecture: int) -> None:
    """NVRTC's PTX of `source`, or a failure with its log."""
    error, program = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    assert error == nvrtc.nvrtcResult.NVRTC_SUCCESS, error
    options = [o.encode() for o in (*_cuda.COMPILE_OPTIONS, f"--gpu-architecture=compute_{architecture}")]
    (error,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
    if error != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, size = nvrtc.nvrtcGetProgramLogSize(program)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(program, log)
        pytest.fail(f"{name} failed to compile for compute_{architecture}:\n{log.decode(errors='replace')}\n{source[:2000]}")
    _, size = nvrtc.nvrtcGetPTXSize(program)
    assert size > 100
    nvrtc.nvrtcDestroyProgram(program)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.parametrize("dtype", REAL_DTYPES)
def test_every_direct_kernel_compiles(architecture, dtype):
    nvrtc = _nvrtc()
    seen = set()
    for problem in DIRECT_PROBLEMS:
        constants = _direct_cuda.compile_constants(problem)
        key = tuple(sorted(constants.items()))
        if key in seen:
            continue
        seen.add(key)
        _compile(nvrtc, _cuda.full_source(_direct_cuda._SOURCE, np.dtype(dtype), constants), "direct_correlate", architecture)
    assert len(seen) >= 6  # the problems make distinct instantiations


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.parametrize("dtype", REAL_DTYPES)
def test_every_patch_kernel_compiles(architecture, dtype):
    nvrtc = _nvrtc()
    for x_shape, w_shape, padding, stride in PATCH_PROBLEMS:
        lay = _patch_cuda.layout(x_shape, w_shape, padding, stride, np.dtype(dtype), 99 << 10)
        assert lay is not None
        _compile(nvrtc, _cuda.full_source(_patch_cuda._SOURCE, np.dtype(dtype), lay.constants), "patch_correlate", architecture)


@pytest.mark.parametrize("limit_kib", [48, 64, 99, 227])
def test_patch_tiles_fit_the_devices_shared_memory(limit_kib):
    """A T4 allows 64 KB a block, consumer Ampere and Ada 99, an H100 227: the tiles fit
    each (or the kernel declines and conv runs), and case f runs on all of them."""
    limit = limit_kib << 10
    for (x_shape, w_shape, padding, stride), dtype in itertools.product(PATCH_PROBLEMS, REAL_DTYPES):
        lay = _patch_cuda.layout(x_shape, w_shape, padding, stride, np.dtype(dtype), limit)
        if lay is not None:
            assert lay.shared_bytes <= limit and lay.threads <= 1024 and lay.constants["THREADS"] == lay.threads
    case_f = PATCH_PROBLEMS[0]
    assert _patch_cuda.layout(*case_f, np.dtype("float32"), limit) is not None


def test_launch_arithmetic_near_two_billion_outputs():
    """A map of nearly 2**31 outputs: the grid is within CUDA's limits and every int
    argument fits 32 bits, but the last grid-stride step passes 2**31, so the kernel
    counts its loop in 64 bits (it wrapped to a negative index in 32)."""
    problem = _problem((46340, 46340), (3, 3), cout=16)  # 16 channels a thread: runs of one output
    assert _direct_cuda.takes(problem)
    grid, scalars = _direct_cuda.launch_arithmetic(problem)
    assert grid[0] <= 2**20 and grid[1] <= 65535
    assert all(-(2**31) <= int(v) < 2**31 for v in scalars)
    runs = -(-problem.out_spatial[-1] // _direct_cuda._run_length(_direct_cuda.channels_per_thread(problem)))
    assert problem.out_spatial[0] * runs + grid[0] * _direct_cuda._THREADS > 2**31
    assert "long long item" in _direct_cuda._SOURCE and "long long n_work" in _direct_cuda._SOURCE
