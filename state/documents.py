"""Documents, the exact-match fingerprint table and URL history."""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Iterator, Sequence
from enum import IntEnum

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


#: a document's url, fetched_at and fetched_at in microseconds: what events and cluster ages
#: read of a document, decoded once (fetched_at as given to ``put``: ``ref`` formats it)
Head = tuple[str, str, int]


class Documents:
    """doc id -> DocRecord."""

    def __init__(self, tx: Transaction, cache: CacheView | None = None) -> None:
        self._tx = tx
        store = tx.store
        self._heads: CachedTable[Head] = (cache or CommittedCache(0).view()).table(
            "heads", lambda doc_id: _head(store.get("docs", encode_id(doc_id)))
        )

    def get(self, doc_id: int) -> DocRecord | None:
        raw = self._tx.get("docs", encode_id(doc_id))
        return None if raw is None else DocRecord.decode(raw)

    def sketch(self, doc_id: int) -> tuple[int, memoryview] | None:
        """(shingle count, sketch as stored: ``unpack_samples`` decodes it) of a document that
        keeps its own sketch, else None."""
        raw = self._tx.get("docs", encode_id(doc_id))
        return None if raw is None else DocRecord.decode_sketch(raw)

    def prefetch(self, doc_ids: Iterable[int]) -> None:
        self._tx.prefetch("docs", [encode_id(doc_id) for doc_id in doc_ids])

    def exists(self, doc_id: int) -> bool:
        return self._tx.get("docs", encode_id(doc_id)) is not None

    def put(self, doc_id: int, record: DocRecord, micros: int | None = None) -> None:
        """``micros``: the record's fetched_at in microseconds, when the caller has it."""
        if micros is None:
            micros = fetched_at_to_micros(record.fetched_at)
        self._tx.put("docs", encode_id(doc_id), record.encode(micros))
        self._heads.put(doc_id, (record.url, record.fetched_at, micros))

    def put_unsketched(self, records: Iterable[tuple[int, str, str, int, int, int]]) -> None:
        """``put`` of records that keep no sketch (the union stage's: the shards keep them),
        each (doc id, url, fetched_at, its microseconds, shingle count, duplicate of), without
        making the records."""
        writes = self._tx.writes("docs")
        encode = DocRecord.encode_head
        heads = self._heads
        for doc_id, url, fetched_at, micros, count, duplicate_of in records:
            writes[encode_id(doc_id)] = encode(url, micros, count, duplicate_of)
            heads.put(doc_id, (url, fetched_at, micros))

    def ref(self, doc_id: int) -> StoredRef | None:
        """The url and fetched_at of a stored document, without decoding its sketch."""
        head = self._heads.get(doc_id)
        if head is None:
            return None
        url, fetched_at, micros = head
        formatted = _formatted(fetched_at)
        return StoredRef(url, fetched_at_from_micros(micros) if formatted is None else formatted)

    def fetched_micros(self, doc_id: int) -> int:
        """A document's fetched_at in microseconds (``NO_TIME`` when missing or unknown)."""
        head = self._heads.get(doc_id)
        return NO_TIME if head is None else head[2]

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


def _head(raw: bytes | None) -> Head | None:
    if raw is None:
        return None
    micros = DocRecord.decode_head(raw)[0]
    url, fetched_at = DocRecord.decode_ref(raw)
    return url, fetched_at, micros


#: a UTC time with a fraction of at most microseconds, as crawlers write them
_PLAIN_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(\d{1,6}))?Z", re.ASCII)


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
        self.add_many([(url, fetched_at_to_micros(fetched_at), doc_id)])

    def add_many(self, versions: Sequence[tuple[str, int, int]]) -> None:
        """``add`` of (url, fetched_at in microseconds, doc id) of each of a batch's
        documents, in order, with the batch's histories read at once."""
        keys = [url.encode("utf-8") for url, _, _ in versions]
        known = dict(zip(keys, self._tx.get_many("urls", keys), strict=True))
        writes = self._tx.writes("urls")
        pack = _VERSION_ENTRY.pack
        for key, (_, micros, doc_id) in zip(keys, versions, strict=True):
            raw = known[key]
            if raw is None:
                entry = pack(micros, doc_id)
            else:  # versions in time order, each once
                entries = set(_VERSION_ENTRY.iter_unpack(raw)) | {(micros, doc_id)}
                entry = b"".join(pack(m, d) for m, d in sorted(entries))
            known[key] = writes[key] = entry  # a url twice in a batch: the second sees it
