"""64-bit mixing in numpy: seeded constants and a finaliser applied to whole arrays."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]

_MASK = (1 << 64) - 1


def splitmix64(state: int) -> int:
    """One step of splitmix64: a well-mixed 64-bit value for a 64-bit input."""
    z = (state + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


@lru_cache(maxsize=64)
def seeded_constant(seed: int, purpose: int, odd: bool = False) -> int:
    """A constant for one purpose, derived from the seed; ``odd`` makes it invertible mod 2**64."""
    value = splitmix64(splitmix64(seed) ^ (purpose * 0x9E3779B97F4A7C15 & _MASK))
    return value | 1 if odd else value


def fmix64(values: U64) -> U64:
    """MurmurHash3's 64-bit finaliser over an array (in place on a copy)."""
    x = values.copy()
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xC4CEB9FE1A85EC53)
    x ^= x >> np.uint64(33)
    return x


class PowerTable:
    """Powers p**i and p**-i modulo 2**64 for an odd p, grown on demand."""

    def __init__(self, base: int) -> None:
        if base % 2 == 0:
            raise ValueError("the base must be odd to be invertible modulo 2**64")
        self._base = np.uint64(base)
        self._inverse = np.uint64(pow(base, -1, 1 << 64))
        self.forward: U64 = np.ones(1, dtype=np.uint64)
        self.backward: U64 = np.ones(1, dtype=np.uint64)

    def ensure(self, length: int) -> None:
        if length <= len(self.forward):
            return
        size = max(length, 2 * len(self.forward))
        self.forward = np.cumprod(np.full(size, self._base, dtype=np.uint64), dtype=np.uint64)
        self.forward = np.concatenate([np.ones(1, dtype=np.uint64), self.forward[:-1]])
        self.backward = np.cumprod(np.full(size, self._inverse, dtype=np.uint64), dtype=np.uint64)
        self.backward = np.concatenate([np.ones(1, dtype=np.uint64), self.backward[:-1]])


def unique_sorted(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The distinct values of an array, ascending (faster than np.unique for our sizes)."""
    ordered = np.sort(values)
    return drop_repeats(ordered)


def drop_repeats(ordered: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """An ascending array without its repeated values."""
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=np.bool_)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
