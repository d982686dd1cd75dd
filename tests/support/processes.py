"""The process tree, read from Linux's /proc: a process's children, and what is left of them."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

__all__ = [
    "HAS_PROC",
    "alive",
    "descendants",
    "gone",
    "left_behind",
]

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


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``: its children, theirs, and so on."""
    found: list[int] = []
    waiting = [pid]
    while waiting:
        children = _children(waiting.pop())
        found += children
        waiting += children
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def gone(pid: int, seconds: float = 30.0) -> bool:
    """Whether ``pid`` has exited (or does within ``seconds``)."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _environment(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def left_behind(prefix: str = sys.prefix, marker: str | None = None) -> dict[int, str]:
    """The running processes of the virtual environment at ``prefix`` (its Python, its
    scripts, programs inside it) and those this process started, but this one and its
    multiprocessing resource tracker (which ends when this process does): pid and command
    line. With ``marker`` (``NAME=value``, set in this process's environment before it
    started any), only processes whose environment holds it, or that descend from this one:
    a process started elsewhere (a benchmark in another terminal) is not this one's."""
    mine = set(descendants(os.getpid()))
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        line = _cmdline(pid).replace(b"\x00", b" ")
        if (prefix.encode() not in line and pid not in mine) or not alive(pid):
            continue
        if b"resource_tracker" in line and pid in _children(os.getpid()):
            continue
        if marker is not None and pid not in mine and marker.encode() not in _environment(pid):
            continue
        found[pid] = line.decode(errors="replace")[:200]
    return found
