"""Bounded, thread-safe LRU caches, registered so that they can be inspected and cleared."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """Counters of one cache.

    Attributes
    ----------
    hits, misses : int
        Lookups that found / did not find their key.
    size, maxsize : int
        Entries held, and the most it holds before evicting the least recently used.
    """

    hits: int
    misses: int
    size: int
    maxsize: int


class LRUCache:
    """A dict of at most `maxsize` entries that evicts the least recently used one.

    Parameters
    ----------
    name : str
        Name under which :func:`arrayconv.cache_info` reports it.
    maxsize : int
        Most entries held.
    """

    def __init__(self, name: str, maxsize: int) -> None:
        self.name, self.maxsize = name, maxsize
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = self._misses = 0
        _REGISTRY[name] = self

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value of `key` (now the most recently used), or `default`."""
        with self._lock:
            if key in self._data:
                self._hits += 1
                self._data.move_to_end(key)
                return self._data[key]
            self._misses += 1
            return default

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value of `key`, made by ``make()`` and stored on a miss."""
        value = self.get(key, _MISSING)
        if value is _MISSING:
            value = make()
            self.put(key, value)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Store `value` under `key`, evicting the least recently used entries beyond maxsize."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        with self._lock:
            self._data.clear()
            self._hits = self._misses = 0

    def info(self) -> CacheInfo:
        """The cache's counters."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._data), self.maxsize)


_MISSING = object()
_REGISTRY: dict[str, LRUCache] = {}


def cache_info() -> dict[str, CacheInfo]:
    """Counters of every arrayconv cache, by name.

    Examples
    --------
    >>> import arrayconv as ac
    >>> sorted(ac.cache_info())
    ['cuda_devices', 'cuda_kernels', 'estimated_choices', 'measured_methods', 'patch_layouts', 'rates', 'tap_layouts']
    """
    return {name: cache.info() for name, cache in sorted(_REGISTRY.items())}


def clear_caches() -> None:
    """Empty every arrayconv cache and this thread's scratch buffers.

    Plans keep what they own (their kernel spectra) until they are dropped.
    """
    from . import _scratch

    for cache in _REGISTRY.values():
        cache.clear()
    _scratch.clear()
