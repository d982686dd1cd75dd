"""w-shingles: every run of w consecutive tokens, fingerprinted to 64 bits, for a whole batch.

A shingle's fingerprint is a polynomial of its w token hashes (w vector multiply-adds over the
batch), then mixed. A document with fewer than w tokens (but at least one) has exactly one
shingle, made of all its tokens, so that very short documents can still be compared.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import numpy.typing as npt

from ._hashing import U64, fmix64, seeded_constant, unique_sorted
from .canonical import TokenBatch

__all__ = ["shingle_sets"]

_SHINGLE_BASE, _SHINGLE_MIX = 3, 4


def shingle_sets(tokens: TokenBatch, shingle_size: int, seed: int) -> list[U64]:
    """For each document of the batch, its set of shingle fingerprints, sorted and unique."""
    base = np.uint64(seeded_constant(seed, _SHINGLE_BASE, odd=True))
    mix = np.uint64(seeded_constant(seed, _SHINGLE_MIX))
    hashes, offsets = tokens.hashes, tokens.offsets
    total = len(hashes)
    windows = max(total - shingle_size + 1, 0)
    combined: U64 = np.zeros(windows, dtype=np.uint64)
    for j in range(shingle_size if windows else 0):
        combined = combined * base + hashes[j : j + windows]
    fingerprints = fmix64(combined ^ mix)
    sets: list[U64] = []
    for start, end in pairwise(offsets.tolist()):
        count = end - start
        if count >= shingle_size:
            sets.append(unique_sorted(fingerprints[start : end - shingle_size + 1]))
        elif count > 0:
            sets.append(_whole_document_shingle(hashes[start:end], base, mix))
        else:
            sets.append(np.zeros(0, dtype=np.uint64))
    return sets


def _whole_document_shingle(token_hashes: U64, base: np.uint64, mix: np.uint64) -> U64:
    value = np.zeros(1, dtype=np.uint64)
    for token in token_hashes:
        value = value * base + token
    # the token count is folded in so that a short shingle never equals a full-length one
    return fmix64(value ^ mix ^ np.uint64(len(token_hashes)))


def top_bits(fingerprints: U64) -> npt.NDArray[np.uint32]:
    """The high 32 bits of each fingerprint, which keep their order."""
    return (fingerprints >> np.uint64(32)).astype(np.uint32)
