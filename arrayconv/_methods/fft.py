"""FFT method: real transforms at fast lengths, channel sum as a per-frequency GEMM.

The padded input is never built: the kernel is placed, flipped and dilated, at the circular
offset that the zero padding would have produced, so the FFT length is the input length
plus the larger of its two paddings (for 'valid', just the input length; for 'full',
``N + K - 1``), rounded up to a fast size. Real inputs use ``rfftn``
and keep their precision (float32 -> complex64). With several input channels per group, the
channel sum is one batched complex GEMM over frequencies, ``(B, Cg) x (Cg, Og)`` (on the CPU
with more than a few outputs per group; else a multiply-add per channel), so only
``B * O`` inverse transforms are needed. Integer inputs are computed in float64.

Periodic padding (``boundary='wrap'``, ``padding_mode='circular'``) is the transform's own
periodicity: along each axis whose length is itself a fast length and holds the kernel,
the transform runs at the input's length with nothing padded, and outputs past one period
are read around it. Along other axes the input is first extended periodically.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._runtime import config as _config
from .._runtime.backend import Array, Backend
from .._runtime.cache import LRUCache
from .._runtime.config import Settings
from .._runtime.fitted import fitted
from .._runtime.rates import ONE_WORKER_FFT_SHARE, Rates
from .._spec.boundary import extend
from .._spec.problem import Problem
from ._registry import Cost, Method, output, register

# Below this many input channels per group, multiply-accumulate beats a batched GEMM.
_GEMM_MIN_CHANNELS = 8
# On the CPU, up to this many output maps per group it beats it with any number of input
# channels: making the spectra frequency-major costs more than the GEMM saves.
_MAC_MAX_OUTPUTS = 4
# Transforms of fewer samples run on one thread: pocketfft's threads cost more than they save.
_THREADED_SAMPLES = 1 << 17
# The model's weights (fitted.json): on the CPU, passes at the stream rate over the spectra
# (placing the kernel's, the data's per batch item, the multiply-add's over the kernel's) and
# the array calls made whatever the size (a call's, and the kernel's form's, which a plan
# or a kept plain call makes once; an overlap-save block makes both). A GPU makes the same calls
# and one pass over each.
_SPECTRUM_PASSES = fitted("fft", "SPECTRUM_PASSES")
_FIXED_CALLS, _FIXED_KERNEL_CALLS = fitted("calls", "A_CALL"), fitted("calls", "KERNEL_FORM")
# Along one axis (1-D signals, batches through `axes`) a share of those calls and of the
# multiply-add's passes, and one pass per item over its spectra (each line goes into its
# transform and out contiguously); several lines transformed by one call run at that share of
# one line's time each (pocketfft transforms lines side by side in SIMD lanes).
_ONE_AXIS_SHARE = fitted("fft", "ONE_AXIS_SHARE")
# The channel sum's per-frequency GEMMs of small (B, Cg) x (Cg, Og) complex matrices reach
# a * B^b * Og^c * Cg^d of the large-GEMM rate; the sum's weight (on a GPU too; in a CPU's
# overlap-save block, in cache: lower).
_SMALL_GEMM_EFFICIENCY = fitted("fft", "SMALL_GEMM_EFFICIENCY")
CONTRACTION_WEIGHT = fitted("fft", "CONTRACTION_WEIGHT")
# A CPU's overlap-save block sums in cache, where GEMMs move their bytes faster (as direct's).
_BLOCK_CONTRACTION_WEIGHT = CONTRACTION_WEIGHT / fitted("direct", "GEMM_CACHE_SPEEDUP")
# On the CPU the channel sum takes at least this many passes over the kernel spectra at the
# stream rate.
_KERNEL_SPECTRA_PASSES = fitted("fft", "KERNEL_SPECTRA_PASSES")
# On the CPU a transform whose maps outgrow the cache runs slower per n log n: counted from the
# bytes of all maps one N-D call transforms, or of one line along one axis.
_CACHE_BYTES, _LINE_CACHE_BYTES = fitted("fft", "CACHE_BYTES"), fitted("fft", "LINE_CACHE_BYTES")
_OUT_OF_CACHE_SLOWDOWN = fitted("fft", "OUT_OF_CACHE_SLOWDOWN")


def work_dtype(problem: Problem) -> np.dtype[Any]:
    """Integers compute in float64; floats and complex keep their precision."""
    return np.dtype(np.float64) if problem.dtype.kind in "iu" else problem.dtype


@dataclass(frozen=True)
class Layout:
    """What the shapes of a problem decide for its transforms (cached per problem).

    Attributes
    ----------
    problem : Problem
        The problem as the transforms solve it (:func:`_periodic`).
    shape : tuple of int
        The FFT lengths (:func:`fft_shape`).
    kernel_bytes, item_bytes : int
        Bytes of the kernel spectra, and of the input + output spectra per batch item.
    pieces : tuple of list of (slice, slice)
        Per axis, the ``(kernel slice, destination slice)`` pairs that place the kernel's
        taps in the circular kernel, at most two (:func:`_placement`).
    """

    problem: Problem
    shape: tuple[int, ...]
    kernel_bytes: int
    item_bytes: int
    pieces: tuple[list[tuple[slice, slice]], ...]


_layouts = LRUCache("fft_layouts", maxsize=256)


def layout(problem: Problem, backend: Backend) -> Layout:
    """The :class:`Layout` of `problem` on `backend` (cached)."""
    return _layouts.get_or_make((problem, backend.name), lambda: _make_layout(problem, backend))


def _make_layout(problem: Problem, backend: Backend) -> Layout:
    p = _periodic(problem, backend)
    real = work_dtype(p).kind != "c"
    shape = tuple(
        n if p.circular and (lo or hi) else backend.fft.next_fast_len(linear_length(p, ax), real=real)
        for ax, (n, lo, hi) in enumerate(zip(p.spatial, p.pad_lo, p.pad_hi))
    )
    n_freq = math.prod(shape[:-1]) * (shape[-1] // 2 + 1 if real else shape[-1])
    per_map = n_freq * (2 * work_dtype(p).itemsize if real else work_dtype(p).itemsize)
    kernel_bytes = p.groups * p.out_per_group * p.in_per_group * per_map
    item_bytes = p.groups * (p.in_per_group + 2 * p.out_per_group) * per_map
    pieces = tuple(_placement(lo % n, k, d, n) for lo, k, d, n in zip(p.pad_lo, p.kernel, p.dilation, shape))
    return Layout(p, shape, kernel_bytes, item_bytes, pieces)


def fft_shape(problem: Problem, backend: Backend) -> tuple[int, ...]:
    """FFT lengths: :func:`linear_length` of each axis, rounded up to a fast size; the
    input's own length along the axes where periodic padding is native (:func:`_periodic`)."""
    return layout(problem, backend).shape


def linear_length(problem: Problem, axis: int) -> int:
    """The shortest circular length along `axis` that gives the zero-padded correlation.

    Output ``n`` reads input samples ``n*stride + m*dilation - lo``, from ``-lo`` up to
    ``N + hi - 1``. In a circular transform of length ``L >= N + max(lo, hi)`` those
    outside ``[0, N)`` all land on the zeros past the input, as they do in the padding:
    so ``L`` need not be the whole padded length ``N + lo + hi`` ('full': ``N + K - 1``,
    not ``N + 2K - 2``). ``L`` also holds every output sample and the dilated kernel.
    """
    p = problem
    n, lo, hi = p.spatial[axis], p.pad_lo[axis], p.pad_hi[axis]
    last_output = (p.out_spatial[axis] - 1) * p.stride[axis]
    extent = (p.kernel[axis] - 1) * p.dilation[axis]
    return max(n + max(lo, hi), last_output + 1, extent + 1)


def _periodic(problem: Problem, backend: Backend) -> Problem:
    """`problem` as the transforms solve it.

    A circular problem keeps its padding along the axes whose length is a fast length and
    holds the dilated kernel: a transform at that length wraps around by itself. Along its
    other padded axes the input is extended periodically first (see :func:`run`), so the
    problem returned has a longer input and no padding there.
    """
    p = problem
    if not p.circular:
        return p
    real = work_dtype(p).kind != "c"
    native = [
        not (lo or hi) or ((k - 1) * d < n and backend.fft.next_fast_len(n, real=real) == n)
        for n, k, d, lo, hi in zip(p.spatial, p.kernel, p.dilation, p.pad_lo, p.pad_hi)
    ]
    if all(native):
        return p
    return replace(
        p,
        spatial=tuple(n if keep else q for n, q, keep in zip(p.spatial, p.padded, native)),
        pad_lo=tuple(lo if keep else 0 for lo, keep in zip(p.pad_lo, native)),
        pad_hi=tuple(hi if keep else 0 for hi, keep in zip(p.pad_hi, native)),
    )


def _transforms(backend: Backend, real: bool):
    """Forward and inverse N-D transforms of `backend`; on the CPU with all workers, or
    one thread for transforms under :data:`_THREADED_SAMPLES` samples."""
    fft = backend.fft
    forward, inverse = (fft.rfftn, fft.irfftn) if real else (fft.fftn, fft.ifftn)
    if backend.name != "numpy":
        return (lambda a, s, axes: forward(a, s=s, axes=axes), lambda a, s, axes: inverse(a, s=s, axes=axes))
    return (
        lambda a, s, axes: forward(a, s=s, axes=axes, workers=_threads(a, s, axes)),
        lambda a, s, axes: inverse(a, s=s, axes=axes, workers=_threads(a, s, axes)),
    )


def _threads(a: Array, s: tuple[int, ...], axes: tuple[int, ...]) -> int:
    """Workers for transforms of `a` along `axes` at lengths `s` (:func:`_transform_workers`)."""
    transforms = a.size // math.prod([a.shape[ax] for ax in axes])
    return _transform_workers(transforms * math.prod(s), _config.workers())


def _transform_workers(samples: int, workers: int) -> int:
    """Workers for CPU transforms of `samples` in all: all `workers`, or one when small."""
    return workers if samples >= _THREADED_SAMPLES else 1


def prepare(w: Array, problem: Problem, backend: Backend) -> Array:
    """Spectrum of the kernel placed for a circular convolution, in the channel sum's layout.

    The padded correlation ``y[n] = sum_m x[n + m*d - lo] w[m]`` is the circular convolution
    of `x` with ``u``, where ``u[(lo - m*d) mod L] = w[m]``: indexed assignments place
    the kernel flipped, dilated and shifted by the padding, and no padded input is needed
    (with ``L`` the input length, the padding is periodic).
    The result is ``(G, Og, Cg, *freq)``, or frequency-major ``(G, F, Cg, Og)`` when the
    channel sum is a batched GEMM. On the CPU the latter comes from transforming the kernel
    with its axes moved to ``(G, *kernel, Cg, Og)``: transposing the spectra instead took
    most of the time of making them (64-256 channels: plans built in 0.33-0.46 of the time).
    """
    fixed = layout(problem, backend)
    p = fixed.problem
    cpu, gemm = backend.name == "numpy", _sums_by_gemm(p, backend)
    if cpu and gemm:
        # the kernel's axes moved to (G, *kernel, Cg, Og) first, so its transforms along the
        # spatial axes give the frequency-major layout with no transpose of the spectra
        nd = len(fixed.shape)
        grouped = w.reshape(p.groups, p.out_per_group, p.in_per_group, *w.shape[2:])
        moved = grouped.transpose(0, *range(3, 3 + nd), 2, 1)
        spectrum = _spectrum_by_axis(moved, fixed, backend, first_axis=1)
        return spectrum.reshape(p.groups, -1, p.in_per_group, p.out_per_group)
    spectrum = (_spectrum_by_axis if cpu else _spectrum_at_once)(w, fixed, backend)
    spectrum = spectrum.reshape(p.groups, p.out_per_group, p.in_per_group, *spectrum.shape[2:])
    if not gemm:
        return spectrum
    # a GPU's one N-D transform, transposed to frequency-major
    n_freq = math.prod(spectrum.shape[3:])
    flat = spectrum.reshape(p.groups, p.out_per_group, p.in_per_group, n_freq)
    return backend.xp.ascontiguousarray(flat.transpose(0, 3, 2, 1))


def _spectrum_at_once(w: Array, fixed: Layout, backend: Backend) -> Array:
    """The placed kernel's spectrum by one N-D transform of the whole zero-filled grid: on
    a GPU one launch, where per-axis transforms would take one each."""
    nd = len(fixed.shape)
    placed = backend.xp.zeros((*w.shape[:2], *fixed.shape), dtype=w.dtype)
    for combo in itertools.product(*fixed.pieces):
        placed[(Ellipsis, *(dest for _, dest in combo))] = w[(Ellipsis, *(src for src, _ in combo))]
    forward, _ = _transforms(backend, real=w.dtype.kind != "c")
    return forward(placed, fixed.shape, tuple(range(2, 2 + nd)))


def _spectrum_by_axis(w: Array, fixed: Layout, backend: Backend, first_axis: int = 2) -> Array:
    """The placed kernel's spectrum one axis at a time, last axis first, each axis placed
    just before it is transformed: the lines of the axes not yet reached are only the
    kernel's taps, so the transforms of the zero lines between them are skipped (the
    same values as the N-D transform: a zero line's transform is zero)."""
    xp, fft = backend.xp, backend.fft
    spectrum = w
    for ax in reversed(range(len(fixed.shape))):
        axis, length = first_axis + ax, fixed.shape[ax]
        grown = xp.zeros((*spectrum.shape[:axis], length, *spectrum.shape[axis + 1 :]), dtype=spectrum.dtype)
        lead = (slice(None),) * axis
        for src, dest in fixed.pieces[ax]:
            grown[(*lead, dest)] = spectrum[(*lead, src)]
        workers = _threads(grown, (length,), (axis,))
        if grown.dtype.kind != "c":  # the first axis of a real kernel
            spectrum = fft.rfft(grown, axis=axis, workers=workers)
        else:
            spectrum = fft.fft(grown, axis=axis, workers=workers, overwrite_x=True)
    return spectrum


def _placement(lo: int, k: int, d: int, n: int) -> list[tuple[slice, slice]]:
    """Where taps ``m`` of one axis go: ``(lo - m*d) mod n``, as at most two pairs of
    (kernel slice, stepped destination slice), before and after the wrap-around. Slices,
    not index arrays, so no index data is copied to a GPU."""
    def stop(position: int) -> int | None:
        return position if position >= 0 else None

    unwrapped = min(k, lo // d + 1)  # taps with lo - m*d >= 0
    pairs = []
    if unwrapped:
        pairs.append((slice(0, unwrapped), slice(lo, stop(lo - unwrapped * d), -d)))
    if unwrapped < k:
        first = n + lo - unwrapped * d
        pairs.append((slice(unwrapped, k), slice(first, stop(n + lo - k * d), -d)))
    return pairs


def _sums_by_gemm(problem: Problem, backend: Backend) -> bool:
    """Whether the channel sum is a batched GEMM over frequencies (else a multiply-add
    per input channel): with many input channels, and on the CPU more than a few outputs."""
    p = problem
    many_outputs = backend.name != "numpy" or p.out_per_group > _MAC_MAX_OUTPUTS
    return p.in_per_group >= _GEMM_MIN_CHANNELS and many_outputs


def _channel_sum(x_hat: Array, w_hat: Array, problem: Problem, backend: Backend) -> Array:
    """``y_hat[b, g, o] = sum_c x_hat[b, g, c] * w_hat[g, o, c]`` over all frequencies."""
    p, xp = problem, backend.xp
    if p.in_per_group == p.out_per_group == 1:  # one map per group: multiply in place
        x_hat *= w_hat[:, 0]
        return x_hat
    if not _sums_by_gemm(p, backend):
        y_hat = x_hat[:, :, None, 0] * w_hat[:, :, 0]
        for c in range(1, p.in_per_group):
            y_hat += x_hat[:, :, None, c] * w_hat[:, :, c]
        return y_hat
    batch, n_freq = x_hat.shape[0], math.prod(x_hat.shape[3:])
    # Frequency-major, so the contraction is one batched GEMM: (G, F, B, Cg) @ (G, F, Cg, Og).
    x_f = xp.ascontiguousarray(x_hat.reshape(batch, p.groups, p.in_per_group, n_freq).transpose(1, 3, 0, 2))
    y_f = xp.matmul(x_f, w_hat)
    return xp.moveaxis(y_f, (0, 1), (1, 3)).reshape(batch, p.groups, p.out_per_group, *x_hat.shape[3:])


def run(x: Array, w_hat: Array, problem: Problem, backend: Backend, out: Array | None = None) -> Array:
    """Solve `problem` by FFT (`w_hat` from :func:`prepare`), in batch chunks that fit the
    memory budget. Without `out`, one chunk returns its inverse transform's samples as they
    are: a view of the transform's grid, with no copy."""
    xp, fixed = backend.xp, layout(problem, backend)
    p, shape = fixed.problem, fixed.shape
    nd = len(shape)
    axes = tuple(range(3, 3 + nd))
    forward, inverse = _transforms(backend, real=x.dtype.kind != "c")
    x_groups = x.reshape(p.batch, p.groups, p.in_per_group, *problem.spatial)
    if p.spatial != problem.spatial:  # extend periodically where the padding is not native
        pads = [(lo, hi) if n != q else (0, 0) for n, q, lo, hi in zip(problem.spatial, p.spatial, problem.pad_lo, problem.pad_hi)]
        x_groups = extend(xp, x_groups, axes, pads, "wrap")
    step = _batch_step(fixed, p.batch, _config.budget(backend.name))

    def items(b0: int) -> Array:  # the result of batch items b0:b0 + step
        x_hat = forward(x_groups[b0 : b0 + step], shape, axes)
        y_hat = _channel_sum(x_hat, w_hat, p, backend)
        del x_hat
        return _samples(inverse(y_hat, shape, axes), p, shape, xp)

    if out is None and step >= p.batch:  # one chunk: its samples are the result (a view, as SciPy's)
        return items(0).reshape(p.y_shape)
    out = output(out, p, backend, x.dtype)
    for b0 in range(0, p.batch, step):
        out[b0 : b0 + step] = items(b0)
    return out.reshape(p.y_shape)


def _samples(y: Array, problem: Problem, shape: tuple[int, ...], xp: Any) -> Array:
    """The output samples ``n * stride`` of the circular result `y`, read around its period
    where they pass it (periodic padding of more than one period's worth of output)."""
    p = problem
    around = [(n - 1) * s >= length for n, s, length in zip(p.out_spatial, p.stride, shape)]
    y = y[(..., *(slice(None) if a else slice(0, (n - 1) * s + 1, s) for n, s, a in zip(p.out_spatial, p.stride, around)))]
    for ax, (n, s, length, a) in enumerate(zip(p.out_spatial, p.stride, shape, around)):
        if a:
            y = xp.take(y, xp.arange(n) * s % length, axis=ax - len(shape))
    return y


def _spectrum_bytes(problem: Problem, backend: Backend) -> tuple[int, int]:
    """Bytes of the kernel spectra, and of the input + output spectra per batch item."""
    fixed = layout(problem, backend)
    return fixed.kernel_bytes, fixed.item_bytes


def _batch_step(fixed: Layout, batch: int, memory_limit: int) -> int:
    """Batch items transformed at once so that their spectra fit `memory_limit`."""
    return max(1, min(batch, (memory_limit - fixed.kernel_bytes) // max(fixed.item_bytes, 1)))


def unsupported(problem: Problem, backend: Backend, memory_limit: int) -> str | None:
    """FFT needs room for the kernel spectra and the spectra of one batch item."""
    kernels, per_item = _spectrum_bytes(problem, backend)
    if kernels + per_item > memory_limit:
        return f"its spectra need {kernels + per_item} bytes, over memory_limit={memory_limit}"
    return None


def cost(problem: Problem, backend: Backend, rates: Rates, settings: Settings) -> Cost:
    """Transforms at the FFT rate, the contraction, the passes over every map.

    The weights of the terms were fitted (non-negative least squares on relative error)
    to the FFT timings of the method-choice sweeps (``python -m bench.sweep``): placing and transposing kernel spectra costs more passes than the data's. The
    per-frequency GEMMs of small matrices run far below the GEMM rate, by their shape
    (:func:`_contraction_seconds`).
    """
    kernel_seconds, data_seconds = split_cost(problem, backend, rates, settings.workers)
    return Cost(kernel_seconds + data_seconds, temp_bytes(problem, backend), kernel_seconds)


def temp_bytes(problem: Problem, backend: Backend) -> int:
    """Bytes of the kernel spectra and of every batch item's spectra: the temporaries of
    :func:`run` in one chunk."""
    fixed = layout(problem, backend)
    return fixed.kernel_bytes + fixed.item_bytes * problem.batch


def split_cost(problem: Problem, backend: Backend, rates: Rates, workers: int, *, block: bool = False, contraction_weight: float | None = None) -> tuple[float, float]:
    """Seconds of :func:`cost` spent on the kernel (its transforms and passes over its
    spectra, paid once per plan or call) and on the data (everything else), the
    transforms on `workers` threads; with `block`,
    for one block of overlap-save (both calls' counts, and
    :data:`_BLOCK_CONTRACTION_WEIGHT` on the CPU). On the CPU, problems along one axis pay
    a share of the calls and multiply-add passes (:data:`_ONE_AXIS_SHARE`), a call's transforms
    of several lines that share of theirs, and the channel sum `contraction_weight`
    times its GEMMs' time where given."""
    p = problem
    shape = fft_shape(p, backend)
    size = math.prod(shape)
    cpu = backend.name == "numpy"
    one_axis = cpu and len(shape) == 1
    complex_data = work_dtype(p).kind == "c"  # a complex transform does twice a real one's work
    transform = (5 if complex_data else 2.5) * size * math.log2(max(size, 2)) / rates.fft_flops
    kernel_maps = p.groups * p.out_per_group * p.in_per_group
    in_maps, out_maps = p.batch * p.groups * p.in_per_group, p.batch * p.groups * p.out_per_group
    map_bytes = size * work_dtype(p).itemsize
    kernels, per_item = _spectrum_bytes(p, backend)

    def transforms(maps: int) -> float:
        """Seconds of `maps` forward or inverse transforms made by one call."""
        weight = _ONE_AXIS_SHARE if one_axis and maps > 1 and not block else 1.0
        return weight * _slowed(maps, map_bytes, backend, one_axis) * _thread_factor(maps * size, workers, backend, block, one_axis) * transform

    if not _sums_by_gemm(p, backend):  # one pass of the kernel spectra per batch item, a few times over
        contraction = (_ONE_AXIS_SHARE if one_axis else 1.0) * _SPECTRUM_PASSES * p.batch * kernels / rates.stream_bytes
    else:
        weight = contraction_weight if contraction_weight is not None else (_BLOCK_CONTRACTION_WEIGHT if block else CONTRACTION_WEIGHT)
        contraction = _contraction_seconds(p, size if complex_data else size / 2, kernels, backend, rates, weight)
    fixed, kernel_fixed = (_FIXED_CALLS + _FIXED_KERNEL_CALLS, 0) if block and cpu else (_FIXED_CALLS, _FIXED_KERNEL_CALLS)
    if one_axis and not block:
        fixed, kernel_fixed = _ONE_AXIS_SHARE * fixed, _ONE_AXIS_SHARE * kernel_fixed
    kernel_passes, data_passes = (_SPECTRUM_PASSES, 1 if one_axis else _SPECTRUM_PASSES) if cpu else (1, 1)
    kernel_share = _by_axis_share(p.kernel, shape) if cpu else 1.0
    kernel_seconds = 0.5 * kernel_share * transforms(kernel_maps) + kernel_passes * kernels / rates.stream_bytes + kernel_fixed * rates.call_seconds
    data_seconds = 0.5 * (transforms(in_maps) + transforms(out_maps)) + contraction + data_passes * p.batch * per_item / rates.stream_bytes + fixed * rates.call_seconds
    return kernel_seconds, data_seconds


def _thread_factor(samples: int, workers: int, backend: Backend, block: bool, one_axis: bool) -> float:
    """Slowdown of transforms of `samples` in all against the FFT rate, which is the
    reference machine's on its two workers (:data:`.ONE_WORKER_FFT_SHARE`): transforms that
    run on one thread (under :data:`_THREADED_SAMPLES`, or with one worker) lose the second.
    Overlap-save's blocks, which count their threads themselves, and small N-D transforms,
    whose weights were fitted with it, are not charged."""
    if backend.name != "numpy" or block or _transform_workers(samples, workers) > 1:
        return 1.0
    small = samples < _THREADED_SAMPLES
    return 1.0 if small and not one_axis else 1 / ONE_WORKER_FFT_SHARE


def _slowed(maps: int, map_bytes: int, backend: Backend, one_axis: bool) -> float:
    """`maps` transforms made by one call, counted slower on the CPU where their bytes
    together outgrow the cache (the call transforms all of them axis by axis). Along one
    axis, each map (a line) is transformed whole, so only its own bytes count: batches of
    1-D signals were priced up to 1.75x high."""
    if backend.name != "numpy":
        return maps
    together, cache = (map_bytes, _LINE_CACHE_BYTES) if one_axis else (maps * map_bytes, _CACHE_BYTES)
    return maps * (1 + _OUT_OF_CACHE_SLOWDOWN * min(1.0, max(0.0, math.log2(together / cache) / 3)))


def _by_axis_share(kernel: tuple[int, ...], shape: tuple[int, ...]) -> float:
    """Share of a whole transform's ``n log n`` at lengths `shape` that
    :func:`_spectrum_by_axis` does for a `kernel`: along each axis, only the lines through
    the kernel's taps on the axes before it."""
    work, lines = 0.0, 1.0
    for taps, length in zip(kernel, shape):
        work += lines * math.log2(max(length, 2))
        lines *= min(1.0, taps / length)
    return work / math.log2(max(math.prod(shape), 2))


def _contraction_seconds(problem: Problem, frequencies: float, kernels: int, backend: Backend, rates: Rates, weight: float) -> float:
    """Seconds of the channel sum as per-frequency GEMMs over `frequencies`, reading
    `kernels` bytes of kernel spectra, charged `weight` times on the CPU, at the GEMM rate
    of the spectra's precision (:func:`work_dtype`: complex128's, for float64 and integer
    data, at half of complex64's)."""
    p = problem
    flops = 8 * p.batch * p.groups * p.in_per_group * p.out_per_group * frequencies
    if backend.name == "cupy":
        return CONTRACTION_WEIGHT * flops / rates.gemm_flops + kernels / rates.stream_bytes
    scale, batch, filters, channels = _SMALL_GEMM_EFFICIENCY
    efficiency = min(1.0, scale * p.batch**batch * p.out_per_group**filters * p.in_per_group**channels)
    return weight * max(flops / (rates.gemm_rate(work_dtype(p), backend.name) * efficiency), _KERNEL_SPECTRA_PASSES * kernels / rates.stream_bytes)


METHOD = register(Method("fft", prepare, run, work_dtype, unsupported, cost))
