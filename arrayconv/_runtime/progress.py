"""A progress bar (tqdm, from the ``io`` extra) for long calls, or a silent stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def progress_bar(total: int, show: bool, unit: str) -> Iterator[Any]:
    """A tqdm progress bar over `total` units when `show` and tqdm is installed, else an
    object whose ``update`` does nothing."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        show = False
    if not show:
        yield _Silent()
        return
    with tqdm(total=total, unit=unit, desc="arrayconv") as bar:
        yield bar


class _Silent:
    def update(self, n: int = 1) -> None:
        """Do nothing."""
