"""Where a benchmark runs: NumPy on the CPU, or CuPy on the current GPU.

A :class:`Device` bundles what a benchmark needs to run the same code on either: the array
module, the SciPy-like signal module of the peers, the timer of one call (wall clock, or
CUDA events on the GPU) and the versions to report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.signal

from .peers import time_call
from .run import versions


@dataclass(frozen=True)
class Device:
    """The array module, peers' signal module, one-call timer and versions of a device."""

    name: str
    xp: Any
    signal: Any
    time_call: Callable[[Callable[[], object]], float]
    versions: Callable[[], dict[str, str]]

    def to_host(self, a: Any) -> np.ndarray:
        """`a` as a NumPy array (copied from the device on the GPU)."""
        return a.get() if self.name == "gpu" else np.asarray(a)

    @property
    def signal_name(self) -> str:
        """The peers' module as users import it."""
        return "cupyx.scipy.signal" if self.name == "gpu" else "scipy.signal"


def device(name: str) -> Device:
    """The CPU (NumPy, scipy.signal, wall clock) or the current GPU (CuPy, cupyx.scipy.signal,
    CUDA events); `name` is 'cpu' or 'gpu'."""
    if name == "cpu":
        return Device("cpu", np, scipy.signal, time_call, versions)
    if name != "gpu":
        msg = f"`name` must be 'cpu' or 'gpu', got {name!r}"
        raise ValueError(msg)
    import cupy
    import cupyx.scipy.signal

    from .case_timer import cuda_events
    from .gpu import gpu_versions

    return Device("gpu", cupy, cupyx.scipy.signal, cuda_events(cupy), lambda: gpu_versions(cupy))


def report_stem(kind: str, device_name: str, date: str) -> str:
    """File stem of a report: ``<kind>-<date>`` on the CPU, ``<kind>-gpu-<date>`` on the GPU
    (so the README's CPU section never picks up a GPU report)."""
    return f"{kind}-gpu-{date}" if device_name == "gpu" else f"{kind}-{date}"


def ms_digits(device_name: str) -> int:
    """Decimals of milliseconds in reports: GPU calls take a fraction of a millisecond."""
    return 3 if device_name == "gpu" else 1
