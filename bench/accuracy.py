"""Measured accuracy: worst error of every method and dtype against a float64 SciPy reference.

Usage: ``python -m bench.accuracy [--cases 60] [--device cpu|gpu] [--out bench/results]``.
Writes ``accuracy-<date>.md`` and ``.json`` (``accuracy-gpu-<date>.*`` for CuPy arrays on
the GPU): the worst error relative to max|reference| per method and dtype over random
correlations (1-D to 3-D, every mode, odd and even kernels), and the error's growth with
kernel size for float32 (direct accumulation vs FFT). The reference is always SciPy in
float64 on the CPU.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np
import scipy.signal

import arrayconv as ac

from .cases import random_array
from .devices import Device, device, report_stem
from .run import machine_line

DTYPES = ("float32", "float64", "complex64", "complex128")
KERNEL_SIDES = (3, 7, 15, 31, 63)


def relative_error(got: np.ndarray, reference: np.ndarray) -> float:
    """max|got - reference| / max|reference|."""
    return float(np.max(np.abs(got - reference)) / np.max(np.abs(reference)))


def _correlate(where: Device, x: np.ndarray, k: np.ndarray, mode: str, method: str) -> np.ndarray:
    """arrayconv's correlation of `x` and `k` on `where`, back on the host."""
    return where.to_host(ac.correlate(where.xp.asarray(x), where.xp.asarray(k), mode, method))


def worst_errors(n_cases: int, where: Device, seed: int = 0) -> dict[str, dict[str, float]]:
    """Worst relative error per method and dtype over `n_cases` random correlations."""
    rng = np.random.default_rng(seed)
    worst = {m: dict.fromkeys(DTYPES, 0.0) for m in ac.METHODS}
    for _ in range(n_cases):
        ndim = int(rng.integers(1, 4))
        s1 = tuple(int(rng.integers(4, {1: 400, 2: 60, 3: 16}[ndim])) for _ in range(ndim))
        s2 = tuple(int(rng.integers(1, min(n, 12) + 1)) for n in s1)
        mode = str(rng.choice(["full", "same", "valid"]))
        for dtype in DTYPES:
            x, k = random_array(rng, s1, dtype), random_array(rng, s2, dtype)
            wide = "complex128" if dtype.startswith("complex") else "float64"
            reference = scipy.signal.correlate(x.astype(wide), k.astype(wide), mode, method="direct")
            for method in ac.METHODS:
                error = relative_error(_correlate(where, x, k, mode, method), reference)
                worst[method][dtype] = max(worst[method][dtype], error)
    return worst


def growth_with_kernel(where: Device, side: int = 512, seed: int = 1) -> dict[str, dict[int, float]]:
    """float32 error of each method on a side x side image, by kernel side."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((side, side)).astype(np.float32)
    errors: dict[str, dict[int, float]] = {m: {} for m in ac.METHODS}
    for k in KERNEL_SIDES:
        kernel = rng.standard_normal((k, k)).astype(np.float32)
        reference = scipy.signal.correlate(x.astype(np.float64), kernel.astype(np.float64), "same", method="fft")
        for method in ac.METHODS:
            errors[method][k] = relative_error(_correlate(where, x, kernel, "same", method), reference)
    return errors


def markdown(report: dict) -> str:
    """The report as Markdown tables."""
    lines = [
        f"# Accuracy of arrayconv {report['versions']['arrayconv']}, {report.get('device', 'cpu').upper()}, {report['date']}",
        "",
        report["machine"].strip(),
        "",
        f"Worst error relative to max|reference| over {report['cases']} random correlations (1-D to 3-D, "
        "every mode, odd and even kernels up to 12 per axis); reference: scipy.signal.correlate, "
        "method='direct', in float64 / complex128.",
        "",
        "| method | " + " | ".join(DTYPES) + " |",
        "|---|" + "---:|" * len(DTYPES),
    ]
    for method, row in report["worst"].items():
        lines.append(f"| {method} | " + " | ".join(f"{row[d]:.1e}" for d in DTYPES) + " |")
    lines += [
        "",
        f"float32 error on a {report['growth_side']}x{report['growth_side']} image, 'same', by kernel side "
        "(reference: float64 FFT):",
        "",
        "| method | " + " | ".join(f"{k}x{k}" for k in KERNEL_SIDES) + " |",
        "|---|" + "---:|" * len(KERNEL_SIDES),
    ]
    for method, row in report["growth"].items():
        lines.append(f"| {method} | " + " | ".join(f"{row[k]:.1e}" for k in KERNEL_SIDES) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Measure and write ``accuracy-<date>.md`` and ``.json``."""
    parser = argparse.ArgumentParser(prog="python -m bench.accuracy", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args(argv)
    where = device(args.device)
    found = where.versions()
    report = {
        "date": datetime.date.today().isoformat(),
        "device": where.name,
        "machine": machine_line(found),
        "versions": found,
        "cases": args.cases,
        "worst": worst_errors(args.cases, where),
        "growth_side": 512,
        "growth": growth_with_kernel(where, 512),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / report_stem("accuracy", where.name, report["date"])
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    text = markdown(report)
    stem.with_suffix(".md").write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
