"""The patch-stack CUDA kernel: one filter bank applied to thousands of small patches.

A block holds a tile of ``DT`` filters, laid out ``(C, KH, KW, DT)``, and a tile of
``PT`` zero-padded patches ``(C, HP, WP)`` in shared memory; no column matrix is ever
written to global memory. Each thread computes ``RD`` filters times one output row of
one patch: per input channel and kernel row it copies the padded input row into
registers, then does ``RD * OW`` multiply-adds per kernel column. The block loads its
filters once and then walks patch tiles (a grid-stride loop). Shapes are compile-time
constants: the kernel is compiled once per (dtype, shape class) and cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._runtime.backend import Array, Backend
from .._runtime.cache import LRUCache
from .._runtime.cuda import blocks, kernel, multiprocessors

_SOURCE = Path(__file__).with_name("patch_correlate.cu").read_text()

# Dtypes the kernel is compiled for; others take the conv path.
DTYPES = ("float32", "float64")
# Widest padded patch row held in registers.
MAX_PADDED_WIDTH = 40
# Accumulators per thread (RD * OW) kept in registers.
_MAX_ACCUMULATORS = 32
_TARGET_THREADS = 256
_BANKS = 32


@dataclass(frozen=True, slots=True)
class Layout:
    """Tile sizes and compile-time shape of one patch problem."""

    constants: dict[str, int]
    threads: int
    shared_bytes: int
    filter_tiles: int


_layouts = LRUCache("patch_layouts", maxsize=64)


def layout(x_shape: tuple[int, ...], w_shape: tuple[int, ...], padding: tuple[int, int],
           stride: tuple[int, int], dtype: np.dtype[Any], shared_limit: int) -> Layout | None:
    """Tiles for patches `x_shape` ``(P, C, H, W)`` and filters `w_shape` ``(D, C, KH, KW)``
    within `shared_limit` bytes of shared memory a block (the device's:
    :func:`._cuda.shared_memory_limit`); None when the kernel does not take the problem
    (dtype, patch width, shared memory). Cached: the search for a conflict-free patch
    stride costs a millisecond of Python."""
    key = (x_shape[1:], w_shape, padding, stride, np.dtype(dtype), shared_limit)
    return _layouts.get_or_make(key, lambda: _layout(x_shape, w_shape, padding, stride, dtype, shared_limit))


def _layout(x_shape: tuple[int, ...], w_shape: tuple[int, ...], padding: tuple[int, int],
            stride: tuple[int, int], dtype: np.dtype[Any], shared_limit: int) -> Layout | None:
    _, channels, h, w = x_shape
    d, _, kh, kw = w_shape
    hp, wp = h + 2 * padding[0], w + 2 * padding[1]
    stride = (min(stride[0], hp), min(stride[1], wp))  # past the patch: one output, the same as at its size
    oh, ow = (hp - kh) // stride[0] + 1, (wp - kw) // stride[1] + 1
    size = np.dtype(dtype).itemsize
    if np.dtype(dtype).name not in DTYPES or wp > MAX_PADDED_WIDTH or ow > _MAX_ACCUMULATORS:
        return None
    rd = min(8, 1 << ((_MAX_ACCUMULATORS // ow).bit_length() - 1), 1 << (d - 1).bit_length())  # powers of two
    dt = min(-(-d // rd) * rd, 64)
    while True:
        groups_per_patch = oh * (dt // rd)
        weights = channels * kh * kw * dt * size
        room = (shared_limit - weights) // ((channels * hp * wp + _BANKS) * size)
        pt = min(max(1, _TARGET_THREADS // groups_per_patch), room)
        fits = pt >= 1 and pt * groups_per_patch <= 1024
        if fits and (pt * groups_per_patch >= _TARGET_THREADS // 2 or dt <= rd):
            break  # enough threads, or the filter tile cannot shrink further
        if dt <= rd:
            return None
        dt = max(rd, dt // 2 // rd * rd)
    stride_x = _patch_stride(channels * hp * wp, pt, oh, stride[0] * wp, size)
    shared = weights + pt * stride_x * size
    constants = dict(THREADS=pt * groups_per_patch, C=channels, H=h, W=w, KH=kh, KW=kw, PH=padding[0], PW=padding[1],
                     SH=stride[0], SW=stride[1], OH=oh, OW=ow, HP=hp, WP=wp, D=d,
                     DT=dt, RD=rd, PT=pt, XSTRIDE=stride_x, WALIGN=min(16, rd * size))
    return Layout(constants, pt * groups_per_patch, shared, -(-d // dt))


def _patch_stride(length: int, patches: int, rows: int, row_step: int, size: int) -> int:
    """Elements between patches in shared memory: at least `length`, padded so the threads
    of a warp (``rows`` output rows of consecutive patches) hit the fewest shared banks."""
    words = max(1, size // 4)
    lanes = [(q, p) for p in range(patches) for q in range(rows)][:_BANKS]

    def worst(stride: int) -> int:
        hits: dict[int, int] = {}
        for q, p in lanes:
            bank = ((p * stride + q * row_step) * words) % _BANKS
            hits[bank] = hits.get(bank, 0) + 1
        return max(hits.values())

    return min(range(length, length + _BANKS), key=lambda s: (worst(s), s))


def run(x: Array, w: Array, lay: Layout, backend: Backend) -> Array:
    """``y (P, D, OH, OW)`` for patches `x` ``(P, C, H, W)`` and filters `w`, both
    C-contiguous in the kernel's dtype."""
    xp, c = backend.xp, lay.constants
    patches = x.shape[0]
    y = xp.empty((patches, c["D"], c["OH"], c["OW"]), dtype=x.dtype)
    fn = kernel(_SOURCE, "patch_correlate", x.dtype, **c)
    if lay.shared_bytes > 48 << 10:
        fn.max_dynamic_shared_size_bytes = lay.shared_bytes
    sms = multiprocessors(backend.device or 0)
    grid = (min(blocks(patches, c["PT"]), 8 * sms), lay.filter_tiles)
    fn(grid, (lay.threads,), (x, w, y, np.int64(patches)), shared_mem=lay.shared_bytes)
    return y

