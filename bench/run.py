"""Run the CPU benchmark: arrayconv and its peers side by side, interleaved, medians.

Usage, from the repository root: ``python -m bench.run [--full] [--cases a,b,...] [--repeats N] [--out DIR]``. Without ``--full`` or ``--cases``: the quick cases,
two repeats, SciPy's direct sums only up to :data:`~.peers.QUICK_MAX_DIRECT_MACS`.
Writes ``cpu-<date>[-quick].json``, ``.md`` and ``.png`` into DIR (default bench/results).
Needs the ``bench`` extra (matplotlib, tqdm); torch is a peer when installed.
"""

from __future__ import annotations

import os

# OpenMP threads (torch) spin after each call and would steal the cores from whatever runs
# next in an interleaved benchmark; passive waiting keeps every callable's timing its own.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import dataclasses
import datetime
import json
import math
import multiprocessing
import platform
import random
import shlex
import statistics
import sys
import time
import tracemalloc
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import scipy

import arrayconv as ac
from arrayconv._runtime.backend import NUMPY
from arrayconv._runtime.machine import blas, cores, cpu_name
from arrayconv._runtime.rates import measure_rates

from .cases import CASES, QUICK, Case, unknown_ids_error
from .peers import MAX_DIRECT_MACS, QUICK_MAX_DIRECT_MACS, arrayconv_callables, peer_callables, time_call

# A callable whose warm-up takes longer than this is timed once, not repeated.
SLOW_SECONDS = 3.0
# arrayconv methods estimated slower than this are not run.
MAX_ESTIMATE_SECONDS = 20.0


def machine_rates() -> dict[str, float]:
    """This machine's rates, measured by the probes of :func:`arrayconv.calibrate` (not
    stored): GEMM FLOP/s and copy bytes/s are the floors' basis."""
    return dataclasses.asdict(measure_rates(NUMPY))


def command_line(program: str, argv: list[str] | None = None) -> str:
    """The command that made a report, as typed in a shell: `program` and `argv` (default
    this process's arguments), quoted where they hold spaces or quotes."""
    args = sys.argv[1:] if argv is None else argv
    return f"{program} {shlex.join(args)}" if args else program


def machine_line(versions: dict[str, str]) -> str:
    """The 'Machine:' line of every Markdown report."""
    return "Machine: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + "  "


def report_head(title: str, command: str, versions: dict[str, str]) -> list[str]:
    """The first lines of every Markdown report: its title, the command that made it and
    the machine it ran on."""
    return [f"# {title}", "", f"Command: `{command}`  ", machine_line(versions)]


def new_report(program: str, argv: list[str] | None, versions: dict[str, str], **fields: object) -> dict:
    """A report's record: today's date, the command that made it (`program` and `argv`), the
    machine's `versions`, and `fields` (its points or rows, and what else it keeps)."""
    return {"date": datetime.date.today().isoformat(), "command": command_line(program, argv), "versions": versions, **fields}


def save_report(stem: Path, report: dict, title: str, prose: list[str], columns: list[str], rows: list[str]) -> Path:
    """Write `report` to ``<stem>.json`` and a Markdown page to ``<stem>.md``: `title`, the
    command and machine (:func:`report_head`), `prose`, and a table of `columns` and `rows`
    (each a line of cells, ``| a | b |``); returns the Markdown path."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    table = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns), *rows]
    page = [*report_head(title, report["command"], report["versions"]), *prose, "", *table]
    stem.with_suffix(".md").write_text("\n".join(page) + "\n")
    return stem.with_suffix(".md")


def _data(case: Case) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal(case.x, dtype=np.float32), rng.standard_normal(case.w, dtype=np.float32)


def _reference(case: Case, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Float64 result (arrayconv in float64; its methods are tested against SciPy's float64)."""
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    if case.kind == "image":
        return ac.correlate(x64, w64, case.mode)
    return ac.conv(x64, w64, padding=case.padding)


def _error(result: object, ref: np.ndarray) -> float:
    got = result.numpy() if hasattr(result, "numpy") else np.asarray(result)
    got = got.reshape(ref.shape)
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def _peak_bytes(fn) -> int:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _floor(case: Case, x: np.ndarray, w: np.ndarray, out_size: int, rates: dict[str, float]) -> float:
    if case.kind == "image":
        macs = out_size * math.prod(case.w)
    else:
        macs = out_size * case.w[1] * math.prod(case.w[2:])
    moved = x.nbytes + w.nbytes + out_size * 4
    return max(2 * macs / rates["gemm_flops"], moved / rates["stream_bytes"])


def run_case(case: Case, repeats: int, rates: dict[str, float], max_direct_macs: float = MAX_DIRECT_MACS) -> dict:
    """Time every callable of `case`, interleaved in a new order each repeat, after one
    warm-up each (SciPy's direct sums up to `max_direct_macs` multiply-adds)."""
    x, w = _data(case)
    ref = _reference(case, x, w)
    mine = arrayconv_callables(case, x, w)
    peers, skipped = peer_callables(case, x, w, max_direct_macs)
    choice = _choice(case, x, w)
    estimates = {name: cost.seconds for name, cost in choice.estimates.items()}
    for name in list(mine):
        method = name.split()[-1]
        if method != "auto" and estimates.get(method, 0.0) > MAX_ESTIMATE_SECONDS:
            skipped[name] = f"estimated {estimates[method]:.0f} s"
            del mine[name]
    runs = {**mine, **peers}
    times: dict[str, list[float]] = {}
    errors: dict[str, float] = {}
    for name, fn in runs.items():
        start = time.perf_counter()
        errors[name] = _error(fn(), ref)
        times[name] = [time.perf_counter() - start]
    order = [n for n in runs if times[n][0] < SLOW_SECONDS]
    for repeat in range(repeats):
        # A new order each repeat: whatever runs first, or right after torch, runs slower on
        # this 2-core machine (auto, always first, measured 10-20% over its own method).
        random.Random(repeat).shuffle(order)
        for name in order:
            times[name].append(time_call(runs[name]))
    medians = {n: statistics.median(t[1:] if len(t) > 1 else t) for n, t in times.items()}
    peaks = {n: _peak_bytes(runs[n]) for n in mine}
    best_peer = min((n for n in peers), key=lambda n: medians[n])
    auto = medians["arrayconv auto"]
    return {
        "id": case.id,
        "case": case.__dict__,
        "median_s": medians,
        "error": errors,
        "peak_bytes": peaks,
        "skipped": skipped,
        "best_peer": best_peer,
        "ratio_best_peer_over_auto": medians[best_peer] / auto,
        "floor_s": _floor(case, x, w, ref.size, rates),
        "io_bytes": x.nbytes + w.nbytes + ref.size * 4,
        "chosen": choice.method,
    }


def _choice(case: Case, x: np.ndarray, w: np.ndarray) -> ac.Choice:
    if case.kind == "image":
        return ac.choose_method(x, w, mode=case.mode)
    return ac.choose_method(x, w, op="conv", padding=case.padding)


def versions() -> dict[str, str]:
    info = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "arrayconv": ac.__version__,
        "machine": platform.machine(),
        "processor": cpu_name(),
        "cores": cores(),
        "blas": blas(),
    }
    try:
        import torch

        info["torch"] = f"{torch.__version__} ({torch.get_num_threads()} threads)"
    except ImportError:
        info["torch"] = "not installed"
    return info


def write_markdown(report: dict, path: Path) -> None:
    lines = [
        *report_head(f"arrayconv CPU benchmark, {report['date']}", report["command"], report["versions"]),
        f"Measured floors' basis: GEMM {report['rates']['gemm_flops'] / 1e9:.0f} GFLOP/s, "
        f"copy {report['rates']['stream_bytes'] / 1e9:.1f} GB/s.  ",
        f"Median of {report['repeats']} interleaved repeats (order shuffled each repeat) after one warm-up "
        f"(calls over {SLOW_SECONDS:.0f} s: timed once). float32. Error: max |y - ref| / max |ref| "
        "against float64.",
        "",
        "## Summary",
        "",
        *summary_table(report),
    ]
    lines += ["", "## Every callable", ""]
    for r in report["cases"]:
        lines += [f"### {r['id']}: {r['case']}", "", "| callable | median (ms) | error | peak memory (MiB) |", "|---|---|---|---|"]
        for name, t in sorted(r["median_s"].items(), key=lambda kv: kv[1]):
            peak = r["peak_bytes"].get(name)
            lines.append(
                f"| {name} | {t * 1e3:.1f} | {r['error'][name]:.1e} | {'' if peak is None else f'{peak / 2**20:.1f}'} |"
            )
        lines += [f"| {name} | skipped: {why} | | |" for name, why in r["skipped"].items()]
        lines.append("")
    path.write_text("\n".join(lines) + "\n")


def summary_table(report: dict) -> list[str]:
    """Markdown rows: one per case, arrayconv auto against the fastest peer."""
    lines = [
        "| case | arrayconv auto (ms) | chosen | best peer | best peer (ms) | ratio best peer / auto | floor (ms) | auto error | auto peak memory / (in+out) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["cases"]:
        auto = r["median_s"]["arrayconv auto"]
        lines.append(
            f"| {r['id']} | {auto * 1e3:.1f} | {r['chosen']} | {r['best_peer']} | "
            f"{r['median_s'][r['best_peer']] * 1e3:.1f} | **{r['ratio_best_peer_over_auto']:.2f}** | "
            f"{r['floor_s'] * 1e3:.1f} | {r['error']['arrayconv auto']:.1e} | "
            f"{r['peak_bytes']['arrayconv auto'] / r['io_bytes']:.2f} |"
        )
    return lines


def save_figure(fig, path: Path) -> None:  # type: ignore[no-untyped-def]
    """Write a benchmark's plot at the size every report uses, and free it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot(report: dict, path: Path, third: str = "torch conv2d (CPU)", where: str = "") -> None:
    """Bars per case: arrayconv auto, the best peer and `third` (default torch on the CPU)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = report["cases"]
    labels = [r["id"] for r in cases]
    auto = [r["median_s"]["arrayconv auto"] * 1e3 for r in cases]
    peer = [r["median_s"][r["best_peer"]] * 1e3 for r in cases]
    third_t = [r["median_s"].get(third, float("nan")) * 1e3 for r in cases]
    pos = np.arange(len(cases))
    fig, ax = plt.subplots(figsize=(11, 4.5))
    ax.bar(pos - 0.27, auto, 0.27, label="arrayconv auto")
    ax.bar(pos, peer, 0.27, label="best peer")
    ax.bar(pos + 0.27, third_t, 0.27, label=third)
    ax.set_xticks(pos, labels)
    ax.set_yscale("log")
    ax.set_ylabel("median time (ms, log)")
    where = where or f"CPU ({report['versions']['processor']}, {report['versions']['cores']} cores)"
    ax.set_title(f"arrayconv vs peers, {where}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plot_kernel_sizes(report, path.with_name(path.stem + "-g.png"))


def plot_kernel_sizes(report: dict, path: Path) -> None:
    """Time against kernel size for the 4096x4096 image cases g3..g63, one line per callable."""
    import matplotlib.pyplot as plt

    cases = [r for r in report["cases"] if r["id"].startswith("g")]
    if len(cases) < 2:
        return
    sizes = [r["case"]["w"][0] for r in cases]
    names = sorted({n for r in cases for n in r["median_s"]} - {"arrayconv auto"})
    pairs = plt.get_cmap("tab20").colors  # dark and light of 10 hues: the dark ones first
    colors = dict(zip(names, pairs[0::2] + pairs[1::2]))  # a colour of its own for up to 20 lines
    fig, ax = plt.subplots(figsize=(9, 5))
    for name in ["arrayconv auto", *names]:
        points = [(k, r["median_s"][name] * 1e3) for k, r in zip(sizes, cases) if name in r["median_s"]]
        style = {"lw": 2.5, "c": "black"} if name == "arrayconv auto" else {"lw": 1, "c": colors[name], "ls": "--" if name.startswith("arrayconv") else "-"}
        ax.plot(*zip(*points), marker="o", label=name, **style)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(k) for k in sizes])
    ax.set_xlabel("kernel side k (k x k kernel, 4096 x 4096 float32 image, mode 'same')")
    ax.set_ylabel("median time (ms, log)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark from the command line; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--full", action="store_true", help="every case of bench/cases.py (tens of minutes)")
    parser.add_argument("--cases", help="comma-separated case ids, e.g. a,c,g15")
    parser.add_argument("--repeats", type=int, help="timed repeats per callable (default 2 quick, 5 full)")
    parser.add_argument("--out", default="bench/results", help="folder of the reports")
    args = parser.parse_args(argv)
    try:
        from tqdm import tqdm
    except ImportError:
        print("the benchmark needs the bench extra: pip install 'arrayconv[bench]'", file=sys.stderr)
        return 2
    known = [c.id for c in CASES]
    chosen = args.cases.split(",") if args.cases else known if args.full else QUICK
    if error := unknown_ids_error(chosen):
        parser.error(error)
    quick = not args.full and not args.cases
    repeats = args.repeats or (2 if quick else 5)
    rates = machine_rates()
    results = []
    cases = [c for c in CASES if c.id in chosen]
    with tqdm(total=len(cases), unit="case", dynamic_ncols=True) as bar:
        for case in cases:
            bar.set_postfix_str(f"case {case.id}", refresh=True)
            results.append(_in_own_process(case, repeats, rates, QUICK_MAX_DIRECT_MACS if quick else MAX_DIRECT_MACS))
            r = results[-1]
            bar.write(
                f"case {case.id}: auto {r['median_s']['arrayconv auto'] * 1e3:.1f} ms ({r['chosen']}), best peer "
                f"{r['best_peer']} {r['median_s'][r['best_peer']] * 1e3:.1f} ms, ratio {r['ratio_best_peer_over_auto']:.2f}"
            )
            bar.update()
            stem = _write(results, args.out, quick, argv, rates, repeats)  # after every case: a stopped run keeps its rows
    print(f"wrote {stem}.md, .json and .png files")
    return 0


def _in_own_process(case: Case, repeats: int, rates: dict[str, float], max_direct_macs: float) -> dict:
    """`run_case` in a fresh process: no allocator, cache or thread-pool state carries over
    from one case to the next."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(run_case, case, repeats, rates, max_direct_macs).result()


def _write(results: list[dict], out: str, quick: bool, argv: list[str] | None, rates: dict[str, float], repeats: int) -> Path:
    date = datetime.date.today().isoformat()
    report = {
        "date": date,
        "command": command_line("python -m bench.run", argv),
        "versions": versions(),
        "rates": rates,
        "repeats": repeats,
        "cases": results,
    }
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"cpu-{date}{'-quick' if quick else ''}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    write_markdown(report, stem.with_suffix(".md"))
    plot(report, stem.with_suffix(".png"))
    return stem


if __name__ == "__main__":
    sys.exit(main())
