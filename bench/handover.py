"""What handing work to a second thread costs: arrayconv's pool against ``ThreadPoolExecutor``.

Usage: ``python -m bench.handover [--repeats 300] [--out bench/results]``. Four equal jobs
that release the GIL (``numpy.multiply`` over float64 arrays, sized to 5-160 us each) run
on the calling thread one after another, through :func:`arrayconv._runtime.threads.run_parallel`
on two threads, and on two threads through a ``concurrent.futures.ThreadPoolExecutor``
(a job submitted, the caller taking its share, then ``wait``: how arrayconv's pool ran
before 2026-12-02), interleaved; medians. The hand-over is what a parallel run costs
beyond half the serial time. Writes ``handover-<date>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import numpy as np

from arrayconv._runtime.threads import run_parallel

from .peers import interleaved_medians, time_call
from .run import new_report, save_report, versions

_SAMPLES = (4_000, 16_000, 64_000, 128_000)  # float64 samples a job multiplies


def executor_parallel(pool: ThreadPoolExecutor, items: list[int], job: Callable[[int], None]) -> None:
    """``job`` over `items` on the calling thread and one executor thread, each taking the next."""
    queue, taking = iter(items), threading.Lock()

    def lane() -> None:
        while (item := _next(queue, taking)) is not None:
            job(item)

    future = pool.submit(lane)
    lane()
    wait([future])
    future.result()


def _next(queue, taking: threading.Lock) -> int | None:
    with taking:
        return next(queue, None)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    rows = []
    with ThreadPoolExecutor(1) as pool:
        for samples in _SAMPLES:
            a, out = np.random.default_rng(0).random((4, samples)), np.empty((4, samples))
            job = lambda i: np.multiply(a[i], 1.0001, out=out[i])
            calls = {
                "serial": lambda: [job(i) for i in range(4)],
                "arrayconv pool": lambda: run_parallel(range(4), job, 2),
                "ThreadPoolExecutor": lambda: executor_parallel(pool, list(range(4)), job),
            }
            medians = interleaved_medians(calls, dict.fromkeys(calls, time_call), args.repeats)
            half = medians["serial"] / 2
            rows.append({"samples": samples, "median_s": medians, "handover_s": {k: medians[k] - half for k in calls if k != "serial"}})
            print(samples, {k: f"{v * 1e6:.1f} us" for k, v in medians.items()})
    report = new_report("python -m bench.handover", argv, versions(), rows=rows)
    prose = ["", "Microseconds, medians of interleaved calls: four jobs one after another, and on two threads; the", "hand-over is a parallel run's time beyond half the serial one."]
    columns = ["job samples", "serial", "arrayconv pool", "ThreadPoolExecutor", "hand-over: pool", "hand-over: executor"]
    table = []
    for row in rows:
        m, h = row["median_s"], row["handover_s"]
        cells = [m["serial"], m["arrayconv pool"], m["ThreadPoolExecutor"], h["arrayconv pool"], h["ThreadPoolExecutor"]]
        table.append(f"| {row['samples']} | " + " | ".join(f"{c * 1e6:.1f}" for c in cells) + " |")
    stem = Path(args.out) / f"handover-{report['date']}"
    print(save_report(stem, report, "Handing work to a second thread", prose, columns, table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
