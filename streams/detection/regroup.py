"""Clusters cut again from the graph of matches: what a merge made loose, or a removal left
unconnected, regrouped, with a ``cluster_split`` event for each cluster that came apart.

The clusters are the connected parts of the stored matches (``state.edges``), each cut into
communities when loose (``communities.py``); so they are a function of the matches alone,
whatever their order. Item mode regroups after every item; pages, with
``Settings.split_clusters``, after every batch.

Identical pages (exact copies, or the same token stream or shingle set) are one node of the
graph: a page and its copies are kept together, and a hundred copies of one page are not a
loose cluster of a hundred. A copy's edge to the page it copies has the score ``IDENTICAL``.
"""

from __future__ import annotations

from collections.abc import Callable

from neardup.state import StateView

from .communities import components, cut_component
from .events import ClusterSplit, DocRef, Event

__all__ = ["IDENTICAL", "Regrouper"]

#: the score of the edge between a page and its copy (out of the range of resemblances)
IDENTICAL = 2.0


class Regrouper:
    """Regroups the clusters of a view, adding to a batch's events and cluster gauges.

    ``ref``: the document a split event names by its id. ``sources_of``: in item mode, an
    item's source where it lists each entity once, else none (``communities.cut_component``,
    with ``every_source`` for ``link = "across"``). ``cut``: cut loose components into
    communities (item mode, ``Settings.split_clusters``); else a cluster is a whole
    connected part (pages whose clusters only a departing version changes). ``keep_roots``:
    a part holding a cluster's first document keeps its id (``Clusters.regroup``)."""

    def __init__(
        self,
        view: StateView,
        events: list[Event],
        gauges: dict[str, int],
        ref: Callable[[int], DocRef],
        sources_of: Callable[[int], set[str | None]] | None = None,
        every_source: bool = True,
        cut: bool = True,
        keep_roots: bool = False,
    ) -> None:
        self.view = view
        self.events = events
        self.gauges = gauges
        self.ref = ref
        self.sources_of = sources_of
        self.every_source = every_source
        self.cut = cut
        self.keep_roots = keep_roots

    def regroup(
        self, touched: set[int], gone: int | None = None
    ) -> tuple[dict[int, list[int]], dict[int, int]]:
        """Cluster again what ``touched`` documents are connected to (and the members of
        their clusters, which a removal may leave unconnected); ``gone``: a document being
        removed, left alone. A cluster that comes out as it was is not written again.
        Returns the clusters now (by root) and each member's cluster before (its old root)."""
        clusters = self.view.clusters
        old_roots = {node: clusters.find(node) for node in touched}
        nodes, edges = self._connected(touched, old_roots, gone)
        for node in nodes:
            old_roots.setdefault(node, clusters.find(node))
        if gone is not None:
            old_roots.setdefault(gone, clusters.find(gone))
        copies, graph = _contracted(nodes, edges)
        given = self.sources_of

        def sources_of(node: int) -> set[str | None]:
            assert given is not None
            return {source for member in copies[node] for source in given(member)}

        groups = [
            sorted(member for node in group for member in copies[node])
            for component in components(sorted(copies), graph)
            for group in (
                cut_component(
                    component,
                    graph,
                    lambda node: len(copies[node]),
                    sources_of if given is not None else None,
                    self.every_source,
                )
                if self.cut
                else [component]
            )
        ]
        if gone is not None:
            groups.append([gone])  # alone, then forgotten: no stored cluster keeps it
        before = _clusters_of(old_roots)
        # groups and old clusters hold the same documents: those that differ pair off
        was = {frozenset(members): root for root, members in before.items()}
        kept = {was[key]: group for group in groups if (key := frozenset(group)) in was}
        changed = [group for group in groups if frozenset(group) not in was]
        roots = clusters.regroup(set(before) - set(kept), changed, self.gauges, self.keep_roots)
        after = dict(zip(roots, changed, strict=True))
        self._splits({r: m for r, m in before.items() if r not in kept}, after, gone)
        return {**kept, **after}, old_roots

    def _connected(
        self, touched: set[int], old_roots: dict[int, int], gone: int | None
    ) -> tuple[set[int], dict[int, dict[int, float]]]:
        """The documents connected to ``touched`` or sharing a cluster with one, and the
        edges of each."""
        clusters, stored = self.view.clusters, self.view.edges
        nodes = set(touched)
        for root in set(old_roots.values()):
            nodes.update(clusters.members_of(root)[0])
        edges: dict[int, dict[int, float]] = {}
        waiting = [node for node in nodes if node != gone]
        while waiting:
            node = waiting.pop()
            if node in edges:
                continue
            edges[node] = stored.neighbours(node)
            for other in edges[node]:
                if other not in edges:
                    nodes.add(other)
                    waiting.append(other)
        nodes.discard(-1 if gone is None else gone)
        return nodes, edges

    def _splits(
        self, before: dict[int, list[int]], after: dict[int, list[int]], gone: int | None
    ) -> None:
        """A ``cluster_split`` for each old cluster of two or more whose members now lie in
        more than one cluster, or under another id (its first document removed)."""
        new_root = {member: root for root, group in after.items() for member in group}
        for old, members in sorted(before.items()):
            kept = [member for member in members if member != gone]
            if len(members) < 2 or not kept:
                continue
            now: dict[int, list[int]] = {}
            for member in kept:
                now.setdefault(new_root[member], []).append(member)
            if set(now) != {old}:
                self.events.append(
                    ClusterSplit(
                        old,
                        tuple(
                            (root, tuple(self.ref(m) for m in sorted(part)), len(after[root]))
                            for root, part in sorted(now.items())
                        ),
                    )
                )


def _clusters_of(roots: dict[int, int]) -> dict[int, list[int]]:
    clusters: dict[int, list[int]] = {}
    for member, root in roots.items():
        clusters.setdefault(root, []).append(member)
    return clusters


def _contracted(
    nodes: set[int], edges: dict[int, dict[int, float]]
) -> tuple[dict[int, list[int]], dict[int, dict[int, float]]]:
    """The graph with identical documents as one node (the lowest id of them): each node's
    documents, and the edges between nodes (the highest score of those joining them)."""
    parent = {node: node for node in nodes}

    def find(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for node, near in edges.items():
        for other, score in near.items():
            if score == IDENTICAL and other in parent:
                low, high = sorted((find(node), find(other)))
                parent[high] = low
    copies: dict[int, list[int]] = {}
    for node in nodes:
        copies.setdefault(find(node), []).append(node)
    graph: dict[int, dict[int, float]] = {}
    for node, near in edges.items():
        if node not in parent:
            continue
        here = find(node)
        for other, score in near.items():
            if score == IDENTICAL or other not in parent or find(other) == here:
                continue
            there = find(other)
            best = max(score, graph.get(here, {}).get(there, 0.0))
            graph.setdefault(here, {})[there] = graph.setdefault(there, {})[here] = best
    return copies, graph
