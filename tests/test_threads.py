"""The shared worker pool: every item once, at most `workers` at a time, errors raised."""

import threading
import time

import pytest

from arrayconv._threads import run_parallel


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
