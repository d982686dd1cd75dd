"""Clusters that do not chain: a connected set of verified matches, cut where only a thread
holds it together, and never for its size.

Similarity is not transitive: one record weakly like two others (a chain's head office, the
song beside another on an album) joins entities that have nothing else in common. What marks
such a join is the graph's shape: a single match (a bridge) or a single record (an
articulation point) holding together two parts that each hold two records or more, or more
generally a few matches holding together two parts that each hold more records than those
matches: two papers' groups joined by two citations of one by the other. A part hangs
together when every way of splitting it in two crosses at least as many matches as the
smaller side holds records, or ``HOLD`` matches, whatever its size: an entity of hundreds
of densely matched records (or thinned to ``HOLD`` matches a record, as the detector keeps
one) stays one cluster, a chain of pairs is cut at each link, and a ring of four records
(each matching two) stays whole. Counting the smaller side alone (edge expansion) would cut
a thinned entity wherever its matches happen to run fewer than its records. A bridge is
cut; an articulation point stays with the part it is joined to most strongly (its highest
total score) and the other parts go; then the sparsest split is cut; each part is cut
again in turn.

Finding the sparsest split is NP-hard; the split searched is the spectral one (Cheeger's
sweep: records ordered by the graph's Fiedler vector, each prefix tried). It can miss a
sparse split, which then stays whole, but it never cuts a split that is not sparse: each
candidate's expansion is counted exactly. The vector is exact (LAPACK) on a few hundred
records and found by power iteration on larger parts (a fixed number of passes over their
matches).

With ``link = "across"`` (one record of each source per entity) the clusters are built
instead by joining the matches best first (highest score, then lowest ids) and skipping a
match whose two clusters hold a record of the same source: each record joins its best
match among those its source leaves free. With ``once`` (some sources list each entity
once, others repeat it), a part cut by structure that holds two records of such a source is
joined again the same way, those sources alone counted (``one_of_each``).

Both are functions of the graph alone (nodes and edges in id order), so the final clusters
are the same in any arrival order. The biconnected structure is igraph's (C).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import igraph
import numpy as np

__all__ = ["HOLD", "MIN_SIDE", "across", "components", "cut_component", "one_of_each", "parts"]

#: a bridge or an articulation point is cut when the parts it holds together hold this many
#: records each (a pair hanging on a pair by one match is a chain)
MIN_SIDE = 2

Edges = Mapping[int, Mapping[int, float]]

#: matches that hold a part to the rest of its cluster whatever its size (the detector
#: thins a dense group to this many matches a record: ``items.ENOUGH``)
HOLD = 4
#: parts of more records than this find their Fiedler vector by power iteration
_EXACT_UP_TO = 400
#: power iterations: the sweep counts each split it tries, so fewer only miss cuts
_ITERATIONS = 500


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


def parts(
    component: Sequence[int], edges: Edges, size_of: Callable[[int], int] | None = None
) -> list[list[int]]:
    """A connected component as it stays clustered: whole, or cut at its bridges and
    articulation points between parts of ``MIN_SIDE`` records or more (``size_of``: the
    records a node stands for, copies of one record being one node); each part in id order,
    the parts ordered by their first id."""
    nodes = sorted(component)
    found: list[list[int]] = []
    waiting = [nodes]
    sizes = (lambda node: 1) if size_of is None else size_of
    while waiting:
        group = waiting.pop()
        cut = _cut(group, edges, sizes)
        if cut is None:
            found.append(group)
        else:
            waiting.extend(cut)
    return sorted(found)


def _cut(nodes: list[int], edges: Edges, size_of: Callable[[int], int]) -> list[list[int]] | None:
    """The parts of ``nodes`` after one cut (None: it hangs together): the weakest bridge
    (lowest score, then lowest ids) with ``MIN_SIDE`` records or more on each side, else the
    first articulation point holding together two parts of ``MIN_SIDE`` or more. One cut at
    a time: a pair's own match is a bridge of a chain of pairs too, until the chain's
    weaker links are cut. Which cuts qualify is read off the graph's bridge tree and
    block-cut tree, in time linear in its size."""
    sizes = [size_of(node) for node in nodes]
    if sum(sizes) < 2 * MIN_SIDE or len(nodes) < 2:
        return None
    graph = _graph(nodes, edges)
    bridges = _holding_bridges(graph, sizes)
    if bridges:

        def strength(edge: int) -> tuple[float, int, int]:
            a, b = sorted((nodes[graph.es[edge].source], nodes[graph.es[edge].target]))
            return edges[a][b], a, b

        graph.delete_edges([min(bridges, key=strength)])
        return [sorted(nodes[v] for v in part) for part in graph.connected_components()]
    points = _holding_points(graph, sizes)
    if not points:
        return _sparse_cut(nodes, graph, sizes)
    point = points[0]
    rest = graph.copy()
    rest.delete_vertices([point])
    groups = [[v if v < point else v + 1 for v in part] for part in rest.connected_components()]
    held = [sum(edges[nodes[point]].get(nodes[v], 0.0) for v in group) for group in groups]
    home = max(range(len(groups)), key=lambda at: (held[at], -min(groups[at])))
    groups[home].append(point)
    return [sorted(nodes[v] for v in group) for group in groups]


def _sparse_cut(nodes: list[int], graph: igraph.Graph, sizes: list[int]) -> list[list[int]] | None:
    """The parts of ``nodes`` after cutting the sparsest split the spectral sweep finds,
    if fewer matches cross it than its smaller side holds records (None: no such split)."""
    order = _fiedler_order(graph)
    if order is None:
        return None
    adjacent = graph.get_adjlist()
    total = sum(sizes)
    inside = [False] * len(nodes)
    crossing = held = 0
    best: tuple[float, int] | None = None
    for at, vertex in enumerate(order[:-1]):
        inward = sum(1 for other in adjacent[vertex] if inside[other])
        crossing += len(adjacent[vertex]) - 2 * inward
        inside[vertex] = True
        held += sizes[vertex]
        smaller = min(held, total - held, HOLD)
        if smaller >= MIN_SIDE and crossing < smaller:
            ratio = crossing / smaller
            if best is None or ratio < best[0]:
                best = (ratio, at)
    if best is None:
        return None
    side = set(order[: best[1] + 1])
    graph.delete_edges([e.index for e in graph.es if (e.source in side) != (e.target in side)])
    return [sorted(nodes[v] for v in part) for part in graph.connected_components()]


def _fiedler_order(graph: igraph.Graph) -> list[int] | None:
    """The vertices in the order of the graph's Fiedler vector (of its normalised Laplacian;
    ties by vertex), or None for a graph too small to split."""
    count = graph.vcount()
    if count < 2 * MIN_SIDE:
        return None
    ends = np.array(graph.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    source = np.concatenate([ends[:, 0], ends[:, 1]])
    target = np.concatenate([ends[:, 1], ends[:, 0]])
    degree = np.bincount(source, minlength=count).astype(np.float64)
    scale = 1.0 / np.sqrt(degree)
    if count <= _EXACT_UP_TO:
        adjacency = np.zeros((count, count))
        adjacency[source, target] = 1.0
        _, vectors = np.linalg.eigh(scale[:, None] * adjacency * scale[None, :])
        second = vectors[:, -2]
    else:
        # (I + N) / 2 has the eigenvalues of N moved into [0, 1]; the top one's vector
        # projected out, its next one is found
        top = np.sqrt(degree) / np.linalg.norm(np.sqrt(degree))  # the eigenvector of 1
        second = np.cos(np.arange(count, dtype=np.float64))
        for _ in range(_ITERATIONS):
            second -= top * (top @ second)
            second = 0.5 * (
                second + scale * np.bincount(source, (scale * second)[target], minlength=count)
            )
            second /= np.linalg.norm(second)
    value = second * scale
    return sorted(range(count), key=lambda vertex: (value[vertex], vertex))


def _subtree_sizes(
    count: int, weight: list[int], tree: list[list[int]]
) -> tuple[list[int], list[int], list[int]]:
    """(parent, subtree weight, its tree's total weight) of each node of a forest."""
    parent = [-1] * count
    size = weight[:]
    total = [0] * count
    seen = [False] * count
    for start in range(count):
        if seen[start]:
            continue
        order, waiting = [], [start]
        seen[start] = True
        while waiting:
            node = waiting.pop()
            order.append(node)
            for other in tree[node]:
                if not seen[other]:
                    seen[other] = True
                    parent[other] = node
                    waiting.append(other)
        for node in reversed(order):
            if parent[node] >= 0:
                size[parent[node]] += size[node]
        for node in order:
            total[node] = size[start]
    return parent, size, total


def _holding_bridges(graph: igraph.Graph, sizes: list[int]) -> list[int]:
    """The bridges with ``MIN_SIDE`` vertices or more on each side."""
    bridges = graph.bridges()
    if not bridges:
        return []
    rest = graph.copy()
    rest.delete_edges(bridges)
    piece = rest.connected_components().membership
    count = max(piece) + 1
    weight = [0] * count
    for vertex, at in enumerate(piece):
        weight[at] += sizes[vertex]
    tree: list[list[int]] = [[] for _ in range(count)]
    ends = [(piece[graph.es[e].source], piece[graph.es[e].target]) for e in bridges]
    for a, b in ends:
        tree[a].append(b)
        tree[b].append(a)
    parent, size, total = _subtree_sizes(count, weight, tree)
    holding = []
    for edge, (a, b) in zip(bridges, ends, strict=True):
        child = a if parent[a] == b else b
        if min(size[child], total[child] - size[child]) >= MIN_SIDE:
            holding.append(edge)
    return holding


def _holding_points(graph: igraph.Graph, sizes: list[int]) -> list[int]:
    """The articulation points whose removal leaves two parts of ``MIN_SIDE`` or more."""
    blocks, points = graph.biconnected_components(return_articulation_points=True)
    if not points:
        return []
    at_point = {vertex: len(blocks) + at for at, vertex in enumerate(points)}
    count = len(blocks) + len(points)
    weight = [0] * count
    tree: list[list[int]] = [[] for _ in range(count)]
    for block, members in enumerate(blocks):
        for vertex in members:
            if vertex in at_point:
                tree[block].append(at_point[vertex])
                tree[at_point[vertex]].append(block)
            else:
                weight[block] += sizes[vertex]
    for vertex, node in at_point.items():
        weight[node] = sizes[vertex]
    parent, size, total = _subtree_sizes(count, weight, tree)
    holding = []
    for vertex, node in at_point.items():
        sides = [size[other] for other in tree[node] if parent[other] == node]
        if parent[node] >= 0:
            sides.append(total[node] - size[node])
        if sum(1 for side in sides if side >= MIN_SIDE) >= 2:
            holding.append(vertex)
    return sorted(holding)


def _graph(nodes: list[int], edges: Edges) -> igraph.Graph:
    index = {node: at for at, node in enumerate(nodes)}
    pairs = [
        (index[node], index[other])
        for node in nodes
        for other in sorted(edges.get(node, {}))
        if other in index and node < other
    ]
    return igraph.Graph(n=len(nodes), edges=pairs)


def across(
    component: Sequence[int], edges: Edges, sources_of: Callable[[int], set[str | None]]
) -> list[list[int]]:
    """A component as clusters holding at most one record of each source: its matches
    joined best first, skipping those that would put two records of one source together
    (``sources_of``: a node's sources; copies of a record are one node)."""
    nodes = sorted(component)
    parent = {node: node for node in nodes}
    sources: dict[int, set[str | None]] = {node: set(sources_of(node)) for node in nodes}

    def find(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    matches = sorted(
        (
            (-score, node, other)
            for node in nodes
            for other, score in edges.get(node, {}).items()
            if node < other and other in parent
        ),
    )
    for _, node, other in matches:
        a, b = find(node), find(other)
        if a == b or sources[a] & sources[b]:
            continue
        low, high = min(a, b), max(a, b)
        parent[high] = low
        sources[low] |= sources.pop(high)
    groups: dict[int, list[int]] = {}
    for node in nodes:
        groups.setdefault(find(node), []).append(node)
    return sorted(groups.values())


def cut_component(
    component: list[int],
    edges: Edges,
    size_of: Callable[[int], int] | None = None,
    sources_of: Callable[[int], set[str | None]] | None = None,
    every_source: bool = False,
) -> list[list[int]]:
    """A connected component as clusters: cut by structure (``parts``), or with
    ``sources_of`` (a record's sources that list each entity once) holding at most one record
    of each, built best first alone (``every_source``: ``link = "across"``) or after the cut
    (``one_of_each``)."""
    if sources_of is None:
        return parts(component, edges, size_of)
    if every_source:
        return across(component, edges, sources_of)
    return [
        group
        for part in parts(component, edges, size_of)
        for group in one_of_each(part, edges, sources_of)
    ]


def one_of_each(
    group: list[int], edges: Edges, sources_of: Callable[[int], set[str | None]]
) -> list[list[int]]:
    """``group`` as clusters holding at most one record of each source ``sources_of`` names
    (those that list each entity once): itself when it holds none twice, else joined again
    best first as ``across`` joins a component."""
    seen: set[str | None] = set()
    for node in group:
        sources = sources_of(node)
        if seen & sources:
            return across(group, edges, sources_of)
        seen |= sources
    return [group]
