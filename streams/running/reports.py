"""What the read-only commands print: clusters, statistics, similar documents."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from neardup.core import Page
from neardup.core.items.merge import label_field, merge_field, merge_items
from neardup.core.items.prepare import ItemPreparer
from neardup.core.items.schema import ItemSchema
from neardup.state import State, StateView, top_stop_keys
from neardup.state.items import stored_schema
from neardup.state.postings import INDEX_TABLES

from ..detection import METHODS, Match, find_containing, find_similar, format_id
from ..detection.items import ItemScoring, similar_items
from ..detection.versions import VERSION_COUNTERS
from .queries import query_preparer

__all__ = [
    "LABEL_MEMBERS",
    "ItemLabels",
    "cluster_lines",
    "merged_lines",
    "merged_record",
    "similar_items_to",
    "similar_to_content",
    "statistics",
]


def cluster_lines(state: State, include_singletons: bool = False) -> Iterator[dict[str, Any]]:
    """One JSON object per cluster, largest first: {"cluster", "size", "members": [url, ...]}."""
    view = state.view()
    groups = view.clusters.members()
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    for root, members in ordered:  # one cluster's records at a time: memory stays flat
        docs = sorted(view.documents.refs(members), key=lambda ref: (ref.fetched_at, ref.url))
        yield {
            "cluster": format_id(root),
            "size": len(members),
            "members": [ref.url for ref in docs],
        }
    if include_singletons:
        clustered = {m for members in groups.values() for m in members}
        for doc_id, ref in view.documents.scan_refs():
            if doc_id not in clustered:
                yield {"cluster": format_id(doc_id), "size": 1, "members": [ref.url]}


def statistics(state: State, top: int = 10, flush: bool = True) -> dict[str, Any]:
    """The state as a whole: counters, clusters, the largest ones (from the size index), the
    stop keys most asked for (from their ranks) and disk use (with ``flush``, of the state
    once its memory is written out). Counts are counters the state keeps: no table is read
    whole."""
    view = state.view()
    counters = view.counters
    largest = []
    for root, size in view.clusters.largest(top):
        ref = view.documents.ref(root)
        largest.append(
            {"cluster": format_id(root), "size": size, "first_url": ref.url if ref else None}
        )
    disk = state.store.disk_bytes(flush=flush)
    documents = counters.get("documents")
    return {
        "documents": documents,
        "repeats_ignored": counters.get("repeats"),
        "duplicates": counters.get("duplicates"),
        "duplicates_by_method": {m: counters.get(f"duplicates:{m}") for m in METHODS},
        "cluster_merges": counters.get("cluster_merges"),
        "candidates": counters.get("candidates"),
        "pairs_estimated": counters.get("pairs_estimated"),
        "clusters": counters.get("clusters"),
        "documents_in_clusters": counters.get("documents_in_clusters"),
        "largest_clusters": largest,
        "index_keys": {i: counters.get(f"index_keys:{i}") for i in INDEX_TABLES},
        "stop_keys": sum(counters.get(f"stop_keys:{i}") for i in INDEX_TABLES),
        "top_stop_keys": [
            {"index": stop.index, "key": stop.key.hex(), "documents": stop.documents}
            for stop in top_stop_keys(state.store, top)
        ],
        "disk_bytes": disk,
        "disk_bytes_per_document": round(disk / documents, 1) if documents and disk else None,
        "versions": {name: counters.get(name) for name in VERSION_COUNTERS},
        "settings": state.settings.to_json(),
        "mode": "pages" if stored_schema(state.store) is None else "items",
    }


def _match_json(match: Match) -> dict[str, Any]:
    e = match.estimate
    return {
        "url": match.doc.url,
        "fetched_at": match.doc.fetched_at or None,
        "id": format_id(match.doc.doc_id),
        "resemblance": round(e.resemblance, 4),
        "containment": round(e.containment, 4),
        "contains": round(e.containment_reverse, 4),
        "exact": e.exact,
        "method": match.method,
        "cluster": format_id(match.cluster),
        **({} if e.distance is None else {"distance": e.distance}),
    }


def similar_to_content(
    state: State,
    page: Page,
    limit: int,
    floor: float,
    containment: float | None = None,
    excerpts: bool = False,
) -> list[dict[str, Any]]:
    """On-the-fly resemblance: the known documents most like ``page``, and those found
    through the containment index that contain half of it (and, with ``excerpts``, those
    half in it); the state is not changed. With ``containment``, only the documents
    containing at least that much of ``page``, most containing first (its sources, for an
    excerpt), and with ``excerpts`` too, those at least that much inside it.

    ``containment`` is of the query in the match, ``contains`` of the match in the query.
    """
    prepared = query_preparer(state.settings).prepare([page], query=True)[0]
    view = state.view()
    if containment is None:
        found = find_similar(view, prepared, state.settings, floor, excerpts, limit)
    else:
        found = find_containing(view, prepared, state.settings, containment, excerpts, limit)
    return [_match_json(m) for m in found]


def merged_lines(state: State, schema: ItemSchema) -> Iterator[dict[str, Any]]:
    """Item mode: one merged record per cluster of two or more, largest first, made from its
    members as they are now (``core.items.merge``): the cluster, its size, its members' ids,
    the record and its members' urls."""
    view = state.view()
    groups = view.clusters.members()
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    for root, members in ordered:
        yield merged_record(view, schema, root, members)


def merged_record(
    view: StateView, schema: ItemSchema, root: int, members: Sequence[int]
) -> dict[str, Any]:
    """The merged record of the cluster ``root`` of ``members`` (item mode)."""
    items = [item for item in view.items.get_many(sorted(members)) if item is not None]
    items.sort(key=lambda item: item.id)
    merged = merge_items(items, schema)
    return {
        "cluster": format_id(root),
        "size": len(members),
        "members": list(merged.ids),
        "record": merged.fields,
        "urls": list(merged.urls),
    }


#: the members a cluster's label is made from, at most: labels are read on every poll of
#: the dashboard, and an item cluster may hold thousands of equal records
LABEL_MEMBERS = 32


class ItemLabels:
    """Item mode's names for readers: an item's is its label field's value (``name``, else
    the schema's first text field: ``core.items.merge.label_field``), a cluster's is that
    field of its merged record, made from its first ``LABEL_MEMBERS`` members (all of them
    for a cluster that size or smaller, so that it equals ``merged_record``'s)."""

    def __init__(self, view: StateView, schema: ItemSchema) -> None:
        self._view = view
        self._schema = schema
        self.field = label_field(schema)

    def cluster(self, root: int) -> str | None:
        """The label of the cluster ``root`` (None: no member has the field)."""
        if self.field is None:
            return None
        members, _ = self._view.clusters.members_of(root, limit=LABEL_MEMBERS)
        items = [item for item in self._view.items.get_many(sorted(members)) if item]
        items.sort(key=lambda item: item.id)
        value = merge_field(items, self._schema, self.field)
        return None if value is None else str(value)

    def items(self, doc_ids: Sequence[int]) -> list[str | None]:
        """The label of each item (None: a removed item, or one without the field)."""
        if self.field is None:
            return [None] * len(doc_ids)
        labels: list[str | None] = []
        for item in self._view.items.get_many(doc_ids):
            value = None if item is None else merge_field([item], self._schema, self.field)
            labels.append(None if value is None else str(value))
        return labels


def similar_items_to(
    state: State, schema: ItemSchema, record: Any, limit: int
) -> list[dict[str, Any]]:
    """Item mode's on-the-fly query: the stored items most like a record (not stored), best
    first, each with its match probability and each compared field's similarity."""
    item = ItemPreparer(schema).prepare(record)
    scoring = ItemScoring.of(state, schema)
    return [
        {
            "id": other.id,
            "url": other.url,
            "cluster": format_id(state.view().clusters.find(doc_id)),
            "score": round(match.score, 4),
            "matched": match.matched,
            "fields": {name: round(value, 4) for name, value in match.fields.items()},
        }
        for doc_id, other, match in similar_items(state.view(), scoring, item, limit)
    ]
