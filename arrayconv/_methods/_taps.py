"""Layout shared by the tap-based methods (direct and im2col).

The input is zero-padded once into ``(B, G, Cg, *padded)``. With unit stride, the spatial
axes are flattened and the output is computed "wide": output sample ``n`` sits at flat
index ``sum(n_d * row_stride_d)`` of the padded grid, so the input under kernel tap ``m``
is one contiguous slice at offset ``sum(m_d * dilation_d * row_stride_d)``. Each tap is
then a plain strided view that BLAS reads without a copy; the few "junk" columns past
each row's end are computed and dropped. One extra zero row after the padded grid lets
every chunk read whole rows. With strides > 1, a tap is a stepped N-D view.

Work is cut into chunks of batch items and output rows (first spatial axis), each
written into its own part of the output, so chunks may run in parallel.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._runtime.backend import Array, Backend
from .._runtime.cache import LRUCache
from .._runtime.scratch import reused
from .._runtime.threads import even_chunk_length
from .._spec.boundary import extend, halo_copies, past_one_copy
from .._spec.problem import Problem

_layouts = LRUCache("tap_layouts", maxsize=64)


@dataclass(frozen=True, slots=True)
class Chunk:
    """Batch items ``b0:b1`` and output rows ``r0:r1``."""

    b0: int
    b1: int
    r0: int
    r1: int


@dataclass(frozen=True)
class Layout:
    """Where each kernel tap reads, computed once per problem (the taps' indices and
    offsets when first asked for: the cost model needs only the rows' shape, and a kernel
    of 10**6 taps makes lists that take seconds).

    Attributes
    ----------
    problem : Problem
        The problem laid out.
    taps : list of tuple of int
        Kernel tap indices, C order.
    row_shape : tuple of int
        Shape of one output row in a chunk's flat buffer (padded row when wide).
    row_length : int
        ``prod(row_shape)``.
    offsets : list of int
        Flat offset of each tap in the padded grid (unit stride only).
    """

    problem: Problem
    row_shape: tuple[int, ...]
    row_length: int

    @functools.cached_property
    def taps(self) -> list[tuple[int, ...]]:
        return list(itertools.product(*(range(k) for k in self.problem.kernel)))

    @functools.cached_property
    def offsets(self) -> list[int]:
        p = self.problem
        if not p.unit_stride:
            return []
        steps = [d * s for d, s in zip(p.dilation, _flat_strides(p.padded))]
        indices = np.indices(p.kernel, dtype=np.int64).reshape(len(p.kernel), -1)
        return (np.asarray(steps, np.int64) @ indices).tolist()

    def chunk_length(self, chunk: Chunk) -> int:
        """Flat samples per batch item of `chunk`: whole rows, junk columns included."""
        return (chunk.r1 - chunk.r0) * self.row_length

    def chunks(self, bytes_per_sample: int, target_bytes: int, *, exact: bool = False, parts: int = 1) -> list[Chunk]:
        """Chunks of at most about `target_bytes` at `bytes_per_sample` per flat output
        sample (per output sample, junk columns left out, when `exact`); where there are
        several, near-equal and as many as a multiple of `parts` allows, for `parts`
        threads to share (:func:`.._threads.even_chunk_length`)."""
        p = self.problem
        rows = p.out_spatial[0]
        items, rows_per_chunk = self._chunk_size(bytes_per_sample, target_bytes, exact, parts)
        if rows_per_chunk == rows:
            return [Chunk(b, min(b + items, p.batch), 0, rows) for b in range(0, p.batch, items)]
        return [
            Chunk(b, b + 1, r, min(r + rows_per_chunk, rows))
            for b in range(p.batch)
            for r in range(0, rows, rows_per_chunk)
        ]

    def item_runs(self, bytes_per_sample: int, target_bytes: int) -> int:
        """``sum(c.b1 - c.b0 for c in self.chunks(bytes_per_sample, target_bytes))``: each
        batch item once per chunk of its rows, without listing the chunks."""
        p = self.problem
        rows = p.out_spatial[0]
        _, rows_per_chunk = self._chunk_size(bytes_per_sample, target_bytes, False, 1)
        return p.batch * -(-rows // rows_per_chunk)

    def _chunk_size(self, bytes_per_sample: int, target_bytes: int, exact: bool, parts: int) -> tuple[int, int]:
        """Batch items and output rows of each of :meth:`chunks`' chunks."""
        p = self.problem
        rows = p.out_spatial[0]
        items, rows_per_chunk = self.chunk_extent(bytes_per_sample, target_bytes, exact=exact)
        if rows_per_chunk == rows:
            return even_chunk_length(p.batch, items, 1, parts), rows
        return items, even_chunk_length(rows, rows_per_chunk, p.batch, parts)

    def share_bytes(self, bytes_per_sample: int, parts: int) -> int:
        """Bytes of a chunk (at `bytes_per_sample` per flat output sample) that gives each of
        `parts` threads one: whole items where there are as many, else rows of one item."""
        p = self.problem
        row_bytes, rows = self.row_length * bytes_per_sample, p.out_spatial[0]
        if p.batch >= parts:
            return row_bytes * rows * -(-p.batch // parts)
        return row_bytes * -(-rows // parts)

    def chunk_extent(self, bytes_per_sample: int, target_bytes: int, *, exact: bool = False) -> tuple[int, int]:
        """Batch items and output rows of :meth:`chunks`' first chunk (whole items, or rows
        of one item), without listing them all."""
        p = self.problem
        rows = p.out_spatial[0]
        per_row = max(1, (math.prod(p.out_spatial[1:]) if exact else self.row_length) * bytes_per_sample)
        rows_per_chunk = max(1, target_bytes // per_row)
        if rows_per_chunk >= rows:
            return min(p.batch, max(1, target_bytes // (per_row * rows))), rows
        return 1, rows_per_chunk

    def tap_block(self, padded: Array, t: int, chunk: Chunk) -> Array:
        """Input under tap number `t` for `chunk`: ``(Bc, G, Cg, chunk_length)``.

        A view (no copy) for unit stride; a copy of a stepped view otherwise.
        """
        p = self.problem
        if p.unit_stride:
            start = chunk.r0 * self.row_length + self.offsets[t]
            return padded[chunk.b0 : chunk.b1, :, :, start : start + self.chunk_length(chunk)]
        block = self.tap_window(padded, t, chunk)
        return block.reshape(*block.shape[:3], -1)

    def tap_window(self, grid: Array, t: int, chunk: Chunk) -> Array:
        """Input under tap number `t` for `chunk`, a view of the padded `grid`
        ``(B, G, Cg, *padded)``: ``(Bc, G, Cg, rows, *out_spatial[1:])``, any stride."""
        p = self.problem
        counts = (chunk.r1 - chunk.r0, *p.out_spatial[1:])
        firsts = (chunk.r0 * p.stride[0], *(0,) * (len(counts) - 1))
        window = tuple(
            slice(f + m * d, f + m * d + (n - 1) * s + 1, s)
            for f, m, d, n, s in zip(firsts, self.taps[t], p.dilation, counts, p.stride)
        )
        return grid[(slice(chunk.b0, chunk.b1), slice(None), slice(None), *window)]

    def output_windows(self, grid: Array, chunk: Chunk, backend: Backend) -> Array:
        """Every tap's input for `chunk` at once, any stride: a strided view (no copy)
        ``(Bc, G, *kernel, Cg, rows, *out_spatial[1:])`` of the padded `grid` ``(B, G,
        Cg, *padded)``, output samples only (:meth:`tap_window` of each tap, stacked)."""
        p = self.problem
        base = grid[chunk.b0 : chunk.b1, :, :, chunk.r0 * p.stride[0] :]
        axes = base.strides[3:]
        shape = (*base.shape[:2], *p.kernel, base.shape[2], chunk.r1 - chunk.r0, *p.out_spatial[1:])
        steps = (*(d * a for d, a in zip(p.dilation, axes)), base.strides[2], *(s * a for s, a in zip(p.stride, axes)))
        return backend.xp.lib.stride_tricks.as_strided(base, shape=shape, strides=(*base.strides[:2], *steps))

    def tap_windows(self, padded: Array, chunk: Chunk, backend: Backend) -> Array:
        """Every tap's input for `chunk` at once, unit stride only: a strided view (no
        copy) ``(Bc, G, Cg, *kernel, chunk_length)`` of the wide padded input."""
        p = self.problem
        start = chunk.r0 * self.row_length
        base = padded[chunk.b0 : chunk.b1, :, :, start:]
        size = padded.itemsize
        steps = tuple(d * s * size for d, s in zip(p.dilation, _flat_strides(p.padded)))
        shape = (*base.shape[:3], *p.kernel, self.chunk_length(chunk))
        strides = (*base.strides[:3], *steps, size)
        return backend.xp.lib.stride_tricks.as_strided(base, shape=shape, strides=strides)

    def store_block(self, out: Array, block: Array, chunk: Chunk) -> None:
        """Write a chunk's result ``(Bc, G, Og, chunk_length)`` into `out` ``(B, G, Og, *out)``."""
        grid = block.reshape(*block.shape[:3], chunk.r1 - chunk.r0, *self.row_shape)
        keep = tuple(slice(0, n) for n in self.problem.out_spatial[1:])
        rows = slice(chunk.r0, chunk.r1)
        assign_rows(out[(slice(chunk.b0, chunk.b1), slice(None), slice(None), rows)], grid[(..., *keep)])


def assign_rows(dst: Array, src: Array) -> None:
    """``dst[...] = src``; on NumPy, when both have contiguous last-axis rows of one dtype,
    each row moves as one element: numpy's copy loop pays for every innermost run, so a
    (100, 32, 16, 16) result stored from padded 18-sample rows took 376 us by sample runs
    and 159 us by rows."""
    rows = isinstance(dst, np.ndarray) and isinstance(src, np.ndarray) and dst.shape == src.shape and dst.ndim and dst.size
    if rows and dst.dtype == src.dtype and dst.strides[-1] == src.strides[-1] == dst.itemsize:
        dst, src = row_elements(dst), row_elements(src)
    dst[...] = src


def row_elements(a: np.ndarray) -> np.ndarray:
    """`a` (NumPy, contiguous last axis) with each last-axis row viewed as one void element,
    so that copies move whole rows: shape ``(*a.shape[:-1], 1)``."""
    return a.view(np.dtype((np.void, a.shape[-1] * a.itemsize)))


def layout(problem: Problem) -> Layout:
    """The tap layout of `problem` (cached: the cost model asks for it several times)."""
    return _layouts.get_or_make(problem, lambda: _layout(problem))


def _layout(problem: Problem) -> Layout:
    p = problem
    if not p.unit_stride:
        return Layout(p, p.out_spatial[1:], math.prod(p.out_spatial[1:]))
    return Layout(p, p.padded[1:], _flat_strides(p.padded)[0])


def reads_in_place(problem: Problem) -> bool:
    """Whether the taps read the input itself: no padding, and either a stride (stepped
    views of the input, no junk columns) or taps along the first axis only (1x1 kernels,
    say), so that no junk column reads past the grid. Copying the whole input first cost a
    strided 1x1 conv over 64 float64 images of 4x128x128 8.4 of its 9.3 ms."""
    p = problem
    return not p.pads and (not p.unit_stride or all(k == 1 for k in p.kernel[1:]))


def pad_input(x: Array, problem: Problem, backend: Backend, tail: int = 0) -> Array:
    """`x` padded (with zeros, or periodically) into a new array: ``(B, G, Cg, *padded)``,
    or when wide ``(B, G, Cg, prod(padded) + row + tail)`` with the grid flattened and one
    zero row and `tail` more zeros after it; `x` itself where it :func:`reads_in_place` and
    no `tail` is asked for, as ``(B, G, Cg, prod(spatial))`` (with a stride, ``(B, G, Cg,
    *spatial)``)."""
    p = problem
    lead = (p.batch, p.groups, p.in_per_group)
    if reads_in_place(p) and not tail:
        if not p.unit_stride:
            return x.reshape(*lead, *p.spatial)
        return backend.xp.ascontiguousarray(x).reshape(*lead, -1)
    flat = zeros((*lead, flat_length(p) + tail), x.dtype, backend)
    grid = padded_grid(flat, p)
    padded = flat if p.unit_stride else grid
    x = x.reshape(*lead, *p.spatial)
    axes, pads = tuple(range(3, 3 + len(p.spatial))), tuple(zip(p.pad_lo, p.pad_hi))
    if p.circular and any(past_one_copy(n, pad, "wrap") for n, pad in zip(p.spatial, pads)):
        grid[...] = extend(backend.xp, x, axes, pads, "wrap")
        return padded
    grid[(..., *(slice(lo, lo + n) for lo, n in zip(p.pad_lo, p.spatial)))] = x
    if p.circular:  # each halo is a copy of the grid one period away, axis after axis
        for edge, source in halo_copies((*lead, *p.spatial), axes, pads, "wrap"):
            grid[edge] = grid[source]
    return padded


def padded_rows(x: Array, chunk: Chunk, problem: Problem, backend: Backend, wide: bool = False) -> Array:
    """The input under `chunk`'s output rows, zero-padded into this thread's scratch buffer
    (a new array past :data:`.._scratch.REUSED_BYTES`, :func:`zeros`):
    ``(Bc, G, Cg, rows, *padded[1:])`` from `x` ``(B, G, Cg, *spatial)``, whose row 0 is
    padded row ``r0 * stride`` (the grid that :meth:`Layout.output_windows` reads for
    ``Chunk(0, Bc, 0, r1 - r0)``); when `wide`, with one zero row more and flattened to
    ``(Bc, G, Cg, (rows + 1) * prod(padded[1:]))``, as :func:`pad_input` lays out the whole
    input (what :meth:`Layout.tap_block` reads for that chunk, unit stride). A chunk's rows
    are a small part of the input, so padding them where they are read keeps them in
    cache and, chunks running on several threads, pads on all of them."""
    p = problem
    shape = padded_rows_shape(chunk, p)
    first, rows = chunk.r0 * p.stride[0], shape[3]
    if wide:
        shape = (*shape[:3], rows + 1, *shape[4:])
    grid = scratch_or_new("taps.padded_rows", shape, x.dtype, backend)
    lo = max(first, p.pad_lo[0])
    hi = max(lo, min(first + rows, p.pad_lo[0] + p.spatial[0]))
    inner = (slice(lo - first, hi - first), *(slice(pad, pad + n) for pad, n in zip(p.pad_lo[1:], p.spatial[1:])))
    grid[(..., *inner)] = x[chunk.b0 : chunk.b1, :, :, lo - p.pad_lo[0] : hi - p.pad_lo[0]]
    zero_margins(grid, inner)
    return grid.reshape(*shape[:3], -1) if wide else grid


def zero_margins(grid: Array, inner: tuple[slice, ...]) -> None:
    """Zero `grid` outside the box `inner` (slices with a start and stop, of its last
    axes): a pass over the margins only, where the box holds a copy of the input."""
    lead = (slice(None),) * (grid.ndim - len(inner))
    for axis, box in enumerate(inner):
        before, after = (*lead, *inner[:axis]), (slice(None),) * (len(inner) - axis - 1)
        grid[(*before, slice(0, box.start), *after)] = 0
        grid[(*before, slice(box.stop, None), *after)] = 0


def chunk_input(whole: Array | None, x: Array, chunk: Chunk, problem: Problem, backend: Backend, wide: bool = False) -> tuple[Array, Chunk]:
    """The padded input that `chunk`'s taps read, and the chunk's place in it: `whole` (padded
    once for every chunk) at `chunk`; where `whole` is None, the chunk's own rows of `x`
    (:func:`padded_rows`) from their first."""
    if whole is not None:
        return whole, chunk
    return padded_rows(x, chunk, problem, backend, wide), Chunk(0, chunk.b1 - chunk.b0, 0, chunk.r1 - chunk.r0)


def pads_periodically(problem: Problem) -> bool:
    """Whether `problem` pads periodically (circular padding of some samples): its halos
    are copies from the far side of the input, so a chunk cannot pad its own rows
    (:func:`padded_rows`)."""
    return problem.circular and problem.pads


def padded_rows_shape(chunk: Chunk, problem: Problem) -> tuple[int, ...]:
    """Shape of :func:`padded_rows` for `chunk`: the padded rows its output rows read."""
    p = problem
    rows = (chunk.r1 - chunk.r0 - 1) * p.stride[0] + (p.kernel[0] - 1) * p.dilation[0] + 1
    return (chunk.b1 - chunk.b0, p.groups, p.in_per_group, rows, *p.padded[1:])


def zeros(shape: tuple[int, ...], dtype: np.dtype[Any], backend: Backend, name: str = "taps.padded") -> Array:
    """Zeros: in this thread's scratch buffer `name` up to :data:`.._scratch.REUSED_BYTES`
    (:func:`reused`), a new array above (so that no thread keeps a large one)."""
    buffer = reused(name, shape, dtype, backend)
    if buffer is None:
        return backend.xp.zeros(shape, dtype)
    buffer.fill(0)
    return buffer


def scratch_or_new(name: str, shape: tuple[int, ...], dtype: np.dtype[Any], backend: Backend) -> Array:
    """Uninitialised: this thread's scratch buffer `name` up to
    :data:`.._scratch.REUSED_BYTES`, a new array above."""
    buffer = reused(name, shape, dtype, backend)
    return backend.xp.empty(shape, dtype) if buffer is None else buffer


def flat_length(problem: Problem) -> int:
    """Samples per map of :func:`pad_input`'s padded input: the padded grid, and when
    wide the zero row after it."""
    p = problem
    return math.prod(p.padded) + (math.prod(p.padded[1:]) if p.unit_stride else 0)


def padded_grid(padded: Array, problem: Problem) -> Array:
    """A padded input laid out as by :func:`pad_input`, as ``(B, G, Cg, *padded)`` (a view)."""
    lead = padded.shape[:3]
    return padded.reshape(*lead, -1)[..., : math.prod(problem.padded)].reshape(*lead, *problem.padded)


def padded_bytes(problem: Problem) -> int:
    """Bytes of the padded input copy (none where the taps read the input in place)."""
    p = problem
    if reads_in_place(p):
        return 0
    return p.batch * p.groups * p.in_per_group * flat_length(p) * p.dtype.itemsize


def _flat_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of `shape`."""
    strides = [1] * len(shape)
    for ax in range(len(shape) - 2, -1, -1):
        strides[ax] = strides[ax + 1] * shape[ax + 1]
    return tuple(strides)
