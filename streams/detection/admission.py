"""Admission: is a page a delivery already known, an exact copy of a known document, or new?

Decided in batch order from the fingerprint table (raw bytes, canonical token stream, shingle
set) before any index is read. Every detection shard keeps the whole fingerprint table and
makes the same decisions, so that each knows which documents to index without asking the
others (``shard.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from enum import Enum

import msgspec
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


class Twin(msgspec.Struct, frozen=True, gc=False, array_like=True):
    """The known document a new one is an exact, canonical or shingle-set copy of, and the
    document whose sketch both share (``doc_id`` itself, or the original it copies).

    Frozen and not tracked by the garbage collector, as the events (``events.py``); an
    array [doc id, method, owner] to msgspec, as the findings messages carry it."""

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
    keys = fingerprint_keys(doc)
    known = view.fingerprints.lookup_many([key for key, _ in keys])  # one read, not three
    for key, method in keys:
        if (found := known[key]) is not None:
            return Twin(found[0], method, found[1])
    return None


def admit_batch(
    view: StateView,
    docs: Sequence[PreparedDoc],
    keeps: Callable[[int], bool] | None = None,
    live: Callable[[StateView, Iterable[int]], dict[int, int]] | None = None,
) -> list[Verdict]:
    """Register the fingerprints of a batch's documents in order; each one's verdict.

    ``keeps``: which documents this state keeps (a detection shard's own; by default all):
    a document it does not keep is remembered in ``seen``, so that a later delivery of it
    is a REPEAT here too. ``live``: where versions depart (``versions.standing``), the live
    document standing for each registered one: a copy of a departed document is a copy of
    its heir, and a fingerprint whose documents are all gone is registered again; a copy
    joins the group of copies of the document it copies (``state.CopyGroups``)."""
    kept = [keeps is None or keeps(doc.doc_id) for doc in docs]
    view.documents.prefetch(doc.doc_id for doc, own in zip(docs, kept, strict=True) if own)
    if keeps is not None:
        view.seen.prefetch(doc.doc_id for doc, own in zip(docs, kept, strict=True) if not own)
    keys = [fingerprint_keys(doc) for doc in docs]
    fingerprints = view.fingerprints
    # every key of the batch read at once; registrations made below are seen by later ones
    known = fingerprints.lookup_many({key for doc_keys in keys for key, _ in doc_keys})
    if live is not None:
        known = _standing(view, known, live)
    verdicts: list[Verdict] = []
    admitted: set[int] = set()
    for doc, doc_keys, own in zip(docs, keys, kept, strict=True):
        doc_id = doc.doc_id
        seen = view.documents.exists(doc_id) if own else view.seen.has(doc_id)
        if doc_id in admitted or seen:  # twice in one batch: once, as across batches
            verdicts.append(Admission.REPEAT)
            continue
        admitted.add(doc_id)
        if not own:
            view.seen.add(doc_id)
        twin = _first_known(doc_keys, known)
        owner = doc_id if twin is None else twin.owner
        for key, _ in doc_keys:
            if known[key] is None:
                fingerprints.register(key, doc_id, owner)
                known[key] = (doc_id, owner)
        if twin is not None and live is not None:  # a copy stands for it if it departs
            view.copies.join(twin.doc_id, doc_id)
        verdicts.append(Admission.NEW if twin is None else twin)
    return verdicts


def _standing(
    view: StateView,
    known: dict[bytes, tuple[int, int] | None],
    live: Callable[[StateView, Iterable[int]], dict[int, int]],
) -> dict[bytes, tuple[int, int] | None]:
    """The registrations with each departed document, and each departed sketch owner,
    replaced by its heir (which holds the sketch now), or by none when removed."""
    now = live(view, {doc_id for found in known.values() if found for doc_id in found})
    return {
        key: None
        if found is None or not now[found[0]] or not now[found[1]]
        else (now[found[0]], now[found[1]])
        for key, found in known.items()
    }


def _first_known(
    keys: list[tuple[bytes, Method]], known: dict[bytes, tuple[int, int] | None]
) -> Twin | None:
    """The twin under a document's first fingerprint key already registered."""
    for key, method in keys:
        found = known[key]
        if found is not None:
            return Twin(found[0], method, found[1])
    return None
