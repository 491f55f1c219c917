"""Direct's compiled form for layers of many input channels (numba): the float64 reference
on random data over many images and volumes, and the same bits on one worker or many."""

import contextlib

import numpy as np
import pytest
from _reference import assert_matches, random, reference_conv
from _strategies import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import arrayconv as ac
from arrayconv._methods import _channels, _compiled, direct
from arrayconv._runtime.backend import NUMPY

pytestmark = pytest.mark.skipif(not _compiled.available(), reason="numba is not installed (the numba extra)")


@contextlib.contextmanager
def _forced(held: int | None = None, lanes: bool = False, wide: bool = True):
    """Direct takes this form wherever it runs (rows of any width), whatever the estimates say; with `held`,
    the loops made for a CPU whose registers hold that many weights (maps a pass); with `lanes`, images'
    maps in vectors of one lane (any number of maps and channels a group). Maps in vectors are taken as on
    a CPU of 32 vector registers, and run the loops made for 32 (`wide`) or for 16."""
    real, real_module = direct._fastest_form, _channels._map_module

    def form(problem, backend, rates, settings):
        return ("channels", 0) if _channels.takes(problem, NUMPY) else real(problem, backend, rates, settings)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(direct, "_fastest_form", form)
        patch.setattr(_channels, "_MIN_WIDTH", 1)
        if held is not None:
            patch.setattr(_compiled, "weights_held", lambda: held)
        if lanes:
            patch.setattr(_channels, "_VECTOR_MAPS", 1)
            patch.setattr(_channels, "_VECTOR_CHANNELS", 1)
        patch.setattr(_channels, "wide_vectors", lambda: True)  # maps in vectors as with 32 registers
        patch.setattr(_channels, "_map_module", lambda kernel, vectors, lanes, dtype, _: real_module(kernel, vectors, lanes, dtype, wide))
        ac.clear_caches()
        _channels._geometry.cache_clear()
        _channels._units.cache_clear()
        yield
    ac.clear_caches()
    _channels._geometry.cache_clear()
    _channels._units.cache_clear()


# Images and volumes drawn, each axis as (most samples, most taps, most padding).
_AXES = {2: ((23, 6, 4), (40, _channels.MAX_ROW_TAPS, 4)), 3: ((6, 3, 2), (12, 4, 2), (30, 5, 2))}


@settings(max_examples=examples(60))
@given(
    axes=st.sampled_from(sorted(_AXES.values())),
    data=st.data(),
    batch=st.integers(1, 3),
    groups=st.integers(1, 3),
    cin=st.integers(2, 5),
    out=st.integers(1, 7),
    dtype=st.sampled_from(["float32", "float64"]),
    held=st.sampled_from(_compiled._HELD_WEIGHTS),
    lanes=st.booleans(),
    wide=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_matches_the_reference(axes, data, batch, groups, cin, out, dtype, held, lanes, wide, seed):
    """Images and volumes: odd and even kernels, images narrower than a vector and wider
    than a band, rows that straddle two planes or items, zero padding, groups, maps in
    passes of as many and one fewer, the loops of 16 and 32 registers, and maps in vectors
    (of one lane: any count of maps), by the loops of 16 and 32 registers."""
    size = data.draw(st.tuples(*(st.integers(1, n) for n, _, _ in axes)))
    kernel = data.draw(st.tuples(*(st.integers(1, k) for _, k, _ in axes)))
    padding = data.draw(st.tuples(*(st.integers(0, p) for _, _, p in axes)))
    size = tuple(max(n, k - 2 * p) for n, k, p in zip(size, kernel, padding))  # at least one output
    rng = np.random.default_rng(seed)
    x = random(rng, (batch, groups * cin, *size), dtype)
    w = random(rng, (groups * out, cin, *kernel), dtype)
    with _forced(held, lanes, wide):
        plan = ac.plan_conv(w, x.shape, dtype, padding=padding, groups=groups, method="direct")
        assert isinstance(plan._kernel, _channels.ChannelTaps)
        assert_matches(plan(x), reference_conv(x, w, padding=padding, groups=groups), dtype=dtype)


@pytest.mark.parametrize(
    ("shape", "groups"), [((2, 16, 40, 70), 1), ((1, 8, 300, 33), 1), ((2, 64, 40, 70), 8), ((2, 64, 40, 70), 4)], ids=["bands", "tall", "groups", "vectors"]
)
def test_same_bits_on_one_worker_or_many(shape, groups):
    """Units of work that do not depend on the threads: the same bits on 1, 2 and 3 workers
    (with 8 groups, each group padded and summed on one thread from 2 workers on; with 4,
    16 maps a group in vectors)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal((40 if groups == 1 else 64, shape[1] // groups, 3, 3), dtype=np.float32)
    with _forced():
        results = []
        for workers in (3, 2, 1):  # the threads' paths first, on fresh scratch
            with ac.config(workers=workers):
                results.append(ac.conv(x, w, padding=1, groups=groups, method="direct"))
        assert _channels.by_maps(ac.plan_conv(w, x.shape, padding=1, groups=groups, method="direct")._spec.problem) == (groups == 4)
    assert all(np.array_equal(results[0], r) for r in results[1:])
    assert_matches(results[0], reference_conv(x, w, padding=1, groups=groups), dtype="float32")


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "padding", "groups"),
    [
        ((2, 32, 9, 30), (32, 16, 3, 3), 1, 2),  # a row of 30: the last 7 samples overlap the ones before
        ((1, 16, 12, 9), (32, 16, 2, 3), (1, 0), 1),  # rows of one block, even kernel rows, two vectors of maps
        ((1, 32, 6, 20), (32, 16, 3, 2), (2, 0), 2),  # padding rows past a kernel's height
        ((1, 16, 40, 11), (16, 16, 3, 3), 1, 1),  # a tall image: several units
        ((2, 8, 5, 8, 20), (16, 8, 3, 2, 3), (1, 0, 2), 1),  # volumes: kernel planes, padding planes
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("wide", [True, False], ids=["32 registers", "16 registers"])
def test_maps_in_vectors_match_the_reference(x_shape, w_shape, padding, groups, dtype, wide):
    """Maps 16 at a time in the vector lanes (as on the CPU), by the loops of 32 vector
    registers and of 16: rows that end in a block of samples made twice, even kernels,
    padding, several units an image, volumes."""
    rng = np.random.default_rng(11)
    x, w = random(rng, x_shape, dtype), random(rng, w_shape, dtype)
    with _forced(wide=wide):
        plan = ac.plan_conv(w, x.shape, dtype, padding=padding, groups=groups, method="direct")
        assert _channels.by_maps(plan._spec.problem)
        assert_matches(plan(x), reference_conv(x, w, padding=padding, groups=groups), dtype=dtype)


def test_maps_in_vectors_on_16_registers_only_for_images_of_one_vector_of_maps(monkeypatch):
    """With 32 vector registers, images and volumes of 16 or 32 maps a group run their maps in
    vectors; with AVX2's 16, only images of 16 maps a group."""
    rng = np.random.default_rng(2)
    shapes = {"images of 16 maps": ((64, 16, 3, 3), (2, 64, 40, 70), 4), "images of 32 maps": ((64, 16, 3, 3), (2, 32, 40, 70), 2), "volumes": ((16, 8, 3, 3, 3), (1, 8, 12, 20, 20), 1)}
    for name, (w_shape, x_shape, groups) in shapes.items():
        problem = ac.plan_conv(rng.standard_normal(w_shape, dtype=np.float32), x_shape, padding=1, groups=groups, method="direct")._spec.problem
        for wide in (True, False):
            monkeypatch.setattr(_channels, "wide_vectors", lambda: wide)
            assert _channels.by_maps(problem) == (wide or name == "images of 16 maps"), (name, wide)


def test_takes_only_what_it_runs():
    """Strides, dilations, periodic padding, 1-D and 3-D inputs and wide kernel rows go to
    the other forms; 'auto' still gives the reference's values there."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((1, 4, 12, 64)), rng.standard_normal((3, 4, 3, 3))
    with _forced():
        assert isinstance(ac.plan_conv(w, x.shape, method="direct", padding=1)._kernel, _channels.ChannelTaps)
        for options in (dict(stride=2), dict(dilation=2), dict(padding=1, padding_mode="circular")):
            plan = ac.plan_conv(w, x.shape, method="direct", **options)
            assert not isinstance(plan._kernel, _channels.ChannelTaps)
    wide = rng.standard_normal((3, 4, 3, _channels.MAX_ROW_TAPS + 1))
    with _forced():
        plan = ac.plan_conv(wide, x.shape, method="direct")
        assert not isinstance(plan._kernel, _channels.ChannelTaps)
        assert_matches(plan(x), reference_conv(x, wide), dtype="float64")
