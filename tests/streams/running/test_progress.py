"""The run's observers: the statistics log's stretches, its refusal of a bad interval, and the
terminal line that stays silent off a terminal."""

from __future__ import annotations

import io
import json

import pytest
from neardup.streams.running.progress import Progress, StatsLog
from neardup.streams.running.run_summary import RunSummary


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_stats_log_writes_one_line_per_multiple_passed_and_a_final_one() -> None:
    out, clock, summary = io.StringIO(), _Clock(), RunSummary()
    log = StatsLog(out, 100, lambda: 1234, clock)
    for records, seconds in ((60, 1.0), (120, 1.0), (250, 2.0), (260, 0.5)):
        summary.records = summary.documents = records
        clock.now += seconds
        log.update(summary)
    log.finish(summary)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    # 120 passes 100; 250 passes 200 (and no line for a multiple skipped within one batch)
    assert [(line["records"], line["final"]) for line in lines] == [
        (120, False),
        (250, False),
        (260, True),
    ]
    assert [line["window_records"] for line in lines] == [120, 130, 10]
    assert [line["window_seconds"] for line in lines] == [2.0, 2.0, 0.5]
    assert [line["window_docs_per_second"] for line in lines] == [60.0, 65.0, 20.0]
    assert [line["seconds"] for line in lines] == [2.0, 4.0, 4.5]
    assert all(line["state_bytes"] == 1234 for line in lines)


def test_stats_log_refuses_an_interval_below_one() -> None:
    with pytest.raises(ValueError, match=r"every=0: write statistics every 1 or more records"):
        StatsLog(io.StringIO(), 0)


def test_progress_is_silent_off_a_terminal_and_one_line_on_one() -> None:
    summary = RunSummary(records=1500)
    summary.dead_letters["bad_json"] += 2
    quiet = io.StringIO()
    Progress(quiet).update(summary)
    assert quiet.getvalue() == ""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown = Terminal()
    progress = Progress(shown)
    progress.update(summary)
    progress.finish(summary)
    assert shown.getvalue().startswith("\r1,500 records ")
    assert "2 dead letters" in shown.getvalue() and shown.getvalue().endswith("\n")
