"""Charikar's SimHash of a document's weighted features, 64 bits, for a whole batch at once.

Each feature is a 64-bit hash; each of its bits votes +w (bit 1) or -w (bit 0) for the same
bit of the document's SimHash, w being the feature's weight. Bit i of the SimHash is 1 when
the votes for it add up to more than 0 (a tie is 0). Two documents' SimHashes then differ in
each bit with probability θ/π, θ the angle between their weighted feature vectors, so the
Hamming distance estimates the angle (Charikar 2002; Manku, Jain and Das Sarma 2007 use it
for near-duplicate web pages). With every feature of weight 1 over shingle sets, the cosine is
|A∩B| / sqrt(|A|·|B|); for two sets of one size that is 2r / (1 + r), r the resemblance.

The votes are counted without a Python loop per feature: for each of the 8 bytes of the
features' hashes, one ``bincount`` over (document, byte value) gives a 256-bin histogram per
document, and a matrix product with the table of each byte value's bits turns it into the
weight of each of the byte's 8 bits (about a hundred times faster than ``unpackbits`` with
``add.reduceat``: docs/simhash.md). Weights are integers, summed in float64, where sums of
integers below 2**53 are exact in any order: the same document gets the same SimHash on
every machine, which a stored SimHash needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

import numpy as np
import numpy.typing as npt

from ._hashing import U64, drop_repeats
from .canonical import TokenBatch
from .settings import SIMHASH_FLOOR, SIMHASH_SAMPLE
from .sketch import estimate_columns

__all__ = [
    "DEFAULT_WEIGHTING",
    "VERIFY_FLOOR",
    "VERIFY_SAMPLE",
    "Features",
    "Weighting",
    "concat_features",
    "document_simhashes",
    "hamming",
    "set_features",
    "simhash_batch",
    "simhash_sets",
    "token_features",
    "verified",
    "verifier_sample",
]

I64 = npt.NDArray[np.int64]
U32 = npt.NDArray[np.uint32]
Weighting = Literal["binary", "tf", "log_tf"]

# The mode's defaults (bench/simhash_study.py; figures in docs/simhash.md). Word unigrams
# weighted by log-tf are the features that bring most pairs of resemblance >= 0.9 within
# distance 3 (5-shingle sets need 6); they also bring edits of 10-25 % within it, so each pair
# within the distance is checked again by a bottom-16 sample of its shingles, and joined at an
# estimated resemblance of 0.7 or more (the settings keep those two: ``SIMHASH_SAMPLE``).
DEFAULT_WEIGHTING: Weighting = "log_tf"
VERIFY_SAMPLE = SIMHASH_SAMPLE
VERIFY_FLOOR = SIMHASH_FLOOR

#: documents counted in one pass: their histograms (documents x 256 float64) stay at 8 MB
_DOCS_PER_PASS = 4096
#: bit i of byte value v, as float64 (row v, column i): histograms times this are bit weights
_BYTE_BITS = np.unpackbits(
    np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little"
).astype(np.float64)
_BIT_VALUES = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))
#: integer weights must keep every document's sums exact in float64
_MAX_TOTAL_WEIGHT = 1 << 53


@dataclass(frozen=True, slots=True)
class Features:
    """The weighted features of a batch: document i owns ``values[offsets[i]:offsets[i+1]]``.

    ``values`` are well-mixed 64-bit hashes (shingle fingerprints, token hashes); ``weights``
    are positive integers, one a value, or ``None`` for weight 1 each."""

    values: U64
    offsets: I64
    weights: I64 | None = None

    def __post_init__(self) -> None:
        if len(self.offsets) == 0 or self.offsets[0] != 0 or self.offsets[-1] != len(self.values):
            raise ValueError("offsets must start at 0 and end at the number of values")
        if self.weights is not None and len(self.weights) != len(self.values):
            raise ValueError(f"{len(self.weights)} weights for {len(self.values)} values")

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> I64:
        return np.diff(self.offsets)


def set_features(sets: Sequence[U64]) -> Features:
    """Features of weight 1 from each document's set of fingerprints (``shingle_sets``)."""
    lengths = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
    values = np.concatenate(sets) if len(sets) else np.zeros(0, np.uint64)
    offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths)])
    return Features(values.astype(np.uint64, copy=False), offsets)


def token_features(tokens: TokenBatch, weighting: Weighting = "tf") -> Features:
    """Each document's distinct tokens (word unigrams), weighted by their count in it.

    ``binary``: 1 each; ``tf``: the count; ``log_tf``: 1 + floor(log2(count)), the bit length
    of the count (a log damping that stays an integer, so sums stay exact)."""
    if weighting not in ("binary", "tf", "log_tf"):
        raise ValueError(f"weighting={weighting!r}: use 'binary', 'tf' or 'log_tf'")
    # each document's tokens sorted in place, then the runs of equal values (a document's
    # first token starts a run too) counted for the whole batch: one numpy call a document
    ordered = tokens.hashes.copy()
    offsets = tokens.offsets
    bounds = offsets.tolist()
    for start, end in pairwise(bounds):  # a loop per document
        ordered[start:end].sort()
    head = np.zeros(len(ordered), np.bool_)
    np.not_equal(ordered[1:], ordered[:-1], out=head[1:])
    head[offsets[:-1][offsets[:-1] < len(ordered)]] = True
    starts = np.flatnonzero(head)
    values = ordered[starts]
    feature_offsets = np.searchsorted(starts, offsets).astype(np.int64)
    if weighting == "binary":
        return Features(values, feature_offsets)
    weights = np.diff(starts, append=len(ordered)).astype(np.int64)
    if weighting == "log_tf":
        # bit length of n >= 1: floor(log2(n)) + 1, exactly, from the float64 exponent
        weights = np.frexp(weights.astype(np.float64))[1].astype(np.int64)
    return Features(values, feature_offsets, weights)


def concat_features(*parts: Features) -> Features:
    """Each document's features from every part, one after the other (all parts describe the
    same documents); a part without weights counts 1 a value."""
    if not parts:
        raise ValueError("concat_features needs at least one part")
    documents = len(parts[0])
    if any(len(p) != documents for p in parts):
        raise ValueError("every part must describe the same documents")
    lengths = np.stack([p.lengths for p in parts], axis=1)  # (documents, parts)
    offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths.sum(axis=1))])
    # where each part's run of a document lands in the joined arrays
    starts = (offsets[:-1, None] + np.cumsum(lengths, axis=1) - lengths).T
    values = np.empty(int(offsets[-1]), np.uint64)
    weighted = any(p.weights is not None for p in parts)
    weights = np.empty(len(values), np.int64) if weighted else None
    for part, part_starts in zip(parts, starts, strict=True):
        lengths_of = part.lengths
        positions = np.repeat(part_starts - part.offsets[:-1], lengths_of) + np.arange(
            len(part.values)
        )
        values[positions] = part.values
        if weights is not None:
            weights[positions] = 1 if part.weights is None else part.weights
    return Features(values, offsets, weights)


def simhash_batch(features: Features) -> U64:
    """The 64-bit SimHash of each document of the batch (0 for a document without
    features)."""
    documents = len(features)
    weights = features.weights
    if weights is not None and len(weights) and int(weights.min()) <= 0:
        raise ValueError("feature weights must be positive integers")
    out = np.zeros(documents, np.uint64)
    bytes_of = features.values.astype("<u8", copy=False).view(np.uint8).reshape(-1, 8)
    offsets = features.offsets
    for first in range(0, documents, _DOCS_PER_PASS):  # a loop per 4096 documents
        last = min(first + _DOCS_PER_PASS, documents)
        lo, hi = int(offsets[first]), int(offsets[last])
        if lo == hi:
            continue
        out[first:last] = _simhash_pass(
            bytes_of[lo:hi],
            offsets[first : last + 1] - lo,
            None if weights is None else weights[lo:hi],
        )
    return out


def _simhash_pass(bytes_of: npt.NDArray[np.uint8], offsets: I64, weights: I64 | None) -> U64:
    documents = len(offsets) - 1
    lengths = np.diff(offsets)
    if weights is None:
        total = lengths
        as_float = None
    else:
        running = np.concatenate([np.zeros(1, np.int64), np.cumsum(weights)])
        total = running[offsets[1:]] - running[offsets[:-1]]
        if int(running[-1]) >= _MAX_TOTAL_WEIGHT:
            raise ValueError("the feature weights of a pass add up past 2**53")
        as_float = weights.astype(np.float64)
    rows = np.repeat(np.arange(documents, dtype=np.int64) << 8, lengths)
    bins = documents << 8
    votes = np.empty((documents, 64), np.float64)  # the weight of the features with bit i 1
    for byte in range(8):
        histogram = np.bincount(rows + bytes_of[:, byte], weights=as_float, minlength=bins)
        votes[:, 8 * byte : 8 * byte + 8] = histogram.reshape(documents, 256) @ _BYTE_BITS
    # bit i is 1 when the features with bit i 1 outweigh those with bit i 0
    ones = 2.0 * votes > total[:, None].astype(np.float64)
    result: U64 = (ones * _BIT_VALUES).sum(axis=1, dtype=np.uint64)
    return result


def document_simhashes(tokens: TokenBatch, weighting: Weighting = DEFAULT_WEIGHTING) -> U64:
    """The SimHash mode's fingerprint of each document of a batch (its word unigrams, weighted
    as the defaults say)."""
    return simhash_batch(token_features(tokens, weighting))


def verifier_sample(shingles: U64, size: int = VERIFY_SAMPLE) -> U32:
    """The bottom-``size`` sample kept beside a SimHash to check the pairs the distance finds:
    the high 32 bits of the smallest shingle fingerprints (``Sketch``'s values, fewer)."""
    high: U32 = drop_repeats((shingles[: 2 * size] >> np.uint64(32)).astype(np.uint32))
    return high[:size]


def verified(
    first: Sequence[U32],
    first_counts: Sequence[int],
    second: Sequence[U32],
    second_counts: Sequence[int],
    floor: float = VERIFY_FLOOR,
    size: int = VERIFY_SAMPLE,
) -> npt.NDArray[np.bool_]:
    """For pairs within the distance (first[i] with second[i], samples of ``verifier_sample``
    and shingle counts), whether their estimated resemblance is at least ``floor`` (exact
    when both documents have at most ``size`` shingles)."""
    resemblance = estimate_columns(first, first_counts, second, second_counts, size)[0]
    kept: npt.NDArray[np.bool_] = resemblance >= floor
    return kept


def simhash_sets(sets: Sequence[U64]) -> U64:
    """The SimHash of each document's set of shingle fingerprints, each of weight 1."""
    return simhash_batch(set_features(sets))


def hamming(a: U64 | int, b: U64 | int) -> npt.NDArray[np.uint8]:
    """The number of bits in which a and b differ, elementwise (arrays broadcast)."""
    x = np.bitwise_xor(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
    count = getattr(np, "bitwise_count", None)  # numpy >= 2.0: one instruction a value
    if count is not None:
        counted: npt.NDArray[np.uint8] = count(x)
        return counted
    return _popcount(x)


def _popcount(x: U64) -> npt.NDArray[np.uint8]:
    """Bits set in each value, by parallel sums (for numpy before ``bitwise_count``)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    counted: npt.NDArray[np.uint8] = ((x * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(
        np.uint8
    )
    return counted
