"""Shared fixtures. Hypothesis profiles: 'ci' (default, deterministic) and 'dev'."""

from __future__ import annotations

import contextlib
import os
import signal
import time

import pytest
from hypothesis import HealthCheck, settings

from tests.support.processes import left_behind

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=300)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

#: how long processes a test stopped may take to end before they count as left behind
_LEFT_WAIT_SECONDS = 10.0


#: the environment's processes running before the suite (a benchmark, a run in another
#: terminal): not the suite's to judge or stop
_BEFORE: set[int] = set()


def pytest_sessionstart(session: pytest.Session) -> None:
    _BEFORE.update(left_behind())


def _left_by_the_suite() -> dict[int, str]:
    return {pid: line for pid, line in left_behind().items() if pid not in _BEFORE}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The suite leaves no process of its virtual environment behind: what a test started
    and did not stop fails the session (and is stopped here)."""
    deadline = time.monotonic() + _LEFT_WAIT_SECONDS
    while (left := _left_by_the_suite()) and time.monotonic() < deadline:
        time.sleep(0.2)
    if not left:
        return
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    lines = "\n".join(f"  {pid}: {line}" for pid, line in sorted(left.items()))
    session.config.get_terminal_writer().line(
        f"processes left behind by the test suite (now killed):\n{lines}", red=True
    )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
