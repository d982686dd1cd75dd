"""The convoy measurement runs on the benchmark corpus and reports every switch interval."""

from __future__ import annotations

import sys

import pytest

from bench.gil_convoy import main


def test_reports_each_switch_interval_and_restores_the_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    default = sys.getswitchinterval()
    assert main(["--pages", "5"]) == 0
    assert sys.getswitchinterval() == default
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("5 HTML pages")
    assert [line.split(":")[0] for line in lines[1:]] == [
        f"switch interval {interval * 1e3:6.2f} ms" for interval in (default, 1e-3, 1e-4, 2e-5)
    ]
