"""Registry of the algorithms that solve a :class:`~arrayconv._spec.problem.Problem`: each
method module registers itself in :data:`METHODS` (:mod:`._registry`) when imported here."""

from . import _patch_cuda as patch_kernel
from . import direct, fft, im2col, overlap  # noqa: F401  (registration order = tie-break order)
from ._compiled import available as compiled_loops
from ._compiled import box_sums, window_scores
from ._registry import METHODS, Cost, Method, Shortcuts, exact_dtype, output, register
from ._separable import rank_one
from .direct import same_form_for_any_kernel

__all__ = ["METHODS", "Cost", "Method", "Shortcuts", "box_sums", "compiled_loops", "exact_dtype", "output", "patch_kernel", "rank_one", "register", "same_form_for_any_kernel", "window_scores"]
