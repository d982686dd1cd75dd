"""``versions = latest`` on Kafka: one `neardup worker` fed two crawls keyed by url (changed
pages, deletions, unchanged fetches, a stale fetch) sends events from which a consumer
rebuilds a fresh run's clusters over the live urls, with one detector and with detection
shards on two workers, and with a retention window removes the urls the second crawl leaves
behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from neardup.core import Page, Settings
from neardup.state import State
from neardup.streams import Detector
from neardup.streams.cli import main

from tests.helpers import at_second, family_pages, partition
from tests.support.deployment import Deployment

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

LATEST = Settings(versions="latest")


def _crawls() -> tuple[list[dict[str, object]], list[dict[str, object]], dict[str, str]]:
    """Two crawls of 30 urls in six families, and each live url's content after both."""
    pages = family_pages(21, families=6, size=5, words=120)
    first = [{"url": p.url, "content": p.content, "fetched_at": at_second(1)} for p in pages]
    live = {p.url: p.content for p in pages}
    second: list[dict[str, object]] = []
    for index, page in enumerate(pages):
        if index % 5 == 0:  # takes another family's content: leaves its cluster, joins one
            content = pages[(index + 7) % len(pages)].content
            second.append({"url": page.url, "content": content, "fetched_at": at_second(2)})
            live[page.url] = content
        elif index % 5 == 1:
            second.append({"url": page.url, "deleted": True, "fetched_at": at_second(2)})
            del live[page.url]
        elif index % 5 == 2:
            second.append({"url": page.url, "unchanged": True, "fetched_at": at_second(2)})
        elif index % 5 == 3:  # older than the version there: changes nothing
            second.append({"url": page.url, "content": "stale", "fetched_at": at_second(0)})
    return first, second, live


@pytest.mark.parametrize("shards", [None, 2], ids=["one-detector", "two-shards"])
def test_workers_follow_the_live_urls(broker: str, tmp_path: Path, shards: int | None) -> None:
    first, second, live = _crawls()
    with State.open(None, LATEST) as state:
        Detector(state).process([Page(url, content) for url, content in live.items()])
        expected = partition(state)
    assert len(expected) >= 4
    run = Deployment(broker, tmp_path)
    try:
        flags = () if shards is None else ("--shards", str(shards))
        for worker in ["w0"] if shards is None else ["w0", "w1"]:
            run.start_worker(worker, "--versions", "latest", *flags)
        run.publish([json.dumps(record).encode() for record in first])
        run.wait_for_events()
        run.publish([json.dumps(record).encode() for record in second])
        assert run.wait_for(expected) == expected
        kinds = {str(event["type"]) for event in run.read(run.events)}
        assert {"page_changed", "page_removed", "cluster_split"} <= kinds
        assert run.read(run.dead_letters) == []
    finally:
        run.stop()


def test_a_worker_window_removes_the_urls_a_crawl_leaves_behind(
    broker: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--expire-after 10m``: a crawl at 10:30 fetches three fifths of the urls of a crawl
    at 10:00 again; the others, last fetched more than ten minutes before the latest fetch,
    leave as deletions, and the events say so."""
    pages = family_pages(21, families=6, size=5, words=120)
    again = [page for index, page in enumerate(pages) if index % 5 < 3]
    kept = {page.url: page.content for page in again}
    crawls = [
        [
            {"url": p.url, "content": p.content, "fetched_at": f"2026-03-01T10:{m:02d}:00Z"}
            for p in ps
        ]
        for m, ps in ((0, pages), (30, again))
    ]
    with State.open(None, LATEST) as state:
        Detector(state).process([Page(url, content) for url, content in kept.items()])
        expected = partition(state)
    assert len(expected) >= 3
    run = Deployment(broker, tmp_path)
    try:
        run.start_worker("w0", "--versions", "latest", "--expire-after", "10m")
        for crawl in crawls:
            run.publish([json.dumps(record).encode() for record in crawl])
            run.wait_for_events()
        assert run.wait_for(expected) == expected
        events = run.read(run.events)
        removed = {e["doc"]["url"] for e in events if e["type"] == "page_removed"}  # type: ignore[index]
        assert removed >= {page.url for page in pages} - set(kept)
        assert run.read(run.dead_letters) == []
    finally:
        run.stop()
    capsys.readouterr()
    assert main(["stats", "--state", str(tmp_path / "w0")]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == len(kept)
