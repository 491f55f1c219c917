"""The image files of ``arrayconv filter``: .npy, .tif/.tiff, .png and FITS, read and
written out of core where the format allows."""

from __future__ import annotations

import importlib
import logging
import math
import os
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

FITS_SUFFIXES = (".fits", ".fit", ".fts")
FORMATS = (".npy", ".tif", ".tiff", ".png", *FITS_SUFFIXES)

_FITS_BLOCK = 2880  # bytes: a FITS file is a whole number of these blocks
_SCALING = ("BSCALE", "BZERO", "BLANK")  # stored values to data: read in memory, not carried over
_CRPIX = re.compile(r"CRPIX(\d+)[A-Z]?")
_BITPIX = {np.dtype(t): b for t, b in [(np.uint8, 8), (np.int16, 16), (np.int32, 32), (np.int64, 64), (np.float32, -32), (np.float64, -64)]}


class UsageError(Exception):
    """A problem with the command line or its files: one line, exit code 2."""


def read_image(path: Path) -> Any:
    """The image of a .npy (memory-mapped), .tif (memory-mapped when uncompressed), .png,
    or FITS file (its first HDU with image data; memory-mapped unless scaled by BSCALE/BZERO).

    A file the readers cannot read is one :class:`UsageError`, and what they said about it
    (astropy's warnings on a corrupt header, tifffile's log) is dropped; a file they read
    gives its warnings and log records after.
    """
    if path.suffix.lower() in FITS_SUFFIXES:
        _optional("astropy.io.fits", "FITS files")  # imported first: astropy's import routes warnings to its logger
    logger, records = logging.getLogger("tifffile"), _Held()
    logger.addHandler(records)
    propagate, logger.propagate = logger.propagate, False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            image = _read_image(path)
    finally:
        logger.removeHandler(records)
        logger.propagate = propagate
    for warning in caught:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    for record in records.held:
        logger.handle(record)
    return image


class _Held(logging.Handler):
    """Log records held back."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Hold `record`."""
        self.held.append(record)


def _read_image(path: Path) -> Any:
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            return np.load(path, mmap_mode="r")
        if suffix in (".tif", ".tiff"):
            tifffile = _optional("tifffile", "TIFF files")
            try:
                return tifffile.memmap(path, mode="r")
            except ValueError:  # compressed or tiled: read it whole
                return tifffile.imread(path)
        if suffix in FITS_SUFFIXES:
            return _read_fits(path)
        imageio = _optional("imageio.v3", "PNG files")
        return imageio.imread(path)
    except UsageError:
        raise
    except Exception as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None


def _read_fits(path: Path) -> Any:
    fits = _optional("astropy.io.fits", "FITS files")
    with fits.open(path, memmap=True) as hdus:  # the data keep their memory map open
        index = _first_image(hdus, path)
        if not any(key in hdus[index].header for key in _SCALING):
            return hdus[index].data
    return fits.getdata(path, ext=index, memmap=False)  # scaled: astropy maps no such data


def _first_image(hdus: Any, path: Path) -> int:
    for index, hdu in enumerate(hdus):
        if hdu.is_image and hdu.header.get("NAXIS", 0) > 0:
            return index
    raise UsageError(f"{path} holds no image data")


def fits_header(path: Path, shifts: tuple[int, ...]) -> Any:
    """The header of the image :func:`read_image` reads from FITS file `path`, for a result
    whose sample ``i + shifts[a]`` along each axis ``a`` lies over the input's sample ``i``:
    its cards less those of its layout, scaling and checksums, each reference pixel
    (``CRPIXn``, and those of alternate coordinate systems) moved by its axis's shift, so
    the result keeps the image's world coordinates."""
    fits = _optional("astropy.io.fits", "FITS files")
    with fits.open(path) as hdus:
        header = hdus[_first_image(hdus, path)].header.copy(strip=True)
    for key in (*_SCALING, "CHECKSUM", "DATASUM"):
        header.remove(key, ignore_missing=True, remove_all=True)
    for key in list(header):
        match = _CRPIX.fullmatch(key)
        if match and 1 <= int(match.group(1)) <= len(shifts):
            header[key] += shifts[-int(match.group(1))]  # FITS numbers the fastest axis 1
    return header


def partial_path(path: Path) -> Path:
    """Where the result for `path` is written until it is whole: a hidden file beside it,
    with its suffix (the writers pick the format by it)."""
    return path.with_name(f".{path.stem}.arrayconv-partial{path.suffix}")


@contextmanager
def whole_or_nothing(path: Path, keep_partial: bool = False) -> Iterator[Path]:
    """Yield the path to write the result for `path` into (:func:`partial_path`); leaving
    the block without an error renames it onto `path` (atomic: `path` is the old file or
    the whole new one, never part of it), leaving it by an error or an interrupt removes it,
    with its progress record, unless `keep_partial` (a resumable run)."""
    from .resume import SUFFIX

    partial = partial_path(path)
    try:
        yield partial
    except BaseException:
        if not keep_partial:
            partial.unlink(missing_ok=True)
            Path(str(partial) + SUFFIX).unlink(missing_ok=True)
        raise
    os.replace(partial, path)


def create_output(path: Path, shape: tuple[int, ...], dtype: np.dtype[Any], header: Any = None, reuse: bool = False) -> Any:
    """A writable memory-mapped .npy, .tif or FITS file of `shape` and `dtype` (FITS: with
    the cards of `header`, an astropy header, after its own); with `reuse`, the file at
    `path` opened for update where it is one of that shape and dtype (a run to resume)."""
    suffix = path.suffix.lower()
    if reuse and path.exists():
        try:
            existing = _open_output(path, suffix)
        except (OSError, ValueError):
            existing = None
        if existing is not None and tuple(existing.shape) == shape and existing.dtype.newbyteorder("=") == dtype:
            return existing
    if suffix == ".npy":
        return np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
    if suffix in FITS_SUFFIXES:
        return _create_fits(path, shape, dtype, header)
    tifffile = _optional("tifffile", "TIFF files")
    return tifffile.memmap(path, shape=shape, dtype=dtype)


def _open_output(path: Path, suffix: str) -> Any:
    """The result file at `path` opened for update, as :func:`create_output` made it."""
    if suffix == ".npy":
        return np.load(path, mmap_mode="r+")
    if suffix in FITS_SUFFIXES:
        header = _optional("astropy.io.fits", "FITS files").getheader(path)
        shape = tuple(header[f"NAXIS{i}"] for i in range(header["NAXIS"], 0, -1))
        dtype = next(t for t, bitpix in _BITPIX.items() if bitpix == header["BITPIX"])
        return np.memmap(path, dtype.newbyteorder(">"), "r+", offset=len(header.tostring()), shape=shape)
    return _optional("tifffile", "TIFF files").memmap(path, mode="r+")


def _fits_head(shape: tuple[int, ...], dtype: np.dtype[Any], cards: Any) -> bytes:
    """The header block of a FITS file of one image HDU of `shape` and `dtype`, with `cards`."""
    if dtype not in _BITPIX:
        kinds = ", ".join(str(t) for t in _BITPIX)
        raise UsageError(f"FITS holds images of {kinds}; the result here is {dtype} (use a float kernel)")
    fits = _optional("astropy.io.fits", "FITS files")
    axes = [(f"NAXIS{i}", n) for i, n in enumerate(reversed(shape), 1)]  # FITS lists the fastest axis first
    header = fits.Header([("SIMPLE", True), ("BITPIX", _BITPIX[dtype]), ("NAXIS", len(shape)), *axes])
    if cards is not None:
        header.extend(cards)
    return header.tostring().encode("ascii")  # padded to whole blocks


def _create_fits(path: Path, shape: tuple[int, ...], dtype: np.dtype[Any], cards: Any) -> np.memmap:
    """A FITS file of one image HDU, its data zeros sized on disk (a sparse file) and mapped
    big-endian, as FITS stores them."""
    head = _fits_head(shape, dtype, cards)
    data_bytes = math.prod(shape) * dtype.itemsize
    with open(path, "wb") as file:
        file.write(head)
        file.truncate(len(head) + -(-data_bytes // _FITS_BLOCK) * _FITS_BLOCK)
    return np.memmap(path, dtype.newbyteorder(">"), "r+", offset=len(head), shape=shape)


def write_png(path: Path, result: np.ndarray, like: np.dtype[Any]) -> None:
    """`result` rounded and clipped to the input's dtype `like`, uint8 or uint16."""
    imageio = _optional("imageio.v3", "PNG files")
    dtype = np.dtype(like)
    info = np.iinfo(dtype)
    imageio.imwrite(path, np.clip(np.rint(result), info.min, info.max).astype(dtype))


def _optional(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        package = module.split(".")[0]
        raise UsageError(f"{what} need {package}: pip install 'arrayconv[io]'") from None
