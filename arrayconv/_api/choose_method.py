"""`choose_method`: what ``method='auto'`` would run, and why, without running it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from .._choose.choice import Calls, Choice, choose
from .._plan.kept import keeps_plan
from .._plan.plan import Plan, Spec, abs_bound, check_result_addressable
from .._runtime import config as _config
from .._runtime.backend import Array, get_backend, on_arrays_device
from .._spec.problem import ArraySpec, as_array, check_choice, input_spec
from .conv import conv_spec
from .correlate import Edges, correlate_spec

# Every option of each function that changes what it computes, with its default.
_CORRELATE_OPTIONS = {"mode": "full", "axes": None, "boundary": "constant", "fillvalue": 0, "nan": "propagate"}
_OPTIONS: dict[str, dict[str, Any]] = {
    "correlate": _CORRELATE_OPTIONS,
    "convolve": _CORRELATE_OPTIONS,
    "conv": {"bias": None, "stride": 1, "padding": 0, "dilation": 1, "groups": 1, "padding_mode": "constant", "nan": "propagate"},
}


@on_arrays_device
def choose_method(
    x: Array | Sequence[int],
    w: Array | Sequence[int],
    *,
    op: Literal["correlate", "convolve", "conv"] = "correlate",
    dtype: object = None,
    memory_limit: int | None = None,
    measure: bool | Literal["disk"] = False,
    plan: bool = False,
    **options: Any,
) -> Choice:
    """The method ``method='auto'`` picks for a call (or a plan), with every candidate's estimate.

    Parameters
    ----------
    x, w : array_like or tuple of int
        The two inputs of `op` (``in1, in2`` or ``x, w``), or their shapes. A kernel given
        as a shape has unknown values, so it is not taken as an outer product of 1-D
        kernels (which direct sums in two passes: pass the kernel itself for that).
    op : {'correlate', 'convolve', 'conv'}, optional
        The function asked about. Default 'correlate'.
    dtype : dtype, optional
        Dtype of inputs given as shapes. Default float64.
    memory_limit : int, optional
        Budget for temporaries. Default :func:`memory_limit`.
    measure : bool or 'disk', optional
        Time the viable candidates on random data of these shapes (see :func:`correlate`).
    plan : bool, optional
        The choice of a plan (:func:`plan_correlate`, :func:`plan_conv`): each method's
        kernel form (spectra, an operator matrix) is made once, so the methods rank by
        their time per call without it. Default False: a plain call, which makes it. A
        plain call that keeps its plan (NumPy float or complex arrays, a kernel of at most
        256 KiB) takes the fastest method per later call of those whose one call is
        estimated within 1.25x of the fastest, or within 0.2 ms and 2x of it
        (``Choice.calls == 'kept'``).
    **options
        The options of `op`, as that function takes them: ``mode``, ``axes``,
        ``boundary``, ``fillvalue``, ``nan`` for correlate and convolve; ``bias``,
        ``stride``, ``padding``, ``dilation``, ``groups``, ``padding_mode``, ``nan`` for
        conv.

    Returns
    -------
    Choice
        ``.method`` is the winner; its repr lists each candidate's estimated time and
        temporary memory, why the others cannot run, and why the winner won.

    Examples
    --------
    >>> import arrayconv as ac
    >>> ac.choose_method((4096, 4096), (63, 63), mode="same", dtype="float32").method
    'oa'
    >>> ac.choose_method((256, 256), (3, 3), mode="same", dtype="float32").method
    'direct'
    >>> ac.choose_method((64, 64), (63, 63), mode="valid", dtype="float32", plan=True).method
    'im2col'
    """
    check_choice("op", op, _OPTIONS)
    unknown = sorted(set(options) - set(_OPTIONS[op]))
    if unknown:
        msg = f"choose_method(op={op!r}) takes options {tuple(_OPTIONS[op])}, got unknown {unknown}"
        raise TypeError(msg)
    x_array, w_array = (None if _is_shape(a) else a for a in (x, w))
    backend = get_backend(x=x_array, w=w_array)
    given = np.dtype(np.float64) if dtype is None else dtype
    if x_array is None:
        x_spec = input_spec("x", x, given)
    else:
        x_array = as_array(x_array, "x", backend)
        x_spec = ArraySpec(tuple(x_array.shape), x_array.dtype)
    w_array = _stand_in(input_spec("w", w, given)) if w_array is None else as_array(w_array, "w", backend)
    bound = abs_bound(x_array, x_spec.dtype)
    call = {**_OPTIONS[op], **options}
    if op == "conv":
        bias = call.pop("bias")
        bias = None if bias is None else as_array(bias, "bias", backend)
        spec: Spec = conv_spec(x_spec, w_array, bias, backend, "auto", x_bound=bound, **call)
        w_problem = w_array
    else:
        edges = Edges(call["boundary"], call["fillvalue"], call["nan"])
        spec, w_problem = correlate_spec(
            x_spec, w_array, backend, call["mode"], "auto", call["axes"], flip=op == "convolve", x_bound=bound, edges=edges, kernel_values=not _is_shape(w)
        )
    check_result_addressable(spec)  # an absurd padding: this error, not an overflow in the estimates
    if measure:
        return Plan(spec, w_problem, "auto", memory_limit=memory_limit, measure=measure, calls="plan" if plan else "one").choice
    sizes = [math.prod(x_spec.shape), w_array.size]
    kept = backend.name == "numpy" and keeps_plan([x_spec.dtype, w_array.dtype], sizes, w_array.nbytes)
    calls: Calls = "plan" if plan else "kept" if kept else "one"
    with _config.config(memory_limit=memory_limit):
        return choose(spec.problem, spec.backend, _config.budget(spec.backend.name), spec.excluded, calls=calls)


def _is_shape(a: object) -> bool:
    return isinstance(a, tuple | list) and all(isinstance(n, int | np.integer) for n in a)


def _stand_in(spec: ArraySpec) -> Array:
    """A zero-copy array of `spec`'s shape holding the dtype's extreme value (1 for floats),
    so that the integer guard assumes the worst about a kernel it has not seen."""
    extreme = np.iinfo(spec.dtype).max if spec.dtype.kind in "iu" else 1
    return np.broadcast_to(np.asarray(extreme, dtype=spec.dtype), spec.shape)

