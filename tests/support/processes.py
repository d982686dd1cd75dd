"""The process tree, read from Linux's /proc: a runtime's service fronts are its children."""

from __future__ import annotations

import time
from pathlib import Path

__all__ = ["HAS_PROC", "fronts_of", "gone"]

#: whether this machine shows the process tree as the helpers read it
HAS_PROC = Path("/proc/self/task").exists()


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started, from any of its threads."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue  # a thread that has ended
    return found


def fronts_of(pid: int) -> list[int]:
    """The ``neardup serve`` children of ``pid``: its service's front, if it has one."""
    return [child for child in _children(pid) if b"\x00serve\x00" in _cmdline(child)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def gone(pid: int, seconds: float = 30.0) -> bool:
    """Whether ``pid`` has exited (or does within ``seconds``)."""
    deadline = time.monotonic() + seconds
    while Path(f"/proc/{pid}").exists():
        status = Path(f"/proc/{pid}/status")
        try:
            if "\nState:\tZ" in status.read_text():
                return True  # exited, not yet reaped
        except OSError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
