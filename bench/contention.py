"""Speed that holds on a busy machine: every call idle and with all cores busy.

Usage: ``python -m bench.contention [--cases a,b,...] [--repeats 5] [--out bench/results]``.
The design's cases (``cases.py``), the demo's five kernels on its 2048x2048 star field, and
Richardson-Lucy (20 iterations, 1024x1024, a Gaussian PSF of sigma 2) run twice: on an
idle machine, then with a busy-looping process on every core this process may use (started
and stopped by the benchmark: another user's job, or a second script). Each time
SciPy's calls (``scipy.signal.correlate`` with each method, ``fftconvolve``,
``oaconvolve``, ``scipy.ndimage.correlate``; for Richardson-Lucy, scikit-image's) are
timed once, and the two fastest run interleaved with arrayconv's call ('auto'); SciPy's
best is its fastest in those same conditions. Reported: the medians, each library's
loaded/idle ratio, and SciPy's best time over arrayconv's under load. Writes ``contention-<date>.md``, ``.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import scipy.ndimage
import scipy.signal

import arrayconv as ac
from arrayconv import kernels
from arrayconv._demo import kernels as demo_kernels
from arrayconv._demo import star_field
from arrayconv._runtime.machine import usable_cores

from .cases import CASES, unknown_ids_error
from .peers import interleaved_medians, peer_callables, time_call
from .run import _data, command_line, report_head, save_figure, versions

Calls = dict[str, Callable[[], object]]


def _burn(stop: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    """Keep one core busy until `stop` is set."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


@contextlib.contextmanager
def busy_cores(count: int) -> Iterator[None]:
    """`count` processes looping on the CPU inside the block."""
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(count)]
    for burner in burners:
        burner.start()
    time.sleep(0.5)  # all running before the first call
    try:
        yield
    finally:
        stop.set()
        for burner in burners:
            burner.join()


def problems(ids: list[str]) -> list[tuple[str, Callable[[], object], Calls]]:
    """``(name, arrayconv's call, SciPy's calls)`` of every problem timed."""
    found = []
    for case in CASES:
        if case.id not in ids:
            continue
        x, w = _data(case)
        peers, _ = peer_callables(case, x, w)
        scipy_calls = {name: call for name, call in peers.items() if name.startswith("scipy")}
        if case.kind == "image":
            mine = lambda x=x, w=w, case=case: ac.correlate(x, w, case.mode)
        else:
            mine = lambda x=x, w=w, case=case: ac.conv(x, w, padding=case.padding)
        found.append((f"case {case.id}", mine, scipy_calls))
    if "demo" in ids:
        image = star_field(2048, np.random.default_rng(0))
        for name, k in demo_kernels().items():
            flipped = k[::-1, ::-1]
            scipy_calls = {
                "scipy.signal.correlate auto": lambda k=k: scipy.signal.correlate(image, k, "same"),
                "scipy.signal.fftconvolve": lambda f=flipped: scipy.signal.fftconvolve(image, f, "same"),
                "scipy.signal.oaconvolve": lambda f=flipped: scipy.signal.oaconvolve(image, f, "same"),
            }
            if k.size <= 15 * 15:
                scipy_calls["scipy.ndimage.correlate"] = lambda k=k: scipy.ndimage.correlate(image, k, mode="constant")
            found.append((f"demo {name}", lambda k=k: ac.correlate(image, k, "same"), scipy_calls))
    if "rl" in ids:
        rng = np.random.default_rng(1)
        psf = kernels.gaussian(2.0, ndim=2, dtype="float32")
        blurred = np.abs(scipy.signal.fftconvolve(star_field(1024, rng), psf, "same")).astype(np.float32) + 1
        theirs: Calls = {}
        with contextlib.suppress(ImportError):
            from skimage.restoration import richardson_lucy

            theirs["skimage.restoration.richardson_lucy"] = lambda: richardson_lucy(blurred, psf, num_iter=20, clip=False)
        found.append(("richardson-lucy 1024x1024", lambda: ac.richardson_lucy(blurred, psf, 20), theirs))
    return found


# SciPy's calls timed over the rounds: the fastest of their warm-up calls (the others are
# slower by their one timing; some take seconds).
KEPT_PEERS = 2


def time_all(found: list[tuple[str, Callable[[], object], Calls]], repeats: int, condition: str) -> dict[str, dict[str, float]]:
    """Median seconds of arrayconv's call and of SciPy's fastest calls of every problem,
    each problem's calls interleaved after a timed warm-up."""
    medians = {}
    for name, mine, theirs in found:
        mine()
        warm = {n: time_call(call) for n, call in theirs.items()}
        kept = sorted(warm, key=warm.__getitem__)[:KEPT_PEERS]
        calls = {"arrayconv": mine, **{n: theirs[n] for n in kept}}
        medians[name] = interleaved_medians(calls, {n: time_call for n in calls}, repeats)
        print(f"{condition} {name}: " + ", ".join(f"{n} {1e3 * t:.1f}" for n, t in medians[name].items()) + " ms", flush=True)
    return medians


def write(idle: dict, loaded: dict, busy: int, folder: Path, argv: list[str]) -> Path:
    """JSON, Markdown and a plot; returns the Markdown path."""
    date = datetime.date.today().isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"contention-{date}"
    report = {"date": date, "command": command_line("python -m bench.contention", argv), "versions": versions(), "busy_processes": busy, "idle_s": idle, "loaded_s": loaded}
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    lines = [
        *report_head(f"Contention: idle and with every core busy, CPU, {date}", report["command"], report["versions"]),
        f"Loaded: {busy} busy-looping processes, one per core this process may use. Milliseconds, medians of the rounds, each",
        "problem's calls interleaved. SciPy's best: its fastest call in the same conditions (for Richardson-Lucy, scikit-image's).",
        "x idle: loaded over idle. SciPy / arrayconv: SciPy's best loaded time over arrayconv's (over 1: arrayconv faster).",
        "",
        "| problem | arrayconv idle | loaded | x idle | SciPy's best idle | loaded | x idle | SciPy / arrayconv, loaded |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in idle:
        mine_idle, mine_loaded = idle[name]["arrayconv"], loaded[name]["arrayconv"]
        theirs_idle = {n: t for n, t in idle[name].items() if n != "arrayconv"}
        theirs_loaded = {n: t for n, t in loaded[name].items() if n != "arrayconv"}
        if theirs_idle:
            best_idle, best_loaded = min(theirs_idle, key=theirs_idle.__getitem__), min(theirs_loaded, key=theirs_loaded.__getitem__)
            theirs = (
                f"{1e3 * theirs_idle[best_idle]:.1f} ({best_idle}) | {1e3 * theirs_loaded[best_loaded]:.1f} ({best_loaded}) "
                f"| {theirs_loaded[best_loaded] / theirs_idle[best_idle]:.1f} | {theirs_loaded[best_loaded] / mine_loaded:.2f}"
            )
        else:
            theirs = "- | - | - | -"
        lines.append(f"| {name} | {1e3 * mine_idle:.1f} | {1e3 * mine_loaded:.1f} | {mine_loaded / mine_idle:.1f} | {theirs} |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    _plot(idle, loaded, stem.with_suffix(".png"))
    return stem.with_suffix(".md")


def _plot(idle: dict, loaded: dict, path: Path) -> None:
    """Loaded over idle for arrayconv and SciPy's best, per problem."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    names = list(idle)
    mine = [loaded[n]["arrayconv"] / idle[n]["arrayconv"] for n in names]
    theirs = [
        min(t for k, t in loaded[n].items() if k != "arrayconv") / min(t for k, t in idle[n].items() if k != "arrayconv") if len(idle[n]) > 1 else np.nan
        for n in names
    ]
    fig, ax = plt.subplots(figsize=(10, 4))
    at = np.arange(len(names))
    ax.bar(at - 0.2, mine, 0.4, label="arrayconv")
    ax.bar(at + 0.2, theirs, 0.4, label="SciPy's best")
    ax.axhline(3, color="k", linestyle="--", linewidth=0.8)
    ax.set_xticks(at, names, rotation=60, ha="right", fontsize=8)
    ax.set(ylabel="loaded / idle", title="Time with every core busy over idle time")
    ax.legend()
    save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    """Command line; returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", default=",".join([c.id for c in CASES] + ["demo", "rl"]), help="design case ids, 'demo' and 'rl'")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    ids = args.cases.split(",")
    if error := unknown_ids_error([i for i in ids if i not in ("demo", "rl")]):
        parser.error(error)
    found = problems(ids)
    idle = time_all(found, args.repeats, "idle")
    busy = usable_cores()
    with busy_cores(busy):
        loaded = time_all(found, args.repeats, "loaded")
    print(write(idle, loaded, busy, Path(args.out), argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
