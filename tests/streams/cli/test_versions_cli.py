"""`neardup run --versions latest` end to end, pages prepared in a child process (the binary
prepared batches carry deletions and unchanged fetches) and in a thread: a second crawl's
changes, deletions and 304s leave the fresh run's clusters, and `stats` and the summary
count them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from neardup.state import State
from neardup.streams.cli import main

from tests.helpers import at_second, edit_text, random_text


def _write(path: Path, records: list[dict[str, object]]) -> str:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return str(path)


@pytest.mark.parametrize("prepare", ["process", "thread"])
def test_a_second_crawl_leaves_the_live_urls_clusters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prepare: str
) -> None:
    rng = np.random.default_rng(5)
    one, two = random_text(rng, 150), random_text(rng, 150)
    texts = [edit_text(rng, one, 0.02) for _ in range(3)] + [edit_text(rng, two, 0.02)]
    urls = [f"https://crawl.example/{index}" for index in range(4)]
    first = [
        {"url": url, "content": text, "fetched_at": at_second(1)}
        for url, text in zip(urls, texts, strict=True)
    ]
    second = [
        {"url": urls[0], "content": edit_text(rng, two, 0.02), "fetched_at": at_second(2)},
        {"url": urls[1], "deleted": True, "fetched_at": at_second(2)},
        {"url": urls[2], "unchanged": True, "fetched_at": at_second(2)},
        {"url": urls[3], "content": "older", "fetched_at": at_second(0)},
        {"url": urls[3]},  # no content, no deletion: a dead letter
    ]
    state = str(tmp_path / "state")
    run = ["run", "--state", state, "--prepare", prepare, "--quiet"]
    assert main([*run, "--versions", "latest", _write(tmp_path / "1.jsonl", first)]) == 0
    summary = tmp_path / "summary.json"
    assert main([*run, "--stats", str(summary), _write(tmp_path / "2.jsonl", second)]) == 0
    counted = json.loads(summary.read_text().splitlines()[-1])
    assert counted["records"] == 5 and counted["dead_letters"] == 1
    assert (counted["pages_changed"], counted["pages_removed"]) == (1, 1)
    capsys.readouterr()
    assert main(["clusters", "--state", state]) == 0
    clusters = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [sorted(c["members"]) for c in clusters] == [sorted([urls[0], urls[3]])]
    assert main(["stats", "--state", state]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["documents"] == 3
    versions = stats["versions"]
    assert (versions["pages_changed"], versions["pages_removed"]) == (1, 1)
    assert (versions["fetched_unchanged"], versions["stale_versions"]) == (1, 1)
    # lost and found: the deleted url's kept version is like the page left in its cluster
    assert main(["query", "--state", state, urls[1]]) == 0
    found = json.loads(capsys.readouterr().out)["found"]
    assert [page["url"] for page in found] == [urls[2]] and found[0]["resemblance"] >= 0.5
    assert main(["history", "--state", state, urls[0]]) == 0
    changed = json.loads(capsys.readouterr().out)["versions"]
    assert len(changed) == 2 and changed[1]["resemblance_to_previous"] < 0.2
    assert main(["clusters", "--state", state, "--all"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(url for line in listed for url in line["members"]) == sorted(urls[0:1] + urls[2:])
    # retention by event time: the urls last fetched before second 2 go, as deletions
    events = tmp_path / "expired.jsonl"
    expire = ["expire", "--state", state, "--before", at_second(2), "--events", str(events)]
    assert main(expire) == 0
    assert json.loads(capsys.readouterr().out)["expired"] == 1
    removed = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["doc"]["url"] for e in removed if e["type"] == "page_removed"] == [urls[3]]
    assert main(["clusters", "--state", state]) == 0
    assert capsys.readouterr().out == ""
    assert main(["stats", "--state", state]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 2
    assert main(expire) == 0  # again: nothing left to expire
    assert json.loads(capsys.readouterr().out)["expired"] == 0
    # later still: every url, and the departed versions kept from before, go
    assert main(["expire", "--state", state, "--before", "2030-01-01"]) == 0
    assert json.loads(capsys.readouterr().out)["expired"] == 2
    with State.open(Path(state)) as opened:
        assert list(opened.store.items("kept")) == list(opened.store.items("departures")) == []


def test_expire_needs_a_state_that_keeps_the_latest_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = _write(tmp_path / "1.jsonl", [{"url": "https://a/", "content": "a b c d e f"}])
    state = str(tmp_path / "state")
    assert main(["run", "--state", state, "--versions", "all", "--quiet", pages]) == 0
    assert main(["expire", "--state", state, "--before", "2026-01-01"]) != 0
    assert "versions = latest" in capsys.readouterr().err
