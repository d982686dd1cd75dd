"""Tables that find every stored SimHash within Hamming distance k of a new one by exact keys.

Manku, Jain and Das Sarma (WWW 2007): cut the 64 bits into b > k blocks. Two fingerprints
that differ in at most k bits differ in at most k blocks, so they agree exactly on at least
b - k of them; one table for each choice of b - k blocks, keyed by those blocks' bits, holds
every such pair under one key. The key of a table is the leading p bits of the fingerprint
after a permutation that moves the chosen blocks to the front: Manku's permuted prefix.

The scheme can nest: the bits a level leaves out are cut again into b' > k blocks, of which
b' - k are chosen, since the at most k differing bits are all still among them. Levels
(b1, b2, ...) make C(b1, k)·C(b2, k)·... tables, each keyed by the bits of every level's
chosen blocks (Manku's 16 tables of 28 bits for k = 3 are ``blocks=(4, 4)``).

What the key length buys: among 2**d stored fingerprints that are random with respect to a
query, a table keyed by p bits returns about 2**(d - p) of them, so a lookup in all tables
meets about ``expected_random_candidates(2**d)`` = sum over tables of 2**(d - p_t) documents
besides its true neighbours; each costs a distance check. More tables (more blocks) make
longer keys and fewer candidates, at one key (a posting) per table per document.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations, product

import numpy as np
import numpy.typing as npt

from ._hashing import U64

__all__ = [
    "DEFAULT_BLOCKS",
    "DEFAULT_DISTANCE",
    "INDEX_KEY_BITS",
    "KEY_BITS",
    "TABLE_BITS",
    "TableScheme",
    "default_tables",
    "index_keys",
    "manku_tables",
    "table_keys",
]

#: a key is its table's index in the top 8 bits and the table's bits packed below them
TABLE_BITS = 8
KEY_BITS = 64 - TABLE_BITS
_FINGERPRINT_BITS = 64
#: the bits of a key in a posting index (``neardup.state.postings`` keeps 32-bit keys)
INDEX_KEY_BITS = 32
#: The mode's defaults (bench/simhash_study.py, docs/simhash.md): k = 3, the largest distance
#: that 64 bits serve with few tables of long keys, in Manku's 16 tables of 28 bits (4 blocks
#: of 16, then 4 of 12): fewer tables propose many more candidates, more cost a posting each.
DEFAULT_DISTANCE = 3
DEFAULT_BLOCKS: tuple[int, ...] = (4, 4)


@dataclass(frozen=True, slots=True)
class TableScheme:
    """The tables for Hamming distance at most ``distance``: ``masks[t]`` has a 1 at each
    bit position that table t keys on (positions 63, the most significant, to 0)."""

    distance: int
    blocks: tuple[int, ...]
    masks: tuple[int, ...]

    @property
    def tables(self) -> int:
        return len(self.masks)

    @property
    def key_bits(self) -> tuple[int, ...]:
        """p, the bits of each table's key (table index aside)."""
        return tuple(mask.bit_count() for mask in self.masks)

    def expected_random_candidates(self, documents: float) -> float:
        """Documents a lookup meets in all tables among ``documents`` stored fingerprints
        that are uniformly random with respect to it (a pair met in several tables counts
        once per table)."""
        return float(sum(documents * 2.0**-bits for bits in self.key_bits))

    @property
    def index_table_bits(self) -> int:
        """Bits that tell the tables apart in a 32-bit index key (``index_keys``)."""
        return max(1, (self.tables - 1).bit_length())

    def bytes_per_document(self, posting_bytes: int = 16, fingerprint_bytes: int = 8) -> int:
        """One posting per table (a key and a document id, 8 bytes each by default) and the
        fingerprint itself."""
        return self.tables * posting_bytes + fingerprint_bytes


def manku_tables(distance: int, blocks: int | Sequence[int]) -> TableScheme:
    """The tables for Hamming distance at most ``distance`` with ``blocks`` blocks (or one
    block count per level, each more than ``distance``)."""
    levels = (blocks,) if isinstance(blocks, int) else tuple(blocks)
    if not isinstance(distance, int) or distance < 0:
        raise ValueError(f"distance={distance!r}: use an integer of at least 0")
    if not levels or any(not isinstance(b, int) or b <= distance for b in levels):
        raise ValueError(
            f"blocks={blocks!r}: each level needs more blocks than the distance ({distance}), "
            "so that some blocks are left without a differing bit"
        )
    tables = math.prod(math.comb(b, distance) for b in levels)
    if tables > 1 << TABLE_BITS:
        raise ValueError(f"blocks={blocks!r} make {tables} tables: at most 256 are supported")
    # per level, the ways to keep b - k of its blocks; the bits left out go to the next level
    masks = []
    for choice in product(*(list(combinations(range(b), b - distance)) for b in levels)):
        positions = list(range(_FINGERPRINT_BITS - 1, -1, -1))  # most significant first
        mask = 0
        for count, kept in zip(levels, choice, strict=True):
            if count > len(positions):
                raise ValueError(f"blocks={blocks!r}: a level has fewer bits than blocks")
            cut = _block_bounds(len(positions), count)
            left = []
            for index in range(count):
                block = positions[cut[index] : cut[index + 1]]
                if index in kept:
                    mask |= sum(1 << p for p in block)
                else:
                    left += block
            positions = left
        if mask.bit_count() > KEY_BITS:
            raise ValueError(
                f"blocks={blocks!r} key on {mask.bit_count()} bits: at most {KEY_BITS} fit "
                "beside the table index (use fewer blocks)"
            )
        masks.append(mask)
    return TableScheme(distance, levels, tuple(masks))


def default_tables() -> TableScheme:
    """The tables for the mode's default distance."""
    return manku_tables(DEFAULT_DISTANCE, DEFAULT_BLOCKS)


def _block_bounds(size: int, count: int) -> list[int]:
    """Cut ``size`` positions into ``count`` runs whose lengths differ by at most one."""
    return [index * size // count for index in range(count + 1)]


def _runs(mask: int) -> list[tuple[int, int, int]]:
    """(lowest bit, length, shift in the key) of each run of consecutive 1s in a mask, the
    most significant run packed highest."""
    runs: list[tuple[int, int, int]] = []
    filled = 0
    position = _FINGERPRINT_BITS - 1
    while position >= 0:
        if not mask >> position & 1:
            position -= 1
            continue
        high = position
        while position >= 0 and mask >> position & 1:
            position -= 1
        length = high - position
        runs.append((position + 1, length, filled))
        filled += length
    bits = mask.bit_count()
    return [(low, length, bits - shift - length) for low, length, shift in runs]


def table_keys(fingerprints: U64 | Sequence[int], scheme: TableScheme) -> U64:
    """The key of each fingerprint in each table, shape (fingerprints, tables): the table's
    index in the top 8 bits, its key bits below (so keys of different tables never meet).

    Two fingerprints within ``scheme.distance`` of each other share the key of at least one
    table; ones further apart may share one too, and are told apart by their distance."""
    values = np.asarray(fingerprints, dtype=np.uint64)
    keys: U64 = np.empty((len(values), scheme.tables), np.uint64)
    for table, mask in enumerate(scheme.masks):
        key = np.full(len(values), np.uint64(table) << np.uint64(KEY_BITS), np.uint64)
        for low, length, shift in _runs(mask):
            run = (values >> np.uint64(low)) & np.uint64((1 << length) - 1)
            key |= run << np.uint64(shift)
        keys[:, table] = key
    return keys


def index_keys(fingerprints: U64 | Sequence[int], scheme: TableScheme) -> npt.NDArray[np.uint32]:
    """``table_keys`` as 32-bit keys of one posting index, shape (fingerprints, tables): the
    table's index in the top ``index_table_bits``, its key bits below. Only for schemes
    whose keys fit (Manku's 16 tables of 28 bits for k = 3 fill the 32 bits exactly):
    another is refused, since folding its keys would only add candidates."""
    table_bits = scheme.index_table_bits
    widest = max(scheme.key_bits)
    if table_bits + widest > INDEX_KEY_BITS:
        raise ValueError(
            f"blocks={scheme.blocks!r} make {scheme.tables} tables keyed by up to {widest} bits: "
            f"with {table_bits} bits for the table that is more than the {INDEX_KEY_BITS} bits "
            "of an index key (use fewer tables or shorter keys)"
        )
    keys = table_keys(fingerprints, scheme) & np.uint64((1 << KEY_BITS) - 1)
    tables = np.arange(scheme.tables, dtype=np.uint64) << np.uint64(INDEX_KEY_BITS - table_bits)
    packed: npt.NDArray[np.uint32] = (keys | tables).astype(np.uint32)
    return packed
