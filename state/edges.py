"""The graph of verified matches, kept for clusters that are cut as well as joined: item
mode's, and the pages' with ``Settings.split_clusters``."""

from __future__ import annotations

import struct

from .codec import encode_id
from .transaction import Transaction

__all__ = ["MatchEdges"]

_EDGE = struct.Struct(">QQ")
_SCORE = struct.Struct(">f")


class MatchEdges:
    """The verified matches between documents (items, or pages when their clusters are
    split), with their scores: the graph whose connected parts are cut into clusters
    (``streams.detection.regroup``). Each edge is kept under both of its documents, so that
    a document's neighbours are one ordered read; the edges a view adds or removes are seen
    by its later reads."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx
        self._pending: dict[int, dict[int, float | None]] = {}

    def add(self, first: int, second: int, score: float) -> None:
        value = _SCORE.pack(score)
        # the score as the store keeps it (32 bits): an edge read back after the commit
        # must weigh what it weighed in its batch, or ties between edges cut otherwise
        kept = _SCORE.unpack(value)[0]
        for a, b in ((first, second), (second, first)):
            self._tx.put("edges", _EDGE.pack(a, b), value)
            self._pending.setdefault(a, {})[b] = kept

    def remove_all(self, doc_id: int) -> list[int]:
        """Remove every edge of ``doc_id``; its neighbours before."""
        neighbours = list(self.neighbours(doc_id))
        for other in neighbours:
            for a, b in ((doc_id, other), (other, doc_id)):
                self._tx.delete("edges", _EDGE.pack(a, b))
                self._pending.setdefault(a, {})[b] = None
        return neighbours

    def score(self, first: int, second: int) -> float:
        """The score of the edge between two documents, or 0.0 when there is none."""
        pending = self._pending.get(first, {})
        if second in pending:
            return pending[second] or 0.0
        raw = self._tx.get("edges", _EDGE.pack(first, second))
        return 0.0 if raw is None else float(_SCORE.unpack(raw)[0])

    def neighbours(self, doc_id: int) -> dict[int, float]:
        """The documents ``doc_id`` matches, with the scores."""
        found: dict[int, float] = {}
        start = encode_id(doc_id)
        for key, raw in self._tx.store.scan("edges", start):
            if not key.startswith(start):
                break
            found[_EDGE.unpack(key)[1]] = _SCORE.unpack(raw)[0]
        for other, score in self._pending.get(doc_id, {}).items():
            if score is None:
                found.pop(other, None)
            else:
                found[other] = score
        return found
