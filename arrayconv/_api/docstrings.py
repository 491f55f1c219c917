"""Shared numpydoc parameter text, written once and filled into the public docstrings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])

PARAMETERS = {
    "method": """method : {'auto', 'direct', 'im2col', 'fft', 'oa'}, optional
        Algorithm. 'direct' sums over kernel taps in cache-sized chunks; 'im2col' gathers
        taps into column matrices (chunked to the memory budget) for one GEMM; 'fft' uses
        real FFTs at fast lengths; 'oa' is overlap-save, the FFT method on slabs of output
        rows whose temporaries fit the memory budget. 'auto' (default) picks the fastest
        by a cost model and never raises.""",
    "mode": """mode : {'full', 'valid', 'same'}, optional
        Output size, as in `scipy.signal.correlate`: 'full' (default) every overlap;
        'valid' only samples that need no zero padding (one input must be at least as
        large as the other on every correlated axis); 'same' the size of `in1`, centred
        as `scipy.signal.correlate`.""",
    "measure": """measure : bool or 'disk', optional
        With ``method='auto'``: time the viable methods once on this input and keep the
        fastest; the winner is remembered for this problem (by backend, device, shapes,
        dtype and options) in memory, and with 'disk' also in
        :func:`arrayconv.cache_dir`, so later calls skip the timing. Default False: the
        calibrated cost model decides.""",
    "memory_limit": """memory_limit : int, optional
        Bytes the temporaries of one call may use. Default: :func:`memory_limit` at
        each call.""",
    "out": """out : ndarray, optional
        Where to write the result: its exact shape and dtype, on the inputs' backend,
        writeable, not overlapping an input. Untouched if an error is raised.""",
    "boundary": """boundary : {'constant', 'wrap', 'symmetric', 'mirror', 'edge'}, optional
        How `in1` continues past its edges along the correlated axes (modes 'full' and
        'same'; 'valid' never reads past them): 'constant' (default) with `fillvalue`,
        'wrap' periodic, 'symmetric' mirrored with the edge sample repeated (d c b a | a b
        c d), 'mirror' without repeating it (d c b | a b c d), 'edge' the edge sample.
        Aliases: 'fill' and 'symm' (``scipy.signal.correlate2d``), 'nearest'
        (``scipy.ndimage``), 'zeros', 'circular' and 'replicate' (torch). 'reflect' is
        refused: scipy.ndimage means 'symmetric' by it, NumPy and torch 'mirror'.
    fillvalue : scalar, optional
        Value past the edges with boundary='constant', and of NaNs with nan='fill'. Default 0.
        Taken in the result's dtype, as SciPy (0.5 on an int16 image under a float kernel
        is 0.5); ValueError where the result cannot hold it (a fraction or a value out of
        range for integer results, a complex value for real ones).""",
    "nan": """nan : {'propagate', 'raise', 'fill', 'normalize', 'ignore'}, optional
        What a NaN in the input does. 'propagate' (default): the outputs whose kernel
        footprint covers a NaN or inf are NaN, as SciPy's direct method, on every method
        (FFT too: never a whole NaN image). 'raise': ValueError if an input holds NaN.
        'fill': NaNs are taken as `fillvalue`. 'normalize': normalized convolution, each
        output divided by the kernel weight over the non-NaN samples it covers (NaN where
        it covers none); samples past the edges count as data, as astropy's
        ``convolve(nan_treatment='interpolate', normalize_kernel=True)``; integer data
        too, but not an integer result (ValueError). 'ignore': no check; NaN and inf follow the method's arithmetic
        (FFT spreads them over the whole result).""",
    "axes": """axes : int or sequence of int, optional
        Axes to correlate along (default: all). The other axes are batched: each must be
        equal in both inputs, or 1 in one of them (broadcast).""",
}


def fill(func: F) -> F:
    """Substitute ``{method}``, ``{mode}``, ``{axes}``, ``{boundary}``, ``{nan}``, ``{measure}``, ``{memory_limit}``, ``{out}`` in `func`'s docstring."""
    func.__doc__ = (func.__doc__ or "").format(**PARAMETERS)
    return func
