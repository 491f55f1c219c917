"""Backend dispatch: NumPy never pulls in CuPy; mixed libraries are a TypeError."""

import contextlib
import subprocess
import sys
import types

import numpy as np
import pytest

import arrayconv as ac


def test_import_and_numpy_call_never_import_cupy():
    code = (
        "import sys, numpy as np, arrayconv as ac; "
        "ac.correlate(np.arange(5.0), np.arange(2.0)); "
        "ac.conv(np.ones((1, 1, 4, 4)), np.ones((1, 1, 2, 2))); "
        "assert 'cupy' not in sys.modules, 'cupy was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_mixed_numpy_and_cupy_is_a_type_error(monkeypatch):
    fake = types.ModuleType("cupy")

    class ndarray:
        device = contextlib.nullcontext()  # arrayconv makes the arrays' device current

    ndarray.__module__ = "cupy"
    fake.ndarray = ndarray
    monkeypatch.setitem(sys.modules, "cupy", fake)
    match = r"all arrays must be NumPy arrays or all CuPy arrays; got `in1` is numpy.ndarray, `in2` is cupy.ndarray"
    with pytest.raises(TypeError, match=match):
        ac.correlate(np.ones(3), ndarray())
    with pytest.raises(TypeError, match=r"`x` is numpy.ndarray, `w` is numpy.ndarray, `bias` is cupy.ndarray"):
        ac.conv(np.ones((1, 1, 3)), np.ones((1, 1, 2)), ndarray())
