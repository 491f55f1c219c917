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
    prepare_seconds : float
        Of `seconds`, the time of ``prepare`` (the kernel's form: spectra, an operator
        matrix), which a plan pays once.
    """

    seconds: float
    temp_bytes: int
    prepare_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class Method:
    """One algorithm.

    Attributes
    ----------
    name : str
        The value of ``method=`` that selects it.
    prepare : callable
        ``prepare(w, problem, backend) -> kernel``: the kernel in the form `run` uses
        (reshaped taps, or spectra), computed once per plan; `w` already in ``work_dtype``.
    run : callable
        ``run(x, kernel, problem, backend, out=None) -> y``; `x` already in
        ``work_dtype``; `out`, when given, a C-contiguous array of ``problem.y_shape``
        in that dtype, which `run` fills and returns.
    work_dtype : callable
        ``work_dtype(problem) -> dtype`` the method computes in.
    unsupported : callable
        ``unsupported(problem, backend, memory_limit) -> str | None``: why it cannot run.
    cost : callable
        ``cost(problem, backend, rates) -> Cost``.
    sums_products : callable
        ``sums_products(kernel) -> bool``: whether `run` with this prepared kernel sums
        exactly the products of the kernel's footprint, so that a NaN or inf reaches only
        the outputs whose footprint covers it (IEEE: NaN * w is NaN); False when it also
        multiplies samples outside the footprint by zeros (a transform, an operator
        matrix), which the NaN policy then handles with a mask.
    """

    name: str
    prepare: Callable[[Array, Problem, Backend], Any]
    run: Callable[..., Array]
    work_dtype: Callable[[Problem], np.dtype[Any]]
    unsupported: Callable[[Problem, Backend, int], str | None]
    cost: Callable[[Problem, Backend, Rates], Cost]
    sums_products: Callable[[Any], bool] = lambda kernel: False


METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add `method` to :data:`METHODS`; a name may be registered once."""
    if method.name in METHODS:
        msg = f"method {method.name!r} is already registered"
        raise KeyError(msg)
    METHODS[method.name] = method
    return method


def output(out: Array | None, problem: Problem, backend: Backend, dtype: np.dtype[Any]) -> Array:
    """The array a method writes its result into, as ``(B, G, Og, *out_spatial)``:
    `out` (from the caller) or a new one."""
    p = problem
    shape = (p.batch, p.groups, p.out_per_group, *p.out_spatial)
    return backend.xp.empty(shape, dtype=dtype) if out is None else out.reshape(shape)


def exact_dtype(problem: Problem) -> np.dtype[Any]:
    """Methods that sum products directly compute in the problem's own dtype (ints exactly)."""
    return problem.dtype


from . import direct, fft, im2col, overlap  # noqa: E402,F401  (registration order = tie-break order)
