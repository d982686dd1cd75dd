"""bench.items.scale end to end on a few hundred listings (neardup alone), and its stretches."""

from __future__ import annotations

import json
from pathlib import Path

from bench.items.scale import main, stretches


def test_stretches_are_differences_of_the_totals() -> None:
    lines = [
        {"records": 100, "seconds": 1.0, "candidates": 50, "pairs_estimated": 40,
         "rss_mb": 10.0, "state_bytes_uncompacted": 1000},
        {"records": 300, "seconds": 5.0, "candidates": 450, "pairs_estimated": 240,
         "rss_mb": 12.0, "state_bytes_uncompacted": 6000},
    ]  # fmt: skip
    first, second = stretches(lines)
    assert first["items_per_second"] == 100.0 and second["items_per_second"] == 50.0
    assert first["candidates_per_item"] == 0.5 and second["candidates_per_item"] == 2.0
    assert second["pairs_verified_per_item"] == 1.0
    assert second["state_bytes_per_item_uncompacted"] == 20.0


def test_scale_runs_neardup_in_a_child_and_scores_it(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    assert main(["--n", "300", "--seed", "1", "--peer", "none", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    neardup = report["neardup"]
    assert report["records"] == 300 and "splink" not in report
    assert neardup["completed"] and not neardup["timed_out"]
    assert neardup["items"] == 300 and neardup["dead_letters"] == 0
    assert neardup["f1"] > 0.8 and neardup["largest_cluster"] >= 2
    assert neardup["state_bytes_per_item"] > 0 and neardup["peak_rss_mb"] > 0
    assert sum(s["items"] for s in neardup["stretches"]) == 300
