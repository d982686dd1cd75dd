"""The posting indexes' key filters kept at closing, in a file beside the state's tables.

Reading every index key at each opening of a large state is slow (docs/benchmarks.md), so a
writer keeps its filters as it closes, marked with the store's sequence: the next writer uses
them only if nothing was written since (a run that crashed, a copy taken while a writer ran:
each leaves a later sequence, and the keys are read again).

A file, not the meta table: RocksDB copies a value into its write batch, its memtable and a
flush's buffers, so a million pages' 80 MB of filters cost 50 MB more than the run's own peak
as it closed; written from the filters' own words, the file costs nothing but the disk.

    file  = MAGIC, u64 sequence, u64 bound on the filters' bytes (2**64 - 1: none), u32
            tables, per table: u8 name length, name, u32 head length, head
            (``KeyFilter.pieces``), u64 words length; then each table's words
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path

from .key_filter import FilterBudget, KeyFilter
from .postings import INDEX_TABLES, IndexTable

__all__ = ["FILE_NAME", "KeptFilters", "keep"]

FILE_NAME = "key-filters"
_MAGIC = b"NDKF3"
_HEAD = struct.Struct("<QQI")  # sequence, bound, tables
_NO_BOUND = 2**64 - 1
_CHUNK = 4 << 20  # words are read back this many bytes at a time


def keep(
    directory: Path,
    sequence: int,
    filters: Mapping[IndexTable, KeyFilter],
    bound: int | None,
) -> None:
    """Write ``filters`` (made under ``bound``, their ``FilterBudget``'s limit) into
    ``directory`` as kept at ``sequence``, replacing any kept before (written aside and
    renamed: a crash leaves the old file or the new one, never half)."""
    tables = {table: kept.pieces(_CHUNK) for table, kept in filters.items()}
    heads = [_MAGIC, _HEAD.pack(sequence, _NO_BOUND if bound is None else bound, len(tables))]
    for table, (head, *words) in tables.items():
        name = table.encode()
        size = sum(len(piece) for piece in words)
        heads += [bytes([len(name)]), name, struct.pack("<I", len(head)), bytes(head)]
        heads.append(struct.pack("<Q", size))
    aside = directory / f"{FILE_NAME}.new"
    with open(aside, "wb") as out:
        out.write(b"".join(heads))
        for _, *words in tables.values():
            for piece in words:
                out.write(piece)  # a view of the filter's words: nothing is copied
        out.flush()
        os.fsync(out.fileno())
    os.replace(aside, directory / FILE_NAME)


class KeptFilters:
    """The filters a state's file keeps, if they were kept at ``sequence`` (the store's now)."""

    def __init__(
        self, path: Path, heads: dict[IndexTable, tuple[bytes, int, int]], bound: int | None
    ) -> None:
        self._path = path
        self._heads = heads  # table: head, where its words start, their length
        #: the bound on the filters' bytes they were made under
        self.bound = bound

    @classmethod
    def open(cls, directory: Path, sequence: int) -> KeptFilters | None:
        """The kept filters, or None: no file, a file kept at another sequence, or one that
        cannot be read as such (the keys are then read again, as without a file)."""
        path = directory / FILE_NAME
        try:
            with open(path, "rb") as kept:
                if kept.read(len(_MAGIC)) != _MAGIC:
                    return None
                at, bound, tables = _HEAD.unpack(kept.read(_HEAD.size))
                if at != sequence:
                    return None
                heads: dict[IndexTable, tuple[bytes, int]] = {}
                for _ in range(tables):
                    name = kept.read(kept.read(1)[0]).decode()
                    (length,) = struct.unpack("<I", kept.read(4))
                    head = kept.read(length)
                    (size,) = struct.unpack("<Q", kept.read(8))
                    table = next((known for known in INDEX_TABLES if known == name), None)
                    if table is None:
                        return None
                    heads[table] = (head, size)
                start = kept.tell()
        except (OSError, struct.error, IndexError, UnicodeDecodeError):
            return None
        placed: dict[IndexTable, tuple[bytes, int, int]] = {}
        for table, (head, size) in heads.items():
            placed[table] = (head, start, size)
            start += size
        return cls(path, placed, None if bound == _NO_BOUND else bound)

    @property
    def tables(self) -> frozenset[IndexTable]:
        return frozenset(self._heads)

    def read(self, table: IndexTable, budget: FilterBudget) -> KeyFilter | None:
        """The filter kept for ``table``, or None if it is not kept or cannot be read, or if
        it was kept full under a smaller bound than ``budget``'s (the keys may fit now)."""
        if table not in self._heads:
            return None
        head, start, size = self._heads[table]
        try:
            kept = KeyFilter.from_pieces(head, self._words(start, size), budget)
        except (OSError, ValueError):
            return None
        if kept.full and _larger(budget.limit, self.bound):
            return None
        return kept

    def _words(self, start: int, size: int) -> Iterator[bytes | None]:
        with open(self._path, "rb") as kept:
            kept.seek(start)
            while size > 0:
                piece = kept.read(min(_CHUNK, size))
                if not piece:
                    break
                size -= len(piece)
                yield piece
        yield None  # the pieces end here: from_pieces says whether the stages were filled


def _larger(bound: int | None, than: int | None) -> bool:
    return than is not None and (bound is None or bound > than)
