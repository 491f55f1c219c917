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
import ctypes
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import numpy as np

from . import config as _config
from . import jit
from .fitted import fitted

Item = TypeVar("Item")

_in_lane = threading.local()
_DONE = object()


def run_parallel(items: Iterable[Item], job: Callable[[Item], None], workers: int) -> None:
    """Run ``job(item)`` for every item, on at most `workers` threads (the calling thread
    and the pool's idle threads), each taking the next item when it is done with one. A
    job that runs loops of its own runs them on its own thread: the lanes never multiply,
    and a pool thread never waits for the pool. Callers on several threads at once share
    the pool: one that finds no idle thread runs its items itself."""
    pending = list(items)
    lanes = min(workers, len(pending))
    helpers = [] if lanes <= 1 or getattr(_in_lane, "active", False) else _take_lanes(lanes - 1)
    if not helpers:
        for item in pending:
            job(item)
        return
    queue, taking = iter(pending), threading.Lock()
    started: set[int] = set()  # the lanes (thread idents) that took the queue's lock, under it

    def lane() -> None:
        while True:
            with taking:
                started.add(threading.get_ident())
                item = next(queue, _DONE)
            if item is _DONE:
                return
            job(item)  # type: ignore[arg-type]

    for helper in helpers:
        helper.start(lane)
    _in_lane.active = True
    try:
        lane()
    finally:  # every lane that took an item has stopped writing before this returns or raises
        _in_lane.active = False
        with taking:  # the queue emptied (a job raised), a helper not started by now is not waited for
            for _ in queue:
                pass
            waited = [helper for helper in helpers if helper.ident in started]
            for helper in helpers:
                if helper.ident not in started:
                    helper.detach()
        errors = [helper.join() for helper in waited]
        _give_back(waited)
    for error in errors:
        if error is not None:
            raise error


class _Lane:
    """A pool thread that runs one task at a time, started and joined through two locks:
    a parallel loop's hand-over costs about half what ``ThreadPoolExecutor``'s submit and
    wait did (``python -m bench.handover``), tens of microseconds on a 2-core VM. Waking
    the thread can take longer than a small loop: a caller that has run every item itself
    detaches a lane that has not started, which goes back to the pool when its task ends."""

    def __init__(self) -> None:
        self._go, self._done = threading.Lock(), threading.Lock()
        self._go.acquire()
        self._done.acquire()
        self._task: Callable[[], None] = _nothing
        self._ended = np.zeros(1, np.int32)  # set once the task has ended and _done is released
        self._error: BaseException | None = None
        self._detached = False
        thread = threading.Thread(target=self._serve, name="arrayconv", daemon=True)
        thread.start()
        self.ident = thread.ident

    def start(self, task: Callable[[], None]) -> None:
        """Run `task` on this thread."""
        self._task, self._error, self._detached = task, None, False
        self._ended[0] = 0
        self._go.release()

    def join(self) -> BaseException | None:
        """Wait for the task to end; what it raised, if anything. Where numba's loops are
        loaded, the caller first looks for the end without the GIL (:func:`_looker`)."""
        look = _looker()
        if look is not None:
            look(self._ended)
        self._done.acquire()
        return self._error

    def detach(self) -> None:
        """Not waited for: the lane goes back to the pool itself when its task ends."""
        self._detached = True

    def _serve(self) -> None:
        _in_lane.active = True
        while True:
            self._go.acquire()
            try:
                self._task()
            except BaseException as exc:  # handed to the caller by join
                self._error = exc
            if self._detached:
                _give_back([self])
            else:
                self._done.release()
                self._ended[0] = 1


def _nothing() -> None:
    pass


def _looker() -> Callable[[np.ndarray], None] | None:
    """``look(ended)``: waits until ``ended[0]`` is set, or about 0.1 ms, in numba's loop,
    which holds no GIL, then a few microseconds more, for the thread that set it to go back
    to sleep and let go of the GIL. A caller that blocks on a lock instead waits tens of
    microseconds more for its own wake-up on a VM, and again for the GIL if it wakes while
    the other thread holds it (a 512x512 3x3 correlation on two threads: 0.20 -> 0.16 ms).
    The loop never yields the CPU: on a busy machine a yield can hand it to another process
    for a time slice. None where numba is not loaded yet (no call has run compiled loops:
    importing it would cost more than this saves) or libc cannot be called."""
    global _look
    if _look is None and "numba" in sys.modules and jit.available():
        try:
            opaque = ctypes.CDLL(None).labs
        except (AttributeError, OSError, TypeError):  # Windows
            _look = False
        else:
            opaque.restype, opaque.argtypes = ctypes.c_long, (ctypes.c_long,)
            wait = jit.load(f"arrayconv_look_{_LOOK_VERSION}", _LOOK_SOURCE).look
            _look = functools.partial(_run_look, wait, opaque)
    return _look or None


def _run_look(wait: Callable[..., None], opaque: Any, ended: np.ndarray) -> None:
    wait(ended, _LOOKS, _SETTLE, opaque)


_look: Any = None
# Looks at most (about a nanosecond each), then the looks for the other thread to settle.
_LOOKS, _SETTLE = 1 << 16, 1 << 11
_LOOK_VERSION = 1
_LOOK_SOURCE = '''"""Generated by arrayconv._runtime.threads: a wait that holds no GIL."""
from numba import njit


@njit(nogil=True, cache=True)
def look(ended, looks, settle, opaque):
    for _ in range(looks):
        if ended[0]:
            break
        opaque(0)  # a call the compiler cannot see into: ended[0] is read again after it
    for _ in range(settle):
        opaque(0)
'''


_lock = threading.Lock()
_idle: list[_Lane] = []
_made = 0


def _take_lanes(count: int) -> list[_Lane]:
    """Up to `count` idle pool threads, the pool grown to `count` threads where it has
    fewer; none taken are idle until :func:`_give_back`."""
    global _made
    with _lock:
        taken = [_idle.pop() for _ in range(min(count, len(_idle)))]
        while len(taken) < count and _made < count:
            taken.append(_Lane())
            _made += 1
    return taken


def _give_back(lanes: list[_Lane]) -> None:
    with _lock:
        _idle.extend(lanes)


def _forget_lanes() -> None:
    """In a forked child, where the pool's threads do not exist: a new, empty pool."""
    global _lock, _made
    _lock, _made = threading.Lock(), 0
    _idle.clear()


os.register_at_fork(after_in_child=_forget_lanes)


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
    if len(pending) == 1 and splits_gemm(macs_per_call):
        gemm = functools.partial(matmul_split, parts=_config.cores(), threads=lanes)
    with one_blas_thread():
        if lanes > 1 and len(pending) > 1:
            run_parallel(pending, lambda item: job(item, _matmul), lanes)
        else:
            for item in pending:
                job(item, gemm)


def gemm_share(items: int, macs_per_call: int, lanes: int) -> float:
    """Share of the GEMM rate :func:`run_gemm_jobs` reaches on `items` items whose GEMM calls
    make `macs_per_call` multiply-adds each, on `lanes`: each item's on one lane, one item's
    calls split over them all where big enough (:data:`_SPLIT_MACS`)."""
    if items >= lanes or (items == 1 and splits_gemm(macs_per_call)):
        return 1.0
    return items / lanes


def splits_gemm(macs: int) -> bool:
    """Whether one item's GEMM calls of `macs` multiply-adds are worth splitting over the
    cores (:data:`_SPLIT_MACS`)."""
    return macs >= _SPLIT_MACS


def _matmul(a: Any, b: Any, out: Any) -> None:
    np.matmul(a, b, out=out)


def matmul_split(a: Any, b: Any, out: Any, parts: int, threads: int) -> None:
    """``matmul(a, b, out=out)`` (NumPy) in `parts` blocks run on `threads` threads: a
    stack of GEMMs (`a`, `b` and `out` sharing a first axis of at least
    :data:`_SPLIT_STACKED` per part, Winograd's) by whole GEMMs, each as wide as it is (16
    of 256 x 256 x 49 on two cores: 0.55x the time of halves of their columns); else the
    columns of `b` and `out` (last axis), or where they are too few for every part to run
    at the full rate (:data:`_FULL_RATE_GEMM`), the rows of `a` and `out`."""
    stacked = a.shape[0] if a.ndim == b.ndim == out.ndim >= 3 and a.shape[0] == b.shape[0] > 1 else 0
    if stacked >= _SPLIT_STACKED * parts:
        block = -(-stacked // parts)
        starts = range(0, stacked, block)
        run_parallel(starts, lambda g: np.matmul(a[g : g + block], b[g : g + block], out=out[g : g + block]), threads)
        return
    columns, rows, side = b.shape[-1], a.shape[-2], _FULL_RATE_GEMM["side"]
    if columns < parts * side <= rows:  # blocks of a's rows, each as wide as the GEMM
        block = -(-rows // parts) // -_SPLIT_COLUMNS * -_SPLIT_COLUMNS
        run_parallel(range(0, rows, block), lambda r: np.matmul(a[..., r : r + block, :], b, out=out[..., r : r + block, :]), threads)
        return
    block = -(-columns // max(1, parts)) // -_SPLIT_COLUMNS * -_SPLIT_COLUMNS
    starts = range(0, columns, block)
    run_parallel(starts, lambda c: np.matmul(a, b[..., c : c + block], out=out[..., c : c + block]), threads)


# GEMMs narrower than this side a part are split by rows, not columns: each part then reads
# its share of `a` (a layer's kernel) once, not all of it at a fraction of the width (512 x
# 2304 x 49 float32 on a Zen 2 core: half of the rows 0.82 ms, half of the columns 1.10 ms).
_FULL_RATE_GEMM = fitted("rates", "FULL_RATE_GEMM")
# Multiply-adds of a GEMM call worth sharing over threads: about 3 ms on one core; shorter
# calls lose more to waking a thread than they share. Blocks of columns: whole cache lines.
_SPLIT_MACS = 1 << 25
_SPLIT_COLUMNS = 16
# GEMMs of a stack a part, at least, where a stack is split by whole GEMMs (at 4 the parts
# are within 1.25x of one another's work).
_SPLIT_STACKED = 4


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
