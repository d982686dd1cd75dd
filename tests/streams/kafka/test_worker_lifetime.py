"""A worker's helpers (its prepare process, multiprocessing's resource tracker) end with it,
whatever ends it: SIGKILL, SIGTERM or SIGINT."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.helpers import SAMPLE
from tests.support.deployment import Deployment, until
from tests.support.processes import HAS_PROC, descendants, gone

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.slow,
    pytest.mark.skipif(not HAS_PROC, reason="reads the process tree from Linux's /proc"),
]


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_worker_s_helpers_end_with_it_whatever_ends_it(
    broker: str, tmp_path: Path, signum: int
) -> None:
    run = Deployment(broker, tmp_path)
    try:
        worker = run.start_worker("w1")
        run.publish([line for line in SAMPLE.read_bytes().splitlines() if line.strip()])
        # the prepare process starts with the first batch of pages
        helpers = until(
            "the worker's prepare process",
            lambda: found if len(found := descendants(worker.pid)) >= 2 else None,
        )
        time.sleep(1.0)
        worker.send_signal(signum)
        worker.wait(timeout=60)
        left = [pid for pid in helpers if not gone(pid, seconds=20)]
        assert left == [], f"helpers {left} outlived the worker ({signal.Signals(signum).name})"
    finally:
        run.stop()
