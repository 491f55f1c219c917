"""Richardson-Lucy deconvolution of a generated star field with ``arrayconv.richardson_lucy``.

Run: python docs/examples/richardson_lucy.py [SIZE] [ITERATIONS]

Each iteration blurs the estimate with the PSF and applies the blur's adjoint (correlation
with the same PSF) to the ratio image. Both filters are plans made once per call, so the
PSF's spectrum is computed twice in all, not twice per iteration. Compared in time and
result with skimage.restoration.richardson_lucy when scikit-image is installed.
"""

import sys
import time

import numpy as np

import arrayconv as ac


def star_field(size: int, psf: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(truth, observed): point sources on a faint sky, blurred by `psf`, with Poisson noise."""
    truth = np.full((size, size), 1.0, np.float32)
    rows, cols = rng.integers(0, size, (2, size // 2))
    truth[rows, cols] += rng.exponential(2000.0, rows.size).astype(np.float32)
    blurred = ac.convolve(truth, psf, "same", boundary="symm")
    return truth, rng.poisson(np.clip(blurred, 0, None)).astype(np.float32)


def gaussian_psf(sigma: float, half: int) -> np.ndarray:
    r = np.arange(-half, half + 1)
    psf = np.exp(-(r[:, None] ** 2 + r[None, :] ** 2) / (2 * sigma**2))
    return (psf / psf.sum()).astype(np.float32)


def main(size: int = 1024, iterations: int = 30) -> None:
    rng = np.random.default_rng(0)
    psf = gaussian_psf(3.0, 12)
    truth, observed = star_field(size, psf, rng)
    start = time.perf_counter()
    ours = ac.richardson_lucy(observed, psf, iterations)
    seconds = time.perf_counter() - start
    print(f"{size}x{size}, {psf.shape[0]}x{psf.shape[1]} PSF, {iterations} iterations: arrayconv.richardson_lucy {seconds:.2f} s")
    star = np.unravel_index(np.argmax(truth), truth.shape)
    print(f"  brightest star's peak: true {truth[star]:.0f}, observed {observed[star]:.0f}, restored {ours[star]:.0f}")
    try:
        from skimage.restoration import richardson_lucy as skimage_rl
    except ImportError:
        print("  (install scikit-image to compare with skimage.restoration.richardson_lucy)")
        return
    start = time.perf_counter()
    theirs = skimage_rl(observed, psf, num_iter=iterations, clip=False)
    their_seconds = time.perf_counter() - start
    difference = np.abs(ours - theirs).max() / np.abs(theirs).max()
    print(f"  skimage.restoration.richardson_lucy {their_seconds:.2f} s ({their_seconds / seconds:.1f}x the time); "
          f"max difference {difference:.1e} of max|result|")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
