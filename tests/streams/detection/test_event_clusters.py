"""A consumer can follow the clusters from events alone: the clusters rebuilt from the events
equal the state's own clusters, ids included (pure, no broker)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from neardup.core import Page, Settings
from neardup.state import State
from neardup.streams import Detector, run
from neardup.streams.detection.event_clusters import clusters_from_events
from neardup.streams.running.reports import cluster_lines

from tests.helpers import SAMPLE, family_pages


def _events_and_clusters(
    pages: list[Page], settings: Settings | None = None
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    with State.open(None, settings) as state:
        detector = Detector(state)
        events = [
            event.to_json()
            for start in range(0, len(pages), 5)
            for event in detector.process(pages[start : start + 5]).events
        ]
        return events, list(cluster_lines(state))


def test_sample_corpus_clusters_from_events_equal_the_state(tmp_path: Path) -> None:
    events_file = tmp_path / "events.jsonl"
    with State.open(tmp_path / "state") as state, open(events_file, "w") as events:
        run(state, [str(SAMPLE)], events=events)
        expected = list(cluster_lines(state))
    rebuilt = clusters_from_events(
        json.loads(line) for line in events_file.read_text().splitlines()
    )
    assert len(expected) > 10
    assert rebuilt == expected


@given(st.integers(0, 10_000), st.randoms(use_true_random=False))
def test_any_arrival_order_clusters_from_events_equal_the_state(seed: int, rng: object) -> None:
    pages = family_pages(seed, families=5, size=4)
    rng.shuffle(pages)  # type: ignore[attr-defined]
    events, expected = _events_and_clusters(pages, Settings(threshold=0.3))
    assert clusters_from_events(events) == expected
    assert clusters_from_events(events + events[::-1]) == expected  # repeats change nothing
