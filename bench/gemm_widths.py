"""How fast BLAS multiplies narrow matrices: the GEMM rate by rows, depth and columns.

Usage: ``python -m bench.gemm_widths [--repeats 15] [--out bench/results]``. Stacks of 36
float32 GEMMs ``(f x d) @ (d x n)`` (as Winograd's planes of one chunk, or im2col's chunks),
through ``numpy.matmul`` on one BLAS thread (as arrayconv runs each chunk's GEMMs), for
output channels f, columns d deep and chunks n columns wide; GFLOP/s of the median of
`repeats` calls after a warm-up. The cost model charges GEMMs by their rows and depth
(:func:`arrayconv._methods.im2col._gemm_efficiency`); this shows whether narrow chunks need
a charge of their own. Writes ``gemm-widths-<date>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from .peers import time_call
from .run import new_report, save_report, versions

_ROWS, _DEPTHS, _COLUMNS, _STACK = (32, 64, 128, 256), (32, 64, 256), (16, 32, 64, 128, 256, 512, 1024), 36


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    rng, rows = np.random.default_rng(0), []
    with threadpool_limits(1):
        warm = rng.random((_STACK, 256, 256), dtype=np.float32)
        for _ in range(20):  # the core at its working clock, BLAS's buffers made
            np.matmul(warm, warm)
        for f in _ROWS:
            for d in _DEPTHS:
                rates = {}
                for n in _COLUMNS:
                    a, b = rng.random((_STACK, f, d), dtype=np.float32), rng.random((_STACK, d, n), dtype=np.float32)
                    c = np.empty((_STACK, f, n), np.float32)
                    np.matmul(a, b, out=c)
                    seconds = statistics.median(time_call(lambda: np.matmul(a, b, out=c)) for _ in range(args.repeats))
                    rates[n] = 2 * _STACK * f * d * n / seconds
                rows.append({"rows": f, "depth": d, "flops": rates})
                print(f, d, {n: f"{r / 1e9:.0f}" for n, r in rates.items()})
    report = new_report("python -m bench.gemm_widths", argv, versions(), rows=rows)
    prose = ["", f"GFLOP/s of stacks of {_STACK} float32 GEMMs (f x d) @ (d x n) on one BLAS thread, medians of {args.repeats} calls."]
    columns = ["f (rows)", "d (depth)", *(f"n = {n}" for n in _COLUMNS)]
    table = [f"| {r['rows']} | {r['depth']} | " + " | ".join(f"{r['flops'][n] / 1e9:.0f}" for n in _COLUMNS) + " |" for r in rows]
    stem = Path(args.out) / f"gemm-widths-{report['date']}"
    print(save_report(stem, report, "The GEMM rate of narrow matrices", prose, columns, table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
