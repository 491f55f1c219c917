"""arrayconv: fast, SciPy-exact convolution and cross-correlation of N-D arrays.

Public API: :func:`correlate`, :func:`convolve` (SciPy semantics), :func:`conv`
(multichannel filter banks), :func:`patch_conv` (patch stacks), their adjoints
(:func:`conv_transpose`, :func:`conv_weight_grad`, :func:`correlate_transpose`, ...), their plans (:func:`plan_correlate`, :func:`plan_convolve`,
:func:`plan_conv`), :func:`match_template` (normalized cross-correlation),
:func:`richardson_lucy` (deconvolution), :func:`choose_method`, :func:`calibrate`, and settings
(:func:`config`, :func:`memory_limit`, :func:`cache_info`, :func:`clear_caches`).
"""

from . import kernels
from ._api.adjoint import (
    conv_transpose,
    conv_weight_grad,
    convolve_transpose,
    convolve_weight_grad,
    correlate_transpose,
    correlate_weight_grad,
)
from ._api.choose_method import choose_method
from ._api.conv import conv, plan_conv
from ._api.correlate import convolve, correlate, plan_convolve, plan_correlate
from ._api.deconvolve import richardson_lucy
from ._api.match import match_template
from ._api.patch import patch_conv
from ._api.tiled import convolve_into, correlate_into
from ._choose.choice import Choice, MemoryLimitWarning
from ._methods import METHODS
from ._plan.plan import Plan
from ._runtime.allocator import keep_freed_memory
from ._runtime.cache import cache_info, clear_caches
from ._runtime.config import config, memory_limit
from ._runtime.rates import Rates, cache_dir, calibrate

__version__ = "0.2.0.dev0"

__all__ = [
    "METHODS",
    "Choice",
    "MemoryLimitWarning",
    "Plan",
    "Rates",
    "cache_dir",
    "cache_info",
    "calibrate",
    "choose_method",
    "clear_caches",
    "config",
    "conv",
    "conv_transpose",
    "conv_weight_grad",
    "convolve",
    "convolve_into",
    "convolve_transpose",
    "convolve_weight_grad",
    "correlate",
    "correlate_into",
    "correlate_transpose",
    "correlate_weight_grad",
    "keep_freed_memory",
    "kernels",
    "match_template",
    "memory_limit",
    "patch_conv",
    "plan_conv",
    "plan_convolve",
    "plan_correlate",
    "richardson_lucy",
]
