"""numba, where installed (the ``numba`` extra): loops generated as Python source and
compiled once, their machine code cached on disk under :func:`arrayconv.cache_dir`."""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from types import ModuleType

from .rates import cache_dir


def available() -> bool:
    """Whether numba is importable and not turned off (``ARRAYCONV_NUMBA=0``)."""
    return numba_module() is not None


@functools.cache
def numba_module() -> ModuleType | None:
    """numba, imported; None where it is not installed or turned off."""
    if os.environ.get("ARRAYCONV_NUMBA") == "0":
        return None
    try:
        import numba
    except ImportError:
        return None
    return numba


def load(name: str, source: str) -> ModuleType:
    """Module `name` of `source`, written under :func:`arrayconv.cache_dir` so that numba
    caches its machine code there, and imported; in memory (compiled each process) where
    that folder cannot be written."""
    folder = cache_dir() / "numba"
    path = folder / f"{name}.py"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != source:
            path.write_text(source)
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except OSError:
        module = ModuleType(name)
        exec(compile(source.replace("cache=True", "cache=False"), name, "exec"), module.__dict__)
    sys.modules.setdefault(name, module)
    return module
