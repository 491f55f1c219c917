"""Plans: one kernel, one input shape and dtype, one method, applied to many inputs.

Every public function builds a :class:`Plan` and calls it once; a user who filters many
frames with the same kernel keeps the plan, so the method choice, the kernel in the
method's form (its spectrum, for FFT) and the shape checks are paid once.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import numpy as np

from .._choose.choice import Calls, Choice, MemoryLimitWarning, choose, measured_choice
from .._methods import METHODS, same_form_for_any_kernel
from .._runtime import config as _config
from .._runtime.allocator import keep_if_asked
from .._runtime.backend import Array, Backend, is_cupy_array, on_arrays_device
from .._runtime.cache import approximate_size
from .._runtime.rates import rates_for
from .._spec.boundary import Extension
from .._spec.nan import IGNORE, NanRule
from .._spec.nan import apply as apply_nan_rule
from .._spec.problem import ArraySpec, Problem, check_writeable, overlaps

# Integer results up to this bound are exact in float64 arithmetic, so FFT may compute them.
_EXACT_FLOAT64 = 2 ** np.finfo(np.float64).nmant - 1


@dataclass(frozen=True, slots=True)
class Spec:
    """Everything the shapes decide, before any work on the kernel.

    Attributes
    ----------
    problem : Problem
        The grouped valid correlation solved.
    backend : Backend
        Where it runs.
    x : ArraySpec
        The input the plan accepts (`in1` of correlate, `x` of conv).
    y : ArraySpec
        The result it returns.
    to_problem : callable
        Input -> problem input ``(B, G*Cg, *spatial)`` (views only).
    from_problem : callable
        Problem output ``(B, G*Og, *out)`` -> result layout (before the dtype cast).
    excluded : dict of str to str
        Methods that must not run (name -> reason), e.g. FFT for large integers.
    same_layout : bool
        True when the result is the problem output reshaped (no axes moved), so a
        C-contiguous `out` can receive the method's result directly.
    extend : Extension or None
        Input -> input extended past its edges by the boundary rule (before `to_problem`).
    nan : NanRule
        The NaN policy and the operators on masks it needs.
    finish : callable or None
        Applied to the result after the NaN policy (conv's bias under nan='normalize').
    """

    problem: Problem
    backend: Backend
    x: ArraySpec
    y: ArraySpec
    to_problem: Callable[[Array], Array]
    from_problem: Callable[[Array], Array]
    excluded: dict[str, str]
    same_layout: bool
    extend: Extension | None = None
    nan: NanRule = IGNORE
    finish: Callable[[Array], Array] | None = None


def int_guard(dtype: np.dtype[Any], x_bound: int, w_bound: int, terms: int) -> dict[str, str]:
    """Methods that could round an integer result: those computing in float.

    Mirrors SciPy's ``choose_conv_method``: FFT is excluded when
    ``max|x| * max|w| * terms`` could exceed 2**52.
    """
    if dtype.kind not in "iu":
        return {}
    bound = x_bound * w_bound * terms
    if bound <= _EXACT_FLOAT64:
        return {}
    reason = f"integer result up to {bound} is not exact in float64"
    return {"fft": reason, "oa": reason}


def abs_bound(a: Array | ArraySpec | None, dtype: np.dtype[Any]) -> int:
    """``max|a|`` for an integer array; the dtype's largest magnitude when `a` is not at hand."""
    if dtype.kind not in "iu":
        return 0
    if a is None or isinstance(a, ArraySpec):
        info = np.iinfo(dtype)
        return max(abs(int(info.min)), int(info.max))
    return max(abs(int(a.min())), abs(int(a.max())))


def terms(problem: Problem) -> int:
    """Products summed into one output sample."""
    return problem.in_per_group * math.prod(problem.kernel)


class Plan:
    """A correlation or filter bank with its kernel, input shape, dtype and method fixed.

    Made by :func:`~arrayconv.plan_correlate`, :func:`~arrayconv.plan_convolve` or
    :func:`~arrayconv.plan_conv`; call it as ``plan(x, out=None)``. It owns the chosen
    method and the kernel in that method's form (for FFT: the kernel spectra at the FFT
    lengths), so repeated calls skip the choice, the checks on the kernel and its
    transform; 'auto' picks the method fastest per call with that form made once. A plan
    may be called from several threads at once.

    Attributes
    ----------
    method : str
        The method every call runs.
    choice : Choice
        Why that method: the estimates (and measurements) of every candidate.
    x_shape, x_dtype : tuple of int, numpy.dtype
        The input every call must have.
    y_shape, y_dtype : tuple of int, numpy.dtype
        The result every call returns.
    """

    def __init__(
        self,
        spec: Spec,
        w: Array,
        method: str,
        *,
        memory_limit: int | None = None,
        measure: bool | str = False,
        sample: Array | None = None,
        calls: Calls = "plan",
        retry_smaller: bool = False,
    ) -> None:
        _check_result_fits(spec)
        if spec.backend.name == "numpy":
            keep_if_asked()
        self._spec = spec
        self._memory_limit = memory_limit
        self._calls = calls  # what the choice is for (Choice.calls): a plan's calls, or a plain call
        self._w = w
        with self._settings():
            self.choice = self._choose(method, measure, sample)
            self.method = self.choice.method
            self._kernel = self._prepare(self.method)
        self._sums_products = METHODS[self.method].sums_products(self._kernel)
        self._as_given = self._reads_as_given()
        self._masks: dict[str, Callable[[Array], Array]] = {}  # the NaN rule's operators, made on first use
        self._single = self._single_call()
        self._bound = self._bound_call()
        self._retry = retry_smaller and method == "auto" and spec.backend.name == "cupy"
        if not self._retry:  # a plain CuPy call keeps its kernel, to plan again within the device's free memory
            del self._w

    x_shape = property(lambda self: self._spec.x.shape, doc="Shape of the input.")
    x_dtype = property(lambda self: self._spec.x.dtype, doc="Dtype of the input.")
    y_shape = property(lambda self: self._spec.y.shape, doc="Shape of the result.")
    y_dtype = property(lambda self: self._spec.y.dtype, doc="Dtype of the result.")
    sums_products = property(
        lambda self: self._sums_products,
        doc="Whether the method sums exactly the products of each output's footprint (no samples outside it, by zeros or by a transform).",
    )

    def __repr__(self) -> str:
        backend = self._spec.backend
        where = backend.name if backend.device is None else f"{backend.name}:{backend.device}"
        return (
            f"Plan(method={self.method!r}, x={self.x_shape} {self.x_dtype} on {where} "
            f"-> y={self.y_shape} {self.y_dtype})"
        )

    def __sizeof__(self) -> int:
        """Bytes held, the kernel in its method's form included (bounded caches weigh plans by it)."""
        return object.__sizeof__(self) + approximate_size(self._kernel) + approximate_size(self._masks)

    @on_arrays_device
    def __call__(self, x: Array, out: Array | None = None) -> Array:
        """Apply the plan to `x`.

        Parameters
        ----------
        x : ndarray
            Input of the plan's `x_shape` and `x_dtype`, on the plan's backend.
        out : ndarray, optional
            Where to write the result: `y_shape`, `y_dtype`, same backend, writeable and
            not overlapping `x`. Untouched if an error is raised.

        Returns
        -------
        ndarray
            The result (`out` when given).
        """
        self._check_input(x)
        if out is not None:
            self._check_out(out, x)
        if self._single is not None:  # one call, whose result is copied into `out` as _call's would be
            if out is None:
                return self._single(x)
            out[...] = self._single(x)
            return out
        if self._bound is not None and (out is None or out.flags.c_contiguous):
            return self._bound(x, out)
        try:
            return self._call(x, out)
        except MemoryError as exc:  # CuPy's OutOfMemoryError: the device's memory ran out during the call
            if self._spec.backend.name != "cupy":
                raise
            return self._out_of_device_memory(exc, x, out)

    def _call(self, x: Array, out: Array | None) -> Array:
        spec = self._spec
        with self._settings():
            work = spec.extend(x) if spec.extend and not self._as_given else x
            y = apply_nan_rule(spec.nan, work, spec.backend, self._sums_products, lambda a: self._result(a, out), self._masks)
            if spec.finish:
                y = spec.finish(y)
        if out is None or y is out:
            return y
        out[...] = y
        return out

    def _out_of_device_memory(self, exc: MemoryError, x: Array, out: Array | None) -> Array:
        """After the GPU ran out of memory: the pool's free blocks handed back, and a plain call
        planned again within half the device's free memory (smaller chunks or blocks); else,
        or if that runs out too, one MemoryError that says what the call needed."""
        spec = self._spec
        cp = spec.backend.xp
        cp.get_default_memory_pool().free_all_blocks()
        free = int(cp.cuda.runtime.memGetInfo()[0])
        settings = _config.settings(spec.backend.name)
        needed = _result_bytes(spec) + METHODS[self.method].cost(spec.problem, spec.backend, rates_for(spec.backend), settings).temp_bytes
        if self._retry and needed > free // 2:
            smaller = Plan(spec, self._w, "auto", memory_limit=max(free // 2, 1), calls=self._calls)
            if smaller.method != self.method or smaller.choice.estimates[smaller.method].temp_bytes < needed:
                try:
                    return smaller(x, out)
                except MemoryError:
                    cp.get_default_memory_pool().free_all_blocks()
        msg = (
            f"the GPU ran out of memory running {self.method!r}: this call needs about {needed / 2**30:.3g} GiB "
            f"(its result and temporaries), and {free / 2**30:.3g} GiB of the device are free; free device memory, "
            "lower memory_limit (arrayconv.config) for smaller chunks, or stream the input with arrayconv.correlate_into"
        )
        raise MemoryError(msg) from exc

    def unplanned(self) -> Callable[[Array, Array], Array] | None:
        """``f(x, w)``, this plan's result for `x` made from `x` and the kernel `w` as they
        are (``w`` of the kernel's shape, flipped for convolution), where the plan runs
        direct as one ``numpy.correlate`` of a 1-D signal or of a batch of lines laid end
        to end, or on one map in one chunk (its method's ``Shortcuts.unplanned``): the same
        calls on the same samples, so the same bits, for an input whose samples are in its
        problem's order (`same_layout`: no batch axis after a correlated one), extended by the
        plan's boundary rule first if it has one. Its result holds the output's samples in
        order, to be reshaped to `y_shape`. None for other plans, and where a kernel of
        other values would run another form (an outer product's passes): the result serves
        every kernel of the shapes, and a call's bits must not depend on the calls before it."""
        if not self._spec.same_layout:
            return None
        if self.method == "direct" and not same_form_for_any_kernel(self._spec.problem, self._spec.backend, self._copied_bytes(self.method)):
            return None
        run, extend = METHODS[self.method].shortcuts.unplanned(self._kernel, self._spec.problem), self._spec.extend
        if run is None or extend is None:
            return run
        return lambda x, w: run(extend(x), w)  # a boundary rule: direct on the extended input

    def _single_call(self) -> Callable[[Array], Array] | None:
        """A call as its method's single call (``Shortcuts.single_call``)
        and the result's layout (conv's bias), where the plan's other steps would change
        nothing: no boundary extension, NaN rule or finish, the input in the problem's
        layout and dtype, the result in the input's dtype. 2 float64 lines of 161 samples
        with 5 taps: 3.5 us a call against 9.0."""
        spec = self._spec
        plain = not (spec.extend or spec.finish) and spec.same_layout and spec.x.dtype == spec.y.dtype
        nan_free = spec.nan.policy == "ignore" or (spec.nan.policy == "propagate" and self._sums_products)
        chosen = METHODS[self.method]
        if not (plain and nan_free) or spec.x.dtype != chosen.work_dtype(spec.problem):
            return None
        call = chosen.shortcuts.single_call(self._kernel, spec.problem)
        if call is None:
            return None
        shape, from_problem = spec.problem.y_shape, spec.from_problem
        return lambda x: from_problem(call(x).reshape(shape))

    def _bound_call(self) -> Callable[[Array, Array | None], Array] | None:
        """A call as its method's run bound to the input's shape (``Shortcuts.bound_call``),
        where the plan's other steps would change nothing: the kernel reads the input as
        given (no extended copy, no NaN masks), no finish, the input and result in the
        problem's dtype, no memory limit of the plan's own; the result's layout (conv's bias)
        as in :meth:`_result`. `out`, when given, C-contiguous."""
        spec = self._spec
        chosen = METHODS[self.method]
        dtype = chosen.work_dtype(spec.problem)
        if not self._as_given or spec.finish or self._memory_limit is not None or not spec.x.dtype == spec.y.dtype == dtype:
            return None
        call = chosen.shortcuts.bound_call(self._kernel, spec.problem, self._given_shape())
        if call is None:
            return None
        y_shape, xp, from_problem = spec.problem.y_shape, spec.backend.xp, spec.from_problem

        def bound(x: Array, out: Array | None) -> Array:
            y = xp.empty(y_shape, dtype) if out is None else out.reshape(y_shape)
            call(x, y)
            y = from_problem(y)  # in place where `out` is given, as in _result
            return y if out is None else out

        return bound

    def _given_shape(self) -> tuple[int, ...]:
        """The input as a kernel that reads it as given takes it: in the problem's layout
        ``(B, G*Cg, *spatial)``, but with the input's own spatial shape (before any boundary
        extension)."""
        p, shape = self._spec.problem, self._spec.x.shape
        return (p.batch, p.groups * p.in_per_group, *shape[len(shape) - len(p.spatial):])

    def _result(self, x: Array, out: Array | None) -> Array:
        """The method's result for the (extended) input `x`, in `out` when it can write there."""
        if out is not None and self._fills(out):
            self._run(self.method, self._kernel, x, out.reshape(self._spec.problem.y_shape), self._as_given)
            return out
        return self._run(self.method, self._kernel, x, as_given=self._as_given)

    def _reads_as_given(self) -> bool:
        """Whether the plan's kernel reads the input as the caller gave it (direct's compiled
        loops: ``Shortcuts.reading_edges``): past its edges by the boundary rule,
        with no extended copy, and 8- and 16-bit integers with no float copy. Where the input
        needs no axes moved and the NaN rule no masks; the kernel is made to read the edges."""
        spec = self._spec
        plain_nan = spec.nan.policy == "ignore" or (spec.nan.policy == "propagate" and self._sums_products)
        if not spec.same_layout or not plain_nan:
            return False
        kernel = METHODS[self.method].shortcuts.reading_edges(self._kernel, spec.problem, spec.extend, len(spec.x.shape))
        if kernel is None:
            return False
        self._kernel = kernel
        return True

    def _fills(self, out: Array) -> bool:
        """Whether the method can write straight into `out`: same layout and dtype."""
        spec = self._spec
        work = METHODS[self.method].work_dtype(spec.problem)
        return spec.same_layout and out.flags.c_contiguous and out.dtype == work

    def uses_kernel_as_given(self, w: Array) -> bool:
        """Whether the plan's method reads the kernel `w` it was made from as it is: its form is
        a view of `w`'s samples, and its estimate counts nothing for making it."""
        form, estimate = self._kernel, self.choice.estimates.get(self.method)  # none for a method asked for
        prepared = 0.0 if estimate is None else estimate.prepare_seconds
        return isinstance(form, np.ndarray) and isinstance(w, np.ndarray) and np.may_share_memory(form, w) and prepared == 0

    def _settings(self):
        if self._memory_limit is None:
            return contextlib.nullcontext()
        return _config.config(memory_limit=self._memory_limit)

    def _prepare(self, method: str) -> Any:
        spec = self._spec
        chosen = METHODS[method]
        dtype = chosen.work_dtype(spec.problem)
        # A plan's own copy: a form may keep views of its kernel, and the caller's may change.
        w = self._w.astype(dtype, copy=self._calls == "plan")
        kernel = chosen.prepare(w, spec.problem, spec.backend)
        copied = self._copied_bytes(method)
        return chosen.shortcuts.reading_in_place(kernel, w, spec.problem, spec.backend, copied) if copied else kernel

    def _copied_bytes(self, method: str) -> int:
        """Bytes of the copy of the input that `method`'s kernel forms read (the input
        converted to the problem's dtype or extended by the boundary rule) where a form that
        reads the input as it is could skip it; 0 where there is none to skip."""
        spec = self._spec
        chosen = METHODS[method]
        dtype = chosen.work_dtype(spec.problem)
        copied = spec.extend is not None or (spec.x.dtype != dtype and chosen.shortcuts.reads_dtype(spec.x.dtype))
        if copied and spec.same_layout and spec.nan.policy in ("ignore", "propagate"):
            return math.prod(spec.x.shape) * dtype.itemsize
        return 0

    def _run(self, method: str, kernel: Any, x: Array, out: Array | None = None, as_given: bool = False) -> Array:
        spec = self._spec
        chosen = METHODS[method]
        if as_given:  # the input's own samples, in the problem's layout but for its spatial shape
            x_problem = x.reshape(self._given_shape())
            if not chosen.shortcuts.reads_dtype(x.dtype):
                x_problem = x_problem.astype(chosen.work_dtype(spec.problem), copy=False)
        else:
            x_problem = spec.to_problem(x).astype(chosen.work_dtype(spec.problem), copy=False)
        y = spec.from_problem(chosen.run(x_problem, kernel, spec.problem, spec.backend, out))
        if spec.y.dtype.kind in "iu" and y.dtype.kind == "f":
            # Integers computed in float (exact below 2**52: the guard) are rounded, then wrap
            # past their dtype's range as SciPy's direct sums do, not saturate.
            y = spec.backend.xp.rint(y).astype(np.int64)
        return y.astype(spec.y.dtype, copy=False)

    def _choose(self, method: str, measure: bool | str, sample: Array | None) -> Choice:
        spec, limit = self._spec, _config.budget(self._spec.backend.name)
        if method != "auto":
            reason = spec.excluded.get(method) or METHODS[method].unsupported(spec.problem, spec.backend, limit)
            if reason:
                msg = f"method {method!r} cannot run this problem: {reason}; method='auto' picks one that can"
                raise ValueError(msg)
            return Choice(method, {}, {}, "chosen by the caller")
        estimated = choose(spec.problem, spec.backend, limit, spec.excluded, calls=self._calls)
        if estimated.method in estimated.rejected:  # no method fits the budget
            temp = estimated.estimates[estimated.method].temp_bytes
            msg = (
                f"no method fits memory_limit={limit} bytes for this problem: running {estimated.method!r}, "
                f"the one with the smallest temporaries (about {temp} bytes); raise memory_limit "
                "(arrayconv.config), or stream the input with arrayconv.correlate_into"
            )
            warnings.warn(msg, MemoryLimitWarning, stacklevel=_caller_level())
        if not measure:
            return estimated
        if sample is None:
            sample = _random_input(spec)
        return measured_choice(estimated, spec.problem, spec.backend, lambda name: self._time(name, sample), disk=measure == "disk")

    def _time(self, method: str, x: Array) -> float:
        if self._spec.extend:
            x = self._spec.extend(x)
        start = time.perf_counter()
        kernel = self._prepare(method)
        if self._calls == "plan":  # a plan makes its kernel form once: time the call alone
            self._synchronize()
            start = time.perf_counter()
        y = self._run(method, kernel, x)
        self._synchronize()
        del y
        return time.perf_counter() - start

    def _synchronize(self) -> None:
        """Wait for the GPU's queued work (nothing on the CPU)."""
        if self._spec.backend.name == "cupy":
            self._spec.backend.xp.cuda.get_current_stream().synchronize()

    def _check_input(self, x: Array) -> None:
        spec = self._spec
        kind = _kind(spec.backend)
        if _kind_of(x) != kind:
            msg = f"this plan takes {kind} arrays, got `x` of type {type(x).__module__}.{type(x).__name__}"
            raise TypeError(msg)
        if tuple(x.shape) != spec.x.shape or x.dtype != spec.x.dtype:
            msg = (
                f"this plan takes `x` of shape {spec.x.shape} and dtype {spec.x.dtype}, "
                f"got shape {tuple(x.shape)} and dtype {x.dtype}; make a new plan for other inputs"
            )
            raise ValueError(msg)
        if spec.backend.device is not None and x.device.id != spec.backend.device:
            msg = f"this plan runs on device {spec.backend.device}, got `x` on device {x.device.id}"
            raise ValueError(msg)

    def _check_out(self, out: Array, x: Array) -> None:
        spec = self._spec
        if _kind_of(out) != _kind(spec.backend):
            msg = f"`out` must be a {_kind(spec.backend)} array like the input, got {type(out).__module__}.{type(out).__name__}"
            raise TypeError(msg)
        if tuple(out.shape) != spec.y.shape or out.dtype != spec.y.dtype:
            msg = (
                f"`out` must have shape {spec.y.shape} and dtype {spec.y.dtype}, "
                f"got shape {tuple(out.shape)} and dtype {out.dtype}"
            )
            raise ValueError(msg)
        check_writeable(out)
        if overlaps(out, x, spec.backend):
            msg = "`out` must not overlap the input `x`"
            raise ValueError(msg)


def _caller_level() -> int:
    """The `stacklevel` of the first frame outside arrayconv, seen from the caller of this
    function: a warning points at the user's call (and the default filter shows it once
    per call site, not once for all of arrayconv)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # arrayconv/, above _plan/
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def check_memory(function: str, arrays: tuple[str, int], temporaries: tuple[str, int], smaller: str, backend_name: str) -> None:
    """Refuse, before any work, a call of `function` whose `arrays` (what they are, and
    their bytes) the device's memory cannot hold; warn (:class:`MemoryLimitWarning`) where
    its `temporaries` exceed the memory budget. `smaller` says how to ask for less."""
    (held, needed), (kept, temporary) = arrays, temporaries
    capacity = _config.capacity(backend_name)
    if needed > capacity:
        msg = f"{function} needs {needed / 2**30:.3g} GiB for {held}, more than the {capacity / 2**30:.3g} GiB of memory of this device; {smaller}"
        raise ValueError(msg)
    budget = _config.budget(backend_name)
    if temporary > budget:
        msg = (
            f"{function}'s temporaries ({kept}) need {temporary / 2**30:.3g} GiB, over the memory limit of "
            f"{budget / 2**30:.3g} GiB; running anyway: raise the limit (arrayconv.config) or {smaller}"
        )
        warnings.warn(msg, MemoryLimitWarning, stacklevel=_caller_level())


def _result_bytes(spec: Spec) -> int:
    return math.prod(spec.y.shape) * spec.y.dtype.itemsize


def check_result_addressable(spec: Spec) -> None:
    """Refuse a result of more bytes than any array can address (an absurd padding), which
    the methods' estimates could not even price."""
    need = _result_bytes(spec)
    if need > sys.maxsize:
        msg = f"the result of shape {spec.y.shape} ({spec.y.dtype}) needs {need / 2**30:.3g} GiB, more than any array can hold; check the padding and mode"
        raise ValueError(msg)


def _check_result_fits(spec: Spec) -> None:
    """Refuse, before any work, a result larger than the whole memory of its device."""
    need = _result_bytes(spec)
    total = _config.capacity(spec.backend.name)
    if need > total:
        msg = (
            f"the result of shape {spec.y.shape} ({spec.y.dtype}) needs {need / 2**30:.3g} GiB, more than "
            f"the {total / 2**30:.3g} GiB of memory of this device; check the padding and mode, or write "
            "it to disk with arrayconv.correlate_into"
        )
        raise ValueError(msg)


def _kind(backend: Backend) -> str:
    return "CuPy" if backend.name == "cupy" else "NumPy"


def _kind_of(a: object) -> str | None:
    if is_cupy_array(a):
        return "CuPy"
    return "NumPy" if isinstance(a, np.ndarray) else None


def _random_input(spec: Spec) -> Array:
    """Random data of the plan's input shape and dtype, for timing candidates."""
    xp, dtype = spec.backend.xp, spec.x.dtype
    rng = np.random.default_rng(0)
    if dtype.kind in "iu":
        data = rng.integers(0, 100, spec.x.shape).astype(dtype)
    elif dtype.kind == "c":
        data = (rng.standard_normal(spec.x.shape) + 1j * rng.standard_normal(spec.x.shape)).astype(dtype)
    else:
        data = rng.standard_normal(spec.x.shape).astype(dtype)
    return xp.asarray(data)
