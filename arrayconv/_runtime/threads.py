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
import functools
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, TypeVar

import numpy as np

from . import config as _config

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
    where :func:`holds_blas`, else 1."""
    return workers if holds_blas() else 1


def holds_blas() -> bool:
    """Whether arrayconv holds BLAS to one thread around its GEMMs: on the main thread,
    where threadpoolctl is installed (the ``threads`` extra).

    Off the main thread BLAS keeps its threads: OpenBLAS (0.3.31, pthreads) ignores a
    request for more threads made from another thread, so a limit set there could never be
    lifted (threadpoolctl is made for limits set on the main thread), and a thread pool
    that calls arrayconv (dask's) already runs its calls side by side.
    """
    return threading.current_thread() is threading.main_thread() and _controller() is not None


Gemm = Callable[[Any, Any, Any], None]


def run_gemm_jobs(items: Iterable[Item], job: Callable[[Item, Gemm], None], lanes: int, macs_per_call: int) -> None:
    """Run ``job(item, gemm)`` for every item, `gemm(a, b, out)` being the matmul its big
    GEMM calls make. Where :func:`holds_blas`, BLAS runs on one thread (a call on BLAS's own
    threads waits out a scheduler's time slice whenever a busy machine preempts one: a
    0.7 ms 1x1 layer took 16 ms with both cores busy, on one BLAS thread 1.1-1.5 ms):
    several items share the `lanes`; one item's calls of :data:`_SPLIT_MACS` or more are
    split by columns into a block per core on the lanes (:func:`matmul_split`). The blocks
    follow the cores, not the lanes, so any number of workers gives the same bits."""
    pending = list(items)
    if not holds_blas():
        for item in pending:
            job(item, _matmul)
        return
    gemm: Gemm = _matmul
    if len(pending) == 1 and macs_per_call >= _SPLIT_MACS:
        gemm = functools.partial(matmul_split, parts=_config.cores(), threads=lanes)
    with one_blas_thread():
        if lanes > 1 and len(pending) > 1:
            run_parallel(pending, lambda item: job(item, _matmul), lanes)
        else:
            for item in pending:
                job(item, gemm)


def _matmul(a: Any, b: Any, out: Any) -> None:
    np.matmul(a, b, out=out)


def matmul_split(a: Any, b: Any, out: Any, parts: int, threads: int) -> None:
    """``matmul(a, b, out=out)`` (NumPy), the columns of `b` and `out` (last axis) in
    `parts` blocks run on `threads` threads."""
    columns = b.shape[-1]
    block = -(-columns // max(1, parts)) // -_SPLIT_COLUMNS * -_SPLIT_COLUMNS
    starts = range(0, columns, block)
    run_parallel(starts, lambda c: np.matmul(a, b[..., c : c + block], out=out[..., c : c + block]), threads)


# Multiply-adds of a GEMM call worth sharing over threads: about 3 ms on one core; shorter
# calls lose more to waking a thread than they share. Blocks of columns: whole cache lines.
_SPLIT_MACS = 1 << 25
_SPLIT_COLUMNS = 16


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
