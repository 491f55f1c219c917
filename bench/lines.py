"""Batched lines, each with its own filter, against SciPy's convolutions along one axis.

Usage: ``python -m bench.lines [--problems 256x16384x129,64x65536x129,1024x4096x33,256x16384x1025]
[--dtypes float32,float64] [--modes full,same] [--repeats 5] [--out bench/results]``. Each
problem ``BxNxK`` is B random lines of N samples and B random filters of K taps, convolved
line by line: ``arrayconv.convolve(x, w, mode, axes=-1)`` ('auto'; its pick named) and
each of its methods forced, against ``scipy.signal.oaconvolve`` and ``fftconvolve`` with
``axes=-1``, all interleaved in one process after a warm-up call each, in a new order each
round; the median of `repeats` rounds. Ratio: SciPy's faster call over arrayconv's 'auto'
(over 1: arrayconv faster). Difference: arrayconv's largest from ``fftconvolve``'s result
in float64, over its largest magnitude. Writes ``lines-<date>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.signal

import arrayconv as ac

from .devices import device
from .peers import interleaved_medians, time_call
from .run import new_report, save_report

PEERS = ("scipy.signal.oaconvolve", "scipy.signal.fftconvolve")
METHODS = ("direct", "fft", "oa")


def time_problem(lines: int, length: int, taps: int, dtype: str, mode: str, repeats: int, rng: np.random.Generator) -> dict:
    """Median seconds of arrayconv ('auto' and each method) and the peers on one problem,
    with 'auto''s pick and its largest difference from the float64 result."""
    x, w = rng.standard_normal((lines, length)).astype(dtype), rng.standard_normal((lines, taps)).astype(dtype)
    calls: dict[str, Callable[[], object]] = {"arrayconv": lambda: ac.convolve(x, w, mode, axes=-1)}
    calls |= {f"arrayconv {m}": (lambda m=m: ac.convolve(x, w, mode, method=m, axes=-1)) for m in METHODS}
    calls[PEERS[0]] = lambda: scipy.signal.oaconvolve(x, w, mode, axes=-1)
    calls[PEERS[1]] = lambda: scipy.signal.fftconvolve(x, w, mode, axes=-1)
    reference = scipy.signal.fftconvolve(x.astype(np.float64), w.astype(np.float64), mode, axes=-1)
    got = np.asarray(calls["arrayconv"]())  # a warm-up call too
    median = interleaved_medians(calls, {name: time_call for name in calls}, repeats)
    return {
        "lines": lines, "length": length, "taps": taps, "dtype": dtype, "mode": mode, "median_s": median,
        "method": ac.choose_method(x, w, op="convolve", mode=mode, axes=-1).method,
        "difference": float(np.max(np.abs(got - reference)) / np.max(np.abs(reference))),
    }


def write(points: list[dict], folder: Path, argv: list[str]) -> Path:
    """JSON and Markdown reports; returns the Markdown path."""
    report = new_report("python -m bench.lines", argv, device("cpu").versions(), points=points)
    prose = [
        "`arrayconv.convolve(x, w, mode, axes=-1)` on B lines and B filters ('auto', and each method forced) against",
        "`scipy.signal.oaconvolve` and `fftconvolve` with `axes=-1`, interleaved after a warm-up call each; median of the rounds,",
        "milliseconds. Ratio: SciPy's faster call over arrayconv's 'auto' (over 1: arrayconv faster). Difference: the largest from",
        "the float64 result, over its largest magnitude.",
    ]
    columns = ["lines x samples", "taps", "dtype", "mode", "arrayconv", "auto picks", *METHODS, *(name.rsplit(".", 1)[1] for name in PEERS), "ratio", "difference"]
    rows = []
    for p in points:
        ms = {name: f"{1e3 * s:.1f}" for name, s in p["median_s"].items()}
        ratio = min(p["median_s"][name] for name in PEERS) / p["median_s"]["arrayconv"]
        forced = " | ".join(ms[f"arrayconv {m}"] for m in METHODS)
        rows.append(
            f"| {p['lines']} x {p['length']} | {p['taps']} | {p['dtype']} | {p['mode']} | {ms['arrayconv']} | {p['method']} | {forced} "
            f"| {ms[PEERS[0]]} | {ms[PEERS[1]]} | {ratio:.2f} | {p['difference']:.0e} |"
        )
    title = f"Batched lines with their own filters, CPU, {report['date']}"
    return save_report(folder / f"lines-{report['date']}", report, title, prose, columns, rows)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--problems", default="256x16384x129,64x65536x129,1024x4096x33,256x16384x1025", help="lines x samples x taps, comma-separated")
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--modes", default="full,same")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    points = []
    for problem in args.problems.split(","):
        lines, length, taps = (int(n) for n in problem.split("x"))
        for dtype in args.dtypes.split(","):
            for mode in args.modes.split(","):
                points.append(time_problem(lines, length, taps, dtype, mode, args.repeats, rng))
                print(f"{problem} {dtype} {mode}: " + ", ".join(f"{n} {1e3 * s:.1f} ms" for n, s in points[-1]["median_s"].items()), flush=True)
    print(write(points, Path(args.out), argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
