"""Clusters rebuilt from events alone, as a downstream consumer follows them (pure).

Every member of a cluster of two or more is named by some event: a ``duplicate`` names the
joining document and its match, a ``cluster_merged`` the first documents of both clusters
(docs/events.md). Repeated events (same ``id``) change nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["clusters_from_events"]


class _Follower:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.fetched_at: dict[str, str] = {}

    def find(self, node: str) -> str:
        root = node
        while (up := self.parent.get(root, root)) != root:
            root = up
        while node != root:  # compress the path
            self.parent[node], node = root, self.parent[node]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb

    def member(self, doc: Mapping[str, Any], cluster: str) -> None:
        url = f"url:{doc['url']}"
        self.fetched_at.setdefault(url, doc.get("fetched_at") or "")
        self.union(url, cluster)


def clusters_from_events(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``{"cluster", "size", "members"}`` per cluster, largest first, members by fetched_at
    (as ``neardup clusters`` prints them), from ``duplicate`` and ``cluster_merged`` events.

    The id of a cluster is the surviving id of the latest event that named it."""
    follower = _Follower()
    seen: set[str] = set()
    named: list[tuple[str, str]] = []  # (cluster node, its id), in event order
    for event in events:
        if event.get("id") in seen:
            continue
        seen.add(str(event.get("id")))
        if event["type"] not in ("duplicate", "cluster_merged"):
            continue  # contained: clusters do not change
        cluster = f"cluster:{event['cluster']}"
        if event["type"] == "duplicate":
            follower.member(event["doc"], cluster)
            follower.member(event["match"], cluster)
        elif event["type"] == "cluster_merged":
            follower.union(f"cluster:{event['retired']}", cluster)
            for root in ("cluster_root", "retired_root", "doc"):
                if root in event:
                    follower.member(event[root], cluster)
        named.append((cluster, str(event["cluster"])))
    latest_id = {follower.find(node): cluster_id for node, cluster_id in named}
    groups: dict[str, list[str]] = {}
    for node in follower.parent:
        if node.startswith("url:"):
            groups.setdefault(follower.find(node), []).append(node[4:])
    ordered = []
    for root, members in groups.items():
        members.sort(key=lambda url: (follower.fetched_at[f"url:{url}"], url))
        ordered.append((-len(members), latest_id.get(root, ""), members))
    ordered.sort(key=lambda group: group[:2])
    return [
        {"cluster": cluster, "size": len(members), "members": members}
        for _, cluster, members in ordered
    ]
