"""What the read-only commands print: clusters, statistics, similar documents."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from neardup.core import Page, Preparer, estimate
from neardup.state import State, StateView

from ..detection import Match, find_similar, format_id
from ..detection.stages import stored_sketch

__all__ = ["cluster_lines", "lost_and_found", "similar_to_content", "statistics"]


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


def statistics(state: State, top: int = 10) -> dict[str, Any]:
    view = state.view()
    roots = sorted(view.clusters.roots(), key=lambda item: (-item[1].size, item[0]))
    stop_keys = sorted(
        ((int.from_bytes(raw, "big"), key) for key, raw in state.store.items("stopkeys")),
        reverse=True,
    )
    largest = []
    for root, info in roots[:top]:
        record = view.documents.get(root)
        largest.append(
            {
                "cluster": format_id(root),
                "size": info.size,
                "first_url": record.url if record else None,
            }
        )
    disk = state.store.disk_bytes()
    documents = view.counters.get("documents")
    return {
        "documents": documents,
        "repeats_ignored": view.counters.get("repeats"),
        "duplicates": view.counters.get("duplicates"),
        "candidates": view.counters.get("candidates"),
        "pairs_estimated": view.counters.get("pairs_estimated"),
        "clusters": len(roots),
        "documents_in_clusters": sum(info.size for _, info in roots),
        "largest_clusters": largest,
        "stop_keys": len(stop_keys),
        "top_stop_keys": [
            {
                "index": key.split(b":", 1)[0].decode(),
                "key": key.split(b":", 1)[1].hex(),
                "documents": count,
            }
            for count, key in stop_keys[:top]
        ],
        "disk_bytes": disk,
        "disk_bytes_per_document": round(disk / documents, 1) if documents and disk else None,
        "settings": state.settings.to_json(),
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
    }


def similar_to_content(state: State, page: Page, limit: int, floor: float) -> list[dict[str, Any]]:
    """On-the-fly resemblance: the known documents most like ``page``; the state is not changed.

    ``containment`` is of the query in the match, ``contains`` of the match in the query.
    """
    prepared = Preparer(state.settings).prepare([page])[0]
    return [
        _match_json(m) for m in find_similar(state.view(), prepared, state.settings, floor)[:limit]
    ]


def lost_and_found(state: State, url: str, limit: int) -> dict[str, Any]:
    """Where did a URL's content go? The other URLs of its latest version's cluster, by
    resemblance to that version (the newest first among equals)."""
    view: StateView = state.view()
    versions = view.urls.versions(url)
    if not versions:
        return {"url": url, "known": False, "versions": [], "found": []}
    doc_id = versions[-1][1]
    owner = view.documents.sketch_owner(doc_id)
    root = view.clusters.find(doc_id)
    members = view.clusters.members().get(root, [doc_id])
    found: list[dict[str, Any]] = []
    if owner is not None:
        mine = stored_sketch(owner[1], state.settings)
        for member in members:
            record = view.documents.get(member)
            other = view.documents.sketch_owner(member)
            if record is None or other is None or record.url == url:
                continue
            e = estimate(mine, stored_sketch(other[1], state.settings))
            found.append(
                {
                    "url": record.url,
                    "fetched_at": record.fetched_at or None,
                    "id": format_id(member),
                    "resemblance": round(e.resemblance, 4),
                    "containment": round(e.containment, 4),
                }
            )
    found.sort(key=lambda item: str(item["fetched_at"] or ""), reverse=True)  # newest first ...
    found.sort(
        key=lambda item: -float(item["resemblance"])
    )  # ... among equally similar (stable sort)
    return {
        "url": url,
        "known": True,
        "versions": [{"fetched_at": f or None, "id": format_id(d)} for f, d in versions],
        "cluster": format_id(root),
        "found": found[:limit],
    }
