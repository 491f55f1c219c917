"""Every method on 3x3 and 5x5 multichannel layers, and how far 'auto''s pick is from the fastest.

Usage: ``python -m bench.layer_methods [--channels 64x64,64x128,128x128,96x192,256x256,128x256]
[--sides 7,14,28,56,112] [--depths 1] [--batches 1,8] [--dilations 1] [--kernels 3] [--repeats 5]
[--out bench/results]``, or ``--rescore FILE`` to judge a report's timings by today's cost
model (times nothing). Each layer is a random float32 input ``(batch, C, side, side)`` and
random filters ``(O, C, k, k)`` at each dilation d, padding ``d * (k // 2)``; with a depth
past 1, a volume ``(batch, C, depth, side, side)`` and filters ``(O, C, k, k, k)``: the layers where
im2col runs Winograd's F(2x2, 3x3) or F(4x4, 3x3) (32 channels and more, on each phase of a
dilated kernel) or F(2x2, 5x5) and direct its GEMM taps or compiled loops, which the random sweeps
(``bench.sweep``) seldom draw.
``arrayconv.conv`` with each of 'direct', 'im2col', 'fft' and 'oa', interleaved after a
warm-up; the median of the rounds (reports from before 'oa' was timed leave its picks unjudged). Layers of more than 3e9 multiply-adds are left out. Ratio: the
time of 'auto''s method over the fastest one's. Writes ``layer-methods-<date>.md`` and
``.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

import arrayconv as ac

from .peers import interleaved_medians, time_call
from .run import new_report, save_report, versions

METHODS = ("direct", "im2col", "fft", "oa")
_MOST_MACS = 3e9


def _shapes(row: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The input's and the filters' shapes of a report's row."""
    (c, o), side, depth, k = row["channels"], row["side"], row.get("depth", 1), row.get("kernel", 3)
    volume = (depth,) if depth > 1 else ()
    return (row["batch"], c, *volume, side, side), (o, c, *(k,) * (2 + len(volume)))


def time_layer(channels: tuple[int, int], side: int, depth: int, batch: int, dilation: int, kernel: int, repeats: int, rng: np.random.Generator) -> dict:
    """Median seconds of each of :data:`METHODS` on one layer."""
    row = {"channels": list(channels), "side": side, "depth": depth, "batch": batch, "dilation": dilation, "kernel": kernel}
    x_shape, w_shape = _shapes(row)
    x, w = rng.standard_normal(x_shape, dtype=np.float32), rng.standard_normal(w_shape, dtype=np.float32)
    padding = dilation * (kernel // 2)
    calls = {m: (lambda m=m: ac.conv(x, w, padding=padding, dilation=dilation, method=m)) for m in METHODS}
    for call in calls.values():
        call()  # warm-up
    median_s = interleaved_medians(calls, {m: time_call for m in calls}, repeats)
    return {**row, "median_s": median_s}


def scored(rows: list[dict]) -> list[dict]:
    """`rows` with today's pick of 'auto' and its time over the fastest method's."""
    for row in rows:
        d, k = row.get("dilation", 1), row.get("kernel", 3)
        x_shape, w_shape = _shapes(row)
        pick = ac.choose_method(np.empty(x_shape, np.float32), np.empty(w_shape, np.float32), op="conv", padding=d * (k // 2), dilation=d).method
        times = row["median_s"]
        row["auto"], row["ratio"] = pick, times[pick] / min(times.values()) if pick in times else float("nan")
    return rows


def summary(rows: list[dict]) -> str:
    """How many picks are within 1.2x of the fastest method, and the worst."""
    judged = [r for r in rows if r["ratio"] == r["ratio"]]  # NaN: a pick the report did not time
    worst = max(judged, key=lambda r: r["ratio"])
    within = sum(r["ratio"] <= 1.2 for r in judged)
    unjudged = f" ({len(rows) - len(judged)} picks not timed)" if len(judged) < len(rows) else ""
    return f"{within} of {len(judged)} within 1.2x of the fastest method{unjudged}, worst {worst['ratio']:.2f} ({worst['channels'][0]} -> {worst['channels'][1]}, {worst['side']}x{worst['side']}, batch {worst['batch']}: {worst['auto']})"


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--channels", default="64x64,64x128,128x128,96x192,256x256,128x256")
    parser.add_argument("--sides", default="7,14,28,56,112")
    parser.add_argument("--depths", default="1", help="planes of volumes (1: images)")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--dilations", default="1")
    parser.add_argument("--kernels", default="3", help="kernel sides")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rescore", type=Path, help="a report's .json: its timings judged by today's model")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    if args.rescore:
        rows = scored(json.loads(args.rescore.read_text())["rows"])
        print(summary(rows))
        for row in rows:
            print(f"  {row['channels'][0]} -> {row['channels'][1]}, kernel {row.get('kernel', 3)}, {row['side']}, depth {row.get('depth', 1)}, batch {row['batch']}, dilation {row.get('dilation', 1)}: {row['auto']} ({row['ratio']:.2f})")
        return 0
    channels = [tuple(int(n) for n in pair.split("x")) for pair in args.channels.split(",")]
    rng = np.random.default_rng(0)
    rows = []
    sides, depths, batches, dilations, kernels = ([int(n) for n in arg.split(",")] for arg in (args.sides, args.depths, args.batches, args.dilations, args.kernels))
    for (c, o), side, depth, batch, d, k in itertools.product(channels, sides, depths, batches, dilations, kernels):
        if c * o * k ** (2 + (depth > 1)) * depth * side * side * batch <= _MOST_MACS:
            rows.append(time_layer((c, o), side, depth, batch, d, k, args.repeats, rng))
            print(rows[-1], flush=True)
    rows = scored(rows)
    report = new_report("python -m bench.layer_methods", argv, versions(), rows=rows)
    table = [
        f"| {r['channels'][0]} -> {r['channels'][1]} | {r.get('kernel', 3)} | {r['side']} | {r.get('depth', 1)} | {r['batch']} | {r.get('dilation', 1)} | "
        + " | ".join(f"{1e3 * r['median_s'][m]:.2f}" for m in METHODS)
        + f" | {r['auto']} | {r['ratio']:.2f} |"
        for r in rows
    ]
    prose = ["float32, 'same' padding; milliseconds, medians of the interleaved rounds. " + summary(rows) + "."]
    print(save_report(Path(args.out) / f"layer-methods-{report['date']}", report, "Every method on multichannel layers", prose, ["channels", "kernel", "side", "depth", "batch", "dilation", *METHODS, "auto", "ratio"], table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
