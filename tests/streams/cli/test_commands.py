"""End to end through the real command line, on the shipped sample corpus and RocksDB."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "samples" / "pages.jsonl"


def neardup(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "neardup.streams", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("cli") / "state"
    events = directory.parent / "events.jsonl"
    result = neardup("run", "--state", str(directory), "--events", str(events), str(SAMPLE))
    assert result.returncode == 0, result.stderr
    assert "3 dead letters" in result.stderr and "148 new documents" in result.stderr
    assert result.stdout == ""  # quiet in a pipe: no progress bar
    return directory


def _clusters(state: Path, *extra: str) -> list[dict[str, object]]:
    result = neardup("clusters", "--state", str(state), *extra)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_run_finds_the_families_it_must(state: Path) -> None:
    clusters = _clusters(state)
    by_url = {url: c["cluster"] for c in clusters for url in c["members"]}  # type: ignore[attr-defined]
    for family in range(14):
        slug = f"article-{family}"
        # same text in another template, an exact copy, a case/punctuation variant, a 3% revision
        must_join = [
            f"https://news.example/{slug}",
            f"https://mirror.example/{slug}",
            f"https://copies.example/{slug}",
            f"https://news.example/{slug}?print=1",
            f"https://news.example/{slug}?amp=1",
            f"https://blog.example/{slug}-revised",
        ]
        assert len({by_url.get(url) for url in must_join}) == 1, slug
        assert by_url.get(must_join[0]) is not None
    assert not any(url.startswith("https://misc.example/") for url in by_url)  # unrelated pages
    assert len({c["cluster"] for c in clusters}) == len(clusters)
    sizes = [c["size"] for c in clusters]
    assert sizes == sorted(sizes, reverse=True)
    everything = _clusters(state, "--all")
    assert sum(c["size"] for c in everything) == 148  # type: ignore[misc]


def test_dead_letters_and_events_were_written(state: Path) -> None:
    letters = [json.loads(line) for line in (state / "dead-letters.jsonl").read_text().splitlines()]
    assert [(d["reason"], d["position"]) for d in letters] == [
        ("not_json", "line 149"),
        ("missing_field", "line 150"),
        ("binary_content", "line 151"),
    ]
    events = [json.loads(line) for line in (state.parent / "events.jsonl").read_text().splitlines()]
    assert {e["type"] for e in events} <= {"duplicate", "cluster_merged"}
    assert all(e["schema"] == 1 and len(e["id"]) == 16 for e in events)
    assert {e["method"] for e in events if e["type"] == "duplicate"} >= {
        "exact",
        "canonical",
        "near",
    }


def test_run_can_write_the_clusters_it_leaves(state: Path, tmp_path: Path) -> None:
    target = tmp_path / "again"
    written = tmp_path / "clusters.jsonl"
    written.write_text("stale\n")
    result = neardup(
        "run", "--state", str(target), "--quiet", "--clusters", str(written), str(SAMPLE)
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in written.read_text().splitlines()]
    assert lines == _clusters(target) and len(lines) >= 14


def test_a_prepare_thread_finds_what_the_prepare_process_found(state: Path, tmp_path: Path) -> None:
    # the fixture ran with the default, a prepare process
    target, events, letters = tmp_path / "thread", tmp_path / "events.jsonl", tmp_path / "dl"
    result = neardup(
        "run", "--state", str(target), "--prepare", "thread", "--events", str(events),
        "--dead-letters", str(letters), str(SAMPLE),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert events.read_text() == (state.parent / "events.jsonl").read_text()
    assert letters.read_text() == (state / "dead-letters.jsonl").read_text()
    assert _clusters(target, "--all") == _clusters(state, "--all")


def test_second_run_on_the_same_input_adds_nothing(state: Path, tmp_path: Path) -> None:
    before = _clusters(state)
    result = neardup(
        "run", "--state", str(state), "--events", str(tmp_path / "again.jsonl"), str(SAMPLE)
    )
    assert result.returncode == 0 and "0 new documents, 148 already known" in result.stderr
    assert (tmp_path / "again.jsonl").read_text() == ""
    assert _clusters(state) == before


def test_query_any_document_without_changing_the_state(state: Path) -> None:
    first = json.loads(SAMPLE.read_text().splitlines()[0])
    edited = first["content"].replace("<p>", "<p>Breaking: ", 1)
    result = neardup("query", "--state", str(state), "--limit", "3", "-", stdin=edited)
    assert result.returncode == 0, result.stderr
    matches = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(matches) == 3
    assert matches[0]["url"] in (first["url"], "https://copies.example/article-0")
    assert matches[0]["resemblance"] > 0.9
    assert [m["resemblance"] for m in matches] == sorted(
        (m["resemblance"] for m in matches), reverse=True
    )
    stats = json.loads(neardup("stats", "--state", str(state)).stdout)
    assert stats["documents"] == 148  # the query added nothing


def test_lost_and_found_names_where_the_content_lives(state: Path) -> None:
    result = neardup("query", "--state", str(state), "https://news.example/article-3")
    found = json.loads(result.stdout)
    assert found["known"] and len(found["versions"]) == 1
    urls = [f["url"] for f in found["found"]]
    assert (
        "https://copies.example/article-3" in urls and "https://news.example/article-3" not in urls
    )
    unknown = json.loads(neardup("query", "--state", str(state), "https://never.example/").stdout)
    assert unknown == {"url": "https://never.example/", "known": False, "versions": [], "found": []}


def test_stats_and_incompatible_settings_error(state: Path) -> None:
    stats = json.loads(neardup("stats", "--state", str(state)).stdout)
    assert stats["clusters"] == len(_clusters(state))
    assert stats["largest_clusters"][0]["size"] == _clusters(state)[0]["size"]
    assert stats["disk_bytes"] > 0
    refused = neardup("run", "--state", str(state), "--shingle-size", "8", str(SAMPLE))
    assert refused.returncode == 2
    assert "shingle_size: stored 5, requested 8" in refused.stderr


def test_missing_state_is_a_clear_error(tmp_path: Path) -> None:
    result = neardup("clusters", "--state", str(tmp_path / "nothing"))
    assert result.returncode == 2 and "there is no state" in result.stderr


def test_run_logs_statistics_per_stretch_and_at_the_end(tmp_path: Path) -> None:
    stats = tmp_path / "stats.jsonl"
    result = neardup(
        "run", "--state", str(tmp_path / "state"), "--quiet", "--batch-size", "16",
        "--stats", str(stats), "--stats-every", "50", str(SAMPLE),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in stats.read_text().splitlines()]
    *stretches, final = lines
    # a line at the end of the batch that passes each multiple of 50, then the final one
    assert [line["records"] for line in stretches] == [64, 112, 151]  # 151 passes 150
    assert [line["final"] for line in lines] == [False, False, False, True]
    assert final["records"] == 151 and final["documents"] == 148 and final["dead_letters"] == 3
    assert sum(line["window_records"] for line in lines) == final["records"]
    for line in lines:
        assert line["rss_mb"] > 10 and line["peak_rss_mb"] >= line["rss_mb"]
        assert line["state_bytes"] > 0 and line["seconds"] >= line["window_seconds"] >= 0
    assert [line["seconds"] for line in lines] == sorted(line["seconds"] for line in lines)
    # the sample's near copies were estimated; the state keeps the same totals as the run
    assert final["candidates"] >= final["pairs_estimated"] > 0
    totals = json.loads(neardup("stats", "--state", str(tmp_path / "state")).stdout)
    assert (totals["candidates"], totals["pairs_estimated"]) == (
        final["candidates"],
        final["pairs_estimated"],
    )
    refused = neardup("run", "--state", str(tmp_path / "other"), "--stats-every", "0", str(SAMPLE))
    assert refused.returncode == 2 and "--stats-every 0 must be at least 1" in refused.stderr


def test_history_and_fold_commands(state: Path, tmp_path: Path) -> None:
    clusters = _clusters(state)
    members = clusters[0]["members"]
    history = subprocess.run(
        [sys.executable, "-m", "neardup.streams", "history", "--state", str(state), members[0]],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(history.stdout)["known"] is True
    ranked = tmp_path / "ranked.txt"
    inline = json.dumps({"url": "https://inline.example/", "content": "a page of its own words"})
    ranked.write_text("\n".join([members[0], "https://unknown.example/", *members[1:], inline]))
    folded = subprocess.run(
        [sys.executable, "-m", "neardup.streams", "fold", "--state", str(state), str(ranked)],
        capture_output=True,
        text=True,
        check=True,
    )
    groups = [json.loads(line) for line in folded.stdout.splitlines()]
    assert [g["head"]["url"] for g in groups[:2]] == [members[0], "https://unknown.example/"]
    assert {f["url"] for f in groups[0]["folded"]} == set(members[1:])
    assert groups[-1]["head"]["url"] == "https://inline.example/"
    too_many = subprocess.run(
        [
            sys.executable,
            "-m",
            "neardup.streams",
            "fold",
            "--state",
            str(state),
            "--max-items",
            "2",
            str(ranked),
        ],
        capture_output=True,
        text=True,
    )
    assert too_many.returncode == 2 and "over --max-items 2" in too_many.stderr
