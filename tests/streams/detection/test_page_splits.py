"""Pages with ``split_clusters``: a hub page like three unrelated clusters is cut off, the
final clusters do not depend on the order, copies of one page stay together, and a state
keeps the setting it was made with."""

from __future__ import annotations

import io
import json
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from neardup.core import IncompatibleStateError, Page, Settings
from neardup.state import State
from neardup.streams.detection.event_clusters import clusters_from_events
from neardup.streams.running.embedded import run

from tests.helpers import at_second, hub_pages, partition

#: the hub of ``hub_pages`` resembles each family's pages at about 0.19
SETTINGS = Settings(threshold=0.17, split_clusters=True)


def _run(
    pages: list[Page], settings: Settings = SETTINGS
) -> tuple[set[frozenset[str]], list[dict[str, Any]]]:
    """The pages through ``neardup run``'s path, three to a batch: the clusters, the events."""
    events = io.StringIO()
    with tempfile.TemporaryDirectory() as scratch, State.open(None, settings) as state:
        path = Path(scratch) / "pages.jsonl"
        path.write_text(
            "".join(
                json.dumps({"url": p.url, "content": p.content, "fetched_at": p.fetched_at}) + "\n"
                for p in pages
            )
        )
        run(state, [str(path)], events=events, batch_size=3)
        return partition(state), [json.loads(line) for line in events.getvalue().splitlines()]


def _without(clusters: set[frozenset[str]], url: str) -> set[frozenset[str]]:
    return {group - {url} for group in clusters if len(group - {url}) > 1}


def test_a_hub_page_joining_three_clusters_is_cut_off_and_says_so() -> None:
    pages, hub = hub_pages()
    firsts = [pages[0], pages[4], pages[8]]
    rest = [page for page in pages if page not in firsts]
    found, events = _run([*firsts, hub, *rest])
    alone, _ = _run(pages)
    assert alone == {
        frozenset(p.url for p in pages if p.url.startswith(f"https://{x}.")) for x in "abc"
    }
    unsplit, _ = _run([*firsts, hub, *rest], Settings(threshold=0.17))
    assert len(unsplit) == 1, "without splitting, the hub chains the three clusters"
    assert _without(found, hub.url) == alone
    splits = [event for event in events if event["type"] == "cluster_split"]
    assert splits and all(len(split["parts"]) >= 2 for split in splits)
    # a consumer of the events alone ends with the same clusters
    assert {frozenset(c["members"]) for c in clusters_from_events(events)} == found


def test_the_final_clusters_are_the_same_in_any_order() -> None:
    pages, hub = hub_pages()
    results = set()
    for seed in range(3):
        order = [*pages, hub]
        random.Random(seed).shuffle(order)
        found, _ = _run(order)
        results.add(frozenset(found))
    assert len(results) == 1


def test_copies_of_one_page_stay_together_however_many() -> None:
    pages, _ = hub_pages()
    copies = [Page(f"https://copy.example/{n}", pages[0].content, at_second(40)) for n in range(30)]
    found, events = _run([*pages, *copies])
    assert frozenset(p.url for p in pages[:4]) | {c.url for c in copies} in found
    assert not [event for event in events if event["type"] == "cluster_split"]


def test_a_state_keeps_the_setting_it_was_made_with(tmp_path: Path) -> None:
    with State.open(tmp_path / "s", Settings()):
        pass
    with pytest.raises(IncompatibleStateError, match="split_clusters"):
        State.open(tmp_path / "s", Settings(split_clusters=True))
