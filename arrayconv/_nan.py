"""NaN policies: what a NaN (or inf) in the input does to the result, on every method.

Direct and im2col sum products, so a NaN reaches exactly the outputs whose kernel footprint
covers it, as SciPy's direct method. FFT mixes every sample into every output, so there
the non-finite samples are zeroed, the transform runs, and the outputs of their footprint
(found by correlating the mask with the kernel's support) are set to NaN.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from ._backend import Array, Backend

NAN_POLICIES = ("propagate", "raise", "fill", "normalize", "ignore")
NanPolicy = Literal["propagate", "raise", "fill", "normalize", "ignore"]

# Methods whose sums are IEEE sums of the products (NaN * 0 is NaN, as SciPy's direct).
_EXACT_METHODS = ("direct", "im2col")

Linear = Callable[[Array, Array], Array]


def apply(
    policy: str,
    x: Array,
    kernel: Array,
    backend: Backend,
    method: str,
    run: Callable[[Array], Array],
    linear: Linear,
    *,
    fillvalue: complex = 0,
) -> Array:
    """The result of `run` on `x` under the NaN `policy`.

    Parameters
    ----------
    policy : str
        One of :data:`NAN_POLICIES`.
    x, kernel : ndarray
        The input (already extended by its boundary rule) and the kernel.
    backend : Backend
        Where they live.
    method : str
        The method `run` uses.
    run : callable
        ``run(a)``: the operator applied to `a` by the chosen method.
    linear : callable
        ``linear(a, k)``: the same operator with kernel `k` (used on masks).
    fillvalue : scalar, optional
        What a NaN becomes under 'fill'.
    """
    xp = backend.xp
    if policy == "ignore" or x.dtype.kind not in "fc":
        return run(x)
    if policy == "raise":
        for name, a in (("in1", x), ("in2", kernel)):
            if a.dtype.kind in "fc" and bool(xp.isnan(a).any()):
                msg = f"`{name}` contains NaN and nan='raise'; use nan='propagate', 'fill' or 'normalize'"
                raise ValueError(msg)
        return _propagate(x, kernel, xp, method, run, linear)
    if policy == "fill":
        return _propagate(xp.where(xp.isnan(x), xp.asarray(fillvalue, x.dtype), x), kernel, xp, method, run, linear)
    if policy == "normalize":
        missing = xp.isnan(x)
        y = _propagate(xp.where(missing, xp.zeros((), x.dtype), x), kernel, xp, method, run, linear)
        weight = linear((~missing).astype(x.dtype), kernel)
        empty = weight == 0
        y = y / xp.where(empty, xp.ones((), weight.dtype), weight)
        y[empty] = xp.nan
        return y
    return _propagate(x, kernel, xp, method, run, linear)


def _propagate(x: Array, kernel: Array, xp, method: str, run, linear) -> Array:  # type: ignore[no-untyped-def]
    """NaN (and inf) spread over their kernel footprint only, on every method."""
    if method in _EXACT_METHODS:
        return run(x)
    bad = ~xp.isfinite(x)
    if not bool(bad.any()):
        return run(x)
    y = run(xp.where(bad, xp.zeros((), x.dtype), x))
    support = xp.ones(kernel.shape, dtype=xp.float32)
    reached = linear(bad.astype(xp.float32), support) > 0.5
    y[reached] = xp.nan
    return y
