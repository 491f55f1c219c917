"""Time benchmark cases with whichever ``arrayconv`` this process imports (a child of
:mod:`bench.compare`).

Run as a script, not imported from the package: ``python case_timer.py DEVICE REPEATS
CASES_JSON`` prints one JSON line, for each case its method and the medians of its plain
call, its plan's call and the host's time of a plan call. It uses only arrayconv's public
functions (and NumPy, CuPy), so that it times an older arrayconv as well as this one:
``PYTHONPATH`` decides which is imported.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import arrayconv as ac


def timers(device: str) -> tuple[Any, Callable[[Callable[[], object]], float], Callable[[Callable[[], object]], float]]:
    """The array module, the timer of one call (wall clock, or CUDA events) and the timer
    of the host's share of a call started on an idle device."""
    if device == "cpu":

        def wall(fn: Callable[[], object]) -> float:
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start

        return np, wall, wall
    import cupy

    def host(fn: Callable[[], object]) -> float:
        cupy.cuda.Device().synchronize()
        start = time.perf_counter()
        fn()
        seconds = time.perf_counter() - start
        cupy.cuda.Device().synchronize()
        return seconds

    return cupy, cuda_events(cupy), host


def cuda_events(cupy: Any) -> Callable[[Callable[[], object]], float]:
    """The timer of one call on the current GPU by CUDA events: seconds from before its
    first launch to the end of its last kernel (the host's time between launches counted
    where the GPU waits for it)."""

    def events(fn: Callable[[], object]) -> float:
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) / 1e3

    return events


def time_case(case: dict, repeats: int, device: str) -> dict:
    """Medians over `repeats` rounds (after two warm-up calls each; plain and plan in turn,
    in a new order each round) of `case`'s plain 'auto' call, its plan's call, and the host's
    time of a plan call."""
    xp, timer, host = timers(device)
    rng, order = np.random.default_rng(0), np.random.default_rng(1)
    x = xp.asarray(rng.standard_normal(case["x"], dtype=np.float32))
    w = xp.asarray(rng.standard_normal(case["w"], dtype=np.float32))
    if case["kind"] == "image":
        plan = ac.plan_correlate(w, x.shape, case["mode"], dtype=w.dtype)
        calls = {"plain": lambda: ac.correlate(x, w, case["mode"]), "plan": lambda: plan(x)}
    else:
        plan = ac.plan_conv(w, x.shape, dtype=w.dtype, padding=case["padding"])
        calls = {"plain": lambda: ac.conv(x, w, padding=case["padding"]), "plan": lambda: plan(x)}
    for fn in calls.values():
        fn(), fn()
    times: dict[str, list[float]] = {"plain": [], "plan": [], "plan host": []}
    for _ in range(repeats):
        for name in order.permutation(list(calls)):
            times[name].append(timer(calls[name]))
        times["plan host"].append(host(calls["plan"]))
    return {"method": plan.method, "median_s": {name: statistics.median(t) for name, t in times.items()}}


def main(argv: list[str]) -> int:
    device, repeats, cases = argv[0], int(argv[1]), json.loads(argv[2])
    result = {case["id"]: time_case(case, repeats, device) for case in cases}
    print(json.dumps({"arrayconv": ac.__version__, "path": ac.__file__, "cases": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
