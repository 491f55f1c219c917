"""arrayconv: fast, SciPy-exact convolution and cross-correlation of N-D arrays.

Public API: :func:`correlate`, :func:`convolve` (SciPy semantics), :func:`conv`
(multichannel filter banks), :func:`config` and :func:`memory_limit` (settings).
"""

from ._config import config, memory_limit
from ._conv import conv
from ._correlate import convolve, correlate
from ._methods import METHODS

__version__ = "0.1.0"

__all__ = ["METHODS", "config", "conv", "convolve", "correlate", "memory_limit"]
