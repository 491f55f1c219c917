"""One vocabulary of edge rules for every function: each name means one rule everywhere,
the other libraries' names are aliases, and 'reflect' (two rules in two libraries) is refused."""

import numpy as np
import pytest
from _reference import EDGE_ALIASES, EDGE_RULES, NUMPY_PAD, assert_matches, random, reference_correlate

import arrayconv as ac
from arrayconv.__main__ import main

AMBIGUOUS = r"'reflect' means two rules: 'symmetric' .* or 'mirror' .*; say which"


def _calls(rng):
    """Each function that takes an edge rule, as ``f(rule) -> result`` on fixed random data."""
    image = random(rng, (13, 11), "float64")
    kernel = random(rng, (4, 3), "float64")
    psf = rng.random((3, 3)) + 0.1
    x, w = random(rng, (2, 3, 9, 8), "float64"), random(rng, (4, 3, 3, 2), "float64")
    out = np.empty((13, 11))

    def into(rule):
        ac.correlate_into(image, kernel, out, "same", boundary=rule, progress=False)
        return out.copy()

    return {
        "correlate": lambda rule: ac.correlate(image, kernel, "same", boundary=rule),
        "convolve": lambda rule: ac.convolve(image, kernel, "full", boundary=rule),
        "plan_correlate": lambda rule: ac.plan_correlate(kernel, image.shape, "same", boundary=rule)(image),
        "conv": lambda rule: ac.conv(x, w, padding=2, padding_mode=rule),
        "plan_conv": lambda rule: ac.plan_conv(w, x.shape, padding=1, padding_mode=rule)(x),
        "match_template": lambda rule: ac.match_template(image, kernel, "same", boundary=rule),
        "richardson_lucy": lambda rule: ac.richardson_lucy(np.abs(image) + 1, psf, 3, boundary=rule),
        "correlate_into": into,
    }


@pytest.mark.parametrize("alias, rule", sorted(EDGE_ALIASES.items()))
def test_every_alias_gives_its_rules_result_in_every_function(alias, rule, rng):
    for name, call in _calls(rng).items():
        np.testing.assert_array_equal(call(alias), call(rule), err_msg=name)


@pytest.mark.parametrize("rule", EDGE_RULES)
def test_each_rule_is_numpy_pads_extension(rule, rng):
    """'mirror' is numpy.pad's 'reflect'; the other names are numpy.pad's own."""
    x, k = random(rng, (9, 7), "float64"), random(rng, (5, 4), "float64")
    pads = [(k.shape[0] // 2, (k.shape[0] - 1) // 2), (k.shape[1] // 2, (k.shape[1] - 1) // 2)]
    expected = reference_correlate(np.pad(x, pads, mode=NUMPY_PAD[rule]), k, "valid")
    assert_matches(ac.correlate(x, k, "same", boundary=rule), expected, dtype="float64")


def test_reflect_is_refused_everywhere_naming_both_rules(rng):
    for call in _calls(rng).values():
        with pytest.raises(ValueError, match=AMBIGUOUS):
            call("reflect")
    with pytest.raises(ValueError, match="`boundary`: " + AMBIGUOUS):
        ac.choose_method((20, 20), (3, 3), boundary="reflect")
    with pytest.raises(ValueError, match="`padding_mode`: " + AMBIGUOUS):
        ac.choose_method((1, 2, 8, 8), (3, 2, 3, 3), op="conv", padding=1, padding_mode="reflect")


def test_unknown_rules_name_the_argument_and_every_accepted_name():
    with pytest.raises(ValueError, match=r"`boundary` must be one of \{'constant', 'wrap', 'symmetric', 'mirror', 'edge'\} \(or an alias: 'fill' = 'constant'.*got 'periodic'"):
        ac.correlate(np.ones(5), np.ones(2), boundary="periodic")
    with pytest.raises(ValueError, match=r"`padding_mode` must be one of .*got 'same'"):
        ac.conv(np.ones((1, 1, 5)), np.ones((1, 1, 2)), padding_mode="same")


def test_zeros_with_another_fill_value_is_refused():
    with pytest.raises(ValueError, match=r"`boundary`='zeros' pads with 0, but `fillvalue` is 2.0; use 'constant'"):
        ac.correlate(np.ones(5), np.ones(2), "same", boundary="zeros", fillvalue=2.0)
    np.testing.assert_array_equal(
        ac.correlate(np.arange(5.0), np.ones(2), "full", boundary="zeros"), ac.correlate(np.arange(5.0), np.ones(2), "full", boundary="constant")
    )


def test_dask_takes_the_same_names(rng):
    da = pytest.importorskip("dask.array")
    from arrayconv import dask as acd

    image, kernel = random(rng, (30, 20), "float64"), random(rng, (5, 4), "float64")
    lazy = da.from_array(image, chunks=10)
    for alias, rule in EDGE_ALIASES.items():
        np.testing.assert_allclose(acd.correlate(lazy, kernel, "same", boundary=alias).compute(), ac.correlate(image, kernel, "same", boundary=rule), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=AMBIGUOUS):
        acd.correlate(lazy, kernel, "same", boundary="reflect")
    with pytest.raises(ValueError, match=AMBIGUOUS):
        acd.conv(da.from_array(random(rng, (1, 2, 9, 9), "float64")), random(rng, (3, 2, 3, 3), "float64"), padding=1, padding_mode="reflect")


def test_the_command_line_takes_the_same_names(tmp_path, rng, capsys):
    image = random(rng, (30, 20), "float32")
    np.save(tmp_path / "in.npy", image)
    for rule in ("symmetric", "symm"):
        assert main(["filter", str(tmp_path / "in.npy"), str(tmp_path / f"{rule}.npy"), "--kernel", "box:3", "--boundary", rule, "--no-progress"]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "symm.npy"), np.load(tmp_path / "symmetric.npy"))
    np.testing.assert_allclose(np.load(tmp_path / "symm.npy"), ac.correlate(image, np.full((3, 3), np.float32(1 / 9)), "same", boundary="symmetric"), rtol=1e-6)
    capsys.readouterr()
    assert main(["filter", str(tmp_path / "in.npy"), str(tmp_path / "o.npy"), "--kernel", "box:3", "--boundary", "reflect"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--boundary: 'reflect' means two rules" in err and "`" not in err
