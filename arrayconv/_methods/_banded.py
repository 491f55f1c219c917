"""Banded taps: the direct method's taps along the last axis as one GEMM with a Toeplitz matrix.

With one input channel per group, each tap of the direct method is an elementwise
multiply-add over the whole image: a long 1-D kernel costs as many passes as it has taps.
For kernels whose taps all lie along the last axis, the wide output (see :mod:`._taps`)
is cut into blocks of ``L`` flat samples. Block ``m`` reads one contiguous run of
``R = L + E - 1`` input samples from ``m*L`` (``E``: the kernel's dilated extent).
Those runs, gathered as a matrix ``(blocks, R)``, times a banded Toeplitz matrix of the
kernel ``(R, Og * L)``, give the blocks' outputs in one GEMM: ``(L + E - 1) / K`` times
the taps' products (``K`` taps), but at the GEMM rate, and the input is read ``R / L``
times instead of once per tap. It pays for long kernels: 1-D signals with tens to hundreds of taps
(``10**6`` samples, 101 taps: 3.3 ms, against 16 ms for ``numpy.correlate`` and 28 ms for
elementwise taps on 2 cores).

The Toeplitz matrix multiplies samples outside each output's footprint by zero, so a
NaN would spread over its block: such kernels do not :func:`sums_products`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .._runtime.backend import NUMPY, Array, Backend
from .._runtime.fitted import fitted
from .._runtime.rates import FULL_RATE_GEMM, Rates
from .._runtime.scratch import scratch
from .._spec.problem import Problem
from ._taps import Chunk, layout, pad_input

# Block lengths tried by the estimate (flat output samples per GEMM row).
BLOCKS = (8, 16, 32, 64, 128, 256, 512)
# Preferred bytes of one chunk's gathered runs.
_CHUNK_BYTES = 4 << 20
# The estimate's weights (see :func:`seconds`; their sources in fitted.json).
_GEMM_WEIGHT = fitted("banded", "GEMM_WEIGHT")
_RUN_PASSES = fitted("banded", "RUN_PASSES")
_PRODUCT_PASSES = fitted("banded", "PRODUCT_PASSES")
_INPUT_PASSES = fitted("banded", "INPUT_PASSES")
_ROW_BYTES = fitted("banded", "ROW_BYTES")
_FIXED_CALLS = fitted("banded", "FIXED_CALLS")


@dataclass(frozen=True, slots=True)
class BandedTaps:
    """The kernel as banded Toeplitz matrices ``(G, R, Og * L)``.

    Attributes
    ----------
    matrix : ndarray
        Row ``q`` (run sample), column ``o * L + j`` (output filter ``o``, block sample
        ``j``) holds ``w[o, k]`` where ``q = j + k * d``.
    block : int
        ``L``, flat output samples per block.
    """

    matrix: Array
    block: int


def takes(problem: Problem) -> bool:
    """Whether the banded form applies: a dtype BLAS multiplies (float32/64, complex),
    unit stride (the wide layout), one input channel per group, and a kernel with taps
    along its last axis only (1-D kernels, row filters).

    Square kernels gain nothing: taken along the last axis with the other axes' taps as
    further runs, a 2048x2048 image ran 7x7 in 58 ms banded against 49 ms as taps, 3x3x3
    on 64x256x256 in 52 against 26 ms."""
    p = problem
    blas = p.dtype.char in "fdFD"
    along_last = math.prod(p.kernel[:-1]) == 1
    return blas and p.unit_stride and p.in_per_group == 1 and p.kernel[-1] > 1 and along_last


def depth(problem: Problem, block: int) -> int:
    """``R``, the input samples one block reads: rows of the Toeplitz matrix (the GEMM's depth)."""
    return block + (problem.kernel[-1] - 1) * problem.dilation[-1]


def prepare(w: Array, problem: Problem, backend: Backend, block: int) -> BandedTaps:
    """The Toeplitz matrices of `w` for blocks of `block` samples."""
    p, xp = problem, backend.xp
    taps, step = p.kernel[-1], p.dilation[-1]
    bands = xp.zeros((p.groups, depth(p, block), p.out_per_group, block), dtype=w.dtype)
    k, j = xp.arange(taps)[:, None], xp.arange(block)
    # Tap k lies on the diagonal q = j + k*d of every filter's block: (taps, L) indices
    # select (taps, L, G, Og) elements.
    bands[:, j + k * step, :, j] = w.reshape(p.groups, p.out_per_group, taps).transpose(2, 0, 1)[:, None]
    return BandedTaps(bands.reshape(p.groups, depth(p, block), p.out_per_group * block), block)


def run(x: Array, banded: BandedTaps, problem: Problem, backend: Backend, out: Array) -> None:
    """Fill `out` ``(B, G, Og, *out_spatial)`` from `x` ``(B, G, *spatial)``, a slice of
    groups at a time, as many as fit a chunk (:data:`_CHUNK_BYTES`) with all their samples:
    chunks cut across every group's rows make each group's GEMM a few runs long (256 lines
    of 16384 samples, each with its own 129 taps: 25 chunks of 20 runs a group, 4.4 ms a
    chunk at 12 GFLOP/s)."""
    p, block = problem, banded.block
    one = replace(p, groups=1)
    group_bytes = _bytes_per_sample(one, block) * p.batch * layout(one).chunk_length(Chunk(0, 1, 0, p.out_spatial[0]))
    step = max(1, _CHUNK_BYTES // max(1, group_bytes))
    if step >= p.groups:
        _run_chunks(x, banded, p, backend, out)
        return
    for g in range(0, p.groups, step):
        part = replace(p, groups=min(step, p.groups - g))
        _run_chunks(x[:, g : g + step], BandedTaps(banded.matrix[g : g + step], block), part, backend, out[:, g : g + step])


def _run_chunks(x: Array, banded: BandedTaps, problem: Problem, backend: Backend, out: Array) -> None:
    """:func:`run` for all of `problem`'s groups, chunk by chunk: gather each block's runs,
    one GEMM with the Toeplitz matrices, store the blocks' outputs."""
    p, xp, block = problem, backend.xp, banded.block
    padded, lay = pad_input(x, p, backend, tail=block), layout(p)  # the last block reads up to a block past the grid
    run_length, size = depth(p, block), padded.itemsize
    for chunk in lay.chunks(_bytes_per_sample(p, block), _CHUNK_BYTES):
        items, n = chunk.b1 - chunk.b0, lay.chunk_length(chunk)
        blocks = -(-n // block)
        base = padded[chunk.b0 : chunk.b1, :, 0, chunk.r0 * lay.row_length :]
        view = xp.lib.stride_tricks.as_strided(
            base, shape=(*base.shape[:2], blocks, run_length), strides=(*base.strides[:2], block * size, size)
        )
        runs = scratch("banded.runs", (p.groups, items, blocks, run_length), padded.dtype, backend)
        runs[...] = view.transpose(1, 0, 2, 3)
        products = scratch("banded.products", (p.groups, items * blocks, p.out_per_group * block), padded.dtype, backend)
        xp.matmul(runs.reshape(p.groups, items * blocks, run_length), banded.matrix, out=products)
        grid = products.reshape(p.groups, items, blocks, p.out_per_group, block).transpose(1, 0, 3, 2, 4)
        flat = grid.reshape(items, p.groups, p.out_per_group, blocks * block)[..., :n]
        lay.store_block(out, flat, chunk)


def _bytes_per_sample(problem: Problem, block: int) -> int:
    """Bytes of gathered runs and products per flat output sample."""
    p = problem
    return max(1, int(p.groups * (depth(p, block) / block + p.out_per_group) * p.dtype.itemsize))


def seconds(problem: Problem, block: int, samples: int, rates: Rates) -> float:
    """Estimated time for `samples` flat output samples (all batch items and groups) in
    blocks of `block`.

    The GEMM at the GEMM rate (less for blocks under ``FULL_RATE_GEMM["side"]`` samples, the
    product's narrow side, as the square root of their share), the runs gathered, the input padded, the products stored and the Toeplitz
    matrices read at the stream rate, and a cost per GEMM row and per stored run of
    `block` samples (when the products need transposing: several filters or groups),
    with weights fitted to 152 timings (1-D signals of 10**3-10**6 samples, batches of
    100, 1-8 filters, 2-1001 taps, row filters on images; blocks of 8-512): within
    0.44-1.17x, and the block of least estimate is the fastest or within 1.07x of it.
    """
    p, size = problem, problem.dtype.itemsize
    rows = samples / block
    efficiency = min(1.0, math.sqrt(block / FULL_RATE_GEMM["side"]))
    gemm = _GEMM_WEIGHT * p.mac_flops * samples * depth(p, block) * p.out_per_group / (rates.gemm_rate(p.dtype, NUMPY.name) * efficiency)
    moved = samples * size * (_RUN_PASSES * depth(p, block) / block + _PRODUCT_PASSES * p.out_per_group + _INPUT_PASSES)
    transposed = rows * p.out_per_group if p.groups * p.out_per_group > 1 else 0
    # the Toeplitz matrices, read once: they count where the outputs are few and the kernel long
    moved += (rows + transposed) * _ROW_BYTES + p.groups * depth(p, block) * p.out_per_group * block * size
    return gemm + moved / rates.stream_bytes + _FIXED_CALLS * rates.call_seconds


def best_block(problem: Problem, samples: int, rates: Rates) -> int:
    """The block length of least :func:`seconds`."""
    return min(BLOCKS, key=lambda block: seconds(problem, block, samples, rates))
