"""Periodic boundaries: ``boundary='wrap'`` (native to the FFT) against extending first.

Usage: ``python -m bench.boundary [--repeats 7] [--out bench/results]``.
For each image (a fast length and a prime length) and kernel size, times in turn, in a new
random order per repeat after one warm-up: arrayconv with ``boundary='wrap'``; the same
result by extending the input with ``numpy.pad(mode='wrap')`` and correlating in 'valid'
(the path before the FFT took periodic padding natively, and the usual workaround with
SciPy); ``scipy.signal.fftconvolve`` on that extended input; and ``scipy.ndimage.correlate``
with ``mode='wrap'`` for small kernels. Writes ``boundary-<date>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.ndimage
import scipy.signal

import arrayconv as ac

from .peers import time_call
from .run import command_line, report_head, versions

# (image side, kernel side): 512, 1000, 1024 and 2048 are fast lengths (the FFT wraps
# natively), 2039 is prime (the input is extended first).
CASES = [(512, 31), (1000, 63), (1024, 127), (2048, 7), (2048, 15), (2048, 63), (2039, 31)]
# scipy.ndimage (direct) is timed up to this kernel side.
_NDIMAGE_MAX_KERNEL = 15


def callables(x: np.ndarray, k: np.ndarray) -> dict[str, Callable[[], object]]:
    """The callables of one case, each giving the same 'same'-sized periodic result."""
    pads = [(m // 2, m - 1 - m // 2) for m in k.shape]

    def extended() -> np.ndarray:
        return np.pad(x, pads, mode="wrap")

    runs: dict[str, Callable[[], object]] = {
        "arrayconv boundary='wrap'": lambda: ac.correlate(x, k, "same", boundary="wrap"),
        "arrayconv boundary='wrap', method='fft'": lambda: ac.correlate(x, k, "same", "fft", boundary="wrap"),
        "arrayconv on np.pad(wrap), 'valid', method='fft'": lambda: ac.correlate(extended(), k, "valid", "fft"),
        "arrayconv on np.pad(wrap), 'valid'": lambda: ac.correlate(extended(), k, "valid"),
        "scipy.signal.fftconvolve on np.pad(wrap), 'valid'": lambda: scipy.signal.fftconvolve(extended(), k[::-1, ::-1], "valid"),
    }
    if max(k.shape) <= _NDIMAGE_MAX_KERNEL:  # odd kernels: ndimage centres them as 'same'
        runs["scipy.ndimage.correlate(mode='wrap')"] = lambda: scipy.ndimage.correlate(x, k, mode="wrap")
    return runs


def run(repeats: int) -> list[dict]:
    """Median seconds of every callable on every case, and the largest difference between
    their results relative to the largest output."""
    rng = np.random.default_rng(0)
    rows = []
    for side, ksize in CASES:
        x = rng.standard_normal((side, side), dtype=np.float32)
        k = rng.standard_normal((ksize, ksize), dtype=np.float32)
        runs = callables(x, k)
        results = {name: np.asarray(fn()) for name, fn in runs.items()}  # warm-up, and results to compare
        first = next(iter(results.values()))
        spread = max(float(np.max(np.abs(r - first))) for r in results.values()) / float(np.max(np.abs(first)))
        times: dict[str, list[float]] = {name: [] for name in runs}
        names = list(runs)
        for _ in range(repeats):
            rng.shuffle(names)
            for name in names:
                times[name].append(time_call(runs[name]))
        medians = {name: statistics.median(t) for name, t in times.items()}
        plan = ac.plan_correlate(k, x.shape, "same", boundary="wrap")
        rows.append({"image": side, "kernel": ksize, "method": plan.method, "median_s": medians, "spread": spread})
        print(f"{side}² {ksize}x{ksize}: " + ", ".join(f"{n} {t * 1e3:.1f} ms" for n, t in medians.items()), flush=True)
    return rows


def write(rows: list[dict], repeats: int, folder: Path) -> Path:
    """Markdown and JSON reports; returns the Markdown path."""
    date = datetime.date.today().isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"boundary-{date}"
    info = versions()
    command = command_line("python -m bench.boundary")
    stem.with_suffix(".json").write_text(json.dumps({"date": date, "command": command, "versions": info, "repeats": repeats, "rows": rows}, indent=1))
    ours, extended = "arrayconv boundary='wrap'", "arrayconv on np.pad(wrap), 'valid'"
    ours_fft, extended_fft = f"{ours}, method='fft'", f"{extended}, method='fft'"
    lines = [
        *report_head(f"Periodic boundary: boundary='wrap' against extending the input first ({date})", command, info),
        f"float32, 'same' output, median of {repeats} interleaved repeats after one warm-up. "
        "'spread': largest difference between the callables' results / max |result|.",
        "",
        "| image | kernel | auto's method | boundary='wrap' (ms) | extended, then valid (ms) | speed-up | "
        "fft: wrap (ms) | fft: extended (ms) | fft speed-up | fftconvolve on extended (ms) | ndimage wrap (ms) | spread |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        t = row["median_s"]
        ndimage = t.get("scipy.ndimage.correlate(mode='wrap')")
        lines.append(
            f"| {row['image']}² | {row['kernel']}x{row['kernel']} | {row['method']} | {t[ours] * 1e3:.1f} | {t[extended] * 1e3:.1f} | "
            f"**{t[extended] / t[ours]:.2f}** | {t[ours_fft] * 1e3:.1f} | {t[extended_fft] * 1e3:.1f} | **{t[extended_fft] / t[ours_fft]:.2f}** | "
            f"{t['scipy.signal.fftconvolve on np.pad(wrap), ' + repr('valid')] * 1e3:.1f} | "
            f"{'' if ndimage is None else f'{ndimage * 1e3:.1f}'} | {row['spread']:.1e} |"
        )
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return stem.with_suffix(".md")


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    path = write(run(args.repeats), args.repeats, Path(args.out))
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
