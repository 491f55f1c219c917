"""Registry of the algorithms that solve a :class:`~arrayconv._problem.Problem`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._backend import Array, Backend
from .._problem import Problem
from .._rates import Rates


@dataclass(frozen=True, slots=True)
class Cost:
    """Estimated cost of one method on one problem.

    Attributes
    ----------
    seconds : float
        Estimated run time.
    temp_bytes : int
        Peak bytes of temporaries beyond the input, kernel and output.
    """

    seconds: float
    temp_bytes: int


@dataclass(frozen=True, slots=True)
class Method:
    """One algorithm.

    Attributes
    ----------
    name : str
        The value of ``method=`` that selects it.
    run : callable
        ``run(x, w, problem, backend) -> y``; `x` and `w` already in ``work_dtype``.
    work_dtype : callable
        ``work_dtype(problem) -> dtype`` the method computes in.
    unsupported : callable
        ``unsupported(problem, backend, memory_limit) -> str | None``: why it cannot run.
    cost : callable
        ``cost(problem, rates) -> Cost``.
    """

    name: str
    run: Callable[[Array, Array, Problem, Backend], Array]
    work_dtype: Callable[[Problem], np.dtype[Any]]
    unsupported: Callable[[Problem, Backend, int], str | None]
    cost: Callable[[Problem, Rates], Cost]


METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add `method` to :data:`METHODS`; a name may be registered once."""
    if method.name in METHODS:
        msg = f"method {method.name!r} is already registered"
        raise KeyError(msg)
    METHODS[method.name] = method
    return method


def exact_dtype(problem: Problem) -> np.dtype[Any]:
    """Methods that sum products directly compute in the problem's own dtype (ints exactly)."""
    return problem.dtype


from . import direct, fft, im2col  # noqa: E402,F401  (registration order = tie-break order)
