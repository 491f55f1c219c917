"""What starting arrayconv costs: ``import arrayconv``, and ``arrayconv --help``, in fresh processes.

Usage: ``python -m bench.startup [--runs 15] [--out bench/results]``. Each run starts a new
Python process, in turn with the import alone (``-X importtime`` off) and the command line's
help, timed on the wall clock from the parent; the median and range are reported beside a
bare ``python -c pass``, the floor. Writes ``startup-<date>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from .run import command_line, report_head, versions

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import numpy, scipy.fft": [sys.executable, "-c", "import numpy, scipy.fft"],
    "import arrayconv": [sys.executable, "-c", "import arrayconv"],
    "arrayconv --help": [sys.executable, "-m", "arrayconv", "--help"],
}


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    seconds: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):  # interleaved: a busy moment hits every command alike
        for name, command in COMMANDS.items():
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            seconds[name].append(time.perf_counter() - start)
    date = datetime.date.today().isoformat()
    report = {"date": date, "command": command_line("python -m bench.startup", argv), "versions": versions(), "runs": args.runs, "seconds": seconds}
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"startup-{date}.json").write_text(json.dumps(report, indent=1))
    lines = report_head(f"Start-up cost, {date}", report["command"], report["versions"])
    lines += ["", f"Wall time of a fresh process, {args.runs} runs each, interleaved.", "", "| command | median (ms) | range (ms) |", "|---|---:|---:|"]
    for name, times in seconds.items():
        lines.append(f"| `{name}` | {statistics.median(times) * 1e3:.0f} | {min(times) * 1e3:.0f}-{max(times) * 1e3:.0f} |")
    (folder / f"startup-{date}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-len(seconds) - 2 :]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
