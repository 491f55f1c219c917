"""Timings that judge 'auto' on the problems the tests ask about.

Usage, from the repository root: ``python -m bench.picks [--out tests/data/pick-timings.json]``.

Tests once pinned 'auto's exact pick on problems where two methods' estimates lie a few
percent apart, so a small change of the cost model, or another machine, flipped them. Here
each such problem has every method timed as the sweep times it (``bench.sweep.time_point``:
interleaved medians; plain calls reuse the plan they keep), in ``--runs`` rounds through all
the problems, and the median of the rounds' medians is kept; then
``tests/test_choice.py`` asserts that auto's pick is within 1.2x of the fastest method on
these committed timings. Rerun after a change that moves the methods' speeds, on the CI
machine, and commit the file.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import statistics
import sys
from pathlib import Path

import arrayconv as ac

from .devices import device
from .run import command_line, versions
from .sweep import WITHIN, time_point


def _correlate(name: str, x: tuple[int, ...], w: tuple[int, ...], mode: str, dtype: str = "float32", **extra: object) -> dict:
    return {"id": name, "op": "correlate", "x": x, "w": w, "mode": mode, "dtype": dtype, **extra}


def _conv(name: str, x: tuple[int, ...], w: tuple[int, ...], dtype: str = "float32", **extra: object) -> dict:
    return {"id": name, "op": "conv", "x": x, "w": w, "dtype": dtype, **extra}


POINTS = [
    # multichannel signals under FIR filters of tens to hundreds of taps, along the last axis
    _correlate("fir-256x3166-270", (256, 3166), (1, 270), "valid", axes=-1),
    _correlate("fir-64x1983-153-f64", (64, 1983), (1, 153), "same", "float64", axes=-1),
    _correlate("fir-16x63390-4-f64", (16, 63390), (1, 4), "same", "float64", axes=-1),
    _correlate("fir-64x3000-127", (64, 3000), (1, 127), "same", axes=-1),
    _correlate("fir-32x62894-128", (32, 62894), (1, 128), "same", axes=-1),
    _correlate("fir-24x15944-78-f64", (24, 15944), (1, 78), "valid", "float64", axes=-1),
    _correlate("fir-8x88008-1438", (8, 88008), (1, 1438), "valid", axes=-1),
    # 1-D signals under long kernels
    _correlate("line-3000-1023-f64", (3000,), (1023,), "same", "float64"),
    _correlate("line-30000-511-f64", (30000,), (511,), "same", "float64"),
    _correlate("line-1847-153-f64", (1847,), (153,), "same", "float64"),
    _correlate("line-10000-127", (10000,), (127,), "same"),
    _correlate("line-30000-255", (30000,), (255,), "same"),
    _correlate("line-300000-255-f64", (300000,), (255,), "same", "float64"),
    _correlate("line-10000-1023-f64", (10000,), (1023,), "same", "float64"),
    _correlate("line-3000-500", (3000,), (500,), "same"),
    # single images
    _correlate("image-512-7", (512, 512), (7, 7), "same"),
    _correlate("image-64-57", (64, 64), (57, 57), "valid"),
    _correlate("image-2048-41", (2048, 2048), (41, 41), "same"),
    _correlate("image-64-63-plan", (64, 64), (63, 63), "valid", plans=True),
    # filter banks, strided and grouped layers
    _conv("bank-4x256-11", (1, 4, 256, 256), (4, 4, 11, 11)),
    _conv("bank-4x256-11-plan", (1, 4, 256, 256), (4, 4, 11, 11), plans=True),
    _conv("conv-f64-64x16x64-5", (64, 16, 64, 64), (64, 16, 5, 5), "float64", padding=2),
    _conv("conv-4x4x128-256x15", (4, 4, 128, 128), (256, 4, 15, 15), padding=7),
    _conv("stack-256x128-11", (256, 1, 128, 128), (4, 1, 11, 11), padding=5),
    _conv("frame-128-11", (1, 1, 128, 128), (4, 1, 11, 11), padding=5),
    _conv("strided-4x512-15", (1, 4, 512, 512), (1, 4, 15, 15), padding=21, stride=2, dilation=3),
    _conv("strided-1x1", (64, 16, 128, 128), (16, 16, 1, 1), stride=3, dilation=2),
    _conv("strided-grouped-5", (4, 256, 128, 128), (16, 128, 5, 5), padding=4, stride=3, dilation=2, groups=2),
    _conv("strided-256x64-31", (256, 1, 64, 64), (16, 1, 31, 31), padding=30, stride=3, dilation=2),
]


def _median_of(timed: tuple[dict, ...]) -> dict:
    """One point's rounds as one: each method's median over the rounds that timed it."""
    medians = {name: statistics.median(t["median_s"][name] for t in timed if name in t["median_s"]) for name in timed[0]["median_s"]}
    best = min(medians, key=medians.__getitem__)
    chosen = timed[0]["chosen"]
    return {**timed[0], "median_s": medians, "best": best, "ratio": medians.get(chosen, math.inf) / medians[best], "runs": len(timed)}


def main(argv: list[str] | None = None) -> int:
    """Time every method on each point; write the timings (the memory limit pinned, as a sweep)."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="tests/data/pick-timings.json")
    parser.add_argument("--only", help="comma-separated point ids")
    parser.add_argument("--runs", type=int, default=5, help="rounds through the points (default 5): near-ties flip between runs")
    args = parser.parse_args(argv)
    where = device("cpu")
    wanted = set(args.only.split(",")) if args.only else None
    limit = ac.memory_limit()
    points = [point for point in POINTS if wanted is None or point["id"] in wanted]
    rounds: list[list[dict]] = []
    with ac.config(memory_limit=limit):
        for _ in range(args.runs):
            rounds.append([time_point(point, where) for point in points])
    results = [_median_of(timed) for timed in zip(*rounds)]
    for result in results:
        print(f"{result['id']:<24} auto {result['chosen']:<7} best {result['best']:<7} ratio {result['ratio']:.2f}", flush=True)
    report = {
        "date": datetime.date.today().isoformat(),
        "command": command_line("python -m bench.picks", argv),
        "versions": versions(),
        "memory_limit": limit,
        "threadpoolctl": importlib.util.find_spec("threadpoolctl") is not None,  # im2col's chunks on all cores, or on one
        "numba": importlib.util.find_spec("numba") is not None,  # direct's compiled form, or its NumPy forms
        "within": WITHIN,
        "points": results,
    }
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
