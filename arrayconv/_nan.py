"""NaN policies: what a NaN (or inf) in the input does to the result, on every method.

Direct and im2col's columns sum products, so a NaN reaches exactly the outputs whose
kernel footprint covers it, as SciPy's direct method. FFT mixes every sample into every
output (and im2col's operator matrix multiplies every sample, by zero outside the
footprint), so there the non-finite samples are zeroed, the method runs, and the outputs
of their footprint (found by correlating the mask with the kernel's support) are set to
NaN.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ._backend import Array, Backend

NAN_POLICIES = ("propagate", "raise", "fill", "normalize", "ignore")
NanPolicy = Literal["propagate", "raise", "fill", "normalize", "ignore"]

Operator = Callable[[Array], Array]


@dataclass(frozen=True, slots=True)
class NanRule:
    """A NaN policy with what it needs: the operator on masks.

    Attributes
    ----------
    policy : str
        One of :data:`NAN_POLICIES`.
    name : str
        The input's argument name, for error messages.
    weigh : callable
        ``weigh(mask)``: the operator with the user's kernel, on a mask in the input's dtype
        (the normalization weights).
    reach : callable
        ``reach(mask)``: the operator with the kernel's support (ones), on a float32 mask:
        positive where the mask's samples reach.
    fillvalue : scalar
        What a NaN becomes under 'fill'.
    """

    policy: str
    name: str
    weigh: Operator
    reach: Operator
    fillvalue: complex = 0


IGNORE = NanRule("ignore", "x", lambda a: a, lambda a: a)


def apply(rule: NanRule, x: Array, backend: Backend, sums_products: bool, run: Operator) -> Array:
    """The result of ``run(x)`` under `rule` (`x` already extended by its boundary rule);
    `sums_products`: whether `run` sums only the footprint's products (see
    :class:`~arrayconv._methods.Method`)."""
    xp = backend.xp
    if rule.policy == "ignore" or x.dtype.kind not in "fc":
        return run(x)
    if rule.policy == "raise" and bool(xp.isnan(x).any()):
        msg = f"`{rule.name}` contains NaN and nan='raise'; use nan='propagate', 'fill' or 'normalize'"
        raise ValueError(msg)
    if rule.policy == "fill":
        x = xp.where(xp.isnan(x), xp.asarray(rule.fillvalue, x.dtype), x)
    if rule.policy != "normalize":
        return _propagate(x, xp, sums_products, run, rule.reach)
    missing = xp.isnan(x)
    y = _propagate(xp.where(missing, xp.zeros((), x.dtype), x), xp, sums_products, run, rule.reach)
    weight = rule.weigh((~missing).astype(x.dtype))
    empty = weight == 0
    y = y / xp.where(empty, xp.ones((), weight.dtype), weight)
    y[empty] = xp.nan
    return y


def check_kernel(policy: str, kernel: Array, name: str, backend: Backend) -> None:
    """Under nan='raise', refuse a kernel holding NaN (checked once, when it is given)."""
    if policy == "raise" and kernel.dtype.kind in "fc" and bool(backend.xp.isnan(kernel).any()):
        msg = f"`{name}` contains NaN and nan='raise'; use nan='propagate', 'fill' or 'normalize'"
        raise ValueError(msg)


def _propagate(x: Array, xp: Any, sums_products: bool, run: Operator, reach: Operator) -> Array:
    """NaN (and inf) spread over their kernel footprint only, on every method."""
    # A NaN or inf makes the sum non-finite: one pass with no temporary array. (A sum
    # that overflows only sends finite data down the exact path below, which finds nothing.)
    if sums_products or bool(xp.isfinite(xp.sum(x))):
        return run(x)
    bad = ~xp.isfinite(x)
    if not bool(bad.any()):
        return run(x)
    y = run(xp.where(bad, xp.zeros((), x.dtype), x))
    y[reach(bad.astype(xp.float32)) > 0.5] = xp.nan
    return y


def once(make: Callable[[], Operator]) -> Operator:
    """An operator made by ``make()`` on its first call (a plan for masks, made if needed)."""
    made: list[Operator] = []
    lock = threading.Lock()

    def call(a: Array) -> Array:
        if not made:
            with lock:
                if not made:
                    made.append(make())
        return made[0](a)

    return call
