"""The benchmark cases of the project's design (section 4), as data (float32, conv-layer semantics), and
the random arrays the benchmarks fill."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Standard normal data of `dtype` (complex: in both parts)."""
    data = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        data = data + 1j * rng.standard_normal(shape)
    return data.astype(dtype)


@dataclass(frozen=True)
class Case:
    """One benchmark problem.

    ``kind='conv'``: ``ac.conv(x, w, padding=padding)`` with x (B, C, H, W), w (O, C, k, k).
    ``kind='image'``: ``ac.correlate(image, kernel, mode)`` on one 2-D image.
    """

    id: str
    kind: str
    x: tuple[int, ...]
    w: tuple[int, ...]
    padding: int | str = 0
    mode: str = "same"


CASES = [
    Case("a", "conv", (100, 3, 16, 16), (32, 3, 3, 3), padding=1),
    Case("b", "conv", (100, 16, 64, 64), (32, 16, 3, 3), padding=1),
    Case("c", "image", (1920, 1920), (30, 30), mode="valid"),
    Case("d", "conv", (1, 3, 1024, 1024), (16, 3, 3, 3), padding=1),
    Case("e3", "conv", (1, 256, 32, 60), (64, 256, 3, 3), padding=0),
    Case("e5", "conv", (1, 256, 32, 60), (64, 256, 5, 5), padding=0),
    Case("e16", "conv", (1, 256, 32, 60), (64, 256, 16, 16), padding=0),
    # f: patch stacks (1, 20480, 32, 4, 4) x (64, 32, 3, 3), padding 1; patches as the batch.
    Case("f", "conv", (20480, 32, 4, 4), (64, 32, 3, 3), padding=1),
    *(Case(f"g{k}", "image", (4096, 4096), (k, k), mode="same") for k in (3, 7, 15, 31, 63)),
]

QUICK = ["a", "c", "e3", "g3", "g15"]


def unknown_ids_error(ids: list[str]) -> str | None:
    """The command-line error for the ids in `ids` that name no case; None if all do."""
    known = [case.id for case in CASES]
    if unknown := sorted(set(ids) - set(known)):
        return f"unknown case ids {unknown}; known: {', '.join(known)}"
    return None
