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


#: in the environment of every process the suite starts (inherited, kept by an orphan):
#: what the suite must stop, and not a process started beside it (a benchmark, a run in
#: another terminal)
_MARKER = "NEARDUP_TEST_SESSION"


def pytest_sessionstart(session: pytest.Session) -> None:
    os.environ[_MARKER] = f"{os.getpid()}-{time.time_ns()}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With pytest-xdist (``-n 2``, see pyproject.toml): the tests against the broker first.
    xdist's load scheduling sends each worker a run of consecutive tests to start with, so
    one worker takes them one after another (with a broker of its own) while the other
    takes the CPU-bound tests: they spend most of their time waiting (on rebalances, session
    timeouts, their worker processes), and the waits overlap the other tests' work. (Not
    ``--dist loadgroup``: it drops all but one of tests that share a node id, as the
    schemathesis cases of test_openapi_fuzz.py do, and pytest 9.2 ignores its groups.)"""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    kafka = [item for item in items if item.get_closest_marker("kafka") is not None]
    items[:] = kafka + [item for item in items if item.get_closest_marker("kafka") is None]


def _left_by_the_suite() -> dict[int, str]:
    return left_behind(marker=f"{_MARKER}={os.environ[_MARKER]}")


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
