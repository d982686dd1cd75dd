"""The length filter: pairs whose sizes alone rule out resemblance T, before any sketch is read.

Resemblance is bounded by the sizes alone: J(A, B) <= min(|A|, |B|) / max(|A|, |B|), so two
documents can resemble at T only if their sizes are within a factor T.

The super-shingle index keeps each document's size in one byte, a size class: exact below 32
shingles, then classes 2^(1/16) (4.4 %) wide; the last one, from about 500,000 shingles, is
open. A candidate is dropped only when no size in its class could pair at T.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["SIZE_CLASSES", "may_resemble", "size_class"]

I64 = npt.NDArray[np.int64]
SIZE_CLASSES = 256
_EXACT, _PER_DOUBLING = 32, 16
#: the smallest size of each class
_LOWEST: I64 = np.concatenate(
    [
        np.arange(_EXACT),
        np.round(_EXACT * 2.0 ** (np.arange(SIZE_CLASSES - _EXACT) / _PER_DOUBLING)),
    ]
).astype(np.int64)
#: the largest size of each class (the last is open)
_HIGHEST: I64 = np.append(_LOWEST[1:] - 1, np.iinfo(np.int64).max)
_EPSILON = 1e-9  # keeps float rounding from moving a bound


def size_class(sizes: I64 | int) -> I64:
    """The class (0-255) of each size."""
    classes: I64 = np.searchsorted(_LOWEST, np.asarray(sizes), "right") - 1
    return classes


def may_resemble(count: I64 | int, classes: I64, threshold: float) -> npt.NDArray[np.bool_]:
    """For documents of ``count`` shingles and candidates of the given size classes: may some
    size in the class be within a factor ``threshold`` of ``count``?"""
    n = np.asarray(count, dtype=np.float64)
    kept: npt.NDArray[np.bool_] = (_HIGHEST[classes] >= threshold * n - _EPSILON) & (
        _LOWEST[classes] <= n / threshold + _EPSILON
    )
    return kept
