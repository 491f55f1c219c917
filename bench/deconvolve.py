"""Richardson-Lucy deconvolution against scikit-image: speed, and agreement of the results.

Usage: ``python -m bench.deconvolve [--sides 512,1024,2048] [--psfs 9,25]
[--ndim 2] [--dtypes float32,float64] [--iterations 10] [--repeats 3] [--device cpu|gpu] [--base BASE] [--out bench/results]``.
For each square image (a star field on a faint sky, blurred and with Poisson noise; with
``--ndim 3`` a volume of ``side // 4`` planes of ``side x side``), each PSF side (a
Gaussian, whose kernel is separable, and a uniform disc or ball, a defocus blur, which
is not) and each dtype, ``arrayconv.richardson_lucy(image, psf, iterations)`` and
``skimage.restoration.richardson_lucy(image, psf, iterations, clip=False)`` (where
installed) run interleaved in one process after a warm-up call each, in a new order each
round; the median of `repeats` rounds is kept. With ``--device gpu`` arrayconv runs on
CuPy arrays, timed by CUDA events, and skimage on the CPU. Each result's largest
difference from skimage's float64 result (the same iterations on the float64 image and
PSF) is reported relative to its largest sample. With ``--base``, an older arrayconv (a folder
holding its package, :func:`.layers.load_base`) runs interleaved too. Writes
``deconvolve[-gpu]-<date>[-3d].md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

import arrayconv as ac

from .devices import Device, device, report_stem
from .layers import load_base
from .peers import installed_versions, interleaved_medians, time_call
from .run import new_report, save_report

PEER = "skimage.restoration.richardson_lucy"


def make_psf(kind: str, side: int, ndim: int = 2) -> np.ndarray:
    """A PSF of `side` samples along each of `ndim` axes, summing to 1: 'gaussian' (sigma
    side/6, separable) or 'disc' (uniform within radius side/2, a ball in 3-D; not
    separable)."""
    r = np.arange(side) - (side - 1) / 2
    r2 = sum(np.expand_dims(r**2, tuple(a for a in range(ndim) if a != axis)) for axis in range(ndim))
    psf = np.exp(-r2 / (2 * (side / 6) ** 2)) if kind == "gaussian" else (r2 <= (side / 2) ** 2).astype(np.float64)
    return psf / psf.sum()


def image_shape(side: int, ndim: int) -> tuple[int, ...]:
    """A square image of `side`, or a volume of ``side // 4`` planes of ``side x side``."""
    return (side, side) if ndim == 2 else (max(1, side // 4), side, side)


def star_field(shape: tuple[int, ...], psf: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Point sources (exponential fluxes, mean 2000; one per ``2 * shape[-1]`` samples) on a
    sky of 10 counts, blurred by `psf`, with Poisson noise: float64 counts."""
    truth = np.full(shape, 10.0)
    stars = tuple(rng.integers(0, n, max(1, truth.size // (2 * shape[-1]))) for n in shape)
    truth[stars] += rng.exponential(2000.0, stars[0].size)
    return rng.poisson(np.clip(ac.convolve(truth, psf, "same"), 0, None)).astype(np.float64)


def skimage_call(image: np.ndarray, psf: np.ndarray, iterations: int) -> tuple[Callable[[], np.ndarray] | None, str]:
    """skimage's call on `image` and `psf`, or None and why it is missing."""
    try:
        from skimage.restoration import richardson_lucy
    except ImportError:
        return None, "scikit-image is not installed"
    return (lambda: richardson_lucy(image, psf, iterations, clip=False)), ""


def time_point(
    shape: tuple[int, ...], kind: str, k: int, dtype: str, iterations: int, repeats: int, rng: np.random.Generator, dev: Device, base: ModuleType | None = None
) -> dict:
    """Median seconds of arrayconv (and `base`, an older one; on `dev`) and skimage (on the
    CPU) on one image and PSF, and each result's largest difference from skimage's float64
    result."""
    psf64 = make_psf(kind, k, len(shape))
    image64 = star_field(shape, psf64, rng)
    image, psf = image64.astype(dtype), psf64.astype(dtype)
    on_device = dev.xp.asarray(image), dev.xp.asarray(psf)
    calls: dict[str, Callable[[], object]] = {"arrayconv": lambda: ac.richardson_lucy(*on_device, iterations)}
    if base is not None:
        calls["base"] = lambda: base.richardson_lucy(*on_device, iterations)
    theirs, missing = skimage_call(image, psf, iterations)
    if theirs is not None:
        calls[PEER] = theirs
    timers = {name: time_call if name == PEER else dev.time_call for name in calls}
    hosts = {name: np.asarray if name == PEER else dev.to_host for name in calls}
    results = {name: hosts[name](call()) for name, call in calls.items()}  # the warm-up calls
    errors = {}
    if theirs is not None:  # skimage's float64 result: its warm-up call's for float64 data
        exact = results[PEER] if image.dtype == np.float64 else skimage_call(image64, psf64, iterations)[0]()
        errors = {name: float(np.max(np.abs(r.astype(np.float64) - exact)) / np.max(np.abs(exact))) for name, r in results.items()}
    median = interleaved_medians(calls, timers, repeats)
    method = ac.plan_convolve(on_device[1], image.shape, "same", dtype=image.dtype).method  # the blur's, as richardson_lucy plans it
    return {
        "shape": list(shape), "psf": kind, "psf_shape": list(psf.shape), "dtype": dtype, "iterations": iterations,
        "median_s": median, "max_difference": errors,
        "missing": {PEER: missing} if missing else {}, "method": method,
    }


def write(points: list[dict], folder: Path, argv: list[str], dev: Device, ndim: int, base: Path | None = None) -> Path:
    """JSON and Markdown reports; returns the Markdown path."""
    versions = {**dev.versions(), **installed_versions({"scikit-image": "skimage"})}
    report = new_report("python -m bench.deconvolve", argv, versions, device=dev.name, points=points)
    missing = {name: why for p in points for name, why in p["missing"].items()}
    prose = [
        f"Star fields{' in volumes' if ndim == 3 else ''} (exponential fluxes on a sky of 10 counts) blurred by the PSF, with Poisson noise. "
        "`arrayconv.richardson_lucy(image, psf, n)` and `skimage.restoration.richardson_lucy(image, psf, n, clip=False)`,",
        "interleaved, after a warm-up call each; median of the rounds, milliseconds for all n iterations. "
        "Ratio = skimage's time / arrayconv's (over 1: arrayconv faster).",
        "Difference: the largest from skimage's result on the float64 image and PSF, relative to its largest sample. "
        "Gaussian PSFs are separable (direct runs them as one 1-D pass per axis); discs and balls are not.",
        *(f"Not run: {name} ({why})." for name, why in missing.items()),
        *([f"Base: the arrayconv under `{base}`, interleaved in the same process; this / base: this one's time over the base's."] if base else []),
    ]
    columns = ["image", "PSF", "dtype", "iterations", "arrayconv ms", "method", "skimage ms", "ratio", "arrayconv difference", "skimage difference", *(["base ms", "this / base"] if base else [])]
    rows = []
    for p in points:
        ms = {name: f"{1e3 * s:.1f}" for name, s in p["median_s"].items()}
        difference = {name: f"{e:.1e}" for name, e in p["max_difference"].items()}
        ratio = f"{p['median_s'][PEER] / p['median_s']['arrayconv']:.2f}" if PEER in ms else "-"
        rows.append(
            f"| {'x'.join(map(str, p['shape']))} | {p['psf']} {'x'.join(map(str, p['psf_shape']))} | {p['dtype']} | {p['iterations']} "
            f"| {ms['arrayconv']} | {p['method']} | {ms.get(PEER, '-')} | {ratio} | {difference.get('arrayconv', '-')} | {difference.get(PEER, '-')} |"
            + (f" {ms['base']} | {p['median_s']['arrayconv'] / p['median_s']['base']:.2f} |" if "base" in ms else "")
        )
    stem = folder / (report_stem("deconvolve", dev.name, report["date"]) + ("-3d" if ndim == 3 else ""))
    title = f"Richardson-Lucy deconvolution, {'GPU' if dev.name == 'gpu' else 'CPU'}, {report['date']}"
    return save_report(stem, report, title, prose, columns, rows)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sides", default="512,1024,2048")
    parser.add_argument("--psfs", default="9,25", help="PSF sides; each as a Gaussian and as a disc")
    parser.add_argument("--ndim", type=int, default=2, choices=(2, 3), help="images (2) or volumes of side // 4 planes (3)")
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu", choices=("cpu", "gpu"), help="where arrayconv runs (CUDA events on the GPU); skimage runs on the CPU")
    parser.add_argument("--base", type=Path, help="a folder holding an older arrayconv package, timed beside this one")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    dev = device(args.device)
    base = load_base(args.base) if args.base else None
    rng = np.random.default_rng(0)
    points = []
    for side in (int(s) for s in args.sides.split(",")):
        for k in (int(s) for s in args.psfs.split(",")):
            for kind in ("gaussian", "disc"):
                for dtype in args.dtypes.split(","):
                    p = time_point(image_shape(side, args.ndim), kind, k, dtype, args.iterations, args.repeats, rng, dev, base)
                    points.append(p)
                    print(f"{p['shape']} {kind} {k} {dtype}: " + ", ".join(f"{n} {1e3 * s:.1f} ms" for n, s in p["median_s"].items()), flush=True)
    print(write(points, Path(args.out), argv, dev, args.ndim, args.base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
