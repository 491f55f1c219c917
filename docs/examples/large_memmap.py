"""Filter a 20000 x 20000 float32 image (1.6 GB on disk) with a 63x63 PSF in 512 MiB.

Run: python docs/examples/large_memmap.py [WORKDIR]   (needs about 3.2 GB of free disk)
"""

import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import arrayconv as ac

SIDE, BUDGET = 20_000, 512 << 20


def anonymous_memory_mib() -> float:
    """This process's private (anonymous) resident memory: RSS without memmapped file pages."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("RssAnon:"))
    return int(line.split()[1]) / 1024


class PeakSampler(threading.Thread):
    """Samples anonymous memory every 20 ms; `peak` holds the highest seen."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak, self.done = anonymous_memory_mib(), threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.02):
            self.peak = max(self.peak, anonymous_memory_mib())


def main(workdir: Path) -> None:
    rng = np.random.default_rng(0)
    image = np.lib.format.open_memmap(workdir / "sky.npy", "w+", np.float32, (SIDE, SIDE))
    for row in range(0, SIDE, 1000):  # written in strips: never the whole image in memory
        image[row : row + 1000] = rng.standard_normal((1000, SIDE), dtype=np.float32)
    image.flush()
    r = np.arange(-31, 32)
    psf = np.exp(-(r[:, None] ** 2 + r[None, :] ** 2) / (2 * 8.0**2)).astype(np.float32)
    psf /= psf.sum()

    image = np.load(workdir / "sky.npy", mmap_mode="r")
    result = np.lib.format.open_memmap(workdir / "smooth.npy", "w+", np.float32, image.shape)
    before, sampler = anonymous_memory_mib(), PeakSampler()
    sampler.start()
    start = time.perf_counter()
    ac.correlate_into(image, psf, result, "same", boundary="symm", memory_limit=BUDGET)
    result.flush()
    seconds = time.perf_counter() - start
    sampler.done.set()
    sampler.join()

    # spot check: a 600 x 600 window against the in-memory result on the same rows
    rows, cols = slice(9_000, 9_600), slice(12_000, 12_600)
    window = np.asarray(image[8_969:9_631, 11_969:12_631], dtype=np.float64)
    expected = ac.correlate(window, psf.astype(np.float64), "valid")
    error = np.abs(result[rows, cols] - expected).max() / np.abs(expected).max()
    print(f"{SIDE}x{SIDE} float32 with a 63x63 PSF: {seconds:.1f} s, budget {BUDGET >> 20} MiB, "
          f"anonymous memory {before:.0f} MiB before, peak {sampler.peak:.0f} MiB during; "
          f"relative error {error:.1e}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
