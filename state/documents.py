"""Documents, the exact-match fingerprint table and URL history."""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from enum import IntEnum
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from .codec import (
    NO_TIME,
    DocRecord,
    StoredRef,
    decode_id,
    encode_id,
    fetched_at_from_micros,
    fetched_at_to_micros,
)
from .committed import CachedTable, CacheView, CommittedCache
from .transaction import Transaction

__all__ = ["Documents", "FingerprintKind", "FingerprintTable", "Seen", "UrlHistory"]

_VERSION_ENTRY = struct.Struct(">qQ")  # fetched_at micros, doc id


#: a document's id, url, fetched_at and shingle count, then what else the union stage's
#: ``DocHead`` carries
Head = tuple[int, str, str, int, *tuple[object, ...]]


class Documents:
    """doc id -> DocRecord."""

    def __init__(self, tx: Transaction, cache: CacheView | None = None) -> None:
        self._tx = tx
        store = tx.store
        cache = cache or CommittedCache(0).view()
        # what events name and cluster ages read of a document, decoded once: its url, its
        # fetched_at (as given to ``put``: ``ref`` formats it) and that in microseconds.
        # Strings and ints, no tuples: none is an object the garbage collector follows
        self._urls: CachedTable[str] = cache.table(
            "doc_urls", lambda doc_id: _ref_part(store.get("docs", encode_id(doc_id)), 0)
        )
        self._fetched: CachedTable[str] = cache.table(
            "doc_fetched", lambda doc_id: _ref_part(store.get("docs", encode_id(doc_id)), 1)
        )
        self._times: CachedTable[int] = cache.table(
            "doc_times", lambda doc_id: _micros(store.get("docs", encode_id(doc_id)))
        )

    def get(self, doc_id: int) -> DocRecord | None:
        raw = self._tx.get("docs", encode_id(doc_id))
        return None if raw is None else DocRecord.decode(raw)

    def raw(self, doc_id: int) -> bytes | None:
        """A document's record as stored (``DocRecord.decode`` reads it)."""
        return self._tx.get("docs", encode_id(doc_id))

    def sketch(self, doc_id: int) -> tuple[int, bytes | memoryview] | None:
        """(shingle count, sketch as stored: ``unpack_samples`` decodes it) of a document that
        keeps its own sketch, else None."""
        raw = self._tx.get("docs", encode_id(doc_id))
        return None if raw is None else DocRecord.decode_sketch(raw)

    def simhash_sketch(self, doc_id: int) -> tuple[int, int, bytes | memoryview] | None:
        """(shingle count, SimHash, sketch as stored) of a SimHash mode document that keeps
        its own sketch, else None."""
        raw = self._tx.get("docs", encode_id(doc_id))
        return None if raw is None else DocRecord.decode_simhash(raw)

    def prefetch(self, doc_ids: Iterable[int]) -> None:
        self._tx.prefetch("docs", [encode_id(doc_id) for doc_id in doc_ids])

    def exists(self, doc_id: int) -> bool:
        return self._tx.get("docs", encode_id(doc_id)) is not None

    def put(self, doc_id: int, record: DocRecord, micros: int | None = None) -> None:
        """``micros``: the record's fetched_at in microseconds, when the caller has it."""
        if micros is None:
            micros = fetched_at_to_micros(record.fetched_at)
        self._tx.put("docs", encode_id(doc_id), record.encode(micros))
        self._urls[doc_id] = record.url
        self._fetched[doc_id] = record.fetched_at
        self._times[doc_id] = micros

    def remove(self, doc_id: int) -> None:
        """Forget a document (a version that left, whose sketch nothing shares)."""
        self._tx.delete("docs", encode_id(doc_id))
        self._urls[doc_id] = self._fetched[doc_id] = self._times[doc_id] = None

    def put_unsketched(
        self, heads: Sequence[Head], micros: Sequence[int], duplicate_of: Sequence[int]
    ) -> None:
        """``put`` of records that keep no sketch (the union stage's: the shards keep them),
        from the documents' heads, fetched_at in microseconds and twins (0: none), without
        making the records."""
        if not heads:
            return
        doc_ids, urls, fetched_ats, counts, *_ = zip(*heads, strict=True)  # columns, in C
        self._urls.update(zip(doc_ids, urls, strict=True))
        self._fetched.update(zip(doc_ids, fetched_ats, strict=True))
        self._times.update(zip(doc_ids, micros, strict=True))
        # map stops at the shortest column: the strict zip checks that none was short
        records = map(DocRecord.encode_head, urls, micros, counts, duplicate_of)
        self._tx.writes("docs").update(zip(map(encode_id, doc_ids), records, strict=True))

    def ref(self, doc_id: int) -> StoredRef | None:
        """The url and fetched_at of a stored document, without decoding its sketch."""
        url = self._urls[doc_id]
        if url is None:
            return None
        formatted = _formatted(self._fetched[doc_id] or "")
        if formatted is None:
            formatted = fetched_at_from_micros(self.fetched_micros(doc_id))
        return StoredRef(url, formatted)

    def prefetch_refs(self, doc_ids: Iterable[int]) -> None:
        """Read, at once, the url and time of documents this view has not read yet (the
        matches a query names): ``ref`` of each then reads nothing more."""
        store = self._tx.store
        raws: dict[int, bytes | None] = {}

        def urls(ids: list[int]) -> list[str | None]:  # one read of the records for all three
            raws.update(zip(ids, store.get_many("docs", list(map(encode_id, ids))), strict=True))
            return [_ref_part(raws[i], 0) for i in ids]

        self._urls.read_many(doc_ids, urls)
        self._fetched.read_many(raws, lambda ids: [_ref_part(raws[i], 1) for i in ids])
        self._times.read_many(raws, lambda ids: [_micros(raws[i]) for i in ids])

    def has(self, doc_id: int) -> bool:
        """Whether a document is stored: ``ref`` is not None, without formatting it."""
        return self._urls[doc_id] is not None

    def fetched_micros(self, doc_id: int) -> int:
        """A document's fetched_at in microseconds (``NO_TIME`` when missing or unknown)."""
        micros = self._times[doc_id]
        return NO_TIME if micros is None else micros

    def owner_id(self, doc_id: int) -> int | None:
        """``sketch_owner``'s document id alone, without decoding records."""
        raw = self._tx.get("docs", encode_id(doc_id))
        if raw is None:
            return None
        duplicate_of = DocRecord.decode_head(raw)[2]
        if not duplicate_of:
            return doc_id
        return duplicate_of if self.exists(duplicate_of) else None

    def sketch_owner(self, doc_id: int) -> tuple[int, DocRecord] | None:
        """The document whose sketch stands for this one (itself, or the twin it copies)."""
        record = self.get(doc_id)
        if record is not None and record.duplicate_of:
            doc_id, record = record.duplicate_of, self.get(record.duplicate_of)
        return None if record is None else (doc_id, record)

    def refs(self, doc_ids: Iterable[int]) -> list[StoredRef]:
        """The url and fetched_at of the stored documents among ``doc_ids``, read from the
        committed state and not cached: for reports that walk the whole state."""
        raws = self._tx.store.get_many("docs", [encode_id(doc_id) for doc_id in doc_ids])
        return [DocRecord.decode_ref(raw) for raw in raws if raw is not None]

    def scan_refs(self) -> Iterator[tuple[int, StoredRef]]:
        """Every stored document (committed state only) as (id, its url and fetched_at), by id."""
        for key, raw in self._tx.store.items("docs"):
            yield decode_id(key), DocRecord.decode_ref(raw)


def _ref_part(raw: bytes | None, part: int) -> str | None:
    return None if raw is None else DocRecord.decode_ref(raw)[part]


def _micros(raw: bytes | None) -> int | None:
    return None if raw is None else DocRecord.decode_head(raw)[0]


#: a UTC time with a fraction of at most microseconds, as crawlers write them
_PLAIN_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(\d{1,6}))?Z", re.ASCII)


# events name the same documents again and again (roots, popular matches): a few times are
# formatted many times over
@lru_cache(maxsize=1 << 12)
def _formatted(fetched_at: str) -> str | None:
    """``fetched_at`` as decoding a stored record gives it back (``format_fetched_at``),
    when a padding of its fraction says so; None for other forms (offsets), which
    ``ref`` formats from the microseconds instead."""
    if not fetched_at:
        return fetched_at
    plain = _PLAIN_UTC.fullmatch(fetched_at)
    if plain is None:
        return None
    fraction = plain.group(1) or ""
    return f"{fetched_at[:19]}.{fraction.ljust(6, '0')}Z"


class FingerprintKind(IntEnum):
    RAW = 1
    CANONICAL = 2
    SHINGLE_SET = 3
    #: item mode: the item's values, all of them (a record scraped again, under another id)
    ITEM_VALUES = 4


class FingerprintTable:
    """(kind, 64-bit fingerprint) -> the first document that had it, and the document whose
    sketch that one shares (itself, or for a twin its original): so that a copy of a twin
    finds the sketch's owner without reading records, which a detection shard may not hold.
    The owner is stored only when it is another document."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    @staticmethod
    def key(kind: FingerprintKind, fingerprint: int) -> bytes:
        return bytes([kind]) + encode_id(fingerprint)

    def prefetch(self, keys: Iterable[bytes]) -> None:
        self._tx.prefetch("fingerprints", keys)

    def lookup(self, key: bytes) -> tuple[int, int] | None:
        """(the document registered under a key made with ``key``, its sketch's owner)."""
        raw = self._tx.get("fingerprints", key)
        return None if raw is None else _registered(raw)

    def lookup_many(self, keys: Iterable[bytes]) -> dict[bytes, tuple[int, int] | None]:
        """``lookup`` of each key, in one batched read."""
        wanted = list(keys)
        return {
            key: None if raw is None else _registered(raw)
            for key, raw in zip(wanted, self._tx.get_many("fingerprints", wanted), strict=True)
        }

    def register(self, key: bytes, doc_id: int, owner: int | None = None) -> None:
        extra = b"" if owner is None or owner == doc_id else encode_id(owner)
        self._tx.put("fingerprints", key, encode_id(doc_id) + extra)

    def drop_removed(
        self, start: bytes, end: bytes, removed: Callable[[npt.NDArray[np.uint64]], Any]
    ) -> int:
        """Forget the fingerprints from ``start`` up to ``end`` whose document left for good
        (``state.sweep``): its content, fetched again, is new. How many were forgotten."""
        keys: list[bytes] = []
        ids: list[bytes] = []
        for key, value in self._tx.stored_range("fingerprints", start, end):
            keys.append(key)
            ids.append(value[:8])
        if not keys:
            return 0
        gone = removed(np.frombuffer(b"".join(ids), ">u8").astype(np.uint64))
        for at in np.flatnonzero(gone).tolist():
            self._tx.delete("fingerprints", keys[at])
        return int(np.count_nonzero(gone))


def _registered(raw: bytes) -> tuple[int, int]:
    doc_id = decode_id(raw[:8])
    return doc_id, decode_id(raw[8:16]) if len(raw) >= 16 else doc_id


class Seen:
    """The documents a detection shard has admitted without keeping them (another shard
    keeps them): so that every shard tells a delivery already known from a new one."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def prefetch(self, doc_ids: Iterable[int]) -> None:
        self._tx.prefetch("seen", [encode_id(doc_id) for doc_id in doc_ids])

    def has(self, doc_id: int) -> bool:
        return self._tx.get("seen", encode_id(doc_id)) is not None

    def add(self, doc_id: int) -> None:
        self._tx.put("seen", encode_id(doc_id), b"\x01")

    def remove(self, doc_id: int) -> None:
        """A version that departed: a later delivery of it is new again."""
        self._tx.delete("seen", encode_id(doc_id))


class UrlHistory:
    """url -> every (fetched_at, doc id) seen for it, oldest first."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def versions(self, url: str) -> list[tuple[str, int]]:
        raw = self._tx.get("urls", url.encode("utf-8"))
        if raw is None:
            return []
        return [
            (fetched_at_from_micros(micros), doc_id)
            for micros, doc_id in _VERSION_ENTRY.iter_unpack(raw)
        ]

    def add(self, url: str, fetched_at: str, doc_id: int) -> None:
        self.add_many([url], [fetched_at_to_micros(fetched_at)], [doc_id])

    def add_many(self, urls: Sequence[str], micros: Sequence[int], doc_ids: Sequence[int]) -> None:
        """``add`` of each of a batch's documents, in order, from their urls, fetched_at in
        microseconds and ids, with the batch's histories read at once."""
        keys = [url.encode("utf-8") for url in urls]
        stored = self._tx.get_many("urls", keys)
        writes = self._tx.writes("urls")
        pack = _VERSION_ENTRY.pack
        if not any(stored) and len(set(keys)) == len(keys):  # most batches: new urls, once each
            writes.update(zip(keys, map(pack, micros, doc_ids), strict=True))
            return
        known = dict(zip(keys, stored, strict=True))
        for key, time, doc_id in zip(keys, micros, doc_ids, strict=True):
            raw = known[key]
            if raw is None:
                entry = pack(time, doc_id)
            else:  # versions in time order, each once
                entries = set(_VERSION_ENTRY.iter_unpack(raw)) | {(time, doc_id)}
                entry = b"".join(pack(m, d) for m, d in sorted(entries))
            known[key] = writes[key] = entry  # a url twice in a batch: the second sees it
