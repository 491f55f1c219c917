"""Time `correlate_into` on the GPU: pinned buffers and a copy stream against plain copies.

Usage: ``python -m bench.tiled_gpu [--size N] [--repeats R] [--out DIR]``.
An N x N float32 image in host memory (default 16384: 1 GiB) is filtered into a host array
with 7x7 and 63x63 kernels, 'same', 'symm' edges, under two memory budgets (slabs of
64 MiB, and slabs at their 256 MiB cap). Three ways, interleaved in shuffled order, wall
time of each whole call, median of R after one warm-up:

- ``pinned``: `correlate_into` as it is (pinned host buffers, uploads on a copy stream
  while the previous slab is filtered, downloads that do not block the host);
- ``plain``: the same slab loop with the copies it had before, ``cupy.asarray`` and
  ``.get()`` on the calling thread;
- ``whole``: the image uploaded at once, ``correlate`` on the GPU, downloaded (no slabs:
  the floor that slabs approach when the image fits on the device).

Writes ``tiled-gpu-<device>-<date>.json`` and ``.md`` into DIR (default bench/results).
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import arrayconv as ac
from arrayconv._api import tiled as _tiled
from arrayconv._runtime.slab_copies import InPlace

from .gpu import gpu_versions
from .run import command_line, report_head

KERNELS = (7, 63)
BUDGETS = {"slabs of 64 MiB": 512 << 20, "slabs of 256 MiB (the cap)": 8 << 30}


class PlainCopies(InPlace):
    """The slab copies before pinned buffers: synchronous, on the calling thread."""

    def __init__(self, xp: Any) -> None:
        self.xp = xp

    def to_device(self, slot: int, slab: np.ndarray) -> Any:
        """Upload with ``cupy.asarray``."""
        return self.xp.asarray(slab)

    def to_host(self, slot: int, y: Any) -> np.ndarray:
        """Download with ``.get()``."""
        return y.get()


def _runs(cp: Any, image: np.ndarray, kernel: Any, budget: int, out: np.ndarray, slab_rows: list[int]) -> dict[str, Any]:
    pinned_copies = _tiled.slab_copies

    def recorded(backend, slab_shape, *rest):  # type: ignore[no-untyped-def]
        slab_rows.append(slab_shape[0])
        return pinned_copies(backend, slab_shape, *rest)

    def pinned() -> None:
        _tiled.slab_copies = recorded
        try:
            ac.correlate_into(image, kernel, out, boundary="symm", memory_limit=budget, progress=False)
        finally:
            _tiled.slab_copies = pinned_copies

    def plain() -> None:
        _tiled.slab_copies = lambda backend, *shapes: PlainCopies(cp)
        try:
            ac.correlate_into(image, kernel, out, boundary="symm", memory_limit=budget, progress=False)
        finally:
            _tiled.slab_copies = pinned_copies

    def whole() -> None:
        ac.correlate(cp.asarray(image), kernel, "same", boundary="symm").get(out=out)

    return {"pinned": pinned, "plain": plain, "whole": whole}


def run(size: int, repeats: int) -> list[dict[str, Any]]:
    """Time the three ways on each kernel and budget; check they agree."""
    import cupy as cp

    rng = np.random.default_rng(0)
    image = rng.standard_normal((size, size), dtype=np.float32)
    out = np.empty_like(image)
    rows = []
    for k in KERNELS:
        kernel = cp.asarray(rng.standard_normal((k, k), dtype=np.float32))
        for label, budget in BUDGETS.items():
            slab_rows: list[int] = []
            runs = _runs(cp, image, kernel, budget, out, slab_rows)
            results = {}
            for name, fn in runs.items():  # warm-up, and each result kept for the check
                fn()
                results[name] = out.copy()
            scale = float(np.abs(results["whole"]).max())
            errors = {name: float(np.abs(r - results["whole"]).max()) / scale for name, r in results.items()}
            del results
            times: dict[str, list[float]] = {name: [] for name in runs}
            for _ in range(repeats):
                for name in random.sample(list(runs), len(runs)):
                    start = time.perf_counter()
                    runs[name]()
                    times[name].append(time.perf_counter() - start)
            median = {name: statistics.median(t) for name, t in times.items()}
            rows.append(
                {
                    "kernel": k,
                    "budget": label,
                    "memory_limit": budget,
                    "slab_rows": slab_rows[0],
                    "median_s": median,
                    "times_s": times,
                    "plain_over_pinned": median["plain"] / median["pinned"],
                    "error_vs_whole": errors,
                }
            )
            print(f"{k}x{k}, {label}: " + ", ".join(f"{n} {t:.3f} s" for n, t in median.items()), flush=True)
    return rows


def write_markdown(report: dict[str, Any], path: Path) -> None:
    size = report["size"]
    lines = [
        *report_head(f"correlate_into on the GPU: pinned buffers and a copy stream, {report['date']}", report["command"], report["versions"]),
        f"A {size}x{size} float32 image in host memory into a host array, 'same', 'symm' edges; wall time of "
        f"each call, median of {report['repeats']} interleaved repeats after a warm-up. pinned: as shipped; "
        "plain: the same slab loop with `cupy.asarray`/`.get()` copies; whole: one upload, `correlate`, one "
        "download. Error: max |y - whole| / max |whole|.",
        "",
        "| kernel | budget | slab rows | pinned (s) | plain (s) | whole (s) | plain / pinned | error pinned | error plain |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        m, e = r["median_s"], r["error_vs_whole"]
        lines.append(
            f"| {r['kernel']}x{r['kernel']} | {r['budget']} | {r['slab_rows']} | {m['pinned']:.3f} | {m['plain']:.3f} | "
            f"{m['whole']:.3f} | **{r['plain_over_pinned']:.2f}** | {e['pinned']:.1e} | {e['plain']:.1e} |"
        )
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m bench.tiled_gpu", description=__doc__)
    parser.add_argument("--size", type=int, default=16384)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    import cupy as cp

    info = gpu_versions(cp)
    report = {
        "date": datetime.date.today().isoformat(),
        "command": command_line("python -m bench.tiled_gpu", argv),
        "versions": info,
        "size": args.size,
        "repeats": args.repeats,
        "rows": run(args.size, args.repeats),
    }
    device = info["gpu"].replace("NVIDIA ", "").replace(" ", "-").lower()
    stem = Path(args.out) / f"tiled-gpu-{device}-{report['date']}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    write_markdown(report, stem.with_suffix(".md"))
    print(f"wrote {stem}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
