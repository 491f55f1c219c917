"""The cost model's fitted weights, kept as data: ``fitted.json`` beside this module holds
each weight's value and where it came from (the sweep, machine and date it was fitted or
measured on), grouped by the module that uses it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .cache import LRUCache

_FILE = Path(__file__).with_name("fitted.json")
_read = LRUCache("fitted_weights", maxsize=1)


def fitted(group: str, name: str) -> Any:
    """The value of weight `name` of `group` (the module that uses it)."""
    return table()[group][name]["value"]


def table() -> dict[str, Any]:
    """Every weight: ``{group: {name: {"value": ..., "source": ...}}}`` (and an "about" line)."""
    return _read.get_or_make("table", lambda: json.loads(_FILE.read_text()))
