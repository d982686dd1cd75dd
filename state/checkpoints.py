"""Checkpoints of a RocksDB state: where a new owner starts instead of replaying its whole log.

A checkpoint is a RocksDB checkpoint (the table files, hard-linked where the file system
allows and copied where it does not, and a manifest): a complete state directory as it was
after one commit, its log offsets included. Checkpoints of one state live in
``ROOT/NAME/<next log offset>``; the root may be shared by the workers of a deployment (a
mounted volume) or filled by copying from another machine. A worker that must open a state
it does not have restores the newest checkpoint there and applies only the log after it.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from neardup.core import StateError

from .state import State

__all__ = ["Checkpoints"]


class Checkpoints:
    """The checkpoints of the state called ``name`` under ``root``, the newest ``keep``
    kept."""

    def __init__(self, root: str | os.PathLike[str], name: str, keep: int = 2) -> None:
        if keep < 1:
            raise ValueError(f"keep={keep}: keep at least the newest checkpoint")
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"{name!r} is not a usable checkpoint name")
        self.directory = Path(root) / name
        self.keep = keep

    def write(self, state: State, offset: int) -> Path:
        """A checkpoint of ``state`` (its next log offset: ``offset``), complete or absent:
        made under a temporary name and renamed; older ones beyond ``keep`` are removed."""
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / f"{offset:020d}"
        if final.exists():
            return final
        partial = self.directory / f".partial-{uuid.uuid4().hex}"
        try:
            state.store.checkpoint(partial)
            partial.rename(final)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        for old in self._complete()[: -self.keep]:
            shutil.rmtree(old[1], ignore_errors=True)
        return final

    def newest(self) -> tuple[int, Path] | None:
        """The newest complete checkpoint: (its next log offset, its directory)."""
        complete = self._complete()
        return complete[-1] if complete else None

    def restore(self, target: str | os.PathLike[str]) -> int | None:
        """Copy the newest checkpoint to ``target``, which must not hold a state; the log
        offset it starts from, or None when there is no checkpoint."""
        target = Path(target)
        if (target / "CURRENT").exists():
            raise StateError(f"{target} holds a state already: a checkpoint would replace it")
        newest = self.newest()
        if newest is None:
            return None
        offset, source = newest
        partial = target.with_name(f".{target.name}.restoring-{uuid.uuid4().hex}")
        try:
            shutil.copytree(source, partial)
            shutil.rmtree(target, ignore_errors=True)
            partial.rename(target)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        return offset

    def _complete(self) -> list[tuple[int, Path]]:
        if not self.directory.is_dir():
            return []
        found = [
            (int(path.name), path)
            for path in self.directory.iterdir()
            if path.name.isdigit() and (path / "CURRENT").exists()
        ]
        return sorted(found)
