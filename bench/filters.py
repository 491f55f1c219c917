"""Small kernels at the memory floor: arrayconv against OpenCV and scipy.ndimage.

Usage: ``python -m bench.filters [--sides 1024,4096,8192] [--int-sides 1024,4096]
[--kernels 3,5,7,11,15] [--sigmas 0.5,1,2,3,8] [--borders-side 2048] [--volumes 128,256,24x1024x1024]
[--volume-flat-sigmas 1] [--repeats 5] [--base BASE] [--out bench/results]``; ``--fit`` instead fits the
compiled form's cost constants (:mod:`arrayconv._methods._compiled`) to its timings.

2-D float32 images of each side, and uint8 and uint16 images of the integer sides (random
samples; integers over their whole range),
correlated 'same' with random square kernels and with Gaussians (the outer product of
one 1-D Gaussian with itself, taps to 4 sigma as scipy.ndimage's): ``arrayconv.correlate``
(the result float32), ``cv2.filter2D`` / ``cv2.sepFilter2D`` (``ddepth=CV_32F``, the same
taps) and ``scipy.ndimage.correlate`` / ``gaussian_filter`` (``output=float32``), each as
plain calls that make their result, and arrayconv and OpenCV writing into a given array.
Every boundary rule OpenCV shares (constant, replicate, reflect-101, reflect; OpenCV's
filters refuse wrap) runs on the float32 images of ``--borders-side``; the others take
constant (zeros). 3-D float32 volumes against scipy.ndimage (OpenCV has no 3-D filter),
and Gaussians of ``--volume-flat-sigmas`` over two of a volume's axes, one tap along the
third (``gaussian_filter`` with sigma 0 there, which it skips).
Each row has the memory floor measured beside it: one read and one write of the image
(``numpy.copyto`` into a given array of the result's dtype). All calls of a row run
interleaved after a warm-up, the median of `repeats` rounds kept. The first call's compile
time of numba's loops (one kernel width, in a fresh process with an empty cache, and again
with the cache on disk) is measured too. With ``--base``, an older arrayconv (a folder
holding its package) runs beside this one in the same process, interleaved. Writes ``filters-<date>.md``, ``.json`` and
``.png`` (time against kernel size) to `out`.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import scipy.ndimage as ndi

import arrayconv as ac

from .layers import load_base
from .peers import installed_versions, interleaved_medians, time_call
from .run import command_line, report_head, save_figure, versions

# (arrayconv's boundary, OpenCV's border name, scipy.ndimage's mode) of each rule OpenCV shares.
BORDERS = {
    "constant": ("constant", "BORDER_CONSTANT", "constant"),
    "replicate": ("edge", "BORDER_REPLICATE", "nearest"),
    "reflect101": ("mirror", "BORDER_REFLECT_101", "mirror"),
    "reflect": ("symmetric", "BORDER_REFLECT", "reflect"),
}
# scipy.ndimage's direct sums are left out past this many multiply-adds a call (a second and more).
MAX_NDIMAGE_MACS = 1e9


def gaussian(sigma: float) -> np.ndarray:
    """scipy.ndimage's 1-D Gaussian: taps to 4 sigma, summing to one."""
    radius = int(4 * sigma + 0.5)
    t = np.arange(-radius, radius + 1)
    g = np.exp(-0.5 * (t / sigma) ** 2)
    return (g / g.sum()).astype(np.float32)


def image(shape: tuple[int, ...], dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Random samples of `dtype`: uniform in [0, 1) for floats, the whole range for integers."""
    if np.dtype(dtype).kind == "f":
        return rng.random(shape, dtype=dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def row_calls(x: np.ndarray, kernel: str, size: float, border: str, flat: int | None = None, base: ModuleType | None = None) -> tuple[dict[str, Callable[[], object]], dict[str, str], int]:
    """The calls of one row (name -> call), why any peer is missing, and the taps of the
    kernel (a Gaussian of one tap along axis `flat`, where given); `base`'s plain call and
    its plan writing into the same given array beside arrayconv's, where given."""
    rng = np.random.default_rng(1)
    boundary, cv_border, nd_mode = BORDERS[border]
    out = np.empty(x.shape, np.float32)
    if kernel == "gaussian":
        g = gaussian(size)
        w = functools.reduce(np.multiply.outer, [np.ones(1, np.float32) if axis == flat else g for axis in range(x.ndim)])
        sigmas = [0.0 if axis == flat else size for axis in range(x.ndim)]
    else:
        w = rng.random((int(size),) * x.ndim, dtype=np.float32)
    plan = ac.plan_correlate(w, x.shape, "same", boundary=boundary, dtype=x.dtype)
    calls: dict[str, Callable[[], object]] = {
        "arrayconv": lambda: ac.correlate(x, w, "same", boundary=boundary),
        "arrayconv out=": lambda: plan(x, out=out),
        "floor": lambda: np.copyto(out, x),
    }
    if base is not None:
        calls["base"] = lambda: base.correlate(x, w, "same", boundary=boundary)
        base_plan = base.plan_correlate(w, x.shape, "same", boundary=boundary, dtype=x.dtype)
        calls["base out="] = lambda: base_plan(x, out=out)
    missing: dict[str, str] = {}
    try:
        import cv2
    except ImportError:
        missing["OpenCV"] = "opencv-python is not installed"
    else:
        if x.ndim != 2:
            missing["OpenCV"] = "no 3-D filters"
        else:
            flag = getattr(cv2, cv_border)
            if kernel == "gaussian":
                calls["OpenCV"] = lambda: cv2.sepFilter2D(x, cv2.CV_32F, g, g, borderType=flag)
                calls["OpenCV dst="] = lambda: cv2.sepFilter2D(x, cv2.CV_32F, g, g, dst=out, borderType=flag)
            else:
                calls["OpenCV"] = lambda: cv2.filter2D(x, cv2.CV_32F, w, borderType=flag)
                calls["OpenCV dst="] = lambda: cv2.filter2D(x, cv2.CV_32F, w, dst=out, borderType=flag)
    if kernel == "gaussian":
        calls["scipy.ndimage"] = lambda: ndi.gaussian_filter(x, sigmas, mode=nd_mode, output=np.float32)
    elif x.size * w.size <= MAX_NDIMAGE_MACS:
        calls["scipy.ndimage"] = lambda: ndi.correlate(x, w, mode=nd_mode, output=np.float32)
    else:
        missing["scipy.ndimage"] = f"over {MAX_NDIMAGE_MACS:.0e} multiply-adds a call"
    return calls, missing, w.size


def time_row(shape: tuple[int, ...], dtype: str, kernel: str, size: float, border: str, repeats: int, flat: int | None = None, base: ModuleType | None = None) -> dict:
    """Median seconds of every call of one row, and the largest difference between
    arrayconv's result and each peer's, relative to the largest magnitude."""
    x = image(shape, dtype, np.random.default_rng(0))
    calls, missing, taps = row_calls(x, kernel, size, border, flat, base)
    results = {name: np.asarray(call()) for name, call in calls.items() if name in ("arrayconv", "OpenCV", "scipy.ndimage", "base")}  # warm-up
    for name, call in calls.items():
        if name not in results:
            call()
    mine = results.pop("arrayconv").astype(np.float64)
    scale = float(np.max(np.abs(mine))) or 1.0
    agree = {name: float(np.max(np.abs(r.astype(np.float64) - mine))) / scale for name, r in results.items()}
    median = interleaved_medians(calls, {name: time_call for name in calls}, repeats)
    return {
        "shape": list(shape), "dtype": dtype, "kernel": kernel, "size": size, "taps": taps, "border": border,
        "median_s": median, "missing": missing, "difference": agree, "flat_axis": flat,
    }


def compile_seconds() -> dict[str, float]:
    """The first call of numba's loops in a fresh process: with an empty cache (compiled),
    then again (read from the cache on disk), for a 3x3 and a Gaussian kernel on a float32
    image and a 3x3x3 kernel on a volume; whole calls, less the same call once warm."""
    script = (
        "import time, numpy as np, arrayconv as ac\n"
        "g = np.exp(-0.5 * np.arange(-4, 5) ** 2); g = (g / g.sum()).astype(np.float32)\n"
        "cases = {'3x3': (np.ones((512, 512), np.float32), np.arange(9, dtype=np.float32).reshape(3, 3)),\n"
        "         'gaussian sigma 1': (np.ones((512, 512), np.float32), np.outer(g, g)),\n"
        "         '3x3x3': (np.ones((64, 64, 64), np.float32), np.arange(27, dtype=np.float32).reshape(3, 3, 3))}\n"
        "for name, (x, w) in cases.items():\n"
        "    t0 = time.perf_counter(); ac.correlate(x, w, 'same', method='direct'); first = time.perf_counter() - t0\n"
        "    t0 = time.perf_counter(); ac.correlate(x, w, 'same', method='direct'); warm = time.perf_counter() - t0\n"
        "    print(name, first - warm)\n"
    )
    found: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as cache:
        for when in ("empty cache", "cache on disk"):
            env = {**os.environ, "ARRAYCONV_CACHE_DIR": cache}
            lines = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout.splitlines()
            for line in lines:
                name, seconds = line.rsplit(" ", 1)
                found[f"{name}, {when}"] = float(seconds)
    return found


def _milliseconds(seconds: float) -> str:
    """`seconds` in milliseconds to three significant digits (sub-millisecond rows too),
    whole past 100."""
    ms = 1e3 * seconds
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.3g}"


def write(rows: list[dict], compiled: dict[str, float], folder: Path, argv: list[str], base: Path | None = None) -> Path:
    """JSON, Markdown and a plot; returns the Markdown path."""
    date = datetime.date.today().isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"filters-{date}"
    found = installed_versions({"opencv": "cv2", "numba": "numba"})
    report = {"date": date, "command": command_line("python -m bench.filters", argv), "versions": {**versions(), **found}, "rows": rows, "first_call_s": compiled}
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    missing = sorted({f"{name} ({why})" for r in rows for name, why in r["missing"].items()})
    lines = [
        *report_head(f"Small kernels at the memory floor, CPU, {date}", report["command"], report["versions"]),
        "'same' correlations, the result float32; plain calls (each makes its result) and calls writing into a given array.",
        "Milliseconds, median of the rounds, all calls of a row interleaved. cv2 / ac: OpenCV's time over arrayconv's (over 1:",
        "arrayconv faster), plain calls and given arrays; floor: one read and one write of the image (`numpy.copyto`), and",
        "arrayconv's given-array time over it. Gaussians: the outer product of scipy.ndimage's taps (to 4 sigma), through",
        "`cv2.sepFilter2D` and `gaussian_filter`. Difference: the largest from arrayconv's result, over its largest magnitude.",
        *(f"Not run: {m}." for m in missing),
        *([f"Base: the arrayconv under `{base}`, its plain call and its plan into the same given array interleaved in the same process;",
           "ac / base: this one's time over the base's, plain calls and given arrays (the steadier of the two)."] if base else []),
        "",
        "| image | dtype | kernel | border | arrayconv | OpenCV | ndimage | cv2 / ac | out= | dst= | cv2 / ac (out) | floor | out / floor | differences |"
        + (" base | ac / base | base out= | ac / base (out) |" if base else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|---|" if base else ""),
    ]
    for r in rows:
        s = r["median_s"]
        ms = {name: _milliseconds(t) for name, t in s.items()}
        kernel = f"{r['size']:g}" + ("x" + f"{r['size']:g}") * (len(r["shape"]) - 1) if r["kernel"] == "random" else f"Gaussian sigma {r['size']:g}"
        if r.get("flat_axis") is not None:
            kernel += f", one tap along axis {r['flat_axis']}"
        ratio = f"{s['OpenCV'] / s['arrayconv']:.2f}" if "OpenCV" in s else "-"
        ratio_out = f"{s['OpenCV dst='] / s['arrayconv out=']:.2f}" if "OpenCV dst=" in s else "-"
        differences = ", ".join(f"{name} {d:.0e}" for name, d in r["difference"].items()) or "-"
        lines.append(
            f"| {'x'.join(map(str, r['shape']))} | {r['dtype']} | {kernel} | {r['border']} | {ms['arrayconv']} | {ms.get('OpenCV', '-')} "
            f"| {ms.get('scipy.ndimage', '-')} | {ratio} | {ms['arrayconv out=']} | {ms.get('OpenCV dst=', '-')} | {ratio_out} "
            f"| {ms['floor']} | {s['arrayconv out='] / s['floor']:.2f} | {differences} |"
            + (f" {ms['base']} | {s['arrayconv'] / s['base']:.2f} | {ms['base out=']} | {s['arrayconv out='] / s['base out=']:.2f} |" if "base" in s else "")
        )
    lines += ["", "First calls (numba compiling its loops for a new kernel width; seconds beyond a warm call):", ""]
    lines += [f"- {name}: {seconds:.2f} s" for name, seconds in compiled.items()]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    _plot(rows, stem.with_suffix(".png"))
    return stem.with_suffix(".md")


def _plot(rows: list[dict], path: Path) -> None:
    """Time against kernel size on the largest float32 image with zeros past the edges:
    random kernels and Gaussians side by side."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    flat = [r for r in rows if len(r["shape"]) == 2 and r["dtype"] == "float32" and r["border"] == "constant"]
    if not flat:
        return
    side = max(r["shape"][0] for r in flat)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, kernel, label in zip(axes, ("random", "gaussian"), ("square kernel side", "Gaussian sigma")):
        chosen = sorted((r for r in flat if r["kernel"] == kernel and r["shape"][0] == side), key=lambda r: r["size"])
        for name, style in (("arrayconv", "o-"), ("OpenCV", "s-"), ("scipy.ndimage", "^-"), ("floor", "k--")):
            points = [(r["size"], 1e3 * r["median_s"][name]) for r in chosen if name in r["median_s"]]
            if points:
                ax.plot(*zip(*points), style, label=name)
        ax.set(xlabel=label, ylabel="ms", yscale="log", title=f"{side}x{side} float32, zeros past the edges")
        ax.legend()
    save_figure(fig, path)


def fit(repeats: int) -> dict[str, float]:
    """Least-squares fit of the compiled form's cost constants (per multiply-add and per tap
    of the loops at a row's ends: the "compiled" weights ``MAC_BYTES`` and ``EDGE_TAP_BYTES``
    of arrayconv/_runtime/fitted.json) to its timings on 2-D and 3-D float32 images and
    rows, in the model's units (the other methods' estimates run 1.3x their times; a byte
    moved counts one byte at the stream rate), each error relative to the time."""
    from arrayconv._methods import _compiled, direct
    from arrayconv._runtime import config as _config
    from arrayconv._runtime.backend import NUMPY
    from arrayconv._runtime.rates import rates_for

    rates, workers = rates_for(NUMPY), _config.workers()
    real = direct._fastest_form
    direct._fastest_form = lambda problem, backend, r, s: ("compiled", int(problem.rank_one)) if _compiled.takes(problem, NUMPY) else real(problem, backend, r, s)
    features, targets, measured = [], [], []
    try:
        rng = np.random.default_rng(0)
        shapes = [(s, s) for s in (64, 256, 1024, 2048, 4096)] + [(s, s, s) for s in (32, 96, 192)]
        square = [(shape, (k,) * len(shape), outer) for shape in shapes for k in (3, 5, 7, 11, 15) if k < min(shape) for outer in (False, True)]
        rows = [(shape, (1,) * (len(shape) - 1) + (k,), False) for shape in ((256, 16384), (2048, 2048), (64, 64, 1024)) for k in (3, 9, 17, 33, 65)]
        for shape, kernel, outer in square + rows:  # square kernels and outer products; rows (kernels one row high)
            x = rng.random(shape, dtype=np.float32)
            w = rng.random(kernel, dtype=np.float32)
            k = kernel[-1]
            if outer:
                line = rng.random(k, dtype=np.float32)
                w = np.multiply.outer(np.multiply.outer(line, line), line) if len(shape) == 3 else np.multiply.outer(line, line)
            plan = ac.plan_correlate(w, shape, "same", "direct")
            plan(x)  # compiles the loops it runs
            seconds = interleaved_medians({"plan": lambda: plan(x)}, {"plan": time_call}, repeats)["plan"]
            p = plan._spec.problem
            saved = (_compiled._MAC_BYTES, _compiled._EDGE_TAP_BYTES)
            parts = []
            for i in range(2):  # each constant's share of the estimate, one at a time
                _compiled._MAC_BYTES, _compiled._EDGE_TAP_BYTES = (float(i == j) for j in range(2))
                parts.append(_compiled.seconds(p, rates, outer, workers))
            _compiled._MAC_BYTES, _compiled._EDGE_TAP_BYTES = (0.0, 0.0)
            rest = _compiled.seconds(p, rates, outer, workers)  # the bytes moved and the calls
            _compiled._MAC_BYTES, _compiled._EDGE_TAP_BYTES = saved
            features.append([part - rest for part in parts])
            targets.append(1.3 * seconds - rest)
            measured.append(1.3 * seconds)
            print(f"{shape} {w.shape} outer={outer}: {1e3 * seconds:.3f} ms, estimate {1e3 * _compiled.seconds(p, rates, outer, workers):.3f}", flush=True)
    finally:
        direct._fastest_form = real
    from scipy.optimize import nnls

    a, b = np.array(features), np.array(targets)
    weights = 1 / np.array(measured)  # relative errors: small and large calls count alike
    constants, _ = nnls(a * weights[:, None], b * weights)
    errors = np.abs(a @ constants - b) / np.array(measured)
    today = np.abs(a @ np.array([_compiled._MAC_BYTES, _compiled._EDGE_TAP_BYTES]) - b) / np.array(measured)
    print(f"median relative error {np.median(errors):.2f}, worst {errors.max():.2f} (today's weights: {np.median(today):.2f}, {today.max():.2f})")
    return dict(zip(("MAC_BYTES", "EDGE_TAP_BYTES"), (round(float(c), 2) for c in constants)))


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sides", default="1024,4096,8192", help="sides of the float32 images")
    parser.add_argument("--int-sides", default="1024,4096", help="sides of the uint8 and uint16 images")
    parser.add_argument("--kernels", default="3,5,7,11,15", help="sides of the random square kernels")
    parser.add_argument("--sigmas", default="0.5,1,2,3,8", help="the Gaussians' sigmas")
    parser.add_argument("--borders-side", type=int, default=2048, help="the float32 image side every boundary rule runs on (0: none)")
    parser.add_argument("--volumes", default="128,256", help="sides of the 3-D float32 volumes (cubes), or their shapes (24x1024x1024)")
    parser.add_argument("--volume-kernels", default="3,5")
    parser.add_argument("--volume-sigmas", default="1,2")
    parser.add_argument("--volume-flat-sigmas", default="1", help="Gaussians over two axes of the volumes, one tap along each axis in turn")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-compile-time", action="store_true", help="skip timing numba's first compile")
    parser.add_argument("--fit", action="store_true", help="fit the compiled form's cost constants instead")
    parser.add_argument("--base", type=Path, help="a folder holding an older arrayconv package, timed beside this one")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    if args.fit:
        print(fit(args.repeats))
        return 0
    numbers = lambda text, kind=float: [kind(s) for s in text.split(",") if s]
    kernels = [("random", k) for k in numbers(args.kernels, int)] + [("gaussian", s) for s in numbers(args.sigmas)]
    images = [(side, "float32") for side in numbers(args.sides, int)] + [(side, dtype) for side in numbers(args.int_sides, int) for dtype in ("uint8", "uint16")]
    plan: list[tuple[tuple[int, ...], str, str, float, str, int | None]]
    plan = [((side, side), dtype, kernel, size, "constant", None) for side, dtype in images for kernel, size in kernels]
    plan += [((args.borders_side,) * 2, "float32", kernel, size, border, None) for border in BORDERS if border != "constant" and args.borders_side for kernel, size in kernels]
    volume_kernels = [("random", k, None) for k in numbers(args.volume_kernels, int)] + [("gaussian", s, None) for s in numbers(args.volume_sigmas)]
    volume_kernels += [("gaussian", s, axis) for s in numbers(args.volume_flat_sigmas) for axis in range(3)]
    volumes = [tuple(int(n) for n in v.split("x")) if "x" in v else (int(v),) * 3 for v in args.volumes.split(",") if v]
    plan += [(shape, "float32", kernel, size, border, flat) for shape in volumes for kernel, size, flat in volume_kernels for border in ("constant", "reflect101")]
    base = load_base(args.base) if args.base else None
    rows = []
    started = time.perf_counter()
    for shape, dtype, kernel, size, border, flat in plan:
        rows.append(time_row(shape, dtype, kernel, size, border, args.repeats, flat, base))
        s = rows[-1]["median_s"]
        along = "" if flat is None else f" (one tap along axis {flat})"
        print(f"{'x'.join(map(str, shape))} {dtype} {kernel} {size:g}{along} {border}: " + ", ".join(f"{n} {1e3 * t:.1f}" for n, t in s.items()) + " ms", flush=True)
    compiled = {} if args.no_compile_time else compile_seconds()
    print(f"{math.ceil(time.perf_counter() - started)} s")
    print(write(rows, compiled, Path(args.out), argv, args.base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
