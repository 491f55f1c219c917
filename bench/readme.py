"""Put the latest benchmark results into README.md, between its ``bench`` markers.

Usage: ``python -m bench.readme [--results bench/results] [--readme README.md]``.
Reads the newest full ``cpu-*.json`` (not ``-quick``) and ``plans-*.json``, and every
``sweep-*.json`` of the newest one's date (not the ``-gpu-`` or ``-fit`` ones; by seed, the
last one's plot shown), and rewrites the text between ``<!-- bench:start -->`` and
``<!-- bench:end -->``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from .run import summary_table

START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def _reports(folder: Path, pattern: str) -> list[Path]:
    """Reports matching `pattern`, by name: the complete ones, else the stopped ('partial') ones."""
    skip = ("quick", "fit", "gpu")  # quick runs, the cost model's fit data, GPU runs
    paths = sorted(p for p in folder.glob(pattern) if not any(word in p.name for word in skip))
    return [p for p in paths if "partial" not in p.name] or paths


def _latest(folder: Path, pattern: str) -> tuple[Path, dict] | None:
    """The newest report matching `pattern` (see :func:`_reports`), with its contents."""
    paths = _reports(folder, pattern)
    return (paths[-1], json.loads(paths[-1].read_text())) if paths else None


def _link(report: Path) -> str:
    """Markdown link to the Markdown twin of a JSON report."""
    page = report.with_suffix(".md")
    return f"[{page}]({page})"


def _sweep_order(found: tuple[Path, dict]) -> tuple[str, bool, bool, bool, int]:
    """Sweeps by date, then float32 after other dtypes, plain calls after plans, sizes
    after layers (``--layers``), then seed (the plot shown is the newest day's float32
    sweep of sizes by plain calls of the highest seed, where there is one)."""
    words = shlex.split(found[1].get("command", ""))
    seed = int(words[words.index("--seed") + 1]) if "--seed" in words else 0
    float32 = "--dtype" not in words or "float32" in words
    return found[1].get("date", ""), float32, "--plans" not in words, "--layers" not in words, seed


def section(folder: Path) -> str:
    """Markdown of the newest CPU table, plan result and sweep summary in `folder`."""
    lines: list[str] = []
    if found := _latest(folder, "cpu-*.json"):
        path, report = found
        v = report["versions"]
        lines += [
            f"{'Stopped run, cases ' + ', '.join(r['id'] for r in report['cases']) + '. ' if 'partial' in path.name else ''}"
            f"Median ms, float32, `{report['command']}` on {report['date']} ({v['processor']}, {v['cores']} cores; "
            f"numpy {v['numpy']}{' with ' + v['blas'] if 'blas' in v else ''}, scipy {v['scipy']}, torch {v['torch']}; GEMM measured at "
            f"{report['rates']['gemm_flops'] / 1e9:.0f} GFLOP/s at its start). Full report: {_link(path)}.",
            "",
            *summary_table(report),
        ]
        lines += ["", f"![arrayconv vs peers]({path.with_suffix('.png')})", ""]
        if (g_plot := path.with_name(path.stem + "-g.png")).exists():
            lines += [f"![time against kernel size, 4096x4096 image]({g_plot})", ""]
    if found := _latest(folder, "plans-*.json"):
        path, report = found
        ms = {name: 1e3 * seconds for name, seconds in report["median_s"].items()}
        lines += [
            f"Same kernel, {report['frames']} frames (case {report['case']['id']}): a plan is "
            f"**{report['speedup_plan_over_plain_auto']:.2f}x** faster per frame than the plain call "
            f"({ms[report['plan']]:.1f} against {ms['arrayconv correlate auto']:.1f} ms; SciPy's `oaconvolve` "
            f"{ms['scipy.signal.oaconvolve']:.1f} ms) ({_link(path)}).",
            "",
        ]
    if sweeps := sorted(((p, json.loads(p.read_text())) for p in _reports(folder, "sweep-*.json")), key=_sweep_order):
        path, report = sweeps[-1]
        day = [(p, r) for p, r in sweeps if r.get("date") == report.get("date")]
        lines += [f"Method choice, every sweep of {report.get('date')} (time of `auto`'s method / the fastest method's):", ""]
        for p, r in day:
            s = r["summary"]
            lines.append(
                f"- `{r['command']}`: {s['points']} problems, within 1.2x on {s['within_1.2x']:.0%}, "
                f"worst {s['worst_ratio']:.2f}x{', ' + r['note'] if r.get('note') else ''} ({_link(p)})"
            )
        lines += ["", f"![method choice sweep]({path.with_suffix('.png')})"]
    return "\n".join(lines).strip()


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", default="bench/results")
    parser.add_argument("--readme", default="README.md")
    args = parser.parse_args(argv)
    readme = Path(args.readme)
    text = readme.read_text()
    if START not in text or END not in text:
        print(f"{readme} has no {START} ... {END} markers", file=sys.stderr)
        return 2
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{START}\n{section(Path(args.results))}\n{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
