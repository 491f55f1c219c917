"""What a resumable run costs: `correlate_into` with and without ``resume=True``.

Usage: ``python -m bench.resume [--side 20000] [--kernel 63] [--rounds 3] [--out bench/results]``.
A `side` x `side` float32 image in a .npy file (1.6 GB at 20000) is smoothed with a
`kernel` x `kernel` Gaussian PSF into another memory-mapped .npy, in 512 MiB, in turn
with and without durable progress records (each tile's data flushed to disk, then the
record written and synced), `rounds` times each; the medians and their ratio are reported.
Writes ``resume-<date>.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import arrayconv as ac

from .run import command_line, report_head, versions


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--side", type=int, default=20000)
    parser.add_argument("--kernel", type=int, default=63)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=".") as folder:
        source = np.lib.format.open_memmap(Path(folder) / "in.npy", "w+", np.float32, (args.side, args.side))
        rng = np.random.default_rng(0)
        for start in range(0, args.side, 1024):
            source[start : start + 1024] = rng.random((min(1024, args.side - start), args.side), dtype=np.float32)
        source.flush()
        r = np.arange(args.kernel) - args.kernel // 2
        taps = np.exp(-(r**2) / (2 * (args.kernel / 8) ** 2))
        psf = (np.outer(taps, taps) / taps.sum() ** 2).astype(np.float32)
        seconds: dict[str, list[float]] = {"plain": [], "resumable": []}
        for _ in range(args.rounds):
            for name in seconds:
                out = np.lib.format.open_memmap(Path(folder) / "out.npy", "w+", np.float32, source.shape)
                start = time.perf_counter()
                ac.correlate_into(source, psf, out, "same", boundary="symmetric", memory_limit=512 << 20, progress=False, resume=name == "resumable")
                out.flush()
                seconds[name].append(time.perf_counter() - start)
                del out
    medians = {name: statistics.median(times) for name, times in seconds.items()}
    date = datetime.date.today().isoformat()
    report = {"date": date, "command": command_line("python -m bench.resume", argv), "versions": versions(), "side": args.side, "kernel": args.kernel, "seconds": seconds, "median_s": medians}
    folder_out = Path(args.out)
    folder_out.mkdir(parents=True, exist_ok=True)
    (folder_out / f"resume-{date}.json").write_text(json.dumps(report, indent=1))
    overhead = medians["resumable"] / medians["plain"] - 1
    lines = report_head(f"Resumable runs: the cost of durable progress records, {date}", report["command"], report["versions"])
    lines += [
        "",
        f"{args.side}x{args.side} float32 .npy, {args.kernel}x{args.kernel} Gaussian PSF, 'same', 'symmetric' edges, into a memory-mapped .npy in 512 MiB; {args.rounds} rounds, interleaved.",
        "",
        "| run | median (s) | each round (s) |",
        "|---|---:|---|",
        *(f"| {name} | {medians[name]:.2f} | {', '.join(f'{t:.2f}' for t in times)} |" for name, times in seconds.items()),
        "",
        f"**Durable progress records cost {overhead:+.1%} of the run.**",
    ]
    (folder_out / f"resume-{date}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-8:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
