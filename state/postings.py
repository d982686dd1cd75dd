"""Inverted indexes from a key (super-shingle or short-document shingle) to documents.

Posting lists are capped: when a key has been carried by ``cap`` documents it becomes a stop
key (Broder's "very common shingles": boilerplate, templates). A stop key keeps no documents,
proposes no candidates, and counts how often it was asked for, for ``neardup stats``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .codec import Postings
from .transaction import Transaction

__all__ = ["PostingIndex"]


class PostingIndex:
    def __init__(self, tx: Transaction, table: str, cap: int) -> None:
        self._tx = tx
        self._table = table
        self._cap = cap

    def prefetch(self, keys: Sequence[bytes]) -> None:
        self._tx.prefetch(self._table, keys)

    def candidates(self, keys: Sequence[bytes]) -> set[int]:
        """The documents sharing at least one (non-stop) key."""
        found: set[int] = set()
        for raw in self._tx.get_many(self._table, keys):
            if raw is not None:
                postings = Postings.decode(raw)
                if not postings.stopped:
                    found.update(postings.doc_ids.tolist())
        return found

    def add(self, keys: Sequence[bytes], doc_id: int) -> set[int]:
        """Add a document under each key; returns the documents that were already there."""
        return self.add_batch([keys], [doc_id])[0]

    def add_batch(
        self, key_lists: Sequence[Sequence[bytes]], doc_ids: Sequence[int]
    ) -> list[set[int]]:
        """Add documents in order, each under its keys; for each, the documents that were
        already there (earlier ones of the batch included): the same as ``add`` one by one."""
        carriers: dict[bytes, list[int]] = {}
        for owner, keys in enumerate(key_lists):
            for key in keys:
                carriers.setdefault(key, []).append(owner)
        unique = list(carriers)
        stored = self._tx.get_many(self._table, unique)
        found: list[set[int]] = [set() for _ in doc_ids]
        for key, raw in zip(unique, stored, strict=True):
            owners = carriers[key]
            if raw is None and len(owners) == 1:  # the common case: a key seen for the first time
                self._tx.put(self._table, key, doc_ids[owners[0]].to_bytes(8, "big"))
            else:
                self._add_in_order(key, raw, owners, doc_ids, found)
        return found

    def _add_in_order(
        self,
        key: bytes,
        raw: bytes | None,
        owners: list[int],
        doc_ids: Sequence[int],
        found: list[set[int]],
    ) -> None:
        postings = Postings.decode(raw) if raw is not None else None
        if postings is not None and postings.stopped:
            self._mark_stop(key, postings.requests + len(owners))
            return
        ids: list[int] = [] if postings is None else postings.doc_ids.tolist()
        for position, owner in enumerate(owners):
            doc_id = doc_ids[owner]
            if doc_id in ids:  # posted before (a replay): the same documents came before it
                found[owner].update(ids[: ids.index(doc_id)])
                continue
            found[owner].update(ids)
            ids.append(doc_id)
            if len(ids) >= self._cap:  # later carriers in the batch still count as requests
                self._mark_stop(key, len(ids) + len(owners) - 1 - position)
                return
        self._tx.put(self._table, key, b"".join(i.to_bytes(8, "big") for i in ids))

    def _mark_stop(self, key: bytes, requests: int) -> None:
        empty = np.zeros(0, dtype=np.uint64)
        self._tx.put(self._table, key, Postings(empty, True, requests).encode())
        self._tx.put("stopkeys", self._table.encode() + b":" + key, requests.to_bytes(8, "big"))
