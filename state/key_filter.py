"""Which keys an index may hold, answered in memory: a Bloom filter that grows with the index.

Most keys a document brings to the super-shingle index are new to it, even on a large state.
RocksDB answers such a key from its own Bloom filter, but only after a call through rocksdict
that holds the GIL, one per key; this filter answers a whole batch in a few numpy operations,
so the store is asked only for keys it may hold. It has no false negatives: a key added is
always reported. A few percent of absent keys are reported too (each full stage adds under 1 %),
and cost the store read they would have cost anyway.

It is blocked (all bits of a key in one 64-bit word: one memory access per key) and scalable
(Almeida et al., "Scalable Bloom Filters", 2007): when a stage holds its capacity, later keys go
to a new stage of twice the size, and a query asks every stage. No stage is ever rebuilt, so
the keys need not be kept; a state reads an index's keys once, when it first posts (``of``),
unless the filter was kept when the state was last closed (``pieces``, ``from_pieces``).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

__all__ = ["FilterBudget", "KeyFilter"]

U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]

#: keys per 64-bit word at capacity (16 bits per key): with 3 bits per key, under 1 % of
#: absent keys pass one full stage (tests/state/test_key_filter.py holds it to that bound)
_KEYS_PER_WORD = 4
_FIRST_CAPACITY = 1 << 16
_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd multipliers: bijections of 64-bit integers
_MIX_BITS = np.uint64(0xC2B2AE3D27D4EB4F)
_SIX = np.uint64(63)
_log = logging.getLogger(__name__)
_PIECES_MAGIC = b"NDKF2"  # NDKF1: a filter kept whole, by older versions
_STAGE = struct.Struct("<QQ")  # capacity, count
_WORD = np.dtype("<u8")


class _Stage:
    def __init__(self, capacity: int) -> None:
        words = _words_of(capacity)
        self.shift = np.uint64(64 - (words.bit_length() - 1))  # words is a power of two
        self.words: U64 = np.zeros(words, np.uint64)
        self.capacity = capacity
        self.count = 0

    def word_of(self, mixed: U64) -> npt.NDArray[np.intp]:
        if self.shift == 64:  # a one-word stage: numpy leaves a 64-bit shift undefined
            return np.zeros(len(mixed), np.intp)
        return (mixed >> self.shift).astype(np.intp)


class FilterBudget:
    """The bytes the key filters of one state may take together (None: no bound). A filter
    that would grow past the bound gives up: it frees its words, and from then on says of
    every key that its index may hold it, so that the index's lookups go to the store (slower,
    never wrong)."""

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise ValueError(f"limit={limit!r}: give a number of bytes, 0 or more, or None")
        self.limit = limit
        self.used = 0

    def take(self, nbytes: int) -> bool:
        if self.limit is not None and self.used + nbytes > self.limit:
            return False
        self.used += nbytes
        return True

    def give_back(self, nbytes: int) -> None:
        self.used -= nbytes


class KeyFilter:
    """A growing Bloom filter over 32-bit keys; ``may_hold`` never misses an added key.

    With a ``budget`` that its next stage would exceed, it is ``full``: it holds no words and
    may hold any key."""

    def __init__(
        self, first_capacity: int = _FIRST_CAPACITY, budget: FilterBudget | None = None
    ) -> None:
        if first_capacity < 1:
            raise ValueError(f"first_capacity={first_capacity!r} must be a positive integer")
        self._budget = FilterBudget() if budget is None else budget
        self._stages: list[_Stage] = []
        self.full = False
        self._grow(_power_of_two(first_capacity))

    def _grow(self, capacity: int) -> None:
        if self._budget.take(_words_of(capacity) * _WORD.itemsize):
            self._stages.append(_Stage(capacity))
        else:
            self._give_up()

    def _give_up(self) -> None:
        self._budget.give_back(self.nbytes)
        self._stages, self.full = [], True
        _log.warning(
            "a posting index's key filter would pass the bound of %s MB on the key filters: "
            "it is dropped, and the index's lookups go to RocksDB from now on (slower); "
            "raise the bound (`--key-filter-mb`) to keep it",
            self._budget.limit and self._budget.limit >> 20,
        )

    def __len__(self) -> int:
        """How many keys were added (a key added twice counts twice)."""
        return sum(stage.count for stage in self._stages)

    @property
    def nbytes(self) -> int:
        return sum(stage.words.nbytes for stage in self._stages)

    def add(self, keys: U32) -> None:
        keys = np.asarray(keys, np.uint32)
        while len(keys) and not self.full:
            stage = self._stages[-1]
            room = stage.capacity - stage.count
            if room <= 0:
                self._grow(stage.capacity * 2)
                continue
            now, keys = keys[:room], keys[room:]
            mixed, bits = _hashes(now)
            words = stage.word_of(mixed)
            while len(words):  # of keys in the same word, one is set per pass (faster than .at)
                stage.words[words] |= bits
                lost = (stage.words[words] & bits) != bits
                words, bits = words[lost], bits[lost]
            stage.count += len(now)

    @classmethod
    def of(cls, chunks: Iterable[U32], budget: FilterBudget | None = None) -> KeyFilter:
        """A filter holding every key of an index read in chunks (when a state is opened),
        with room for as many again in its first stage; reading stops once the filter could
        not fit ``budget``."""
        budget = FilterBudget() if budget is None else budget
        arrays, count = [], 0
        room = None if budget.limit is None else budget.limit - budget.used
        for keys in chunks:
            arrays.append(keys)
            count += len(keys)
            first = _power_of_two(max(_FIRST_CAPACITY, 2 * count))
            if room is not None and _words_of(first) * _WORD.itemsize > room:
                return cls._made_of([], budget)
        made = cls(max(_FIRST_CAPACITY, 2 * count), budget)
        for keys in arrays:
            made.add(keys)
        return made

    def pieces(self, size: int) -> list[bytes | memoryview]:
        """The filter as its head and its words in pieces of at most ``size`` bytes, views of
        the words rather than copies, for ``from_pieces``: a large state's filters (tens of
        MB) are kept a piece at a time as a run ends, not as one value of them all."""
        head = [_PIECES_MAGIC, len(self._stages).to_bytes(4, "little")]
        head += [_STAGE.pack(stage.capacity, stage.count) for stage in self._stages]
        out: list[bytes | memoryview] = [b"".join(head)]
        for stage in self._stages:
            words = stage.words.astype(_WORD, copy=False).data.cast("B")
            out += [words[at : at + size] for at in range(0, len(words), size)]
        return out

    @classmethod
    def from_pieces(
        cls, head: bytes, pieces: Iterable[bytes | None], budget: FilterBudget | None = None
    ) -> KeyFilter:
        """A filter from the head ``pieces`` made and its words in pieces of any size, read
        one at a time and only as many as its stages hold (``None``: the pieces ended);
        ValueError for anything else. A filter kept full, or that ``budget`` cannot hold,
        is full."""
        budget = FilterBudget() if budget is None else budget
        if not head.startswith(_PIECES_MAGIC):
            raise ValueError("not the head of a key filter written by KeyFilter.pieces")
        stages, at = _stages_of(head, len(_PIECES_MAGIC))
        if at != len(head):
            raise ValueError("a damaged key filter: its head does not match its stages")
        if not stages or not budget.take(sum(stage.words.nbytes for stage in stages)):
            return cls._made_of([], budget)
        targets = [stage.words.data.cast("B") for stage in stages]
        stage, filled = 0, 0
        pulled = iter(pieces)
        while stage < len(targets):  # as many pieces as the stages need: no more are read
            piece = next(pulled, None)
            if piece is None:
                raise ValueError("a damaged key filter: pieces are missing")
            view = memoryview(piece)
            while len(view):
                if stage == len(targets):
                    raise ValueError("a damaged key filter: more words than its stages hold")
                taken = min(len(targets[stage]) - filled, len(view))
                targets[stage][filled : filled + taken] = view[:taken]
                filled += taken
                view = view[taken:]
                if filled == len(targets[stage]):
                    stage, filled = stage + 1, 0
        return cls._made_of(stages, budget)

    @classmethod
    def _made_of(cls, stages: list[_Stage], budget: FilterBudget) -> KeyFilter:
        """A filter of ``stages``, whose bytes ``budget`` holds already (none: full)."""
        made = cls.__new__(cls)
        made._budget, made._stages, made.full = budget, stages, not stages
        return made

    def may_hold(self, keys: U32) -> npt.NDArray[np.bool_]:
        """For each key, False if it was certainly never added."""
        if self.full:
            return np.ones(len(keys), np.bool_)
        mixed, bits = _hashes(np.asarray(keys, np.uint32))
        held = np.zeros(len(mixed), np.bool_)
        for stage in self._stages:
            if stage.count:
                held |= (stage.words[stage.word_of(mixed)] & bits) == bits
        return held


def _hashes(keys: U32) -> tuple[U64, U64]:
    """Per key: a mixed 64-bit value (its top bits choose the word) and the key's 3 bits."""
    mixed: U64 = (keys.astype(np.uint64) + np.uint64(1)) * _MIX
    spread = mixed * _MIX_BITS
    one = np.uint64(1)
    bits: U64 = (
        (one << (spread >> np.uint64(58)))
        | (one << ((spread >> np.uint64(52)) & _SIX))
        | (one << ((spread >> np.uint64(46)) & _SIX))
    )
    return mixed, bits


def _stages_of(raw: bytes, at: int) -> tuple[list[_Stage], int]:
    """The stages a head describes (their words zero), and where the head ends: the stage
    count, then each stage's capacity and count."""
    if len(raw) < at + 4:
        raise ValueError("a damaged key filter: no stage count")
    stages: list[_Stage] = []
    for _ in range(int.from_bytes(raw[at : at + 4], "little")):
        if len(raw) < at + 4 + _STAGE.size * (len(stages) + 1):
            raise ValueError("a damaged key filter: a stage header is cut")
        capacity, count = _STAGE.unpack_from(raw, at + 4 + _STAGE.size * len(stages))
        stage = _Stage(capacity)
        if stage.capacity != capacity:
            raise ValueError("a damaged key filter: a stage's capacity is not a power of two")
        stage.count = count
        stages.append(stage)
    return stages, at + 4 + _STAGE.size * len(stages)


def _words_of(capacity: int) -> int:
    """The 64-bit words of a stage of ``capacity`` keys."""
    return max(1, capacity // _KEYS_PER_WORD)


def _power_of_two(capacity: int) -> int:
    """The capacity rounded up so that a stage has a power-of-two number of words."""
    words = max(1, -(-capacity // _KEYS_PER_WORD))
    return (1 << (words - 1).bit_length()) * _KEYS_PER_WORD
