"""The continuous-crawl benchmark: edits that keep a page, cycles of the shape asked for,
clusters compared as sets of URL sets, and one small crawl through the real CLI."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench import corpus
from bench.crawl import _MARKUP, CONTINUOUS, TWO_CRAWL, Crawl, compare_clusters, edit, main
from bench.peers._common import canonical_tokens, shingles


def _jaccard(a: str, b: str, content_type: str) -> float:
    x = set(shingles(canonical_tokens(a, content_type), 5))
    y = set(shingles(canonical_tokens(b, content_type), 5))
    return len(x & y) / len(x | y)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_an_edit_keeps_the_markup_and_most_of_the_page() -> None:
    page = next(p for p in corpus.iter_pages(50, seed=2) if "html" in p.content_type)
    rng = np.random.default_rng(1)
    edited = edit(page.content, True, 0.03, rng)
    assert edited != page.content
    assert _MARKUP.findall(edited) == _MARKUP.findall(page.content)  # tags, scripts, styles
    assert 0.5 < _jaccard(page.content, edited, page.content_type) < 1.0
    assert edit(page.content, True, 0.0, rng) == page.content
    plain = edit("one two three four five six seven eight", False, 1.0, rng)
    assert plain != "one two three four five six seven eight"


def test_a_cycle_changes_deletes_and_adds_the_shares_asked_for(tmp_path: Path) -> None:
    crawl = Crawl(1000, seed=3, shape=CONTINUOUS)
    try:
        first = crawl.first(tmp_path / "1.jsonl")
        second = crawl.next(tmp_path / "2.jsonl", 2)
    finally:
        crawl.close()
    assert (first.records, first.live_urls) == (1000, 1000)
    actions = second.actions
    assert actions["deleted"] == 20 and actions["new"] == second.new == 10
    assert (actions["edited"], actions["copied"], actions["replaced"]) == (150, 50, 0)
    assert actions["unchanged"] == 780 and actions["not_fetched"] == 0
    assert second.records == 1010 and second.live_urls == 990 == len(crawl.live)
    before, after = _lines(tmp_path / "1.jsonl"), _lines(tmp_path / "2.jsonl")
    deleted = [r for r in after if r.get("deleted")]
    assert len(deleted) == 20 and all(set(r) == {"url", "deleted", "fetched_at"} for r in deleted)
    assert len({r["url"] for r in after}) == len(after)  # one fetch of a URL a cycle
    # every fetch of cycle 2 is later than every fetch of cycle 1, in fetch order
    stamps = [datetime.fromisoformat(r["fetched_at"]) for r in after]
    assert stamps == sorted(stamps) and stamps[0] > datetime.fromisoformat(before[-1]["fetched_at"])
    old = {r["url"]: r["content"] for r in before}
    same = [r for r in after if r["url"] in old and r.get("content") == old[r["url"]]]
    assert len(same) == 780
    # the edited pages keep most of their text; the copies are near-duplicates of another page
    changed = [r for r in after if r["url"] in old and "content" in r and r not in same]
    close = [_jaccard(old[r["url"]], r["content"], r["content_type"]) for r in changed]
    assert len(changed) == 200 and sum(j >= 0.5 for j in close) >= 100


def test_the_two_crawl_trial_leaves_a_third_unfetched(tmp_path: Path) -> None:
    crawl = Crawl(400, seed=4, shape=TWO_CRAWL)
    try:
        crawl.first(tmp_path / "1.jsonl")
        second = crawl.next(tmp_path / "2.jsonl", 2)
        assert crawl.write_latest(tmp_path / "latest.jsonl") == 380
    finally:
        crawl.close()
    actions = second.actions
    assert (actions["copied"], actions["replaced"], actions["edited"]) == (60, 60, 0)
    assert (actions["unchanged"], actions["deleted"], actions["not_fetched"]) == (120, 20, 140)
    latest = _lines(tmp_path / "latest.jsonl")
    # the unfetched pages' latest records are cycle 1's, the others cycle 2's, in fetch order
    assert len({r["url"] for r in latest}) == 380 and not any(r.get("deleted") for r in latest)
    assert [r["fetched_at"] for r in latest] == sorted(r["fetched_at"] for r in latest)


def test_clusters_are_compared_as_sets_of_url_sets() -> None:
    same = compare_clusters([["a", "b"], ["c", "d", "e"]], [["e", "d", "c"], ["b", "a"]])
    assert same["clusters_equal_fresh"] and same["clusters_not_in_fresh"] == 0
    # a URL held twice (two versions of it) in one cluster is not the fresh run's cluster
    other = compare_clusters([["a", "b", "a"], ["a", "c"]], [["a", "b"]])
    assert not other["clusters_equal_fresh"]
    assert (other["clusters"], other["fresh_clusters"], other["clusters_not_in_fresh"]) == (2, 1, 1)
    assert (other["clusters_of_one_url"], other["urls_in_several_clusters"]) == (0, 1)
    alone = compare_clusters([["a", "a"], ["b", "c"]], [["b", "c"]])
    assert (alone["clusters_of_one_url"], alone["fresh_clusters_not_in_state"]) == (1, 0)


@pytest.mark.slow
def test_a_small_crawl_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "crawl.json"
    assert main(["--urls", "300", "--cycles", "2", "--seed", "2", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == report
    first, second = report["cycles"]
    assert (first["records"], second["records"]) == (300, 303) and second["deleted"] == 6
    assert all(row["pages_per_second"] > 0 and row["peak_rss_mb"] > 10 for row in report["cycles"])
    assert second["state_bytes"] > first["state_bytes"] > 0
    summary = report["summary"]
    assert summary["live_urls"] == 297 == summary["fresh_documents"]
    assert report["fresh_run"]["records"] == 297 and summary["fresh_clusters"] > 0
    # the state follows the live web: the fresh run's clusters, the live urls, no tombstone
    # refused
    assert summary["clusters_equal_fresh"] and summary["documents_equal_live_urls"]
    assert summary["dead_letters"] == {}
    assert second["events"]["page_removed"] == 6
    assert summary["compacted_bytes_after_last_cycle"] > 0
