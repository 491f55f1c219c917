"""Validate user input and normalise it into a frozen :class:`Problem`.

This is the only module that checks user input. Every public entry calls its validators
before allocating memory, launching work or writing to ``out``.
"""

from __future__ import annotations

import math
import mmap
import operator
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np

from .._runtime.backend import Array, Backend, is_cupy_array
from .._runtime.cache import LRUCache
from .shapes import Shape, conv_output_shape

_NUMERIC_KINDS = frozenset("iufc")
_FLOAT16, _FLOAT32 = np.dtype(np.float16), np.dtype(np.float32)


@dataclass(frozen=True)
class Problem:
    """A grouped, multichannel, padded, strided, dilated valid cross-correlation.

    ``x (B, G*Cg, *spatial)`` correlated with ``w (G*Og, Cg, *kernel)`` gives
    ``y (B, G*Og, *out_spatial)``, where, for output channel ``o`` of group ``g``,
    ``y[b, o, n] = sum_{c, m} x_pad[b, g*Cg + c, n*stride + m*dilation] * w[o, c, m]``
    and ``x_pad`` is `x` padded by `pad_lo` before and `pad_hi` after each spatial axis:
    with zeros, or periodically (``x_pad[j] = x[(j - pad_lo) mod n]``) when `circular`.
    No conjugation: callers conjugate `w` where they need it. `rank_one` is True when the
    caller found its single 2-D kernel to be the outer product of two 1-D kernels (a
    Gaussian, a box), which direct may then sum in two passes (:mod:`._methods._separable`).

    Every public function reduces to this one problem; every method solves it. Its
    derived shapes are computed once, on first use (the cost model asks for them often).
    """

    batch: int
    groups: int
    in_per_group: int
    out_per_group: int
    spatial: Shape
    kernel: Shape
    pad_lo: Shape
    pad_hi: Shape
    stride: Shape
    dilation: Shape
    dtype: np.dtype[Any]
    circular: bool = False
    rank_one: bool = False

    def __hash__(self) -> int:  # cached: every cache lookup keyed by a problem hashes it
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash(tuple(getattr(self, f) for f in _PROBLEM_FIELDS))

    @cached_property
    def padded(self) -> Shape:
        """Spatial shape of the padded input."""
        return tuple(n + lo + hi for n, lo, hi in zip(self.spatial, self.pad_lo, self.pad_hi))

    @cached_property
    def out_spatial(self) -> Shape:
        """Spatial shape of the output."""
        return conv_output_shape(
            self.spatial, self.kernel, self.pad_lo, self.pad_hi, self.stride, self.dilation
        )

    @cached_property
    def x_shape(self) -> Shape:
        """Shape of the input ``(B, G*Cg, *spatial)``."""
        return (self.batch, self.groups * self.in_per_group, *self.spatial)

    @cached_property
    def w_shape(self) -> Shape:
        """Shape of the kernel ``(G*Og, Cg, *kernel)``."""
        return (self.groups * self.out_per_group, self.in_per_group, *self.kernel)

    @cached_property
    def y_shape(self) -> Shape:
        """Shape of the output ``(B, G*Og, *out_spatial)``."""
        return (self.batch, self.groups * self.out_per_group, *self.out_spatial)

    @cached_property
    def macs(self) -> int:
        """Multiply-adds of the direct sum."""
        return (
            math.prod(self.y_shape) * self.in_per_group * math.prod(self.kernel)
        )

    @property
    def mac_flops(self) -> int:
        """Real floating-point operations of one multiply-add: 2, or 8 in complex (four
        real products and four sums)."""
        return 8 if self.dtype.kind == "c" else 2

    @cached_property
    def unit_stride(self) -> bool:
        """True when every stride is 1."""
        return all(s == 1 for s in self.stride)

    @property
    def pads(self) -> bool:
        """True when some axis is padded."""
        return any(self.pad_lo) or any(self.pad_hi)


_PROBLEM_FIELDS = tuple(f.name for f in fields(Problem))
_problems = LRUCache("problems", maxsize=256)


def interned(problem: Problem) -> Problem:
    """The one instance equal to `problem` that recent calls made (cached), so that its
    derived shapes are computed once and cache lookups keyed by it match by identity."""
    return _problems.get_or_make(problem, lambda: problem)


@dataclass(frozen=True, slots=True)
class ArraySpec:
    """Shape and dtype of an array that is not at hand (a plan's future inputs)."""

    shape: Shape
    dtype: np.dtype[Any]

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)


def input_spec(name: str, shape: object, dtype: object) -> ArraySpec:
    """The shape and dtype of a plan's future inputs, checked like an array's."""
    try:
        dims = tuple(operator.index(n) for n in shape)  # type: ignore[attr-defined]
    except TypeError:
        dims = None
    if dims is None or any(n < 1 for n in dims):
        msg = f"`{name}` must be a tuple of positive ints, got {shape!r}"
        raise ValueError(msg)
    try:
        kind = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        kind = None
    if kind is None or kind.kind not in _NUMERIC_KINDS:
        msg = f"`dtype` must be an integer, float or complex dtype, got {dtype!r}"
        raise TypeError(msg)
    return ArraySpec(dims, kind)


def check_choice(name: str, value: object, allowed: Iterable[str]) -> str:
    """Return `value` if it is one of `allowed`, else raise a ValueError naming `name`."""
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        msg = f"`{name}` must be one of {{{choices}}}, got {value!r}"
        raise ValueError(msg)
    return value


def as_array(value: object, name: str, backend: Backend) -> Array:
    """Return `value` as an array of `backend`, refusing kinds that would give a wrong answer."""
    array = value if type(value) is np.ndarray and backend.xp is np else _converted(value, name, backend)
    check_numeric(name, array.dtype, array.shape)
    return array


def check_numeric(name: str, dtype: np.dtype[Any], shape: Shape) -> None:
    """Refuse an array of `dtype` and `shape` that is not an integer, float or complex one, or is empty."""
    if dtype.kind not in _NUMERIC_KINDS:
        msg = (
            f"`{name}` must have an integer, float or complex dtype, got {dtype}"
            f"{'; cast it with .astype(np.uint8) or .astype(float)' if dtype.kind == 'b' else ''}"
        )
        raise TypeError(msg)
    if 0 in shape:
        msg = f"`{name}` must not be empty, got shape {shape}"
        raise ValueError(msg)


def _converted(value: object, name: str, backend: Backend) -> Array:
    """`value` as an array of `backend`, refusing subclasses whose rules differ."""
    if isinstance(value, np.matrix):
        msg = f"`{name}` must not be a numpy.matrix (its `*` and shape rules differ); use np.asarray"
        raise TypeError(msg)
    if isinstance(value, np.ma.MaskedArray):
        msg = f"`{name}` must not be a masked array (the mask would be ignored); fill it first"
        raise TypeError(msg)
    return backend.xp.asarray(value)


def result_dtype(*arrays: Array) -> tuple[np.dtype[Any], np.dtype[Any]]:
    """``(compute, result)`` dtypes: the result is NumPy's promotion; float16 computes in float32."""
    result = np.result_type(*(a.dtype for a in arrays))
    compute = _FLOAT32 if result == _FLOAT16 else result
    return compute, result


def int_tuple(name: str, value: int | Sequence[int], ndim: int, minimum: int) -> Shape:
    """`value` as a tuple of `ndim` ints, each at least `minimum`."""
    given: Any = (value,) * ndim if is_int(value) else value
    try:
        items = tuple(operator.index(v) for v in given)
    except TypeError:
        items = ()
    if len(items) != ndim or any(v < minimum for v in items):
        msg = (
            f"`{name}` must be an int or a tuple of {ndim} ints, each >= {minimum}; got {value!r}"
        )
        raise ValueError(msg)
    return items


def is_int(value: object) -> bool:
    """Whether `value` is an integer (anything ``operator.index`` takes), and not a bool."""
    try:
        operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return False
    return not isinstance(value, bool)


def normalize_axes(axes: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Sorted, non-negative, unique `axes` of an `ndim`-dimensional array (all if None)."""
    if axes is None:
        return tuple(range(ndim))
    items: Any = (axes,) if is_int(axes) else axes
    try:
        normal = [operator.index(a) for a in items]
    except TypeError:
        normal = None
    if not normal or any(not -ndim <= a < ndim or isinstance(a, (bool, np.bool_)) for a in items):
        msg = f"`axes` must be ints in [{-ndim}, {ndim - 1}] for {ndim}-D inputs, got {axes!r}"
        raise ValueError(msg)
    normal = [a % ndim for a in normal]
    if len(set(normal)) != len(normal):
        msg = f"`axes` must not repeat an axis, got {axes!r}"
        raise ValueError(msg)
    return tuple(sorted(normal))


def check_no_overlap(out: Array | None, backend: Backend, **arrays: Array | None) -> None:
    """Raise if `out` shares memory with one of the named `arrays` (checked before any work).

    Arrays of `backend` are compared by their memory (a memmap is a NumPy array, and by
    its file's bytes): a wrong kind of `out` is reported by the plan's own check. An
    array-like such as a zarr array is never handed to ``may_share_memory``, which would
    read it whole: it overlaps an input that is the same object or a handle on the same
    stored dataset (:func:`same_dataset`)."""
    if out is None:
        return
    for name, a in arrays.items():
        if a is None:
            continue
        arrays_of_backend = _of_backend(out, backend) and _of_backend(a, backend)
        if out is a or same_dataset(out, a) or (arrays_of_backend and overlaps(out, a, backend)):
            msg = f"`out` must not overlap the input `{name}`"
            raise ValueError(msg)


def check_writeable(out: Any) -> None:
    """Refuse a NumPy `out` that is read-only (a memmap opened with mode 'r', say)."""
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        msg = "`out` must be writeable, got a read-only array (a memmap opened with mode 'r'?)"
        raise ValueError(msg)


def same_dataset(a: Any, b: Any) -> bool:
    """Whether array-likes `a` and `b` are handles on one stored dataset: zarr arrays of one
    store and path, or h5py datasets of one object in one file (two opens of one path are
    two objects, which an identity check misses)."""
    if all(hasattr(x, "store") and hasattr(x, "path") for x in (a, b)):  # zarr
        return bool(a.store == b.store and a.path == b.path)
    if all(hasattr(x, "id") and hasattr(x, "file") for x in (a, b)):  # h5py
        return bool(a.id == b.id)
    return False


def overlaps(a: Array, b: Array, backend: Backend) -> bool:
    """Whether arrays `a` and `b` of `backend` may share memory, or bytes of one file.

    Two memmaps of one file (``np.load(path, mmap_mode=...)`` twice) are two mappings at
    different addresses, which ``may_share_memory`` takes to be apart; a write through one
    changes what the other reads."""
    if backend.xp.may_share_memory(a, b):
        return True
    if backend.name != "numpy":
        return False
    bytes_a, bytes_b = _file_bytes(a), _file_bytes(b)
    return (
        bytes_a is not None
        and bytes_b is not None
        and bytes_a[0] == bytes_b[0]
        and bytes_a[1] < bytes_b[2]
        and bytes_b[1] < bytes_a[2]
    )


def _file_bytes(a: np.ndarray) -> tuple[tuple[int, int], int, int] | None:
    """The file (device, inode) that NumPy array `a` maps and the span of its bytes in it
    (first, one past the last), or None for memory that maps no file."""
    memmap: np.memmap | None = None
    owner: Any = a
    while isinstance(owner, np.ndarray):  # a view's base, up to the mmap that holds the bytes
        if isinstance(owner, np.memmap) and owner.filename is not None:
            memmap = memmap if memmap is not None else owner
        owner = owner.base
    if memmap is None or not isinstance(owner, mmap.mmap) or a.size == 0:
        return None
    try:
        stat = os.stat(str(memmap.filename))
    except OSError:
        return None
    mapped_from = memmap.offset - memmap.offset % mmap.ALLOCATIONGRANULARITY  # as np.memmap maps
    address = np.frombuffer(owner, np.uint8).ctypes.data  # where the mapping starts
    first = a.ctypes.data + sum(min(0, (n - 1) * s) for n, s in zip(a.shape, a.strides))
    last = a.ctypes.data + sum(max(0, (n - 1) * s) for n, s in zip(a.shape, a.strides)) + a.itemsize
    return (stat.st_dev, stat.st_ino), first - address + mapped_from, last - address + mapped_from


def _of_backend(a: object, backend: Backend) -> bool:
    return is_cupy_array(a) if backend.name == "cupy" else isinstance(a, np.ndarray)


def check_real(name: str, a: Array, advice: str = "") -> None:
    """Raise a TypeError unless `a` (the argument `name`) is real, with `advice` after it."""
    if a.dtype.kind == "c":
        msg = f"`{name}` must be real, got dtype {a.dtype}" + (f"; {advice}" if advice else "")
        raise TypeError(msg)


def check_same_ndim(in1: Array, in2: Array, names: tuple[str, str] = ("in1", "in2")) -> None:
    """Raise unless `in1` and `in2` (the arguments `names`) have the same number of dimensions."""
    if in1.ndim != in2.ndim:
        msg = (
            f"`{names[0]}` and `{names[1]}` must have the same ndim, got {in1.ndim} and {in2.ndim} "
            f"(shapes {in1.shape}, {in2.shape})"
        )
        raise ValueError(msg)


def check_broadcast(in1: Array, in2: Array, axes: tuple[int, ...], names: tuple[str, str] = ("in1", "in2")) -> None:
    """Raise unless the axes outside `axes` are equal or 1 in one of the inputs (the
    arguments `names`)."""
    for ax in range(in1.ndim):
        n1, n2 = in1.shape[ax], in2.shape[ax]
        if ax not in axes and n1 != n2 and 1 not in (n1, n2):
            msg = (
                f"`{names[0]}` and `{names[1]}` must agree (or be 1) on axis {ax}, which is not in `axes`; "
                f"got shapes {in1.shape} and {in2.shape} with axes={axes}"
            )
            raise ValueError(msg)


def check_valid_sizes(s1: Shape, s2: Shape) -> None:
    """For mode 'valid': one input must be at least as large as the other on every axis."""
    if not (all(a >= b for a, b in zip(s1, s2)) or all(a <= b for a, b in zip(s1, s2))):
        msg = (
            "mode 'valid' needs one input at least as large as the other on every "
            f"correlated axis, got `in1` {s1} and `in2` {s2}"
        )
        raise ValueError(msg)


def check_conv_shapes(x: Array, w: Array, bias: Array | None, groups: int) -> None:
    """Raise unless `x` (B, C, *s), `w` (O, C//groups, *k) and `bias` (O,) fit together."""
    if not 3 <= x.ndim <= 5:
        msg = f"`x` must be (B, C, *spatial) with 1 to 3 spatial dims, got shape {x.shape}"
        raise ValueError(msg)
    if w.ndim != x.ndim:
        msg = (
            f"`w` must be (O, C // groups, *kernel) with ndim {x.ndim} like `x`, "
            f"got shape {w.shape} for x.shape={x.shape}"
        )
        raise ValueError(msg)
    if not is_int(groups) or groups < 1:
        msg = f"`groups` must be a positive int, got {groups!r}"
        raise ValueError(msg)
    channels, out_channels = x.shape[1], w.shape[0]
    if channels % groups or out_channels % groups:
        msg = (
            f"`groups` must divide the input channels and the output channels, got groups={groups} "
            f"for x.shape={x.shape} (C={channels}) and w.shape={w.shape} (O={out_channels})"
        )
        raise ValueError(msg)
    if w.shape[1] * groups != channels:
        msg = (
            f"`x` has {channels} channels but `w` expects {w.shape[1] * groups} "
            f"(w.shape={w.shape}, groups={groups})"
        )
        raise ValueError(msg)
    if bias is not None and bias.shape != (out_channels,):
        msg = f"`bias` must have shape ({out_channels},) for w.shape={w.shape}, got {bias.shape}"
        raise ValueError(msg)


def check_fits(problem: Problem, x_shape: Shape, w_shape: Shape) -> None:
    """Raise unless the (dilated) kernel fits in the padded input on every axis."""
    for ax, (n, k, d) in enumerate(zip(problem.padded, problem.kernel, problem.dilation)):
        if d * (k - 1) + 1 > n:
            msg = (
                f"kernel larger than the padded input on spatial axis {ax}: dilated kernel "
                f"{d * (k - 1) + 1} > padded input {n} (x.shape={x_shape}, w.shape={w_shape}, "
                f"padding=({problem.pad_lo[ax]}, {problem.pad_hi[ax]}), dilation={d})"
            )
            raise ValueError(msg)
