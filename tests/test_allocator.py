"""glibc's malloc thresholds, set only when asked (arrayconv.keep_freed_memory)."""

import json
import os
import platform
import subprocess
import sys

import pytest

from arrayconv._runtime import allocator as _allocator

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")

# A fresh process: minor page faults per call of a 512x512 float32 FFT correlation with a
# 15x15 kernel, after two warm-up calls.
_FAULTS_PER_CALL = """
import json, resource, numpy as np, arrayconv as ac
from arrayconv._runtime.allocator import state
rng = np.random.default_rng(1)
x = rng.standard_normal((512, 512), dtype=np.float32)
w = rng.standard_normal((15, 15), dtype=np.float32)
for _ in range(2):
    ac.correlate(x, w, "same", method="fft")
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    ac.correlate(x, w, "same", method="fft")
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10
print(json.dumps([state(), faults]))
"""


def _faults_per_call(**env: str) -> tuple[str, float]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k not in ("GLIBC_TUNABLES", _allocator.OPT_IN)}
    done = subprocess.run([sys.executable, "-c", _FAULTS_PER_CALL], capture_output=True, text=True, check=True, env={**clean, **env})
    state, faults = json.loads(done.stdout)
    return state, faults


@glibc
def test_thresholds_set_when_asked_stop_the_page_faults_of_repeated_calls():
    """A guest in the user's process: arrayconv leaves malloc alone unless the environment
    (or a call of keep_freed_memory) asks."""
    kept, kept_faults = _faults_per_call(**{_allocator.OPT_IN: "1"})
    default, default_faults = _faults_per_call()
    assert kept == "set" and default.startswith("not set (opt in")
    # glibc 2.36 on the CI machine: about 1800 faults per call by default, under 10 once set.
    assert default_faults > 200, default_faults
    assert kept_faults < default_faults / 10, (kept_faults, default_faults)


def test_what_stops_it(monkeypatch):
    for name in ("MALLOC_TOP_PAD_", "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MALLOC_TOP_PAD_", "0")
    assert _allocator._apply() == "not set (the environment sets malloc's parameters)"
    monkeypatch.delenv("MALLOC_TOP_PAD_")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=0")
    assert _allocator._apply() == "not set (the environment sets malloc's parameters)"
    monkeypatch.delenv("GLIBC_TUNABLES")
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    assert _allocator._apply() == "not set (not glibc)"


def test_set_once_per_process():
    assert _allocator.keep_freed_memory() is _allocator.keep_freed_memory()
