"""Adjoints: dot-product tests <A x, y> = <x, A^H y> on every method, finite differences, torch."""

import numpy as np
import pytest
from _reference import random, to_numpy
from _strategies import conv_cases, correlate_shapes, examples
from hypothesis import given, settings
from hypothesis import strategies as st

import arrayconv as ac

METHODS = ["auto", *ac.METHODS]
OPTIONS = ("stride", "padding", "dilation", "groups")


def assert_same_inner_product(forward, y, transposed, x, fixed):
    """``Re vdot(y, forward) == Re vdot(transposed, x)`` to float64 precision: within
    1e-12 of ``|y|_2 |x|_2 |fixed|_1``, the largest ``<y, A x>`` can be when ``A`` is the
    operator of the other input `fixed` (Young's inequality). A bound of the operands, not
    of the products: an FFT's rounding reaches outputs that are exactly zero."""
    forward, y, transposed, x, fixed = (to_numpy(a).astype(np.complex128) for a in (forward, y, transposed, x, fixed))
    assert transposed.shape == x.shape
    lhs, rhs = np.vdot(y, forward).real, np.vdot(transposed, x).real
    bound = np.linalg.norm(y) * np.linalg.norm(x) * np.sum(np.abs(fixed))
    assert abs(lhs - rhs) <= 1e-12 * bound, (lhs, rhs, bound)


def output_padding(case, y_shape):
    """The `output_padding` that brings conv_transpose back to the forward input's size."""
    x_shape, w_shape, padding = case["x_shape"], case["w_shape"], case["padding"]
    extra = []
    for n, x, k, s, d in zip(y_shape[2:], x_shape[2:], w_shape[2:], case["stride"], case["dilation"]):
        pads = d * (k - 1) if padding == "same" else 0 if padding == "valid" else 2 * padding
        extra.append(x - ((n - 1) * s - pads + d * (k - 1) + 1))
    return tuple(extra)


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=examples(25))
@given(case=conv_cases(), dtype=st.sampled_from(["float64", "complex128"]), seed=st.integers(0, 2**16))
def test_conv_adjoints_pass_the_dot_product_test(xp, method, case, dtype, seed):
    rng = np.random.default_rng(seed)
    options = {k: case[k] for k in OPTIONS}
    x, w = random(rng, case["x_shape"], dtype), random(rng, case["w_shape"], dtype)
    forward = ac.conv(xp.asarray(x), xp.asarray(w), **options)
    g = random(rng, forward.shape, dtype)
    back = ac.conv_transpose(xp.asarray(g), xp.asarray(w), output_padding=output_padding(case, forward.shape), method=method, **options)
    assert type(back) is type(forward)
    assert_same_inner_product(forward, g, back, x, w)
    grad_w = ac.conv_weight_grad(xp.asarray(x), xp.asarray(g), w.shape, method=method, **options)
    assert_same_inner_product(forward, g, grad_w, w, x)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("flip", [False, True])
@settings(max_examples=examples(25))
@given(shapes=correlate_shapes(), dtype=st.sampled_from(["float64", "complex128"]), seed=st.integers(0, 2**16))
def test_correlate_adjoints_pass_the_dot_product_test(xp, method, flip, shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    s1, s2, mode = shapes
    forward_func = ac.convolve if flip else ac.correlate
    transpose = ac.convolve_transpose if flip else ac.correlate_transpose
    weight_grad = ac.convolve_weight_grad if flip else ac.correlate_weight_grad
    x, k = random(rng, s1, dtype), random(rng, s2, dtype)
    forward = forward_func(xp.asarray(x), xp.asarray(k), mode, method)
    g = random(rng, forward.shape, dtype)
    assert_same_inner_product(forward, g, transpose(xp.asarray(g), xp.asarray(k), s1, mode, method), x, k)
    assert_same_inner_product(forward, g, weight_grad(xp.asarray(x), xp.asarray(g), s2, mode, method), k, x)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("flip", [False, True])
def test_correlate_adjoints_sum_over_broadcast_axes(xp, mode, flip, rng):
    forward_func = ac.convolve if flip else ac.correlate
    transpose = ac.convolve_transpose if flip else ac.correlate_transpose
    weight_grad = ac.convolve_weight_grad if flip else ac.correlate_weight_grad
    # axis 0 batches in1 over one kernel, axis 1 gives one output per kernel, axis 2 pairs them
    x, k = random(rng, (4, 1, 3, 30), "complex128"), random(rng, (1, 5, 3, 7), "complex128")
    forward = forward_func(xp.asarray(x), xp.asarray(k), mode, axes=-1)
    g = random(rng, forward.shape, "complex128")
    back = transpose(xp.asarray(g), xp.asarray(k), x.shape, mode, axes=-1)
    assert_same_inner_product(forward, g, back, x, k)
    grad_k = weight_grad(xp.asarray(x), xp.asarray(g), k.shape, mode, axes=-1)
    assert_same_inner_product(forward, g, grad_k, k, x)


def test_scalars(rng):
    x, k, g = (np.asarray(v) for v in (2.0 + 1j, 3.0 - 2j, 0.5 + 0.25j))
    for forward, transpose, weight_grad in [
        (ac.correlate, ac.correlate_transpose, ac.correlate_weight_grad),
        (ac.convolve, ac.convolve_transpose, ac.convolve_weight_grad),
    ]:
        y = forward(x, k)
        assert_same_inner_product(y, g, transpose(g, k, ()), x, k)
        assert_same_inner_product(y, g, weight_grad(x, g, ()), k, x)


def finite_difference(loss, a, index, h=1e-3):
    """Central difference of `loss` in the real direction of one sample of `a`."""
    up, down = a.copy(), a.copy()
    up[index] += h
    down[index] -= h
    return (loss(up) - loss(down)) / (2 * h)


@pytest.mark.parametrize("method", METHODS)
def test_conv_gradients_match_finite_differences(method, rng):
    options = dict(stride=2, padding=1, dilation=(1, 2), groups=2)
    x, w = random(rng, (2, 4, 11, 12), "float64"), random(rng, (6, 2, 3, 3), "float64")
    g = random(rng, ac.conv(x, w, **options).shape, "float64")
    grad_x = ac.conv_transpose(g, w, output_padding=(0, 1), method=method, **options)
    grad_w = ac.conv_weight_grad(x, g, w.shape, method=method, **options)
    for _ in range(5):
        i = tuple(int(rng.integers(n)) for n in x.shape)
        fd = finite_difference(lambda a: np.sum(g * ac.conv(a, w, **options)), x, i)
        assert abs(fd - grad_x[i]) <= 1e-9 * max(1.0, abs(fd))
        j = tuple(int(rng.integers(n)) for n in w.shape)
        fd = finite_difference(lambda a: np.sum(g * ac.conv(x, a, **options)), w, j)
        assert abs(fd - grad_w[j]) <= 1e-9 * max(1.0, abs(fd))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_correlate_gradients_match_finite_differences(method, mode, rng):
    x, k = random(rng, (13, 17), "float64"), random(rng, (4, 5), "float64")
    g = random(rng, ac.correlate(x, k, mode).shape, "float64")
    grad_x = ac.correlate_transpose(g, k, x.shape, mode, method)
    grad_k = ac.correlate_weight_grad(x, g, k.shape, mode, method)
    for _ in range(5):
        i = tuple(int(rng.integers(n)) for n in x.shape)
        fd = finite_difference(lambda a: np.sum(g * ac.correlate(a, k, mode)), x, i)
        assert abs(fd - grad_x[i]) <= 1e-9 * max(1.0, abs(fd))
        j = tuple(int(rng.integers(n)) for n in k.shape)
        fd = finite_difference(lambda a: np.sum(g * ac.correlate(x, a, mode)), k, j)
        assert abs(fd - grad_k[j]) <= 1e-9 * max(1.0, abs(fd))


def test_conv_adjoints_match_torch(rng):
    torch = pytest.importorskip("torch")
    options = dict(stride=(2, 3), padding=(1, 2), dilation=(2, 1), groups=3)
    x, w = random(rng, (2, 6, 15, 17), "float64"), random(rng, (9, 2, 3, 4), "float64")
    g = random(rng, ac.conv(x, w, **options).shape, "float64")
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    torch.nn.functional.conv2d(tx, tw, **options).backward(torch.tensor(g))
    back = ac.conv_transpose(g, w, output_padding=(0, 2), **options)
    np.testing.assert_allclose(back, tx.grad.numpy(), rtol=0, atol=1e-12 * np.abs(back).max())
    grad_w = ac.conv_weight_grad(x, g, w.shape, **options)
    np.testing.assert_allclose(grad_w, tw.grad.numpy(), rtol=0, atol=1e-12 * np.abs(grad_w).max())


def test_float32_stays_float32(rng):
    x, w = random(rng, (1, 2, 8, 8), "float32"), random(rng, (3, 2, 3, 3), "float32")
    g = random(rng, (1, 3, 8, 8), "float32")
    assert ac.conv_transpose(g, w, padding=1).dtype == np.float32
    assert ac.conv_weight_grad(x, g, w.shape, padding=1).dtype == np.float32
    assert ac.correlate_transpose(g[0, 0], w[0, 0], (10, 10), "valid").dtype == np.float32


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda g, w: ac.conv_transpose(g, w, stride=2, output_padding=2), "`output_padding` must be below `stride`"),
        (lambda g, w: ac.conv_transpose(g[:, :2], w), "`y` has 2 channels but `w` has 3 filters"),
        (lambda g, w: ac.conv_transpose(g[0], w), "`y` must be \\(B, O, \\*out\\)"),
        (lambda g, w: ac.conv_transpose(g[..., :1, :1], w, padding=2), "implies an empty input"),
        (lambda g, w: ac.conv_weight_grad(g, g, (3, 3, 3, 3)), "`y` must have the forward output shape"),
        (lambda g, w: ac.conv_weight_grad(g, g, (3, -3, 3, 3)), "`w_shape` must be a tuple of positive ints"),
        (lambda g, w: ac.correlate_transpose(g[0, 0], w[0, 0], (8, 8), "full"), "`y` must have the forward result's shape"),
        (lambda g, w: ac.correlate_weight_grad(g[0, 0], g[0, 0], (3, 3), "bogus"), "`mode` must be one of"),
    ],
)
def test_errors(call, match, rng):
    g, w = random(rng, (1, 3, 8, 8), "float64"), random(rng, (3, 3, 3, 3), "float64")
    with pytest.raises(ValueError, match=match):
        call(g, w)
