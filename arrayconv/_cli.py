"""``arrayconv filter``, ``match``, ``deconvolve`` and ``info``: filter image files, find a
template in one, deconvolve one, report the installation."""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from . import kernels
from ._api.deconvolve import richardson_lucy
from ._api.match import match_template
from ._api.tiled import convolve_into, correlate_into
from ._io.image_files import FITS_SUFFIXES, FORMATS, UsageError, create_output, fits_header, read_image, whole_or_nothing, write_png
from ._runtime import allocator as _allocator
from ._runtime import config as _config
from ._runtime.backend import NUMPY
from ._runtime.cache import cache_info
from ._runtime.machine import blas, cores, cpu_name
from ._runtime.rates import DEFAULT_RATES, cache_dir, rates_for
from ._spec.boundary import EDGE_RULES, edge_rule
from ._spec.nan import NAN_POLICIES
from ._spec.shapes import mode_padding, mode_window

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$", re.IGNORECASE)
_BOUNDARY_HELP = f"how the image continues past its edges: {', '.join(EDGE_RULES)} (default constant: --fillvalue), or an alias (fill, symm, nearest, ...)"
# The library's argument names as each command's operands and flags, for its errors.
_FLAGS = {
    "filter": {"in1": "INPUT", "in2": "--kernel", "out": "OUTPUT", "memory_limit": "--memory-limit", "fillvalue": "--fillvalue", "boundary": "--boundary", "nan": "--nan", "mode": "--mode"},
    "match": {"image": "IMAGE", "template": "TEMPLATE", "mode": "--mode", "boundary": "--boundary", "fillvalue": "--fillvalue"},
    "deconvolve": {"image": "INPUT", "psf": "--psf", "num_iter": "--iterations", "filter_epsilon": "--filter-epsilon", "boundary": "--boundary"},
}


def in_flags(message: str, command: str | None) -> str:
    """A library error's `message` with the arguments it names (```name```, ``name='value'``)
    given as `command`'s operands and flags."""
    for name, flag in _FLAGS.get(command or "", {}).items():
        message = message.replace(f"`{name}`", flag)
        if flag.startswith("--"):  # nan='raise' -> --nan raise
            message = re.sub(rf"\b{name}='([^']*)'", rf"{flag} \1", message)
    return message


def _boundary(text: str) -> str:
    """``--boundary``'s edge rule, by its canonical name; a UsageError for an unknown one."""
    try:
        return edge_rule(text, "--boundary")
    except ValueError as exc:
        raise UsageError(str(exc).replace("`", "")) from None


def add_commands(commands: Any) -> None:
    """Add the `filter`, `match`, `deconvolve` and `info` subcommands to an argparse
    subparsers object."""
    cmd = commands.add_parser("filter", help="correlate (or convolve) an image file (.npy, .tif, .png, .fits) into another")
    cmd.add_argument("input", help="image file: .npy, .tif/.tiff, .png or .fits/.fit/.fts")
    cmd.add_argument("output", help="result file: .npy, .tif/.tiff, .png or .fits/.fit/.fts")
    cmd.add_argument("--kernel", required=True, help=f"{_KERNELS} (a PSF); one size per axis, or one for the plane")
    cmd.add_argument("--convolve", action="store_true", help="convolve (the kernel flipped), as a PSF blurs an image; default: correlate (a matched filter)")
    cmd.add_argument("--mode", default="same", choices=("same", "full", "valid"))
    cmd.add_argument("--boundary", default="constant", type=_boundary, metavar="RULE", help=_BOUNDARY_HELP)
    cmd.add_argument("--fillvalue", default=0.0, type=float, help="the value past the edges with --boundary constant, and of NaNs with --nan fill (default 0)")
    cmd.add_argument("--nan", default="propagate", choices=NAN_POLICIES, help="what a NaN pixel does (default propagate: NaN over its footprint)")
    cmd.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    cmd.add_argument("--memory-limit", default=None, help="bytes for temporaries, e.g. 512M or 2G")
    cmd.add_argument("--no-progress", action="store_true", help="no progress bar")
    cmd.add_argument("--resume", action="store_true", help="continue a run stopped by a crash or an interrupt (one started with --resume), and keep a stopped run's partial result for that")
    cmd = commands.add_parser("match", help="find a template in an image file: the best matches by normalized cross-correlation")
    cmd.add_argument("image", help="image file: .npy, .tif/.tiff, .png or .fits/.fit/.fts")
    cmd.add_argument("template", help="template file, as many dims as the image")
    cmd.add_argument("--matches", type=int, default=5, help="how many of the best matches to print, each more than half a template from the others along some axis (default 5)")
    cmd.add_argument("--scores", default=None, help="also write every window's score to this file (.npy, .tif or FITS)")
    cmd.add_argument("--mode", default="valid", choices=("valid", "same", "full"), help="which windows are scored (default valid: inside the image)")
    cmd.add_argument("--boundary", default="constant", type=_boundary, metavar="RULE", help=_BOUNDARY_HELP)
    cmd.add_argument("--fillvalue", default=0.0, type=float, help="the value past the edges with --boundary constant (default 0)")
    cmd.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    cmd = commands.add_parser("deconvolve", help="Richardson-Lucy deconvolution of an image file by a PSF")
    cmd.add_argument("input", help="image file: .npy, .tif/.tiff, .png or .fits/.fit/.fts")
    cmd.add_argument("output", help="result file: .npy, .tif/.tiff or .fits/.fit/.fts (float32 for images of float16, float32 or integers up to 16 bits, else float64)")
    cmd.add_argument("--psf", required=True, help=f"{_KERNELS}; scaled to sum 1, and placed on the image's axes as --kernel is")
    cmd.add_argument("--iterations", type=int, default=50, help="Richardson-Lucy iterations (default 50, as richardson_lucy)")
    cmd.add_argument("--boundary", default="constant", type=_boundary, metavar="RULE", help=_BOUNDARY_HELP)
    cmd.add_argument("--filter-epsilon", type=float, default=None, help="where the blurred estimate is below this, the ratio is 0 (default: never)")
    cmd.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    cmd.add_argument("--no-progress", action="store_true", help="no progress bar")
    commands.add_parser("info", help="version, backends, devices, memory budget and caches")


def run_filter(args: argparse.Namespace) -> int:
    """Filter ``args.input`` into ``args.output``; raises UsageError for bad files or options."""
    source, target = Path(args.input), Path(args.output)
    check_files([source], [target])
    if target.exists() and target.samefile(source):
        raise UsageError(f"OUTPUT must be another file than INPUT ({target}): its rows would be overwritten while still being read")
    limit = None if args.memory_limit is None else parse_size(args.memory_limit)
    image = read_image(source)
    kernel = make_kernel(args.kernel, tuple(image.shape))
    if args.device == "gpu":
        kernel = _on_gpu(kernel)
    if args.mode == "valid" and any(k > n for n, k in zip(image.shape, kernel.shape)):
        raise UsageError(f"mode 'valid' needs the image {image.shape} at least as large as the kernel {kernel.shape}")
    windows = [mode_window(n, k, args.mode) for n, k in zip(image.shape, kernel.shape)]  # (start, length) in the full result
    shape = tuple(length for _, length in windows)
    dtype = np.result_type(image.dtype, kernel.dtype)
    in_memory = target.suffix.lower() == ".png"
    if in_memory and image.dtype not in (np.uint8, np.uint16):  # clipped to uint8, a float image in [0, 1) would be black
        raise UsageError(f"a .png OUTPUT holds the uint8 or uint16 images PNG stores; {source} holds {image.dtype}: write .npy, .tif or FITS")
    header = None
    if source.suffix.lower() in FITS_SUFFIXES and target.suffix.lower() in FITS_SUFFIXES:
        shifts = tuple((k - 1) // 2 - start for (start, _), k in zip(windows, kernel.shape))  # 'same' starts at (k - 1) // 2
        header = fits_header(source, shifts)
    if in_memory and args.resume:
        raise UsageError(f"--resume needs an OUTPUT written out of core (.npy, .tif or FITS), got {target}")
    options = dict(boundary=args.boundary, fillvalue=args.fillvalue, nan=args.nan, memory_limit=limit, progress=not args.no_progress)
    filter_into = convolve_into if args.convolve else correlate_into
    with whole_or_nothing(target, keep_partial=args.resume) as partial:  # an error or interrupt leaves no half-written OUTPUT
        if in_memory:
            out = filter_into(image, kernel, np.empty(shape, dtype), args.mode, **options)
            write_png(partial, out, image.dtype)
        else:
            out = create_output(partial, shape, dtype, header, reuse=args.resume)
            filter_into(image, kernel, out, args.mode, **options, resume=args.resume)
            out.flush()
        del out
    return 0


def run_match(args: argparse.Namespace) -> int:
    """Print the best matches of ``args.template`` in ``args.image`` (each window's first
    sample in the image, and its score), and write the scores to ``args.scores`` if given;
    raises UsageError for bad files or options."""
    paths = [Path(args.image), Path(args.template)]
    target = None if args.scores is None else Path(args.scores)
    check_files(paths, [] if target is None else [target])
    if target is not None and target.suffix.lower() == ".png":
        raise UsageError(f"--scores {target}: PNG holds no scores in [-1, 1]; write .npy, .tif or FITS")
    if args.matches < 0:
        raise UsageError(f"--matches must be at least 0, got {args.matches}")
    image, template = (read_in_memory(path) for path in paths)
    if args.device == "gpu":
        image, template = _on_gpu(image), _on_gpu(template)
    scores = match_template(image, template, args.mode, boundary=args.boundary, fillvalue=args.fillvalue)
    scores = scores.get() if hasattr(scores, "get") else scores
    if target is not None:
        write_result(target, scores)
    first = [mode_padding(n, k, args.mode)[0] for n, k in zip(image.shape, template.shape)]
    print("window (first sample in the image)\tscore")
    for index, score in best_matches(scores, template.shape, args.matches):
        print(f"{tuple(i - lo for i, lo in zip(index, first))}\t{score:.6f}")
    return 0


def run_deconvolve(args: argparse.Namespace) -> int:
    """Deconvolve ``args.input`` by ``args.psf`` into ``args.output``; raises UsageError for
    bad files or options."""
    source, target = Path(args.input), Path(args.output)
    check_files([source], [target])
    if target.suffix.lower() == ".png":
        raise UsageError(f"{target}: PNG holds no deconvolved (float) image; write .npy, .tif or FITS")
    if args.iterations < 0:
        raise UsageError(f"--iterations must be at least 0, got {args.iterations}")
    image = read_in_memory(source)
    if image.dtype.kind in "iu" and image.dtype.itemsize <= 2:  # counts float32 holds exactly: half float64's memory and time
        image = image.astype(np.float32)
    psf = make_kernel(args.psf, tuple(image.shape))
    total = float(psf.sum(dtype=np.float64))
    if not total > 0:
        raise UsageError(f"--psf {args.psf} sums to {total}; a PSF must sum to more than 0")
    psf = (psf / total).astype(psf.dtype if psf.dtype.kind == "f" else np.float64)
    if args.device == "gpu":
        image, psf = _on_gpu(image), _on_gpu(psf)
    result = richardson_lucy(image, psf, args.iterations, boundary=args.boundary, filter_epsilon=args.filter_epsilon, progress=not args.no_progress)
    header = fits_header(source, (0,) * result.ndim) if source.suffix.lower() in FITS_SUFFIXES and target.suffix.lower() in FITS_SUFFIXES else None
    write_result(target, result.get() if hasattr(result, "get") else result, header)
    return 0


def write_result(target: Path, result: np.ndarray, header: Any = None) -> None:
    """Write the in-memory `result` to the file `target` (with a FITS `header`, if given),
    whole or not at all."""
    with whole_or_nothing(target) as partial:
        out = create_output(partial, result.shape, result.dtype, header)
        out[...] = result
        out.flush()
        del out


def check_files(inputs: list[Path], outputs: list[Path]) -> None:
    """UsageError for a file of a format arrayconv does not read or write, or an input
    that is not there."""
    for path in (*inputs, *outputs):
        if path.suffix.lower() not in FORMATS:
            raise UsageError(f"unsupported format {path.suffix or '(none)'!r} of {path}; use {', '.join(FORMATS)}")
    for path in inputs:
        if not path.is_file():
            raise UsageError(f"input file not found: {path}")


def read_in_memory(path: Path) -> np.ndarray:
    """The image at `path` read into memory, in native byte order (FITS data are big-endian)."""
    image = np.array(read_image(path))
    return image.astype(image.dtype.newbyteorder("="), copy=False)


def best_matches(scores: np.ndarray, template: tuple[int, ...], count: int) -> list[tuple[tuple[int, ...], float]]:
    """The `count` highest `scores` (NaN left out), best first, each more than half a
    template from those before it along some axis (each found blanks the windows within
    half a template of it along every axis)."""
    left = np.where(np.isnan(scores), -np.inf, scores)
    found: list[tuple[tuple[int, ...], float]] = []
    while len(found) < count and left.size and np.isfinite(best := left.max()):
        index = tuple(int(i) for i in np.unravel_index(np.argmax(left), left.shape))
        found.append((index, float(best)))
        left[tuple(slice(max(0, i - k // 2), i + k // 2 + 1) for i, k in zip(index, template))] = -np.inf
    return found


def run_info() -> int:
    """Print the version, the CPU and its BLAS, the cost model's rates, backends, devices,
    memory budget and cache state."""
    import scipy

    from . import __version__

    print(f"arrayconv {__version__} (numpy {np.__version__}, scipy {scipy.__version__})")
    print(f"cpu: {cpu_name()}, {cores()} cores, BLAS {blas()}")
    print(f"cpu: memory budget {_config.memory_limit('cpu') / 2**20:.0f} MiB, {_config.workers()} FFT workers")
    rates = rates_for(NUMPY)
    source = "shipped" if rates == DEFAULT_RATES else f"calibrated ({cache_dir()})"
    print(
        f"cpu: cost model rates {source}: GEMM {rates.gemm_flops / 1e9:.0f} GFLOP/s, copy {rates.stream_bytes / 1e9:.0f} GB/s, "
        f"FFT {rates.fft_flops / 1e9:.0f} GFLOP/s, {rates.call_seconds * 1e6:.1f} us per call"
    )
    print(f"cpu: malloc thresholds for freed memory kept for reuse: {_allocator.state()}")
    print(f"gpu: {_gpu_line()}")
    for name, info in cache_info().items():
        print(f"cache {name}: {info.size}/{info.maxsize} entries, {info.nbytes / 2**10:.0f} KiB, {info.hits} hits, {info.misses} misses")
    return 0


def _gpu_line() -> str:
    try:
        import cupy
    except ImportError:
        return "CuPy not installed (pip install 'arrayconv[cuda13]')"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"CuPy {cupy.__version__}, no usable CUDA device ({exc})"
    names = [cupy.cuda.runtime.getDeviceProperties(i)["name"].decode() for i in range(count)]
    return f"CuPy {cupy.__version__}, {count} device(s): {', '.join(names)}"


def parse_size(text: str) -> int:
    """Bytes from '1048576', '512M', '2G', '1.5GiB'."""
    match = _SIZE.match(text.strip())
    if not match:
        raise UsageError(f"--memory-limit must be bytes like 512M or 2G, got {text!r}")
    number, unit = float(match.group(1)), match.group(2).lower()
    size = int(number * 1024 ** "_kmgt".index(unit or "_"))
    if size < 1:
        raise UsageError(f"--memory-limit must be positive, got {text!r}")
    return size


_KERNELS = "gaussian:SIGMA[,SIGMA...], box:K[,K...], or a .npy or FITS file"


def make_kernel(spec: str, shape: tuple[int, ...]) -> np.ndarray:
    """The kernel of ``gaussian:SIGMA[,SIGMA...]``, ``box:K[,K...]``, or a .npy or FITS
    file, as an array of ``len(shape)`` dims for an image of `shape` (float32 for the named
    kernels).

    A named kernel with one size spans the image's plane (:func:`plane_axes`), with one size
    per axis the last that many of its :func:`spatial_axes` (``gaussian:4,2,2`` on a
    ``(z, y, x)`` stack: sigma 4 along z). So do kernel files of 3 or more dims; files of
    1 or 2 dims span the plane. The image's other axes (colour channels, the planes of a
    stack under a 2-D kernel) are filtered independently.
    """
    name, _, value = spec.partition(":")
    named = not spec.lower().endswith((".npy", *FITS_SUFFIXES))
    if not named:
        kernel = _kernel_file(Path(spec), len(shape))
        lengths = kernel.shape
    elif name in ("gaussian", "box") and (sizes := _sizes(value, float if name == "gaussian" else int)):
        if not all(0 < size < math.inf for size in sizes):
            raise UsageError(f"kernel {spec!r}: each size must be positive and finite, got {value}")
        sizes = sizes * 2 if len(sizes) == 1 and len(shape) >= 2 else sizes  # one size: the plane
        lengths = tuple(2 * int(4 * size + 0.5) + 1 for size in sizes) if name == "gaussian" else tuple(sizes)  # kernels.gaussian's
    else:
        raise UsageError(f"unknown kernel {spec!r}; use {_KERNELS}")
    spatial = spatial_axes(shape)
    if len(lengths) > len(spatial):
        raise UsageError(f"kernel {spec!r} has {len(lengths)} dims, but an image of shape {shape} has {len(spatial)} spatial axes")
    axes = plane_axes(shape)[: len(lengths)] if len(lengths) <= 2 else spatial[-len(lengths) :]
    nbytes, budget = math.prod(lengths) * 4, _config.budget(NUMPY.name)
    if nbytes > budget:  # checked before a named kernel is made: gaussian:1e9 would not fit in memory
        raise UsageError(f"kernel {spec!r} of shape {tuple(lengths)} would take {nbytes} bytes, over the memory budget of {budget}")
    placed = [1] * len(shape)
    for axis, n in zip(axes, lengths):
        placed[axis] = n
    if named:
        kernel = kernels.gaussian(sizes, dtype=np.float32) if name == "gaussian" else kernels.box(sizes, dtype=np.float32)
    return kernel.reshape(placed)


def _kernel_file(path: Path, ndim: int) -> np.ndarray:
    """The kernel in the .npy or FITS file at `path`, in memory and native byte order, of
    at most `ndim` dims."""
    if not path.is_file():
        raise UsageError(f"kernel file not found: {path}")
    kernel = read_in_memory(path)
    if kernel.dtype.kind not in "iuf" or kernel.ndim > ndim:
        raise UsageError(f"kernel file {path} must hold a real array of at most {ndim} dims, got {kernel.dtype} {kernel.shape}")
    return kernel


def _sizes(text: str, kind: type) -> list[Any]:
    """The comma-separated sizes of a named kernel (``2``, ``4,2,2``), or [] when `text` is
    not numbers."""
    try:
        sizes = [kind(part) for part in text.split(",")]
    except ValueError:
        return []
    return sizes


def spatial_axes(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The axes of an image of `shape` a kernel may span: all of them, less a last axis of
    at most 4 samples (colour: RGB, RGBA) on an image of 3 or more dims."""
    ndim = len(shape)
    return tuple(range(ndim - 1 if ndim >= 3 and shape[-1] <= 4 else ndim))


def plane_axes(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The axes of an image of `shape` that a 2-D kernel spans: the last two of its
    :func:`spatial_axes` (both of a 2-D image; the two before a colour axis; the last two of
    a stack of planes, a FITS cube)."""
    return spatial_axes(shape)[-2:]


def _on_gpu(kernel: np.ndarray) -> Any:
    try:
        import cupy

        return cupy.asarray(kernel)
    except Exception as exc:
        raise UsageError(f"--device gpu needs CuPy and a CUDA device: {exc}") from None


def fail(message: str) -> int:
    """Print one error line (the first of `message`: a reader's error may run to several,
    as imageio's list of plugins) and return exit code 2."""
    print(f"arrayconv: error: {message.strip().splitlines()[0] if message.strip() else 'failed'}", file=sys.stderr)
    return 2
