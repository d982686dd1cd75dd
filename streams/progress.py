"""A one-line progress display on a terminal; silent when stderr is a pipe or a file."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    def __init__(self, stream: TextIO | None = None, interval: float = 0.5) -> None:
        self._stream = stream or sys.stderr
        self._enabled = self._stream.isatty()
        self._interval = interval
        self._started = time.monotonic()
        self._last = 0.0

    def update(self, documents: int, dead_letters: int, force: bool = False) -> None:
        if not self._enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self._interval:
            return
        self._last = now
        rate = documents / max(now - self._started, 1e-9)
        self._stream.write(
            f"\r{documents:,} records  {rate:,.0f} docs/s  {dead_letters:,} dead letters "
        )
        self._stream.flush()

    def close(self) -> None:
        if self._enabled:
            self._stream.write("\n")
            self._stream.flush()
