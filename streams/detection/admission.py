"""Admission: is a page a delivery already known, an exact copy of a known document, or new?

Decided in batch order from the fingerprint table (raw bytes, canonical token stream, shingle
set) before any index is read. Every detection shard keeps the whole fingerprint table and
makes the same decisions, so that each knows which documents to index without asking the
others (``shard.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from neardup.core import PreparedDoc
from neardup.state import FingerprintKind, FingerprintTable, StateView

from .events import Method

__all__ = ["Admission", "Twin", "Verdict", "admit_batch", "exact_twin", "fingerprint_keys"]

_EXACT_METHODS: tuple[tuple[FingerprintKind, Method], ...] = (
    (FingerprintKind.RAW, "exact"),
    (FingerprintKind.CANONICAL, "canonical"),
    (FingerprintKind.SHINGLE_SET, "shingle"),
)


class Admission(Enum):
    """What admitting a document found, when it is not a twin of a known one."""

    NEW = "new"  # to be sketched, indexed and verified
    REPEAT = "repeat"  # already known (same url and fetched_at): nothing to do


@dataclass(frozen=True, slots=True)
class Twin:
    """The known document a new one is an exact, canonical or shingle-set copy of, and the
    document whose sketch both share (``doc_id`` itself, or the original it copies)."""

    doc_id: int
    method: Method
    owner: int


Verdict = Admission | Twin


def fingerprint_keys(doc: PreparedDoc) -> list[tuple[bytes, Method]]:
    """The document's fingerprint-table keys with their methods, in the order they count."""
    prints = doc.fingerprints
    return [
        (FingerprintTable.key(kind, fingerprint), method)
        for (kind, method), fingerprint in zip(
            _EXACT_METHODS, (prints.raw, prints.canonical, prints.shingle_set), strict=True
        )
        if fingerprint is not None
    ]


def exact_twin(view: StateView, doc: PreparedDoc) -> Twin | None:
    """The known document ``doc`` is a copy of, if any (without registering it)."""
    for key, method in fingerprint_keys(doc):
        if (found := view.fingerprints.lookup(key)) is not None:
            return Twin(found[0], method, found[1])
    return None


def admit_batch(
    view: StateView, docs: Sequence[PreparedDoc], keeps: Callable[[int], bool] | None = None
) -> list[Verdict]:
    """Register the fingerprints of a batch's documents in order; each one's verdict.

    ``keeps``: which documents this state keeps (a detection shard's own; by default all):
    a document it does not keep is remembered in ``seen``, so that a later delivery of it
    is a REPEAT here too."""
    ids = [doc.doc_id for doc in docs]
    view.documents.prefetch(ids)
    if keeps is not None:
        view.seen.prefetch(doc_id for doc_id in ids if not keeps(doc_id))
    keys = [fingerprint_keys(doc) for doc in docs]
    view.fingerprints.prefetch(key for doc_keys in keys for key, _ in doc_keys)
    verdicts: list[Verdict] = []
    admitted: set[int] = set()
    for doc, doc_keys in zip(docs, keys, strict=True):
        kept = keeps is None or keeps(doc.doc_id)
        known = view.documents.exists(doc.doc_id) if kept else view.seen.has(doc.doc_id)
        if doc.doc_id in admitted or known:  # twice in one batch: once, as across batches
            verdicts.append(Admission.REPEAT)
            continue
        admitted.add(doc.doc_id)
        if not kept:
            view.seen.add(doc.doc_id)
        verdicts.append(_admit(view.fingerprints, doc.doc_id, doc_keys))
    return verdicts


def _admit(
    fingerprints: FingerprintTable, doc_id: int, keys: list[tuple[bytes, Method]]
) -> Verdict:
    """Register a new document's fingerprints (``keys``: its ``fingerprint_keys``); its twin
    (the document under the first key known), or NEW."""
    found = [(key, method, fingerprints.lookup(key)) for key, method in keys]
    twin = next(
        (Twin(known[0], method, known[1]) for _, method, known in found if known is not None),
        None,
    )
    owner = doc_id if twin is None else twin.owner
    for key, _, known in found:
        if known is None:
            fingerprints.register(key, doc_id, owner)
    return Admission.NEW if twin is None else twin
