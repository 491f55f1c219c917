"""What the CPU side of this machine is: the processor, the cores this process may use,
and the BLAS that numpy's matrix products run in (reported by ``arrayconv info`` and by
every benchmark report)."""

from __future__ import annotations

import math
import os
import platform
from pathlib import Path

import numpy as np

from .cache import LRUCache

_found = LRUCache("cpu_features", maxsize=2)


def _cpuinfo(field: str) -> str | None:
    """The first value of `field` in Linux's /proc/cpuinfo; None where there is none."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.split(":", 1)[0].strip() == field), None)


def cpu_name() -> str:
    """The CPU's model name, and whether it has AVX-512 (Linux's /proc/cpuinfo)."""
    name = _cpuinfo("model name") or platform.processor() or "unknown"
    return f"{name} (AVX-512)" if _avx512() else name


def wide_vectors() -> bool:
    """Whether the CPU has 32 vector registers (AVX-512, or arm64) rather than AVX2's 16."""
    return _found.get_or_make("wide_vectors", lambda: platform.machine().lower() in ("arm64", "aarch64") or _avx512())


# Linux's description of the caches of the first CPU, one folder a cache.
CPU_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")
# A core's second cache level where the OS does not say (as on most CPUs of the last years).
L2_BYTES = 1 << 20


def l2_bytes() -> int:
    """Bytes of one core's second cache level (Linux's sysfs), else :data:`L2_BYTES`."""
    return _found.get_or_make("l2_bytes", _read_l2_bytes)


def _read_l2_bytes() -> int:
    """The size of the data or unified cache of level 2 in :data:`CPU_CACHES`."""
    units = {"K": 1 << 10, "M": 1 << 20}
    for folder in sorted(CPU_CACHES.glob("index*")):
        try:
            level, kind, size = ((folder / name).read_text().strip() for name in ("level", "type", "size"))
            if level == "2" and kind in ("Data", "Unified"):
                return int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
        except (OSError, ValueError):
            continue
    return L2_BYTES


def _avx512() -> bool:
    """Whether the CPU has AVX-512: /proc/cpuinfo's flags, else llvmlite's where numba is installed."""
    flags = _cpuinfo("flags")
    if flags is not None:
        return "avx512f" in flags.split()
    try:
        from llvmlite import binding

        return bool(binding.get_host_cpu_features().get("avx512f", False))
    except (ImportError, RuntimeError):
        return False


def usable_cores() -> int:
    """Cores this process may run on: its CPU affinity where the OS keeps one (a batch
    job's allocation, ``taskset``), else all of the machine's; fewer where a cgroup's CPU
    quota allows fewer (a container's ``--cpus``, a Kubernetes limit)."""
    found = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    return max(1, min(found, math.ceil(quota))) if quota else found


# cgroup v2's CPU limit ("QUOTA PERIOD" or "max PERIOD"), and cgroup v1's two files.
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
CGROUP_V1 = (Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us"))


def cgroup_cpu_quota() -> float | None:
    """The CPUs' worth of time this process's cgroup may use (quota over period), or None
    where there is no limit or no cgroup file to read."""
    try:
        quota, period = CGROUP_CPU_MAX.read_text().split()[:2]
    except (OSError, ValueError):
        try:
            quota, period = (path.read_text().strip() for path in CGROUP_V1)
        except (OSError, ValueError):
            return None
    try:
        share = int(quota) / int(period)
    except (ValueError, ZeroDivisionError):  # "max": no limit
        return None
    return share if share > 0 else None  # v1's -1: no limit


def cores() -> str:
    """The cores this process may run on, and the machine's where it may run on fewer."""
    usable, total = usable_cores(), os.cpu_count() or 1
    return str(usable) if usable == total else f"{usable} of {total}"


def blas() -> str:
    """numpy's BLAS: its name and version, the kernels it runs and its threads (from
    threadpoolctl, where installed), and an ``OPENBLAS_CORETYPE`` that overrides its choice
    of kernels: on an AVX-512 machine, OpenBLAS held to its Haswell (AVX2) kernels runs
    float32 GEMMs at about half the speed, which moves every comparison with torch."""
    try:
        from threadpoolctl import threadpool_info

        libraries = [lib for lib in threadpool_info() if lib.get("user_api") == "blas"]
    except ImportError:
        libraries = []
    if libraries:  # numpy's own, where SciPy loaded another
        lib = next((lib for lib in libraries if "numpy" in lib.get("filepath", "")), libraries[0])
        text = f"{lib['internal_api']} {lib['version']} ({lib.get('architecture') or 'unknown'} kernels, {lib['num_threads']} threads)"
    else:
        config = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        text = f"{config.get('name', 'unknown')} {config.get('version', '')}".strip()
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    return f"{text}, OPENBLAS_CORETYPE={coretype}" if coretype else text
