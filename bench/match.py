"""Template matching against scikit-image and OpenCV: speed and accuracy of the scores.

Usage: ``python -m bench.match [--sides 512,1024,2048,4096] [--templates 7,15,31,63]
[--dtypes float32,float64] [--offset 0] [--repeats 5] [--device cpu|gpu] [--out bench/results]``.
For each square image (normal noise plus `offset`, the dark level of a camera say) and
square template (a piece of the image, so each call finds it), and each dtype,
``arrayconv.match_template(image, template)`` ('valid', 'auto'),
``skimage.feature.match_template`` and OpenCV's ``cv2.matchTemplate(..., TM_CCOEFF_NORMED)``
(float32 only; each where installed: ``pip install scikit-image opencv-python-headless``)
run interleaved in one process after a warm-up call each, in a new order each round;
the median of `repeats` rounds is kept. With ``--device gpu`` arrayconv runs on CuPy
arrays, timed by CUDA events, and the peers still on the CPU. Each one's largest error is
measured on 2000 windows (the template's own and others at random) against their scores
by definition, from the float64 image and template. Writes
``match[-gpu]-<date>[-offsetN].md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

import arrayconv as ac

from .devices import Device, device, report_stem
from .peers import installed_versions, interleaved_medians, time_call
from .run import new_report, save_report

PEERS = ("skimage.feature.match_template", "cv2.matchTemplate")


def peer_calls(image: np.ndarray, template: np.ndarray) -> tuple[dict[str, Callable[[], np.ndarray]], dict[str, str]]:
    """The peers' calls on `image` and `template`, and why each missing one is missing."""
    calls: dict[str, Callable[[], np.ndarray]] = {}
    missing: dict[str, str] = {}
    try:
        from skimage.feature import match_template
    except ImportError:
        missing[PEERS[0]] = "scikit-image is not installed"
    else:
        calls[PEERS[0]] = lambda: match_template(image, template)
    try:
        import cv2
    except ImportError:
        missing[PEERS[1]] = "opencv-python is not installed"
    else:
        if image.dtype == np.float32 and image.ndim == 2:
            calls[PEERS[1]] = lambda: cv2.matchTemplate(image, template, cv2.TM_CCOEFF_NORMED)
        else:
            missing[PEERS[1]] = f"on {image.ndim}-D {image.dtype} images: it takes 2-D float32 or uint8 only"
    return calls, missing


def defined_scores(image: np.ndarray, template: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """The scores of the windows of `image` whose first samples are `corners` ``(n, 2)``,
    by definition: the window and the template, each less its mean, their dot product
    over the product of their norms."""
    windows = np.lib.stride_tricks.sliding_window_view(image, template.shape)[corners[:, 0], corners[:, 1]]
    windows = windows - windows.mean(axis=(1, 2), keepdims=True)
    t = template - template.mean()
    return np.einsum("nij,ij->n", windows, t) / np.sqrt(np.einsum("nij,nij->n", windows, windows) * np.sum(t * t))


def time_point(side: int, k: int, dtype: str, offset: float, repeats: int, rng: np.random.Generator, dev: Device) -> dict:
    """Median seconds and largest errors of arrayconv (on `dev`) and the peers (on the
    CPU) on one image and template."""
    exact = offset + rng.standard_normal((side, side))
    top, left = rng.integers(0, side - k + 1, size=2)
    image = exact.astype(dtype)
    template = image[top : top + k, left : left + k].copy()
    windows = np.concatenate([[[top, left]], rng.integers(0, side - k + 1, size=(1999, 2))])
    reference = defined_scores(image.astype(np.float64), template.astype(np.float64), windows)
    peers, missing = peer_calls(image, template)
    on_device = dev.xp.asarray(image), dev.xp.asarray(template)
    calls = {"arrayconv": lambda: ac.match_template(*on_device), **peers}
    timers = {name: dev.time_call if name == "arrayconv" else time_call for name in calls}
    hosts = {name: dev.to_host if name == "arrayconv" else np.asarray for name in calls}
    errors = {name: float(np.max(np.abs(hosts[name](call())[tuple(windows.T)] - reference))) for name, call in calls.items()}  # the warm-up calls
    median = interleaved_medians(calls, timers, repeats)
    scores = dev.to_host(calls["arrayconv"]())
    found = np.unravel_index(np.argmax(scores), scores.shape)
    return {
        "side": side, "template": k, "dtype": dtype, "offset": offset, "median_s": median, "max_error": errors,
        "missing": missing, "found": [int(found[0]), int(found[1])], "placed": [int(top), int(left)],
        "method": ac.choose_method(*on_device, mode="valid").method,
    }


def write(points: list[dict], folder: Path, offset: float, argv: list[str], dev: Device) -> Path:
    """JSON and Markdown reports; returns the Markdown path."""
    versions = {**dev.versions(), **installed_versions({"scikit-image": "skimage", "opencv": "cv2"})}
    report = new_report("python -m bench.match", argv, versions, device=dev.name, points=points)
    missing = {name: why for p in points for name, why in p["missing"].items()}
    prose = [
        f"Images of normal noise plus {offset:g}; the template a piece of the image. `arrayconv.match_template(image, template)`",
        "('valid', method 'auto'), `skimage.feature.match_template` and `cv2.matchTemplate(..., TM_CCOEFF_NORMED)`,",
        "interleaved, after a warm-up call each; median of the rounds, milliseconds. Ratio = the fastest peer's time / arrayconv's",
        "(over 1: arrayconv faster). Error: the largest difference from the scores by definition (of the float64 image and template) on",
        "2000 windows, the template's own and others at random.",
        *(f"Not run: {name} ({why})." for name, why in missing.items()),
    ]
    columns = ["image", "template", "dtype", "arrayconv ms", "auto picks", "skimage ms", "OpenCV ms", "ratio", "arrayconv error", "skimage error", "OpenCV error", "found"]
    rows = []
    for p in points:
        ms = {name: f"{1e3 * s:.1f}" for name, s in p["median_s"].items()}
        err = {name: f"{e:.1e}" for name, e in p["max_error"].items()}
        peers = [p["median_s"][name] for name in PEERS if name in p["median_s"]]
        ratio = f"{min(peers) / p['median_s']['arrayconv']:.2f}" if peers else "-"
        found = "yes" if p["found"] == p["placed"] else f"no: {p['found']}"
        rows.append(
            f"| {p['side']}x{p['side']} | {p['template']}x{p['template']} | {p['dtype']} | {ms['arrayconv']} | {p['method']} "
            f"| {ms.get(PEERS[0], '-')} | {ms.get(PEERS[1], '-')} | {ratio} | {err['arrayconv']} | {err.get(PEERS[0], '-')} | {err.get(PEERS[1], '-')} | {found} |"
        )
    stem = folder / (report_stem("match", dev.name, report["date"]) + (f"-offset{offset:g}" if offset else ""))
    title = f"Template matching, {'GPU' if dev.name == 'gpu' else 'CPU'}, {report['date']}"
    return save_report(stem, report, title, prose, columns, rows)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sides", default="512,1024,2048,4096")
    parser.add_argument("--templates", default="7,15,31,63")
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--offset", type=float, default=0.0, help="added to every sample of the images")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu", choices=("cpu", "gpu"), help="where arrayconv runs (CUDA events on the GPU); the peers run on the CPU")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    dev = device(args.device)
    rng = np.random.default_rng(0)
    points = []
    for side in (int(s) for s in args.sides.split(",")):
        for k in (int(s) for s in args.templates.split(",")):
            for dtype in args.dtypes.split(","):
                points.append(time_point(side, k, dtype, args.offset, args.repeats, rng, dev))
                p = points[-1]
                print(f"{side} {k} {dtype}: " + ", ".join(f"{n} {1e3 * s:.1f} ms" for n, s in p["median_s"].items()), flush=True)
    print(write(points, Path(args.out), args.offset, argv, dev))
    return 0


if __name__ == "__main__":
    sys.exit(main())
