"""The drop-in namespaces against SciPy: ``arrayconv.ndimage`` and ``arrayconv.signal``
against the ``scipy.ndimage`` and ``scipy.signal`` functions they stand in for.

Usage: ``python -m bench.dropin [--sides 512,1024,2048,4096,8192] [--volumes 128,256]
[--repeats 5] [--out bench/results]``. Each function is called the same way from both
namespaces (the one changed import line) on float32 images and volumes of random data,
with random kernels or SciPy's own (Gaussians, boxes, Sobel): interleaved in one process
after a warm-up, the median of `repeats` rounds. Each row has the largest difference
between the two results over the largest magnitude. Writes ``dropin-<date>.md``,
``.json`` and ``.png`` to `out`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import scipy.ndimage
import scipy.signal

from arrayconv import ndimage, signal

from .peers import interleaved_medians, time_call
from .run import new_report, save_figure, save_report, versions

# (namespace, function, its arguments after the image given the kernels of `kernels`)
Call = tuple[str, str, Callable[[dict[str, np.ndarray]], tuple[tuple, dict]]]

IMAGE_CALLS: list[Call] = [
    ("ndimage", "correlate", lambda k: ((k["3x3"],), {})),
    ("ndimage", "convolve", lambda k: ((k["7x7"],), {"mode": "nearest"})),
    ("ndimage", "correlate1d", lambda k: ((k["9"],), {"axis": 0})),
    ("ndimage", "gaussian_filter1d", lambda k: ((2.0,), {"axis": 0})),
    ("ndimage", "gaussian_filter", lambda k: ((2.0,), {})),
    ("ndimage", "uniform_filter", lambda k: ((5,), {})),
    ("ndimage", "sobel", lambda k: ((), {"axis": 0})),
    ("ndimage", "laplace", lambda k: ((), {})),
    ("ndimage", "gaussian_gradient_magnitude", lambda k: ((1.5,), {})),
    ("signal", "fftconvolve", lambda k: ((k["31x31"], "same"), {})),
    ("signal", "oaconvolve", lambda k: ((k["31x31"], "same"), {})),
    ("signal", "correlate", lambda k: ((k["15x15"], "same"), {})),
    ("signal", "convolve2d", lambda k: ((k["5x5"], "same", "symm"), {})),
]
VOLUME_CALLS: list[Call] = [
    ("ndimage", "correlate", lambda k: ((k["3x3x3"],), {})),
    ("ndimage", "gaussian_filter1d", lambda k: ((2.0,), {"axis": 0})),
    ("ndimage", "gaussian_filter", lambda k: ((2.0,), {})),
    ("ndimage", "uniform_filter", lambda k: ((5,), {})),
    ("ndimage", "sobel", lambda k: ((), {"axis": 0})),
    ("ndimage", "laplace", lambda k: ((), {})),
    ("signal", "fftconvolve", lambda k: ((k["15x15x15"], "same"), {})),
]
NAMESPACES: dict[str, tuple[ModuleType, ModuleType]] = {"ndimage": (ndimage, scipy.ndimage), "signal": (signal, scipy.signal)}


def random_kernels(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The random float32 kernels the calls use, by shape."""
    shapes = {"9": (9,), "3x3": (3, 3), "5x5": (5, 5), "7x7": (7, 7), "15x15": (15, 15), "31x31": (31, 31), "3x3x3": (3, 3, 3), "15x15x15": (15, 15, 15)}
    return {name: rng.standard_normal(shape, dtype=np.float32) for name, shape in shapes.items()}


def time_row(namespace: str, function: str, arguments: tuple, options: dict, x: np.ndarray, repeats: int) -> dict:
    """Median seconds of the two namespaces' calls, and their largest difference."""
    ours, theirs = (getattr(module, function) for module in NAMESPACES[namespace])
    calls = {"arrayconv": lambda: ours(x, *arguments, **options), "scipy": lambda: theirs(x, *arguments, **options)}
    results = {name: np.asarray(call()) for name, call in calls.items()}  # warm-up
    reference = results["scipy"].astype(np.float64)
    difference = float(np.max(np.abs(results["arrayconv"] - reference)) / np.max(np.abs(reference)))
    median = interleaved_medians(calls, {name: time_call for name in calls}, repeats)
    return {"function": f"{namespace}.{function}", "shape": list(x.shape), "median_s": median, "difference": difference, "dtype": str(results["arrayconv"].dtype)}


def write(rows: list[dict], folder: Path, argv: list[str]) -> Path:
    """JSON, Markdown and a plot; returns the Markdown path."""
    report = new_report("python -m bench.dropin", argv, versions(), rows=rows)
    prose = [
        "float32 inputs; each function called the same way from `arrayconv.ndimage`/`arrayconv.signal` and from `scipy.ndimage`/",
        "`scipy.signal`, interleaved after a warm-up, medians of the rounds, milliseconds. Ratio: SciPy's time over arrayconv's",
        "(over 1: arrayconv faster). Difference: the largest from SciPy's result, over its largest magnitude.",
    ]
    lines = []
    for r in rows:
        s = r["median_s"]
        shape = "x".join(map(str, r["shape"]))
        lines.append(f"| {r['function']} | {shape} | {1e3 * s['arrayconv']:.2f} | {1e3 * s['scipy']:.2f} | {s['scipy'] / s['arrayconv']:.2f} | {r['difference']:.0e} |")
    title = f"The drop-in namespaces against SciPy, CPU, {report['date']}"
    page = save_report(folder / f"dropin-{report['date']}", report, title, prose, ["function", "shape", "arrayconv", "SciPy", "ratio", "difference"], lines)
    _plot(rows, page.with_suffix(".png"))
    return page


def _plot(rows: list[dict], path: Path) -> None:
    """SciPy's time over arrayconv's against the number of samples, one line per function."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, ndim, title in ((axes[0], 2, "2-D images"), (axes[1], 3, "3-D volumes")):
        for function in dict.fromkeys(r["function"] for r in rows if len(r["shape"]) == ndim):
            mine = [r for r in rows if r["function"] == function and len(r["shape"]) == ndim]
            ax.plot([np.prod(r["shape"]) for r in mine], [r["median_s"]["scipy"] / r["median_s"]["arrayconv"] for r in mine], "o-", label=function)
        ax.axhline(1.5, color="k", linestyle="--", linewidth=0.8)
        ax.set(xscale="log", yscale="log", xlabel="samples", title=title)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("SciPy's time / arrayconv's")
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sides", default="512,1024,2048,4096,8192", help="sides of the square images")
    parser.add_argument("--volumes", default="128,256", help="sides of the cubic volumes")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    kernels = random_kernels(rng)
    shapes = [((int(s),) * 2, IMAGE_CALLS) for s in args.sides.split(",") if s] + [((int(s),) * 3, VOLUME_CALLS) for s in args.volumes.split(",") if s]
    rows = []
    for shape, calls in shapes:
        x = rng.standard_normal(shape, dtype=np.float32)
        for namespace, function, arguments in calls:
            positional, options = arguments(kernels)
            rows.append(time_row(namespace, function, positional, options, x, args.repeats))
            s = rows[-1]["median_s"]
            print(f"{rows[-1]['function']} {shape}: arrayconv {1e3 * s['arrayconv']:.2f}, scipy {1e3 * s['scipy']:.2f} ms", flush=True)
    print(write(rows, Path(args.out), argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
