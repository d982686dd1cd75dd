"""A followed state: caught up in the background, reopened once its writer has flushed and
gone quiet."""

from __future__ import annotations

import time
from pathlib import Path

from neardup.state import State
from neardup.streams.service import FollowedState


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
