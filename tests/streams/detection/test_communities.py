"""Clusters cut by their structure, never by their size: chains and hubs are cut, dense
entities of any size stay whole, and the cut is a function of the graph alone."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from neardup.streams.detection.communities import across, components, one_of_each, parts

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


def _clique(members: range, score: float = 0.95) -> list[tuple[int, int, float]]:
    return [(a, b, score) for a in members for b in members if a < b]


def _joins(count: int, apart: int = 6) -> list[tuple[int, int, float]]:
    return [(n, n + apart, 0.9) for n in range(count)]


def test_groups_held_together_by_fewer_matches_than_records_are_cut() -> None:
    # two papers' groups, each matched densely, joined by two citations of one by the other
    graph = _graph([*_clique(range(5)), *_clique(range(5, 10)), (0, 5, 0.9), (1, 6, 0.9)])
    assert parts(range(10), graph) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    # three matches between two groups of six: fewer than the four that hold any part
    three = _graph([*_clique(range(6)), *_clique(range(6, 12)), *_joins(3)])
    assert parts(range(12), three) == [list(range(6)), list(range(6, 12))]


def test_as_many_matches_as_records_or_four_hold_a_part() -> None:
    triangles = _graph([*_clique(range(3)), *_clique(range(3, 6)), *_joins(3, 3)])
    assert parts(range(6), triangles) == [list(range(6))]
    # four matches hold a part of any size (the detector thins a record to four)
    four = _graph([*_clique(range(6)), *_clique(range(6, 12)), *_joins(4)])
    assert parts(range(12), four) == [list(range(12))]


def test_a_ring_of_four_records_stays_whole() -> None:
    ring = _graph([(0, 1, 0.9), (1, 2, 0.9), (2, 3, 0.9), (3, 0, 0.9)])
    assert parts(range(4), ring) == [[0, 1, 2, 3]]


def test_a_group_loosely_held_to_a_large_thinned_entity_is_cut() -> None:
    rng = random.Random(3)
    edges = [(n, m, 0.95) for n in range(1, 1500) for m in rng.sample(range(n), min(n, 4))]
    beside = [*_clique(range(2000, 2006)), (2000, 10, 0.6), (2001, 700, 0.6)]
    graph = _graph(edges + beside)
    assert parts(sorted(graph), graph) == [list(range(1500)), list(range(2000, 2006))]


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


def test_a_source_listed_once_has_one_record_a_cluster_others_repeat() -> None:
    # a catalogue (c) lists each paper once, a search engine (s) repeats them: 1 and 2 are two
    # papers its listings 3, 4, 5 join; 3 and 4 are one paper's repeats
    source = {1: "c", 2: "c", 3: "s", 4: "s", 5: "s"}
    graph = _graph([(1, 3, 0.95), (1, 4, 0.9), (3, 4, 0.99), (2, 5, 0.95), (4, 5, 0.6)])

    def once(node: int) -> set[str | None]:
        return {source[node]} if source[node] == "c" else set()

    found = [g for part in parts([1, 2, 3, 4, 5], graph) for g in one_of_each(part, graph, once)]
    assert sorted(found) == [[1, 3, 4], [2, 5]]
    assert one_of_each([1, 3, 4], graph, once) == [[1, 3, 4]]  # one of each already
