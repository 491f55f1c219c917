"""The documentation's benchmarks page, made from the latest results in bench/results.

Usage: ``python -m bench.page [--results bench/results] [--out docs/_generated/benchmarks.md]``;
the docs build (``docs/conf.py``) runs it, so the page always shows the newest committed
results and nothing generated is committed. For each standing benchmark it takes the newest
report: the CPU cases against SciPy and torch, the GPU cases against cupyx and cuDNN, plans
against plain calls, the drop-in namespaces against SciPy, small kernels against OpenCV,
calls on a busy machine, conv layers against torch, and the method-choice sweeps
(``sweep-timings.jsonl``), with their plots.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .run import summary_table


def _latest(folder: Path, pattern: str) -> tuple[Path, dict] | None:
    """The newest report matching `pattern` (by name: dates sort), quick runs left out."""
    paths = sorted(p for p in folder.glob(pattern) if "quick" not in p.name)
    return (paths[-1], json.loads(paths[-1].read_text())) if paths else None


def _machine(versions: dict) -> str:
    gpu = versions.get("gpu")
    cpu = f"{versions.get('processor', 'unknown CPU')}, {versions.get('cores', '?')} cores"
    return f"{gpu} ({cpu})" if gpu else cpu


def page(folder: Path, link: str, reports: str | None = None) -> str:
    """Markdown of the newest results in `folder`: each plot linked as `link` + its name
    (relative, so the docs build copies it), each report as `reports` + its name (default
    `link`)."""
    reports = link if reports is None else reports
    lines = ["# Benchmarks", "", "Made from the newest committed results in `bench/results` (how each was made:",
             "`bench/README.md`). Ratios above 1: arrayconv faster.", ""]
    for pattern, title in (("cpu-*.json", "CPU"), ("gpu-*.json", "GPU")):
        found = _latest(folder, pattern)
        if found is None or "cases" not in found[1]:
            continue
        path, report = found
        lines += [f"## {title}: the design's cases ({report['date']})", "",
                  f"`{report['command']}` on {_machine(report['versions'])}; medians in ms, float32. "
                  f"Full report: [{path.with_suffix('.md').name}]({reports}{path.with_suffix('.md').name}).", ""]
        if title == "CPU":
            lines += summary_table(report)
        else:
            lines += ["| case | arrayconv auto (ms) | chosen | best peer | best peer (ms) | ratio best peer / auto | cuDNN FP32 / auto |", "|---|---|---|---|---|---|---|"]
            for r in report["cases"]:
                auto = r["median_s"]["arrayconv auto"]
                lines.append(f"| {r['id']} | {auto * 1e3:.2f} | {r['chosen']} | {r['best_peer']} | {r['median_s'][r['best_peer']] * 1e3:.2f} | "
                             f"**{r['ratio_best_peer_over_auto']:.2f}** | {r.get('ratio_cudnn_fp32_over_auto', float('nan')):.2f} |")
        for plot in (path.with_suffix(".png"), path.with_name(path.stem + "-g.png")):
            if plot.exists():
                lines += ["", f"![{title} benchmark]({link}{plot.name})"]
        lines.append("")
    for pattern, title in (("plans-2*.json", "CPU"), ("plans-gpu-*.json", "GPU")):
        if found := _latest(folder, pattern):
            path, report = found
            ms = {name: 1e3 * seconds for name, seconds in report["median_s"].items()}
            lines += [f"## Same kernel, many frames ({title}, {report['date']})", "",
                      f"Case {report['case']['id']}, {report['frames']} frames: a plan is **{report['speedup_plan_over_plain_auto']:.2f}x** faster "
                      f"per frame than the plain call ({ms[report['plan']]:.2f} against {ms['arrayconv correlate auto']:.2f} ms) "
                      f"([{path.with_suffix('.md').name}]({reports}{path.with_suffix('.md').name})).", ""]
    for pattern, title, what in (
        ("dropin-2*.json", "One changed import line", "arrayconv.ndimage and arrayconv.signal against the SciPy functions they stand in for, images 512x512-8192x8192 and volumes"),
        ("filters-2*.json", "Small kernels at the memory floor", "2-D images against OpenCV and scipy.ndimage, volumes against scipy.ndimage, the copy floor beside each row"),
        ("contention-2*.json", "On a busy machine", "every call idle and with every core busy, against SciPy's best call in the same conditions"),
        ("layers-2*.json", "Conv layers", "multichannel, strided, grouped, depthwise and 3-D layers against torch's CPU conv"),
    ):
        if found := _latest(folder, pattern):
            path, report = found
            lines += [f"## {title} ({report['date']})", "", f"{what}: [{path.with_suffix('.md').name}]({reports}{path.with_suffix('.md').name}).", ""]
            if path.with_suffix(".png").exists():
                lines += [f"![{title}]({link}{path.with_suffix('.png').name})", ""]
    timings = folder / "sweep-timings.jsonl"
    if timings.exists():
        sweeps = [json.loads(line) for line in timings.read_text().splitlines() if line.strip()]
        for device in ("cpu", "gpu"):
            mine = [s for s in sweeps if s.get("device", "cpu") == device]
            if not mine:
                continue
            last = max(s["date"] for s in mine)
            lines += [f"## Method choice, {device.upper()} sweeps of {last}", "",
                      "Each point: every method timed; the ratio is the time of `auto`'s method over the fastest's.", "",
                      "| sweep | points | within 1.2x | worst |", "|---|---|---|---|"]
            for s in mine:
                if s["date"] == last:
                    summary = s["summary"]
                    lines.append(f"| {s['name']} | {summary['points']} | {summary['within_1.2x']:.0%} | {summary['worst_ratio']:.2f} |")
            plots = sorted(folder.glob(f"sweep-{'gpu-' if device == 'gpu' else '2'}*.png"))
            if plots:
                lines += ["", f"![method choice sweep]({link}{plots[-1].name})"]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", default="bench/results")
    parser.add_argument("--out", default="docs/_generated/benchmarks.md")
    parser.add_argument("--reports", help="address prefix of the reports' links (default: relative, as the plots)")
    args = parser.parse_args(argv)
    out, results = Path(args.out), Path(args.results)
    out.parent.mkdir(parents=True, exist_ok=True)
    link = os.path.relpath(results, out.parent).replace(os.sep, "/") + "/"
    out.write_text(page(results, link, args.reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
