"""Stopping on SIGTERM and SIGINT, at a point where the state and the outputs agree.

``StopSignals`` handles both signals while its ``with`` block runs. By default a signal
raises ``Stopped`` in the main thread wherever it is, as SIGINT's KeyboardInterrupt would.
A run asks for less (``anywhere=False``): the signal is only noted (``requested``), and
raised only inside the sections it marks ``interruptible`` (reading its input, which may
wait on a pipe for ever), so that the run ends its input there and stores what it has read
before it ends. A second signal ends the process at once, as the default handlers do.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["STOP_SIGNALS", "StopSignals", "Stopped"]

#: the signals a command stops on, cleanly
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopped(BaseException):
    """A signal asked the process to stop. A BaseException, as KeyboardInterrupt is: no
    ``except Exception`` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        """The shell's status for a process ended by the signal: 130 for SIGINT, 143 for
        SIGTERM."""
        return 128 + self.signum


class StopSignals:
    """The handlers of SIGTERM and SIGINT while the ``with`` block runs; the ones before
    are back after it. Signals reach only the main thread: elsewhere nothing is installed."""

    def __init__(self, anywhere: bool = True) -> None:
        self._anywhere = anywhere
        self._interruptible = 0
        #: the signal received, if one was
        self.requested: int | None = None
        self._before: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._before[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, handler in self._before.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        for each in STOP_SIGNALS:
            signal.signal(each, signal.SIG_DFL)
        self.requested = signum
        if self._anywhere or self._interruptible:
            raise Stopped(signum)

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """A section a signal interrupts (``Stopped``), also when not ``anywhere``; one
        received before it starts is raised at its start."""
        if self.requested is not None:
            raise Stopped(self.requested)
        self._interruptible += 1
        try:
            yield
        finally:
            self._interruptible -= 1
