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

from .._runtime.backend import Array, Backend

NAN_POLICIES = ("propagate", "raise", "fill", "normalize", "ignore")
NanPolicy = Literal["propagate", "raise", "fill", "normalize", "ignore"]

Operator = Callable[[Array], Array]


@dataclass(frozen=True, slots=True)
class NanRule:
    """A NaN policy with what it needs: how to make the operators on masks.

    The operators are plans, made on first use (most inputs hold no NaN) and kept by the
    plan that applies the rule (see :func:`apply`), so the rule itself depends on shapes
    only (except under 'normalize') and is cached with them.

    Attributes
    ----------
    policy : str
        One of :data:`NAN_POLICIES`.
    name : str
        The input's argument name, for error messages.
    reach : callable
        ``reach()`` makes the operator with the kernel's support (ones), on a float32
        mask: positive where the mask's samples reach.
    weigh : callable or None
        Under 'normalize', ``weigh()`` makes the operator with the user's kernel, on a
        mask in the input's dtype (the normalization weights).
    fillvalue : scalar
        What a NaN becomes under 'fill'.
    fill_dtype : numpy.dtype or None
        The dtype that holds `fillvalue` under 'fill' (the result's where the input's does
        not: :func:`~arrayconv._spec.boundary.fill_dtype`); None: the input's.
    """

    policy: str
    name: str
    reach: Callable[[], Operator] | None
    weigh: Callable[[], Operator] | None = None
    fillvalue: complex = 0
    fill_dtype: Any = None


IGNORE = NanRule("ignore", "x", None)
_making = threading.Lock()


def apply(rule: NanRule, x: Array, backend: Backend, sums_products: bool, run: Operator, made: dict[str, Operator]) -> Array:
    """The result of ``run(x)`` under `rule` (`x` already extended by its boundary rule);
    `sums_products`: whether `run` sums only the footprint's products (see
    :class:`~arrayconv._methods.Method`); `made`: the rule's operators made so far, kept
    by the calling plan."""
    xp = backend.xp
    if rule.policy == "ignore" or (x.dtype.kind not in "fc" and rule.policy != "normalize"):
        return run(x)  # integers hold no NaN, but 'normalize' still divides by the weights
    if rule.policy == "raise":
        refuse_nan(rule.name, x, xp)
    if rule.policy == "fill":
        x = xp.where(xp.isnan(x), xp.asarray(rule.fillvalue, rule.fill_dtype or x.dtype), x)
    if rule.policy != "normalize":
        return _propagate(x, xp, sums_products, run, rule, made)
    missing = xp.isnan(x) if x.dtype.kind in "fc" else xp.zeros(x.shape, bool)
    y = _propagate(xp.where(missing, xp.zeros((), x.dtype), x), xp, sums_products, run, rule, made)
    weigh = _operator(rule, "weigh", made)
    weight = weigh((~missing).astype(x.dtype))
    empty = weight == 0
    # A weight that sums the footprint's products is 0 exactly where every sample is
    # missing; an FFT's is rounded, not 0: there the samples present are counted.
    if not getattr(weigh, "sums_products", False) and bool(missing.any()):
        empty |= _operator(rule, "reach", made)((~missing).astype(xp.float32)) < 0.5
    y = y / xp.where(empty, xp.ones((), weight.dtype), weight)
    y[empty] = xp.nan
    return y


def _operator(rule: NanRule, name: str, made: dict[str, Operator]) -> Operator:
    """The operator `name` ('reach' or 'weigh') of `rule`: from `made`, or made now and
    kept there (once, however many threads ask)."""
    if name not in made:
        with _making:
            if name not in made:
                made[name] = getattr(rule, name)()
    return made[name]


def check_result(policy: str, result: Any) -> None:
    """Refuse nan='normalize' for a result of integer dtype `result`, which cannot hold the
    weighted averages it makes."""
    if policy == "normalize" and result.kind in "iu":
        msg = (
            f"nan='normalize' divides each output by its kernel weight, which a result of "
            f"dtype {result} cannot hold; cast the input or the kernel to a float dtype"
        )
        raise ValueError(msg)


def check_kernel(policy: str, kernel: Array, name: str, backend: Backend) -> None:
    """Under nan='raise', refuse a kernel holding NaN (checked once, when it is given)."""
    if policy == "raise":
        refuse_nan(name, kernel, backend.xp)


def refuse_nan(name: str, a: Array, xp: Any) -> None:
    """The error of nan='raise' where `a`, named `name`, holds a NaN."""
    if a.dtype.kind in "fc" and bool(xp.isnan(a).any()):
        msg = f"`{name}` contains NaN and nan='raise'; use nan='propagate', 'fill' or 'normalize'"
        raise ValueError(msg)


def _propagate(x: Array, xp: Any, sums_products: bool, run: Operator, rule: NanRule, made: dict[str, Operator]) -> Array:
    """NaN (and inf) spread over their kernel footprint only, on every method."""
    # A NaN or inf makes the sum non-finite: one pass with no temporary array. (A sum
    # that overflows only sends finite data down the exact path below, which finds nothing.)
    if sums_products or bool(xp.isfinite(xp.sum(x))):
        return run(x)
    bad = ~xp.isfinite(x)
    if not bool(bad.any()):
        return run(x)
    y = run(xp.where(bad, xp.zeros((), x.dtype), x))
    y[_operator(rule, "reach", made)(bad.astype(xp.float32)) > 0.5] = xp.nan
    return y
