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

from collections.abc import Iterable, Sequence
from typing import IO, Any, Literal, get_args

import msgspec
import xxhash

__all__ = [
    "ITEM_EVENT_COUNTER",
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
    "PageChanged",
    "PageRemoved",
    "encode_event",
    "format_id",
    "numbered",
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


def numbered(events: Sequence[Event], first: int) -> tuple[Event, ...]:
    """Item mode's events, each given its place among the state's item events, counted
    from ``first`` (the caller keeps the count in the batch's transaction, so a batch done
    again after a crash numbers its events as the first try did). Their ids then tell a
    repeat from a new event that says the same as an earlier one."""
    return tuple(
        msgspec.structs.replace(event, seq=first + at)
        if isinstance(event, (ItemDuplicate, ClusterMerged, ClusterSplit, ItemUpdated, ItemRemoved))
        else event
        for at, event in enumerate(events)
    )


def write_events(out: IO[str], events: Iterable[Event]) -> None:
    """Events as lines of JSON (an events file)."""
    for event in events:
        out.write(encode_event(event).decode() + "\n")


#: the counter of item events told so far (their ``seq``)
ITEM_EVENT_COUNTER = "item_events"


def _event_id(*parts: object) -> str:
    return format_id(xxhash.xxh3_64_intdigest("\x1f".join(map(str, parts)).encode()))


def _with_content_id(kind: str, body: dict[str, Any], seq: int) -> dict[str, Any]:
    """An event whose id is a hash of all it says and of its place among the state's item
    events (``seq``, -1 for pages): a replay says the same at the same place and gets the
    same id, while a cluster cut again as it was cut before, or an item matching again
    after a change, is a new event (an id of the documents alone made consumers drop such
    an event as a repeat)."""
    made = {"schema": SCHEMA_VERSION, "type": kind, "id": ""}
    made["id"] = _event_id(kind, seq, _JSON.encode(body).decode())
    made.update(body)
    return made


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
    seq: int = -1  # its place among the state's item events (``numbered``)

    @property
    def method(self) -> Method:
        return "item"

    def to_json(self) -> dict[str, Any]:
        return _with_content_id(
            "duplicate",
            {
                "doc": self.doc.to_json(),
                "match": self.match.to_json(),
                "method": "item",
                "score": round(self.score, 4),
                "fields": {name: round(value, 4) for name, value in self.fields.items()},
                "cluster": format_id(self.cluster),
                "cluster_size": self.cluster_size,
            },
            self.seq,
        )


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
    seq: int = -1  # item mode: its place among the state's item events (``numbered``)

    def to_json(self) -> dict[str, Any]:
        # after a split, a cluster may retire the same one again: a new event (content id)
        return _with_content_id(
            "cluster_merged",
            {
                "cluster": format_id(self.cluster),
                "retired": format_id(self.retired),
                "size": self.size,
                "doc": self.doc.to_json(),
                "cluster_root": self.cluster_root.to_json(),
                "retired_root": self.retired_root.to_json(),
            },
            self.seq,
        )


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
    seq: int = -1  # item mode: its place among the state's item events (``numbered``)

    def to_json(self) -> dict[str, Any]:
        return _with_content_id(
            "cluster_split",
            {
                "cluster": format_id(self.cluster),
                "parts": [
                    {
                        "cluster": format_id(root),
                        "size": size,
                        "members": [member.to_json() for member in members],
                    }
                    for root, members, size in self.parts
                ],
            },
            self.seq,
        )


class ItemUpdated(msgspec.Struct, frozen=True, gc=False):
    """An item arrived again with other values: it replaced its earlier version, and its
    matches were checked again (item mode)."""

    doc: DocRef
    cluster: int
    cluster_size: int
    seq: int = -1  # its place among the state's item events (``numbered``)

    def to_json(self) -> dict[str, Any]:
        return _with_content_id(
            "item_updated",
            {
                "doc": self.doc.to_json(),
                "cluster": format_id(self.cluster),
                "cluster_size": self.cluster_size,
            },
            self.seq,
        )


class ItemRemoved(msgspec.Struct, frozen=True, gc=False):
    """A tombstone removed an item from the state and from ``cluster`` (item mode)."""

    doc: DocRef
    cluster: int
    seq: int = -1  # its place among the state's item events (``numbered``)

    def to_json(self) -> dict[str, Any]:
        return _with_content_id(
            "item_removed",
            {"doc": self.doc.to_json(), "cluster": format_id(self.cluster)},
            self.seq,
        )


class PageChanged(msgspec.Struct, frozen=True, gc=False):
    """A url was fetched again with other content (``versions = "latest"``): ``doc``, its
    new version, replaced ``old``, which left ``old_cluster``; ``doc`` is in ``cluster``."""

    old: DocRef
    doc: DocRef
    old_cluster: int
    cluster: int

    def to_json(self) -> dict[str, Any]:
        return _with_content_id(
            "page_changed",
            {
                "old": self.old.to_json(),
                "doc": self.doc.to_json(),
                "old_cluster": format_id(self.old_cluster),
                "cluster": format_id(self.cluster),
            },
            -1,
        )


class PageRemoved(msgspec.Struct, frozen=True, gc=False):
    """A deletion record removed a url's page from the state and from ``cluster``
    (``versions = "latest"``); ``deleted_at``: the deletion's fetched_at, if it had one."""

    doc: DocRef
    cluster: int
    deleted_at: str

    def to_json(self) -> dict[str, Any]:
        return _with_content_id(
            "page_removed",
            {
                "doc": self.doc.to_json(),
                "cluster": format_id(self.cluster),
                "deleted_at": self.deleted_at or None,
            },
            -1,
        )


Event = (
    Duplicate
    | ItemDuplicate
    | ClusterMerged
    | Contained
    | ClusterSplit
    | ItemUpdated
    | ItemRemoved
    | PageChanged
    | PageRemoved
)
