"""Direct method: accumulate one kernel tap at a time, in cache-sized chunks.

For each tap, ``y += w[..., tap] @ x_tap`` (a GEMM over input channels; an elementwise
multiply-add when each group has one input channel). Nothing larger than the padded input
is ever allocated. Elementwise chunks run on :func:`arrayconv.config` ``workers`` threads
(NumPy's ufuncs are single-threaded); GEMM chunks run in turn, as BLAS is threaded already.
On the CPU, with one input channel per group, two other forms run where they are estimated
faster: kernel rows of up to 11 taps summed by ``numpy.correlate`` (:mod:`._rows`), and
1-D kernels and row filters as one GEMM with a banded Toeplitz matrix (:mod:`._banded`).
On CuPy, one CUDA kernel does all taps at once (:mod:`._direct_cuda`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from .._runtime import config as _config
from .._runtime.backend import NUMPY, Array, Backend
from .._runtime.cache import LRUCache
from .._runtime.config import Settings
from .._runtime.cuda import C_TYPES
from .._runtime.fitted import fitted
from .._runtime.rates import Rates, rates_for
from .._runtime.scratch import scratch
from .._runtime.threads import Gemm, gemm_lanes, run_gemm_jobs, run_parallel
from .._spec.boundary import Extension
from .._spec.problem import Problem
from . import _banded, _channels, _compiled, _direct_cuda, _one_map, _rows, _separable
from ._registry import Cost, Method, Shortcuts, exact_dtype, output, register
from ._taps import Chunk, Layout, chunk_input, layout, pad_input, padded_bytes, pads_periodically, reads_in_place

# Bytes of one chunk's working set (measured best on the benchmark cases: 256 KiB chunks
# were 1.5-2x slower, from per-call overhead and small GEMMs).
_CHUNK_BYTES = 4 << 20
# GEMM taps that do few multiply-adds per element they move (Og * Cg / (Og + Cg) of them) are
# memory-bound: they run in chunks small enough to stay in cache from tap to tap.
_MEMORY_BOUND_CHUNK_BYTES = 512 << 10
# The row form's chunks: smaller, so that images from 512x512 float32 run on two threads.
_ROWS_CHUNK_BYTES = 1 << 20
# The model's weights (fitted.json): the multiply-adds per element moved under which GEMM taps
# are memory-bound; the multiples of the stream rate at which taps on cached chunks move their
# bytes (elementwise and memory-bound GEMMs: CACHE_SPEEDUP; other GEMMs; matrix-vector
# products, which BLAS runs without packing the input); the passes copying a strided tap's
# stepped view; a call's share in the one-map form (:mod:`._one_map`).
_MEMORY_BOUND_INTENSITY = fitted("direct", "MEMORY_BOUND_INTENSITY")
CACHE_SPEEDUP, GEMM_CACHE_SPEEDUP = fitted("direct", "CACHE_SPEEDUP"), fitted("direct", "GEMM_CACHE_SPEEDUP")
_MATVEC_SPEEDUP = fitted("direct", "MATVEC_SPEEDUP")
STRIDED_COPY_PASSES = fitted("direct", "STRIDED_COPY_PASSES")

_forms = LRUCache("direct_forms", maxsize=256)
_form_estimates = LRUCache("direct_form_estimates", maxsize=256)
# Whether the CUDA kernel takes each problem (asked by the cost, the kernel's form and the run).
_gpu_problems = LRUCache("direct_cuda_problems", maxsize=256)

# The compiled loops run a column (one tap a row) along a volume's planes of more taps than
# this as an outer product's passes: 9 taps on 64^3-256^3 0.5-0.9x the time, 17 on 128^3 30 ->
# 3.2 ms on one thread; 3 and 5 taps on 200^3-256^3 ran 1.3x slower so. Along an image's
# columns, one taller than a pass's weights (13-25 taps on 512^2-4096^2: 0.5-0.8x the time).
_VOLUME_COLUMN_TAPS = 8
# With one filter a group, rows of up to this many taps run the compiled loops, not the banded
# GEMMs: on one worker or two the loops ran 3-64 taps 1.2-4.5x faster, from 97 taps 1.4x slower.
_LOOPS_OVER_BANDED_TAPS = 64


def _bytes_per_sample(problem: Problem) -> int:
    return problem.groups * (problem.in_per_group + problem.out_per_group) * problem.dtype.itemsize


def _on_gpu(problem: Problem, backend: Backend) -> bool:
    """Whether the CUDA kernel runs `problem` (CuPy, a dtype it is compiled for, shapes it
    takes); other CuPy problems take the tap-by-tap path."""
    return backend.name == "cupy" and _gpu_problems.get_or_make(problem, lambda: problem.dtype.name in C_TYPES and _direct_cuda.takes(problem))


def _samples(problem: Problem) -> int:
    """Flat output samples computed (all batch items and groups), junk columns included."""
    p = problem
    return p.batch * p.groups * math.prod(layout(p).row_shape) * p.out_spatial[0]


def pointwise(problem: Problem) -> bool:
    """Whether `problem` is one GEMM per batch item and group over the input's samples (all
    of them, or every stride-th along each axis): a 1x1 kernel over several input channels,
    without padding."""
    p = problem
    return p.in_per_group > 1 and math.prod(p.kernel) == 1 and not p.pads


def _form(problem: Problem, backend: Backend, rates: Rates, settings: Settings) -> tuple[str, int]:
    """How the CPU sums the taps: ``('pointwise', 0)`` where it applies (the one tap's
    GEMMs written straight into the result: no chunks, no sum), else
    ``('taps', 0)``, ``('rows', 0)``, ``('banded', block)`` or ``('separable', 0)``,
    whichever applies and is estimated fastest (the separable form only where its
    temporaries fit the memory budget). Cached: every call of a plain function asks."""
    if backend.name != "numpy":
        return ("taps", 0)
    settings = _form_settings(problem, settings)
    return _forms.get_or_make((problem, rates, settings), lambda: _fastest_form(problem, backend, rates, settings))


def same_form_for_any_kernel(problem: Problem, backend: Backend, copied_bytes: int = 0) -> bool:
    """Whether direct runs `problem` in one form whatever its kernel's values: where the
    kernel may be an outer product (:func:`._separable.eligible`), the form that runs one
    marked so (``Problem.rank_one``) is the one that runs one that is not, with
    `copied_bytes` of input copy that the compiled loops skip (:func:`reading_in_place`)."""
    if backend.name != "numpy" or not _separable.eligible(problem, backend):
        return True
    rates, settings = rates_for(backend), _config.settings(backend.name)
    forms = [_form_reading(replace(problem, rank_one=one), backend, rates, settings, copied_bytes) for one in (True, False)]
    return forms[0] == forms[1]


def _form_settings(problem: Problem, settings: Settings) -> Settings:
    """`settings` as the forms' estimates depend on them: the budget matters only to the
    separable form."""
    return settings if problem.rank_one else Settings(settings.workers, 0)


def _fastest_form(problem: Problem, backend: Backend, rates: Rates, settings: Settings) -> tuple[str, int]:
    if pointwise(problem):
        return ("pointwise", 0)
    estimates = _form_seconds(problem, backend, rates, settings)
    return min(estimates, key=estimates.__getitem__)


def _form_seconds(problem: Problem, backend: Backend, rates: Rates, settings: Settings) -> dict[tuple[str, int], float]:
    """Estimated seconds of every form that runs `problem` (not pointwise). Cached."""
    settings = _form_settings(problem, settings)
    return _form_estimates.get_or_make((problem, rates, settings), lambda: _estimate_forms(problem, backend, rates, settings))


def _estimate_forms(problem: Problem, backend: Backend, rates: Rates, settings: Settings) -> dict[tuple[str, int], float]:
    p = problem
    estimates = {("taps", 0): _taps_cost(p, backend, rates).seconds}
    if _banded.takes(p) and not (p.out_per_group == 1 and p.kernel[-1] <= _LOOPS_OVER_BANDED_TAPS and _compiled.takes(p, backend)):
        block = _banded.best_block(p, _samples(p), rates)
        estimates[("banded", block)] = _banded.seconds(p, block, _samples(p), rates)
    if _rows.takes(p, backend):
        estimates[("rows", 0)] = _rows_cost(p, rates).seconds
    if _separable.takes(p, backend) and (separable := _separable.cost(p, backend, rates, settings, METHOD)).temp_bytes <= settings.budget:
        estimates[("separable", 0)] = separable.seconds
    if _channels.takes(p, backend):
        estimates[("channels", 0)] = _channels.seconds(p, rates, settings.workers)
    if _compiled.takes(p, backend):
        passes = _separable.outer_product(p, backend)
        if not (passes and _columns_in_passes(p)):
            estimates[("compiled", 0)] = _compiled.seconds(p, rates, False, settings.workers)
        if passes:  # its passes fused, in cache
            estimates[("compiled", 1)] = _compiled.seconds(p, rates, True, settings.workers)
    return estimates


def _columns_in_passes(problem: Problem) -> bool:
    """Whether the compiled loops run a :func:`._separable.column` only as an outer
    product's passes (its taps summed over lines of several rows): along an image's
    columns, one taller than a pass's weights (:func:`._compiled.weights_held`), along a
    volume's planes, one of more than :data:`_VOLUME_COLUMN_TAPS`."""
    p = problem
    most = _VOLUME_COLUMN_TAPS if len(p.kernel) == 3 else _compiled.weights_held()
    return _separable.column(p) and max(p.kernel) > most


def reading_in_place(kernel: Kernel, w: Array, problem: Problem, backend: Backend, copied_bytes: int) -> Kernel:
    """`kernel`, or the compiled form's where it is estimated faster once the copy of the
    input that the other forms read is counted (:func:`_form_reading`)."""
    p = problem
    if isinstance(kernel, _compiled.CompiledTaps) or backend.name != "numpy":
        return kernel
    form, block = _form_reading(p, backend, rates_for(backend), _config.settings(backend.name), copied_bytes)
    if form != "compiled":
        return kernel
    return _compiled.prepare(w, p, _separable.factors(w, p) if block else None)


def _form_reading(problem: Problem, backend: Backend, rates: Rates, settings: Settings, copied_bytes: int) -> tuple[str, int]:
    """The form that runs `problem` where the others read `copied_bytes` of copied input
    (converted to the problem's dtype or extended by a boundary rule): :func:`_form`'s, or
    the compiled form's where it is estimated faster than that once the copy, written and
    then read, is counted."""
    p = problem
    chosen = _form(p, backend, rates, settings)
    if not copied_bytes or chosen[0] == "compiled" or pointwise(p) or not _compiled.takes(p, backend):
        return chosen
    estimates = _form_seconds(p, backend, rates, settings)
    if chosen not in estimates:
        return chosen
    compiled = min((form for form in estimates if form[0] == "compiled"), key=estimates.__getitem__)
    return compiled if estimates[compiled] < estimates[chosen] + 2 * copied_bytes / rates.stream_bytes else chosen


def _chunk_temp(problem: Problem, chunk_bytes: int) -> int:
    """Bytes of one chunk's temporaries: `chunk_bytes`, or the whole problem's where it is smaller."""
    return min(chunk_bytes, _samples(problem) * _bytes_per_sample(problem))


def _chunk_bytes(problem: Problem, rows: bool, backend: Backend) -> int:
    """Bytes of one chunk's working set: the row form's, or the taps' (smaller for
    :func:`_memory_bound` taps)."""
    if rows:
        return _ROWS_CHUNK_BYTES
    return _MEMORY_BOUND_CHUNK_BYTES if _memory_bound(problem, backend) else _CHUNK_BYTES


def _memory_bound(problem: Problem, backend: Backend) -> bool:
    """Whether the taps are GEMMs on the CPU (several inputs and outputs per group) that do
    at most :data:`_MEMORY_BOUND_INTENSITY` multiply-adds per element they move; they run
    in :data:`_MEMORY_BOUND_CHUNK_BYTES` chunks."""
    outputs, inputs = problem.out_per_group, problem.in_per_group
    gemm = outputs > 1 and inputs > 1
    return backend.name == "numpy" and gemm and outputs * inputs <= _MEMORY_BOUND_INTENSITY * (outputs + inputs)


def _single_map(problem: Problem, rows: bool, backend: Backend) -> _one_map.OneMap | None:
    """The :class:`._one_map.OneMap` of `problem` on NumPy with the taps or `rows`, when
    it is one map in one chunk; else None."""
    if backend.name != "numpy":
        return None
    return _one_map.one_map(problem, rows, _chunk_bytes(problem, rows, backend), _bytes_per_sample(problem))


Kernel = Array | _banded.BandedTaps | _rows.RowKernels | _one_map.MapKernel | _separable.SeparableTaps | _compiled.CompiledTaps | _channels.ChannelTaps


def prepare(w: Array, problem: Problem, backend: Backend) -> Kernel:
    """The kernel as ``(taps, G, Og, Cg)``, each tap's matrix contiguous for BLAS (on the
    GPU, as :func:`._direct_cuda.prepare`; in the row and banded forms, rows and Toeplitz
    matrices)."""
    p, xp = problem, backend.xp
    if _on_gpu(p, backend):
        return _direct_cuda.prepare(w, p, backend)
    form, block = _form(p, backend, rates_for(backend), _config.settings(backend.name))
    if form == "compiled":
        return _compiled.prepare(w, p, _separable.factors(w, p) if block else None)
    if form == "channels":
        return _channels.prepare(w, p)
    if form == "banded":
        return _banded.prepare(w, p, backend, block)
    if form == "separable":
        return _separable.prepare(w, p, backend, METHOD)
    rows = form == "rows"
    if rows and _rows.reads_lines(p):
        return _rows.prepare(w, p, layout(p), rates_for(backend))
    single = _single_map(p, rows, backend)
    if single is not None:
        return _one_map.MapKernel(single, xp.ascontiguousarray(w.reshape(-1, p.kernel[-1])))
    if rows:
        return _rows.prepare(w, p, layout(p), rates_for(backend))
    return xp.ascontiguousarray(w.reshape(p.groups, p.out_per_group, p.in_per_group, -1).transpose(3, 0, 1, 2))


def run(x: Array, kernel: Kernel, problem: Problem, backend: Backend, out: Array | None = None) -> Array:
    """Solve `problem` by direct summation over kernel taps (`kernel` from :func:`prepare`)."""
    p = problem
    rows = isinstance(kernel, _rows.RowKernels)
    if isinstance(kernel, _rows.RowKernels) and _rows.reads_lines(p):
        lines = _rows.run_lines(x, kernel, p, out, _ROWS_CHUNK_BYTES, 1, rates_for(backend))
        return lines.reshape(p.y_shape)
    if isinstance(kernel, _one_map.MapKernel):
        return kernel.runner.run(x, kernel.weights, out).reshape(p.y_shape)
    out = output(out, p, backend, p.dtype)  # the problem's, where the compiled form reads integers as they are
    if isinstance(kernel, _compiled.CompiledTaps):
        _compiled.run(x, kernel, p, out)
        return out.reshape(p.y_shape)
    if isinstance(kernel, _channels.ChannelTaps):
        _channels.run(x, kernel, p, out)
        return out.reshape(p.y_shape)
    if _on_gpu(p, backend):
        return _direct_cuda.run(x, kernel, p, backend, out).reshape(p.y_shape)
    if isinstance(kernel, _banded.BandedTaps):
        _banded.run(x, kernel, p, backend, out)
        return out.reshape(p.y_shape)
    if isinstance(kernel, _separable.SeparableTaps):
        _separable.run(x, kernel, p, backend, out, METHOD)
        return out.reshape(p.y_shape)
    if _form(p, backend, rates_for(backend), _config.settings(backend.name))[0] == "pointwise":
        _run_pointwise(x, kernel, p, backend, out)
        return out.reshape(p.y_shape)
    lay, sums = layout(p), (_rows.accumulate if rows else accumulate)
    gemms = backend.name == "numpy" and p.in_per_group > 1
    lanes = gemm_lanes(_config.workers()) if gemms else 1
    # GEMM taps: a chunk per core at least, each on one BLAS thread (BLAS's own threads wait on
    # one another at every tap, and stall when another process holds a core: 4 ms -> 90 ms).
    target = min(_chunk_bytes(p, rows, backend), lay.share_bytes(_bytes_per_sample(p), _config.cores())) if gemms else _chunk_bytes(p, rows, backend)
    work = lay.chunks(_bytes_per_sample(p), target, parts=_config.cores() if gemms else 1)
    own_rows = len(work) > 1 and _pads_chunks(p)
    whole = None if own_rows else pad_input(x, p, backend)
    x = x.reshape(p.batch, p.groups, p.in_per_group, *p.spatial) if own_rows else x

    def job(chunk):
        padded, at = chunk_input(whole, x, chunk, p, backend, wide=True)
        lay.store_block(out, sums(padded, kernel, lay, at, backend), chunk)

    if gemms:
        run_gemm_jobs(work, lambda chunk, gemm: job(chunk), lanes, 0)
    else:
        run_parallel(work, job, _config.workers() if backend.name == "numpy" and p.in_per_group == 1 and not rows else 1)
    return out.reshape(p.y_shape)


def _run_pointwise(x: Array, taps: Array, problem: Problem, backend: Backend, out: Array) -> None:
    """A 1x1 kernel's GEMMs ``(Og, Cg) @ (Cg, samples)``: on NumPy, the batch in a block of
    items per core on the GEMM lanes (:func:`.._threads.run_gemm_jobs`); on a GPU, one
    batched call."""
    p = problem
    samples = x.reshape(p.batch, p.groups, p.in_per_group, *p.spatial)[(..., *(slice(None, None, s) for s in p.stride))]
    samples = samples.reshape(p.batch, p.groups, p.in_per_group, -1)
    out = out.reshape(p.batch, p.groups, p.out_per_group, -1)
    if backend.name != "numpy":
        backend.xp.matmul(taps[0], samples, out=out)
        return

    block = -(-p.batch // _config.cores())

    def items(b: int, gemm: Gemm) -> None:
        gemm(taps[0], samples[b : b + block], out[b : b + block])

    run_gemm_jobs(range(0, p.batch, block), items, gemm_lanes(_config.workers()), p.out_per_group * p.in_per_group * samples.shape[-1])


def _pads_chunks(problem: Problem) -> bool:
    """Whether each chunk of the taps, where there are several, pads the input rows under
    its output rows itself (:func:`._taps.padded_rows`, wide), on the thread that runs it:
    unit stride, zero padding, and a copy needed (not :func:`._taps.reads_in_place`):
    the padding then runs on every thread, not first on one."""
    p = problem
    return p.unit_stride and not pads_periodically(p) and not reads_in_place(p)


def unplanned(kernel: Kernel, problem: Problem) -> Callable[[Array, Array], Array] | None:
    """``f(x, w)``, the samples of :func:`run`'s result without `out` for `x` and the
    kernel `w` (taps in C order: `x` and `w` need not be in the problem's layout, only
    their samples in its order), made from the arrays as they are, where that run is one
    ``numpy.correlate`` of a 1-D signal or of a batch of lines laid end to end
    (:func:`._rows.unplanned`), or one map in one chunk (:mod:`._one_map`). None for other
    problems."""
    if isinstance(kernel, _one_map.MapKernel):
        return kernel.runner.run
    if isinstance(kernel, _rows.RowKernels) and _rows.reads_lines(problem):
        return _rows.unplanned(kernel, problem, _ROWS_CHUNK_BYTES, 1, rates_for(NUMPY))
    return None


def reading_edges(kernel: Kernel, problem: Problem, extension: Extension | None, ndim: int) -> Kernel | None:
    """`kernel` made to read an input of `ndim` dims as it is, before `extension` (the
    compiled form's index maps read past its edges by the rule); None for the other forms,
    and for an extension of axes that are not the problem's."""
    if not isinstance(kernel, _compiled.CompiledTaps):
        return None
    if extension is None:
        return kernel
    pads = extension.trailing_pads(ndim, len(problem.spatial))
    fill = complex(extension.fillvalue)
    if pads is None or fill.imag:
        return None
    return _compiled.reading_edges(kernel, _compiled.Edges(pads, extension.pad_mode, fill.real))


def bound_call(kernel: Kernel, problem: Problem, x_shape: tuple[int, ...]) -> Callable[[Array, Array], None] | None:
    """The compiled form's run for inputs of `x_shape`, bound once (:func:`._compiled.bound_run`);
    None for the other forms."""
    return _compiled.bound_run(kernel, problem, x_shape) if isinstance(kernel, _compiled.CompiledTaps) else None


reads_dtype = _compiled.reads_dtype


def single_call(kernel: Kernel, problem: Problem) -> Callable[[Array], Array] | None:
    """``f(x)``: :func:`unplanned`'s run with the kernel's own taps, for a plan to call
    (the same calls on the same samples as :func:`run`, so the same bits). None where
    :func:`unplanned` is."""
    call = unplanned(kernel, problem)
    if call is None:
        return None
    taps = kernel.weights if isinstance(kernel, _one_map.MapKernel) else kernel.rows  # type: ignore[union-attr]
    return lambda x: call(x, taps)


def accumulate(padded: Array, w_taps: Array, lay: Layout, chunk: Chunk, backend: Backend, gemm: Gemm | None = None) -> Array:
    """The sum over taps of kernel times input for `chunk` of `padded` (laid out by
    :func:`._taps.pad_input`): ``(Bc, G, Og, chunk_length)``, junk columns included.

    Each tap is a GEMM over input channels, or a multiply-add with one channel per group.
    The sum and each tap's product live in this thread's scratch buffers: the result is
    valid until the thread's next call. `gemm` makes the GEMM calls (from
    :func:`.._threads.run_gemm_jobs`; ``xp.matmul`` by default).
    """
    p, xp = lay.problem, backend.xp
    gemm = gemm or (lambda a, b, out: xp.matmul(a, b, out=out))
    shape = (chunk.b1 - chunk.b0, p.groups, p.out_per_group, lay.chunk_length(chunk))
    total = scratch("direct.sum", shape, padded.dtype, backend)
    product = scratch("direct.product", shape, padded.dtype, backend)
    if p.unit_stride and math.prod(shape[:3]) * p.in_per_group == 1:
        start = chunk.r0 * lay.row_length
        _one_map.sum_taps(padded[chunk.b0, 0, 0], w_taps.reshape(-1), lay.offsets, start, total.reshape(-1), product.reshape(-1), xp)
        return total
    for t in range(len(lay.taps)):
        x_tap, w_tap = lay.tap_block(padded, t, chunk), w_taps[t]
        target = product if t else total
        if p.in_per_group == 1:
            xp.multiply(w_tap, x_tap, out=target)
        else:
            gemm(w_tap, x_tap, target)
        if t:
            total += product
    return total


def unsupported(problem: Problem, backend: Backend, memory_limit: int) -> str | None:
    """The direct method runs on every problem that fits in memory."""
    if _on_gpu(problem, backend) or _compiled.takes(problem, backend):
        return None  # the CUDA kernel and the compiled loops read the input in place
    if padded_bytes(problem) > memory_limit:
        return f"its padded input copy needs more than memory_limit={memory_limit} bytes"
    return None


def cost(problem: Problem, backend: Backend, rates: Rates, settings: Settings) -> Cost:
    """Roofline of the taps plus the passes made once per output sample.

    Elementwise taps (one channel per group) stream a temporary, the accumulator and the
    input through cache-sized chunks on all cores. GEMM taps add their FLOPs at the GEMM
    rate of their output channels (:func:`.._rates.rows_gain`) to the bytes they move per
    tap (the input channels once, the output channels three times: product, accumulator
    read and write) at cache speed; with one output per
    group, a tap is a matrix-vector product, bound by its bytes alone (BLAS does not pack
    its input). All pay zeroing the
    accumulator, storing it and padding the input (unless read in place) at the stream
    rate, and one array call per tap and chunk: numpy's batched matmul runs a chunk's
    batch items and groups in one call (about 0.15 us per GEMM inside it, against 3 us per
    call from Python). Fitted to the method-choice sweeps (``python -m bench.sweep``). The
    row and banded forms, where they apply and are estimated faster: :func:`._rows.seconds`
    and :func:`._banded.seconds`; 1x1 kernels: :func:`_pointwise_cost`. On the GPU:
    :func:`._direct_cuda.cost`.
    """
    p = problem
    if _on_gpu(p, backend):
        return Cost(_direct_cuda.cost(p, rates), 0)
    chosen = _form_cost(p, backend, rates, settings)
    if pointwise(p):
        return chosen
    estimates = _form_seconds(p, backend, rates, settings)
    forms = sorted(((_form_name(*form), seconds) for form, seconds in estimates.items()), key=lambda named: named[1])
    return replace(chosen, forms=tuple(forms))


def _form_name(form: str, block: int) -> str:
    """How :class:`~arrayconv.Choice` names a form of direct on the CPU."""
    if form == "banded":
        return f"banded ({block} rows)"
    if form == "channels":
        return "compiled, channels"
    return "compiled, fused passes" if form == "compiled" and block else form


def _form_cost(problem: Problem, backend: Backend, rates: Rates, settings: Settings) -> Cost:
    """:func:`cost` of the form direct runs `problem` in on the CPU."""
    p = problem
    form, block = _form(p, backend, rates, settings)
    if form == "compiled":
        return Cost(_compiled.seconds(p, rates, bool(block), settings.workers), 0)
    if form == "channels":
        return Cost(_channels.seconds(p, rates, settings.workers), _channels.padded_bytes(p))
    if form == "banded":
        temp = padded_bytes(p) + block * p.batch * p.groups * p.dtype.itemsize + 2 * _chunk_temp(p, _CHUNK_BYTES)
        return Cost(_banded.seconds(p, block, _samples(p), rates), temp)
    if form == "rows":
        return _rows_cost(p, rates)
    if form == "separable":
        return _separable.cost(p, backend, rates, settings, METHOD)
    if form == "pointwise":
        return _pointwise_cost(p, backend, rates)
    return _taps_cost(p, backend, rates)


def _pointwise_cost(problem: Problem, backend: Backend, rates: Rates) -> Cost:
    """:func:`cost` of the pointwise form: the GEMMs' arithmetic at the GEMM rate, the input
    read and the result written once at the stream rate (with a stride, the samples read
    copied first), and one call."""
    p = problem
    copied = 0 if p.unit_stride else STRIDED_COPY_PASSES * p.in_per_group
    samples = p.batch * p.groups * math.prod(p.out_spatial)
    passes = samples * (p.in_per_group + p.out_per_group + copied) * p.dtype.itemsize / rates.stream_bytes
    return Cost(p.mac_flops * p.macs / rates.gemm_rate(p.dtype, backend.name) + passes + rates.call_seconds, samples * p.in_per_group * p.dtype.itemsize if copied else 0)


def _taps_cost(problem: Problem, backend: Backend, rates: Rates) -> Cost:
    """:func:`cost` of the taps one at a time on the CPU."""
    p = problem
    n_taps = math.prod(p.kernel)
    samples = _samples(p)
    size = p.dtype.itemsize
    chunk_bytes = _chunk_bytes(p, False, backend)
    n_chunks = max(1, samples * _bytes_per_sample(p) // chunk_bytes)
    once = _once_seconds(p, rates)
    if p.in_per_group == 1:
        traffic = n_taps * samples * 5 * p.out_per_group * size
        seconds = traffic / (CACHE_SPEEDUP * rates.stream_bytes)
    elif p.out_per_group == 1:  # a matrix-vector product per tap: no packing, memory-bound
        traffic = n_taps * samples * (p.in_per_group + 3) * size
        seconds = traffic / (_MATVEC_SPEEDUP * rates.stream_bytes)
    else:
        per_tap = samples * size * (p.in_per_group + 3 * p.out_per_group)
        speedup = CACHE_SPEEDUP if _memory_bound(p, backend) else GEMM_CACHE_SPEEDUP
        seconds = p.mac_flops * p.macs / rates.gemm_rate(p.dtype, backend.name, p.out_per_group) + n_taps * per_tap / (speedup * rates.stream_bytes)
    if not p.unit_stride:  # each tap's stepped view is copied before its product (:meth:`Layout.tap_block`)
        seconds += n_taps * samples * p.in_per_group * size * STRIDED_COPY_PASSES / rates.stream_bytes
    calls = n_taps * n_chunks  # the batch items and groups of a chunk are one batched matmul
    return Cost(seconds + once + calls * rates.call_seconds, padded_bytes(p) + _chunk_temp(p, chunk_bytes))


def _rows_cost(problem: Problem, rates: Rates) -> Cost:
    """:func:`cost` of the row form (see :func:`_taps_cost` for the passes made once); on
    1-D lines read in place, one pass storing the result instead. On one thread:
    ``numpy.correlate`` holds the GIL, so threads would only wait for one another."""
    p = problem
    if _rows.reads_lines(p):
        pieces = _rows.line_pieces(p, _ROWS_CHUNK_BYTES, 1, rates)
        return Cost(_rows.line_seconds(p, pieces, 1, rates), _ROWS_CHUNK_BYTES)
    runs = p.groups * layout(p).item_runs(_bytes_per_sample(p), _ROWS_CHUNK_BYTES)
    seconds = _rows.seconds(p, _samples(p), runs, 1, rates) + _once_seconds(p, rates)
    return Cost(seconds, padded_bytes(p) + _chunk_temp(p, _ROWS_CHUNK_BYTES))


def _once_seconds(problem: Problem, rates: Rates) -> float:
    """The passes made once per output sample: the accumulator written, read and stored,
    and the input padded (unless the taps read it in place), at the stream rate."""
    p = problem
    copied = 0 if reads_in_place(p) else 2 * p.in_per_group  # the padded input, written and read
    return _samples(p) * p.dtype.itemsize * (3 * p.out_per_group + copied) / rates.stream_bytes


def sums_products(kernel: Kernel) -> bool:
    """Taps and rows sum the footprint's products; the banded form also multiplies the rest
    of each block's runs by zero, and the separable form's column pass the rest of each
    block's rows."""
    return not isinstance(kernel, (_banded.BandedTaps, _separable.SeparableTaps))


SHORTCUTS = Shortcuts(unplanned, single_call, reading_edges, reads_dtype, reading_in_place, bound_call)
METHOD = register(Method("direct", prepare, run, exact_dtype, unsupported, cost, sums_products, SHORTCUTS))
