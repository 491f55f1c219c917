"""`patch_conv`: one filter bank applied to every patch of a stack."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from .._methods import METHODS, patch_kernel
from .._runtime.backend import Array, Backend, get_backend, on_arrays_device
from .._runtime.cuda import shared_memory_limit
from .._spec.problem import as_array, check_choice, int_tuple, result_dtype
from .conv import conv


@on_arrays_device
def patch_conv(
    x: Array,
    w: Array,
    *,
    padding: int | Sequence[int] = 0,
    stride: int | Sequence[int] = 1,
    method: Literal["auto", "patch", "direct", "im2col", "fft"] = "auto",
) -> Array:
    """Filter every patch of a stack with one bank of 2-D filters.

    ``y[b, n, d] = sum_c correlate(x_pad[b, n, c], w[d, c], 'valid')[::stride]``: the
    conv layer of :func:`conv` on each patch, with the patches as its batch.

    Parameters
    ----------
    x : array_like, shape (B, N, C, h, w)
        `B` stacks of `N` patches of `C` channels.
    w : array_like, shape (D, C, kh, kw)
        Filter bank.
    padding : int or (int, int), optional
        Zeros added on both sides of each patch axis (>= 0). Default 0.
    stride : int or (int, int), optional
        Step between output samples (>= 1). Default 1.
    method : {'auto', 'patch', 'direct', 'im2col', 'fft'}, optional
        'patch': the CUDA kernel that holds the filter bank and a tile of patches in
        shared memory (CuPy, float32/float64, padded patch width up to 40). 'direct',
        'im2col', 'fft': :func:`conv`'s methods on the patches as one batch. 'auto'
        (default): 'patch' where it runs, else :func:`conv`'s choice (im2col + GEMM on
        the CPU for typical stacks).

    Returns
    -------
    ndarray, shape (B, N, D, h', w')
        ``h' = (h + 2 * padding[0] - kh) // stride[0] + 1`` (and so for `w'`), dtype as
        :func:`conv`.

    Raises
    ------
    ValueError
        For shapes that do not fit together, bad padding or stride, or 'patch' on
        arrays or dtypes it does not take.
    TypeError
        For non-numeric dtypes, or NumPy mixed with CuPy.

    Examples
    --------
    >>> import numpy as np
    >>> import arrayconv as ac
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((1, 500, 8, 4, 4), dtype=np.float32)
    >>> w = rng.standard_normal((16, 8, 3, 3), dtype=np.float32)
    >>> ac.patch_conv(x, w, padding=1).shape
    (1, 500, 16, 4, 4)
    """
    backend = get_backend(x=x, w=w)
    x, w = as_array(x, "x", backend), as_array(w, "w", backend)
    check_choice("method", method, ("auto", "patch", *METHODS))
    if x.ndim != 5:
        msg = f"`x` must be a patch stack (B, N, C, h, w), got shape {x.shape}"
        raise ValueError(msg)
    if w.ndim != 4 or w.shape[1] != x.shape[2]:
        msg = f"`w` must be (D, C, kh, kw) with C={x.shape[2]} like `x`, got shape {w.shape} for x.shape={x.shape}"
        raise ValueError(msg)
    pad, step = int_tuple("padding", padding, 2, 0), int_tuple("stride", stride, 2, 1)
    if any(k > n + 2 * p for n, k, p in zip(x.shape[3:], w.shape[2:], pad)):
        msg = f"`w`'s kernel {w.shape[2:]} must fit in the padded patches, got x.shape={x.shape}, w.shape={w.shape}, padding={pad}"
        raise ValueError(msg)
    stack, patches = x.shape[:2], x.reshape(-1, *x.shape[2:])
    if method in ("auto", "patch"):
        dtype, result = result_dtype(patches, w)
        lay = _kernel_layout(patches.shape, w.shape, pad, step, backend, dtype if dtype == result else None)
        if lay is not None:
            xp = backend.xp
            y = patch_kernel.run(xp.ascontiguousarray(patches, dtype=dtype), xp.ascontiguousarray(w, dtype=dtype), lay, backend)
            return y.reshape(*stack, *y.shape[1:])
        if method == "patch":
            msg = (
                "method 'patch' needs CuPy arrays of float32 or float64 with padded patches at most "
                f"{patch_kernel.MAX_PADDED_WIDTH} wide, got {backend.name} arrays of {x.dtype} "
                f"and x.shape={x.shape}, padding={pad}; use method='auto'"
            )
            raise ValueError(msg)
    y = conv(patches, w, padding=pad, stride=step, method=method)  # type: ignore[arg-type]  # 'patch' ran above
    return y.reshape(*stack, *y.shape[1:])


def _kernel_layout(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], pad: tuple[int, ...], step: tuple[int, ...],
    backend: Backend, dtype: np.dtype[Any] | None,
):
    """The CUDA kernel's tiles for patches `x_shape` ``(P, C, h, w)`` within the device's
    shared memory, or None where it does not run: NumPy, no single compute dtype (`dtype`
    None: float16 results), dtype or sizes the kernel does not take."""
    if backend.name != "cupy" or dtype is None:
        return None
    if any(n + 2 * p < k for n, p, k in zip(x_shape[2:], pad, w_shape[2:])):
        return None  # conv raises its own error for a kernel larger than the padded patch
    limit = shared_memory_limit(backend.device or 0)
    return patch_kernel.layout(tuple(x_shape), tuple(w_shape), pad, step, dtype, limit)  # type: ignore[arg-type]
