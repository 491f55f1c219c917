"""CUDA kernels (CuPy RawKernels): compiled once per source and dtype, then cached.

This module never imports CuPy at import time; it is imported on the CPU path too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._cache import LRUCache

_compiled = LRUCache("cuda_kernels", maxsize=64)
_multiprocessors = LRUCache("cuda_devices", maxsize=16)

# C type of each dtype the kernels are compiled for.
C_TYPES = {
    "float32": "float",
    "float64": "double",
    "complex64": "complex<float>",
    "complex128": "complex<double>",
    "int8": "signed char",
    "int16": "short",
    "int32": "int",
    "int64": "long long",
    "uint8": "unsigned char",
    "uint16": "unsigned short",
    "uint32": "unsigned int",
    "uint64": "unsigned long long",
}


class KernelCompileError(RuntimeError):
    """A CUDA kernel of arrayconv failed to compile (names the kernel and the dtype)."""


def kernel(source: str, name: str, dtype: np.dtype[Any], **constants: int) -> Any:
    """The compiled RawKernel `name` of `source`, with ``T`` the C type of `dtype` and each
    of `constants` defined as a macro; compiled on first use, then cached."""
    key = (name, source, np.dtype(dtype).name, tuple(sorted(constants.items())))
    return _compiled.get_or_make(key, lambda: _compile(source, name, np.dtype(dtype), constants))


def _compile(source: str, name: str, dtype: np.dtype[Any], constants: dict[str, int]) -> Any:
    import cupy

    header = "#include <cupy/complex.cuh>\n" if dtype.kind == "c" else ""
    header += f"typedef {C_TYPES[dtype.name]} T;\n"
    header += "".join(f"#define {k} {v}\n" for k, v in constants.items())
    raw = cupy.RawKernel(header + source, name, options=("--std=c++17",))
    try:
        raw.compile()
    except Exception as error:  # CuPy raises its own CompileException
        msg = f"CUDA kernel {name!r} for dtype {dtype} with {constants} failed to compile: {error}"
        raise KernelCompileError(msg) from error
    return raw


def blocks(n: int, threads: int) -> int:
    """Blocks of `threads` that cover `n` items."""
    return max(1, -(-n // threads))


def multiprocessors(device: int) -> int:
    """Streaming multiprocessors of CUDA `device` (asked once, then cached)."""
    import cupy

    return _multiprocessors.get_or_make(
        device, lambda: cupy.cuda.runtime.deviceGetAttribute(cupy.cuda.runtime.cudaDevAttrMultiProcessorCount, device)
    )
