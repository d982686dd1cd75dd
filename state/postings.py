"""Inverted indexes from a key (super-shingle or short-document shingle) to documents.

Posting lists are capped: when a key has been carried by ``cap`` documents it becomes a stop
key (Broder's "very common shingles": boilerplate, templates). A stop key keeps no documents,
proposes no candidates, and counts how often it was asked for, for ``neardup stats``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .codec import Postings
from .transaction import Transaction

__all__ = ["Meetings", "PostingIndex"]


@dataclass(slots=True)
class Meetings:
    """What one document met under its keys: the earlier documents, how many of its keys each
    shared, their shingle counts (in a sized index), and how many of its keys were stop keys
    (each may hide one more shared key)."""

    shared: dict[int, int] = field(default_factory=dict)  # (plain dicts: made per document)
    sizes: dict[int, int] = field(default_factory=dict)
    stopped: int = 0


class PostingIndex:
    """``sized``: each entry also keeps its document's shingle count, so that candidates can be
    filtered by size and shared keys before their sketches are read."""

    def __init__(self, tx: Transaction, table: str, cap: int, sized: bool = False) -> None:
        self._tx = tx
        self._table = table
        self._cap = cap
        self._sized = sized

    def prefetch(self, keys: Sequence[bytes]) -> None:
        self._tx.prefetch(self._table, keys)

    def candidates(self, keys: Sequence[bytes]) -> set[int]:
        """The documents sharing at least one (non-stop) key."""
        found: set[int] = set()
        for raw in self._tx.get_many(self._table, keys):
            if raw is not None:
                postings = Postings.decode(raw, self._sized)
                if not postings.stopped:
                    found.update(postings.doc_ids)
        return found

    def add(self, keys: Sequence[bytes], doc_id: int, size: int = 0) -> set[int]:
        """Add a document under each key; returns the documents that were already there."""
        return set(self.meet_batch([keys], [doc_id], [size])[0].shared)

    def add_batch(
        self,
        key_lists: Sequence[Sequence[bytes]],
        doc_ids: Sequence[int],
        sizes: Sequence[int] | None = None,
    ) -> list[set[int]]:
        """``add`` for many documents in order (see ``meet_batch``)."""
        return [set(met.shared) for met in self.meet_batch(key_lists, doc_ids, sizes)]

    def meet_batch(
        self,
        key_lists: Sequence[Sequence[bytes]],
        doc_ids: Sequence[int],
        sizes: Sequence[int] | None = None,
    ) -> list[Meetings]:
        """Add documents in order, each under its keys (with its shingle count in a sized
        index); for each, what it met there (earlier ones of the batch included): the same
        as adding them one by one."""
        if self._sized and (sizes is None or len(sizes) != len(doc_ids)):
            raise ValueError(f"the sized index {self._table!r} needs a shingle count per document")
        counts = sizes if self._sized and sizes is not None else [None] * len(doc_ids)
        # a one-document list per document, as encoded under a key it is the first to carry
        entries = [
            Postings((doc_id,), False, 1, None if count is None else (count,)).encode()
            for doc_id, count in zip(doc_ids, counts, strict=True)
        ]
        # each key's first carrier; keys carried more than once in the batch apart
        first: dict[bytes, int] = {}
        repeated: dict[bytes, list[int]] = {}
        for owner, keys in enumerate(key_lists):
            for key in keys:
                if key in first:
                    repeated.setdefault(key, [first[key]]).append(owner)
                else:
                    first[key] = owner
        unique = list(first)
        stored = self._tx.get_many(self._table, unique)
        met = [Meetings() for _ in doc_ids]
        first_seen: dict[bytes, bytes] = {}
        for key, raw in zip(unique, stored, strict=True):
            if key in repeated:
                self._add_in_order(key, raw, repeated[key], doc_ids, sizes, met)
            elif raw is None:  # the common case: a key seen for the first time
                first_seen[key] = entries[first[key]]
            else:
                self._add_one(key, raw, first[key], doc_ids, sizes, met)
        self._tx.put_many(self._table, first_seen)
        return met

    def _add_one(
        self,
        key: bytes,
        raw: bytes,
        owner: int,
        doc_ids: Sequence[int],
        sizes: Sequence[int] | None,
        met: list[Meetings],
    ) -> None:
        """``_add_in_order`` for the common case of one carrier and a stored list that stays
        a list: the entry is appended to the stored bytes, without decoding them all."""
        doc_id = doc_ids[owner]
        listed = Postings.entries(raw, self._sized)
        if listed is None or len(listed[0]) + 1 >= self._cap or doc_id in listed[0]:
            # a stop key, one about to become one, or a replay (it meets the same again)
            self._add_in_order(key, raw, [owner], doc_ids, sizes, met)
            return
        ids, known = listed
        meetings = met[owner]
        shared = meetings.shared
        for other in ids:
            shared[other] = shared.get(other, 0) + 1
        size = None
        if self._sized and sizes is not None:
            meetings.sizes.update(zip(ids, known, strict=True))
            size = sizes[owner]
        self._tx.put(self._table, key, Postings.appended(raw, doc_id, size))

    def _add_in_order(
        self,
        key: bytes,
        raw: bytes | None,
        owners: list[int],
        doc_ids: Sequence[int],
        sizes: Sequence[int] | None,
        met: list[Meetings],
    ) -> None:
        postings = Postings.decode(raw, self._sized) if raw is not None else None
        if postings is not None and postings.stopped:
            for owner in owners:
                met[owner].stopped += 1
            self._mark_stop(key, postings.requests + len(owners))
            return
        ids = [] if postings is None else list(postings.doc_ids)
        counts = [] if postings is None else list(postings.sizes or ())
        for position, owner in enumerate(owners):
            doc_id = doc_ids[owner]
            seen = ids.index(doc_id) if doc_id in ids else len(ids)  # a replay meets the same
            meetings = met[owner]
            shared = meetings.shared
            for other in ids[:seen]:
                shared[other] = shared.get(other, 0) + 1
            if self._sized:
                meetings.sizes.update(zip(ids[:seen], counts[:seen], strict=True))
            if seen < len(ids):
                continue
            ids.append(doc_id)
            if sizes is not None and self._sized:
                counts.append(sizes[owner])
            if len(ids) >= self._cap:  # later carriers in the batch still count as requests
                for later in owners[position + 1 :]:
                    met[later].stopped += 1
                self._mark_stop(key, len(ids) + len(owners) - 1 - position)
                return
        kept = tuple(counts) if self._sized else None
        self._tx.put(self._table, key, Postings(tuple(ids), False, len(ids), kept).encode())

    def _mark_stop(self, key: bytes, requests: int) -> None:
        self._tx.put(self._table, key, Postings((), True, requests).encode())
        self._tx.put("stopkeys", self._table.encode() + b":" + key, requests.to_bytes(8, "big"))
