"""A followed state: caught up in the background, reopened once its writer has flushed and
gone quiet."""

from __future__ import annotations

import time
from pathlib import Path

from neardup.state import State
from neardup.streams.service import FollowedState
from neardup.streams.service.deployment import DeploymentState


def _documents(source: FollowedState) -> int:
    with source.reading() as state:
        return state.view().counters.get("documents")


def _until(source: FollowedState, expected: int, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while (seen := _documents(source)) != expected:
        assert time.monotonic() < deadline, f"the follower shows {seen}, not {expected}"
        time.sleep(0.02)


def test_a_followed_state_shows_the_writes_and_then_what_the_writer_flushed(
    tmp_path: Path,
) -> None:
    writer = State.open(tmp_path / "state")
    try:
        view = writer.view()
        view.counters.add("documents", 3)
        view.commit()
        source = FollowedState(tmp_path / "state", every=0.02, quiet=0.2)
        try:
            view = writer.view()
            view.counters.add("documents", 4)
            view.commit()
            _until(source, 7)  # a catch-up
            view = writer.view()
            view.counters.add("documents", 5)
            view.commit()
            writer.close()  # a flush, then silence: a catch-up alone would never show 12
            _until(source, 12)
        finally:
            source.close()
    finally:
        writer.close()


def _write(path: Path, documents: int) -> None:
    with State.open(path) as writer:
        view = writer.view()
        view.counters.add("documents", documents)
        view.commit()


def test_a_deployment_is_followed_at_the_detector_written_last(tmp_path: Path) -> None:
    """Workers keep their detector states side by side; only the log's holder writes: serve
    follows that one, and moves when another worker takes the log over."""
    _write(tmp_path / "worker-a" / "detector", 5)
    time.sleep(0.05)
    _write(tmp_path / "worker-b" / "detector", 7)
    (tmp_path / "not-a-worker").mkdir()
    deployment = DeploymentState(tmp_path, every=0.05)
    try:
        assert deployment.path == tmp_path / "worker-b" / "detector"
        with deployment.reading() as state:
            assert state.view().counters.get("documents") == 7
        time.sleep(0.05)
        _write(tmp_path / "worker-a" / "detector", 6)  # worker a holds the log again
        deadline = time.monotonic() + 10
        while deployment.path != tmp_path / "worker-a" / "detector":
            assert time.monotonic() < deadline, "never moved to the state written last"
            time.sleep(0.05)
        while True:  # the follower it moved to catches up with the last write
            with deployment.reading() as state:
                if state.view().counters.get("documents") == 11:
                    break
            assert time.monotonic() < deadline, "the state followed is not the last written"
            time.sleep(0.05)
    finally:
        deployment.close()
