"""`neardup run --expire-after`: a window behind the latest fetched_at a state has applied
removes the urls it leaves behind, as deletions, run after run; a replay of the same runs
removes the same; and the option is refused where it cannot work."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from neardup.core import NeardupError, Page, Preparer, Settings
from neardup.state import State
from neardup.streams import Detector
from neardup.streams.cli import main, parser
from neardup.streams.detection.retention import (
    Retention,
    Sweeper,
    begin_sweep_if_due,
    latest_fetch,
)
from neardup.streams.kafka.config import WorkerConfig
from neardup.streams.running import embedded

from tests.helpers import edit_text, partition, random_text, settled_tables

LATEST = Settings(versions="latest")


def _at_day(day: int) -> str:
    return f"2026-03-{day:02d}T10:00:00.000000Z"


def _write(path: Path, records: list[dict[str, object]]) -> str:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return str(path)


def _crawls(tmp_path: Path) -> tuple[str, str, dict[str, list[str]]]:
    """Three families of three near-copies fetched on day 1, and a second crawl that fetches
    family c again on day 15 and family a on day 20 (family b is not fetched again), with
    a page without a fetched_at; the urls of each family."""
    rng = np.random.default_rng(7)
    urls = {name: [f"https://{name}.example/{n}" for n in range(3)] for name in "abc"}
    bases = {name: random_text(rng, 120) for name in "abc"}

    def fetch(name: str, day: int) -> list[dict[str, object]]:
        return [
            {"url": url, "content": edit_text(rng, bases[name], 0.02), "fetched_at": _at_day(day)}
            for url in urls[name]
        ]

    untimed = {"url": "https://untimed.example/", "content": " ".join(random_text(rng, 90))}
    first = _write(tmp_path / "1.jsonl", [*fetch("a", 1), *fetch("b", 1), *fetch("c", 1), untimed])
    second = _write(tmp_path / "2.jsonl", [*fetch("c", 15), *fetch("a", 20)])
    return first, second, urls


def _run(state: Path, events: Path, inputs: str, *extra: str) -> None:
    argv = ["run", "--state", str(state), "--prepare", "thread", "--quiet"]
    assert main([*argv, "--events", str(events), "--expire-after", "10d", *extra, inputs]) == 0


def _tables(state: State) -> dict[str, list[tuple[bytes, bytes]]]:
    """What two states given the same records hold alike: not the timeline, whose samples
    are taken at the clock's times, a run's first batch always."""
    tables = {name: rows for name, rows in settled_tables(state).items() if name != "timeline"}
    tables["meta"] = [(key, v) for key, v in tables["meta"] if not key.startswith(b"timeline:")]
    return tables


def test_a_window_removes_the_urls_it_leaves_behind_and_a_replay_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, urls = _crawls(tmp_path)
    state, events = tmp_path / "state", tmp_path / "events.jsonl"
    _run(state, events, first, "--versions", "latest")
    assert "page_removed" not in events.read_text()  # day 1 is the latest time yet
    _run(state, events, second)
    # day 20 less 10 days: family b (day 1) is gone, c (day 15) and the untimed page stay
    removed = [json.loads(line) for line in events.read_text().splitlines()]
    removed = [event for event in removed if event["type"] == "page_removed"]
    assert sorted(str(event["doc"]["url"]) for event in removed) == urls["b"]  # type: ignore[index]
    capsys.readouterr()
    assert main(["clusters", "--state", str(state), "--all"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    clusters = {frozenset(line["members"]) for line in listed if line["size"] > 1}
    assert clusters == {frozenset(urls["a"]), frozenset(urls["c"])}
    assert {url for line in listed for url in line["members"]} == {
        *urls["a"],
        *urls["c"],
        "https://untimed.example/",
    }
    assert main(["stats", "--state", str(state)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["documents"] == 7
    assert stats["versions"]["pages_removed"] == 3
    # the same runs again on a new state: the same events, the same clusters
    again, replayed = tmp_path / "again", tmp_path / "replayed.jsonl"
    _run(again, replayed, first, "--versions", "latest")
    _run(again, replayed, second)
    assert replayed.read_text() == events.read_text()
    with State.open(state) as done, State.open(again) as redone:
        assert _tables(redone) == _tables(done)
    # and the second crawl once more: nothing newer, nothing more to remove
    _run(state, events, second)
    assert events.read_text().count("page_removed") == 3


def test_a_sweep_cut_short_is_finished_by_the_next_run(tmp_path: Path) -> None:
    """A run killed between two chunks of a sweep leaves it due: the next run finishes it
    before its own input, and the state is the one of a sweep never cut short."""
    rng = np.random.default_rng(3)
    base = random_text(rng, 100)
    old = [
        {"url": f"https://o.example/{n}", "content": edit_text(rng, base, 0.02)}
        | {"fetched_at": _at_day(1)}
        for n in range(5)
    ]
    new = {"url": "https://n.example/", "content": " ".join(random_text(rng, 80))}
    inputs = {
        "old": _write(tmp_path / "old.jsonl", old),
        "new": _write(tmp_path / "new.jsonl", [new | {"fetched_at": _at_day(20)}]),
        "later": _write(tmp_path / "later.jsonl", [new | {"fetched_at": _at_day(21)}]),
    }
    window = Retention(timedelta(days=10), chunk=2)

    def run(state: State, name: str) -> list[str]:
        events = tmp_path / f"{name}.events"
        with open(events, "w", encoding="utf-8") as out:
            embedded.run(state, [inputs[name]], out, prepare="thread", retention=window)
        return [json.loads(line)["type"] for line in events.read_text().splitlines()]

    with State.open(None, LATEST) as whole, State.open(None, LATEST) as cut:
        for name in ("old", "new", "later"):
            run(whole, name)
        run(cut, "old")
        # the new page's batch, as a run applies it, and one chunk of its sweep; then killed
        docs = Preparer(LATEST).prepare([Page(new["url"], new["content"], _at_day(20))])
        view, _ = Detector(cut).stage(docs)
        view.event_time.see(latest_fetch(docs))
        assert begin_sweep_if_due(view, window) is not None
        view.commit()
        sweeper = Sweeper(cut, window.chunk)
        chunk = sweeper.stage()
        assert chunk is not None and chunk.expired == 2
        sweeper.commit(chunk)
        assert cut.view().event_time.due() is not None
        assert run(cut, "later").count("page_removed") == 3  # the sweep's rest, first
        assert _tables(cut) == _tables(whole)
        assert partition(cut) == set()  # the old family left; the new page is alone


def test_the_window_is_refused_where_it_cannot_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = _write(tmp_path / "1.jsonl", [{"url": "https://a/", "content": "a b c d e f"}])
    state = tmp_path / "state"
    archive = ["--versions", "all"]
    assert (
        main(["run", "--state", str(state), "--quiet", *archive, "--expire-after", "30d", pages])
        == 2
    )
    assert "versions = latest" in capsys.readouterr().err
    assert not state.exists()  # refused before a state was made with versions = all
    for bad, why in (("30 days", "is not a duration"), ("0h", "is out of range")):
        with pytest.raises(SystemExit):
            parser().parse_args(["run", "--state", "s", "--expire-after", bad, pages])
        assert f"--expire-after: {bad!r} {why}" in capsys.readouterr().err
    with pytest.raises(NeardupError, match="detection shards"):
        WorkerConfig("h:1", tmp_path, settings=LATEST, shards=2, expire_after=timedelta(days=1))
    with pytest.raises(NeardupError, match="versions = latest"):
        WorkerConfig(
            "h:1", tmp_path, settings=Settings(versions="all"), expire_after=timedelta(days=1)
        )
    config = WorkerConfig("h:1", tmp_path, settings=LATEST, expire_after=timedelta(hours=12))
    assert config.retention == Retention(timedelta(hours=12))
