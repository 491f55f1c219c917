"""Single images and 1-D signals against SciPy: the sizes where fixed costs count.

Usage: ``python -m bench.images [--sides 64,128,256,512] [--kernels 3,5,7,11,15,31]
[--lengths 1000,10000,100000,1000000] [--taps 2,3,5,9,15,31] [--channels N]
[--dtypes float32,float64] [--out bench/results]`` (an empty ``--sides`` or ``--lengths``
leaves those out; with ``--channels``, each signal is N channels, ``(N, length)``, filtered
along its last axis by a ``(1, taps)`` kernel).
For each image side and square kernel, and each signal length and kernel length, and each
dtype, ``arrayconv.correlate(x, w, 'same')`` ('auto'), ``scipy.signal.correlate`` (its own
'auto'), ``scipy.signal.fftconvolve`` and ``oaconvolve`` (along the kernel's axes longer
than 1) and ``scipy.ndimage.correlate`` (zero padding: the centring of 'same', even kernels
too) run interleaved in one process, in a new order each round, each timed once per round
for 15 to 300 rounds (about 3e7 / (samples * kernel side)), right after an untimed call of
its own (after another call's 20 ms on 10^6 samples, a 0.4 ms call ran up to 1.6x slower);
the best of the rounds is kept (the machine's drifts hit them all alike). Writes ``images-<date>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.ndimage
import scipy.signal

import arrayconv as ac

from .run import new_report, save_report, versions


def time_point(shape: tuple[int, ...], k: int, dtype: str, rng: np.random.Generator, channels: int = 0) -> dict:
    """Best-of-rounds seconds of arrayconv and the SciPy calls on one random input of
    `shape` with a kernel of side `k` along each axis; with `channels`, on ``(channels,
    *shape)`` with a kernel of length 1 along the channels."""
    x = rng.standard_normal((channels, *shape) if channels else shape).astype(dtype)
    w = rng.standard_normal(((1,) if channels else ()) + (k,) * len(shape)).astype(dtype)
    flipped = w[(slice(None, None, -1),) * w.ndim]
    axes = [a for a in range(w.ndim) if w.shape[a] > 1] or list(range(w.ndim))  # a 1x1 kernel: all
    calls: dict[str, Callable[[], object]] = {
        "arrayconv": lambda: ac.correlate(x, w, "same"),
        "scipy.signal.correlate": lambda: scipy.signal.correlate(x, w, "same"),
        "scipy.signal.fftconvolve": lambda: scipy.signal.fftconvolve(x, flipped, "same", axes=axes),
        "scipy.signal.oaconvolve": lambda: scipy.signal.oaconvolve(x, flipped, "same", axes=axes),
        "scipy.ndimage.correlate": lambda: scipy.ndimage.correlate(x, w, mode="constant"),
    }
    for call in calls.values():  # warm-up: caches, pages, plans
        call()
    best = dict.fromkeys(calls, float("inf"))
    order = list(calls)
    for round_ in range(min(300, max(15, int(3e7 / (x.size * k))))):
        random.Random(round_).shuffle(order)  # none always runs after the same one (ndimage's long calls cool the next)
        for name in order:
            calls[name]()  # untimed: the timed call finds the caches and pages as its own loop leaves them
            start = time.perf_counter()
            calls[name]()
            best[name] = min(best[name], time.perf_counter() - start)
    peer = min(seconds for name, seconds in best.items() if name != "arrayconv")
    method = ac.choose_method(x, w, mode="same").method
    return {"shape": list(x.shape), "kernel": k, "kernel_shape": list(w.shape), "dtype": dtype, "method": method, "best_s": best, "ratio": best["arrayconv"] / peer}


def write(points: list[dict], folder: Path, argv: list[str]) -> Path:
    """JSON and Markdown reports; returns the Markdown path."""
    report = new_report("python -m bench.images", argv, versions(), points=points)
    prose = [
        "`arrayconv.correlate(x, w, 'same')` ('auto'), `scipy.signal.correlate` (its 'auto'), `fftconvolve` and `oaconvolve`",
        "(along the kernel's axes longer than 1) and `scipy.ndimage.correlate` (mode 'constant'), interleaved in a new order",
        "each round, each timed right after an untimed call of its own; best of the rounds, microseconds. Ratio = arrayconv / the fastest SciPy call (under 1: arrayconv faster).",
    ]
    columns = ["input", "kernel", "dtype", "arrayconv", "auto picks", "scipy correlate", "scipy fftconvolve", "scipy oaconvolve", "scipy ndimage", "ratio"]
    rows = []
    for p in points:
        us = {name: f"{1e6 * s:.0f}" for name, s in p["best_s"].items()}
        rows.append(
            f"| {'x'.join(map(str, p['shape']))} | {'x'.join(map(str, p['kernel_shape']))} | {p['dtype']} | {us['arrayconv']} | {p['method']} "
            f"| {us['scipy.signal.correlate']} | {us['scipy.signal.fftconvolve']} | {us['scipy.signal.oaconvolve']} | {us['scipy.ndimage.correlate']} | {p['ratio']:.2f} |"
        )
    title = f"Single images and signals against SciPy, CPU, {report['date']}"
    return save_report(folder / f"images-{report['date']}", report, title, prose, columns, rows)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sides", default="64,128,256,512")
    parser.add_argument("--kernels", default="3,5,7,11,15,31")
    parser.add_argument("--lengths", default="1000,10000,100000,1000000")
    parser.add_argument("--taps", default="2,3,5,9,15,31")
    parser.add_argument("--channels", type=int, default=0, help="signals of this many channels, filtered along their last axis")
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    inputs = [((side, side), k, 0) for side in _ints(args.sides) for k in _ints(args.kernels)]
    inputs += [((length,), k, args.channels) for length in _ints(args.lengths) for k in _ints(args.taps)]
    points = []
    for shape, k, channels in inputs:
        for dtype in args.dtypes.split(","):
            points.append(time_point(shape, k, dtype, rng, channels))
            print(f"{points[-1]['shape']} {k} {dtype}: {points[-1]['ratio']:.2f}", flush=True)
    print(write(points, Path(args.out), argv))
    return 0


def _ints(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s]


if __name__ == "__main__":
    sys.exit(main())
