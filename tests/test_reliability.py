"""Concurrency, bounded caches over long runs, and import cost."""

import subprocess
import sys
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from _reference import random, to_numpy

import arrayconv as ac


def mixed_workload(rng, xp=np):
    """Calls of every public kind, with plans shared between them: name -> zero-argument call."""
    image, psf = xp.asarray(random(rng, (96, 80), "float32")), xp.asarray(random(rng, (9, 7), "float32"))
    x, w = xp.asarray(random(rng, (2, 8, 24, 24), "float64")), xp.asarray(random(rng, (6, 8, 3, 3), "float64"))
    frames = xp.asarray(random(rng, (4, 64, 64), "float64"))
    plan = ac.plan_correlate(psf.astype(np.float64), frames.shape[1:], "same", "fft")
    conv_plan = ac.plan_conv(w, x.shape, padding=1, method="im2col")
    calls = {
        "plan fft": lambda: xp.stack([plan(f) for f in frames]),
        "conv plan": lambda: conv_plan(x),
        "adjoint": lambda: ac.conv_transpose(conv_plan(x), w, padding=1),
        "patches": lambda: ac.patch_conv(x[None, :, :, :4, :4], w, padding=1),
    }
    for method in ["auto", *ac.METHODS]:
        calls[f"correlate {method}"] = lambda m=method: ac.correlate(image, psf, "same", m, boundary="symm")
        calls[f"conv {method}"] = lambda m=method: ac.conv(x, w, padding=1, method=m)
    return calls


def test_eight_threads_give_bit_identical_results(xp, rng):
    calls = mixed_workload(rng, xp)
    serial = {name: to_numpy(call()) for name, call in calls.items()}
    ac.clear_caches()  # the threads race to fill them again
    jobs = [name for _ in range(6) for name in calls]
    np.random.default_rng(0).shuffle(jobs)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda name: (name, to_numpy(calls[name]())), jobs))
    for name, result in results:
        np.testing.assert_array_equal(result, serial[name], err_msg=name)


@pytest.mark.slow
def test_memory_stays_bounded_over_3000_calls_of_varying_shapes():
    # Past the largest cache's 1024 entries by call 2000; then no growth. The calls run once
    # before, with the caches emptied after: compiling the loops a shape first needs (a cold
    # numba cache) keeps its memory once, and is not growth.
    rng = np.random.default_rng(0)
    shapes = [(int(rng.integers(4, 40)), int(rng.integers(4, 40)), int(rng.integers(1, 6)), int(rng.integers(1, 6))) for _ in range(3_000)]
    data = rng.standard_normal(40 * 40)

    def call(i: int, n: int, m: int, k: int, j: int) -> None:
        x, kernel = data[: n * m].reshape(n, m), data[: k * j].reshape(k, j)
        ac.correlate(x, kernel, ("full", "same", "valid")[i % 3] if n >= k and m >= j else "full")

    for i, shape in enumerate(shapes):
        call(i, *shape)
    ac.clear_caches()
    tracemalloc.start()
    for i, shape in enumerate(shapes):
        call(i, *shape)
        if i == 2_000:
            warm, _ = tracemalloc.get_traced_memory()
    end, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    for name, info in ac.cache_info().items():
        assert info.size <= info.maxsize, name
    assert end - warm < 2 << 20, f"grew by {(end - warm) / 2**20:.1f} MiB after the caches filled"


def test_import_never_imports_cupy_nor_scipy_signal():
    """Importing arrayconv and a NumPy call leave CuPy out (it takes seconds to import, and
    a GPU context), and scipy.signal (the demo's peer) too. The import's time is
    measured by ``python -m bench.startup``, not here."""
    code = (
        "import sys, numpy as np, arrayconv as ac; ac.correlate(np.ones(8), np.ones(3)); "
        "print('cupy' in sys.modules, 'scipy.signal' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"], done.stdout
