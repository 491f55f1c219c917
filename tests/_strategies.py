"""Hypothesis strategies for shapes."""

from __future__ import annotations

import os

from hypothesis import strategies as st

MODES = ("full", "same", "valid")
FLOAT_DTYPES = ("float32", "float64", "complex64", "complex128")
# The Hypothesis profile of this run (conftest loads it): 'deterministic' in CI, or
# 'dev' for local runs (HYPOTHESIS_PROFILE=dev), with DEV_EXAMPLES examples in every test.
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "deterministic")
DEV_EXAMPLES = 500


def examples(n: int) -> int:
    """`n` examples in CI's deterministic profile; :data:`DEV_EXAMPLES` in the 'dev' profile
    (a test's own ``max_examples`` overrides the profile's, so it must ask here)."""
    return DEV_EXAMPLES if PROFILE == "dev" else n


@st.composite
def correlate_shapes(draw, max_ndim=3, max_size=24, max_kernel=9):
    """``(shape1, shape2, mode)``: odd and even kernels, kernels larger than images, size-1 axes."""
    ndim = draw(st.integers(1, max_ndim))
    size = max_size if ndim == 1 else max(6, max_size // ndim)
    s1 = tuple(draw(st.integers(1, size)) for _ in range(ndim))
    s2 = tuple(draw(st.integers(1, max_kernel)) for _ in range(ndim))
    mode = draw(st.sampled_from(MODES))
    if mode == "valid" and not (
        all(a >= b for a, b in zip(s1, s2)) or all(a <= b for a, b in zip(s1, s2))
    ):
        s2 = tuple(min(a, b) for a, b in zip(s1, s2))
    return s1, s2, mode


@st.composite
def conv_cases(draw, max_ndim=3):
    """Keyword arguments of `conv` with shapes that fit together."""
    nd = draw(st.integers(1, max_ndim))
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    cg, og = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    batch = draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 5)) for _ in range(nd))
    dilation = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    padding = draw(st.one_of(st.integers(0, 3), st.just("valid"), st.just("same")))
    if padding == "same":
        stride = (1,) * nd
    pad = padding if isinstance(padding, int) else 0
    limit = 20 if nd == 1 else 10 if nd == 2 else 6
    spatial = tuple(
        draw(st.integers(max(1, d * (k - 1) + 1 - 2 * pad), max(limit, d * (k - 1) + 1)))
        for k, d in zip(kernel, dilation)
    )
    return dict(
        x_shape=(batch, groups * cg, *spatial),
        w_shape=(groups * og, cg, *kernel),
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )
