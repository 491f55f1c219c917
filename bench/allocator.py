"""What keeping freed memory for reuse buys: repeated calls with glibc's malloc thresholds
as glibc sets them, and as ``arrayconv.keep_freed_memory()`` sets them.

Usage: ``python -m bench.allocator [--repeats 20] [--out bench/results]``. Each problem runs
in two fresh processes, one with ``ARRAYCONV_KEEP_FREED_MEMORY=1`` and one without, in turn;
each process times `repeats` calls after two warm-up calls and counts its minor page faults.
Writes ``allocator-<date>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

from .run import command_line, report_head, versions

PROBLEMS = [((256, 256), (7, 7), "fft"), ((512, 512), (15, 15), "fft"), ((1024, 1024), (31, 31), "fft"), ((2048, 2048), (31, 31), "oa")]

_CHILD = """
import json, resource, statistics, sys, time
import numpy as np, arrayconv as ac
shape, kernel, method, repeats = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
x, w = rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(kernel, dtype=np.float32)
for _ in range(2):
    ac.correlate(x, w, "same", method)
before, times = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, []
for _ in range(repeats):
    start = time.perf_counter()
    ac.correlate(x, w, "same", method)
    times.append(time.perf_counter() - start)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / repeats
print(json.dumps([statistics.median(times), faults]))
"""


def _run(problem: tuple, repeats: int, keep: bool) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k not in ("GLIBC_TUNABLES", "ARRAYCONV_KEEP_FREED_MEMORY")}
    if keep:
        env["ARRAYCONV_KEEP_FREED_MEMORY"] = "1"
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([*problem, repeats])], capture_output=True, text=True, check=True, env=env)
    seconds, faults = json.loads(done.stdout)
    return seconds, faults


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    rows = []
    for shape, kernel, method in PROBLEMS:
        default, kept = _run((shape, kernel, method), args.repeats, False), _run((shape, kernel, method), args.repeats, True)
        rows.append({"shape": shape, "kernel": kernel, "method": method, "default": default, "kept": kept})
    date = datetime.date.today().isoformat()
    report = {"date": date, "command": command_line("python -m bench.allocator", argv), "versions": versions(), "repeats": args.repeats, "rows": rows}
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"allocator-{date}.json").write_text(json.dumps(report, indent=1))
    lines = report_head(f"Freed memory kept for reuse, {date}", report["command"], report["versions"])
    lines += [
        "",
        f"float32 correlate 'same', median of {args.repeats} calls after two warm-up calls, each setting in a fresh process.",
        "",
        "| image | kernel | method | glibc's thresholds (ms) | faults per call | keep_freed_memory (ms) | faults per call | ratio |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        (t0, f0), (t1, f1) = r["default"], r["kept"]
        lines.append(f"| {r['shape'][0]}x{r['shape'][1]} | {r['kernel'][0]}x{r['kernel'][1]} | {r['method']} | {t0 * 1e3:.2f} | {f0:.0f} | {t1 * 1e3:.2f} | {f1:.0f} | {t0 / t1:.2f} |")
    (folder / f"allocator-{date}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-len(rows) - 2 :]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
