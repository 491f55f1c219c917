"""Single images and 1-D signals against SciPy: the sizes where fixed costs count.

Usage: ``python -m arrayconv.bench.images [--sides 64,128,256,512] [--kernels 3,5,7,11,15,31]
[--lengths 1000,10000,100000,1000000] [--taps 2,3,5,9,15,31] [--dtypes float32,float64]
[--out bench/results]`` (an empty ``--sides`` or ``--lengths`` leaves those out).
For each image side and square kernel, and each signal length and kernel length, and each
dtype, ``arrayconv.correlate(x, w, 'same')`` ('auto'), ``scipy.signal.correlate`` (its own
'auto'), ``scipy.signal.fftconvolve`` and ``scipy.ndimage.correlate`` (zero padding: the
centring of 'same', even kernels too) run interleaved in one process, in a new order each
round, each timed once per round for 15 to 300 rounds (about 3e7 / (samples * kernel side)); the best of the rounds is
kept (the machine's drifts hit them all alike). Writes ``images-<date>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.ndimage
import scipy.signal

import arrayconv as ac

from .run import command_line, machine_line, versions


def time_point(shape: tuple[int, ...], k: int, dtype: str, rng: np.random.Generator) -> dict:
    """Best-of-rounds seconds of arrayconv and the SciPy calls on one random input of
    `shape` with a kernel of side `k` along each axis."""
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((k,) * len(shape)).astype(dtype)
    flipped = w[(slice(None, None, -1),) * w.ndim]
    calls: dict[str, Callable[[], object]] = {
        "arrayconv": lambda: ac.correlate(x, w, "same"),
        "scipy.signal.correlate": lambda: scipy.signal.correlate(x, w, "same"),
        "scipy.signal.fftconvolve": lambda: scipy.signal.fftconvolve(x, flipped, "same"),
        "scipy.ndimage.correlate": lambda: scipy.ndimage.correlate(x, w, mode="constant"),
    }
    for call in calls.values():  # warm-up: caches, pages, plans
        call()
    best = dict.fromkeys(calls, float("inf"))
    order = list(calls)
    for round_ in range(min(300, max(15, int(3e7 / (x.size * k))))):
        random.Random(round_).shuffle(order)  # none always runs after the same one (ndimage's long calls cool the next)
        for name in order:
            start = time.perf_counter()
            calls[name]()
            best[name] = min(best[name], time.perf_counter() - start)
    peer = min(seconds for name, seconds in best.items() if name != "arrayconv")
    method = ac.choose_method(x, w, mode="same").method
    return {"shape": list(shape), "kernel": k, "dtype": dtype, "method": method, "best_s": best, "ratio": best["arrayconv"] / peer}


def write(points: list[dict], folder: Path, argv: list[str]) -> Path:
    """JSON and Markdown reports; returns the Markdown path."""
    date = datetime.date.today().isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"images-{date}"
    report = {"date": date, "command": command_line("python -m arrayconv.bench.images", argv), "versions": versions(), "points": points}
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    lines = [
        f"# Single images and signals against SciPy, CPU, {date}",
        "",
        f"Command: `{report['command']}`  ",
        machine_line(report["versions"]),
        "`arrayconv.correlate(x, w, 'same')` ('auto'), `scipy.signal.correlate` (its 'auto'), `fftconvolve` and",
        "`scipy.ndimage.correlate` (mode 'constant'), interleaved in a new order each round; best of the rounds, microseconds.",
        "Ratio = arrayconv / the fastest SciPy call (under 1: arrayconv faster).",
        "",
        "| input | kernel | dtype | arrayconv | auto picks | scipy correlate | scipy fftconvolve | scipy ndimage | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        us = {name: f"{1e6 * s:.0f}" for name, s in p["best_s"].items()}
        kernel = "x".join([str(p["kernel"])] * len(p["shape"]))
        lines.append(
            f"| {'x'.join(map(str, p['shape']))} | {kernel} | {p['dtype']} | {us['arrayconv']} | {p['method']} "
            f"| {us['scipy.signal.correlate']} | {us['scipy.signal.fftconvolve']} | {us['scipy.ndimage.correlate']} | {p['ratio']:.2f} |"
        )
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return stem.with_suffix(".md")


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sides", default="64,128,256,512")
    parser.add_argument("--kernels", default="3,5,7,11,15,31")
    parser.add_argument("--lengths", default="1000,10000,100000,1000000")
    parser.add_argument("--taps", default="2,3,5,9,15,31")
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    inputs = [((side, side), k) for side in _ints(args.sides) for k in _ints(args.kernels)]
    inputs += [((length,), k) for length in _ints(args.lengths) for k in _ints(args.taps)]
    points = []
    for shape, k in inputs:
        for dtype in args.dtypes.split(","):
            points.append(time_point(shape, k, dtype, rng))
            print(f"{shape} {k} {dtype}: {points[-1]['ratio']:.2f}", flush=True)
    print(write(points, Path(args.out), argv))
    return 0


def _ints(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s]


if __name__ == "__main__":
    sys.exit(main())
