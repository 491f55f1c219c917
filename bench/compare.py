"""Before and after on one machine: the benchmark cases timed with an older arrayconv and
with this one, in alternating processes.

Usage: ``python -m bench.compare BASE [--device cpu|gpu] [--rounds 2]
[--repeats 15] [--cases a,b,...] [--out bench/results]``. BASE is a folder holding an
older ``arrayconv`` package, e.g. made by ``git archive REV arrayconv | tar -x -C BASE``
(``bash .ci/gpu base REV`` makes ``.base`` so). Each round runs
:mod:`.case_timer` once with BASE first on the import path and once with this package, in
a new order each round, and the report gives, per case and version, the median over rounds
of each process's medians: the plain call, the plan's call and the host's time of a plan
call. Timings of one machine only: GPU machines lent for a session differed by up to 2x
(bench/results/gpu-cost-refit-2026-11-26.md), so a before/after across sessions says
little. Writes ``compare-<date>.md`` and ``.json`` (``compare-gpu-<date>.*`` on the GPU).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

from .cases import CASES, unknown_ids_error
from .devices import device, report_stem
from .overhead import TIMED_CASES
from .run import command_line, report_head

TIMER = Path(__file__).with_name("case_timer.py")
PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the repository root, with arrayconv/ in it
VERSIONS = ("before", "after")


# The timer runs as a script from the root under test, so that `import arrayconv` finds
# that root's package first (the working folder and PYTHONPATH both point there) and no
# folder of this package shadows a module.
_RUN_TIMER = "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"


def time_with(root: Path, device_name: str, repeats: int, cases: list[dict]) -> dict:
    """One process of :mod:`.case_timer` importing the arrayconv under `root`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root.resolve()), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _RUN_TIMER, str(TIMER), device_name, str(repeats), json.dumps(cases)],
        cwd=root, env=env, capture_output=True, text=True, check=False,
    )
    if done.returncode:
        msg = f"timing the arrayconv under {root} failed:\n{done.stderr}"
        raise RuntimeError(msg)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(base: Path, device_name: str, rounds: int, repeats: int, cases: list[dict]) -> dict:
    """`rounds` rounds of one process per version, in a new order each round."""
    roots = {"before": base, "after": PACKAGE_ROOT}
    runs: dict[str, list[dict]] = {version: [] for version in VERSIONS}
    order = random.Random(0)
    for _ in range(rounds):
        versions = list(VERSIONS)
        order.shuffle(versions)
        for version in versions:
            runs[version].append(time_with(roots[version], device_name, repeats, cases))
    for version, done in runs.items():
        if Path(done[0]["path"]).resolve().parents[1] != roots[version].resolve():
            msg = f"the {version!r} processes imported {done[0]['path']}, not the arrayconv under {roots[version]}"
            raise RuntimeError(msg)
    rows = []
    for case in cases:
        row = {"case": case["id"]}
        for version, done in runs.items():
            per_round = [r["cases"][case["id"]] for r in done]
            row[version] = {
                "method": per_round[0]["method"],
                "median_s": {name: statistics.median(r["median_s"][name] for r in per_round) for name in per_round[0]["median_s"]},
            }
        rows.append(row)
    return {
        "date": datetime.date.today().isoformat(),
        "command": command_line("python -m bench.compare"),
        "device": device_name,
        "versions": device(device_name).versions(),
        "base": str(base),
        "arrayconv": {version: done[0]["arrayconv"] for version, done in runs.items()},
        "rounds": rounds,
        "repeats": repeats,
        "rows": rows,
    }


def write(result: dict, folder: Path) -> Path:
    """JSON and Markdown reports; returns the Markdown path."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / report_stem("compare", result["device"], result["date"])
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1))
    timer = "CUDA events" if result["device"] == "gpu" else "the wall clock"
    lines = report_head(f"Before and after, {result['device'].upper()} ({result['date']})", result["command"], result["versions"])
    lines += [
        f"Before: the arrayconv under `{result['base']}`; after: this one. {result['rounds']} rounds of one process per "
        f"version in a new order each; in each process {result['repeats']} interleaved rounds after two warm-up calls "
        f"({timer}; host: from an idle device to the call's return). Medians over the rounds of each process's medians, "
        "in microseconds; ratio = after / before.",
        "",
        "| case | method before / after | plain before | plain after | ratio | plan before | plan after | ratio | plan host before | after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        before, after = row["before"]["median_s"], row["after"]["median_s"]
        cells = [f"{before['plain'] * 1e6:.0f}", f"{after['plain'] * 1e6:.0f}", f"{after['plain'] / before['plain']:.2f}",
                 f"{before['plan'] * 1e6:.0f}", f"{after['plan'] * 1e6:.0f}", f"{after['plan'] / before['plan']:.2f}",
                 f"{before['plan host'] * 1e6:.0f}", f"{after['plan host'] * 1e6:.0f}"]
        lines.append(f"| {row['case']} | {row['before']['method']} / {row['after']['method']} | " + " | ".join(cells) + " |")
    path = stem.with_suffix(".md")
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path, help="a folder holding the older arrayconv package")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--cases", default=",".join(case.id for case in TIMED_CASES), help="comma-separated case ids")
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    if not (args.base / "arrayconv" / "__init__.py").is_file():
        parser.error(f"{args.base} holds no arrayconv package (make one with `git archive REV arrayconv | tar -x -C {args.base}`)")
    wanted = args.cases.split(",")
    if error := unknown_ids_error(wanted):
        parser.error(error)
    by_id = {case.id: case for case in CASES}
    cases = [dataclasses.asdict(by_id[c]) for c in wanted]
    path = write(run(args.base, args.device, args.rounds, args.repeats, cases), Path(args.out))
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
