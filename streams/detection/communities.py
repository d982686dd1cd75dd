"""Clusters that do not chain: a connected set of verified matches, cut into communities
when it is loose.

Similarity is not transitive: one item weakly like many (a chain's head office, a listing
with a generic name) connects clusters of unrelated items. A component is loose when it is
larger than ``SPLIT_ABOVE`` or when one item holds together parts of ``MIN_PART`` items or
more (an articulation point of the graph); a loose component is cut by Leiden's algorithm
with the Constant Potts Model (leidenalg over igraph, maintained C implementations), which
keeps together items denser in matches than ``RESOLUTION``. The parts are a function of the
component's items and edges alone (nodes in id order, a fixed seed), so the final clusters
are the same in any arrival order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import igraph
import leidenalg

__all__ = ["MIN_PART", "RESOLUTION", "SPLIT_ABOVE", "components", "parts"]

#: a component of more items is cut into communities whatever its shape
SPLIT_ABOVE = 20
#: a part one item holds together counts from this many items (a chain of pairs does not)
MIN_PART = 3
#: CPM's resolution: a community keeps a density of matches (weighted by score) above it
RESOLUTION = 0.5

Edges = Mapping[int, Mapping[int, float]]


def components(nodes: Sequence[int], edges: Edges) -> list[list[int]]:
    """The connected components of ``nodes`` under ``edges`` (neighbours outside ``nodes``
    are left out), each in id order, ordered by their first id."""
    known = set(nodes)
    seen: set[int] = set()
    found = []
    for start in sorted(known):
        if start in seen:
            continue
        seen.add(start)
        part, waiting = [start], [start]
        while waiting:
            for other in edges.get(waiting.pop(), {}):
                if other in known and other not in seen:
                    seen.add(other)
                    part.append(other)
                    waiting.append(other)
        found.append(sorted(part))
    return found


def parts(component: Sequence[int], edges: Edges) -> list[list[int]]:
    """A connected component as it stays clustered: whole, or cut into communities when
    loose; each part in id order, the parts ordered by their first id."""
    nodes = sorted(component)
    if len(nodes) < 2 * MIN_PART:
        return [nodes]
    graph = _graph(nodes, edges)
    if len(nodes) <= SPLIT_ABOVE and not _held_by_one(graph):
        return [nodes]
    partition = leidenalg.find_partition(
        graph,
        leidenalg.CPMVertexPartition,
        weights="weight",
        resolution_parameter=RESOLUTION,
        n_iterations=-1,
        seed=0,
    )
    return sorted(sorted(nodes[vertex] for vertex in community) for community in partition)


def _graph(nodes: list[int], edges: Edges) -> igraph.Graph:
    index = {node: at for at, node in enumerate(nodes)}
    pairs, weights = [], []
    for node in nodes:
        for other, score in sorted(edges.get(node, {}).items()):
            if other in index and node < other:
                pairs.append((index[node], index[other]))
                weights.append(score)
    graph = igraph.Graph(n=len(nodes), edges=pairs)
    graph.es["weight"] = weights
    return graph


def _held_by_one(graph: igraph.Graph) -> bool:
    """Whether one vertex holds together two parts of ``MIN_PART`` vertices or more."""
    for vertex in graph.articulation_points():
        rest = graph.copy()
        rest.delete_vertices(vertex)
        if sum(1 for size in rest.connected_components().sizes() if size >= MIN_PART) >= 2:
            return True
    return False
