"""How good is ``method='auto'``? Time every method over a sweep of problem sizes.

Usage: ``python -m bench.sweep [--points 60] [--seed 0] [--device cpu|gpu] [--out bench/results]
[--op both|correlate|conv] [--max-side 4096] [--dtype float32|float64|complex64|complex128] [--plans]
[--layers]``.
Points are drawn at random (seeded) from image sides 64..4096, kernels 1..63, input and
output channels 1..256 and batches 1..256 (``conv``, padding 'same'), plus
single-image ``correlate`` points, the corners of those ranges and the benchmark cases (bench/cases.py),
keeping those whose inputs and outputs fit in 256 MiB and whose best estimate is under 2 s. Each method is timed
(one warm-up, then the median of 2 to 15 interleaved repeats in a new order each, at least 0.2 s of
timings each; calls over 3 s are timed once, after the warm-up as well: from 2026-12-02 seed 101 on, as a
first call may compile direct's loops); a method estimated over 20 times slower
than the best estimate and over 3 s is not run. Writes ``sweep-<date>[-<dtype>][-plans].json``, ``.md``
and ``.png``: for each point, time(auto's method) / time(best method). Plain calls with a
kernel of at most 16 KiB (256 KiB from 2026-12-02 seed 103 on) reuse the plan they kept from their second call on (sweeps from
2026-11-24 seed 39 on), so their timings leave out the kernel's form, as a loop's would.

With ``--layers`` every random ``conv`` point also has a stride (1-4), a dilation (1-3) or
groups (2, 4 or depthwise), at least one of them not 1, padded as 'same' would be at unit
stride: the options of a network layer, which the other sweeps leave at 1. Reports are
``sweep-<date>[-<dtype>]-layers.*``.

With ``--plans`` each method runs through its plan, made once before the timing (the kernel
form paid once), and auto's pick is the plan's choice (``choose_method(..., plan=True)``).

With ``--device gpu`` the same points (drawn by the CPU's size filters, so both sweeps
cover the same problems) are timed on CuPy arrays with CUDA events, and 'auto' is asked
with those arrays, so it uses the GPU's cost model; reports are ``sweep-gpu-<date>.*``.

The whole sweep runs under the memory limit read at its start (recorded in the report):
the default limit follows free memory, so a method weighed under one budget could be
refused under the next (on a GPU, a 19 GB FFT was estimated and then refused at 11 GB).

``--rescore FILE...`` times nothing: it judges committed sweeps' timings (reports, or
``bench/results/sweep-timings.jsonl``, every committed sweep a line; ``--device`` picks one
device's) by the current cost model (what 'auto' would pick now, and how far that is from the fastest), under the memory
limit each sweep recorded (else ``--memory-limit BYTES``, else this machine's) and with
the vector width of the CPU it names (which sets the compiled loops' cost).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import importlib.util
import json
import math
import random
import statistics
import sys
import unittest.mock
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

import arrayconv as ac
from arrayconv._methods import _compiled
from arrayconv._runtime.backend import get_backend
from arrayconv._runtime.rates import DEFAULT_GPU_RATES, DEFAULT_RATES, rates_for
from arrayconv._spec.shapes import conv_output_shape

from .cases import CASES, random_array
from .devices import Device, device, ms_digits, report_stem
from .run import command_line, report_head, save_figure

SIDES = (64, 128, 256, 512, 1024, 2048, 4096)
KERNELS = (1, 3, 5, 7, 11, 15, 31, 63)
CHANNELS = (1, 4, 16, 64, 256)
BATCHES = (1, 4, 16, 64, 256)
MAX_BYTES = 256 << 20
MAX_BEST_ESTIMATE = 2.0
SKIP_FACTOR, SKIP_SECONDS = 20.0, 3.0
WITHIN, NEVER = 1.2, 2.0
# --layers: the strides, dilations and groups drawn (groups 0: one per input channel).
STRIDES, DILATIONS, GROUPS = (1, 2, 3, 4), (1, 2, 3), (1, 2, 4, 0)
# Calls under 1 s are repeated (interleaved) until each has 0.2 s of timings, 2 to 15 times;
# calls of 1 to 3 s twice (their single timings varied up to 4x); slower ones run once.
MIN_SECONDS, MAX_REPEATS, ONCE_SECONDS = 0.2, 15, 3.0


def corner_points() -> list[dict]:
    """The corners of the sweep's ranges that pass the size filters: the smallest and largest
    image, kernel, channels and batch (where cost models are least tried; a 64x64 image with
    a 63x63 kernel once ran 1700x slower than the fastest method)."""
    sides, kernels, counts = (SIDES[0], SIDES[-1]), (KERNELS[0], KERNELS[-1]), (1, CHANNELS[-1])
    candidates = [
        {"op": "correlate", "x": (side, side), "w": (k, k), "mode": mode}
        for side in sides
        for k in kernels
        for mode in ("full", "same", "valid")
    ]
    candidates += [
        {"op": "conv", "x": (b, c, side, side), "w": (o, c, k, k), "padding": k // 2}
        for side in sides
        for k in kernels
        for b in (1, BATCHES[-1])
        for c in counts
        for o in counts
    ]
    kept = [point for point in candidates if _fits(point)]
    return [{"id": f"k{i}", **point} for i, point in enumerate(kept)]


def draw_points(n: int, seed: int, op: str = "both", max_side: int = SIDES[-1], dtype: str = "float32", layers: bool = False) -> list[dict]:
    """The benchmark cases, the corners of the ranges, then random conv and correlate points
    that pass the size filters; only `op`'s points ('correlate', 'conv' or 'both') with
    image sides up to `max_side`. Points of another `dtype` than float32 say so (key
    ``dtype``) and pass the filters at its size. With `layers`, random conv points have a
    stride, dilation or groups (:func:`_layer_options`)."""
    points = [
        {"id": c.id, "op": "correlate", "x": c.x, "w": c.w, "mode": c.mode}
        if c.kind == "image"
        else {"id": c.id, "op": "conv", "x": c.x, "w": c.w, "padding": c.padding}
        for c in CASES
    ]
    points = [p for p in [*points, *corner_points()] if _wanted(p, op, max_side)]
    if dtype != "float32":
        points = [point for point in ({**p, "dtype": dtype} for p in points) if _fits(point)]
    fixed = len(points)
    sides = [side for side in SIDES if side <= max_side]
    rng = np.random.default_rng(seed)
    while len(points) < n + fixed:
        side, k = int(rng.choice(sides)), int(rng.choice(KERNELS))
        if k > side:
            continue
        if rng.random() < 0.3:
            point = {"op": "correlate", "x": (side, side), "w": (k, k), "mode": str(rng.choice(["same", "valid", "full"]))}
        else:
            b, c, o = (int(rng.choice(v)) for v in (BATCHES, CHANNELS, CHANNELS))
            point = {"op": "conv", "x": (b, c, side, side), "w": (o, c, k, k), "padding": k // 2}
            if layers:
                point = _layer_options(point, rng)
        if dtype != "float32":
            point["dtype"] = dtype
        if _wanted(point, op, max_side) and _fits(point):
            points.append({"id": f"p{len(points) - fixed}", **point})
    return points


def _layer_options(point: dict, rng: np.random.Generator) -> dict:
    """`point` (a conv with padding ``k // 2``) with a stride, dilation and groups drawn from
    :data:`STRIDES`, :data:`DILATIONS` and :data:`GROUPS` (groups that divide its channels),
    at least one of them not 1, and padded as 'same' would be at unit stride; the output
    is at least one sample a side."""
    _, c, side, _ = point["x"]
    o, _, k, _ = point["w"]
    while True:
        stride, dilation = int(rng.choice(STRIDES)), int(rng.choice(DILATIONS))
        groups = [g or c for g in GROUPS if c % (g or c) == 0 and o % (g or c) == 0]
        g = int(rng.choice(groups))
        reach = dilation * (k - 1)
        if (stride, dilation, g) != (1, 1, 1) and reach < side + 2 * (reach // 2):
            options = {"padding": reach // 2, "stride": stride, "dilation": dilation, "groups": g}
            return {**point, "w": (o, c // g, k, k), **options}


def correlate_options(point: dict) -> dict:
    """The keyword arguments of `point`'s correlate: its mode, and its axes where it has them."""
    return {"mode": point["mode"], **({"axes": point["axes"]} if "axes" in point else {})}


def conv_options(point: dict) -> dict:
    """The keyword arguments of `point`'s conv: padding, and stride, dilation and groups
    where it has them."""
    return {key: point[key] for key in ("padding", "stride", "dilation", "groups") if key in point}


def _wanted(point: dict, op: str, max_side: int) -> bool:
    return op in ("both", point["op"]) and max(point["x"][-2:]) <= max_side


def _fits(point: dict) -> bool:
    choice = _choice(point)
    best = min((c.seconds for n, c in choice.estimates.items() if n not in choice.rejected), default=math.inf)
    size = np.dtype(_dtype(point)).itemsize
    out_bytes = size * (_conv_outputs(point) if point["op"] == "conv" else math.prod(point["x"]))
    return size * math.prod(point["x"]) <= MAX_BYTES and out_bytes <= MAX_BYTES and best <= MAX_BEST_ESTIMATE


def _conv_outputs(point: dict) -> int:
    """Samples of the result of `point`'s conv."""
    nd = len(point["x"]) - 2
    pad, stride, dilation = ((point.get(key, default),) * nd for key, default in (("padding", 0), ("stride", 1), ("dilation", 1)))
    sides = conv_output_shape(point["x"][2:], point["w"][2:], pad, pad, stride, dilation)
    return point["x"][0] * point["w"][0] * math.prod(sides)


def _choice(point: dict, x: object = None, w: object = None) -> ac.Choice:
    """'auto's choice for `point`: from its shapes on the CPU, or for arrays `x` and `w`."""
    options = correlate_options(point) if point["op"] == "correlate" else conv_options(point)
    plan = point.get("plans", False)
    if x is None:
        return ac.choose_method(tuple(point["x"]), tuple(point["w"]), op=point["op"], dtype=_dtype(point), plan=plan, **options)
    return ac.choose_method(x, w, op=point["op"], plan=plan, **options)


def _dtype(point: dict) -> str:
    """The dtype of `point`'s arrays: float32 unless the point says otherwise."""
    return point.get("dtype", "float32")


def _caller(point: dict, x: object, w: object, method: str) -> Callable[[], object]:
    """One call of `method` on `point`: a plain call, or with ``point['plans']`` a call of the
    method's plan (made here, once)."""
    if point.get("plans"):
        if point["op"] == "correlate":
            plan = ac.plan_correlate(w, x.shape, point["mode"], method, axes=point.get("axes"))
        else:
            plan = ac.plan_conv(w, x.shape, method=method, **conv_options(point))
        return lambda: plan(x)
    if point["op"] == "correlate":
        return lambda: ac.correlate(x, w, point["mode"], method, axes=point.get("axes"))
    return lambda: ac.conv(x, w, method=method, **conv_options(point))


def time_point(point: dict, where: Device) -> dict:
    """Time each method on `point` (interleaved) and compare auto's pick with the best."""
    rng = np.random.default_rng(0)
    x, w = (where.xp.asarray(random_array(rng, point[key], _dtype(point))) for key in ("x", "w"))
    choice = _choice(point, x, w)
    estimates = {n: c.seconds for n, c in choice.estimates.items() if n not in choice.rejected}
    best_estimate = min(estimates.values())
    wanted = [name for name, s in estimates.items() if s <= SKIP_FACTOR * best_estimate or s <= SKIP_SECONDS]
    run = {name: _caller(point, x, w, name) for name in wanted}
    times: dict[str, list[float]] = {name: [] for name in run}
    for name, fn in run.items():  # warm-up (a first call may compile loops: never a timing)
        times[name].append(where.time_call(fn))
    for round_ in range(MAX_REPEATS):
        again = [n for n in run if round_ == 0 or (times[n][1] < ONCE_SECONDS and (round_ < 2 or (times[n][1] < 1.0 and sum(times[n][1:]) < MIN_SECONDS)))]
        if not again:
            break
        random.Random(round_).shuffle(again)  # none always runs after the same one
        for name in again:
            times[name].append(where.time_call(run[name]))
    medians = {name: statistics.median(t[1:]) for name, t in times.items()}
    best = min(medians, key=medians.__getitem__)
    picked = medians.get(choice.method, math.inf)
    return {
        **point,
        "chosen": choice.method,
        "best": best,
        "median_s": medians,
        "estimate_s": estimates,
        "not_run": sorted(set(estimates) - set(run)),
        "ratio": picked / medians[best],
    }


def committed_sweeps(paths: list[str], device_name: str | None = None) -> list[tuple[str, dict]]:
    """The sweeps in `paths`, each a sweep's JSON report or a JSON-lines file of them
    (``bench/results/sweep-timings.jsonl``: one sweep a line), by name; with `device_name`,
    only that device's."""
    found = []
    for path in map(Path, paths):
        text = path.read_text()
        reports = [json.loads(line) for line in text.splitlines() if line.strip()] if path.suffix == ".jsonl" else [json.loads(text)]
        for report in reports:
            if device_name in (None, report.get("device", "cpu")):
                found.append((report.get("name", path.stem), report))
    return found


def rescore(report: dict, memory_limit: int | None = None) -> tuple[dict, list[str]]:
    """A sweep's timings judged by the current cost model: its summary had 'auto' made
    today's picks, and one line per point whose pick changed. A pick whose method was not
    timed counts as infinitely slow. No timing is run: cost-model changes are checked on
    the committed sweeps in seconds (a GPU sweep's on a machine with CuPy and a GPU, or on
    the stand-in for CuPy). Picks are made under the memory limit the sweep recorded, else
    `memory_limit`, else this machine's, and with the vector width of the sweep's CPU where
    it names one (:func:`_priced_as`)."""
    where = device(report.get("device", "cpu"))
    results, changed, rng = [], [], np.random.default_rng(0)
    with ac.config(memory_limit=report.get("memory_limit", memory_limit)), _priced_as(report):
        for point in report["points"]:
            x = where.xp.zeros(tuple(point["x"]), dtype=_dtype(point))  # a float input's values are not read
            w = where.xp.asarray(random_array(rng, point["w"], _dtype(point)))  # random, as timed: never an outer product
            pick = _choice(point, x, w).method
            times = point["median_s"]
            ratio = times.get(pick, math.inf) / min(times.values())
            results.append({**point, "chosen": pick, "ratio": ratio})
            if pick != point["chosen"]:
                now = f"{ratio:.2f}" if pick in times else "not timed in this sweep"
                changed.append(f"{point['id']} {tuple(point['x'])} x {tuple(point['w'])}: {point['chosen']} ({point['ratio']:.2f}) -> {pick} ({now})")
    return summary(results), changed


@contextlib.contextmanager
def _priced_as(report: dict) -> Iterator[None]:
    """Price the compiled loops as the sweep's CPU ran them (the weights they hold in
    registers, :func:`arrayconv._methods._compiled.weights_held`): with wide vectors
    where its name carries the AVX-512 mark (:func:`arrayconv._runtime.machine.cpu_name`) or
    it is an arm64 machine, without where it names another CPU; this machine's where it
    names none."""
    versions = report.get("versions") or {}
    name = versions.get("processor") or report.get("machine")
    if report.get("device", "cpu") != "cpu" or not name:
        yield
        return
    wide = "AVX-512" in name or versions.get("machine", "").lower() in ("arm64", "aarch64")
    with unittest.mock.patch.object(_compiled, "wide_vectors", lambda: wide):
        ac.clear_caches()
        try:
            yield
        finally:
            ac.clear_caches()


def summary(results: list[dict]) -> dict:
    """Share of points within 1.2x of the best, and the worst ratio."""
    ratios = [r["ratio"] for r in results]
    return {
        "points": len(ratios),
        "within_1.2x": sum(r <= WITHIN for r in ratios) / len(ratios),
        "worst_ratio": max(ratios),
        "over_2x": sum(r > NEVER for r in ratios),
    }


def write(results: list[dict], folder: Path, argv: list[str], where: Device, note: str = "") -> Path:
    """JSON, Markdown and PNG reports (`note`: what the sweep was run after or for, shown in
    the README's list of sweeps), with the memory limit in force; returns the Markdown path."""
    date = datetime.date.today().isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    dtype = _dtype(results[0])
    suffixes = ("" if dtype == "float32" else f"-{dtype}") + ("-layers" if results[0].get("layers") else "") + ("-plans" if results[0].get("plans") else "")
    stem = folder / (report_stem("sweep", where.name, date) + suffixes)
    stats = summary(results)
    rates = rates_for(get_backend(probe=where.xp.empty(1)))
    default = rates in (DEFAULT_RATES, DEFAULT_GPU_RATES)
    report = {
        "date": date,
        "command": command_line("python -m bench.sweep", argv),
        "device": where.name,
        "versions": where.versions(),
        "rates": {"default": default, **dataclasses.asdict(rates)},
        "memory_limit": ac.memory_limit(where.name),
        "summary": stats,
        "points": results,
        **({"note": note} if note else {}),
    }
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    lines = [
        *report_head(f"Method choice sweep, {where.name.upper()}, {date}", report["command"], report["versions"]),
        *([f"Note: {note}  "] if note else []),
        f"{dtype}, {'default' if default else 'calibrated'} rates ({rates}). Ratio = time of auto's method / time of the fastest method."
        + (" Plans: each method's plan is made once and its calls are timed; auto's pick is the plan's choice (per call, the kernel form made once)." if results[0].get("plans") else ""),
        "",
        f"**{stats['within_1.2x']:.0%} of {stats['points']} points within {WITHIN}x of the best method; "
        f"worst ratio {stats['worst_ratio']:.2f}; {stats['over_2x']} points over {NEVER}x.**",
        "",
        "| point | op | x | w | auto picks | fastest | ratio | " + " | ".join(f"{m} (ms)" for m in ac.METHODS) + " |",
        "|---|---|---|---|---|---|---|" + "---|" * len(ac.METHODS),
    ]
    for r in results:
        cells = [
            f"{r['median_s'][m] * 1e3:.{ms_digits(where.name)}f}" if m in r["median_s"] else ("not run" if m in r["not_run"] else "cannot")
            for m in ac.METHODS
        ]
        lines.append(
            f"| {r['id']} | {r['op']} | {tuple(r['x'])} | {tuple(r['w'])}{_layer_text(r)} | {r['chosen']} | {r['best']} | "
            f"{'**' if r['ratio'] > WITHIN else ''}{r['ratio']:.2f}{'**' if r['ratio'] > WITHIN else ''} | " + " | ".join(cells) + " |"
        )
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    if importlib.util.find_spec("matplotlib"):  # the bench extra; the tables stand without it
        _plot(results, stats, stem.with_suffix(".png"))
    return stem.with_suffix(".md")


def _layer_text(point: dict) -> str:
    """`point`'s stride, dilation and groups other than 1, as ' stride 2, groups 4'."""
    options = {key: point.get(key, 1) for key in ("stride", "dilation", "groups")}
    return "".join(f", {key} {value}" for key, value in options.items() if value != 1)


def _plot(results: list[dict], stats: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    best = [r["median_s"][r["best"]] * 1e3 for r in results]
    ratio = [r["ratio"] for r in results]
    colours = {"direct": "tab:blue", "im2col": "tab:orange", "fft": "tab:green", "oa": "tab:purple"}
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for method, colour in colours.items():
        picked = [i for i, r in enumerate(results) if r["best"] == method]
        ax.scatter([best[i] for i in picked], [ratio[i] for i in picked], c=colour, label=f"fastest: {method}", s=22)
    ax.axhline(WITHIN, ls="--", c="grey", lw=1)
    ax.axhline(NEVER, ls=":", c="red", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("time of the fastest method (ms, log)")
    ax.set_ylabel("time of auto's pick / fastest")
    ax.set_title(f"method='auto' over {stats['points']} problems: {stats['within_1.2x']:.0%} within {WITHIN}x, worst {stats['worst_ratio']:.2f}x")
    ax.legend()
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=60, help="random points besides the benchmark cases (bench/cases.py)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--op", default="both", choices=["both", "correlate", "conv"], help="draw only this function's points")
    parser.add_argument("--max-side", type=int, default=SIDES[-1], help="draw only images with sides up to this")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64", "complex64", "complex128"], help="dtype of the arrays")
    parser.add_argument("--plans", action="store_true", help="time each method's plan (kernel form made once) and judge the plans' choice")
    parser.add_argument("--layers", action="store_true", help="random conv points with a stride, dilation or groups")
    parser.add_argument("--note", default="", help="what the sweep was run after or for (shown in the README)")
    parser.add_argument("--rescore", nargs="+", metavar="JSON", help="judge committed sweeps' timings by the current cost model; time nothing")
    parser.add_argument("--memory-limit", type=int, help="with --rescore: the limit of sweeps that recorded none (bytes)")
    args = parser.parse_args(argv)
    if args.rescore:
        for name, report in committed_sweeps(args.rescore, args.device if "--device" in argv else None):
            stats, changed = rescore(report, args.memory_limit)
            print(f"{name}: {stats['within_1.2x']:.0%} of {stats['points']} within {WITHIN}x, worst {stats['worst_ratio']:.2f}, {stats['over_2x']} over {NEVER}x")
            print("".join(f"  {line}\n" for line in changed), end="")
        return 0
    from tqdm import tqdm

    where = device(args.device)
    results = []
    with ac.config(memory_limit=ac.memory_limit(where.name)):  # one budget for the whole sweep
        for point in tqdm(draw_points(args.points, args.seed, args.op, args.max_side, args.dtype, args.layers), unit="point", dynamic_ncols=True):
            marks = {"plans": True} if args.plans else {}
            marks |= {"layers": True} if args.layers else {}
            results.append(time_point({**point, **marks}, where))
            path = write(results, Path(args.out), argv, where, args.note)
    print(path.read_text().split("\n\n")[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
