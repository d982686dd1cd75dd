"""A run's helpers end with it, however it ends; SIGTERM and SIGINT end it cleanly."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from neardup.state import State

from tests.support.processes import HAS_PROC, descendants, gone

pytestmark = [
    pytest.mark.skipif(not HAS_PROC, reason="reads the process tree from Linux's /proc"),
    pytest.mark.slow,
]


def _pages(first: int, last: int) -> bytes:
    return b"".join(
        json.dumps({"url": f"https://p.example/{n}", "content": f"page {n} " * 40}).encode() + b"\n"
        for n in range(first, last)
    )


_PAGES = _pages(0, 300)


def _helpers(pid: int, seconds: float = 30.0) -> list[int]:
    """The run's helpers (its prepare process and multiprocessing's resource tracker), once
    the prepare process has started."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = descendants(pid)
        if len(found) >= 2:
            return found
        time.sleep(0.1)
    raise AssertionError(f"the run {pid} started no prepare process within {seconds} s")


@contextlib.contextmanager
def _fed_run(state: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``producer | neardup run -`` with the producer (this test) still writing."""
    run = subprocess.Popen(
        [sys.executable, "-m", "neardup.streams", "run", "--state", str(state), "-"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert run.stdin is not None and run.stderr is not None
    try:
        run.stdin.write(_PAGES)  # a batch and more
        run.stdin.flush()
        yield run
    finally:
        if run.poll() is None:
            run.kill()
        run.wait()
        with contextlib.suppress(BrokenPipeError):
            run.stdin.close()
        run.stderr.close()


def _stdin_is_released(run: subprocess.Popen[bytes]) -> bool:
    """Whether nothing reads the run's standard input any more: a producer writing to it
    then fails rather than blocking for ever."""
    assert run.stdin is not None
    try:
        for _ in range(64):  # more than a pipe's buffer
            run.stdin.write(b" " * 65536)
            run.stdin.flush()
    except BrokenPipeError:
        return True
    return False


@pytest.mark.parametrize(
    ("signum", "status"),
    [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGKILL, -signal.SIGKILL)],
)
def test_a_run_s_helpers_end_with_it_whatever_ends_it(
    tmp_path: Path, signum: int, status: int
) -> None:
    with _fed_run(tmp_path / "state") as run:
        helpers = _helpers(run.pid)
        time.sleep(1.5)  # the first batch is prepared
        run.send_signal(signum)
        assert run.wait(timeout=30) == status
        assert run.stderr is not None
        errors = run.stderr.read().decode()
        left = [pid for pid in helpers if not gone(pid, seconds=10)]
        assert left == [], f"helpers {left} outlived the run"
        assert _stdin_is_released(run)
    with State.open(tmp_path / "state") as state:
        stored = state.view().counters.get("documents")
    if signum == signal.SIGKILL:
        assert stored in (0, 256)  # whole batches
        return
    assert "Traceback" not in errors
    assert f"stopped by {signal.Signals(signum).name}" in errors
    assert "300 new documents" in errors and stored == 300  # all it had read


def test_a_stopped_run_stores_what_it_read_and_a_rerun_goes_on_from_there(tmp_path: Path) -> None:
    with _fed_run(tmp_path / "state") as run:
        _helpers(run.pid)
        time.sleep(1.5)
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=30) == 143
    again = subprocess.run(
        [sys.executable, "-m", "neardup.streams", "run", "--state", str(tmp_path / "state"), "-"],
        input=_PAGES + _pages(300, 400),
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert b"100 new documents, 300 already known" in again.stderr
