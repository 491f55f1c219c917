"""arrayconv on dask arrays: each block filtered by arrayconv, dask as the engine.

The image is extended past its edges by the boundary rule (``dask.array.pad``), each block
is given the ``kernel - 1`` samples that follow it (``dask.array.overlap.overlap``), and a
'valid' correlation of each block yields exactly its share of the result. Blocks may be
NumPy or CuPy arrays (the kernel follows them to the GPU); the method inside each block
is arrayconv's own choice (FFT for large kernels). :func:`match_template` scores each
block's windows the same way. :func:`richardson_lucy` deconvolves the blocks of a stack
apart, each whole along the deconvolved axes. Each block runs on one of arrayconv's
workers: dask's own threads run the blocks side by side, so the two never multiply. Needs
the ``dask`` extra.

Examples
--------
>>> import numpy as np
>>> import dask.array as da
>>> import arrayconv as ac
>>> import arrayconv.dask as acd
>>> rng = np.random.default_rng(0)
>>> image, psf = rng.random((600, 500)), rng.random((15, 15))
>>> lazy = acd.correlate(da.from_array(image, chunks=200), psf, "same", boundary="wrap")
>>> bool(np.allclose(lazy.compute(), ac.correlate(image, psf, "same", boundary="wrap")))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dask.array as da
import numpy as np
from dask.array.overlap import ensure_minimum_chunksize

from ._api.conv import conv as _conv
from ._api.conv import conv_padding
from ._api.correlate import MethodName
from ._api.correlate import convolve as _convolve
from ._api.correlate import correlate as _correlate
from ._api.deconvolve import check_deconvolution, check_psf, deconvolution_dtype
from ._api.deconvolve import richardson_lucy as _richardson_lucy
from ._api.match import centred_template, check_match
from ._api.match import match_template as _match_template
from ._runtime.backend import get_backend, is_cupy_array
from ._runtime.config import config
from ._spec.boundary import EDGE_RULES, EdgeRule, edge_rule, extended_index, fill_dtype, fill_number, pad_widths, past_one_copy
from ._spec.nan import NAN_POLICIES, check_result
from ._spec.problem import as_array, check_choice, check_numeric, int_tuple, result_dtype
from ._spec.shapes import mode_padding

__all__ = ["conv", "convolve", "correlate", "match_template", "richardson_lucy"]


def correlate(
    in1: da.Array,
    in2: Any,
    mode: str = "full",
    method: MethodName = "auto",
    *,
    boundary: EdgeRule = "constant",
    fillvalue: complex = 0,
    nan: str = "propagate",
) -> da.Array:
    """:func:`arrayconv.correlate` of a dask array with an in-memory kernel, lazily.

    Parameters are those of :func:`arrayconv.correlate` (every axis is correlated); the
    result is a dask array chunked like `in1`.
    """
    return _filter(in1, in2, mode, method, boundary, fillvalue, nan, _correlate)


def convolve(
    in1: da.Array,
    in2: Any,
    mode: str = "full",
    method: MethodName = "auto",
    *,
    boundary: EdgeRule = "constant",
    fillvalue: complex = 0,
    nan: str = "propagate",
) -> da.Array:
    """:func:`arrayconv.convolve` of a dask array with an in-memory kernel, lazily."""
    return _filter(in1, in2, mode, method, boundary, fillvalue, nan, _convolve)


def conv(
    x: da.Array,
    w: Any,
    bias: Any = None,
    *,
    stride: int | Sequence[int] = 1,
    padding: Any = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    padding_mode: EdgeRule = "constant",
    nan: str = "propagate",
    method: MethodName = "auto",
) -> da.Array:
    """:func:`arrayconv.conv` of a dask array ``(B, C, *spatial)``, lazily.

    The channel axis is gathered into one chunk. With stride 1 the spatial axes stay
    chunked (each block gets its halo); with a larger stride they are gathered too and
    the work is split over the batch.
    """
    _check_dask("x", x, "conv")
    pad_mode = EDGE_RULES[edge_rule(padding_mode, "padding_mode")]
    check_choice("nan", nan, NAN_POLICIES)
    w = as_array(w, "w", get_backend(w=w))
    bias = None if bias is None else as_array(bias, "bias", get_backend(bias=bias))
    check_result(nan, result_dtype(x, w, *(() if bias is None else (bias,)))[1])
    if not 3 <= x.ndim <= 5 or np.ndim(w) != x.ndim:
        msg = f"`x` must be (B, C, *spatial) and `w` (O, C // groups, *kernel) with 1 to 3 spatial dims, got shapes {x.shape} and {np.shape(w)}"
        raise ValueError(msg)
    nd, kernel = x.ndim - 2, tuple(np.shape(w)[2:])
    strides, dilations = int_tuple("stride", stride, nd, 1), int_tuple("dilation", dilation, nd, 1)
    lo, hi = conv_padding(padding, kernel, strides, dilations)
    spatial = range(2, x.ndim)
    x = _extend(x, spatial, list(zip(lo, hi)), pad_mode)
    reach = [d * (k - 1) + 1 for d, k in zip(dilations, kernel)]
    if max(strides) > 1:
        x = x.rechunk({1: -1, **{ax: -1 for ax in spatial}})
        reach = [1] * nd  # whole spatial axes: no halo needed
    else:
        x = x.rechunk({1: -1})
    options: dict[str, Any] = dict(stride=strides, dilation=dilations, groups=groups, nan=nan, method=method)

    def block(a: Any, kernel: Any, shift: Any) -> Any:
        return _conv(a, kernel, shift, **options)

    return _valid_blocks(x, spatial, reach, block, (w, bias), out_channels=np.shape(w)[0], strides=strides, dilations=dilations, kernel=kernel)


def match_template(
    image: da.Array,
    template: Any,
    mode: str = "valid",
    *,
    boundary: EdgeRule = "constant",
    fillvalue: float = 0,
    method: MethodName = "auto",
) -> da.Array:
    """:func:`arrayconv.match_template` of a dask array with an in-memory template, lazily.

    Parameters are those of :func:`arrayconv.match_template` (every axis is matched); the
    scores are a dask array chunked like `image`. Each block's windows are scored from
    its own samples (less the block's mean), so the scores equal the in-memory ones to
    rounding.
    """
    _check_dask("image", image, "match_template")
    template = as_array(template, "template", get_backend(template=template))
    check_numeric("image", np.dtype(image.dtype), image.shape)
    axes, dtype, fill = check_match(image, template, mode, boundary, fillvalue, None)
    centred_template(template, axes, get_backend(template=template).xp)  # refuses constant or non-finite templates now, not at compute
    pads = [mode_padding(n, k, mode) for n, k in zip(image.shape, template.shape)]
    extended = _extend(image.astype(dtype), axes, pads, EDGE_RULES[edge_rule(boundary)], fill)

    def block(a: Any, t: Any) -> Any:
        return _match_template(a, t, "valid", method=method)

    return _valid_blocks(extended, axes, list(template.shape), block, (template,), dtype=dtype)


def richardson_lucy(
    image: da.Array,
    psf: Any,
    num_iter: int = 50,
    *,
    clip: bool = False,
    filter_epsilon: float | None = None,
    boundary: EdgeRule = "constant",
    axes: int | Sequence[int] | None = None,
    method: MethodName = "auto",
) -> da.Array:
    """:func:`arrayconv.richardson_lucy` of a dask array (a stack of frames, say) with one
    in-memory PSF, lazily.

    Parameters are those of :func:`arrayconv.richardson_lucy` but `start` (each block
    starts at 0.5); the PSF is 1 along the batch axes (the same PSF for every frame).
    Each block is deconvolved on its own, so the image is rechunked to one chunk along
    each deconvolved axis (Richardson-Lucy is not local: every iteration spreads each
    sample a PSF further); chunks along the batch axes stay. The result equals the
    in-memory one to rounding, chunked like the rechunked image. A NaN or inf in a block
    is a ValueError when it is computed.
    """
    _check_dask("image", image, "richardson_lucy")
    backend = get_backend(psf=psf)
    psf = as_array(psf, "psf", backend)
    check_numeric("image", np.dtype(image.dtype), image.shape)
    axes, _, iterations, floor = check_deconvolution(image, psf, num_iter, filter_epsilon, boundary, axes)
    check_psf(psf, axes, backend.xp)
    batched = [ax for ax in range(image.ndim) if ax not in axes and psf.shape[ax] != 1]
    if batched:
        msg = (
            f"`psf` must be 1 along the batch axes (one PSF for every block), got shape {psf.shape} with axes={axes}; "
            "deconvolve in memory (arrayconv.richardson_lucy) for a PSF per frame"
        )
        raise ValueError(msg)
    whole = image.rechunk({ax: -1 for ax in axes})

    def block(piece: Any) -> Any:
        kernel = _to_gpu(psf) if is_cupy_array(piece) else psf
        with config(workers=1):
            return _richardson_lucy(piece, kernel, iterations, clip=clip, filter_epsilon=floor, boundary=boundary, axes=axes, method=method)

    return whole.map_blocks(block, dtype=deconvolution_dtype(image), meta=whole._meta)


def _filter(in1, in2, mode, method, boundary, fillvalue, nan, func):
    _check_dask("in1", in1, func.__name__)
    check_choice("mode", mode, ("full", "same", "valid"))
    check_choice("nan", nan, NAN_POLICIES)
    in2 = as_array(in2, "in2", get_backend(in2=in2))
    check_numeric("in1", np.dtype(in1.dtype), in1.shape)
    _, result = result_dtype(in1, in2)
    check_result(nan, result)
    if in1.ndim != np.ndim(in2):
        msg = f"`in1` and `in2` must have the same ndim, got shapes {in1.shape} and {np.shape(in2)}"
        raise ValueError(msg)
    kernel = tuple(np.shape(in2))
    if mode == "valid" and any(n < k for n, k in zip(in1.shape, kernel)):
        msg = f"mode 'valid' needs `in1` at least as large as `in2` on every axis, got {in1.shape} and {kernel}"
        raise ValueError(msg)
    fillvalue = fill_number(fillvalue)
    pad_mode = EDGE_RULES[edge_rule(boundary, "boundary", fillvalue)]
    if pad_mode == "constant" and mode != "valid":
        in1 = in1.astype(fill_dtype(fillvalue, np.dtype(in1.dtype), result))
    axes = range(in1.ndim)
    pads = [mode_padding(n, k, mode) for n, k in zip(in1.shape, kernel)]
    extended = _extend(in1, axes, pads, pad_mode, fillvalue)

    def block(a: Any, k: Any) -> Any:
        return func(a, k, "valid", method, nan=nan, fillvalue=fillvalue)

    return _valid_blocks(extended, axes, list(kernel), block, (in2,))


def _check_dask(name: str, a: Any, function: str) -> None:
    """Refuse an `a` that is not a dask array, naming it and where its kind goes instead."""
    if not isinstance(a, da.Array):
        msg = (
            f"`{name}` must be a dask array, got {type(a).__name__}: wrap an array with "
            f"dask.array.from_array(a, chunks=...), or filter it in memory with arrayconv.{function}"
        )
        raise TypeError(msg)


def _extend(a: da.Array, axes: Sequence[int], pads: list[tuple[int, int]], pad_mode: str, fillvalue: complex = 0) -> da.Array:
    """`a` extended as ``numpy.pad`` would, lazily. ``dask.array.pad`` returns too few
    samples where a 'wrap', 'symmetric' or 'reflect' pad reaches past one copy of its
    axis (:func:`past_one_copy`), so those axes are extended by taking the samples that
    ``numpy.pad`` would repeat instead."""
    pads = list(pads)
    for i, (ax, (lo, hi)) in enumerate(zip(axes, pads)):
        if past_one_copy(a.shape[ax], (lo, hi), pad_mode):
            a = da.take(a, extended_index(a.shape[ax], (lo, hi), pad_mode), axis=ax)
            pads[i] = (0, 0)
    widths = pad_widths(a.ndim, axes, pads)
    return da.pad(a, widths, mode="constant", constant_values=fillvalue) if pad_mode == "constant" else da.pad(a, widths, mode=pad_mode)


def _valid_blocks(a, axes, reach, block, operands, *, out_channels=None, strides=None, dilations=None, kernel=None, dtype=None):
    """Apply the 'valid' filter `block` to every block of `a` plus the ``reach - 1`` samples
    after it; the result's `dtype` is NumPy's promotion of the operands' unless given."""
    axes = list(axes)
    a = a.rechunk({ax: ensure_minimum_chunksize(r, a.chunks[ax]) for ax, r in zip(axes, reach) if r > 1})
    overlapped = da.overlap.overlap(a, depth={ax: (0, r - 1) for ax, r in zip(axes, reach)}, boundary="none")
    chunks = list(a.chunks)
    for ax, r in zip(axes, reach):
        chunks[ax] = (*a.chunks[ax][:-1], a.chunks[ax][-1] - r + 1)
    if out_channels is not None:  # conv: channels become filters; whole strided axes shrink
        chunks[1] = (out_channels,)
        if max(strides) > 1:
            for ax, s, d, k in zip(axes, strides, dilations, kernel):
                chunks[ax] = ((a.shape[ax] - d * (k - 1) - 1) // s + 1,)

    def run(piece: Any) -> Any:
        on_gpu = is_cupy_array(piece)
        with config(workers=1):  # dask's threads run the blocks side by side: arrayconv's do not multiply them
            return block(piece, *(_to_gpu(o) if on_gpu else o for o in operands))

    if dtype is None:
        dtype = np.result_type(a.dtype, *(o.dtype for o in operands if o is not None))
    return overlapped.map_blocks(run, chunks=tuple(chunks), dtype=dtype, meta=a._meta)


def _to_gpu(operand: Any) -> Any:
    """`operand` as a CuPy array, for a CuPy block (None stays None)."""
    if operand is None:
        return None
    import cupy

    return cupy.asarray(operand)
