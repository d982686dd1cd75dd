"""Clusters rebuilt from events alone, as a downstream consumer follows them (pure).

Every member of a cluster of two or more is named by some event: a ``duplicate`` names the
joining document and its match, a ``cluster_merged`` the first documents of both clusters,
a ``cluster_split`` every member of each part, an ``item_removed`` or ``page_removed`` the
item or page that went, a ``page_changed`` the cluster a url's new version is in
(docs/events.md). Repeated events (same ``id``) change nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ORDERED_EVENTS", "clusters_from_events"]

#: the event types of clusters that also split and lose members: item mode's (whose
#: duplicates have method "item"), and pages' where clusters are cut or pages leave; such
#: events are sent in one order, and followed in it
ORDERED_EVENTS = frozenset(
    {"cluster_split", "item_updated", "item_removed", "page_changed", "page_removed"}
)


class _Joined:
    """Pages: clusters only join, so union-find over what the events name, in any order (a
    consumer of several partitions reads them in no one order)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.fetched_at: dict[str, str] = {}
        self.named: list[tuple[str, str]] = []  # (cluster node, its id), in event order

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
        self.fetched_at.setdefault(str(doc["url"]), doc.get("fetched_at") or "")
        self.union(f"url:{doc['url']}", cluster)

    def apply(self, event: Mapping[str, Any]) -> None:
        if event["type"] not in ("duplicate", "cluster_merged"):
            return  # contained: clusters do not change
        cluster = f"cluster:{event['cluster']}"
        if event["type"] == "duplicate":
            self.member(event["doc"], cluster)
            self.member(event["match"], cluster)
        else:
            self.union(f"cluster:{event['retired']}", cluster)
            for root in ("cluster_root", "retired_root", "doc"):
                if root in event:
                    self.member(event[root], cluster)
        self.named.append((cluster, str(event["cluster"])))

    def clusters(self) -> list[dict[str, Any]]:
        """The id of a cluster is the surviving id of the latest event that named it."""
        latest_id = {self.find(node): cluster_id for node, cluster_id in self.named}
        groups: dict[str, list[str]] = {}
        for node in self.parent:
            if node.startswith("url:"):
                groups.setdefault(self.find(node), []).append(node[4:])
        return _listed(
            [(latest_id.get(root, ""), members) for root, members in groups.items()],
            self.fetched_at,
        )


class _Followed:
    """Items, and pages whose clusters split or lose pages: each member's cluster as the
    events, in their order, say (such events all go to one partition: one order)."""

    def __init__(self) -> None:
        self.cluster_of: dict[str, str] = {}
        self.members: dict[str, set[str]] = {}
        self.fetched_at: dict[str, str] = {}

    def put(self, doc: Mapping[str, Any], cluster: str) -> None:
        url = str(doc["url"])
        self.fetched_at.setdefault(url, doc.get("fetched_at") or "")
        self.drop(url)
        self.cluster_of[url] = cluster
        self.members.setdefault(cluster, set()).add(url)

    def drop(self, url: str) -> None:
        before = self.cluster_of.pop(url, None)
        if before is not None:
            self.members[before].discard(url)

    def merge(self, retired: str, cluster: str) -> None:
        if retired == cluster:
            return
        for url in self.members.pop(retired, set()):
            self.cluster_of[url] = cluster
            self.members.setdefault(cluster, set()).add(url)

    def apply(self, event: Mapping[str, Any]) -> None:
        kind, cluster = event["type"], str(event.get("cluster", ""))
        if kind == "duplicate":
            self.put(event["match"], cluster)
            self.put(event["doc"], cluster)
        elif kind == "cluster_merged":
            self.merge(str(event["retired"]), cluster)
            for doc in ("cluster_root", "retired_root", "doc"):
                if doc in event:
                    self.put(event[doc], cluster)
        elif kind == "cluster_split":
            for part in event["parts"]:
                for member in part["members"]:
                    self.put(member, str(part["cluster"]))
        elif kind in ("item_removed", "page_removed"):
            self.drop(str(event["doc"]["url"]))
        elif kind == "page_changed":  # the url's new version: alone, or where it joined
            self.put(event["doc"], cluster)

    def clusters(self) -> list[dict[str, Any]]:
        return _listed(
            [(cluster, list(members)) for cluster, members in self.members.items()],
            self.fetched_at,
        )


def _listed(
    groups: list[tuple[str, list[str]]], fetched_at: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Clusters of two or more, largest first, members by fetched_at (then url)."""
    ordered = []
    for cluster, members in groups:
        if len(members) > 1:
            members.sort(key=lambda url: (fetched_at[url], url))
            ordered.append((-len(members), cluster, members))
    ordered.sort(key=lambda group: group[:2])
    return [
        {"cluster": cluster, "size": len(members), "members": members}
        for _, cluster, members in ordered
    ]


def clusters_from_events(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``{"cluster", "size", "members"}`` per cluster of two or more, largest first, members
    by fetched_at (as ``neardup clusters`` prints them), from the events: pages' in any
    order, items' in the order they were sent."""
    unique: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    for event in events:
        if event.get("id") not in seen:
            seen.add(str(event.get("id")))
            unique.append(event)
    ordered = any(e["type"] in ORDERED_EVENTS or e.get("method") == "item" for e in unique)
    follower: _Joined | _Followed = _Followed() if ordered else _Joined()
    for event in unique:
        follower.apply(event)
    return follower.clusters()
