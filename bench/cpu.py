"""CPU time of another process, for the benchmarks that run neardup as subprocesses."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cpu_seconds"]


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds a process has used so far (Linux: /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
