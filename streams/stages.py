"""The detection pipeline cut into re-keyed stages, for the Kafka topology.

Every stage reads and writes only state keyed like its input message, so each can run on
the partition that owns that key:

    pages (key url)        prepare        -> docs        (key doc id)
    docs (key doc id)      store sketch   -> keys        (one message per key partition)
    keys (key partition)   post in index  -> candidates  (key new doc id)
    candidates (doc id)    attach sketch  -> verify      (key candidate doc id)
    verify (candidate id)  estimate       -> edges       (one partition: one order)
    edges                  union-find     -> events      (key cluster id)

The stage functions are the embedded pipeline's pieces (Documents, PostingIndex, the
estimator, Clusters) over a StateView; the Kafka app only moves messages between them.
Every stage is safe to replay: at-least-once delivery repeats work but never changes the
clusters, and a replayed union re-sends the same events (same ids) instead of losing them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from neardup.core import PreparedDoc, Settings, Sketch, estimate_pairs, sketch_family
from neardup.state import DocRecord, FingerprintKind, FingerprintTable, PostingIndex, StateView

from .events import ClusterMerged, DocRef, Duplicate, Event

__all__ = [
    "CandidateMessage",
    "DocMessage",
    "EdgeMessage",
    "KeysMessage",
    "VerifyMessage",
    "key_partition",
    "stage_candidates",
    "stage_docs",
    "stage_keys",
    "stage_union",
    "stage_verify",
    "stage_verify_batch",
]

# posting kinds: which index a key belongs to and what a pair found through it is called
_KINDS = {
    "raw": "exact",
    "canonical": "canonical",
    "shingle": "shingle",
    "super": "near",
    "short": "near",
}
_FINGERPRINT_KINDS = {
    "raw": FingerprintKind.RAW,
    "canonical": FingerprintKind.CANONICAL,
    "shingle": FingerprintKind.SHINGLE_SET,
}


def _ref_json(ref: DocRef) -> list[Any]:
    return [ref.doc_id, ref.url, ref.fetched_at]


def _ref(data: list[Any]) -> DocRef:
    return DocRef(int(data[0]), str(data[1]), str(data[2]))


def _dumps(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def key_partition(kind: str, key: int, partitions: int) -> int:
    """The partition that owns an index key (the same on every worker)."""
    return (key ^ (len(kind) * 0x9E3779B97F4A7C15)) % partitions


@dataclass(frozen=True, slots=True)
class DocMessage:
    """A prepared document, from the prepare stage to the owner of its doc id."""

    ref: DocRef
    shingle_count: int
    sketch: np.ndarray
    keys: list[tuple[str, int]]

    @classmethod
    def of(cls, doc: PreparedDoc) -> DocMessage:
        page = doc.page
        prints = doc.fingerprints
        keys = [
            (kind, fp)
            for kind, fp in (
                ("raw", prints.raw),
                ("canonical", prints.canonical),
                ("shingle", prints.shingle_set),
            )
            if fp is not None
        ]
        keys += [("super", int(k)) for k in doc.super_shingles.tolist()]
        keys += [("short", int(k)) for k in doc.shingle_keys.tolist()]
        return cls(
            DocRef(doc.doc_id, page.url, page.fetched_at),
            doc.shingle_count,
            doc.sketch.values,
            keys,
        )

    def encode(self) -> bytes:
        return _dumps(
            {
                "doc": _ref_json(self.ref),
                "n": self.shingle_count,
                "sketch": base64.b64encode(self.sketch.astype("<u4").tobytes()).decode(),
                "keys": self.keys,
            }
        )

    @classmethod
    def decode(cls, raw: bytes) -> DocMessage:
        data = json.loads(raw)
        sketch = np.frombuffer(base64.b64decode(data["sketch"]), dtype="<u4").astype(np.uint32)
        return cls(
            _ref(data["doc"]), int(data["n"]), sketch, [(str(k), int(v)) for k, v in data["keys"]]
        )


@dataclass(frozen=True, slots=True)
class KeysMessage:
    """A document's index keys that one partition owns."""

    ref: DocRef
    shingle_count: int  # kept beside the document in the short-document index
    keys: list[tuple[str, int]]

    def encode(self) -> bytes:
        return _dumps({"doc": _ref_json(self.ref), "n": self.shingle_count, "keys": self.keys})

    @classmethod
    def decode(cls, raw: bytes) -> KeysMessage:
        data = json.loads(raw)
        keys = [(str(k), int(v)) for k, v in data["keys"]]
        return cls(_ref(data["doc"]), int(data["n"]), keys)


@dataclass(frozen=True, slots=True)
class CandidateMessage:
    """Documents that share a key with ``ref`` and came before it, to ``ref``'s owner."""

    ref: DocRef
    candidates: list[tuple[int, str]]  # (doc id, method)

    def encode(self) -> bytes:
        return _dumps({"doc": _ref_json(self.ref), "candidates": self.candidates})

    @classmethod
    def decode(cls, raw: bytes) -> CandidateMessage:
        data = json.loads(raw)
        return cls(_ref(data["doc"]), [(int(c), str(m)) for c, m in data["candidates"]])


@dataclass(frozen=True, slots=True)
class VerifyMessage:
    """A new document's sketch, to the owner of a candidate's sketch."""

    doc: DocMessage
    candidate: int
    method: str

    def encode(self) -> bytes:
        return _dumps(
            {
                "doc": json.loads(self.doc.encode()),
                "candidate": self.candidate,
                "method": self.method,
            }
        )

    @classmethod
    def decode(cls, raw: bytes) -> VerifyMessage:
        data = json.loads(raw)
        return cls(
            DocMessage.decode(_dumps(data["doc"])), int(data["candidate"]), str(data["method"])
        )


@dataclass(frozen=True, slots=True)
class EdgeMessage:
    """A verified pair: ``doc`` (the later one) resembles ``match`` at or above the threshold."""

    doc: DocRef
    match: DocRef
    method: str
    resemblance: float
    containment: float

    def encode(self) -> bytes:
        return _dumps(
            {
                "doc": _ref_json(self.doc),
                "match": _ref_json(self.match),
                "method": self.method,
                "r": self.resemblance,
                "c": self.containment,
            }
        )

    @classmethod
    def decode(cls, raw: bytes) -> EdgeMessage:
        data = json.loads(raw)
        return cls(
            _ref(data["doc"]),
            _ref(data["match"]),
            str(data["method"]),
            float(data["r"]),
            float(data["c"]),
        )


def stage_docs(view: StateView, message: DocMessage, partitions: int) -> dict[int, KeysMessage]:
    """Store the sketch (once) and split the keys by owning partition.

    The keys are sent again on a replay: the keys stage ignores what it has seen, and a crash
    between storing and sending must not lose them."""
    ref = message.ref
    if not view.documents.exists(ref.doc_id):
        view.documents.put(
            ref.doc_id, DocRecord(ref.url, ref.fetched_at, message.shingle_count, message.sketch)
        )
        view.counters.add("documents")
    by_partition: dict[int, list[tuple[str, int]]] = {}
    for kind, key in message.keys:
        by_partition.setdefault(key_partition(kind, key, partitions), []).append((kind, key))
    count = message.shingle_count
    return {p: KeysMessage(ref, count, keys) for p, keys in sorted(by_partition.items())}


def _key_bytes(kind: str, key: int) -> bytes:
    if kind in _FINGERPRINT_KINDS:
        return FingerprintTable.key(_FINGERPRINT_KINDS[kind], key)
    return key.to_bytes(8 if kind == "super" else 4, "big")


def _index(view: StateView, kind: str) -> PostingIndex:
    if kind == "super":
        return view.super_shingles
    if kind == "short":
        return view.short_shingles
    return view.exact_fingerprints


def stage_keys(view: StateView, message: KeysMessage) -> CandidateMessage | None:
    """Post the document under each key; the documents it met there (earlier ones only).

    On a replay the document is already in the lists, and the same documents before it are
    returned again."""
    found: dict[int, str] = {}
    for kind in sorted({k for k, _ in message.keys}, key=list(_KINDS).index):
        keys = [_key_bytes(kind, key) for k, key in message.keys if k == kind]
        index = _index(view, kind)
        met = index.add_batch([keys], [message.ref.doc_id], [message.shingle_count])[0]
        for doc_id in sorted(met):
            found.setdefault(doc_id, _KINDS[kind])  # exact methods first: they name the pair best
    found.pop(message.ref.doc_id, None)
    return CandidateMessage(message.ref, sorted(found.items())) if found else None


def stage_candidates(view: StateView, message: CandidateMessage) -> list[VerifyMessage]:
    """Attach the new document's sketch to each candidate, for the candidate's owner."""
    record = view.documents.get(message.ref.doc_id)
    if record is None:  # cannot happen: the document was stored before its keys were sent
        return []
    doc = DocMessage(message.ref, record.shingle_count, record.sketch, [])
    return [VerifyMessage(doc, candidate, method) for candidate, method in message.candidates]


def stage_verify(view: StateView, message: VerifyMessage, settings: Settings) -> EdgeMessage | None:
    """Estimate the pair where the candidate's sketch lives; an edge if it passes."""
    return stage_verify_batch(view, [message], settings)[0]


def stage_verify_batch(
    view: StateView, messages: Sequence[VerifyMessage], settings: Settings
) -> list[EdgeMessage | None]:
    """``stage_verify`` for many pairs, estimated in one vectorised call."""
    family = sketch_family(settings)
    view.documents.prefetch(message.candidate for message in messages)
    results: list[EdgeMessage | None] = [None] * len(messages)
    pending: list[tuple[int, Sketch, Sketch, DocRef]] = []
    for index, message in enumerate(messages):
        record = view.documents.get(message.candidate)
        if record is None:
            continue
        mine = Sketch(message.doc.sketch, message.doc.shingle_count, settings.sample_size, family)
        theirs = Sketch(record.sketch, record.shingle_count, settings.sample_size, family)
        sizes = sorted((mine.shingle_count, theirs.shingle_count))
        if message.method == "near" and sizes[0] < settings.threshold * sizes[1]:
            continue  # the shingle counts alone rule the pair out
        match = DocRef(message.candidate, record.url, record.fetched_at)
        pending.append((index, mine, theirs, match))
    found = estimate_pairs([p[1] for p in pending], [p[2] for p in pending])
    for (index, _, _, match), pair in zip(pending, found, strict=True):
        if pair.resemblance >= settings.threshold:
            message = messages[index]
            results[index] = EdgeMessage(
                message.doc.ref, match, message.method, pair.resemblance, pair.containment
            )
    return results


def _remember(view: StateView, key: bytes, events: Iterable[Event]) -> None:
    view.tx.put("events", key, _dumps([e.to_json() for e in events]))


def _recall(view: StateView, key: bytes) -> list[dict[str, Any]]:
    raw = view.tx.get("events", key)
    return [] if raw is None else list(json.loads(raw))


def _stored_ref(view: StateView, doc_id: int) -> DocRef:
    record = view.documents.get(doc_id)
    return DocRef(doc_id, record.url if record else "", record.fetched_at if record else "")


def stage_union(view: StateView, edge: EdgeMessage) -> list[dict[str, Any]]:
    """Union-find over verified edges, in the one order of the edges partition.

    Returns the events (as JSON objects) to send. A document joining a cluster gives a
    ``duplicate``; an edge between two existing clusters a ``cluster_merged`` (the older root
    keeps its id). Edges that change nothing return the events their first delivery gave,
    so that a replay after a crash re-sends rather than loses them (consumers drop repeats
    by id)."""
    clusters, docs = view.clusters, view.documents
    for ref in (edge.doc, edge.match):
        if not docs.exists(ref.doc_id):  # the union stage keeps only what ages need
            docs.put(ref.doc_id, DocRecord(ref.url, ref.fetched_at, 0, np.zeros(0, np.uint32)))
    pair_key = b"edge:" + edge.doc.doc_id.to_bytes(8, "big") + edge.match.doc_id.to_bytes(8, "big")
    doc_root, match_root = clusters.find(edge.doc.doc_id), clusters.find(edge.match.doc_id)
    if doc_root == match_root:
        return _recall(view, pair_key)
    # the older root keeps its id, whatever order the edges came in: so the id of a cluster is
    # its oldest member, as in an embedded run over input in fetched_at order
    survivor, retired = sorted((doc_root, match_root), key=clusters.age)
    joining = clusters.info(doc_root).size == 1
    taken_over = joining and retired == match_root and clusters.info(match_root).size > 1
    size = clusters.merge(survivor, retired)
    events: list[Event] = []
    if joining:
        events.append(
            Duplicate(
                edge.doc,
                edge.match,
                edge.method,
                edge.resemblance,
                edge.containment,
                survivor,
                size,
            )
        )
        view.counters.add("duplicates")
    if not joining or taken_over:
        # two clusters met, or a late-arriving older page took over a cluster's id
        # every root was the end of an edge, so the union stage has its url
        roots = [_stored_ref(view, root) for root in (survivor, retired)]
        events.append(ClusterMerged(survivor, retired, size, edge.doc, *roots))
    _remember(view, pair_key, events)
    return [event.to_json() for event in events]
