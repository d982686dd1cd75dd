"""Events, schema version 1 (documented in docs/events.md).

Each event is one JSON object with ``schema``, ``type`` and a deterministic ``id``: the same
input always produces the same ids, so a consumer can drop repeats after a replay.

Events and the references in them are msgspec Structs, frozen and not tracked by the garbage
collector: they hold only strings, numbers and one another, so they make no cycles. A batch
makes a few per joined document and keeps them until it is committed, long enough to reach
the collector's oldest generation, whose full passes over a large process each walk every
object there (as dataclasses they were a tenth of the union stage's time).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any, Literal, get_args

import msgspec
import xxhash

__all__ = [
    "METHODS",
    "SCHEMA_VERSION",
    "ClusterMerged",
    "ClusterSplit",
    "Contained",
    "DocRef",
    "Duplicate",
    "Event",
    "ItemDuplicate",
    "ItemRemoved",
    "ItemUpdated",
    "Method",
    "encode_event",
    "format_id",
    "write_events",
]

SCHEMA_VERSION = 1

#: how a duplicate was found: identical bytes, identical canonical tokens, identical shingle
#: set, estimated resemblance at or above the threshold, (item mode) a combined score of the
#: fields at or above it, or (SimHash mode) a SimHash within the distance whose sample
#: passed the verifier
Method = Literal["exact", "canonical", "shingle", "near", "item", "simhash"]
METHODS: tuple[Method, ...] = get_args(Method)


def format_id(value: int) -> str:
    """Ids are 64-bit; they travel as 16 hex digits (JSON numbers lose precision past 2**53)."""
    return f"{value:016x}"


#: compact JSON, UTF-8 as it is: faster than json.dumps on an event, which the Kafka union
#: stage encodes on its event loop
_JSON = msgspec.json.Encoder()


def encode_event(event: Event) -> bytes:
    """An event as the JSON object its consumers read (a line of the events file, a record
    of the events topic)."""
    return _JSON.encode(event.to_json())


def write_events(out: IO[str], events: Iterable[Event]) -> None:
    """Events as lines of JSON (an events file)."""
    for event in events:
        out.write(encode_event(event).decode() + "\n")


def _event_id(*parts: object) -> str:
    return format_id(xxhash.xxh3_64_intdigest("\x1f".join(map(str, parts)).encode()))


class DocRef(msgspec.Struct, frozen=True, gc=False):
    doc_id: int
    url: str
    fetched_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": format_id(self.doc_id),
            "url": self.url,
            "fetched_at": self.fetched_at or None,
        }


class Duplicate(msgspec.Struct, frozen=True, gc=False):
    """A new document resembles a known one at or above the threshold and joined its cluster.
    ``distance``: the Hamming distance of their SimHashes (method ``simhash`` only)."""

    doc: DocRef
    match: DocRef
    method: Method
    resemblance: float
    containment: float
    cluster: int
    cluster_size: int
    distance: int | None = None

    def to_json(self) -> dict[str, Any]:
        made = {
            "schema": SCHEMA_VERSION,
            "type": "duplicate",
            "id": _event_id("duplicate", self.doc.doc_id),
            "doc": self.doc.to_json(),
            "match": self.match.to_json(),
            "method": self.method,
            "resemblance": round(self.resemblance, 4),
            "containment": round(self.containment, 4),
            "cluster": format_id(self.cluster),
            "cluster_size": self.cluster_size,
        }
        if self.distance is not None:
            made["distance"] = self.distance
        return made


class ItemDuplicate(msgspec.Struct, frozen=True, gc=False):
    """A new item matches a known one at or above the threshold and joined its cluster: the
    combined score, and each compared field's score (item mode)."""

    doc: DocRef
    match: DocRef
    score: float
    fields: dict[str, float]
    cluster: int
    cluster_size: int

    @property
    def method(self) -> Method:
        return "item"

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "type": "duplicate",
            "id": _event_id("duplicate", self.doc.doc_id),
            "doc": self.doc.to_json(),
            "match": self.match.to_json(),
            "method": "item",
            "score": round(self.score, 4),
            "fields": {name: round(value, 4) for name, value in self.fields.items()},
            "cluster": format_id(self.cluster),
            "cluster_size": self.cluster_size,
        }


class ClusterMerged(msgspec.Struct, frozen=True, gc=False):
    """Two clusters became one through ``doc``; the older keeps its id, ``retired`` is gone.

    ``cluster_root`` and ``retired_root`` are the first documents of the two clusters: when
    one of them was a single document, no earlier event named it, and a consumer following
    clusters needs its URL."""

    cluster: int
    retired: int
    size: int
    doc: DocRef
    cluster_root: DocRef
    retired_root: DocRef

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "type": "cluster_merged",
            "id": _event_id("cluster_merged", self.cluster, self.retired),
            "cluster": format_id(self.cluster),
            "retired": format_id(self.retired),
            "size": self.size,
            "doc": self.doc.to_json(),
            "cluster_root": self.cluster_root.to_json(),
            "retired_root": self.retired_root.to_json(),
        }


class Contained(msgspec.Struct, frozen=True, gc=False):
    """A new document is contained at the containment threshold or more in an earlier one,
    or contains one (``containment`` and ``contains`` say which). Containment is not
    symmetric, and it joins no clusters: a quotation is not a copy."""

    doc: DocRef
    match: DocRef
    containment: float  # of doc in match
    contains: float  # of match in doc
    resemblance: float
    exact: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "type": "contained",
            "id": _event_id("contained", self.doc.doc_id, self.match.doc_id),
            "doc": self.doc.to_json(),
            "match": self.match.to_json(),
            "containment": round(self.containment, 4),
            "contains": round(self.contains, 4),
            "resemblance": round(self.resemblance, 4),
            "exact": self.exact,
        }


class ClusterSplit(msgspec.Struct, frozen=True, gc=False):
    """A cluster was cut (item mode): its members now lie in ``parts``, each (cluster id,
    the cluster's members that are in it, the cluster's size). The part that keeps
    ``cluster``'s id, if one does, is the one holding its first item; the others have new
    ids."""

    cluster: int
    parts: tuple[tuple[int, tuple[DocRef, ...], int], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "type": "cluster_split",
            "id": _event_id("cluster_split", self.cluster, *(p[0] for p in self.parts)),
            "cluster": format_id(self.cluster),
            "parts": [
                {
                    "cluster": format_id(root),
                    "size": size,
                    "members": [member.to_json() for member in members],
                }
                for root, members, size in self.parts
            ],
        }


class ItemUpdated(msgspec.Struct, frozen=True, gc=False):
    """An item arrived again with other values: it replaced its earlier version, and its
    matches were checked again (item mode)."""

    doc: DocRef
    cluster: int
    cluster_size: int

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "type": "item_updated",
            "id": _event_id("item_updated", self.doc.doc_id, self.cluster, self.cluster_size),
            "doc": self.doc.to_json(),
            "cluster": format_id(self.cluster),
            "cluster_size": self.cluster_size,
        }


class ItemRemoved(msgspec.Struct, frozen=True, gc=False):
    """A tombstone removed an item from the state and from ``cluster`` (item mode)."""

    doc: DocRef
    cluster: int

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "type": "item_removed",
            "id": _event_id("item_removed", self.doc.doc_id, self.cluster),
            "doc": self.doc.to_json(),
            "cluster": format_id(self.cluster),
        }


Event = (
    Duplicate | ItemDuplicate | ClusterMerged | Contained | ClusterSplit | ItemUpdated | ItemRemoved
)
