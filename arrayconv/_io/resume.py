"""Resumable tiled runs: what :func:`arrayconv.correlate_into` has written, recorded durably.

With ``resume=True`` the tile loop records how many tiles (in their fixed order) are done, at
most every :data:`RECORD_SECONDS` and after their data are flushed to `out`, with a fingerprint of everything that decides the
result: the input (its shape, dtype, file and a sample of its samples), the kernel's bytes,
the options, `out` and the tiling. A later run with ``resume=True`` and the same fingerprint
skips the tiles done; any other fingerprint is an error, never a mix of two runs. The record
lives in `out`'s attributes (zarr, HDF5) or in a small file beside `out`'s file (a memmap),
``<file>.arrayconv-progress.json``, written whole or not at all, and is removed once the
run completes.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import MutableMapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

KEY = "arrayconv_progress"
SUFFIX = ".arrayconv-progress.json"
# Records at most this often: each forces the tiles' data to disk first, so a crash loses
# at most this much work, and a run pays about 1% for its records (python -m bench.resume).
RECORD_SECONDS = 1.0


def file_of(a: Any) -> str | None:
    """The file or store that array `a` lives in (a memmap's file, a zarr store's path, an
    HDF5 file), or None for memory."""
    if isinstance(a, np.memmap) or getattr(a, "filename", None):
        return str(a.filename)
    store = getattr(a, "store", None)
    if store is not None:
        root = getattr(store, "root", None) or getattr(store, "path", None)
        return f"{root}/{getattr(a, 'path', '')}".rstrip("/") if root else str(store)
    name = getattr(getattr(a, "file", None), "filename", None)
    return f"{name}:{getattr(a, 'name', '')}" if name else None


def fingerprint(in1: Any, in2: np.ndarray, out: Any, options: dict[str, Any], tiles: tuple[int, ...]) -> str:
    """What decides a tiled run's result, hashed: see the module's docstring."""
    digest = hashlib.sha256()
    source = file_of(in1)
    if source and os.path.exists(source.split(":")[0]):
        stat = os.stat(source.split(":")[0])
        digest.update(f"{source} {stat.st_size} {stat.st_mtime_ns}".encode())
    first, last = (np.ascontiguousarray(np.asarray(in1[i])) for i in (0, -1))
    for part in (first, last, np.ascontiguousarray(np.asarray(in2))):
        digest.update(part.tobytes())
    described = {"in1": [list(in1.shape), str(in1.dtype)], "in2": [list(in2.shape), str(in2.dtype)], "out": [list(out.shape), str(out.dtype)], "tiles": list(tiles), **options}
    digest.update(json.dumps(described, sort_keys=True, default=str).encode())
    return digest.hexdigest()


class Progress:
    """The record of a resumable run into `out` (see the module's docstring)."""

    def __init__(self, out: Any, fingerprint: str, total: int) -> None:
        self._out, self._fingerprint, self._total = out, fingerprint, total
        attrs = getattr(out, "attrs", None)
        self._attrs = attrs if isinstance(attrs, MutableMapping) else None
        path = file_of(out) if self._attrs is None else None
        if self._attrs is None and path is None:
            msg = f"`resume=True` needs an `out` backed by a file (a numpy.memmap) or a store with attributes (zarr, HDF5), got {type(out).__name__}"
            raise ValueError(msg)
        self._path = None if path is None else Path(path + SUFFIX)
        self._recorded = -RECORD_SECONDS
        self._syncer: ThreadPoolExecutor | None = None
        self._pending: Future[None] | None = None

    def done(self) -> int:
        """Tiles an earlier run of the same fingerprint completed (0 if none ran); a
        ValueError for a record of another run."""
        record = self._read()
        if record is None:
            return 0
        if record.get("fingerprint") != self._fingerprint or record.get("total") != self._total:
            msg = (
                "`resume=True`: `out` holds part of another run (a different input, kernel, options or memory_limit); "
                f"start afresh with resume=False, or delete {self._where()}"
            )
            raise ValueError(msg)
        return int(record["done"])

    def tile_done(self, done: int) -> None:
        """The first `done` tiles are written: record it once their data are on disk, on a
        thread of its own (the writes go on meanwhile), at most every :data:`RECORD_SECONDS`."""
        now = time.monotonic()
        if now - self._recorded < RECORD_SECONDS or (self._pending is not None and not self._pending.done()):
            return
        if self._pending is not None:
            self._pending.result()  # an error of the last record, raised here
        if self._syncer is None:
            self._syncer = ThreadPoolExecutor(1, thread_name_prefix="arrayconv-progress")
        self._recorded = now
        self._pending = self._syncer.submit(self._sync_and_record, done)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self.close(completed=kind is None)

    def close(self, completed: bool) -> None:
        """The run ended: wait for a record under way; once `completed`, the record goes."""
        if self._syncer is not None:
            self._syncer.shutdown(wait=True)
        if self._pending is not None and completed:
            self._pending.result()
        if not completed:
            return
        if self._attrs is not None:
            self._attrs.pop(KEY, None)
        elif self._path is not None:
            self._path.unlink(missing_ok=True)

    def _sync_and_record(self, done: int) -> None:
        """`out`'s data on disk (fsync of its file, which takes the pages written through
        a memory map too; zarr writes go to disk as they are made), then the record."""
        path = file_of(self._out) if self._attrs is None else None
        if path is not None:
            descriptor = os.open(path, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
        else:
            flush = getattr(getattr(self._out, "file", None), "flush", None)  # HDF5's buffers
            if flush is not None:
                flush()
        self._write({"fingerprint": self._fingerprint, "total": self._total, "done": done})

    def _where(self) -> str:
        return f"the attribute {KEY!r} of `out`" if self._attrs is not None else str(self._path)

    def _read(self) -> dict[str, Any] | None:
        if self._attrs is not None:
            text = self._attrs.get(KEY)
        elif self._path is not None and self._path.exists():
            text = self._path.read_text()
        else:
            return None
        return json.loads(text) if text else None

    def _write(self, record: dict[str, Any]) -> None:
        text = json.dumps(record)
        if self._attrs is not None:
            self._attrs[KEY] = text
            return
        assert self._path is not None
        partial = self._path.with_name(self._path.name + ".tmp")
        with open(partial, "w") as file:  # whole or not at all: written, synced, then renamed
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, self._path)
