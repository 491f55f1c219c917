import atexit
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from _strategies import DEV_EXAMPLES, PROFILE
from hypothesis import HealthCheck, settings

settings.register_profile(
    "deterministic",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=DEV_EXAMPLES)
settings.load_profile(PROFILE)

if "ARRAYCONV_CACHE_DIR" not in os.environ:
    # The suite prices with the shipped rates and remembers no choices, whatever calibrate()
    # or measure='disk' stored on this machine: a cache folder of its own (the test processes
    # inherit it), sharing the machine's compiled loops.
    from arrayconv._runtime.rates import cache_dir

    compiled = cache_dir() / "numba"
    compiled.mkdir(parents=True, exist_ok=True)
    session = Path(tempfile.mkdtemp(prefix="arrayconv-tests-"))
    (session / "numba").symlink_to(compiled, target_is_directory=True)
    os.environ["ARRAYCONV_CACHE_DIR"] = str(session)
    atexit.register(shutil.rmtree, session, ignore_errors=True)

CUPY_STAND_IN = os.environ.get("ARRAYCONV_CUPY_STAND_IN") == "1"
if CUPY_STAND_IN:  # CuPy played by NumPy, for machines with no GPU
    import _numpy_cupy

    _numpy_cupy.install()


def pytest_collection_modifyitems(config, items):
    """Slow tests first (each test process takes the next test as it finishes one: long ones
    left to the end keep one process busy while the others wait); on the stand-in for
    CuPy, skip the tests that need a real CUDA device."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if CUPY_STAND_IN:
        for item in items:
            if item.get_closest_marker("cuda"):
                item.add_marker(pytest.mark.skip(reason="needs a real CUDA device, not the NumPy stand-in for CuPy"))


@pytest.fixture(scope="session", params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def xp(request):
    """The array library under test: NumPy always, CuPy when a CUDA device is present (or
    its NumPy stand-in, tests/_numpy_cupy.py, with ``ARRAYCONV_CUPY_STAND_IN=1``)."""
    if request.param == "numpy":
        return np
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    if not cp.cuda.is_available():
        pytest.skip("no CUDA device available")
    return cp


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def plans_made(monkeypatch):
    """The methods of the plans made while the test runs, in order (``Plan.__init__`` spied
    on), under a fixed memory budget (the default follows free RAM, which other processes
    change: a new budget is a new plan)."""
    import arrayconv as ac
    from arrayconv._plan.plan import Plan

    made, make = [], Plan.__init__

    def spy(self, *args, **kwargs):
        make(self, *args, **kwargs)
        made.append(self.method)

    monkeypatch.setattr(Plan, "__init__", spy)
    with ac.config(memory_limit=1 << 30):
        yield made


@pytest.fixture
def numpy_forms(monkeypatch):
    """Direct's NumPy forms only: its compiled form (numba, where installed) left out, for
    the tests of the forms it would take over."""
    import arrayconv as ac
    from arrayconv._methods import _compiled

    monkeypatch.setattr(_compiled, "available", lambda: False)
    ac.clear_caches()
    yield
    ac.clear_caches()
