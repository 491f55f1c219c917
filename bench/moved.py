"""The picks a change of the cost model moves, timed.

Usage: ``python -m bench.moved REV [--problems 600] [--seed 0] [--kinds image,line,conv]
[--numba on|off] [--repeats 15] [--out bench/results]``. 'auto's pick (plain call and plan) is asked of the package at git
revision REV and of this one, each in its own process (the modules read their weights on
import), over random problems the committed sweeps lack: images and volumes with
outer-product, row and random kernels, 1-D signals and batches of lines (2-4096 taps), and
conv layers with groups and strides, on one and two workers. Each problem whose pick moved is
timed here: both picks, and the FFT and direct, interleaved after a warm-up, the median of
`repeats` rounds (a plan's call for the plan's pick; a plain call keeps its plan as
``correlate`` does). A pick of direct names its form (``direct: rows``) where it has several;
a form is timed as a plan made with it, for plain calls too. Ratio: a pick's time over the fastest one timed. With ``--numba off``
both processes and the timings run NumPy's loops (``ARRAYCONV_NUMBA=0``). Nothing is timed
where no pick moved. Writes ``moved-<date>[-numpy].md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import arrayconv as ac
from arrayconv._methods import direct

from .forms import forced_form
from .peers import interleaved_medians, time_call
from .run import new_report, save_report, versions
from .sweep import WITHIN

ROOT = Path(__file__).resolve().parents[1]
# Problems past these sizes are drawn again: a moved pick is timed over many rounds.
MAX_SAMPLES, MAX_MACS = 1 << 23, 4e9


KINDS = ("image", "image", "line", "conv", "conv", "image")


def problems(count: int, seed: int, kinds: tuple[str, ...] = KINDS) -> list[dict[str, Any]]:
    """`count` random problems of `kinds` in turn (by default half images and volumes, a
    sixth 1-D, a third conv layers)."""
    rng = np.random.default_rng(seed)
    found: list[dict[str, Any]] = []
    while len(found) < count:
        kind = kinds[len(found) % len(kinds)]
        dtype = str(rng.choice(["float32", "float64"]))
        if kind == "image":
            nd = int(rng.choice([2, 2, 3]))
            side = 2 ** rng.uniform(5, 11 if nd == 2 else 8)
            x = [int(side * rng.uniform(0.6, 1.4)) for _ in range(nd)]
            w = [int(rng.integers(2, 40 if nd == 2 else 16)) for _ in range(nd)]
            form = str(rng.choice(["outer", "random", "row"]))
            w = [1] * (nd - 1) + w[-1:] if form == "row" else w
            found.append({"op": "correlate", "x": x, "w": w, "kernel": form, "dtype": dtype, "mode": str(rng.choice(["full", "same"]))})
        elif kind == "line":
            n, taps, batch = int(2 ** rng.uniform(8, 19)), int(2 ** rng.uniform(1, 12)), int(rng.choice([1, 1, 8, 64]))
            x, w = ([batch, n], [1, taps]) if batch > 1 else ([n], [taps])
            found.append({"op": "correlate", "x": x, "w": w, "kernel": "random", "dtype": dtype, "mode": str(rng.choice(["full", "same"])), "axes": -1 if batch > 1 else None})
        else:
            batch, channels, outputs = (int(rng.choice(v)) for v in ([1, 1, 4, 16], [1, 3, 4, 16, 64], [1, 4, 16, 64, 256]))
            side, taps = int(2 ** rng.uniform(3, 9)), int(rng.choice([1, 3, 3, 5, 7, 11]))
            groups = channels if rng.random() < 0.2 and outputs % channels == 0 else 1
            found.append({
                "op": "conv", "x": [batch, channels, side, side], "w": [outputs, channels // groups, taps, taps], "kernel": "random",
                "dtype": dtype, "groups": groups, "stride": int(rng.choice([1, 1, 1, 2])), "padding": taps // 2,
            })
        found[-1] |= {"id": len(found) - 1, "workers": int(rng.choice([1, 2])), "seed": int(rng.integers(1 << 31))}
        samples, taps = math.prod(found[-1]["x"]), math.prod(found[-1]["w"])
        if samples > MAX_SAMPLES or samples * taps > MAX_MACS:
            found.pop()
    return found


def arrays(problem: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Random data and kernel of `problem` (its kernel an outer product where it says so)."""
    rng = np.random.default_rng(problem["seed"])
    x = rng.standard_normal(problem["x"]).astype(problem["dtype"])
    if problem["kernel"] == "outer":
        w = rng.standard_normal(problem["w"][0])
        for taps in problem["w"][1:]:
            w = np.multiply.outer(w, rng.standard_normal(taps))
    else:
        w = rng.standard_normal(problem["w"])
    return x, w.astype(problem["dtype"])


def options(problem: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments of `problem`'s function besides its arrays and method."""
    if problem["op"] == "conv":
        return {key: problem[key] for key in ("groups", "stride", "padding")}
    return {"mode": problem["mode"]} | ({"axes": problem["axes"]} if problem.get("axes") is not None else {})


def pick_name(choice: ac.Choice) -> str:
    """A choice's method, with direct's form where it has several (``direct: rows``)."""
    forms = choice.estimates[choice.method].forms
    if choice.method != "direct" or len(forms) < 2:
        return choice.method
    return f"direct: {min(forms, key=lambda form: form[1])[0]}"


def picks(found: list[dict[str, Any]]) -> list[list[str]]:
    """'auto's pick for each problem, as a plain call and as a plan, by this process's model."""
    chosen = []
    for problem in found:
        x, w = arrays(problem)
        with ac.config(workers=problem["workers"]):
            chosen.append([pick_name(ac.choose_method(x, w, op=problem["op"], plan=plan, **options(problem))) for plan in (False, True)])
    return chosen


def picks_at(revision: str, found: list[dict[str, Any]]) -> list[list[str]]:
    """:func:`picks` by the package at git `revision`, in a new process."""
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "arrayconv"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        problems_file = Path(folder) / "problems.json"
        problems_file.write_text(json.dumps(found))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([folder, str(ROOT)])}
        done = subprocess.run([sys.executable, "-m", "bench.moved", "--picks", str(problems_file)], env=env, cwd=folder, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def time_moved(problem: dict[str, Any], before: list[str], after: list[str], repeats: int) -> dict[str, Any]:
    """Median seconds of the picks `before` and `after` and of the FFT and direct on
    `problem`, as plain calls and plans (a form of direct as a plan made with it, for
    both), and each pick's ratio to the fastest."""
    x, w = arrays(problem)
    names = sorted({*before, *after, "fft", "direct"})
    function = ac.conv if problem["op"] == "conv" else ac.correlate
    with ac.config(workers=problem["workers"]):
        plan = ac.plan_conv if problem["op"] == "conv" else ac.plan_correlate
        plans = {}
        for name in names:
            method, _, form = name.partition(": ")
            try:
                named = forced_form(lambda key, form=form: direct._form_name(*key) == form)
                with named if form else contextlib.nullcontext():
                    plans[name] = plan(w, x.shape, method=method, dtype=x.dtype, **options(problem))
            except (ValueError, TypeError):  # a method that does not take the problem
                continue
        calls = {f"{name} plain": (lambda n=name: function(x, w, method=n, **options(problem))) for name in plans if ": " not in name}
        calls |= {f"{name} plan": (lambda p=p: p(x)) for name, p in plans.items()}
        for call in calls.values():
            call()
        medians = interleaved_medians(calls, dict.fromkeys(calls, time_call), repeats)
    ratios = {}
    for index, label in enumerate(("plain", "plan")):
        timed = {name: medians[f"{name} {label}" if f"{name} {label}" in medians else f"{name} plan"] for name in plans}
        fastest = min(timed.values())
        ratios[label] = [timed.get(before[index], float("inf")) / fastest, timed.get(after[index], float("inf")) / fastest]
    return {**problem, "before": before, "after": after, "median_s": medians, "ratios": ratios}


def write(report: dict[str, Any], folder: Path) -> Path:
    """The report's JSON and Markdown pages; returns the Markdown path."""
    rows, moved = [], {"before": [], "after": []}
    for row in report["rows"]:
        for index, label in enumerate(("plain", "plan")):
            if row["before"][index] != row["after"][index]:
                old, new = row["ratios"][label]
                moved["before"].append(old)
                moved["after"].append(new)
                shape = f"{tuple(row['x'])} x {tuple(row['w'])}"
                rows.append(f"| {shape} | {row['kernel']} | {row['dtype']} | {row['workers']} | {label} | {row['before'][index]} {old:.2f} | {row['after'][index]} {new:.2f} |")
    prose = [f"Picks asked of {report['problems']} random problems at {report['revision']} and here: {len(rows)} moved."]
    for side, ratios in moved.items():
        if ratios:
            within = sum(r <= WITHIN for r in ratios)
            prose.append(f"- {side}: {within} of {len(ratios)} moved picks within {WITHIN}x of the fastest, worst {max(ratios):.2f}.")
    stem = folder / (f"moved-{report['date']}" + ("-numpy" if report["numba"] == "off" else ""))
    columns = ["problem", "kernel", "dtype", "workers", "call", f"pick at {report['revision']}", "pick here"]
    return save_report(stem, report, "Picks moved by a change of the cost model", prose, columns, rows)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revision", nargs="?", help="the git revision whose model is compared with this one")
    parser.add_argument("--problems", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", help="draw only these kinds of problem, in turn (comma-separated: image, line, conv)")
    parser.add_argument("--numba", choices=["on", "off"], default="on", help="off: NumPy's loops only (ARRAYCONV_NUMBA=0)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--picks", metavar="JSON", help=argparse.SUPPRESS)  # a child process's work
    args = parser.parse_args(argv)
    if args.picks:
        print(json.dumps(picks(json.loads(Path(args.picks).read_text()))))
        return 0
    if not args.revision:
        parser.error("give the git revision to compare with")
    if args.numba == "off" and os.environ.get("ARRAYCONV_NUMBA") != "0":  # the timings too
        again = sys.argv[1:] if argv is None else argv
        return subprocess.run([sys.executable, "-m", "bench.moved", *again], env={**os.environ, "ARRAYCONV_NUMBA": "0"}, check=False).returncode
    revision = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.revision], capture_output=True, text=True, check=True).stdout.strip()
    kinds = tuple(args.kinds.split(",")) if args.kinds else KINDS
    if not set(kinds) <= set(KINDS):
        parser.error(f"--kinds must name image, line or conv, got {args.kinds!r}")
    found = problems(args.problems, args.seed, kinds)
    before, after = picks_at(revision, found), picks(found)
    rows = [time_moved(p, b, a, args.repeats) for p, b, a in zip(found, before, after) if b != a]
    report = new_report("python -m bench.moved", argv, versions(), revision=revision, problems=len(found), seed=args.seed, kinds=list(kinds), numba=args.numba, rows=rows)
    print(write(report, Path(args.out)).read_text().split("\n\n", 2)[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
