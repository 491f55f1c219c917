"""One shared pool of worker threads for the loops that arrayconv runs in parallel.

The threads live as long as the process, so their scratch buffers (:mod:`._scratch`) are
reused from call to call: a pool made per call gave each call fresh threads with fresh
buffers, and its page faults made two threads slower than one on mid-size images (a
1024x1024 3x3 float64 correlation: 7.8 ms on two new threads, 6.6 ms on one).

Loops whose items each run a GEMM run them in parallel only where BLAS can be held to one
thread meanwhile (:func:`one_blas_thread`, by threadpoolctl where it is installed): two
threads' GEMMs, each on BLAS's two threads, ran slower than one thread's (case b: 73-88 ms
against 55-79), and on one BLAS thread each, faster (35-58 ms).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, TypeVar

Item = TypeVar("Item")

_lock = threading.Lock()
_in_lane = threading.local()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def run_parallel(items: Iterable[Item], job: Callable[[Item], None], workers: int) -> None:
    """Run ``job(item)`` for every item, on at most `workers` threads (the calling thread
    and pool threads), each taking the next item when it is done with one. A job that runs
    loops of its own runs them on its own thread: the lanes never multiply, and a pool
    thread never waits for the pool."""
    pending = list(items)
    lanes = min(workers, len(pending))
    if lanes <= 1 or getattr(_in_lane, "active", False):
        for item in pending:
            job(item)
        return
    queue, taking = iter(pending), threading.Lock()

    def lane() -> None:
        _in_lane.active = True
        try:
            while True:
                with taking:
                    item = next(queue, _DONE)
                if item is _DONE:
                    return
                job(item)  # type: ignore[arg-type]
        finally:
            _in_lane.active = False

    futures = [_executor(lanes - 1).submit(lane) for _ in range(lanes - 1)]
    try:
        lane()
    finally:  # every lane has stopped writing before this returns or raises
        wait(futures)
    for future in futures:
        future.result()


def even_chunk_length(length: int, longest: int, copies: int, parts: int) -> int:
    """The length of chunks that split `length` (each of `copies` times) into pieces of at
    most `longest`, near-equal and, where there are several, as few as make their number a
    multiple of `parts` where `length` allows: `parts` threads then share them evenly (18
    rows and 10 on two threads kept one waiting). One chunk stays whole: split, a small
    problem ran slower (two threads' calls cost more than they share)."""
    count = -(-length // max(1, longest))
    while copies * count > 1 and (copies * count) % parts and count < length:
        count += 1
    return -(-length // count)


def _executor(threads: int) -> ThreadPoolExecutor:
    """The shared pool, grown to at least `threads` threads."""
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < threads:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool, _pool_size = ThreadPoolExecutor(threads, thread_name_prefix="arrayconv"), threads
        return _pool


_DONE = object()

_blas_controller: Any = None


def gemm_lanes(workers: int) -> int:
    """Threads that may each run their own GEMMs under :func:`one_blas_thread`: `workers`
    on the main thread where threadpoolctl is installed (the ``threads`` extra), else 1.

    Off the main thread BLAS keeps its threads: OpenBLAS (0.3.31, pthreads) ignores a
    request for more threads made from another thread, so a limit set there could never be
    lifted (threadpoolctl is made for limits set on the main thread), and a thread pool
    that calls arrayconv (dask's) already runs its calls side by side.
    """
    on_main = threading.current_thread() is threading.main_thread()
    return workers if on_main and _controller() is not None else 1


def run_gemm_jobs(items: Iterable[Item], job: Callable[[Item], None], lanes: int, macs_per_call: int) -> None:
    """Run ``job(item)`` for every item, whose GEMMs run on `lanes` threads (from
    :func:`gemm_lanes`) with BLAS on one thread each, or in order on this thread where
    there is one lane or one item (BLAS threaded only for big calls: :func:`small_gemms`)."""
    pending = list(items)
    if lanes > 1 and len(pending) > 1:
        with one_blas_thread():
            run_parallel(pending, job, lanes)
    else:
        with small_gemms(macs_per_call, lanes):
            for item in pending:
                job(item)


def small_gemms(macs_per_call: int, lanes: int) -> contextlib.AbstractContextManager[None]:
    """BLAS held to one thread for GEMM calls of fewer than :data:`_THREADED_MACS`
    multiply-adds, where :func:`gemm_lanes` allows (`lanes` over 1): a call that short waits
    out a scheduler's time slice whenever a busy machine preempts one of BLAS's threads (a
    0.7 ms 1x1 layer took 16 ms with both cores busy; on one BLAS thread, 1.1 and 1.5 ms)."""
    return one_blas_thread() if lanes > 1 and macs_per_call < _THREADED_MACS else contextlib.nullcontext()


# Multiply-adds of a GEMM call worth BLAS's threads: about 3 ms on one core, as long as
# the time slices that a preempted thread waits out.
_THREADED_MACS = 1 << 25


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS held to one thread inside, then given back its threads (about 55 us in all);
    for the main thread, where :func:`gemm_lanes` is over 1. The setting is the process's:
    another thread's GEMMs meanwhile run on one thread too."""
    limit = _controller().limit(limits=1)
    try:
        yield
    finally:
        limit.restore_original_limits()


def _controller() -> Any:
    """threadpoolctl's view of the BLAS libraries loaded (made once), or None without
    threadpoolctl or without a BLAS it knows."""
    global _blas_controller
    if _blas_controller is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _blas_controller = False
        else:
            blas = ThreadpoolController().select(user_api="blas")
            _blas_controller = blas if len(blas) else False
    return _blas_controller or None
