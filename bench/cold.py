"""What a small filter costs when the call before it was other work: warm, and with cold caches.

Usage: ``python -m bench.cold [--base DIR] [--repeats 31] [--out bench/results]``. A script
that filters many small images does other work between the calls (reads the next image,
runs another library), so each call starts with caches that hold none of its code or data.
For float32 images of 64x64 to 1024x1024 with small kernels and boundary rules, a plan's
call (``out=`` given), a plain ``correlate`` and OpenCV's ``filter2D`` (and, with
``--base``, the same calls of an older arrayconv, interleaved in this process: see
``bench.layers``) are timed interleaved twice: back to back (warm), and each right after a
64 MiB copy that evicts the caches (cold); medians of the rounds, microseconds. Writes
``cold-<date>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

import arrayconv as ac

from .layers import load_base
from .peers import interleaved_medians, time_call
from .run import new_report, save_report, versions

# (side, kernel side, boundary): the boundary's OpenCV border name follows from it.
CASES = [(64, 3, "constant"), (256, 3, "constant"), (256, 5, "edge"), (512, 3, "mirror"), (512, 7, "constant"), (1024, 3, "constant")]
_CV_BORDERS = {"constant": "BORDER_CONSTANT", "edge": "BORDER_REPLICATE", "mirror": "BORDER_REFLECT_101"}
_EVICT_BYTES = 64 << 20


def time_case(side: int, k: int, boundary: str, repeats: int, base: ModuleType | None) -> dict:
    """Median seconds of each call of one case, warm and cold."""
    rng = np.random.default_rng(0)
    x, w = rng.random((side, side), dtype=np.float32), rng.random((k, k), dtype=np.float32)
    calls: dict[str, Callable[[], object]] = {}
    for name, lib in (("arrayconv", ac), *((("base", base),) if base else ())):
        plan, out = lib.plan_correlate(w, x.shape, "same", boundary=boundary, dtype=x.dtype), np.empty_like(x)
        calls[f"{name} plan"] = lambda plan=plan, out=out: plan(x, out=out)
        calls[f"{name} plain"] = lambda lib=lib: lib.correlate(x, w, "same", boundary=boundary)
    try:
        import cv2
    except ImportError:
        pass
    else:
        dst, border = np.empty_like(x), getattr(cv2, _CV_BORDERS[boundary])
        calls["OpenCV"] = lambda: cv2.filter2D(x, cv2.CV_32F, w, dst=dst, borderType=border)
    for call in calls.values():
        call()
    source, target = np.ones(_EVICT_BYTES // 4, np.float32), np.empty(_EVICT_BYTES // 4, np.float32)

    def cold(call: Callable[[], object]) -> float:
        np.copyto(target, source)
        return time_call(call)

    warm = interleaved_medians(calls, {name: time_call for name in calls}, repeats)
    after = interleaved_medians(calls, {name: cold for name in calls}, repeats)
    return {"side": side, "kernel": k, "boundary": boundary, "warm_s": warm, "cold_s": after}


def write(rows: list[dict], folder: Path, argv: list[str], base: Path | None) -> Path:
    """JSON and Markdown; returns the Markdown path."""
    report = new_report("python -m bench.cold", argv, versions(), rows=rows)
    names = list(rows[0]["warm_s"])
    prose = [
        "float32, 'same'; each call timed back to back with the others (warm) and right after a 64 MiB copy (cold),",
        "interleaved, medians, microseconds. Plan: a call of a plan made once, into a given array; plain: `correlate`.",
        *([f"Base: the arrayconv under `{base}`, in the same process."] if base else []),
    ]
    columns = ["image", "kernel", "boundary", *(f"{n} warm" for n in names), *(f"{n} cold" for n in names)]
    lines = [f"| {r['side']}x{r['side']} | {r['kernel']}x{r['kernel']} | {r['boundary']} | "
             + " | ".join(f"{1e6 * r[key][n]:.0f}" for key in ("warm_s", "cold_s") for n in names) + " |" for r in rows]
    return save_report(folder / f"cold-{report['date']}", report, f"A small filter's cost with cold caches, CPU, {report['date']}", prose, columns, lines)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", type=Path, help="a folder holding an older arrayconv package, timed beside this one")
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    base = load_base(args.base) if args.base else None
    rows = []
    for side, k, boundary in CASES:
        rows.append(time_case(side, k, boundary, args.repeats, base))
        print(f"{side} {k}x{k} {boundary}: " + ", ".join(f"{n} {1e6 * t:.0f}/{1e6 * rows[-1]['cold_s'][n]:.0f} us" for n, t in rows[-1]["warm_s"].items()), flush=True)
    print(write(rows, Path(args.out), argv, args.base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
