"""Callables for one case: arrayconv's methods and the peers, each as ``(name, fn)``.

Peers (CPU): scipy.signal.correlate (auto, direct, fft), fftconvolve and oaconvolve (with
broadcasting and a channel sum for multichannel cases), scipy.ndimage.correlate
(single-channel cases) and torch conv2d (CPU) when torch is installed. Peers that would
take far too long are listed as skipped with the reason.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable

import numpy as np
import scipy.ndimage
import scipy.signal

import arrayconv as ac

from .cases import Case

# A peer whose direct work exceeds this many multiply-adds is skipped (minutes per call).
MAX_DIRECT_MACS = 4e10
# The quick run's cap: SciPy's direct sums on cases c and g15 (3-4e9) took 39-52 s a call,
# most of the quick run's four minutes, and are never the fastest peer there.
QUICK_MAX_DIRECT_MACS = 1e9
# SciPy's per-(b, o) loops whose total, extrapolated from one call, exceeds this are skipped.
MAX_LOOP_SECONDS = 20.0


def _macs(case: Case) -> int:
    if case.kind == "image":
        return math.prod(case.x) * math.prod(case.w)
    b, c, h, w = case.x
    return b * case.w[0] * c * math.prod(case.w[2:]) * h * w


def arrayconv_callables(case: Case, x: np.ndarray, w: np.ndarray) -> dict[str, Callable[[], object]]:
    """arrayconv 'auto' and each method (methods estimated over a minute are left out)."""
    out: dict[str, Callable[[], object]] = {}
    for method in ("auto", *ac.METHODS):
        if case.kind == "image":
            out[f"arrayconv {method}"] = lambda m=method: ac.correlate(x, w, case.mode, m)
        else:
            out[f"arrayconv {method}"] = lambda m=method: ac.conv(x, w, padding=case.padding, method=m)
    return out


def peer_callables(
    case: Case, x: np.ndarray, w: np.ndarray, max_direct_macs: float = MAX_DIRECT_MACS
) -> tuple[dict[str, Callable[[], object]], dict[str, str]]:
    """``(callables, skipped)`` for the CPU peers of `case`: SciPy (its direct sums up to
    `max_direct_macs` multiply-adds) and torch (CPU)."""
    peers, skipped = scipy_peers(
        case, x, w, signal=scipy.signal, ndimage=scipy.ndimage, xp=np, labels=("scipy.signal.", "scipy.ndimage."),
        methods=("auto", "direct", "fft"), time_call=time_call, max_direct_macs=max_direct_macs,
    )
    torch_fn, why = _torch(case, x, w)
    if torch_fn is None:
        skipped["torch conv2d (CPU)"] = why
    else:
        peers["torch conv2d (CPU)"] = torch_fn
    return peers, skipped


def scipy_peers(  # type: ignore[no-untyped-def]
    case: Case, x, w, *, signal, ndimage, xp, labels: tuple[str, str], methods: tuple[str, ...],
    time_call: Callable[[Callable[[], object]], float], max_direct_macs: float,
) -> tuple[dict[str, Callable[[], object]], dict[str, str]]:
    """``(callables, skipped)`` of a SciPy-like library (scipy or cupyx.scipy) on `case`.

    Single-channel cases: ``signal.correlate`` with each of `methods`, fftconvolve,
    oaconvolve and ``ndimage.correlate`` (cropped to 'valid' where needed); direct sums
    over `max_direct_macs` are skipped. Multichannel cases: ``signal.correlate`` looped
    over (b, o) (skipped when one call, timed with `time_call`, extrapolates past
    :data:`MAX_LOOP_SECONDS`), and fftconvolve/oaconvolve broadcast with a channel sum
    (skipped past 8 GiB). `labels` prefix the names of the signal and ndimage callables.
    """
    signal_label, ndimage_label = labels
    peers: dict[str, Callable[[], object]] = {}
    skipped: dict[str, str] = {}
    big = _macs(case) > max_direct_macs
    if case.kind == "image":
        for method in methods:
            if method == "direct" and big:
                skipped[f"{signal_label}correlate direct"] = f"{_macs(case):.1e} MACs, over {max_direct_macs:.0e}"
                continue
            peers[f"{signal_label}correlate {method}"] = lambda m=method: signal.correlate(x, w, case.mode, m)
        flipped = w[::-1, ::-1]
        peers[f"{signal_label}fftconvolve"] = lambda: signal.fftconvolve(x, flipped, case.mode)
        peers[f"{signal_label}oaconvolve"] = lambda: signal.oaconvolve(x, flipped, case.mode)
        if big:
            skipped[f"{ndimage_label}correlate"] = f"{_macs(case):.1e} MACs, over {max_direct_macs:.0e}"
        else:
            # ndimage returns the input's size, centred at k // 2: crop to the 'valid' window.
            window = tuple(
                slice(k // 2, k // 2 + n - k + 1) if case.mode == "valid" else slice(None)
                for n, k in zip(case.x, case.w)
            )
            peers[f"{ndimage_label}correlate"] = lambda: ndimage.correlate(x, w, mode="constant")[window]
        return peers, skipped
    xpad = xp.pad(x, [(0, 0), (0, 0), *[(case.padding, case.padding)] * 2])
    calls = x.shape[0] * w.shape[0]
    for method in methods:
        name = f"{signal_label}correlate {method} (loop over b, o)"
        total = calls * time_call(lambda m=method: signal.correlate(xpad[0], w[0], "valid", m))
        if total > MAX_LOOP_SECONDS:
            skipped[name] = f"about {total:.0f} s ({calls} calls, one timed)"
            continue
        peers[name] = lambda m=method: xp.stack([
            xp.stack([signal.correlate(xb, wo, "valid", m)[0] for wo in w]) for xb in xpad
        ])
    flipped = w[:, :, ::-1, ::-1]
    broadcast = x.shape[0] * w.shape[0] * math.prod(xpad.shape[1:]) * 8
    for name, fn in (("fftconvolve", signal.fftconvolve), ("oaconvolve", signal.oaconvolve)):
        if broadcast > 8 << 30:
            skipped[f"{signal_label}{name} (broadcast, channel sum)"] = f"needs {broadcast / 2**30:.0f} GiB"
            continue
        peers[f"{signal_label}{name} (broadcast, channel sum)"] = lambda f=fn: f(
            xpad[:, None], flipped[None], mode="valid", axes=(-2, -1)
        ).sum(axis=2)
    return peers, skipped


def time_call(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn()`` takes (wall clock)."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def installed_versions(packages: dict[str, str]) -> dict[str, str]:
    """The versions of those of `packages` (name: module) that are installed."""
    found = {}
    for name, module in packages.items():
        try:
            found[name] = __import__(module).__version__
        except ImportError:
            pass
    return found


def interleaved_medians(calls: dict[str, Callable[[], object]], timers: dict[str, Callable[[Callable[[], object]], float]], repeats: int) -> dict[str, float]:
    """The median seconds of each of `calls` over `repeats` rounds, each timed by its own
    entry of `timers`, all of them once a round in a new order (none always first)."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    for round_ in range(repeats):
        random.Random(round_).shuffle(order)
        for name in order:
            times[name].append(timers[name](calls[name]))
    return {name: statistics.median(t) for name, t in times.items()}


def _torch(case: Case, x: np.ndarray, w: np.ndarray) -> tuple[Callable[[], object] | None, str]:
    try:
        import torch
    except ImportError:
        return None, "torch is not installed"
    tx, tw = torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(np.ascontiguousarray(w))
    if case.kind == "image":
        tx, tw = tx[None, None], tw[None, None]
        padding = "valid" if case.mode == "valid" else "same"
    else:
        padding = case.padding

    def run() -> object:
        with torch.no_grad():
            return torch.nn.functional.conv2d(tx, tw, padding=padding)

    return run, ""
