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
        found: set[int] = set()
        mine = doc_id.to_bytes(8, "big")
        for key, raw in zip(keys, self._tx.get_many(self._table, keys), strict=True):
            if raw is None:
                self._tx.put(self._table, key, mine)
                continue
            postings = Postings.decode(raw)
            if postings.stopped:
                self._mark_stop(key, postings.requests + 1)
                continue
            ids = postings.doc_ids.tolist()
            if doc_id in ids:
                continue
            found.update(ids)
            if len(ids) + 1 >= self._cap:
                self._mark_stop(key, len(ids) + 1)
            else:
                self._tx.put(self._table, key, raw + mine)
        return found

    def _mark_stop(self, key: bytes, requests: int) -> None:
        empty = np.zeros(0, dtype=np.uint64)
        self._tx.put(self._table, key, Postings(empty, True, requests).encode())
        self._tx.put("stopkeys", self._table.encode() + b":" + key, requests.to_bytes(8, "big"))
