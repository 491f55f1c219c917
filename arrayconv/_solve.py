"""Run a :class:`Problem`: pick the method, cast to its dtype, run, cast to the result dtype."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _config
from ._backend import Array, Backend
from ._choose import choose
from ._methods import METHODS
from ._problem import Problem

# Integer results up to this bound are exact in float64 arithmetic, so FFT may compute them.
_EXACT_FLOAT64 = 2 ** np.finfo(np.float64).nmant - 1


def int_guard(x: Array, w: Array, terms: int) -> dict[str, str]:
    """Methods that could round an integer result: those computing in float.

    Mirrors SciPy's ``choose_conv_method``: FFT is excluded when
    ``max|x| * max|w| * terms`` could exceed 2**52.
    """
    if np.result_type(x.dtype, w.dtype).kind not in "iu":
        return {}
    bound = _abs_max(x) * _abs_max(w) * terms
    if bound <= _EXACT_FLOAT64:
        return {}
    return {"fft": f"integer result up to {bound} is not exact in float64"}


def _abs_max(a: Array) -> int:
    return max(abs(int(a.min())), abs(int(a.max())))


def solve(
    x: Array,
    w: Array,
    problem: Problem,
    backend: Backend,
    method: str,
    excluded: dict[str, str] | None = None,
) -> Array:
    """Solve `problem` with `method` ('auto' chooses) and return ``y`` in the method's dtype."""
    limit = _config.memory_limit()
    if method == "auto":
        method = choose(problem, backend, limit, excluded).method
    elif reason := METHODS[method].unsupported(problem, backend, limit):
        msg = f"method {method!r} cannot run this problem: {reason}"
        raise ValueError(msg)
    chosen = METHODS[method]
    dtype = chosen.work_dtype(problem)
    return chosen.run(x.astype(dtype, copy=False), w.astype(dtype, copy=False), problem, backend)


def to_result(y: Array, dtype: np.dtype[Any], backend: Backend) -> Array:
    """`y` as `dtype`: integer results computed in float are rounded first, as SciPy does."""
    if dtype.kind in "iu" and y.dtype.kind == "f":
        y = backend.xp.rint(y)
    return y.astype(dtype, copy=False)


def terms(problem: Problem) -> int:
    """Products summed into one output sample."""
    return problem.in_per_group * math.prod(problem.kernel)
