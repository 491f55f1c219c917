"""Callables for one case: arrayconv's methods and the peers, each as ``(name, fn)``.

Peers (CPU): scipy.signal.correlate (auto, direct, fft), fftconvolve and oaconvolve (with
broadcasting and a channel sum for multichannel cases), scipy.ndimage.correlate
(single-channel cases) and torch conv2d (CPU) when torch is installed. Peers that would
take far too long are listed as skipped with the reason.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import scipy.ndimage
import scipy.signal

import arrayconv as ac

from .cases import Case

# A peer whose direct work exceeds this many multiply-adds is skipped (minutes per call).
MAX_DIRECT_MACS = 4e10
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


def peer_callables(case: Case, x: np.ndarray, w: np.ndarray) -> tuple[dict[str, Callable[[], object]], dict[str, str]]:
    """``(callables, skipped)`` for the peers of `case`."""
    peers: dict[str, Callable[[], object]] = {}
    skipped: dict[str, str] = {}
    big = _macs(case) > MAX_DIRECT_MACS
    if case.kind == "image":
        for method in ("auto", "direct", "fft"):
            if method == "direct" and big:
                skipped["scipy.signal.correlate direct"] = f"{_macs(case):.1e} MACs"
                continue
            peers[f"scipy.signal.correlate {method}"] = lambda m=method: scipy.signal.correlate(x, w, case.mode, m)
        flipped = w[::-1, ::-1]
        peers["scipy.signal.fftconvolve"] = lambda: scipy.signal.fftconvolve(x, flipped, case.mode)
        peers["scipy.signal.oaconvolve"] = lambda: scipy.signal.oaconvolve(x, flipped, case.mode)
        if big:
            skipped["scipy.ndimage.correlate"] = f"{_macs(case):.1e} MACs"
        else:
            # ndimage returns the input's size, centred at k // 2: crop to the 'valid' window.
            window = tuple(
                slice(k // 2, k // 2 + n - k + 1) if case.mode == "valid" else slice(None)
                for n, k in zip(case.x, case.w)
            )
            peers["scipy.ndimage.correlate"] = lambda: scipy.ndimage.correlate(x, w, mode="constant")[window]
    else:
        xpad = np.pad(x, [(0, 0), (0, 0), *[(case.padding, case.padding)] * 2])
        calls = x.shape[0] * w.shape[0]
        for method in ("auto", "direct", "fft"):
            name = f"scipy.signal.correlate {method} (loop over b, o)"
            start = time.perf_counter()
            scipy.signal.correlate(xpad[0], w[0], "valid", method)
            total = calls * (time.perf_counter() - start)
            if total > MAX_LOOP_SECONDS:
                skipped[name] = f"about {total:.0f} s ({calls} calls, one timed)"
                continue
            peers[name] = lambda m=method: _scipy_loop(xpad, w, m)
        flipped = w[:, :, ::-1, ::-1]
        broadcast = x.shape[0] * w.shape[0] * math.prod(xpad.shape[1:]) * 8
        for name, fn in (("fftconvolve", scipy.signal.fftconvolve), ("oaconvolve", scipy.signal.oaconvolve)):
            if broadcast > 8 << 30:
                skipped[f"scipy.signal.{name} (broadcast, channel sum)"] = f"needs {broadcast / 2**30:.0f} GiB"
                continue
            peers[f"scipy.signal.{name} (broadcast, channel sum)"] = lambda f=fn: f(
                xpad[:, None], flipped[None], mode="valid", axes=(-2, -1)
            ).sum(axis=2)
    torch_fn, why = _torch(case, x, w)
    if torch_fn is None:
        skipped["torch conv2d (CPU)"] = why
    else:
        peers["torch conv2d (CPU)"] = torch_fn
    return peers, skipped


def _scipy_loop(xpad: np.ndarray, w: np.ndarray, method: str) -> np.ndarray:
    return np.stack([
        np.stack([scipy.signal.correlate(xb, wo, "valid", method)[0] for wo in w]) for xb in xpad
    ])


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
