"""Direct's forms on row filters, on one worker and on all: how far 'auto''s form is from the fastest.

Usage: ``python -m bench.forms [--problems 128x128x128:9,2048x2048:9,256x16384:17,1048576:9]
[--repeats 5] [--out bench/results]``. Each problem ``SHAPE:TAPS`` is a random float32
array and a random filter of TAPS taps along its last axis, correlated 'same' by
``method='direct'`` through a plan made with each of direct's forms that takes it (the
compiled loops, the banded GEMMs, NumPy's per-row loops) and with the form 'auto' picks,
writing into a given array; on one worker (as inside ``arrayconv.dask``'s chunks) and on
all of them (``arrayconv.config(workers=...)``), interleaved after a warm-up; the median of
the rounds. Ratio: the picked form's time over the fastest form's. On all workers the
banded form's GEMMs leave BLAS's threads spinning after each call, which slows the next
call's second thread: the one-worker rows are the fair ones. Writes ``forms-<date>.md`` and
``.json``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

import arrayconv as ac
from arrayconv._methods import direct
from arrayconv._runtime import config as _config
from arrayconv._runtime.backend import NUMPY
from arrayconv._runtime.rates import rates_for

from .devices import device
from .peers import interleaved_medians, time_call
from .run import new_report, save_report

FORMS = ("compiled", "banded", "rows")


@contextmanager
def forced_form(wanted: Callable[[tuple[str, int]], bool]) -> Iterator[None]:
    """Plans made inside run the first of direct's forms, as ``(form, block)`` keys, that
    `wanted` takes (the estimate's order: its best block, where it has several); direct's
    own pick where none."""
    real = direct._fastest_form

    def chosen(problem: Any, backend: Any, rates: Any, settings: Any) -> tuple[str, int]:
        keys = [key for key in direct._form_seconds(problem, backend, rates, settings) if wanted(key)]
        return keys[0] if keys else real(problem, backend, rates, settings)

    direct._fastest_form = chosen
    ac.clear_caches()
    try:
        yield
    finally:
        direct._fastest_form = real
        ac.clear_caches()


def time_problem(shape: tuple[int, ...], taps: int, workers: int, repeats: int, rng: np.random.Generator) -> dict:
    """Median seconds of each form that takes the problem and the form 'auto' picks, on `workers`."""
    x = rng.random(shape, dtype=np.float32)
    w = rng.random((*(1,) * (len(shape) - 1), taps), dtype=np.float32)
    out = np.empty_like(x)
    with ac.config(workers=workers):
        plan = ac.plan_correlate(w, shape, "same", "direct", dtype=np.float32)
        problem = plan._spec.problem
        estimates = direct._form_seconds(problem, NUMPY, rates_for(NUMPY), _config.settings("numpy"))
        picked = min(estimates, key=estimates.__getitem__)[0]
        calls: dict[str, Callable[[], object]] = {}
        for form in FORMS:
            if any(key[0] == form for key in estimates):
                with forced_form(lambda key, form=form: key[0] == form):
                    forced = ac.plan_correlate(w, shape, "same", "direct", dtype=np.float32)
                calls[form] = lambda p=forced: p(x, out=out)
        for call in calls.values():
            call()
        median = interleaved_medians(calls, {name: time_call for name in calls}, repeats)
    return {
        "shape": list(shape), "taps": taps, "workers": workers, "median_s": median, "picked": picked,
        "estimate_s": {key[0]: seconds for key, seconds in estimates.items() if key[0] in FORMS},
    }


def write(points: list[dict], folder: Path, argv: list[str]) -> Path:
    """JSON and Markdown reports; returns the Markdown path."""
    report = new_report("python -m bench.forms", argv, device("cpu").versions(), points=points)
    prose = [
        "float32 'same' correlations with a filter along the last axis, through plans of each of direct's forms,",
        "writing into a given array, interleaved after a warm-up; median of the rounds, milliseconds (the model's",
        "estimate in brackets). Ratio: the time of the form 'auto' picks over the fastest form's. On all workers BLAS's",
        "threads, left spinning by the banded form's GEMMs, slow the compiled loops' second thread: the one-worker rows are fair.",
    ]
    columns = ["shape", "taps", "workers", *FORMS, "auto picks", "ratio"]
    rows = []
    for p in points:
        s, e = p["median_s"], p["estimate_s"]
        cells = " | ".join(f"{1e3 * s[f]:.2f} ({1e3 * e[f]:.2f})" if f in s else "-" for f in FORMS)
        ratio = s[p["picked"]] / min(s.values()) if p["picked"] in s else float("nan")
        rows.append(f"| {'x'.join(map(str, p['shape']))} | {p['taps']} | {p['workers']} | {cells} | {p['picked']} | {ratio:.2f} |")
    return save_report(folder / f"forms-{report['date']}", report, f"Direct's forms on row filters, CPU, {report['date']}", prose, columns, rows)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--problems", default="128x128x128:9,2048x2048:9,256x16384:17,1048576:9", help="SHAPE:TAPS, comma-separated")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    points = []
    for text in args.problems.split(","):
        shape, taps = text.split(":")
        for workers in sorted({1, _config.cores()}):
            points.append(time_problem(tuple(int(n) for n in shape.split("x")), int(taps), workers, args.repeats, rng))
            p = points[-1]
            print(f"{shape} {taps} taps, {workers} worker(s): " + ", ".join(f"{f} {1e3 * t:.2f}" for f, t in p["median_s"].items()) + f" ms; auto picks {p['picked']}", flush=True)
    print(write(points, Path(args.out), argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
