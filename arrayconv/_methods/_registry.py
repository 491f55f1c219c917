"""The record of one algorithm (:class:`Method`, its :class:`Cost`) and the registry of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._runtime.backend import Array, Backend
from .._runtime.config import Settings
from .._runtime.rates import Rates
from .._spec.problem import Problem


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
    forms : tuple of (str, float)
        Estimated seconds of each form the method could run the problem in, fastest first,
        where it has several (direct on the CPU: taps, rows, banded, separable, compiled);
        `seconds` is the one it runs.
    """

    seconds: float
    temp_bytes: int
    prepare_seconds: float = 0.0
    forms: tuple[tuple[str, float], ...] = ()


def _none(*args: Any) -> None:
    return None


def _as_prepared(kernel: Any, *args: Any) -> Any:
    return kernel


@dataclass(frozen=True, slots=True)
class Shortcuts:
    """What a method may offer a plan beyond ``prepare`` and ``run`` (each default: no
    shortcut).

    Attributes
    ----------
    unplanned : callable
        ``unplanned(kernel, problem) -> f(x, w) | None``: the run's result from the input
        `x` and the kernel's taps `w` as they are (in the problem's sample order), for a
        caller that skips the plan's steps.
    single_call : callable
        ``single_call(kernel, problem) -> f(x) | None``: that run with the prepared
        kernel's own taps.
    reading_edges : callable
        ``reading_edges(kernel, problem, extension, ndim) -> kernel | None``: the kernel
        made to read an input of `ndim` dims before the boundary `extension`, past its
        edges by the rule.
    reads_dtype : callable
        ``reads_dtype(dtype) -> bool``: whether such a kernel reads inputs of `dtype`
        without a converted copy.
    reading_in_place : callable
        ``reading_in_place(kernel, w, problem, backend, copied_bytes) -> kernel``: the
        prepared kernel, or another form of it that reads the input as given where that is
        estimated faster once the copy of `copied_bytes` it skips is counted.
    bound_call : callable
        ``bound_call(kernel, problem, x_shape) -> f(x, out) | None``: ``run`` for inputs of
        `x_shape` (in the problem's layout) into `out` (C-contiguous, the problem's dtype),
        with what does not depend on the arrays found once, for a plan that calls it
        without its other steps.
    """

    unplanned: Callable[[Any, Problem], Callable[[Array, Array], Array] | None] = _none
    single_call: Callable[[Any, Problem], Callable[[Array], Array] | None] = _none
    reading_edges: Callable[..., Any] = _none
    reads_dtype: Callable[[np.dtype[Any]], bool] = lambda dtype: False
    reading_in_place: Callable[..., Any] = _as_prepared
    bound_call: Callable[..., Callable[[Array, Array], None] | None] = _none


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
        ``cost(problem, backend, rates, settings) -> Cost``: a pure function of its
        arguments (the workers and memory budget come in `settings`).
    sums_products : callable
        ``sums_products(kernel) -> bool``: whether `run` with this prepared kernel sums
        exactly the products of the kernel's footprint, so that a NaN or inf reaches only
        the outputs whose footprint covers it (IEEE: NaN * w is NaN); False when it also
        multiplies samples outside the footprint by zeros (a transform, an operator
        matrix), which the NaN policy then handles with a mask.
    shortcuts : Shortcuts
        What the method offers a plan beyond ``prepare`` and ``run``.
    """

    name: str
    prepare: Callable[[Array, Problem, Backend], Any]
    run: Callable[..., Array]
    work_dtype: Callable[[Problem], np.dtype[Any]]
    unsupported: Callable[[Problem, Backend, int], str | None]
    cost: Callable[[Problem, Backend, Rates, Settings], Cost]
    sums_products: Callable[[Any], bool] = lambda kernel: False
    shortcuts: Shortcuts = Shortcuts()


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
