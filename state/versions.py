"""Where only a url's latest fetch counts (``Settings.versions = "latest"``): each url's
version now, and the documents that left the clusters while their sketch still serves.

``LiveVersions``: url -> the version the state holds (its fetched_at, document, content
fingerprint, and the last time it was fetched unchanged), or the url's tombstone.
``Departed``: a superseded or deleted document whose copies stand for it -> the copy
standing for it now (its heir, whose sketch it shares). ``KeptVersions``: the departed
versions kept for history and lost and found. ``CopyGroups``: the live exact copies of each
content, in the order they came, which decide who stands for a copy that departs.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from .codec import NO_TIME, DocRecord, decode_id, encode_id
from .transaction import Transaction

__all__ = ["CopyGroups", "Departed", "KeptVersions", "LiveVersion", "LiveVersions"]

#: a kept version's departure in event time and its doc id (table ``departures``), in order
_DEPARTED = struct.Struct(">qQ")
_GROUP = struct.Struct(">QQ")  # group number, place in the group
#: heir 0, the sweep pass in which the document left, the posting log's next record then
_REMOVED = struct.Struct(">QQq")
_NEXT = b"n"  # the next number given to a group or a place
_MEMBER = b"m"  # + doc id -> its group and place
_PLACE = b"g"  # + group + place -> doc id

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

    def put(self, doc_id: int, nearest: int, record: bytes, departed: int = NO_TIME) -> None:
        """``record``: the stored record that holds its sketch (its own, or for a copy its
        original's), as stored: kept without being decoded (only the sketch is read back).
        ``departed``: when it left, in event time (microseconds), for ``expire_before``."""
        self._tx.put("kept", encode_id(doc_id), encode_id(nearest) + record)
        if departed != NO_TIME:
            self._tx.put("departures", _DEPARTED.pack(departed, doc_id), b"\x01")

    def expire_before(self, micros: int) -> int:
        """Forget the versions that departed before ``micros`` (table ``departures`` holds
        their times in order; a time whose version went otherwise is dropped here too); how
        many were still kept. Committed times only: a batch's own departures are not older
        than its fetches."""
        forgotten = 0
        for key, _ in self._tx.store.scan("departures"):
            when, doc_id = _DEPARTED.unpack(key)
            if when >= micros:
                break
            self._tx.delete("departures", key)
            if self._tx.get("kept", encode_id(doc_id)) is not None:
                self._tx.delete("kept", encode_id(doc_id))
                forgotten += 1
        return forgotten

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
    postings and fingerprints that still name them. A document that left with no copy to
    stand for it is marked removed (heir 0, with the sweep pass that saw it leave) until the
    sweep (``state.sweep``) has taken it out of every posting list and fingerprint."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def heirs(self, doc_ids: Iterable[int]) -> dict[int, int]:
        """The heir of each departed document among ``doc_ids`` (others are left out)."""
        wanted = list(doc_ids)
        raws = self._tx.get_many("gone", [encode_id(doc_id) for doc_id in wanted])
        return {doc_id: decode_id(raw[:8]) for doc_id, raw in zip(wanted, raws, strict=True) if raw}

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
        """Whether some departed document is marked (an heir stands for it, or it was
        removed and the sweep has not taken it out yet): a state where none is skips the
        lookups."""
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

    def mark_removed(self, doc_id: int, sweep_pass: int, logged: int) -> None:
        """A document that left with no copy to stand for it, in sweep pass ``sweep_pass``,
        when the posting log's next record was ``logged``."""
        self._tx.put("gone", encode_id(doc_id), _REMOVED.pack(0, sweep_pass, logged))

    def removed(self, doc_ids: list[int]) -> list[bool]:
        """Whether each of ``doc_ids`` is marked removed."""
        raws = self._tx.get_many("gone", [encode_id(doc_id) for doc_id in doc_ids])
        return [raw is not None and len(raw) > 8 for raw in raws]

    def forget_removed(self, before_pass: int, folded: int) -> int:
        """Unmark the documents marked removed in a sweep pass before ``before_pass`` whose
        logged postings were all folded (records up to ``folded``) when that pass began: the
        sweep has taken them out since. How many marked removed are left."""
        pending = self._tx.pending("gone")
        left = sum(len(raw) > 8 for raw in pending.values() if raw is not None)
        for key, raw in self._tx.store.scan("gone"):
            if key in pending or len(raw) <= 8:
                continue
            _, sweep_pass, logged = _REMOVED.unpack(raw)
            if sweep_pass < before_pass and logged - 1 <= folded:
                self._tx.delete("gone", key)
            else:
                left += 1
        return left


class CopyGroups:
    """The live documents of each group of exact copies (a document and its twins: same
    bytes, tokens or shingle set), in the order they joined: where a copy departs, the first
    one left stands for it (its heir). A group of one is no group: it is dropped.

    Every stage of a sharded deployment keeps every group (as it keeps the whole fingerprint
    table), built from the same verdicts in the same order, so all choose the same heir
    without asking each other. Groups and places are numbered by one counter, never by a
    document id (a version fetched again without a time comes back under its old id).
    Written through this object only: the members it read are its view's."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx
        self._groups: dict[int, dict[int, int]] = {}  # group -> {place: doc id}, in order

    def _where(self, doc_id: int) -> tuple[int, int] | None:
        raw = self._tx.get("copies", _MEMBER + encode_id(doc_id))
        return None if raw is None else _GROUP.unpack(raw)

    def _members(self, group: int) -> dict[int, int]:
        members = self._groups.get(group)
        if members is None:
            start = _PLACE + encode_id(group)
            members = {}
            for key, raw in self._tx.store.scan("copies", start):
                if not key.startswith(start):
                    break
                members[decode_id(key[len(start) :])] = decode_id(raw)
            self._groups[group] = members
        return members

    def _number(self) -> int:
        raw = self._tx.get("copies", _NEXT)
        number = 1 if raw is None else decode_id(raw)
        self._tx.put("copies", _NEXT, encode_id(number + 1))
        return number

    def _place(self, doc_id: int, group: int) -> None:
        place = self._number()
        self._members(group)[place] = doc_id
        self._tx.put("copies", _MEMBER + encode_id(doc_id), _GROUP.pack(group, place))
        self._tx.put("copies", _PLACE + _GROUP.pack(group, place), encode_id(doc_id))

    def join(self, doc_id: int, copy: int) -> None:
        """``copy`` (a new document) is a copy of the live document ``doc_id``."""
        where = self._where(doc_id)
        if where is None:
            group = self._number()
            self._members(group)  # a new group: nothing stored under its number
            self._place(doc_id, group)
        else:
            group = where[0]
        self._place(copy, group)

    def others(self, doc_id: int) -> list[int]:
        """The live copies of ``doc_id``, in the order they joined."""
        where = self._where(doc_id)
        if where is None:
            return []
        return [other for other in self._members(where[0]).values() if other != doc_id]

    def heir(self, doc_id: int) -> int:
        """The copy that will stand for ``doc_id`` when it departs: the first one left in
        its group, or 0 when it has no live copy."""
        return next(iter(self.others(doc_id)), 0)

    def leave(self, doc_id: int) -> None:
        """``doc_id`` departs: it leaves its group, and a group of one left is dropped."""
        where = self._where(doc_id)
        if where is None:
            return
        group, place = where
        members = self._members(group)
        members.pop(place, None)
        self._forget(doc_id, group, place)
        if len(members) == 1:
            ((last_place, last),) = members.items()
            members.clear()
            self._forget(last, group, last_place)

    def _forget(self, doc_id: int, group: int, place: int) -> None:
        self._tx.delete("copies", _MEMBER + encode_id(doc_id))
        self._tx.delete("copies", _PLACE + _GROUP.pack(group, place))
