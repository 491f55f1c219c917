"""Run the GPU benchmark: arrayconv on CuPy against cupyx.scipy and torch/cuDNN.

Usage: ``python -m bench.gpu [--cases a,b,...] [--repeats N] [--out DIR]``.
Each callable is timed with CUDA events around one call, interleaved with the others,
after two warm-up calls; the median is reported. torch runs with
``cudnn.benchmark=True``, once in full FP32 (TF32 off) and once with TF32 allowed.
Writes ``gpu-<device>-<date>.json``, ``.md`` and ``.png`` into DIR (default bench/results).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

import arrayconv as ac
from arrayconv._runtime.rates import gpu_ceilings

from .case_timer import cuda_events
from .cases import CASES, Case
from .peers import _macs, scipy_peers
from .run import _data, _reference, command_line, plot, report_head, versions

# Calls slower than this (seconds) are timed this few times.
SLOW_SECONDS, SLOW_REPEATS = 0.5, 3
TORCH_FP32, TORCH_TF32 = "torch cuDNN (FP32)", "torch cuDNN (TF32)"


def _arrayconv(case: Case, x, w) -> dict[str, Callable[[], object]]:  # type: ignore[no-untyped-def]
    """arrayconv 'auto' and each method; for case f, 'auto' is patch_conv on the stack."""
    runs: dict[str, Callable[[], object]] = {}
    prefix = "arrayconv conv " if case.id == "f" else "arrayconv "
    for method in ("auto", *ac.METHODS):
        if case.kind == "image":
            runs[prefix + method] = lambda m=method: ac.correlate(x, w, case.mode, m)
        else:
            runs[prefix + method] = lambda m=method: ac.conv(x, w, padding=case.padding, method=m)
    if case.id == "f":
        stack = x.reshape(1, *x.shape)
        runs["arrayconv auto"] = lambda: ac.patch_conv(stack, w, padding=case.padding)
    return runs


def _peers(case: Case, x, w, cp, time_call) -> tuple[dict[str, Callable[[], object]], dict[str, str]]:  # type: ignore[no-untyped-def]
    import cupyx.scipy.ndimage
    import cupyx.scipy.signal

    peers, skipped = scipy_peers(
        case, x, w, signal=cupyx.scipy.signal, ndimage=cupyx.scipy.ndimage, xp=cp, labels=("cupyx ", "cupyx ndimage."),
        methods=("fft", "direct"), time_call=time_call, max_direct_macs=math.inf,
    )
    peers.update(_torch(case, x, w))
    return peers, skipped


def _torch(case: Case, x, w) -> dict[str, Callable[[], object]]:  # type: ignore[no-untyped-def]
    try:
        import torch
    except ImportError:
        return {}
    if not torch.cuda.is_available():  # a CPU build of torch cannot take CuPy's arrays
        return {}
    torch.backends.cudnn.benchmark = True
    tx, tw = torch.from_dlpack(x), torch.from_dlpack(w)
    padding: int | str = case.padding
    if case.kind == "image":
        tx, tw = tx[None, None], tw[None, None]
        padding = "valid" if case.mode == "valid" else "same"

    def conv(tf32: bool) -> Callable[[], object]:
        def run() -> object:
            torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = tf32
            with torch.no_grad():
                return torch.nn.functional.conv2d(tx, tw, padding=padding)

        return run

    runs = {TORCH_FP32: conv(False), TORCH_TF32: conv(True)}
    if case.id == "f":  # unfold + matmul, the usual hand-written patch path
        flat = tw.reshape(tw.shape[0], -1)

        def unfold() -> object:
            torch.backends.cuda.matmul.allow_tf32 = False
            cols = torch.nn.functional.unfold(tx, tw.shape[2:], padding=case.padding)
            return (flat @ cols).reshape(tx.shape[0], tw.shape[0], *tx.shape[2:])

        runs["torch unfold + matmul (FP32)"] = unfold
    return runs


def _error(result: object, ref: np.ndarray, cp) -> float:  # type: ignore[no-untyped-def]
    got = result.cpu().numpy() if hasattr(result, "cpu") else cp.asnumpy(result)
    return float(np.max(np.abs(got.reshape(ref.shape) - ref)) / np.max(np.abs(ref)))


def run_case(case: Case, repeats: int, ceilings: dict[str, float], cp) -> dict:  # type: ignore[no-untyped-def]
    """Time every callable of `case` on the GPU, interleaved, after two warm-ups each."""
    time_call = cuda_events(cp)
    x_host, w_host = _data(case)
    ref = _reference(case, x_host, w_host)
    x, w = cp.asarray(x_host), cp.asarray(w_host)
    mine = _arrayconv(case, x, w)
    peers, skipped = _peers(case, x, w, cp, time_call)
    runs = {**mine, **peers}
    errors, times = {}, {}
    for name, fn in list(runs.items()):
        try:
            errors[name] = _error(fn(), ref, cp)
        except Exception as error:  # a failing callable is reported, not fatal to the run
            skipped[name] = f"raised {type(error).__name__}: {str(error)[:200]}"
            del runs[name]
            continue
        times[name] = [time_call(fn)]
    order = list(runs.items())
    for repeat in range(repeats):
        random.Random(repeat).shuffle(order)  # no callable always runs first (or after the same one)
        for name, fn in order:
            if len(times[name]) <= (repeats if times[name][0] < SLOW_SECONDS else SLOW_REPEATS):
                times[name].append(time_call(fn))
    medians = {n: statistics.median(t[1:]) for n, t in times.items()}
    best_peer = min((n for n in peers if n in medians), key=medians.__getitem__)
    auto = medians["arrayconv auto"]
    flops = 2 * (_macs(case) if case.kind == "image" else ref.size * case.w[1] * math.prod(case.w[2:]))
    io_bytes = x_host.nbytes + w_host.nbytes + ref.size * 4
    return {
        "id": case.id,
        "case": case.__dict__,
        "median_s": medians,
        "error": errors,
        "skipped": skipped,
        "best_peer": best_peer,
        "ratio_best_peer_over_auto": medians[best_peer] / auto,
        "ratio_cudnn_fp32_over_auto": medians.get(TORCH_FP32, math.nan) / auto,
        "flops": flops,
        "io_bytes": io_bytes,
        "floor_s": max(flops / ceilings["fp32_flops"], io_bytes / ceilings["copy_bytes"]),
        "chosen": _chosen(case, x, w),
    }


def _chosen(case: Case, x, w) -> str:  # type: ignore[no-untyped-def]
    if case.id == "f":
        return "patch kernel"
    if case.kind == "image":
        return ac.choose_method(x, w, mode=case.mode).method
    return ac.choose_method(x, w, op="conv", padding=case.padding).method


def ceilings(cp) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The device's measured FP32 GEMM rate (8192^3, TF32 off) and copy bandwidth (1 GiB):
    :func:`arrayconv._runtime.rates.gpu_ceilings`, the probes of ``calibrate('gpu')``."""
    fp32_flops, copy_bytes = gpu_ceilings(cp)
    return {"fp32_flops": fp32_flops, "copy_bytes": copy_bytes}


def write_markdown(report: dict, path: Path) -> None:
    c = report["ceilings"]
    lines = [
        *report_head(f"arrayconv GPU benchmark, {report['date']}", report["command"], report["versions"]),
        f"Measured ceilings: FP32 GEMM {c['fp32_flops'] / 1e12:.1f} TFLOP/s (8192^3, TF32 off), "
        f"copy {c['copy_bytes'] / 1e9:.0f} GB/s (1 GiB, read + write).  ",
        f"CUDA events around each call, median of {report['repeats']} interleaved repeats (order shuffled "
        "each round) after two "
        f"warm-ups (calls over {SLOW_SECONDS} s: {SLOW_REPEATS} repeats). float32 data. Error: "
        "max |y - ref| / max |ref| against a float64 CPU result. Achieved rates count the direct "
        "sum's FLOPs and the input + kernel + output bytes, whatever the algorithm.",
        "",
        "## Summary",
        "",
        "| case | arrayconv auto (ms) | chosen | best peer | best peer (ms) | ratio best peer / auto | "
        "cuDNN FP32 (ms) | ratio cuDNN FP32 / auto | floor (ms) | achieved TFLOP/s | achieved GB/s | auto error |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["cases"]:
        t = r["median_s"]["arrayconv auto"]
        lines.append(
            f"| {r['id']} | {t * 1e3:.3f} | {r['chosen']} | {r['best_peer']} | {r['median_s'][r['best_peer']] * 1e3:.3f} | "
            f"**{r['ratio_best_peer_over_auto']:.2f}** | {r['median_s'].get(TORCH_FP32, math.nan) * 1e3:.3f} | "
            f"**{r['ratio_cudnn_fp32_over_auto']:.2f}** | {r['floor_s'] * 1e3:.3f} | {r['flops'] / t / 1e12:.1f} | "
            f"{r['io_bytes'] / t / 1e9:.0f} | {r['error']['arrayconv auto']:.1e} |"
        )
    lines += ["", "## Every callable", ""]
    for r in report["cases"]:
        lines += [f"### {r['id']}: {r['case']}", "", "| callable | median (ms) | error |", "|---|---|---|"]
        for name, t in sorted(r["median_s"].items(), key=lambda kv: kv[1]):
            lines.append(f"| {name} | {t * 1e3:.3f} | {r['error'][name]:.1e} |")
        lines += [f"| {name} | skipped: {why} | |" for name, why in r["skipped"].items()]
        lines.append("")
    path.write_text("\n".join(lines) + "\n")


def gpu_versions(cp) -> dict[str, str]:  # type: ignore[no-untyped-def]
    info = versions()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    info["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    info["cupy"] = cp.__version__
    info["cuda runtime"] = str(cp.cuda.runtime.runtimeGetVersion())
    try:
        import torch

        info["torch"] = f"{torch.__version__} (cuDNN {torch.backends.cudnn.version()})"
    except ImportError:
        info["torch"] = "not installed"
    return info


def main(argv: list[str] | None = None) -> int:
    """Run the GPU benchmark; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__)
    parser.add_argument("--cases", help="comma-separated case ids (default: all)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    import cupy as cp

    chosen = args.cases.split(",") if args.cases else [c.id for c in CASES]
    limits = ceilings(cp)
    info = gpu_versions(cp)
    results = []
    for case in (c for c in CASES if c.id in chosen):
        results.append(run_case(case, args.repeats, limits, cp))
        r = results[-1]
        print(
            f"case {case.id}: auto {r['median_s']['arrayconv auto'] * 1e3:.3f} ms ({r['chosen']}), best peer "
            f"{r['best_peer']} {r['median_s'][r['best_peer']] * 1e3:.3f} ms, ratio {r['ratio_best_peer_over_auto']:.2f}, "
            f"cuDNN FP32 ratio {r['ratio_cudnn_fp32_over_auto']:.2f}",
            flush=True,
        )
        report = {
            "date": datetime.date.today().isoformat(),
            "command": command_line("python -m bench.gpu", argv),
            "versions": info,
            "ceilings": limits,
            "repeats": args.repeats,
            "cases": results,
        }
        device = info["gpu"].replace("NVIDIA ", "").replace(" ", "-").lower()
        stem = Path(args.out) / f"gpu-{device}-{report['date']}"
        stem.parent.mkdir(parents=True, exist_ok=True)
        stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
        write_markdown(report, stem.with_suffix(".md"))
    plot(report, stem.with_suffix(".png"), third=TORCH_FP32, where=f"GPU ({info['gpu']})")
    print(f"wrote {stem}.md, .json and .png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
