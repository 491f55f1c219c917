"""scipy.signal's convolutions, on arrayconv: one changed import line.

``from arrayconv import signal`` in place of ``from scipy import signal`` gives
``correlate``, ``convolve``, ``fftconvolve``, ``oaconvolve``, ``convolve2d``,
``correlate2d`` and ``choose_conv_method`` with SciPy's signatures and results, where
:func:`arrayconv.correlate` and :func:`arrayconv.convolve` differ on purpose: the FFT
functions return float64 for integer inputs and treat axes where either input has length
1 as broadcast axes, not convolved ones; ``'same'`` then keeps ``in1``'s length there too;
``correlate2d`` centres an even kernel in ``'same'`` one sample from ``correlate``. The
sums run on arrayconv's methods ('auto' picks among four; ``method='fft'`` runs its FFT).
Inputs arrayconv does not compute (empty, boolean, long double, object arrays) are passed
to SciPy's own function, which gives its result or its error.

SciPy's own tests of these functions (the convolution and correlation classes of
``scipy/signal/tests/test_signaltools.py``) run against this module in CI
(``tests/scipy_suite``).

Examples
--------
>>> import numpy as np
>>> import scipy.signal
>>> from arrayconv import signal
>>> x, h = np.arange(10.0), np.array([1.0, 2.0, 3.0])
>>> bool(np.allclose(signal.fftconvolve(x, h, "same"), scipy.signal.fftconvolve(x, h, "same")))
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import signal as _scipy

from ._api.correlate import convolve as _typed_convolve
from ._api.correlate import correlate as _typed_correlate
from ._runtime.backend import array_module

# SciPy's own functions, for the inputs arrayconv leaves to them (taken at import: a test
# harness may put this module's functions in scipy.signal's place).
_SCIPY = {name: getattr(_scipy, name) for name in ("choose_conv_method", "convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve", "oaconvolve")}

_ac_convolve: Callable[..., Any] = _typed_convolve  # validated SciPy arguments: str, not its Literal types
_ac_correlate: Callable[..., Any] = _typed_correlate  # validated SciPy arguments: str, not its Literal types

__all__ = ["choose_conv_method", "convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve", "oaconvolve"]

_MODES = ("valid", "same", "full")
# scipy.signal's *2d boundaries -> arrayconv's rules ('reflect' is left to SciPy).
_BOUNDARIES = {"fill": "constant", "pad": "constant", "wrap": "wrap", "circular": "wrap", "symm": "symmetric", "symmetric": "symmetric"}


def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    """Cross-correlation of N-D arrays, as :func:`scipy.signal.correlate`."""
    in1, in2 = _arrays(in1, in2)
    if in1.ndim == in2.ndim == 0:
        return in1 * (in2.conj() if in2.dtype.kind == "c" else in2)
    _check(in1, in2, mode, method)
    if _scipy_only(in1, in2):
        return _theirs("correlate", in1)(in1, in2, mode, method)
    _valid_sizes(mode, in1.shape, in2.shape)
    return _ac_correlate(in1, in2, mode, _method(method, in1, in2))


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto") -> Any:
    """Convolution of N-D arrays, as :func:`scipy.signal.convolve`."""
    in1, in2 = _arrays(in1, in2)
    if in1.ndim == in2.ndim == 0:
        return in1 * in2
    if in1.ndim != in2.ndim:
        raise ValueError("volume and kernel should have the same dimensionality")
    _check(in1, in2, mode, method)
    if _scipy_only(in1, in2):
        return _theirs("convolve", in1)(in1, in2, mode, method)
    _valid_sizes(mode, in1.shape, in2.shape)
    return _ac_convolve(in1, in2, mode, _method(method, in1, in2))


def fftconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None) -> Any:
    """Convolution by FFT, as :func:`scipy.signal.fftconvolve`: float results, length-1
    axes broadcast (arrayconv picks the method: the FFT, or another as fast)."""
    return _frequency_convolve(in1, in2, mode, axes, "fftconvolve")


def oaconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None) -> Any:
    """Convolution by overlap-add, as :func:`scipy.signal.oaconvolve` (the same results
    as :func:`fftconvolve`)."""
    return _frequency_convolve(in1, in2, mode, axes, "oaconvolve")


def convolve2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill", fillvalue: Any = 0) -> Any:
    """2-D convolution with a boundary rule, as :func:`scipy.signal.convolve2d`."""
    a, b, rule = _inputs_2d("convolve2d", in1, in2, mode, boundary, fillvalue)
    if rule is None:
        return _theirs("convolve2d", a)(a, b, mode, boundary, fillvalue)
    if _swap_needed(mode, a.shape, b.shape):
        a, b = b, a
    return _ac_convolve(a, b, mode, boundary=rule, fillvalue=_fill(fillvalue, a, b))


def correlate2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill", fillvalue: Any = 0) -> Any:
    """2-D cross-correlation with a boundary rule, as :func:`scipy.signal.correlate2d`:
    :func:`convolve2d` with `in2` reversed and conjugated (so an even kernel in 'same'
    sits one sample from :func:`correlate`'s)."""
    a, b, rule = _inputs_2d("correlate2d", in1, in2, mode, boundary, fillvalue)
    if rule is None:
        return _theirs("correlate2d", a)(a, b, mode, boundary, fillvalue)
    swapped = _swap_needed(mode, a.shape, b.shape)
    if swapped:
        a, b = b, a
    fill = _fill(fillvalue, a, b)
    if mode == "same" and any(k % 2 == 0 for k in b.shape):  # SciPy centres an even kernel one sample later than correlate
        full = _ac_convolve(a, b[::-1, ::-1].conj(), "full", boundary=rule, fillvalue=fill)
        return full[tuple(slice(k // 2, k // 2 + n) for n, k in zip(a.shape, b.shape))]
    out = _ac_convolve(a, b[::-1, ::-1].conj(), mode, boundary=rule, fillvalue=fill)
    return out[::-1, ::-1] if swapped else out


def choose_conv_method(in1: Any, in2: Any, mode: str = "full", measure: bool = False) -> Any:
    """'direct' or 'fft', as :func:`scipy.signal.choose_conv_method` answers, from
    arrayconv's choice (direct and im2col are 'direct', FFT and overlap-save 'fft');
    with `measure`, SciPy's timings of this module's :func:`convolve`."""
    a, b = _arrays(in1, in2)
    if measure or _scipy_only(a, b) or a.ndim != b.ndim or a.ndim == 0 or mode not in _MODES:
        if measure:
            times = {method: _time(lambda m=method: convolve(a, b, mode, m)) for method in ("fft", "direct")}
            return ("fft" if times["fft"] < times["direct"] else "direct"), times
        return _theirs("choose_conv_method", a)(a, b, mode)
    if a.dtype.kind in "iu" or b.dtype.kind in "iu":  # SciPy's bound: exact in float64 or direct
        bound = int(np.abs(a).max()) * int(np.abs(b).max()) * min(a.size, b.size)
        if bound > 2 ** np.finfo(float).nmant - 1:
            return "direct"
    if _swap_needed(mode, a.shape, b.shape):
        a, b = b, a
    from ._api.choose_method import choose_method

    picked = choose_method(a, b[(slice(None, None, -1),) * b.ndim], mode=mode).method
    return "fft" if picked in ("fft", "oa") else "direct"


def _frequency_convolve(in1: Any, in2: Any, mode: str, axes: Any, name: str) -> Any:
    """fftconvolve's and oaconvolve's (`name`) semantics on arrayconv."""
    a, b = _arrays(in1, in2)
    if a.ndim == b.ndim == 0 or a.ndim != b.ndim or a.size == 0 or b.size == 0 or _scipy_only(a, b):
        return _theirs(name, a)(a, b, mode, axes)
    checked = _axes(axes, a.ndim)
    conv_axes = [ax for ax in checked if a.shape[ax] != 1 and b.shape[ax] != 1]
    if not all(a.shape[ax] == b.shape[ax] or 1 in (a.shape[ax], b.shape[ax]) for ax in range(a.ndim) if ax not in conv_axes):
        msg = f"incompatible shapes for in1 and in2: {a.shape} and {b.shape}"
        raise ValueError(msg)
    if mode not in _MODES:
        raise ValueError("acceptable mode flags are 'valid', 'same', or 'full'")
    if _swap_needed(mode, a.shape, b.shape, conv_axes):
        a, b = b, a
    shape1 = a.shape
    if conv_axes:  # SciPy's transforms: integers in float64, float16 in float32
        a, b = (x.astype(np.float64 if x.dtype.kind in "iu" else np.float32) if x.dtype.kind in "iu" or x.dtype == np.float16 else x for x in (a, b))
    out = _ac_convolve(a, b, mode, axes=conv_axes) if conv_axes else a * b
    return _centred(out, shape1) if mode == "same" else out  # 'same' keeps in1's length on the broadcast axes too


def _arrays(in1: Any, in2: Any) -> tuple[Any, Any]:
    """The inputs as arrays: CuPy arrays where either is one (both on its device), else
    NumPy arrays."""
    xp = array_module(in1, in2)
    return xp.asarray(in1), xp.asarray(in2)


def _theirs(name: str, a: Any) -> Any:
    """SciPy's function `name` for the inputs arrayconv leaves to it; for CuPy arrays,
    cupyx.scipy.signal's."""
    if array_module(a) is np:
        return _SCIPY[name]
    from cupyx.scipy import signal as cupyx_signal

    return getattr(cupyx_signal, name)


def _check(in1: np.ndarray, in2: np.ndarray, mode: str, method: str) -> None:
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in _MODES:
        raise ValueError("Acceptable mode flags are 'valid', 'same', or 'full'.")
    if method not in ("auto", "direct", "fft"):
        raise ValueError("Acceptable method flags are 'auto', 'direct', or 'fft'.")


def _method(method: str, in1: np.ndarray, in2: np.ndarray) -> str:
    """arrayconv's method for SciPy's: integers exact on every method, so 'fft' on
    integers is arrayconv's choice among the exact ones."""
    return "auto" if method == "fft" and (in1.dtype.kind in "iu" and in2.dtype.kind in "iu") else method


def _scipy_only(*arrays: np.ndarray) -> bool:
    """Inputs arrayconv does not compute: empty, or of a dtype other than its numbers."""
    return any(a.size == 0 or a.dtype.kind not in "iufc" or a.dtype.char in "gG" for a in arrays)


def _swap_needed(mode: str, shape1: tuple[int, ...], shape2: tuple[int, ...], axes: Any = None) -> bool:
    """SciPy's rule: in 'valid', the smaller input (in every axis) is the kernel."""
    if mode != "valid" or not shape1:
        return False
    axes = range(len(shape1)) if axes is None else axes
    first_larger = all(shape1[i] >= shape2[i] for i in axes)
    if not first_larger and not all(shape2[i] >= shape1[i] for i in axes):
        raise ValueError("For 'valid' mode, one must be at least as large as the other in every dimension")
    return not first_larger


def _valid_sizes(mode: str, shape1: tuple[int, ...], shape2: tuple[int, ...]) -> None:
    _swap_needed(mode, shape1, shape2)


def _inputs_2d(name: str, in1: Any, in2: Any, mode: str, boundary: str, fillvalue: Any) -> tuple[np.ndarray, np.ndarray, str | None]:
    """The *2d functions' arrays and arrayconv's rule for `boundary`; the rule None where
    SciPy's own function is to run ('reflect', inputs or a fill value arrayconv leaves to it)."""
    a, b = _arrays(in1, in2)
    if not a.ndim == b.ndim == 2:
        raise ValueError(f"{name} inputs must both be 2-D arrays")
    rule = _boundary(mode, boundary)
    return a, b, None if _scipy_only(a, b) or not _plain_fill(fillvalue, a, b) else rule


def _boundary(mode: str, boundary: str) -> str | None:
    """arrayconv's rule for a *2d `boundary`; None for 'reflect' (left to SciPy)."""
    if mode not in _MODES:
        raise ValueError("Acceptable mode flags are 'valid', 'same', or 'full'.")
    if boundary == "reflect":
        return None
    if boundary not in _BOUNDARIES:
        raise ValueError("Acceptable boundary flags are 'fill', 'circular' (or 'wrap'), and 'symmetric' (or 'symm').")
    return _BOUNDARIES[boundary]


def _plain_fill(fillvalue: Any, a: np.ndarray, b: np.ndarray) -> bool:
    """A fill value arrayconv takes as it is: one number, complex only for a complex
    result (SciPy's errors for the others)."""
    kind = np.asarray(fillvalue).dtype.kind
    return np.ndim(fillvalue) == 0 and kind in "biufc" and (kind != "c" or np.result_type(a, b).kind == "c")


def _fill(fillvalue: Any, a: np.ndarray, b: np.ndarray) -> Any:
    """The fill value as SciPy's C code takes it: in the result's dtype."""
    return np.asarray(fillvalue).astype(np.result_type(a, b)).item()


def _centred(a: Any, shape: Any) -> Any:
    start = [(n - m) // 2 for n, m in zip(a.shape, shape)]
    return a[tuple(slice(s, s + m) for s, m in zip(start, shape))]


def _axes(axes: Any, ndim: int) -> list[int]:
    """The transform axes as scipy.fft takes them: all by default, else distinct ints in range."""
    if axes is None:
        return list(range(ndim))
    found = np.asarray(axes)
    if found.ndim > 1 or (found.size and found.dtype.kind not in "iu"):
        raise ValueError("axes must be a scalar or iterable of integers")
    listed = [int(ax) for ax in np.atleast_1d(found)]
    if not listed:
        raise ValueError("when provided, axes cannot be empty")
    if any(ax < -ndim or ax >= ndim for ax in listed):
        raise ValueError("axes exceeds dimensionality of input")
    listed = [ax % ndim for ax in listed]
    if len(set(listed)) != len(listed):
        raise ValueError("all axes must be unique")
    return listed


def _time(call: Any) -> float:
    """Seconds a call takes: the best of a few, once warm (SciPy's measure=True)."""
    import timeit

    call()
    return min(timeit.repeat(call, number=1, repeat=3))
