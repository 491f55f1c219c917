"""The worked examples of docs/ run and give the right answers (at small sizes)."""

import importlib.util
from pathlib import Path

import numpy as np

import arrayconv as ac

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_richardson_lucy_example_matches_plain_iterations(capsys):
    rl = load("richardson_lucy")
    rng = np.random.default_rng(0)
    psf = rl.gaussian_psf(2.0, 6)
    truth, observed = rl.star_field(128, psf, rng)
    got = ac.richardson_lucy(observed, psf, 8)
    estimate = np.full(observed.shape, 0.5, np.float64)  # the textbook loop, in float64
    for _ in range(8):
        estimate *= ac.correlate(observed / ac.convolve(estimate, psf.astype(np.float64), "same"), psf.astype(np.float64), "same")
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, estimate, rtol=0, atol=1e-4 * estimate.max())
    star = np.unravel_index(np.argmax(truth), truth.shape)
    assert got[star] > 2 * observed[star]  # deconvolution sharpens the brightest star
    rl.main(64, 3)
    assert "arrayconv.richardson_lucy" in capsys.readouterr().out


def test_readme_example_runs_and_says_what_it_shows(capsys):
    """The README's example block, as a reader would paste it."""
    import re

    text = (Path(__file__).parent.parent / "README.md").read_text()
    names: dict = {}
    exec(re.search(r"```python\n(.*?)```", text, re.S).group(1), names)
    assert names["out"].shape == (8, 32, 256, 256) and names["y"].dtype == np.float32
    assert np.unravel_index(np.argmax(names["scores"]), names["scores"].shape) == (1000, 2000)
    assert len(names["smooth"]) == 10 and names["restored"].dtype == np.float32
    assert capsys.readouterr().out.startswith("Choice(method=")
