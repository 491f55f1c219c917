"""Machine rates behind the cost model: shipped defaults, or measured by :func:`calibrate`.

Calibrated rates live in a JSON file per backend in the user cache directory
(``$ARRAYCONV_CACHE_DIR``, else the platform's cache folder + ``arrayconv``). Nothing is
measured or read at import; the first automatic choice reads the file, if there is one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import config as _config
from .backend import NUMPY, Backend
from .cache import LRUCache
from .fitted import fitted


@dataclass(frozen=True, slots=True)
class Rates:
    """Throughputs of one machine, per backend.

    Attributes
    ----------
    gemm_flops : float
        Floating-point operations per second of a large float32 matrix product.
    stream_bytes : float
        Bytes per second moved by a large elementwise operation or copy.
    fft_flops : float
        ``5 N log2 N`` flops per second of a large real FFT.
    call_seconds : float
        Fixed cost of one array-library call (Python overhead, kernel launch).
    dot_extra_ns : float
        Nanoseconds by which ``numpy.correlate``'s dot product per output sample (rows
        past 11 taps) exceeds the reference host's (:func:`measure_dot_extra_ns`); 0 until
        :func:`calibrate` measures it.
    """

    gemm_flops: float
    stream_bytes: float
    fft_flops: float
    call_seconds: float
    dot_extra_ns: float = 0.0

    def gemm_rate(self, dtype: np.dtype[Any], backend_name: str, rows: int = 1) -> float:
        """:attr:`gemm_flops` of GEMMs in `dtype` whose products have `rows` rows (output
        channels): on the CPU, double precision (float64, complex128) at
        :data:`DOUBLE_GEMM_SHARE` of it, a process allotted one core at
        :data:`ONE_CORE_GEMM_SHARE`, and GEMMs of many rows faster (:func:`rows_gain`)
        (the GPU's model is as measured)."""
        if backend_name != "numpy":
            return self.gemm_flops
        share = DOUBLE_GEMM_SHARE if np.dtype(dtype).char in "dD" else 1.0
        if _config.cores() == 1:
            share *= ONE_CORE_GEMM_SHARE
        return self.gemm_flops * share * rows_gain(rows)


def rows_gain(rows: int) -> float:
    """How much faster than :attr:`Rates.gemm_flops` a CPU GEMM with `rows` rows runs: each
    column it reads feeds `rows` products, so past :data:`GEMM_ROWS` rows the rate grows as
    their cube root, up to :data:`GEMM_ROWS_MAX_GAIN`."""
    return min(GEMM_ROWS_MAX_GAIN, max(1.0, rows / GEMM_ROWS) ** (1 / 3))


def small_gemm_share(rows: int, depth: int) -> float:
    """The least share of the GEMM rate a CPU GEMM of `rows` output rows over columns `depth`
    deep reaches (:data:`SMALL_GEMM_SHARE`, measured with OpenBLAS on wide products)."""
    scale, by_rows, by_depth = SMALL_GEMM_SHARE
    return min(1.0, scale * rows**by_rows * depth**by_depth)


# The model's weights (fitted.json): the CPU's rates are its units, not a machine's peaks;
# `calibrate` scales each by this machine's probe over REFERENCE_PROBES, the fitted host's.
DEFAULT_RATES = Rates(**fitted("rates", "DEFAULT_RATES"))
REFERENCE_PROBES = Rates(**fitted("rates", "REFERENCE_PROBES"))
# Double-precision GEMMs (float64, complex128) run at this share of float32's rate on the CPU.
DOUBLE_GEMM_SHARE = fitted("rates", "DOUBLE_GEMM_SHARE")
# GEMMs with more than GEMM_ROWS rows (output channels) reuse each column more: their rate grows
# as the cube root of rows / GEMM_ROWS, at most GEMM_ROWS_MAX_GAIN.
GEMM_ROWS, GEMM_ROWS_MAX_GAIN = fitted("rates", "GEMM_ROWS"), fitted("rates", "GEMM_ROWS_MAX_GAIN")
# GEMMs reach the rate from this size on their short sides (less in proportion below), and on a
# GPU from chunks this many columns wide.
FULL_RATE_GEMM = fitted("rates", "FULL_RATE_GEMM")
# GEMMs of few output rows over shallow columns run at least a * rows^b * depth^c of the rate
# (:func:`small_gemm_share`).
SMALL_GEMM_SHARE = fitted("rates", "SMALL_GEMM_SHARE")
# The reference host's BLAS ran on 2 cores, its large transforms on 2 workers: a process allotted
# one core, or one worker, gets these shares (small transforms, and overlap-save's slabs, lose nothing).
ONE_CORE_GEMM_SHARE = fitted("rates", "ONE_CORE_GEMM_SHARE")
ONE_WORKER_FFT_SHARE = fitted("rates", "ONE_WORKER_FFT_SHARE")
# The GPU's rates in its model's units, and the ceilings (a large GEMM and copy) of the H100s it
# was fitted on, by which `calibrate('gpu')` scales them (small probes would time launches).
DEFAULT_GPU_RATES = Rates(**fitted("rates", "DEFAULT_GPU_RATES"))
GPU_REFERENCE_PROBES = Rates(**fitted("rates", "GPU_REFERENCE_PROBES"))

_loaded = LRUCache("rates", maxsize=8)
# numpy.correlate past 11 taps makes one BLAS dot product per output sample, whose fixed cost
# varies with the BLAS build: `calibrate` measures it (Rates.dot_extra_ns) against the reference
# host's time per sample of the same probe (float64, 32 taps).
_REFERENCE_DOT_PROBE_NS = fitted("rates", "REFERENCE_DOT_PROBE_NS")
_DOT_PROBE_SAMPLES, _DOT_PROBE_TAPS = 2048, 32


def cache_dir() -> Path:
    """Folder of arrayconv's files on this machine (calibrated rates, measured choices)."""
    if env := os.environ.get("ARRAYCONV_CACHE_DIR"):
        return Path(env)
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "arrayconv"


def _rates_file(backend: Backend) -> Path:
    return cache_dir() / f"rates-{backend.name}.json"


def rates_for(backend: Backend) -> Rates:
    """Rates of the machine behind `backend`: calibrated if :func:`calibrate` ran, else defaults."""
    return _loaded.get_or_make(backend.name, lambda: _read(_rates_file(backend), backend))


def _read(path: Path, backend: Backend) -> Rates:
    """The rates stored in `path`; a file written before the rates were scaled (its
    "rates" are the probes themselves) is scaled now; the defaults if there is none."""
    try:
        record = json.loads(path.read_text())
        stored = Rates(**record["rates"])
    except (OSError, ValueError, KeyError, TypeError):
        return _shipped(backend)
    return stored if "probes" in record else scaled_rates(stored, backend)


def _shipped(backend: Backend) -> Rates:
    """The rates arrayconv ships for `backend`."""
    return DEFAULT_GPU_RATES if backend.name == "cupy" else DEFAULT_RATES


def calibrate(device: str = "cpu", *, save: bool = True) -> Rates:
    """Measure this machine's GEMM, FFT, memory and call rates for the automatic choice.

    Takes a few seconds. Each probe (see :func:`measure_rates`) is compared with the same
    probe on the machine the cost model was fitted on, and the shipped rate scaled by that
    ratio: a machine whose GEMM runs at half the reference's gets half the shipped GEMM
    rate (the shipped rates are the model's units, not a machine's peaks). On a GPU the
    probes are its GEMM and copy ceilings (:func:`gpu_ceilings`; the FFT's rate follows
    the copy's, a call's cost stays the shipped one). The rates are
    stored in :func:`cache_dir` (when `save`) and used by every later ``method='auto'`` on
    this machine, in this and later sessions.

    Parameters
    ----------
    device : {'cpu', 'gpu'}, optional
        Measure NumPy on the CPU (default) or CuPy on the current GPU.
    save : bool, optional
        Write the rates to the cache folder (default True).

    Returns
    -------
    Rates
        The rates the cost model will use on this machine.
    """
    if device not in ("cpu", "gpu"):
        msg = f"`device` must be 'cpu' or 'gpu', got {device!r}"
        raise ValueError(msg)
    backend = NUMPY if device == "cpu" else _cupy()
    probes = measure_rates(backend)
    rates = scaled_rates(probes, backend)
    if save:
        path = _rates_file(backend)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"rates": dataclasses.asdict(rates), "probes": dataclasses.asdict(probes), "measured": time.strftime("%Y-%m-%d %H:%M:%S")}
        path.write_text(json.dumps(record, indent=1))
    _loaded.put(backend.name, rates)
    return rates


def scaled_rates(probes: Rates, backend: Backend) -> Rates:
    """The shipped rates of `backend`, each scaled by this machine's probe over the
    reference machine's (:data:`REFERENCE_PROBES`; on the GPU
    :data:`GPU_REFERENCE_PROBES`). A call's cost is a time, so it scales the other way round. On the
    CPU the reference is taken at this process's cores and workers: the model charges a
    lone core or worker its share itself (:data:`ONE_CORE_GEMM_SHARE`,
    :data:`ONE_WORKER_FFT_SHARE`), so the probes' own loss is not counted twice."""
    default, reference = _shipped(backend), GPU_REFERENCE_PROBES
    if backend.name == "numpy":
        reference = dataclasses.replace(
            REFERENCE_PROBES,
            gemm_flops=REFERENCE_PROBES.gemm_flops * (ONE_CORE_GEMM_SHARE if _config.cores() == 1 else 1.0),
            fft_flops=REFERENCE_PROBES.fft_flops * (ONE_WORKER_FFT_SHARE if _config.workers() == 1 else 1.0),
        )
    return Rates(
        gemm_flops=default.gemm_flops * probes.gemm_flops / reference.gemm_flops,
        stream_bytes=default.stream_bytes * probes.stream_bytes / reference.stream_bytes,
        fft_flops=default.fft_flops * probes.fft_flops / reference.fft_flops,
        call_seconds=default.call_seconds * probes.call_seconds / reference.call_seconds,
        dot_extra_ns=probes.dot_extra_ns,
    )


def _cupy() -> Backend:
    import cupy

    from .backend import get_backend

    return get_backend(probe=cupy.empty(1))


def measure_rates(backend: Backend) -> Rates:
    """The four rates of `backend`, each from the best of several timed probes.

    On the CPU the probes are the operations the methods are made of: a 1024x1024 float32
    GEMM, a 64 MiB copy, a forward and inverse real FFT of a 2048x2048 float32 image, and
    one kernel tap of the direct method on a tiny block (slice, small GEMM, in-place add),
    and numpy's dot product per sample (:func:`measure_dot_extra_ns`). On a GPU they are
    :func:`gpu_ceilings`; its FFTs are memory-bound, so the FFT's rate is scaled with the
    copy's, and a call's cost is not probed (a launch's latency is the host's, and its
    probe did not follow the calls: see :data:`GPU_REFERENCE_PROBES`).
    """
    if backend.name == "cupy":
        gemm_flops, copy_bytes = gpu_ceilings(backend.xp)
        reference = GPU_REFERENCE_PROBES
        return dataclasses.replace(
            reference,
            gemm_flops=gemm_flops,
            stream_bytes=copy_bytes,
            fft_flops=reference.fft_flops * copy_bytes / reference.stream_bytes,
        )
    xp, fft = backend.xp, backend.fft
    rng = np.random.default_rng(0)
    a = xp.asarray(rng.standard_normal((1024, 1024), dtype=np.float32))
    v = xp.asarray(rng.standard_normal(1 << 24, dtype=np.float32))
    image = xp.asarray(rng.standard_normal((2048, 2048), dtype=np.float32))
    dst = xp.empty_like(v)
    tap_w, tap_x, acc = xp.ones((4, 4), np.float32), xp.ones((4, 72), np.float32), xp.zeros((4, 64), np.float32)
    workers = {"workers": _config.workers()}
    gemm = _best(lambda: xp.matmul(a, a))
    copy = _best(lambda: xp.copyto(dst, v))
    round_trip = _best(lambda: fft.irfft2(fft.rfft2(image, **workers), s=image.shape, **workers))
    call = _best(lambda: acc.__iadd__(xp.matmul(tap_w, tap_x[:, 3:67])), repeats=200)
    n = image.size
    return Rates(
        gemm_flops=2 * 1024**3 / gemm,
        stream_bytes=2 * v.nbytes / copy,
        fft_flops=float(2 * 2.5 * n * np.log2(n) / round_trip),
        call_seconds=call,
        dot_extra_ns=measure_dot_extra_ns(),
    )


def gpu_ceilings(cp: Any) -> tuple[float, float]:
    """The current GPU's FP32 GEMM rate (8192^3; CuPy leaves TF32 off unless the
    environment sets ``CUPY_TF32=1``) and its copy bandwidth (1 GiB, read and write), in
    FLOP/s and bytes/s: best of 5 by CUDA events. Needs 2 GiB of device memory, and about
    a second on an H100."""

    def seconds(fn: Callable[[], object]) -> float:
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / 1e3

    def gemm_flops() -> float:
        a = cp.random.standard_normal((8192, 8192), dtype=cp.float32)
        return 2 * 8192**3 / min(seconds(lambda: cp.matmul(a, a)) for _ in range(5))

    def copy_bytes() -> float:
        v = cp.empty(1 << 28, dtype=cp.float32)
        dst = cp.empty_like(v)
        return 2 * v.nbytes / min(seconds(lambda: cp.copyto(dst, v)) for _ in range(5))

    return gemm_flops(), copy_bytes()


def _best(fn: Callable[[], object], repeats: int = 7) -> float:
    """The shortest of `repeats` timed calls of `fn` (on the host), after one untimed."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_dot_extra_ns() -> float:
    """:attr:`Rates.dot_extra_ns` measured now: ``numpy.correlate`` of 2048 float64
    samples with 32 taps ('valid', one dot product per sample), best of 5, less the
    reference host's time per sample (0 where the dot is faster)."""
    signal = np.linspace(-1.0, 1.0, _DOT_PROBE_SAMPLES + _DOT_PROBE_TAPS - 1)
    kernel = np.linspace(0.5, 1.5, _DOT_PROBE_TAPS)
    best = _best(lambda: np.correlate(signal, kernel, "valid"), repeats=5)
    return max(0.0, best / _DOT_PROBE_SAMPLES * 1e9 - _REFERENCE_DOT_PROBE_NS)
