"""Layout shared by the tap-based methods (direct and im2col).

The input is zero-padded once into ``(B, G, Cg, *padded)``. With unit stride, the spatial
axes are flattened and the output is computed "wide": output sample ``n`` sits at flat
index ``sum(n_d * row_stride_d)`` of the padded grid, so the input under kernel tap ``m``
is one contiguous slice at offset ``sum(m_d * dilation_d * row_stride_d)``. Each tap is
then a plain strided view that BLAS reads without a copy; the few "junk" columns past
each row's end are computed and dropped. With strides > 1, a tap is a stepped N-D view.

Work is cut into chunks of batch items and output rows (first spatial axis), each
written into its own part of the output, so chunks may run in parallel.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .._backend import Array, Backend
from .._problem import Problem


@dataclass(frozen=True, slots=True)
class Chunk:
    """Batch items ``b0:b1`` and output rows ``r0:r1``."""

    b0: int
    b1: int
    r0: int
    r1: int


def pad_input(x: Array, problem: Problem, backend: Backend) -> Array:
    """`x` zero-padded into a new contiguous ``(B, G, Cg, *padded)`` array."""
    p = problem
    padded = backend.xp.zeros(
        (p.batch, p.groups, p.in_per_group, *p.padded), dtype=x.dtype
    )
    inner = tuple(slice(lo, lo + n) for lo, n in zip(p.pad_lo, p.spatial))
    padded[(..., *inner)] = x.reshape(p.batch, p.groups, p.in_per_group, *p.spatial)
    return padded


def taps(problem: Problem) -> list[tuple[int, ...]]:
    """Kernel tap indices in C order."""
    return list(itertools.product(*(range(k) for k in problem.kernel)))


def row_layout(problem: Problem) -> tuple[int, tuple[int, ...]]:
    """``(row_length, row_shape)`` of one output row in a chunk's flat buffer."""
    p = problem
    row_shape = p.padded[1:] if p.unit_stride else p.out_spatial[1:]
    return math.prod(row_shape), row_shape


def chunk_length(problem: Problem, chunk: Chunk) -> int:
    """Flat samples per batch item of `chunk` that the methods compute."""
    p = problem
    row_length, _ = row_layout(p)
    rows = chunk.r1 - chunk.r0
    if not p.unit_stride:
        return rows * row_length
    strides = _flat_strides(p.padded)
    last_row = sum((n - 1) * s for n, s in zip(p.out_spatial[1:], strides[1:])) + 1
    return (rows - 1) * row_length + last_row


def chunks(problem: Problem, bytes_per_sample: int, target_bytes: int) -> list[Chunk]:
    """Cut the output into chunks of about `target_bytes` at `bytes_per_sample` per flat sample."""
    p = problem
    row_length, _ = row_layout(p)
    rows = p.out_spatial[0]
    per_row = max(1, row_length * bytes_per_sample)
    rows_per_chunk = max(1, target_bytes // per_row)
    if rows_per_chunk >= rows:
        items = max(1, target_bytes // (per_row * rows))
        return [Chunk(b, min(b + items, p.batch), 0, rows) for b in range(0, p.batch, items)]
    return [
        Chunk(b, b + 1, r, min(r + rows_per_chunk, rows))
        for b in range(p.batch)
        for r in range(0, rows, rows_per_chunk)
    ]


def tap_block(padded: Array, problem: Problem, tap: tuple[int, ...], chunk: Chunk) -> Array:
    """Input under kernel `tap` for `chunk`: ``(Bc, G, Cg, chunk_length)``.

    A view (no copy) for unit stride; a copy of a stepped view otherwise.
    """
    p = problem
    items = slice(chunk.b0, chunk.b1)
    if p.unit_stride:
        strides = _flat_strides(p.padded)
        start = chunk.r0 * strides[0] + sum(m * d * s for m, d, s in zip(tap, p.dilation, strides))
        flat = padded.reshape(*padded.shape[:3], -1)
        return flat[items, :, :, start : start + chunk_length(p, chunk)]
    rows = chunk.r1 - chunk.r0
    counts = (rows, *p.out_spatial[1:])
    firsts = (chunk.r0 * p.stride[0], *(0,) * (len(tap) - 1))
    window = tuple(
        slice(f + m * d, f + m * d + (n - 1) * s + 1, s)
        for f, m, d, n, s in zip(firsts, tap, p.dilation, counts, p.stride)
    )
    block = padded[(items, slice(None), slice(None), *window)]
    return block.reshape(*block.shape[:3], -1)


def buffer_length(problem: Problem, chunk: Chunk) -> int:
    """Flat length of a chunk's result buffer: whole rows, junk columns included."""
    return (chunk.r1 - chunk.r0) * row_layout(problem)[0]


def store_block(out: Array, block: Array, problem: Problem, chunk: Chunk) -> None:
    """Write a chunk's result ``(Bc, G, Og, buffer_length)`` into `out` ``(B, G, Og, *out)``."""
    p = problem
    _, row_shape = row_layout(p)
    grid = block.reshape(*block.shape[:3], chunk.r1 - chunk.r0, *row_shape)
    keep = tuple(slice(0, n) for n in p.out_spatial[1:])
    rows = slice(chunk.r0, chunk.r1)
    out[(slice(chunk.b0, chunk.b1), slice(None), slice(None), rows)] = grid[(..., *keep)]


def _flat_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of `shape`."""
    strides = [1] * len(shape)
    for ax in range(len(shape) - 2, -1, -1):
        strides[ax] = strides[ax + 1] * shape[ax + 1]
    return tuple(strides)


def run_chunks(work: list[Chunk], job: Callable[[Chunk], None], workers: int) -> None:
    """Run ``job(chunk)`` for every chunk, on `workers` threads when there are several."""
    if workers <= 1 or len(work) <= 1:
        for chunk in work:
            job(chunk)
        return
    with ThreadPoolExecutor(max_workers=min(workers, len(work))) as pool:
        for future in [pool.submit(job, chunk) for chunk in work]:
            future.result()
