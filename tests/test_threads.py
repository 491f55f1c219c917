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
    done = []

    def job(item: int) -> None:
        if item == 3:
            raise ValueError("item 3")
        time.sleep(0.001)
        done.append(item)

    with pytest.raises(ValueError, match="item 3"):
        run_parallel(range(20), job, 3)
    count = len(done)
    time.sleep(0.05)
    assert len(done) == count  # nothing still running after the raise
