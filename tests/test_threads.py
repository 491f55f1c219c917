"""The shared worker pool: every item once, at most `workers` at a time, errors raised,
callers on several threads and forked children served; BLAS held to one thread while
im2col's chunks run on it."""

import contextlib
import os
import sys
import threading
import time

import numpy as np
import pytest
from _reference import assert_matches, random, reference_conv, reference_correlate

import arrayconv as ac
from arrayconv._methods import _channels, _compiled
from arrayconv._runtime import config as _config
from arrayconv._runtime import threads as _threads
from arrayconv._runtime.threads import gemm_lanes, one_blas_thread, run_parallel


@pytest.mark.parametrize("workers", [1, 2, 3, 8])
def test_runs_every_item_once_on_at_most_workers_threads(workers):
    seen, running, most, lock = [], [0], [0], threading.Lock()

    def job(item: int) -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.002)
        with lock:
            seen.append(item)
            running[0] -= 1

    run_parallel(range(40), job, workers)
    assert sorted(seen) == list(range(40))
    assert 1 <= most[0] <= workers


def test_an_error_in_a_job_is_raised_after_every_lane_has_stopped():
    # The first pool thread to take an item raises at once; the next one is still busy
    # when the caller collects the lanes. Repeated, so that either lane order is met.
    for _ in range(20):
        arrivals, running, lock = [], [0], threading.Lock()

        def job(item: int) -> None:
            if threading.current_thread() is threading.main_thread():
                time.sleep(0.002)  # leaves items to the pool's threads
                return
            with lock:
                arrivals.append(item)
                first = len(arrivals) == 1
                running[0] += not first
            if first:
                raise ValueError("first pool item")
            time.sleep(0.01)
            with lock:
                running[0] -= 1

        with pytest.raises(ValueError, match="first pool item"):
            run_parallel(range(30), job, 3)
        assert running[0] == 0  # nothing still running after the raise


def test_a_caller_that_ran_every_item_does_not_wait_for_a_helper_still_waking(monkeypatch):
    # The pool's thread wakes only when the test lets it (a busy machine): the caller runs
    # the items itself and returns, or raises at once where a job raises, before that; the
    # late thread then takes no item, goes back to the pool, and serves the next loop.
    def failing(item: int) -> None:
        raise ValueError(f"item {item}")

    run_parallel(range(4), lambda item: None, 2)  # the pool has its thread
    for job in (lambda item: threads.append(threading.current_thread()), failing):
        _wait_for_an_idle_pool()
        gate, waited_out, threads = threading.Event(), [], []

        def late_start(lane, task):  # type: ignore[no-untyped-def]
            lane._task, lane._error, lane._detached = task, None, False

            def wake() -> None:
                waited_out.append(not gate.wait(10))
                lane._go.release()

            threading.Thread(target=wake).start()

        with monkeypatch.context() as patch, contextlib.suppress(ValueError):
            patch.setattr(_threads._Lane, "start", late_start)
            run_parallel(range(6), job, 2)
            assert job is not failing, "the job's error was not raised"
        gate.set()
        assert set(threads) <= {threading.main_thread()}
        _wait_for_an_idle_pool()
        assert waited_out == [False], "the caller waited for the thread to wake"
    seen, lock = set(), threading.Lock()

    def slow(item: int) -> None:
        time.sleep(0.01)
        with lock:
            seen.add(threading.current_thread())

    run_parallel(range(8), slow, 2)
    assert len(seen) == 2


def test_a_caller_looks_for_its_helpers_end_without_the_gil_where_numba_is_loaded(monkeypatch):
    # The look sees a flag another thread sets (a read hoisted out of its loop never would:
    # the test's thread times out), and the pool's lanes set theirs once their task ends.
    pytest.importorskip("numba")
    look = _threads._looker()
    if look is None:
        pytest.skip("numba turned off (ARRAYCONV_NUMBA=0), or no libc to call")
    monkeypatch.setattr(_threads, "_LOOKS", 1 << 62)
    ended, gate = np.zeros(1, np.int32), threading.Event()

    def set_later() -> None:
        gate.wait(10)
        ended[0] = 1

    waiter = threading.Thread(target=look, args=(ended,), daemon=True)
    waiter.start()
    threading.Thread(target=set_later).start()
    waiter.join(0.05)
    assert waiter.is_alive(), "the look returned before the flag was set"
    gate.set()
    waiter.join(10)
    assert not waiter.is_alive(), "the look did not see the flag"

    monkeypatch.setattr(_threads, "_LOOKS", 2000)
    run_parallel(range(2), lambda item: None, 2)  # the pool has its thread
    _wait_for_an_idle_pool()
    [lane] = _threads._take_lanes(1)
    go = threading.Event()
    lane.start(lambda: go.wait(10) or None)
    assert lane._ended[0] == 0
    go.set()
    assert lane.join() is None and lane._ended[0] == 1
    _threads._give_back([lane])


def _wait_for_an_idle_pool() -> None:
    deadline = time.monotonic() + 5
    while len(_threads._idle) < _threads._made and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(_threads._idle) == _threads._made, "a pool thread did not come back"


def test_callers_on_several_threads_share_the_pool_without_growing_it():
    # Four user threads call at once, each asking for 3 workers: every call runs each of
    # its items once, and the pool never holds more than the 2 threads one call asks for.
    results, errors, before = {}, [], _threads._made

    def caller(name: int) -> None:
        seen, lock = [], threading.Lock()

        def job(item: int) -> None:
            time.sleep(0.001)
            with lock:
                seen.append(item)

        try:
            for _ in range(5):
                seen.clear()
                run_parallel(range(12), job, 3)
                assert sorted(seen) == list(range(12))
            results[name] = True
        except BaseException as exc:  # reported on the main thread
            errors.append(exc)

    callers = [threading.Thread(target=caller, args=(n,)) for n in range(4)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join()
    assert not errors and len(results) == 4
    assert _threads._made <= max(before, 2), "callers that found no idle thread made more"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_runs_parallel_loops():
    # The child has none of the parent's pool threads: it makes its own, and does not wait
    # for threads that do not exist.
    run_parallel(range(4), lambda item: None, 2)  # the parent's pool exists
    pid = os.fork()
    if pid == 0:  # the child: exit 0 once the loop has run every item
        seen = []
        run_parallel(range(8), seen.append, 2)
        os._exit(0 if sorted(seen) == list(range(8)) else 1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.01)
    os.kill(pid, 9)
    pytest.fail("the forked child's parallel loop hung")


def _blas_threads():
    from threadpoolctl import threadpool_info

    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def test_one_blas_thread_holds_blas_to_one_thread_on_the_main_thread_only(monkeypatch):
    pytest.importorskip("threadpoolctl")
    # The controller lists the BLAS libraries loaded when it is made (numpy's, before any
    # arrayconv call); made afresh here, it also holds any that other tests loaded since
    # (OpenCV brings its own OpenBLAS), which _blas_threads() counts.
    monkeypatch.setattr(_threads, "_blas_controller", None)
    before = _blas_threads()
    assert before, "threadpoolctl found no BLAS"
    with one_blas_thread():
        assert _blas_threads() == {1}
    assert _blas_threads() == before
    assert gemm_lanes(2) == 2
    lanes = []
    worker = threading.Thread(target=lambda: lanes.append(gemm_lanes(2)))
    worker.start()
    worker.join()
    assert lanes == [1], "another thread may not hold BLAS to one thread (OpenBLAS keeps it there)"


@pytest.mark.parametrize("threadpoolctl", [True, False])
@pytest.mark.parametrize("x_shape, w_shape", [((8, 16, 64, 64), (8, 16, 3, 3)), ((1, 128, 20, 24), (4, 128, 3, 4))])
def test_im2col_runs_its_chunks_on_every_worker_with_blas_on_one_thread(threadpoolctl, x_shape, w_shape, monkeypatch, rng):
    # Each lane gathers its chunk's columns and runs its GEMMs on one BLAS thread; BLAS
    # gets its threads back after. Without threadpoolctl the chunks run in the calling
    # thread, BLAS untouched. 8 images of 16 channels: columns of 2.4 MB each, 4 chunks;
    # one image of 128 channels and 4 taps a row gathers only the last axis's taps (deep
    # columns), its rows in a chunk per core.
    if threadpoolctl:
        pytest.importorskip("threadpoolctl")
    else:
        monkeypatch.setitem(sys.modules, "threadpoolctl", None)
    monkeypatch.setattr(_threads, "_blas_controller", None)
    before = _blas_threads() if threadpoolctl else None
    x, w = random(rng, x_shape, "float32"), random(rng, w_shape, "float32")
    runs, limits = [], []

    def recording(items, job, workers):  # type: ignore[no-untyped-def]
        items = list(items)
        runs.append((len(items), workers))
        limits.append(_blas_threads() if threadpoolctl else None)
        return run_parallel(items, job, workers)

    monkeypatch.setattr(_threads, "run_parallel", recording)
    with ac.config(workers=2):
        got = ac.conv(x, w, padding=1, method="im2col")
    assert_matches(got, reference_conv(x, w, padding=1), dtype="float32")
    if threadpoolctl:
        assert len(runs) == 1 and runs[0][0] > 1 and runs[0][1] == 2 and limits == [{1}]
        assert _blas_threads() == before
    else:
        assert runs == [], "chunks ran on threads whose GEMMs would share BLAS's threads"


@pytest.mark.parametrize("padding_mode", ["constant", "wrap", "mirror"])
def test_im2col_on_threads_matches_one_thread_for_every_padding_and_batch_axes(padding_mode, monkeypatch, rng):
    # Chunks on two threads (3 chunks of 2 items; 12 images of correlate's two batch axes
    # in 2 chunks) give what one thread gives, and SciPy's result.
    pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(_threads, "_blas_controller", None)
    x, w = random(rng, (6, 16, 40, 40), "float64"), random(rng, (8, 16, 3, 3), "float64")
    with ac.config(workers=1):
        one = ac.conv(x, w, padding=1, padding_mode=padding_mode, method="im2col")
    with ac.config(workers=2):
        np.testing.assert_array_equal(ac.conv(x, w, padding=1, padding_mode=padding_mode, method="im2col"), one)
    images, kernel = random(rng, (3, 4, 128, 128), "float32"), random(rng, (1, 1, 3, 3), "float32")
    with ac.config(workers=2):
        got = ac.correlate(images, kernel, "same", "im2col", axes=(-2, -1))
    assert_matches(got, reference_correlate(images, kernel, "same", axes=(-2, -1)), dtype="float32")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_direct_runs_gemm_taps_on_every_worker_with_blas_on_one_thread(dtype, monkeypatch, rng):
    # A single multichannel image (under one 4 MiB chunk) is cut into one chunk per core,
    # each lane's GEMMs on one BLAS thread, BLAS's threads given back after; the result
    # is the same bits as one worker's (on one BLAS thread too), and the reference.
    # The GEMM taps, not the compiled loops for layers (which call no BLAS).
    pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(_threads, "_blas_controller", None)
    monkeypatch.setattr(_config, "_CORES", 2)
    monkeypatch.setattr(_channels, "takes", lambda problem, backend: False)
    ac.clear_caches()
    before = _blas_threads()
    x, w = random(rng, (1, 32, 30, 40), dtype), random(rng, (16, 32, 3, 3), dtype)
    with ac.config(workers=1):
        one = ac.conv(x, w, padding=1, method="direct")
    runs, limits = [], []

    def recording(items, job, workers):  # type: ignore[no-untyped-def]
        items = list(items)
        runs.append((len(items), workers))
        limits.append(_blas_threads())
        return run_parallel(items, job, workers)

    monkeypatch.setattr(_threads, "run_parallel", recording)
    with ac.config(workers=2):
        got = ac.conv(x, w, padding=1, method="direct")
    assert runs == [(2, 2)] and limits == [{1}] and _blas_threads() == before
    np.testing.assert_array_equal(got, one)
    assert_matches(got, reference_conv(x, w, padding=1), dtype=dtype)


@pytest.mark.parametrize(
    ("v2", "v1", "quota"),
    [
        ("150000 100000\n", None, 1.5),  # a container's --cpus=1.5
        ("max 100000\n", None, None),  # no limit
        (None, ("50000\n", "100000\n"), 0.5),  # cgroup v1
        (None, ("-1\n", "100000\n"), None),  # v1: no limit
        (None, None, None),  # no cgroup files
    ],
)
def test_a_cgroup_cpu_quota_caps_the_workers(monkeypatch, tmp_path, v2, v1, quota):
    """A container allowed 1.5 CPUs runs 2 workers, not the host's count."""
    from arrayconv._runtime import machine as _machine

    v2_path, v1_paths = tmp_path / "cpu.max", (tmp_path / "cfs_quota_us", tmp_path / "cfs_period_us")
    if v2 is not None:
        v2_path.write_text(v2)
    if v1 is not None:
        for path, text in zip(v1_paths, v1):
            path.write_text(text)
    monkeypatch.setattr(_machine, "CGROUP_CPU_MAX", v2_path)
    monkeypatch.setattr(_machine, "CGROUP_V1", v1_paths)
    assert _machine.cgroup_cpu_quota() == quota
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert _machine.usable_cores() == (affinity if quota is None else min(affinity, -(-quota // 1)))


@pytest.mark.parametrize(
    ("caches", "expected"),
    [
        ([("1", "Data", "48K"), ("1", "Instruction", "32K"), ("2", "Unified", "512K"), ("3", "Unified", "32768K")], 512 << 10),
        ([("1", "Data", "32K"), ("2", "Unified", "2M")], 2 << 20),
        ([("1", "Data", "32K")], None),  # no second level listed
        ([], None),  # no sysfs folder
    ],
)
def test_the_second_cache_levels_size_is_read_from_sysfs(monkeypatch, tmp_path, caches, expected):
    from arrayconv._runtime import machine as _machine

    for i, (level, kind, size) in enumerate(caches):
        folder = tmp_path / f"index{i}"
        folder.mkdir()
        for name, text in (("level", level), ("type", kind), ("size", size)):
            (folder / name).write_text(text + "\n")
    monkeypatch.setattr(_machine, "CPU_CACHES", tmp_path)
    assert _machine._read_l2_bytes() == (_machine.L2_BYTES if expected is None else expected)


@pytest.mark.parametrize(
    ("machine", "flags", "wide"),
    [("x86_64", "fpu sse2 avx avx2 fma", False), ("x86_64", "fpu avx2 avx512f avx512bw", True), ("aarch64", "fp asimd", True), ("x86_64", "avx512fp16", False)],
)
def test_the_cpus_vector_registers_are_read_from_its_flags(monkeypatch, machine, flags, wide):
    """32 vector registers with AVX-512 (the flag itself, not one that starts like it) or on
    arm64, else AVX2's 16: the compiled loops' register budget and the AVX-512 in reports."""
    from arrayconv._runtime import machine as _machine

    monkeypatch.setattr(_machine.platform, "machine", lambda: machine)
    monkeypatch.setattr(_machine, "_cpuinfo", lambda field: {"flags": flags, "model name": "a CPU"}[field])
    ac.clear_caches()
    assert _machine.wide_vectors() is wide
    assert _machine.cpu_name() == ("a CPU (AVX-512)" if wide and machine == "x86_64" else "a CPU")
    ac.clear_caches()


def test_a_call_inside_a_dask_task_runs_one_worker(monkeypatch, rng):
    """dask's threads run the blocks side by side; each block's call runs one worker, so the
    two never multiply (and its result is the in-memory call's)."""
    da = pytest.importorskip("dask.array")
    import arrayconv.dask as acd
    from arrayconv._runtime import config as _config

    seen, real = [], _config.workers
    monkeypatch.setattr(_config, "workers", lambda: seen.append(real()) or real())
    x, k = random(rng, (400, 300), "float32"), random(rng, (9, 9), "float32")
    with ac.config(workers=2):
        got = acd.correlate(da.from_array(x, chunks=(100, 150)), k, "same").compute(scheduler="threads")
    assert seen and set(seen) == {1}
    assert_matches(got, reference_correlate(x, k, "same"), dtype="float32")


def test_loops_inside_a_lane_run_on_that_lanes_thread():
    """A job that runs loops of its own (match_template's slabs filtering their windows)
    runs them on its own thread: a pool thread waiting for the pool would never finish."""
    from arrayconv._runtime.threads import run_parallel

    ran: list[tuple[int, str]] = []

    def outer(i: int) -> None:
        name = threading.current_thread().name
        run_parallel(range(3), lambda j: ran.append((i, threading.current_thread().name == name)), 2)

    caller = threading.Thread(target=run_parallel, args=(range(4), outer, 2), daemon=True)
    caller.start()
    caller.join(30)
    assert not caller.is_alive() and len(ran) == 12 and all(same for _, same in ran)


def test_one_item_of_gemms_runs_on_one_blas_thread_its_big_calls_split_over_the_lanes(monkeypatch, rng):
    # A GEMM call on BLAS's threads waits out a time slice whenever a busy machine preempts
    # one of them: one item's calls run on one BLAS thread, shared by rows over the lanes
    # when big (_SPLIT_MACS), and BLAS gets its threads back after.
    pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(_threads, "_blas_controller", None)
    before = _blas_threads()
    seen, matmul = [], np.matmul

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((threading.current_thread().name, frozenset(_blas_threads())))
        return matmul(*args, **kwargs)

    monkeypatch.setattr(np, "matmul", recording)
    monkeypatch.setattr(_config, "_CORES", 2)
    x, w = random(rng, (1, 64, 16, 16), "float32"), random(rng, (32, 64, 1, 1), "float32")
    with ac.config(workers=2):
        got = ac.conv(x, w, method="direct")
        assert len(seen) == 1 and seen[0] == (threading.current_thread().name, {1}), seen
        seen.clear()
        monkeypatch.setattr(_threads, "_SPLIT_MACS", 1)
        shared, share = [], _threads.run_parallel
        monkeypatch.setattr(_threads, "run_parallel", lambda items, job, workers: shared.append((len(items), workers)) or share(items, job, workers))
        assert_matches(ac.conv(x, w, method="direct"), got, dtype="float32")
        assert len(seen) == 2 and all(limit == {1} for _, limit in seen) and shared == [(2, 2)], (seen, shared)
    assert_matches(got, reference_conv(x, w), dtype="float32")
    assert _blas_threads() == before


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "x_shape, w_shape, padding",
    [((1, 16, 30, 30), (40, 16, 3, 3), 1), ((1, 64, 10, 10), (64, 64, 3, 3), 1), ((1, 128, 3, 24), (4, 128, 3, 4), 0)],
    ids=["columns", "winograd", "last-axis"],
)
def test_one_chunk_whose_gemm_is_split_gives_the_same_bits_on_any_workers(dtype, x_shape, w_shape, padding, monkeypatch, rng):
    # One image in one chunk (im2col's columns, Winograd's tiles, the last axis's taps):
    # its GEMMs split by columns in a block per core, on two lanes or on one worker.
    pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(_threads, "_blas_controller", None)
    monkeypatch.setattr(_threads, "_SPLIT_MACS", 1)
    monkeypatch.setattr(_config, "_CORES", 2)
    x, w = random(rng, x_shape, dtype), random(rng, w_shape, dtype)
    with ac.config(workers=1):
        one = ac.conv(x, w, padding=padding, method="im2col")
    shared, share = [], _threads.run_parallel
    monkeypatch.setattr(_threads, "run_parallel", lambda items, job, workers: shared.append((len(items), workers)) or share(items, job, workers))
    with ac.config(workers=2):
        np.testing.assert_array_equal(ac.conv(x, w, padding=padding, method="im2col"), one)
    assert shared and all(call == (2, 2) for call in shared), shared
    assert_matches(one, reference_conv(x, w, padding=padding), dtype=dtype)


_MATMUL = np.matmul


@pytest.fixture
def matmul_calls(monkeypatch):  # type: ignore[no-untyped-def]
    """The shapes of `a` and `b` of every ``np.matmul`` call, recorded as they are made."""
    calls = []

    def recording(a, b, out):  # type: ignore[no-untyped-def]
        calls.append((a.shape, b.shape))
        return _MATMUL(a, b, out=out)

    monkeypatch.setattr(np, "matmul", recording)
    return calls


@pytest.fixture
def split_on_two_cores(monkeypatch):  # type: ignore[no-untyped-def]
    """Two cores, threadpoolctl's view of BLAS made afresh, every GEMM worth splitting."""
    pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(_threads, "_blas_controller", None)
    monkeypatch.setattr(_threads, "_SPLIT_MACS", 1)
    monkeypatch.setattr(_config, "_CORES", 2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_split_stack_of_gemms_runs_whole_gemms_with_the_bits_of_one_call(dtype, matmul_calls, rng):
    """A stack of at least 4 GEMMs a part is split by whole GEMMs, each as wide as it is; a
    shorter one by columns."""
    calls, matmul = matmul_calls, _MATMUL
    a, b = random(rng, (16, 2, 24, 20), dtype), random(rng, (16, 2, 20, 49), dtype)
    out = np.empty((16, 2, 24, 49), dtype)
    _threads.matmul_split(a, b, out, parts=2, threads=2)
    assert sorted(calls) == [((8, 2, 24, 20), (8, 2, 20, 49))] * 2, calls
    np.testing.assert_array_equal(out, matmul(a, b))
    calls.clear()
    _threads.matmul_split(a[:7], b[:7], out[:7], parts=2, threads=2)
    assert sorted(calls) == [((7, 2, 24, 20), (7, 2, 20, 17)), ((7, 2, 24, 20), (7, 2, 20, 32))], calls
    assert_matches(out[:7], matmul(a[:7], b[:7]), dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_gemm_of_few_columns_is_split_by_its_rows(dtype, matmul_calls, split_on_two_cores, rng):
    """One 5x5 image, a 1x1 layer of 64 -> 160 channels: 25 columns, too few for a block
    of them a core, so the GEMM runs in two blocks of output channels (of the kernel's
    rows), each as wide as the whole, with the same bits on one worker as on two."""
    x, w = random(rng, (1, 64, 5, 5), dtype), random(rng, (160, 64, 1, 1), dtype)
    with ac.config(workers=1):
        one = ac.conv(x, w, method="direct")
    assert sorted(matmul_calls) == [((1, 80, 64), (1, 1, 64, 25))] * 2, matmul_calls
    with ac.config(workers=2):
        np.testing.assert_array_equal(ac.conv(x, w, method="direct"), one)
    assert_matches(one, reference_conv(x, w), dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_image_too_narrow_to_cut_in_rows_is_cut_in_output_channels(dtype, matmul_calls, split_on_two_cores, rng):
    """One 10x10 image, 3x3 stride 2, 16 -> 160 channels: 25 output samples, too few for
    a chunk of rows a core, so each core gathers all the columns and makes half the output
    channels, with the same bits on one worker as on two."""
    x, w = random(rng, (1, 16, 10, 10), dtype), random(rng, (160, 16, 3, 3), dtype)
    with ac.config(workers=1):
        one = ac.conv(x, w, padding=1, stride=2, method="im2col")
    assert sorted(matmul_calls) == [((1, 80, 144), (1, 1, 144, 25))] * 2, matmul_calls
    with ac.config(workers=2):
        np.testing.assert_array_equal(ac.conv(x, w, padding=1, stride=2, method="im2col"), one)
    assert_matches(one, reference_conv(x, w, padding=1, stride=2), dtype=dtype)


def test_winograds_one_chunk_counts_its_whole_stack_of_gemms_to_split(monkeypatch, rng):
    """One 14x14 image, 256 -> 256 channels: one chunk of tiles whose 16 GEMMs (51 million
    multiply-adds, 3.2 million each) are split over two lanes, not left to one."""
    pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(_threads, "_blas_controller", None)
    monkeypatch.setattr(_config, "_CORES", 2)
    shared, share = [], _threads.run_parallel
    monkeypatch.setattr(_threads, "run_parallel", lambda items, job, workers: shared.append((len(items), workers)) or share(items, job, workers))
    x, w = random(rng, (1, 256, 14, 14), "float32"), random(rng, (256, 256, 3, 3), "float32")
    with ac.config(workers=2):
        got = ac.conv(x, w, padding=1, method="im2col")
    assert shared == [(2, 2)], shared
    assert_matches(got, reference_conv(x, w, padding=1), dtype="float32")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_winograds_one_image_of_many_tiles_is_a_chunk_a_core(dtype, monkeypatch, rng):
    """One 56x56 image, 64 -> 64 channels: its tile rows are cut a chunk a core, which the
    lanes share (the GEMMs of either half still 98 or more tiles wide), with the same bits
    on one worker as on two. Without numba (F(2x2, 3x3), NumPy's transforms) float64's
    chunks are cut smaller, to fit their bytes: four."""
    from arrayconv._methods import _winograd

    pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(_threads, "_blas_controller", None)
    monkeypatch.setattr(_config, "_CORES", 2)
    threads, run_chunk = [], _winograd._run_chunk
    monkeypatch.setattr(_winograd, "_run_chunk", lambda *args: threads.append(threading.get_ident()) or run_chunk(*args))
    x, w = random(rng, (1, 64, 56, 56), dtype), random(rng, (64, 64, 3, 3), dtype)
    chunks = 4 if dtype == "float64" and not _compiled.available() else 2
    with ac.config(workers=1):
        one = ac.conv(x, w, padding=1, method="im2col")
    assert len(threads) == chunks, threads
    threads.clear()
    with ac.config(workers=2):
        np.testing.assert_array_equal(ac.conv(x, w, padding=1, method="im2col"), one)
    assert len(threads) == chunks, threads
    assert_matches(one, reference_conv(x, w, padding=1), dtype=dtype)


def test_the_gemm_share_of_too_few_items_is_the_lanes_they_keep_busy():
    """Items on every lane, or one item whose big calls are split over the lanes: the whole
    GEMM rate; fewer small items than lanes: the share of the lanes they run on."""
    from arrayconv._runtime import threads as _threads

    big = _threads._SPLIT_MACS
    assert _threads.gemm_share(4, 1, 2) == _threads.gemm_share(2, 1, 2) == _threads.gemm_share(1, big, 2) == 1.0
    assert _threads.gemm_share(1, big - 1, 2) == 0.5
    assert _threads.gemm_share(3, 1, 4) == 0.75
    assert _threads.gemm_share(1, 1, 1) == 1.0
