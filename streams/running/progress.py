"""How a run shows its progress: a terminal line and a JSON statistics log.

``Progress`` is a one-line display on a terminal; ``StatsLog`` a JSON line of statistics
every N records for dashboards and ``bench.growth``.

Both are ``RunObserver``s: ``embedded.run`` calls ``update`` after every batch and ``finish``
once at the end.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import IO, Any, Protocol, TextIO

from .run_summary import RunSummary

__all__ = ["DEFAULT_STATS_EVERY", "Progress", "RunObserver", "StatsLog"]

#: records between two lines of the statistics log
DEFAULT_STATS_EVERY = 10_000


class RunObserver(Protocol):
    def update(self, summary: RunSummary) -> None: ...

    def finish(self, summary: RunSummary) -> None: ...


class Progress:
    """A one-line display on a terminal; silent when stderr is a pipe or a file."""

    def __init__(self, stream: TextIO | None = None, interval: float = 0.5) -> None:
        self._stream = stream or sys.stderr
        self._enabled = self._stream.isatty()
        self._interval = interval
        self._started = time.monotonic()
        self._last = 0.0

    def update(self, summary: RunSummary) -> None:
        if not self._enabled:
            return
        now = time.monotonic()
        if now - self._last < self._interval:
            return
        self._last = now
        rate = summary.records / max(now - self._started, 1e-9)
        dead = sum(summary.dead_letters.values())
        self._stream.write(
            f"\r{summary.records:,} records  {rate:,.0f} docs/s  {dead:,} dead letters "
        )
        self._stream.flush()

    def finish(self, summary: RunSummary) -> None:
        if self._enabled:
            self._stream.write("\n")
            self._stream.flush()


class StatsLog:
    """A JSON line of statistics each time the run passes a multiple of ``every`` records (at
    the end of that batch), and one when it ends (``"final": true``).

    Each line has the summary's totals, ``seconds`` since the log was made, the stretch since
    the line before (``window_records``, ``window_seconds``, ``window_docs_per_second``), this
    process's resident memory now and at its peak (``rss_mb``, ``peak_rss_mb``; a prepare
    process is not counted), and what ``state_bytes`` says the state takes on disk now. Time
    and memory per stretch of one run show how they grow with the state, free of the drift
    between runs on a shared machine.
    """

    def __init__(
        self,
        out: IO[str],
        every: int,
        state_bytes: Callable[[], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"every={every!r}: write statistics every 1 or more records")
        self._out = out
        self._every = every
        self._state_bytes = state_bytes
        self._clock = clock
        self._started = self._last_time = clock()
        self._last_records = 0
        self._next = every

    def update(self, summary: RunSummary) -> None:
        if summary.records >= self._next:
            self._write(summary, final=False)
            self._next = (summary.records // self._every + 1) * self._every

    def finish(self, summary: RunSummary) -> None:
        self._write(summary, final=True)

    def _write(self, summary: RunSummary, final: bool) -> None:
        now = self._clock()
        records = summary.records - self._last_records
        seconds = now - self._last_time
        line: dict[str, Any] = {
            **summary.to_json(),
            "seconds": round(now - self._started, 3),
            "window_records": records,
            "window_seconds": round(seconds, 3),
            "window_docs_per_second": round(records / seconds, 1) if seconds > 0 else None,
            "rss_mb": _resident_mb(),
            "peak_rss_mb": _peak_resident_mb(),
            "state_bytes": None if self._state_bytes is None else self._state_bytes(),
            "final": final,
        }
        line.pop("docs_per_second")  # the summary's, over its own clock: not set mid-run
        self._out.write(json.dumps(line) + "\n")
        self._out.flush()  # a dashboard reads it while the run goes on
        self._last_time, self._last_records = now, summary.records


def _resident_mb() -> float | None:
    """This process's resident memory now (Linux: /proc/self/statm), else None."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def _peak_resident_mb() -> float | None:
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # kilobytes on Linux, bytes on macOS
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)
