"""Same kernel, many frames: a plan against the plain call, per frame.

Usage: ``python -m bench.plans [--case c] [--frames 100] [--device cpu|gpu] [--out bench/results]``.
Each frame is filtered by every callable in turn (interleaved, in a new random order for
each frame), so drifts of the machine and the first touch of a frame hit all of them alike;
the report gives per-frame medians and ratios. On the GPU the frames live on the device,
the peers are cupyx.scipy.signal's and each call is timed with CUDA events. Writes
``plans-<date>.md`` and ``.json`` (``plans-gpu-<date>.*`` on the GPU).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import arrayconv as ac

from .cases import CASES, Case
from .devices import Device, device, ms_digits, report_stem
from .run import command_line, report_head


def callables(case: Case, kernel: Any, where: Device) -> dict[str, Callable[[Any], object]]:
    """Per-frame callables for a single-image case: plan, plain calls, SciPy-like peers."""
    plan = ac.plan_correlate(kernel, case.x, case.mode, dtype=kernel.dtype)
    out = where.xp.empty(plan.y_shape, dtype=plan.y_dtype)
    flipped = kernel[::-1, ::-1]
    peers = where.signal_name
    return {
        f"arrayconv plan ({plan.method}, out=)": lambda f: plan(f, out=out),
        "arrayconv plan (new result)": plan,
        "arrayconv correlate auto": lambda f: ac.correlate(f, kernel, case.mode),
        f"arrayconv correlate {plan.method}": lambda f: ac.correlate(f, kernel, case.mode, plan.method),
        f"{peers}.fftconvolve": lambda f: where.signal.fftconvolve(f, flipped, case.mode),
        f"{peers}.oaconvolve": lambda f: where.signal.oaconvolve(f, flipped, case.mode),
    }


def run(case: Case, n_frames: int, where: Device) -> dict:
    """Time every callable on each of `n_frames` random frames, interleaved."""
    rng = np.random.default_rng(0)
    kernel = where.xp.asarray(rng.standard_normal(case.w, dtype=np.float32))
    frames = where.xp.asarray(rng.standard_normal((n_frames, *case.x), dtype=np.float32))
    runs = callables(case, kernel, where)
    for fn in runs.values():  # warm-up
        fn(frames[0])
    times: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for frame in frames:
        rng.shuffle(names)  # no callable always first on a frame (the one that loads it into cache)
        for name in names:
            times[name].append(where.time_call(lambda: runs[name](frame)))
    medians = {name: statistics.median(t) for name, t in times.items()}
    plan_name = next(iter(runs))
    return {
        "device": where.name,
        "versions": where.versions(),
        "case": case.__dict__,
        "frames": n_frames,
        "median_s": medians,
        "total_s": {name: sum(t) for name, t in times.items()},
        "speedup_plan_over_plain_auto": medians["arrayconv correlate auto"] / medians[plan_name],
        "plan": plan_name,
    }


def write(result: dict, folder: Path) -> Path:
    """Markdown and JSON reports; returns the Markdown path."""
    date = datetime.date.today().isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / report_stem("plans", result["device"], date)
    result = {"date": date, "command": command_line("python -m bench.plans"), **result}
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1))
    plain = result["median_s"]["arrayconv correlate auto"]
    lines = [
        *report_head(f"Same kernel, many frames: plan vs plain call, {result['device'].upper()} ({date})", result["command"], result["versions"]),
        f"Case {result['case']['id']}: image {result['case']['x']}, kernel {result['case']['w']}, "
        f"mode {result['case']['mode']!r}, float32, {result['frames']} frames, each filtered by every callable in turn, in a new random order per frame.",
        "",
        "| callable | median per frame (ms) | total (s) | plain auto call / this |",
        "|---|---|---|---|",
    ]
    digits = ms_digits(result["device"])
    for name, t in sorted(result["median_s"].items(), key=lambda kv: kv[1]):
        lines.append(f"| {name} | {t * 1e3:.{digits}f} | {result['total_s'][name]:.2f} | {plain / t:.2f} |")
    lines += ["", f"Plan speed-up per frame over the plain `correlate` call: **{result['speedup_plan_over_plain_auto']:.2f}x**."]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return stem.with_suffix(".md")


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    images = [c.id for c in CASES if c.kind == "image"]
    parser.add_argument("--case", default="c", choices=images)
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    result = run(next(c for c in CASES if c.id == args.case), args.frames, device(args.device))
    path = write(result, Path(args.out))
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
