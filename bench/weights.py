"""The cost model's weights tried at other values, judged on the committed timings.

Usage: ``python -m bench.weights GROUP.NAME=VALUE [...] [--device cpu|gpu] [--timings FILE ...]``.
Each assignment sets a weight of ``arrayconv/_runtime/fitted.json`` (VALUE in JSON: ``1``,
``0.5``, ``[1, 2]``) in a copy of the package, and the committed sweeps of the device
(``bench/results/sweep-timings.jsonl``; the GPU's on tests/_numpy_cupy.py's stand-in for
CuPy where CuPy is not installed) are rescored (:func:`bench.sweep.rescore`) by
today's model and by the changed one, each in its own process, since the modules read their
weights once, on import. Printed: the timings whose pick is within 1.2x of the fastest
method and those past 2x, over every sweep and over the held-out ones (a note saying "held
out"), and each pick that moved. Nothing is timed. Setting a weight to the value that
removes it (a factor to 1, a count to 0) is how the model's weights are pruned:
bench/results/cost-model-notes.md.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import arrayconv as ac
from arrayconv._runtime.fitted import table as fitted_table

from .sweep import committed_sweeps, rescore

ROOT = Path(__file__).resolve().parents[1]
TIMINGS = str(ROOT / "bench" / "results" / "sweep-timings.jsonl")


def score(paths: list[str], device_name: str = "cpu") -> dict[str, dict[str, Any]]:
    """Each sweep of `paths` on `device_name` rescored by the model of this process: its
    timings, those within 1.2x and past 2x, whether it is held out, and its moved picks."""
    if device_name == "gpu" and importlib.util.find_spec("cupy") is None:
        sys.path.insert(0, str(ROOT / "tests"))
        importlib.import_module("_numpy_cupy").install()
    scores = {}
    for name, report in committed_sweeps(paths, device_name):
        stats, changed = rescore(report)
        within = round(stats["within_1.2x"] * stats["points"])
        held = "held out" in (report.get("note") or "").lower()
        scores[name] = {"points": stats["points"], "within": within, "over": stats["over_2x"], "held_out": held, "changed": changed}
    return scores


def parse(assignments: list[str]) -> dict[str, Any]:
    """``{"GROUP.NAME": value}`` of ``GROUP.NAME=VALUE`` assignments, each a weight of
    fitted.json."""
    table = fitted_table()
    weights = {}
    for assignment in assignments:
        key, _, value = assignment.partition("=")
        group, _, name = key.partition(".")
        if not value or name not in table.get(group, {}):
            msg = f"each assignment must be GROUP.NAME=VALUE naming a weight of fitted.json, got {assignment!r}"
            raise ValueError(msg)
        weights[key] = json.loads(value)
    return weights


def scored_with(weights: dict[str, Any], paths: list[str], device_name: str = "cpu") -> dict[str, dict[str, Any]]:
    """:func:`score` in a new process whose arrayconv reads `weights` over fitted.json's."""
    with tempfile.TemporaryDirectory() as folder:
        package = Path(folder) / "arrayconv"
        shutil.copytree(Path(ac.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
        fitted = package / "_runtime" / "fitted.json"
        table = json.loads(fitted.read_text())
        for key, value in weights.items():
            group, name = key.split(".")
            table[group][name]["value"] = value
        fitted.write_text(json.dumps(table))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([folder, str(ROOT)])}
        paths = [str(Path(path).resolve()) for path in paths]  # run from the copy: `-m` puts it first on the path
        done = subprocess.run([sys.executable, "-m", "bench.weights", "--score", "--device", device_name, "--timings", *paths], env=env, cwd=folder, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def totals(scores: dict[str, dict[str, Any]], held_out: bool = False) -> str:
    """Timings within 1.2x and past 2x, of every sweep or of the held-out ones."""
    chosen = [s for s in scores.values() if s["held_out"] or not held_out]
    points = sum(s["points"] for s in chosen)
    return f"{sum(s['within'] for s in chosen)} of {points} within 1.2x, {sum(s['over'] for s in chosen)} past 2x"


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("weights", nargs="*", metavar="GROUP.NAME=VALUE")
    parser.add_argument("--timings", nargs="+", default=[TIMINGS], help="committed sweeps: reports or JSON-lines files of them")
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"], help="whose sweeps to rescore")
    parser.add_argument("--score", action="store_true", help="print this process's scores as JSON (used by the comparison)")
    args = parser.parse_args(argv)
    if args.score:
        print(json.dumps(score(args.timings, args.device)))
        return 0
    try:
        trial = parse(args.weights)
    except ValueError as error:
        parser.error(str(error))
    today, changed = score(args.timings, args.device), scored_with(trial, args.timings, args.device)
    for label, scores in (("today's model", today), (" ".join(args.weights) or "unchanged", changed)):
        print(f"{label}: {totals(scores)}; held out: {totals(scores, held_out=True)}")
    for name in today:
        moved, back = set(changed[name]["changed"]), set(today[name]["changed"])
        print("".join(f"  {name}: {line}\n" for line in sorted(moved - back)), end="")
        print("".join(f"  {name}: back to the pick timed from {line}\n" for line in sorted(back - moved)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
