"""The benchmark runner end to end on a tiny corpus: every system runs in its own process and
is scored against the brute-force truth; a missing peer is reported, not dropped."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from bench.run import main


@pytest.mark.slow
def test_runner_scores_every_system_against_the_truth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    assert main(["--docs", "300", "--seed", "3", "--repeat", "2", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    results = {r["system"]: r for r in report["results"]}
    assert set(results) == {
        "neardup",
        "neardup-process",
        "neardup-no-containment",
        "datasketch",
        "rensa",
        "gaoya",
        "datasketch-bulk",
        "rensa-bulk",
        "gaoya-bulk",
    }
    assert report["corpus"] == "default"
    dense = report["density"]
    assert dense["pages"] == 300 and 0 < dense["share_in_clusters"] <= 1
    mine = results["neardup"]
    assert mine["docs_per_second"] > 0 and mine["peak_rss_mb"] > 10
    assert 0 < mine["compacted_bytes_per_doc"] <= mine["state_bytes_per_doc"]
    assert 0.9 <= mine["f1"] <= 1.0  # a tiny corpus: the real bounds are in tests/accuracy
    # where pages are prepared changes nothing found; the prepare process's memory counts
    two = results["neardup-process"]
    assert (two["precision"], two["recall"], two["f1"]) == (
        mine["precision"],
        mine["recall"],
        mine["f1"],
    )
    assert two["peak_rss_mb"] > mine["peak_rss_mb"]
    for name in ("datasketch", "rensa", "gaoya"):
        installed = importlib.util.find_spec(name) is not None
        for system in (name, f"{name}-bulk"):
            assert (results[system]["f1"] is not None) == installed
            assert ("not installed" in results[system]["note"]) == (not installed)
            # the peer's own report of its phases is kept
            assert (results[system]["phases"].get("docs") == 300) == installed
        if installed:  # streaming, one page at a time, finds what the bulk variant finds
            assert results[name]["f1"] == results[f"{name}-bulk"]["f1"]
            assert results[name]["phases"]["mode"] == "streaming"
    # two rounds of each: the median time is reported, and the ratio to the fastest peer
    timed = [r for r in results.values() if r["rounds"]]
    assert all(len(r["rounds"]) == 2 for r in timed)
    assert all(min(r["rounds"]) <= r["seconds"] <= max(r["rounds"]) for r in timed)
    ratio = report["neardup_over_fastest_peer"]
    for kind, bulk in (("", False), ("bulk_", True)):
        peers = [
            r
            for r in timed
            if not r["system"].startswith("neardup") and r["system"].endswith("-bulk") == bulk
        ]
        if peers:
            fastest = [min(r["rounds"][i] for r in peers) for i in (0, 1)]
            for system, key in (("neardup", ""), ("neardup-process", "_process")):
                assert report[f"neardup{key}_over_fastest_{kind}peer"]["rounds"] == [
                    round(f / m, 2) for f, m in zip(fastest, results[system]["rounds"], strict=True)
                ]
        else:
            assert report[f"neardup_over_fastest_{kind}peer"] is None
    # the containment index: its cost against the same run without it, and query latency
    without = results["neardup-no-containment"]
    assert (without["precision"], without["recall"]) == (mine["precision"], mine["recall"])
    assert without["state_bytes_per_doc"] < mine["state_bytes_per_doc"]
    cost = report["containment_cost"]
    assert cost["bytes_per_doc_more"] == round(
        mine["state_bytes_per_doc"] - without["state_bytes_per_doc"], 1
    )
    queries = report["containment_queries"]
    assert queries["queries"] > 0 and 0 < queries["p50_ms"] <= queries["p99_ms"]
    assert queries["source_returned"] > 0.8  # each excerpt's page is in the state
    printed = capsys.readouterr().out
    assert "neardup" in printed  # the table
    assert ("fastest streaming peer" in printed) == (ratio is not None)
