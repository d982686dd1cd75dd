"""Checkpoints of a RocksDB state: complete or absent, the newest kept, restored whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from neardup.core import Settings, StateError
from neardup.state import TABLES, Checkpoints, State


def _tables(state: State) -> dict[str, list[tuple[bytes, bytes]]]:
    return {table: list(state.store.items(table)) for table in TABLES}


def test_a_restored_checkpoint_is_the_state_as_it_was(tmp_path: Path) -> None:
    checkpoints = Checkpoints(tmp_path / "checkpoints", "shard-0-of-2", keep=2)
    with State.open(tmp_path / "live", Settings(threshold=0.6)) as live:
        for offset in range(1, 5):
            view = live.view()
            view.log_offsets.set("log", offset)
            view.urls.add(f"https://e.example/{offset}", "", offset)
            view.commit()
            checkpoints.write(live, offset)
            if offset == 3:
                at_three = _tables(live)
        assert [path.name for path in sorted(checkpoints.directory.iterdir())] == [
            f"{3:020d}",
            f"{4:020d}",
        ]  # the newest two
        expected = _tables(live)
    assert checkpoints.newest() == (4, checkpoints.directory / f"{4:020d}")
    assert checkpoints.restore(tmp_path / "taken-over") == 4
    with State.open(tmp_path / "taken-over") as restored:
        assert restored.settings.threshold == 0.6
        assert _tables(restored) == expected
        assert restored.view().log_offsets.get("log") == 4
    assert at_three != expected
    with pytest.raises(StateError, match="holds a state already"):
        checkpoints.restore(tmp_path / "taken-over")


def test_no_checkpoint_restores_nothing_and_partial_ones_are_ignored(tmp_path: Path) -> None:
    checkpoints = Checkpoints(tmp_path, "union-of-2")
    assert checkpoints.restore(tmp_path / "state") is None
    (checkpoints.directory / ".partial-x").mkdir(parents=True)  # a writer died midway
    (checkpoints.directory / f"{9:020d}").mkdir()  # no CURRENT: not a complete checkpoint
    assert checkpoints.newest() is None
    assert not (tmp_path / "state").exists()


def test_a_memory_state_cannot_be_checkpointed(tmp_path: Path) -> None:
    with State.open(None) as state, pytest.raises(StateError, match="cannot be checkpointed"):
        Checkpoints(tmp_path, "x").write(state, 1)
    with pytest.raises(ValueError, match="keep=0"):
        Checkpoints(tmp_path, "x", keep=0)
