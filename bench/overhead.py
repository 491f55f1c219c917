"""What a call costs beyond its arithmetic: plain calls, plans and the peers on small
problems, and where a plain call's host time goes.

Usage: ``python -m bench.overhead [--device cpu|gpu] [--repeats 200] [--out
bench/results]``. For each problem, a plain ``correlate`` call (which on CuPy arrays makes
its plan every time, and on NumPy arrays keeps it for a small kernel), a call of a plan
made once, and the peers' ``correlate`` (``scipy.signal``'s, or on the GPU
``cupyx.scipy.signal``'s 'direct' and 'fft', its 'auto' taking 1-D input only; and
``ndimage``'s where the mode is 'same' and the kernel odd) are timed interleaved, in a new
order each round, with the device's timer (the wall clock, or CUDA events, which count the
host's time between launches when the GPU waits for it); medians. Then the plain call on
the 64x64 image with a 3x3 kernel runs under cProfile: the functions where its host time
goes, per call. Last, each benchmark case up to g7 ('auto'): its plain call, a call of its plan and
the host's time of that plan call from an idle device (on a GPU, what the launches cost
the host; where it nears the call's time, the call is host-bound). Writes
``overhead-<date>.md`` and ``.json`` (``overhead-gpu-<date>.*`` on the GPU).
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import datetime
import json
import pstats
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import arrayconv as ac

from .case_timer import time_case
from .cases import CASES, Case
from .devices import Device, device, report_stem
from .run import command_line, report_head

# (label, image shape, kernel shape, mode)
PROBLEMS = [
    ("1000 samples, 9 taps", (1000,), (9,), "same"),
    ("64x64, 1x1", (64, 64), (1, 1), "same"),
    ("64x64, 3x3", (64, 64), (3, 3), "same"),
    ("512x512, 3x3", (512, 512), (3, 3), "same"),
    ("1920x1920, 30x30, 'valid' (case c)", (1920, 1920), (30, 30), "valid"),
]
PROFILED = 2  # the index in PROBLEMS of the problem whose plain call is profiled
# The benchmark cases timed whole (the larger ones take their arithmetic's time, not a
# fixed cost's), and the rounds of each.
TIMED_CASES = [case for case in CASES if case.id in ("a", "b", "c", "d", "e3", "f", "g3", "g7")]
CASE_REPEATS = 15
PROFILE_CALLS, PROFILE_ROWS = 200, 15


def callables(x: Any, w: Any, mode: str, where: Device) -> dict[str, Callable[[], object]]:
    """The plain call, a plan's call (and into a given array) and the peers' calls on image
    `x` and kernel `w`."""
    plan = ac.plan_correlate(w, x.shape, mode, dtype=w.dtype)
    out = where.xp.empty(plan.y_shape, plan.y_dtype)
    calls: dict[str, Callable[[], object]] = {
        "arrayconv correlate (plain call)": lambda: ac.correlate(x, w, mode),
        f"arrayconv plan ({plan.method})": lambda: plan(x),
        "arrayconv plan, out=": lambda: plan(x, out=out),
    }
    # cupyx's method='auto' takes 1-D input only (NotImplementedError on an image): on the
    # GPU its two methods are timed by name.
    for method in ("auto",) if where.name == "cpu" else ("direct", "fft"):
        label = f"{where.signal_name}.correlate" + ("" if method == "auto" else f" ({method})")
        calls[label] = lambda m=method: where.signal.correlate(x, w, mode, m)
    if mode == "same" and all(n % 2 for n in w.shape):
        if where.name == "gpu":
            import cupyx.scipy.ndimage as ndimage
        else:
            import scipy.ndimage as ndimage
        calls[f"{ndimage.__name__}.correlate"] = lambda: ndimage.correlate(x, w, mode="constant")
    return calls


def run(
    repeats: int,
    where: Device,
    problems: list[tuple[str, tuple[int, ...], tuple[int, ...], str]] = PROBLEMS,
    cases: list[Case] = TIMED_CASES,
    case_repeats: int = CASE_REPEATS,
) -> dict:
    """Median time of each callable on each problem over `repeats` interleaved rounds
    (after two warm-up calls each), the profile of the plain call on
    ``problems[PROFILED]`` (the last problem if fewer), and
    :func:`.case_timer.time_case` of each of `cases`."""
    rng, order = np.random.default_rng(0), random.Random(0)
    rows, profiled = [], None
    for i, (label, x_shape, w_shape, mode) in enumerate(problems):
        x = where.xp.asarray(rng.standard_normal(x_shape, dtype=np.float32))
        w = where.xp.asarray(rng.standard_normal(w_shape, dtype=np.float32))
        calls = callables(x, w, mode, where)
        times: dict[str, list[float]] = {name: [] for name in calls}
        for fn in calls.values():
            fn(), fn()
        names = list(calls)
        for _ in range(repeats):
            order.shuffle(names)
            for name in names:
                times[name].append(where.time_call(calls[name]))
        rows.append({"problem": label, "median_s": {name: statistics.median(t) for name, t in times.items()}})
        if i == min(PROFILED, len(problems) - 1):
            profiled = {"problem": label, "functions": _profile(calls["arrayconv correlate (plain call)"])}
    return {
        "date": datetime.date.today().isoformat(),
        "command": command_line("python -m bench.overhead"),
        "device": where.name,
        "versions": where.versions(),
        "repeats": repeats,
        "rows": rows,
        "profile": profiled,
        "cases": [{"case": case.id, **time_case(dataclasses.asdict(case), case_repeats, where.name)} for case in cases],
    }


def _profile(call: Callable[[], object]) -> list[dict]:
    """The functions with the most own time over :data:`PROFILE_CALLS` calls of `call`:
    name, calls and own and total microseconds, per call of `call`."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(PROFILE_CALLS):
        call()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    functions = [
        {
            "function": f"{Path(file).name}:{line} {name}" if line else name,
            "calls": n / PROFILE_CALLS,
            "own_us": own / PROFILE_CALLS * 1e6,
            "total_us": total / PROFILE_CALLS * 1e6,
        }
        for (file, line, name), (_, n, own, total, _) in stats.items()
    ]
    return sorted(functions, key=lambda f: -f["own_us"])[:PROFILE_ROWS]


def write(result: dict, folder: Path) -> Path:
    """JSON and Markdown reports; returns the Markdown path."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / report_stem("overhead", result["device"], result["date"])
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1))
    lines = report_head(f"Fixed cost of a call, {result['device'].upper()} ({result['date']})", result["command"], result["versions"])
    timer = "CUDA events around each call" if result["device"] == "gpu" else "the wall clock around each call"
    lines += [f"float32, random data; {timer}, median of {result['repeats']} interleaved rounds after two warm-up calls, in microseconds.", ""]
    for row in result["rows"]:
        lines += [f"## {row['problem']}", "", "| callable | median (us) |", "|---|---|"]
        lines += [f"| {name} | {t * 1e6:.1f} |" for name, t in sorted(row["median_s"].items(), key=lambda item: item[1])]
        lines.append("")
    profile = result["profile"]
    lines += [f"## Where a plain call's host time goes ({profile['problem']}; cProfile, per call)", ""]
    lines += ["| function | calls | own (us) | with callees (us) |", "|---|---|---|---|"]
    lines += [f"| {f['function']} | {f['calls']:g} | {f['own_us']:.1f} | {f['total_us']:.1f} |" for f in profile["functions"]]
    lines += ["", "## The benchmark cases ('auto'; plan's host time: from an idle device to the call's return)", ""]
    lines += ["| case | method | plain call (us) | plan call (us) | plan's host time (us) |", "|---|---|---|---|---|"]
    lines += [
        f"| {row['case']} | {row['method']} | " + " | ".join(f"{row['median_s'][name] * 1e6:.0f}" for name in ("plain", "plan", "plan host")) + " |"
        for row in result.get("cases", [])
    ]
    path = stem.with_suffix(".md")
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    path = write(run(args.repeats, device(args.device)), Path(args.out))
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
