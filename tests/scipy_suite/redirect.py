"""A pytest plugin that runs SciPy's own test files against arrayconv's drop-in namespaces.

``python -m pytest -p redirect --rootdir=SCIPY SCIPY/ndimage/tests/test_filters.py`` (with
this folder on ``PYTHONPATH``; ``tests/test_scipy_suite.py`` runs it so) replaces each
function of :mod:`arrayconv.ndimage` and :mod:`arrayconv.signal` in ``scipy.ndimage`` and
``scipy.signal`` before SciPy's tests import them,
and counts, per test, the calls that reach arrayconv. A test that never calls one tests
another of SciPy's functions (median filters, say): it is reported as not applicable.
Tests listed in :data:`NOT_APPLICABLE` are skipped with their reason. The counts go to
the JSON file named by ``ARRAYCONV_SCIPY_SUITE_REPORT``, if set.
"""

from __future__ import annotations

import functools
import json
import os
from collections import Counter
from typing import Any

import pytest
import scipy.ndimage
import scipy.signal

from arrayconv import ndimage, signal

# SciPy tests that cannot apply to a drop-in (test id substring -> why).
NOT_APPLICABLE: dict[str, str] = {
    "TestFFTConvolve::test_fft_nan": (
        "SciPy's FFT spreads a NaN over the whole result and warns; arrayconv's FFT keeps it in its footprint "
        "(its NaN policy), so the result is as direct's and there is nothing to warn of"
    ),
}

_calls: Counter[str] = Counter()
_current: list[str] = [""]
_outcomes: dict[str, str] = {}


def _counted(name: str, function: Any) -> Any:
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        _calls[_current[0]] += 1
        return function(*args, **kwargs)

    return call


def pytest_configure(config: pytest.Config) -> None:
    from scipy._lib._array_api import xp_capabilities_table  # SciPy's tests look their functions up in it

    ndimage._SCIPY_MACS = 0  # SciPy's tests judge arrayconv's sums: no small input handed back to SciPy

    for theirs, mine in ((scipy.ndimage, ndimage), (scipy.signal, signal)):
        for name in mine.__all__:
            original, ours = getattr(theirs, name), _counted(name, getattr(mine, name))
            if original in xp_capabilities_table:
                xp_capabilities_table[ours] = xp_capabilities_table[original]
            setattr(theirs, name, ours)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for part, why in NOT_APPLICABLE.items():
            if part in item.nodeid:
                item.add_marker(pytest.mark.skip(reason=f"not applicable to arrayconv: {why}"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    _current[0] = item.nodeid


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _outcomes[report.nodeid] = report.outcome


def pytest_terminal_summary(terminalreporter: Any) -> None:
    used = {node: outcome for node, outcome in _outcomes.items() if _calls[node]}
    lines = Counter(used.values())
    other = len(_outcomes) - len(used)
    terminalreporter.write_line(
        f"arrayconv drop-in: {len(used)} of SciPy's tests call arrayconv's functions ({dict(lines)}); "
        f"{other} test SciPy's other functions or were skipped"
    )
    if path := os.environ.get("ARRAYCONV_SCIPY_SUITE_REPORT"):
        failed = sorted(node for node, outcome in used.items() if outcome != "passed")
        with open(path, "w") as f:
            json.dump({"calling_arrayconv": len(used), "outcomes": dict(lines), "other": other, "failed": failed, "not_applicable": NOT_APPLICABLE}, f, indent=1)
