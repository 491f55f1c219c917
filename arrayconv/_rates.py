"""Machine rates behind the cost model."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rates:
    """Throughputs of one machine, per backend.

    Attributes
    ----------
    gemm_flops : float
        Floating-point operations per second of a large float32 matrix product.
    stream_bytes : float
        Bytes per second moved by a large elementwise operation or copy.
    fft_flops : float
        ``5 N log2 N`` flops per second of a large real FFT.
    call_seconds : float
        Fixed cost of one array-library call (Python overhead, kernel launch).
    """

    gemm_flops: float
    stream_bytes: float
    fft_flops: float
    call_seconds: float


# Measured on the 2-core CI machine (OpenBLAS, pocketfft); `calibrate` will replace them.
CPU_RATES = Rates(gemm_flops=100e9, stream_bytes=11e9, fft_flops=10e9, call_seconds=5e-6)
