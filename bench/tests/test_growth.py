"""The growth report: stretches from a run's statistics lines, and one real run end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.growth import growth_report, main


def _line(
    records: int, window: int, seconds: float, window_seconds: float, pairs: int = 0
) -> dict[str, Any]:
    return {
        "records": records,
        "window_records": window,
        "seconds": seconds,
        "window_seconds": window_seconds,
        "candidates": 2 * pairs,
        "pairs_estimated": pairs,
        "rss_mb": 100.0 + records / 100,
        "state_bytes": 1000 * records,
    }


def test_growth_is_time_per_document_over_the_first_stretchs() -> None:
    lines = [
        _line(100, 100, 1.0, 1.0, pairs=50),
        _line(200, 100, 2.5, 1.5, pairs=200),
        _line(200, 0, 2.6, 0.1, pairs=200),
    ]
    report = growth_report(lines, seconds=3.0, peak_rss_mb=150.0, disk_bytes=190_000)
    # the final line adds no documents: no stretch of its own
    assert [s["us_per_doc"] for s in report["stretches"]] == [10_000.0, 15_000.0]
    assert report["last_over_first"] == 1.5
    assert report["whole_over_first"] == 1.3  # 2.6 s / 200 documents = 13 ms each
    # work per document per stretch comes from the totals' differences: 50 then 150 pairs
    assert [s["pairs_estimated_per_doc"] for s in report["stretches"]] == [0.5, 1.5]
    assert [s["candidates_per_doc"] for s in report["stretches"]] == [1.0, 3.0]
    assert report["pairs_whole_over_first"] == 2.0  # 200 pairs / 200 documents over 0.5
    # total time 1.0 s at 100 documents, 2.6 s at 200: 2.6 = 2**k, k = 1.38
    assert report["time_exponent"] == 1.38
    flat = [_line(100, 100, 1.0, 1.0), _line(300, 200, 3.0, 2.0)]
    assert growth_report(flat, 3.0, 1.0, 1)["time_exponent"] == 1.0
    assert growth_report(flat[:1], 1.0, 1.0, 1)["time_exponent"] is None  # one stretch
    assert report["state_bytes_per_doc"] == 950.0 and report["docs_per_second"] == 66.7
    with pytest.raises(ValueError, match="no documents"):
        growth_report([_line(0, 0, 0.1, 0.1)], 1.0, 1.0, 0)


@pytest.mark.slow
def test_growth_run_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "growth.json"
    assert main(["--docs", "600", "--every", "200", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    # stretches end at the first batch (256 pages) past each multiple of 200, and at the end
    assert [s["documents"] for s in report["stretches"]] == [256, 512, 600]
    assert report["documents"] == 600 and report["peak_rss_mb"] > 10
    assert all(s["us_per_doc"] > 0 and s["rss_mb"] > 10 for s in report["stretches"])
    assert report["state_bytes_per_doc"] > 0 and report["last_over_first"] > 0
    # the scale corpus's families meet within 600 pages: some pairs are estimated
    assert sum(s["pairs_estimated_per_doc"] for s in report["stretches"]) > 0
    printed = capsys.readouterr().out
    assert "time per document: last stretch / first" in printed and "total time grows" in printed
    assert report["time_exponent"] > 0
