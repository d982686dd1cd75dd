"""Queries that read only the documents they are about: a URL's cluster, a cluster's members
(paged), lost and found, a URL's history, search-result folding, the largest clusters.

Each answer walks the cluster or the versions it names (``Clusters.members_of``, the URL
history, the size index); none reads every cluster or every document of the state. The
answers are JSON-ready dicts, the same for the CLI and for a service.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from neardup.core import Page, Preparer, Settings, Sketch, estimate
from neardup.state import State, StateView

from ..detection import format_id
from ..detection.verify import stored_sketch
from ..detection.versions import standing

__all__ = [
    "cluster_by_id",
    "cluster_of_url",
    "fold",
    "history",
    "largest_clusters",
    "lost_and_found",
    "parse_id",
    "query_preparer",
    "similar_to_stored",
]


def parse_id(text: str) -> int:
    """A document or cluster id as the events write it (16 hex digits)."""
    if re.fullmatch(r"[0-9a-fA-F]{16}", text) is None:
        raise ValueError(f"{text!r} is not an id: ids are 16 hex digits, as events write them")
    return int(text, 16)


def _doc(view: StateView, doc_id: int) -> dict[str, Any]:
    ref = view.documents.ref(doc_id)
    return {
        "id": format_id(doc_id),
        "url": ref.url if ref else None,
        "fetched_at": (ref.fetched_at or None) if ref else None,
    }


def _sketch(view: StateView, state: State, doc_id: int) -> Sketch | None:
    """The sketch that stands for a stored document (its own, or its exact twin's)."""
    found = _sketch_and_simhash(view, state, doc_id)
    return None if found is None else found[0]


def _sketch_and_simhash(
    view: StateView, state: State, doc_id: int
) -> tuple[Sketch, int | None] | None:
    """``_sketch``, with the SimHash that stands for the document in SimHash mode."""
    owner = view.documents.sketch_owner(doc_id)
    if owner is None:  # a version kept after it departed (versions = latest), or none
        kept = view.kept.get(doc_id)
        if kept is None:
            return None
        owner = doc_id, kept[1]
    return stored_sketch(owner[1], state.settings), owner[1].simhash


def _distance(a: int | None, b: int | None) -> dict[str, int]:
    """The Hamming distance of two SimHashes as an answer's field (SimHash mode), or none."""
    return {} if a is None or b is None else {"distance": (a ^ b).bit_count()}


def _latest(view: StateView, url: str) -> int | None:
    versions = view.urls.versions(url)
    return versions[-1][1] if versions else None


def cluster_of_url(state: State, url: str) -> dict[str, Any]:
    """The cluster of a URL's latest version: its id and size (1 for a single document)."""
    view = state.view()
    doc_id = _latest(view, url)
    if doc_id is None:
        return {"url": url, "known": False}
    root = view.clusters.find(doc_id)
    return {
        "url": url,
        "known": True,
        "doc": _doc(view, doc_id),
        "cluster": format_id(root),
        "size": view.clusters.info(root).size,
    }


def cluster_by_id(
    state: State, cluster_id: int, after: int | None = None, limit: int = 100
) -> dict[str, Any]:
    """A cluster and one page of its members (``after``: the ``next`` of the page before).
    A retired id answers with the cluster it joined (``retired``)."""
    view = state.view()
    if view.documents.ref(cluster_id) is None:
        return {"cluster": format_id(cluster_id), "known": False}
    root = view.clusters.find(cluster_id)
    members, cursor = view.clusters.members_of(root, after, limit)
    answer: dict[str, Any] = {
        "cluster": format_id(root),
        "known": True,
        "size": view.clusters.info(root).size,
        "members": [_doc(view, member) for member in members],
        "next": None if cursor is None else format_id(cursor),
    }
    if root != cluster_id:
        answer["retired"] = format_id(cluster_id)
    return answer


def _ranked_members(
    view: StateView, state: State, doc_id: int, root: int, limit: int, skip_url: str | None
) -> list[dict[str, Any]]:
    """The other members of a cluster with their estimated resemblance and containment to
    ``doc_id``, most similar first, the newest first among equals."""
    mine = _sketch_and_simhash(view, state, doc_id)
    found: list[dict[str, Any]] = []
    members, _ = view.clusters.members_of(root)
    for member in members:
        record = view.documents.ref(member)
        other = _sketch_and_simhash(view, state, member)
        if member == doc_id or mine is None or record is None or other is None:
            continue
        if record.url == skip_url:
            continue
        e = estimate(mine[0], other[0])
        found.append(
            {
                "url": record.url,
                "fetched_at": record.fetched_at or None,
                "id": format_id(member),
                "resemblance": round(e.resemblance, 4),
                "containment": round(e.containment, 4),
                "contains": round(e.containment_reverse, 4),
                **_distance(mine[1], other[1]),
            }
        )
    found.sort(key=lambda item: str(item["fetched_at"] or ""), reverse=True)  # newest first ...
    found.sort(key=lambda item: -float(item["resemblance"]))  # ... among equals (stable sort)
    return found[:limit]


def lost_and_found(state: State, url: str, limit: int) -> dict[str, Any]:
    """Where did a URL's content go? The other URLs of its latest version's cluster, most
    similar to that version first, the newest first among equals."""
    view = state.view()
    versions = view.urls.versions(url)
    if not versions:
        return {"url": url, "known": False, "versions": [], "found": []}
    doc_id = versions[-1][1]
    # a version kept after it departed: the cluster where its closest match is now
    kept = view.kept.get(doc_id)
    near = standing(view, [kept[0]])[kept[0]] if kept and kept[0] else 0
    root = view.clusters.find(near or doc_id)
    return {
        "url": url,
        "known": True,
        "versions": [{"fetched_at": f or None, "id": format_id(d)} for f, d in versions],
        "cluster": format_id(root),
        "found": _ranked_members(view, state, doc_id, root, limit, skip_url=url),
    }


def similar_to_stored(state: State, url: str, limit: int) -> dict[str, Any]:
    """The documents most like a stored URL's latest version: the other members of its
    cluster (its other versions included), most similar first. Every stored document that
    resembles it at the threshold or more is in that cluster; for the documents below the
    threshold, query with the content itself (``neardup query FILE``)."""
    answer = cluster_of_url(state, url)
    if not answer["known"]:
        return {**answer, "matches": []}
    doc_id, root = parse_id(answer["doc"]["id"]), parse_id(answer["cluster"])
    matches = _ranked_members(state.view(), state, doc_id, root, limit, skip_url=None)
    return {**answer, "matches": matches}


def history(state: State, url: str) -> dict[str, Any]:
    """How a page changes (Broder): the versions of a URL, oldest first, each with its cluster
    and its estimated resemblance to the version before (and the containment of each in the
    other)."""
    view = state.view()
    versions = view.urls.versions(url)
    if not versions:
        return {"url": url, "known": False, "versions": []}
    answer: list[dict[str, Any]] = []
    before: tuple[Sketch, int | None] | None = None
    for fetched_at, doc_id in versions:
        stored = _sketch_and_simhash(view, state, doc_id)
        entry: dict[str, Any] = {
            "id": format_id(doc_id),
            "fetched_at": fetched_at or None,
            "cluster": format_id(view.clusters.find(doc_id)),
            "resemblance_to_previous": None,
            "containment_in_previous": None,
            "previous_contained": None,
        }
        if before is not None and stored is not None:
            e = estimate(stored[0], before[0])
            entry["resemblance_to_previous"] = round(e.resemblance, 4)
            entry["containment_in_previous"] = round(e.containment, 4)
            entry["previous_contained"] = round(e.containment_reverse, 4)
            if far := _distance(stored[1], before[1]):
                entry["distance_to_previous"] = far["distance"]
        answer.append(entry)
        before = stored if stored is not None else before
    return {"url": url, "known": True, "versions": answer}


@dataclass(frozen=True, slots=True)
class _Item:
    rank: int
    label: dict[str, Any]
    sketch: Sketch | None
    cluster: int | None


@functools.lru_cache(maxsize=4)
def query_preparer(settings: Settings) -> Preparer:
    """The preparer of the queries of states with ``settings``, made once: making its
    tokenizer's tables costs a good part of preparing a page to ask about. (A
    service answers one query at a time.)"""
    return Preparer(settings)


def fold(state: State, items: Sequence[str | Page], threshold: float) -> list[dict[str, Any]]:
    """Search-result folding: a ranked list of stored URLs or inline pages comes back as
    groups in the order of their heads; each group is headed by its highest-ranked member,
    with the later items that are near-duplicates of the head folded under it (same cluster,
    or estimated resemblance ≥ ``threshold``). Inline pages are prepared, never stored; an
    unknown URL heads a group of its own."""
    view = state.view()
    prepared: list[_Item] = []
    for rank, item in enumerate(items):
        if isinstance(item, Page):
            doc = query_preparer(state.settings).prepare([item])[0]
            label = {"rank": rank, "url": item.url, "inline": True, "known": False}
            prepared.append(_Item(rank, label, doc.sketch, None))
            continue
        doc_id = _latest(view, item)
        if doc_id is None:
            prepared.append(_Item(rank, {"rank": rank, "url": item, "known": False}, None, None))
            continue
        label = {"rank": rank, "url": item, "known": True, "id": format_id(doc_id)}
        root = view.clusters.find(doc_id)
        label["cluster"] = format_id(root)
        prepared.append(_Item(rank, label, _sketch(view, state, doc_id), root))
    groups: list[tuple[_Item, list[dict[str, Any]]]] = []
    for ranked in prepared:
        for head, folded in groups:
            resemblance = _resemblance(head, ranked)
            same_cluster = ranked.cluster is not None and ranked.cluster == head.cluster
            if same_cluster or (resemblance is not None and resemblance >= threshold):
                folded.append({**ranked.label, "resemblance": resemblance})
                break
        else:
            groups.append((ranked, []))
    return [{"head": head.label, "folded": folded} for head, folded in groups]


def _resemblance(a: _Item, b: _Item) -> float | None:
    if a.sketch is None or b.sketch is None:
        return None
    return round(estimate(b.sketch, a.sketch).resemblance, 4)


def largest_clusters(state: State, limit: int) -> list[dict[str, Any]]:
    """The largest clusters (two or more documents), from the size index: the first keys of
    one ordered read, however many clusters the state holds."""
    view = state.view()
    return [
        {"cluster": format_id(root), "size": size, "first": _doc(view, root)}
        for root, size in view.clusters.largest(limit)
    ]
