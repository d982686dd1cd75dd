"""SIGTERM ends an item run within seconds whatever it is doing (fitting, a batch of a
large entity); the batch cut short is dropped, and a second run over the same input ends
with the clusters of a run that was never stopped."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from neardup.state import State

from bench.items import listings
from bench.items.entities import near_equal_records
from tests.helpers import partition

pytestmark = pytest.mark.slow

SCHEMA = Path(__file__).resolve().parents[3] / "bench" / "items" / "schemas" / "listings.toml"


def _command(state: Path, inputs: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "neardup.streams", "run", "--state", str(state),
        "--schema", str(SCHEMA), "--batch-size", "1500", *extra, str(inputs),
    ]  # fmt: skip


def _first_batch_reported(stats: Path, run: subprocess.Popen[bytes]) -> None:
    """Wait until the run reports its first batch done (one line of --stats a batch)."""
    deadline = time.monotonic() + 120
    while not (stats.exists() and stats.read_text().count("\n") >= 1):
        assert run.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)


def _clusters(state: Path) -> set[frozenset[str]]:
    with State.open(state) as opened:
        return partition(opened)


def _stored(state: Path) -> int:
    with State.open(state) as opened:
        return opened.view().counters.get("documents")


def test_sigterm_ends_an_item_run_at_once_and_a_rerun_ends_as_an_unstopped_one(
    tmp_path: Path,
) -> None:
    records = [listing.record for listing in listings.generate(3000, 4)]
    records += near_equal_records(1500, 4)
    random.Random(4).shuffle(records)
    inputs = tmp_path / "items.jsonl"
    inputs.write_text("".join(json.dumps(record) + "\n" for record in records))

    started = time.monotonic()
    subprocess.run(_command(tmp_path / "whole", inputs), check=True, capture_output=True)
    whole = time.monotonic() - started

    for fitting in (True, False):  # while fitting ahead, then after a first batch
        state = tmp_path / f"stopped-{fitting}"
        stats = tmp_path / f"stats-{fitting}.jsonl"
        extra = () if fitting else ("--stats", str(stats), "--stats-every", "1500")
        run = subprocess.Popen(_command(state, inputs, *extra), stderr=subprocess.PIPE)
        if fitting:
            time.sleep(0.2 * whole)
        else:  # the next batches still to do (a fixed delay may land after the last)
            _first_batch_reported(stats, run)
        run.send_signal(signal.SIGTERM)
        asked = time.monotonic()
        assert run.wait(timeout=30) == 143
        assert time.monotonic() - asked < 5.0
        assert run.stderr is not None
        errors = run.stderr.read().decode()
        run.stderr.close()
        assert "Traceback" not in errors and "stopped by SIGTERM" in errors
        assert _stored(state) < len(records)  # stopped before the end
        subprocess.run(_command(state, inputs), check=True, capture_output=True)
        assert _clusters(state) == _clusters(tmp_path / "whole")
