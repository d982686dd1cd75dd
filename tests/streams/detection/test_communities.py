"""Clusters cut by their structure, never by their size: chains and hubs are cut, dense
entities of any size stay whole, and the cut is a function of the graph alone."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from neardup.streams.detection.communities import across, components, parts

Graph = dict[int, dict[int, float]]


def _graph(edges: list[tuple[int, int, float]]) -> Graph:
    graph: Graph = {}
    for a, b, score in edges:
        graph.setdefault(a, {})[b] = score
        graph.setdefault(b, {})[a] = score
    return graph


def test_a_chain_of_pairs_is_cut_at_its_weaker_links() -> None:
    graph = _graph([(0, 1, 0.99), (1, 2, 0.6), (2, 3, 0.99), (3, 4, 0.6), (4, 5, 0.99)])
    assert parts(range(6), graph) == [[0, 1], [2, 3], [4, 5]]


def test_a_hub_holding_groups_together_is_cut_off_to_its_strongest() -> None:
    triangle = [(0, 1, 1.0), (1, 2, 1.0), (0, 2, 1.0)]
    other = [(3, 4, 1.0), (4, 5, 1.0), (3, 5, 1.0)]
    graph = _graph([*triangle, *other, (9, 0, 0.7), (9, 1, 0.7), (9, 3, 0.6)])
    assert parts([0, 1, 2, 3, 4, 5, 9], graph) == [[0, 1, 2, 9], [3, 4, 5]]


def test_a_hub_of_single_records_or_a_leaf_is_no_cut() -> None:
    star = _graph([(0, leaf, 0.8) for leaf in range(1, 6)])
    assert parts(range(6), star) == [list(range(6))]
    # copies of one record count as what they stand for: three copies are a part
    assert parts(range(6), star, lambda node: 3 if node in (1, 2) else 1) == [
        [0, 3, 4, 5],
        [1],
        [2],
    ]


def test_a_large_dense_entity_stays_whole() -> None:
    members = range(300)
    clique = _graph([(a, b, 0.9) for a in members for b in members if a < b])
    assert parts(members, clique) == [list(members)]


def test_a_large_thinned_entity_stays_whole_and_a_chain_beside_it_is_cut() -> None:
    rng = random.Random(7)
    # each record joins the entity by four matches, as the detector keeps a dense group
    edges = [(n, m, 0.95) for n in range(1, 2000) for m in rng.sample(range(n), min(n, 4))]
    chained = [(5000, 5001, 0.99), (5001, 5002, 0.55), (5002, 5003, 0.99), (5003, 0, 0.55)]
    graph = _graph(edges + chained)
    nodes = sorted(graph)
    found = parts(nodes, graph)
    assert list(range(2000)) in found
    assert [5000, 5001] in found and [5002, 5003] in found


_EDGES = st.lists(
    st.tuples(st.integers(0, 25), st.integers(0, 25), st.sampled_from([0.55, 0.7, 0.9, 1.0])),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(_EDGES, st.randoms(use_true_random=False))
def test_the_cut_is_a_function_of_the_graph_alone(
    edges: list[tuple[int, int, float]], shuffle: random.Random
) -> None:
    edges = [(a, b, s) for a, b, s in edges if a != b]
    graph = _graph(edges)
    again = list(edges)
    shuffle.shuffle(again)
    reordered = _graph([(b, a, s) for a, b, s in again])
    for a in graph:
        for b, score in graph[a].items():
            reordered[a][b] = score  # the same scores whatever the order they came in
    first = [p for c in components(sorted(graph), graph) for p in parts(c, graph)]
    second = [p for c in components(sorted(reordered), reordered) for p in parts(c, reordered)]
    assert sorted(first) == sorted(second)
    assert sorted(x for p in first for x in p) == sorted(graph)


def test_across_sources_a_cluster_holds_one_record_of_each_joining_its_best() -> None:
    source = {1: "a", 2: "a", 3: "b", 4: "c"}
    # 3 is like both of source a's records, better like 2; 4 is like 1
    graph = _graph([(1, 3, 0.8), (2, 3, 0.95), (1, 4, 0.9), (2, 4, 0.6)])
    found = across([1, 2, 3, 4], graph, lambda node: {source[node]})
    assert found == [[1, 4], [2, 3]]
    for group in found:
        assert len({source[m] for m in group}) == len(group)
