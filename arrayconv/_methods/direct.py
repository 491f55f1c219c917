"""Direct method: accumulate one kernel tap at a time, in cache-sized chunks.

For each tap, ``y += w[..., tap] @ x_tap`` (a small GEMM over input channels; an
elementwise multiply-add when each group has one input channel). Nothing larger than the
padded input is ever allocated; chunks run on :func:`arrayconv.config` ``workers`` threads.
"""

from __future__ import annotations

import math

from .. import _config
from .._backend import Array, Backend
from .._problem import Problem
from .._rates import Rates
from . import Cost, Method, exact_dtype, register
from ._taps import layout, pad_input, padded_bytes, run_chunks

# Bytes of one chunk's working set: small enough to stay in a core's L2 cache.
_CHUNK_BYTES = 256 << 10


def _bytes_per_sample(problem: Problem) -> int:
    return problem.groups * (problem.in_per_group + problem.out_per_group) * problem.dtype.itemsize


def run(x: Array, w: Array, problem: Problem, backend: Backend) -> Array:
    """Solve `problem` by direct summation over kernel taps."""
    p, xp = problem, backend.xp
    padded, lay = pad_input(x, p, backend), layout(p)
    w_taps = w.reshape(p.groups, p.out_per_group, p.in_per_group, -1)
    out = xp.empty((p.batch, p.groups, p.out_per_group, *p.out_spatial), dtype=x.dtype)

    def job(chunk):  # type: ignore[no-untyped-def]
        shape = (chunk.b1 - chunk.b0, p.groups, p.out_per_group, lay.chunk_length(chunk))
        acc = xp.zeros(shape, dtype=x.dtype)
        for t in range(len(lay.taps)):
            x_tap, w_tap = lay.tap_block(padded, t, chunk), w_taps[..., t]
            if p.in_per_group == 1:
                acc += w_tap * x_tap
            else:
                acc += xp.matmul(w_tap, x_tap)
        lay.store_block(out, acc, chunk)

    work = lay.chunks(_bytes_per_sample(p), _CHUNK_BYTES)
    run_chunks(work, job, _config.workers() if backend.name == "numpy" else 1)
    return out.reshape(p.y_shape)


def unsupported(problem: Problem, backend: Backend, memory_limit: int) -> str | None:
    """The direct method runs on every problem that fits in memory."""
    if padded_bytes(problem) > memory_limit:
        return f"its padded input copy needs more than memory_limit={memory_limit} bytes"
    return None


def cost(problem: Problem, rates: Rates) -> Cost:
    """Tap-by-tap time: small GEMMs run far below peak, elementwise passes at cache speed."""
    p = problem
    n_taps = math.prod(p.kernel)
    samples = p.batch * p.groups * math.prod(p.out_spatial)
    n_chunks = max(1, samples * _bytes_per_sample(p) // _CHUNK_BYTES)
    if p.in_per_group == 1:
        seconds = n_taps * samples * p.out_per_group * 4 * p.dtype.itemsize / (4 * rates.stream_bytes)
    else:
        efficiency = min(1.0, p.in_per_group * p.out_per_group / 4096)
        seconds = 2 * p.macs / (rates.gemm_flops * max(efficiency, 0.02))
    seconds += n_taps * n_chunks * 2 * rates.call_seconds
    return Cost(seconds, padded_bytes(p))


METHOD = register(Method("direct", run, exact_dtype, unsupported, cost))
