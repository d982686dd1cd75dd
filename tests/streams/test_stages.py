"""The Kafka topology's stages, run in process with one state per partition and messages
delivered in random interleavings (per-partition order kept, as Kafka does): the clusters
must be those of the embedded run, and replaying messages must change nothing."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from neardup.core import Page, Preparer, Settings
from neardup.state import State
from neardup.streams import Detector
from neardup.streams.event_clusters import clusters_from_events
from neardup.streams.stages import (
    CandidateMessage,
    DocMessage,
    EdgeMessage,
    KeysMessage,
    VerifyMessage,
    stage_candidates,
    stage_docs,
    stage_keys,
    stage_union,
    stage_verify,
)

from tests.helpers import family_pages, partition


class Topology:
    """Queues per (topic, partition); states per stage partition, as the workers hold them."""

    def __init__(
        self, partitions: int, settings: Settings, rng: random.Random, replay: float
    ) -> None:
        self.n = partitions
        self.settings = settings
        self.rng = rng
        self.replay = replay
        self.doc_states = [State.open(None, settings) for _ in range(partitions)]
        self.key_states = [State.open(None, settings) for _ in range(partitions)]
        self.union_state = State.open(None, settings)
        self.queues: dict[tuple[str, int], deque[bytes]] = {}
        self.events: list[dict[str, object]] = []

    def send(self, topic: str, partition: int, value: bytes) -> None:
        self.queues.setdefault((topic, partition), deque()).append(value)

    def publish(self, pages: list[Page]) -> None:
        for doc in Preparer(self.settings).prepare(pages):
            self.send("docs", doc.doc_id % self.n, DocMessage.of(doc).encode())

    def _handle(self, topic: str, partition: int, value: bytes) -> None:
        handlers: dict[str, Callable[[int, bytes], None]] = {
            "docs": self._docs,
            "keys": self._keys,
            "candidates": self._candidates,
            "verify": self._verify,
            "edges": self._union,
        }
        handlers[topic](partition, value)

    def _docs(self, partition: int, value: bytes) -> None:
        view = self.doc_states[partition].view()
        for target, message in stage_docs(view, DocMessage.decode(value), self.n).items():
            self.send("keys", target, message.encode())
        view.commit()

    def _keys(self, partition: int, value: bytes) -> None:
        view = self.key_states[partition].view()
        found = stage_keys(view, KeysMessage.decode(value))
        if found is not None:
            self.send("candidates", found.ref.doc_id % self.n, found.encode())
        view.commit()

    def _candidates(self, partition: int, value: bytes) -> None:
        view = self.doc_states[partition].view()
        for message in stage_candidates(view, CandidateMessage.decode(value)):
            self.send("verify", message.candidate % self.n, message.encode())

    def _verify(self, partition: int, value: bytes) -> None:
        edge = stage_verify(
            self.doc_states[partition].view(), VerifyMessage.decode(value), self.settings
        )
        if edge is not None:
            self.send("edges", 0, edge.encode())

    def _union(self, partition: int, value: bytes) -> None:
        view = self.union_state.view()
        self.events.extend(stage_union(view, EdgeMessage.decode(value)))
        view.commit()

    def drain(self) -> None:
        while any(self.queues.values()):
            topic, partition = self.rng.choice(sorted(k for k, q in self.queues.items() if q))
            queue = self.queues[(topic, partition)]
            value = queue[0]
            self._handle(topic, partition, value)
            if self.rng.random() >= self.replay:  # else: delivered again (at-least-once)
                queue.popleft()


@settings(suppress_health_check=[HealthCheck.large_base_example], max_examples=30)
@given(st.integers(0, 10_000), st.sampled_from([1, 2, 4]), st.randoms(use_true_random=False))
def test_topology_gives_the_embedded_clusters_in_any_interleaving(
    seed: int, partitions: int, rng: random.Random
) -> None:
    pages = family_pages(seed, families=5, size=4)
    detection = Settings()
    with State.open(None, detection) as embedded:
        Detector(embedded).process(pages)
        expected = partition(embedded)
    topology = Topology(partitions, detection, rng, replay=0.2)
    topology.publish(pages)
    topology.drain()
    assert partition(topology.union_state) == expected
    followed = clusters_from_events(topology.events)  # what a downstream consumer sees
    assert {frozenset(line["members"]) for line in followed} == expected
    ids = [e["id"] for e in topology.events]
    distinct = {e["id"]: e for e in topology.events}
    assert all(
        topology.events[i] == distinct[ids[i]] for i in range(len(ids))
    )  # repeats are identical


def test_in_order_input_gives_the_embedded_cluster_ids() -> None:
    pages = family_pages(7, families=6, size=5)
    pages.sort(key=lambda p: p.fetched_at)
    with State.open(None) as embedded:
        Detector(embedded).process(pages)
        expected = set(_id_lines(embedded))
    topology = Topology(3, Settings(), random.Random(1), replay=0.0)
    topology.publish(pages)
    topology.drain()
    assert set(_id_lines(topology.union_state)) == expected


def _id_lines(state: State) -> list[tuple[str, frozenset[str]]]:
    from neardup.streams.reports import cluster_lines

    return [(str(c["cluster"]), frozenset(c["members"])) for c in cluster_lines(state)]  # type: ignore[arg-type]
