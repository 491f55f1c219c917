"""Bounded, thread-safe LRU caches, registered so that they can be inspected and cleared."""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

# Default byte bound of each cache: its values are layouts, choices and compiled kernels,
# far smaller than this unless something goes wrong.
DEFAULT_MAXBYTES = 256 << 20


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """Counters of one cache.

    Attributes
    ----------
    hits, misses : int
        Lookups that found / did not find their key.
    size, maxsize : int
        Entries held, and the most it holds before evicting the least recently used.
    nbytes, maxbytes : int
        Approximate bytes held, and the most it holds before evicting.
    """

    hits: int
    misses: int
    size: int
    maxsize: int
    nbytes: int
    maxbytes: int


class LRUCache:
    """A dict of at most `maxsize` entries and `maxbytes` bytes that evicts the least
    recently used entries.

    Parameters
    ----------
    name : str
        Name under which :func:`arrayconv.cache_info` reports it.
    maxsize : int
        Most entries held.
    maxbytes : int, optional
        Most bytes held, by :func:`approximate_size` of the values (a value larger than
        this is not kept).
    """

    def __init__(self, name: str, maxsize: int, maxbytes: int = DEFAULT_MAXBYTES) -> None:
        self.name, self.maxsize, self.maxbytes = name, maxsize, maxbytes
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        self._nbytes = 0
        self._lock = threading.Lock()
        self._hits = self._misses = 0
        _REGISTRY[name] = self

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value of `key` (now the most recently used), or `default`."""
        with self._lock:
            value = self._data.get(key, _MISSING)
            if value is _MISSING:
                self._misses += 1
                return default
            self._hits += 1
            self._data.move_to_end(key)
            return value

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value of `key`, made by ``make()`` and stored on a miss. A key that cannot
        be hashed (a list given as `axes`, say) is a miss whose value is not stored."""
        try:
            value = self.get(key, _MISSING)
        except TypeError:  # unhashable
            return make()
        if value is _MISSING:
            value = make()
            self.put(key, value)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Store `value` under `key`, evicting the least recently used entries beyond the bounds."""
        size = approximate_size(value)
        with self._lock:
            self._drop(key)
            if size > self.maxbytes:
                return
            self._data[key], self._sizes[key] = value, size
            self._nbytes += size
            while len(self._data) > self.maxsize or self._nbytes > self.maxbytes:
                self._drop(next(iter(self._data)))

    def _drop(self, key: Hashable) -> None:
        if key in self._data:
            del self._data[key]
            self._nbytes -= self._sizes.pop(key)

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        with self._lock:
            self._data.clear()
            self._sizes.clear()
            self._nbytes = self._hits = self._misses = 0

    def info(self) -> CacheInfo:
        """The cache's counters."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._data), self.maxsize, self._nbytes, self.maxbytes)


def approximate_size(value: Any, depth: int = 3) -> int:
    """Bytes of `value`: arrays by ``nbytes``, containers and dataclasses by their items
    (to `depth` levels), modules as nothing, anything else by ``sys.getsizeof``.

    Examples
    --------
    >>> import numpy as np
    >>> approximate_size(np.zeros(1000)) >= 8000
    True
    """
    if isinstance(value, ModuleType):
        return 0  # shared, not held; asking a deferred module for `nbytes` would import it
    if hasattr(value, "nbytes") and hasattr(value, "dtype"):
        return int(value.nbytes)
    size = sys.getsizeof(value, 64)
    if depth == 0:
        return size
    if isinstance(value, dict):
        items: Any = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = value
    elif dataclasses.is_dataclass(value):
        items = [getattr(value, f.name) for f in dataclasses.fields(value)]
    else:
        return size
    return size + sum(approximate_size(item, depth - 1) for item in items)


_MISSING = object()
_REGISTRY: dict[str, LRUCache] = {}


def cache_info() -> dict[str, CacheInfo]:
    """Counters of every arrayconv cache, by name.

    Examples
    --------
    >>> import arrayconv as ac
    >>> sorted(ac.cache_info())  # doctest: +NORMALIZE_WHITESPACE
    ['conv_specs', 'correlate_specs', 'cpu_features', 'cuda_devices', 'cuda_kernels', 'cuda_shared_memory',
     'direct_cuda_launches', 'direct_cuda_problems', 'direct_form_estimates', 'direct_forms',
     'estimated_choices', 'fft_layouts', 'fitted_weights', 'measured_methods', 'oa_block_plans', 'one_maps',
     'patch_layouts', 'plain_call_kernels_as_given', 'plain_call_plans', 'problems', 'rates', 'tap_layouts',
     'unplanned_calls']
    """
    return {name: cache.info() for name, cache in sorted(_REGISTRY.items())}


def clear_caches() -> None:
    """Empty every arrayconv cache and this thread's scratch buffers.

    Plans keep what they own (their kernel spectra) until they are dropped.
    """
    from . import scratch as _scratch

    for cache in _REGISTRY.values():
        cache.clear()
    _scratch.clear()
