"""Conv layers outside deep-learning frameworks: arrayconv.conv against torch's CPU conv.

Usage: ``python -m bench.layers [--batches 1,16] [--repeats 7] [--dtype float32] [--loaded] [--base BASE] [--layers NAMES] [--without-torch] [--in-a-row N] [--out bench/results]``.
The layer shapes people run on images: 3x3 and 5x5 multichannel at unit stride, stride 2,
1x1, grouped, depthwise 3x3 to 7x7, dilated, and 3-D 3x3x3, each at each batch size,
float32 (or float64). ``arrayconv.conv`` ('auto') and ``torch.nn.functional.conv2d`` / ``conv3d`` (its
CPU build, oneDNN, as many threads as arrayconv's workers) run interleaved in one process
after a warm-up; the median of `repeats` rounds. Each row has the memory floor beside it:
the input read and the output written once at the machine's stream rate. With
``--loaded``, every call runs with a busy-looping process on every core
(:func:`.contention.busy_cores`). With ``--base``, an older arrayconv (a folder holding
its package, e.g. made by ``git archive REV arrayconv | tar -x -C BASE``) runs interleaved
in the same process, imported under another name: before and after without the drift
between processes. Where one version runs BLAS on its own threads and the other on its
own lanes, BLAS's threads spin for a while after each call and slow the next version's
threads: then compare versions in separate processes. ``--layers`` picks rows by name,
``--without-torch`` times the versions alone, ``--in-a-row N`` times N calls of one peer
in a row a round after an untimed one (a script's loop: what one call leaves in cache
helps the next, and no call meets another peer's spinning threads). Writes ``layers-<date>.md``
(``layers-loaded-<date>.md``, ``layers-float64-<date>.md``) and ``.json`` to `out`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

import arrayconv as ac
from arrayconv._runtime import config as _config
from arrayconv._runtime.backend import NUMPY
from arrayconv._runtime.machine import usable_cores
from arrayconv._runtime.rates import rates_for

from .contention import busy_cores
from .peers import interleaved_medians, time_call
from .run import new_report, save_report, versions

# (name, input (C, *spatial), filters (O, C/groups, *kernel), options)
LAYERS = [
    ("3x3, 64 -> 64", (64, 56, 56), (64, 64, 3, 3), dict(padding=1)),
    ("3x3, 256 -> 256", (256, 14, 14), (256, 256, 3, 3), dict(padding=1)),
    ("5x5, 32 -> 32", (32, 56, 56), (32, 32, 5, 5), dict(padding=2)),
    ("3x3 stride 2, 64 -> 128", (64, 56, 56), (128, 64, 3, 3), dict(padding=1, stride=2)),
    ("3x3 stride 2, 256 -> 512", (256, 14, 14), (512, 256, 3, 3), dict(padding=1, stride=2)),
    ("1x1, 256 -> 64", (256, 28, 28), (64, 256, 1, 1), {}),
    ("1x1, 512 -> 2048", (512, 7, 7), (2048, 512, 1, 1), {}),
    ("3x3 grouped (8), 128 -> 128", (128, 28, 28), (128, 16, 3, 3), dict(padding=1, groups=8)),
    ("depthwise 3x3, 64", (64, 112, 112), (64, 1, 3, 3), dict(padding=1, groups=64)),
    ("depthwise 5x5, 64", (64, 112, 112), (64, 1, 5, 5), dict(padding=2, groups=64)),
    ("depthwise 7x7, 96", (96, 56, 56), (96, 1, 7, 7), dict(padding=3, groups=96)),
    ("3x3 dilated 2, 64 -> 64", (64, 56, 56), (64, 64, 3, 3), dict(padding=2, dilation=2)),
    ("3-D 3x3x3, 8 -> 16", (8, 32, 64, 64), (16, 8, 3, 3, 3), dict(padding=1)),
    ("3-D depthwise 3x3x3, 16", (16, 32, 64, 64), (16, 1, 3, 3, 3), dict(padding=1, groups=16)),
]


def load_base(folder: Path) -> ModuleType:
    """The arrayconv package under `folder`, imported as ``arrayconv_base`` (its own
    imports are relative) from a copy in a temporary folder."""
    if not (folder / "arrayconv" / "__init__.py").is_file():
        raise SystemExit(f"{folder} holds no arrayconv package (make one with `git archive REV arrayconv | tar -x -C {folder}`)")
    copy = Path(tempfile.mkdtemp(prefix="arrayconv-base-"))
    shutil.copytree(folder / "arrayconv", copy / "arrayconv_base")
    sys.path.insert(0, str(copy))
    return importlib.import_module("arrayconv_base")


def time_layer(
    name: str,
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    options: dict,
    batch: int,
    repeats: int,
    base: ModuleType | None = None,
    dtype: str = "float32",
    with_torch: bool = True,
    in_a_row: int = 1,
) -> dict:
    """Median seconds of arrayconv (and `base`, an older one) and torch on one layer in
    `dtype`, their largest difference, the floor. With `in_a_row` over 1, each round times
    that many calls of one peer in a row (a script's loop over images), per call."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, *x_shape), dtype=dtype)
    w = rng.standard_normal(w_shape, dtype=dtype)
    calls = {"arrayconv": lambda: ac.conv(x, w, **options)}
    if base is not None:
        calls["base"] = lambda: base.conv(x, w, **options)
    missing = ""
    try:
        if not with_torch:
            raise ImportError
        import torch
        import torch.nn.functional as F
    except ImportError:
        missing = "torch is not installed" if with_torch else "torch left out"
    else:
        torch.set_num_threads(_config.workers())
        tx, tw = torch.from_numpy(x), torch.from_numpy(w)
        conv = F.conv3d if len(w_shape) == 5 else F.conv2d
        calls["torch"] = lambda: conv(tx, tw, **options)
    results = {n: np.asarray(c()) for n, c in calls.items()}  # warm-up
    scale = float(np.max(np.abs(results["arrayconv"])))
    difference = float(np.max(np.abs(results["arrayconv"] - results["torch"]))) / scale if "torch" in results else None
    median = interleaved_medians(calls, {n: functools.partial(_time_calls, times=in_a_row) for n in calls}, repeats)
    floor = (x.nbytes + results["arrayconv"].nbytes) / rates_for(NUMPY).stream_bytes
    method = ac.choose_method(x, w, op="conv", **options).method
    return {"layer": name, "batch": batch, "x": list(x.shape), "w": list(w_shape), "options": options, "median_s": median, "floor_s": floor, "difference": difference, "method": method, "missing": missing}


def _time_calls(call: Callable[[], object], times: int) -> float:
    """Seconds a call of `call`, over `times` calls in a row after one untimed call, which
    meets what the previous peer left behind (threads spinning, caches); one: :func:`.peers.time_call`."""
    if times == 1:
        return time_call(call)
    call()
    start = time.perf_counter()
    for _ in range(times):
        call()
    return (time.perf_counter() - start) / times


def write(rows: list[dict], folder: Path, argv: list[str], loaded: bool, base: Path | None = None, dtype: str = "float32", in_a_row: int = 1) -> Path:
    """JSON and Markdown; returns the Markdown path."""
    report = new_report("python -m bench.layers", argv, versions(), rows=rows)
    prose = [
        f"{dtype}; `arrayconv.conv` ('auto') and `torch.nn.functional.conv2d`/`conv3d` interleaved after a warm-up, medians of",
        "the rounds, milliseconds. Ratio: torch's time over arrayconv's (over 1: arrayconv faster). Floor: the input read and the",
        "output written once at the machine's stream rate. Difference: the largest from torch's result, over the largest magnitude.",
        *([f"Loaded: a busy-looping process on each of the {usable_cores()} cores this process may use, for every call."] if loaded else []),
        *([f"Base: the arrayconv under `{base}`, interleaved in the same process; this / base: this one's time over the base's."] if base else []),
        *([f"Each round times {in_a_row} calls of one peer in a row after an untimed one (a script's loop over images), per call."] if in_a_row > 1 else []),
    ]
    columns = ["layer", "batch", "arrayconv", "method", "torch", "ratio", "floor", "difference", *(["base", "this / base"] if base else [])]
    lines = []
    for r in rows:
        s = r["median_s"]
        torch_ms = f"{1e3 * s['torch']:.2f}" if "torch" in s else "-"
        ratio = f"{s['torch'] / s['arrayconv']:.2f}" if "torch" in s else "-"
        difference = f"{r['difference']:.0e}" if r["difference"] is not None else "-"
        then = f" {1e3 * s['base']:.2f} | {s['arrayconv'] / s['base']:.2f} |" if "base" in s else ""
        lines.append(f"| {r['layer']} | {r['batch']} | {1e3 * s['arrayconv']:.2f} | {r['method']} | {torch_ms} | {ratio} | {1e3 * r['floor_s']:.2f} | {difference} |" + then)
    stem = folder / f"layers-{'loaded-' if loaded else ''}{'' if dtype == 'float32' else dtype + '-'}{report['date']}"
    return save_report(stem, report, f"Conv layers against torch's CPU conv, {report['date']}", prose, columns, lines)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--loaded", action="store_true", help="every core busy with another process")
    parser.add_argument("--base", type=Path, help="a folder holding an older arrayconv package, timed beside this one")
    parser.add_argument("--layers", default="", help="only the layers whose names contain one of these, comma-separated")
    parser.add_argument("--without-torch", action="store_true", help="leave torch out (before and after with --base alone)")
    parser.add_argument("--in-a-row", type=int, default=1, help="calls of one peer a round, timed together")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    chosen = [layer for layer in LAYERS if not args.layers or any(part in layer[0] for part in args.layers.split(","))]
    base = load_base(args.base) if args.base else None
    rows = []
    with busy_cores(usable_cores()) if args.loaded else contextlib.nullcontext():
        for batch in (int(b) for b in args.batches.split(",")):
            for name, x_shape, w_shape, options in chosen:
                rows.append(time_layer(name, x_shape, w_shape, options, batch, args.repeats, base, args.dtype, not args.without_torch, args.in_a_row))
                s = rows[-1]["median_s"]
                print(f"{name} batch {batch}: " + ", ".join(f"{n} {1e3 * t:.2f} ms" for n, t in s.items()), flush=True)
    print(write(rows, Path(args.out), argv, args.loaded, args.base, args.dtype, args.in_a_row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
