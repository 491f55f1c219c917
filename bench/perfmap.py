"""Names for numba's machine code in a Linux ``perf`` profile.

Usage: ``python -m bench.perfmap [--seconds 6] [--workers 1] KERNEL SHAPE`` (``3x3
1024x1024``, ``gauss2 256x256x256``, ...), then ``perf report -i perf.data --sort sym``.
It correlates a random float32 array of SHAPE with KERNEL (random taps of that shape, or a
Gaussian of sigma N, ``gaussN``) once, writes ``/tmp/perf-PID.map`` naming every compiled
function of arrayconv's generated loops, and correlates it again in a loop for `--seconds`
under ``perf record`` attached to it (``perf report`` reads that map). numba's code is
JIT-compiled: without the map, ``perf`` shows bare addresses. The names come from each
function's object code, which numba keeps only for code it compiled in this process: the
loops are compiled into a fresh cache folder (``NUMBA_CACHE_DIR``, set by this command for
the process it profiles).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def map_lines(modules: dict[str, Any]) -> list[str]:
    """``START SIZE NAME`` lines (hex) for every function of the compiled libraries of the
    numba dispatchers in `modules` (name -> module) that hold their object code."""
    entries, seen = [], set()
    for module_name, module in modules.items():
        for name in dir(module):
            dispatcher = getattr(module, name)
            for result in getattr(dispatcher, "overloads", {}).values():
                library = result.library
                if id(library) in seen:
                    continue
                seen.add(id(library))
                try:
                    code = library._get_compiled_object()
                except Exception:  # loaded from numba's cache: no object code kept
                    continue
                symbols = _symbols(code)
                own = result.fndesc.llvm_func_name
                if own not in symbols:
                    continue
                base = library.get_pointer_to_function(own) - symbols[own][0]
                entries += [(base + at, size, f"{module_name}:{symbol}") for symbol, (at, size) in symbols.items()]
    return [f"{at:x} {size:x} {name}" for at, size, name in sorted(entries)]


def _symbols(code: bytes) -> dict[str, tuple[int, int]]:
    """Offsets and sizes of the functions defined in the object file `code` (``nm``)."""
    with tempfile.NamedTemporaryFile(suffix=".o") as obj:
        obj.write(code)
        obj.flush()
        listing = subprocess.run(["nm", "-S", "--defined-only", obj.name], capture_output=True, text=True, check=True).stdout
    table = {}
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            table[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
    return table


def write_map() -> Path:
    """Write ``/tmp/perf-PID.map`` for arrayconv's generated loops in this process."""
    modules = {name: module for name, module in sys.modules.items() if name.startswith("arrayconv_")}
    path = Path(f"/tmp/perf-{os.getpid()}.map")
    path.write_text("".join(line + "\n" for line in map_lines(modules)))
    return path


def _kernel(spec: str, ndim: int) -> np.ndarray:
    from arrayconv import kernels

    if spec.startswith("gauss"):
        return kernels.gaussian(float(spec[5:]), ndim=ndim, dtype=np.float32)
    return np.random.default_rng(1).random(tuple(int(n) for n in spec.split("x")), dtype=np.float32)


def _profiled(kernel: str, shape: str, seconds: float, workers: int) -> None:
    """A first call (compiling the loops), the map, then ``perf record`` attached to this
    process while it calls again for `seconds`: the compiling is left out of the profile."""
    import arrayconv as ac

    x = np.random.default_rng(0).random(tuple(int(n) for n in shape.split("x")), dtype=np.float32)
    k, out = _kernel(kernel, x.ndim), np.empty_like(x)
    with ac.config(workers=workers):
        ac.correlate(x, k, mode="same", out=out)
        print(f"map: {write_map()}", flush=True)
        recorder = subprocess.Popen(["perf", "record", "-q", "-p", str(os.getpid()), "-o", "perf.data"])
        time.sleep(0.5)  # perf attached
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            ac.correlate(x, k, mode="same", out=out)
            calls += 1
        elapsed = time.perf_counter() - start
        recorder.send_signal(signal.SIGINT)
        recorder.wait()
    print(f"{calls} calls, {elapsed / calls * 1e3:.3f} ms each (perf attached); perf report -i perf.data --sort sym")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernel", help="taps' shape (3x3) or a Gaussian's sigma (gauss2)")
    parser.add_argument("shape", help="the array's shape, 1024x1024")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--profiled", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.profiled:
        _profiled(args.kernel, args.shape, args.seconds, args.workers)
        return
    with tempfile.TemporaryDirectory() as cache:
        command = [sys.executable, "-m", "bench.perfmap", args.kernel, args.shape, "--seconds", str(args.seconds), "--workers", str(args.workers), "--profiled"]
        subprocess.run(command, env={**os.environ, "NUMBA_CACHE_DIR": cache}, check=True)


if __name__ == "__main__":
    main()
