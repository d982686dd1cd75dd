"""Where only a url's latest fetch counts (``Settings.versions = "latest"``): each url's
version now, and the documents that left the clusters while their sketch still serves.

``LiveVersions``: url -> the version the state holds (its fetched_at, document, content
fingerprint, and the last time it was fetched unchanged), or the url's tombstone.
``Departed``: a superseded or deleted document whose copies stand for it -> the copy
standing for it now (its heir, whose sketch it shares). ``KeptVersions``: the departed
versions kept for history and lost and found.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from .codec import NO_TIME, DocRecord, decode_id, encode_id
from .transaction import Transaction

__all__ = ["Departed", "KeptVersions", "LiveVersion", "LiveVersions"]

# fetched_at micros, doc id (0 for a tombstone), raw content fingerprint, last fetched micros
_ENTRY = struct.Struct(">qQQq")


@dataclass(frozen=True, slots=True)
class LiveVersion:
    """A url's version in the state. ``doc_id`` 0: the url is deleted (a tombstone, kept so
    that an older fetch arriving later does not bring it back)."""

    micros: int
    doc_id: int
    fingerprint: int
    last_fetched: int

    @property
    def deleted(self) -> bool:
        return self.doc_id == 0

    @property
    def timed(self) -> bool:
        return self.micros != NO_TIME


class LiveVersions:
    """url -> ``LiveVersion``; a view's writes are seen by its later reads."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def get_many(self, urls: Sequence[str]) -> list[LiveVersion | None]:
        raws = self._tx.get_many("live", [url.encode("utf-8") for url in urls])
        return [None if raw is None else LiveVersion(*_ENTRY.unpack(raw)) for raw in raws]

    def scan(self) -> Iterator[tuple[str, LiveVersion]]:
        """Every url's version (committed state only), by url."""
        for key, raw in self._tx.store.items("live"):
            yield key.decode("utf-8"), LiveVersion(*_ENTRY.unpack(raw))

    def put(self, url: str, version: LiveVersion) -> None:
        self._tx.put(
            "live",
            url.encode("utf-8"),
            _ENTRY.pack(version.micros, version.doc_id, version.fingerprint, version.last_fetched),
        )


class KeptVersions:
    """Departed versions kept for history and lost and found (``Settings.keep_versions``):
    doc id -> the closest match it had when it left (0: none) and its record, with a sketch
    of its own. A table apart from the documents, which detection reads for every
    candidate: kept versions cost it nothing."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def put(self, doc_id: int, nearest: int, record: bytes) -> None:
        """``record``: the stored record that holds its sketch (its own, or for a copy its
        original's), as stored: kept without being decoded (only the sketch is read back)."""
        self._tx.put("kept", encode_id(doc_id), encode_id(nearest) + record)

    def get(self, doc_id: int) -> tuple[int, DocRecord] | None:
        """(its closest match when it left, the record holding its sketch), or None if it is
        not kept."""
        raw = self._tx.get("kept", encode_id(doc_id))
        return None if raw is None else (decode_id(raw[:8]), DocRecord.decode(raw[8:]))

    def which(self, doc_ids: Sequence[int]) -> list[int]:
        """Those of ``doc_ids`` that are kept, in their order."""
        raws = self._tx.get_many("kept", [encode_id(doc_id) for doc_id in doc_ids])
        return [doc_id for doc_id, raw in zip(doc_ids, raws, strict=True) if raw is not None]

    def remove(self, doc_id: int) -> None:
        self._tx.delete("kept", encode_id(doc_id))


class Departed:
    """Departed documents whose copies stand for them -> the copy (their heir): for the
    postings and fingerprints that still name them."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def heirs(self, doc_ids: Iterable[int]) -> dict[int, int]:
        """The heir of each departed document among ``doc_ids`` (others are left out)."""
        wanted = list(doc_ids)
        raws = self._tx.get_many("gone", [encode_id(doc_id) for doc_id in wanted])
        return {doc_id: decode_id(raw) for doc_id, raw in zip(wanted, raws, strict=True) if raw}

    def live(self, doc_ids: Iterable[int]) -> dict[int, int]:
        """Each departed document among ``doc_ids`` -> the live document standing for it
        now (following heirs that departed in turn), or 0 when none does."""
        found = self.heirs(doc_ids)
        resolved: dict[int, int] = {}
        for doc_id, heir in found.items():
            seen = {doc_id}
            while heir and (later := self.heirs([heir]).get(heir)) is not None:
                if later in seen:  # never made, but a loop must not hang a batch
                    heir = 0
                    break
                seen.add(heir)
                heir = later
            resolved[doc_id] = heir
        return resolved

    def any(self) -> bool:
        """Whether some departed document may have an heir (a state where none ever had
        one skips the lookups)."""
        pending = self._tx.pending("gone")
        if any(value is not None for value in pending.values()):
            return True
        deleted = len(pending)  # every pending write is a delete
        stored = self._tx.store.scan("gone", limit=deleted + 1)
        return any(key not in pending for key, _ in stored)

    def mark(self, doc_id: int, heir: int) -> None:
        self._tx.put("gone", encode_id(doc_id), encode_id(heir))

    def unmark(self, doc_id: int) -> None:
        """A document live again (an heir, or a version fetched again) leads to itself."""
        self._tx.delete("gone", encode_id(doc_id))
