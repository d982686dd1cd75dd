"""A Kafka deployment's state for ``neardup serve``: the freshest of its workers' detectors.

Every worker of a deployment keeps its own detector state (``DIR/detector``), and only the
one that holds the prepared log writes to it. Given a directory that holds the workers'
directories (a volume they share, each in a directory of its own), ``DeploymentState``
follows the detector state written last, and moves to another when a worker takes the log
over: every few seconds it looks at when each was last written.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from neardup.state import State

from .sources import FollowedState

__all__ = ["DeploymentState", "detector_states"]

logger = logging.getLogger(__name__)


def detector_states(root: Path) -> list[Path]:
    """The detector states of the worker directories in ``root``."""
    if not root.is_dir():
        return []
    found = [entry / "detector" for entry in sorted(root.iterdir()) if entry.is_dir()]
    return [path for path in found if (path / "CURRENT").exists()]


def _last_written(path: Path) -> float:
    """When the writer last wrote ``path``: its newest log or manifest (a holder writes its
    log with every batch; the others write nothing)."""
    newest = 0.0
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name.endswith(".log") or entry.name.startswith("MANIFEST"):
                    try:
                        newest = max(newest, entry.stat().st_mtime)
                    except FileNotFoundError:  # deleted by a flush since the listing
                        continue
    except FileNotFoundError:
        return 0.0
    return newest


def _freshest(root: Path) -> Path | None:
    candidates = detector_states(root)
    return max(candidates, key=_last_written) if candidates else None


class DeploymentState:
    """The state of the deployment whose workers' directories are in ``root``."""

    def __init__(self, root: str | os.PathLike[str], every: float = 2.0) -> None:
        self._root = Path(root)
        self._every = every
        chosen = _freshest(self._root)
        if chosen is None:
            raise FileNotFoundError(f"no worker's detector state in {root}")
        self._path = chosen
        self._followed = FollowedState(chosen)
        self._swap = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="neardup-deployment", daemon=True)
        self._thread.start()

    @property
    def path(self) -> Path:
        """The detector state followed now."""
        return self._path

    @contextmanager
    def reading(self) -> Iterator[State]:
        with self._swap:
            followed = self._followed
        with followed.reading() as state:
            yield state

    def _watch(self) -> None:
        while not self._stopping.wait(self._every):
            chosen = _freshest(self._root)
            if chosen is None or chosen == self._path:
                continue
            if _last_written(chosen) <= _last_written(self._path):
                continue
            try:
                fresh = FollowedState(chosen)
            except Exception:  # a state being created: the next look tries again
                logger.exception("neardup serve: cannot follow %s", chosen)
                continue
            logger.info("neardup serve: following %s, written last", chosen)
            with self._swap:
                old, self._followed, self._path = self._followed, fresh, chosen
            old.close()  # once no request reads it

    def close(self) -> None:
        self._stopping.set()
        self._thread.join()
        self._followed.close()
