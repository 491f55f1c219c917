"""SciPy's own tests of the functions arrayconv.ndimage and arrayconv.signal stand in for,
run against them (``tests/scipy_suite/redirect.py``): the installed SciPy's test files as
they ship, every test that calls one of arrayconv's functions passing, or skipped as not
applicable with its reason."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import scipy

SCIPY = Path(scipy.__file__).parent
HERE = Path(__file__).parent / "scipy_suite"
SUITES = {
    "ndimage": (SCIPY / "ndimage" / "tests" / "test_filters.py", None),
    "signal": (SCIPY / "signal" / "tests" / "test_signaltools.py", "Convolve or Correlate or choose_conv or longdtype"),
}


@pytest.mark.slow
@pytest.mark.parametrize("suite", list(SUITES))
def test_scipys_own_tests_pass_against_the_drop_in(suite, tmp_path):
    path, selection = SUITES[suite]
    if not path.exists():
        pytest.skip(f"this SciPy ships without {path.name}")
    pytest.importorskip("hypothesis")
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "redirect", "-c", str(HERE / "pytest.ini"), f"--rootdir={SCIPY}", str(path)]
    if selection:
        command += ["-k", selection]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]), "ARRAYCONV_SCIPY_SUITE_REPORT": str(report)}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    found = json.loads(report.read_text())
    assert found["failed"] == [] and found["calling_arrayconv"] > 1000, found
