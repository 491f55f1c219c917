"""CUDA kernels (CuPy RawKernels): compiled once per source and dtype, then cached.

This module never imports CuPy at import time; it is imported on the CPU path too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .cache import LRUCache

_compiled = LRUCache("cuda_kernels", maxsize=64)
_multiprocessors = LRUCache("cuda_devices", maxsize=16)
_shared_limits = LRUCache("cuda_shared_memory", maxsize=16)
# cudaDevAttrMaxSharedMemoryPerBlockOptin, where CuPy does not name it.
_SHARED_OPTIN_ATTRIBUTE = 97

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


def full_source(source: str, dtype: np.dtype[Any], constants: dict[str, int]) -> str:
    """`source` as compiled for `dtype` and `constants`: ``T`` and each constant defined
    first (CuPy's complex header for complex dtypes). What NVRTC compiles, with CuPy or
    (in CI, to PTX) without it."""
    header = "#include <cupy/complex.cuh>\n" if dtype.kind == "c" else ""
    header += f"typedef {C_TYPES[dtype.name]} T;\n"
    header += "".join(f"#define {k} {v}\n" for k, v in constants.items())
    return header + source


COMPILE_OPTIONS = ("--std=c++17",)


def _compile(source: str, name: str, dtype: np.dtype[Any], constants: dict[str, int]) -> Any:
    import cupy

    raw = cupy.RawKernel(full_source(source, dtype, constants), name, options=COMPILE_OPTIONS)
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


def shared_memory_limit(device: int) -> int:
    """Bytes of shared memory one block of CUDA `device` may use (its opt-in limit: 227 KB
    on an H100, 99 KB on consumer Ampere and Ada GPUs, 64 KB on a T4); asked once, then
    cached."""
    import cupy

    runtime = cupy.cuda.runtime
    attribute = getattr(runtime, "cudaDevAttrMaxSharedMemoryPerBlockOptin", _SHARED_OPTIN_ATTRIBUTE)
    return _shared_limits.get_or_make(device, lambda: int(runtime.deviceGetAttribute(attribute, device)))
