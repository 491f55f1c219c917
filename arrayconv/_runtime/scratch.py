"""Per-thread scratch buffers, reused across calls to avoid fresh pages on every chunk.

Fresh allocations of a few MiB cost page faults that can exceed the arithmetic of a small
problem (case a of the benchmarks ran 2.5x slower without reuse). Each thread keeps one
buffer per name and device, grown to the largest request; buffers are never shared between
threads. Their size is bounded by the methods' chunk budgets, and for padded inputs and
the separable form's row pass by 16 MiB (:data:`REUSED_BYTES`, :func:`reused`).
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from .backend import Array, Backend

_local = threading.local()
# Arrays up to this size reuse a scratch buffer (:func:`reused`).
REUSED_BYTES = 16 << 20


def scratch(name: str, shape: tuple[int, ...], dtype: np.dtype[Any], backend: Backend) -> Array:
    """An uninitialised array of `shape` and `dtype`, private to this thread and `name`."""
    pool: dict[tuple[str, str, int | None], Array] = _local.__dict__.setdefault("pool", {})
    key = (name, backend.name, backend.device)
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    buffer = pool.get(key)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = pool[key] = backend.xp.empty(nbytes, dtype=np.uint8)
    return buffer[:nbytes].view(dtype).reshape(shape)


def clear() -> None:
    """Drop this thread's scratch buffers."""
    _local.__dict__.pop("pool", None)


def reused(name: str, shape: tuple[int, ...], dtype: np.dtype[Any], backend: Backend) -> Array | None:
    """This thread's scratch buffer `name` (uninitialised) for arrays up to
    :data:`REUSED_BYTES` (fresh pages of a few MiB fault at a cost larger than the filters
    of a mid-size image: a 512x512 3x3 float32 correlation ran 3.4 ms with fresh buffers,
    0.9 ms reusing them); None above, where a new array is better (NumPy backs those with
    huge pages)."""
    if math.prod(shape) * np.dtype(dtype).itemsize > REUSED_BYTES:
        return None
    return scratch(name, shape, dtype, backend)
