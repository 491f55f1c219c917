"""A stand-in for the CuPy calls of `PinnedCopies`, whose copies finish late.

Each stream is a worker thread that runs its work in order; a copy sleeps before it
copies, so that a reader who does not wait for it (an event) sees the old bytes. The
filter, which the host runs at once, stands for work queued on the current stream: so the
current stream waits for an event by blocking the host as well. Only the calls
`PinnedCopies` makes are here, and they count what they did.
"""

import contextlib
import queue
import threading
import time
from types import SimpleNamespace

import numpy as np

COPY_SECONDS = 0.003


class Event:
    def __init__(self, block=False, disable_timing=False):
        self._done = threading.Event()
        self._done.set()

    def synchronize(self):
        self._done.wait()


class Stream:
    def __init__(self, non_blocking=False, current=False):
        self._work = queue.Queue()
        self._current = current
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            self._work.get()()
            self._work.task_done()

    def put(self, work):
        self._work.put(work)

    def record(self, event=None):
        event = Event() if event is None else event
        event._done.clear()
        self.put(event._done.set)
        return event

    def wait_event(self, event):
        self.put(event._done.wait)
        if self._current:
            event.synchronize()

    def synchronize(self):
        self._work.join()


class DeviceArray(np.ndarray):
    def set(self, arr, stream):
        assert arr.shape == self.shape and arr.dtype == self.dtype
        calls["uploads"] += 1
        stream.put(lambda: (time.sleep(COPY_SECONDS), np.copyto(self, arr)))


calls = {"uploads": 0, "downloads": 0, "pinned": 0}
_current = Stream(current=True)


def alloc_pinned_memory(nbytes):
    calls["pinned"] += 1
    return bytearray(nbytes)


def asnumpy(a, stream, out, blocking):
    assert not blocking and out.shape == a.shape and out.dtype == a.dtype
    calls["downloads"] += 1
    stream.put(lambda: (time.sleep(COPY_SECONDS), np.copyto(out, a)))


def empty(shape, dtype):
    return np.full(shape, np.nan, dtype).view(DeviceArray)


cupy = SimpleNamespace(
    cuda=SimpleNamespace(
        Device=contextlib.nullcontext,
        Stream=Stream,
        Event=Event,
        get_current_stream=lambda: _current,
        alloc_pinned_memory=alloc_pinned_memory,
    ),
    asnumpy=asnumpy,
    empty=empty,
)
